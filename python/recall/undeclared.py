"""Two `ok` hits that look like an update nobody declared (SPEC §2, §5): said, never guessed.

recall never decides at read time that one note replaces another; but when two notes a search
serves `ok` look like one replacing the other, with nothing declared between them, the result
says so. A pair is reported when the newer note (first indexed later) and the older one share
their versioned file name's base with another version, or a title, or a subject (most of their
words) while a number of one is not in the other. The older hit's validity names the newer note
(`possibly_superseded_by`) and the result carries a warning naming both and the edge to
declare. Neither verdict changes (benches/undeclared_updates.py measures what demoting the older
would cost).

Owns: the evidence between two hits and the pairs of a result. Does not own: the hits or their
verdicts (`recall.results`, the Rust core) or declaring (`recall check`, `declare`).
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, replace

from recall.names import FUNCTION_WORDS, fold_title, title_tokens, version
from recall.results import Hit

__all__ = ["SUBJECT_FLOOR", "TITLE_FLOOR", "Pair", "evidence", "mark", "pairs"]

#: Titles whose words overlap this much (Jaccard) are the same title.
TITLE_FLOOR = 0.8
#: Passages whose content words overlap this much (Jaccard) are on one subject; with a number
#: one holds and the other does not, the newer may restate the older's value.
SUBJECT_FLOOR = 0.3
#: The `ok` hits compared, best first: a pair further down is not what the caller reads.
COMPARED = 5

_PUNCTUATION = ".,;:!?()[]{}<>`*_\"'"
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


@dataclass(frozen=True)
class Pair:
    """`newer` may replace `older` (their files), for the reason `why`."""

    older: str
    newer: str
    why: str

    @property
    def warning(self) -> str:
        return (
            f"{self.newer} may replace {self.older} ({self.why}) and no declaration joins "
            f"them: if it does, declare it (supersedes: {os.path.basename(self.older)} in "
            f"{self.newer}); until then both are served"
        )


def evidence(older: Hit, newer: Hit) -> str | None:
    """Why `newer` may replace `older`, or None when nothing says so."""
    return _why(_read(older), _read(newer))


def pairs(hits: list[Hit]) -> list[Pair]:
    """The undeclared updates among the first `COMPARED` `ok` hits, each older note once."""
    ok = [h for h in hits if h.ok][:COMPARED]
    if len(ok) < 2:
        return []  # most searches: nothing to compare, and nothing read
    served = [(h, _read(h)) for h in ok]
    found: list[Pair] = []
    for a, seen_a in served:
        for b, seen_b in served:
            if a.provenance.file == b.provenance.file:
                continue
            if not a.provenance.first_indexed_at < b.provenance.first_indexed_at:
                continue
            why = _why(seen_a, seen_b)
            if why is not None:
                found.append(Pair(a.provenance.file, b.provenance.file, why))
                break  # each older note once
    return found


@dataclass(frozen=True)
class _Seen:
    """What a passage's file name, title and text say (its words: `_words`, read only when a
    changed number asks for them)."""

    version: tuple[str, tuple[int, ...] | None]
    folded: str
    title: frozenset[str]
    numbers: tuple[str, ...]
    text: str


def _read(hit: Hit) -> _Seen:
    return _seen(hit.provenance.file, hit.title, hit.text)


@functools.lru_cache(maxsize=4096)
def _seen(file: str, title: str, text: str) -> _Seen:
    """Read once per passage: a memory is asked about the same notes again and again."""
    return _Seen(
        version=version(_stem(file)),
        folded=fold_title(title) if title else "",
        title=title_tokens(title) if title else frozenset(),
        numbers=tuple(dict.fromkeys(_NUMBER.findall(text))),
        text=text,
    )


@functools.lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    """A passage's content words, for the subject of two passages whose numbers differ."""
    # Split on blanks, not a pattern: a passage is read whole.
    found = {w.strip(_PUNCTUATION) for w in text.casefold().split()} - FUNCTION_WORDS
    return frozenset(w for w in found if len(w) > 2 and w.isalpha())


def _why(old: _Seen, new: _Seen) -> str | None:
    """Why the passage `new` may replace `old`, or None."""
    (old_base, old_version), (new_base, new_version) = old.version, new.version
    if old_base == new_base and (old_version or new_version) and old_version != new_version:
        return "versions of one file name"
    if old.folded and new.folded:
        if old.folded == new.folded:
            return "the same title"
        if old.title and new.title:
            overlap = len(old.title & new.title) / len(old.title | new.title)
            if overlap >= TITLE_FLOOR:
                return "a near title"
    was = [n for n in old.numbers if n not in new.numbers]
    now = [n for n in new.numbers if n not in old.numbers]
    if not was or not now:
        return None
    old_words, new_words = _words(old.text), _words(new.text)
    if not old_words or not new_words:
        return None
    if len(old_words & new_words) / len(old_words | new_words) < SUBJECT_FLOOR:
        return None
    return f"the same subject with a changed number, {was[0]} then {now[0]}"


def mark(hits: list[Hit], found: list[Pair]) -> list[Hit]:
    """`hits` with each older note of a pair naming its possible successor in its validity."""
    newer = {p.older: p.newer for p in found}
    return [
        replace(h, validity=replace(h.validity, possibly_superseded_by=newer[h.provenance.file]))
        if h.provenance.file in newer
        else h
        for h in hits
    ]


def _stem(file: str) -> str:
    return os.path.splitext(file.replace("\\", "/").rsplit("/", 1)[-1])[0]
