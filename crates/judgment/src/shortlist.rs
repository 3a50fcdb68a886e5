//! From the fused legs to the candidates the trust layer judges (SPEC §4–§5, §7): one
//! candidate per document, with its lexical evidence read from its text.
//!
//! Owns: a candidate's evidence (the share of the query's IDF mass its text holds, the asked
//! identifiers, what it lacks of the asked value) and the shortlist's rules (a document's best
//! chunk; the chunk holding the asked identifiers judged in its place; the asked value held by
//! any retrieved chunk of the document). The words of a text are the caller's to give: the
//! analyser the lexical index uses, so evidence is read as the index reads. Does not own:
//! retrieval, fusion (fusion.rs) or the verdicts (trust.rs).

use std::collections::{HashMap, HashSet};

use crate::evidence::QueryEvidence;
use crate::fusion::Fused;
use crate::trust::Candidate;

/// A candidate chunk with its lexical evidence (SPEC §7): the share of the query's IDF mass its
/// indexed text holds, and whether it holds the asked identifiers. `body` None: a chunk a
/// concurrent writer removed, with no evidence. `each_term` hands every analysed term of a
/// text to its visitor, as the lexical index analyses it.
pub fn candidate(
    ev: &QueryEvidence,
    doc: usize,
    chunk: i64,
    score: f32,
    body: Option<&str>,
    each_term: impl Fn(&str, &mut dyn FnMut(&str)),
) -> Candidate {
    let mut c = Candidate::dense(doc, chunk, score);
    match body {
        Some(body) => {
            c.lexical = ev.lexical_share(|visit| each_term(body, visit));
            c.identifiers_held = ev.identifiers_held(body);
            c.identifier_match = c.identifiers_held && !ev.identifiers().is_empty();
            c.lacks = ev.answer().lacks(body);
        }
        None => {
            c.identifiers_held = ev.identifiers().is_empty();
            c.lacks = ev.answer().lacks("");
        }
    }
    c
}

/// SPEC §4–§5: walk the fused list best first and keep each document's best chunk until `k`
/// documents are held; `candidate(f, doc)` builds the candidate of a kept chunk. A chunk
/// `doc_of` does not know (a concurrent writer removed it) is skipped. What the question asks for
/// beyond its topic (answer.rs) is the document's to hold: a best chunk that lacks it does not
/// when another retrieved chunk of its document holds it (the answer may sit in another section
/// of the note); the document is still judged and shown by its best chunk. So are the
/// identifiers it asks for (SPEC §7), but a lookup is judged on the passage that holds them: a
/// best chunk without them gives way to the document's best retrieved chunk with them. Returns
/// the candidates and the retrieval of each kept chunk.
pub fn shortlist(
    fused: &[Fused],
    k: usize,
    doc_of: impl Fn(i64) -> Option<usize>,
    mut candidate: impl FnMut(&Fused, usize) -> Candidate,
) -> (Vec<Candidate>, HashMap<i64, Fused>) {
    let mut retrieval = HashMap::new();
    let mut seen = HashSet::new();
    let mut cands = Vec::with_capacity(k);
    for (i, f) in fused.iter().enumerate() {
        if cands.len() >= k {
            break;
        }
        let Some(doc) = doc_of(f.chunk) else { continue };
        if !seen.insert(doc) {
            continue;
        }
        let mut kept = candidate(f, doc);
        let mut shown = f;
        // SPEC §7: the identifiers a question asks for are the document's to hold. A best chunk
        // without them gives way to the document's best retrieved chunk that holds them, which
        // is then judged and shown in the document's place.
        if !kept.identifiers_held {
            if let Some((g, held)) = fused[i + 1..]
                .iter()
                .filter(|g| doc_of(g.chunk) == Some(doc))
                .map(|g| (g, candidate(g, doc)))
                .find(|(_, c)| c.identifiers_held)
            {
                kept = held;
                shown = g;
            }
        }
        if kept.lacks.is_some()
            && fused[i..]
                .iter()
                .filter(|g| g.chunk != shown.chunk && doc_of(g.chunk) == Some(doc))
                .any(|g| candidate(g, doc).lacks.is_none())
        {
            kept.lacks = None;
        }
        cands.push(kept);
        retrieval.insert(shown.chunk, shown.clone());
    }
    (cands, retrieval)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortlist_keeps_one_chunk_per_document_up_to_k() {
        let fused = crate::fusion::rrf(&[1, 2, 3, 4], &[5, 2]);
        let doc_of = |c: i64| match c {
            1 | 2 => Some(0),
            3 => Some(1),
            5 => Some(2),
            _ => None,
        };
        let (cands, retrieval) =
            shortlist(&fused, 2, doc_of, |f, d| Candidate::dense(d, f.chunk, 0.5));
        let docs: Vec<usize> = cands.iter().map(|c| c.doc).collect();
        assert_eq!(docs, vec![0, 2]);
        assert_eq!(retrieval.len(), 2);
    }

    #[test]
    fn the_asked_value_is_held_by_any_retrieved_chunk_of_the_document() {
        use crate::answer::{Asked, Lack};
        // Doc 0's best chunk (1) lacks the asked value and its later chunk (3) holds it: doc 0
        // holds it, shown by chunk 1. Doc 1's only chunk (2) lacks it.
        let fused = crate::fusion::rrf(&[1, 2, 3], &[]);
        let doc_of = |c: i64| Some(if c == 2 { 1 } else { 0 });
        let lacking = Some(Lack::Kind(Asked::Money));
        let (cands, retrieval) = shortlist(&fused, 5, doc_of, |f, d| Candidate {
            lacks: if f.chunk == 3 { None } else { lacking },
            ..Candidate::dense(d, f.chunk, 0.5)
        });
        let got: Vec<(usize, i64, bool)> = cands
            .iter()
            .map(|c| (c.doc, c.chunk, c.lacks.is_some()))
            .collect();
        assert_eq!(got, vec![(0, 1, false), (1, 2, true)]);
        assert!(retrieval.contains_key(&1) && !retrieval.contains_key(&3));
    }

    #[test]
    fn a_lookup_is_judged_on_the_chunk_of_the_document_that_holds_the_identifier() {
        // Doc 0's best chunk (1) lacks the asked identifier and its later chunk (3) holds it:
        // doc 0 is judged and shown by chunk 3, in chunk 1's place. Doc 1's only chunk (2)
        // lacks it and stays as it is.
        let fused = crate::fusion::rrf(&[1, 2, 3], &[]);
        let doc_of = |c: i64| Some(if c == 2 { 1 } else { 0 });
        let (cands, retrieval) = shortlist(&fused, 5, doc_of, |f, d| Candidate {
            identifiers_held: f.chunk == 3,
            identifier_match: f.chunk == 3,
            ..Candidate::dense(d, f.chunk, 0.5)
        });
        let got: Vec<(usize, i64, bool)> = cands
            .iter()
            .map(|c| (c.doc, c.chunk, c.identifiers_held))
            .collect();
        assert_eq!(got, vec![(0, 3, true), (1, 2, false)]);
        assert!(retrieval.contains_key(&3) && !retrieval.contains_key(&1));
    }

    #[test]
    fn evidence_reads_the_chunk_text() {
        let ev = QueryEvidence::new(
            vec![("retri".into(), 2.0), ("ref".into(), 1.0)],
            "REF-7 retries",
        );
        // Words lower-cased, split on anything not alphanumeric, cut to five letters: a
        // stand-in for the index's stemmer.
        let words = |text: &str, visit: &mut dyn FnMut(&str)| {
            for w in text
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
            {
                let w = w.to_lowercase();
                visit(&w[..w.len().min(5)]);
            }
        };
        let c = candidate(&ev, 0, 1, 0.4, Some("Retries for REF-7"), words);
        assert!(c.identifiers_held && c.identifier_match && c.lexical > 0.6);
        let gone = candidate(&ev, 0, 1, 0.4, None, words);
        assert!(!gone.identifiers_held && gone.lexical == 0.0);
    }

    #[test]
    fn an_identifier_match_needs_an_identifier_asked() {
        let words = |text: &str, visit: &mut dyn FnMut(&str)| {
            text.split_whitespace().for_each(&mut *visit);
        };
        let plain = QueryEvidence::new(vec![("retries".into(), 1.0)], "retries");
        let c = candidate(&plain, 0, 1, 0.4, Some("retries"), words);
        assert!(c.identifiers_held && !c.identifier_match);
        let asked = QueryEvidence::new(vec![], "REF-7");
        let c = candidate(&asked, 0, 1, 0.4, Some("about ref-7"), words);
        assert!(c.identifiers_held && c.identifier_match);
        let c = candidate(&asked, 0, 1, 0.4, Some("about ref-8"), words);
        assert!(!c.identifiers_held && !c.identifier_match);
    }
}
