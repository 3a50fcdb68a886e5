"""How every `recall` command ends: the exit-code table and the one path an error takes out.

Owns: the exit codes (0 ok, 1 errors found, 2 usage or input error, 3 trust refusal, as the
README's table gives them), printing an error on stderr and, for a command run with `--json`,
as one JSON object on stdout too, and printing JSON results. Every command module ends through
here, so no two of them can disagree on a code or a shape.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

import typer

__all__ = [
    "EXIT_ERRORS",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "command_params",
    "command_path",
    "emit_json",
    "fail",
]

EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_REFUSED = 0, 1, 2, 3


def _context() -> Any:
    """The command being run, or None outside one. Typer runs commands on the click it vendors
    (newer releases) or on click itself (older ones)."""
    import importlib

    for module in ("typer._click.globals", "click"):
        try:
            current = importlib.import_module(module).get_current_context
        except (ImportError, AttributeError):
            continue
        ctx = current(silent=True)
        if ctx is not None:
            return ctx
    return None


def command_params() -> dict[str, Any]:
    """The parameters of the command being run (empty outside one)."""
    ctx = _context()
    return dict(ctx.params) if ctx is not None else {}


def command_path() -> str:
    """The command being run as the user typed it (`recall search`), for messages."""
    ctx = _context()
    return str(ctx.command_path) if ctx is not None else "recall"


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Say what went wrong on stderr and exit with `code`; a command run with `--json` also
    prints the error as JSON on stdout, so a script reads every outcome from one place."""
    typer.echo(message, err=True)
    if command_params().get("as_json"):
        kind = "USAGE_ERROR" if code == EXIT_USAGE else "ERROR"
        emit_json({"error": {"code": kind, "message": message, "exit": code}})
    raise typer.Exit(code)


def emit_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))
