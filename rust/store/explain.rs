//! Explain over a store (SPEC §8.2): why one document gets its verdict for a query.
//!
//! Owns: the per-document explanation (key, claims out and in, chain, window, best chunk, the
//! rank in each leg). Does not own: the search itself or the lexical evidence of a candidate
//! (search.rs), the rules (trust.rs) or loading the cache (cache.rs).

use std::path::Path;

use crate::errors::Result;
use crate::trust::{self, Candidate, Policy};

use rusqlite::OptionalExtension;

use super::Store;
use crate::judgment::vocabulary_in_force;

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
    /// The reference names the declarer's successor (`Superseded-By:`).
    pub reversed: bool,
    /// Where it was written (SPEC §8.4): vocabulary, line, the words.
    pub vocabulary: String,
    pub line: Option<i64>,
    pub statement: String,
}

/// A declaration of the document that is not in force: a header statement frontmatter
/// overrode, or a vocabulary the store's setting leaves out (SPEC §8.4).
#[derive(Debug, Clone)]
pub struct IgnoredDeclaration {
    /// "edge" or "retirement".
    pub kind: &'static str,
    pub vocabulary: String,
    pub line: Option<i64>,
    pub statement: String,
    /// "overridden by frontmatter" or "vocabulary not in force".
    pub why: &'static str,
}

/// (state, since, vocabulary, line, statement, overridden) as stored.
type RetiredColumns = (
    String,
    Option<String>,
    String,
    Option<i64>,
    Option<String>,
    bool,
);

/// A terminal state the document declares (SPEC §8.4).
#[derive(Debug, Clone)]
pub struct RetiredView {
    pub state: String,
    pub since: Option<String>,
    pub vocabulary: String,
    pub line: Option<i64>,
    pub statement: String,
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
    pub alias: Option<String>,
    /// The retirement in force, if any.
    pub retired: Option<RetiredView>,
    pub ignored: Vec<IgnoredDeclaration>,
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
        let found = cache.corpus.locations.iter().position(|(source, path)| {
            path == file || Path::new(source).join(path) == Path::new(file)
        });
        let Some(d) = found else { return Ok(None) };
        let g = &cache.corpus.graph;
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
            let meta = cache
                .corpus
                .edge_meta
                .get(c.edge)
                .cloned()
                .unwrap_or_default();
            ClaimView {
                declarer: path_of(c.declarer),
                reference: meta.raw,
                key: c.key.clone(),
                resolution,
                targets,
                recorded_at_us: g.node(c.declarer).first_indexed_us,
                applies: g.claim_applies(id, k),
                reversed: c.reversed,
                vocabulary: meta.vocabulary,
                line: meta.line,
                statement: meta.statement,
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
            trust::verdict(g, &cache.corpus.windows, d, cand.proven(policy), policy);
        let w = &cache.corpus.windows[d];
        let (retired, ignored) = self.declarations_of(cache.corpus.doc_ids[d], w.retired)?;
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
            alias: g.node(d).alias.clone(),
            retired,
            ignored,
        }))
    }

    /// A document's retirement (when in force) and its declarations not in force.
    fn declarations_of(
        &self,
        doc_id: i64,
        retired_in_force: bool,
    ) -> Result<(Option<RetiredView>, Vec<IgnoredDeclaration>)> {
        let setting = self.meta("vocabularies")?.unwrap_or_else(|| "all".into());
        let why = |overridden: bool| {
            if overridden {
                "overridden by frontmatter"
            } else {
                "vocabulary not in force"
            }
        };
        let mut ignored = Vec::new();
        let mut stmt = self.conn.prepare_cached(
            "SELECT vocabulary, line, statement, overridden FROM edges WHERE doc_id = ?1
             ORDER BY id",
        )?;
        let mut rows = stmt.query([doc_id])?;
        while let Some(r) = rows.next()? {
            let vocabulary: String = r.get(0)?;
            let overridden: bool = r.get(3)?;
            if overridden || !vocabulary_in_force(&setting, &vocabulary) {
                ignored.push(IgnoredDeclaration {
                    kind: "edge",
                    vocabulary,
                    line: r.get(1)?,
                    statement: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                    why: why(overridden),
                });
            }
        }
        let row: Option<RetiredColumns> = self
            .conn
            .query_row(
                "SELECT retired_state, retired_since, retired_vocabulary, retired_line,
                            retired_statement, retired_overridden
                     FROM documents WHERE id = ?1 AND retired_state IS NOT NULL",
                [doc_id],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                },
            )
            .optional()?;
        let mut retired = None;
        if let Some((state, since, vocabulary, line, statement, overridden)) = row {
            let statement = statement.unwrap_or_default();
            if retired_in_force {
                retired = Some(RetiredView {
                    state,
                    since,
                    vocabulary,
                    line,
                    statement,
                });
            } else {
                ignored.push(IgnoredDeclaration {
                    kind: "retirement",
                    vocabulary,
                    line,
                    statement,
                    why: why(overridden),
                });
            }
        }
        Ok((retired, ignored))
    }
}
