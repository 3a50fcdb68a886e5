//! The first cut of a model's query over many rows: the rows' sign masks alone, a third of each
//! code, kept apart from the codes so that the cut reads 48 bytes a row at 384 dimensions
//! instead of 144.
//!
//! Owns: the sign layout and the cut. A row's distance is Σ_j 2^j · popcount(plane_j & (row
//! sign ⊕ query sign)): the query's magnitude levels on the components whose sign the row does
//! not share, so that the sign estimate of the cosine, Σ qlevel − 2 · distance, falls as it
//! grows. The rows are held eight to a block, word by word (a block's word i is the eight
//! rows' word i, side by side), so that one register holds a word of eight rows and their
//! distances add up lane by lane, with no sum across a register. The cut keeps about `keep`
//! rows: over a large block the line is placed where it falls among a sample of the rows
//! (`SAMPLE_RUNS` runs of `SAMPLE_RUN` rows spread over it) and the rows are cut in one pass,
//! each one within the line kept; over a small block the rows of the `keep` smallest distances
//! are kept exactly (every row tied at the last one too), found by a histogram of the
//! distances (small integers), not a sort. The rows may be laid out in another order than
//! theirs (`build`: the lists' layout, lists.rs) and cut as several runs of positions at once
//! (the lists a query reads), with one line over them all. Does not own: the codes
//! (row_code.rs), when the cut is taken or the full code pass over what it keeps (dense.rs).

use crate::row_code::MASKS;
use crate::scan::cores;

/// Rows a block holds, side by side: one 64-bit lane each in an AVX-512 register.
const LANES: usize = 8;
/// Rows from which the sign words are made over several cores.
const BUILT_APART_FROM: usize = 1 << 17;
/// Rows from which the cut places its line by a sample.
const SAMPLED_FROM: usize = 1 << 16;
/// The sample: this many runs of this many consecutive rows, spread evenly over the rows cut.
const SAMPLE_RUNS: usize = 64;
const SAMPLE_RUN: usize = 128;
/// Blocks the cut asks for ahead of the one it counts: a search comes to rows other work has
/// pushed out of the caches, and the prefetcher stops at each 4 KiB page (0.2 ms of the cut's
/// 0.8 over 100k rows of 384 dimensions, on a 2-vCPU Xeon with the caches swept).
#[cfg(target_arch = "x86_64")]
const BLOCKS_AHEAD: usize = 8;

/// Every row's sign words, eight rows to a block: word `i` of row `8b + l` is at
/// `(b · words + i) · 8 + l`; the rows past the last fill their block with zeros.
#[derive(Debug, Clone, Default)]
pub(crate) struct Signs {
    words: usize,
    rows: usize,
    blocks: Vec<u64>,
}

/// The query as the cut reads it: `planes` magnitude planes of `padded` words each (levels), and
/// its sign mask, padded as well.
pub(crate) struct SignQuery<'a> {
    pub(crate) words: usize,
    pub(crate) padded: usize,
    pub(crate) planes: usize,
    pub(crate) levels: &'a [u64],
    pub(crate) sign: &'a [u64],
}

impl SignQuery<'_> {
    /// The distance of the row whose word `i` is `word(i)`.
    #[inline(always)]
    fn distance(&self, word: impl Fn(usize) -> u64) -> u32 {
        let mut d = 0u32;
        for j in (0..self.planes).rev() {
            let plane = &self.levels[j * self.padded..j * self.padded + self.words];
            let apart: u32 = (0..self.words)
                .map(|i| (plane[i] & (word(i) ^ self.sign[i])).count_ones())
                .sum();
            d = 2 * d + apart;
        }
        d
    }
}

impl Signs {
    /// The sign words of row-major codes (`MASKS × words` words a row), position `p` holding
    /// row `order[p]` (row `p` without an order: the lists' layout, lists.rs); made over the
    /// cores from `BUILT_APART_FROM` rows (the first search waits for them).
    pub(crate) fn build(codes: &[u64], words: usize, order: Option<&[u32]>) -> Signs {
        let rows = codes.len().checked_div(MASKS * words).unwrap_or(0);
        let mut blocks = vec![0u64; rows.div_ceil(LANES) * LANES * words];
        let parts = cores().min(rows / BUILT_APART_FROM).max(1);
        // Whole blocks a part, so that each part writes words of its own.
        let per = rows.div_ceil(LANES).div_ceil(parts).max(1) * LANES;
        let fill = |first: usize, part: &mut [u64]| {
            for p in first..(first + part.len() / words).min(rows) {
                let r = order.map_or(p, |o| o[p] as usize);
                let code = &codes[r * MASKS * words..][..words];
                let (b, lane) = ((p - first) / LANES, p % LANES);
                for (i, &word) in code.iter().enumerate() {
                    part[(b * words + i) * LANES + lane] = word;
                }
            }
        };
        std::thread::scope(|scope| {
            let mut parts = blocks.chunks_mut(per * words).enumerate();
            let own = parts.next();
            for (t, part) in parts {
                scope.spawn(move || fill(t * per, part));
            }
            if let Some((_, part)) = own {
                fill(0, part);
            }
        });
        Signs {
            words,
            rows,
            blocks,
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.rows
    }

    /// The positions of the runs `runs` (each `lo..hi`) the cut keeps, about `keep` of them
    /// (see the module docs), ascending within each run, runs in their order.
    pub(crate) fn keep(&self, q: &SignQuery, runs: &[(usize, usize)], keep: usize) -> Vec<u32> {
        let runs: Vec<(usize, usize)> = runs
            .iter()
            .map(|&(lo, hi)| (lo, hi.min(self.rows).max(lo)))
            .collect();
        let rows: usize = runs.iter().map(|(lo, hi)| hi - lo).sum();
        let most = ((1usize << q.planes) - 1) * 64 * q.words;
        let mut counts = vec![0u32; most + 1];
        if rows >= SAMPLED_FROM && keep < rows {
            // The sample's runs spread evenly over the runs cut, laid end to end.
            let gap = rows / SAMPLE_RUNS;
            let (mut run, mut before, mut sampled) = (0, 0, 0);
            for s in 0..SAMPLE_RUNS {
                let at = s * gap;
                while at >= before + (runs[run].1 - runs[run].0) {
                    before += runs[run].1 - runs[run].0;
                    run += 1;
                }
                let from = runs[run].0 + at - before;
                let to = (from + SAMPLE_RUN).min(runs[run].1);
                sampled += to - from;
                self.each_distance(q, from, to, |_, d| counts[d as usize] += 1);
            }
            let share = keep as f64 / rows as f64;
            let line = line(&counts, (sampled as f64 * share).ceil() as usize);
            let mut kept = Vec::new();
            for &(lo, hi) in &runs {
                kept.extend(self.within(q, lo, hi, line));
            }
            return kept;
        }
        let mut distances = Vec::with_capacity(rows);
        for &(lo, hi) in &runs {
            self.each_distance(q, lo, hi, |_, d| {
                counts[d as usize] += 1;
                distances.push(d);
            });
        }
        let cut = line(&counts, keep);
        // Without a branch per row: which rows pass is as good as random. Every row's place is
        // written at the next free slot, which a row that passes keeps; nothing is zeroed first.
        let mut kept: Vec<u32> = Vec::with_capacity(distances.len());
        let slots = kept.spare_capacity_mut();
        let (mut n, mut d) = (0, distances.iter());
        for &(lo, hi) in &runs {
            for p in lo..hi {
                slots[n].write(p as u32);
                n += usize::from(*d.next().expect("a distance a row") <= cut);
            }
        }
        // SAFETY: slots 0..n were each written (by the row that passed there).
        unsafe { kept.set_len(n) };
        kept
    }

    /// `visit(r, d)` for each row `r` of `lo..hi` with its distance `d`, in row order.
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    fn each_distance(
        &self,
        q: &SignQuery,
        lo: usize,
        hi: usize,
        mut visit: impl FnMut(usize, u32),
    ) {
        #[cfg(target_arch = "x86_64")]
        if avx512() && q.planes <= MOST_PLANES {
            let mut eight = [0u32; LANES];
            // SAFETY: the features were detected; the blocks of `lo..hi` are held.
            unsafe {
                each_block_avx512(q, &self.blocks, lo / LANES, hi.div_ceil(LANES), |b, d| {
                    std::arch::x86_64::_mm256_storeu_si256(eight.as_mut_ptr() as *mut _, d);
                    for (lane, &d) in eight.iter().enumerate() {
                        let r = b * LANES + lane;
                        if (lo..hi).contains(&r) {
                            visit(r, d);
                        }
                    }
                })
            };
            return;
        }
        self.each_distance_portable(q, lo, hi, visit);
    }

    /// `each_distance` one row at a time.
    fn each_distance_portable(
        &self,
        q: &SignQuery,
        lo: usize,
        hi: usize,
        mut visit: impl FnMut(usize, u32),
    ) {
        let w = self.words;
        for r in lo..hi {
            let (b, lane) = (r / LANES, r % LANES);
            visit(r, q.distance(|i| self.blocks[(b * w + i) * LANES + lane]));
        }
    }

    /// The positions of `lo..hi` whose distance is at most `line`.
    fn within(&self, q: &SignQuery, lo: usize, hi: usize, line: u32) -> Vec<u32> {
        #[cfg(target_arch = "x86_64")]
        if avx512() && q.planes <= MOST_PLANES {
            // SAFETY: the features were detected just above.
            return unsafe { self.within_avx512(q, lo, hi, line) };
        }
        let mut kept = Vec::new();
        self.each_distance(q, lo, hi, |r, d| {
            if d <= line {
                kept.push(r as u32);
            }
        });
        kept
    }

    /// `within` by AVX-512: each block's eight distances compared with the line at once, and
    /// the places of those within it (and within `lo..hi`) stored together.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vl,avx512vpopcntdq")]
    unsafe fn within_avx512(&self, q: &SignQuery, lo: usize, hi: usize, line: u32) -> Vec<u32> {
        use std::arch::x86_64::*;
        let (first, last) = (lo / LANES, hi.div_ceil(LANES));
        // Room for a whole block's store past the last row kept.
        let mut kept: Vec<u32> = Vec::with_capacity(hi - lo + LANES);
        let at = kept.as_mut_ptr();
        let mut n = 0usize;
        let limit = _mm256_set1_epi32(line as i32);
        let steps = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        // The lanes of the first and last blocks outside `lo..hi`.
        let lanes = |b: usize| -> u8 {
            let from = (b * LANES).max(lo) - b * LANES;
            let to = ((b + 1) * LANES).min(hi) - b * LANES;
            ((0xffu16 << from) & (0xffu16 >> (LANES - to))) as u8
        };
        each_block_avx512(q, &self.blocks, first, last, |b, d| {
            let mut within = _mm256_cmple_epu32_mask(d, limit);
            if b == first || b + 1 == last {
                within &= lanes(b);
            }
            // The first block may start before `lo`: its lanes there are masked out above.
            let places = _mm256_add_epi32(steps, _mm256_set1_epi32((b * LANES) as i32));
            // Packed in a register and stored whole, into the room kept for it: a compressing
            // store to memory is microcoded on some CPUs (Zen 4: a third of the cut's time).
            let packed = _mm256_maskz_compress_epi32(within, places);
            _mm256_storeu_si256(at.add(n) as *mut _, packed);
            n += within.count_ones() as usize;
        });
        // SAFETY: slots 0..n were each written (by the row kept there).
        kept.set_len(n);
        kept
    }
}

/// The smallest distance that at least `keep` of the rows counted in `counts` are within.
fn line(counts: &[u32], keep: usize) -> u32 {
    let mut seen = 0usize;
    for (d, &c) in counts.iter().enumerate() {
        seen += c as usize;
        if seen >= keep {
            return d as u32;
        }
    }
    counts.len().saturating_sub(1) as u32
}

/// The most planes the AVX-512 cut counts (a query has at most three).
#[cfg(target_arch = "x86_64")]
const MOST_PLANES: usize = 3;

/// Whether the AVX-512 cut runs here.
#[cfg(target_arch = "x86_64")]
fn avx512() -> bool {
    std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512vl")
        && std::is_x86_feature_detected!("avx512vpopcntdq")
}

/// `visit(b, d)` with the eight distances of each block `first..last` (as eight u32): each word
/// of a block is one load of its eight rows' word, set apart from the query's sign word and
/// counted under each plane's word in lanes of their own, so that the planes' counts add up
/// lane by lane into each row's distance. At most `MOST_PLANES` planes (`avx512` says so).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512vpopcntdq")]
unsafe fn each_block_avx512(
    q: &SignQuery,
    blocks: &[u64],
    first: usize,
    last: usize,
    mut visit: impl FnMut(usize, std::arch::x86_64::__m256i),
) {
    use std::arch::x86_64::*;
    let (w, planes) = (q.words, q.planes);
    let sign: Vec<__m512i> = (0..w)
        .map(|i| _mm512_set1_epi64(q.sign[i] as i64))
        .collect();
    let levels: Vec<__m512i> = (0..planes * w)
        .map(|k| _mm512_set1_epi64(q.levels[(k / w) * q.padded + k % w] as i64))
        .collect();
    let block = w * LANES;
    for b in first..last {
        let base = blocks.as_ptr().add(b * block);
        if (b + BLOCKS_AHEAD + 1) * block <= blocks.len() {
            // A block is `w` lines of 64 bytes.
            let ahead = base.add(BLOCKS_AHEAD * block) as *const i8;
            for line in 0..w {
                _mm_prefetch::<_MM_HINT_T0>(ahead.add(line * 64));
            }
        }
        let mut count = [_mm512_setzero_si512(); MOST_PLANES];
        for i in 0..w {
            let words = _mm512_loadu_si512(base.add(i * LANES) as *const _);
            let flip = _mm512_xor_si512(words, sign[i]);
            for (j, c) in count.iter_mut().enumerate().take(planes) {
                let apart = _mm512_popcnt_epi64(_mm512_and_si512(flip, levels[j * w + i]));
                *c = _mm512_add_epi64(*c, apart);
            }
        }
        // Σ_j 2^j · count_j, from the top plane down.
        let mut d = _mm512_setzero_si512();
        for c in count[..planes].iter().rev() {
            d = _mm512_add_epi64(_mm512_add_epi64(d, d), *c);
        }
        visit(b, _mm512_cvtepi64_epi32(d));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// Random codes of `rows` rows and a query's three planes and sign over `words` words.
    struct Case {
        words: usize,
        codes: Vec<u64>,
        levels: Vec<u64>,
        sign: Vec<u64>,
        padded: usize,
    }

    impl Case {
        fn new(words: usize, rows: usize, seed: u64) -> Case {
            let mut next = xorshift(seed);
            let codes: Vec<u64> = (0..rows * MASKS * words).map(|_| next()).collect();
            let padded = words.div_ceil(8) * 8;
            let mut levels = vec![0u64; 3 * padded];
            let mut sign = vec![0u64; padded];
            for j in 0..3 {
                for i in 0..words {
                    levels[j * padded + i] = next();
                }
            }
            for s in sign.iter_mut().take(words) {
                *s = next();
            }
            Case {
                words,
                codes,
                levels,
                sign,
                padded,
            }
        }

        /// The query of its first `planes` planes.
        fn query(&self, planes: usize) -> SignQuery<'_> {
            SignQuery {
                words: self.words,
                padded: self.padded,
                planes,
                levels: &self.levels,
                sign: &self.sign,
            }
        }
    }

    /// Row `r`'s distance from its code, the long way.
    fn distance(codes: &[u64], q: &SignQuery, r: usize) -> u32 {
        let row = &codes[r * MASKS * q.words..r * MASKS * q.words + q.words];
        (0..q.planes)
            .map(|j| {
                let apart: u32 = (0..q.words)
                    .map(|i| (q.levels[j * q.padded + i] & (row[i] ^ q.sign[i])).count_ones())
                    .sum();
                apart << j
            })
            .sum()
    }

    #[test]
    fn every_path_counts_each_rows_distance_as_the_long_way() {
        for words in [1, 2, 6, 8, 9] {
            let rows = 1003;
            let case = Case::new(words, rows, 77 + words as u64);
            let codes = &case.codes;
            let signs = Signs::build(codes, words, None);
            assert_eq!(signs.len(), rows);
            for planes in [1, 2, 3] {
                let q = case.query(planes);
                for (lo, hi) in [(0, rows), (3, 13), (8, 16), (997, 1003), (5, 6)] {
                    let want: Vec<(usize, u32)> =
                        (lo..hi).map(|r| (r, distance(codes, &q, r))).collect();
                    let mut fast = Vec::new();
                    signs.each_distance(&q, lo, hi, |r, d| fast.push((r, d)));
                    let mut slow = Vec::new();
                    signs.each_distance_portable(&q, lo, hi, |r, d| slow.push((r, d)));
                    assert_eq!(fast, want, "{words} words, {planes} planes, {lo}..{hi}");
                    assert_eq!(slow, want, "{words} words, {planes} planes, {lo}..{hi}");
                    for line in [0, want[0].1, u32::MAX] {
                        let within: Vec<u32> = want
                            .iter()
                            .filter(|&&(_, d)| d <= line)
                            .map(|&(r, _)| r as u32)
                            .collect();
                        assert_eq!(signs.within(&q, lo, hi, line), within);
                    }
                }
            }
        }
    }

    #[test]
    fn a_small_block_keeps_the_smallest_distances_and_every_tie_at_the_last() {
        for words in [1, 2, 6, 8, 9] {
            let rows = 3003;
            let case = Case::new(words, rows, 5 + words as u64);
            let codes = &case.codes;
            let signs = Signs::build(codes, words, None);
            let q = case.query(3);
            for (lo, hi, keep) in [(0, rows, 300), (100, 2100, 1), (0, rows, rows), (5, 6, 4)] {
                let kept = signs.keep(&q, &[(lo, hi)], keep);
                let mut all: Vec<u32> = (lo..hi).map(|r| distance(codes, &q, r)).collect();
                all.sort_unstable();
                let cut = all[keep.min(hi - lo) - 1];
                let want: Vec<u32> = (lo..hi)
                    .filter(|&r| distance(codes, &q, r) <= cut)
                    .map(|r| r as u32)
                    .collect();
                assert_eq!(kept, want, "{words} words, rows {lo}..{hi}, keep {keep}");
            }
        }
    }

    #[test]
    fn a_large_block_keeps_about_as_many_rows_each_nearer_than_every_row_it_cuts() {
        let (words, rows, keep) = (6, 200_003, 15_000);
        let case = Case::new(words, rows, 99);
        let codes = &case.codes;
        let signs = Signs::build(codes, words, None);
        let q = case.query(3);
        let (lo, hi) = (1003, 1003 + 150_001);
        let kept = signs.keep(&q, &[(lo, hi)], keep);
        assert!(kept.windows(2).all(|w| w[0] < w[1]));
        assert!(
            (keep * 8 / 10..keep * 12 / 10).contains(&kept.len()),
            "{} kept of {keep}",
            kept.len()
        );
        let d = |p: u32| distance(codes, &q, p as usize);
        let farthest_kept = kept.iter().map(|&p| d(p)).max().unwrap();
        let nearest_cut = (lo as u32..hi as u32)
            .filter(|p| kept.binary_search(p).is_err())
            .map(d)
            .min()
            .unwrap();
        assert!(farthest_kept < nearest_cut);
    }

    #[test]
    fn runs_of_rows_laid_out_in_another_order_are_cut_as_those_rows() {
        let (words, rows) = (6, 150_000);
        let case = Case::new(words, rows, 41);
        let codes = &case.codes;
        // Position p holds row order[p]: the rows reversed in runs of 1,000.
        let order: Vec<u32> = (0..rows as u32)
            .map(|p| p / 1000 * 1000 + 999 - p % 1000)
            .collect();
        let signs = Signs::build(codes, words, Some(&order));
        let q = case.query(3);
        let d = |p: u32| distance(codes, &q, order[p as usize] as usize);
        for (runs, keep) in [
            (vec![(5, 905), (2000, 2500), (7003, 7004)], 200),
            (
                vec![(0, 40_000), (60_000, 100_000), (120_000, 150_000)],
                5_500,
            ),
        ] {
            let kept = signs.keep(&q, &runs, keep);
            let inside = |p: u32| {
                runs.iter()
                    .any(|&(lo, hi)| (lo..hi).contains(&(p as usize)))
            };
            assert!(kept.iter().all(|&p| inside(p)));
            assert!(kept.windows(2).all(|w| w[0] < w[1]));
            let farthest_kept = kept.iter().map(|&p| d(p)).max().unwrap();
            let nearest_cut = runs
                .iter()
                .flat_map(|&(lo, hi)| lo as u32..hi as u32)
                .filter(|p| kept.binary_search(p).is_err())
                .map(d)
                .min()
                .unwrap();
            assert!(farthest_kept < nearest_cut, "{runs:?}");
            assert!(
                (keep * 8 / 10..keep * 13 / 10).contains(&kept.len()),
                "{} kept of {keep}",
                kept.len()
            );
        }
    }
}
