"""The `recall` command line (SPEC §8.2): the app, and one module per command family.

Owns: the `recall` app (`--version`, the commands in the order help lists them) and `main`, the
console script's entry point. Each command family lives in a module named after its first
command (`index`, `stats` with `doctor`, `search` with `explain`, `calibrate`, `evaluate` with
`quickstart`, `serve` with `watch` and `log`, `models`, `lint` with `fix`, `check`, `forget`,
`migrate`, `report`), which adds its commands through `register(app)` and imports none of the
others' helpers: what they share is `options` (what every command reads), `exits` (how every command
ends), `showing` (how a judgment reads in a terminal) and `group` (help and argument errors).
Holds no logic of its own: everything the command line prints comes from `recall.api` and the
modules it names.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

import typer

from recall.cli import (
    calibrate,
    check,
    evaluate,
    forget,
    index,
    lint,
    migrate,
    models,
    report,
    search,
    serve,
    stats,
)
from recall.cli.group import HELP, RecallGroup

__all__ = ["app", "main"]

app = typer.Typer(
    cls=RecallGroup,
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


# In the order `recall --help` lists them (a group of commands, `models`, comes last there).
index.register(app)
stats.register(app)
report.register(app)
search.register(app)
calibrate.register(app)
evaluate.register(app)
serve.register(app)
models.register(app)
lint.register(app)
check.register(app)
forget.register(app)
migrate.register(app)


def main() -> None:
    """Console-script entry point.

    A command that has finished ends the process at once, once its exit handlers have run and
    its output is flushed: tearing down the interpreter's modules and objects (the model's
    session, numpy) would only free memory the process is about to give back, at a cost a cold
    `recall search` feels. Stores are closed by the commands themselves. A command that leaves
    another thread running, or output that cannot be flushed, ends the ordinary way.
    """
    try:
        app()
        code: str | int | None = 0
    except SystemExit as end:
        code = end.code
    if threading.active_count() > 1 or isinstance(code, str):
        sys.exit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)
    os._exit(code or 0)
