//! Lexical evidence of relevance (SPEC §7): what a hit's text holds of the query, beside the
//! dense cosine, for the confidence model and the identifier rule.
//!
//! Owns: the share of the query's IDF mass a hit's text matches, and identifier-like tokens
//! (`REF-00042`, `E1102`, `v2.3.1`) with the test of whether a text holds them. Pure: the store
//! supplies analysed terms and their IDF; no I/O. Does not own: analysis (lexical.rs) or the
//! verdicts that use the evidence (trust.rs).

use std::collections::HashSet;

use crate::answer::AnswerEvidence;

/// Characters that join the parts of one identifier (`INC-4471`, `v2.3.1`, `svc_a/b2`).
const JOINERS: &[char] = &['-', '.', '_', '/'];

/// Tokens of `text` as identifiers are written: runs of letters, digits and joiners, trimmed
/// of joiners at either end, lower-cased.
fn raw_tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || JOINERS.contains(&c)))
        .map(|t| t.trim_matches(JOINERS))
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
}

/// An identifier names one thing exactly: it mixes digits with letters (`E1102`, `REF-00042`)
/// or joins digit groups (`3.14.2`, `2026-03`). A plain number or word is not one.
fn is_identifier(token: &str) -> bool {
    let digit = token.chars().any(|c| c.is_ascii_digit());
    let letter = token.chars().any(char::is_alphabetic);
    let joined = token.contains(JOINERS);
    token.chars().count() >= 2 && digit && (letter || joined)
}

/// The distinct identifiers a query asks for, lower-cased, in order of appearance.
pub fn identifiers(query: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    raw_tokens(query)
        .filter(|t| is_identifier(t))
        .filter(|t| seen.insert(t.clone()))
        .collect()
}

/// What a query's text gives the trust layer to weigh each hit with.
#[derive(Debug, Clone, Default)]
pub struct QueryEvidence {
    /// Distinct analysed query terms and their IDF.
    terms: Vec<(String, f64)>,
    total_idf: f64,
    identifiers: Vec<String>,
    /// What the question asks a passage to hold beyond its topic (answer.rs).
    answer: AnswerEvidence,
}

impl QueryEvidence {
    pub fn new(terms: Vec<(String, f64)>, query: &str) -> QueryEvidence {
        let mut seen = HashSet::new();
        let terms: Vec<(String, f64)> = terms
            .into_iter()
            .filter(|(t, idf)| idf.is_finite() && *idf > 0.0 && seen.insert(t.clone()))
            .collect();
        QueryEvidence {
            total_idf: terms.iter().map(|(_, idf)| idf).sum(),
            terms,
            identifiers: identifiers(query),
            answer: AnswerEvidence::new(query),
        }
    }

    pub fn identifiers(&self) -> &[String] {
        &self.identifiers
    }

    pub fn answer(&self) -> &AnswerEvidence {
        &self.answer
    }

    /// Share of the query's IDF mass among the hit's analysed terms, which `each_term` hands
    /// to the visitor it is given (repeats allowed), in [0, 1]; 0 for a query with no terms.
    pub fn lexical_share(&self, each_term: impl FnOnce(&mut dyn FnMut(&str))) -> f32 {
        if self.total_idf <= 0.0 {
            return 0.0;
        }
        let mut held = vec![false; self.terms.len()];
        each_term(&mut |term| {
            if let Some(i) = self.terms.iter().position(|(t, _)| t == term) {
                held[i] = true;
            }
        });
        let matched: f64 = self
            .terms
            .iter()
            .zip(&held)
            .filter(|(_, &h)| h)
            .map(|((_, idf), _)| idf)
            .sum();
        (matched / self.total_idf).clamp(0.0, 1.0) as f32
    }

    /// SPEC §7: true when the hit's text holds every identifier the query asks for (always true
    /// for a query that asks for none).
    pub fn identifiers_held(&self, hit_text: &str) -> bool {
        if self.identifiers.is_empty() {
            return true;
        }
        let tokens: Vec<String> = raw_tokens(hit_text).collect();
        let set: HashSet<&str> = tokens.iter().map(String::as_str).collect();
        self.identifiers
            .iter()
            .all(|id| holds(id, &set, &tokens, hit_text))
    }
}

/// Whether a text (its tokens, as a set and in order, and its words as written) holds one
/// identifier in any of its written variants: `v1.0` and `1.0`, `0.25` and `.25`,
/// `45-minute` and `45 minutes`.
fn holds(id: &str, set: &HashSet<&str>, tokens: &[String], text: &str) -> bool {
    if set.contains(id) {
        return true;
    }
    let numeric = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '.');
    // A version with or without its `v`.
    if let Some(bare) = id
        .strip_prefix('v')
        .filter(|r| numeric(r) && r.contains('.'))
    {
        if set.contains(bare) {
            return true;
        }
    }
    if numeric(id) && id.contains('.') && set.contains(format!("v{id}").as_str()) {
        return true;
    }
    // A number below one without its leading zero (`.25`), not inside another number.
    if let Some(fraction) = id.strip_prefix("0.").filter(|f| numeric(f)) {
        let digit = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
        let dotted = format!(".{fraction}");
        let found = text.match_indices(&dotted).any(|(at, _)| {
            !digit(text[..at].chars().next_back())
                && !digit(text[at + dotted.len()..].chars().next())
        });
        if found {
            return true;
        }
    }
    // A number and its unit, joined or apart, singular or plural (`45-minute`, `45 minutes`).
    if let Some((number, unit)) = id.split_once('-') {
        if numeric(number) && !unit.is_empty() && unit.chars().all(char::is_alphabetic) {
            let stem = unit.strip_suffix('s').unwrap_or(unit);
            let same = |word: &str| word == stem || word.strip_suffix('s') == Some(stem);
            let joined = set.iter().any(|t| {
                t.split_once('-')
                    .is_some_and(|(n, u)| n == number && same(u))
            });
            let apart = tokens.windows(2).any(|w| w[0] == number && same(&w[1]));
            if joined || apart {
                return true;
            }
        }
    }
    false
}

/// BM25's IDF of a term found in `df` of `n` documents (never negative).
pub fn idf(df: u64, n: u64) -> f64 {
    let (df, n) = (df as f64, n as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_mixed_or_joined_tokens() {
        assert_eq!(
            identifiers("What is REF-00042? And E1102, v2.3.1 or 3.14.2 in 2026 (again REF-00042)"),
            vec!["ref-00042", "e1102", "v2.3.1", "3.14.2"]
        );
        assert!(identifiers("how many requests per second in 2026?").is_empty());
        assert!(identifiers("a-b c.d 7").is_empty());
    }

    #[test]
    fn identifiers_held_exactly_not_as_prefixes() {
        let e = QueryEvidence::new(vec![], "status of INC-4471");
        assert!(e.identifiers_held("Incident INC-4471: the carrier API timed out."));
        assert!(e.identifiers_held("see inc-4471."));
        assert!(!e.identifiers_held("Incident INC-44712 is unrelated"));
        assert!(!e.identifiers_held("Incident INC-4472"));
        assert!(QueryEvidence::new(vec![], "no ids here").identifiers_held(""));
        // Every asked identifier, not any: a passage holding one of two does not hold them.
        let both = QueryEvidence::new(vec![], "REF-00042 E1102 cache incident");
        assert!(!both.identifiers_held("Incident REF-00042: the cache was cold."));
        assert!(both.identifiers_held("REF-00042 raised E1102 when the cache was cold."));
    }

    #[test]
    fn identifiers_held_in_their_written_variants() {
        let held =
            |query: &str, text: &str| QueryEvidence::new(vec![], query).identifiers_held(text);
        // A version with or without its `v`.
        assert!(held(
            "what changed in v1.0?",
            "Version 1.0 of the gateway interface"
        ));
        assert!(held("what changed in 2.3.1?", "Released as v2.3.1 in May."));
        assert!(!held(
            "what changed in v1.0?",
            "Version 1.0.1 of the gateway interface"
        ));
        // A number below one without its leading zero.
        assert!(held(
            "is the ratio 0.25 now?",
            "The ratio is .25 of the budget."
        ));
        assert!(!held(
            "is the ratio 0.25 now?",
            "The ratio is 1.25 of the budget."
        ));
        assert!(!held(
            "is the ratio 0.25 now?",
            "The ratio is .255 of the budget."
        ));
        // A number and its unit, joined or apart, singular or plural.
        assert!(held(
            "are the 45-minute slots kept?",
            "Slots are 45 minutes each."
        ));
        assert!(held(
            "are the 45-minutes slots kept?",
            "Each slot is a 45-minute one."
        ));
        assert!(held(
            "are the 45-minute slots kept?",
            "Slots of 45 minute length."
        ));
        assert!(!held(
            "are the 45-minute slots kept?",
            "Slots are 30 minutes; breaks 45 seconds."
        ));
        assert!(!held(
            "are the 45-minute slots kept?",
            "Slots are 145 minutes each."
        ));
    }

    #[test]
    fn lexical_share_weighs_rare_terms() {
        let e = QueryEvidence::new(
            vec![
                ("rate".into(), 1.0),
                ("e1102".into(), 3.0),
                ("rate".into(), 1.0),
            ],
            "rate E1102",
        );
        let hit = |ts: &'static [&'static str]| {
            move |visit: &mut dyn FnMut(&str)| ts.iter().for_each(|t| visit(t))
        };
        assert_eq!(
            e.lexical_share(hit(&["rate", "e1102", "other", "rate"])),
            1.0
        );
        assert_eq!(e.lexical_share(hit(&["e1102"])), 0.75);
        assert_eq!(e.lexical_share(hit(&["rate"])), 0.25);
        assert_eq!(e.lexical_share(hit(&[])), 0.0);
        assert_eq!(QueryEvidence::default().lexical_share(hit(&["x"])), 0.0);
        assert!(idf(1, 100) > idf(50, 100) && idf(100, 100) > 0.0);
    }

    #[test]
    fn a_variant_is_held_only_in_the_forms_named() {
        let held =
            |query: &str, text: &str| QueryEvidence::new(vec![], query).identifiers_held(text);
        // Only a dotted version stands for its number without the `v`.
        assert!(!held("is v2 out?", "Step 2 is done."));
        assert!(!held("is a.1 set?", "va.1 is set."));
        assert!(!held("is e12 set?", "ve12 is set."));
        // Only a number joined to a unit is read as a number and a unit.
        assert!(!held("is a1-b set?", "a1 b is set."));
        // A joined number and unit hold both: the number alone or the unit alone is not it.
        assert!(!held("are the 45-minute slots kept?", "A 45-second pause."));
        assert!(!held("are the 45-minute slots kept?", "A 30-minute slot."));
    }

    #[test]
    fn the_query_evidence_holds_what_the_query_asks() {
        let e = QueryEvidence::new(vec![], "How much do we charge for REF-7 and v1.2?");
        assert_eq!(e.identifiers(), ["ref-7", "v1.2"]);
        assert!(!e.answer().is_empty(), "money is asked");
        assert!(QueryEvidence::new(vec![], "what is the plan?")
            .answer()
            .is_empty());
    }

    #[test]
    fn idf_is_bm25s() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(idf(1, 100), (1.0f64 + 99.5 / 1.5).ln()));
        assert!(close(idf(100, 100), (1.0f64 + 0.5 / 100.5).ln()));
        assert!(close(idf(0, 10), (1.0f64 + 10.5 / 0.5).ln()));
    }
}
