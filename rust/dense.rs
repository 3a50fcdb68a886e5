//! The dense leg (SPEC §4): cosine over every chunk vector.
//!
//! Owns: the rows in memory and top-k selection. Vectors are L2-normalised, so the dot product
//! is the cosine. Each row is held as its 3-bit code (row_code.rs: a sign mask and two magnitude
//! bit planes, about a tenth of the f32 bytes) and, only when the code does not give the row
//! back, its float32 vector or, where the store can read one vector back cheaply, its fine code
//! (fine.rs: a byte per component), or in a lean load (a calibration's) its fine code's scale
//! alone, the row then read back whenever the code pass shortlists it: a hashed row is its
//! code. Large indexes are scanned through the codes first: the query is cut into three
//! magnitude bit planes (one for a hashed query), so the estimate is a few AND + popcount per
//! 64 dimensions. A model's query over many rows first cuts them by their sign masks alone
//! (signs.rs: a third of the bytes) to the twentieth (at most twelve shortlists) the code pass
//! then ranks, and where the store keeps lists (lists.rs) it cuts only the rows of the lists
//! nearest it, three tenths of the rows, and every row in none; a sparse query (a hashed one)
//! reads only its own dimensions, through the codes sliced dimension by dimension (sliced.rs)
//! once a thread started by the first such query has made them, with the bit planes'
//! estimates. An oversampled shortlist (split over the cores where the first pass is) is then
//! rescored exactly: every returned score is the dot product with the row's vector, held,
//! given back by its code, or read back through the caller (`top_k_reading`) for each row
//! whose fine estimate is within its bound of the k-th exact score, so the top k are those of
//! the exact rescoring (SPEC §4 allows the first pass while recall@10 against the exact scan
//! stays ≥ 0.99; benches/search_latency.py measures it, lists included). Does not own: the
//! codes themselves (row_code.rs, fine.rs), the sign cut, the lists and the sliced layout with
//! their passes (signs.rs, lists.rs, sliced.rs), loading or reading back the rows (store/) or
//! what a score means (trust.rs).

use std::sync::{Arc, OnceLock};

use crate::fine::{self, Norms};
use crate::lists::{split, Layout, Lists};
#[cfg(test)]
use crate::row_code::{code_bytes, encode};
use crate::row_code::{
    code_dot, decode, query_support, vector_sum, words_for, StoredCodes, FINE, MASKS, REPRODUCED,
};
pub use crate::scan::dot;
use crate::scan::{cores, fan_out, TopK};
use crate::signs::{SignQuery, Signs};
use crate::sliced::{Sliced, Term};

/// Below this many rows the exact scan is already cheap: no first pass.
const QUANTISE_FROM: usize = 4096;
/// Shortlist of the code pass: this many times the requested k, at least `SHORTLIST_MIN`, and
/// for a query of several planes (a model's query: its estimate is noisier than a hashed one's)
/// at least one row in `NOISY_SHARE` (in `LISTED_SHARE` where lists cut the rows) up to
/// `NOISY_MOST`. Each shortlisted row's fine code is read to rescore it: at a million rows one
/// in a hundred took half the dense leg, and the first 2,048 hold the exact top 10 of every
/// query of benches/search_latency.py at that size. Without lists one in two hundred keeps the
/// recall@10 one in a hundred has (0.994 at 100k rows, 0.992 at 40k); over lists it does not
/// (0.989 against 0.993 at 300k).
const OVERSAMPLE: usize = 16;
const SHORTLIST_MIN: usize = 256;
const NOISY_SHARE: usize = 200;
const LISTED_SHARE: usize = 100;
const NOISY_MOST: usize = 2048;
/// Bit planes of the query's magnitudes (levels 0..=7). Three rank a 100k-row store of a model's
/// vectors as four did (recall@10 1.000 against the exact scan, benches/search_latency.py) for
/// three quarters of the pass's work.
const PLANES: usize = 3;
/// How far ahead of the row being scored the code pass asks for memory.
#[cfg(target_arch = "x86_64")]
const PREFETCH_ROWS: usize = 16;
/// How many shortlisted rows ahead of the one being rescored are asked for.
const RESCORE_AHEAD: usize = 8;
/// In an index whose first pass splits over the cores (from `ROWS_PER_THREAD` rows), a
/// shortlist of at least this many rows a core is scored on several cores: each row's fine code
/// is read from wherever it lies, about 0.2 µs a row, and a million rows of a model's vectors
/// shortlist 2,048 (`NOISY_MOST`).
const SCORE_ROWS_PER_THREAD: usize = 1024;
/// A model's query over at least this many rows first cuts them by their signs (signs.rs) to
/// one row in `SIGN_SHARE`, at least `SIGN_SHORTLISTS` shortlists a part and at most
/// `SIGN_SHORTLISTS_MOST` over all parts, before the code pass (`sign_keep`). The most: at a
/// million rows of a model's vectors one in twenty was 24 shortlists, and twelve keep recall@10
/// at 0.996 against the exact scan for half the code pass (benches/search_latency.py).
const SIGN_FIRST_FROM: usize = 32_768;
const SIGN_SHARE: usize = 20;
const SIGN_SHORTLISTS: usize = 4;
const SIGN_SHORTLISTS_MOST: usize = 12;
/// A model's query over an index with lists (lists.rs) cuts only the nearest lists holding
/// this share of the listed rows, and the rows in none: at a million rows of a model's
/// vectors a fifth gave recall@10 0.987 against the exact scan (benches/search_latency.py),
/// under the 0.99 SPEC §4 asks, and three tenths 0.991. The lists' rows are split over the cores from
/// `LIST_ROWS_PER_THREAD` rows.
const LIST_SHARE: f64 = 0.3;
const LIST_ROWS_PER_THREAD: usize = 65_536;
/// A query with at most one non-zero level in this many dimensions takes the sliced pass.
const SPARSE_SHARE: usize = 8;

/// Row-major `len × dim` matrix of codes for the first pass, with the float32 vector of every
/// row its code does not reproduce (a hashed row's code is its vector: nothing else is held).
#[derive(Debug, Clone, Default)]
pub struct DenseIndex {
    dim: usize,
    /// Per row: `words` sign masks (set = negative), then `words` of magnitude bit 0, then
    /// `words` of magnitude bit 1 (shared with a thread slicing them).
    codes: Arc<Vec<u64>>,
    /// Per row: its quantum (`x ≈ unit × ±level`).
    units: Vec<f32>,
    /// Per row: the index of its vector in `data`, `REPRODUCED` when its code is its vector,
    /// or `FINE` with the index of its fine code in `fine` when its vector is read on demand.
    held: Vec<u32>,
    /// The vectors held of the rows whose code does not reproduce them, `dim` floats each.
    data: Vec<f32>,
    /// The fine codes (fine.rs) of the rows whose vector is not held, `dim` bytes each, with
    /// each one's scale and the checksum of its vector (`vector_sum`), which every vector read
    /// back for it must have.
    fine: Vec<i8>,
    scales: Vec<f32>,
    sums: Vec<u32>,
    /// Set when the fine codes were left unread (`StoredCodes::lean`): a row marked `FINE`
    /// holds its scale and checksum alone, and its vector is read back whenever the code pass
    /// shortlists it.
    lean: bool,
    /// The codes dimension by dimension (sliced.rs), made on a thread of their own after the
    /// first sparse query; dropped by every change to the rows.
    sliced: Arc<OnceLock<Sliced>>,
    /// Set once that thread is started.
    slicing: OnceLock<()>,
    /// Every row's sign words (signs.rs), made by the first model's query over enough rows for
    /// the sign cut, laid out list by list when there are lists (with that layout); dropped by
    /// every change to the rows.
    signs: OnceLock<(Signs, Option<Layout>)>,
    /// The rows' lists, when the store keeps them (a model's rows, many of them).
    lists: Option<Lists>,
}

/// How many rows the code pass shortlists for the `k` best of `rows` rows, for a query of
/// `planes` planes, over lists or not (`listed`).
fn shortlist(k: usize, planes: usize, rows: usize, listed: bool) -> usize {
    let least = (k * OVERSAMPLE).max(SHORTLIST_MIN);
    if planes > 1 {
        let share = if listed { LISTED_SHARE } else { NOISY_SHARE };
        least.max((rows / share).min(NOISY_MOST))
    } else {
        least
    }
}

/// How many of a part's `rows` rows (one of `parts` a scan splits the rows into) its sign cut
/// keeps for a code pass shortlisting `k`.
fn sign_keep(rows: usize, k: usize, parts: usize) -> usize {
    (rows / SIGN_SHARE)
        .min(SIGN_SHORTLISTS_MOST * k / parts)
        .max(SIGN_SHORTLISTS * k)
}

/// The query as bit planes: `levels[j]` holds the components whose magnitude level has bit j
/// set, `sign` the negative components. Each mask is padded to a multiple of 8 words for
/// whole-register loads.
struct QueryPlanes {
    words: usize,
    padded: usize,
    planes: usize,
    /// `planes × padded` words.
    levels: Vec<u64>,
    sign: Vec<u64>,
}

/// The query's magnitude level of each component (0..=7 of its largest magnitude) and the
/// planes they need: a query whose non-zero magnitudes are all one level (a hashed query) needs
/// one plane, its levels then 0 or 1.
fn query_levels(query: &[f32]) -> (Vec<u32>, usize) {
    let max = query.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    let top = (1 << PLANES) - 1;
    let step = if max > 0.0 { max / top as f32 } else { 1.0 };
    let mut level: Vec<u32> = query
        .iter()
        .map(|x| (x.abs() / step).round().min(top as f32) as u32)
        .collect();
    if level.iter().all(|&l| l == 0 || l == top) {
        level.iter_mut().for_each(|l| *l = u32::from(*l > 0));
        (level, 1)
    } else {
        (level, PLANES)
    }
}

/// The query's non-zero levels as the sliced pass reads them, when it is sparse enough for that
/// pass to read less than the row-major one (at most one dimension in `SPARSE_SHARE`) and its
/// sums fit the pass's 16-bit lanes.
fn sparse_terms(query: &[f32], level: &[u32]) -> Option<Vec<Term>> {
    let terms: Vec<Term> = query
        .iter()
        .zip(level)
        .enumerate()
        .filter(|(_, (_, &l))| l > 0)
        .map(|(dim, (&x, &l))| Term {
            dim,
            level: l as i16,
            flip: if x < 0.0 { u64::MAX } else { 0 },
        })
        .collect();
    let reach: i32 = terms.iter().map(|t| 3 * i32::from(t.level)).sum();
    (terms.len() * SPARSE_SHARE <= query.len() && reach <= i32::from(i16::MAX)).then_some(terms)
}

impl QueryPlanes {
    fn new(query: &[f32], level: &[u32], planes: usize) -> QueryPlanes {
        let words = words_for(query.len());
        let padded = words.div_ceil(8) * 8;
        let mut levels = vec![0u64; planes * padded];
        let mut sign = vec![0u64; padded];
        for (i, (&x, &l)) in query.iter().zip(level).enumerate() {
            let (w, bit) = (i / 64, 1u64 << (i % 64));
            for j in 0..planes {
                if l >> j & 1 == 1 {
                    levels[j * padded + w] |= bit;
                }
            }
            if x < 0.0 {
                sign[w] |= bit;
            }
        }
        QueryPlanes {
            words,
            padded,
            planes,
            levels,
            sign,
        }
    }

    fn as_signs(&self) -> SignQuery<'_> {
        SignQuery {
            words: self.words,
            padded: self.padded,
            planes: self.planes,
            levels: &self.levels,
            sign: &self.sign,
        }
    }

    /// Σ_i qlevel_i · level_i · (±1) of one row's code (`MASKS × words` masks).
    #[inline(always)]
    fn dot_portable(&self, code: &[u64]) -> i64 {
        let w = self.words;
        let (sign, m0, m1) = (&code[..w], &code[w..2 * w], &code[2 * w..3 * w]);
        let mut total = 0i64;
        for j in 0..self.planes {
            let plane = &self.levels[j * self.padded..j * self.padded + w];
            for (b, mags) in [(0, m0), (1, m1)] {
                let mut agree = 0u32;
                let mut differ = 0u32;
                for i in 0..w {
                    let both = plane[i] & mags[i];
                    let flip = self.sign[i] ^ sign[i];
                    agree += (both & !flip).count_ones();
                    differ += (both & flip).count_ones();
                }
                total += (i64::from(agree) - i64::from(differ)) << (j + b);
            }
        }
        total
    }
}

impl DenseIndex {
    pub fn new(dim: usize) -> DenseIndex {
        DenseIndex {
            dim,
            ..DenseIndex::default()
        }
    }

    /// The index of rows read back from their codes, given the vectors of the rows the codes do
    /// not reproduce (`StoredCodes::into_rows`). Err: the rows whose vector fails its checksum.
    pub fn from_stored(stored: StoredCodes, needed: Vec<f32>) -> Result<DenseIndex, Vec<usize>> {
        Ok(DenseIndex::of_rows(stored.into_rows(needed)?))
    }

    /// The index of rows read back from their codes holding the fine codes of the rows the
    /// codes do not reproduce, not their vectors, given the vectors of the rows whose code was
    /// damaged (`StoredCodes::into_fine_rows`). Exact scores then need a reader of vectors
    /// (`top_k_reading`). Err: the rows whose vector fails its checksum.
    pub fn from_stored_fine(
        stored: StoredCodes,
        damaged: Vec<f32>,
    ) -> Result<DenseIndex, Vec<usize>> {
        Ok(DenseIndex::of_rows(stored.into_fine_rows(damaged)?))
    }

    fn of_rows(rows: crate::row_code::CodedRows) -> DenseIndex {
        DenseIndex {
            dim: rows.dim,
            codes: Arc::new(rows.codes),
            units: rows.units,
            held: rows.held,
            data: rows.data,
            fine: rows.fine,
            scales: rows.scales,
            sums: rows.sums,
            lean: rows.lean,
            sliced: Arc::default(),
            slicing: OnceLock::new(),
            signs: OnceLock::new(),
            lists: None,
        }
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn len(&self) -> usize {
        self.units.len()
    }

    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }

    /// Whether the rows' fine codes were left unread (`StoredCodes::lean`): a row whose code
    /// does not reproduce it is then scored only by reading its vector back.
    pub fn is_lean(&self) -> bool {
        self.lean
    }

    /// Cut a model's queries through `lists` (one list, or none, per row).
    pub fn set_lists(&mut self, lists: Lists) {
        assert_eq!(lists.rows(), self.len(), "one list per row");
        self.forget_derived();
        self.lists = Some(lists);
    }

    /// The rows' lists, when set.
    pub fn lists(&self) -> Option<&Lists> {
        self.lists.as_ref()
    }

    fn stride(&self) -> usize {
        MASKS * words_for(self.dim)
    }

    /// An index over `data` (row-major, a whole number of `dim`-float rows), its rows coded on
    /// all cores as the store keeps them (`code_bytes`), so an index built here and one read
    /// from stored codes hold the same rows; only the vectors their codes do not reproduce are
    /// kept.
    pub fn from_data(dim: usize, data: Vec<f32>) -> DenseIndex {
        let (codes, needed) = DenseIndex::code_rows(dim, &data, false);
        DenseIndex::from_stored(codes, needed)
            .expect("the rows just coded match their own checksums")
    }

    /// `from_data` holding the fine codes of the rows their codes do not reproduce, not their
    /// vectors: exact scores then read them back (`top_k_reading`).
    pub fn from_data_fine(dim: usize, data: &[f32]) -> DenseIndex {
        let (codes, _) = DenseIndex::code_rows(dim, data, true);
        DenseIndex::from_stored_fine(codes, Vec::new())
            .expect("the rows just coded match their own checksums")
    }

    /// The codes of `data`'s rows made on all cores, as the store keeps them, with the vectors
    /// of the rows their codes do not reproduce (`fine`: their fine codes kept too).
    fn code_rows(dim: usize, data: &[f32], fine: bool) -> (StoredCodes, Vec<f32>) {
        assert!(
            dim > 0 && data.len().is_multiple_of(dim),
            "data must hold whole rows"
        );
        let rows = data.len() / dim;
        let per = rows.div_ceil(cores()).max(4096);
        let parts: Vec<(StoredCodes, Vec<f32>)> = if rows <= per {
            vec![StoredCodes::of_rows(dim, data, fine)]
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = data
                    .chunks(per * dim)
                    .map(|part| scope.spawn(move || StoredCodes::of_rows(dim, part, fine)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("coding thread panicked"))
                    .collect()
            })
        };
        let mut all = StoredCodes::new(dim);
        let mut needed = Vec::new();
        for (codes, vectors) in parts {
            all.append(codes);
            needed.extend_from_slice(&vectors);
        }
        (all, needed)
    }

    /// Append one row; its length must be `dim`.
    pub fn push(&mut self, row: &[f32]) {
        assert_eq!(
            row.len(),
            self.dim,
            "row length must equal the index dimension"
        );
        let added = DenseIndex::from_data(self.dim, row.to_vec());
        self.append(added);
    }

    /// Append rows (row-major, a whole number of `dim`-float rows), coded on all cores.
    pub fn extend(&mut self, data: Vec<f32>) {
        assert!(
            self.dim > 0 && data.len().is_multiple_of(self.dim),
            "data must hold whole rows"
        );
        let added = DenseIndex::from_data(self.dim, data);
        self.append(added);
    }

    /// `extend` holding the fine codes of the rows their codes do not reproduce
    /// (`from_data_fine`).
    pub fn extend_fine(&mut self, data: &[f32]) {
        assert!(
            self.dim > 0 && data.len().is_multiple_of(self.dim),
            "data must hold whole rows"
        );
        let added = DenseIndex::from_data_fine(self.dim, data);
        self.append(added);
    }

    fn append(&mut self, mut added: DenseIndex) {
        self.forget_derived();
        if self.lean {
            // A lean index holds no fine code: the added rows are read back as its own are.
            added.fine = Vec::new();
            added.lean = true;
        }
        if let Some(lists) = self.lists.as_mut() {
            lists.push_unlisted(added.len());
        }
        if self.is_empty() {
            *self = added;
        } else {
            let base = (self.data.len() / self.dim) as u32;
            let fine_base = self.scales.len() as u32;
            Arc::make_mut(&mut self.codes).extend_from_slice(&added.codes);
            self.units.extend_from_slice(&added.units);
            self.held.extend(added.held.iter().map(|&h| match h {
                REPRODUCED => h,
                h if h & FINE != 0 => FINE | (fine_base + (h & !FINE)),
                h => base + h,
            }));
            self.data.extend_from_slice(&added.data);
            self.fine.extend_from_slice(&added.fine);
            self.scales.extend_from_slice(&added.scales);
            self.sums.extend_from_slice(&added.sums);
        }
    }

    /// Give back what the rows' arrays grew beyond what they hold (after many `extend`s).
    pub fn shrink_to_fit(&mut self) {
        // Codes a slicing thread still shares are left as they are rather than copied.
        if let Some(codes) = Arc::get_mut(&mut self.codes) {
            codes.shrink_to_fit();
        }
        self.units.shrink_to_fit();
        self.held.shrink_to_fit();
        self.data.shrink_to_fit();
        self.fine.shrink_to_fit();
        self.scales.shrink_to_fit();
        self.sums.shrink_to_fit();
    }

    /// Keep the rows whose `keep` is true, in their order (`keep` has one flag per row).
    pub fn retain_rows(&mut self, keep: &[bool]) {
        assert_eq!(keep.len(), self.len(), "one flag per row");
        self.forget_derived();
        if let Some(lists) = self.lists.as_mut() {
            lists.retain(keep);
        }
        let (dim, stride) = (self.dim, self.stride());
        let (mut to, mut held_to, mut fine_to) = (0, 0usize, 0usize);
        let codes = Arc::make_mut(&mut self.codes);
        for (from, _) in keep.iter().enumerate().filter(|(_, &k)| k) {
            codes.copy_within(from * stride..(from + 1) * stride, to * stride);
            self.units[to] = self.units[from];
            self.held[to] = match self.held[from] {
                REPRODUCED => REPRODUCED,
                h if h & FINE != 0 => {
                    let h = (h & !FINE) as usize;
                    if !self.lean {
                        self.fine.copy_within(h * dim..(h + 1) * dim, fine_to * dim);
                    }
                    self.scales[fine_to] = self.scales[h];
                    self.sums[fine_to] = self.sums[h];
                    fine_to += 1;
                    FINE | (fine_to as u32 - 1)
                }
                h => {
                    let h = h as usize;
                    self.data.copy_within(h * dim..(h + 1) * dim, held_to * dim);
                    held_to += 1;
                    held_to as u32 - 1
                }
            };
            to += 1;
        }
        codes.truncate(to * stride);
        self.units.truncate(to);
        self.held.truncate(to);
        self.data.truncate(held_to * dim);
        self.fine.truncate(fine_to * dim);
        self.scales.truncate(fine_to);
        self.sums.truncate(fine_to);
    }

    /// Row `i`'s vector: the one held, or the one its code stands for. Panics when only its
    /// fine code is held (its vector is the store's to read: `held_row`).
    pub fn row(&self, i: usize) -> std::borrow::Cow<'_, [f32]> {
        self.held_row(i)
            .unwrap_or_else(|| panic!("row {i}: only its fine code is held"))
    }

    /// `row`, or None when only the row's fine code is held.
    pub fn held_row(&self, i: usize) -> Option<std::borrow::Cow<'_, [f32]>> {
        Some(match self.held[i] {
            h if h & FINE != 0 && h != REPRODUCED => return None,
            REPRODUCED => {
                let stride = self.stride();
                let mut out = Vec::with_capacity(self.dim);
                decode(
                    &self.codes[i * stride..(i + 1) * stride],
                    self.units[i],
                    self.dim,
                    &mut out,
                );
                std::borrow::Cow::Owned(out)
            }
            h => {
                let h = h as usize;
                std::borrow::Cow::Borrowed(&self.data[h * self.dim..(h + 1) * self.dim])
            }
        })
    }

    /// The cosine of row `i` with `query`, its vector held; a damaged row (NaN or infinite
    /// values) scores below every other and is never returned by `top_k`.
    pub fn score(&self, i: usize, query: &[f32]) -> f32 {
        self.score_reading(i, query, &mut held_only)
            .expect("the vector of every row is held")
    }

    /// `score` of a row whose vector may be read through `read` (only its fine code held).
    pub fn score_reading<E>(
        &self,
        i: usize,
        query: &[f32],
        read: &mut ReadRows<'_, E>,
    ) -> Result<f32, Unread<E>> {
        let mut scored =
            [self.score_or_estimate(i, query, &query_support(query), Norms::of(query))];
        if scored[0].2 > 0.0 {
            self.read_exact(query, &mut scored, &[0], read)?;
        }
        Ok(scored[0].1)
    }

    /// Ask for row `i`'s code, unit and held-vector index ahead of scoring it (the shortlist's
    /// rows are scattered: each would otherwise wait on memory in turn).
    #[inline(always)]
    fn prefetch_row(&self, i: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let stride = self.stride();
            let code = self.codes.as_ptr().wrapping_add(i * stride) as *const i8;
            // SAFETY: a prefetch never faults, wherever it points.
            unsafe {
                for line in (0..stride * 8).step_by(64) {
                    _mm_prefetch::<_MM_HINT_T0>(code.wrapping_add(line));
                }
                _mm_prefetch::<_MM_HINT_T0>(self.units.as_ptr().wrapping_add(i) as *const i8);
                _mm_prefetch::<_MM_HINT_T0>(self.held.as_ptr().wrapping_add(i) as *const i8);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = i;
    }

    /// Ask for row `i`'s fine code, if that is what is held of it.
    #[inline(always)]
    fn prefetch_fine(&self, i: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let h = self.held[i];
            if h & FINE != 0 && h != REPRODUCED && !self.lean {
                let at = self
                    .fine
                    .as_ptr()
                    .wrapping_add((h & !FINE) as usize * self.dim);
                // SAFETY: a prefetch never faults, wherever it points.
                unsafe {
                    for line in (0..self.dim).step_by(64) {
                        _mm_prefetch::<_MM_HINT_T0>(at.wrapping_add(line).cast::<i8>());
                    }
                    let scale = self.scales.as_ptr().wrapping_add((h & !FINE) as usize);
                    _mm_prefetch::<_MM_HINT_T0>(scale.cast::<i8>());
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = i;
    }

    /// Row `i`'s exact cosine with `query` when its vector is held or given back by its code
    /// (bound 0), else its fine code's estimate and how far the cosine may lie from it.
    #[inline(always)]
    fn score_or_estimate(&self, i: usize, query: &[f32], support: &[u64], norms: Norms) -> Scored {
        match self.held[i] {
            // The same bits as `dot(&self.row(i), query)`, from the code.
            REPRODUCED => {
                let stride = self.stride();
                let score = finite(code_dot(
                    &self.codes[i * stride..(i + 1) * stride],
                    self.units[i],
                    query,
                    support,
                ));
                (i, score, 0.0)
            }
            // No bound holds for the code's own estimate: the row is read back.
            h if h & FINE != 0 && self.lean => {
                let stride = self.stride();
                let estimate = code_dot(
                    &self.codes[i * stride..(i + 1) * stride],
                    self.units[i],
                    query,
                    support,
                );
                let estimate = if estimate.is_finite() { estimate } else { 0.0 };
                (i, estimate, f32::INFINITY)
            }
            h if h & FINE != 0 => {
                let (h, dim) = ((h & !FINE) as usize, self.dim);
                let scale = self.scales[h];
                let estimate = fine::estimate(query, &self.fine[h * dim..(h + 1) * dim], scale);
                (i, estimate, norms.bound(scale, dim))
            }
            h => {
                let h = h as usize;
                (
                    i,
                    finite(dot(&self.data[h * self.dim..(h + 1) * self.dim], query)),
                    0.0,
                )
            }
        }
    }

    /// The `k` best of `scored` with exact cosines, best first, equal scores in row order: the
    /// rows whose fine estimate alone is held are read through `read`, first the best `k` by
    /// estimate, then every other whose bound reaches the k-th exact cosine so far (a row left
    /// unread cannot be in the top k), each checked against its vector's checksum.
    fn resolve<E>(
        &self,
        query: &[f32],
        mut scored: Vec<Scored>,
        k: usize,
        read: &mut ReadRows<'_, E>,
    ) -> Result<Vec<(usize, f32)>, Unread<E>> {
        let best_first = |a: &Scored, b: &Scored| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if scored.iter().any(|s| s.2 > 0.0) {
            // The best `k` by estimate first, in any order: which they are is all that is read.
            if scored.len() > k {
                scored.select_nth_unstable_by(k - 1, best_first);
            }
            let first: Vec<usize> = (0..scored.len().min(k))
                .filter(|&j| scored[j].2 > 0.0)
                .collect();
            self.read_exact(query, &mut scored, &first, read)?;
            let mut exact: Vec<f32> = scored.iter().filter(|s| s.2 == 0.0).map(|s| s.1).collect();
            let floor = if exact.len() >= k {
                exact.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
                exact[k - 1]
            } else {
                f32::NEG_INFINITY
            };
            let then: Vec<usize> = (0..scored.len())
                .filter(|&j| scored[j].2 > 0.0 && scored[j].1 + scored[j].2 >= floor)
                .collect();
            self.read_exact(query, &mut scored, &then, read)?;
            scored.retain(|s| s.2 == 0.0);
        }
        scored.sort_by(best_first);
        scored.truncate(k);
        Ok(scored
            .into_iter()
            .filter(|s| s.1.is_finite())
            .map(|s| (s.0, s.1))
            .collect())
    }

    /// Read the vectors of `scored[j]` for each `j` in `which` and give them their exact cosine.
    fn read_exact<E>(
        &self,
        query: &[f32],
        scored: &mut [Scored],
        which: &[usize],
        read: &mut ReadRows<'_, E>,
    ) -> Result<(), Unread<E>> {
        if which.is_empty() {
            return Ok(());
        }
        let rows: Vec<usize> = which.iter().map(|&j| scored[j].0).collect();
        let vectors = read(&rows).map_err(Unread::Read)?;
        let dim = self.dim;
        let mut wrong = Vec::new();
        for (n, &j) in which.iter().enumerate() {
            let row = scored[j].0;
            let vector = vectors.get(n * dim..(n + 1) * dim);
            let sum = self.sums[(self.held[row] & !FINE) as usize];
            match vector {
                Some(v) if vector_sum(v) == sum => scored[j] = (row, finite(dot(v, query)), 0.0),
                _ => wrong.push(row),
            }
        }
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(Unread::Sum(wrong))
        }
    }

    /// Whether `vector`, read back for `row`, has the checksum its code recorded.
    pub fn vector_matches(&self, row: usize, vector: &[f32]) -> bool {
        let sum = self
            .held
            .get(row)
            .and_then(|h| self.sums.get((h & !FINE) as usize));
        sum.is_some_and(|&sum| vector_sum(vector) == sum)
    }

    /// How many rows keep their vector besides their code.
    pub fn vectors_held(&self) -> usize {
        self.data.len().checked_div(self.dim).unwrap_or(0)
    }

    /// Bytes held per row on average: its code, its sign words once made, and the vectors (or
    /// fine codes with their scales and checksums) of rows their codes do not reproduce.
    pub fn bytes_per_row(&self) -> usize {
        let held = (self.data.len() * 4 + self.fine.len() + self.scales.len() * 8)
            .checked_div(self.len())
            .unwrap_or(0);
        let signs = if self.signs.get().is_some() {
            words_for(self.dim) * 8
        } else {
            0
        };
        self.stride() * 8 + 8 + held + signs
    }

    /// The `k` best rows for `query` with exact cosines, best first; equal scores keep row
    /// order. Large indexes go through the code pass (see the module docs). Every row's vector
    /// must be held (`top_k_reading` otherwise).
    pub fn top_k(&self, query: &[f32], k: usize) -> Vec<(usize, f32)> {
        self.top_k_reading(query, k, &mut held_only)
            .expect("the vector of every row is held")
    }

    /// `top_k`, reading through `read` the vectors of the rows whose fine code alone is held
    /// when their estimate may place them in the top k.
    pub fn top_k_reading<E>(
        &self,
        query: &[f32],
        k: usize,
        read: &mut ReadRows<'_, E>,
    ) -> Result<Vec<(usize, f32)>, Unread<E>> {
        if k == 0 || self.dim == 0 || query.len() != self.dim {
            return Ok(Vec::new());
        }
        let (level, planes) = query_levels(query);
        let shortlist = shortlist(k, planes, self.len(), self.lists.is_some());
        if self.len() < QUANTISE_FROM || shortlist >= self.len() / 2 {
            return self.top_k_exact_reading(query, k, read);
        }
        let sliced = sparse_terms(query, &level).and_then(|t| Some((t, self.sliced()?)));
        let estimates = match sliced {
            Some((terms, sliced)) => sliced.top_k(&terms, &self.units, shortlist),
            None => self.scan_codes(query, &QueryPlanes::new(query, &level, planes), shortlist),
        };
        let (support, norms) = (query_support(query), Norms::of(query));
        let score = |part: &[(usize, f32)]| -> Vec<Scored> {
            part.iter()
                .enumerate()
                .map(|(j, &(i, _))| {
                    if let Some(&(ahead, _)) = part.get(j + RESCORE_AHEAD) {
                        self.prefetch_row(ahead);
                    }
                    // Its `held` was asked for half as far ahead: where its fine code lies is
                    // known.
                    if let Some(&(near, _)) = part.get(j + RESCORE_AHEAD / 2) {
                        self.prefetch_fine(near);
                    }
                    self.score_or_estimate(i, query, &support, norms)
                })
                .collect()
        };
        let parts = if self.len() >= ROWS_PER_THREAD {
            cores().min(estimates.len() / SCORE_ROWS_PER_THREAD).max(1)
        } else {
            1
        };
        let scored: Vec<Scored> = if parts == 1 {
            score(&estimates)
        } else {
            let parts: Vec<&[(usize, f32)]> =
                estimates.chunks(estimates.len().div_ceil(parts)).collect();
            fan_out(parts.len(), |t| score(parts[t])).concat()
        };
        self.resolve(query, scored, k, read)
    }

    /// The sliced codes once made. The first sparse query starts a thread making them and takes
    /// the row-major pass, as every query does until they are made: no query waits for them.
    fn sliced(&self) -> Option<&Sliced> {
        if let Some(made) = self.sliced.get() {
            return Some(made);
        }
        self.slicing.get_or_init(|| {
            let (codes, cell, dim) = (Arc::clone(&self.codes), Arc::clone(&self.sliced), self.dim);
            // A thread the system refuses leaves every query on the row-major pass.
            let _ = std::thread::Builder::new()
                .name("recall-slicing".into())
                .spawn(move || {
                    cell.get_or_init(|| Sliced::build(&codes, dim));
                });
        });
        None
    }

    /// The sliced codes, made here if no thread has made them (tests).
    #[cfg(test)]
    fn sliced_now(&self) -> &Sliced {
        self.sliced
            .get_or_init(|| Sliced::build(&self.codes, self.dim))
    }

    /// The sign words, made here by the first query that needs them (a copy of a third of the
    /// codes: about a millisecond per 100k rows of 384 dimensions), laid out list by list when
    /// there are lists, with that layout.
    fn signs(&self) -> &(Signs, Option<Layout>) {
        self.signs.get_or_init(|| {
            let layout = self.lists.as_ref().map(Lists::layout);
            let order = layout.as_ref().map(|l| l.order.as_slice());
            (
                Signs::build(&self.codes, words_for(self.dim), order),
                layout,
            )
        })
    }

    /// Drop the sliced codes and the sign words before the rows change.
    fn forget_derived(&mut self) {
        self.sliced = Arc::default();
        self.slicing = OnceLock::new();
        self.signs = OnceLock::new();
    }

    /// The exact scan over every row (their vectors held).
    pub fn top_k_exact(&self, query: &[f32], k: usize) -> Vec<(usize, f32)> {
        self.top_k_exact_reading(query, k, &mut held_only)
            .expect("the vector of every row is held")
    }

    /// The exact scan over every row, reading vectors as `top_k_reading` does.
    fn top_k_exact_reading<E>(
        &self,
        query: &[f32],
        k: usize,
        read: &mut ReadRows<'_, E>,
    ) -> Result<Vec<(usize, f32)>, Unread<E>> {
        if k == 0 || self.dim == 0 || query.len() != self.dim {
            return Ok(Vec::new());
        }
        let (support, norms) = (query_support(query), Norms::of(query));
        if !self.scales.is_empty() {
            let scored = (0..self.len())
                .map(|i| self.score_or_estimate(i, query, &support, norms))
                .collect();
            return self.resolve(query, scored, k, read);
        }
        let mut top = select(
            (0..self.len()).map(|i| self.score_or_estimate(i, query, &support, norms).1),
            k,
        );
        top.retain(|p| p.1.is_finite());
        Ok(top)
    }
}

/// A row, its cosine or fine estimate, and how far the cosine may lie from it (0: exact).
type Scored = (usize, f32, f32);

/// Reads the float32 vectors of rows whose fine code alone is held, in the order asked
/// (`dim` floats each, row-major).
pub type ReadRows<'a, E> = dyn FnMut(&[usize]) -> Result<Vec<f32>, E> + 'a;

/// Why rows could not be scored exactly.
#[derive(Debug)]
pub enum Unread<E> {
    /// The reader failed.
    Read(E),
    /// These rows' vectors were missing from what was read, or do not have the checksum their
    /// codes recorded.
    Sum(Vec<usize>),
}

/// The reader of an index that holds every row's vector: never called.
fn held_only(_: &[usize]) -> Result<Vec<f32>, std::convert::Infallible> {
    unreachable!("an index holding every vector reads none")
}

/// Rows per thread below which a second thread costs more than it saves.
const ROWS_PER_THREAD: usize = 262_144;

/// Which code kernel this CPU runs.
#[derive(Clone, Copy)]
enum Kernel {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Popcnt,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

fn kernel(q: &QueryPlanes) -> Kernel {
    #[cfg(target_arch = "x86_64")]
    {
        if q.words <= 8
            && std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512vpopcntdq")
        {
            return Kernel::Avx512;
        }
        if std::is_x86_feature_detected!("popcnt") {
            return Kernel::Popcnt;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = q; // one portable kernel elsewhere (LLVM lowers count_ones to the CPU's own)
    Kernel::Portable
}

/// The rows of a block a code pass scores: all of them, or those a sign cut kept (positions
/// in the block, ascending).
#[derive(Clone, Copy)]
enum Rows<'a> {
    All(usize),
    Kept(&'a [u32]),
}

impl Rows<'_> {
    fn len(&self) -> usize {
        match self {
            Rows::All(n) => *n,
            Rows::Kept(kept) => kept.len(),
        }
    }

    /// The `j`-th row scored.
    #[inline(always)]
    fn at(&self, j: usize) -> usize {
        match self {
            Rows::All(_) => j,
            Rows::Kept(kept) => kept[j] as usize,
        }
    }
}

/// The code pass over one block of rows with the portable (or POPCNT-compiled) count:
/// estimated cosines, the `k` best, positions offset by `base`.
#[inline(always)]
fn scan_rows(
    q: &QueryPlanes,
    codes: &[u64],
    units: &[f32],
    rows: Rows,
    base: usize,
    k: usize,
) -> Vec<(usize, f32)> {
    let stride = MASKS * q.words;
    let mut top = TopK::new(k);
    for j in 0..rows.len() {
        let i = rows.at(j);
        top.push(
            i,
            q.dot_portable(&codes[i * stride..(i + 1) * stride]) as f32 * units[i],
        );
    }
    top.finish(base)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn scan_popcnt(
    q: &QueryPlanes,
    codes: &[u64],
    units: &[f32],
    rows: Rows,
    base: usize,
    k: usize,
) -> Vec<(usize, f32)> {
    scan_rows(q, codes, units, rows, base, k)
}

/// AVX-512 code pass for rows of at most 512 dimensions: each mask is one register, the
/// query's `P` planes stay in registers, planes are summed by Horner's rule.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
unsafe fn scan_avx512<const P: usize>(
    q: &QueryPlanes,
    codes: &[u64],
    units: &[f32],
    rows: Rows,
    base: usize,
    k: usize,
) -> Vec<(usize, f32)> {
    use std::arch::x86_64::*;
    let w = q.words;
    debug_assert!(w <= 8 && q.planes == P);
    let mask: __mmask8 = if w >= 8 { 0xff } else { (1u8 << w) - 1 };
    let mut planes = [_mm512_setzero_si512(); P];
    for (j, plane) in planes.iter_mut().enumerate() {
        // SAFETY: each plane is padded to 8 words.
        *plane = _mm512_loadu_si512(q.levels.as_ptr().add(j * q.padded) as *const _);
    }
    let qsign = _mm512_loadu_si512(q.sign.as_ptr() as *const _);
    let mut top = TopK::new(k);
    let stride = MASKS * w;
    let n = rows.len();
    for j in 0..n {
        let i = rows.at(j);
        assert!((i + 1) * stride <= codes.len() && i < units.len());
        // SAFETY: the row is in bounds (asserted); the masked loads touch only its `MASKS × w`
        // words; a prefetch never faults, wherever it points.
        let p = codes.as_ptr().add(i * stride);
        let next = rows.at((j + PREFETCH_ROWS).min(n - 1));
        let ahead = codes.as_ptr().wrapping_add(next * stride) as *const i8;
        // A row (at most 192 bytes) touches at most four lines: those of its first three
        // 64-byte steps and of its last byte.
        _mm_prefetch::<_MM_HINT_T0>(ahead);
        _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(64));
        _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(128));
        _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(stride * 8 - 1));
        _mm_prefetch::<_MM_HINT_T0>(units.as_ptr().wrapping_add(next) as *const i8);
        let flip = _mm512_xor_si512(qsign, _mm512_maskz_loadu_epi64(mask, p as *const _));
        let m0 = _mm512_maskz_loadu_epi64(mask, p.add(w) as *const _);
        let m1 = _mm512_maskz_loadu_epi64(mask, p.add(2 * w) as *const _);
        let (mut acc0, mut acc1) = (_mm512_setzero_si512(), _mm512_setzero_si512());
        for plane in planes.iter().rev() {
            let b0 = _mm512_and_si512(*plane, m0);
            let b1 = _mm512_and_si512(*plane, m1);
            let d0 = _mm512_sub_epi64(
                _mm512_popcnt_epi64(_mm512_andnot_si512(flip, b0)),
                _mm512_popcnt_epi64(_mm512_and_si512(flip, b0)),
            );
            let d1 = _mm512_sub_epi64(
                _mm512_popcnt_epi64(_mm512_andnot_si512(flip, b1)),
                _mm512_popcnt_epi64(_mm512_and_si512(flip, b1)),
            );
            acc0 = _mm512_add_epi64(_mm512_add_epi64(acc0, acc0), d0);
            acc1 = _mm512_add_epi64(_mm512_add_epi64(acc1, acc1), d1);
        }
        let acc = _mm512_add_epi64(acc0, _mm512_add_epi64(acc1, acc1));
        top.push(
            i,
            _mm512_reduce_add_epi64(acc) as f32 * units.get_unchecked(i),
        );
    }
    top.finish(base)
}

fn scan_block(
    q: &QueryPlanes,
    codes: &[u64],
    units: &[f32],
    rows: Rows,
    base: usize,
    k: usize,
) -> Vec<(usize, f32)> {
    match kernel(q) {
        // SAFETY (all three arms): the kernel's CPU features were detected in kernel().
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 if q.planes == 1 => unsafe {
            scan_avx512::<1>(q, codes, units, rows, base, k)
        },
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => unsafe { scan_avx512::<PLANES>(q, codes, units, rows, base, k) },
        #[cfg(target_arch = "x86_64")]
        Kernel::Popcnt => unsafe { scan_popcnt(q, codes, units, rows, base, k) },
        Kernel::Portable => scan_rows(q, codes, units, rows, base, k),
    }
}

impl DenseIndex {
    /// The code pass over all rows, split across the available cores for large indexes.
    /// Scores are estimates up to the query's step (only their order matters).
    fn scan_codes(&self, query: &[f32], q: &QueryPlanes, k: usize) -> Vec<(usize, f32)> {
        let rows = self.len();
        if q.planes > 1 && rows >= SIGN_FIRST_FROM {
            return self.scan_cut(query, q, k);
        }
        let stride = MASKS * q.words;
        let threads = cores().min(rows / ROWS_PER_THREAD).max(1);
        let per = rows.div_ceil(threads);
        let block = |lo: usize, hi: usize| {
            let (codes, units) = (&self.codes[lo * stride..hi * stride], &self.units[lo..hi]);
            scan_block(q, codes, units, Rows::All(hi - lo), lo, k)
        };
        if threads == 1 {
            return block(0, rows);
        }
        merge(
            fan_out(threads, |t| block(t * per, ((t + 1) * per).min(rows))),
            k,
        )
    }

    /// A model's query over many rows: each part's code pass scores only what its sign cut
    /// keeps, of every row or, where there are lists, of the lists nearest the query.
    fn scan_cut(&self, query: &[f32], q: &QueryPlanes, k: usize) -> Vec<(usize, f32)> {
        let (signs, layout) = self.signs();
        let runs = match (&self.lists, layout) {
            (Some(lists), Some(layout)) => lists.chosen(layout, query, LIST_SHARE),
            _ => vec![(0, self.len())],
        };
        let read: usize = runs.iter().map(|(lo, hi)| hi - lo).sum();
        let per_thread = if layout.is_some() {
            LIST_ROWS_PER_THREAD
        } else {
            ROWS_PER_THREAD
        };
        let threads = cores().min(read / per_thread).max(1);
        let parts = split(&runs, threads);
        let part = |t: usize| {
            let runs = &parts[t];
            let rows = runs.iter().map(|(lo, hi)| hi - lo).sum();
            let mut kept = signs.keep(&q.as_signs(), runs, sign_keep(rows, k, parts.len()));
            // Rows in the lists' order: the code pass reads them where they lie, in any order.
            if let Some(layout) = layout {
                kept.iter_mut().for_each(|p| *p = layout.order[*p as usize]);
            }
            scan_block(q, &self.codes, &self.units, Rows::Kept(&kept), 0, k)
        };
        merge(fan_out(parts.len(), part), k)
    }
}

/// The `k` best of the parts' shortlists, best first, earlier rows winning ties.
fn merge(mut parts: Vec<Vec<(usize, f32)>>, k: usize) -> Vec<(usize, f32)> {
    if parts.len() == 1 {
        // A part's shortlist is already its best first (`TopK::finish`).
        let mut only = parts.pop().expect("one part");
        only.truncate(k);
        return only;
    }
    let mut merged = parts.concat();
    merged.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    merged.truncate(k);
    merged
}

/// The `k` largest scores with their positions, best first, earlier positions winning ties.
/// A score, or minus infinity for one that is not a number (a damaged vector; `recall doctor`
/// names it), so that it sorts below every real score.
#[inline]
fn finite(score: f32) -> f32 {
    if score.is_finite() {
        score
    } else {
        f32::NEG_INFINITY
    }
}

fn select(scores: impl Iterator<Item = f32>, k: usize) -> Vec<(usize, f32)> {
    let mut top = TopK::new(k);
    for (i, s) in scores.enumerate() {
        top.push(i, s);
    }
    top.finish(0)
}

impl DenseIndex {
    /// Recall@k of the first-pass path against the exact scan for `query` (benches and tests).
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
    use crate::row_code::fixtures::{hashed_row, unit_rows, xorshift};

    fn planes_of(query: &[f32]) -> QueryPlanes {
        let (level, planes) = query_levels(query);
        QueryPlanes::new(query, &level, planes)
    }

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
    fn retained_rows_score_as_an_index_built_from_them() {
        let dim = 70;
        let mut x = 7u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2001) as f32 / 1000.0 - 1.0
        };
        let rows = QUANTISE_FROM + 300;
        let data: Vec<f32> = (0..rows * dim).map(|_| next()).collect();
        let mut index = DenseIndex::new(dim);
        index.extend(data[..dim * 10].to_vec());
        index.extend(data[dim * 10..].to_vec());
        let keep: Vec<bool> = (0..rows).map(|i| i % 3 != 1).collect();
        index.retain_rows(&keep);
        let kept: Vec<f32> = data
            .chunks_exact(dim)
            .zip(&keep)
            .filter(|(_, &k)| k)
            .flat_map(|(r, _)| r.to_vec())
            .collect();
        let built = DenseIndex::from_data(dim, kept);
        assert_eq!(index.len(), built.len());
        assert_eq!(index.codes, built.codes);
        assert_eq!(index.units, built.units);
        let q: Vec<f32> = (0..dim).map(|_| next()).collect();
        assert_eq!(index.top_k(&q, 25), built.top_k(&q, 25));
    }

    #[test]
    fn code_pass_keeps_recall_and_exact_scores() {
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
    }

    #[test]
    fn code_kernels_agree_and_hashed_rows_are_coded_exactly() {
        // Sparse rows of equal magnitudes, as the hashing embedder makes: the code pass is
        // exact up to the unit, whatever the dimension (one register, several, a ragged tail).
        for dim in [37, 384, 512, 700] {
            let mut x = dim as u64 + 7;
            let mut next = move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let sparse = |next: &mut dyn FnMut() -> u64, n: usize| {
                let mut v = vec![0.0f32; dim];
                for _ in 0..n {
                    let i = (next() % dim as u64) as usize;
                    // Collisions add up, as in the hashing embedder.
                    v[i] += if next().is_multiple_of(2) { 1.0 } else { -1.0 };
                }
                let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt();
                v.into_iter().map(|a| a / norm).collect::<Vec<f32>>()
            };
            let row = sparse(&mut next, dim / 8 + 2);
            let query = sparse(&mut next, 6);
            let mut code = Vec::new();
            let unit = encode(&row, &mut code);
            let q = planes_of(&query);
            let step = query.iter().fold(0.0f32, |m, x| m.max(x.abs()));
            let estimate = q.dot_portable(&code) as f32 * unit * step;
            assert!((estimate - dot(&row, &query)).abs() < 1e-5, "dim {dim}");
            // Every kernel this CPU has ranks a block of rows exactly as the portable count,
            // for a hashed query (one plane) and a dense one (every plane).
            let mut rows = Vec::new();
            let mut units = Vec::new();
            for _ in 0..300 {
                let dense: Vec<f32> = (0..dim)
                    .map(|_| (next() % 2001) as f32 / 1000.0 - 1.0)
                    .collect();
                units.push(encode(&dense, &mut rows));
            }
            let dense_query: Vec<f32> = (0..dim)
                .map(|_| (next() % 2001) as f32 / 1000.0 - 1.0)
                .collect();
            // Every row, and the rows a cut keeps (every third, and the last).
            let every: Vec<u32> = (0..300).collect();
            let kept: Vec<u32> = (0..300).filter(|i| i % 3 == 0 || *i == 299).collect();
            for query in [&query, &dense_query] {
                let q = planes_of(query);
                let want = scan_rows(&q, &rows, &units, Rows::All(300), 5, 40);
                let all = scan_block(&q, &rows, &units, Rows::All(300), 5, 40);
                assert_eq!(all, want, "dim {dim}");
                assert_eq!(
                    scan_block(&q, &rows, &units, Rows::Kept(&every), 5, 40),
                    want
                );
                let some = scan_rows(&q, &rows, &units, Rows::Kept(&kept), 5, 40);
                assert!(some.iter().all(|p| kept.contains(&((p.0 - 5) as u32))));
                assert_eq!(some.len(), 40);
                assert_eq!(
                    scan_block(&q, &rows, &units, Rows::Kept(&kept), 5, 40),
                    some
                );
                #[cfg(target_arch = "x86_64")]
                {
                    if std::is_x86_feature_detected!("popcnt") {
                        let got = unsafe { scan_popcnt(&q, &rows, &units, Rows::All(300), 5, 40) };
                        assert_eq!(got, want);
                    }
                }
            }
            assert_eq!(planes_of(&dense_query).planes, PLANES);
        }
    }

    /// A reader of rows' vectors from `data`, counting in `reads` the rows it reads.
    fn counting_reader<'a>(
        data: &'a [f32],
        dim: usize,
        reads: &'a std::cell::Cell<usize>,
    ) -> impl FnMut(&[usize]) -> Result<Vec<f32>, ()> + 'a {
        move |asked: &[usize]| {
            reads.set(reads.get() + asked.len());
            Ok(asked
                .iter()
                .flat_map(|&r| data[r * dim..(r + 1) * dim].iter().copied())
                .collect())
        }
    }

    /// Rows and the bits of their scores, for exact comparison.
    fn bits(top: &[(usize, f32)]) -> Vec<(usize, u32)> {
        top.iter().map(|&(r, s)| (r, s.to_bits())).collect()
    }

    #[test]
    fn holding_fine_codes_returns_what_holding_the_vectors_does() {
        let dim = 384;
        // Below the size of the code pass (every row estimated), and above it.
        for rows in [1500, 6000] {
            let data = unit_rows(rows, dim, rows as u64);
            let held = DenseIndex::from_data(dim, data.clone());
            let (codes, _) = StoredCodes::of_rows(dim, &data, true);
            let fine = DenseIndex::from_stored_fine(codes, Vec::new()).unwrap();
            assert_eq!((fine.len(), fine.vectors_held()), (rows, 0));
            let reads = std::cell::Cell::new(0usize);
            let mut read = counting_reader(&data, dim, &reads);
            let queries = unit_rows(20, dim, 7 + rows as u64);
            for (n, q) in queries.chunks_exact(dim).enumerate() {
                // A row's own vector as the query too: its top score stands far above the rest.
                let own = &data[n * dim..(n + 1) * dim];
                for (query, k) in [(q, 10), (q, 20), (own, 1), (own, 20)] {
                    let got = fine.top_k_reading(query, k, &mut read).unwrap();
                    assert_eq!(
                        bits(&got),
                        bits(&held.top_k(query, k)),
                        "{rows} rows, k {k}"
                    );
                }
                let row = n * 37 % rows;
                let score = fine.score_reading(row, q, &mut read).unwrap();
                assert_eq!(score.to_bits(), held.score(row, q).to_bits());
            }
            // What was read: a few rows past the k asked for, not the shortlist.
            let per_query = reads.get() as f64 / (queries.len() / dim * 4) as f64;
            assert!(
                per_query < 60.0,
                "{rows} rows: {per_query} vectors read a query"
            );
        }
    }

    #[test]
    fn a_lean_index_reads_back_its_shortlist_and_returns_what_the_vectors_do() {
        let dim = 384;
        for rows in [1500, 6000] {
            let data = unit_rows(rows, dim, 5 + rows as u64);
            let held = DenseIndex::from_data(dim, data.clone());
            // Read from the stored bytes, as a store reads them, keeping no fine code.
            let mut stored = StoredCodes::with_capacity(dim, rows).lean();
            for (r, v) in data.chunks_exact(dim).enumerate() {
                let chunk = r as i64 + 1;
                assert!(stored.push(chunk, 1, &code_bytes(chunk, 1, v)));
            }
            let lean = DenseIndex::from_stored_fine(stored, Vec::new()).unwrap();
            assert!(lean.is_lean() && !held.is_lean());
            assert_eq!((lean.len(), lean.vectors_held()), (rows, 0));
            // Each row's code and the scale and checksum of its fine code: no byte a component.
            assert!(lean.bytes_per_row() < dim / 2, "{}", lean.bytes_per_row());
            let reads = std::cell::Cell::new(0usize);
            let mut read = counting_reader(&data, dim, &reads);
            let queries = unit_rows(10, dim, 3 + rows as u64);
            for (n, q) in queries.chunks_exact(dim).enumerate() {
                let own = &data[n * dim..(n + 1) * dim];
                for (query, k) in [(q, 10), (own, 1), (own, 20)] {
                    assert_eq!(
                        bits(&lean.top_k_reading(query, k, &mut read).unwrap()),
                        bits(&held.top_k(query, k)),
                        "{rows} rows, k {k}"
                    );
                }
                let row = n * 37 % rows;
                let score = lean.score_reading(row, q, &mut read).unwrap();
                assert_eq!(score.to_bits(), held.score(row, q).to_bits());
            }
            // Every row the code pass shortlists is read (all of them below its size).
            let shortlisted = if rows < QUANTISE_FROM {
                rows
            } else {
                SHORTLIST_MIN
            };
            assert!(
                reads.get() >= 30 * shortlisted,
                "{rows} rows: {} read",
                reads.get()
            );
        }
    }

    #[test]
    fn a_vector_read_back_wrong_is_refused_by_its_checksum() {
        let dim = 64;
        let data = unit_rows(300, dim, 3);
        let (codes, _) = StoredCodes::of_rows(dim, &data, true);
        let fine = DenseIndex::from_stored_fine(codes, Vec::new()).unwrap();
        let query = data[..dim].to_vec();
        let mut nudged = |asked: &[usize]| -> Result<Vec<f32>, ()> {
            let mut out: Vec<f32> = asked
                .iter()
                .flat_map(|&r| data[r * dim..(r + 1) * dim].iter().copied())
                .collect();
            if let Some(at) = asked.iter().position(|&r| r == 0) {
                out[at * dim] += 1e-6;
            }
            Ok(out)
        };
        match fine.top_k_reading(&query, 5, &mut nudged) {
            Err(Unread::Sum(rows)) => assert_eq!(rows, [0]),
            other => panic!("expected row 0 refused, got {other:?}"),
        }
        let mut short = |_: &[usize]| -> Result<Vec<f32>, ()> { Ok(Vec::new()) };
        assert!(matches!(
            fine.score_reading(3, &query, &mut short),
            Err(Unread::Sum(rows)) if rows == [3]
        ));
        let mut failing = |_: &[usize]| -> Result<Vec<f32>, &str> { Err("busy") };
        assert!(matches!(
            fine.top_k_reading(&query, 5, &mut failing),
            Err(Unread::Read("busy"))
        ));
    }

    #[test]
    fn a_models_shortlist_grows_with_the_rows_up_to_its_cap() {
        assert_eq!(shortlist(10, PLANES, 10_000, false), SHORTLIST_MIN);
        assert_eq!(shortlist(10, PLANES, 100_000, false), 500);
        assert_eq!(shortlist(10, PLANES, 300_000, false), 1500);
        assert_eq!(
            shortlist(10, PLANES, 300_000, true),
            NOISY_MOST,
            "over lists"
        );
        assert_eq!(shortlist(10, PLANES, 1_000_000, true), NOISY_MOST);
        assert_eq!(
            shortlist(10, 1, 1_000_000, true),
            SHORTLIST_MIN,
            "a hashed query's"
        );
        assert_eq!(shortlist(200, PLANES, 1_000_000, true), 200 * OVERSAMPLE);
    }

    #[test]
    fn a_models_query_over_many_rows_scores_only_what_its_sign_cut_keeps() {
        let dim = 100;
        let rows = SIGN_FIRST_FROM + 500;
        let mut x = 31u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2001) as f32 / 1000.0 - 1.0
        };
        let data: Vec<f32> = (0..rows * dim).map(|_| next()).collect();
        let index = DenseIndex::from_data(dim, data.clone());
        for probe in [7, rows / 2, rows - 1] {
            // A row's own vector, a little moved: the row comes back first.
            let query: Vec<f32> = data[probe * dim..(probe + 1) * dim]
                .iter()
                .map(|v| v + 0.05 * next())
                .collect();
            let (level, planes) = query_levels(&query);
            assert_eq!(planes, PLANES);
            let q = QueryPlanes::new(&query, &level, planes);
            // A long shortlist keeps one row in twenty; a short one at most twelve shortlists.
            for (k, most) in [(300, rows / 2), (10, rows / SIGN_SHARE)] {
                let keep = sign_keep(rows, k, 1);
                let kept = index.signs().0.keep(&q.as_signs(), &[(0, rows)], keep);
                assert!(
                    kept.len() >= keep && kept.len() < most,
                    "{} kept for a shortlist of {k}",
                    kept.len()
                );
                assert!(kept.contains(&(probe as u32)));
                let want = scan_block(&q, &index.codes, &index.units, Rows::Kept(&kept), 0, k);
                assert_eq!(index.scan_codes(&query, &q, k), want);
            }
            assert_eq!(index.top_k(&query, 1)[0].0, probe);
        }
        assert_eq!(index.signs().0.len(), rows);
    }

    #[test]
    fn a_models_query_over_lists_cuts_its_nearest_lists_and_every_unlisted_row() {
        let (dim, rows) = (64, SIGN_FIRST_FROM + 500);
        let data = unit_rows(rows, dim, 17);
        let mut index = DenseIndex::from_data(dim, data.clone());
        let centroids = crate::lists::train(&data[..4000 * dim], dim, 4);
        let mut of_row = crate::lists::nearest(&centroids, dim, &data);
        let probe = rows / 3;
        let query: Vec<f32> = data[probe * dim..(probe + 1) * dim].to_vec();
        let score = |l: u32| dot(&centroids[l as usize * dim..][..dim], &query);
        // The probe in its own list is read; moved to the list farthest from the query, it is
        // not (three tenths of the rows are read, the nearest lists first: here two lists of
        // four); in no list, it is.
        index.set_lists(Lists::new(dim, centroids.clone(), of_row.clone()));
        assert_eq!(index.top_k(&query, 1)[0], (probe, dot(&query, &query)));
        let farthest = (0..4u32)
            .min_by(|&a, &b| score(a).total_cmp(&score(b)))
            .unwrap();
        assert_ne!(of_row[probe], farthest);
        of_row[probe] = farthest;
        index.set_lists(Lists::new(dim, centroids.clone(), of_row.clone()));
        assert_ne!(index.top_k(&query, 1)[0].0, probe);
        of_row[probe] = crate::lists::UNLISTED;
        index.set_lists(Lists::new(dim, centroids, of_row));
        assert_eq!(index.top_k(&query, 1)[0].0, probe);
        // Rows appended are in no list: every query reads them; rows let go take their lists.
        let added = unit_rows(3, dim, 99);
        index.extend(added.clone());
        for (j, row) in added.chunks_exact(dim).enumerate() {
            assert_eq!(index.top_k(row, 1)[0].0, rows + j);
        }
        let mut keep = vec![true; rows + 3];
        keep[0] = false;
        index.retain_rows(&keep);
        assert_eq!(index.lists().unwrap().rows(), rows + 2);
        assert_eq!(index.top_k(&query, 1)[0].0, probe - 1);
    }

    #[test]
    fn the_sliced_pass_returns_the_row_major_shortlist() {
        // Hashed rows and model-like rows, sparse queries of one plane and of several, short
        // and long shortlists (the long ones reach rows the query does not touch).
        let mut x = 4242u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for dim in [64, 100, 512] {
            let rows = 64 * 150 + 37;
            let mut data = Vec::with_capacity(rows * dim);
            for r in 0..rows {
                // Model-like rows too, except at 512 dimensions (a hashed store's).
                if r % 3 == 0 && dim != 512 {
                    data.extend((0..dim).map(|_| (next() % 2001) as f32 / 1000.0 - 1.0));
                } else {
                    data.extend(hashed_row(&mut next, dim, dim / 10 + 1, r % 7 == 0));
                }
            }
            let index = DenseIndex::from_data(dim, data);
            // The first sparse query takes the row-major pass and starts the slicing thread;
            // once it is done, queries take the sliced pass, with the same answer.
            let mut query = vec![0.0f32; dim];
            query[3] = 0.6;
            query[dim - 1] = -0.8;
            let before = index.top_k(&query, 10);
            let started = std::time::Instant::now();
            while index.sliced.get().is_none() {
                assert!(started.elapsed().as_secs() < 60, "the codes are sliced");
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            assert_eq!(index.top_k(&query, 10), before);
            for terms in [1, 3, dim / 8] {
                let mut query = vec![0.0f32; dim];
                for _ in 0..terms {
                    let i = (next() % dim as u64) as usize;
                    query[i] += if next().is_multiple_of(2) { 0.5 } else { -0.5 };
                    if next().is_multiple_of(3) {
                        query[i] *= 0.3;
                    }
                }
                let (level, planes) = query_levels(&query);
                let Some(sparse) = sparse_terms(&query, &level) else {
                    panic!("a query of {terms} terms in {dim} dimensions is sparse");
                };
                let q = QueryPlanes::new(&query, &level, planes);
                for k in [5, 300, rows / 2] {
                    let want = index.scan_codes(&query, &q, k);
                    assert_eq!(
                        index.sliced_now().top_k(&sparse, &index.units, k),
                        want,
                        "dim {dim}, {terms} terms, k {k}"
                    );
                    let [portable, fast] =
                        index.sliced_now().both_kernels(&sparse, &index.units, k);
                    assert_eq!(portable, fast, "kernels agree");
                    let cut = Sliced::in_parts(&index.codes, dim, 3);
                    assert_eq!(cut.top_k(&sparse, &index.units, k), want, "in parts");
                }
                if dim == 512 {
                    // Hashed rows are their codes: the pass loses none of the best.
                    assert_eq!(index.top_k(&query, 10), brute(&index, &query, 10));
                }
            }
        }
    }

    #[test]
    fn rows_coded_in_bulk_equal_rows_pushed() {
        let rows: Vec<Vec<f32>> = (0..9000)
            .map(|r| {
                (0..70)
                    .map(|i| ((r * 31 + i * 7) % 13) as f32 - 6.0)
                    .collect()
            })
            .collect();
        let mut pushed = DenseIndex::new(70);
        rows.iter().for_each(|r| pushed.push(r));
        let set = DenseIndex::from_data(70, rows.concat());
        assert_eq!(
            (&set.data, &set.codes, &set.units),
            (&pushed.data, &pushed.codes, &pushed.units)
        );
    }

    #[test]
    fn a_coded_row_scores_to_the_bit_as_the_vector_it_stands_for() {
        // Dimensions with and without a tail past the last eight, queries dense and sparse.
        for dim in [5, 37, 64, 70, 384, 512] {
            let mut next = xorshift(dim as u64 + 3);
            let rows: Vec<Vec<f32>> = (0..60)
                .map(|r| hashed_row(&mut next, dim, 2 + r % 30, r % 7 == 0))
                .collect();
            let index = DenseIndex::from_data(dim, rows.concat());
            let sparse = hashed_row(&mut next, dim, 6, false);
            // Negative zeros skip as zeros do.
            let signed_zeros = sparse
                .iter()
                .map(|&x| if x == 0.0 { -0.0 } else { x })
                .collect();
            let queries = [
                sparse,
                signed_zeros,
                (0..dim)
                    .map(|_| (next() % 2001) as f32 / 1000.0 - 1.0)
                    .collect(),
            ];
            for q in &queries {
                for i in 0..rows.len() {
                    assert_eq!(
                        index.score(i, q).to_bits(),
                        finite(dot(&index.row(i), q)).to_bits(),
                        "dim {dim}, row {i}"
                    );
                }
            }
        }
    }

    #[test]
    fn hashed_rows_are_held_as_their_codes_and_score_as_their_vectors() {
        let dim = 512;
        let mut next = xorshift(41);
        let rows: Vec<Vec<f32>> = (0..200)
            .map(|r| hashed_row(&mut next, dim, 60 + r % 40, r % 10 == 0))
            .collect();
        let index = DenseIndex::from_data(dim, rows.concat());
        // Every row, four colliding tokens included, is its code (with one listed
        // component): only the listed rows keep a vector.
        let listed = index.data.len() / dim;
        assert!((20..40).contains(&listed), "{listed} rows keep a vector");
        assert!(index.bytes_per_row() < dim);
        let query = hashed_row(&mut next, dim, 6, false);
        for (i, row) in rows.iter().enumerate() {
            let (held, exact) = (index.score(i, &query), dot(row, &query));
            assert!(
                (held - exact).abs() < 1e-6,
                "row {i}: {held} against {exact}"
            );
            assert!(index
                .row(i)
                .iter()
                .zip(row)
                .all(|(a, b)| (a - b).abs() <= 4.0 * f32::EPSILON * b.abs()));
        }
    }

    #[test]
    fn stored_codes_read_back_as_the_index_built_from_the_rows() {
        let dim = 96;
        let mut next = xorshift(5);
        let mut rows: Vec<Vec<f32>> = Vec::new();
        for r in 0..300 {
            rows.push(match r % 3 {
                0 => hashed_row(&mut next, dim, 20, r % 2 == 0),
                // A model's row: reproduced by no code, its vector is kept.
                1 => (0..dim)
                    .map(|_| (next() % 2001) as f32 / 1000.0 - 1.0)
                    .collect(),
                _ => {
                    let mut v = hashed_row(&mut next, dim, 12, false);
                    v[3] = f32::NAN;
                    v
                }
            });
        }
        let built = DenseIndex::from_data(dim, rows.concat());
        let mut stored = StoredCodes::new(dim);
        for (i, row) in rows.iter().enumerate() {
            assert!(stored.push(i as i64, 7, &code_bytes(i as i64, 7, row)));
        }
        let needed: Vec<f32> = stored
            .unreproduced()
            .iter()
            .flat_map(|&i| rows[i].clone())
            .collect();
        let unreproduced = stored.unreproduced();
        assert!((0..rows.len())
            .filter(|i| i % 3 != 0)
            .all(|i| unreproduced.contains(&i)));
        let read = DenseIndex::from_stored(stored, needed).unwrap();
        assert_eq!(
            (&read.codes, &read.units, &read.held),
            (&built.codes, &built.units, &built.held)
        );
        assert_eq!(
            read.data.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            built.data.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        let q: Vec<f32> = (0..dim)
            .map(|_| (next() % 2001) as f32 / 1000.0 - 1.0)
            .collect();
        assert_eq!(read.top_k(&q, 20), built.top_k(&q, 20));
        // A code that fails its checksum (a flipped mask bit) is coded again from its vector:
        // the same rows, the same answers. A code moved onto another row vouches for that
        // row's vector only.
        let mut stored = StoredCodes::new(dim);
        for (i, row) in rows.iter().enumerate() {
            let mut bytes = code_bytes(i as i64, 7, row);
            if i < 2 {
                bytes[20] ^= 0x10;
            }
            assert_eq!(stored.push(i as i64, 7, &bytes), i >= 2, "row {i}");
        }
        assert_eq!(stored.damaged(), &[0, 1]);
        let unreproduced = stored.unreproduced();
        let needed: Vec<f32> = unreproduced.iter().flat_map(|&i| rows[i].clone()).collect();
        let repaired = DenseIndex::from_stored(stored, needed).unwrap();
        assert_eq!(repaired.top_k(&q, 20), built.top_k(&q, 20));
        for i in 0..rows.len() {
            let bits = |d: &DenseIndex| d.row(i).iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&repaired), bits(&built), "row {i}");
        }
        // A vector that does not match the checksum its code recorded is refused, named by row.
        let mut stored = StoredCodes::new(dim);
        for (i, row) in rows.iter().enumerate() {
            stored.push(i as i64, 7, &code_bytes(i as i64, 7, row));
        }
        let mut negated: Vec<f32> = stored
            .unreproduced()
            .iter()
            .flat_map(|&i| rows[i].clone())
            .collect();
        negated[..dim].iter_mut().for_each(|x| *x = -*x);
        assert_eq!(
            DenseIndex::from_stored(stored, negated).unwrap_err(),
            vec![1]
        );
        let mut stored = StoredCodes::new(dim);
        for i in 0..rows.len() {
            let moved = if i == 4 { 5 } else { i };
            stored.push(i as i64, 7, &code_bytes(moved as i64, 7, &rows[moved]));
        }
        let needed: Vec<f32> = stored
            .unreproduced()
            .iter()
            .flat_map(|&i| rows[i].clone())
            .collect();
        assert_eq!(
            DenseIndex::from_stored(stored, needed).unwrap_err(),
            vec![4]
        );
        // Retaining rows keeps each row's vector, held or coded.
        let mut kept = built.clone();
        let keep: Vec<bool> = (0..rows.len()).map(|i| i % 4 != 1).collect();
        kept.retain_rows(&keep);
        let survivors: Vec<usize> = (0..rows.len()).filter(|&i| keep[i]).collect();
        for (to, &from) in survivors.iter().enumerate() {
            assert_eq!(
                kept.row(to).iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                built
                    .row(from)
                    .iter()
                    .map(|x| x.to_bits())
                    .collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn top_k_selection_equals_a_sort_across_many_cuts() {
        // Few distinct scores, so ties straddle every cut of the buffer.
        let scores: Vec<f32> = (0..20_000u32).map(|i| ((i * 7919) % 37) as f32).collect();
        for k in [1, 3, 100, 700, 5000] {
            let mut want: Vec<(usize, f32)> = scores.iter().copied().enumerate().collect();
            want.sort_by(crate::scan::better);
            want.truncate(k);
            assert_eq!(select(scores.iter().copied(), k), want, "k = {k}");
        }
        assert!(select(scores.iter().copied(), 0).is_empty());
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

    #[test]
    fn a_row_that_is_not_finite_is_never_a_hit() {
        for rows in [3, QUANTISE_FROM + 10] {
            let mut index = DenseIndex::new(2);
            index.push(&[f32::NAN, 1.0]);
            index.push(&[f32::INFINITY, 0.0]);
            for _ in 2..rows {
                index.push(&[0.6, 0.8]);
            }
            let got = index.top_k(&[1.0, 0.0], 5);
            assert_eq!(got.len(), 5.min(rows - 2), "{rows} rows");
            assert!(
                got.iter().all(|&(i, s)| i >= 2 && s == 0.6),
                "{rows} rows: {got:?}"
            );
            assert_eq!(index.score(0, &[1.0, 0.0]), f32::NEG_INFINITY);
        }
    }
}
