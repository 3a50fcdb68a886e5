//! The core's free functions for Python: hashing embeddings, the declaration triggers, reference
//! resolution, query identifiers, fusion and the trust layer's judgment over plain rows. Each
//! wraps a plain Rust module so it is tested without Python.

use pyo3::prelude::*;

use crate::py_policy::PyPolicy;
use pyo3::types::PyBytes;

use crate::{evidence, fusion, graph, hashing, store, triggers, trust};

/// Embed `texts` with `hashing-dim`; returns `len(texts) * dim` little-endian float32 bytes.
#[pyfunction]
pub(crate) fn hashing_embed<'py>(
    py: Python<'py>,
    texts: Vec<String>,
    dim: usize,
) -> Bound<'py, PyBytes> {
    let out = py.detach(|| store::f32_blob(&hashing::embed(&texts, dim)));
    PyBytes::new(py, &out)
}

/// SPEC §2.5: whether a text may declare something about itself (a status, a supersession, a
/// retirement word), in one scan; a text that may not is not read line by line.
#[pyfunction]
#[pyo3(signature = (text, status = true))]
pub(crate) fn may_declare(text: &str, status: bool) -> bool {
    triggers::may_declare(text, status)
}

/// Character offsets where `may_declare`'s words start in `text` (leftmost, not overlapping).
#[pyfunction]
#[pyo3(signature = (text, status = true))]
pub(crate) fn trigger_offsets(text: &str, status: bool) -> Vec<usize> {
    triggers::offsets(text, status)
}

/// SPEC §2.3 resolution key of a reference or a document path.
#[pyfunction]
pub(crate) fn resolution_key(reference: &str) -> String {
    graph::resolution_key(reference)
}

/// How declared references resolve among documents, exactly as the trust layer resolves them
/// (SPEC §2.3, §2.5): documents [(folder, file name, key, alias)], edges [(declarer, key,
/// scoped)] -> per edge ("resolved" | "dangling" | "self" | "ambiguous", [document indices]).
#[pyfunction]
pub(crate) fn resolve_references(
    documents: Vec<(String, String, String, Option<String>)>,
    edges: Vec<(usize, String, bool)>,
) -> Vec<(&'static str, Vec<usize>)> {
    let nodes = documents
        .into_iter()
        .map(|(folder, name, key, alias)| graph::Node {
            key,
            path: name,
            first_indexed_us: None,
            alias,
            folder,
        })
        .collect();
    let declared: Vec<graph::Declared> = edges
        .iter()
        .map(|(declarer, key, scoped)| graph::Declared {
            declarer: *declarer,
            key: key.clone(),
            reversed: false,
            scoped: *scoped,
            since_us: None,
        })
        .collect();
    let g = graph::Graph::build_declared(nodes, &declared);
    let mut out = vec![("dangling", Vec::new()); edges.len()];
    for d in 0..g.len() {
        for &id in g.outgoing(d) {
            let c = g.claim(id);
            out[c.edge] = match &c.resolution {
                graph::Resolution::Dangling => ("dangling", Vec::new()),
                graph::Resolution::SelfReference => ("self", vec![c.declarer]),
                graph::Resolution::Resolved(t) => ("resolved", vec![*t]),
                graph::Resolution::Ambiguous(ts) => ("ambiguous", ts.clone()),
            };
        }
    }
    out
}

/// SPEC §7: the identifiers a query asks for (`REF-00042`, `E1102`, `v2.3.1`), lower-cased.
#[pyfunction]
pub(crate) fn identifiers(query: &str) -> Vec<String> {
    evidence::identifiers(query)
}

/// SPEC §4 reciprocal-rank fusion of two ranked id lists: (id, dense rank, lexical rank, score)
/// best first.
#[pyfunction]
pub(crate) fn rrf(
    dense: Vec<i64>,
    lexical: Vec<i64>,
) -> Vec<(i64, Option<usize>, Option<usize>, f64)> {
    fusion::rrf(&dense, &lexical)
        .into_iter()
        .map(|f| (f.chunk, f.dense_rank, f.lexical_rank, f.score))
        .collect()
}

type DocRow = (
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
);
type JudgedRow = (
    usize,
    &'static str,
    f64,
    Option<usize>,
    bool,
    bool,
    f64,
    Option<usize>,
);

/// The pure trust layer over plain data (SPEC §5): the same code the store's search runs, exposed
/// so it can be tested against a reference reading of the spec.
#[pyfunction]
#[pyo3(signature = (docs, edges, candidates, fetchable, policy))]
pub(crate) fn judge(
    docs: Vec<DocRow>,
    edges: Vec<(usize, String)>,
    candidates: Vec<(usize, f64)>,
    fetchable: std::collections::HashMap<usize, f64>,
    policy: &PyPolicy,
) -> Vec<JudgedRow> {
    let windows: Vec<trust::Window> = docs
        .iter()
        .map(|(_, _, from, until, err, _)| trust::Window {
            valid_from_raw: from.as_deref().map(Into::into),
            valid_until_raw: until.as_deref().map(Into::into),
            metadata_error: err.is_some(),
            ..trust::Window::default()
        })
        .collect();
    let nodes = docs
        .into_iter()
        .map(|(key, path, _, _, _, first)| graph::Node {
            key,
            path,
            first_indexed_us: first,
            alias: None,
            folder: String::new(),
        })
        .collect();
    let g = graph::Graph::build(nodes, &edges);
    // The bare trust layer: relevance is the dense score alone.
    let policy = trust::Policy {
        lexical_weight: 0.0,
        identifier_weight: 0.0,
        ..policy.inner
    };
    let cands: Vec<trust::Candidate> = candidates
        .iter()
        .map(|&(doc, score)| trust::Candidate::dense(doc, doc as i64, score as f32))
        .collect();
    let fetch = |d: usize| {
        fetchable
            .get(&d)
            .map(|&s| trust::Candidate::dense(d, d as i64, s as f32))
    };
    trust::judge(&g, &windows, &cands, &policy, fetch)
        .into_iter()
        .map(|h| {
            (
                h.doc,
                h.verdict.as_str(),
                h.confidence,
                h.superseded_by,
                h.promoted,
                h.fetched,
                f64::from(h.score),
                h.promoted_from,
            )
        })
        .collect()
}
