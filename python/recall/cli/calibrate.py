"""`recall calibrate`: fitting where abstention starts, and the history of fits.

Owns: the command's arguments (a fit from labelled queries or `--auto`, `--import`, `--export`,
`--list`, `--use`), exporting the record in use even from a store file that cannot be read, the
history and the fit for people or scripts (`--json`), and its exit codes (1 when a fit is not
certified). Does not own: fitting (`recall.fitting`), the records (`recall.calibration.stored`)
or reading a record from a file's bytes (`recall.salvage`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from recall.backends import locate
from recall.cli.exits import EXIT_ERRORS, EXIT_OK, emit_json, fail
from recall.cli.options import DbOption, JsonOption, NamespaceOption, missing, store_named
from recall.postgres import shown_db

__all__ = ["print_fit", "register"]


def register(app: typer.Typer) -> None:
    """Add `calibrate` to the `recall` app."""
    app.command()(calibrate)


def calibrate(
    queries: Optional[Path] = typer.Argument(
        None, help='Labelled queries: JSONL lines {"query": ..., "answerable": true|false}.'
    ),
    db: Optional[str] = DbOption,
    namespace: Optional[str] = NamespaceOption,
    as_json: bool = JsonOption,
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write a PNG of the fit."),
    replace: bool = typer.Option(
        False,
        "--replace",
        help="Put the new fit in use even if it is not certified and the one in use is.",
    ),
    import_file: Optional[Path] = typer.Option(
        None, "--import", help="Import a calibration record (JSON) instead of fitting."
    ),
    export_file: Optional[Path] = typer.Option(
        None, "--export", help="Write the calibration record in use as JSON."
    ),
    list_history: bool = typer.Option(
        False, "--list", help="Show the calibration history (the last 10 records) and exit."
    ),
    use: Optional[int] = typer.Option(
        None, "--use", metavar="N", help="Put record N of --list back in use."
    ),
    auto: bool = typer.Option(
        False,
        "--auto",
        help="Fit from questions recall makes from the notes alone (no labelled queries); "
        "a labelled calibration in use stays in use unless --replace.",
    ),
) -> None:
    """Fit where abstention starts: from labelled queries (>= 20 per class to certify), or
    with --auto from the notes alone (what 'recall index' does for a store without one).

    Every fit is kept (--list); an uncertified fit replaces a certified one only with --replace.
    """
    import recall
    from recall.calibration import plot as plot_fit
    from recall.errors import RecallError

    db_path = store_named(db, namespace)
    if missing(db_path):
        fail(f"recall calibrate: {shown_db(db_path)} does not exist; run 'recall index PATH' first")
    actions = (queries is not None, import_file is not None, export_file is not None, auto)
    if sum(actions) + list_history + (use is not None) != 1:
        fail(
            "recall calibrate: give QUERIES to fit, or one of --auto, --import FILE, "
            "--export FILE, --list, --use N"
        )
    if replace and queries is None and not auto:
        fail("recall calibrate: --replace goes with QUERIES or --auto (a fit)")
    try:
        with recall.open(db_path) as mem:
            if list_history:
                _show_history(mem, as_json)
                return
            if use is not None:
                record = mem.use_calibration(use)
                if as_json:
                    emit_json(record.to_dict())
                else:
                    typer.echo(
                        f"calibration #{use} ({record.id}, threshold {record.threshold}) is in use"
                    )
                return
            if import_file is not None:
                record = mem.import_calibration(import_file)
                if as_json:
                    emit_json(record.to_dict())
                else:
                    typer.echo(f"imported calibration {record.id} (threshold {record.threshold})")
                return
            if export_file is not None:
                _export(export_file, mem.export_calibration(), as_json)
                return
            if auto:
                calibration, fitted = mem.calibrate_self(replace=replace)
            else:
                assert queries is not None
                calibration, fitted = mem.calibrate(queries, replace=replace)
            in_use, _ = mem.calibration()
            entry = next(
                (e.number for e in mem.calibration_history() if e.record == calibration), None
            )
            if plot is not None:
                plot_fit(fitted, plot)
    except RecallError as err:
        if export_file is not None and _salvageable(err, db_path):
            _export_salvaged(export_file, db_path, err, as_json)
            return
        fail(str(err))
    if as_json:
        emit_json(
            {
                "calibration": calibration.to_dict(),
                "fit": fitted.to_dict(),
                "entry": entry,
                "in_use": in_use == calibration,
                "in_use_id": in_use.id if in_use else None,
            }
        )
    else:
        print_fit(
            calibration, fitted, plot, entry=entry, kept=None if in_use == calibration else in_use
        )
    raise typer.Exit(EXIT_OK if fitted.certified else EXIT_ERRORS)


def _export(
    export_file: Path, record: dict[str, Any], as_json: bool, salvaged: str | None = None
) -> None:
    """Write `record` to `export_file` whole; `salvaged` says where it was read from when the
    store itself could not be read."""
    from recall.writing import write_whole

    try:
        write_whole(export_file, (json.dumps(record, indent=2) + "\n").encode("utf-8"))
    except OSError as err:
        fail(
            f"recall calibrate: cannot write {export_file}: {err.strerror or err}; "
            "check that its folder exists and is writable"
        )
    if as_json:
        emit_json({"wrote": str(export_file), "calibration": record, "salvaged": salvaged})
    else:
        typer.echo(f"wrote {export_file}" + (f" ({salvaged})" if salvaged else ""))


def _salvageable(err: Exception, db_path: str) -> bool:
    """A store file that cannot be read as a store (not one another process holds)."""
    from recall.errors import StoreError, StoreLockedError

    return (
        isinstance(err, StoreError)
        and not isinstance(err, StoreLockedError)
        and locate(db_path).file is not None
    )


def _export_salvaged(export_file: Path, db_path: str, err: Exception, as_json: bool) -> None:
    """`calibrate --export` on a store that cannot be read: the record from the file's bytes."""
    from recall.salvage import salvage_calibration

    found = salvage_calibration(db_path)
    if found is None:
        fail(f"{err}; no calibration record could be read from the file's bytes either")
    _export(export_file, found.record, as_json, f"{found.detail}, as the store cannot be read")


def _show_history(mem: Any, as_json: bool) -> None:
    from recall.calibration import HISTORY_LIMIT

    entries = mem.calibration_history()
    stats = mem.stats()
    if as_json:
        emit_json(
            {
                "embedder": stats.embedder,
                "fingerprint": stats.embedder_fingerprint,
                "limit": HISTORY_LIMIT,
                "in_use": next((e.number for e in entries if e.in_use), None),
                "entries": [e.to_dict() for e in entries],
            }
        )
        return
    from rich.console import Console
    from rich.markup import escape

    out = Console(highlight=False)
    if not entries:
        out.print(
            f"no calibration recorded for {escape(stats.embedder or 'this store')}; run "
            "'recall calibrate QUERIES'"
        )
        return
    out.print(
        f"calibration history for {escape(stats.embedder or '')}: newest first, the last "
        f"{HISTORY_LIMIT} kept, * = in use"
    )
    for e in entries:
        r = e.record
        state = {True: "[green]certified[/]", False: "[red]not certified[/]"}.get(
            r.certified, "certification unknown"
        )
        when = (e.when or "unknown")[:19].replace("T", " ")
        mark = "[bold]*[/]" if e.in_use else " "
        out.print(
            f"{mark} #{e.number:<3} {escape(r.id)}  {when}  {e.source}  {state}  "
            f"threshold {r.threshold:.3f}"
        )
        why = r.certified_reason
        if why is None and r.auc is not None:
            why = f"AUC {r.auc:.3f}"
        if why:
            out.print(f"        {escape(why)}")
    out.print("put another back in use: recall calibrate --use N")


def print_fit(
    calibration: Any,
    fitted: Any,
    plot: Optional[Path],
    *,
    entry: Optional[int] = None,
    kept: Any = None,
) -> None:
    from rich.console import Console
    from rich.markup import escape

    out = Console(highlight=False)
    state = "[bold green]certified[/]" if fitted.certified else "[bold red]not certified[/]"
    out.print(
        f"calibration {calibration.id} for {calibration.embedder}: threshold "
        f"[bold]{fitted.threshold:.3f}[/], scale {fitted.scale:.3f}; {state}"
    )
    out.print(f"  {escape(fitted.certified_reason)}")
    terms = ["dense cosine"]
    if calibration.lexical_weight > 0:
        terms.append(f"{calibration.lexical_weight:.2f} × lexical share")
    if calibration.identifier_weight > 0:
        terms.append(f"{calibration.identifier_weight:.2f} × identifier match")
    note = "" if len(terms) > 1 else " (the lexical evidence did not separate better)"
    out.print(f"  relevance = {' + '.join(terms)}{note}")
    floor = "n/a" if fitted.answerable_floor is None else f"{fitted.answerable_floor:.3f}"
    ceiling = "n/a" if fitted.unanswerable_ceiling is None else f"{fitted.unanswerable_ceiling:.3f}"
    out.print(f"  answerable floor (5th pct) {floor} · unanswerable ceiling (95th pct) {ceiling}")

    def rate(x: Optional[float]) -> str:
        return "n/a" if x is None else f"{x:.1%}"

    out.print(
        f"  leave-one-out: false confidence {rate(fitted.loo_false_confidence)} · "
        f"false abstention {rate(fitted.loo_false_abstain)}"
    )
    if plot is not None:
        out.print(f"  plot written to {escape(str(plot))}")
    saved = "saved" if entry is None else f"saved as #{entry} in the history"
    if kept is not None:
        out.print(
            f"  {saved}, [bold]not put in use[/]: the "
            + ("labelled" if kept.source != "self" else "certified")
            + f" calibration {escape(kept.id)} stays in use. To use this fit anyway: "
            + "recall calibrate "
            + ("--auto" if calibration.source == "self" else "QUERIES")
            + " --replace"
            + (f" (or recall calibrate --use {entry})" if entry is not None else "")
            + "; recall calibrate --list shows the history"
        )
    elif not fitted.certified:
        out.print(
            f"  {saved} and in use, but strict search refuses until a calibration is certified "
            "(or use --mode development)"
        )
