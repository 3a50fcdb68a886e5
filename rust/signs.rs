//! The first cut of a model's query over many rows: the rows' sign masks alone, a third of each
//! code, kept contiguous so that the cut reads 48 bytes a row at 384 dimensions instead of 144.
//!
//! Owns: the sign layout (each row's `words` sign words, row after row, copied from the codes)
//! and the cut. A row's distance is Σ_j 2^j · popcount(plane_j & (row sign ⊕ query sign)): the
//! query's magnitude levels on the components whose sign the row does not share, so that the
//! sign estimate of the cosine, Σ qlevel − 2 · distance, falls as it grows. The cut keeps the
//! rows of the `keep` smallest distances (every row tied at the last one too), found by a
//! histogram of the distances (small integers), not a sort. Does not own: the codes
//! (row_code.rs), when the cut is taken or the full code pass over what it keeps (dense.rs).

use crate::row_code::MASKS;

/// Every row's sign words, `words` a row.
#[derive(Debug, Clone, Default)]
pub(crate) struct Signs {
    words: usize,
    masks: Vec<u64>,
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

impl Signs {
    /// The sign words of row-major codes (`MASKS × words` words a row).
    pub(crate) fn build(codes: &[u64], words: usize) -> Signs {
        let masks = codes
            .chunks_exact(MASKS * words)
            .flat_map(|code| code[..words].iter().copied())
            .collect();
        Signs { words, masks }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.masks.len().checked_div(self.words).unwrap_or(0)
    }

    /// The rows of `lo..hi` whose distance is among the `keep` smallest (and every row tied with
    /// the last of them), as positions from `lo`, in row order.
    pub(crate) fn keep(&self, q: &SignQuery, lo: usize, hi: usize, keep: usize) -> Vec<u32> {
        let masks = &self.masks[lo * self.words..hi * self.words];
        let most = ((1usize << q.planes) - 1) * 64 * q.words;
        let mut counts = vec![0u32; most + 1];
        let distances = distances(q, masks, &mut counts);
        let mut cut = 0;
        let mut seen = 0usize;
        for (d, &c) in counts.iter().enumerate() {
            seen += c as usize;
            cut = d as u32;
            if seen >= keep {
                break;
            }
        }
        // Without a branch per row: which rows pass is as good as random. Every row's place is
        // written at the next free slot, which a row that passes keeps; nothing is zeroed first.
        let mut kept: Vec<u32> = Vec::with_capacity(distances.len());
        let slots = kept.spare_capacity_mut();
        let mut n = 0;
        for (i, &d) in distances.iter().enumerate() {
            slots[n].write(i as u32);
            n += usize::from(d <= cut);
        }
        // SAFETY: slots 0..n were each written (by the row that passed there).
        unsafe { kept.set_len(n) };
        kept
    }
}

/// Each row's distance, counted into `counts` by value.
fn distances(q: &SignQuery, masks: &[u64], counts: &mut [u32]) -> Vec<u32> {
    #[cfg(target_arch = "x86_64")]
    if q.words <= 8
        && std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512vpopcntdq")
    {
        // SAFETY: the features were detected just above.
        return unsafe { distances_avx512(q, masks, counts) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("popcnt") {
        // SAFETY: the feature was detected just above.
        return unsafe { distances_popcnt(q, masks, counts) };
    }
    distances_portable(q, masks, counts)
}

/// The portable count compiled with the CPU's POPCNT instruction.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn distances_popcnt(q: &SignQuery, masks: &[u64], counts: &mut [u32]) -> Vec<u32> {
    distances_portable(q, masks, counts)
}

#[inline(always)]
fn distances_portable(q: &SignQuery, masks: &[u64], counts: &mut [u32]) -> Vec<u32> {
    masks
        .chunks_exact(q.words)
        .map(|row| {
            let mut d = 0u32;
            for j in (0..q.planes).rev() {
                let plane = &q.levels[j * q.padded..j * q.padded + q.words];
                let apart: u32 = (0..q.words)
                    .map(|i| (plane[i] & (row[i] ^ q.sign[i])).count_ones())
                    .sum();
                d = 2 * d + apart;
            }
            counts[d as usize] += 1;
            d
        })
        .collect()
}

/// Rows whose sums the AVX-512 cut reduces together.
const BATCH: usize = 8;

/// AVX-512 cut for rows of at most 512 dimensions: a row's sign words are one masked load, the
/// query's planes stay in registers, and eight rows' lane sums are reduced together.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
unsafe fn distances_avx512(q: &SignQuery, masks: &[u64], counts: &mut [u32]) -> Vec<u32> {
    use std::arch::x86_64::*;
    let w = q.words;
    let mask: __mmask8 = if w >= 8 { 0xff } else { (1u8 << w) - 1 };
    let planes: Vec<__m512i> = (0..q.planes)
        .map(|j| _mm512_loadu_si512(q.levels.as_ptr().add(j * q.padded) as *const _))
        .collect();
    let sign = _mm512_loadu_si512(q.sign.as_ptr() as *const _);
    // One row's distance, its 8 lanes still to be added.
    let lanes = |row: *const u64| {
        let flip = _mm512_xor_si512(sign, _mm512_maskz_loadu_epi64(mask, row as *const _));
        let mut acc = _mm512_setzero_si512();
        for plane in planes.iter().rev() {
            let apart = _mm512_popcnt_epi64(_mm512_and_si512(*plane, flip));
            acc = _mm512_add_epi64(_mm512_add_epi64(acc, acc), apart);
        }
        acc
    };
    // Two rows' lanes summed pairwise within each 128-bit lane, then 128-bit lanes of two such
    // registers gathered and summed: three steps take eight registers to one of eight sums.
    let pairs = |a: __m512i, b: __m512i| {
        _mm512_add_epi64(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b))
    };
    let halves = |a: __m512i, b: __m512i| {
        _mm512_add_epi64(
            _mm512_shuffle_i64x2::<0b10_00_10_00>(a, b),
            _mm512_shuffle_i64x2::<0b11_01_11_01>(a, b),
        )
    };
    let rows = masks.len() / w;
    // Each row's distance is written once, and counted while it is at hand; nothing is zeroed
    // first.
    let mut out: Vec<u32> = Vec::with_capacity(rows);
    let at = out.as_mut_ptr();
    let batches = rows / BATCH;
    for g in 0..batches {
        // SAFETY: the batch's 8 rows are in `masks`; each masked load touches only its row.
        let first = masks.as_ptr().add(g * BATCH * w);
        let v: [__m512i; BATCH] = std::array::from_fn(|r| lanes(first.add(r * w)));
        let sums = halves(
            halves(pairs(v[0], v[1]), pairs(v[2], v[3])),
            halves(pairs(v[4], v[5]), pairs(v[6], v[7])),
        );
        let mut batch = [0u32; BATCH];
        _mm256_storeu_si256(batch.as_mut_ptr() as *mut _, _mm512_cvtepi64_epi32(sums));
        for (r, &d) in batch.iter().enumerate() {
            counts[d as usize] += 1;
            at.add(g * BATCH + r).write(d);
        }
    }
    for r in batches * BATCH..rows {
        let d = _mm512_reduce_add_epi64(lanes(masks.as_ptr().add(r * w))) as u32;
        counts[d as usize] += 1;
        at.add(r).write(d);
    }
    // SAFETY: every row's distance was written above.
    out.set_len(rows);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cut_keeps_the_smallest_distances_and_every_tie_at_the_last() {
        let mut x = 77u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for words in [1, 2, 6, 8, 9] {
            let rows = 3003;
            let codes: Vec<u64> = (0..rows * MASKS * words).map(|_| next()).collect();
            let signs = Signs::build(&codes, words);
            assert_eq!(signs.len(), rows);
            let padded = words.div_ceil(8) * 8;
            let planes = 3;
            let mut levels = vec![0u64; planes * padded];
            let mut sign = vec![0u64; padded];
            for j in 0..planes {
                for i in 0..words {
                    levels[j * padded + i] = next();
                }
            }
            for s in sign.iter_mut().take(words) {
                *s = next();
            }
            let q = SignQuery {
                words,
                padded,
                planes,
                levels: &levels,
                sign: &sign,
            };
            let distance = |r: usize| -> u32 {
                let row = &codes[r * MASKS * words..r * MASKS * words + words];
                (0..planes)
                    .map(|j| {
                        let apart: u32 = (0..words)
                            .map(|i| (levels[j * padded + i] & (row[i] ^ sign[i])).count_ones())
                            .sum();
                        apart << j
                    })
                    .sum()
            };
            // Every kernel this CPU has counts as the portable one.
            let masks = &signs.masks[..];
            let mut counts = vec![0u32; 7 * 64 * words + 1];
            let want = distances_portable(&q, masks, &mut counts);
            let mut fast_counts = vec![0u32; counts.len()];
            assert_eq!(distances(&q, masks, &mut fast_counts), want);
            assert_eq!(fast_counts, counts);
            for (lo, hi, keep) in [(0, rows, 300), (100, 2100, 1), (0, rows, rows), (5, 6, 4)] {
                let kept = signs.keep(&q, lo, hi, keep);
                let mut all: Vec<u32> = (lo..hi).map(distance).collect();
                all.sort_unstable();
                let cut = all[keep.min(hi - lo) - 1];
                let want: Vec<u32> = (lo..hi)
                    .filter(|&r| distance(r) <= cut)
                    .map(|r| (r - lo) as u32)
                    .collect();
                assert_eq!(kept, want, "{words} words, rows {lo}..{hi}, keep {keep}");
                assert!(kept.len() >= keep.min(hi - lo));
            }
        }
    }
}
