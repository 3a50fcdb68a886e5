"""A memory in PostgreSQL + pgvector, behind the same store interface as the single-file store.

Owns: the connection pool, the read-only rule, and the write path of an index run (one
transaction, under the namespace's advisory lock; `write.Run` writes it). The read path is
`search.Searching`, the summaries `summaries.Summaries`; no part owns a trust rule: the
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
import functools
import inspect
import logging
import os
import threading
from typing import Any

from recall.errors import EmbedderMismatchError, StoreError, UsageError
from recall.postgres import scrubbed
from recall.postgres.base import split_url
from recall.postgres.replica import Replica
from recall.postgres.schema import (
    SCHEMA_VERSION,
    base_ddl,
    change_log_ddl,
    chunk_log_ddl,
    chunks_ddl,
    dropped_indexes_ddl,
)
from recall.postgres.search import Searching
from recall.postgres.summaries import Summaries
from recall.postgres.write import Run
from recall.rows import DocumentRow, JournalRow

__all__ = ["PgStore", "namespace_exists"]

#: Seconds to wait for the server when neither the URL nor $PGCONNECT_TIMEOUT says.
CONNECT_TIMEOUT = 10

# The driver's own warnings (a connection discarded after the server went away) are not
# printed: recall reports what happened, once, as a StoreError.
logging.getLogger("psycopg").addHandler(logging.NullHandler())


def _settings(conninfo: str) -> dict[str, Any]:
    """Connection keywords: autocommit, and a timeout where neither the URL nor the
    environment sets one."""
    settings: dict[str, Any] = {"autocommit": True}
    if "connect_timeout" not in conninfo and "PGCONNECT_TIMEOUT" not in os.environ:
        settings["connect_timeout"] = CONNECT_TIMEOUT
    return settings


def namespace_exists(url: str, namespace: str | None = None) -> bool:
    """Whether the namespace (`namespace`, else the one `url` names) holds a recall store;
    StoreError when the server cannot be reached (the password never appears in it)."""
    import psycopg

    conninfo, namespace, shown = split_url(url, namespace)
    try:
        with psycopg.connect(conninfo, **_settings(conninfo)) as c:
            row = c.execute("SELECT to_regclass(%s)", (f"{namespace}.meta",)).fetchone()
    except psycopg.Error as err:
        why = scrubbed(str(err), url)
        raise StoreError(f"recall store: cannot connect to {shown}: {why}") from err
    return row is not None and row[0] is not None


class PgStore(Searching, Summaries):
    """One namespace of a PostgreSQL database, answering what `_core.Store` answers."""

    #: Several machines may index into one namespace: a root missing on this machine may be
    #: another machine's, so it is neither reported missing nor a source of moved documents.
    shared = True

    def __init__(self, url: str, *, namespace: str | None = None, read_only: bool = False) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError as err:  # pragma: no cover - the extra is missing
            raise StoreError(
                "recall: a postgresql:// store needs psycopg and its pool: "
                "pip install 'recall-memory[postgres]' ('.[postgres]' from a checkout)"
            ) from err
        conninfo, self.namespace, self.path = split_url(url, namespace)
        self._asked_read_only = read_only
        settings = _settings(conninfo)
        # One connection first: a server that cannot be reached, or refuses, says why at once.
        try:
            psycopg.connect(conninfo, **settings).close()
        except psycopg.Error as err:
            why = " ".join(line.strip() for line in str(err).splitlines()) or type(err).__name__
            why = scrubbed(why, url)
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
            why = scrubbed(str(err), url)
            raise StoreError(f"recall store: cannot connect to {self.path}: {why}") from err
        self._write: Any = None  # the connection of the index run in progress
        self._run: Run | None = None
        self._tables: set[str] = set()
        self._server_clock = True
        self._replica: Replica | None = None
        self._replica_lock = threading.RLock()
        # Per thread: what `search_state` read ahead for the search of a text that follows.
        self._ahead = threading.local()
        self._has_standing = False
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

    def set_meta(self, key: str, value: str) -> None:
        if self._run is not None:
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

    def _refuse_if_read_only(self) -> None:
        why = self.read_only
        if why is not None:
            raise StoreError(f"recall store: {self.path} is read-only ({why}); writes are refused")

    def write_journal(self, entries: list[JournalRow]) -> None:
        self._writing().write_journal(entries)

    def drop_journal(self, targets: list[tuple[str, str]]) -> None:
        self._writing().drop_journal(targets)

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
            if self._standing(conn) != "standing":
                # Schema 2 (SPEC §2.5): statements with a standing, for a namespace an earlier
                # release made; the writer that owns it adds the column once.
                conn.execute(f"ALTER TABLE {self._t('edges')} ADD COLUMN standing text")
                self._has_standing = True
            version = self._int_meta(conn, "pg_schema_version")
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"recall store: {self.path} was written by a newer recall (tables version "
                    f"{version}; this one writes {SCHEMA_VERSION}); upgrade recall "
                    "(pip install -U recall-memory) to index into it"
                )
            if version < SCHEMA_VERSION:
                self._upgrade(conn)
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
                ):
                    self.set_meta(key, value)
            first = not self._exists(conn, "chunks")
            if first:
                conn.execute(chunks_ddl(self.namespace, dim))
                conn.execute(chunk_log_ddl(self.namespace))
            self._run = Run(conn, self.namespace, dim)
            self._run.server_clock = self._server_clock
        except BaseException:
            self._write = None
            conn.rollback()
            self._pool.putconn(conn)
            raise

    def _upgrade(self, conn: Any) -> None:
        """Bring a namespace's tables to this release's (the run's transaction holds the
        lock): the change log (schema 3), whose removals start with this run, and none of the
        indexes no read uses (the HNSW graph; the full-text index, schema 4). An empty
        namespace gets the same, as it is made."""
        conn.execute(change_log_ddl(self.namespace))
        if self._exists(conn, "chunks"):
            conn.execute(chunk_log_ddl(self.namespace))
            conn.execute(dropped_indexes_ddl(self.namespace))
        generation = self._int_meta(conn, "generation")
        # A reader further behind than this run's generation reads everything again.
        self._put_meta("log_from", str(generation + 1))
        self._put_meta("pg_schema_version", str(SCHEMA_VERSION))

    def _writing(self) -> Run:
        if self._write is None or self._run is None:
            raise UsageError("no write is open: call begin() first")
        return self._run

    def put_document(
        self, document: DocumentRow, *, now: str, first_indexed_at: str | None = None
    ) -> None:
        """Hold one document of the run; `write.Run.put` checks and writes it."""
        self._writing().put(document, now=now, first_indexed_at=first_indexed_at)

    def set_declarations(
        self,
        source: str,
        path: str,
        edges: list[tuple[str, str, bool, str, int | None, str, bool, str | None]],
        alias: str | None = None,
        retired: tuple[str, str | None, str, int | None, str, bool] | None = None,
    ) -> bool:
        return self._writing().set_declarations(source, path, edges, alias, retired)

    def set_file_time(self, source: str, path: str, mtime_ns: int | None) -> None:
        self._writing().set_file_time(source, path, mtime_ns)

    def remove_documents(self, source: str, paths: list[str]) -> int:
        return self._writing().remove(source, paths)

    def move_document(
        self,
        source: str,
        path: str,
        new_source: str,
        new_path: str,
        key: str,
        title: str,
        mtime_ns: int | None,
    ) -> bool:
        return self._writing().move(source, path, new_source, new_path, key, title, mtime_ns)

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


def _contained(method: Any) -> Any:
    """`method` with the driver's errors as `StoreError`: a server stopped mid-run or a
    privilege the role lacks reaches the user as one line naming the namespace, never as a
    traceback (the password scrubbed)."""

    @functools.wraps(method)
    def call(self: PgStore, *args: Any, **kwargs: Any) -> Any:
        import psycopg

        try:
            return method(self, *args, **kwargs)
        except psycopg.Error as err:
            why = " ".join(line.strip() for line in str(err).splitlines()) or type(err).__name__
            lost = isinstance(err, psycopg.OperationalError)
            raise StoreError(
                f"recall store: {self.path}: "
                + (
                    f"the server stopped answering ({why}); what the last completed run "
                    "committed is kept: run the command again once the server is back"
                    if lost
                    else why
                )
            ) from err

    return call


for _name in dir(PgStore):
    _found = inspect.getattr_static(PgStore, _name)
    if _name.startswith("_"):
        continue
    if inspect.isfunction(_found):
        setattr(PgStore, _name, _contained(_found))
    elif isinstance(_found, property) and _found.fget is not None:
        setattr(PgStore, _name, property(_contained(_found.fget), _found.fset))
