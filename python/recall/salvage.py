"""The calibration in use, read from a store file's bytes when SQLite cannot read the file
(a damaged header, a truncation, damaged metadata) (SPEC §11).

Owns: finding the records a store kept under `calibration:<fingerprint>` in the raw pages of the
file and of its write-ahead log, checking each as an import would be checked, and choosing one.
A record is short enough to sit whole in one page, so it survives damage anywhere else in the
file. Does not own: writing the export (`recall.writing`) or what the user is told (the CLI and
`recall.doctor`).
"""

from __future__ import annotations

import json
import mmap
import os
import re
from dataclasses import dataclass
from typing import Any

from recall.calibration import load_record

__all__ = ["Salvaged", "salvage_calibration"]

#: A record's key, then the start of its JSON value, as SQLite stores a meta row's two columns.
_RECORD = re.compile(rb'calibration:([0-9a-f]{8,64})(\{"id": )')
#: The most copies examined: old versions of the row linger in free pages and log frames.
_MAX_COPIES = 1000
#: The longest record read (a record is under 2 KB; the cap keeps damage from reading far).
_MAX_RECORD = 64 * 1024


@dataclass(frozen=True)
class Salvaged:
    """The record chosen, where it was found, and how many valid copies there were."""

    record: dict[str, Any]
    found_in: str
    copies: int

    @property
    def detail(self) -> str:
        others = f"; the newest of {self.copies} copies" if self.copies > 1 else ""
        return (
            f"calibration {self.record['id']} (threshold {self.record['threshold']}) read from "
            f"the bytes of {self.found_in}{others}"
        )


def salvage_calibration(path: str) -> Salvaged | None:
    """The newest valid calibration record in the store file at `path` or its `-wal`, by the
    time it was fitted (a log frame wins a tie: it was written after the page it replaces), or
    None when no copy can be read."""
    found: list[tuple[str, int, dict[str, Any], str]] = []
    for rank, name in enumerate((path, f"{path}-wal")):
        for record in _records(name):
            found.append((str(record.get("fitted_at") or ""), rank, record, name))
    if not found:
        return None
    _, _, record, name = max(found, key=lambda f: (f[0], f[1]))
    return Salvaged(record=record, found_in=os.path.basename(name), copies=len(found))


def _records(name: str) -> list[dict[str, Any]]:
    """Every copy in one file that parses and passes the checks an import applies."""
    try:
        with open(name, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return []
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return _parse(data)
    except (OSError, ValueError):
        return []


def _parse(data: mmap.mmap) -> list[dict[str, Any]]:
    decoder = json.JSONDecoder()
    records = []
    for n, match in enumerate(_RECORD.finditer(data)):
        if n == _MAX_COPIES:
            break
        start = match.start(2)
        text = data[start : start + _MAX_RECORD].decode("utf-8", "replace")
        try:
            value, _ = decoder.raw_decode(text)
        except ValueError:
            continue
        fingerprint = match.group(1).decode("ascii")
        record, _ = load_record(value, fingerprint)
        if record is not None and value.get("fingerprint") == fingerprint:
            records.append(value)
    return records
