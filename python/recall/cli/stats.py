"""`recall stats` and `recall doctor`: what a store holds, and whether it is sound.

Owns: the commands' arguments, the summary table and the doctor's checks for people or scripts
(`--json`), and their exit codes (doctor: 1 when the store is damaged). Does not own: gathering
the figures (`Memory.stats`) or the checks and their advice (`recall.doctor`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import typer

from recall.backends import locate
from recall.cli.exits import emit_json, fail
from recall.cli.options import DbOption, JsonOption, NamespaceOption, missing, store_named
from recall.cli.showing import calibration_line
from recall.postgres import shown_db

if TYPE_CHECKING:
    from recall.api import StoreStats


def register(app: typer.Typer) -> None:
    """Add `stats` and `doctor` to the `recall` app."""
    app.command()(stats)
    app.command()(doctor)


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def stats(
    db: Optional[str] = DbOption,
    namespace: Optional[str] = NamespaceOption,
    as_json: bool = JsonOption,
) -> None:
    """Summarise the store: documents, chunks, embedder, freshness, size, edges."""
    import recall
    from recall.errors import RecallError

    db_path = store_named(db, namespace)
    if missing(db_path):
        fail(f"recall stats: {shown_db(db_path)} does not exist; run 'recall index PATH' first")
    try:
        with recall.open(db_path) as mem:
            st = mem.stats()
    except RecallError as err:
        fail(str(err))
    if as_json:
        emit_json(st.to_dict())
    else:
        _print_stats(st)


def doctor(
    db: Optional[str] = DbOption,
    namespace: Optional[str] = NamespaceOption,
    as_json: bool = JsonOption,
) -> None:
    """Check the store file: SQLite's integrity, the vectors and lexical index against the
    chunks, the calibration records; say what to do when something is damaged (exit 1)."""
    import recall
    from recall.doctor import unopenable
    from recall.errors import RecallError, StoreDamagedError

    db_path = store_named(db, namespace)
    if missing(db_path):
        fail(
            f"recall doctor: {shown_db(db_path)} does not exist, so there is nothing to check; "
            "give the store with --db"
        )
    try:
        with recall.open(db_path, read_only=True) as mem:
            report = mem.doctor()
    except StoreDamagedError as err:
        # SQLite cannot open it at all: diagnose from the file's own header.
        report = unopenable(db_path, err)
    except RecallError as err:
        fail(str(err))
    if as_json:
        emit_json(report.to_dict())
    else:
        from rich.console import Console
        from rich.markup import escape

        out = Console(highlight=False)
        colours = {"ok": "green", "warning": "yellow", "damaged": "red"}
        for check in report.checks:
            colour = colours.get(check.status, "red")
            out.print(f"{check.name:<12} [{colour}]{check.status:<8}[/] {escape(check.detail)}")
        out.print(f"\n[bold]{report.verdict}[/]: {escape(report.advice)}")
    if report.verdict == "damaged":
        raise typer.Exit(1)


def _print_stats(st: StoreStats) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    embedder = f"{st.embedder} ({st.embedder_dim} dims)" if st.embedder else "none yet"
    rows = [
        ("store", st.path),
        ("documents", str(st.documents)),
        ("chunks", str(st.chunks)),
        ("embedder", embedder),
        ("newest indexed", st.newest_indexed_at or "never"),
        ("last run", st.last_run_at or "never"),
        ("generation", str(st.generation)),
        ("file size", _size(st.file_size_bytes)),
        (
            "edges",
            f"{st.edges_resolved} resolved · {st.edges_dangling} dangling · "
            f"{st.edges_ambiguous} ambiguous · {st.edges_self} self",
        ),
        (
            "vocabularies",
            f"{st.vocabularies}: "
            + (
                " · ".join(
                    f"{name} {n}" + (f" (+{o} overridden)" if o else "")
                    for name, n, o in st.edges_by_vocabulary
                )
                or "no edges"
            ),
        ),
        ("calibration", calibration_line(st.calibration, st.calibration_note)),
        ("retired", str(st.retired)),
        ("metadata errors", str(st.metadata_errors)),
    ]
    if st.partial or st.unread:
        rows.append(
            ("statements", f"{st.partial} partial · {st.unread} unread (recall lint shows them)")
        )
    if st.forgotten:
        rows.append(("forgotten", f"{st.forgotten} (recall forget --list)"))
    if st.missing_roots:
        from recall.doctor import missing_root_advice

        rows.append(
            ("missing roots", "\n".join(missing_root_advice(r, n) for r, n in st.missing_roots))
        )
    location = locate(st.path)
    rows[0:1] = location.described()
    if location.file is None:
        rows = [("size", value) if name == "file size" else (name, value) for name, value in rows]
    for name, value in rows:
        table.add_row(name, value)

    Console(highlight=False).print(table)
