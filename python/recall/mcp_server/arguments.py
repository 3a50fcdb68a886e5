"""The tools' arguments: the bounds on each, and the checks every call makes before any work.

Owns: the limits (`MAX_*`: a model can send anything, and every call must stay cheap) and the
checks of one argument each (a string, a required string, a date or time, a date, a list of
strings), which raise `UsageError` in the tool's words, naming the argument, what it accepts
and what it got. Does not own: what an argument means to its tool (`tools`, `remember`) or
whether a path stays inside the corpus roots (`paths`).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

from recall.errors import UsageError
from recall.instants import parse_when

__all__ = [
    "MAX_FOLDER_PARTS",
    "MAX_K",
    "MAX_LINT_FINDINGS",
    "MAX_NAME_CHARS",
    "MAX_PATHS",
    "MAX_PATH_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_REFERENCES",
    "MAX_REFERENCE_CHARS",
    "MAX_TEXT_CHARS",
    "MAX_TITLE_CHARS",
    "bad",
    "date",
    "instant",
    "required",
    "shown",
    "string",
    "strings",
]

#: Bounds on tool arguments: a model can send anything, and every call must stay cheap.
MAX_K = 50
MAX_QUERY_CHARS = 2_000
MAX_TITLE_CHARS = 200
MAX_TEXT_CHARS = 100_000
MAX_PATH_CHARS = 1_000
MAX_PATHS = 32
MAX_REFERENCES = 20
MAX_REFERENCE_CHARS = 200
MAX_NAME_CHARS = 80
MAX_LINT_FINDINGS = 200
MAX_FOLDER_PARTS = 8


def bad(tool: str, message: str) -> UsageError:
    return UsageError(f"recall {tool}: {message}")


def shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


#: Control characters no argument may hold (a tab and line breaks are text).
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def string(tool: str, args: Mapping[str, Any], name: str, limit: int) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise bad(tool, f"{name} must be a string, got {shown(value)}")
    if not value.strip():
        raise bad(tool, f"{name} must not be empty")
    if len(value) > limit:
        raise bad(tool, f"{name} is {len(value)} characters; the limit is {limit}")
    if CONTROL.search(value):
        raise bad(tool, f"{name} holds a control character (NUL and the like): {shown(value)}")
    return value


def required(tool: str, args: Mapping[str, Any], name: str, limit: int) -> str:
    value = string(tool, args, name, limit)
    if value is None:
        raise bad(tool, f"{name} is required")
    return value


def instant(tool: str, args: Mapping[str, Any], name: str) -> dt.datetime | None:
    value = string(tool, args, name, 64)
    if value is None:
        return None
    try:
        return parse_when(value)
    except ValueError:
        raise bad(
            tool, f"{name} {shown(value)} is not a date (YYYY-MM-DD) or an ISO 8601 time"
        ) from None


def date(tool: str, args: Mapping[str, Any], name: str) -> dt.date | None:
    from recall.frontmatter import parse_date

    value = string(tool, args, name, 10)
    if value is None:
        return None
    try:
        return parse_date(value)
    except ValueError:
        raise bad(tool, f"{name} must be a YYYY-MM-DD date, got {shown(value)}") from None


def flag(tool: str, args: Mapping[str, Any], name: str) -> bool:
    """A true/false argument; false when left out."""
    value = args.get(name, False)
    if not isinstance(value, bool):
        raise bad(tool, f"{name} must be true or false, got {shown(value)}")
    return value


def strings(tool: str, args: Mapping[str, Any], name: str, most: int, limit: int) -> list[str]:
    value = args.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad(tool, f"{name} must be a list of strings, got {shown(value)}")
    if len(value) > most:
        raise bad(tool, f"{name} holds {len(value)} items; the limit is {most}")
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise bad(tool, f"each of {name} must be a non-empty string, got {shown(item)}")
        if CONTROL.search(item):
            raise bad(tool, f"an item of {name} holds a control character: {shown(item)}")
        if len(item) > limit:
            raise bad(tool, f"an item of {name} is {len(item)} characters; the limit is {limit}")
    return [item.strip() for item in value]
