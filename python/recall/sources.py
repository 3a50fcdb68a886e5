"""Freshness at read time: the file of each hit that would be `ok` looked at as the search runs.

Owns: whether a hit's file is still the one that was indexed (its size and modification time,
which the file store's core looks at first, then its content hash, metadata file included,
where those say it may have changed), and the verdict of a hit whose file changed or vanished:
never `ok`. A note edited or deleted since the
last index run is not served as it was (`results.hit_of` gives such a hit `source_changed` or
`source_missing`). Does not own: reading notes for an index run (`indexing`) or the verdicts
of the trust layer (the core).
"""

from __future__ import annotations

import hashlib
import os
import stat
from typing import TYPE_CHECKING

from recall.walk import MAX_FILE_BYTES, read_bounded, read_metadata, sidecar_beside

if TYPE_CHECKING:
    from recall.rows import HitRow
    from recall.vocabularies import Sidecar

__all__ = [
    "CHANGED",
    "CURRENT",
    "MISSING",
    "content_digest",
    "sidecar_read",
    "state_of",
    "states",
]

#: The file is as it was indexed.
CURRENT = "current"
#: The file was edited since it was indexed (or can no longer be read).
CHANGED = "changed"
#: The file is gone: deleted or moved since it was indexed.
MISSING = "missing"


def content_digest(data: bytes, sidecar: Sidecar | None, side_data: bytes) -> str:
    """A note's content hash as stored: its bytes, and its metadata file's when one was read."""
    hasher = hashlib.blake2b(data, digest_size=16)
    if sidecar is not None:
        hasher.update(b"\0sidecar\0" + sidecar.name.encode() + b"\0" + side_data)
    return hasher.hexdigest()


def sidecar_read(side: tuple[str, str]) -> tuple[Sidecar | None, bytes, str | None]:
    """A note's metadata file (SPEC §2.5, vocabulary `sidecar`): the mapping it holds, its bytes,
    or (None, b"", why it cannot be read)."""
    from recall.vocabularies import read_sidecar

    name, path = side
    data, problem = read_metadata(path)
    if data is not None:
        try:
            found = read_sidecar(name, data.decode("utf-8"))
        except UnicodeDecodeError as err:
            problem = f"not UTF-8 text (byte {err.start})"
        else:
            if found is not None:
                return found, data, None
            problem = "holds no YAML or JSON mapping"
    return None, b"", problem


def state_of(root: str, rel: str, stamp: tuple[str, int, int | None]) -> str | None:
    """Whether the file `rel` under `root` is still as indexed (`stamp`: content hash, size,
    modification time in ns or None). None when `root` is not on this machine (a store read
    elsewhere than it was indexed): nothing can be said."""
    path = os.path.join(root, rel)
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return MISSING if os.path.isdir(root) else None
    except OSError:
        return CHANGED
    digest, size, mtime_ns = stamp
    if not stat.S_ISREG(st.st_mode) or st.st_size != size:
        return CHANGED
    if mtime_ns is not None and st.st_mtime_ns == mtime_ns:
        return CURRENT
    # The time was not recorded (a file written in the run's last moments, or one with a
    # metadata file) or has moved: the content says, the metadata file's included where the
    # note's own bytes alone do not give the stored hash.
    data, _ = read_bounded(path, MAX_FILE_BYTES, "too large")
    if data is None:
        return CHANGED
    if content_digest(data, None, b"") == digest:
        return CURRENT
    side = sidecar_beside(path, rel)
    if side is None:
        return CHANGED
    sidecar, side_data, _ = sidecar_read(side)
    return CURRENT if content_digest(data, sidecar, side_data) == digest else CHANGED


#: What the store's own look at a file (`HitRow.file_state`, by size and time) settles; a hit
#: that is not `ok` is not looked at (`unchecked`): it is no answer either way.
_SETTLED: dict[str, str | None] = {
    CURRENT: CURRENT,
    CHANGED: CHANGED,
    MISSING: MISSING,
    "elsewhere": None,
    "unchecked": None,
}


def states(rows: list[HitRow]) -> list[str | None]:
    """The state of the file of each hit that would be `ok`: as the store found it by size and
    time, else by its content (`state_of`), each file read at most once; None for the others."""
    found: dict[tuple[str, str], str | None] = {}
    out: list[str | None] = []
    for row in rows:
        seen = row["file_state"]
        if seen in _SETTLED:
            out.append(_SETTLED[seen])
            continue
        if row["verdict"] != "ok":
            out.append(None)
            continue
        where = (row["source"], row["path"])
        if where not in found:
            found[where] = state_of(row["source"], row["path"], row["stamp"])
        out.append(found[where])
    return out
