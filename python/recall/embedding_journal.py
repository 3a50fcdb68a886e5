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

Format: the header line `recall-embeddings 1 [dim, "fingerprint"]` (JSON), then fixed-size
records: the 16-byte blake2b digest of the exact text the embedder saw, then `dim`
little-endian float32. A truncated last record (a process killed mid-write) is ignored; a file
whose header is not this embedder's is discarded, never an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

__all__ = ["Journal", "journal_path", "text_digest"]

_MAGIC = "recall-embeddings 1"

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
        self._records = np.dtype([("digest", "V16"), ("vector", "<f4", (dim,))])
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

    def _load(self) -> None:
        try:
            data = self.path.read_bytes()
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
        n = (len(data) - start) // self._records.itemsize
        records = np.frombuffer(data, dtype=self._records, count=n, offset=start)
        self._vectors = records["vector"]
        self._rows = {bytes(d): i for i, d in enumerate(records["digest"])}
        self._kept = start + n * self._records.itemsize

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
        with self._lock:
            if self._closed:
                return
            try:
                if self._file is None:
                    self._file = self._open()
                self._file.write(records.tobytes())
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
        if not self._kept:
            new = open(self.path, "wb")  # noqa: SIM115 - held until `close`
            new.write(self._header)
            return new
        kept = open(self.path, "r+b")  # noqa: SIM115 - held until `close`
        kept.truncate(self._kept)  # a record cut short by a kill ends where the next begins
        kept.seek(self._kept)
        return kept

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
