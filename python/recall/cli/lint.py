"""`recall lint` and `recall fix` on the command line (SPEC §8.2, §8.4).

Owns: the commands' arguments, output for people and for scripts (`--json`), and exit codes.
Does not own: the rules and the edits (`recall.authoring.lint`, `recall.authoring.fix`),
imported only when a command runs (the CLI's cold start).
"""

from __future__ import annotations

from typing import Annotated

import typer

from recall.cli.exits import EXIT_ERRORS, EXIT_OK, emit_json, fail

_Paths = Annotated[list[str], typer.Argument(help="Folders or files of notes.", show_default=False)]
_Json = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
_Vocabularies = Annotated[
    str,
    typer.Option(
        "--vocabularies",
        help="Edge vocabularies to read: none, frontmatter, or all (PEP preambles, ADRs).",
    ),
]
_Apply = Annotated[bool, typer.Option("--apply", help="Write the proposed edits.")]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def lint_command(
    paths: _Paths, as_json: _Json = False, vocabularies: _Vocabularies = "all"
) -> None:
    """Check notes for broken edges, bad dates and undeclared closures (no store needed)."""
    from recall.authoring.lint import lint
    from recall.errors import RecallError

    try:
        report = lint(paths, vocabularies=vocabularies)
    except RecallError as err:
        fail(str(err))
    if as_json:
        emit_json(report.to_dict())
    else:
        for finding in report.findings:
            typer.echo(str(finding))
        summary = (
            f"{_plural(report.errors, 'error')}, {_plural(report.warnings, 'warning')}"
            if report.findings
            else "no problems"
        )
        typer.echo(f"{summary} in {_plural(report.files, 'file')} ({report.seconds:.2f} s)")
    raise typer.Exit(EXIT_OK if report.ok else EXIT_ERRORS)


def fix_command(
    paths: _Paths,
    apply: _Apply = False,
    as_json: _Json = False,
    vocabularies: _Vocabularies = "all",
) -> None:
    """Propose the supersedes: edges the notes' own prose proves; write them with --apply."""
    from recall.authoring.fix import fix
    from recall.errors import RecallError

    try:
        report = fix(paths, apply=apply, vocabularies=vocabularies)
    except RecallError as err:
        fail(str(err))
    if as_json:
        emit_json(report.to_dict())
    else:
        for file, diff in report.diffs.items():
            typer.echo(diff)
            for p in report.proposals:
                if p.file == file:
                    typer.echo(
                        f"  evidence {p.evidence_file}:{p.evidence_line}: "
                        f"{p.sentence!r} ({p.phrase})"
                    )
        for r in report.refusals:
            typer.echo(f"{r.file}:{r.line}: refused ({r.reason}): {r.sentence!r} ({r.detail})")
        for file, error in report.failed:
            typer.echo(f"{file}: not written: {error}", err=True)
        if apply:
            done = f"wrote {_plural(len(report.written), 'file')}"
        else:
            done = (
                "dry run, nothing written (--apply writes)"
                if report.proposals
                else "nothing to write"
            )
        typer.echo(
            f"{_plural(len(report.proposals), 'proposal')}, "
            f"{_plural(len(report.refusals), 'refusal')} in {_plural(report.files, 'file')}; "
            f"{done}"
        )
    raise typer.Exit(EXIT_OK if report.ok else EXIT_ERRORS)


def register(app: typer.Typer) -> None:
    """Add `lint` and `fix` to the `recall` app."""
    app.command("lint")(lint_command)
    app.command("fix")(fix_command)
