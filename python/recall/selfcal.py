"""The questions recall asks itself to fit a calibration from the store alone (SPEC §7).

A labelled calibration needs a user to write forty questions; this one needs none. From the
notes themselves: answerable questions made of each note's title and headings (the note as the
file that answers), identifier lookups for identifiers a few notes hold (those notes answer),
and two kinds of unanswerable ones: questions from a shipped bank of off-topic questions across
many domains, and near-topic questions made like the answerable ones from a sample of notes
that the search then leaves out, so that the only note that would answer is not there.

Owns: choosing the notes and identifiers (seeded, so one store always asks the same questions),
the phrasing, and the off-topic bank (`data/offtopic.txt`). Does not own: running the questions
(`api.Memory`), fitting and certifying (`calibration`), or storing the record.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall import _core

if TYPE_CHECKING:
    from recall.store import Store

__all__ = ["Probe", "identifier_probes", "probes"]

OFFTOPIC = Path(__file__).parent / "data" / "offtopic.txt"
#: How many questions of each kind one fit asks at most. With at least 20 a class, the fit can
#: be certified (SPEC §7); past ~60 the figures move little and the fit takes longer.
MAX_ANSWERABLE = 60
MAX_IDENTIFIERS = 20
MAX_NEAR = 30
#: An identifier held by more notes than this is a common word of the corpus, not a lookup.
MAX_HOLDERS = 3
SEED = 20261201
#: The kinds of question that place a self-made threshold: off-topic questions are a user's
#: far gaps; the answerable questions are made of the notes' own words and match them far
#: better than a user's question would (they count for the AUC, not for the placement).
PLACING = frozenset({"off_topic"})
#: The quantile of the off-topic relevances that stands for the unanswerable ceiling: the 95th
#: percentile, as in a labelled fit (SPEC §7).
CEILING = 0.95
#: The lexical share's weight in a self-made fit. The made answerable questions are the notes'
#: own words, so fitting the weight on them would buy one a user's question does not earn; this
#: is the weight that labelled fits earn on both evaluation sets (benches/RESULTS.md).
LEXICAL_WEIGHT = 0.15

TITLE_FORMS = (
    "What do the notes say about {title}?",
    "What did we decide about {title}?",
    "Tell me about {title}.",
    "{title}",
)
HEADING_FORMS = (
    "What does {title} say about {heading}?",
    "{heading} in {title}",
)
IDENTIFIER_FORMS = (
    "What is {id}?",
    "What happened in {id}?",
    "Tell me about {id}.",
    "What does {id} refer to?",
)


@dataclass(frozen=True)
class Probe:
    """One question of a calibration: its text, its label, what it tests (`kind`: `labelled`,
    `title`, `heading`, `identifier`, `off_topic`, `near_topic`), the notes whose hits count
    for it (paths as labelled, or (source, path); empty: any hit) and the notes the search
    leaves out."""

    query: str
    answerable: bool
    kind: str
    relevant: frozenset[object] = frozenset()
    left_out: frozenset[tuple[str, str]] = frozenset()

    def counts(self, hit: Mapping[str, Any]) -> bool:
        """Whether `hit` is one of the notes that answer (any hit when none is named)."""
        if not self.relevant:
            return True
        return hit["path"] in self.relevant or (hit["source"], hit["path"]) in self.relevant


@dataclass(frozen=True)
class _Note:
    source: str
    path: str
    title: str
    headings: tuple[str, ...]
    identifiers: frozenset[str]


def _notes(store: Store) -> Iterator[_Note]:
    """Every document of the store, in id order (its title, headings and identifiers)."""
    after = 0
    while True:
        page = store.export(after, 128)
        if not page:
            return
        for doc in page:
            after = max(after, int(doc["id"]))
            headings: list[str] = []
            found: set[str] = set()
            for chunk in doc["chunks"]:
                last = str(chunk[6]).split(" > ")[-1].strip()
                if last and last != doc["title"] and last not in headings:
                    headings.append(last)
                text = str(chunk[1])
                for ident in _core.identifiers(text):
                    # Asked as the note writes it (identifiers are compared without case).
                    written = re.search(re.escape(ident), text, re.IGNORECASE)
                    found.add(written.group(0) if written else ident)
            yield _Note(
                source=str(doc["source"]),
                path=str(doc["path"]),
                title=str(doc["title"]).strip(),
                headings=tuple(headings),
                identifiers=frozenset(found),
            )


def _offtopic() -> list[str]:
    lines = OFFTOPIC.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _about(note: _Note, rng: random.Random) -> list[str]:
    """The questions a note's title and headings make: one from the title, one per heading."""
    if not note.title:
        return []
    out = [rng.choice(TITLE_FORMS).format(title=note.title)]
    out += [
        rng.choice(HEADING_FORMS).format(title=note.title, heading=heading)
        for heading in note.headings
    ]
    return out


def _identifier_questions(notes: list[_Note], rng: random.Random) -> list[Probe]:
    holders: dict[str, set[tuple[str, str]]] = {}
    written: dict[str, str] = {}
    for note in notes:
        for ident in sorted(note.identifiers):
            holders.setdefault(ident.lower(), set()).add((note.source, note.path))
            written.setdefault(ident.lower(), ident)
    rare = sorted(i for i, held in holders.items() if len(held) <= MAX_HOLDERS and _lookup(i))
    chosen = rng.sample(rare, min(MAX_IDENTIFIERS, len(rare)))
    # Any hit that holds the identifier answers (`Probe.relevant` empty): the holders' chunks.
    return [
        Probe(rng.choice(IDENTIFIER_FORMS).format(id=written[ident]), True, "identifier")
        for ident in sorted(chosen)
    ]


def _lookup(ident: str) -> bool:
    """Whether a user would look `ident` up: a code of a few letters and digits (`INC-4471`,
    `E2207`, `ADR-0032`), not a date, a version, a file name or a measure (`10-second`)."""
    letters = re.findall(r"[^\W\d_]+", ident)
    return (
        bool(letters)
        and all(len(run) <= 5 for run in letters)
        and any(c.isdigit() for c in ident)
        and not any(c in "./:" for c in ident)
    )


def identifier_probes(store: Store) -> list[Probe]:
    """Identifier lookups made from the notes: fitted beside a user's labelled questions that
    hold none, so that a labelled set never switches identifier lookups off (SPEC §7)."""
    return _identifier_questions(list(_notes(store)), random.Random(SEED))


def probes(store: Store) -> list[Probe]:
    """The questions of a self-made calibration of `store`, the same on every call for the same
    notes: near-topic notes are drawn first (a quarter of the notes, at most `MAX_NEAR`), the
    answerable questions come from the other notes."""
    rng = random.Random(SEED)
    notes = sorted(_notes(store), key=lambda n: (n.source, n.path))
    titled = [n for n in notes if n.title]
    shuffled = rng.sample(titled, len(titled))
    near_notes = shuffled[: min(MAX_NEAR, len(shuffled) // 4)]
    kept = shuffled[len(near_notes) :]

    out: list[Probe] = []
    answerable: list[Probe] = []
    for note in kept:
        for i, query in enumerate(_about(note, rng)):
            answerable.append(
                Probe(
                    query,
                    True,
                    "title" if i == 0 else "heading",
                    relevant=frozenset({(note.source, note.path)}),
                )
            )
    # Every note's title first, then headings, so a large store asks about many notes.
    answerable.sort(key=lambda p: p.kind != "title")
    out += answerable[:MAX_ANSWERABLE]
    out += _identifier_questions(notes, random.Random(SEED))
    for note in near_notes:
        question = _about(note, rng)[0]
        out.append(
            Probe(question, False, "near_topic", left_out=frozenset({(note.source, note.path)}))
        )
    # The whole bank, always: its 95th percentile places the threshold, so it is not sampled.
    out += [Probe(q, False, "off_topic") for q in _offtopic()]
    return out
