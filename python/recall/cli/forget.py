"""`recall forget` (SPEC §8.4): remove documents from the store, never their files; a dry run
unless `--apply`; `--list` shows the journal and `--undo` brings documents back.

Owns: the command's arguments, rendering and exit codes. The work is `Memory.forget`,
`Memory.forgotten` and `Memory.undo_forget`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer


def register(app: typer.Typer) -> None:
    """Add `forget` to the `recall` app."""
    from recall.cli.options import DbOption, JsonOption, NamespaceOption

    @app.command("forget")
    def forget(
        paths: Optional[list[Path]] = typer.Argument(
            None,
            help="Indexed files or folders (or paths as search shows them).",
            show_default=False,
        ),
        older_than: Optional[str] = typer.Option(
            None,
            "--older-than",
            help="Also forget every document first indexed before this date or time.",
            show_default=False,
        ),
        apply: bool = typer.Option(False, "--apply", help="Remove them (default: a dry run)."),
        undo: bool = typer.Option(
            False, "--undo", help="Bring forgotten documents back (all when no path is given)."
        ),
        show: bool = typer.Option(False, "--list", help="Show the forget journal."),
        db: Optional[str] = DbOption,
        namespace: Optional[str] = NamespaceOption,
        as_json: bool = JsonOption,
    ) -> None:
        """Remove documents from the store, never the files: a dry run unless --apply."""
        import recall
        from recall.cli.exits import EXIT_USAGE, emit_json, fail
        from recall.cli.options import store_named, when
        from recall.errors import RecallError
        from recall.postgres import shown_db

        given = [str(p) for p in paths or []]
        if sum((undo, show, bool(given or older_than))) == 0:
            fail("recall forget: name files or folders, or pass --older-than, --undo or --list")
        if show and (undo or given or older_than or apply):
            fail("recall forget: --list takes no paths or other options", EXIT_USAGE)
        db_path = store_named(db, namespace)
        try:
            with recall.open(db_path) as mem:
                if show:
                    journal = mem.forgotten()
                    if as_json:
                        emit_json(
                            {"db": shown_db(db_path), "forgotten": [vars(f) for f in journal]}
                        )
                    else:
                        _print_journal(journal)
                    return
                if undo:
                    back = mem.undo_forget(given)
                    if as_json:
                        emit_json({"db": shown_db(db_path), "undone": [vars(f) for f in back]})
                    elif back:
                        for f in back:
                            typer.echo(
                                f"brought back {f.path} (first indexed {f.first_indexed_at})"
                            )
                        typer.echo("run 'recall index' to index them again")
                    else:
                        typer.echo("nothing is forgotten")
                    return
                report = mem.forget(given, older_than=when(older_than, "--older-than"), apply=apply)
        except RecallError as err:
            fail(str(err))
        if as_json:
            emit_json({"db": shown_db(db_path), **report.to_dict()})
        else:
            _print_report(report)


def _print_journal(journal: list[Any]) -> None:
    if not journal:
        typer.echo("nothing has been forgotten")
        return
    for f in journal:
        state = f"brought back {f.undone_at}" if f.undone_at else "forgotten"
        typer.echo(f"{f.path}  forgotten {f.forgotten_at}  ({state}; root {f.source})")


def _print_report(report: Any) -> None:
    verb = "forgot" if report.applied else "would forget"
    if not report.documents:
        typer.echo("nothing to forget")
        return
    for d in report.documents:
        typer.echo(f"{verb} {d.path} ({d.chunks} chunks, first indexed {d.first_indexed_at})")
        for referrer in d.referenced_by:
            typer.echo(f"  its edge from {referrer} will dangle (and revives if it comes back)")
    typer.echo(f"{verb} {len(report.documents)} documents, {report.chunks} chunks; files are kept")
    if not report.applied:
        typer.echo("dry run: pass --apply to forget them ('recall forget --undo' brings them back)")
