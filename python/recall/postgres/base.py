"""What every part of a PostgreSQL store stands on: one namespace of a database.

Owns: the URL and namespace rules, borrowing a connection (the run's own while a write is
open), table names and which tables exist, meta values, the embedder a namespace is bound to,
and the trust layer's corpus for the committed generation. Does not own: writes (store.py,
write.py), queries (search.py) or summaries (summaries.py).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

from recall import _core
from recall.errors import StoreError
from recall.postgres import shown_db
from recall.postgres.replica import Replica
from recall.postgres.schema import DEFAULT_NAMESPACE, check_namespace

__all__ = [
    "EMBEDDER_KEYS",
    "FRESHNESS_KEYS",
    "Namespace",
    "bound_of",
    "freshness_of",
    "le_vector",
    "split_url",
]

#: The meta records naming the embedder a namespace is bound to.
EMBEDDER_KEYS = ("embedder_name", "embedder_dim", "embedder_fingerprint")
#: The meta records `freshness()` reads.
FRESHNESS_KEYS = ("documents", "newest_indexed_at", "last_run_at", "chunk_churn")


def freshness_of(rows: dict[str, str]) -> tuple[int, str | None, str | None, int]:
    """The contract's `freshness()` from the meta records."""
    return (
        int(rows.get("documents") or 0),
        rows.get("newest_indexed_at") or None,
        rows.get("last_run_at") or None,
        int(rows.get("chunk_churn") or 0),
    )


def bound_of(rows: dict[str, str]) -> tuple[str, int, str] | None:
    """(name, dim, fingerprint) from the meta records, or None before the first commit."""
    if "embedder_name" not in rows:
        return None
    return rows["embedder_name"], int(rows["embedder_dim"]), rows["embedder_fingerprint"]


def split_url(url: str, namespace: str | None = None) -> tuple[str, str, str]:
    """(libpq connection URL, namespace, URL to show) from a `postgresql://` URL. A
    `namespace=` query parameter names the namespace unless `namespace` is given; the password
    never appears in the URL shown."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    named = [v for k, v in query if k == "namespace"]
    rest = [(k, v) for k, v in query if k != "namespace"]
    ns = check_namespace(namespace or (named[-1] if named else DEFAULT_NAMESPACE))
    netloc = parts.netloc
    if "@" in netloc:
        user, host = netloc.rsplit("@", 1)
        netloc = f"{user.split(':', 1)[0]}@{host}"

    def joined(location: str, query: list[tuple[str, str]]) -> str:
        # urlunsplit drops the `//` of an empty location (`postgresql://`: all from PG*).
        tail = urlunsplit(("", "", parts.path, urlencode(query), ""))
        return f"{parts.scheme}://{location}{tail}"

    return joined(parts.netloc, rest), ns, shown_db(joined(netloc, [*rest, ("namespace", ns)]))


def le_vector(sent: bytes) -> bytes:
    """pgvector's binary form (int16 dim, int16 unused, float32 big-endian) as little-endian
    float32 bytes, the core's vector format."""
    return np.frombuffer(sent, dtype=">f4", offset=4).astype("<f4").tobytes()


class Namespace:
    """One namespace, as the parts of a store use it; `PgStore` opens the pool."""

    namespace: str
    path: str
    _pool: Any
    _write: Any
    _closed: bool
    _tables: set[str]
    _replica: Replica | None
    _replica_lock: threading.RLock
    _ahead: threading.local
    _has_standing: bool

    @contextmanager
    def _conn(self) -> Iterator[Any]:
        if self._closed:
            raise StoreError(f"recall store: {self.path} is closed")
        if self._write is not None:
            yield self._write
            return
        with self._pool.connection() as c:
            yield c

    def _t(self, table: str) -> str:
        return f"{self.namespace}.{table}"

    def _exists(self, c: Any, table: str = "meta") -> bool:
        # A table once seen stays (only dropping the namespace by hand removes it): asked once.
        if table in self._tables:
            return True
        row = c.execute("SELECT to_regclass(%s)", (self._t(table),)).fetchone()
        found = row is not None and row[0] is not None
        if found and self._write is None:
            self._tables.add(table)
        return found

    def _standing(self, c: Any) -> str:
        """The edges' `standing` column (schema 2), or NULL for a namespace an earlier release
        wrote, read as it is until its next index run adds the column."""
        if not self._has_standing:
            row = c.execute(
                "SELECT 1 FROM information_schema.columns WHERE table_schema = %s"
                " AND table_name = 'edges' AND column_name = 'standing'",
                (self.namespace,),
            ).fetchone()
            self._has_standing = row is not None
        return "standing" if self._has_standing else "NULL::text"

    def _schema_exists(self, c: Any) -> bool:
        row = c.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.namespace,))
        return row.fetchone() is not None

    def meta(self, key: str) -> str | None:
        with self._conn() as c:
            if not self._exists(c):
                return None
            row = c.execute(f"SELECT value FROM {self._t('meta')} WHERE key = %s", (key,))
            found = row.fetchone()
        return None if found is None else str(found[0])

    def embedder(self) -> tuple[str, int, str] | None:
        with self._conn() as c:
            if not self._exists(c):
                return None
            rows = dict(
                c.execute(
                    f"SELECT key, value FROM {self._t('meta')} WHERE key = ANY(%s)",
                    (list(EMBEDDER_KEYS),),
                ).fetchall()
            )
        return bound_of(rows)

    def _int_meta(self, c: Any, key: str) -> int:
        row = c.execute(f"SELECT value FROM {self._t('meta')} WHERE key = %s", (key,)).fetchone()
        try:
            return int(row[0]) if row else 0
        except ValueError:
            return 0

    def _replica_for(
        self, c: Any, generation: int | None = None, *, vectors: bool = False
    ) -> Replica:
        """What the process holds of the namespace, brought to the committed generation (read
        here unless given); with the vectors when `vectors`. The caller holds
        `_replica_lock` while it reads the vectors (a later call moves them forward)."""
        if generation is None:
            generation = self._int_meta(c, "generation")
        if self._write is not None:
            # Inside this handle's own run: its rows as they stand, held by no later search
            # (the run may roll back).
            return Replica(self._t, self._standing).current(c, generation, vectors=vectors)
        if self._replica is None:
            self._replica = Replica(self._t, self._standing)
        return self._replica.current(c, generation, vectors=vectors)

    def _corpus_for(self, c: Any) -> tuple[int, _core.Corpus]:
        """The trust layer's corpus for the committed generation, and that generation."""
        with self._replica_lock:
            replica = self._replica_for(c)
            return replica.generation, replica.corpus
