//! The judgment for backends that retrieve in Python (PostgreSQL): `Corpus` holds one
//! generation's documents, windows and graph; `Corpus.judge` takes what both legs retrieved and
//! returns the judged hits through the same fusion, evidence and trust code as the single-file
//! store (judgment.rs), with every dense score computed here from the stored vectors.
//!
//! Owns: converting Python rows and candidates to and from the judgment's types. Does not own:
//! retrieval or SQL (the backend), or any rule (judgment.rs, trust.rs).

use std::collections::HashMap;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::dense::dot;
use crate::evidence::{idf, QueryEvidence};
use crate::fusion;
use crate::judgment::{self, Corpus, DocumentRecord, Edge, EdgeRecord, Tally};
use crate::lexical;
use crate::py_hits;
use crate::py_policy::PyPolicy;
use crate::trust::{self, Candidate, Policy};

/// (id, source, path, key, first_indexed_at, valid_from_raw, valid_until_raw, metadata_error,
/// alias, retired: (state, since, vocabulary, overridden))
pub(crate) type DocumentRow = (
    i64,
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    bool,
    Option<String>,
    Option<(String, Option<String>, String, bool)>,
);
/// An edge as Python gives and takes it: (reference as written, key, reversed, vocabulary, line,
/// statement, overridden, standing), the fields of `judgment::Edge` in order.
pub(crate) type EdgeRow = (
    String,
    String,
    bool,
    String,
    Option<i64>,
    String,
    bool,
    Option<String>,
);
/// The edge a row names.
pub(crate) fn edge_of(row: EdgeRow) -> Edge {
    let (raw, key, reversed, vocabulary, line, statement, overridden, standing) = row;
    Edge {
        raw,
        key,
        reversed,
        vocabulary,
        line,
        statement,
        overridden,
        standing,
    }
}

/// The row of an edge.
pub(crate) fn row_of(e: Edge) -> EdgeRow {
    let Edge {
        raw,
        key,
        reversed,
        vocabulary,
        line,
        statement,
        overridden,
        standing,
    } = e;
    (
        raw, key, reversed, vocabulary, line, statement, overridden, standing,
    )
}

/// A chunk as retrieved: (doc_id, float32 little-endian vector, lexical body).
type ChunkIn = (i64, Vec<u8>, String);

/// Little-endian float32 bytes from Python (`ndarray.tobytes()`) as floats; a trailing
/// partial float is dropped.
pub(crate) fn le_f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// The cosine of a stored vector (float32 little-endian bytes) with the query; 0 for a vector
/// of another dimension.
fn cosine(vector: &[u8], q: &[f32]) -> f32 {
    let v = le_f32s(vector);
    if v.len() == q.len() {
        dot(&v, q)
    } else {
        0.0
    }
}

/// SPEC §4: the dense leg's order, as the file store's exact scan orders it: by cosine, best
/// first, ties by chunk id, each chunk once.
fn by_cosine(mut scored: Vec<(i64, f32)>) -> Vec<(i64, f32)> {
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.dedup_by_key(|d| d.0);
    scored
}

/// `rows` [(chunk id, stored vector)] in the dense leg's order for `query`: what explain ranks a
/// document's chunk by on a backend that retrieves in Python.
#[pyfunction]
pub fn dense_order(query: &[u8], rows: Vec<(i64, Vec<u8>)>) -> Vec<i64> {
    let q = le_f32s(query);
    let scored = rows.iter().map(|(c, v)| (*c, cosine(v, &q))).collect();
    by_cosine(scored).into_iter().map(|(c, _)| c).collect()
}

/// An explanation as the dict `Memory.explain` returns (before its times are formatted).
pub(crate) fn explanation_dict<'py>(
    py: Python<'py>,
    e: crate::explanation::Explanation,
) -> PyResult<Bound<'py, PyDict>> {
    let claims =
        |views: Vec<crate::explanation::ClaimView>| -> PyResult<Bound<'py, pyo3::types::PyList>> {
            let list = pyo3::types::PyList::empty(py);
            for c in views {
                let d = PyDict::new(py);
                d.set_item("declarer", c.declarer)?;
                d.set_item("reference", c.reference)?;
                d.set_item("key", c.key)?;
                d.set_item("resolution", c.resolution)?;
                d.set_item("targets", c.targets)?;
                d.set_item("recorded_at_us", c.recorded_at_us)?;
                d.set_item("applies", c.applies)?;
                d.set_item("reversed", c.reversed)?;
                d.set_item("vocabulary", c.vocabulary)?;
                d.set_item("line", c.line)?;
                d.set_item("statement", c.statement)?;
                list.append(d)?;
            }
            Ok(list)
        };
    let d = PyDict::new(py);
    d.set_item("path", e.path)?;
    d.set_item("key", e.key)?;
    d.set_item("first_indexed_us", e.first_indexed_us)?;
    d.set_item("valid_from", e.valid_from)?;
    d.set_item("valid_until", e.valid_until)?;
    d.set_item("window_ok", e.window_ok)?;
    d.set_item("claims_out", claims(e.claims_out)?)?;
    d.set_item("claims_in", claims(e.claims_in)?)?;
    d.set_item("chain", e.chain)?;
    d.set_item("ambiguous", e.ambiguous)?;
    d.set_item("best_chunk", e.best_chunk.map(|(c, s)| (c, f64::from(s))))?;
    let legs = PyDict::new(py);
    legs.set_item("dense_rank", e.dense_rank)?;
    legs.set_item("lexical_rank", e.lexical_rank)?;
    legs.set_item("dense_rrf", fusion::contribution(e.dense_rank))?;
    legs.set_item("lexical_rrf", fusion::contribution(e.lexical_rank))?;
    legs.set_item(
        "fused",
        fusion::contribution(e.dense_rank) + fusion::contribution(e.lexical_rank),
    )?;
    legs.set_item("depth", crate::explanation::EXPLAIN_DEPTH)?;
    d.set_item("retrieval", legs)?;
    d.set_item("verdict", e.verdict)?;
    d.set_item("confidence", e.confidence)?;
    d.set_item("superseded_by", e.superseded_by)?;
    d.set_item("lexical", f64::from(e.lexical))?;
    d.set_item("identifiers", e.identifiers)?;
    d.set_item("identifiers_held", e.identifiers_held)?;
    d.set_item("asks_for", e.asks_for)?;
    d.set_item("lacks", e.lacks)?;
    d.set_item("alias", e.alias)?;
    let retired = match e.retired {
        Some(r) => {
            let rd = PyDict::new(py);
            rd.set_item("state", r.state)?;
            rd.set_item("since", r.since)?;
            rd.set_item("vocabulary", r.vocabulary)?;
            rd.set_item("line", r.line)?;
            rd.set_item("statement", r.statement)?;
            Some(rd)
        }
        None => None,
    };
    d.set_item("retired", retired)?;
    let ignored = pyo3::types::PyList::empty(py);
    for i in e.ignored {
        let id = PyDict::new(py);
        id.set_item("kind", i.kind)?;
        id.set_item("vocabulary", i.vocabulary)?;
        id.set_item("line", i.line)?;
        id.set_item("statement", i.statement)?;
        id.set_item("why", i.why)?;
        ignored.append(id)?;
    }
    d.set_item("ignored", ignored)?;
    Ok(d)
}

/// One column's value that document after document repeats (their root, a run's time), held
/// once: a new value is compared with the last one seen, which is the same for every document
/// of one root or one run.
#[derive(Default)]
pub(crate) struct Repeated {
    last: Option<Arc<str>>,
}

impl Repeated {
    pub(crate) fn shared(&mut self, value: String) -> Arc<str> {
        match &self.last {
            Some(r) if **r == *value => r.clone(),
            _ => self.last.insert(value.into()).clone(),
        }
    }
}

/// The trust layer's record of a document row.
fn record_of(d: DocumentRow, roots: &mut Repeated) -> DocumentRecord {
    DocumentRecord {
        id: d.0,
        source: roots.shared(d.1),
        path: d.2,
        key: d.3,
        first_indexed_us: d.4.as_deref().and_then(crate::store::parse_instant_us),
        valid_from_raw: d.5,
        valid_until_raw: d.6,
        metadata_error: d.7,
        unreadable: false,
        alias: d.8,
        retired_overridden: d.9.as_ref().is_none_or(|r| r.3),
        retired_state: d.9.as_ref().map(|r| r.0.clone()),
        retired_since: d.9.as_ref().and_then(|r| r.1.clone()),
        retired_vocabulary: d.9.map(|r| r.2),
    }
}

/// The records of edge rows.
pub(crate) fn edge_records(edges: Vec<(i64, EdgeRow)>) -> Vec<EdgeRecord> {
    edges
        .into_iter()
        .map(|(doc_id, row)| EdgeRecord {
            doc_id,
            edge: edge_of(row),
        })
        .collect()
}

#[pyclass(name = "Corpus", module = "recall._core", frozen)]
pub struct PyCorpus {
    inner: Corpus,
}

impl PyCorpus {
    pub(crate) fn of(inner: Corpus) -> PyCorpus {
        PyCorpus { inner }
    }
}

#[pymethods]
impl PyCorpus {
    #[new]
    #[pyo3(signature = (documents, edges, vocabularies = "all"))]
    fn new(documents: Vec<DocumentRow>, edges: Vec<(i64, EdgeRow)>, vocabularies: &str) -> Self {
        let mut roots = Repeated::default();
        let docs = documents
            .into_iter()
            .map(|d| record_of(d, &mut roots))
            .collect();
        PyCorpus::of(Corpus::build(docs, edge_records(edges), vocabularies))
    }

    fn __len__(&self) -> usize {
        self.inner.doc_ids.len()
    }

    /// The declarations as `stats` reports them (`edges_resolved`, `edges_dangling`,
    /// `edges_ambiguous`, `edges_self`, `edges_by_vocabulary`, `partial`, `unread`,
    /// `retired`), counted as the trust layer reads them.
    fn tally<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        tally_into(&d, &self.inner.tally())?;
        Ok(d)
    }

    /// The (source, path) of every other document whose edges in force name document
    /// `doc_id`, sorted; empty when the id is not in this corpus.
    fn declarers_toward(&self, doc_id: i64) -> Vec<(String, String)> {
        self.inner
            .index_of
            .get(doc_id)
            .map(|d| self.inner.declarers_toward(d))
            .unwrap_or_default()
    }

    /// The id of the document `file` names (a stored path, or an absolute path under an
    /// indexed root), or None.
    fn locate(&self, file: &str) -> Option<i64> {
        self.inner.locate(file).map(|d| self.inner.doc_ids[d])
    }

    /// Why document `doc_id` gets its verdict for the query (SPEC §8.2), judged on its best
    /// chunk among `chunks` [(chunk_id, vector, body)]. The backend gives the document's ranks
    /// in each leg, its stored declarations [(vocabulary, line, statement, overridden,
    /// standing)] and
    /// retirement (state, since, vocabulary, line, statement, overridden), and the store's
    /// vocabulary setting. None when the id is not in this corpus.
    #[pyo3(signature = (doc_id, query, *, text, chunks, term_dfs, chunk_count, dense_rank,
        lexical_rank, declarations, retired, vocabularies, policy))]
    #[allow(clippy::too_many_arguments)]
    fn explain<'py>(
        &self,
        py: Python<'py>,
        doc_id: i64,
        query: &[u8],
        text: &str,
        chunks: Vec<(i64, Vec<u8>, String)>,
        term_dfs: Vec<(String, u64)>,
        chunk_count: u64,
        dense_rank: Option<usize>,
        lexical_rank: Option<usize>,
        declarations: Vec<crate::explanation::DeclarationColumns>,
        retired: Option<crate::explanation::RetiredColumns>,
        vocabularies: &str,
        policy: &PyPolicy,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let corpus = &self.inner;
        let Some(d) = corpus.index_of.get(doc_id) else {
            return Ok(None);
        };
        let q = le_f32s(query);
        // Explain reads a verdict as a calibrated search would give it.
        let policy = Policy {
            unverified: false,
            ..policy.inner
        };
        let terms: Vec<(String, f64)> = term_dfs
            .into_iter()
            .map(|(t, df)| (t, idf(df, chunk_count)))
            .collect();
        let ev = QueryEvidence::new(terms, text);
        // The best chunk by cosine among those holding the identifiers the query asks for, if
        // any does, as search judges a lookup (judgment::shortlist).
        let best = chunks
            .iter()
            .map(|(chunk, vector, body)| {
                let v = le_f32s(vector);
                let score = if v.len() == q.len() { dot(&v, &q) } else { 0.0 };
                (*chunk, score, body)
            })
            .max_by(|a, b| {
                (ev.identifiers_held(a.2).cmp(&ev.identifiers_held(b.2)))
                    .then(a.1.total_cmp(&b.1))
                    .then(b.0.cmp(&a.0))
            });
        let mut cand = match best {
            Some((chunk, score, body)) => judgment::candidate(&ev, d, chunk, score, Some(body)),
            None => Candidate::dense(d, -1, f32::NEG_INFINITY),
        };
        // What the question asks for is the document's to hold, in any of its chunks.
        if cand.lacks.is_some()
            && chunks
                .iter()
                .any(|(_, _, b)| ev.answer().lacks(b).is_none())
        {
            cand.lacks = None;
        }
        let best = best.map(|(chunk, score, _)| (chunk, score));
        let mut e = crate::explanation::explain(corpus, d, best, &cand, &ev, &policy);
        e.dense_rank = dense_rank;
        e.lexical_rank = lexical_rank;
        (e.retired, e.ignored) = crate::explanation::declarations_view(
            declarations,
            retired,
            corpus.windows[d].retired,
            vocabularies,
        );
        explanation_dict(py, e).map(Some)
    }

    /// Judge what the legs retrieved (SPEC §4–§5). `dense` holds the nearest chunk ids (any
    /// order: they are ordered here by the cosine of the stored vectors, ties by chunk id, as
    /// the file store's exact scan orders them) and `lexical` the lexical leg's, best first
    /// (`bm25_rank`); both are cut to `candidates`. `chunks` maps each id to (doc_id, vector,
    /// lexical body); `term_dfs` gives the document frequency of each analysed query term among
    /// `chunk_count` chunks; `fetch(doc_id)` returns a successor's chunks as [(chunk_id, vector,
    /// body)]. Returns the hits (chunk, doc_id, verdict, confidence, …) and the dense leg's
    /// (chunk, cosine) best first.
    #[pyo3(signature = (query, *, text, dense, lexical, chunks, term_dfs, chunk_count, fetch, k,
        candidates, policy))]
    #[allow(clippy::too_many_arguments)]
    fn judge<'py>(
        &self,
        py: Python<'py>,
        query: &[u8],
        text: &str,
        dense: Vec<i64>,
        lexical: Vec<i64>,
        chunks: HashMap<i64, ChunkIn>,
        term_dfs: Vec<(String, u64)>,
        chunk_count: u64,
        fetch: Bound<'py, PyAny>,
        k: usize,
        candidates: usize,
        policy: &PyPolicy,
    ) -> PyResult<Bound<'py, PyDict>> {
        let q = le_f32s(query);
        let corpus = &self.inner;
        let policy = policy.inner;
        let score_of = |vector: &[u8]| cosine(vector, &q);
        let doc_of = |chunk: i64| {
            chunks
                .get(&chunk)
                .and_then(|(doc_id, _, _)| corpus.index_of.get(*doc_id))
        };
        // SPEC §4: the dense leg's cosines, computed here from the vectors as stored, and its
        // order, as the exact scan of the file store orders them.
        let mut dense = by_cosine(
            dense
                .into_iter()
                .filter(|&c| doc_of(c).is_some())
                .map(|c| (c, score_of(&chunks[&c].1)))
                .collect(),
        );
        dense.truncate(candidates);
        let dfs: HashMap<String, u64> = term_dfs.into_iter().collect();
        let df = |t: &str| dfs.get(t).copied().unwrap_or(0);
        let lexical_ids: Vec<i64> = lexical
            .into_iter()
            .filter(|&c| doc_of(c).is_some())
            .take(candidates)
            .collect();
        let dense_ids: Vec<i64> = dense.iter().map(|&(c, _)| c).collect();
        let fused = fusion::rrf(&dense_ids, &lexical_ids);
        let terms: Vec<(String, f64)> = lexical::terms(text)
            .into_iter()
            .map(|t| {
                let n = df(&t);
                (t, idf(n, chunk_count))
            })
            .collect();
        let ev = QueryEvidence::new(terms, text);
        let (cands, retrieval) = judgment::shortlist(&fused, k, doc_of, |f, doc| {
            let (_, vector, body) = &chunks[&f.chunk];
            let score = dense
                .get(f.dense_rank.map_or(usize::MAX, |r| r - 1))
                .map_or_else(|| score_of(vector), |&(_, s)| s);
            judgment::candidate(&ev, doc, f.chunk, score, Some(body))
        });
        let mut failure: Option<PyErr> = None;
        let fetch_one = |d: usize| -> Option<Candidate> {
            let rows = fetch
                .call1((corpus.doc_ids[d],))
                .and_then(|r| r.extract::<Vec<(i64, Vec<u8>, String)>>());
            match rows {
                Ok(rows) => rows
                    .iter()
                    .map(|(chunk, vector, body)| (*chunk, score_of(vector), body))
                    .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
                    .map(|(chunk, score, body)| {
                        judgment::candidate(&ev, d, chunk, score, Some(body))
                    }),
                Err(e) => {
                    failure.get_or_insert(e);
                    None
                }
            }
        };
        let judged = trust::judge(&corpus.graph, &corpus.windows, &cands, &policy, fetch_one);
        if let Some(e) = failure {
            return Err(e);
        }
        let hits = PyList::empty(py);
        for h in judged {
            let path_of = |i: usize| corpus.graph.node(i).path.clone();
            let named = py_hits::Named {
                superseded_by: h.superseded_by.map(path_of),
                promoted_from: h.promoted_from.map(path_of),
                displaced_by: h.displaced_by.map(path_of),
                lacks: h.lacks.map(|l| ev.answer().describe(l)),
                unread: corpus.unread_of(h.doc),
            };
            let d = py_hits::judgment(py, &h, named, retrieval.get(&h.chunk))?;
            d.set_item("chunk", h.chunk)?;
            d.set_item("doc_id", corpus.doc_ids[h.doc])?;
            d.set_item("retired_in_force", corpus.windows[h.doc].retired)?;
            hits.append(d)?;
        }
        let out = PyDict::new(py);
        out.set_item("hits", hits)?;
        let dense: Vec<(i64, f64)> = dense.iter().map(|&(c, s)| (c, f64::from(s))).collect();
        out.set_item("dense", dense)?;
        Ok(out)
    }
}

/// SPEC §7: the relevance a calibration's threshold applies to, for a hit's evidence under the
/// given weights (`Candidate::relevance`, the one formula; calibration fits the weights with it).
#[pyfunction]
pub fn relevance(
    score: f32,
    lexical: f32,
    identifier_match: bool,
    lexical_weight: f64,
    identifier_weight: f64,
) -> f64 {
    let candidate = trust::Candidate {
        lexical,
        identifiers_held: true,
        identifier_match,
        ..trust::Candidate::dense(0, 0, score)
    };
    candidate.relevance(&trust::Policy {
        now_us: 0,
        known_as_of_us: None,
        threshold: 0.0,
        scale: 1.0,
        unverified: false,
        lexical_weight,
        identifier_weight,
    })
}

/// A store's declaration counts as `stats` reports them: one writer for every backend.
pub(crate) fn tally_into(d: &Bound<'_, PyDict>, t: &Tally) -> PyResult<()> {
    let (resolved, dangling, ambiguous, selfref) = t.claims;
    d.set_item("edges_resolved", resolved)?;
    d.set_item("edges_dangling", dangling)?;
    d.set_item("edges_ambiguous", ambiguous)?;
    d.set_item("edges_self", selfref)?;
    d.set_item("edges_by_vocabulary", t.by_vocabulary.clone())?;
    d.set_item("partial", t.partial)?;
    d.set_item("unread", t.unread)?;
    d.set_item("retired", t.retired)
}

/// One text's terms per text of `texts`, as BM25 weighs them among those texts: (term,
/// weight, the first word it was read from). The store's lexical model for comparing notes
/// with one another (`recall check`).
#[pyfunction]
pub fn bm25_vectors(texts: Vec<String>) -> Vec<Vec<(String, f32, String)>> {
    let borrowed: Vec<&str> = texts.iter().map(String::as_str).collect();
    lexical::bm25_vectors(&borrowed)
}

/// The text the lexical leg indexes for a chunk (title, heading path, text): one rule for
/// every backend.
#[pyfunction]
pub fn lexical_body(title: &str, heading_path: &str, text: &str) -> String {
    crate::judgment::lexical_body(title, heading_path, text)
}

/// What a backend stores for the lexical leg of one chunk's text, from one analysis: its
/// `tsvector` as PostgreSQL receives one in binary, its token count (BM25's length) and its
/// distinct terms.
#[pyfunction]
pub fn lexical_row<'py>(
    py: Python<'py>,
    text: &str,
) -> (Bound<'py, pyo3::types::PyBytes>, usize, Vec<String>) {
    let tokens = lexical::analyse(text);
    let mut seen = std::collections::HashSet::new();
    let distinct = tokens.iter().filter(|t| seen.insert(*t)).cloned().collect();
    let body = pyo3::types::PyBytes::new(py, &lexical::tsvector_binary(&tokens));
    (body, tokens.len(), distinct)
}

/// The distinct analysed terms of `text`, in order (the lexical leg's analyser).
#[pyfunction]
pub fn lexical_terms(text: &str) -> Vec<String> {
    lexical::terms(text)
}
