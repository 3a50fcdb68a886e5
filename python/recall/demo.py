"""The demo that `recall quickstart` runs: a memo corpus and labelled queries shipped inside
the package (python/recall/quickstart/), written for this project.

Owns: locating the demo files and running index → calibrate → three questions against a store.
Does not own: printing (`recall.cli.evaluate`) or any rule (api.py and the Rust core).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recall.api import IndexReport, Memory
from recall.calibration import Calibration, Fit
from recall.errors import UsageError
from recall.results import Result

__all__ = ["DEMO_DIR", "Demo", "run"]

DEMO_DIR = Path(__file__).resolve().parent / "quickstart"


@dataclass
class Demo:
    """Everything the quickstart did, for the CLI to show."""

    now: dt.datetime
    report: IndexReport
    calibration: Calibration
    fit: Fit
    questions: list[dict[str, Any]]
    results: list[Result]


def _load() -> tuple[Path, Path, dict[str, Any]]:
    notes, queries, spec = DEMO_DIR / "notes", DEMO_DIR / "queries.jsonl", DEMO_DIR / "demo.json"
    for path in (notes, queries, spec):
        if not path.exists():
            raise UsageError(
                f"recall quickstart: the demo file {path} is missing; reinstall recall"
            )
    return notes, queries, json.loads(spec.read_text(encoding="utf-8"))


def run(mem: Memory) -> Demo:
    """Index the demo notes, calibrate on the labelled queries, answer the three questions.

    The demo runs on a fixed clock (the `now` in demo.json, used both as the indexing time and
    as the question time) so its validity windows give the same verdicts on any day.
    """
    notes, queries, spec = _load()
    now = dt.datetime.fromisoformat(spec["now"]).replace(tzinfo=dt.timezone.utc)
    report = mem.index(notes, now=now, calibrate=False)
    # The demo shows the fit it makes, so that fit is the one its questions are judged by.
    calibration, fitted = mem.calibrate(queries, now=now, replace=True)
    questions = list(spec["questions"])
    results = [mem.search(q["query"], now=now) for q in questions]
    return Demo(now, report, calibration, fitted, questions, results)
