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

/// One term's chunks: their slots ascending and the term's frequency in each.
#[derive(Default)]
struct List {
    slots: Vec<u32>,
    tfs: Vec<u16>,
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
                let list = &mut self.lists[term as usize];
                list.slots.push(slot);
                list.tfs.push(tf);
            }
            start = end;
        }
        Ok(())
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
            let mut w = 0;
            for r in 0..list.slots.len() {
                let s = list.slots[r] as usize;
                if keep[s] {
                    list.slots[w] = renumber[s];
                    list.tfs[w] = list.tfs[r];
                    w += 1;
                }
            }
            list.slots.truncate(w);
            list.tfs.truncate(w);
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
            let list = &self.lists[t as usize];
            for (&slot, &tf) in list.slots.iter().zip(&list.tfs) {
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
