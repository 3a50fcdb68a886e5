//! Which notes may declare something about themselves (SPEC §2.5): one pass over the text.
//!
//! Owns: the words every status statement, supersession or retirement holds (a status section
//! or field, "superseded", a retirement word), found case-insensitively in one scan. A text
//! holding none is not read line by line; most notes hold none. Does not own: reading what a
//! statement says (`recall.status`) or where it is written (`recall.vocabularies`).

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind};

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

fn automaton() -> &'static AhoCorasick {
    static AC: OnceLock<AhoCorasick> = OnceLock::new();
    AC.get_or_init(|| {
        // A DFA: one table lookup per byte, the fastest scan for a handful of short words.
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .kind(Some(AhoCorasickKind::DFA))
            .build(TRIGGERS)
            .expect("the trigger words build an automaton")
    })
}

/// Whether `text` holds any trigger word, in any case. Without `status`, the words that only a
/// status section or field holds (`status`, `amend`) do not count: what a note's own sentence
/// about itself must hold.
pub fn may_declare(text: &str, status: bool) -> bool {
    if status {
        return automaton().is_match(text);
    }
    automaton()
        .find_iter(text)
        .any(|m| !matches!(TRIGGERS[m.pattern().as_usize()], "status" | "amend"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
