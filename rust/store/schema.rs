//! The store's schema: its tables and their forward migrations.
//!
//! Owns: `SCHEMA_VERSION`, the migration list and applying it under the write lock on open.
//! Does not own: the sqlite-vec table, created by the first write once the embedder's dimension
//! is known (write.rs), or opening the file (mod.rs).

use crate::errors::{CoreError, Result};

use super::Store;

/// Bumped with every migration appended to `MIGRATIONS`.
pub const SCHEMA_VERSION: i64 = 7;

/// Forward migrations; entry `i` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE documents (
    id               INTEGER PRIMARY KEY,
    source           TEXT NOT NULL,     -- absolute corpus root the path is relative to
    path             TEXT NOT NULL,     -- relative to source, '/' separated
    key              TEXT NOT NULL,     -- SPEC §2.3 resolution key of path
    title            TEXT NOT NULL,
    content_hash     TEXT NOT NULL,
    size_bytes       INTEGER NOT NULL,
    first_indexed_at TEXT NOT NULL,     -- SPEC §2.4 transaction time; never overwritten
    indexed_at       TEXT NOT NULL,
    valid_from_raw   TEXT,
    valid_until_raw  TEXT,
    valid_from       TEXT,              -- parsed YYYY-MM-DD, NULL when absent
    valid_until      TEXT,
    metadata_error   TEXT,              -- e.g. empty window; NULL when the window is sound
    frontmatter      TEXT NOT NULL DEFAULT '{}',
    UNIQUE (source, path)
);
CREATE INDEX documents_key ON documents(key);
CREATE TABLE chunks (
    id           INTEGER PRIMARY KEY,
    doc_id       INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    ordinal      INTEGER NOT NULL,
    text         TEXT NOT NULL,
    byte_start   INTEGER NOT NULL,
    byte_end     INTEGER NOT NULL,
    line_start   INTEGER NOT NULL,
    line_end     INTEGER NOT NULL,
    heading_path TEXT NOT NULL,         -- headings joined with ' > '
    UNIQUE (doc_id, ordinal)
);
CREATE TABLE edges (
    id      INTEGER PRIMARY KEY,
    doc_id  INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    raw_ref TEXT NOT NULL,
    key     TEXT NOT NULL
);
CREATE INDEX edges_doc ON edges(doc_id);
CREATE INDEX edges_key ON edges(key);
"#,
    r#"
-- The lexical leg's Tantivy files, written in the same transaction as the chunks they index.
CREATE TABLE lexical_files (
    name TEXT PRIMARY KEY,
    data BLOB NOT NULL
);
"#,
    r#"
-- The file's modification time when it was read (ns), so an unchanged file (same size, same
-- time) is not read again; NULL when it was too recent to be trusted or is unknown.
ALTER TABLE documents ADD COLUMN mtime_ns INTEGER;
"#,
    r#"
-- SPEC §8.4 edge vocabularies: where each declaration was written, and which way it points.
-- `reversed` = 1: the reference supersedes the declaring document (`Superseded-By:`).
-- `overridden` = 1: a header statement frontmatter overrode (kept for explain and lint).
ALTER TABLE edges ADD COLUMN reversed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE edges ADD COLUMN vocabulary TEXT NOT NULL DEFAULT 'frontmatter';
ALTER TABLE edges ADD COLUMN line INTEGER;
ALTER TABLE edges ADD COLUMN statement TEXT;
ALTER TABLE edges ADD COLUMN overridden INTEGER NOT NULL DEFAULT 0;
-- The name a numbered reference resolves to (`pep-0008`, `adr-0005`), besides the key.
ALTER TABLE documents ADD COLUMN alias TEXT;
CREATE INDEX documents_alias ON documents(alias);
-- A terminal state a header declares (withdrawn, rejected, deprecated, superseded): the
-- document is expired from `retired_since` (NULL: at every instant).
ALTER TABLE documents ADD COLUMN retired_state TEXT;
ALTER TABLE documents ADD COLUMN retired_since TEXT;
ALTER TABLE documents ADD COLUMN retired_vocabulary TEXT;
ALTER TABLE documents ADD COLUMN retired_line INTEGER;
ALTER TABLE documents ADD COLUMN retired_statement TEXT;
ALTER TABLE documents ADD COLUMN retired_overridden INTEGER NOT NULL DEFAULT 0;
-- SPEC §8.4 forget: documents removed from the store while their files stay; the index run
-- skips them until `recall forget --undo`, which brings back their first indexing time.
CREATE TABLE forgotten (
    source           TEXT NOT NULL,
    path             TEXT NOT NULL,
    content_hash     TEXT NOT NULL,
    first_indexed_at TEXT NOT NULL,
    forgotten_at     TEXT NOT NULL,
    undone_at        TEXT,
    PRIMARY KEY (source, path)
);
"#,
    r#"
-- SPEC §2.5: a statement that is not a full edge. NULL: an edge; 'partial' ("partly
-- superseded by X": recorded and shown, never in force); 'unread' (a status-like statement the
-- reader could not classify: shown on the hit, counted, never in force).
ALTER TABLE edges ADD COLUMN standing TEXT;
"#,
    r#"
-- Each vector's code for the dense leg's first pass (`dense::code_bytes`), written with the
-- vector, so that opening a store reads codes instead of coding every vector. Complete once
-- meta `vector_codes` is 'complete' (a commit fills in the codes of vectors written before).
CREATE TABLE vector_codes (
    chunk_id INTEGER PRIMARY KEY,
    doc_id   INTEGER NOT NULL,
    code     BLOB NOT NULL
);
"#,
    r#"
-- The dense leg's lists (store/lists.rs): the centroids a commit trained over a model's rows,
-- and each row's nearest list. A row without a sound entry is read by every query.
CREATE TABLE dense_lists (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    dim            INTEGER NOT NULL,
    trained_on     INTEGER NOT NULL,  -- rows when the centroids were trained
    placed_through INTEGER NOT NULL,  -- the largest chunk id given its list
    centroids      BLOB NOT NULL,     -- little-endian float32, dim a list
    checksum       INTEGER NOT NULL   -- CRC-32 of dim, trained_on, placed_through (i64) and centroids
);
-- Per chunk id of the block (block × 4096 up to 4096 ids): its list (u16, 65535: none) and the
-- low 16 bits of its code's checksum (u16), little-endian; checksum: CRC-32 of the block
-- number (i64) and the entries.
CREATE TABLE vector_lists (
    block    INTEGER PRIMARY KEY,
    entries  BLOB NOT NULL,
    checksum INTEGER NOT NULL
);
"#,
];

/// What the schema of `version` holds, built from this build's migrations in a scratch
/// database: each table with its columns, and each named index (SPEC §11: doctor checks a
/// store against the version it records).
pub(super) fn expected(version: i64) -> rusqlite::Result<Vec<(String, Vec<String>)>> {
    let conn = rusqlite::Connection::open_in_memory()?;
    for sql in MIGRATIONS
        .iter()
        .take(version.clamp(0, SCHEMA_VERSION) as usize)
    {
        conn.execute_batch(sql)?;
    }
    shape(&conn)
}

/// The tables (with their columns, in order) and the named indexes (`index NAME`, no columns)
/// of a database, the sqlite-vec table and SQLite's own left out.
pub(super) fn shape(conn: &rusqlite::Connection) -> rusqlite::Result<Vec<(String, Vec<String>)>> {
    let mut st = conn.prepare(
        "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'index') AND sql IS NOT NULL \
         AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'vec_chunks%' ORDER BY type DESC, name",
    )?;
    let items: Vec<(String, String)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut out = Vec::with_capacity(items.len());
    for (kind, name) in items {
        if kind == "index" {
            out.push((format!("index {name}"), Vec::new()));
            continue;
        }
        let mut cols = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
        let columns = cols
            .query_map([&name], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        out.push((name, columns));
    }
    Ok(out)
}

impl Store {
    pub(super) fn migrate(&mut self) -> Result<()> {
        let found: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if found > SCHEMA_VERSION {
            return Err(CoreError::SchemaTooNew {
                path: self.path.clone(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
        if found == SCHEMA_VERSION {
            return Ok(());
        }
        self.in_own_write(|store| {
            // Re-read under the write lock: another process may have migrated meanwhile.
            let now: i64 = store
                .conn
                .query_row("PRAGMA user_version", [], |r| r.get(0))?;
            for (version, sql) in MIGRATIONS.iter().enumerate().skip(now as usize) {
                store.conn.execute_batch(sql)?;
                store
                    .conn
                    .pragma_update(None, "user_version", (version + 1) as i64)?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::*;
    use crate::store::fixtures::temp_db;

    #[test]
    fn newer_schema_is_refused() {
        let path = temp_db("schema");
        drop(Store::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        drop(conn);
        assert!(matches!(
            Store::open(&path),
            Err(CoreError::SchemaTooNew { .. })
        ));
    }
}
