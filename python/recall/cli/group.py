"""How the `recall` command group reads and fails: placeholders that name values, and argument
errors in recall's words.

Owns: `-h` beside `--help`, help and usage lines that show `PATHS...`, `-k N` or `--db DB` where
the argument library would show Python types, its wording of a value it cannot read rewritten in
recall's, and such an error as one JSON object on stdout too under `--json`. Does not own: the
commands (their modules), the app (`recall.cli`) or the exit-code table (`recall.cli.exits`).
"""

from __future__ import annotations

import copy
import importlib
import re
import sys
from collections.abc import Sequence
from typing import Any, Optional

import typer
from typer.core import TyperGroup

from recall.cli.exits import EXIT_ERRORS, EXIT_OK, emit_json

__all__ = ["HELP", "RecallGroup"]


def _click(module: str) -> Any:
    """A module of the click that typer runs on: typer 0.28's own copy, or click itself under
    the older typer that Python 3.9 installs."""
    try:
        return importlib.import_module(f"typer._click.{module}")
    except ImportError:
        return importlib.import_module(f"click.{module}")


_TYPES, _ERRORS = _click("types"), _click("exceptions")

#: `-h` beside `--help`, on every command.
HELP = {"help_option_names": ["-h", "--help"]}

#: Placeholders of option values that say what to write, where the name alone does not.
_PLACEHOLDERS = {"as_of": "WHEN", "known_as_of": "WHEN", "older_than": "WHEN"}
#: The argument library's wording of a value it cannot read, in recall's.
_PLAIN = (
    (re.compile(r"\S.* is not a valid int(?:eger)?(?: range)?\.$"), "not a whole number"),
    (re.compile(r"\S.* is not a valid float(?: range)?\.$"), "not a number"),
    (re.compile(r"\S.* is not a valid boolean\..*$"), "not yes or no"),
)


def _placeholders(command: Any) -> None:
    """Name every value in help and usage lines as a placeholder (`PATHS...`, `-k N`,
    `--db DB`), where the argument library shows Python types (`PATHS:PATH...`, `{QUERY}`)."""
    for param in command.params:
        kind = param.type
        if param.metavar is not None:
            pass  # named where it is declared
        elif getattr(param, "is_flag", False) or isinstance(kind, _TYPES.BoolParamType):
            param.metavar = ""
            continue
        else:
            if isinstance(kind, _TYPES.IntParamType):
                name = "N"
            elif isinstance(kind, _TYPES.FloatParamType):
                name = "X"
            else:
                name = _PLACEHOLDERS.get(param.name or "", (param.name or "value").upper())
            param.metavar = name
        if param.nargs == -1 and not param.metavar.endswith("..."):
            param.metavar += "..."
        if param.param_type_name != "argument":
            continue
        # An argument is its placeholder alone: usage `QUERY` / `[PATHS...]` and no type beside
        # it in the help (the library writes `{QUERY}` and `QUERY <text>`). Its type is its own
        # copy, so the shared instance keeps its name for every other parameter.
        usage = param.metavar if param.required else f"[{param.metavar}]"
        param.make_metavar = lambda ctx=None, usage=usage, name=param.metavar, **kw: (
            usage if kw.get("usage") else name
        )
        param.type = copy.copy(kind)
        param.type.get_metavar = lambda param, ctx=None: ""
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
        if sub_command.short_help is None and sub_command.help:
            # A docstring's first paragraph, as one line: the commands list wraps it to the
            # terminal, where the docstring's own line breaks would break it mid-sentence.
            first = sub_command.help.strip().split("\n\n", 1)[0]
            sub_command.short_help = " ".join(first.split())


class RecallGroup(TyperGroup):
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
        except _ERRORS.ClickException as err:
            # The argument library's errors: a bad value, a missing argument, an unknown command.
            if not standalone_mode:
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

            rich_utils.rich_format_error(err)
            sys.exit(err.exit_code)
        except typer.Abort:
            if not standalone_mode:
                raise
            typer.echo("Aborted.", err=True)
            sys.exit(EXIT_ERRORS)
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else EXIT_OK)
