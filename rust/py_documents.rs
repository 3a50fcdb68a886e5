//! `Documents`: the documents a process holds of a store that keeps them elsewhere (a
//! PostgreSQL namespace), as the trust layer's records, kept as rows are written and removed,
//! and the corpus built from them for each generation.
//!
//! Owns: holding the records (a value many documents share, such as their root or their first
//! run's time, held once), what a hit shows of its document from them, and building the
//! corpus. Does not own: which rows changed (the Python side of the server backend) or any
//! rule (the judgment crate).

use std::sync::Arc;

use pyo3::prelude::*;

use crate::judgment::{Corpus, DocumentRecord};
use crate::py_corpus::{edge_records, DocumentRow, EdgeRow, PyCorpus, Roots};

/// A held document: its row, each string boxed to its length, a value many documents share
/// (their root, their first run's time) held once, the retirement (which few have) boxed.
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
}

/// (state, since, vocabulary, overridden), as the row gives it.
type Retired = (String, Option<String>, String, bool);

impl Held {
    fn of(d: DocumentRow, roots: &mut Roots, runs: &mut Roots) -> Held {
        let boxed = |s: Option<String>| s.map(String::into_boxed_str);
        Held {
            id: d.0,
            source: roots.shared(d.1),
            path: d.2.into(),
            key: d.3.into(),
            first_indexed_at: d.4.map(|t| runs.shared(t)),
            valid_from_raw: boxed(d.5),
            valid_until_raw: boxed(d.6),
            metadata_error: d.7,
            alias: boxed(d.8),
            retired: d.9.map(Box::new),
        }
    }

    /// The trust layer's record of it (`record_of` of its row).
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
            retired_overridden: retired.is_none_or(|r| r.3),
            retired_state: retired.map(|r| r.0.clone()),
            retired_since: retired.and_then(|r| r.1.clone()),
            retired_vocabulary: retired.map(|r| r.2.clone()),
        }
    }
}

/// What a hit shows of its document from what is held: (source, path, first_indexed_at,
/// valid_from_raw, valid_until_raw, retired_state, retired_since, retired_vocabulary).
type Shown<'a> = (
    &'a str,
    &'a str,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
);

#[pyclass(module = "recall._core", name = "Documents")]
#[derive(Default)]
pub struct PyDocuments {
    /// By id, ascending (a commit's new documents come after the rest).
    held: Vec<Held>,
    roots: Roots,
    runs: Roots,
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

    /// Hold the rows `documents` (`Corpus`'s document rows), each replacing the one of its id.
    fn put(&mut self, documents: Vec<DocumentRow>) {
        for d in documents {
            let held = Held::of(d, &mut self.roots, &mut self.runs);
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

    /// What a hit shows of document `id` from what is held (`Shown`), or None when it is not.
    fn shown(&self, id: i64) -> Option<Shown<'_>> {
        let h = &self.held[self.place(id).ok()?];
        let retired = h.retired.as_deref();
        Some((
            &h.source,
            &h.path,
            h.first_indexed_at.as_deref(),
            h.valid_from_raw.as_deref(),
            h.valid_until_raw.as_deref(),
            retired.map(|r| r.0.as_str()),
            retired.and_then(|r| r.1.as_deref()),
            retired.map(|r| r.2.as_str()),
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
