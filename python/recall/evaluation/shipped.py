"""The shipped evaluation set, or a folder laid out like it, evaluated from scratch (SPEC §9).

Owns: where the shipped set is (`EVALSET_DIR`) and which of its categories a calibration is
fitted on (`FIT_CATEGORIES`), reading its meta.json, a fresh store per embedder indexed a fixed
time before the evaluation instant, checking that the questions name indexed notes, the two-fold
cross-fitted calibration (no question judged by a boundary fitted on itself) or the self-made
one, and `evaluate_shipped`, one report per embedder and calibration. Does not own: the notes
and questions (`evalset/`), fitting a calibration (`Memory.calibrate`, `Memory.calibrate_self`)
or the measurements (`measures`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import tempfile
import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from recall.api import Memory
from recall.errors import UsageError
from recall.evaluation.measures import (
    EvalReport,
    build_report,
    calibration_summary,
    judge_note,
)
from recall.evaluation.observation import Row, observe_all
from recall.evaluation.questions import (
    Question,
    load_questions,
    note_path,
    read_instant,
    touched_map,
)

__all__ = ["EVALSET_DIR", "FIT_CATEGORIES", "INDEXED_BEFORE", "evaluate_shipped"]

#: The shipped evaluation set: notes/, questions.jsonl, meta.json.
EVALSET_DIR = Path(__file__).resolve().parent.parent / "evalset"
#: The categories a shipped-set calibration is fitted on (evalset/README.md).
FIT_CATEGORIES = ("paraphrase", "identifier", "supersession", "far_gap", "near_topic")
#: The calibrations a set can be judged with: cross-fitted on its labels, made by recall from
#: the notes, or the prior shipped for a built-in embedder (SPEC §7).
CALIBRATIONS = ("labelled", "self", "prior")
#: The shipped set is indexed this long before its evaluation instant (fresh, not stale: §5.4).
INDEXED_BEFORE = dt.timedelta(days=1)


def _load_meta(path: Path) -> tuple[dt.datetime, dict[str, dt.datetime], dt.datetime]:
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise UsageError(f"recall eval: cannot read {path}: {err}") from err
    if not isinstance(meta, dict) or "now" not in meta:
        raise UsageError(f"recall eval: {path} needs an object with 'now'")
    now = read_instant(meta["now"], f"{path} 'now'")
    touched = meta.get("touched") or {}
    if not isinstance(touched, dict):
        raise UsageError(f"recall eval: {path}: 'touched' must map note paths to times")
    indexed = meta.get("indexed_at")
    indexed_at = read_instant(indexed, f"{path} 'indexed_at'") if indexed else now - INDEXED_BEFORE
    return now, touched_map(touched), indexed_at


def _fresh_store(folder: Path, embedder: str) -> Path:
    path = folder / f"recall-eval-{re.sub(r'[^A-Za-z0-9_.-]+', '_', embedder)}.db"
    for stale in (path, *(Path(f"{path}{suffix}") for suffix in ("-wal", "-shm", "-committed"))):
        stale.unlink(missing_ok=True)
    return path


def _cross_fitted(
    mem: Memory,
    questions: Sequence[Question],
    *,
    now: dt.datetime,
    touched: Mapping[str, dt.datetime],
    fitted_at: dt.datetime,
    k: int,
    entail: bool,
    fit_categories: Collection[str] | None,
) -> tuple[list[Row], list[dict[str, Any]], list[str]]:
    """Two folds: calibrate on the questions at even positions (0, 2, 4, … in file order) and
    score the odd ones, then the reverse, so no question is judged by a boundary fitted on
    itself (SPEC §7 leave-out, applied to §9). `fit_categories` limits which questions of a
    fold are fitted on (None: all); every question is scored."""
    if len(questions) < 2:
        raise UsageError("recall eval: cross-fitting needs at least two questions")
    positions = (range(0, len(questions), 2), range(1, len(questions), 2))
    scored: dict[int, Row] = {}
    calibrations: list[dict[str, Any]] = []
    notes: list[str] = []
    for fold, (fit_on, score_on) in enumerate((positions, positions[::-1]), 1):
        # SPEC §7 labelled queries: `relevant` names the files that answer, so only an
        # answerable question passes its notes on (an unanswerable one names the note it is
        # about, which by its label does not answer it).
        labelled = [
            {
                "query": questions[i].query,
                "answerable": questions[i].answerable,
                "relevant": list(questions[i].relevant) if questions[i].answerable else [],
            }
            for i in fit_on
            if fit_categories is None or questions[i].category in fit_categories
        ]
        if not labelled:
            raise UsageError(
                f"recall eval: fold {fold} has no question to calibrate on in the categories "
                f"{', '.join(sorted(fit_categories or ()))}"
            )
        # Each fold is scored by its own fit, certified or not.
        mem.calibrate(labelled, now=fitted_at, replace=True)
        calibrations.append(calibration_summary(mem, fold))
        rows, refused = observe_all(
            mem,
            [questions[i] for i in score_on],
            now=now,
            touched=touched,
            k=k,
            entail=entail,
            fold=fold,
        )
        scored.update(zip(score_on, rows))
        notes.extend(refused)
    return [scored[i] for i in range(len(questions))], calibrations, notes


def evaluate_shipped(
    embedders: Sequence[str] = ("hashing-512", "minilm-l6"),
    workdir: str | os.PathLike[str] | None = None,
    *,
    evalset: str | os.PathLike[str] | None = None,
    k: int = 5,
    entail: bool = False,
    fit_categories: Collection[str] | None = FIT_CATEGORIES,
    calibrations: Sequence[str] = ("labelled",),
) -> list[EvalReport]:
    """Evaluate each embedder on the shipped evaluation set (or another folder laid out the
    same way: notes/, questions.jsonl, meta.json).

    Per embedder: index the notes into a fresh store at a fixed time before meta.json's `now`
    (its `indexed_at`, else one day before), calibrate with two-fold cross-fitting, and
    evaluate at `now` with its `touched` times. Stores go to a temporary folder, or to
    `workdir` as `recall-eval-<embedder>.db` (replaced on each run) to inspect afterwards.
    With `entail=True` near misses are also judged by the configured judge ($RECALL_JUDGE).
    `calibrations` names which calibrations judge the questions, one report each: `labelled`
    (cross-fitted on the set's questions, below), `self` (made by recall from the notes
    alone, `Memory.calibrate_self`; no question of the set is fitted on) and `prior` (shipped
    with recall for a built-in embedder; skipped, with a note, for another).
    `fit_categories` fits the calibrations on those categories only (None: all); by default
    the near misses and retired notes are left out, as the set's README says: their note is on
    topic by design, and telling them apart is the work of the judge and of the validity
    windows, not of the relevance threshold. Every question is still scored.
    """
    root = Path(evalset) if evalset is not None else EVALSET_DIR
    notes_dir, questions_file, meta_file = (
        root / "notes",
        root / "questions.jsonl",
        root / "meta.json",
    )
    for needed in (notes_dir, questions_file, meta_file):
        if not needed.exists():
            raise UsageError(f"recall eval: the evaluation file {needed} is missing")
    questions = load_questions(questions_file)
    now, touched, indexed_at = _load_meta(meta_file)
    if not embedders:
        raise UsageError("recall eval: name at least one embedder")
    reports = []
    with tempfile.TemporaryDirectory(prefix="recall-eval-") as scratch:
        folder = Path(workdir) if workdir is not None else Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        for name in embedders:
            started = time.perf_counter()
            with Memory(_fresh_store(folder, name), embedder=name) as mem:
                indexed = mem.index(notes_dir, now=indexed_at, calibrate=False)
                notes = [f"refused {s.path}: {s.reason}" for s in indexed.refused]
                # A label naming no indexed note would silently count as "not retrieved".
                known = {note_path(p) for p in (*indexed.added, *indexed.updated)}
                named = {
                    p
                    for q in questions
                    for p in (*q.relevant, q.successor or "", q.stale or "")
                    if p and p not in known
                }
                if named:
                    notes.append(
                        "questions name notes that were not indexed: " + ", ".join(sorted(named))
                    )
                judging, judge_notes = judge_note(mem, entail)
                # The prior serves only a store with no record of its own: judged first.
                for source in sorted(calibrations, key=lambda c: c != "prior"):
                    if source not in CALIBRATIONS:
                        raise UsageError(
                            f"recall eval: unknown calibration {source!r}; choose "
                            + ", ".join(CALIBRATIONS)
                        )
                    if source == "prior":
                        record, _ = mem.calibration()
                        if record is None or record.source != "prior":
                            notes.append(f"no prior calibration is shipped for {name}")
                            continue
                        rows, refused = observe_all(
                            mem, questions, now=now, touched=touched, k=k, entail=judging, fold=None
                        )
                        fitted, how = [calibration_summary(mem)], ["the prior shipped with recall"]
                    elif source == "self":
                        # Made from the notes alone: no question of the set is fitted on.
                        mem.calibrate_self(now=indexed_at, replace=True)
                        rows, refused = observe_all(
                            mem, questions, now=now, touched=touched, k=k, entail=judging, fold=None
                        )
                        fitted, how = [calibration_summary(mem)], ["calibrated by recall itself"]
                    else:
                        rows, fitted, refused = _cross_fitted(
                            mem,
                            questions,
                            now=now,
                            touched=touched,
                            fitted_at=indexed_at,
                            k=k,
                            entail=judging,
                            fit_categories=fit_categories,
                        )
                        how = (
                            ["calibrated on the categories " + ", ".join(sorted(fit_categories))]
                            if fit_categories is not None
                            else []
                        )
                    reports.append(
                        build_report(
                            mem.embedder.name,
                            questions,
                            rows,
                            now=now,
                            k=k,
                            calibrations=fitted,
                            notes=notes + how + judge_notes + refused,
                            started=started,
                            cross_fitted=source == "labelled",
                            calibration_source=source,
                        )
                    )
    return reports
