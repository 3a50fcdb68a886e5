"""Arguments of the public API (SPEC §8.1): one rule for `recall.open` and the `Memory` methods.

A wrong type or value raises `UsageError` (a `RecallError`) at the call, before anything is read
or written, naming the parameter, what it accepts and what it got. A bool is not an int, and a
string is not a datetime. Owns: those checks. Does not own: what the values mean (api.py).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NoReturn, cast

from recall.calibration import labelled_item
from recall.embedders import ACCEPTED_NAMES, Embedder, name_problem
from recall.errors import UsageError

if TYPE_CHECKING:
    from recall.judge import EntailmentJudge

MODES = ("strict", "development")


def mode_arg(mode: str | None) -> str:
    if mode is not None and mode not in MODES:
        raise UsageError(
            f"recall search: unknown mode {got(mode)}; mode must be 'strict', 'development' "
            "or None (RECALL_TRUST_MODE, else strict)"
        )
    chosen = mode or os.environ.get("RECALL_TRUST_MODE") or "strict"
    if chosen not in MODES:
        raise UsageError(
            f"recall search: unknown mode '{chosen}' in RECALL_TRUST_MODE; use strict or "
            "development"
        )
    return chosen


def got(value: object) -> str:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{shown} ({type(value).__name__})"


def refuse(verb: str, name: str, accepted: str, value: object, hint: str = "") -> NoReturn:
    raise UsageError(f"recall {verb}: {name} must be {accepted}, got {got(value)}{hint}")


def text_arg(verb: str, name: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        refuse(verb, name, "a non-empty string", value)
    return value


def k_arg(verb: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100:
        refuse(verb, "k", "an int in 1..100", value)
    return value


def flag_arg(verb: str, name: str, value: object) -> bool:
    if not isinstance(value, bool):
        refuse(verb, name, "True or False", value)
    return value


def instant_arg(verb: str, name: str, value: object) -> dt.datetime | None:
    if value is None or isinstance(value, dt.datetime):
        return value
    hint = ""
    if isinstance(value, str):
        hint = f"; parse it first, e.g. datetime.datetime.fromisoformat({value!r})"
    elif isinstance(value, dt.date):
        hint = "; pass a datetime.datetime, e.g. datetime.datetime(y, m, d)"
    refuse(verb, name, "a datetime.datetime or None (a naive one is read as UTC)", value, hint)


def path_arg(verb: str, name: str, value: object) -> str:
    path = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
    if not isinstance(path, str) or not path.strip():
        refuse(verb, name, "a non-empty path (str or os.PathLike)", value)
    return path


def paths_arg(value: object) -> list[str]:
    if isinstance(value, (str, os.PathLike)):
        return [path_arg("index", "paths", value)]
    if isinstance(value, (bytes, Mapping)) or not isinstance(value, Iterable):
        refuse("index", "paths", "a path or an iterable of paths (str or os.PathLike)", value)
    paths = [path_arg("index", "each of paths", p) for p in value]
    if not paths:
        refuse("index", "paths", "at least one file or folder", value)
    return paths


def embedder_arg(value: object) -> str | Embedder | None:
    if value is None or isinstance(value, Embedder):
        return value
    if not isinstance(value, str):
        refuse(
            "open", "embedder", f"an embedder name ({ACCEPTED_NAMES}), an Embedder or None", value
        )
    problem = name_problem(value)
    if problem is not None:
        raise UsageError(f"recall open: embedder={value!r} names no embedder: {problem}")
    return value


def judge_arg(value: object) -> str | os.PathLike[str] | EntailmentJudge | None:
    if value is None or callable(getattr(value, "score", None)):
        return cast("EntailmentJudge | None", value)
    if isinstance(value, (str, os.PathLike)):
        return path_arg("open", "judge", value)
    refuse(
        "open",
        "judge",
        "a judge model directory (str or os.PathLike), an object with score() or None",
        value,
    )


def labelled_arg(i: int, item: object) -> tuple[str, bool, tuple[str, ...]]:
    where = f"recall calibrate: labelled item {i + 1}"
    if isinstance(item, Mapping):
        data = dict(item)
        if isinstance(data.get("relevant"), tuple):
            data["relevant"] = list(data["relevant"])
        return labelled_item(data, where)
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return labelled_item({"query": item[0], "answerable": item[1]}, where)
    raise UsageError(
        f"{where}: expected a (query, answerable) pair or a {{'query', 'answerable'}} object, "
        f"got {got(item)}"
    )
