"""`recall report`: the memory as one HTML page.

Owns: the command's arguments, its line for people or its summary for scripts (`--json`: the
path written, what was drawn, the size, the seconds) and its exit codes (2 for a store that is
missing or empty, or a page that cannot be written). Does not own: reading or drawing anything
(`recall.report`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from recall.cli.exits import emit_json, fail
from recall.cli.options import DbOption, JsonOption, NamespaceOption, missing, store_named, when
from recall.postgres import shown_db


def register(app: typer.Typer) -> None:
    """Add `report` to the `recall` app."""
    app.command()(report)


def report(
    db: Optional[str] = DbOption,
    namespace: Optional[str] = NamespaceOption,
    out: Path = typer.Option(
        Path("recall-report.html"), "--out", "-o", metavar="FILE", help="The HTML file to write."
    ),
    evaluate: bool = typer.Option(
        False,
        "--eval",
        help="Add the evaluation table: the shipped evaluation set run with the store's "
        "embedder (what 'recall eval' measures; a few seconds for hashing, longer for a model).",
    ),
    questions: Optional[Path] = typer.Option(
        None,
        "--questions",
        metavar="FILE",
        help="With --eval: run these labelled questions (JSONL) against this store instead.",
    ),
    as_of: Optional[str] = typer.Option(
        None, "--as-of", help="Judge the notes at this date/time (default now)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Write the memory as one HTML page: lineage, calibration, freshness, lint (no network)."""
    import recall
    from recall.errors import RecallError
    from recall.report import write_report

    db_path = store_named(db, namespace)
    if missing(db_path):
        fail(f"recall report: {shown_db(db_path)} does not exist; run 'recall index PATH' first")
    if questions is not None and not evaluate:
        fail("recall report: --questions goes with --eval")
    instant = when(as_of, "--as-of")
    try:
        with recall.open(db_path, read_only=True) as mem:
            written = write_report(
                mem,
                out,
                now=instant,
                evaluate=evaluate,
                questions=str(questions) if questions is not None else None,
            )
    except RecallError as err:
        fail(str(err))
    if as_json:
        emit_json(written.to_dict())
    else:
        typer.echo(
            f"wrote {written.path}: {written.notes} notes, {written.edges} replacements in "
            f"{written.lineages} lineages, {written.bytes / 1024:.0f} KiB in "
            f"{written.seconds:.2f} s"
        )
