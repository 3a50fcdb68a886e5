//! One row's code for the dense leg's first pass, and the form the store keeps it in.
//!
//! Owns: coding a row (a sign mask and two magnitude bit planes, levels 0–3 of the row's own
//! quantum, least-squares fitted), whether the code gives the row back (then no other copy of it
//! is needed), decoding, and the stored bytes (`code_bytes`, `StoredCodes`). Does not own: the
//! scan over codes (dense.rs) or where the bytes are kept (store/codes.rs).

use crate::scan::{cores, fan_out};

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
/// Layout version of a code as `code_bytes` writes it (1: without the checksums; 2: without
/// the fine code of a row the code does not reproduce).
const CODE_VERSION: u8 = 3;
/// Bytes before the masks in `code_bytes`: version, flags, unit, the vector's checksum, the
/// code's checksum.
const CODE_HEADER: usize = 14;
/// Where the vector's checksum and the code's own checksum lie in `code_bytes`.
const VECTOR_SUM: std::ops::Range<usize> = 6..10;
const CODE_SUM: std::ops::Range<usize> = 10..14;

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
/// is the row), the unit (little-endian float32), the row's checksum (`vector_sum`), the
/// code's checksum (`code_sum`: of the chunk and document it belongs to and every other byte),
/// the masks (little-endian u64), then for a reproduced row each component the code misses (at
/// most `MAX_EXCEPTIONS`: a hashed row's bucket where four tokens collide) as its index (u32)
/// and value (float32), little-endian, and for any other row its fine code (fine.rs): the
/// scale (little-endian float32) and one signed byte per component.
pub fn code_bytes(chunk: i64, doc: i64, row: &[f32]) -> Vec<u8> {
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
    out.extend_from_slice(&vector_sum(row).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    masks
        .iter()
        .for_each(|m| out.extend_from_slice(&m.to_le_bytes()));
    if reproduced {
        for i in missed {
            out.extend_from_slice(&(i as u32).to_le_bytes());
            out.extend_from_slice(&row[i].to_le_bytes());
        }
    } else {
        let mut fine = vec![0i8; row.len()];
        let scale = crate::fine::encode(row, &mut fine);
        out.extend_from_slice(&scale.to_le_bytes());
        out.extend(fine.iter().map(|&c| c as u8));
    }
    let sum = code_sum(chunk, doc, &out);
    out[CODE_SUM].copy_from_slice(&sum.to_le_bytes());
    out
}

/// The checksum of a row as stored: CRC-32 of its little-endian float32 bytes.
pub fn vector_sum(row: &[f32]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    #[cfg(target_endian = "little")]
    {
        // SAFETY: any f32 is four initialised bytes, and u8 has no alignment to keep.
        let bytes = unsafe {
            std::slice::from_raw_parts(row.as_ptr().cast::<u8>(), std::mem::size_of_val(row))
        };
        hasher.update(bytes);
    }
    #[cfg(not(target_endian = "little"))]
    row.iter().for_each(|x| hasher.update(&x.to_le_bytes()));
    hasher.finalize()
}

/// A short tag of a stored code (`code_bytes`): the low 16 bits of its own checksum, which binds
/// it to its chunk, document and bytes (0 for bytes too short to hold one).
pub(crate) fn code_tag(bytes: &[u8]) -> u16 {
    bytes
        .get(CODE_SUM.start..CODE_SUM.start + 2)
        .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]))
}

/// The checksum of a stored code (`code_bytes`), which binds it to its chunk and document: a
/// code moved to another row, or a row's document changed, fails it too.
fn code_sum(chunk: i64, doc: i64, bytes: &[u8]) -> u32 {
    // Two updates, not four: this runs for every row a search loads.
    let mut head = [0u8; 16 + CODE_SUM.start];
    head[..8].copy_from_slice(&chunk.to_le_bytes());
    head[8..16].copy_from_slice(&doc.to_le_bytes());
    head[16..].copy_from_slice(&bytes[..CODE_SUM.start]);
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&head);
    hasher.update(&bytes[CODE_SUM.end..]);
    hasher.finalize()
}

/// What `StoredCodes::push` made of one stored code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// Read and checked.
    Read,
    /// Not a code of this layout and dimension (an earlier version wrote it): nothing appended.
    Foreign,
    /// Of this layout, but its checksum fails: a row was appended that its vector must fill in
    /// (`into_rows`), checked against the row checksum the code holds.
    Damaged,
}

/// Components a reproduced row may list besides its code: one in 32, at most 8.
const MAX_EXCEPTIONS: usize = 8;

fn exceptions_for(dim: usize) -> usize {
    (dim / 32).min(MAX_EXCEPTIONS)
}
/// Bytes of one listed component: index (u32) and value (float32).
const EXCEPTION_BYTES: usize = 8;
/// Bytes before a fine code's own: its scale (float32).
const FINE_HEADER: usize = 4;

/// Rows read back from their codes (`code_bytes`), in order, before the vectors of the rows
/// their codes do not reproduce are added (`into_rows`).
#[derive(Debug, Default)]
pub struct StoredCodes {
    dim: usize,
    codes: Vec<u64>,
    units: Vec<f32>,
    /// Per row: `REPRODUCED`, `LISTED` (its vector is the next one in `listed`) or `NEEDED`.
    kinds: Vec<u32>,
    /// The vectors of reproduced rows with exceptions: the code's vector with them put in.
    listed: Vec<f32>,
    /// Per `NEEDED` row, in order: the checksum its vector must have (None: the code was too
    /// damaged to say, and no vector is taken for it).
    sums: Vec<Option<u32>>,
    /// Per `NEEDED` row, in order: its fine code (`dim` bytes; zero for a damaged code, until
    /// its vector gives it again) and scale.
    fine: Vec<i8>,
    scales: Vec<f32>,
    /// Rows `with_capacity` made room for: the fine codes get theirs at the first `NEEDED` row
    /// (a hashed store has none).
    room: usize,
    /// Set when the rows will hold their vectors (`into_rows`): the fine codes are not kept.
    no_fine: bool,
    /// Set when only each fine code's scale is kept, not its bytes (`lean`).
    lean: bool,
    /// Rows whose code failed its checksum: their vector gives them their code again.
    damaged: Vec<usize>,
}

/// Rows read back and checked, as the dense index holds them.
#[derive(Debug)]
pub struct CodedRows {
    pub dim: usize,
    /// Per row: its code's words (`MASKS × words_for(dim)`).
    pub codes: Vec<u64>,
    /// Per row: its quantum.
    pub units: Vec<f32>,
    /// Per row: `REPRODUCED`, the place of its vector in `data`, or `FINE` with the place of
    /// its fine code in `fine`.
    pub held: Vec<u32>,
    /// The vectors held: of every row whose code does not reproduce it (`into_rows`), or only
    /// of the reproduced rows with exceptions (`into_fine_rows`), `dim` floats each.
    pub data: Vec<f32>,
    /// The fine codes of the rows whose vector is not held (`dim` bytes each), with each one's
    /// scale and the checksum its vector must have when read back.
    pub fine: Vec<i8>,
    pub scales: Vec<f32>,
    pub sums: Vec<u32>,
    /// The fine codes were left unread (`StoredCodes::lean`): `fine` is empty, and each row
    /// marked `FINE` holds its scale and checksum alone.
    pub lean: bool,
}

const LISTED: u32 = u32::MAX - 1;
const NEEDED: u32 = u32::MAX - 2;
/// Set in `held` (below `REPRODUCED`): the row's fine code is held, not its vector.
pub(crate) const FINE: u32 = 1 << 31;

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
            room: rows,
            ..StoredCodes::default()
        }
    }

    /// The same, keeping no fine code: for rows that will hold their vectors (`into_rows`), so
    /// reading them does not hold a byte per component besides.
    pub fn holding_vectors(mut self) -> StoredCodes {
        self.no_fine = true;
        self
    }

    /// The same, keeping of each fine code its scale alone (with the checksum of its vector):
    /// for rows whose vectors are all read back whenever the code pass shortlists them
    /// (`DenseIndex::is_lean`), so reading them holds no byte per component.
    pub fn lean(mut self) -> StoredCodes {
        self.lean = true;
        self
    }

    /// Append the fine code of the next `NEEDED` row (`bytes`: `dim` signed bytes; None: a
    /// zero code that its vector fills in).
    fn push_fine(&mut self, scale: f32, bytes: Option<&[u8]>) {
        if self.no_fine {
            return;
        }
        if self.lean {
            self.scales.push(scale);
            return;
        }
        if self.fine.capacity() == 0 && self.room > 0 {
            self.fine = crate::memory::huge_vec(self.room * self.dim);
        }
        match bytes {
            Some(b) => self.fine.extend(b.iter().map(|&c| c as i8)),
            None => self.fine.resize(self.fine.len() + self.dim, 0),
        }
        self.scales.push(scale);
    }

    /// Append the stored code of `chunk` (of document `doc`). True when it is a code of this
    /// layout and dimension that passes its checksum; otherwise (damaged, or written for
    /// another row) a row is appended all the same that its vector fills in (`into_rows`),
    /// and false.
    pub fn push(&mut self, chunk: i64, doc: i64, bytes: &[u8]) -> bool {
        let words = MASKS * words_for(self.dim);
        let start = self.codes.len();
        self.codes.resize(start + words, 0);
        if let Some((unit, kind)) = self.read(chunk, doc, bytes, start) {
            self.units.push(unit);
            self.kinds.push(kind);
            return true;
        }
        self.codes[start..].fill(0);
        self.units.push(0.0);
        self.kinds.push(NEEDED);
        self.damaged.push(self.units.len() - 1);
        let claimed = bytes
            .get(VECTOR_SUM)
            .map(|b| u32::from_le_bytes(b.try_into().expect("four bytes")));
        self.sums.push(claimed);
        self.push_fine(0.0, None);
        false
    }

    /// Read one stored code into `codes[start..]` (zeroed): its unit and kind, or None when it
    /// is not one this build wrote for this row.
    fn read(&mut self, chunk: i64, doc: i64, bytes: &[u8], start: usize) -> Option<(f32, u32)> {
        let words = MASKS * words_for(self.dim);
        let masks_end = CODE_HEADER + words * 8;
        if bytes.len() < masks_end || bytes[0] != CODE_VERSION || bytes[1] > 1 {
            return None;
        }
        let extra = bytes.len() - masks_end;
        let reproduced = bytes[1] == 1;
        let four =
            |at: std::ops::Range<usize>| -> [u8; 4] { bytes[at].try_into().expect("four bytes") };
        let listed_ok = extra.is_multiple_of(EXCEPTION_BYTES)
            && extra / EXCEPTION_BYTES <= exceptions_for(self.dim);
        if (if reproduced {
            !listed_ok
        } else {
            extra != FINE_HEADER + self.dim
        }) || code_sum(chunk, doc, bytes) != u32::from_le_bytes(four(CODE_SUM))
        {
            return None;
        }
        if !reproduced {
            let scale = f32::from_le_bytes(four(masks_end..masks_end + FINE_HEADER));
            if !(scale.is_finite() && scale >= 0.0) {
                return None;
            }
        }
        let unit = f32::from_le_bytes(four(2..6));
        let listed = if reproduced { &bytes[masks_end..] } else { &[] };
        let exceptions: Vec<(usize, f32)> = listed
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
            return None;
        }
        for (to, b) in self.codes[start..]
            .iter_mut()
            .zip(bytes[CODE_HEADER..masks_end].chunks_exact(8))
        {
            *to = u64::from_le_bytes(b.try_into().expect("eight bytes"));
        }
        let kind = match (reproduced, exceptions.is_empty()) {
            (false, _) => {
                self.sums.push(Some(u32::from_le_bytes(four(VECTOR_SUM))));
                let scale = f32::from_le_bytes(four(masks_end..masks_end + FINE_HEADER));
                self.push_fine(scale, Some(&bytes[masks_end + FINE_HEADER..]));
                NEEDED
            }
            (true, true) => REPRODUCED,
            (true, false) => {
                let at = self.listed.len();
                decode(&self.codes[start..], unit, self.dim, &mut self.listed);
                exceptions
                    .iter()
                    .for_each(|&(i, x)| self.listed[at + i] = x);
                LISTED
            }
        };
        Some((unit, kind))
    }

    pub fn len(&self) -> usize {
        self.units.len()
    }

    /// The vector row `i`'s code stands for (its masks decoded, without the components a
    /// reproduced row lists besides them).
    pub(crate) fn decoded(&self, i: usize) -> Vec<f32> {
        let words = MASKS * words_for(self.dim);
        let mut out = Vec::with_capacity(self.dim);
        decode(
            &self.codes[i * words..][..words],
            self.units[i],
            self.dim,
            &mut out,
        );
        out
    }

    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }

    /// Positions of the rows whose code does not reproduce their vector (or failed its
    /// checksum): those need theirs.
    pub fn unreproduced(&self) -> Vec<usize> {
        (0..self.len())
            .filter(|&i| self.kinds[i] == NEEDED)
            .collect()
    }

    /// Whether a row needs its vector (its code does not reproduce it, or failed its checksum).
    pub fn needs_vectors(&self) -> bool {
        !self.sums.is_empty()
    }

    /// Rows whose code failed its checksum (`push` returned false), in order.
    pub fn damaged(&self) -> &[usize] {
        &self.damaged
    }

    /// The rows, given the vectors of the `unreproduced` rows in that order (`dim` floats
    /// each), every one of them held: each must have the checksum its code recorded, and a row
    /// whose code was damaged is coded again from its vector. Err: the rows whose vector fails
    /// its checksum.
    pub fn into_rows(self, needed: Vec<f32>) -> Result<CodedRows, Vec<usize>> {
        self.finish(needed, true)
    }

    /// The rows holding the fine codes of the `unreproduced` rows instead of their vectors,
    /// given the vectors of the `damaged` rows only (in that order, checked as `into_rows`
    /// checks them), which give them their codes again.
    pub fn into_fine_rows(self, damaged: Vec<f32>) -> Result<CodedRows, Vec<usize>> {
        self.finish(damaged, false)
    }

    fn finish(mut self, given: Vec<f32>, hold: bool) -> Result<CodedRows, Vec<usize>> {
        assert!(
            hold || !self.no_fine,
            "rows read holding their vectors keep no fine code"
        );
        let dim = self.dim;
        let rows = self.unreproduced();
        // The place among the `NEEDED` rows of each vector given.
        let which: Vec<usize> = if hold {
            (0..rows.len()).collect()
        } else {
            let mut damaged = self.damaged.iter().peekable();
            (0..rows.len())
                .filter(|&i| damaged.next_if_eq(&&rows[i]).is_some())
                .collect()
        };
        assert_eq!(
            given.len(),
            which.len() * dim,
            "one vector per row asked for"
        );
        // Every given vector is hashed (a model's store held whole: all of them), on every core.
        let parts = cores().min(which.len().div_ceil(4096)).max(1);
        let per = which.len().div_ceil(parts).max(1);
        let failed: Vec<usize> = fan_out(parts, |p| {
            let end = which.len().min((p + 1) * per);
            (p * per..end)
                .filter(|&g| {
                    self.sums[which[g]] != Some(vector_sum(&given[g * dim..(g + 1) * dim]))
                })
                .collect::<Vec<usize>>()
        })
        .concat();
        if !failed.is_empty() {
            return Err(failed.into_iter().map(|g| rows[which[g]]).collect());
        }
        if !self.damaged.is_empty() {
            let stride = MASKS * words_for(dim);
            let mut damaged = self.damaged.iter().peekable();
            for (g, &n) in which.iter().enumerate() {
                let row = rows[n];
                if damaged.next_if_eq(&&row).is_some() {
                    let vector = &given[g * dim..(g + 1) * dim];
                    let masks = &mut self.codes[row * stride..(row + 1) * stride];
                    masks.fill(0);
                    let unit = encode_into(vector, masks);
                    self.units[row] = if unit.is_finite() { unit } else { 0.0 };
                    if !hold && !self.lean {
                        let fine = &mut self.fine[n * dim..(n + 1) * dim];
                        self.scales[n] = crate::fine::encode(vector, fine);
                    }
                }
            }
        }
        let count = |kind: u32| self.kinds.iter().filter(|&&k| k == kind).count();
        let held_rows = count(LISTED) + if hold { count(NEEDED) } else { 0 };
        let mut data = Vec::with_capacity(held_rows * dim);
        let (mut listed, mut given) = (self.listed.chunks_exact(dim), given.chunks_exact(dim));
        let mut needed = 0u32;
        let held = self
            .kinds
            .iter()
            .map(|&kind| {
                let row = match kind {
                    REPRODUCED => return REPRODUCED,
                    LISTED => listed.next(),
                    _ if hold => given.next(),
                    _ => {
                        needed += 1;
                        return FINE | (needed - 1);
                    }
                };
                data.extend_from_slice(row.expect("counted above"));
                (data.len() / dim - 1) as u32
            })
            .collect();
        let (fine, scales, sums) = if hold {
            (Vec::new(), Vec::new(), Vec::new())
        } else {
            let sums = self
                .sums
                .iter()
                .map(|s| s.expect("checked above"))
                .collect();
            (self.fine, self.scales, sums)
        };
        Ok(CodedRows {
            dim,
            codes: self.codes,
            units: self.units,
            held,
            data,
            fine,
            scales,
            sums,
            lean: self.lean && !hold,
        })
    }

    /// The stored form of `rows` (row-major, `dim` floats each) read back, and the vectors of
    /// the rows their codes do not reproduce: what `into_rows` takes (`fine`: the fine codes
    /// kept too, for `into_fine_rows`).
    pub fn of_rows(dim: usize, rows: &[f32], fine: bool) -> (StoredCodes, Vec<f32>) {
        let mut codes = StoredCodes::new(dim);
        codes.no_fine = !fine;
        let mut needed = Vec::new();
        for (i, row) in rows.chunks_exact(dim).enumerate() {
            let stored = codes.push(i as i64, 0, &code_bytes(i as i64, 0, row));
            assert!(stored, "a code this build writes reads back");
            if codes.kinds.last() == Some(&NEEDED) {
                needed.extend_from_slice(row);
            }
        }
        (codes, needed)
    }

    /// Append the rows of `other`, in order.
    pub fn append(&mut self, other: StoredCodes) {
        let at = self.len();
        self.codes.extend_from_slice(&other.codes);
        self.units.extend_from_slice(&other.units);
        self.kinds.extend_from_slice(&other.kinds);
        self.listed.extend_from_slice(&other.listed);
        self.sums.extend_from_slice(&other.sums);
        self.fine.extend_from_slice(&other.fine);
        self.scales.extend_from_slice(&other.scales);
        self.damaged.extend(other.damaged.iter().map(|&r| r + at));
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

    /// Unit rows of a model's shape (every component set), row-major.
    pub(crate) fn unit_rows(rows: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut next = xorshift(seed);
        (0..rows)
            .flat_map(|_| {
                let v: Vec<f32> = (0..dim)
                    .map(|_| (next() % 2001) as f32 / 1000.0 - 1.0)
                    .collect();
                let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt();
                v.into_iter().map(move |a| a / norm)
            })
            .collect()
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

    /// `bytes` with its code checksum made right again for (chunk 3, document 8), so that each
    /// layout check is reached on its own.
    fn resummed(mut bytes: Vec<u8>) -> Vec<u8> {
        if bytes.len() >= CODE_HEADER {
            let sum = code_sum(3, 8, &bytes);
            bytes[CODE_SUM].copy_from_slice(&sum.to_le_bytes());
        }
        bytes
    }

    /// A row that `push` took as damaged: appended as one its vector fills in, whose vector
    /// checksum is what the bytes claim (None when too short to say).
    fn assert_damaged(dim: usize, bytes: &[u8], claimed: Option<u32>, case: &str) {
        let mut stored = StoredCodes::new(dim);
        assert!(!stored.push(3, 8, bytes), "{case}");
        assert_eq!(
            (stored.len(), stored.damaged(), stored.unreproduced()),
            (1, &[0usize][..], vec![0]),
            "{case}"
        );
        assert_eq!(stored.sums, vec![claimed], "{case}");
    }

    #[test]
    fn a_code_that_is_not_the_one_written_for_its_row_is_not_read() {
        let dim = 64;
        let mut next = xorshift(9);
        let row = hashed_row(&mut next, dim, 10, true);
        let good = code_bytes(3, 8, &row);
        let sum = Some(vector_sum(&row));
        assert!(good.len() > CODE_HEADER + MASKS * 8, "one listed component");
        let at = CODE_HEADER + MASKS * 8;
        let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
        let mut version = good.clone();
        version[0] = 1;
        cases.push(("the layout before checksums", resummed(version)));
        cases.push(("cut short", resummed(good[..good.len() - 3].to_vec())));
        let mut listed_out_of_range = good.clone();
        listed_out_of_range[at..at + 4].copy_from_slice(&(dim as u32).to_le_bytes());
        cases.push((
            "a listed component out of range",
            resummed(listed_out_of_range),
        ));
        let mut too_many = good.clone();
        for _ in 0..exceptions_for(dim) {
            too_many.extend_from_slice(&good[at..at + EXCEPTION_BYTES]);
        }
        cases.push(("too many listed components", resummed(too_many)));
        let mut unit = good.clone();
        unit[2..6].copy_from_slice(&f32::NAN.to_le_bytes());
        cases.push(("a unit that is no number", resummed(unit)));
        for (case, bytes) in &cases {
            assert_damaged(dim, bytes, sum, case);
        }
        // Every single flipped bit, anywhere in the code, fails its checksum.
        for byte in 0..good.len() {
            for bit in 0..8 {
                let mut flipped = good.clone();
                flipped[byte] ^= 1 << bit;
                let claimed = if VECTOR_SUM.contains(&byte) {
                    Some(u32::from_le_bytes(flipped[VECTOR_SUM].try_into().unwrap()))
                } else {
                    sum
                };
                assert_damaged(dim, &flipped, claimed, &format!("byte {byte} bit {bit}"));
            }
        }
        // The code of another chunk or another document, and a stub too short to claim a sum.
        let mut stored = StoredCodes::new(dim);
        assert!(!stored.push(4, 8, &good), "another chunk");
        assert!(!stored.push(3, 9, &good), "another document");
        assert!(stored.push(3, 8, &good));
        assert_eq!(stored.damaged(), &[0, 1]);
        assert_damaged(dim, &[2, 1], None, "a stub");
        assert!(
            !StoredCodes::new(dim + 64).push(3, 8, &good),
            "another dimension"
        );
    }

    #[test]
    fn a_damaged_code_is_coded_again_from_its_vector_only_when_that_matches() {
        let dim = 64;
        let mut next = xorshift(4);
        let row = hashed_row(&mut next, dim, 10, false);
        let mut bytes = code_bytes(3, 8, &row);
        bytes[CODE_HEADER] ^= 1;
        let mut stored = StoredCodes::new(dim);
        assert!(!stored.push(3, 8, &bytes));
        let rows = stored.into_rows(row.clone()).unwrap();
        let (fresh, needed) = StoredCodes::of_rows(dim, &row, true);
        let fresh = fresh.into_rows(needed).unwrap();
        assert_eq!(
            (rows.codes, rows.units),
            (fresh.codes, fresh.units),
            "coded again from its vector"
        );
        let mut stored = StoredCodes::new(dim);
        stored.push(3, 8, &bytes);
        let mut other = row.clone();
        other[0] += 0.25;
        assert_eq!(stored.into_rows(other).unwrap_err(), vec![0]);
        // Nothing claims a sum for a stub: no vector matches it.
        let mut stored = StoredCodes::new(dim);
        stored.push(3, 8, &[2, 1]);
        assert_eq!(stored.into_rows(row).unwrap_err(), vec![0]);
    }
}
