//! The single-file store: the only module that writes SQL.
//!
//! Owns: opening the file (bundled SQLite, WAL, busy timeout, sqlite-vec registered statically),
//! the schema and its forward migrations, the write path of an index run (one transaction per
//! run, SPEC §1), and read-only summaries. Does not own: parsing, chunking, embedding (Python) or
//! any trust rule.

use std::path::Path;
use std::sync::Once;

use rusqlite::{params, Connection, ErrorCode, OptionalExtension};

use crate::dense::DenseIndex;
use crate::errors::{CoreError, Result};
use crate::graph::{Graph, Node};
use crate::lexical::LexicalIndex;
use crate::trust::{self, Window};

/// Bumped with every migration appended to `MIGRATIONS`.
pub const SCHEMA_VERSION: i64 = 2;

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
];

/// How deep `explain` looks into each leg for a document's rank.
pub const EXPLAIN_DEPTH: usize = 100;

/// Name of the sqlite-vec table holding one vector per chunk (`chunk_id` = `chunks.id`).
pub const VEC_TABLE: &str = "vec_chunks";

static REGISTER_VEC: Once = Once::new();

/// Register sqlite-vec with the bundled SQLite so every connection opened afterwards has it.
fn register_sqlite_vec() {
    REGISTER_VEC.call_once(|| {
        // SAFETY: sqlite3_vec_init has the signature of an SQLite extension entry point; the
        // crate declares it without arguments, hence the transmute. auto_extension is process
        // global and idempotent behind the Once.
        unsafe {
            type EntryPoint = unsafe extern "C" fn(
                *mut rusqlite::ffi::sqlite3,
                *mut *mut std::os::raw::c_char,
                *const rusqlite::ffi::sqlite3_api_routines,
            ) -> std::os::raw::c_int;
            let entry: EntryPoint = std::mem::transmute(sqlite_vec::sqlite3_vec_init as *const ());
            rusqlite::ffi::sqlite3_auto_extension(Some(entry));
        }
    });
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedderInfo {
    pub name: String,
    pub dim: usize,
    pub fingerprint: String,
}

/// One chunk as written by an index run.
#[derive(Debug, Clone)]
pub struct NewChunk {
    pub ordinal: i64,
    pub text: String,
    pub byte_start: i64,
    pub byte_end: i64,
    pub line_start: i64,
    pub line_end: i64,
    pub heading_path: String,
}

/// One parsed document as written by an index run. `vectors` holds `chunks.len() * dim` floats.
#[derive(Debug, Clone)]
pub struct NewDocument {
    pub source: String,
    pub path: String,
    pub key: String,
    pub title: String,
    pub content_hash: String,
    pub size_bytes: i64,
    pub valid_from_raw: Option<String>,
    pub valid_until_raw: Option<String>,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub metadata_error: Option<String>,
    pub frontmatter: String,
    pub chunks: Vec<NewChunk>,
    pub vectors: Vec<f32>,
    /// (raw reference as written, its resolution key)
    pub edges: Vec<(String, String)>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    pub schema_version: i64,
    pub generation: i64,
    pub documents: i64,
    pub chunks: i64,
    pub vectors: i64,
    pub embedder: Option<EmbedderInfo>,
    pub newest_indexed_at: Option<String>,
    pub last_run_at: Option<String>,
    pub file_size_bytes: i64,
    pub edges_resolved: i64,
    pub edges_dangling: i64,
    pub edges_ambiguous: i64,
    pub edges_self: i64,
    pub metadata_errors: i64,
    pub chunk_churn: i64,
}

/// Everything a search needs in memory, loaded once per store generation (SPEC §1: vectors are
/// loaded once per open store, not per query, and kept in step with writes).
pub(crate) struct SearchCache {
    pub(crate) generation: i64,
    pub(crate) dense: DenseIndex,
    pub(crate) row_chunk: Vec<i64>,
    pub(crate) chunk_row: std::collections::HashMap<i64, usize>,
    pub(crate) row_doc: Vec<usize>,
    pub(crate) doc_rows: Vec<Vec<usize>>,
    pub(crate) doc_ids: Vec<i64>,
    pub(crate) graph: Graph,
    pub(crate) windows: Vec<Window>,
    /// Per document: (source, path); per edge (as given to the graph): the reference as written.
    pub(crate) locations: Vec<(String, String)>,
    pub(crate) edge_raw: Vec<String>,
}

/// Parse the store's fixed-width instant `YYYY-MM-DDTHH:MM:SS.ffffffZ` into µs since the epoch;
/// None when it is not in that form (the document is then treated as undated, SPEC §2.4).
pub fn parse_instant_us(raw: &str) -> Option<i64> {
    let b = raw.as_bytes();
    if b.len() != 27
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'.'
        || b[26] != b'Z'
    {
        return None;
    }
    let day = trust::parse_day_start_us(&raw[..10])?;
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        b[r].iter().try_fold(0i64, |acc, c| {
            c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
        })
    };
    let (h, m, s, us) = (num(11..13)?, num(14..16)?, num(17..19)?, num(20..26)?);
    if h > 23 || m > 59 || s > 60 {
        return None;
    }
    Some(day + ((h * 60 + m) * 60 + s) * 1_000_000 + us)
}

/// The in-memory lexical index and the files it changed that the store has not saved yet.
pub(crate) struct Lexical {
    pub(crate) index: LexicalIndex,
    /// Generation of the store state the index reflects.
    generation: i64,
    /// name -> bytes (None = deleted), merged across commits until saved.
    unsaved: std::collections::BTreeMap<String, Option<Vec<u8>>>,
    /// Rebuilt from the chunks: the saved files are replaced wholesale.
    rebuilt: bool,
}

pub struct Store {
    pub(crate) conn: Connection,
    path: String,
    in_write: bool,
    pub(crate) cache: Option<SearchCache>,
    pub(crate) lexical: Option<Lexical>,
}

fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked)
    )
}

impl Store {
    /// Open (creating if missing) the store at `path` and migrate it forward.
    pub fn open(path: &str) -> Result<Store> {
        register_sqlite_vec();
        if let Some(parent) = Path::new(path).parent() {
            if !parent.as_os_str().is_empty() && !parent.is_dir() {
                return Err(CoreError::Usage(format!(
                    "cannot create {path}: folder {} does not exist",
                    parent.display()
                )));
            }
        }
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        // WAL: readers never block on the writer; NORMAL keeps committed data across a killed
        // process (only a power loss can drop the last commit).
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") && !mode.eq_ignore_ascii_case("memory") {
            return Err(CoreError::Usage(format!(
                "cannot switch {path} to WAL mode (got '{mode}')"
            )));
        }
        conn.execute_batch("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")?;
        let mut store = Store {
            conn,
            path: path.to_string(),
            in_write: false,
            cache: None,
            lexical: None,
        };
        store.migrate()?;
        Ok(store)
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    fn busy(&self, err: rusqlite::Error) -> CoreError {
        if is_busy(&err) {
            CoreError::Locked {
                path: self.path.clone(),
            }
        } else {
            err.into()
        }
    }

    fn migrate(&mut self) -> Result<()> {
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
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| self.busy(e))?;
        let result = (|| -> Result<()> {
            // Re-read under the write lock: another process may have migrated meanwhile.
            let now: i64 = self
                .conn
                .query_row("PRAGMA user_version", [], |r| r.get(0))?;
            for (version, sql) in MIGRATIONS.iter().enumerate().skip(now as usize) {
                self.conn.execute_batch(sql)?;
                self.conn
                    .pragma_update(None, "user_version", (version + 1) as i64)?;
            }
            Ok(())
        })();
        match result {
            Ok(()) => self.conn.execute_batch("COMMIT").map_err(|e| self.busy(e)),
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    pub fn schema_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    pub fn meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?1, ?2)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    }

    pub fn embedder(&self) -> Result<Option<EmbedderInfo>> {
        let (Some(name), Some(dim), Some(fingerprint)) = (
            self.meta("embedder_name")?,
            self.meta("embedder_dim")?,
            self.meta("embedder_fingerprint")?,
        ) else {
            return Ok(None);
        };
        let dim = dim.parse::<usize>().map_err(|_| {
            CoreError::Usage(format!(
                "{}: stored embedder dimension '{dim}' is not a number",
                self.path
            ))
        })?;
        Ok(Some(EmbedderInfo {
            name,
            dim,
            fingerprint,
        }))
    }

    /// Start the write transaction of an index run, binding the store to `embedder` on first use.
    /// A store bound to another embedder refuses (SPEC §3 lineage).
    pub fn begin(&mut self, embedder: &EmbedderInfo) -> Result<()> {
        if self.in_write {
            return Err(CoreError::Usage(
                "a write is already open on this store".into(),
            ));
        }
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| self.busy(e))?;
        self.in_write = true;
        let bound = (|| -> Result<()> {
            // SPEC §11: a write starts from the committed lexical state of the generation it
            // writes on top of. Another handle or process may have committed since this one
            // loaded its index; under the write lock the generation can no longer move.
            let committed = self.generation()?;
            if self
                .lexical
                .as_ref()
                .is_some_and(|l| l.generation != committed)
            {
                self.lexical = None;
            }
            match self.embedder()? {
                Some(stored)
                    if stored.name != embedder.name
                        || stored.dim != embedder.dim
                        || stored.fingerprint != embedder.fingerprint =>
                {
                    Err(CoreError::EmbedderMismatch {
                        path: self.path.clone(),
                        stored: stored.name,
                        requested: embedder.name.clone(),
                    })
                }
                Some(_) => Ok(()),
                None => {
                    self.set_meta("embedder_name", &embedder.name)?;
                    self.set_meta("embedder_dim", &embedder.dim.to_string())?;
                    self.set_meta("embedder_fingerprint", &embedder.fingerprint)?;
                    self.conn.execute_batch(&format!(
                        "CREATE VIRTUAL TABLE IF NOT EXISTS {VEC_TABLE} USING vec0(
                             chunk_id INTEGER PRIMARY KEY,
                             embedding float[{}] distance_metric=cosine)",
                        embedder.dim
                    ))?;
                    Ok(())
                }
            }
        })();
        if bound.is_err() {
            self.rollback();
        }
        bound
    }

    fn require_write(&self) -> Result<()> {
        if self.in_write {
            Ok(())
        } else {
            Err(CoreError::Usage(
                "no write is open: call begin() first".into(),
            ))
        }
    }

    /// (path, content_hash) of every document indexed under `source`.
    pub fn known_documents(&self, source: &str) -> Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT path, content_hash FROM documents WHERE source = ?1")?;
        let rows = stmt.query_map([source], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Ids of a document's chunks.
    fn chunk_ids_of(&self, doc_id: i64) -> Result<Vec<i64>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id FROM chunks WHERE doc_id = ?1")?;
        let ids = stmt.query_map([doc_id], |r| r.get(0))?;
        Ok(ids.collect::<std::result::Result<_, _>>()?)
    }

    /// Delete a document's chunks, vectors, lexical entries and edges; returns the chunk count.
    fn delete_chunks_of(&mut self, doc_id: i64) -> Result<usize> {
        let ids = self.chunk_ids_of(doc_id)?;
        let lexical = self.lexical_mut()?;
        for &id in &ids {
            lexical.index.delete(id)?;
        }
        self.conn.execute(
            &format!(
                "DELETE FROM {VEC_TABLE} WHERE chunk_id IN (SELECT id FROM chunks WHERE doc_id = ?1)"
            ),
            [doc_id],
        )?;
        self.conn
            .execute("DELETE FROM chunks WHERE doc_id = ?1", [doc_id])?;
        self.conn
            .execute("DELETE FROM edges WHERE doc_id = ?1", [doc_id])?;
        Ok(ids.len())
    }

    /// SPEC §7 calibration staleness: a running count of chunks added, changed or removed.
    fn add_churn(&self, chunks: usize) -> Result<()> {
        let churn = self
            .meta("chunk_churn")?
            .and_then(|c| c.parse::<i64>().ok())
            .unwrap_or(0);
        self.set_meta("chunk_churn", &(churn + chunks as i64).to_string())
    }

    /// Insert or replace one document with its chunks, vectors and edges. A replaced document
    /// keeps its `first_indexed_at` (SPEC §2.4).
    pub fn put_document(&mut self, doc: &NewDocument, now: &str) -> Result<()> {
        self.require_write()?;
        self.lexical_mut()?;
        let dim = self
            .embedder()?
            .ok_or_else(|| CoreError::Usage("store has no embedder bound".into()))?
            .dim;
        if doc.vectors.len() != doc.chunks.len() * dim {
            return Err(CoreError::Usage(format!(
                "{}: {} chunks need {} vector components, got {}",
                doc.path,
                doc.chunks.len(),
                doc.chunks.len() * dim,
                doc.vectors.len()
            )));
        }
        let existing: Option<i64> = self
            .conn
            .query_row(
                "SELECT id FROM documents WHERE source = ?1 AND path = ?2",
                params![doc.source, doc.path],
                |r| r.get(0),
            )
            .optional()?;
        let replaced = match existing {
            Some(id) => self.delete_chunks_of(id)?,
            None => 0,
        };
        // An edited chunk counts once: max(old, new), not old + new.
        self.add_churn(replaced.max(doc.chunks.len()))?;
        // SPEC §2.4: an upsert that never touches first_indexed_at of an existing row.
        let doc_id: i64 = self.conn.query_row(
            "INSERT INTO documents(source, path, key, title, content_hash, size_bytes,
                 first_indexed_at, indexed_at, valid_from_raw, valid_until_raw,
                 valid_from, valid_until, metadata_error, frontmatter)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
             ON CONFLICT(source, path) DO UPDATE SET
                 key = excluded.key, title = excluded.title,
                 content_hash = excluded.content_hash, size_bytes = excluded.size_bytes,
                 indexed_at = excluded.indexed_at, valid_from_raw = excluded.valid_from_raw,
                 valid_until_raw = excluded.valid_until_raw, valid_from = excluded.valid_from,
                 valid_until = excluded.valid_until, metadata_error = excluded.metadata_error,
                 frontmatter = excluded.frontmatter
             RETURNING id",
            params![
                doc.source,
                doc.path,
                doc.key,
                doc.title,
                doc.content_hash,
                doc.size_bytes,
                now,
                doc.valid_from_raw,
                doc.valid_until_raw,
                doc.valid_from,
                doc.valid_until,
                doc.metadata_error,
                doc.frontmatter
            ],
            |r| r.get(0),
        )?;
        let mut chunk_stmt = self.conn.prepare_cached(
            "INSERT INTO chunks(doc_id, ordinal, text, byte_start, byte_end, line_start, line_end,
                 heading_path) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        let mut vec_stmt = self.conn.prepare_cached(&format!(
            "INSERT INTO {VEC_TABLE}(chunk_id, embedding) VALUES (?1, ?2)"
        ))?;
        for (chunk, vector) in doc.chunks.iter().zip(doc.vectors.chunks_exact(dim.max(1))) {
            chunk_stmt.execute(params![
                doc_id,
                chunk.ordinal,
                chunk.text,
                chunk.byte_start,
                chunk.byte_end,
                chunk.line_start,
                chunk.line_end,
                chunk.heading_path
            ])?;
            let chunk_id = self.conn.last_insert_rowid();
            vec_stmt.execute(params![chunk_id, f32_blob(vector)])?;
            let body = lexical_body(&doc.title, &chunk.heading_path, &chunk.text);
            self.lexical
                .as_mut()
                .expect("loaded before the chunks are written")
                .index
                .add(chunk_id, &body)?;
        }
        let mut edge_stmt = self
            .conn
            .prepare_cached("INSERT INTO edges(doc_id, raw_ref, key) VALUES (?1, ?2, ?3)")?;
        for (raw, key) in &doc.edges {
            edge_stmt.execute(params![doc_id, raw, key])?;
        }
        Ok(())
    }

    /// Remove documents (with their chunks, vectors and edges) by path under `source`.
    pub fn remove_documents(&mut self, source: &str, paths: &[String]) -> Result<usize> {
        self.require_write()?;
        let mut removed = 0;
        for path in paths {
            let id: Option<i64> = self
                .conn
                .query_row(
                    "SELECT id FROM documents WHERE source = ?1 AND path = ?2",
                    params![source, path],
                    |r| r.get(0),
                )
                .optional()?;
            if let Some(id) = id {
                let chunks = self.delete_chunks_of(id)?;
                self.add_churn(chunks)?;
                removed += self
                    .conn
                    .execute("DELETE FROM documents WHERE id = ?1", [id])?;
            }
        }
        Ok(removed)
    }

    /// Commit the index run: bump the generation and record the run clock. Returns the new
    /// generation.
    pub fn commit(&mut self, now: &str) -> Result<i64> {
        self.require_write()?;
        let previous = self.generation()?;
        let generation = previous + 1;
        self.set_meta("generation", &generation.to_string())?;
        self.set_meta("last_run_at", now)?;
        // SPEC §5.4 freshness, kept here so that a search reads two meta rows, not the table.
        let (documents, newest) = self.document_summary()?;
        self.set_meta("documents", &documents.to_string())?;
        self.set_meta("newest_indexed_at", newest.as_deref().unwrap_or(""))?;
        // SPEC §1: the lexical index moves with the chunks, in this transaction.
        let lexical_current = self
            .meta("lexical_generation")?
            .and_then(|g| g.parse().ok())
            == Some(previous);
        if self.lexical.is_none() && !lexical_current {
            // Missing or older than the store (e.g. migrated from schema 1): rebuild from the
            // chunks now, while the write lock is held, so the file is whole again.
            self.lexical_mut()?;
        }
        if self.lexical.is_some() {
            self.save_lexical()?;
            self.set_meta("lexical_generation", &generation.to_string())?;
        } else if lexical_current {
            // No chunk changed in this run (the index was never loaded): still current.
            self.set_meta("lexical_generation", &generation.to_string())?;
        }
        if let Err(e) = self.conn.execute_batch("COMMIT") {
            self.rollback();
            return Err(self.busy(e));
        }
        self.in_write = false;
        if let Some(lexical) = self.lexical.as_mut() {
            lexical.generation = generation;
        }
        // Fold the WAL back into the main file so that copying the `.db` alone copies the whole
        // memory (SPEC §1). Best effort: with readers active the checkpoint may stop early; the
        // data is committed either way.
        let _ = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        Ok(generation)
    }

    /// Abandon the open write, if any. Never fails: a failed rollback leaves SQLite to roll back
    /// on close.
    pub fn rollback(&mut self) {
        if self.in_write {
            let _ = self.conn.execute_batch("ROLLBACK");
            self.in_write = false;
            // The in-memory lexical index holds the abandoned changes: reload it when needed.
            self.lexical = None;
        }
    }

    /// The lexical index for the committed state, loaded from the store or rebuilt from the
    /// chunks when the saved files are missing or older than the store (SPEC §1).
    pub(crate) fn lexical_mut(&mut self) -> Result<&mut Lexical> {
        let generation = self.generation()?;
        if self
            .lexical
            .as_ref()
            .is_some_and(|l| l.generation != generation)
            && !self.in_write
        {
            self.lexical = None; // another process committed since
        }
        if self.lexical.is_none() {
            let saved = self
                .meta("lexical_generation")?
                .and_then(|g| g.parse::<i64>().ok());
            let lexical = if saved == Some(generation) {
                let mut stmt = self.conn.prepare("SELECT name, data FROM lexical_files")?;
                let files = stmt
                    .query_map([], |r| {
                        Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
                    })?
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                Lexical {
                    index: LexicalIndex::open(files)?,
                    generation,
                    unsaved: Default::default(),
                    rebuilt: false,
                }
            } else {
                self.rebuild_lexical(generation)?
            };
            self.lexical = Some(lexical);
        }
        Ok(self.lexical.as_mut().expect("set above"))
    }

    fn rebuild_lexical(&self, generation: i64) -> Result<Lexical> {
        let mut index = LexicalIndex::open(Vec::new())?;
        let mut stmt = self.conn.prepare(
            "SELECT c.id, d.title, c.heading_path, c.text FROM chunks c
             JOIN documents d ON d.id = c.doc_id ORDER BY c.id",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let title: String = r.get(1).unwrap_or_default();
            let headings: String = r.get(2).unwrap_or_default();
            let text: String = r.get(3).unwrap_or_default();
            index.add(r.get(0)?, &lexical_body(&title, &headings, &text))?;
        }
        let (written, deleted) = index.commit()?;
        let mut unsaved: std::collections::BTreeMap<String, Option<Vec<u8>>> =
            written.into_iter().map(|(n, b)| (n, Some(b))).collect();
        unsaved.extend(deleted.into_iter().map(|n| (n, None)));
        Ok(Lexical {
            index,
            generation,
            unsaved,
            rebuilt: true,
        })
    }

    /// Commit the lexical index in memory and write its changed files into the open
    /// transaction.
    fn save_lexical(&mut self) -> Result<()> {
        let lexical = self.lexical.as_mut().expect("caller checked");
        let (written, deleted) = lexical.index.commit()?;
        lexical
            .unsaved
            .extend(written.into_iter().map(|(n, b)| (n, Some(b))));
        lexical
            .unsaved
            .extend(deleted.into_iter().map(|n| (n, None)));
        let rebuilt = std::mem::take(&mut lexical.rebuilt);
        let unsaved = std::mem::take(&mut lexical.unsaved);
        if rebuilt {
            self.conn.execute("DELETE FROM lexical_files", [])?;
        }
        let mut put = self
            .conn
            .prepare_cached("INSERT OR REPLACE INTO lexical_files(name, data) VALUES (?1, ?2)")?;
        let mut del = self
            .conn
            .prepare_cached("DELETE FROM lexical_files WHERE name = ?1")?;
        for (name, data) in unsaved {
            match data {
                Some(bytes) => put.execute(params![name, bytes])?,
                None => del.execute([name])?,
            };
        }
        Ok(())
    }

    /// Write one metadata value in its own transaction (calibration records and the like).
    pub fn set_meta_value(&mut self, key: &str, value: &str) -> Result<()> {
        if self.in_write {
            return self.set_meta(key, value);
        }
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| self.busy(e))?;
        let r = self.set_meta(key, value);
        match r {
            Ok(()) => self.conn.execute_batch("COMMIT").map_err(|e| self.busy(e)),
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    pub fn generation(&self) -> Result<i64> {
        Ok(self
            .meta("generation")?
            .and_then(|g| g.parse().ok())
            .unwrap_or(0))
    }

    /// (Re)load the search cache when the committed generation moved (another process may have
    /// indexed since). Returns whether a load happened.
    pub(crate) fn ensure_cache(&mut self) -> Result<bool> {
        let generation = self.generation()?;
        if self
            .cache
            .as_ref()
            .is_some_and(|c| c.generation == generation)
        {
            return Ok(false);
        }
        self.cache = None;
        // SPEC §1: one read transaction, so documents, edges and vectors are one generation's
        // snapshot even while another process commits.
        let own = !self.in_write;
        if own {
            self.conn.execute_batch("BEGIN")?;
        }
        let loaded = self.load_cache();
        if own {
            // Read-only: ending it cannot lose anything.
            let _ = self.conn.execute_batch("COMMIT");
        }
        self.cache = Some(loaded?);
        Ok(true)
    }

    fn load_cache(&self) -> Result<SearchCache> {
        let generation = self.generation()?;
        let dim = self.embedder()?.map(|e| e.dim).unwrap_or(0);
        let mut doc_ids = Vec::new();
        let mut nodes = Vec::new();
        let mut windows = Vec::new();
        let mut locations = Vec::new();
        let mut index_of = std::collections::HashMap::new();
        {
            let mut stmt = self.conn.prepare(
                "SELECT id, key, path, first_indexed_at, valid_from_raw, valid_until_raw,
                        metadata_error, source FROM documents ORDER BY id",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let id: i64 = r.get(0)?;
                index_of.insert(id, doc_ids.len());
                doc_ids.push(id);
                // SPEC §2.5: hand-written garbage never crashes a search; unreadable text
                // fields fail closed as invalid metadata.
                let first: Option<String> = r.get(3).ok().flatten();
                let from = r.get::<_, Option<String>>(4);
                let until = r.get::<_, Option<String>>(5);
                let err = r.get::<_, Option<String>>(6);
                let broken = from.is_err() || until.is_err() || err.is_err();
                locations.push((
                    r.get::<_, String>(7).unwrap_or_default(),
                    r.get::<_, String>(2).unwrap_or_default(),
                ));
                nodes.push(Node {
                    key: r.get::<_, String>(1).unwrap_or_default(),
                    path: r.get::<_, String>(2).unwrap_or_default(),
                    first_indexed_us: first.as_deref().and_then(parse_instant_us),
                });
                windows.push(Window {
                    valid_from_raw: from.ok().flatten(),
                    valid_until_raw: until.ok().flatten(),
                    metadata_error: broken || err.ok().flatten().is_some(),
                });
            }
        }
        let mut edges = Vec::new();
        let mut edge_raw = Vec::new();
        {
            let mut stmt = self
                .conn
                .prepare("SELECT doc_id, key, raw_ref FROM edges ORDER BY id")?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let doc_id: i64 = r.get(0)?;
                if let (Some(&d), Ok(key)) = (index_of.get(&doc_id), r.get::<_, String>(1)) {
                    edges.push((d, key));
                    edge_raw.push(r.get::<_, String>(2).unwrap_or_default());
                }
            }
        }
        let mut dense = DenseIndex::new(dim);
        let mut row_chunk = Vec::new();
        let mut row_doc = Vec::new();
        let mut doc_rows = vec![Vec::new(); doc_ids.len()];
        if dim > 0 {
            let mut buf = vec![0f32; dim];
            self.for_each_vector(dim, |chunk_id, doc_id, blob| {
                let Some(&d) = index_of.get(&doc_id) else {
                    return;
                };
                for (x, b) in buf.iter_mut().zip(blob.chunks_exact(4)) {
                    *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }
                doc_rows[d].push(row_chunk.len());
                dense.push(&buf);
                row_chunk.push(chunk_id);
                row_doc.push(d);
            })?;
        }
        Ok(SearchCache {
            generation,
            dense,
            chunk_row: row_chunk
                .iter()
                .enumerate()
                .map(|(row, &c)| (c, row))
                .collect(),
            row_chunk,
            row_doc,
            doc_rows,
            doc_ids,
            graph: Graph::build(nodes, &edges),
            windows,
            locations,
            edge_raw,
        })
    }

    /// Visit every stored vector as (chunk id, document id, `dim` float32 bytes) in chunk-id
    /// order. Vectors that are not float32 blobs of the store's dimension (hand-edited) are left
    /// out rather than failing the search.
    fn for_each_vector(&self, dim: usize, mut visit: impl FnMut(i64, i64, &[u8])) -> Result<()> {
        if let Ok(()) = self.for_each_vector_shadow(dim, &mut visit) {
            return Ok(());
        }
        let mut stmt = self.conn.prepare(&format!(
            "SELECT v.chunk_id, v.embedding, c.doc_id FROM {VEC_TABLE} v
             JOIN chunks c ON c.id = v.chunk_id ORDER BY v.chunk_id"
        ))?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let Ok(blob) = r.get_ref(1)?.as_blob() else {
                continue;
            };
            if blob.len() == dim * 4 {
                visit(r.get(0)?, r.get(2)?, blob);
            }
        }
        Ok(())
    }

    /// The fast path of `for_each_vector`: read sqlite-vec's own storage (blocks of vectors
    /// in `{VEC_TABLE}_vector_chunks00`, positions in `{VEC_TABLE}_rowids`) instead of going
    /// through the virtual table row by row, ~10x faster at 100k rows. Everything is validated
    /// before the first visit; any surprise (another layout) returns Err and the caller falls
    /// back to the virtual table, so this is an optimisation, never a second source of truth.
    fn for_each_vector_shadow(
        &self,
        dim: usize,
        visit: &mut impl FnMut(i64, i64, &[u8]),
    ) -> Result<()> {
        let unexpected = || CoreError::Usage("unexpected sqlite-vec storage layout".into());
        let mut blocks: std::collections::HashMap<i64, Vec<u8>> = std::collections::HashMap::new();
        {
            let mut stmt = self.conn.prepare(&format!(
                "SELECT rowid, vectors FROM \"{VEC_TABLE}_vector_chunks00\""
            ))?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let id: i64 = r.get(0)?;
                let blob = r.get_ref(1)?.as_blob().map_err(|_| unexpected())?;
                blocks.insert(id, blob.to_vec());
            }
        }
        let mut slots: Vec<(i64, i64, i64, usize)> = Vec::new();
        {
            let mut stmt = self.conn.prepare(&format!(
                "SELECT r.rowid, c.doc_id, r.chunk_id, r.chunk_offset FROM \"{VEC_TABLE}_rowids\" r
                 JOIN chunks c ON c.id = r.rowid ORDER BY r.rowid"
            ))?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let offset: i64 = r.get(3)?;
                let block: i64 = r.get(2)?;
                let start = usize::try_from(offset).map_err(|_| unexpected())? * dim * 4;
                match blocks.get(&block) {
                    Some(b) if start + dim * 4 <= b.len() => {}
                    _ => return Err(unexpected()),
                }
                slots.push((r.get(0)?, r.get(1)?, block, start));
            }
        }
        let live: i64 =
            self.conn
                .query_row(&format!("SELECT count(*) FROM {VEC_TABLE}"), [], |r| {
                    r.get(0)
                })?;
        if live != slots.len() as i64 {
            return Err(unexpected());
        }
        for (chunk_id, doc_id, block, start) in slots {
            visit(chunk_id, doc_id, &blocks[&block][start..start + dim * 4]);
        }
        Ok(())
    }

    /// What every search needs to know about the store, without the full `stats` scan:
    /// (documents, newest `indexed_at`, last run, chunk churn).
    pub fn freshness(&self) -> Result<(i64, Option<String>, Option<String>, i64)> {
        // Kept in `meta` by every commit; a store last written before that counts once.
        let documents = self.meta("documents")?.and_then(|d| d.parse::<i64>().ok());
        let (documents, newest) = match documents {
            Some(n) => (n, self.meta("newest_indexed_at")?.filter(|t| !t.is_empty())),
            None => self.document_summary()?,
        };
        let churn = self
            .meta("chunk_churn")?
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        Ok((documents, newest, self.meta("last_run_at")?, churn))
    }

    /// (documents, newest indexed_at): a scan of the documents table.
    fn document_summary(&self) -> Result<(i64, Option<String>)> {
        Ok(self
            .conn
            .query_row("SELECT count(*), max(indexed_at) FROM documents", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?)
    }

    pub fn stats(&self) -> Result<Stats> {
        let count = |sql: &str| -> Result<i64> { Ok(self.conn.query_row(sql, [], |r| r.get(0))?) };
        let embedder = self.embedder()?;
        let vectors = if embedder.is_some() {
            count(&format!("SELECT count(*) FROM {VEC_TABLE}"))?
        } else {
            0
        };
        // Each edge resolves against every document's key (SPEC §2.3): none = dangling, only the
        // declaring document = self-reference, exactly one other = resolved, two or more =
        // ambiguous.
        let (resolved, dangling, ambiguous, selfref) = self.conn.query_row(
            "SELECT
                 coalesce(sum(n = 1 AND own = 0), 0),
                 coalesce(sum(n = 0), 0),
                 coalesce(sum(n >= 2), 0),
                 coalesce(sum(n = 1 AND own = 1), 0)
             FROM (SELECT (SELECT count(*) FROM documents d WHERE d.key = e.key) AS n,
                          (SELECT count(*) FROM documents d WHERE d.key = e.key AND d.id = e.doc_id) AS own
                   FROM edges e)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )?;
        let page_size = count("PRAGMA page_size")?;
        let page_count = count("PRAGMA page_count")?;
        let wal_size = std::fs::metadata(format!("{}-wal", self.path))
            .map(|m| m.len())
            .unwrap_or(0);
        Ok(Stats {
            schema_version: self.schema_version()?,
            generation: self
                .meta("generation")?
                .and_then(|g| g.parse().ok())
                .unwrap_or(0),
            documents: count("SELECT count(*) FROM documents")?,
            chunks: count("SELECT count(*) FROM chunks")?,
            vectors,
            embedder,
            newest_indexed_at: self.conn.query_row(
                "SELECT max(indexed_at) FROM documents",
                [],
                |r| r.get(0),
            )?,
            last_run_at: self.meta("last_run_at")?,
            file_size_bytes: page_size * page_count + wal_size as i64,
            edges_resolved: resolved,
            edges_dangling: dangling,
            edges_ambiguous: ambiguous,
            edges_self: selfref,
            chunk_churn: self
                .meta("chunk_churn")?
                .and_then(|c| c.parse().ok())
                .unwrap_or(0),
            metadata_errors: count(
                "SELECT count(*) FROM documents WHERE metadata_error IS NOT NULL",
            )?,
        })
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.rollback();
    }
}

/// What the lexical leg indexes for a chunk: its text under its title and heading path (SPEC §4).
pub(crate) fn lexical_body(title: &str, heading_path: &str, text: &str) -> String {
    format!("{title}\n{heading_path}\n{text}")
}

/// Little-endian f32 bytes, the vector format sqlite-vec reads.
pub fn f32_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn embedder(dim: usize) -> EmbedderInfo {
        EmbedderInfo {
            name: format!("hashing-{dim}"),
            dim,
            fingerprint: "fp".into(),
        }
    }

    fn doc(path: &str, n_chunks: usize, dim: usize) -> NewDocument {
        NewDocument {
            source: "/corpus".into(),
            path: path.into(),
            key: path.trim_end_matches(".md").into(),
            title: path.into(),
            content_hash: format!("hash-{path}"),
            size_bytes: 10,
            valid_from_raw: None,
            valid_until_raw: None,
            valid_from: None,
            valid_until: None,
            metadata_error: None,
            frontmatter: "{}".into(),
            chunks: (0..n_chunks)
                .map(|i| NewChunk {
                    ordinal: i as i64,
                    text: format!("chunk {i}"),
                    byte_start: 0,
                    byte_end: 7,
                    line_start: 1,
                    line_end: 1,
                    heading_path: String::new(),
                })
                .collect(),
            vectors: (0..n_chunks * dim).map(|i| (i % 7) as f32 + 1.0).collect(),
            edges: vec![("[[b]]".into(), "b".into())],
        }
    }

    fn temp_db(name: &str) -> String {
        let dir =
            std::env::temp_dir().join(format!("recall-store-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("memory.db").to_string_lossy().into_owned()
    }

    #[test]
    fn write_replace_remove_keeps_first_indexed_at() {
        let path = temp_db("replace");
        let mut store = Store::open(&path).unwrap();
        store.begin(&embedder(4)).unwrap();
        store
            .put_document(&doc("a.md", 2, 4), "2026-01-01T00:00:00.000000Z")
            .unwrap();
        store
            .put_document(&doc("b.md", 1, 4), "2026-01-01T00:00:00.000000Z")
            .unwrap();
        assert_eq!(store.commit("2026-01-01T00:00:00.000000Z").unwrap(), 1);

        store.begin(&embedder(4)).unwrap();
        store
            .put_document(&doc("a.md", 3, 4), "2026-02-01T00:00:00.000000Z")
            .unwrap();
        store.commit("2026-02-01T00:00:00.000000Z").unwrap();
        let (first, last): (String, String) = store
            .conn
            .query_row(
                "SELECT first_indexed_at, indexed_at FROM documents WHERE path='a.md'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(first, "2026-01-01T00:00:00.000000Z");
        assert_eq!(last, "2026-02-01T00:00:00.000000Z");
        let stats = store.stats().unwrap();
        assert_eq!((stats.documents, stats.chunks, stats.vectors), (2, 4, 4));
        // a -> b resolves; b -> b is a self-reference.
        assert_eq!((stats.edges_resolved, stats.edges_self), (1, 1));

        store.begin(&embedder(4)).unwrap();
        assert_eq!(
            store.remove_documents("/corpus", &["a.md".into()]).unwrap(),
            1
        );
        store.commit("2026-03-01T00:00:00.000000Z").unwrap();
        let stats = store.stats().unwrap();
        assert_eq!(
            (
                stats.documents,
                stats.chunks,
                stats.vectors,
                stats.generation
            ),
            (1, 1, 1, 3)
        );
        assert_eq!(stats.edges_self, 1);
    }

    #[test]
    fn rollback_leaves_previous_state() {
        let path = temp_db("rollback");
        let mut store = Store::open(&path).unwrap();
        store.begin(&embedder(4)).unwrap();
        store.put_document(&doc("a.md", 1, 4), "t0").unwrap();
        store.commit("t0").unwrap();
        store.begin(&embedder(4)).unwrap();
        store.put_document(&doc("b.md", 1, 4), "t1").unwrap();
        store.rollback();
        drop(store);
        let store = Store::open(&path).unwrap();
        assert_eq!(store.stats().unwrap().documents, 1);
    }

    #[test]
    fn other_embedder_is_refused() {
        let path = temp_db("lineage");
        let mut store = Store::open(&path).unwrap();
        store.begin(&embedder(4)).unwrap();
        store.commit("t0").unwrap();
        let err = store.begin(&embedder(8)).unwrap_err();
        assert!(matches!(err, CoreError::EmbedderMismatch { .. }), "{err}");
        // The refused begin left no write open.
        store.begin(&embedder(4)).unwrap();
        store.rollback();
    }

    #[test]
    fn wrong_vector_length_is_a_usage_error() {
        let path = temp_db("veclen");
        let mut store = Store::open(&path).unwrap();
        store.begin(&embedder(4)).unwrap();
        let mut d = doc("a.md", 2, 4);
        d.vectors.pop();
        assert!(matches!(
            store.put_document(&d, "t").unwrap_err(),
            CoreError::Usage(_)
        ));
    }

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

    #[test]
    fn vec0_knn_sees_stored_vectors() {
        let path = temp_db("knn");
        let mut store = Store::open(&path).unwrap();
        store.begin(&embedder(4)).unwrap();
        store.put_document(&doc("a.md", 3, 4), "t").unwrap();
        store.commit("t").unwrap();
        let query = f32_blob(&[1.0, 2.0, 3.0, 4.0]);
        let ids: Vec<i64> = store
            .conn
            .prepare("SELECT chunk_id FROM vec_chunks WHERE embedding MATCH ?1 AND k = 2")
            .unwrap()
            .query_map([query], |r| r.get(0))
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        assert_eq!(ids.len(), 2);
    }
}
