"""`recall report`: the memory as one self-contained HTML page (SPEC §8.2).

The page draws the notes' lineage (who replaced whom and when, what is retired, expired,
superseded, unreadable or not in the memory at all), the calibration in force with its plot,
freshness and the doctor's checks, the lint findings and, when asked, the evaluation.

- `gather`: reads all of it through the memory's own readers (`Memory.lineage`, `stats`,
  `trust`, `calibration`, `doctor`, `lint`, the evaluation);
- `layout`: where each note goes, so that a thousand notes stay readable;
- `page`: the HTML, inline CSS and SVG, every note-derived string escaped;
- `plot`: the calibration plot as SVG.

Owns: writing the page whole (`recall.writing`) and saying what it drew. Decides nothing about
trust: every mark on the page is what a reader returned.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recall.errors import UsageError

if TYPE_CHECKING:
    from recall.api import Memory

__all__ = ["Written", "write_report"]


@dataclass(frozen=True)
class Written:
    """A report written: where, what it drew, its size and how long it took."""

    path: str
    notes: int
    edges: int
    lineages: int
    singles: int
    unread: int
    bytes: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "notes": self.notes,
            "edges": self.edges,
            "lineages": self.lineages,
            "singles": self.singles,
            "unread": self.unread,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
        }


def write_report(
    mem: Memory,
    out: str | os.PathLike[str],
    *,
    now: dt.datetime | None = None,
    evaluate: bool = False,
    questions: str | None = None,
) -> Written:
    """Write the report of `mem` to `out` (replaced whole, never half-written) as of `now`
    (default: the present). `evaluate` adds the shipped evaluation set run with the store's
    embedder; `questions`, labelled questions run against this store. Raises `UsageError` when
    nothing is indexed or `out` cannot be written."""
    from recall.report.gather import gather
    from recall.report.page import render
    from recall.writing import write_whole

    began = time.perf_counter()
    target = os.fspath(out)
    folder = os.path.dirname(os.path.abspath(target))
    if os.path.isdir(target):
        raise UsageError(
            f"recall report: {target} is a folder; give a file name such as report.html"
        )
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise UsageError(
            f"recall report: cannot write {target}: {folder} is not a folder; give another --out"
        )
    if not os.path.isdir(folder):
        raise UsageError(
            f"recall report: cannot write {target}: folder {folder} does not exist; create it "
            "or give another --out"
        )
    if not os.access(folder, os.W_OK):
        raise UsageError(
            f"recall report: cannot write {target}: folder {folder} is not writable; give "
            "another --out"
        )
    if not mem.exists or mem.stats().documents == 0:
        raise UsageError(
            f"recall report: {mem.path} holds no notes yet; run 'recall index PATH' first"
        )
    instant = now if now is not None else dt.datetime.now(dt.timezone.utc)
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=dt.timezone.utc)
    facts = gather(mem, now=instant, evaluate=evaluate, questions=questions)
    html, drawn = render(facts)
    data = html.encode("utf-8")
    try:
        write_whole(target, data)
    except OSError as err:
        raise UsageError(
            f"recall report: cannot write {target}: {err.strerror or err}; give another --out"
        ) from None
    return Written(
        path=os.path.abspath(target),
        notes=drawn.notes,
        edges=drawn.edges,
        lineages=drawn.lineages,
        singles=drawn.singles,
        unread=drawn.unread,
        bytes=len(data),
        seconds=time.perf_counter() - began,
    )
