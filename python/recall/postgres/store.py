"""A memory in PostgreSQL + pgvector, behind the same store interface as the single-file store.

Owns: the connection pool, the write path of an index run (one transaction, under the
namespace's advisory lock), both legs' retrieval (pgvector HNSW, full-text search), reading
what the trust layer needs, and the read-only summaries. Does not own: any trust rule: the
candidates go to the Rust core (`_core.Corpus`), the same code the single-file store judges
with, so a verdict never depends on the backend.

Concurrency (SPEC §1, §2.4): an index run holds `pg_advisory_xact_lock` on its namespace from
`begin` to `commit`, so runs from several machines serialise and none loses another's commit;
a document first added by a run gets `first_indexed_at` from the server clock just before the
run commits, and an upsert never overwrites it. Searches read committed rows (MVCC) and never
wait for a writer.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

from recall import _core
from recall.errors import EmbedderMismatchError, StoreError, UsageError
from recall.postgres.schema import (
    DEFAULT_NAMESPACE,
    SCHEMA_VERSION,
    base_ddl,
    check_namespace,
    chunks_ddl,
)
from recall.postgres.write import Run, body_of, vector_text

__all__ = ["PgStore", "split_url"]

#: Seconds to wait for the server when neither the URL nor $PGCONNECT_TIMEOUT says.
CONNECT_TIMEOUT = 10
#: HNSW candidate list per query: at least this ($RECALL_HNSW_EF_SEARCH: larger finds more of
#: the exact neighbours and takes longer), and four times the candidates asked for.
EF_SEARCH = int(os.environ.get("RECALL_HNSW_EF_SEARCH") or 100)
#: The query's rarest terms are searched first while the chunks holding them number at most
#: this (all of them are scored: they decide the top of the lexical leg when they can).
RARE_POOL = 2000
#: Distinct words of a query that are searched (as the file store's index searches them).
MAX_QUERY_TERMS = 64
#: How deep explain looks into each leg for a document's rank (as the file store does).
EXPLAIN_DEPTH = 100
#: Matching chunks full-text search hands the core to order by BM25: at least this, and four
#: times the candidates asked for (all of them when fewer match).
LEXICAL_POOL = 100


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

    return joined(parts.netloc, rest), ns, joined(netloc, [*rest, ("namespace", ns)])


def _le_vector(sent: bytes) -> bytes:
    """pgvector's binary form (int16 dim, int16 unused, float32 big-endian) as little-endian
    float32 bytes, the core's vector format."""
    return np.frombuffer(sent, dtype=">f4", offset=4).astype("<f4").tobytes()


class PgStore:
    """One namespace of a PostgreSQL database, answering what `_core.Store` answers."""

    def __init__(self, url: str, *, namespace: str | None = None, read_only: bool = False) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError as err:  # pragma: no cover - the extra is missing
            raise StoreError(
                "recall: a postgresql:// store needs psycopg and its pool: "
                "pip install 'recall-memory[postgres]' ('.[postgres]' from a checkout)"
            ) from err
        self._psycopg = psycopg
        conninfo, self.namespace, self.path = split_url(url, namespace)
        self._asked_read_only = read_only
        settings: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in conninfo and "PGCONNECT_TIMEOUT" not in os.environ:
            settings["connect_timeout"] = CONNECT_TIMEOUT
        # One connection first: a server that cannot be reached, or refuses, says why at once.
        try:
            psycopg.connect(conninfo, **settings).close()
        except psycopg.Error as err:
            why = " ".join(line.strip() for line in str(err).splitlines()) or type(err).__name__
            raise StoreError(
                f"recall store: cannot connect to {self.path}: {why}; check the URL or the PG* "
                "variables (PGHOST, PGUSER, PGPASSWORD, PGDATABASE)"
            ) from err
        self._pool = ConnectionPool(
            conninfo,
            min_size=1,
            max_size=4,
            kwargs=settings,
            open=False,
            name=f"recall-{self.namespace}",
        )
        try:
            self._pool.open(wait=True, timeout=2 * CONNECT_TIMEOUT)
        except Exception as err:
            self._pool.close()
            raise StoreError(f"recall store: cannot connect to {self.path}: {err}") from err
        self._write: Any = None  # the connection of the index run in progress
        self._run: Run | None = None
        self._tables: set[str] = set()
        self._server_clock = True
        self._corpus: tuple[int, _core.Corpus] | None = None
        self._corpus_lock = threading.Lock()
        self._closed = False
        with self._conn() as c:
            row = c.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            if row.fetchone() is None and not read_only:
                try:
                    c.execute("CREATE EXTENSION IF NOT EXISTS vector")
                except psycopg.Error as err:
                    self.close()
                    raise StoreError(
                        f"recall store: {self.path} has no pgvector and this role cannot add "
                        f"it ({str(err).strip()}); run 'CREATE EXTENSION vector' as its owner"
                    ) from err

    # -- plumbing -------------------------------------------------------------------------

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

    def _schema_exists(self, c: Any) -> bool:
        row = c.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.namespace,))
        return row.fetchone() is not None

    def close(self) -> None:
        if self._closed:
            return
        self.rollback()
        self._closed = True
        self._pool.close()

    def use_server_clock(self, on: bool) -> None:
        """Stamp the run's times from the server clock (the default), or from the `now` each
        write passes (an explicit instant: replays and tests)."""
        self._server_clock = on
        if self._run is not None:
            self._run.server_clock = on

    @property
    def read_only(self) -> str | None:
        if self._asked_read_only:
            return "opened read-only"
        with self._conn() as c:
            if not self._exists(c):
                if self._schema_exists(c):
                    row = c.execute(
                        "SELECT has_schema_privilege(current_user, %s, 'CREATE')",
                        (self.namespace,),
                    ).fetchone()
                else:
                    row = c.execute(
                        "SELECT has_database_privilege(current_user, current_database(), 'CREATE')"
                    ).fetchone()
                ok = row is not None and row[0]
                return None if ok else f"this role cannot create namespace {self.namespace}"
            row = c.execute(
                "SELECT has_table_privilege(current_user, %s, 'INSERT')",
                (self._t("documents"),),
            ).fetchone()
            if row is not None and row[0]:
                return None
            user = c.execute("SELECT current_user").fetchone()
        return f"role {user[0] if user else '?'} cannot write to namespace {self.namespace}"

    # -- meta -------------------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        with self._conn() as c:
            if not self._exists(c):
                return None
            row = c.execute(f"SELECT value FROM {self._t('meta')} WHERE key = %s", (key,))
            found = row.fetchone()
        return None if found is None else str(found[0])

    def set_meta(self, key: str, value: str) -> None:
        if self._run is not None:
            if key == "chunk_churn":
                self._run.reset_churn()  # the caller sets the count itself
            self._put_meta(key, value)
            return
        self._refuse_if_read_only()
        with self._conn() as c:
            if not self._exists(c):
                raise UsageError("recall: nothing is indexed yet; run 'recall index PATH' first")
            self._put_meta(key, value)

    def _put_meta(self, key: str, value: str) -> None:
        with self._conn() as c:
            c.execute(
                f"INSERT INTO {self._t('meta')} (key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def embedder(self) -> tuple[str, int, str] | None:
        with self._conn() as c:
            if not self._exists(c):
                return None
            rows = dict(
                c.execute(
                    f"SELECT key, value FROM {self._t('meta')} WHERE key IN "
                    "('embedder_name', 'embedder_dim', 'embedder_fingerprint')"
                ).fetchall()
            )
        if "embedder_name" not in rows:
            return None
        return rows["embedder_name"], int(rows["embedder_dim"]), rows["embedder_fingerprint"]

    def _int_meta(self, c: Any, key: str) -> int:
        row = c.execute(f"SELECT value FROM {self._t('meta')} WHERE key = %s", (key,)).fetchone()
        try:
            return int(row[0]) if row else 0
        except ValueError:
            return 0

    def _refuse_if_read_only(self) -> None:
        why = self.read_only
        if why is not None:
            raise StoreError(f"recall store: {self.path} is read-only ({why}); writes are refused")

    # -- the write path of an index run ----------------------------------------------------

    def known_documents(self, source: str) -> list[tuple[str, str, int, int | None]]:
        with self._conn() as c:
            if not self._exists(c):
                return []
            return [
                (p, h, int(s), m)
                for p, h, s, m in c.execute(
                    f"SELECT path, content_hash, size_bytes, mtime_ns FROM {self._t('documents')} "
                    "WHERE source = %s",
                    (source,),
                ).fetchall()
            ]

    def forgotten_paths(self, source: str) -> list[str]:
        """Paths under `source` an index run skips (forgotten and not brought back)."""
        with self._conn() as c:
            if not self._exists(c):
                return []
            return [
                str(r[0])
                for r in c.execute(
                    f"SELECT path FROM {self._t('forgotten')} WHERE source = %s"
                    " AND undone_at IS NULL ORDER BY path",
                    (source,),
                ).fetchall()
            ]

    def forgotten(self) -> list[tuple[str, str, str, str, str | None]]:
        """The journal: (source, path, first_indexed_at, forgotten_at, undone_at)."""
        with self._conn() as c:
            if not self._exists(c):
                return []
            return [
                tuple(r)
                for r in c.execute(
                    "SELECT source, path, first_indexed_at, forgotten_at, undone_at"
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
                referrers = c.execute(
                    f"SELECT DISTINCT d.source, d.path FROM {t('edges')} e"
                    f" JOIN {t('documents')} d ON d.id = e.doc_id"
                    " WHERE (e.key = %s OR e.key = %s) AND e.doc_id != %s AND NOT e.overridden"
                    " ORDER BY d.source, d.path",
                    (key, alias, doc_id),
                ).fetchall()
                plan.append((source, path, first or "", int(chunks), [tuple(r) for r in referrers]))
        return plan

    def forget(self, targets: list[tuple[str, str]], now: str) -> int:
        return self._writing().forget(targets, now)

    def undo_forget(self, targets: list[tuple[str, str]], now: str) -> int:
        return self._writing().undo_forget(targets, now)

    def begin(self, name: str, dim: int, fingerprint: str) -> None:
        """Open the run's transaction and wait for the namespace's writer lock."""
        self._refuse_if_read_only()
        if self._write is not None:
            raise UsageError("recall store: a write is already open on this handle")
        conn = self._pool.getconn()
        try:
            conn.execute("BEGIN")
            lock = f"recall:{self.namespace}"
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (lock,))
            self._write = conn
            # Made once, by the first run (a role that may only write rows never runs DDL).
            if not self._exists(conn):
                if not self._schema_exists(conn):
                    conn.execute(f"CREATE SCHEMA {self.namespace}")
                conn.execute(base_ddl(self.namespace))
            bound = self.embedder()
            if bound is not None and (bound[0], bound[1], bound[2]) != (name, dim, fingerprint):
                raise EmbedderMismatchError(
                    f"recall store: {self.path} was built with embedder '{bound[0]}', not "
                    f"'{name}'; use --embedder {bound[0]} or a new namespace"
                )
            if bound is None:
                for key, value in (
                    ("embedder_name", name),
                    ("embedder_dim", str(dim)),
                    ("embedder_fingerprint", fingerprint),
                    ("pg_schema_version", str(SCHEMA_VERSION)),
                ):
                    self.set_meta(key, value)
            first = not self._exists(conn, "chunks")
            if first:
                conn.execute(chunks_ddl(self.namespace, dim))
            self._run = Run(conn, self.namespace, dim, build_indexes=first)
            self._run.server_clock = self._server_clock
        except BaseException:
            self._write = None
            conn.rollback()
            self._pool.putconn(conn)
            raise

    def _writing(self) -> Run:
        if self._write is None or self._run is None:
            raise UsageError("no write is open: call begin() first")
        return self._run

    def put_document(self, **document: Any) -> None:
        """Hold one document of the run (the arguments of `_core.Store.put_document`, and
        `first_indexed_at` for a migration); `write.Run.put` checks and writes it."""
        self._writing().put(**document)

    def set_declarations(
        self,
        source: str,
        path: str,
        edges: list[tuple[str, str, bool, str, int | None, str, bool]],
        alias: str | None = None,
        retired: tuple[str, str | None, str, int | None, str, bool] | None = None,
    ) -> bool:
        return self._writing().set_declarations(source, path, edges, alias, retired)

    def set_file_time(self, source: str, path: str, mtime_ns: int | None) -> None:
        self._writing().set_file_time(source, path, mtime_ns)

    def remove_documents(self, source: str, paths: list[str]) -> int:
        return self._writing().remove(source, paths)

    def commit(self, now: str) -> int:
        """Write what the run holds, bump the generation, commit and release the lock."""
        run = self._writing()
        try:
            generation = run.finish(now, self._put_meta)
            self._write.execute("COMMIT")
        except BaseException:
            self.rollback()
            raise
        self._release_writer()
        return generation

    def rollback(self) -> None:
        if self._write is None:
            return
        # A broken connection has nothing left to undo.
        with contextlib.suppress(Exception):
            self._write.execute("ROLLBACK")
        self._release_writer()

    def _release_writer(self) -> None:
        conn, self._write, self._run = self._write, None, None
        if conn is not None:
            self._pool.putconn(conn)

    # -- the read path --------------------------------------------------------------------

    def freshness(self) -> tuple[int, str | None, str | None, int]:
        with self._conn() as c:
            if not self._exists(c):
                return 0, None, None, 0
            rows = dict(
                c.execute(
                    f"SELECT key, value FROM {self._t('meta')} WHERE key IN "
                    "('documents', 'newest_indexed_at', 'last_run_at', 'chunk_churn')"
                ).fetchall()
            )
        return (
            int(rows.get("documents") or 0),
            rows.get("newest_indexed_at") or None,
            rows.get("last_run_at") or None,
            int(rows.get("chunk_churn") or 0),
        )

    def _corpus_for(self, c: Any) -> tuple[int, _core.Corpus]:
        """The trust layer's corpus for the committed generation, rebuilt when it moved."""
        generation = self._int_meta(c, "generation")
        with self._corpus_lock:
            if self._corpus is not None and self._corpus[0] == generation:
                return self._corpus
        # One snapshot: documents and edges of the same commit.
        with c.transaction():
            c.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            generation = self._int_meta(c, "generation")
            setting = c.execute(
                f"SELECT value FROM {self._t('meta')} WHERE key = 'vocabularies'"
            ).fetchone()
            docs = c.execute(
                "SELECT id, source, path, key, first_indexed_at, valid_from_raw, valid_until_raw,"
                " metadata_error IS NOT NULL, alias, retired_state, retired_since,"
                f" retired_vocabulary, retired_overridden FROM {self._t('documents')} ORDER BY id"
            ).fetchall()
            edges = c.execute(
                "SELECT doc_id, key, raw_ref, reversed, vocabulary, line,"
                f" coalesce(statement, ''), overridden FROM {self._t('edges')} ORDER BY id"
            ).fetchall()
        corpus = _core.Corpus(
            [
                (*d[:9], (d[9], d[10], d[11] or "", bool(d[12])) if d[9] is not None else None)
                for d in docs
            ],
            [tuple(e) for e in edges],
            setting[0] if setting else "all",
        )
        with self._corpus_lock:
            self._corpus = (generation, corpus)
        return self._corpus

    def search(
        self,
        query: bytes,
        *,
        text: str,
        k: int,
        candidates: int,
        now_us: int,
        known_as_of_us: int | None,
        threshold: float,
        scale: float,
        unverified: bool,
        lexical_weight: float = 0.0,
        identifier_weight: float = 0.0,
    ) -> dict[str, Any]:
        import time

        t0 = time.perf_counter()
        with self._conn() as c:
            if not self._exists(c, "chunks"):
                return _empty_outcome()
            generation, corpus = self._corpus_for(c)
            t_loaded = time.perf_counter()
            dense = self._dense(c, query, candidates)
            t_dense = time.perf_counter()
            term_dfs, chunk_count, tokens = self._lexicon(c, text)
            lexical = self._lexical(c, text, candidates, term_dfs, chunk_count, tokens)
            t_lexical = time.perf_counter()
            ids = list(dict.fromkeys([*dense, *(i for i, _ in lexical)]))
            rows = self._chunk_rows(c, "c.id = ANY(%s)", (ids,))

            def fetch(doc_id: int) -> list[tuple[int, bytes, str]]:
                found = self._chunk_rows(c, "c.doc_id = %s", (doc_id,))
                rows.update(found)
                return [(i, r["vector"], r["body"]) for i, r in found.items()]

            out = corpus.judge(
                query,
                text=text,
                dense=dense,
                lexical=[i for i, _ in lexical],
                chunks={i: (r["doc_id"], r["vector"], r["body"]) for i, r in rows.items()},
                term_dfs=term_dfs,
                chunk_count=chunk_count,
                fetch=fetch,
                k=k,
                candidates=candidates,
                now_us=now_us,
                known_as_of_us=known_as_of_us,
                threshold=threshold,
                scale=scale,
                unverified=unverified,
                lexical_weight=lexical_weight,
                identifier_weight=identifier_weight,
            )
        hits = []
        for h in out["hits"]:
            row = rows.get(h["chunk"])
            if row is None:
                continue
            retired = row["retired"] if h.pop("retired_in_force") else None
            hits.append({**row["shown"], **h, "retired": retired})
        t_done = time.perf_counter()
        ms = 1e3
        return {
            "hits": hits,
            "dense": out["dense"],
            "lexical": lexical,
            "generation": generation,
            "documents": len(corpus),
            "load_ms": (t_loaded - t0) * ms,
            "dense_ms": (t_dense - t_loaded) * ms,
            "lexical_ms": (t_lexical - t_dense) * ms,
            "fuse_ms": 0.0,
            "trust_ms": (t_done - t_lexical) * ms,
        }

    def _dense(self, c: Any, query: bytes, n: int) -> list[int]:
        """Chunk ids near the query by the HNSW index, twice the `n` the core keeps after
        ordering them by cosine (so chunks tied at the cut are there to be ordered as the
        file store's scan orders them)."""
        with c.transaction():
            # The planner prices a wide ef_search above a scan of every vector on a small
            # table; the scan's cost grows with the corpus, the graph's does not.
            c.execute(
                f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, 4 * n)};"
                " SET LOCAL enable_seqscan = off"
            )
            return [
                int(r[0])
                for r in c.execute(
                    f"SELECT id FROM {self._t('chunks')} ORDER BY embedding <=> %s::vector"
                    " LIMIT %s",
                    (vector_text(np.frombuffer(query, dtype="<f4")), 2 * n),
                ).fetchall()
            ]

    def _lexicon(self, c: Any, text: str) -> tuple[list[tuple[str, int]], int, int]:
        """Each analysed query term's document frequency, the chunks and their tokens."""
        terms = _core.lexical_terms(text)
        dfs = dict(
            c.execute(
                f"SELECT term, df FROM {self._t('lexicon')} WHERE term = ANY(%s)", (terms,)
            ).fetchall()
        )
        counts = dict(
            c.execute(
                f"SELECT key, value FROM {self._t('meta')} WHERE key IN ('chunks', 'tokens')"
            ).fetchall()
        )
        return (
            [(t, int(dfs.get(t, 0))) for t in terms],
            int(counts.get("chunks") or 0),
            int(counts.get("tokens") or 0),
        )

    def _lexical(
        self,
        c: Any,
        text: str,
        n: int,
        term_dfs: list[tuple[str, int]],
        chunk_count: int,
        tokens: int,
    ) -> list[tuple[int, float]]:
        """The lexical leg's best `n` (chunk id, BM25), ordered by the core as the file store's
        index scores them. Full-text search finds the chunks; each comes with the positions of
        the query's terms and its length. When few chunks hold any of the words, all of them
        are scored. Otherwise every chunk holding one of the rarest terms is; when the n-th of
        those outscores what the other terms could add up to, no other chunk can enter the top
        n. Failing that, the chunks full-text search's own rank puts first join them."""
        tsquery = _core.tsquery_literal(text)
        if tsquery is None:
            return []
        searched = [(t, df) for t, df in term_dfs[:MAX_QUERY_TERMS] if df > 0]
        terms = [t for t, _ in searched]

        def ranked(pool: dict[int, tuple[int, str]]) -> list[tuple[int, float]]:
            rows = [(i, length, v) for i, (length, v) in pool.items()]
            return _core.bm25_rank(text, rows, term_dfs, chunk_count, tokens, n)

        if sum(df for _, df in searched) <= RARE_POOL:
            return ranked(self._matching(c, tsquery, terms, None))
        rare: list[str] = []
        held = 0
        for term, df in sorted(searched, key=lambda x: x[1]):
            if held + df > RARE_POOL:
                break
            rare.append(term)
            held += df
        pool: dict[int, tuple[int, str]] = {}
        if rare:
            pool.update(self._matching(c, _or_query(rare), terms, None))
            best = ranked(pool)
            rest = sum(_bm25_ceiling(df, chunk_count) for t, df in searched if t not in rare)
            if len(best) >= n and best[n - 1][1] > rest * (1 + 1e-6):
                return best
        pool.update(self._matching(c, tsquery, terms, max(LEXICAL_POOL, 4 * n)))
        return ranked(pool)

    def _matching(
        self, c: Any, tsquery: str, terms: list[str], limit: int | None
    ) -> dict[int, tuple[int, str]]:
        """(chunk id → (token count, the chunk's `terms` with their positions)) of the chunks
        matching `tsquery`: all of them, or the `limit` full-text search ranks first."""
        order = " ORDER BY ts_rank(body, %(q)s::tsquery) DESC, id LIMIT %(n)s" if limit else ""
        rows = c.execute(
            "SELECT id, tokens, ts_filter(setweight(body, 'A', %(t)s), '{a}')::text"
            f" FROM {self._t('chunks')} WHERE body @@ %(q)s::tsquery{order}",
            {"q": tsquery, "t": terms, "n": limit},
        ).fetchall()
        return {int(i): (int(n), v) for i, n, v in rows}

    def _chunk_rows(self, c: Any, where: str, args: tuple[Any, ...]) -> dict[int, dict[str, Any]]:
        rows: dict[int, dict[str, Any]] = {}
        for r in c.execute(
            "SELECT c.id, c.doc_id, vector_send(c.embedding), d.source, d.path, d.title,"
            " c.ordinal, c.text, c.heading_path, c.line_start, c.line_end, d.indexed_at,"
            " d.first_indexed_at, d.valid_from_raw, d.valid_until_raw, d.retired_state,"
            " d.retired_since, d.retired_vocabulary, d.retired_line, d.retired_statement"
            f" FROM {self._t('chunks')} c JOIN {self._t('documents')} d ON d.id = c.doc_id"
            f" WHERE {where}",
            args,
        ).fetchall():
            rows[int(r[0])] = {
                "doc_id": int(r[1]),
                "vector": _le_vector(bytes(r[2])),
                "body": body_of(r[5], r[8], r[7]),
                "retired": (r[15], r[16], r[17] or "", r[18], r[19] or "") if r[15] else None,
                "shown": {
                    "source": r[3],
                    "path": r[4],
                    "title": r[5],
                    "ordinal": r[6],
                    "text": r[7],
                    "heading_path": r[8],
                    "line_start": r[9],
                    "line_end": r[10],
                    "indexed_at": r[11] or "",
                    "first_indexed_at": r[12] or "",
                    "valid_from": r[13],
                    "valid_until": r[14],
                },
            }
        return rows

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

            resolved, dangling, ambiguous, selfref = c.execute(
                "SELECT coalesce(sum((n = 1 AND own = 0)::int), 0),"
                " coalesce(sum((n = 0)::int), 0), coalesce(sum((n >= 2)::int), 0),"
                " coalesce(sum((n = 1 AND own = 1)::int), 0) FROM ("
                f" SELECT (SELECT count(*) FROM {t('documents')} d"
                "          WHERE d.key = e.key OR d.alias = e.key) AS n,"
                f"        (SELECT count(*) FROM {t('documents')} d"
                "          WHERE (d.key = e.key OR d.alias = e.key) AND d.id = e.doc_id) AS own"
                f" FROM {t('edges')} e WHERE NOT e.overridden"
                "  AND (%s = 'all' OR (%s = 'frontmatter' AND e.vocabulary = 'frontmatter'))) s",
                (setting, setting),
            ).fetchone()
            by_vocabulary = [
                (
                    v,
                    int(n)
                    if setting == "all" or (setting == "frontmatter" and v == "frontmatter")
                    else 0,
                    int(o),
                )
                for v, n, o in c.execute(
                    f"SELECT vocabulary, count(*) FILTER (WHERE NOT overridden),"
                    f" count(*) FILTER (WHERE overridden) FROM {t('edges')}"
                    " GROUP BY vocabulary ORDER BY vocabulary"
                ).fetchall()
            ]
            retired = c.execute(
                f"SELECT count(*) FROM {t('documents')} WHERE retired_state IS NOT NULL"
                " AND NOT retired_overridden AND (%s = 'all' OR (%s = 'frontmatter'"
                " AND retired_vocabulary = 'frontmatter'))",
                (setting, setting),
            ).fetchone()[0]
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
                "edges_resolved": int(resolved),
                "edges_dangling": int(dangling),
                "edges_ambiguous": int(ambiguous),
                "edges_self": int(selfref),
                "metadata_errors": count(
                    f"SELECT count(*) FROM {t('documents')} WHERE metadata_error IS NOT NULL"
                ),
                "chunk_churn": self._int_meta(c, "chunk_churn"),
                "vocabularies": setting,
                "edges_by_vocabulary": by_vocabulary,
                "retired": int(retired),
                "forgotten": count(
                    f"SELECT count(*) FROM {t('forgotten')} WHERE undone_at IS NULL"
                ),
            }

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

    def export(self, after: int = 0, limit: int = 256) -> list[dict[str, Any]]:
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
            for r in c.execute(
                "SELECT doc_id, ordinal, text, byte_start, byte_end, line_start, line_end,"
                f" heading_path, vector_send(embedding) FROM {self._t('chunks')}"
                " WHERE doc_id = ANY(%s) ORDER BY doc_id, ordinal",
                (ids,),
            ).fetchall():
                chunks[r[0]].append(r[1:])
            edges: dict[int, list[tuple[Any, ...]]] = {i: [] for i in ids}
            for r in c.execute(
                "SELECT doc_id, raw_ref, key, reversed, vocabulary, line,"
                f" coalesce(statement, ''), overridden FROM {self._t('edges')}"
                " WHERE doc_id = ANY(%s) ORDER BY id",
                (ids,),
            ).fetchall():
                edges[r[0]].append(tuple(r[1:]))
        out = []
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
                    "chunks": [tuple(r[:7]) for r in rows],
                    "vectors": b"".join(_le_vector(bytes(r[7])) for r in rows),
                    "edges": edges[d[0]],
                }
            )
        return out

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
            checks.append(
                (
                    "schema",
                    "ok" if found == SCHEMA_VERSION else "damaged",
                    f"namespace {self.namespace}, tables version {found}",
                )
            )
            if self._exists(c, "chunks"):
                orphans = c.execute(
                    f"SELECT count(*) FROM {self._t('documents')} d WHERE NOT EXISTS"
                    f" (SELECT 1 FROM {self._t('chunks')} c WHERE c.doc_id = d.id)"
                ).fetchone()[0]
                hnsw = self._exists(c, "chunks_embedding")
                checks.append(
                    (
                        "vectors",
                        "ok" if hnsw else "warning",
                        "HNSW index over cosine distance"
                        if hnsw
                        else "no HNSW index: the dense leg scans every vector",
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

    def explain(
        self,
        file: str,
        query: bytes,
        *,
        text: str,
        now_us: int,
        known_as_of_us: int | None,
        threshold: float,
        scale: float,
        lexical_weight: float = 0.0,
        identifier_weight: float = 0.0,
    ) -> dict[str, Any] | None:
        """Why `file` gets its verdict (SPEC §8.2), as the file store explains it: the same
        explanation from the same corpus, with the document's ranks in this backend's legs."""
        with self._conn() as c:
            if not self._exists(c, "chunks"):
                return None
            _, corpus = self._corpus_for(c)
            doc_id = corpus.locate(file)
            if doc_id is None:
                return None
            rows = self._chunk_rows(c, "c.doc_id = %s", (doc_id,))
            term_dfs, chunk_count, tokens = self._lexicon(c, text)

            def rank(ids: list[int]) -> int | None:
                owners = dict(
                    c.execute(
                        f"SELECT id, doc_id FROM {self._t('chunks')} WHERE id = ANY(%s)", (ids,)
                    ).fetchall()
                )
                found = [i for i, chunk in enumerate(ids, 1) if owners.get(chunk) == doc_id]
                return found[0] if found else None

            depth = EXPLAIN_DEPTH
            dense = self._dense(c, query, depth)
            lexical = self._lexical(c, text, depth, term_dfs, chunk_count, tokens)
            declarations = c.execute(
                "SELECT vocabulary, line, statement, overridden"
                f" FROM {self._t('edges')} WHERE doc_id = %s ORDER BY id",
                (doc_id,),
            ).fetchall()
            retired = c.execute(
                "SELECT retired_state, retired_since, coalesce(retired_vocabulary, ''),"
                " retired_line, retired_statement, retired_overridden"
                f" FROM {self._t('documents')} WHERE id = %s AND retired_state IS NOT NULL",
                (doc_id,),
            ).fetchone()
            setting = self.meta("vocabularies") or "all"
            return corpus.explain(
                doc_id,
                query,
                text=text,
                chunks=[(i, r["vector"], r["body"]) for i, r in rows.items()],
                term_dfs=term_dfs,
                chunk_count=chunk_count,
                dense_rank=rank(self._by_cosine(query, dense, c)),
                lexical_rank=rank([i for i, _ in lexical]),
                declarations=[tuple(d) for d in declarations],
                retired=tuple(retired) if retired else None,
                vocabularies=setting,
                now_us=now_us,
                known_as_of_us=known_as_of_us,
                threshold=threshold,
                scale=scale,
                lexical_weight=lexical_weight,
                identifier_weight=identifier_weight,
            )

    def _by_cosine(self, query: bytes, ids: list[int], c: Any) -> list[int]:
        """`ids` ordered as the core orders the dense leg: by the cosine of the stored vectors,
        ties by chunk id."""
        rows = c.execute(
            f"SELECT id, vector_send(embedding) FROM {self._t('chunks')} WHERE id = ANY(%s)",
            (ids,),
        ).fetchall()
        q = np.frombuffer(query, dtype="<f4")
        scored = [
            (-float(np.dot(np.frombuffer(_le_vector(bytes(v)), dtype="<f4"), q)), int(i))
            for i, v in rows
        ]
        return [i for _, i in sorted(scored)]


def _or_query(terms: list[str]) -> str:
    """A tsquery literal: the OR of `terms` (analysed terms: letters and digits only)."""
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


def _bm25_ceiling(df: int, chunks: int) -> float:
    """The most one term can add to a chunk's BM25 (its IDF times k1 + 1, as Tantivy's)."""
    x = (chunks - min(df, chunks) + 0.5) / (df + 0.5)
    return math.log(1.0 + x) * (1.0 + 1.2)


def _empty_outcome() -> dict[str, Any]:
    return {
        "hits": [],
        "dense": [],
        "lexical": [],
        "generation": 0,
        "documents": 0,
        "load_ms": 0.0,
        "dense_ms": 0.0,
        "lexical_ms": 0.0,
        "fuse_ms": 0.0,
        "trust_ms": 0.0,
    }


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
        "retired": 0,
        "forgotten": 0,
    }
