"""The embedding journal (SPEC §3): the vectors an index run has computed and not yet committed,
kept beside the store as `<store>-embeddings`, so that the run after an interruption or a crash
embeds only what was not embedded before.

Owns: the file's format, reading it, and appending to it durably. Does not own: when a run uses
it or deletes it (`recall.indexing`). Like SQLite's own `-wal`, it is transient run state: a
committed run deletes it, and the store never needs it to be read.

Durability: each batch's records are written and flushed as soon as it is embedded, so a
process killed at any moment (`kill -9` included) keeps every batch finished before it. They are
also synced to disk (`fsync`) once the last sync is `SYNC_INTERVAL_S` old, and when a stopped
run closes the journal: a slow embedder's every batch is synced, and a fast one (`hashing-D`)
does not pay a disk sync per batch for work that is cheap to redo after a power loss.

Format: the header line `recall-embeddings 2 [dim, "fingerprint"]` (JSON), then fixed-size
records: the 16-byte blake2b digest of the exact text the embedder saw, `dim` little-endian
float32, and an 8-byte blake2b checksum of the two. A truncated last record (a process killed
mid-write) is ignored; a file whose header is not this embedder's is discarded, never an error.
Nothing read back is used unchecked: a record whose checksum fails, or whose vector is not finite
or not of unit length (every embedder's vectors are), is discarded and its text embedded again
(`discarded` counts them; the index report says how many). The file is never opened through a
symbolic link: a link at its path refuses the run (`StoreError`), so a run cannot be made to
write outside the store's folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from recall.errors import StoreError

__all__ = ["Journal", "journal_path", "text_digest"]

_MAGIC = "recall-embeddings 2"
#: How far from unit length a journaled vector may be (float32 rounding, not damage).
_UNIT_TOLERANCE = 1e-3
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)

#: Seconds of embedding after which the journal is synced to disk (see Durability above).
SYNC_INTERVAL_S = 1.0


def journal_path(store_path: str) -> Path:
    """Where the journal of the store at `store_path` lives."""
    return Path(f"{store_path}-embeddings")


def text_digest(text: str) -> bytes:
    """A text's key in the journal."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


class Journal:
    """One run's journal: the vectors found in the file when the run began (`found`), and the
    records the run appends (`append`, safe from the embedding worker). Closed by the run."""

    def __init__(self, path: Path, dim: int, fingerprint: str) -> None:
        self.path = path
        self.dim = dim
        self._header = f"{_MAGIC} {json.dumps([dim, fingerprint])}\n".encode()
        self._records = np.dtype([("digest", "V16"), ("vector", "<f4", (dim,)), ("check", "V8")])
        self._sound = b""  # the header and sound records, when some were discarded
        #: Records found in the file and discarded (damaged, not finite, not unit length).
        self.discarded = 0
        self._rows: dict[bytes, int] = {}
        self._vectors: npt.NDArray[np.float32] = np.zeros((0, dim), dtype="<f4")
        self._kept = 0  # bytes of the file that are its header and whole records
        self._file: BinaryIO | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._synced = time.monotonic()
        self._unsynced = False
        self._load()

    def __len__(self) -> int:
        return len(self._rows)

    def _refuse_link(self) -> bool:
        """Whether the file exists; StoreError when its path is a symbolic link."""
        try:
            link = stat.S_ISLNK(os.lstat(self.path).st_mode)
        except FileNotFoundError:
            return False
        except OSError:
            return True
        if link:
            raise StoreError(
                f"{self.path} is a symbolic link (to {os.readlink(self.path)}); recall never "
                "writes through one. Remove it and run again."
            )
        return True

    def _load(self) -> None:
        if not self._refuse_link():
            return
        try:
            with os.fdopen(os.open(self.path, os.O_RDONLY | _NOFOLLOW), "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            return
        except OSError:
            data = b""
        if not data.startswith(self._header):
            # Another embedder's, another format's, or unreadable: started afresh.
            with contextlib.suppress(OSError):
                self.path.unlink()
            return
        start = len(self._header)
        size = self._records.itemsize
        n = (len(data) - start) // size
        records = np.frombuffer(data, dtype=self._records, count=n, offset=start)
        body = size - 8
        sound = np.fromiter(
            (
                hashlib.blake2b(data[at : at + body], digest_size=8).digest()
                == data[at + body : at + size]
                for at in range(start, start + n * size, size)
            ),
            dtype=bool,
            count=n,
        )
        vectors = records["vector"].astype(np.float64)
        with np.errstate(all="ignore"):
            norms = np.sqrt((vectors * vectors).sum(axis=1)) if n else np.zeros(0)
        sound &= np.isfinite(vectors).all(axis=1) & (np.abs(norms - 1.0) <= _UNIT_TOLERANCE)
        self.discarded = int(n - sound.sum())
        if self.discarded:
            records = records[sound]
            self._sound = self._header + records.tobytes()
        self._vectors = records["vector"]
        self._rows = {bytes(d): i for i, d in enumerate(records["digest"])}
        self._kept = start + n * size

    def found(self, key: bytes) -> npt.NDArray[np.float32] | None:
        """The vector journaled for the text with digest `key`, or None."""
        row = self._rows.get(key)
        return None if row is None else self._vectors[row]

    def append(self, keys: Sequence[bytes], vectors: npt.NDArray[np.float32]) -> None:
        """Write the records and flush them before returning (see Durability above). A journal
        that cannot be written stops; the run goes on without it (it only saves work)."""
        if not keys:
            return
        records = np.empty(len(keys), dtype=self._records)
        records["digest"] = np.frombuffer(b"".join(keys), dtype="V16")
        records["vector"] = vectors
        raw = bytearray(records.tobytes())
        size, body = self._records.itemsize, self._records.itemsize - 8
        for at in range(0, len(raw), size):
            raw[at + body : at + size] = hashlib.blake2b(
                raw[at : at + body], digest_size=8
            ).digest()
        with self._lock:
            if self._closed:
                return
            try:
                if self._file is None:
                    self._file = self._open()
                self._file.write(raw)
                self._file.flush()
                self._unsynced = True
                if time.monotonic() - self._synced >= SYNC_INTERVAL_S:
                    self._sync()
            except OSError:
                self._close()

    def _sync(self) -> None:
        if self._file is not None and self._unsynced:
            os.fsync(self._file.fileno())
            self._synced, self._unsynced = time.monotonic(), False

    def _open(self) -> BinaryIO:
        self._refuse_link()
        flags = os.O_RDWR | os.O_CREAT | _NOFOLLOW
        handle = os.fdopen(os.open(self.path, flags, 0o644), "r+b")
        if not self._kept or self._sound:
            # New, or holding records that were discarded: the header and the sound ones only.
            handle.truncate(0)
            handle.write(self._sound or self._header)
            return handle
        handle.truncate(self._kept)  # a record cut short by a kill ends where the next begins
        handle.seek(self._kept)
        return handle

    def close(self) -> None:
        """Sync what was written and stop appending (a worker still embedding for a stopped
        run writes nothing)."""
        with self._lock:
            with contextlib.suppress(OSError):
                self._sync()
            self._close()

    def _close(self) -> None:
        self._closed = True
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None

    def remove(self) -> None:
        """Close and delete the file (the run committed); a failure to delete is not an error."""
        with self._lock:
            self._close()
        with contextlib.suppress(OSError):
            self.path.unlink()
