"""`recall migrate SRC DST`: copy a memory between a store file and a PostgreSQL namespace.

Owns: the command's arguments, progress, rendering and exit codes. The work is
`recall.migrate.migrate`.
"""

from __future__ import annotations

import sys
from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    """Add `migrate` to the `recall` app."""
    from recall.cli.options import JsonOption

    @app.command("migrate")
    def migrate(
        source: str = typer.Argument(
            ..., help="The memory to copy: a store file or a postgresql:// URL."
        ),
        destination: str = typer.Argument(
            ..., help="Where to copy it: a new store file or an empty postgresql:// namespace."
        ),
        source_namespace: Optional[str] = typer.Option(
            None,
            "--from-namespace",
            help="Namespace of a postgresql:// SOURCE.",
            show_default=False,
        ),
        namespace: Optional[str] = typer.Option(
            None,
            "--namespace",
            help="Namespace of a postgresql:// DESTINATION.",
            show_default=False,
        ),
        as_json: bool = JsonOption,
    ) -> None:
        """Copy a memory between backends (file → PostgreSQL and back): documents, edges,
        vectors, first-indexed times and calibration records; nothing is embedded again."""
        from recall.cli.exits import EXIT_ERRORS, emit_json, fail
        from recall.cli.options import missing, store_named
        from recall.errors import RecallError, UsageError
        from recall.migrate import migrate as run
        from recall.postgres import shown_db

        src = store_named(source, source_namespace, environment=False)
        dst = store_named(destination, namespace, environment=False)
        if missing(src):
            fail(
                f"recall migrate: there is no store at {shown_db(src)}; "
                "check the source path or URL"
            )
        tty = sys.stderr.isatty() and not as_json

        def progress(documents: int, chunks: int) -> None:
            if tty:
                typer.echo(f"\r  {documents} documents, {chunks} chunks", err=True, nl=False)

        try:
            report = run(src, dst, progress=progress)
        except UsageError as err:
            fail(str(err))  # the input: exit 2
        except RecallError as err:
            fail(str(err), EXIT_ERRORS)
        if tty:
            typer.echo("", err=True)
        if as_json:
            emit_json(report.to_dict())
            return
        calibration = "with its calibration" if report.calibration else "no calibration recorded"
        typer.echo(
            f"Copied {report.documents} documents ({report.chunks} chunks, {report.edges} edges, "
            f"{report.embedder}; {calibration}) from {report.source} to {report.destination} "
            f"in {report.seconds:.2f} s."
        )
