//! The dense leg (SPEC §4): exact cosine over every chunk vector, held in one contiguous buffer.
//!
//! Owns: the in-memory matrix and top-k selection. Vectors are L2-normalised, so the dot product
//! is the cosine. Does not own: loading the vectors (store.rs) or what a score means (trust.rs).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Row-major `len × dim` float32 matrix.
#[derive(Debug, Clone, Default)]
pub struct DenseIndex {
    dim: usize,
    data: Vec<f32>,
}

#[inline]
fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    // Eight independent accumulators let the compiler keep a full vector register busy.
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    dot_portable(a, b)
}

/// The dot product, with AVX2 + FMA code generation when the CPU has it.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the features were detected at runtime just above.
            return unsafe { dot_avx2(a, b) };
        }
    }
    dot_portable(a, b)
}

/// A (score, row) pair ordered so that the heap's top is the weakest kept candidate: lower
/// score first, and for equal scores the later row (earlier rows win ties).
#[derive(PartialEq)]
struct Weakest(f32, usize);

impl Eq for Weakest {}

impl PartialOrd for Weakest {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Weakest {
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.total_cmp(&self.0).then(self.1.cmp(&other.1))
    }
}

impl DenseIndex {
    pub fn new(dim: usize) -> DenseIndex {
        DenseIndex {
            dim,
            data: Vec::new(),
        }
    }

    pub fn with_capacity(dim: usize, rows: usize) -> DenseIndex {
        DenseIndex {
            dim,
            data: Vec::with_capacity(dim * rows),
        }
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn len(&self) -> usize {
        self.data.len().checked_div(self.dim).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Append one row; its length must be `dim`.
    pub fn push(&mut self, row: &[f32]) {
        assert_eq!(
            row.len(),
            self.dim,
            "row length must equal the index dimension"
        );
        self.data.extend_from_slice(row);
    }

    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }

    pub fn score(&self, i: usize, query: &[f32]) -> f32 {
        dot(self.row(i), query)
    }

    /// The `k` best rows for `query`, best first; equal scores keep row order.
    pub fn top_k(&self, query: &[f32], k: usize) -> Vec<(usize, f32)> {
        if k == 0 || self.dim == 0 || query.len() != self.dim {
            return Vec::new();
        }
        let mut heap: BinaryHeap<Weakest> = BinaryHeap::with_capacity(k + 1);
        for (i, row) in self.data.chunks_exact(self.dim).enumerate() {
            let s = dot(row, query);
            if heap.len() < k {
                heap.push(Weakest(s, i));
            } else if let Some(top) = heap.peek() {
                // Strictly better only: an equal score never displaces an earlier row.
                if s > top.0 {
                    heap.pop();
                    heap.push(Weakest(s, i));
                }
            }
        }
        let mut out: Vec<(usize, f32)> = heap.into_iter().map(|Weakest(s, i)| (i, s)).collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(index: &DenseIndex, q: &[f32], k: usize) -> Vec<(usize, f32)> {
        let mut all: Vec<(usize, f32)> = (0..index.len()).map(|i| (i, index.score(i, q))).collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        all.truncate(k);
        all
    }

    #[test]
    fn top_k_matches_a_full_sort() {
        let dim = 37;
        let mut index = DenseIndex::new(dim);
        let mut x = 12345u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 1000) as f32 / 1000.0 - 0.5
        };
        for _ in 0..500 {
            let row: Vec<f32> = (0..dim).map(|_| next()).collect();
            index.push(&row);
        }
        let q: Vec<f32> = (0..dim).map(|_| next()).collect();
        for k in [1, 5, 20, 499, 500, 800] {
            assert_eq!(index.top_k(&q, k), brute(&index, &q, k), "k = {k}");
        }
    }

    #[test]
    fn ties_keep_row_order_and_dot_is_exact() {
        let mut index = DenseIndex::new(2);
        for _ in 0..4 {
            index.push(&[1.0, 0.0]);
        }
        let got: Vec<usize> = index
            .top_k(&[1.0, 0.0], 2)
            .into_iter()
            .map(|p| p.0)
            .collect();
        assert_eq!(got, vec![0, 1]);
        let a: Vec<f32> = (0..19).map(|i| i as f32).collect();
        assert_eq!(dot(&a, &a), (0..19).map(|i| (i * i) as f32).sum::<f32>());
    }
}
