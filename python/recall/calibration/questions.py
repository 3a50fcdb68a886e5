"""Labelled question files (SPEC §7): what `recall calibrate QUERIES` and `recall eval` read.

Owns: one labelled question checked (query, answerable, relevant files) and a file of them read
as JSON Lines or JSON, every error naming the file and the line or item.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from recall.errors import UsageError


def labelled_item(item: object, where: str) -> tuple[str, bool, tuple[str, ...]]:
    """One labelled question (SPEC §7): query, answerable, relevant files; errors say `where`."""
    if not isinstance(item, dict):
        raise UsageError(f"{where}: expected a JSON object with 'query' and 'answerable'")
    query, answerable = item.get("query"), item.get("answerable")
    if not isinstance(query, str) or not query.strip():
        raise UsageError(f"{where}: 'query' must be a non-empty string")
    if not isinstance(answerable, bool):
        raise UsageError(f"{where}: 'answerable' must be true or false")
    relevant = item.get("relevant", [])
    if not isinstance(relevant, list) or not all(
        isinstance(r, str) and r.strip() for r in relevant
    ):
        raise UsageError(f"{where}: 'relevant' must be a list of file paths")
    return query, answerable, tuple(relevant)


def load_queries(source: str | os.PathLike[str]) -> list[tuple[str, bool]]:
    """Labelled queries as (query, answerable) pairs (see `load_labelled`)."""
    return [(q, a) for q, a, _ in load_labelled(source)]


def load_labelled(source: str | os.PathLike[str]) -> list[tuple[str, bool, tuple[str, ...]]]:
    """Read labelled queries from JSONL (one object a line) or JSON (a list, or an object with
    a 'queries' list): query, answerable and optionally the relevant files. Errors name the
    file and line."""
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise UsageError(f"recall calibrate: cannot read {path}: {err.strerror or err}") from err
    try:
        whole: object = json.loads(text)
    except ValueError:
        whole = None  # not one JSON document: read it as JSON Lines below
    if isinstance(whole, list) or (isinstance(whole, dict) and "queries" in whole):
        items = whole.get("queries") if isinstance(whole, dict) else whole
        if not isinstance(items, list):
            raise UsageError(f"recall calibrate: {path}: 'queries' must be a list")
        return [labelled_item(item, f"{path} item {i + 1}") for i, item in enumerate(items)]
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            item = json.loads(line)
        except ValueError as err:
            raise UsageError(f"recall calibrate: {path} line {n} is not valid JSON: {err}") from err
        out.append(labelled_item(item, f"{path} line {n}"))
    return out
