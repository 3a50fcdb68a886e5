//! The search cache: what every query needs in memory, loaded once per store generation.
//!
//! Owns: deciding when the cache is stale and reading documents, edges and vectors in one read
//! snapshot, then the places of the rows' vectors, and where their blocks lie in the file, on a
//! thread of their own. Does not own: turning the rows into the corpus (judgment.rs), how
//! vectors are read from sqlite-vec (vectors.rs, direct.rs) or how a query uses the cache
//! (search.rs, explain.rs).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::dense::DenseIndex;
use crate::errors::Result;
use crate::judgment::{Corpus, DocumentRecord, EdgeRecord, IdIndex};
use crate::lexical::LexicalIndex;
use crate::memory::huge_vec;

use super::direct::Direct;
use super::lexical_files::Lexical;
use super::Store;

/// Everything a search needs in memory, loaded once per store generation (SPEC §1: the dense
/// rows are loaded once per open store, not per query, and kept in step with writes; a query
/// reads back only the few vectors of a model's rows it rescores exactly).
pub(crate) struct SearchCache {
    pub(crate) generation: i64,
    pub(crate) dense: DenseIndex,
    /// The chunk id of each row, ascending.
    pub(crate) row_chunk: Vec<i64>,
    /// The row of each chunk id.
    chunk_row: IdIndex,
    /// Where sqlite-vec keeps each row's vector (`vectors::places_of`), read on a thread of its
    /// own that the first search reading vectors back starts (`SearchCache::places`): no search
    /// waits for them, and until they are read (or when they cannot be) each vector read back
    /// looks its place up.
    pub(crate) places: Arc<OnceLock<Vec<u64>>>,
    /// Where each sqlite-vec block lies in the store's file (direct.rs), found by the same
    /// thread once the places are read: a vector read back is then one `pread` of its bytes.
    pub(crate) direct: Arc<OnceLock<Direct>>,
    /// Set once that thread is started (or, in a cache read during a write, never to be): what
    /// tells it to give up and what joins it when the cache is let go.
    placing: OnceLock<Placing>,
    pub(crate) row_doc: Vec<usize>,
    /// Rows of document `d`: `doc_row_list[doc_start[d]..doc_start[d + 1]]`.
    doc_start: Vec<u32>,
    doc_row_list: Vec<u32>,
    /// Documents, windows and the graph of the edges in force.
    pub(crate) corpus: Corpus,
}

/// The thread reading a cache's places: joined when the cache is let go, so that its connection
/// is closed before the store's own (the last connection to close a WAL file removes its `-wal`
/// and `-shm` files, which a read-only one leaves behind).
#[derive(Default)]
struct Placing {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for SearchCache {
    fn drop(&mut self) {
        if let Some(placing) = self.placing.take() {
            placing.stop.store(true, Ordering::Relaxed);
            if let Some(thread) = placing.thread {
                let _ = thread.join();
            }
        }
    }
}

impl SearchCache {
    /// The row of chunk `id`, if the cache holds it.
    pub(crate) fn row_of(&self, id: i64) -> Option<usize> {
        self.chunk_row.get(id)
    }

    /// Where each row's vector lies in the store at `path`, once read; the first call starts the
    /// thread that reads them, after the first search's own work has claimed the cores.
    pub(crate) fn places(&self, path: &str) -> Option<&[u64]> {
        if let Some(read) = self.places.get() {
            return (read.len() == self.row_chunk.len()).then_some(read.as_slice());
        }
        self.placing.get_or_init(|| {
            let (path, generation, dim) = (path.to_string(), self.generation, self.dense.dim());
            let (cell, chunks) = (Arc::clone(&self.places), self.row_chunk.to_vec());
            let direct = Arc::clone(&self.direct);
            let stop = Arc::new(AtomicBool::new(false));
            let told = Arc::clone(&stop);
            // A thread the system refuses leaves every read to look its place up.
            let thread = std::thread::Builder::new()
                .name("recall-places".into())
                .spawn(move || {
                    if let Some(read) = Store::places_apart(&path, generation, &chunks, &told) {
                        let _ = cell.set(read);
                        if let Some(found) = Store::direct_apart(&path, dim, &told) {
                            let _ = direct.set(found);
                        }
                    }
                })
                .ok();
            Placing { stop, thread }
        });
        None
    }

    /// The rows of document `d`, in chunk order.
    pub(crate) fn rows_of(&self, d: usize) -> impl Iterator<Item = usize> + '_ {
        let (from, to) = (self.doc_start[d] as usize, self.doc_start[d + 1] as usize);
        self.doc_row_list[from..to].iter().map(|&r| r as usize)
    }
}

enum DocIds {
    Bits(Vec<u64>),
    Hashed(rustc_hash::FxHashSet<i64>),
}

impl DocIds {
    fn of(ids: impl Iterator<Item = i64> + Clone) -> DocIds {
        let max = ids.clone().max().unwrap_or(0);
        if (0..1 << 28).contains(&max) && ids.clone().all(|id| id >= 0) {
            let mut bits = vec![0u64; max as usize / 64 + 1];
            ids.for_each(|id| bits[id as usize / 64] |= 1 << (id % 64));
            DocIds::Bits(bits)
        } else {
            DocIds::Hashed(ids.collect())
        }
    }

    fn contains(&self, id: i64) -> bool {
        match self {
            DocIds::Bits(bits) => usize::try_from(id)
                .ok()
                .and_then(|i| bits.get(i / 64))
                .is_some_and(|w| w >> (id % 64) & 1 == 1),
            DocIds::Hashed(set) => set.contains(&id),
        }
    }
}

/// `f` on a thread of `scope` named `name` (as profilers and debuggers show it).
fn named<'s, T: Send + 's>(
    scope: &'s std::thread::Scope<'s, '_>,
    name: &str,
    f: impl FnOnce() -> T + Send + 's,
) -> std::thread::ScopedJoinHandle<'s, T> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn_scoped(scope, f)
        .expect("the system starts a thread")
}

/// Documents handed to the corpus builder at a time.
const DOCUMENT_BATCH: usize = 4096;

impl Store {
    /// While `lean` is set, a search that loads the cache of a large store leaves every fine
    /// code unread and reads back the vector of each row the code pass shortlists (384 bytes
    /// a model's chunk less held at 384 dimensions, for a read of each shortlisted row;
    /// `codes::LEAN_FROM`). For a calibration's few hundred searches, whose results are the
    /// same; a cache already loaded whole serves them as it is. Cleared, it drops a lean
    /// cache, so the next search loads the cache whole.
    pub fn set_lean(&mut self, lean: bool) {
        self.lean = lean;
        if !lean && self.cache.as_ref().is_some_and(|c| c.dense.is_lean()) {
            self.cache = None;
            crate::memory::release_free_memory();
        }
    }

    /// (Re)load the search cache when the committed generation moved (another process may have
    /// indexed since). Returns whether a load happened.
    pub(crate) fn ensure_cache(&mut self) -> Result<bool> {
        let generation = self.generation()?;
        if self
            .cache
            .as_ref()
            .is_some_and(|c| c.generation == generation && (self.lean || !c.dense.is_lean()))
        {
            return Ok(false);
        }
        self.cache = None;
        // SPEC §1: one read transaction, so documents, edges and vectors are one generation's
        // snapshot even while another process commits (the caller's, when it holds one).
        let (cache, lexical) = self.in_read(|store| store.load_cache())?;
        if let Some(index) = lexical {
            self.lexical = Some(Lexical::loaded(index, cache.generation));
        }
        self.cache = Some(cache);
        crate::memory::release_free_memory();
        Ok(true)
    }

    /// The cache and, when none is held and the saved one is current, the lexical index (None
    /// when damaged: `lexical_mut` rebuilds it). Four jobs overlap: this thread reads the
    /// documents and edges, another builds the corpus from them as they come, and two more read
    /// the lexical files and the dense codes through connections of their own (used only when
    /// their snapshot is this one's generation).
    fn load_cache(&self) -> Result<(SearchCache, Option<LexicalIndex>)> {
        let generation = self.generation()?;
        let dim = self.embedder()?.map(|e| e.dim).unwrap_or(0);
        // The corpus is built on another core as the documents are read.
        let setting = self.vocabularies_setting()?;
        let expected = self
            .meta("documents")?
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
        let (docs_to, docs) = std::sync::mpsc::sync_channel::<Vec<DocumentRecord>>(8);
        let (edges_to, edges) = std::sync::mpsc::sync_channel::<Vec<EdgeRecord>>(1);
        let (corpus, read) = std::thread::scope(|scope| {
            let building = named(scope, "recall-corpus", move || {
                let edges = move || edges.recv().unwrap_or_default();
                Corpus::build_from(docs.into_iter().flatten(), edges, &setting, expected)
            });
            // A first search also needs the lexical index: read and checked on a third thread
            // through a connection of its own.
            let path = self.path.clone();
            let reading = (self.lexical.is_none() && !self.in_write).then(|| {
                named(scope, "recall-lexical", move || {
                    Self::lexical_apart(&path, generation)
                })
            });
            // So are the codes, when they are all a store needs (a hashed store's).
            let (path, lean) = (self.path.clone(), self.lean);
            let coding = (dim > 0 && !self.in_write).then(|| {
                named(scope, "recall-codes", move || {
                    Self::codes_apart(&path, generation, dim, lean)
                })
            });
            let read = (move || -> Result<_> {
                let mut ids = Vec::with_capacity(expected);
                self.read_documents(DOCUMENT_BATCH, |batch| {
                    ids.extend(batch.iter().map(|d| d.id));
                    docs_to.send(batch).is_ok()
                })?;
                drop(docs_to);
                let _ = edges_to.send(self.read_edges()?);
                let known = DocIds::of(ids.iter().copied());
                let apart = coding.and_then(|c| {
                    c.join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                });
                let dense = match apart {
                    Some(dense) if dense.0.iter().all(|&(_, doc)| known.contains(doc)) => dense,
                    _ if dim > 0 => self.load_dense(dim, |doc| known.contains(doc))?,
                    _ => (Vec::new(), DenseIndex::new(0)),
                };
                Ok(dense)
            })();
            let corpus = building
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            let lexical = reading.and_then(|r| {
                r.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            });
            (corpus, read.map(|dense| (dense, lexical)))
        });
        let (vectors, lexical) = read?;
        let (ids, dense) = vectors;
        let documents = corpus.doc_ids.len();
        let mut row_chunk = huge_vec(ids.len());
        let mut row_doc = huge_vec(ids.len());
        let mut doc_start = vec![0u32; documents + 1];
        // Rows of one document are mostly consecutive: look each document up once.
        let mut last: Option<(i64, usize)> = None;
        for &(chunk_id, doc_id) in &ids {
            let d = match last {
                Some((id, d)) if id == doc_id => d,
                _ => corpus
                    .index_of
                    .get(doc_id)
                    .expect("every row's document is in the corpus read with it"),
            };
            last = Some((doc_id, d));
            doc_start[d + 1] += 1;
            row_chunk.push(chunk_id);
            row_doc.push(d);
        }
        for d in 0..documents {
            doc_start[d + 1] += doc_start[d];
        }
        let mut next = doc_start.clone();
        let mut doc_row_list = vec![0u32; ids.len()];
        for (row, &d) in row_doc.iter().enumerate() {
            doc_row_list[next[d] as usize] = row as u32;
            next[d] += 1;
        }
        // Read while a write is open, the rows may not be the committed ones the thread reads.
        let placing = OnceLock::new();
        if self.in_write {
            let _ = placing.set(Placing::default());
        }
        let cache = SearchCache {
            generation,
            dense,
            chunk_row: IdIndex::of(&row_chunk),
            places: Arc::new(OnceLock::new()),
            direct: Arc::new(OnceLock::new()),
            placing,
            row_chunk,
            row_doc,
            doc_start,
            doc_row_list,
            corpus,
        };
        Ok((cache, lexical))
    }
}
