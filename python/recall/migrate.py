"""`recall migrate SRC DST`: copy a memory between backends (file → PostgreSQL and back).

Owns: moving every document with its chunks, vectors, declarations and both of its times,
and the records that make the copy answer as the original does (embedder, vocabulary setting,
declarations reader, calibration record and history, chunk churn, forget journal), in one
write on the destination. Does not own: reading or writing either store (their `export` and
`put_document`), or the trust rules: the same rows give the same verdicts on either backend.

Nothing is embedded again: the vectors travel as they are. The destination must be empty; the
source is opened read-only and never changed.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from recall.backends import locate
from recall.calibration import history_key, meta_key
from recall.errors import UsageError
from recall.writing import sweep, temporary

__all__ = ["MigrateReport", "migrate"]

#: Documents read from the source per page.
PAGE = 256
#: Meta records copied as they are (the embedder is bound by `begin`; the generation, counts
#: and clock are the destination's own).
_COPIED = ("vocabularies", "declarations_version")


@dataclass
class MigrateReport:
    source: str
    destination: str
    documents: int
    chunks: int
    edges: int
    embedder: str
    calibration: bool
    generation: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def migrate(
    source: str,
    destination: str,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> MigrateReport:
    """Copy the memory at `source` (a file or a postgresql:// URL) into the empty
    `destination`; `progress(documents, chunks)` after each page."""
    import recall

    started = time.perf_counter()
    # A new store file is written under a hidden name beside it and renamed once committed
    # and closed: a migration that fails or is killed leaves no destination behind.
    final = None
    if locate(destination).file is not None and not os.path.exists(destination):
        final = destination
        folder, name = os.path.split(os.path.abspath(destination))
        sweep(folder, name)
        destination = os.path.join(folder, temporary(name))
    with recall.open(source, read_only=True) as src, recall.open(destination) as dst:
        reader = src._store
        bound = reader.embedder()
        if bound is None:
            raise UsageError(f"recall migrate: {src.path} holds no memory; nothing to copy")
        writer, created = dst._writable_store()
        if writer.embedder() is not None or writer.freshness()[0]:
            raise UsageError(
                f"recall migrate: {dst.path} already holds a memory; migrate into a new file "
                "or an empty namespace (--namespace)"
            )
        clock = getattr(writer, "use_server_clock", None)
        if clock is not None:
            clock(False)  # the source's times travel as they are (SPEC §2.4)
        name, dim, fingerprint = bound
        documents = chunks = edges = 0
        try:
            writer.begin(name, dim, fingerprint)
            after = 0
            while page := reader.export(after=after, limit=PAGE):
                for doc in page:
                    after = doc["id"]
                    writer.put_document(
                        doc, now=doc["indexed_at"], first_indexed_at=doc["first_indexed_at"]
                    )
                    documents += 1
                    chunks += len(doc["chunks"])
                    edges += len(doc["edges"])
                if progress is not None:
                    progress(documents, chunks)
            keys = [*_COPIED, meta_key(fingerprint), history_key(fingerprint)]
            for key in keys:
                value = reader.meta(key)
                if value is not None:
                    writer.set_meta(key, value)
            # SPEC §8.4: a forgotten note stays out of the copy, and an undone one keeps its time.
            writer.write_journal(reader.journal())
            calibrated = reader.meta(meta_key(fingerprint)) is not None
            # SPEC §7 staleness counts from the calibration's churn: the copy keeps the count.
            _, _, last_run_at, churn = reader.freshness()
            writer.set_meta("chunk_churn", str(churn))
            generation = writer.commit(last_run_at or _now())
        except BaseException:
            writer.rollback()
            if created:
                dst._discard_created()
            raise
        shown_destination = dst.path
    if final is not None:
        os.replace(destination, final)
        # The record of the copy's commit goes with it (SPEC §11: doctor compares them).
        with contextlib.suppress(FileNotFoundError):
            os.replace(f"{destination}-committed", f"{final}-committed")
        shown_destination = final
    return MigrateReport(
        source=src.path,
        destination=shown_destination,
        documents=documents,
        chunks=chunks,
        edges=edges,
        embedder=name,
        calibration=calibrated,
        generation=generation,
        seconds=round(time.perf_counter() - started, 3),
    )


def _now() -> str:
    import datetime as dt

    from recall.instants import format_instant

    return format_instant(dt.datetime.now(dt.timezone.utc))
