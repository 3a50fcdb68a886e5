//! The search cache: what every query needs in memory, loaded once per store generation.
//!
//! Owns: deciding when the cache is stale and reading documents, edges and vectors in one read
//! snapshot. Does not own: turning the rows into the corpus (judgment.rs), how vectors are read
//! from sqlite-vec (vectors.rs) or how a query uses the cache (search.rs, explain.rs).

use crate::dense::DenseIndex;
use crate::errors::Result;
use crate::judgment::{Corpus, DocumentRecord, EdgeRecord};

use super::Store;

/// Everything a search needs in memory, loaded once per store generation (SPEC §1: vectors are
/// loaded once per open store, not per query, and kept in step with writes).
pub(crate) struct SearchCache {
    pub(crate) generation: i64,
    pub(crate) dense: DenseIndex,
    pub(crate) row_chunk: Vec<i64>,
    pub(crate) chunk_row: rustc_hash::FxHashMap<i64, usize>,
    pub(crate) row_doc: Vec<usize>,
    pub(crate) doc_rows: Vec<Vec<usize>>,
    /// Documents, windows and the graph of the edges in force.
    pub(crate) corpus: Corpus,
}

/// Hand the memory a cache load freed back to the system: the rows read to build the corpus
/// and the blocks read for the vectors are gone, but the allocator keeps what it freed (a
/// second thread's arena above all) unless asked.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: glibc's malloc_trim only returns free pages; it touches no live allocation.
        unsafe {
            malloc_trim(0);
        }
    }
}

impl Store {
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
        release_free_memory();
        Ok(true)
    }

    fn load_cache(&self) -> Result<SearchCache> {
        let generation = self.generation()?;
        let dim = self.embedder()?.map(|e| e.dim).unwrap_or(0);
        let (docs, edges, setting) = self.read_corpus()?;
        let known: rustc_hash::FxHashSet<i64> = docs.iter().map(|d| d.id).collect();
        // The corpus is built on another core while this one reads the vectors (the
        // connection stays on this thread); both are a large share of a first search.
        let (corpus, vectors) = std::thread::scope(|scope| {
            let building = scope.spawn(move || Corpus::build(docs, edges, &setting));
            let vectors = if dim > 0 {
                self.load_vectors(dim, |doc| known.contains(&doc))
            } else {
                Ok((Vec::new(), DenseIndex::new(0)))
            };
            let corpus = building
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (corpus, vectors)
        });
        let (ids, dense) = vectors?;
        let mut row_chunk = Vec::with_capacity(ids.len());
        let mut row_doc = Vec::with_capacity(ids.len());
        let mut doc_rows = vec![Vec::new(); corpus.doc_ids.len()];
        for (row, (chunk_id, doc_id)) in ids.into_iter().enumerate() {
            let d = corpus.index_of[&doc_id];
            doc_rows[d].push(row);
            row_chunk.push(chunk_id);
            row_doc.push(d);
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
            corpus,
        })
    }

    /// Documents, windows and the graph of the edges in force under the store's setting, as
    /// the trust layer sees them (judgment.rs), without the vectors.
    pub(crate) fn load_corpus(&self) -> Result<Corpus> {
        let (docs, edges, setting) = self.read_corpus()?;
        Ok(Corpus::build(docs, edges, &setting))
    }

    /// The rows `load_corpus` builds from: documents, edges and the vocabularies setting.
    fn read_corpus(&self) -> Result<(Vec<DocumentRecord>, Vec<EdgeRecord>, String)> {
        let setting = self.meta("vocabularies")?.unwrap_or_else(|| "all".into());
        let mut docs = Vec::new();
        {
            let mut stmt = self.conn.prepare(
                "SELECT id, key, path, first_indexed_at, valid_from_raw, valid_until_raw,
                        metadata_error, source, alias, retired_state, retired_since,
                        retired_vocabulary, retired_overridden FROM documents ORDER BY id",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                // SPEC §2.5: hand-written garbage never crashes a search; unreadable text
                // fields fail closed as invalid metadata.
                let from = r.get::<_, Option<String>>(4);
                let until = r.get::<_, Option<String>>(5);
                let err = r.get::<_, Option<String>>(6);
                docs.push(DocumentRecord {
                    id: r.get(0)?,
                    source: r.get::<_, String>(7).unwrap_or_default(),
                    path: r.get::<_, String>(2).unwrap_or_default(),
                    key: r.get::<_, String>(1).unwrap_or_default(),
                    first_indexed_at: r.get(3).ok().flatten(),
                    unreadable: from.is_err() || until.is_err() || err.is_err(),
                    valid_from_raw: from.ok().flatten(),
                    valid_until_raw: until.ok().flatten(),
                    metadata_error: err.ok().flatten().is_some(),
                    alias: r.get(8).ok().flatten(),
                    retired_state: r.get(9).ok().flatten(),
                    retired_since: r.get(10).ok().flatten(),
                    retired_vocabulary: r.get(11).ok().flatten(),
                    retired_overridden: r.get::<_, Option<bool>>(12).ok().flatten() != Some(false),
                });
            }
        }
        let mut edges = Vec::new();
        {
            let mut stmt = self.conn.prepare(
                "SELECT doc_id, key, raw_ref, reversed, vocabulary, line, statement, overridden,
                        standing
                 FROM edges ORDER BY id",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let Ok(key) = r.get::<_, String>(1) else {
                    continue;
                };
                edges.push(EdgeRecord {
                    doc_id: r.get(0)?,
                    key,
                    raw: r.get::<_, String>(2).unwrap_or_default(),
                    reversed: r.get::<_, bool>(3).unwrap_or(false),
                    vocabulary: r.get::<_, String>(4).unwrap_or_default(),
                    line: r.get(5).ok().flatten(),
                    statement: r
                        .get::<_, Option<String>>(6)
                        .ok()
                        .flatten()
                        .unwrap_or_default(),
                    overridden: r.get::<_, bool>(7).unwrap_or(false),
                    // A standing this reader does not know is not a full edge either.
                    standing: r.get::<_, Option<String>>(8).unwrap_or(Some(String::new())),
                });
            }
        }
        Ok((docs, edges, setting))
    }
}
