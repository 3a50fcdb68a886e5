"""What a PostgreSQL store reports without judging: known documents, freshness, stats, the
forget journal and plan, the export a migration reads, one document's vectors (for an index run
that finds a copy of it), and doctor's checks.

Owns: those read-only queries. Does not own: writes (store.py, write.py) or the connection
(base.py).
"""

from __future__ import annotations

from typing import Any, cast

from recall.postgres.base import FRESHNESS_KEYS, Namespace, freshness_of, le_vector
from recall.postgres.schema import SCHEMA_VERSION
from recall.rows import ChunkRow, EdgeRow, ExportedDocument, JournalRow, KnownRow

__all__ = ["Summaries"]


class Summaries(Namespace):
    """Read-only summaries of one namespace."""

    def known_documents(self, source: str) -> list[KnownRow]:
        with self._conn() as c:
            if not self._exists(c):
                return []
            t = self._t
            return [
                (p, h, int(s), m, int(n))
                for p, h, s, m, n in c.execute(
                    f"SELECT path, content_hash, size_bytes, mtime_ns,"
                    f" (SELECT count(*) FROM {t('chunks')} c WHERE c.doc_id = d.id)"
                    f" FROM {t('documents')} d WHERE source = %s",
                    (source,),
                ).fetchall()
            ]

    def journal(self) -> list[JournalRow]:
        """The forget journal, oldest forgotten first."""
        with self._conn() as c:
            if not self._exists(c):
                return []
            return [
                (s, p, h, first, at, undone)
                for s, p, h, first, at, undone in c.execute(
                    "SELECT source, path, content_hash, first_indexed_at, forgotten_at, undone_at"
                    f" FROM {self._t('forgotten')} ORDER BY forgotten_at, source, path"
                ).fetchall()
            ]

    def forget_plan(
        self, targets: list[tuple[str, str]]
    ) -> list[tuple[str, str, str, int, list[tuple[str, str]]]]:
        """What forgetting `targets` would remove: (source, path, first_indexed_at, chunks,
        the (source, path) of every other document whose edges name it)."""
        plan: list[tuple[str, str, str, int, list[tuple[str, str]]]] = []
        with self._conn() as c:
            if not self._exists(c, "chunks"):
                return plan
            t = self._t
            for source, path in targets:
                row = c.execute(
                    "SELECT d.id, d.key, coalesce(d.alias, d.key), d.first_indexed_at,"
                    f" (SELECT count(*) FROM {t('chunks')} c WHERE c.doc_id = d.id)"
                    f" FROM {t('documents')} d WHERE d.source = %s AND d.path = %s",
                    (source, path),
                ).fetchone()
                if row is None:
                    continue
                doc_id, key, alias, first, chunks = row
                # SPEC §2.5: edges resolve as the trust layer resolves them.
                referrers = self._corpus_for(c)[1].declarers_toward(doc_id)
                plan.append((source, path, first or "", int(chunks), list(referrers)))
        return plan

    def freshness(self) -> tuple[int, str | None, str | None, int]:
        with self._conn() as c:
            if not self._exists(c):
                return 0, None, None, 0
            rows = dict(
                c.execute(
                    f"SELECT key, value FROM {self._t('meta')} WHERE key = ANY(%s)",
                    (list(FRESHNESS_KEYS),),
                ).fetchall()
            )
        return freshness_of(rows)

    def stats(self) -> dict[str, Any]:
        with self._conn() as c:
            if not self._exists(c):
                return _empty_stats()
            t = self._t
            setting_row = c.execute(
                f"SELECT value FROM {t('meta')} WHERE key = 'vocabularies'"
            ).fetchone()
            setting = setting_row[0] if setting_row else "all"
            has_chunks = self._exists(c, "chunks")

            def count(sql: str) -> int:
                return int(c.execute(sql).fetchone()[0])

            # SPEC §2.3, §2.5: the declarations counted as the trust layer reads them.
            declarations = self._corpus_for(c)[1].tally()
            chunks = count(f"SELECT count(*) FROM {t('chunks')}") if has_chunks else 0
            size = count(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                f" WHERE n.nspname = '{self.namespace}' AND c.relkind = 'r'"
            )
            bound = self.embedder()
            return {
                "schema_version": self._int_meta(c, "pg_schema_version"),
                "generation": self._int_meta(c, "generation"),
                "documents": count(f"SELECT count(*) FROM {t('documents')}"),
                "chunks": chunks,
                "vectors": chunks,
                "embedder": bound,
                "newest_indexed_at": c.execute(
                    f"SELECT max(indexed_at) FROM {t('documents')}"
                ).fetchone()[0],
                "last_run_at": self.meta("last_run_at"),
                "file_size_bytes": size,
                "metadata_errors": count(
                    f"SELECT count(*) FROM {t('documents')} WHERE metadata_error IS NOT NULL"
                ),
                "chunk_churn": self._int_meta(c, "chunk_churn"),
                "vocabularies": setting,
                "forgotten": count(
                    f"SELECT count(*) FROM {t('forgotten')} WHERE undone_at IS NULL"
                ),
                **declarations,
            }

    def sources(self) -> list[tuple[str, int]]:
        """Every root documents were indexed from, with how many documents it holds."""
        with self._conn() as c:
            if not self._exists(c):
                return []
            return [
                (s, int(n))
                for s, n in c.execute(
                    f"SELECT source, count(*) FROM {self._t('documents')}"
                    " GROUP BY source ORDER BY source"
                ).fetchall()
            ]

    def document_list(self) -> list[tuple[str, str, str]]:
        with self._conn() as c:
            if not self._exists(c):
                return []
            return [
                (s, p, f or "")
                for s, p, f in c.execute(
                    f"SELECT source, path, first_indexed_at FROM {self._t('documents')}"
                    " ORDER BY source, path"
                ).fetchall()
            ]

    def export(
        self, after: int = 0, limit: int = 256, bodies: bool = True
    ) -> list[ExportedDocument]:
        """Up to `limit` documents with ids above `after`, as `put_document` takes them back,
        with `id`, `first_indexed_at` and `indexed_at` (`recall migrate`)."""
        with self._conn() as c:
            if not self._exists(c, "chunks"):
                return []
            docs = c.execute(
                "SELECT id, source, path, key, title, content_hash, size_bytes, mtime_ns,"
                " valid_from_raw, valid_until_raw, valid_from, valid_until, metadata_error,"
                " frontmatter, alias, retired_state, retired_since, retired_vocabulary,"
                " retired_line, retired_statement, retired_overridden, first_indexed_at,"
                f" indexed_at FROM {self._t('documents')} WHERE id > %s ORDER BY id LIMIT %s",
                (after, limit),
            ).fetchall()
            ids = [d[0] for d in docs]
            chunks: dict[int, list[tuple[Any, ...]]] = {i: [] for i in ids}
            for r in (
                c.execute(
                    "SELECT doc_id, ordinal, text, byte_start, byte_end, line_start, line_end,"
                    f" heading_path, vector_send(embedding) FROM {self._t('chunks')}"
                    " WHERE doc_id = ANY(%s) ORDER BY doc_id, ordinal",
                    (ids,),
                ).fetchall()
                if bodies
                else []
            ):
                chunks[r[0]].append(r[1:])
            edges: dict[int, list[tuple[Any, ...]]] = {i: [] for i in ids}
            for r in c.execute(
                "SELECT doc_id, raw_ref, key, reversed, vocabulary, line,"
                f" coalesce(statement, ''), overridden, {self._standing(c)} FROM {self._t('edges')}"
                " WHERE doc_id = ANY(%s) ORDER BY id",
                (ids,),
            ).fetchall():
                edges[r[0]].append(tuple(r[1:]))
        out: list[ExportedDocument] = []
        for d in docs:
            rows = chunks[d[0]]
            out.append(
                {
                    "id": d[0],
                    "source": d[1],
                    "path": d[2],
                    "key": d[3],
                    "title": d[4],
                    "content_hash": d[5],
                    "size_bytes": d[6],
                    "mtime_ns": d[7],
                    "valid_from_raw": d[8],
                    "valid_until_raw": d[9],
                    "valid_from": d[10],
                    "valid_until": d[11],
                    "metadata_error": d[12],
                    "frontmatter": d[13],
                    "alias": d[14],
                    "retired": (d[15], d[16], d[17] or "", d[18], d[19] or "", d[20])
                    if d[15] is not None
                    else None,
                    "first_indexed_at": d[21],
                    "indexed_at": d[22],
                    "chunks": [cast("ChunkRow", tuple(r[:7])) for r in rows],
                    "vectors": b"".join(le_vector(bytes(r[7])) for r in rows),
                    "edges": cast("list[EdgeRow]", edges[d[0]]),
                }
            )
        return out

    def document_vectors(
        self, source: str, path: str
    ) -> tuple[str, list[tuple[str, str]], bytes] | None:
        """The title, chunks' (text, heading path) and vectors (little-endian float32, chunk
        order) of one committed document, or None: what an index run gives a copy of it."""
        with self._conn() as c:
            if not self._exists(c, "chunks"):
                return None
            rows = c.execute(
                "SELECT d.title, c.text, c.heading_path, vector_send(c.embedding)"
                f" FROM {self._t('documents')} d JOIN {self._t('chunks')} c ON c.doc_id = d.id"
                " WHERE d.source = %s AND d.path = %s ORDER BY c.ordinal",
                (source, path),
            ).fetchall()
        if not rows:
            return None
        chunks = [(str(r[1]), str(r[2])) for r in rows]
        return str(rows[0][0]), chunks, b"".join(le_vector(bytes(r[3])) for r in rows)

    def doctor(self) -> list[tuple[str, str, str]]:
        checks: list[tuple[str, str, str]] = []
        with self._conn() as c:
            version = c.execute("SHOW server_version").fetchone()[0]
            vector = c.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            ).fetchone()
            checks.append(
                (
                    "server",
                    "ok" if vector else "damaged",
                    f"PostgreSQL {version}, pgvector {vector[0]}"
                    if vector
                    else f"PostgreSQL {version} has no pgvector: run 'CREATE EXTENSION vector'",
                )
            )
            if not self._exists(c):
                checks.append(("schema", "ok", f"namespace {self.namespace} is empty"))
                return checks
            found = self._int_meta(c, "pg_schema_version")
            if found < SCHEMA_VERSION:
                # An earlier release's tables: read as they are, upgraded by the next index run.
                checks.append(
                    (
                        "schema",
                        "warning",
                        f"namespace {self.namespace}, tables version {found}; this recall writes "
                        f"{SCHEMA_VERSION}: the next 'recall index' upgrades them",
                    )
                )
            elif found > SCHEMA_VERSION:
                checks.append(
                    (
                        "schema",
                        "warning",
                        f"namespace {self.namespace}, tables version {found}, written by a "
                        f"newer recall (this one writes {SCHEMA_VERSION}): upgrade recall to "
                        "index into it",
                    )
                )
            else:
                checks.append(
                    ("schema", "ok", f"namespace {self.namespace}, tables version {found}")
                )
            if self._exists(c, "chunks"):
                orphans = c.execute(
                    f"SELECT count(*) FROM {self._t('documents')} d WHERE NOT EXISTS"
                    f" (SELECT 1 FROM {self._t('chunks')} c WHERE c.doc_id = d.id)"
                ).fetchone()[0]
                logged = c.execute(
                    "SELECT count(*) FROM pg_trigger WHERE tgrelid = %s::regclass"
                    " AND tgname = 'chunks_removed'",
                    (self._t("chunks"),),
                ).fetchone()[0]
                checks.append(
                    (
                        "vectors",
                        "ok" if logged else "warning",
                        "scanned by each reader over the copy it holds, brought forward by the "
                        "change log after each commit"
                        if logged
                        else "no change log: a reader reads every vector again after each "
                        "commit; the next 'recall index' adds it",
                    )
                )
                checks.append(
                    (
                        "documents",
                        "ok" if orphans == 0 else "warning",
                        "every document has chunks"
                        if orphans == 0
                        else f"{orphans} documents have no chunks",
                    )
                )
        return checks


def _empty_stats() -> dict[str, Any]:
    return {
        "schema_version": 0,
        "generation": 0,
        "documents": 0,
        "chunks": 0,
        "vectors": 0,
        "embedder": None,
        "newest_indexed_at": None,
        "last_run_at": None,
        "file_size_bytes": 0,
        "edges_resolved": 0,
        "edges_dangling": 0,
        "edges_ambiguous": 0,
        "edges_self": 0,
        "metadata_errors": 0,
        "chunk_churn": 0,
        "vocabularies": "all",
        "edges_by_vocabulary": [],
        "partial": 0,
        "unread": 0,
        "retired": 0,
        "forgotten": 0,
    }
