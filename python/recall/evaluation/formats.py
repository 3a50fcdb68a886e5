"""How an evaluation report reads: the terminal table and the markdown report.

Owns: `format_table` (one row per measurement, one column per embedder and calibration, the
notes under it) and `format_markdown` (`recall eval --report FILE.md`: the table with its
intervals, the setup and the notes), and how an estimate, a threshold, a calibration and the
modes that answered read in them. Does not own: the figures or the JSON form (`measures`), or
printing and writing the report (`recall.cli.evaluate`, `recall.writing`).
"""

from __future__ import annotations

from collections.abc import Sequence

from recall.evaluation.estimates import Estimate
from recall.evaluation.measures import METRICS, EvalReport
from recall.evaluation.observation import LEGS

__all__ = ["format_markdown", "format_table", "table_cells"]

_RETRIEVAL_LABELS = {"mrr": "MRR", "recall@5": "recall@5"}
_SEPARATION_LABELS = {
    "top1_auc": "AUC, top-1 cosine",
    "relative_gap_auc": "AUC, top-1 minus top-2",
}


def _lines(reports: Sequence[EvalReport]) -> list[tuple[str, list[Estimate]]]:
    """(label, one estimate per report) in report order."""
    out: list[tuple[str, list[Estimate]]] = []
    for leg in LEGS:
        for key, label in _RETRIEVAL_LABELS.items():
            out.append((f"{leg} {label}", [r.retrieval[leg][key] for r in reports]))
    for key, label in METRICS.items():
        out.append((label, [r.metrics[key] for r in reports]))
    for key, label in _SEPARATION_LABELS.items():
        out.append((label, [r.separation[key] for r in reports]))
    return out


def _threshold(report: EvalReport) -> str:
    values = [c["threshold"] for c in report.calibrations if c.get("threshold") is not None]
    certified = [c.get("certified") for c in report.calibrations]
    text = " / ".join(f"{v:.3f}" for v in values) or "none"
    state = "certified" if certified and all(c is True for c in certified) else "not certified"
    return f"{text} ({state})"


def _source(report: EvalReport) -> str:
    if report.calibration_source == "self":
        return "made by recall from the notes"
    if report.calibration_source == "prior":
        return "the prior shipped with recall"
    return "cross-fitted on labels" if report.cross_fitted else "the store's"


def _modes(report: EvalReport) -> str:
    return ", ".join(f"{mode} {n}" for mode, n in sorted(report.modes.items()))


def _column(report: EvalReport) -> str:
    """A report's column: its embedder, and which calibration judged it."""
    return f"{report.embedder} ({report.calibration_source})"


def _header(reports: Sequence[EvalReport]) -> list[tuple[str, list[str]]]:
    return [
        ("calibration", [_source(r) for r in reports]),
        ("questions", [str(r.questions) for r in reports]),
        ("threshold", [_threshold(r) for r in reports]),
        ("answered in", [_modes(r) for r in reports]),
        ("seconds", [f"{r.seconds:.1f}" for r in reports]),
    ]


def _cell(e: Estimate, interval_sep: str = ", ") -> str:
    if e.value is None:
        return "n/a"
    head = f"{e.count}/{e.n} = {e.value:.2f}" if e.count is not None else f"{e.value:.3f}"
    if e.low is None or e.high is None:
        return f"{head} (n={e.n})" if e.count is None else head
    tail = f"[{e.low:.2f}{interval_sep}{e.high:.2f}]"
    return f"{head} {tail}" + ("" if e.count is not None else f" n={e.n}")


def _notes(reports: Sequence[EvalReport]) -> list[str]:
    return [f"{_column(r)}: {note}" for r in reports for note in r.notes]


def _setup(reports: Sequence[EvalReport]) -> str:
    first = reports[0]
    return f"at {first.now[:10]} (k={first.k})"


def table_cells(reports: Sequence[EvalReport]) -> list[tuple[str, list[str]]]:
    """The table as (label, one cell per report): the columns' names first, then the setup,
    then one row per measurement. What `format_table` lays out, and `recall report` draws."""
    table = [("", [_column(r) for r in reports]), *_header(reports)]
    table += [(label, [_cell(e) for e in cells]) for label, cells in _lines(reports)]
    return table


def format_table(reports: Sequence[EvalReport]) -> str:
    """Plain text for a terminal: one row per measurement, one column per embedder."""
    if not reports:
        return "recall eval: nothing evaluated"
    table = table_cells(reports)
    label_width = max(len(label) for label, _ in table)
    widths = [max(len(cells[i]) for _, cells in table) for i in range(len(reports))]
    out = [f"recall eval {_setup(reports)}; 95 % intervals in brackets", ""]
    for label, cells in table:
        row = "  ".join(c.ljust(w) for c, w in zip(cells, widths))
        out.append(f"{label.ljust(label_width)}  {row}".rstrip())
    notes = _notes(reports)
    if notes:
        out += ["", "notes:", *(f"  {n}" for n in notes)]
    return "\n".join(out)


def format_markdown(reports: Sequence[EvalReport]) -> str:
    """A markdown report (`recall eval --report FILE.md`): the table with 95 % intervals, the
    setup and the notes."""
    if not reports:
        return "# recall eval\n\nNothing evaluated.\n"

    def md(text: str) -> str:
        return text.replace("|", "\\|")

    out = [
        "# recall eval",
        "",
        f"Evaluated {md(_setup(reports))}. Rates show successes/n = rate "
        "[Wilson 95 % interval]; MRR shows the mean [normal 95 % interval]; AUCs show "
        "[Hanley–McNeil 95 % interval].",
        "",
        "| measurement | " + " | ".join(md(_column(r)) for r in reports) + " |",
        "| --- | " + " | ".join("---" for _ in reports) + " |",
    ]
    for label, cells in _header(reports):
        out.append(f"| {md(label)} | " + " | ".join(md(c) for c in cells) + " |")
    for label, estimates in _lines(reports):
        out.append(f"| {md(label)} | " + " | ".join(md(_cell(e, "–")) for e in estimates) + " |")
    notes = _notes(reports)
    if notes:
        out += ["", "Notes:", "", *(f"- {md(n)}" for n in notes)]
    return "\n".join(out) + "\n"
