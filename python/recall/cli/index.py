"""`recall index`: notes into the store, with a progress bar in a terminal and the run's report.

Owns: the command's arguments, the progress bar (chunks embedded against chunks expected), the
report for people or scripts (`--json`), what an interrupted run says, and its exit codes. Does
not own: the index run (`recall.indexing`, through `Memory.index`) or the calibration it may end
with (`Memory.calibrate_if_due`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from recall.cli.exits import EXIT_ERRORS, EXIT_OK, emit_json, fail
from recall.cli.options import (
    DbOption,
    JsonOption,
    NamespaceOption,
    embedder_name,
    missing,
    store_named,
)
from recall.postgres import shown_db

if TYPE_CHECKING:
    from recall.api import IndexReport


def register(app: typer.Typer) -> None:
    """Add `index` to the `recall` app."""
    app.command()(index)


def index(
    paths: list[Path] = typer.Argument(..., help="Folders or files of markdown notes."),
    db: Optional[str] = DbOption,
    namespace: Optional[str] = NamespaceOption,
    as_json: bool = JsonOption,
    allow_prune: bool = typer.Option(
        False, "--allow-prune", help="Allow removing more than half of the indexed documents."
    ),
    embedder: Optional[str] = typer.Option(
        None,
        "--embedder",
        help="Embedder for a new store: minilm-l6 (default; also $RECALL_EMBEDDER), "
        "onnx:DIR or hashing-D.",
        callback=embedder_name,
    ),
    vocabularies: Optional[str] = typer.Option(
        None,
        "--vocabularies",
        help="Declarations in force from this run on: all (frontmatter, PEP preambles, "
        "MADR and Nygard ADRs; the default), frontmatter, or none. Kept by the store.",
        show_default=False,
    ),
    calibrate: bool = typer.Option(
        True,
        "--calibrate/--no-calibrate",
        help="After the run, fit a calibration from the notes alone when the store has none "
        "(or only a stale self-made one), so strict search answers at once.",
    ),
) -> None:
    """Index notes into the store: incremental, one transaction per run."""
    import recall
    from recall.errors import RecallError
    from recall.interrupts import Interrupted, exit_stopped, stoppable

    db_path = store_named(db, namespace)
    committed = False
    try:
        with stoppable(), recall.open(db_path, embedder=embedder) as mem:
            if as_json or not sys.stderr.isatty():
                report = mem.index(
                    paths, allow_prune=allow_prune, vocabularies=vocabularies, calibrate=False
                )
            else:
                report = _index_with_progress(mem, paths, allow_prune, vocabularies)
            committed = True
            if calibrate and report.generation:
                report.calibrated = mem.calibrate_if_due()
                report.trust = mem.trust()
    except RecallError as err:
        fail(str(err))
    except Interrupted as stop:
        exit_stopped(
            stop,
            f"recall index: stopped by {stop.name}; the run was committed but the calibration "
            "was not; 'recall calibrate --auto' fits it"
            if committed
            else f"recall index: stopped by {stop.name}; the run was not committed, so "
            f"{shown_db(db_path)} is as it was; the vectors computed so far are kept, so the same "
            "command goes on from there",
        )
    if report.ok and not (report.added or report.updated or report.unchanged) and missing(db_path):
        # Nothing to keep, so no store was made (a first run creates the file only with notes).
        from recall.walk import shown

        names = ", ".join(shown(str(p)) for p in paths)
        skipped = f" ({len(report.skipped)} files skipped: not notes)" if report.skipped else ""
        fail(
            f"recall index: no notes in {names}{skipped}; nothing was written to "
            f"{shown_db(db_path)}"
        )
    if as_json:
        emit_json({"db": shown_db(db_path), **report.to_dict()})
    else:
        _print_index_report(report, db_path)
    raise typer.Exit(EXIT_OK if report.ok else EXIT_ERRORS)


def _index_with_progress(
    mem: Any, paths: list[Path], allow_prune: bool, vocabularies: Optional[str]
) -> IndexReport:
    import time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    # The bar counts chunks embedded against the chunks the run will have read: those read so
    # far, scaled by the files still to read until every file is read.
    columns = ("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn())
    fields = "chunks {task.fields[rate]} · files {task.fields[files]}"
    started = time.perf_counter()
    with Progress(*columns, fields, TimeRemainingColumn(), transient=True) as bar:
        task = bar.add_task(f"embedding ({mem.embedder.name})", total=None, rate="", files="")

        def tick(done: int, total: int, embedded: int, read: int) -> None:
            elapsed = time.perf_counter() - started
            rate = f"{embedded / elapsed:,.0f}/s" if embedded and elapsed else ""
            expected = max(read, round(read * total / done)) if done else None
            bar.update(task, completed=embedded, total=expected, rate=rate, files=f"{done}/{total}")

        report: IndexReport = mem.index(
            paths,
            allow_prune=allow_prune,
            progress=tick,
            vocabularies=vocabularies,
            calibrate=False,
        )
        return report


def _print_index_report(report: IndexReport, db_path: str) -> None:
    from rich.console import Console
    from rich.markup import escape

    from recall.walk import shown

    out = Console(highlight=False)
    out.print(
        f"Indexed into [bold]{escape(shown_db(db_path))}[/] in {report.seconds:.2f} s "
        f"(generation {report.generation})"
    )
    out.print(
        f"  added {len(report.added)} · updated {len(report.updated)} · "
        f"unchanged {report.unchanged} · removed {len(report.removed)} · "
        f"refused {len(report.refused)} · skipped {len(report.skipped)}"
    )
    speed = f", {report.embedded / report.seconds:,.0f} chunks/s" if report.seconds else ""
    out.print(
        f"  chunks written {report.chunks} · embedded {report.embedded} "
        f"({escape(report.embedder)}{speed}) · reused {report.reused}"
    )
    if report.moved:
        out.print(f"  moved {len(report.moved)} (renamed or in a moved folder; not embedded again)")
    if report.journal_discarded:
        out.print(
            f"  [yellow]discarded {report.journal_discarded} damaged record(s) of the embedding "
            "journal[/] (their texts were embedded again)"
        )
    fitted = report.calibrated
    if fitted is not None:
        if fitted["certified"] and fitted["in_use"]:
            state = "certified: strict search answers"
        elif fitted["in_use"]:
            state = f"[yellow]not certified[/] ({escape(fitted['certified_reason'] or '')})"
        else:
            state = "kept in the history; the calibration in use stays"
        out.print(
            f"  calibrated itself from the notes: threshold {fitted['threshold']:.3f}, "
            f"{state} ({fitted['seconds']:.1f} s)"
        )
    if report.trust is not None:
        style = "green" if report.trust["answers"] else "yellow"
        out.print(f"  trust: [{style}]{escape(report.trust['line'])}[/]")
    for title, items, style in (
        ("refused", report.refused, "red"),
        ("skipped", report.skipped, "yellow"),
    ):
        if items:
            out.print(f"[{style}]{title}:[/]")
            for item in items:
                out.print(f"  {escape(shown(item.path))}: {escape(item.reason)}")
    if report.removed:
        out.print("removed:")
        for path in report.removed:
            out.print(f"  {escape(shown(path))}")
    from recall.doctor import missing_root_advice

    for root, documents in report.missing_roots:
        out.print(f"[yellow]{escape(missing_root_advice(root, documents))}[/]")
