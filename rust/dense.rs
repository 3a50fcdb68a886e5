//! The dense leg (SPEC §4): cosine over every chunk vector, held in one contiguous buffer.
//!
//! Owns: the in-memory matrix and top-k selection. Vectors are L2-normalised, so the dot product
//! is the cosine. Large indexes scan int8 codes first (a quarter of the memory traffic) and
//! rescore an oversampled shortlist exactly in f32, so every returned score is exact (SPEC §4
//! allows this while recall@10 against the exact scan stays ≥ 0.99; benches/search_latency.py
//! measures it). Does not own: loading the vectors (store.rs) or what a score means (trust.rs).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Below this many rows the exact scan is already cheap: no quantised pass.
const QUANTISE_FROM: usize = 4096;
/// Shortlist of the int8 pass: this many times the requested k, at least `SHORTLIST_MIN`.
const OVERSAMPLE: usize = 8;
const SHORTLIST_MIN: usize = 128;

/// Row-major `len × dim` float32 matrix, with per-row int8 codes for the first pass.
#[derive(Debug, Clone, Default)]
pub struct DenseIndex {
    dim: usize,
    data: Vec<f32>,
    codes: Vec<i8>,
    scales: Vec<f32>,
}

/// Symmetric per-vector int8 quantisation: `x ≈ code * scale`, `scale = max|x| / 127`.
fn quantise(row: &[f32], out: &mut Vec<i8>) -> f32 {
    let max = row.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    out.extend(
        row.iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8),
    );
    scale
}

#[inline(always)]
fn dot_i8_portable(a: &[i8], b: &[i8]) -> i32 {
    // i16 products summed in i32 lanes: the shape LLVM turns into pmaddwd.
    let mut acc = [0i32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: i32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..16 {
            acc[i] += i32::from(i16::from(x[i]) * i16::from(y[i]));
        }
    }
    acc.iter().sum::<i32>() + tail
}

/// AVX2 int8 dot product. Codes lie in [-127, 127], so `maddubs(|a|, sign(b, a))` never
/// saturates (2 × 127 × 127 < 2^15): the classic sign trick for a signed × signed product.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let blocks = n / 32;
    let ones = _mm256_set1_epi16(1);
    let mut acc = _mm256_setzero_si256();
    for i in 0..blocks {
        // SAFETY: i * 32 + 32 <= n, within both slices; unaligned loads.
        let va = _mm256_loadu_si256(a.as_ptr().add(i * 32) as *const __m256i);
        let vb = _mm256_loadu_si256(b.as_ptr().add(i * 32) as *const __m256i);
        let pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(va, va), _mm256_sign_epi8(vb, va));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
    }
    let lo = _mm256_castsi256_si128(acc);
    let hi = _mm256_extracti128_si256(acc, 1);
    let sum4 = _mm_add_epi32(lo, hi);
    let sum2 = _mm_add_epi32(sum4, _mm_shuffle_epi32(sum4, 0b01_00_11_10));
    let sum1 = _mm_add_epi32(sum2, _mm_shuffle_epi32(sum2, 0b10_11_00_01));
    let tail: i32 = a[blocks * 32..n]
        .iter()
        .zip(&b[blocks * 32..n])
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    _mm_cvtsi128_si32(sum1) + tail
}

/// Integer dot product of two int8 codes, with AVX2 code generation when the CPU has it.
#[inline]
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the feature was detected at runtime just above.
            return unsafe { dot_i8_avx2(a, b) };
        }
    }
    dot_i8_portable(a, b)
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
            ..DenseIndex::default()
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
        let scale = quantise(row, &mut self.codes);
        self.scales.push(scale);
    }

    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }

    pub fn score(&self, i: usize, query: &[f32]) -> f32 {
        dot(self.row(i), query)
    }

    /// The `k` best rows for `query` with exact cosines, best first; equal scores keep row
    /// order. Large indexes go through the int8 first pass (see the module docs).
    pub fn top_k(&self, query: &[f32], k: usize) -> Vec<(usize, f32)> {
        if k == 0 || self.dim == 0 || query.len() != self.dim {
            return Vec::new();
        }
        let shortlist = (k * OVERSAMPLE).max(SHORTLIST_MIN);
        if self.len() < QUANTISE_FROM || shortlist >= self.len() {
            return self.top_k_exact(query, k);
        }
        let mut q8 = Vec::with_capacity(self.dim);
        let q_scale = quantise(query, &mut q8);
        let approx = self.scan_i8(&q8, q_scale, shortlist);
        let mut exact: Vec<(usize, f32)> = approx
            .into_iter()
            .map(|(i, _)| (i, self.score(i, query)))
            .collect();
        exact.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        exact.truncate(k);
        exact
    }

    /// The exact f32 scan over every row.
    pub fn top_k_exact(&self, query: &[f32], k: usize) -> Vec<(usize, f32)> {
        if k == 0 || self.dim == 0 || query.len() != self.dim {
            return Vec::new();
        }
        select(
            self.data.chunks_exact(self.dim).map(|row| dot(row, query)),
            k,
        )
    }
}

/// Rows per thread below which a second thread costs more than it saves.
const ROWS_PER_THREAD: usize = 32_768;

/// First pass over a block of int8 codes: approximate cosines, the `k` best, positions offset
/// by `base`.
#[inline(always)]
fn scan_i8_block(
    codes: &[i8],
    scales: &[f32],
    q8: &[i8],
    q_scale: f32,
    base: usize,
    k: usize,
) -> Vec<(usize, f32)> {
    let dim = q8.len();
    let scores = codes
        .chunks_exact(dim)
        .zip(scales)
        .map(|(row, scale)| dot_i8_portable(row, q8) as f32 * scale * q_scale);
    let mut out = select(scores, k);
    out.iter_mut().for_each(|p| p.0 += base);
    out
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn scan_i8_block_avx2(
    codes: &[i8],
    scales: &[f32],
    q8: &[i8],
    q_scale: f32,
    base: usize,
    k: usize,
) -> Vec<(usize, f32)> {
    let dim = q8.len();
    let scores = codes
        .chunks_exact(dim)
        .zip(scales)
        // SAFETY: this function only runs where AVX2 was detected (scan_i8_dispatch).
        .map(|(row, scale)| unsafe { dot_i8_avx2(row, q8) } as f32 * scale * q_scale);
    let mut out = select(scores, k);
    out.iter_mut().for_each(|p| p.0 += base);
    out
}

fn scan_i8_dispatch(
    codes: &[i8],
    scales: &[f32],
    q8: &[i8],
    q_scale: f32,
    base: usize,
    k: usize,
) -> Vec<(usize, f32)> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the feature was detected at runtime just above; the whole loop is
            // compiled for it so the dot product inlines into vector code.
            return unsafe { scan_i8_block_avx2(codes, scales, q8, q_scale, base, k) };
        }
    }
    scan_i8_block(codes, scales, q8, q_scale, base, k)
}

impl DenseIndex {
    /// The int8 first pass over all rows, split across the available cores for large indexes.
    fn scan_i8(&self, q8: &[i8], q_scale: f32, k: usize) -> Vec<(usize, f32)> {
        let rows = self.len();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = cores.min(rows / ROWS_PER_THREAD).max(1);
        if threads == 1 {
            return scan_i8_dispatch(&self.codes, &self.scales, q8, q_scale, 0, k);
        }
        let per = rows.div_ceil(threads);
        let mut merged: Vec<(usize, f32)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (lo, hi) = (t * per, ((t + 1) * per).min(rows));
                    let codes = &self.codes[lo * self.dim..hi * self.dim];
                    let scales = &self.scales[lo..hi];
                    scope.spawn(move || scan_i8_dispatch(codes, scales, q8, q_scale, lo, k))
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("scan thread panicked"))
                .collect()
        });
        merged.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        merged.truncate(k);
        merged
    }
}

/// The `k` largest scores with their positions, best first, earlier positions winning ties.
fn select(scores: impl Iterator<Item = f32>, k: usize) -> Vec<(usize, f32)> {
    let mut heap: BinaryHeap<Weakest> = BinaryHeap::with_capacity(k + 1);
    for (i, s) in scores.enumerate() {
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

impl DenseIndex {
    /// Recall@k of the quantised path against the exact scan for `query` (benches and tests).
    pub fn recall_at(&self, query: &[f32], k: usize) -> f64 {
        let exact: std::collections::HashSet<usize> = self
            .top_k_exact(query, k)
            .into_iter()
            .map(|p| p.0)
            .collect();
        let got = self.top_k(query, k);
        if exact.is_empty() {
            return 1.0;
        }
        got.iter().filter(|p| exact.contains(&p.0)).count() as f64 / exact.len() as f64
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
            assert_eq!(index.top_k_exact(&q, k), brute(&index, &q, k), "k = {k}");
            assert_eq!(index.top_k(&q, k), brute(&index, &q, k), "k = {k}");
        }
    }

    #[test]
    fn quantised_path_keeps_recall_and_exact_scores() {
        let dim = 64;
        let mut index = DenseIndex::new(dim);
        let mut x = 99u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2001) as f32 / 1000.0 - 1.0
        };
        let unit = |v: Vec<f32>| {
            let n = v.iter().map(|a| a * a).sum::<f32>().sqrt();
            v.into_iter().map(|a| a / n).collect::<Vec<f32>>()
        };
        for _ in 0..(QUANTISE_FROM * 2) {
            let row = unit((0..dim).map(|_| next()).collect());
            index.push(&row);
        }
        let mut total = 0.0;
        for _ in 0..20 {
            let q = unit((0..dim).map(|_| next()).collect());
            total += index.recall_at(&q, 10);
            for (i, s) in index.top_k(&q, 10) {
                assert_eq!(s, index.score(i, &q), "returned scores are exact");
            }
        }
        assert!(total / 20.0 >= 0.99, "recall@10 {}", total / 20.0);
        let a: Vec<i8> = (0..37).map(|i| (i * 7 % 255 - 127) as i8).collect();
        let want: i32 = a.iter().map(|v| i32::from(*v) * i32::from(*v)).sum();
        assert_eq!(dot_i8(&a, &a), want);
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
