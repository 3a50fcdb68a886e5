"""The write path of an index run on PostgreSQL: one transaction, documents written in batches.

Owns: what a run puts, replaces and removes, batched so that a page of documents costs a few
statements (their rows upserted together, every chunk in one binary COPY), the lexicon's
document frequencies (added once per run), the forget journal's entries as given, stamping new
documents and the change log with the commit, and building the namespace's lexical index once
after its first run's rows are in. Does not own: the connection or the lock (store.py opens
the transaction and takes the namespace's advisory lock before a `Run` exists), what the
journal means (`recall.forgetting`) or any read path.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from recall import _core
from recall.errors import UsageError
from recall.rows import DocumentRow, EdgeRow, JournalRow, RetiredRow

__all__ = ["CLOCK", "Run"]

#: Documents held before they are written: one batch of statements per page.
BATCH = 256
#: Generations whose removals the change log keeps (`schema.change_log_ddl`).
LOG_GENERATIONS = 1000
#: The server clock as the store's fixed-width instant (SPEC §2.4).
CLOCK = "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"


#: A binary COPY stream's signature, flags and header extension length; its end marker.
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
_COPY_TRAILER = struct.pack(">h", -1)
#: Of a chunk's row: the field count and doc_id, ordinal; the four offsets; tokens.
_HEAD = struct.Struct(">hiqii")
_SPANS = struct.Struct(">iiiiiiii")
_INT = struct.Struct(">ii")


def _vector_rows(matrix: np.ndarray) -> list[bytes]:
    """Each row as a binary COPY field of pgvector's `vector`: its length, then the dimension
    (int16), an unused int16 and the components as big-endian float32."""
    n, dim = matrix.shape
    fields = np.empty((n, 8 + 4 * dim), dtype=np.uint8)
    fields[:, :8] = np.frombuffer(struct.pack(">ihh", 4 + 4 * dim, dim, 0), dtype=np.uint8)
    fields[:, 8:] = matrix.astype(">f4").view(np.uint8).reshape(n, 4 * dim)
    return [row.tobytes() for row in fields]


def _text(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">i", len(data)) + data


def _copy_row(
    doc_id: int,
    chunk: tuple[int, str, int, int, int, int, str],
    body: bytes,
    tokens: int,
    vector: bytes,
) -> bytes:
    """One chunk row of the binary COPY stream, in `flush`'s column order."""
    ordinal, text, b0, b1, l0, l1, heading = chunk
    return b"".join(
        (
            _HEAD.pack(11, 8, doc_id, 4, ordinal),
            _text(text),
            _SPANS.pack(4, b0, 4, b1, 4, l0, 4, l1),
            _text(heading),
            struct.pack(">i", len(body)),
            body,
            _INT.pack(4, tokens),
            vector,
        )
    )


@dataclass
class _Document:
    row: tuple[Any, ...]  # the documents columns in `_DOC_COLUMNS` order
    chunks: list[tuple[int, str, int, int, int, int, str]]
    vectors: np.ndarray
    title: str
    edges: list[EdgeRow]


_DOC_COLUMNS = (
    "source, path, key, title, content_hash, size_bytes, first_indexed_at, indexed_at,"
    " valid_from_raw, valid_until_raw, valid_from, valid_until, metadata_error, frontmatter,"
    " mtime_ns, alias, retired_state, retired_since, retired_vocabulary, retired_line,"
    " retired_statement, retired_overridden"
)
#: Columns a re-indexed document takes from its new version (first_indexed_at is never one).
_REPLACED = (
    "key, title, content_hash, size_bytes, mtime_ns, indexed_at, valid_from_raw,"
    " valid_until_raw, valid_from, valid_until, metadata_error, frontmatter, alias,"
    " retired_state, retired_since, retired_vocabulary, retired_line, retired_statement,"
    " retired_overridden"
)
_DECLARED = (
    "alias, retired_state, retired_since, retired_vocabulary, retired_line, retired_statement,"
    " retired_overridden"
)


def _declared(alias: str | None, retired: RetiredRow | None) -> tuple[Any, ...]:
    """The document columns a declaration sets: alias and retirement (or none)."""
    r = retired
    return (alias, *(r[:5] if r else (None,) * 5), bool(r and r[5]))


class Run:
    """One index run's writes, inside the transaction `conn` holds under the writer lock."""

    def __init__(self, conn: Any, namespace: str, dim: int) -> None:
        self.conn = conn
        self.ns = namespace
        self.dim = dim
        self.server_clock = True
        self._pending: list[_Document] = []
        # The document frequencies the run's chunks add, written once (`_write_terms`).
        self._terms: Counter[str] = Counter()

    def _t(self, table: str) -> str:
        return f"{self.ns}.{table}"

    def put(self, document: DocumentRow, *, now: str, first_indexed_at: str | None = None) -> None:
        d = document
        chunks, vectors, path = d["chunks"], d["vectors"], d["path"]
        matrix = np.frombuffer(vectors, dtype="<f4")
        if matrix.size != len(chunks) * self.dim:
            raise UsageError(
                f"{path}: {len(chunks)} chunks need {len(chunks) * self.dim} vector components, "
                f"got {matrix.size}"
            )
        # A new document's times: NULL until the run commits and stamps the server clock,
        # unless the caller gives an instant (a replay). A given first indexing time (a
        # migration, a note brought back after a forget) is kept.
        stamp = None if self.server_clock else now
        first = first_indexed_at or stamp
        row = (
            d["source"],
            path,
            d["key"],
            d["title"],
            d["content_hash"],
            d["size_bytes"],
            first,
            stamp,
            d["valid_from_raw"],
            d["valid_until_raw"],
            d["valid_from"],
            d["valid_until"],
            d["metadata_error"],
            d["frontmatter"],
            d.get("mtime_ns"),
            *_declared(d.get("alias"), d.get("retired")),
        )
        self._pending.append(
            _Document(row, chunks, matrix.reshape(len(chunks), self.dim), d["title"], d["edges"])
        )
        if len(self._pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        """Write the held documents: replaced ones' rows out, then every row in."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        c, t = self.conn, self._t
        sources = [d.row[0] for d in pending]
        paths = [d.row[1] for d in pending]
        stored = {
            (source, path): (int(doc_id), digest)
            for doc_id, source, path, digest in c.execute(
                f"SELECT d.id, d.source, d.path, d.content_hash"
                f" FROM {t('documents')} d JOIN unnest(%s::text[], %s::text[]) AS k(source, path)"
                " ON d.source = k.source AND d.path = k.path",
                (sources, paths),
            ).fetchall()
        }
        # Another machine's run committed this very content while this run waited for the
        # lock (it read what was stored before): the stored rows stand, nothing changed.
        pending = [d for d in pending if stored.get(d.row[:2], (0, None))[1] != d.row[4]]
        if not pending:
            return
        self._delete_rows([stored[d.row[:2]][0] for d in pending if d.row[:2] in stored])
        with c.cursor() as cur:
            slots = ", ".join(["%s"] * len(pending[0].row))
            update = ", ".join(f"{col} = excluded.{col}" for col in _REPLACED.split(", "))
            cur.executemany(
                f"INSERT INTO {t('documents')} ({_DOC_COLUMNS}) VALUES ({slots})"
                f" ON CONFLICT (source, path) DO UPDATE SET {update} RETURNING id",
                [d.row for d in pending],
                returning=True,
            )
            ids: list[int] = []
            while True:
                ids.append(int(cur.fetchone()[0]))
                if not cur.nextset():
                    break
        # Binary COPY (`_copy_row`): vectors and bodies go as the server stores them, with
        # nothing to format here or parse there.
        with c.cursor().copy(
            f"COPY {t('chunks')} (doc_id, ordinal, text, byte_start, byte_end, line_start,"
            " line_end, heading_path, body, tokens, embedding) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            out = [_COPY_HEADER]
            for doc_id, d in zip(ids, pending):
                sent = _vector_rows(d.vectors)
                for chunk, vector in zip(d.chunks, sent):
                    body, length, distinct = _core.lexical_row(
                        _core.lexical_body(d.title, chunk[6], chunk[1])
                    )
                    self._terms.update(distinct)
                    out.append(_copy_row(doc_id, chunk, body, length, vector))
            out.append(_COPY_TRAILER)
            copy.write(b"".join(out))
        self._edges([(doc_id, e) for doc_id, d in zip(ids, pending) for e in d.edges])

    def _delete_rows(self, doc_ids: list[int]) -> None:
        """Take documents' chunks (and their terms' counts) and edges out."""
        if not doc_ids:
            return
        c, t = self.conn, self._t
        # The lexicon first: a term's document frequency counts the chunks holding it. Added
        # (not set) like the run's own counts (`_write_terms`), so the order of the two does
        # not matter; a count at zero goes when the run finishes.
        c.execute(
            f"INSERT INTO {t('lexicon')} (term, df) SELECT u.lexeme, -count(*)"
            f" FROM {t('chunks')} ch, unnest(ch.body) u WHERE ch.doc_id = ANY(%s)"
            f" GROUP BY u.lexeme ON CONFLICT (term) DO UPDATE SET df = {t('lexicon')}.df"
            " + excluded.df",
            (doc_ids,),
        )
        c.execute(f"DELETE FROM {t('chunks')} WHERE doc_id = ANY(%s)", (doc_ids,))
        c.execute(f"DELETE FROM {t('edges')} WHERE doc_id = ANY(%s)", (doc_ids,))

    def _edges(self, edges: list[tuple[int, EdgeRow]]) -> None:
        if edges:
            with self.conn.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO {self._t('edges')} (doc_id, raw_ref, key, reversed, vocabulary,"
                    " line, statement, overridden, standing)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    [(doc_id, *e) for doc_id, e in edges],
                )

    def document_id(self, source: str, path: str) -> int | None:
        self.flush()
        row = self.conn.execute(
            f"SELECT id FROM {self._t('documents')} WHERE source = %s AND path = %s",
            (source, path),
        ).fetchone()
        return None if row is None else int(row[0])

    def set_declarations(
        self,
        source: str,
        path: str,
        edges: list[EdgeRow],
        alias: str | None,
        retired: RetiredRow | None,
    ) -> bool:
        doc_id = self.document_id(source, path)
        if doc_id is None:
            return False
        self.conn.execute(f"DELETE FROM {self._t('edges')} WHERE doc_id = %s", (doc_id,))
        slots = ", ".join(f"{col} = %s" for col in _DECLARED.split(", "))
        self.conn.execute(
            f"UPDATE {self._t('documents')} SET {slots} WHERE id = %s",
            (*_declared(alias, retired), doc_id),
        )
        self._edges([(doc_id, e) for e in edges])
        return True

    def set_file_time(self, source: str, path: str, mtime_ns: int | None) -> None:
        self.flush()
        self.conn.execute(
            f"UPDATE {self._t('documents')} SET mtime_ns = %s WHERE source = %s AND path = %s",
            (mtime_ns, source, path),
        )

    def move(
        self,
        source: str,
        path: str,
        new_source: str,
        new_path: str,
        key: str,
        title: str,
        mtime_ns: int | None,
    ) -> bool:
        """Move a document whose content is unchanged, keeping its row (no churn); only when
        its stored title is `title` and the new path is free."""
        self.flush()
        t = self._t("documents")
        moved = self.conn.execute(
            f"UPDATE {t} SET source = %s, path = %s, key = %s, mtime_ns = %s"
            " WHERE source = %s AND path = %s AND title = %s"
            f" AND NOT EXISTS (SELECT 1 FROM {t} WHERE source = %s AND path = %s)",
            (new_source, new_path, key, mtime_ns, source, path, title, new_source, new_path),
        )
        return bool(moved.rowcount == 1)

    def remove(self, source: str, paths: list[str]) -> int:
        self.flush()
        ids = [
            int(r[0])
            for r in self.conn.execute(
                f"SELECT id FROM {self._t('documents')} WHERE source = %s AND path = ANY(%s)",
                (source, paths),
            ).fetchall()
        ]
        self._delete_rows(ids)
        self.conn.execute(f"DELETE FROM {self._t('documents')} WHERE id = ANY(%s)", (ids,))
        return len(ids)

    def write_journal(self, entries: list[JournalRow]) -> None:
        """Store journal entries, each replacing the entry of its (source, path)."""
        self.flush()
        self.conn.cursor().executemany(
            f"INSERT INTO {self._t('forgotten')} (source, path, content_hash, first_indexed_at,"
            " forgotten_at, undone_at) VALUES (%s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (source, path) DO UPDATE SET content_hash = excluded.content_hash,"
            " first_indexed_at = excluded.first_indexed_at,"
            " forgotten_at = excluded.forgotten_at, undone_at = excluded.undone_at",
            entries,
        )

    def drop_journal(self, targets: list[tuple[str, str]]) -> None:
        """Delete the journal entries of these (source, path)."""
        self.flush()
        self.conn.execute(
            f"DELETE FROM {self._t('forgotten')} f USING unnest(%s::text[], %s::text[])"
            " AS k(source, path) WHERE f.source = k.source AND f.path = k.path",
            ([s for s, _ in targets], [p for _, p in targets]),
        )

    def _write_terms(self) -> None:
        """Add the run's document frequencies to the lexicon: once per run, each term once."""
        terms, self._terms = self._terms, Counter()
        if terms:
            self.conn.execute(
                f"INSERT INTO {self._t('lexicon')} (term, df)"
                " SELECT * FROM unnest(%s::text[], %s::bigint[])"
                f" ON CONFLICT (term) DO UPDATE SET df = {self._t('lexicon')}.df + excluded.df",
                (list(terms), list(terms.values())),
            )

    def finish(self, now: str, meta: Any) -> int:
        """Everything held written, new documents stamped, indexes built, the run's meta
        records set (`meta(key, value)`); returns the new generation. The caller commits."""
        self.flush()
        self._write_terms()
        c, t = self.conn, self._t
        clock = c.execute(f"SELECT {CLOCK}").fetchone()[0] if self.server_clock else now
        c.execute(
            f"UPDATE {t('documents')} SET first_indexed_at = coalesce(first_indexed_at, %s),"
            " indexed_at = coalesce(indexed_at, %s)"
            " WHERE first_indexed_at IS NULL OR indexed_at IS NULL",
            (clock, clock),
        )
        c.execute(f"DELETE FROM {t('lexicon')} WHERE df <= 0")
        row = c.execute(f"SELECT value FROM {t('meta')} WHERE key = 'generation'").fetchone()
        generation = (int(row[0]) if row and row[0].isdigit() else 0) + 1
        # The change log (schema 3): what this run wrote and removed, stamped with its
        # generation; removals older than LOG_GENERATIONS are forgotten, and a reader further
        # behind reads everything again.
        c.execute(f"UPDATE {t('documents')} SET changed = %s WHERE changed IS NULL", (generation,))
        c.execute(
            f"UPDATE {t('removed')} SET generation = %s WHERE generation IS NULL", (generation,)
        )
        horizon = generation - LOG_GENERATIONS
        if horizon > 0:
            c.execute(f"DELETE FROM {t('removed')} WHERE generation <= %s", (horizon,))
            row = c.execute(f"SELECT value FROM {t('meta')} WHERE key = 'log_from'").fetchone()
            if row is None or int(row[0]) <= horizon:
                meta("log_from", str(horizon + 1))
        documents, newest = c.execute(
            f"SELECT count(*), max(indexed_at) FROM {t('documents')}"
        ).fetchone()
        chunks, tokens = c.execute(
            f"SELECT count(*), coalesce(sum(tokens), 0) FROM {t('chunks')}"
        ).fetchone()
        for key, value in (
            ("generation", str(generation)),
            ("last_run_at", clock),
            ("documents", str(documents)),
            ("newest_indexed_at", newest or ""),
            ("chunks", str(chunks)),
            ("tokens", str(tokens)),
        ):
            meta(key, value)
        return generation
