//! Explain (SPEC §8.2): why one document gets its verdict for a query, over any backend.
//!
//! Owns: what an explanation holds (claims out and in with where each was written, the chain,
//! the window, the verdict of the document's best chunk) and the view of a document's
//! declarations that are not in force. Pure: each backend supplies the document's best chunk,
//! its ranks in the legs and its stored declarations (store/explain.rs for the file store,
//! `Corpus.explain` for PostgreSQL). Does not own: the rules (trust.rs) or retrieval.

use crate::corpus::{vocabulary_in_force, Corpus};
use crate::evidence::QueryEvidence;
use crate::trust::{self, Candidate, Policy};

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
    /// "overridden by frontmatter", "vocabulary not in force", "partial: never a full edge"
    /// or "unread: not a status the reader knows".
    pub why: &'static str,
}

/// (vocabulary, line, statement, overridden, standing) of a stored edge.
pub type DeclarationColumns = (String, Option<i64>, Option<String>, bool, Option<String>);

/// (state, since, vocabulary, line, statement, overridden) as stored.
pub type RetiredColumns = (
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
    /// What the question asks a passage to hold beyond its topic (answer.rs), and what the
    /// best chunk lacks of it: an `ok` document that lacks it is `not_entailed`.
    pub asks_for: Vec<String>,
    pub lacks: Option<String>,
    pub alias: Option<String>,
    /// The retirement in force, if any.
    pub retired: Option<RetiredView>,
    pub ignored: Vec<IgnoredDeclaration>,
}

/// A document's retirement (when in force) and its declarations not in force under `setting`:
/// `edges` are its stored (vocabulary, line, statement, overridden), `retired` its stored
/// terminal state.
pub fn declarations_view(
    edges: impl IntoIterator<Item = DeclarationColumns>,
    retired: Option<RetiredColumns>,
    retired_in_force: bool,
    setting: &str,
) -> (Option<RetiredView>, Vec<IgnoredDeclaration>) {
    let why = |overridden: bool| {
        if overridden {
            "overridden by frontmatter"
        } else {
            "vocabulary not in force"
        }
    };
    let mut ignored = Vec::new();
    for (vocabulary, line, statement, overridden, standing) in edges {
        // SPEC §2.5: partial and unread statements are shown, never in force.
        let (kind, why) = match standing.as_deref() {
            _ if overridden || !vocabulary_in_force(setting, &vocabulary) => {
                ("edge", why(overridden))
            }
            None => continue,
            Some("partial") => ("partial", "partial: never a full edge"),
            Some(_) => ("unread", "unread: not a status the reader knows"),
        };
        ignored.push(IgnoredDeclaration {
            kind,
            vocabulary,
            line,
            statement: statement.unwrap_or_default(),
            why,
        });
    }
    let mut view = None;
    if let Some((state, since, vocabulary, line, statement, overridden)) = retired {
        let statement = statement.unwrap_or_default();
        if retired_in_force {
            view = Some(RetiredView {
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
    (view, ignored)
}

/// Document `d`'s explanation at `policy`, judged on its best chunk (`best`, with `cand` its
/// candidate; none: the document has no vector). The legs' ranks, the retirement view and the
/// ignored declarations are left for the backend to fill in.
pub fn explain(
    corpus: &Corpus,
    d: usize,
    best: Option<(i64, f32)>,
    cand: &Candidate,
    ev: &QueryEvidence,
    policy: &Policy,
) -> Explanation {
    let g = &corpus.graph;
    let at = policy.at();
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
        let meta = corpus.edge_meta.get(c.edge).cloned().unwrap_or_default();
        ClaimView {
            declarer: path_of(c.declarer),
            reference: meta.raw,
            key: c.key.clone(),
            resolution,
            targets,
            recorded_at_us: g.node(c.declarer).first_indexed_us,
            applies: g.claim_applies_at(id, at),
            reversed: c.reversed,
            vocabulary: meta.vocabulary,
            line: meta.line,
            statement: meta.statement,
        }
    };
    let (verdict, successor) = trust::verdict(g, &corpus.windows, d, cand.proven(policy), policy);
    let verdict = trust::answered(verdict, cand.lacks);
    let answer = ev.answer();
    let asks_for = answer
        .kind()
        .map(|k| k.describe().to_string())
        .into_iter()
        .chain(answer.numbers().iter().cloned())
        .collect();
    let w = &corpus.windows[d];
    Explanation {
        path: path_of(d),
        key: g.node(d).key.clone(),
        first_indexed_us: g.node(d).first_indexed_us,
        valid_from: w.valid_from_raw.as_deref().map(str::to_owned),
        valid_until: w.valid_until_raw.as_deref().map(str::to_owned),
        window_ok: trust::window_bounds(w).is_some(),
        claims_out: g.outgoing(d).iter().map(|&id| view(id)).collect(),
        claims_in: g.incoming(d).map(view).collect(),
        chain: g.walk_at(d, at).into_iter().map(path_of).collect(),
        ambiguous: g.is_ambiguous_at(d, at),
        best_chunk: best,
        dense_rank: None,
        lexical_rank: None,
        verdict: verdict.as_str(),
        confidence: cand.confidence(policy),
        superseded_by: successor.map(path_of),
        lexical: cand.lexical,
        identifiers: ev.identifiers().to_vec(),
        identifiers_held: cand.identifiers_held,
        asks_for,
        lacks: cand.lacks.map(|l| answer.describe(l)),
        alias: g.node(d).alias.clone(),
        retired: None,
        ignored: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(
        vocabulary: &str,
        line: i64,
        overridden: bool,
        standing: Option<&str>,
    ) -> DeclarationColumns {
        (
            vocabulary.into(),
            Some(line),
            Some(format!("statement {line}")),
            overridden,
            standing.map(str::to_string),
        )
    }

    fn shown(ignored: &[IgnoredDeclaration]) -> Vec<(&str, Option<i64>, &str)> {
        ignored.iter().map(|i| (i.kind, i.line, i.why)).collect()
    }

    #[test]
    fn declarations_not_in_force_are_shown_with_why() {
        let edges = || {
            vec![
                edge("frontmatter", 1, false, None),
                edge("madr", 2, true, None),
                edge("pep", 3, false, None),
                edge("madr", 4, false, Some("partial")),
                edge("madr", 5, false, Some("unread")),
            ]
        };
        let retired = || {
            Some((
                "rejected".to_string(),
                Some("2026-01-01".to_string()),
                "madr".to_string(),
                Some(6),
                Some("Status: rejected".to_string()),
                false,
            ))
        };
        let (view, ignored) = declarations_view(edges(), retired(), true, "all");
        let view = view.expect("the retirement in force is shown");
        assert_eq!(
            (view.state.as_str(), view.since.as_deref(), view.line),
            ("rejected", Some("2026-01-01"), Some(6))
        );
        assert_eq!(view.statement, "Status: rejected");
        assert_eq!(
            shown(&ignored),
            vec![
                ("edge", Some(2), "overridden by frontmatter"),
                ("partial", Some(4), "partial: never a full edge"),
                ("unread", Some(5), "unread: not a status the reader knows"),
            ]
        );
        assert_eq!(ignored[0].statement, "statement 2");
        let (view, ignored) = declarations_view(edges(), retired(), false, "frontmatter");
        assert!(view.is_none());
        assert_eq!(
            shown(&ignored),
            vec![
                ("edge", Some(2), "overridden by frontmatter"),
                ("edge", Some(3), "vocabulary not in force"),
                ("edge", Some(4), "vocabulary not in force"),
                ("edge", Some(5), "vocabulary not in force"),
                ("retirement", Some(6), "vocabulary not in force"),
            ]
        );
    }
}
