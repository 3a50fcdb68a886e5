"""How the `recall` command group reads and fails: placeholders that name values, and argument
errors in recall's words.

Owns: `-h` beside `--help`, help and usage lines that show `PATHS...`, `-k N` or `--db DB` where
the argument library would show Python types, its wording of a value it cannot read rewritten in
recall's, and such an error as one JSON object on stdout too under `--json`. Does not own: the
commands (their modules), the app (`recall.cli`) or the exit-code table (`recall.cli.exits`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any, Optional

import typer
from typer.core import TyperGroup

from recall.cli.exits import EXIT_ERRORS, EXIT_OK, emit_json

__all__ = ["HELP", "RecallGroup"]

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
