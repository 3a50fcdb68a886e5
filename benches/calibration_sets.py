"""Self-made against labelled calibration on every labelled set (SPEC §7, §9).

For each set (default: the shipped set and benches/evalsets/{platform,transit,pgsql,sqlite,
public-adr,public-adr-b}; sqlite was written as a held-out set and was not used to choose the
near-topic rule, public-adr-b was used to choose nothing), one fresh store per embedder judges
every question with each calibration:

- `labelled`: cross-fitted on the set's own questions (two folds), with the identifier lookups
  recall makes beside them, as `recall eval` does;
- `labelled, no lookups`: the same folds without the made lookups, so that the difference says
  what the lookups change (SPEC §7: they may only add evidence);
- `self`: made by recall from the notes alone (`Memory.calibrate_self`);
- `self, 60 answerable (before)`: the same made questions with at most 60 answerable ones, as
  before the fit asked up to 120 (the baseline, same run);
- `prior`: the prior shipped for a built-in embedder, applied to the whole set, where one is
  shipped (it serves small memories; `benches/fit_prior.py` measures it on those).

Prints one markdown row per set and calibration: threshold (one per fold), certified,
near-topic false confidence (unanswerable questions in the corpus's own domain answered `ok`),
far-gap false confidence, false abstention (answerable questions abstained on), identifier
lookups right and answered from another note. Deterministic: the made questions are seeded.

Usage: python benches/calibration_sets.py [--embedder minilm-l6] [--sets DIR ...]
       [--near-quantile 0.5]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from recall import evaluation, fitting, selfcal
from recall.calibration import statistics
from recall.evaluation.measures import EvalReport

ROOT = Path(__file__).resolve().parents[1]
SETS = [evaluation.EVALSET_DIR] + [
    ROOT / "benches" / "evalsets" / n
    for n in ("platform", "transit", "pgsql", "sqlite", "public-adr", "public-adr-b")
]


@contextmanager
def without_lookups() -> Iterator[None]:
    """Labelled fits without the identifier lookups recall makes beside them."""
    made = fitting.identifier_probes
    fitting.identifier_probes = lambda store: []  # type: ignore[assignment]
    try:
        yield
    finally:
        fitting.identifier_probes = made


@contextmanager
def fewer_answerable(most: int = 60) -> Iterator[None]:
    """Self-made fits asking at most `most` answerable questions, as before they asked 120."""
    asked = selfcal.MAX_ANSWERABLE
    selfcal.MAX_ANSWERABLE = most
    try:
        yield
    finally:
        selfcal.MAX_ANSWERABLE = asked


def _rate(report: EvalReport, key: str) -> str:
    e = report.metrics[key]
    return f"{e.count}/{e.n} = {e.value:.2f}" if e.n else "–"


def row(name: str, label: str, report: EvalReport) -> str:
    fits = report.calibrations
    thresholds = " / ".join(
        f"{c['threshold']:.3f}" if c.get("threshold") is not None else "–" for c in fits
    )
    certified = " / ".join("yes" if c.get("certified") else "no" for c in fits)
    ident = report.metrics["identifier_accuracy"]
    wrong = report.metrics["identifier_wrong"]
    lookups = f"{ident.count}/{ident.n} / {wrong.count}" if ident.n else "–"
    return (
        f"| {name} | {label} | {thresholds} | {certified} | "
        f"{_rate(report, 'near_topic_false_confidence')} | "
        f"{_rate(report, 'far_gap_false_confidence')} | {_rate(report, 'false_abstain')} | "
        f"{lookups} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", default="minilm-l6")
    parser.add_argument("--sets", nargs="+", type=Path, default=SETS)
    parser.add_argument(
        "--near-quantile",
        type=float,
        default=statistics.NEAR_QUANTILE,
        help="the near-topic questions' quantile that places a self-made threshold",
    )
    args = parser.parse_args()
    statistics.NEAR_QUANTILE = args.near_quantile
    print(
        "| set | calibration | threshold | certified | near-topic false confidence | "
        "far-gap false confidence | false abstain | identifier lookups right / ok elsewhere |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for folder in args.sets:
        name = "shipped" if folder.resolve() == evaluation.EVALSET_DIR else folder.name
        started = time.perf_counter()
        runs: list[tuple[str, EvalReport]] = []
        reports = evaluation.evaluate_shipped(
            [args.embedder], evalset=folder, calibrations=("prior", "labelled", "self")
        )
        by_source = {r.calibration_source: r for r in reports}
        runs.append(("labelled", by_source["labelled"]))
        with without_lookups():
            (bare,) = evaluation.evaluate_shipped(
                [args.embedder], evalset=folder, calibrations=("labelled",)
            )
        runs.append(("labelled, no lookups", bare))
        runs.append(("**self**", by_source["self"]))
        with fewer_answerable():
            (before,) = evaluation.evaluate_shipped(
                [args.embedder], evalset=folder, calibrations=("self",)
            )
        runs.append(("self, 60 answerable (before)", before))
        if "prior" in by_source:
            runs.append(("prior", by_source["prior"]))
        for label, report in runs:
            print(row(name, label, report), flush=True)
        seconds = time.perf_counter() - started
        print(f"<!-- {name}: {seconds:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
