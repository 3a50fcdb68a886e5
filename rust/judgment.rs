//! The judgment crate bound to this crate's lexical analyser: a candidate's evidence is read
//! from its text as the lexical index reads it (Tantivy's `en_stem`).
//!
//! Owns: the text a chunk's evidence is read from and the analyser it is read with. The rules
//! are recall-judgment's (corpus, shortlist, trust).

pub use recall_judgment::corpus::{Corpus, DocumentRecord, Edge, EdgeRecord, IdIndex, Tally};
pub use recall_judgment::shortlist::shortlist;

use crate::evidence::QueryEvidence;
use crate::lexical;
use crate::trust::Candidate;

/// The text a chunk's lexical evidence is read from: title, heading path and body, as indexed.
pub fn lexical_body(title: &str, heading_path: &str, text: &str) -> String {
    format!("{title}\n{heading_path}\n{text}")
}

/// `recall_judgment::shortlist::candidate` read with the lexical index's analyser.
pub fn candidate(
    ev: &QueryEvidence,
    doc: usize,
    chunk: i64,
    score: f32,
    body: Option<&str>,
) -> Candidate {
    recall_judgment::shortlist::candidate(ev, doc, chunk, score, body, lexical::each_term)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_is_read_with_the_index_analyser() {
        // "Retries" is held as the index stems it ("retri"); an unstemmed reading misses it.
        let ev = QueryEvidence::new(vec![("retri".into(), 1.0)], "retries");
        let c = candidate(&ev, 0, 1, 0.4, Some(&lexical_body("Retries", "", "")));
        assert!(c.lexical > 0.99, "{}", c.lexical);
    }
}
