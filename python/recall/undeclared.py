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
    return _Seen(older).evidence_for(_Seen(newer))


def pairs(hits: list[Hit]) -> list[Pair]:
    """The undeclared updates among the first `COMPARED` `ok` hits, each older note once."""
    served = [_Seen(h) for h in hits if h.ok][:COMPARED]
    found: list[Pair] = []
    for a in served:
        for b in served:
            if a.file == b.file or not a.first < b.first:
                continue
            why = a.evidence_for(b)
            if why is not None:
                found.append(Pair(a.file, b.file, why))
                break  # each older note once
    return found


class _Seen:
    """What a hit's name, title and passage say, each read once and only when asked."""

    def __init__(self, hit: Hit) -> None:
        self.hit = hit
        self.file = hit.provenance.file
        self.first = hit.provenance.first_indexed_at
        self._version: tuple[str, tuple[int, ...] | None] | None = None
        self.folded = fold_title(hit.title) if hit.title else ""
        self._title: frozenset[str] | None = None
        self._numbers: set[str] | None = None
        self._words: frozenset[str] | None = None

    @property
    def version(self) -> tuple[str, tuple[int, ...] | None]:
        if self._version is None:
            self._version = version(_stem(self.file))
        return self._version

    @property
    def title(self) -> frozenset[str]:
        if self._title is None:
            self._title = title_tokens(self.hit.title) if self.hit.title else frozenset()
        return self._title

    @property
    def numbers(self) -> set[str]:
        if self._numbers is None:
            self._numbers = set(_NUMBER.findall(self.hit.text))
        return self._numbers

    @property
    def words(self) -> frozenset[str]:
        if self._words is None:
            # Split on blanks, not a pattern: this runs on each served passage.
            found = {w.strip(_PUNCTUATION) for w in self.hit.text.casefold().split()}
            self._words = frozenset(
                w for w in found if len(w) > 2 and w.isalpha() and w not in FUNCTION_WORDS
            )
        return self._words

    def evidence_for(self, newer: _Seen) -> str | None:
        """Why `newer` may replace this hit's note, or None."""
        (old_base, old_version), (new_base, new_version) = self.version, newer.version
        if old_base == new_base and (old_version or new_version) and old_version != new_version:
            return "versions of one file name"
        if self.folded and newer.folded:
            if self.folded == newer.folded:
                return "the same title"
            mine, theirs = self.title, newer.title
            if mine and theirs and len(mine & theirs) / len(mine | theirs) >= TITLE_FLOOR:
                return "a near title"
        was, now = self.numbers - newer.numbers, newer.numbers - self.numbers
        if not was or not now or not self.words or not newer.words:
            return None
        if len(self.words & newer.words) / len(self.words | newer.words) < SUBJECT_FLOOR:
            return None
        first_was = min(was, key=self.hit.text.find)
        first_now = min(now, key=newer.hit.text.find)
        return f"the same subject with a changed number, {first_was} then {first_now}"


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
