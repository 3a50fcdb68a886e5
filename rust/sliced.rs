//! The dense leg's first pass for a sparse query (a hashed one's few tokens): the row codes
//! turned dimension by dimension, so a pass reads only the query's own dimensions.
//!
//! Owns: the sliced layout and its pass. Rows are taken 64 at a time; for each block and each
//! dimension three words hold the block's sign, magnitude bit 0 and magnitude bit 1 bits of
//! that component, one bit per row. A query of `d` non-zero dimensions then reads `d` of the
//! block's `dim` triples: at 1M hashed rows of 512 dimensions, 375 KB per query dimension and
//! 4 MB of row units instead of the 192 MB of every row's code. The estimates are those of the
//! row-major pass to the bit (the same integer sum times the row's unit), so the shortlist and
//! everything after it are unchanged. Does not own: the codes (row_code.rs), when this pass is
//! taken and the exact rescoring (dense.rs).

use crate::row_code::{words_for, MASKS};
use crate::scan::{better, cores, fan_out, TopK};

/// Rows per block: one bit of a word each.
const BLOCK: usize = 64;
/// Blocks sliced together in a buffer that stays in cache (`TILE × dim × 3` words).
const TILE: usize = 32;
/// Blocks per thread below which a second thread costs more than it saves.
const BLOCKS_PER_THREAD: usize = 4096;

/// The codes of `rows` rows in blocks of 64, cut into parts of consecutive blocks (one per
/// core that builds and scans them).
#[derive(Debug, Clone)]
pub(crate) struct Sliced {
    rows: usize,
    parts: Vec<Part>,
}

/// Blocks `first..first + blocks`, dimension by dimension: `cols[(i × blocks + b) × 3 + m]`
/// holds mask `m` (sign, bit 0, bit 1) of component `i` for the rows of block `first + b`, row
/// `r` at bit `r`. A query dimension is then one sequential stream.
#[derive(Debug, Clone)]
struct Part {
    first: usize,
    blocks: usize,
    cols: Vec<u64>,
}

impl Part {
    /// The triple of component `i` in the part's block `b`.
    #[inline(always)]
    fn triple(&self, b: usize, i: usize) -> (u64, u64, u64) {
        let at = (i * self.blocks + b) * MASKS;
        (self.cols[at], self.cols[at + 1], self.cols[at + 2])
    }
}

/// One non-zero dimension of the query: its level (the row-major pass's, 1–7) and whether it
/// is negative (then every word of row signs is read flipped).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Term {
    pub(crate) dim: usize,
    pub(crate) level: i16,
    pub(crate) flip: u64,
}

impl Sliced {
    /// The sliced layout of row-major codes (`MASKS × words` per row), built on all cores.
    pub(crate) fn build(codes: &[u64], dim: usize) -> Sliced {
        let blocks = (codes.len() / (MASKS * words_for(dim))).div_ceil(BLOCK);
        let threads = cores().min(blocks / BLOCKS_PER_THREAD).max(1);
        Sliced::in_parts(codes, dim, threads)
    }

    /// `build` in `parts` parts of about equal blocks, one thread each.
    pub(crate) fn in_parts(codes: &[u64], dim: usize, parts: usize) -> Sliced {
        let stride = MASKS * words_for(dim);
        let rows = codes.len().checked_div(stride).unwrap_or(0);
        let blocks = rows.div_ceil(BLOCK);
        let per = blocks.div_ceil(parts.max(1)).max(1);
        let parts = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..blocks.div_ceil(per))
                .map(|t| {
                    let first = t * per;
                    let from = first * BLOCK * stride;
                    let to = (from + per * BLOCK * stride).min(codes.len());
                    let codes = &codes[from..to];
                    scope.spawn(move || Part::of(codes, dim, first))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("slicing thread panicked"))
                .collect()
        });
        Sliced { rows, parts }
    }

    /// The `k` best estimates `Σ level × ±row level × unit` over the rows (positions and
    /// estimates, best first, earlier rows winning ties), exactly the ones the row-major pass
    /// returns. `units` holds one per row.
    pub(crate) fn top_k(&self, terms: &[Term], units: &[f32], k: usize) -> Vec<(usize, f32)> {
        let mut best: Vec<(usize, f32)> = fan_out(self.parts.len(), |p| {
            self.scan(&self.parts[p], terms, units, k)
        })
        .concat();
        best.sort_by(better);
        best.truncate(k);
        // A row the query touches in none of its dimensions was not pushed: its estimate is 0.
        // When fewer than `k` touched rows estimate above 0, the first untouched rows (the
        // row-major pass keeps the earliest among equals) complete the set.
        let positive = best.iter().filter(|p| p.1 > 0.0).count();
        if positive < k {
            best.extend(self.untouched(terms).take(k - positive).map(|r| (r, 0.0)));
            best.sort_by(better);
            best.truncate(k);
        }
        best
    }

    /// The pass over one part, with the kernel this CPU runs.
    fn scan(&self, part: &Part, terms: &[Term], units: &[f32], k: usize) -> Vec<(usize, f32)> {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512bw") {
            // SAFETY: the features were detected just above.
            return unsafe { scan_avx512(part, terms, units, k) };
        }
        scan_portable(part, terms, units, k)
    }

    /// The portable kernel's pass and this CPU's over the first part.
    #[cfg(test)]
    pub(crate) fn both_kernels(
        &self,
        terms: &[Term],
        units: &[f32],
        k: usize,
    ) -> [Vec<(usize, f32)>; 2] {
        let part = &self.parts[0];
        [
            scan_portable(part, terms, units, k),
            self.scan(part, terms, units, k),
        ]
    }

    /// Rows in order that no dimension of the query touches (all its levels 0 there).
    fn untouched<'a>(&'a self, terms: &'a [Term]) -> impl Iterator<Item = usize> + 'a {
        let rows = self.rows;
        self.parts.iter().flat_map(move |part| {
            (0..part.blocks).flat_map(move |b| {
                let touched = terms.iter().fold(0u64, |acc, t| {
                    let (_, low, high) = part.triple(b, t.dim);
                    acc | low | high
                });
                let first = (part.first + b) * BLOCK;
                (0..(rows - first).min(BLOCK))
                    .filter(move |r| touched >> r & 1 == 0)
                    .map(move |r| first + r)
            })
        })
    }
}

/// Push every touched row of a block whose first row is `first` with its estimate
/// (`sums[r] × unit`).
#[inline(always)]
fn push_block(first: usize, touched: u64, sums: &[i32; BLOCK], units: &[f32], top: &mut TopK) {
    let mut left = touched;
    while left != 0 {
        let r = left.trailing_zeros() as usize;
        left &= left - 1;
        top.push(first + r, sums[r] as f32 * units[first + r]);
    }
}

fn scan_portable(part: &Part, terms: &[Term], units: &[f32], k: usize) -> Vec<(usize, f32)> {
    let mut top = TopK::new(k);
    for b in 0..part.blocks {
        let mut sums = [0i32; BLOCK];
        let mut touched = 0u64;
        for t in terms {
            let (sign, low, high) = part.triple(b, t.dim);
            let negative = sign ^ t.flip;
            touched |= low | high;
            for (mask, weight) in [(low, 1), (high, 2)] {
                let mut left = mask;
                while left != 0 {
                    let r = left.trailing_zeros() as usize;
                    left &= left - 1;
                    let v = i32::from(t.level) * weight;
                    sums[r] += if negative >> r & 1 == 1 { -v } else { v };
                }
            }
        }
        push_block((part.first + b) * BLOCK, touched, &sums, units, &mut top);
    }
    top.finish(0)
}

/// How many blocks ahead of the one being summed the pass asks for each dimension's words.
#[cfg(target_arch = "x86_64")]
const PREFETCH_BLOCKS: usize = 24;
/// How many blocks ahead it asks for the rows' units (a block's 64 units: four cache lines).
#[cfg(target_arch = "x86_64")]
const UNIT_PREFETCH_BLOCKS: usize = 8;

/// The pass with 64 rows' sums in 8-bit lanes (one register) when the query's largest sum
/// fits them, as a hashed query's does, else in 16-bit lanes (two registers); each dimension is
/// added under its masks.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn scan_avx512(part: &Part, terms: &[Term], units: &[f32], k: usize) -> Vec<(usize, f32)> {
    let reach: i32 = terms.iter().map(|t| 3 * i32::from(t.level)).sum();
    if reach <= i32::from(i8::MAX) {
        scan_lanes::<true>(part, terms, units, k)
    } else {
        scan_lanes::<false>(part, terms, units, k)
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn scan_lanes<const NARROW: bool>(
    part: &Part,
    terms: &[Term],
    units: &[f32],
    k: usize,
) -> Vec<(usize, f32)> {
    use std::arch::x86_64::*;
    let levels: Vec<(__m512i, __m512i)> = terms
        .iter()
        .map(|t| {
            if NARROW {
                let l = t.level as i8;
                (_mm512_set1_epi8(l), _mm512_set1_epi8(2 * l))
            } else {
                (_mm512_set1_epi16(t.level), _mm512_set1_epi16(2 * t.level))
            }
        })
        .collect();
    let streams: Vec<*const u64> = terms
        .iter()
        .map(|t| part.cols.as_ptr().wrapping_add(t.dim * part.blocks * MASKS))
        .collect();
    let mut top = TopK::new(k);
    let mut estimates = [0f32; BLOCK];
    for b in 0..part.blocks {
        // The units of a block are read whole: ask for them ahead too (without it the pass
        // waits on these loads more than on the dimensions' words).
        let ahead = units
            .as_ptr()
            .wrapping_add((part.first + b + UNIT_PREFETCH_BLOCKS) * BLOCK)
            as *const i8;
        for line in 0..BLOCK * 4 / 64 {
            // SAFETY: a prefetch never faults, wherever it points.
            _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(line * 64));
        }
        // NARROW: all 64 rows in `low_rows`; else rows 0–31 there and 32–63 in `high_rows`.
        let (mut low_rows, mut high_rows) = (_mm512_setzero_si512(), _mm512_setzero_si512());
        let mut touched = 0u64;
        for ((t, &(one, two)), &stream) in terms.iter().zip(&levels).zip(&streams) {
            // SAFETY: a prefetch never faults, wherever it points.
            _mm_prefetch::<_MM_HINT_T0>(
                stream.wrapping_add((b + PREFETCH_BLOCKS) * MASKS) as *const i8
            );
            let (sign, low, high) = part.triple(b, t.dim);
            let negative = sign ^ t.flip;
            touched |= low | high;
            for (mask, v) in [(low, one), (high, two)] {
                let (plus, minus) = (mask & !negative, mask & negative);
                if NARROW {
                    low_rows = _mm512_mask_add_epi8(low_rows, plus, low_rows, v);
                    low_rows = _mm512_mask_sub_epi8(low_rows, minus, low_rows, v);
                } else {
                    low_rows = _mm512_mask_add_epi16(low_rows, plus as u32, low_rows, v);
                    low_rows = _mm512_mask_sub_epi16(low_rows, minus as u32, low_rows, v);
                    high_rows = _mm512_mask_add_epi16(high_rows, (plus >> 32) as u32, high_rows, v);
                    high_rows =
                        _mm512_mask_sub_epi16(high_rows, (minus >> 32) as u32, high_rows, v);
                }
            }
        }
        if touched == 0 {
            continue;
        }
        // The sums of rows 16q..16q+16 as 32-bit lanes.
        let quarters: [__m512i; 4] = if NARROW {
            [
                _mm512_cvtepi8_epi32(_mm512_castsi512_si128(low_rows)),
                _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32::<1>(low_rows)),
                _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32::<2>(low_rows)),
                _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32::<3>(low_rows)),
            ]
        } else {
            [
                _mm512_cvtepi16_epi32(_mm512_castsi512_si256(low_rows)),
                _mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64::<1>(low_rows)),
                _mm512_cvtepi16_epi32(_mm512_castsi512_si256(high_rows)),
                _mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64::<1>(high_rows)),
            ]
        };
        // Estimates of the block's rows, and which beat the running floor: only those are
        // pushed (a row past the last one is not there).
        let first = (part.first + b) * BLOCK;
        let present = units.len() - first;
        let floor = _mm512_set1_ps(top.floor());
        let mut above = 0u64;
        for (q, sums) in quarters.into_iter().enumerate() {
            let at = q * 16;
            let valid: __mmask16 = if present >= at + 16 {
                0xffff
            } else {
                ((1u32 << present.saturating_sub(at)) - 1) as u16
            };
            // SAFETY: the masked load reads only rows that exist.
            let unit = _mm512_maskz_loadu_ps(valid, units.as_ptr().add(first + at.min(present)));
            let estimate = _mm512_mul_ps(_mm512_cvtepi32_ps(sums), unit);
            // SAFETY: `estimates` holds 64 lanes; this store writes 16 of them.
            _mm512_storeu_ps(estimates.as_mut_ptr().add(at), estimate);
            let beat = _mm512_mask_cmp_ps_mask::<_CMP_GT_OQ>(valid, estimate, floor);
            above |= u64::from(beat) << at;
        }
        let mut left = above & touched;
        while left != 0 {
            let r = left.trailing_zeros() as usize;
            left &= left - 1;
            top.push(first + r, estimates[r]);
        }
    }
    top.finish(0)
}

impl Part {
    /// The part of whole blocks (the last may be short) of row-major `codes`, its first block
    /// `first`. Blocks are sliced `TILE` at a time into a buffer that stays in cache (each
    /// block's bits set within its own `dim × 3` words), then each dimension's run of the tile
    /// is copied to its stream, so every word is written once.
    fn of(codes: &[u64], dim: usize, first: usize) -> Part {
        let words = words_for(dim);
        let stride = MASKS * words;
        let blocks = (codes.len() / stride).div_ceil(BLOCK);
        let mut cols: Vec<u64> = crate::memory::huge_vec(blocks * dim * MASKS);
        let mut tile = vec![0u64; dim * TILE * MASKS];
        let out = cols.spare_capacity_mut();
        for (t, rows) in codes.chunks(TILE * BLOCK * stride).enumerate() {
            let n = rows.len().div_ceil(BLOCK * stride);
            tile.fill(0);
            for (b, block) in rows.chunks(BLOCK * stride).enumerate() {
                for (r, code) in block.chunks_exact(stride).enumerate() {
                    for w in 0..words {
                        let (sign, low, high) = (code[w], code[words + w], code[2 * words + w]);
                        // Each held component sets its three bits without a branch; a sign bit
                        // without a magnitude bit is never read.
                        let mut left = low | high;
                        while left != 0 {
                            let j = left.trailing_zeros() as usize;
                            left &= left - 1;
                            let at = (b * dim + w * 64 + j) * MASKS;
                            tile[at] |= (sign >> j & 1) << r;
                            tile[at + 1] |= (low >> j & 1) << r;
                            tile[at + 2] |= (high >> j & 1) << r;
                        }
                    }
                }
            }
            for i in 0..dim {
                let to = (i * blocks + t * TILE) * MASKS;
                for (b, slots) in out[to..to + n * MASKS].chunks_exact_mut(MASKS).enumerate() {
                    let from = (b * dim + i) * MASKS;
                    for (slot, &word) in slots.iter_mut().zip(&tile[from..from + MASKS]) {
                        slot.write(word);
                    }
                }
            }
        }
        // SAFETY: the tiles cover every block, and each wrote its run of every dimension:
        // all `blocks × dim × MASKS` words are written.
        unsafe { cols.set_len(blocks * dim * MASKS) };
        Part {
            first,
            blocks,
            cols,
        }
    }
}
