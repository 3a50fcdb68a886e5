"""The `recall` command line (SPEC §8.2).

Owns: argument parsing, choosing the store file, rendering results for people (rich) or scripts
(`--json`), and exit codes: 0 ok, 1 errors found, 2 usage or input error, 3 trust refusal. Holds
no logic of its own: everything it prints comes from `recall.api`.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from typer.core import TyperGroup

from recall.cli.exits import EXIT_ERRORS, EXIT_OK, EXIT_REFUSED, emit_json, fail
from recall.cli.options import DbOption, JsonOption, NamespaceOption, missing, store_named, when
from recall.cli.showing import calibration_line, print_explanation, print_result
from recall.postgres import shown_db
from recall.store import locate

if TYPE_CHECKING:
    from recall.api import IndexReport, StoreStats

#: `-h` beside `--help`, on every command.
HELP = {"help_option_names": ["-h", "--help"]}

#: Placeholders of option values that say what to write, where the name alone does not.
_PLACEHOLDERS = {"as_of": "WHEN", "known_as_of": "WHEN", "older_than": "WHEN"}
#: The argument library's wording of a value it cannot read, in recall's.
_PLAIN = (
    (
        re.compile(r"Input should be a valid integer, unable to parse string as an integer"),
        "not a whole number",
    ),
    (
        re.compile(r"Input should be a valid number, unable to parse string as a number"),
        "not a number",
    ),
    (re.compile(r"Input should be a valid boolean, unable to interpret input"), "not yes or no"),
    (re.compile(r"^Input should be "), "should be "),
)


def _placeholders(command: Any) -> None:
    """Name every value in help and usage lines as a placeholder (`PATHS...`, `-k N`,
    `--db DB`), where the argument library shows Python types (`<list[Path]>`, `{query}`)."""
    for param in command.params:
        annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
        if param.metavar is not None:
            pass  # named where it is declared
        elif getattr(param, "is_flag", False) or annotation is bool:
            param.metavar = ""
            continue
        else:
            if annotation is int:
                name = "N"
            elif annotation is float:
                name = "X"
            else:
                name = _PLACEHOLDERS.get(param.name or "", (param.name or "value").upper())
            param.metavar = name
        if param.nargs == -1 and not param.metavar.endswith("..."):
            param.metavar += "..."
        if param.param_type_name != "argument":
            continue
        # An argument is its placeholder alone: usage `QUERY` / `[PATHS...]` and no Python
        # type beside it in the help (the library writes `{query}` and `QUERY <str>`).
        usage = param.metavar if param.required else f"[{param.metavar}]"
        param._usage_display_name = lambda usage=usage: usage
        param.display_type_rich = lambda ctx: None
    # `-h` / `--help` is made per invocation, outside `params`: a flag too.
    made = command.get_help_option

    def help_option(ctx: Any, made: Any = made) -> Any:
        option = made(ctx)
        if option is not None:
            option.metavar = ""
        return option

    command.get_help_option = help_option
    for sub_command in getattr(command, "commands", {}).values():
        _placeholders(sub_command)


class _Recall(TyperGroup):
    """The `recall` command group: placeholders that read as values, argument errors in
    recall's words, and with `--json` every error as one JSON object on stdout too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _placeholders(self)

    def main(  # type: ignore[override]
        self,
        args: Optional[Sequence[str]] = None,
        prog_name: Optional[str] = None,
        complete_var: Optional[str] = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        try:
            code = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except typer.TyperException as err:
            # The argument library's errors (a bad value, a missing argument, an unknown
            # command) are its ClickException, a TyperException with an exit code.
            if not standalone_mode or not hasattr(err, "exit_code"):
                raise
            for pattern, words in _PLAIN:
                err.message = pattern.sub(words, err.message)
            if "--json" in argv:
                ctx = getattr(err, "ctx", None)
                where = ctx.command_path if ctx is not None else "recall"
                emit_json(
                    {
                        "error": {
                            "code": "USAGE_ERROR",
                            "message": f"{where}: {err.format_message()}",
                            "exit": err.exit_code,
                        }
                    }
                )
            from typer import rich_utils

            rich_utils.rich_format_error(err)  # type: ignore[arg-type]
            sys.exit(err.exit_code)
        except typer.Abort:
            if not standalone_mode:
                raise
            typer.echo("Aborted.", err=True)
            sys.exit(EXIT_ERRORS)
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else EXIT_OK)


app = typer.Typer(
    cls=_Recall,
    name="recall",
    help="Memory for agents that knows what it no longer believes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings=HELP,
)


def _print_version(value: bool) -> None:
    if value:
        from recall import __version__

        typer.echo(f"recall {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Memory for agents that knows what it no longer believes."""


def _embedder_name(value: Any) -> Any:
    """An `--embedder` value checked before anything is opened: a name that names no embedder
    is an argument error in the command's own words."""
    from recall.embedders import name_problem

    for name in value if isinstance(value, list) else [value]:
        problem = name_problem(name) if name is not None else None
        if problem is not None:
            raise typer.BadParameter(problem)
    return value


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


@app.command()
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
        callback=_embedder_name,
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


@app.command()
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


@app.command()
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


@app.command()
def search(
    query: str = typer.Argument(..., help="The question."),
    k: int = typer.Option(5, "-k", "--k", min=1, max=100, help="Documents to judge."),
    db: Optional[str] = DbOption,
    namespace: Optional[str] = NamespaceOption,
    as_json: bool = JsonOption,
    as_of: Optional[str] = typer.Option(
        None, "--as-of", help="Judge validity windows at this date/time instead of now."
    ),
    known_as_of: Optional[str] = typer.Option(
        None, "--known-as-of", help="Only trust what had been indexed by this time."
    ),
    mode: Optional[str] = typer.Option(
        None, "--mode", help="strict (default) or development. Also $RECALL_TRUST_MODE."
    ),
    explain_legs: bool = typer.Option(
        False, "--explain", help="Show each hit's rank in the dense and lexical legs."
    ),
    embedder: Optional[str] = typer.Option(
        None,
        "--embedder",
        help="Embed the query with this embedder (default: the store's).",
        callback=_embedder_name,
    ),
    entail: bool = typer.Option(
        False, "--entail", help="Ask the entailment judge whether each ok hit answers."
    ),
    judge: Optional[Path] = typer.Option(
        None, "--judge", help="Judge model directory for --entail. Default: $RECALL_JUDGE."
    ),
) -> None:
    """Answer a question with a judgment: only `ok` hits may be relied on."""
    import recall
    from recall.errors import RecallError, TrustRefusal

    db_path = store_named(db, namespace)
    if missing(db_path):
        fail(f"recall search: {shown_db(db_path)} does not exist; run 'recall index PATH' first")
    if mode is not None and mode not in ("strict", "development"):
        fail(f"recall search: --mode {mode!r} is not one of strict, development")
    now = when(as_of, "--as-of")
    known = when(known_as_of, "--known-as-of")
    try:
        with recall.open(db_path, embedder=embedder, judge=judge) as mem:
            result = mem.search(query, k=k, now=now, known_as_of=known, mode=mode, entail=entail)
    except TrustRefusal as err:
        if as_json:
            emit_json({"refused": True, "code": err.code, "message": err.message})
            raise typer.Exit(EXIT_REFUSED) from None
        fail(f"recall search refused ({err.code}): {err.message}", EXIT_REFUSED)
    except RecallError as err:
        fail(str(err))
    if as_json:
        emit_json(result.to_dict())
    else:
        print_result(result, explain_legs)


@app.command()
def explain(
    query: str = typer.Argument(..., help="The question."),
    file: str = typer.Argument(..., help="A document, as shown by 'recall search'."),
    db: Optional[str] = DbOption,
    namespace: Optional[str] = NamespaceOption,
    as_json: bool = JsonOption,
    as_of: Optional[str] = typer.Option(None, "--as-of", help="Judge the window at this time."),
    known_as_of: Optional[str] = typer.Option(
        None, "--known-as-of", help="Apply only what had been indexed by this time."
    ),
) -> None:
    """Explain why one document gets its verdict for a query."""
    import recall
    from recall.errors import RecallError

    db_path = store_named(db, namespace)
    if missing(db_path):
        fail(f"recall explain: {shown_db(db_path)} does not exist; run 'recall index PATH' first")
    now = when(as_of, "--as-of")
    known = when(known_as_of, "--known-as-of")
    try:
        with recall.open(db_path) as mem:
            data = mem.explain(query, file, now=now, known_as_of=known)
    except RecallError as err:
        fail(str(err))
    if as_json:
        emit_json(data)
        return
    print_explanation(data)


@app.command()
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
        _print_fit(
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


def _print_fit(
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


@app.command()
def quickstart(
    db: Optional[Path] = typer.Option(
        None, "--db", help="Store for the demo (default: a new file in a temporary folder)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Index a demo corpus, calibrate, and answer three questions: see what recall does."""
    import tempfile

    import recall
    from recall import demo
    from recall.errors import RecallError

    db_path = str(db) if db is not None else str(Path(tempfile.mkdtemp()) / "quickstart.db")
    try:
        with recall.open(db_path) as mem:
            ran = demo.run(mem)
    except RecallError as err:
        fail(str(err))
    if as_json:
        emit_json(
            {
                "db": shown_db(db_path),
                "now": ran.now.isoformat(),
                "index": ran.report.to_dict(),
                "calibration": ran.calibration.to_dict(),
                "questions": [
                    {**q, "result": r.to_dict()} for q, r in zip(ran.questions, ran.results)
                ],
            }
        )
        return
    _print_quickstart(ran, db_path)


def _print_quickstart(ran: Any, db_path: str) -> None:
    from rich.console import Console
    from rich.markup import escape

    out = Console(highlight=False)
    r = ran.report
    out.print(
        f"[bold]recall quickstart[/] · demo store {escape(shown_db(db_path))} · "
        f"today is {ran.now:%Y-%m-%d}"
    )
    out.print(
        f"\n[bold]1. index[/] {len(r.added) + len(r.updated) + r.unchanged} demo memos "
        f"({r.chunks} chunks written) in {r.seconds:.2f} s"
    )
    out.print(
        f"\n[bold]2. calibrate[/] on {ran.fit.n_answerable} answerable + "
        f"{ran.fit.n_unanswerable} unanswerable labelled questions"
    )
    _print_fit(ran.calibration, ran.fit, None)
    titles = {
        "ok": "answered: the best match is current and trusted",
        "superseded": "the nearest memo is stale: its successor is served first",
        "abstain": "refused, with the reason",
    }
    out.print("\n[bold]3. ask[/]")
    for i, (q, res) in enumerate(zip(ran.questions, ran.results), 1):
        out.print(f"\n[bold]Q{i}. {escape(q['query'])}[/]  [dim]({titles.get(q['expect'], '')})[/]")
        print_result(res)
    out.print(
        "\n[bold]Your own notes[/]\n"
        "  recall index ~/notes                 # markdown, frontmatter supersedes/valid_*\n"
        "  recall calibrate my-questions.jsonl  # >= 20 answerable + >= 20 unanswerable questions\n"
        '  recall search "your question"        # --json for agents, --explain for the legs\n'
        f'  (explore this demo: recall search "..." --db {escape(shown_db(db_path))} --as-of '
        f"{ran.now:%Y-%m-%d})",
        soft_wrap=True,
    )


@app.command("eval")
def evaluate(
    questions: Optional[Path] = typer.Argument(
        None,
        help="Labelled questions (JSONL, see recall/evalset/README.md) to run against --db. "
        "Default: the shipped evaluation set, indexed and cross-fitted per embedder.",
    ),
    db: Optional[str] = DbOption,
    namespace: Optional[str] = NamespaceOption,
    embedder: Optional[list[str]] = typer.Option(
        None,
        "--embedder",
        help="Shipped set: an embedder to evaluate (repeat for several).",
        callback=_embedder_name,
    ),
    as_of: Optional[str] = typer.Option(
        None, "--as-of", help="Judge at this date/time (default now; the shipped set: its date)."
    ),
    k: int = typer.Option(5, "-k", "--k", min=1, max=100, help="Documents judged per question."),
    entail: bool = typer.Option(False, "--entail", help="Also judge near misses with the judge."),
    report: Optional[Path] = typer.Option(None, "--report", help="Write a markdown report."),
    evalset: Optional[Path] = typer.Option(
        None,
        "--set",
        help="Instead of the shipped set, a folder laid out like it (notes/, questions.jsonl, "
        "meta.json), e.g. benches/evalsets/platform.",
    ),
    calibration: str = typer.Option(
        "both",
        "--calibration",
        help="Shipped set: judge with the calibration cross-fitted on its labels (labelled), "
        "the one recall makes from the notes alone (self), or both side by side.",
    ),
    as_json: bool = JsonOption,
) -> None:
    """Measure retrieval, abstention and trust on a labelled question set."""
    import recall
    from recall import evaluation
    from recall.errors import RecallError

    try:
        if questions is None:
            if db is not None:
                fail(
                    "recall eval: --db goes with QUESTIONS, labelled questions to run against "
                    "that store; without them eval indexes its evaluation set itself"
                )
            names = embedder or ["hashing-512", "minilm-l6"]
            sources = {"labelled": ("labelled",), "self": ("self",), "both": ("labelled", "self")}
            if calibration not in sources:
                fail(
                    f"recall eval: --calibration {calibration!r} is not one of labelled, self, both"
                )
            reports = evaluation.evaluate_shipped(
                names, k=k, entail=entail, calibrations=sources[calibration], evalset=evalset
            )
        else:
            if evalset is not None:
                fail("recall eval: --set names a whole evaluation set; give QUESTIONS or --set")
            if embedder and len(embedder) > 1:
                fail("recall eval: a store has one embedder; pass at most one --embedder")
            db_path = store_named(db, namespace)
            if missing(db_path):
                fail(
                    f"recall eval: {shown_db(db_path)} does not exist; "
                    "run 'recall index PATH' first"
                )
            with recall.open(db_path, embedder=embedder[0] if embedder else None) as mem:
                reports = [
                    evaluation.evaluate_store(
                        mem, questions, now=when(as_of, "--as-of"), k=k, entail=entail
                    )
                ]
    except RecallError as err:
        fail(str(err))
    if report is not None:
        from recall.writing import write_whole

        try:
            write_whole(report, evaluation.format_markdown(reports).encode("utf-8"))
        except OSError as err:
            fail(f"recall eval: cannot write {report}: {err.strerror or err}")
    if as_json:
        emit_json([r.to_dict() for r in reports])
        return
    typer.echo(evaluation.format_table(reports))
    if report is not None:
        typer.echo(f"report written to {report}")


@app.command()
def serve(
    db: Optional[str] = DbOption,
    namespace: Optional[str] = NamespaceOption,
    corpus: Optional[list[Path]] = typer.Option(
        None,
        "--corpus",
        help="A folder of notes the server may index and write into (repeat for several; "
        "'remember' writes into the first).",
    ),
    mode: Optional[str] = typer.Option(
        None, "--mode", help="strict (default) or development. Also $RECALL_TRUST_MODE."
    ),
    judge: Optional[Path] = typer.Option(
        None, "--judge", help="Judge model directory for entail. Default: $RECALL_JUDGE."
    ),
    watch: bool = typer.Option(
        False,
        "--watch",
        help="Keep the index following the --corpus folders: changed notes are re-indexed "
        "within a second while searches go on.",
    ),
) -> None:
    """Serve the memory to agents over MCP (stdio): search, explain, stats, index, remember."""
    from recall.errors import RecallError
    from recall.mcp_server import serve as run_server

    try:
        target = store_named(db, namespace)
        run_server(target, [str(p) for p in corpus or []], mode=mode, judge=judge, watch=watch)
    except RecallError as err:
        fail(str(err))


@app.command("watch")
def watch_cmd(
    paths: list[Path] = typer.Argument(..., help="Folders of notes to follow."),
    db: Optional[str] = DbOption,
    namespace: Optional[str] = NamespaceOption,
    as_json: bool = JsonOption,
) -> None:
    """Index the folders, then re-index whatever changes in them until interrupted (Ctrl-C).

    One line per batch (one JSON object per line with --json). Searches from other processes
    keep being answered while a batch is written.
    """
    from recall.errors import RecallError
    from recall.watch import Batch, watch

    def show(batch: Batch) -> None:
        report = batch.report
        if as_json:
            line: dict[str, object] = {"changed": batch.changed, "error": batch.error}
            if report is not None:
                line["report"] = report.to_dict()
            print(json.dumps(line), flush=True)
        elif batch.error is not None:
            print(f"{batch.changed} changed: {batch.error}", file=sys.stderr, flush=True)
        elif report is not None:
            print(
                f"{batch.changed} changed: added {len(report.added)} · updated "
                f"{len(report.updated)} · removed {len(report.removed)} · refused "
                f"{len(report.refused)} · generation {report.generation}",
                flush=True,
            )

    try:
        watch(store_named(db, namespace), [str(p) for p in paths], on_batch=show)
    except RecallError as err:
        fail(str(err))


models_app = typer.Typer(
    help="Embedding models: list the built-ins, check a model, quantize an export.",
    no_args_is_help=True,
    context_settings=HELP,
)
app.add_typer(models_app, name="models")


@models_app.command("list")
def models_list(as_json: bool = JsonOption) -> None:
    """Built-in models: where their files are, their sha256 pins and licences."""
    from rich.console import Console
    from rich.markup import escape

    from recall import model_tools

    rows = model_tools.listing()
    if as_json:
        emit_json(rows)
        return
    out = Console(highlight=False, soft_wrap=True)
    for row in rows:
        default = " [green](default for new stores)[/]" if row["default"] else ""
        out.print(f"[bold]{row['name']}[/]{default}: {escape(row['description'])}")
        where = row["model"] or f"[red]missing[/]: {escape(row['problem'] or '')}"
        out.print(f"  model      {where}  (from {row['model_package']})")
        out.print(f"  tokenizer  {escape(row['tokenizer'])}")
        out.print(f"  licence    {escape(row['licence'])}")
    out.print(
        "Also: onnx:DIR (any sentence-embedding ONNX export with tokenizer.json) and hashing-D "
        "(no model; hashing-512 for speed and tests)."
    )


@models_app.command("check")
def models_check(
    target: str = typer.Argument(..., help="A model directory, onnx:DIR, or a built-in name."),
    as_json: bool = JsonOption,
) -> None:
    """Load a model, embed a probe, and print its dimension and speed."""
    from recall import model_tools
    from recall.errors import RecallError

    try:
        row = model_tools.check(target)
    except RecallError as err:
        fail(str(err))
    if as_json:
        emit_json(row)
        return
    typer.echo(
        f"{row['embedder']}: dim {row['dim']}, fingerprint {row['fingerprint']}, loaded in "
        f"{row['load_seconds']:.2f} s"
        + (f"\n  output {row['pooling']}" if row["pooling"] else "")
        + f"\n  {row['passages_per_second']:.1f} passages/s "
        f"(~180 tokens each) · query p50 {row['query_ms_p50']:.1f} ms, "
        f"p95 {row['query_ms_p95']:.1f} ms"
    )


@models_app.command("quantize")
def models_quantize(
    source: Path = typer.Argument(..., help="An ONNX embedder directory (fp32 export)."),
    out: Path = typer.Argument(..., help="New directory for the int8 model."),
    as_json: bool = JsonOption,
) -> None:
    """Dynamic int8 quantisation, with its quality and speed change on the evaluation set."""
    from recall import model_tools
    from recall.errors import RecallError

    try:
        report = model_tools.quantize(source, out)
    except RecallError as err:
        fail(str(err))
    if as_json:
        emit_json(report)
        return
    b, c = report["baseline"], report["candidate"]

    def auc(x: Optional[float]) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    typer.echo(
        f"wrote {report['out']} ({report['bytes_before'] / 1e6:.1f} MB -> "
        f"{report['bytes_after'] / 1e6:.1f} MB)\n"
        f"on {report['passages']} passages and {report['questions']} labelled questions:\n"
        f"  cosine to the original: mean {report.get('cosine_mean', 'n/a')}, "
        f"min {report.get('cosine_min', 'n/a')}\n"
        f"  same top passage for answerable questions: {report['same_top1_answerable']:.1%}\n"
        f"  AUC (answerable vs not): {auc(b['auc'])} -> {auc(c['auc'])}\n"
        f"  passages/s: {b['passages_per_second']:.1f} -> {c['passages_per_second']:.1f}"
    )


def _register_authoring() -> None:
    # SPEC §8.4: the authoring commands live beside their logic and import it only when run.
    from recall.cli import check, forget, lint, migrate

    lint.register(app)
    check.register(app)
    forget.register(app)
    migrate.register(app)


_register_authoring()


def main() -> None:
    """Console-script entry point."""
    app()
