"""What every `recall` command reads the same way: the `--db`, `--namespace` and `--json`
options, the store they name, whether it exists yet, an `--embedder` name, and a date or time
given on the command line. Shared by every command module of `recall.cli`, which import it
rather than each other.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import typer

from recall.backends import locate, named
from recall.cli.exits import command_path, fail

__all__ = [
    "DbOption",
    "JsonOption",
    "NamespaceOption",
    "embedder_name",
    "store_named",
    "missing",
    "when",
]

DbOption = typer.Option(
    None,
    "--db",
    help="Store file, or a postgresql:// URL. Default: $RECALL_DB, else ./recall.db.",
    show_default=False,
)
NamespaceOption = typer.Option(
    None,
    "--namespace",
    help="Namespace of a postgresql:// store (default: $RECALL_NAMESPACE, else recall).",
    show_default=False,
)
JsonOption = typer.Option(False, "--json", help="Print machine-readable JSON.")


def store_named(db: str | None, namespace: str | None = None, *, environment: bool = True) -> str:
    """The store a command names (`recall.backends.named`), or the usage error saying why not."""
    from recall.errors import UsageError

    try:
        return named(db, namespace, environment=environment)
    except UsageError as err:
        fail(f"{command_path()}: {err}")


def missing(path: str) -> bool:
    """A store file, or a PostgreSQL namespace, that does not exist (a read never makes one).
    A server that cannot be reached is left for opening the store to report."""
    from recall.errors import RecallError

    try:
        return not locate(path).exists()
    except RecallError:
        return False


def when(value: str | None, option: str) -> dt.datetime | None:
    """`value` of `option` as an instant: `YYYY-MM-DD` (start of that day, UTC) or an ISO 8601
    time (naive = UTC); a usage error naming the command otherwise."""
    from recall.instants import parse_when

    if value is None:
        return None
    try:
        return parse_when(value)
    except ValueError:
        fail(f"{command_path()}: {option} {value!r} is not a date (YYYY-MM-DD) or ISO 8601 time")


def embedder_name(value: Any) -> Any:
    """An `--embedder` value checked before anything is opened: a name that names no embedder
    is an argument error in the command's own words."""
    from recall.embedders import name_problem

    for name in value if isinstance(value, list) else [value]:
        problem = name_problem(name) if name is not None else None
        if problem is not None:
            raise typer.BadParameter(problem)
    return value
