//! Explain over a store (SPEC §8.2): why one document gets its verdict for a query.
//!
//! Owns: the per-document explanation (key, claims out and in, chain, window, best chunk, the
//! rank in each leg). Does not own: the search itself or the lexical evidence of a candidate
//! (search.rs), the rules (trust.rs) or loading the cache (cache.rs).

use std::path::Path;

use crate::errors::Result;
use crate::trust::{self, Candidate, Policy};

use super::Store;

/// How deep `explain` looks into each leg for a document's rank.
pub const EXPLAIN_DEPTH: usize = 100;

/// One declared reference seen from a document, for `explain`.
#[derive(Debug, Clone)]
pub struct ClaimView {
    pub declarer: String,
    pub reference: String,
    pub key: String,
    /// "resolved", "dangling", "self" or "ambiguous".
    pub resolution: &'static str,
    pub targets: Vec<String>,
    pub recorded_at_us: Option<i64>,
    pub applies: bool,
}

/// Why one document gets its verdict for a query (SPEC §8.2 `explain`).
#[derive(Debug, Clone)]
pub struct Explanation {
    pub path: String,
    pub key: String,
    pub first_indexed_us: Option<i64>,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub window_ok: bool,
    pub claims_out: Vec<ClaimView>,
    pub claims_in: Vec<ClaimView>,
    pub chain: Vec<String>,
    pub ambiguous: bool,
    pub best_chunk: Option<(i64, f32)>,
    /// Rank (1-based) of this document's best chunk in each leg's top `EXPLAIN_DEPTH`.
    pub dense_rank: Option<usize>,
    pub lexical_rank: Option<usize>,
    pub verdict: &'static str,
    pub confidence: f64,
    pub superseded_by: Option<String>,
    /// SPEC §7 evidence of the best chunk: lexical share, the identifiers the query asks for
    /// and whether the chunk holds them.
    pub lexical: f32,
    pub identifiers: Vec<String>,
    pub identifiers_held: bool,
}

impl Store {
    /// Explain one document's verdict for `query` (SPEC §8.2): its key, the claims it declares
    /// and receives (dangling and ambiguous included), the chain walk, its window against now
    /// and its best chunk's cosine against the threshold. `file` is a stored path or an
    /// absolute path under an indexed root. Returns None when no document matches.
    pub fn explain(
        &mut self,
        file: &str,
        query: &[f32],
        text: &str,
        policy: &Policy,
    ) -> Result<Option<Explanation>> {
        self.ensure_cache()?;
        self.lexical_mut()?;
        let lexical = self
            .lexical
            .as_ref()
            .expect("loaded above")
            .index
            .search(text, EXPLAIN_DEPTH)?;
        let cache = self.cache.as_ref().expect("cache loaded above");
        let found = cache.locations.iter().position(|(source, path)| {
            path == file || Path::new(source).join(path) == Path::new(file)
        });
        let Some(d) = found else { return Ok(None) };
        let g = &cache.graph;
        let k = policy.known_as_of_us;
        let path_of = |i: usize| g.node(i).path.clone();
        let view = |id: usize| {
            let c = g.claim(id);
            let (resolution, targets) = match &c.resolution {
                crate::graph::Resolution::Dangling => ("dangling", vec![]),
                crate::graph::Resolution::SelfReference => ("self", vec![path_of(c.declarer)]),
                crate::graph::Resolution::Resolved(t) => ("resolved", vec![path_of(*t)]),
                crate::graph::Resolution::Ambiguous(ts) => {
                    ("ambiguous", ts.iter().map(|&t| path_of(t)).collect())
                }
            };
            ClaimView {
                declarer: path_of(c.declarer),
                reference: cache.edge_raw.get(c.edge).cloned().unwrap_or_default(),
                key: c.key.clone(),
                resolution,
                targets,
                recorded_at_us: g.node(c.declarer).first_indexed_us,
                applies: g.claim_applies(id, k),
            }
        };
        let best_chunk = if query.len() == cache.dense.dim() {
            cache.doc_rows[d]
                .iter()
                .map(|&row| (cache.row_chunk[row], cache.dense.score(row, query)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
        } else {
            None
        };
        let ev = self.query_evidence(text)?;
        let cand = match best_chunk {
            Some((chunk, score)) => self.candidate(&ev, d, chunk, score),
            None => Candidate::dense(d, -1, f32::NEG_INFINITY),
        };
        let (verdict, successor) =
            trust::verdict(g, &cache.windows, d, cand.proven(policy), policy);
        let w = &cache.windows[d];
        Ok(Some(Explanation {
            path: path_of(d),
            key: g.node(d).key.clone(),
            first_indexed_us: g.node(d).first_indexed_us,
            valid_from: w.valid_from_raw.clone(),
            valid_until: w.valid_until_raw.clone(),
            window_ok: trust::window_bounds(w).is_some(),
            claims_out: g.outgoing(d).iter().map(|&id| view(id)).collect(),
            claims_in: g.incoming(d).map(view).collect(),
            chain: g.walk(d, k).into_iter().map(path_of).collect(),
            ambiguous: g.is_ambiguous(d, k),
            best_chunk,
            dense_rank: cache
                .dense
                .top_k(query, EXPLAIN_DEPTH)
                .iter()
                .position(|&(row, _)| cache.row_doc[row] == d)
                .map(|i| i + 1),
            lexical_rank: lexical
                .iter()
                .position(|(c, _)| {
                    cache
                        .chunk_row
                        .get(c)
                        .is_some_and(|&r| cache.row_doc[r] == d)
                })
                .map(|i| i + 1),
            verdict: verdict.as_str(),
            confidence: cand.confidence(policy),
            superseded_by: successor.map(path_of),
            lexical: cand.lexical,
            identifiers: ev.identifiers().to_vec(),
            identifiers_held: cand.identifiers_held,
        }))
    }
}
