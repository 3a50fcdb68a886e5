"""What a report shows, read through the memory's own readers.

Owns: calling each reader once and keeping what it returned (`Facts`): the store's summary and
trust (`Memory.stats`, `Memory.trust`), the calibration in use and its history, the notes'
lineage (`Memory.lineage`), the doctor's checks, the lint findings over the corpus roots, the
files under those roots the memory does not hold (with the reason a reader gives), and, when
asked, the evaluation. A reader that cannot run here (a root not on this machine) is kept as
the sentence saying why. Does not own: any of those judgments, or drawing them (`page`).
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall.errors import RecallError

if TYPE_CHECKING:
    from recall.api import Memory, StoreStats
    from recall.authoring.lint import LintReport
    from recall.calibration import Calibration, CalibrationEntry
    from recall.doctor import DoctorReport
    from recall.evaluation import EvalReport
    from recall.lineage import Note

__all__ = ["Facts", "Unread", "gather"]


@dataclass(frozen=True)
class Unread:
    """A note file under a corpus root that the memory does not hold: `kind` is `refused` (a
    reader refused it: the lint finding or walk reason says why), `forgotten` (`recall forget`)
    or `not indexed` (new or renamed since the last index run)."""

    path: str
    kind: str
    reason: str


@dataclass
class Facts:
    """Everything one report shows, as the readers returned it."""

    now: dt.datetime
    stats: StoreStats
    trust: dict[str, Any]
    calibration: Calibration | None
    calibration_note: str
    history: list[CalibrationEntry]
    notes: list[Note]
    doctor: DoctorReport | None
    doctor_note: str
    lint: LintReport | None
    lint_note: str
    unread: list[Unread] = field(default_factory=list)
    evaluation: list[EvalReport] | None = None
    evaluation_note: str = ""


def _unread(mem: Memory, notes: list[Note], lint: LintReport | None) -> list[Unread]:
    """The note files under the memory's corpus roots that it does not hold."""
    from recall.authoring.lint import REFUSING
    from recall.walk import discover

    held = {(n.source, n.path) for n in notes}
    forgotten = {(f.source, f.path) for f in mem.forgotten() if f.undone_at is None}
    refusals: dict[str, list[str]] = {}
    for finding in lint.findings if lint is not None else ():
        if finding.code in REFUSING:
            where = os.path.abspath(finding.file)
            refusals.setdefault(where, []).append(f"{finding.code} {finding.message}")
    found: list[Unread] = []
    for root in sorted({n.source for n in notes}):
        if not os.path.isdir(root):
            continue
        try:
            listing = discover(Path(root), "recall report")
        except RecallError:
            continue
        source = str(listing.source)
        for skipped in listing.refused:
            found.append(Unread(os.path.join(source, skipped.path), "refused", skipped.reason))
        for rel, path in listing.paths():
            if (source, rel) in held or (root, rel) in held:
                continue
            shown = os.path.join(source, rel)
            if (source, rel) in forgotten or (root, rel) in forgotten:
                found.append(
                    Unread(shown, "forgotten", "forgotten: recall forget --undo brings it back")
                )
            elif os.path.abspath(path) in refusals:
                found.append(Unread(shown, "refused", "; ".join(refusals[os.path.abspath(path)])))
            else:
                found.append(
                    Unread(shown, "not indexed", "new or renamed since the last index run")
                )
    return sorted(found, key=lambda u: (u.kind, u.path))


def gather(
    mem: Memory,
    *,
    now: dt.datetime,
    evaluate: bool = False,
    questions: str | None = None,
) -> Facts:
    """Read everything a report shows from `mem` at `now`. With `evaluate`, the shipped
    evaluation set is run with the store's embedder (`recall eval`); with `questions`, those
    labelled questions are run against this store (`recall eval QUESTIONS`)."""
    stats = mem.stats()
    calibration, calibration_note = mem.calibration() if stats.embedder else (None, "")
    facts = Facts(
        now=now,
        stats=stats,
        trust=mem.trust(),
        calibration=calibration,
        calibration_note=calibration_note or stats.calibration_note,
        history=mem.calibration_history(),
        notes=mem.lineage(now=now),
        doctor=None,
        doctor_note="",
        lint=None,
        lint_note="",
    )
    try:
        facts.doctor = mem.doctor()
    except RecallError as err:
        facts.doctor_note = str(err)
    try:
        facts.lint = mem.lint()
    except RecallError as err:
        facts.lint_note = str(err)
    facts.unread = _unread(mem, facts.notes, facts.lint)
    if evaluate or questions is not None:
        from recall import evaluation

        if questions is not None:
            facts.evaluation = [evaluation.evaluate_store(mem, questions, now=now)]
        elif stats.embedder is None:
            facts.evaluation_note = "nothing is indexed, so no embedder to evaluate"
        else:
            facts.evaluation = evaluation.evaluate_shipped(
                [stats.embedder], calibrations=("labelled", "self", "prior")
            )
    return facts
