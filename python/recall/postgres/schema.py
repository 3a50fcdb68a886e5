"""The tables of one memory in PostgreSQL: a schema per namespace (`recall` by default).

Owns: the namespace's name rules, the DDL of its tables and indexes, and the SQL that sets up
roles. Does not own: reading or writing rows (store.py).

The tables mirror the single-file store's (documents, chunks, edges, meta) so that a memory
moves between backends row for row; the chunk table is made by the first index run, when the
embedder's dimension is known. Vectors are pgvector `vector(D)`, scanned by each reader over
the copy it holds (no index); the lexical leg is a `tsvector` of the core's own analysed terms,
which each reader also holds and scores by BM25 (no index either), and `lexicon` keeps each
term's document frequency for BM25 and the lexical evidence (SPEC §7). The change
log (`change_log_ddl`) tells a reader what each commit changed.
"""

from __future__ import annotations

import re

from recall.errors import UsageError

__all__ = [
    "DEFAULT_NAMESPACE",
    "SCHEMA_VERSION",
    "base_ddl",
    "change_log_ddl",
    "check_namespace",
    "chunk_log_ddl",
    "chunks_ddl",
    "dropped_indexes_ddl",
]

DEFAULT_NAMESPACE = "recall"
#: Version of the tables below (kept in `meta` as `pg_schema_version`): 2 added the edges'
#: `standing`, 3 the change log (`documents.changed`, `removed`), 4 dropped the full-text
#: index (readers score the terms they hold).
SCHEMA_VERSION = 4

_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


#: PostgreSQL's reserved key words (its documentation, appendix C): not usable unquoted as a
#: schema name, so not as a namespace.
_RESERVED_WORDS = """
all analyse analyze and any array as asc asymmetric authorization binary both case cast
check collate collation column concurrently constraint create cross current_catalog
current_date current_role current_schema current_time current_timestamp current_user default
deferrable desc distinct do else end except false fetch for foreign freeze from full grant
group having ilike in initially inner intersect into is isnull join lateral leading left
like limit localtime localtimestamp natural not notnull null offset on only or order outer
overlaps placing primary references returning right select session_user similar some
symmetric system_user table tablesample then to trailing true union unique user using
variadic verbose when where window with
"""
RESERVED = frozenset(_RESERVED_WORDS.split())
#: Schemas a database already has for other purposes: recall keeps its tables out of them.
SYSTEM_SCHEMAS = frozenset({"public", "information_schema"})


def check_namespace(name: str) -> str:
    """A namespace is a PostgreSQL schema of recall's own: lower-case letters, digits and `_`,
    not a reserved word, not `public`, `information_schema` or `pg_…`."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name.startswith("pg_"):
        raise UsageError(
            f"recall: namespace {name!r} is not usable: use lower-case letters, digits and _ "
            "(at most 63, not starting with a digit or pg_), e.g. --namespace team_notes"
        )
    if name in RESERVED:
        raise UsageError(
            f"recall: namespace {name!r} is a word PostgreSQL reserves; choose another, e.g. "
            f"--namespace {name}_notes"
        )
    if name in SYSTEM_SCHEMAS:
        raise UsageError(
            f"recall: namespace {name!r} is a schema the database already uses for other "
            "tables; recall keeps its tables in a schema of their own, e.g. --namespace recall"
        )
    return name


def base_ddl(ns: str) -> str:
    """The namespace's tables that do not depend on the embedder (its schema exists)."""
    return f"""
CREATE TABLE IF NOT EXISTS {ns}.meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
CREATE TABLE IF NOT EXISTS {ns}.documents (
    id                 bigserial PRIMARY KEY,
    source             text NOT NULL,
    path               text NOT NULL,
    key                text NOT NULL,
    title              text NOT NULL,
    content_hash       text NOT NULL,
    size_bytes         bigint NOT NULL,
    -- SPEC §2.4 transaction time, from the server clock when the run commits; never
    -- overwritten. NULL only inside the run that adds the document.
    first_indexed_at   text,
    indexed_at         text,
    valid_from_raw     text,
    valid_until_raw    text,
    valid_from         text,
    valid_until        text,
    metadata_error     text,
    frontmatter        text NOT NULL DEFAULT '{{}}',
    mtime_ns           bigint,
    alias              text,
    retired_state      text,
    retired_since      text,
    retired_vocabulary text,
    retired_line       integer,
    retired_statement  text,
    retired_overridden boolean NOT NULL DEFAULT false,
    UNIQUE (source, path)
);
CREATE INDEX IF NOT EXISTS documents_key ON {ns}.documents (key);
CREATE INDEX IF NOT EXISTS documents_alias ON {ns}.documents (alias);
CREATE TABLE IF NOT EXISTS {ns}.edges (
    id         bigserial PRIMARY KEY,
    doc_id     bigint NOT NULL REFERENCES {ns}.documents (id) ON DELETE CASCADE,
    raw_ref    text NOT NULL,
    key        text NOT NULL,
    reversed   boolean NOT NULL DEFAULT false,
    vocabulary text NOT NULL DEFAULT 'frontmatter',
    line       integer,
    statement  text,
    overridden boolean NOT NULL DEFAULT false,
    -- SPEC §2.5: NULL, 'partial' or 'unread' (recorded and shown, never in force).
    standing   text
);
CREATE INDEX IF NOT EXISTS edges_doc ON {ns}.edges (doc_id);
CREATE INDEX IF NOT EXISTS edges_key ON {ns}.edges (key);
CREATE TABLE IF NOT EXISTS {ns}.lexicon (
    term text PRIMARY KEY,
    df   bigint NOT NULL
);
-- SPEC §8.4: documents forgotten (and brought back), with the first indexing time they keep.
CREATE TABLE IF NOT EXISTS {ns}.forgotten (
    source           text NOT NULL,
    path             text NOT NULL,
    content_hash     text NOT NULL,
    first_indexed_at text NOT NULL,
    forgotten_at     text NOT NULL,
    undone_at        text,
    PRIMARY KEY (source, path)
);
"""


def change_log_ddl(ns: str) -> str:
    """Schema 3, the change log a reader follows to bring what it holds forward (`replica.py`):
    a document row written (inserted or updated) gets `changed` NULL, which the run's commit
    stamps with its generation; every document or chunk row deleted is logged in `removed`,
    stamped the same way. Triggers keep both, whoever writes (an earlier release included).
    Idempotent: made with the namespace, or added by the first run of this release."""
    return f"""
-- The generation of the commit that last wrote the row: NULL until it commits.
ALTER TABLE {ns}.documents ADD COLUMN IF NOT EXISTS changed bigint;
CREATE INDEX IF NOT EXISTS documents_changed ON {ns}.documents (changed);
CREATE TABLE IF NOT EXISTS {ns}.removed (
    generation bigint,           -- NULL until the run that removed the row commits
    doc_id     bigint NOT NULL,
    chunk_id   bigint            -- NULL: the document itself
);
CREATE INDEX IF NOT EXISTS removed_generation ON {ns}.removed (generation);
CREATE OR REPLACE FUNCTION {ns}.document_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A write that does not set `changed` itself (the commit's stamp does) marks the row.
    IF TG_OP = 'INSERT' OR NEW.changed IS NOT DISTINCT FROM OLD.changed THEN
        NEW.changed := NULL;
    END IF;
    RETURN NEW;
END $$;
CREATE OR REPLACE FUNCTION {ns}.documents_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {ns}.removed (doc_id) SELECT id FROM gone;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION {ns}.chunks_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {ns}.removed (doc_id, chunk_id) SELECT doc_id, id FROM gone;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS document_written ON {ns}.documents;
CREATE TRIGGER document_written BEFORE INSERT OR UPDATE ON {ns}.documents
    FOR EACH ROW EXECUTE FUNCTION {ns}.document_written();
DROP TRIGGER IF EXISTS documents_removed ON {ns}.documents;
CREATE TRIGGER documents_removed AFTER DELETE ON {ns}.documents
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION {ns}.documents_removed();
"""


def chunk_log_ddl(ns: str) -> str:
    """The chunk table's part of the change log (it exists once the first run made it)."""
    return f"""
DROP TRIGGER IF EXISTS chunks_removed ON {ns}.chunks;
CREATE TRIGGER chunks_removed AFTER DELETE ON {ns}.chunks
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION {ns}.chunks_removed();
"""


def chunks_ddl(ns: str, dim: int) -> str:
    """The chunk table for an embedder of `dim` dimensions (no index but its keys: each reader
    scans the vectors and terms it holds)."""
    return f"""
CREATE TABLE IF NOT EXISTS {ns}.chunks (
    id           bigserial PRIMARY KEY,
    doc_id       bigint NOT NULL REFERENCES {ns}.documents (id) ON DELETE CASCADE,
    ordinal      integer NOT NULL,
    text         text NOT NULL,
    byte_start   integer NOT NULL,
    byte_end     integer NOT NULL,
    line_start   integer NOT NULL,
    line_end     integer NOT NULL,
    heading_path text NOT NULL,
    body         tsvector NOT NULL,
    tokens       integer NOT NULL,           -- analysed tokens: BM25's length
    embedding    vector({int(dim)}) NOT NULL,
    UNIQUE (doc_id, ordinal)
);
-- A reader reads every chunk's body once: kept inline and uncompressed (compressed only when a
-- row holds nothing else to move out), the text and the vector go out of line first.
ALTER TABLE {ns}.chunks ALTER COLUMN body SET STORAGE MAIN;
"""


def dropped_indexes_ddl(ns: str) -> str:
    """Indexes an earlier release built that no read uses, each paid for by every insert: the
    HNSW graph of schema 2, the full-text index (readers score the terms they hold)."""
    return f"DROP INDEX IF EXISTS {ns}.chunks_embedding; DROP INDEX IF EXISTS {ns}.chunks_body;"
