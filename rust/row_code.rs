//! One row's code for the dense leg's first pass, and the form the store keeps it in.
//!
//! Owns: coding a row (a sign mask and two magnitude bit planes, levels 0–3 of the row's own
//! quantum, least-squares fitted), whether the code gives the row back (then no other copy of it
//! is needed), decoding, and the stored bytes (`code_bytes`, `StoredCodes`). Does not own: the
//! scan over codes (dense.rs) or where the bytes are kept (store/codes.rs).

use crate::dense::DenseIndex;

/// A component is coded as zero when its magnitude is below this share of the row's mean
/// magnitude; the others set the row's quantum.
const ZERO_BAND: f32 = 0.6;
/// Masks per row: sign, magnitude bit 0, magnitude bit 1.
pub(crate) const MASKS: usize = 3;
/// `held` of a row whose code reproduces its vector.
pub(crate) const REPRODUCED: u32 = u32::MAX;
/// A component is reproduced when `unit × level` is within this share of it (a few roundings
/// of the least-squares unit; a hashed row's components are exact multiples of one quantum).
const REPRODUCE_TOLERANCE: f32 = 4.0 * f32::EPSILON;
/// Layout version of a code as `code_bytes` writes it.
const CODE_VERSION: u8 = 1;
/// Bytes before the masks in `code_bytes`: version, flags, unit.
const CODE_HEADER: usize = 6;

pub(crate) fn words_for(dim: usize) -> usize {
    dim.div_ceil(64)
}

/// Append the code of `row` to `out`; returns the row's unit.
pub(crate) fn encode(row: &[f32], out: &mut Vec<u64>) -> f32 {
    let start = out.len();
    out.resize(start + MASKS * words_for(row.len()), 0);
    encode_into(row, &mut out[start..])
}

/// Write the code of `row` into `masks` (zeroed, `MASKS × words`); returns the row's unit.
/// Components above the zero band set a first quantum (their mean magnitude), each gets the
/// nearest level 0–3 of it, and the unit is then the least-squares scale of those levels,
/// exact for a hashed row.
fn encode_into(row: &[f32], masks: &mut [u64]) -> f32 {
    // Branch-free passes with eight accumulators each: this runs for every row when a store is
    // opened, and a single float accumulator would serialise on the add latency.
    let words = words_for(row.len());
    let mean = lane_sum(row, f32::abs) / row.len().max(1) as f32;
    let band = (mean * ZERO_BAND).max(f32::MIN_POSITIVE);
    let above = |x: f32| if x.abs() > band { x.abs() } else { 0.0 };
    let count = row.iter().filter(|x| x.abs() > band).count();
    if count == 0 {
        return 0.0;
    }
    let inverse = count as f32 / lane_sum(row, above);
    // Round half up by truncation (a ≥ 0); components in the band are level 0.
    let level = |x: f32| ((above(x) * inverse + 0.5) as u32).min(3);
    let (mut xl, mut ll) = ([0.0f32; 8], 0u32);
    for (w, part) in row.chunks(64).enumerate() {
        let (mut sign, mut low, mut high) = (0u64, 0u64, 0u64);
        for (j, &x) in part.iter().enumerate() {
            let l = level(x);
            // A sign bit without a magnitude bit is never read.
            sign |= u64::from(x < 0.0) << j;
            low |= u64::from(l & 1) << j;
            high |= u64::from(l >> 1) << j;
            xl[j % 8] += x.abs() * l as f32;
            ll += l * l;
        }
        masks[w] = sign;
        masks[words + w] = low;
        masks[2 * words + w] = high;
    }
    if ll > 0 {
        xl.iter().sum::<f32>() / ll as f32
    } else {
        0.0
    }
}

/// Σ f(x) over `row` in eight lanes.
#[inline(always)]
fn lane_sum(row: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0.0f32; 8];
    let chunks = row.chunks_exact(8);
    let tail: f32 = chunks.remainder().iter().map(|&x| f(x)).sum();
    for c in chunks {
        for i in 0..8 {
            acc[i] += f(c[i]);
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// The level (0–3) and sign of component `i` in one row's masks (`words` per mask).
#[inline(always)]
fn level_at(masks: &[u64], words: usize, i: usize) -> (u32, bool) {
    let (w, b) = (i / 64, i % 64);
    let level = (masks[words + w] >> b & 1) | (masks[2 * words + w] >> b & 1) << 1;
    (level as u32, masks[w] >> b & 1 == 1)
}

/// The components of `row` that `unit × ±level` does not give back (zeros must be exact),
/// at most `limit` of them: a row with none is reproduced by its code.
fn misses(row: &[f32], masks: &[u64], unit: f32, limit: usize) -> Vec<usize> {
    let words = words_for(row.len());
    let reproduced = |i: usize, x: f32| match level_at(masks, words, i) {
        (0, _) => x == 0.0,
        (level, negative) => {
            negative == (x < 0.0)
                && (unit * level as f32 - x.abs()).abs() <= REPRODUCE_TOLERANCE * x.abs()
        }
    };
    row.iter()
        .enumerate()
        .filter(|&(i, &x)| !reproduced(i, x))
        .map(|(i, _)| i)
        .take(limit)
        .collect()
}

/// The vector a code stands for: `unit × ±level` per component, appended to `out`.
pub(crate) fn decode(masks: &[u64], unit: f32, dim: usize, out: &mut Vec<f32>) {
    let at = out.len();
    out.resize(at + dim, 0.0);
    decode_into(masks, unit, &mut out[at..]);
}

/// `decode` into `out`, whose length is the dimension.
#[inline]
fn decode_into(masks: &[u64], unit: f32, out: &mut [f32]) {
    let words = words_for(out.len());
    for (w, part) in out.chunks_mut(64).enumerate() {
        let (sign, low, high) = (masks[w], masks[words + w], masks[2 * words + w]);
        // A sign bit without a magnitude bit is never read.
        let negative = sign & (low | high);
        for (j, x) in part.iter_mut().enumerate() {
            let level = (low >> j & 1) | (high >> j & 1) << 1;
            let magnitude = unit * level as f32;
            *x = f32::from_bits(magnitude.to_bits() | ((negative >> j & 1) as u32) << 31);
        }
    }
}

/// `dot(v, q)` (dense.rs) of the vector `v` a code stands for, to the bit, without building
/// it: `dot` adds each component's product into lane `i % 8`, in order, and a zero component
/// adds nothing to a lane, so only the components the code holds are visited; the last
/// `dim % 8` are summed apart, as `dot` does. Nor does a zero component of the query when the
/// unit is finite (every product is then ±0): `support` (`query_support`) skips those too, so
/// a sparse query visits only the components both hold.
pub(crate) fn code_dot(masks: &[u64], unit: f32, q: &[f32], support: &[u64]) -> f32 {
    let dim = q.len();
    let words = words_for(dim);
    let body = dim - dim % 8;
    let value = |w: usize, j: usize| {
        let (sign, low, high) = (masks[w], masks[words + w], masks[2 * words + w]);
        let level = (low >> j & 1) | (high >> j & 1) << 1;
        let magnitude = unit * level as f32;
        let negative = sign & (low | high);
        f32::from_bits(magnitude.to_bits() | ((negative >> j & 1) as u32) << 31)
    };
    let mut acc = [0.0f32; 8];
    for w in 0..words {
        let mut held = masks[words + w] | masks[2 * words + w];
        if unit.is_finite() {
            held &= support[w];
        }
        let end = body.saturating_sub(w * 64);
        if end < 64 {
            held &= (1u64 << end) - 1;
        }
        while held != 0 {
            let j = held.trailing_zeros() as usize;
            held &= held - 1;
            let i = w * 64 + j;
            acc[i % 8] += value(w, j) * q[i];
        }
    }
    let mut rest = [0.0f32; 8];
    for (i, x) in (body..dim).zip(rest.iter_mut()) {
        *x = value(i / 64, i % 64);
    }
    let tail: f32 = rest[..dim - body]
        .iter()
        .zip(&q[body..])
        .map(|(x, y)| x * y)
        .sum();
    acc.iter().sum::<f32>() + tail
}

/// The query's non-zero components, one bit each, in `words_for(q.len())` words (a NaN
/// component counts as non-zero).
pub(crate) fn query_support(q: &[f32]) -> Vec<u64> {
    let mut support = vec![0u64; words_for(q.len())];
    for (i, &x) in q.iter().enumerate() {
        if x != 0.0 {
            support[i / 64] |= 1 << (i % 64);
        }
    }
    support
}

/// A row's code as the store keeps it: version, flags (bit 0: the code, with its exceptions,
/// is the row), the unit (little-endian float32), the masks (little-endian u64), then for a
/// reproduced row each component the code misses (at most `MAX_EXCEPTIONS`: a hashed row's
/// bucket where four tokens collide) as its index (u32) and value (float32), little-endian.
pub fn code_bytes(row: &[f32]) -> Vec<u8> {
    let mut masks = Vec::new();
    let mut unit = encode(row, &mut masks);
    // A row with values that are not finite numbers (damaged) keeps its vector, which never
    // scores.
    if !unit.is_finite() {
        unit = 0.0;
    }
    let limit = exceptions_for(row.len());
    let mut missed = misses(row, &masks, unit, limit + 1);
    if missed.len() > limit {
        // A clipped component (four tokens in one hashed bucket) pulls the least-squares unit
        // off the row's quantum: try the quantum itself, the smallest level-1 magnitude.
        let words = words_for(row.len());
        let quantum = row
            .iter()
            .enumerate()
            .filter(|&(i, _)| level_at(&masks, words, i).0 == 1)
            .map(|(_, x)| x.abs())
            .fold(f32::INFINITY, f32::min);
        if quantum.is_finite() {
            let again = misses(row, &masks, quantum, limit + 1);
            if again.len() <= limit {
                (unit, missed) = (quantum, again);
            }
        }
    }
    let reproduced = missed.len() <= limit && row.iter().all(|x| x.is_finite());
    let mut out = Vec::with_capacity(CODE_HEADER + masks.len() * 8 + EXCEPTION_BYTES);
    out.extend_from_slice(&[CODE_VERSION, u8::from(reproduced)]);
    out.extend_from_slice(&unit.to_le_bytes());
    masks
        .iter()
        .for_each(|m| out.extend_from_slice(&m.to_le_bytes()));
    if reproduced {
        for i in missed {
            out.extend_from_slice(&(i as u32).to_le_bytes());
            out.extend_from_slice(&row[i].to_le_bytes());
        }
    }
    out
}

/// Components a reproduced row may list besides its code: one in 32, at most 8.
const MAX_EXCEPTIONS: usize = 8;

fn exceptions_for(dim: usize) -> usize {
    (dim / 32).min(MAX_EXCEPTIONS)
}
/// Bytes of one listed component: index (u32) and value (float32).
const EXCEPTION_BYTES: usize = 8;

/// Rows read back from their codes (`code_bytes`), in order, before the vectors of the rows
/// their codes do not reproduce are added (`into_index`).
#[derive(Debug, Default)]
pub struct StoredCodes {
    dim: usize,
    codes: Vec<u64>,
    units: Vec<f32>,
    /// Per row: `REPRODUCED`, `LISTED` (its vector is the next one in `listed`) or `NEEDED`.
    kinds: Vec<u32>,
    /// The vectors of reproduced rows with exceptions: the code's vector with them put in.
    listed: Vec<f32>,
}

const LISTED: u32 = u32::MAX - 1;
const NEEDED: u32 = u32::MAX - 2;

impl StoredCodes {
    pub fn new(dim: usize) -> StoredCodes {
        StoredCodes {
            dim,
            ..StoredCodes::default()
        }
    }

    /// Room for `rows` codes, made before they are read.
    pub fn with_capacity(dim: usize, rows: usize) -> StoredCodes {
        StoredCodes {
            dim,
            codes: crate::memory::huge_vec(rows * MASKS * words_for(dim)),
            units: crate::memory::huge_vec(rows),
            kinds: crate::memory::huge_vec(rows),
            listed: Vec::new(),
        }
    }

    /// Append one stored code; false (and nothing appended) when it is not a code of this
    /// layout and dimension.
    pub fn push(&mut self, bytes: &[u8]) -> bool {
        let words = MASKS * words_for(self.dim);
        let masks_end = CODE_HEADER + words * 8;
        if bytes.len() < masks_end || bytes[0] != CODE_VERSION || bytes[1] > 1 {
            return false;
        }
        let extra = bytes.len() - masks_end;
        let reproduced = bytes[1] == 1;
        if !extra.is_multiple_of(EXCEPTION_BYTES)
            || extra / EXCEPTION_BYTES > exceptions_for(self.dim)
            || (!reproduced && extra > 0)
        {
            return false;
        }
        let unit = f32::from_le_bytes(bytes[2..6].try_into().expect("four bytes"));
        let exceptions: Vec<(usize, f32)> = bytes[masks_end..]
            .chunks_exact(EXCEPTION_BYTES)
            .map(|e| {
                let i = u32::from_le_bytes(e[..4].try_into().expect("four bytes"));
                (
                    i as usize,
                    f32::from_le_bytes(e[4..].try_into().expect("four bytes")),
                )
            })
            .collect();
        if !unit.is_finite() || exceptions.iter().any(|&(i, _)| i >= self.dim) {
            return false;
        }
        let start = self.codes.len();
        self.codes.extend(
            bytes[CODE_HEADER..masks_end]
                .chunks_exact(8)
                .map(|b| u64::from_le_bytes(b.try_into().expect("eight bytes"))),
        );
        self.units.push(unit);
        self.kinds.push(match (reproduced, exceptions.is_empty()) {
            (false, _) => NEEDED,
            (true, true) => REPRODUCED,
            (true, false) => {
                let at = self.listed.len();
                decode(&self.codes[start..], unit, self.dim, &mut self.listed);
                exceptions
                    .iter()
                    .for_each(|&(i, x)| self.listed[at + i] = x);
                LISTED
            }
        });
        true
    }

    pub fn len(&self) -> usize {
        self.units.len()
    }

    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }

    /// Positions of the rows whose code does not reproduce their vector: those need theirs.
    pub fn unreproduced(&self) -> Vec<usize> {
        (0..self.len())
            .filter(|&i| self.kinds[i] == NEEDED)
            .collect()
    }

    /// The index, given the vectors of the `unreproduced` rows in that order (`dim` floats
    /// each).
    pub fn into_index(self, needed: Vec<f32>) -> DenseIndex {
        let dim = self.dim;
        let count = |kind: u32| self.kinds.iter().filter(|&&k| k == kind).count();
        assert_eq!(
            needed.len(),
            count(NEEDED) * dim,
            "one vector per row its code does not reproduce"
        );
        let (mut listed, mut needed) = (self.listed.chunks_exact(dim), needed.chunks_exact(dim));
        let mut data = Vec::with_capacity((count(NEEDED) + count(LISTED)) * dim);
        let held = self
            .kinds
            .iter()
            .map(|&kind| {
                let row = match kind {
                    REPRODUCED => return REPRODUCED,
                    LISTED => listed.next(),
                    _ => needed.next(),
                };
                data.extend_from_slice(row.expect("counted above"));
                (data.len() / dim - 1) as u32
            })
            .collect();
        DenseIndex::from_parts(self.dim, self.codes, self.units, held, data)
    }

    /// The stored form of `rows` (row-major, `dim` floats each) read back, and the vectors of
    /// the rows their codes do not reproduce: what `into_index` takes.
    pub fn of_rows(dim: usize, rows: &[f32]) -> (StoredCodes, Vec<f32>) {
        let mut codes = StoredCodes::new(dim);
        let mut needed = Vec::new();
        for row in rows.chunks_exact(dim) {
            let stored = codes.push(&code_bytes(row));
            assert!(stored, "a code this build writes reads back");
            if codes.kinds.last() == Some(&NEEDED) {
                needed.extend_from_slice(row);
            }
        }
        (codes, needed)
    }

    /// Append the rows of `other`, in order.
    pub fn append(&mut self, other: StoredCodes) {
        self.codes.extend_from_slice(&other.codes);
        self.units.extend_from_slice(&other.units);
        self.kinds.extend_from_slice(&other.kinds);
        self.listed.extend_from_slice(&other.listed);
    }
}

/// Rows as the tests need them.
#[cfg(test)]
pub(crate) mod fixtures {
    /// Rows as the hashing embedder writes them: `tokens` signed presences in `dim` buckets,
    /// collisions adding up, L2-normalised; `four` forces four tokens into bucket 0.
    pub(crate) fn hashed_row(
        next: &mut dyn FnMut() -> u64,
        dim: usize,
        tokens: usize,
        four: bool,
    ) -> Vec<f32> {
        let mut v = vec![0.0f32; dim];
        for _ in 0..tokens {
            let i = (next() % dim as u64) as usize;
            v[i] += if next().is_multiple_of(2) { 1.0 } else { -1.0 };
        }
        if four {
            v[0] = 4.0;
        }
        let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt();
        v.into_iter().map(|a| a / norm).collect()
    }

    pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{hashed_row, xorshift};
    use super::*;

    #[test]
    fn a_code_of_another_layout_is_not_read() {
        let dim = 64;
        let mut next = xorshift(9);
        let good = code_bytes(&hashed_row(&mut next, dim, 10, true));
        assert!(good.len() > CODE_HEADER + MASKS * 8, "one listed component");
        let mut cases: Vec<Vec<u8>> = Vec::new();
        let mut version = good.clone();
        version[0] = 2;
        cases.push(version);
        cases.push(good[..good.len() - 3].to_vec());
        let mut listed_out_of_range = good.clone();
        let at = CODE_HEADER + MASKS * 8;
        listed_out_of_range[at..at + 4].copy_from_slice(&(dim as u32).to_le_bytes());
        cases.push(listed_out_of_range);
        let mut too_many = good.clone();
        for _ in 0..exceptions_for(dim) {
            too_many.extend_from_slice(&good[at..at + EXCEPTION_BYTES]);
        }
        cases.push(too_many);
        let mut unit = good.clone();
        unit[2..6].copy_from_slice(&f32::NAN.to_le_bytes());
        cases.push(unit);
        for (i, bytes) in cases.iter().enumerate() {
            let mut stored = StoredCodes::new(dim);
            assert!(!stored.push(bytes), "case {i}");
            assert!(stored.is_empty(), "case {i}");
        }
        let mut stored = StoredCodes::new(dim);
        assert!(stored.push(&good));
        assert!(!StoredCodes::new(dim + 64).push(&good), "another dimension");
    }
}
