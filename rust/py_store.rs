//! `_core.Store`: the file store for Python (the store contract's file backend,
//! `python/recall/store.py`). Every call runs on the store under its lock with panics caught
//! (`PyStore::with`); rows cross as plain tuples, hits through `py_hits`.

use std::panic::AssertUnwindSafe;
use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::py_corpus::{edge_of, row_of, EdgeRow};
use crate::py_errors::{damaged, panicked, StoreError};
use crate::py_policy::PyPolicy;
use crate::store::{self, EmbedderInfo, NewChunk, NewDocument, Store};
use crate::{errors, py_corpus, py_hits, trust};

/// Little-endian float32 bytes from Python (`ndarray.tobytes()`) as floats.
fn f32s(bytes: &[u8], what: &str) -> PyResult<Vec<f32>> {
    if !bytes.len().is_multiple_of(4) {
        return Err(StoreError::new_err(format!(
            "recall store: {what} must be float32 bytes, got {} bytes",
            bytes.len()
        )));
    }
    Ok(py_corpus::le_f32s(bytes))
}

type ChunkRow = (i64, String, i64, i64, i64, i64, String);
/// (state, since, vocabulary, line, statement, overridden)
type RetiredRow = (String, Option<String>, String, Option<i64>, String, bool);
type ForgetRow = (String, String, String, i64, Vec<(String, String)>);
type JournalRow = (String, String, String, String, String, Option<String>);
/// (title, [(chunk text, heading path)], vectors as float32 little-endian bytes)
type DocumentVectors<'py> = (String, Vec<(String, String)>, Bound<'py, PyBytes>);

/// One document as `put_document` takes it: the keys of `recall.rows.DocumentRow` (others, such
/// as an exported document's id and times, are not read).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct DocumentIn {
    source: String,
    path: String,
    key: String,
    title: String,
    content_hash: String,
    size_bytes: i64,
    valid_from_raw: Option<String>,
    valid_until_raw: Option<String>,
    valid_from: Option<String>,
    valid_until: Option<String>,
    metadata_error: Option<String>,
    frontmatter: String,
    chunks: Vec<ChunkRow>,
    #[pyo3(from_py_with = vectors_of)]
    vectors: Vec<f32>,
    edges: Vec<EdgeRow>,
    #[pyo3(default)]
    mtime_ns: Option<i64>,
    #[pyo3(default)]
    alias: Option<String>,
    #[pyo3(default)]
    retired: Option<RetiredRow>,
}

fn vectors_of(value: &Bound<'_, PyAny>) -> PyResult<Vec<f32>> {
    let bytes = value.cast::<PyBytes>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err("recall store: vectors must be float32 bytes")
    })?;
    f32s(bytes.as_bytes(), "vectors")
}

fn declarations(
    edges: Vec<EdgeRow>,
    alias: Option<String>,
    retired: Option<RetiredRow>,
) -> store::Declarations {
    store::Declarations {
        edges: edges.into_iter().map(edge_of).collect(),
        alias,
        retired: retired.map(|(state, since, vocabulary, line, statement, overridden)| {
            store::NewRetirement {
                state,
                since,
                vocabulary,
                line,
                statement,
                overridden,
            }
        }),
    }
}

#[pyclass(name = "Store", module = "recall._core")]
pub(crate) struct PyStore {
    inner: Mutex<Option<Store>>,
    path: String,
}

impl PyStore {
    /// Run `f` on the open store. A panic inside it is caught here and becomes a
    /// `StoreDamagedError`: it never reaches Python as a `PanicException` and never leaves the
    /// handle unusable (an open write is rolled back, the lexical index reloaded).
    fn with<T>(&self, f: impl FnOnce(&mut Store) -> errors::Result<T>) -> PyResult<T> {
        let mut guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let store = guard
            .as_mut()
            .ok_or_else(|| StoreError::new_err(format!("recall store: {} is closed", self.path)))?;
        match std::panic::catch_unwind(AssertUnwindSafe(|| f(&mut *store))) {
            Ok(result) => result.map_err(|e| damaged(e, &self.path)),
            Err(payload) => {
                store.recover();
                Err(panicked(payload, &self.path))
            }
        }
    }
}

#[pymethods]
impl PyStore {
    /// Open the store at `path`: `create` makes a missing file a new store (reads pass
    /// False); `read_only` opens for reading whatever the file's permissions (a file that
    /// cannot be written is opened so anyway).
    #[new]
    #[pyo3(signature = (path, *, create = true, read_only = false))]
    fn new(py: Python<'_>, path: String, create: bool, read_only: bool) -> PyResult<Self> {
        let options = store::OpenOptions { create, read_only };
        let store = py
            .detach(|| Store::open_with(&path, options))
            .map_err(|e| damaged(e, &path))?;
        Ok(PyStore {
            inner: Mutex::new(Some(store)),
            path,
        })
    }

    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// `recall doctor`: (check, status, detail) per check; status is "ok", "warning" or
    /// "damaged".
    fn doctor(&self, py: Python<'_>) -> PyResult<Vec<(String, String, String)>> {
        let checks = py.detach(|| self.with(|s| s.doctor()))?;
        Ok(checks
            .into_iter()
            .map(|c| (c.name.to_string(), c.status.to_string(), c.detail))
            .collect())
    }

    /// A file on this machine: no other machine writes to it (the store contract's `shared`).
    #[getter]
    fn shared(&self) -> bool {
        false
    }

    /// The store contract's `use_server_clock`: a file has no clock of its own, so every
    /// write is stamped with the `now` it passes.
    fn use_server_clock(&self, on: bool) {
        let _ = on;
    }

    /// Why the store is open read-only, or None when it can be written.
    #[getter]
    fn read_only(&self) -> PyResult<Option<String>> {
        self.with(|s| Ok(s.read_only().map(str::to_string)))
    }

    /// Close the file; an open write is rolled back. Idempotent.
    fn close(&self) -> PyResult<()> {
        let mut guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        guard.take();
        Ok(())
    }

    fn meta(&self, key: &str) -> PyResult<Option<String>> {
        self.with(|s| s.meta(key))
    }

    /// (name, dim, fingerprint) of the embedder the store is bound to, or None.
    fn embedder(&self) -> PyResult<Option<(String, usize, String)>> {
        self.with(|s| Ok(s.embedder()?.map(|e| (e.name, e.dim, e.fingerprint))))
    }

    /// Record an unchanged file's modification time (inside a write).
    #[pyo3(signature = (source, path, mtime_ns))]
    fn set_file_time(&self, source: &str, path: &str, mtime_ns: Option<i64>) -> PyResult<()> {
        self.with(|s| s.set_file_time(source, path, mtime_ns))
    }

    /// Move a document whose content is unchanged to another root or path, keeping its row
    /// (inside a write); only when its stored title is `title`. Returns whether it moved.
    #[pyo3(signature = (source, path, new_source, new_path, key, title, mtime_ns))]
    #[allow(clippy::too_many_arguments)]
    fn move_document(
        &self,
        source: &str,
        path: &str,
        new_source: &str,
        new_path: &str,
        key: &str,
        title: &str,
        mtime_ns: Option<i64>,
    ) -> PyResult<bool> {
        self.with(|s| s.move_document((source, path), (new_source, new_path), key, title, mtime_ns))
    }

    fn known_documents(&self, source: &str) -> PyResult<Vec<store::KnownDocument>> {
        self.with(|s| s.known_documents(source))
    }

    fn begin(&self, py: Python<'_>, name: String, dim: usize, fingerprint: String) -> PyResult<()> {
        let info = EmbedderInfo {
            name,
            dim,
            fingerprint,
        };
        py.detach(|| self.with(|s| s.begin(&info)))
    }

    /// Add or replace one document (`recall.rows.DocumentRow`) in the open write, stamped
    /// `now`; `first_indexed_at` keeps a migrated document's first indexing time.
    #[pyo3(signature = (document, *, now, first_indexed_at = None))]
    fn put_document(
        &self,
        py: Python<'_>,
        document: DocumentIn,
        now: String,
        first_indexed_at: Option<String>,
    ) -> PyResult<()> {
        let d = document;
        let doc = NewDocument {
            source: d.source,
            path: d.path,
            key: d.key,
            title: d.title,
            content_hash: d.content_hash,
            size_bytes: d.size_bytes,
            mtime_ns: d.mtime_ns,
            valid_from_raw: d.valid_from_raw,
            valid_until_raw: d.valid_until_raw,
            valid_from: d.valid_from,
            valid_until: d.valid_until,
            metadata_error: d.metadata_error,
            frontmatter: d.frontmatter,
            chunks: d
                .chunks
                .into_iter()
                .map(
                    |(ordinal, text, byte_start, byte_end, line_start, line_end, heading_path)| {
                        NewChunk {
                            ordinal,
                            text,
                            byte_start,
                            byte_end,
                            line_start,
                            line_end,
                            heading_path,
                        }
                    },
                )
                .collect(),
            vectors: d.vectors,
            declarations: declarations(d.edges, d.alias, d.retired),
        };
        py.detach(|| self.with(|s| s.put_document_as(&doc, &now, first_indexed_at.as_deref())))
    }

    /// Replace what a stored document declares (edges, alias, retirement), in the open write.
    #[pyo3(signature = (source, path, edges, alias = None, retired = None))]
    fn set_declarations(
        &self,
        source: String,
        path: String,
        edges: Vec<EdgeRow>,
        alias: Option<String>,
        retired: Option<RetiredRow>,
    ) -> PyResult<bool> {
        let d = declarations(edges, alias, retired);
        self.with(|s| s.set_declarations(&source, &path, &d))
    }

    /// Every indexed document as (source, path, first_indexed_at).
    fn document_list(&self) -> PyResult<Vec<(String, String, String)>> {
        self.with(|s| s.document_list())
    }

    /// Every root documents were indexed from, with how many documents it holds.
    fn sources(&self) -> PyResult<Vec<(String, i64)>> {
        self.with(|s| s.sources())
    }

    /// What forgetting (source, path) targets would remove: (source, path, first_indexed_at,
    /// chunks, [(source, path) of documents whose edges name it]).
    fn forget_plan(&self, targets: Vec<(String, String)>) -> PyResult<Vec<ForgetRow>> {
        self.with(|s| {
            Ok(s.forget_plan(&targets)?
                .into_iter()
                .map(|p| {
                    (
                        p.source,
                        p.path,
                        p.first_indexed_at,
                        p.chunks,
                        p.referenced_by,
                    )
                })
                .collect())
        })
    }

    /// The forget journal, oldest forgotten first: (source, path, content_hash,
    /// first_indexed_at, forgotten_at, undone_at).
    fn journal(&self) -> PyResult<Vec<JournalRow>> {
        self.with(|s| {
            Ok(s.journal()?
                .into_iter()
                .map(|e| {
                    (
                        e.source,
                        e.path,
                        e.content_hash,
                        e.first_indexed_at,
                        e.forgotten_at,
                        e.undone_at,
                    )
                })
                .collect())
        })
    }

    /// Store journal entries in the open write, each replacing the entry of its path.
    fn write_journal(&self, entries: Vec<JournalRow>) -> PyResult<()> {
        let entries: Vec<store::JournalEntry> = entries
            .into_iter()
            .map(
                |(source, path, content_hash, first_indexed_at, forgotten_at, undone_at)| {
                    store::JournalEntry {
                        source,
                        path,
                        content_hash,
                        first_indexed_at,
                        forgotten_at,
                        undone_at,
                    }
                },
            )
            .collect();
        self.with(|s| s.write_journal(&entries))
    }

    /// Delete the journal entries of these (source, path) in the open write.
    fn drop_journal(&self, targets: Vec<(String, String)>) -> PyResult<()> {
        self.with(|s| s.drop_journal(&targets))
    }

    fn remove_documents(
        &self,
        py: Python<'_>,
        source: String,
        paths: Vec<String>,
    ) -> PyResult<usize> {
        py.detach(|| self.with(|s| s.remove_documents(&source, &paths)))
    }

    /// The title, chunks' (text, heading path) and vectors (float32 little-endian, chunk
    /// order) of one stored document, or None: what an index run gives a copy of it.
    fn document_vectors<'py>(
        &self,
        py: Python<'py>,
        source: &str,
        path: &str,
    ) -> PyResult<Option<DocumentVectors<'py>>> {
        let found = py.detach(|| self.with(|s| s.document_vectors(source, path)))?;
        Ok(found.map(|d| {
            let chunks = d.chunks.into_iter().map(|c| (c.text, c.heading_path));
            let blob = PyBytes::new(py, &store::f32_blob(&d.vectors));
            (d.title, chunks.collect(), blob)
        }))
    }

    /// Up to `limit` documents with ids above `after`, each as `put_document` takes it back
    /// (keyword arguments) plus `id`, `first_indexed_at` and `indexed_at` (`recall migrate`);
    /// without `bodies`, no chunks and vectors.
    #[pyo3(signature = (after = 0, limit = 256, bodies = true))]
    fn export<'py>(
        &self,
        py: Python<'py>,
        after: i64,
        limit: usize,
        bodies: bool,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let docs = py.detach(|| self.with(|s| s.export_documents(after, limit, bodies)))?;
        docs.into_iter()
            .map(|e| {
                let (doc, d) = (e.doc, PyDict::new(py));
                d.set_item("id", e.id)?;
                d.set_item("first_indexed_at", e.first_indexed_at)?;
                d.set_item("indexed_at", e.indexed_at)?;
                d.set_item("source", doc.source)?;
                d.set_item("path", doc.path)?;
                d.set_item("key", doc.key)?;
                d.set_item("title", doc.title)?;
                d.set_item("content_hash", doc.content_hash)?;
                d.set_item("size_bytes", doc.size_bytes)?;
                d.set_item("mtime_ns", doc.mtime_ns)?;
                d.set_item("valid_from_raw", doc.valid_from_raw)?;
                d.set_item("valid_until_raw", doc.valid_until_raw)?;
                d.set_item("valid_from", doc.valid_from)?;
                d.set_item("valid_until", doc.valid_until)?;
                d.set_item("metadata_error", doc.metadata_error)?;
                d.set_item("frontmatter", doc.frontmatter)?;
                let chunks: Vec<ChunkRow> = doc
                    .chunks
                    .into_iter()
                    .map(|c| {
                        let (o, t, h) = (c.ordinal, c.text, c.heading_path);
                        (o, t, c.byte_start, c.byte_end, c.line_start, c.line_end, h)
                    })
                    .collect();
                d.set_item("chunks", chunks)?;
                d.set_item("vectors", PyBytes::new(py, &store::f32_blob(&doc.vectors)))?;
                let decl = doc.declarations;
                let edges: Vec<EdgeRow> = decl.edges.into_iter().map(row_of).collect();
                d.set_item("edges", edges)?;
                d.set_item("alias", decl.alias)?;
                let retired: Option<RetiredRow> = decl.retired.map(|r| {
                    (
                        r.state,
                        r.since,
                        r.vocabulary,
                        r.line,
                        r.statement,
                        r.overridden,
                    )
                });
                d.set_item("retired", retired)?;
                Ok(d)
            })
            .collect()
    }

    fn commit(&self, py: Python<'_>, now: String) -> PyResult<i64> {
        py.detach(|| self.with(|s| s.commit(&now)))
    }

    fn set_meta(&self, py: Python<'_>, key: String, value: String) -> PyResult<()> {
        py.detach(|| self.with(|s| s.set_meta_value(&key, &value)))
    }

    /// Dense retrieval and the trust layer; `query` is float32 little-endian bytes.
    #[pyo3(signature = (query, *, text, k, candidates, policy))]
    fn search<'py>(
        &self,
        py: Python<'py>,
        query: &[u8],
        text: String,
        k: usize,
        candidates: usize,
        policy: &PyPolicy,
    ) -> PyResult<Bound<'py, PyDict>> {
        let q = f32s(query, "query")?;
        let policy = policy.inner;
        let out = py.detach(|| self.with(|s| s.search(&q, &text, k, candidates, &policy)))?;
        let hits = pyo3::types::PyList::empty(py);
        for h in out.hits {
            hits.append(py_hits::hit(py, h)?)?;
        }
        let d = PyDict::new(py);
        d.set_item("hits", hits)?;
        let dense: Vec<(i64, f64)> = out.dense.iter().map(|&(c, s)| (c, f64::from(s))).collect();
        d.set_item("dense", dense)?;
        let lexical: Vec<(i64, f64)> = out
            .lexical
            .iter()
            .map(|&(c, s)| (c, f64::from(s)))
            .collect();
        d.set_item("lexical", lexical)?;
        d.set_item("lexical_ms", out.lexical_ms)?;
        d.set_item("fuse_ms", out.fuse_ms)?;
        d.set_item("generation", out.generation)?;
        d.set_item("documents", out.documents)?;
        d.set_item("load_ms", out.load_ms)?;
        d.set_item("dense_ms", out.dense_ms)?;
        d.set_item("trust_ms", out.trust_ms)?;
        Ok(d)
    }

    /// Why one document gets its verdict; None when `file` names no indexed document.
    #[pyo3(signature = (file, query, *, text, policy))]
    fn explain<'py>(
        &self,
        py: Python<'py>,
        file: String,
        query: &[u8],
        text: String,
        policy: &PyPolicy,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let q = f32s(query, "query")?;
        // Explain reads a verdict as a calibrated search would give it.
        let policy = trust::Policy {
            unverified: false,
            ..policy.inner
        };
        let Some(e) = py.detach(|| self.with(|s| s.explain(&file, &q, &text, &policy)))? else {
            return Ok(None);
        };
        py_corpus::explanation_dict(py, e).map(Some)
    }

    /// While `lean` is set, the searches that load a large store's rows leave the fine codes
    /// unread and read back each shortlisted row's vector instead (a calibration's searches:
    /// the same results, a byte a dimension less held for each chunk); cleared, a cache
    /// loaded that way is dropped.
    fn set_lean(&self, lean: bool) -> PyResult<()> {
        self.with(|s| {
            s.set_lean(lean);
            Ok(())
        })
    }

    fn rollback(&self) -> PyResult<()> {
        self.with(|s| {
            s.rollback();
            Ok(())
        })
    }

    /// (documents, newest indexed_at, last run, chunk churn): the cheap per-search summary.
    fn freshness(&self) -> PyResult<(i64, Option<String>, Option<String>, i64)> {
        self.with(|s| s.freshness())
    }

    /// What a search reads before it embeds, in one call: `freshness()`, `embedder()`, and the
    /// record stored under `record_prefix` followed by the embedder's fingerprint. Given `text`
    /// (the query about to be searched), what its search starts with is read ahead: the query's
    /// evidence, when the lexical index is held (`Store::read_ahead`).
    #[allow(clippy::type_complexity)]
    #[pyo3(signature = (record_prefix, text=None))]
    fn search_state(
        &self,
        record_prefix: &str,
        text: Option<&str>,
    ) -> PyResult<(
        (i64, Option<String>, Option<String>, i64),
        Option<(String, usize, String)>,
        Option<String>,
    )> {
        let state = self.with(|s| s.search_state(record_prefix, text))?;
        let bound = state.embedder.map(|e| (e.name, e.dim, e.fingerprint));
        Ok((state.freshness, bound, state.record))
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let st = py.detach(|| self.with(|s| s.stats()))?;
        let d = PyDict::new(py);
        d.set_item("schema_version", st.schema_version)?;
        d.set_item("generation", st.generation)?;
        d.set_item("documents", st.documents)?;
        d.set_item("chunks", st.chunks)?;
        d.set_item("vectors", st.vectors)?;
        d.set_item(
            "embedder",
            st.embedder.map(|e| (e.name, e.dim, e.fingerprint)),
        )?;
        d.set_item("newest_indexed_at", st.newest_indexed_at)?;
        d.set_item("last_run_at", st.last_run_at)?;
        d.set_item("file_size_bytes", st.file_size_bytes)?;
        d.set_item("metadata_errors", st.metadata_errors)?;
        d.set_item("chunk_churn", st.chunk_churn)?;
        d.set_item("vocabularies", st.vocabularies)?;
        d.set_item("forgotten", st.forgotten)?;
        crate::py_corpus::tally_into(&d, &st.declarations)?;
        Ok(d)
    }
}
