//! Reciprocal-rank fusion of the dense and lexical legs (SPEC §4).
//!
//! Owns: `Σ 1/(60 + rank)` over the legs, ranks from 1, equal weights, ties keeping dense order.
//! Pure. Does not own: retrieval or cosines (every fused hit keeps its dense cosine, computed by
//! the caller).

use std::collections::HashMap;

/// SPEC §4: the RRF constant.
pub const RRF_K: f64 = 60.0;

/// One fused candidate with its per-leg ranks (1-based) and contributions.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    pub chunk: i64,
    pub dense_rank: Option<usize>,
    pub lexical_rank: Option<usize>,
    pub score: f64,
}

/// The RRF contribution of one rank.
pub fn contribution(rank: Option<usize>) -> f64 {
    rank.map_or(0.0, |r| 1.0 / (RRF_K + r as f64))
}

/// Fuse two ranked lists of chunk ids (best first; a repeated id keeps its first rank).
/// Sorted by fused score; ties keep dense order, then lexical order.
pub fn rrf(dense: &[i64], lexical: &[i64]) -> Vec<Fused> {
    let mut by_chunk: HashMap<i64, usize> = HashMap::new();
    let mut out: Vec<Fused> = Vec::with_capacity(dense.len() + lexical.len());
    for (leg, list) in [(0, dense), (1, lexical)] {
        for (i, &chunk) in list.iter().enumerate() {
            let at = *by_chunk.entry(chunk).or_insert_with(|| {
                out.push(Fused {
                    chunk,
                    dense_rank: None,
                    lexical_rank: None,
                    score: 0.0,
                });
                out.len() - 1
            });
            let slot = if leg == 0 {
                &mut out[at].dense_rank
            } else {
                &mut out[at].lexical_rank
            };
            if slot.is_none() {
                *slot = Some(i + 1);
            }
        }
    }
    for f in &mut out {
        f.score = contribution(f.dense_rank) + contribution(f.lexical_rank);
    }
    let key = |r: Option<usize>| r.unwrap_or(usize::MAX);
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(key(a.dense_rank).cmp(&key(b.dense_rank)))
            .then(key(a.lexical_rank).cmp(&key(b.lexical_rank)))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_in_both_legs_is_first_and_scores_sum() {
        let out = rrf(&[1, 2, 3], &[1, 4, 2]);
        assert_eq!(out[0].chunk, 1);
        assert_eq!(out[0].score, 2.0 / 61.0);
        for f in &out {
            let want = contribution(f.dense_rank) + contribution(f.lexical_rank);
            assert_eq!(f.score, want);
        }
        assert_eq!(
            out.iter().map(|f| f.chunk).collect::<Vec<_>>(),
            vec![1, 2, 4, 3]
        );
    }

    #[test]
    fn ties_keep_dense_order_and_swapping_legs_keeps_scores() {
        // 5 is dense rank 1 only, 9 is lexical rank 1 only: equal scores, dense first.
        let out = rrf(&[5], &[9]);
        assert_eq!(out.iter().map(|f| f.chunk).collect::<Vec<_>>(), vec![5, 9]);
        let mut x = 42u64;
        for _ in 0..200 {
            let mut list = |n: usize| -> Vec<i64> {
                (0..n)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        (x % 15) as i64
                    })
                    .collect()
            };
            let (a, b) = (list(8), list(8));
            let scores = |v: Vec<Fused>| {
                let mut s: Vec<(i64, u64)> =
                    v.iter().map(|f| (f.chunk, f.score.to_bits())).collect();
                s.sort();
                s
            };
            assert_eq!(scores(rrf(&a, &b)), scores(rrf(&b, &a)));
        }
    }
}
