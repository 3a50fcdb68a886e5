//! The write path of an index run (SPEC §1: one transaction per run).
//!
//! Owns: binding the store to its embedder, putting and removing documents with their chunks,
//! vectors and edges, the run's meta writes, commit and rollback. Does not own:
//! the lexical index's files (lexical_files.rs), the schema (schema.rs) or any read path.

use rusqlite::{params, OptionalExtension};

use crate::errors::{CoreError, Result};
use crate::judgment::Edge;
use crate::row_code::code_bytes;

use super::{f32_blob, lexical_body, EmbedderInfo, Store, VEC_TABLE};

/// What an index run knows of a stored document: (path, content hash, size, mtime ns, chunks).
pub type KnownDocument = (String, String, i64, Option<i64>, i64);

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
    /// The file's modification time (ns) when it was read; None when it cannot be trusted.
    pub mtime_ns: Option<i64>,
    pub valid_from_raw: Option<String>,
    pub valid_until_raw: Option<String>,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub metadata_error: Option<String>,
    pub frontmatter: String,
    pub chunks: Vec<NewChunk>,
    pub vectors: Vec<f32>,
    pub declarations: Declarations,
}

/// A terminal state a document declares (withdrawn, rejected, deprecated, superseded).
#[derive(Debug, Clone, Default)]
pub struct NewRetirement {
    pub state: String,
    /// `YYYY-MM-DD` of the state change; None: it holds at every instant.
    pub since: Option<String>,
    pub vocabulary: String,
    pub line: Option<i64>,
    pub statement: String,
    pub overridden: bool,
}

/// What a document declares besides its window: edges, alias and retirement.
#[derive(Debug, Clone, Default)]
pub struct Declarations {
    pub edges: Vec<Edge>,
    pub alias: Option<String>,
    pub retired: Option<NewRetirement>,
}

impl Store {
    /// Start the write transaction of an index run, binding the store to `embedder` on first use.
    /// A store bound to another embedder refuses (SPEC §3 lineage).
    pub fn begin(&mut self, embedder: &EmbedderInfo) -> Result<()> {
        self.require_writable()?;
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
                    // vectors.rs reads this table's storage directly only while it is declared
                    // exactly so (`declared_as_written`).
                    self.conn
                        .execute_batch(&super::vectors::declaration(embedder.dim))?;
                    Ok(())
                }
            }
        })();
        if bound.is_err() {
            self.rollback();
        }
        bound
    }

    pub(super) fn require_write(&self) -> Result<()> {
        if self.in_write {
            Ok(())
        } else {
            Err(CoreError::Usage(
                "no write is open: call begin() first".into(),
            ))
        }
    }

    /// (path, content_hash, size_bytes, mtime_ns) of every document indexed under `source`.
    pub fn known_documents(&self, source: &str) -> Result<Vec<KnownDocument>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT path, content_hash, size_bytes, mtime_ns,
                    (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id)
             FROM documents d WHERE source = ?1",
        )?;
        let rows = stmt.query_map([source], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3).ok().flatten(),
                r.get(4)?,
            ))
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// The id of the document at `path` under `source`, if it is stored.
    fn document_id(&self, source: &str, path: &str) -> Result<Option<i64>> {
        Ok(self
            .conn
            .prepare_cached("SELECT id FROM documents WHERE source = ?1 AND path = ?2")?
            .query_row(params![source, path], |r| r.get(0))
            .optional()?)
    }

    /// Ids of a document's chunks.
    fn chunk_ids_of(&self, doc_id: i64) -> Result<Vec<i64>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id FROM chunks WHERE doc_id = ?1")?;
        let ids = stmt.query_map([doc_id], |r| r.get(0))?;
        Ok(ids.collect::<std::result::Result<_, _>>()?)
    }

    /// Delete a document's chunks, vectors, lexical entries and edges.
    fn delete_chunks_of(&mut self, doc_id: i64) -> Result<()> {
        let ids = self.chunk_ids_of(doc_id)?;
        let lexical = self.lexical_mut()?;
        for &id in &ids {
            lexical.index.delete(id)?;
        }
        // One point delete per vector: sqlite-vec answers `chunk_id IN (SELECT …)` with a scan
        // of the whole table, which made an update cost what the store holds.
        let mut vec_stmt = self
            .conn
            .prepare_cached(&format!("DELETE FROM {VEC_TABLE} WHERE chunk_id = ?1"))?;
        let mut code_stmt = self
            .conn
            .prepare_cached("DELETE FROM vector_codes WHERE chunk_id = ?1")?;
        for &id in &ids {
            vec_stmt.execute([id])?;
            code_stmt.execute([id])?;
        }
        self.conn
            .prepare_cached("DELETE FROM chunks WHERE doc_id = ?1")?
            .execute([doc_id])?;
        self.conn
            .prepare_cached("DELETE FROM edges WHERE doc_id = ?1")?
            .execute([doc_id])?;
        Ok(())
    }

    /// Insert or replace one document with its chunks, vectors and edges. A replaced document
    /// keeps its `first_indexed_at` (SPEC §2.4).
    pub fn put_document(&mut self, doc: &NewDocument, now: &str) -> Result<()> {
        self.put_document_as(doc, now, None)
    }

    /// `put_document`, a new document taking `first_indexed_at` when given (a memory moved
    /// from another store, or a note brought back after `forget --undo`, keeps its first
    /// indexing time; an existing row still keeps its own).
    pub fn put_document_as(
        &mut self,
        doc: &NewDocument,
        now: &str,
        first_indexed_at: Option<&str>,
    ) -> Result<()> {
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
        let existing = self.document_id(&doc.source, &doc.path)?;
        if let Some(id) = existing {
            self.delete_chunks_of(id)?;
        }
        let first_indexed_at = first_indexed_at.unwrap_or(now);
        // SPEC §2.4: an upsert that never touches first_indexed_at of an existing row.
        let doc_id: i64 = self.conn.query_row(
            "INSERT INTO documents(source, path, key, title, content_hash, size_bytes,
                 first_indexed_at, indexed_at, valid_from_raw, valid_until_raw,
                 valid_from, valid_until, metadata_error, frontmatter, mtime_ns)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?15, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
             ON CONFLICT(source, path) DO UPDATE SET
                 key = excluded.key, title = excluded.title,
                 content_hash = excluded.content_hash, size_bytes = excluded.size_bytes,
                 mtime_ns = excluded.mtime_ns,
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
                doc.frontmatter,
                doc.mtime_ns,
                first_indexed_at
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
        let mut code_stmt = self.conn.prepare_cached(
            "INSERT INTO vector_codes(chunk_id, doc_id, code) VALUES (?1, ?2, ?3)",
        )?;
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
            code_stmt.execute(params![
                chunk_id,
                doc_id,
                code_bytes(chunk_id, doc_id, vector)
            ])?;
            let body = lexical_body(&doc.title, &chunk.heading_path, &chunk.text);
            self.lexical
                .as_mut()
                .expect("loaded before the chunks are written")
                .index
                .add(chunk_id, &body)?;
        }
        self.write_declarations(doc_id, &doc.declarations)
    }

    /// Replace what a document declares, leaving its text, chunks and vectors alone: an index
    /// run re-reads declarations this way when the vocabularies' reader changed. Returns false
    /// when the document is not in the store.
    pub fn set_declarations(
        &mut self,
        source: &str,
        path: &str,
        declarations: &Declarations,
    ) -> Result<bool> {
        self.require_write()?;
        let id = self.document_id(source, path)?;
        let Some(id) = id else {
            return Ok(false);
        };
        self.conn
            .prepare_cached("DELETE FROM edges WHERE doc_id = ?1")?
            .execute([id])?;
        self.write_declarations(id, declarations)?;
        Ok(true)
    }

    fn write_declarations(&self, doc_id: i64, d: &Declarations) -> Result<()> {
        let mut edge_stmt = self.conn.prepare_cached(
            "INSERT INTO edges(doc_id, raw_ref, key, reversed, vocabulary, line, statement,
                 overridden, standing) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?;
        for e in &d.edges {
            edge_stmt.execute(params![
                doc_id,
                e.raw,
                e.key,
                e.reversed,
                e.vocabulary,
                e.line,
                e.statement,
                e.overridden,
                e.standing
            ])?;
        }
        let r = d.retired.as_ref();
        self.conn
            .prepare_cached(
                "UPDATE documents SET alias = ?2, retired_state = ?3, retired_since = ?4,
                     retired_vocabulary = ?5, retired_line = ?6, retired_statement = ?7,
                     retired_overridden = ?8
                 WHERE id = ?1",
            )?
            .execute(params![
                doc_id,
                d.alias,
                r.map(|r| &r.state),
                r.and_then(|r| r.since.as_ref()),
                r.map(|r| &r.vocabulary),
                r.and_then(|r| r.line),
                r.map(|r| &r.statement),
                r.is_some_and(|r| r.overridden)
            ])?;
        Ok(())
    }

    /// Record the modification time of a document's file read again and found unchanged, so
    /// the next run need not read it (a store from before file times were kept, a touched
    /// file). Nothing else about the document changes.
    pub fn set_file_time(&mut self, source: &str, path: &str, mtime_ns: Option<i64>) -> Result<()> {
        self.require_write()?;
        self.conn
            .prepare_cached("UPDATE documents SET mtime_ns = ?3 WHERE source = ?1 AND path = ?2")?
            .execute(params![source, path, mtime_ns])?;
        Ok(())
    }

    /// Move a document to another root or path, keeping its row: chunks, vectors, lexical
    /// entries, edges and `first_indexed_at` stay (a moved folder or a renamed file whose
    /// content is unchanged, SPEC §3). Only a document whose stored
    /// title is `title` moves (the title is part of what was embedded), and never onto a path
    /// already taken. Returns whether it moved.
    pub fn move_document(
        &mut self,
        from: (&str, &str),
        to: (&str, &str),
        key: &str,
        title: &str,
        mtime_ns: Option<i64>,
    ) -> Result<bool> {
        self.require_write()?;
        let moved = self
            .conn
            .prepare_cached(
                "UPDATE documents SET source = ?3, path = ?4, key = ?5, mtime_ns = ?7
             WHERE source = ?1 AND path = ?2 AND title = ?6
               AND NOT EXISTS (SELECT 1 FROM documents WHERE source = ?3 AND path = ?4)",
            )?
            .execute(params![from.0, from.1, to.0, to.1, key, title, mtime_ns])?;
        Ok(moved == 1)
    }

    /// Remove documents (with their chunks, vectors and edges) by path under `source`.
    pub fn remove_documents(&mut self, source: &str, paths: &[String]) -> Result<usize> {
        self.require_write()?;
        let mut removed = 0;
        for path in paths {
            let id = self.document_id(source, path)?;
            if let Some(id) = id {
                self.delete_chunks_of(id)?;
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
        self.complete_codes()?;
        self.keep_lists()?;
        // SPEC §1: the lexical index moves with the chunks, in this transaction.
        let lexical_current = self
            .meta("lexical_generation")?
            .and_then(|g| g.parse().ok())
            == Some(previous);
        // Loaded (and checked) even when no chunk changed: a saved index that is missing,
        // older than the store (e.g. migrated from schema 1) or damaged is rebuilt from the
        // chunks now, while the write lock is held, so the file is whole again.
        if self.lexical.is_none() {
            self.lexical = Some(self.load_lexical(lexical_current, generation)?);
        }
        self.save_lexical()?;
        self.set_meta("lexical_generation", &generation.to_string())?;
        if self.meta("store_id")?.is_none() {
            self.set_meta("store_id", &super::committed::new_store_id())?;
        }
        if let Err(e) = self.conn.execute_batch("COMMIT") {
            self.rollback();
            return Err(self.busy(e));
        }
        self.in_write = false;
        if let Some(lexical) = self.lexical.as_mut() {
            lexical.generation = generation;
            // A large write, whose files waited in the spill folder, lets its index go: held,
            // the whole index would be read into memory as the run ends. The next search loads
            // it from the store (on a thread of its own, beside the codes), as another
            // process's does; so does a search after a settle that failed.
            if lexical.index.spilled() || lexical.index.settle().is_err() {
                self.lexical = None;
                crate::memory::release_free_memory();
            }
        }
        // Fold the WAL back into the main file so that copying the `.db` alone copies the whole
        // memory (SPEC §1). Best effort: with readers active the checkpoint may stop early; the
        // data is committed either way.
        let _ = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        self.record_commit(generation);
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
            // So may the search state read inside the write (its rows written count on).
            self.state_read = None;
        }
    }

    /// After a call that failed midway (a panic caught at the boundary): roll back an open
    /// write and drop what memory holds of the file, so the next call starts from the last
    /// commit.
    pub fn recover(&mut self) {
        self.rollback();
        // A search stopped inside its read transaction.
        if !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        self.lexical = None;
        self.cache = None;
        self.state_read = None;
    }

    /// Write one metadata value in its own transaction (calibration records and the like).
    pub fn set_meta_value(&mut self, key: &str, value: &str) -> Result<()> {
        self.require_writable()?;
        if self.in_write {
            return self.set_meta(key, value);
        }
        self.in_own_write(|store| store.set_meta(key, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::{doc, embedder, temp_db};

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
        assert_eq!(
            (stats.declarations.claims.0, stats.declarations.claims.3),
            (1, 1)
        );

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
        assert_eq!(stats.declarations.claims.3, 1);
    }

    /// A document of `chunks` chunks of forty words each, most of them its own.
    fn wordy(path: &str, chunks: usize) -> NewDocument {
        let mut d = doc(path, chunks, 4);
        for (i, c) in d.chunks.iter_mut().enumerate() {
            c.text = (0..40)
                .map(|j| format!("w{}", (i * 31 + j * 7) % 4999))
                .collect::<Vec<_>>()
                .join(" ");
        }
        d
    }

    #[test]
    fn a_write_whose_lexical_files_waited_beside_the_store_lets_its_index_go() {
        let path = temp_db("spilled");
        let mut store = Store::open(&path).unwrap();
        // A small write keeps its index in memory: the next write adds to it.
        store.begin(&embedder(4)).unwrap();
        store.put_document(&wordy("a.md", 2), "t0").unwrap();
        store.commit("t0").unwrap();
        assert!(store.lexical.is_some());
        // A large one (its files past the spill size waited in the folder) lets it go, so
        // that the run does not read the whole index into memory as it ends.
        store.begin(&embedder(4)).unwrap();
        store.put_document(&wordy("b.md", 3000), "t1").unwrap();
        store.commit("t1").unwrap();
        assert!(store.lexical.is_none());
        assert!(!std::path::Path::new(&format!("{}-lexical", &*path)).exists());
        // The next search loads it from the store, whole.
        let lexical = store.lexical_mut().unwrap();
        assert_eq!(lexical.index.num_docs(), 3002);
        assert_eq!(lexical.index.search("w31 w38", 10).unwrap().len(), 10);
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
}
