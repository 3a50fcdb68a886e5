//! The supersession graph. For now: the SPEC §2.3 resolution key, the one function that turns a
//! reference or a document path into the name edges match on.
//!
//! Owns: reference resolution rules. Does not own: storing edges (store.rs).

/// SPEC §2.3: trim; while ≥ 2 chars and wrapped in `[` … `]`, unwrap and trim; drop a trailing
/// `.md` in any case; keep the last `/` or `\` segment; trim.
pub fn resolution_key(reference: &str) -> String {
    let mut s = reference.trim();
    while s.chars().count() >= 2 && s.starts_with('[') && s.ends_with(']') {
        s = s[1..s.len() - 1].trim();
    }
    let lower_tail = s.len() >= 3 && s.is_char_boundary(s.len() - 3);
    if lower_tail && s[s.len() - 3..].eq_ignore_ascii_case(".md") {
        s = &s[..s.len() - 3];
    }
    let last = s.rsplit(['/', '\\']).next().unwrap_or(s);
    last.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::resolution_key;

    #[test]
    fn spec_examples() {
        for (input, want) in [
            ("v1.md", "v1"),
            ("  [[v1]] ", "v1"),
            ("[v1.MD]", "v1"),
            ("[[ notes/v1.md ]]", "v1"),
            ("a\\b\\c.Md", "c"),
            ("[", "["),
            ("[]", ""),
            ("x.markdown", "x.markdown"),
            ("dir/", ""),
            ("été.md", "été"),
        ] {
            assert_eq!(resolution_key(input), want, "input {input:?}");
        }
    }
}
