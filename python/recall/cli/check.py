"""`recall check`: the command line of the write-time gate (SPEC §8.2, §8.4).

Owns: the command's arguments, rendering a `CheckReport` for people (rich) or scripts (`--json`),
and its exit codes: 0 ok (or gate failures without `--strict`), 1 a file failed the gate under
`--strict`, 2 usage or input error. The logic lives in `recall.authoring.check`, imported only
when the command runs so that `recall --help` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from recall.cli.exits import emit_json, fail

if TYPE_CHECKING:
    from recall.authoring.check import CheckReport, FileCheck

_Files = typer.Argument(
    ...,
    help="New or edited notes to check (inside the corpus or not).",
    metavar="FILE",
    show_default=False,
)
_CorpusOption = typer.Option(
    ...,
    "--corpus",
    help="Folder (or file) of notes to look for predecessors in; repeatable.",
    show_default=False,
)
_DbOption = typer.Option(
    None,
    "--db",
    help="Also search this store for semantically close notes (never created).",
    show_default=False,
)
_StrictOption = typer.Option(
    False,
    "--strict",
    help="Exit 1 when a file has candidates and declares no edge, valid_until or retirement.",
)
_JsonOption = typer.Option(False, "--json", help="Print machine-readable JSON.")
_VocabulariesOption = typer.Option(
    "all", "--vocabularies", help="Edge vocabularies in force: none, frontmatter or all."
)
_LimitOption = typer.Option(10, "--limit", min=1, help="Candidates shown per file.")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the `recall` app."""
    app.command("check")(check_command)


def check_command(
    files: list[Path] = _Files,
    corpus: list[Path] = _CorpusOption,
    db: Optional[Path] = _DbOption,  # noqa: UP045 (typer reads the annotation on Python 3.9)
    strict: bool = _StrictOption,
    as_json: bool = _JsonOption,
    vocabularies: str = _VocabulariesOption,
    limit: int = _LimitOption,
) -> None:
    """Surface every candidate predecessor of new or edited notes, for the author to confirm
    (the pre-commit gate). Declares nothing: add the `supersedes:` line it suggests."""
    from recall.authoring.check import check
    from recall.errors import RecallError

    try:
        report = check(files, corpus, db=db, vocabularies=vocabularies, limit=limit, strict=strict)
    except RecallError as err:
        fail(str(err))
    if as_json:
        emit_json(report.to_dict())
    else:
        _print(report)
    raise typer.Exit(report.exit_code)


def _print(report: CheckReport) -> None:
    from rich.console import Console
    from rich.markup import escape

    out = Console(highlight=False)
    for number, item in enumerate(report.files):
        if number:
            out.print()
        _print_file(out, item)
    if report.semantic is not None:
        out.print(f"\n[dim]semantic: {escape(report.semantic)}[/]")
    failed = report.failed
    if not failed:
        return
    names = ", ".join(f.file for f in failed)
    if report.strict:
        out.print(
            f"\n[red]recall check: {len(failed)} of {len(report.files)} file(s) did not pass: "
            f"{escape(names)}.[/] Declare the edge it suggests (or `valid_until:`), or, if no "
            "candidate is a predecessor, commit past this hook (pre-commit: SKIP=recall-check)."
        )
    else:
        out.print(
            f"\n[yellow]{len(failed)} file(s) have candidate predecessors and declare no edge: "
            f"{escape(names)}[/] (--strict makes this exit 1)"
        )


def _print_file(out: object, item: FileCheck) -> None:
    from rich.console import Console
    from rich.markup import escape

    assert isinstance(out, Console)
    colour = {"pass": "green", "fail": "red", "error": "red"}[item.gate]
    title = f"  [dim]{escape(item.title)}[/]" if item.title else ""
    out.print(f"[bold]{escape(item.file)}[/]{title}  [{colour}]{item.gate}[/]")
    if item.problem is not None:
        out.print(f"  [red]cannot check it:[/] {escape(item.problem)}")
        return
    for d in item.declared:
        where = "" if d.declared_in == item.file else f" (declared in {escape(d.declared_in)})"
        targets = f" -> {escape(', '.join(d.notes))}" if d.notes else ""
        out.print(
            f"  declared: {d.relation} {escape(d.reference)} {escape(f'[{d.status}]')}{targets}"
            f"  [dim]{d.vocabulary}, line {d.line}[/]{where}"
        )
    if item.ended is not None:
        out.print(f"  ended: {escape(item.ended)}")
    if not item.candidates:
        out.print("  no candidate predecessors")
    for rank, c in enumerate(item.candidates, 1):
        linked = "  [dim](already linked through declared edges)[/]" if c.declared else ""
        out.print(f"  {rank}. [bold]{escape(c.note)}[/] ({c.relation}){linked}")
        for r in c.reasons:
            out.print(f"       {r.kind:<15} {escape(r.detail)}")
        if c.superseded_by:
            later = escape(", ".join(c.superseded_by))
            out.print(f"       [dim]already superseded by {later}[/]")
        out.print(f"       [cyan]suggest:[/] {escape(c.suggestion)}")
    if item.omitted:
        out.print(f"  … and {item.omitted} more (raise --limit to see them)")
    for message in item.notes:
        out.print(f"  [dim]note: {escape(message)}[/]")
