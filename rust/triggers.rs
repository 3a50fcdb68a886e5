//! Which notes may declare something about themselves (SPEC §2.5): one pass over the text.
//!
//! Owns: the words every status statement, supersession or retirement holds (a status section
//! or field, "superseded", a retirement word), found case-insensitively in one scan. A text
//! holding none is not read line by line; most notes hold none. Does not own: reading what a
//! statement says (`recall.status`) or where it is written (`recall.vocabularies`).

use std::sync::OnceLock;

use aho_corasick::{packed, AhoCorasick, AhoCorasickKind};

/// Stems of every word a declaration is written with: `status`; the superseded family and its
/// misspellings (`supers…`, `superc…`); the retirement words of `recall.status.TERMINAL`.
pub const TRIGGERS: &[&str] = &[
    "status",
    "supers",
    "superc",
    "replaced",
    "obsolet",
    "deprecat",
    "depreciat",
    "retired",
    "withdrawn",
    "rejected",
    "declined",
    "abandoned",
    "cancel",
    "discontinued",
    "archived",
    "sunset",
    "amend",
];

/// The scan: SIMD over the text's ASCII-lowercased bytes where the processor has it (a few
/// hundred nanoseconds for a note), an automaton otherwise.
enum Scan {
    Packed(packed::Searcher),
    Automaton(AhoCorasick),
}

fn scan() -> &'static Scan {
    static SCAN: OnceLock<Scan> = OnceLock::new();
    SCAN.get_or_init(|| {
        let mut builder = packed::Config::new().builder();
        builder.extend(TRIGGERS);
        match builder.build() {
            Some(searcher) => Scan::Packed(searcher),
            None => Scan::Automaton(
                AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .kind(Some(AhoCorasickKind::DFA))
                    .build(TRIGGERS)
                    .expect("the trigger words build an automaton"),
            ),
        }
    })
}

/// Whether `text` holds any trigger word, in any case. Without `status`, the words that only a
/// status section or field holds (`status`, `amend`) do not count: what a note's own sentence
/// about itself must hold.
pub fn may_declare(text: &str, status: bool) -> bool {
    let counts = |pattern: usize| status || !matches!(TRIGGERS[pattern], "status" | "amend");
    match scan() {
        Scan::Packed(searcher) => {
            let lower = text.as_bytes().to_ascii_lowercase();
            searcher
                .find_iter(&lower)
                .any(|m| counts(m.pattern().as_usize()))
        }
        Scan::Automaton(ac) => ac.find_iter(text).any(|m| counts(m.pattern().as_usize())),
    }
}

/// Where the trigger words of `text` start, as character offsets (leftmost, not overlapping),
/// with `may_declare`'s `status` rule: the pieces of a text worth reading, found in one scan.
pub fn offsets(text: &str, status: bool) -> Vec<usize> {
    let counts = |pattern: usize| status || !matches!(TRIGGERS[pattern], "status" | "amend");
    let starts: Vec<usize> = match scan() {
        Scan::Packed(searcher) => {
            let lower = text.as_bytes().to_ascii_lowercase();
            searcher
                .find_iter(&lower)
                .filter(|m| counts(m.pattern().as_usize()))
                .map(|m| m.start())
                .collect()
        }
        Scan::Automaton(ac) => ac
            .find_iter(text)
            .filter(|m| counts(m.pattern().as_usize()))
            .map(|m| m.start())
            .collect(),
    };
    // Byte offsets to character offsets, in one walk (the starts are increasing; every trigger
    // begins with an ASCII letter, so each start is a character boundary).
    let mut out = Vec::with_capacity(starts.len());
    let (mut byte, mut chars) = (0usize, 0usize);
    for start in starts {
        chars += text[byte..start].chars().count();
        byte = start;
        out.push(chars);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_characters_and_follow_the_status_rule() {
        let text = "⚠️ Deprecated. Status: SUPERSEDED by é.";
        let got = offsets(text, true);
        let chars: Vec<char> = text.chars().collect();
        let at = |i: usize| chars[i..].iter().collect::<String>().to_lowercase();
        assert_eq!(got.len(), 3);
        assert!(at(got[0]).starts_with("deprecat"));
        assert!(at(got[1]).starts_with("status"));
        assert!(at(got[2]).starts_with("supers"));
        assert_eq!(offsets(text, false), vec![got[0], got[2]]);
        assert!(offsets("Retries back off.", true).is_empty());
    }

    #[test]
    fn finds_the_words_in_any_case_and_nothing_else() {
        for text in [
            "## Status\n\nAccepted",
            "SUPERSEDED BY ADR 7",
            "Superceeded by x",
            "❌ **Rejected**",
            "⚠️ Deprecated",
            "Accepted, amended by DR014",
        ] {
            assert!(may_declare(text, true), "{text}");
        }
        assert!(!may_declare("## Status\n\nAccepted, amended later", false));
        assert!(may_declare("This RFC has been superseded by RFC 9.", false));
        for text in [
            "",
            "Retries back off exponentially.",
            "# Decision 12\n\nUse Postgres.",
        ] {
            assert!(!may_declare(text, true), "{text}");
        }
    }
}
