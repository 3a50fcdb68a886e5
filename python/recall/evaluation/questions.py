"""Evaluation question files (SPEC §9): what a set of labelled questions says.

Owns: `Question`, reading a JSON Lines question file (`load_questions`, errors naming the file
and the line), note paths as a label names them (`note_path`), and the times an evaluation is
given with its questions: an instant as a date, a time or ISO text (`read_instant`) and the
notes' last-touched times (`touched_map`). Does not own: the checks a question shares with a
calibration's labelled queries (`calibration.labelled_item`), the searches a question gets
(`observation`) or the shipped set's meta.json (`shipped`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from recall.calibration import labelled_item
from recall.errors import UsageError
from recall.instants import parse_when, utc

__all__ = ["Question", "load_questions", "note_path", "read_instant", "touched_map"]


@dataclass(frozen=True)
class Question:
    """One labelled evaluation question. Paths are relative to the notes root."""

    query: str
    answerable: bool
    category: str
    relevant: tuple[str, ...] = ()
    #: The expected verdict of the first hit about the relevant note, or "abstain".
    expect: str | None = None
    #: Supersession questions: the declared terminal successor and the stale note matched best.
    successor: str | None = None
    stale: str | None = None
    #: Optional: which kind of question within its category, e.g. the kind of near miss
    #: (`attribute`, `entity`, `number`, `version`, `retired`; evalset/README.md).
    kind: str | None = None
    #: Where the question came from (line in its file; 0 when built in code).
    line: int = 0


def note_path(value: str) -> str:
    path = value.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def _question(item: object, where: str, line: int) -> Question:
    query, answerable, relevant = labelled_item(item, where)
    assert isinstance(item, dict)  # checked by labelled_item
    category = item.get("category", "other")
    if not isinstance(category, str) or not category.strip():
        raise UsageError(f"{where}: 'category' must be a non-empty string")
    optional: dict[str, str | None] = {}
    for key in ("expect", "successor", "stale", "kind"):
        value = item.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise UsageError(f"{where}: '{key}' must be a non-empty string when given")
        optional[key] = value
    successor, stale = optional["successor"], optional["stale"]
    return Question(
        query=query,
        answerable=answerable,
        category=category.strip(),
        relevant=tuple(note_path(p) for p in relevant),
        expect=optional["expect"],
        successor=note_path(successor) if successor else None,
        stale=note_path(stale) if stale else None,
        kind=optional["kind"].strip() if optional["kind"] else None,
        line=line,
    )


def load_questions(path: str | os.PathLike[str]) -> list[Question]:
    """Read an evaluation set: JSON Lines, one question object a line (blank lines and lines
    starting with '#' are skipped; keys other than the documented ones are ignored). Errors
    name the file and the line."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else err
        raise UsageError(f"recall eval: cannot read {source}: {why}") from err
    questions = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"recall eval: {source} line {n}"
        try:
            item = json.loads(line)
        except ValueError as err:
            raise UsageError(f"{where} is not valid JSON: {err}") from err
        questions.append(_question(item, where, n))
    if not questions:
        raise UsageError(f"recall eval: {source} holds no questions")
    return questions


def read_instant(value: dt.datetime | dt.date | str, where: str) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return utc(value)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc)
    if isinstance(value, str):
        try:
            return parse_when(value)
        except ValueError:
            pass
    raise UsageError(f"recall eval: {where}: {value!r} is not an ISO date or time")


def touched_map(
    touched: Mapping[str, dt.datetime | dt.date | str] | None,
) -> dict[str, dt.datetime]:
    return {
        note_path(path): read_instant(when, f"touched time of {path}")
        for path, when in (touched or {}).items()
    }
