"""The paths an index run lists and reports, held as one block of text (SPEC §10: a first index
of a million notes within a laptop's memory).

Owns: holding paths in about a third of what a list of strings takes (a million paths of 25
characters: 30 MB against 77 MB): the files a walk lists before the run writes (`Listing.files`)
and the paths a run reports (`IndexReport.added`, `updated`, `removed`), which the report keeps
through the calibration that ends a first index. Does not own: what a walk lists (walk.py), what
a run reports (indexing.py) or how it is shown (`IndexReport.to_dict`, the CLI).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import overload

__all__ = ["PathList"]

#: Every `str` survives the round trip, lone surrogates included (a file name that is not
#: UTF-8 is read with `surrogateescape`).
_ERRORS = "surrogatepass"


class PathList(Sequence[str]):
    """A list of paths to append to and read back, equal to any sequence of the same paths."""

    __slots__ = ("_ends", "_text")

    def __init__(self, paths: Iterable[str] = ()) -> None:
        self._text = bytearray()
        self._ends = array("Q")
        self.extend(paths)

    def append(self, path: str) -> None:
        self._text += path.encode("utf-8", _ERRORS)
        self._ends.append(len(self._text))

    def extend(self, paths: Iterable[str]) -> None:
        for path in paths:
            self.append(path)

    def __len__(self) -> int:
        return len(self._ends)

    def _at(self, i: int) -> str:
        start = self._ends[i - 1] if i else 0
        return self._text[start : self._ends[i]].decode("utf-8", _ERRORS)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self._at(i) for i in range(*index.indices(len(self)))]
        n = len(self)
        if not -n <= index < n:
            raise IndexError("path index out of range")
        return self._at(index % n)

    def __iter__(self) -> Iterator[str]:
        return (self._at(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PathList):
            return self._ends == other._ends and self._text == other._text
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list

    def __repr__(self) -> str:
        return f"PathList({list(self)!r})"
