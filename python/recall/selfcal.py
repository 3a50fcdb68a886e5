"""The questions recall asks itself to fit a calibration from the store alone (SPEC §7).

A labelled calibration needs a user to write forty questions; this one needs none. From the
notes themselves: answerable questions made of each note's title and headings (the note as the
file that answers), identifier lookups for identifiers a few notes hold (those notes answer),
and two kinds of unanswerable ones: questions from a shipped bank of off-topic questions across
many domains, and near-topic questions asking a sample of notes' subjects (their titles without
identifiers) that the search then asks without the note and every note sharing its subject (a
declared edge, a title alike once the corpus's title forms are set aside, a copied passage), so
that no note left in would answer.

Owns: choosing the notes and identifiers (seeded, so one store always asks the same questions),
which notes share a near-topic question's subject, the phrasing, and the off-topic bank
(`data/offtopic.txt`). Does not own: running the questions
(`api.Memory`), fitting and certifying (`calibration`), or storing the record.
"""

from __future__ import annotations

import itertools
import random
import re
from array import array
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from recall import _core, heap
from recall.heap import remade

if TYPE_CHECKING:
    from recall.store import Store

__all__ = ["Probe", "identifier_probes", "probes"]

OFFTOPIC = Path(__file__).parent / "data" / "offtopic.txt"
#: How many questions of each kind one fit asks at most. With at least 20 a class, the fit can
#: be certified (SPEC §7). The AUC's interval narrows with the answerable questions: a fit of
#: AUC 0.94 against the ~240 unanswerable ones has a lower bound just under 0.90 on 60 of them
#: and about 0.92 on 120 (references of page families, benches/RESULTS.md); past that the
#: figures move little and the fit takes longer.
MAX_ANSWERABLE = 120
MAX_IDENTIFIERS = 20
MAX_NEAR = 30
#: How many notes with a subject a plan reaches for each near-topic question (`probes`).
NEAR_REACH = 4
#: Notes from which what a plan's reading took is handed back once the plan is made
#: (`heap.give_back`; over a million notes, a hundred MB and more).
GIVE_BACK_FROM = 10_000
#: An identifier held by more notes than this is a common word of the corpus, not a lookup.
MAX_HOLDERS = 3
#: A near-topic question's note is left out with the notes that hold a copy of one of its
#: first chunks: a chunk at this cosine or above (the same text, or a template filled in
#: alike) answers what the left-out one would have; among this many neighbours of each.
COPY_COSINE = 0.95
COPY_CHUNKS = 4
COPY_NEIGHBOURS = 10
#: A title word this common among the notes' titles is part of their form, not a subject.
FORM_SHARE = 0.1
FORM_MIN = 5
SEED = 20261201
#: The kinds of question whose ceiling places a self-made threshold, with the near-topic
#: questions' median (`calibration.fit`): off-topic questions are a user's far gaps; the
#: answerable questions are made of the notes' own words and match them far better than a
#: user's question would (they count for the AUC, not for the placement).
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


class _Note(NamedTuple):
    """A note as the questions need it, small enough to hold for every note of a large store:
    its place, title and how many headings it has (their texts are read again only when a
    store is so small that its questions ask about them, `_headings`)."""

    source: str
    path: str
    title: str
    headings: int
    #: The keys the note is known by (its file key, its identifier-family alias) and the keys
    #: its declarations name (supersedes, replaced by): a subject it shares with those notes.
    keys: tuple[str, ...] = ()
    names: tuple[str, ...] = ()

    @property
    def place(self) -> tuple[str, str]:
        return (self.source, self.path)


def _headings(doc: Mapping[str, Any]) -> list[str]:
    """A document's headings, in order, without its title's."""
    out: list[str] = []
    for chunk in doc["chunks"]:
        last = str(chunk[6]).split(" > ")[-1].strip()
        if last and last != doc["title"] and last not in out:
            out.append(last)
    return out


def _documents(store: Store) -> Iterator[Mapping[str, Any]]:
    """Every document of the store, in id order, a page at a time."""
    after = 0
    while True:
        page = store.export(after, 128)
        if not page:
            return
        for doc in page:
            after = max(after, int(doc["id"]))
            yield doc


class _Identifiers:
    """The identifiers a user would look up (`_lookup`), each with how many notes hold it (up to
    one past `MAX_HOLDERS`) and the form it is asked in: as the first note to hold it writes it,
    in the order the notes are given (the first form in sorted order within one note)."""

    def __init__(self) -> None:
        self._held: dict[str, list[Any]] = {}

    def add(self, order: Any, texts: Iterable[str]) -> None:
        """The identifiers of one note's chunks, the note at `order`."""
        forms: dict[str, str] = {}
        for text in texts:
            for ident in _core.identifiers(text):
                # Asked as the note writes it (identifiers are compared without case).
                written = re.search(re.escape(ident), text, re.IGNORECASE)
                form = written.group(0) if written else ident
                key = form.lower()
                if key not in forms or form < forms[key]:
                    forms[key] = form
        for key, form in forms.items():
            held = self._held.get(key)
            if held is None:
                if _lookup(key):
                    self._held[key] = [1, order, form]
            else:
                held[0] = min(held[0] + 1, MAX_HOLDERS + 1)
                if order < held[1]:
                    held[1], held[2] = order, form

    def questions(self, rng: random.Random) -> list[Probe]:
        rare = sorted(key for key, held in self._held.items() if held[0] <= MAX_HOLDERS)
        chosen = rng.sample(rare, min(MAX_IDENTIFIERS, len(rare)))
        # Any hit that holds the identifier answers (`Probe.relevant` empty): the holders' chunks.
        return [
            Probe(rng.choice(IDENTIFIER_FORMS).format(id=self._held[key][2]), True, "identifier")
            for key in sorted(chosen)
        ]


def _notes(store: Store, found: _Identifiers | None = None) -> list[_Note]:
    """Every document of the store as a `_Note`, in id order; with `found`, their identifiers
    collected there, each note at its place (source, path) in the order of notes."""
    notes: list[_Note] = []
    sources: dict[str, str] = {}
    for doc in _documents(store):
        source = sources.setdefault(str(doc["source"]), str(doc["source"]))
        path = str(doc["path"])
        if found is not None:
            found.add((source, path), (str(chunk[1]) for chunk in doc["chunks"]))
        alias = doc.get("alias")
        names = tuple(sorted({str(edge[1]) for edge in doc["edges"] if edge[1]}))
        notes.append(
            _Note(
                source=source,
                path=path,
                title=str(doc["title"]).strip(),
                headings=len(_headings(doc)),
                keys=tuple(sorted({str(doc["key"])} | ({str(alias)} if alias else set()))),
                names=names,
            )
        )
    return notes


def copies(store: Store, note: _Note) -> set[tuple[str, str]]:
    """The notes holding a passage that is all but the same as one of `note`'s (a copy, a
    version kept beside it, a template filled in alike): any chunk within `COPY_COSINE` of one
    of its first `COPY_CHUNKS` chunks. They would answer its near-topic question."""
    import numpy as np  # not on a search's path (SPEC §10 cold start)

    stored = store.document_vectors(note.source, note.path)
    if stored is None:
        return set()
    _, chunks, blob = stored
    if not chunks or len(blob) % (4 * len(chunks)):
        return set()  # vectors that do not match the chunks (damage): no copy is vouched for
    vectors = np.frombuffer(blob, dtype="<f4").reshape(len(chunks), -1)
    if not np.isfinite(vectors).all():
        return set()
    found: set[tuple[str, str]] = set()
    for vector in vectors[:COPY_CHUNKS]:
        raw = store.search(
            np.ascontiguousarray(vector, dtype="<f4").tobytes(),
            text="",
            k=COPY_NEIGHBOURS,
            candidates=COPY_NEIGHBOURS,
            policy=_core.Policy(now_us=0, threshold=1.0, scale=0.05, unverified=True),
        )
        found |= {
            (str(h["source"]), str(h["path"]))
            for h in raw["hits"]
            if not h["fetched"] and h["score"] >= COPY_COSINE
        }
    found.discard(note.place)
    return found


def _offtopic() -> list[str]:
    lines = OFFTOPIC.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _answerable(plan: _Plan, chosen: set[int], store: Store) -> list[Probe]:
    """The answerable questions of the notes not chosen for near-topic questions, in shuffled
    order: one from each title, then one per heading, at most `MAX_ANSWERABLE` (every note's
    title first, so a large store asks about many notes). The phrasing draws on the plan's
    `rng` for every title and heading of every such note, asked or not, so that the questions
    drawn after these stay as they are."""
    rng = plan.rng
    if plan.total - len(chosen) >= MAX_ANSWERABLE:
        out: list[Probe] = []
        for at in range(plan.total):
            if at in chosen:
                continue
            form = rng.choice(TITLE_FORMS)
            if len(out) < MAX_ANSWERABLE:
                note = plan.front[at]
                out.append(
                    Probe(form.format(title=note.title), True, "title", frozenset({note.place}))
                )
            for _ in range(plan.headings[at]):
                rng.choice(HEADING_FORMS)
        return out
    # So few notes that their headings are asked about too (every one is in the plan's front):
    # read them again.
    notes = [note for at, note in enumerate(plan.front) if at not in chosen]
    wanted = {note.place for note in notes}
    headings = {
        (str(doc["source"]), str(doc["path"])): _headings(doc)
        for doc in _documents(store)
        if (str(doc["source"]), str(doc["path"])) in wanted
    }
    titles: list[Probe] = []
    asked: list[Probe] = []
    for note in notes:
        relevant = frozenset({note.place})
        titles.append(
            Probe(rng.choice(TITLE_FORMS).format(title=note.title), True, "title", relevant)
        )
        for heading in headings.get(note.place, ()):
            question = rng.choice(HEADING_FORMS).format(title=note.title, heading=heading)
            asked.append(Probe(question, True, "heading", relevant))
    return (titles + asked)[:MAX_ANSWERABLE]


#: A number with one of these after it is an ordinal or a measure (`15th`, `4-month`,
#: `30-min`), not a code anyone looks up.
MEASURE = re.compile(
    r"\d+-?(?:st|nd|rd|th|ms|s|sec|secs|min|mins|h|hr|hrs|hour|day|days|week|month|year|"
    r"kb|mb|gb|tb|px|pt|em|km|kg|m|cm|mm)",
    re.IGNORECASE,
)


def _lookup(ident: str) -> bool:
    """Whether a user would look `ident` up: a code of a few letters and digits (`INC-4471`,
    `E2207`, `ADR-0032`), not a date, a version, a file name, an ordinal (`3rd`) or a measure
    (`10-second`, `4-month`)."""
    letters = re.findall(r"[^\W\d_]+", ident)
    return (
        bool(letters)
        and all(len(run) <= 5 for run in letters)
        and any(c.isdigit() for c in ident)
        and not any(c in "./:" for c in ident)
        and not MEASURE.fullmatch(ident)
    )


def identifier_probes(store: Store) -> list[Probe]:
    """Identifier lookups made from the notes: fitted beside a user's labelled questions that
    hold none, so that a labelled set never switches identifier lookups off (SPEC §7)."""
    found = _Identifiers()
    for order, doc in enumerate(_documents(store)):
        found.add(order, (str(chunk[1]) for chunk in doc["chunks"]))
    return found.questions(random.Random(SEED))


def subject(title: str) -> str:
    """A title as a near-topic question asks it: without its identifiers and numbering
    (`ALRT-103: public API error rate` and `14. Deploy through Argo CD` ask about "public API
    error rate" and "Deploy through Argo CD"), so that the question is about the subject and
    not a code only the left-out note holds. Empty when fewer than two words remain."""
    held = set(_core.identifiers(title))
    words = [
        w
        for w in title.split()
        if w.strip(".,:;()[]#").lower() not in held and not w.strip(".,:;()[]#").isdigit()
    ]
    text = " ".join(words).strip(" .,:;-–—|")
    return text if len(text.split()) >= 2 else ""


def _words(title: str) -> frozenset[str]:
    return frozenset(re.findall(r"[^\W_]+", subject(title).lower()))


class _Relatives:
    """Which notes share a note's subject by what they declare or how they are titled (SPEC
    §7, near-topic questions kept honest): a declared edge in either direction (a successor
    states what its predecessor did), or the same subject once identifiers, numbering and the
    corpus's title forms are set aside (`ALRT-103: public API error rate` and `ALRT-104: public
    API error rate`; `CREATE DOMAIN` and `DROP DOMAIN`). A title word in at least `FORM_SHARE`
    of the titles (and `FORM_MIN` of them) is a form (`CREATE`, `ALTER` and `DROP` in `CREATE
    DOMAIN`, `ALTER DOMAIN`, `DROP DOMAIN`; `Runbook` in `Runbook: …`), the rest is the
    subject (`domain`). Only the notes on a declared edge are indexed; notes titled alike are
    found by one pass over the titles for all the notes asked about."""

    def __init__(self, notes: list[_Note]) -> None:
        self._notes = notes
        counts: dict[str, int] = {}
        for note in notes:
            for word in _words(note.title):
                counts[word] = counts.get(word, 0) + 1
        floor = max(FORM_MIN, FORM_SHARE * len(notes))
        self._forms = frozenset(w for w, c in counts.items() if c >= floor)
        self._by_name: dict[str, list[int]] = {}
        for i, note in enumerate(notes):
            for name in note.names:
                self._by_name.setdefault(name, []).append(i)
        self._by_key: dict[str, list[int]] = {}
        for i, note in enumerate(notes):
            for key in note.keys:
                if key in self._by_name:
                    self._by_key.setdefault(key, []).append(i)

    def subject(self, note: _Note) -> frozenset[str]:
        """The words of `note`'s title that name its subject; empty when none is left."""
        return _words(note.title) - self._forms

    def of(self, asked: list[_Note]) -> list[set[tuple[str, str]]]:
        """For each note of `asked`, the notes that share its subject, itself left out."""
        notes = self._notes
        out: list[set[tuple[str, str]]] = []
        by_subject: dict[frozenset[str], list[int]] = {}
        for j, note in enumerate(asked):
            found = {notes[i].place for name in note.names for i in self._by_key.get(name, ())}
            found |= {notes[i].place for key in note.keys for i in self._by_name.get(key, ())}
            out.append(found)
            held = self.subject(note)
            if held:
                by_subject.setdefault(held, []).append(j)
        if by_subject:
            for other in notes:
                for j in by_subject.get(self.subject(other), ()):
                    out[j].add(other.place)
        for note, found in zip(asked, out):
            found.discard(note.place)
        return out


@dataclass
class _Plan:
    """What the questions need of the notes once they are let go (so that a large store's notes
    are not held while the searches that find copies run): the seeded draw as it stands after
    the notes were shuffled; the first notes with a subject, in shuffled order, with where they
    are and the notes that share it (`_Relatives`); whether they are all of them; the first
    shuffled notes (those the answerable questions ask about); how many headings each shuffled
    note has; and the identifiers found."""

    rng: random.Random
    candidates: list[tuple[int, _Note, set[tuple[str, str]]]]
    complete: bool
    front: list[_Note]
    headings: array[int]
    found: _Identifiers
    total: int


def _plan(store: Store, reach: int) -> _Plan:
    """Read the notes once and plan the questions, computing the relatives of the first
    `reach` notes with a subject. The plan is made again from its bytes once the notes are let
    go: its few objects, made among a large store's notes, would otherwise keep most of the
    memory those notes took from being given back (hundreds of MB at a million notes); what
    they took is then handed back (`heap.give_back`), so the searcher the questions load next
    does not stack on it."""
    plan = remade(_planned(store, reach))
    if plan.total >= GIVE_BACK_FROM:
        heap.give_back()
    return plan


def _planned(store: Store, reach: int) -> _Plan:
    """`_plan`, made among the notes."""
    rng = random.Random(SEED)
    found = _Identifiers()
    notes = _notes(store, found)
    notes.sort(key=lambda n: (n.source, n.path))
    titled = [n for n in notes if n.title]
    shuffled = rng.sample(titled, len(titled))
    del titled
    picked = list(
        itertools.islice(((i, n) for i, n in enumerate(shuffled) if subject(n.title)), reach + 1)
    )
    complete = len(picked) <= reach
    picked = picked[:reach]
    relatives = _Relatives(notes).of([n for _, n in picked])
    return _Plan(
        rng=rng,
        candidates=[(i, n, r) for (i, n), r in zip(picked, relatives)],
        complete=complete,
        front=shuffled[: MAX_ANSWERABLE + MAX_NEAR],
        headings=array("I", (n.headings for n in shuffled)),
        found=found,
        total=len(shuffled),
    )


def probes(store: Store) -> list[Probe]:
    """The questions of a self-made calibration of `store`, the same on every call for the same
    notes: near-topic notes are drawn first (a quarter of the notes, at most `MAX_NEAR`, among
    those whose title still names a subject without its identifiers), the answerable questions
    come from the other notes. A near-topic question leaves out its note and every note that
    shares its subject (`_Relatives`); `copies` adds those whose text is the same.

    The notes are read and planned first (`_plan`), then let go before the searches for copies
    load the store's vectors: a store's notes and its searcher are not held at once. The plan
    reaches `NEAR_REACH` notes with a subject for each near-topic question; where copies and
    relatives leave out more than that, the notes are read again with a longer reach."""
    reach = max(1, NEAR_REACH * MAX_NEAR)
    while True:
        plan = _plan(store, reach)
        want = min(MAX_NEAR, plan.total // 4)
        # Each near-topic question asks about a subject of its own: a note in the group
        # another question left out is not asked about again.
        near_notes: list[tuple[int, _Note, frozenset[tuple[str, str]]]] = []
        grouped: set[tuple[str, str]] = set()
        for at, note, relatives in plan.candidates:
            if len(near_notes) == want:
                break
            if note.place in grouped:
                continue
            group = frozenset({note.place} | relatives | copies(store, note))
            near_notes.append((at, note, group))
            grouped |= group
        if len(near_notes) == want or plan.complete:
            break
        reach *= 4
    rng = plan.rng
    chosen = {at for at, _, _ in near_notes}
    out = _answerable(plan, chosen, store)
    out += plan.found.questions(random.Random(SEED))
    for _, note, group in near_notes:
        question = rng.choice(TITLE_FORMS).format(title=subject(note.title))
        out.append(Probe(question, False, "near_topic", left_out=group))
    # The whole bank, always: its 95th percentile places the threshold, so it is not sampled.
    out += [Probe(q, False, "off_topic") for q in _offtopic()]
    return out
