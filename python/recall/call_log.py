"""What an agent was told: one JSON line per call served, so that a decision made on a wrong
memory can be traced to the hits, verdicts and calibration behind it (`recall serve --log FILE`,
`recall log FILE`). Off unless asked for.

Owns: the line of a call (the time, the tool, its arguments, how it failed, and for a search each
hit's file, verdict, confidence and file state, the abstention and its reason, the calibration's
id and the generation that answered), appending it whole (one `write` of one line to a file
opened for appending), rotation (past `MAX_BYTES` the file becomes `FILE.1`, `FILE.1` becomes
`FILE.2`, up to `KEEP` old files), and reading a log back. Does not own: the calls themselves
(`recall.mcp_server`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["KEEP", "MAX_BYTES", "CallLog", "line_of", "read"]

#: A log file is rotated once it passes this size.
MAX_BYTES = 10 * 1024 * 1024
#: Rotated files kept beside the log (`FILE.1` the newest).
KEEP = 3


def line_of(
    tool: str, arguments: Mapping[str, Any], data: Mapping[str, Any], failed: bool
) -> dict[str, Any]:
    """The logged line of one call: `data` is what the call answered (an error's payload when
    `failed`)."""
    line: dict[str, Any] = {
        "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
        "tool": tool,
        "arguments": dict(arguments),
    }
    if failed:
        error = data.get("error", {})
        line["error"] = {"code": error.get("code"), "message": error.get("message")}
        return line
    if "hits" in data:
        line["hits"] = [
            {
                "file": h["provenance"]["file"],
                "verdict": h["verdict"],
                "confidence": h["confidence"],
                "source": h.get("source"),
            }
            for h in data["hits"]
        ]
        line["abstained"] = data.get("abstained")
        line["reason"] = data.get("reason")
        calibration = data.get("calibration") or {}
        line["calibration"] = calibration.get("id")
        line["generation"] = data.get("generation")
    return line


class CallLog:
    """A log file that calls are appended to, one JSON line each, rotated by size."""

    def __init__(self, path: str | os.PathLike[str], max_bytes: int = MAX_BYTES, keep: int = KEEP):
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.keep = keep

    def append(
        self, tool: str, arguments: Mapping[str, Any], data: Mapping[str, Any], failed: bool
    ) -> None:
        """Append the line of one call; a log that cannot be written never fails the call (the
        reason goes to standard error)."""
        text = json.dumps(line_of(tool, arguments, data, failed), ensure_ascii=False) + "\n"
        encoded = text.encode("utf-8")
        try:
            self._rotate(len(encoded))
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, encoded)
            finally:
                os.close(fd)
        except OSError as err:
            import sys

            print(f"recall serve --log: cannot write {self.path}: {err}", file=sys.stderr)

    def _rotate(self, adding: int) -> None:
        try:
            size = os.stat(self.path).st_size
        except FileNotFoundError:
            return
        if size + adding <= self.max_bytes:
            return
        for n in range(self.keep - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{n}")
            if older.exists():
                os.replace(older, self.path.with_name(f"{self.path.name}.{n + 1}"))
        os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))


def read(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], int]:
    """The lines of a log, oldest first, and how many could not be read (a line cut short by a
    crash, or not a JSON object)."""
    lines: list[dict[str, Any]] = []
    bad = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except ValueError:
                bad += 1
                continue
            if isinstance(line, dict):
                lines.append(line)
            else:
                bad += 1
    return lines, bad
