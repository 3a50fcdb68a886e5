//! `Documents`: the documents a process holds of a store that keeps them elsewhere (a
//! PostgreSQL namespace), as the trust layer's records, kept as rows are written and removed,
//! and the corpus built from them for each generation.
//!
//! Owns: holding the rows (a value many documents share, such as their root or their runs'
//! times, held once), what a hit shows of its document, and building the corpus from them. Does not own: which rows changed (the Python side of the server backend) or any
//! rule (the judgment crate).

use std::sync::Arc;

use pyo3::prelude::*;

use crate::judgment::{Corpus, DocumentRecord};
use crate::py_corpus::{edge_records, DocumentRow, EdgeRow, PyCorpus, Repeated};

/// A held document: its row, each string boxed to its length, a value many documents share
/// (their root, their runs' times) held once, the retirement (which few have) boxed.
struct Held {
    id: i64,
    source: Arc<str>,
    path: Box<str>,
    key: Box<str>,
    first_indexed_at: Option<Arc<str>>,
    valid_from_raw: Option<Box<str>>,
    valid_until_raw: Option<Box<str>>,
    metadata_error: bool,
    alias: Option<Box<str>>,
    retired: Option<Box<Retired>>,
    title: Box<str>,
    indexed_at: Option<Arc<str>>,
    content_hash: Box<str>,
    size_bytes: i64,
    mtime_ns: Option<i64>,
}

struct Retired {
    state: String,
    since: Option<String>,
    vocabulary: String,
    overridden: bool,
    line: Option<i64>,
    statement: Option<String>,
}

/// What only a hit shows of a document: (title, indexed_at, content_hash, size_bytes,
/// mtime_ns, retired_line, retired_statement).
type ShownRow = (
    String,
    Option<String>,
    String,
    i64,
    Option<i64>,
    Option<i64>,
    Option<String>,
);

/// The repeated columns' last values: roots, first indexing times, indexing times.
#[derive(Default)]
struct Shared {
    roots: Repeated,
    first: Repeated,
    indexed: Repeated,
}

impl Held {
    fn of((d, shown): (DocumentRow, ShownRow), shared: &mut Shared) -> Held {
        let boxed = |s: Option<String>| s.map(String::into_boxed_str);
        let (title, indexed_at, content_hash, size_bytes, mtime_ns, line, statement) = shown;
        Held {
            id: d.0,
            source: shared.roots.shared(d.1),
            path: d.2.into(),
            key: d.3.into(),
            first_indexed_at: d.4.map(|t| shared.first.shared(t)),
            valid_from_raw: boxed(d.5),
            valid_until_raw: boxed(d.6),
            metadata_error: d.7,
            alias: boxed(d.8),
            retired: d.9.map(|(state, since, vocabulary, overridden)| {
                Box::new(Retired {
                    state,
                    since,
                    vocabulary,
                    overridden,
                    line,
                    statement,
                })
            }),
            title: title.into(),
            indexed_at: indexed_at.map(|t| shared.indexed.shared(t)),
            content_hash: content_hash.into(),
            size_bytes,
            mtime_ns,
        }
    }

    /// The trust layer's record of it (as `Corpus` makes one of its row).
    fn record(&self) -> DocumentRecord {
        let text = |s: &Option<Box<str>>| s.as_deref().map(String::from);
        let retired = self.retired.as_deref();
        DocumentRecord {
            id: self.id,
            source: self.source.clone(),
            path: self.path.to_string(),
            key: self.key.to_string(),
            first_indexed_us: self
                .first_indexed_at
                .as_deref()
                .and_then(crate::store::parse_instant_us),
            valid_from_raw: text(&self.valid_from_raw),
            valid_until_raw: text(&self.valid_until_raw),
            metadata_error: self.metadata_error,
            unreadable: false,
            alias: text(&self.alias),
            retired_overridden: retired.is_none_or(|r| r.overridden),
            retired_state: retired.map(|r| r.state.clone()),
            retired_since: retired.and_then(|r| r.since.clone()),
            retired_vocabulary: retired.map(|r| r.vocabulary.clone()),
        }
    }
}

/// What a hit shows of its document: (source, path, title, first_indexed_at, indexed_at,
/// valid_from_raw, valid_until_raw, (content_hash, size_bytes, mtime_ns), the retirement as
/// (state, since, vocabulary, line, statement) or None).
type Shown<'a> = (
    &'a str,
    &'a str,
    &'a str,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
    (&'a str, i64, Option<i64>),
    Option<(
        &'a str,
        Option<&'a str>,
        &'a str,
        Option<i64>,
        Option<&'a str>,
    )>,
);

#[pyclass(module = "recall._core", name = "Documents")]
#[derive(Default)]
pub struct PyDocuments {
    /// By id, ascending (a commit's new documents come after the rest).
    held: Vec<Held>,
    shared: Shared,
}

impl PyDocuments {
    fn place(&self, id: i64) -> Result<usize, usize> {
        self.held.binary_search_by_key(&id, |h| h.id)
    }
}

#[pymethods]
impl PyDocuments {
    #[new]
    fn new() -> Self {
        PyDocuments::default()
    }

    fn __len__(&self) -> usize {
        self.held.len()
    }

    fn __contains__(&self, id: i64) -> bool {
        self.place(id).is_ok()
    }

    /// Hold the rows `documents`, each replacing the one of its id: per document, its row as
    /// `Corpus` takes it and what only a hit shows of it (`ShownRow`).
    fn put(&mut self, documents: Vec<(DocumentRow, ShownRow)>) {
        for d in documents {
            let held = Held::of(d, &mut self.shared);
            match self.held.last() {
                Some(last) if last.id >= held.id => match self.place(held.id) {
                    Ok(at) => self.held[at] = held,
                    Err(at) => self.held.insert(at, held),
                },
                _ => self.held.push(held),
            }
        }
    }

    /// Drop the documents `ids` (ids not held are passed over); returns how many were dropped.
    fn remove(&mut self, ids: Vec<i64>) -> usize {
        let mut gone: Vec<i64> = ids
            .into_iter()
            .filter(|&id| self.place(id).is_ok())
            .collect();
        gone.sort_unstable();
        gone.dedup();
        if !gone.is_empty() {
            self.held.retain(|h| gone.binary_search(&h.id).is_err());
        }
        gone.len()
    }

    /// Give back what the list grew beyond what it holds; call once a long read is done.
    fn shrink(&mut self) {
        self.held.shrink_to_fit();
    }

    /// Drop every document.
    fn clear(&mut self) {
        self.held = Vec::new();
    }

    /// What a hit shows of document `id` (`Shown`), or None when it is not held.
    fn shown(&self, id: i64) -> Option<Shown<'_>> {
        let h = &self.held[self.place(id).ok()?];
        Some((
            &h.source,
            &h.path,
            &h.title,
            h.first_indexed_at.as_deref(),
            h.indexed_at.as_deref(),
            h.valid_from_raw.as_deref(),
            h.valid_until_raw.as_deref(),
            (&h.content_hash, h.size_bytes, h.mtime_ns),
            h.retired.as_deref().map(|r| {
                (
                    r.state.as_str(),
                    r.since.as_deref(),
                    r.vocabulary.as_str(),
                    r.line,
                    r.statement.as_deref(),
                )
            }),
        ))
    }

    /// The corpus of the held documents, in id order, with `edges` (each with its document's
    /// id) under the vocabulary setting `vocabularies`.
    #[pyo3(signature = (edges, vocabularies = "all"))]
    fn corpus(&self, py: Python<'_>, edges: Vec<(i64, EdgeRow)>, vocabularies: &str) -> PyCorpus {
        let edges = edge_records(edges);
        let corpus = py.detach(|| {
            Corpus::build_from(
                self.held.iter().map(Held::record),
                || edges,
                vocabularies,
                self.held.len(),
            )
        });
        PyCorpus::of(corpus)
    }
}
