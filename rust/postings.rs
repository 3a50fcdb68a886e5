//! `Postings`: the lexical leg of a store that keeps its chunks elsewhere (a PostgreSQL
//! namespace), over the copy a process holds of each chunk's analysed terms.
//!
//! Owns: an inverted index of the chunks' terms (each term's chunks with the term's frequency,
//! each chunk's token count), read from the `tsvector`s the server sends (`tsvectorsend`'s
//! binary form, values back to back), kept as chunks are added and removed, and BM25 over it
//! exactly as the file store's index scores a chunk (`lexical::bm25_rank`): the same weights,
//! summed in the query's term order, ties by chunk id. Every chunk holding a query word is
//! scored, so the order is the whole corpus's, not a pool's. Does not own: which chunks
//! changed, the terms' document frequencies (the caller passes the lexicon's) or the analyser.

use rustc_hash::FxHashMap;

use crate::lexical::{query_terms, saturation, term_weight};

/// One term's chunks, ascending, each with the term's frequency in it, packed: per chunk a
/// LEB128 varint of its slot's gap from the slot after the one before it (from 0 for the
/// first), shifted left by one with the low bit set when the frequency is not 1, then, when it
/// is set, the frequency as a varint. Most gaps of a frequent term and most frequencies take
/// one byte, so a posting is about two bytes where a slot and a frequency held apart are six.
#[derive(Default)]
struct List {
    packed: Vec<u8>,
    /// The slot after the last one packed.
    next: u32,
}

impl List {
    fn push(&mut self, slot: u32, tf: u16) {
        debug_assert!(slot >= self.next);
        let gap = u64::from(slot - self.next) << 1 | u64::from(tf != 1);
        put_varint(&mut self.packed, gap);
        if tf != 1 {
            put_varint(&mut self.packed, u64::from(tf));
        }
        self.next = slot + 1;
    }

    /// The (slot, frequency) of each chunk, ascending.
    fn iter(&self) -> impl Iterator<Item = (u32, u16)> + '_ {
        let mut at = 0;
        let mut next = 0u32;
        std::iter::from_fn(move || {
            if at >= self.packed.len() {
                return None;
            }
            let head = get_varint(&self.packed, &mut at);
            let slot = next + (head >> 1) as u32;
            let tf = if head & 1 == 1 {
                get_varint(&self.packed, &mut at) as u16
            } else {
                1
            };
            next = slot + 1;
            Some((slot, tf))
        })
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The varint at `*at` (written by `put_varint` here, so never malformed), moving past it.
fn get_varint(bytes: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = bytes[*at];
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

#[derive(Default)]
pub struct Postings {
    /// The chunk id of each slot, ascending.
    ids: Vec<i64>,
    /// Each slot's analysed tokens (BM25's length).
    lengths: Vec<u32>,
    terms: FxHashMap<Box<str>, u32>,
    lists: Vec<List>,
}

/// A `tsvector` in `tsvectorsend`'s form could not be read.
#[derive(Debug, PartialEq, Eq)]
pub struct Malformed(pub String);

/// Reads big-endian integers and NUL-ended strings off a byte slice.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end =
            end.ok_or_else(|| Malformed(format!("ends inside a value at byte {}", self.at)))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, Malformed> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u16(&mut self) -> Result<u16, Malformed> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn lexeme(&mut self) -> Result<&'a str, Malformed> {
        let rest = &self.bytes[self.at..];
        let end = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| Malformed(format!("a lexeme at byte {} has no end", self.at)))?;
        let text = std::str::from_utf8(&rest[..end])
            .map_err(|_| Malformed(format!("the lexeme at byte {} is not UTF-8", self.at)))?;
        self.at += end + 1;
        Ok(text)
    }
}

impl Postings {
    pub fn new() -> Postings {
        Postings::default()
    }

    /// Chunks held.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The largest chunk id held, or 0.
    pub fn last_id(&self) -> i64 {
        self.ids.last().copied().unwrap_or(0)
    }

    /// Add the chunks `ids` (ascending, each above every id held) with their token counts;
    /// `vectors` holds their `tsvector`s in `tsvectorsend`'s form, one after another in the
    /// same order: the lexeme count, then per lexeme its bytes, a NUL, its position count and
    /// the positions (big-endian). A term's frequency is its position count, as the printed
    /// `tsvector`'s positions count it. Nothing is added unless every value reads.
    pub fn extend(
        &mut self,
        ids: &[i64],
        lengths: &[u32],
        vectors: &[u8],
    ) -> Result<(), Malformed> {
        if ids.len() != lengths.len() {
            return Err(Malformed(format!(
                "{} chunk ids but {} token counts",
                ids.len(),
                lengths.len()
            )));
        }
        let mut last = self.last_id();
        for &id in ids {
            if id <= last {
                return Err(Malformed(format!("chunk id {id} is not above {last}")));
            }
            last = id;
        }
        // Read everything first, so a bad value leaves what is held as it was.
        let mut read: Vec<(&str, u16)> = Vec::with_capacity(vectors.len() / 12);
        let mut ends = Vec::with_capacity(ids.len());
        let mut r = Reader {
            bytes: vectors,
            at: 0,
        };
        for _ in ids {
            let count = r.u32()?;
            for _ in 0..count {
                let lexeme = r.lexeme()?;
                let positions = r.u16()?;
                r.take(2 * usize::from(positions))?;
                if positions > 0 {
                    read.push((lexeme, positions));
                }
            }
            ends.push(read.len());
        }
        if r.at != vectors.len() {
            return Err(Malformed(format!(
                "{} bytes follow the last of {} values",
                vectors.len() - r.at,
                ids.len()
            )));
        }
        let mut start = 0;
        for ((&id, &length), end) in ids.iter().zip(lengths).zip(ends) {
            let slot = u32::try_from(self.ids.len()).expect("fewer than 2^32 chunks");
            self.ids.push(id);
            self.lengths.push(length);
            for &(lexeme, tf) in &read[start..end] {
                let term = match self.terms.get(lexeme) {
                    Some(&t) => t,
                    None => {
                        let t = self.lists.len() as u32;
                        self.terms.insert(lexeme.into(), t);
                        self.lists.push(List::default());
                        t
                    }
                };
                self.lists[term as usize].push(slot, tf);
            }
            start = end;
        }
        Ok(())
    }

    /// Give back what the lists grew beyond what they hold (after a long run of `extend`).
    pub fn shrink(&mut self) {
        for list in &mut self.lists {
            list.packed.shrink_to_fit();
        }
        self.lists.shrink_to_fit();
        self.terms.shrink_to_fit();
        self.ids.shrink_to_fit();
        self.lengths.shrink_to_fit();
    }

    /// Bytes held, roughly: the slots' ids and lengths, the packed lists and the terms.
    #[cfg(test)]
    fn held_bytes(&self) -> usize {
        let term_bytes: usize = self.terms.keys().map(|t| t.len() + 16 + 8).sum();
        self.ids.capacity() * 8
            + self.lengths.capacity() * 4
            + self.lists.capacity() * std::mem::size_of::<List>()
            + self
                .lists
                .iter()
                .map(|l| l.packed.capacity())
                .sum::<usize>()
            + term_bytes
    }

    /// Drop the chunks `ids` (ids not held are passed over); returns how many were dropped.
    pub fn remove(&mut self, ids: &[i64]) -> usize {
        let mut keep = vec![true; self.ids.len()];
        let mut dropped = 0;
        for id in ids {
            if let Ok(slot) = self.ids.binary_search(id) {
                if keep[slot] {
                    keep[slot] = false;
                    dropped += 1;
                }
            }
        }
        if dropped == 0 {
            return 0;
        }
        // Each kept slot's new number: the kept slots before it.
        let mut renumber = vec![u32::MAX; keep.len()];
        let mut next = 0u32;
        for (slot, &k) in keep.iter().enumerate() {
            if k {
                renumber[slot] = next;
                next += 1;
            }
        }
        let mut slot = 0;
        self.ids.retain(|_| (keep[slot], slot += 1).0);
        let mut slot = 0;
        self.lengths.retain(|_| (keep[slot], slot += 1).0);
        for list in &mut self.lists {
            let mut kept = List::default();
            for (slot, tf) in list.iter() {
                if keep[slot as usize] {
                    kept.push(renumber[slot as usize], tf);
                }
            }
            kept.packed.shrink_to_fit();
            *list = kept;
        }
        dropped
    }

    /// The best `n` chunks for `query` as (chunk id, BM25), best first, ties by chunk id: every
    /// chunk holding one of the query's terms, scored as the file store's index scores it over
    /// `docs` chunks of `tokens` tokens, `df` giving each term's document frequency.
    pub fn rank(
        &self,
        query: &str,
        df: impl Fn(&str) -> u64,
        docs: u64,
        tokens: u64,
        n: usize,
    ) -> Vec<(i64, f32)> {
        let terms = query_terms(query);
        if terms.is_empty() || docs == 0 || n == 0 {
            return Vec::new();
        }
        let average = tokens as f32 / docs as f32;
        let mut score = vec![0.0f32; self.ids.len()];
        let mut matched = vec![false; self.ids.len()];
        let mut touched: Vec<u32> = Vec::new();
        // Term by term in the query's order: each chunk's sum adds its terms in that order.
        for term in &terms {
            let Some(&t) = self.terms.get(term.as_str()) else {
                continue;
            };
            let weight = term_weight(df(term), docs);
            for (slot, tf) in self.lists[t as usize].iter() {
                let s = slot as usize;
                score[s] += weight * saturation(u32::from(tf), self.lengths[s], average);
                if !matched[s] {
                    matched[s] = true;
                    touched.push(slot);
                }
            }
        }
        let mut ranked: Vec<(u32, f32)> = touched
            .into_iter()
            .map(|s| (s, score[s as usize]))
            .collect();
        let order = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if ranked.len() > n {
            ranked.select_nth_unstable_by(n - 1, order);
            ranked.truncate(n);
        }
        ranked.sort_unstable_by(order);
        ranked
            .into_iter()
            .map(|(s, v)| (self.ids[s as usize], v))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexical::{analyse, bm25_rank, tsvector_binary};

    const TEXTS: [&str; 6] = [
        "The gateway returns HTTP 429 when rate limited; the rate limit is 100 rps",
        "Backups run nightly with WAL archiving",
        "Rate limits per tenant: the gateway allows bursts",
        "A very long note about the gateway, the gateway and the gateway again, with many \
         other words that make it longer than the rest of the notes here",
        "rate",
        "Nightly, the gateway's rate limiter resets",
    ];

    fn held(ids: &[i64], texts: &[&str]) -> Postings {
        let mut p = Postings::new();
        let lengths: Vec<u32> = texts.iter().map(|t| analyse(t).len() as u32).collect();
        let sent: Vec<u8> = texts
            .iter()
            .flat_map(|t| tsvector_binary(&analyse(t)))
            .collect();
        p.extend(ids, &lengths, &sent).unwrap();
        p
    }

    fn df_among<'a>(texts: &'a [&'a str]) -> impl Fn(&str) -> u64 + 'a {
        move |t: &str| {
            texts
                .iter()
                .filter(|x| analyse(x).iter().any(|y| y == t))
                .count() as u64
        }
    }

    #[test]
    fn ranks_every_chunk_as_bm25_rank_scores_the_texts() {
        let ids: Vec<i64> = (1..=TEXTS.len() as i64).map(|i| i * 10).collect();
        let p = held(&ids, &TEXTS);
        let tokens: u64 = TEXTS.iter().map(|t| analyse(t).len() as u64).sum();
        let pool: Vec<(i64, &str)> = ids.iter().copied().zip(TEXTS).collect();
        for query in [
            "gateway rate limit",
            "nightly backups",
            "429",
            "rate",
            "nothing here",
            "",
        ] {
            let df = df_among(&TEXTS);
            let want = bm25_rank(query, &df, TEXTS.len() as u64, tokens, &pool);
            assert_eq!(
                p.rank(query, &df, TEXTS.len() as u64, tokens, 10),
                want,
                "{query}"
            );
            let top2: Vec<_> = want.iter().take(2).copied().collect();
            assert_eq!(
                p.rank(query, &df, TEXTS.len() as u64, tokens, 2),
                top2,
                "{query}"
            );
        }
    }

    #[test]
    fn removed_chunks_leave_the_rest_ranked_as_if_never_added() {
        let ids: Vec<i64> = (1..=TEXTS.len() as i64).collect();
        let mut p = held(&ids, &TEXTS);
        assert_eq!(p.remove(&[3, 5, 99, 3]), 2);
        let kept: Vec<&str> = [0, 1, 3, 5].iter().map(|&i| TEXTS[i]).collect();
        let mut again = held(&[1, 2, 4, 6], &kept);
        // Added after removals, above the last id.
        for q in [&mut p, &mut again] {
            let sent = tsvector_binary(&analyse("gateway rate rate"));
            q.extend(&[7], &[3], &sent).unwrap();
        }
        assert_eq!(p.len(), 5);
        assert_eq!(p.last_id(), 7);
        let df = |_: &str| 2;
        for query in ["gateway rate", "nightly", "archiving"] {
            assert_eq!(
                p.rank(query, df, 5, 60, 10),
                again.rank(query, df, 5, 60, 10),
                "{query}"
            );
        }
        assert_eq!(p.rank("tenant", df, 5, 60, 10), Vec::new());
    }

    #[test]
    fn a_list_gives_back_every_slot_and_frequency_it_was_given() {
        let given: Vec<(u32, u16)> = vec![
            (0, 1),
            (1, 1),
            (2, 2),
            (130, 1),
            (131, u16::MAX),
            (20_000, 300),
            (u32::MAX - 1, 1),
        ];
        let mut list = List::default();
        for &(slot, tf) in &given {
            list.push(slot, tf);
        }
        assert_eq!(list.iter().collect::<Vec<_>>(), given);
        // Adjacent slots of frequency 1 take a byte each.
        let mut dense = List::default();
        (0..1000).for_each(|s| dense.push(s, 1));
        assert_eq!(dense.packed.len(), 1000);
    }

    #[test]
    fn a_posting_is_held_in_about_two_bytes() {
        // 2,000 chunks of 40 words drawn from 500, a few repeated.
        let words: Vec<String> = (0..500).map(|i| format!("w{i}x")).collect();
        let texts: Vec<String> = (0..2000usize)
            .map(|c| {
                (0..40usize)
                    .map(|j| words[(c * 7 + j * j * 13) % 500].as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let ids: Vec<i64> = (1..=refs.len() as i64).collect();
        let mut p = held(&ids, &refs);
        p.shrink();
        let postings: usize = p.lists.iter().map(|l| l.iter().count()).sum();
        let packed: usize = p.lists.iter().map(|l| l.packed.len()).sum();
        assert!(postings > 60_000, "{postings}");
        assert!(
            packed * 10 <= postings * 25,
            "{packed} bytes for {postings}"
        );
        // Everything held, terms and slots included, is under 4 bytes a posting.
        assert!(p.held_bytes() < postings * 4, "{}", p.held_bytes());
    }

    #[test]
    fn ties_are_broken_by_chunk_id() {
        let p = held(&[5, 8, 9], &["alpha beta", "alpha beta", "alpha beta"]);
        let ranked = p.rank("alpha", |_| 3, 3, 6, 2);
        assert_eq!(ranked.iter().map(|r| r.0).collect::<Vec<_>>(), vec![5, 8]);
    }

    #[test]
    fn a_bad_value_is_refused_and_adds_nothing() {
        let mut p = held(&[1], &["alpha beta"]);
        let good = tsvector_binary(&analyse("gamma"));
        let bad: Vec<(Vec<i64>, Vec<u32>, Vec<u8>)> = vec![
            (vec![2], vec![1], good[..good.len() - 1].to_vec()),
            (vec![2], vec![1], [good.clone(), vec![0]].concat()),
            (
                vec![2, 3],
                vec![1, 1],
                [good.clone(), vec![0, 0, 0, 1, b'x']].concat(),
            ),
            (vec![1], vec![1], good.clone()),
            (vec![2], vec![1, 1], good.clone()),
            (vec![2], vec![1], vec![0, 0, 0, 1, 0xff, 0, 0, 0]),
        ];
        for (ids, lengths, sent) in bad {
            assert!(p.extend(&ids, &lengths, &sent).is_err(), "{ids:?} {sent:?}");
        }
        assert_eq!((p.len(), p.last_id()), (1, 1));
        assert!(p.rank("gamma", |_| 1, 1, 2, 5).is_empty());
    }
}
