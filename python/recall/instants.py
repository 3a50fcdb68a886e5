"""Instants: the caller's clock normalised to UTC, and the fixed-width text form the store
keeps (SPEC §2.4, §5.5).

Owns: turning datetimes into UTC, stored text and microseconds, and back. Does not own: reading
the clock (callers read it once and pass it in).
"""

from __future__ import annotations

import datetime as dt
import functools

__all__ = ["format_instant", "format_micros", "micros", "parse_stored", "parse_when", "utc"]


def utc(now: dt.datetime | None) -> dt.datetime:
    """SPEC §5.5: the clock is read once by the caller; a naive datetime is UTC."""
    if now is None:
        return dt.datetime.now(dt.timezone.utc)
    if now.tzinfo is None:
        return now.replace(tzinfo=dt.timezone.utc)
    return now.astimezone(dt.timezone.utc)


def format_instant(instant: dt.datetime) -> str:
    """Fixed-width UTC ISO 8601 with microseconds, so stored instants sort as text."""
    return utc(instant).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def micros(instant: dt.datetime) -> int:
    delta = utc(instant) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def format_micros(us: int | None) -> str | None:
    return None if us is None else format_instant(_EPOCH + dt.timedelta(microseconds=us))


@functools.lru_cache(maxsize=64)
def parse_stored(text: str | None) -> dt.datetime | None:
    """A stored instant (`format_instant`'s form) back in UTC; None for anything else.
    Not `strptime`: its first call imports and compiles what it parses with (milliseconds)."""
    if not text or len(text) != 27 or text[10] != "T" or text[19] != "." or text[26] != "Z":
        return None
    try:
        return dt.datetime.fromisoformat(text[:26]).replace(tzinfo=dt.timezone.utc)
    except ValueError:
        return None


def parse_when(text: str) -> dt.datetime:
    """A user's date (`YYYY-MM-DD`, the start of that day) or ISO 8601 time, in UTC; a time
    without an offset is read as UTC. Raises ValueError for anything else."""
    text = text.strip()
    # Python before 3.11 reads no trailing Z.
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return utc(dt.datetime.fromisoformat(text))
