//! Search over a store (SPEC §4–§5): both legs, fusion, the lexical evidence of each candidate,
//! the trust layer, and the rows a caller shows.
//!
//! Owns: the read path of a query against the in-memory search cache and the lexical index.
//! Does not own: loading the cache (cache.rs), the per-document explanation (explain.rs), the
//! rules (trust.rs), scoring inside each leg (dense.rs, lexical.rs) or fusion (fusion.rs).

use crate::errors::{CoreError, Result};
use crate::evidence::QueryEvidence;
use crate::fusion;
use crate::judgment::{self, lexical_body};
use crate::trust::{self, Candidate, Policy};

use super::Store;

/// (state, since, vocabulary, line, statement) of a retirement in force.
pub type Retired = (String, Option<String>, String, Option<i64>, String);

/// One judged hit with what the caller shows about it (SPEC §5.1).
#[derive(Debug, Clone)]
pub struct HitRow {
    /// Per-leg ranks and the fused score; None for a successor fetched by the trust layer.
    pub retrieval: Option<fusion::Fused>,
    pub source: String,
    pub path: String,
    pub title: String,
    pub ordinal: i64,
    pub text: String,
    pub heading_path: String,
    pub line_start: i64,
    pub line_end: i64,
    pub indexed_at: String,
    pub first_indexed_at: String,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub superseded_by: Option<String>,
    /// A terminal state in force (SPEC §8.4): (state, since, vocabulary, line, statement).
    pub retired: Option<Retired>,
    /// What the trust layer decided: verdict, confidence, evidence, promotion.
    pub judged: trust::Judged,
    /// The stale document whose place this successor took (SPEC §5.3).
    pub promoted_from: Option<String>,
    /// The retired best match that turned this hit `not_entailed` (SPEC §6).
    pub displaced_by: Option<String>,
    /// What the passage lacks of what the question asks for (answer.rs), as the user reads it.
    pub lacks: Option<String>,
    /// SPEC §2.5: (vocabulary, line, statement) the reader could not act on.
    pub unread: Vec<(String, Option<i64>, String)>,
    /// The document's file as it was indexed: (content hash, size in bytes, modification time
    /// in ns, None when not recorded), what a search checks the file against.
    pub stamp: Stamp,
    /// The file as it stands, by its size and time (`file_state`).
    pub file_state: &'static str,
}

/// A document's file as indexed: (content hash, size in bytes, modification time in ns).
pub type Stamp = (String, i64, Option<i64>);

#[derive(Debug, Clone)]
pub struct SearchOutcome {
    pub hits: Vec<HitRow>,
    /// (chunk id, cosine) of the dense candidates, best first (drives `gap_warning`, SPEC §4).
    pub dense: Vec<(i64, f32)>,
    /// (chunk id, BM25) of the lexical candidates, best first.
    pub lexical: Vec<(i64, f32)>,
    pub generation: i64,
    pub documents: usize,
    pub load_ms: f64,
    pub lexical_ms: f64,
    pub dense_ms: f64,
    pub fuse_ms: f64,
    pub trust_ms: f64,
}

impl Store {
    /// Read ahead what the search of `text` starts with, when the lexical index it reads is
    /// held and current: the query's terms with their document frequencies (its evidence), kept
    /// for that search. Nothing is loaded for it, and nothing inside a write.
    pub fn read_ahead(&mut self, text: &str) -> Result<()> {
        self.ahead = None;
        if self.in_write {
            return Ok(());
        }
        let generation = self.generation()?;
        if self
            .lexical
            .as_ref()
            .is_some_and(|l| l.generation == generation)
        {
            let ev = self.query_evidence(text)?;
            self.ahead = Some((text.to_string(), generation, ev));
        }
        Ok(())
    }

    /// SPEC §7: what the query's text asks for, weighed against the committed lexical index.
    pub(super) fn query_evidence(&self, text: &str) -> Result<QueryEvidence> {
        let index = &self.lexical.as_ref().expect("lexical index loaded").index;
        Ok(QueryEvidence::new(index.term_idfs(text)?, text))
    }

    /// A candidate chunk with its lexical evidence (judgment.rs), its text read from the store.
    pub(super) fn candidate(
        &self,
        ev: &QueryEvidence,
        doc: usize,
        chunk: i64,
        score: f32,
    ) -> Candidate {
        let row = self.shown_row(chunk).ok().flatten();
        candidate_of(ev, doc, chunk, score, row.as_ref())
    }

    /// What a hit shows of `chunk` and its document; None for a chunk a concurrent writer
    /// removed.
    fn shown_row(&self, chunk: i64) -> Result<Option<ShownRow>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT d.source, d.path, d.title, c.ordinal, c.text, c.heading_path, c.line_start,
                    c.line_end, d.indexed_at, d.first_indexed_at, d.valid_from_raw, d.valid_until_raw,
                    d.retired_state, d.retired_since, d.retired_vocabulary, d.retired_line,
                    d.retired_statement, d.content_hash, d.size_bytes, d.mtime_ns
             FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.id = ?1",
        )?;
        let row = stmt.query_row([chunk], |r| {
            Ok(ShownRow {
                source: r.get(0)?,
                path: r.get(1)?,
                title: r.get(2)?,
                ordinal: r.get(3)?,
                text: r.get(4)?,
                heading_path: r.get(5)?,
                line_start: r.get(6)?,
                line_end: r.get(7)?,
                indexed_at: r.get(8).unwrap_or_default(),
                first_indexed_at: r.get(9).unwrap_or_default(),
                valid_from: r.get(10).ok().flatten(),
                valid_until: r.get(11).ok().flatten(),
                retired: r.get::<_, Option<String>>(12).ok().flatten().map(|state| {
                    (
                        state,
                        r.get(13).ok().flatten(),
                        r.get(14).unwrap_or_default(),
                        r.get(15).ok().flatten(),
                        r.get::<_, Option<String>>(16)
                            .ok()
                            .flatten()
                            .unwrap_or_default(),
                    )
                }),
                // A stamp that cannot be read matches no file: the hit is never `ok` on it.
                stamp: (
                    r.get(17).unwrap_or_default(),
                    r.get(18).unwrap_or(-1),
                    r.get(19).ok().flatten(),
                ),
            })
        });
        match row {
            Ok(row) => Ok(Some(row)),
            Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Dense retrieval, then the trust layer (SPEC §4–§5): `candidates` dense chunks, one hit
    /// per document, cut to `k` documents before judging; successors may be fetched beyond `k`.
    pub fn search(
        &mut self,
        query: &[f32],
        text: &str,
        k: usize,
        candidates: usize,
        policy: &Policy,
    ) -> Result<SearchOutcome> {
        // One read transaction: every statement of the search reads the same commit.
        self.in_read(|store| store.search_read(query, text, k, candidates, policy))
    }

    /// `search` inside a read transaction.
    fn search_read(
        &mut self,
        query: &[f32],
        text: &str,
        k: usize,
        candidates: usize,
        policy: &Policy,
    ) -> Result<SearchOutcome> {
        let t0 = std::time::Instant::now();
        self.ensure_cache()?;
        self.lexical_mut()?;
        let t_loaded = std::time::Instant::now();
        let lexical = self
            .lexical
            .as_ref()
            .expect("loaded above")
            .index
            .search(text, candidates)?;
        let t_lexical = std::time::Instant::now();
        let cache = self.cache.as_ref().expect("cache loaded above");
        if cache.dense.dim() != query.len() && !cache.dense.is_empty() {
            return Err(CoreError::Usage(format!(
                "query vector has {} dimensions, the store's vectors have {}",
                query.len(),
                cache.dense.dim()
            )));
        }
        let t1 = std::time::Instant::now();
        let top = self.cached_top(cache, query, candidates)?;
        let t2 = std::time::Instant::now();
        let dense: Vec<(i64, f32)> = top
            .iter()
            .map(|&(row, s)| (cache.row_chunk[row], s))
            .collect();
        // SPEC §4: fuse the legs; every candidate keeps its dense cosine (computed here for
        // lexical-only ones). A lexical id the cache does not know (a concurrent writer) drops.
        let lexical_ids: Vec<i64> = lexical
            .iter()
            .map(|&(c, _)| c)
            .filter(|&c| cache.row_of(c).is_some())
            .collect();
        let dense_ids: Vec<i64> = dense.iter().map(|&(c, _)| c).collect();
        let fused = fusion::rrf(&dense_ids, &lexical_ids);
        let t_fused = std::time::Instant::now();
        // Read ahead with the state (`read_ahead`) when it was of this text and index.
        let held = self.lexical.as_ref().map(|l| l.generation);
        let ev = match self.ahead.take() {
            Some((ahead, generation, ev))
                if ahead == text && Some(generation) == held && !self.in_write =>
            {
                ev
            }
            _ => self.query_evidence(text)?,
        };
        // Each candidate's row is read once: its text for the evidence, the rest for its hit.
        let read = std::cell::RefCell::new(std::collections::HashMap::new());
        let candidate = |doc: usize, chunk: i64, score: f32| {
            let row = self.shown_row(chunk).ok().flatten();
            let c = candidate_of(&ev, doc, chunk, score, row.as_ref());
            if let Some(row) = row {
                read.borrow_mut().insert(chunk, row);
            }
            c
        };
        // A vector that cannot be read back for its exact cosine is damage: the first such
        // failure ends the search once the trust layer returns.
        let fault = std::cell::RefCell::new(None);
        let exact = |row: usize| {
            self.cached_score(cache, row, query).unwrap_or_else(|e| {
                fault.borrow_mut().get_or_insert(e);
                f32::NEG_INFINITY
            })
        };
        let (cands, retrieval) = judgment::shortlist(
            &fused,
            k,
            |chunk| cache.row_of(chunk).map(|row| cache.row_doc[row]),
            |f, doc| {
                let row = cache.row_of(f.chunk).expect("shortlisted chunks are held");
                let score = dense
                    .get(f.dense_rank.map_or(usize::MAX, |r| r - 1))
                    .map_or_else(|| exact(row), |&(_, s)| s);
                candidate(doc, f.chunk, score)
            },
        );
        let fetch = |d: usize| {
            cache
                .rows_of(d)
                .map(|row| (row, exact(row)))
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
                .map(|(row, score)| candidate(d, cache.row_chunk[row], score))
        };
        let judged = trust::judge(
            &cache.corpus.graph,
            &cache.corpus.windows,
            &cands,
            policy,
            fetch,
        );
        if let Some(e) = fault.into_inner() {
            return Err(e);
        }
        let mut read = read.into_inner();
        let mut hits = Vec::with_capacity(judged.len());
        for h in judged {
            let row = match read.remove(&h.chunk) {
                Some(row) => row,
                None => match self.shown_row(h.chunk)? {
                    Some(row) => row,
                    // A chunk removed by a concurrent writer since the cache loaded: skip it;
                    // the next search reloads.
                    None => continue,
                },
            };
            let path_of = |s: usize| cache.corpus.graph.node(s).path.clone();
            // A note changed since it was indexed is not served as it was: the file of a hit
            // that would be `ok` is looked at as the hit is made (by its content, where only
            // that can say, in Python: `recall.sources`). The others are not answers either way.
            let state = if h.verdict == trust::Verdict::Ok {
                file_state(&row.source, &row.path, &row.stamp)
            } else {
                "unchecked"
            };
            hits.push(HitRow {
                retrieval: retrieval.get(&h.chunk).cloned(),
                source: row.source,
                path: row.path,
                title: row.title,
                ordinal: row.ordinal,
                text: row.text,
                heading_path: row.heading_path,
                line_start: row.line_start,
                line_end: row.line_end,
                indexed_at: row.indexed_at,
                first_indexed_at: row.first_indexed_at,
                valid_from: row.valid_from,
                valid_until: row.valid_until,
                superseded_by: h.superseded_by.map(path_of),
                retired: row.retired.filter(|_| cache.corpus.windows[h.doc].retired),
                promoted_from: h.promoted_from.map(path_of),
                displaced_by: h.displaced_by.map(path_of),
                lacks: h.lacks.map(|l| ev.answer().describe(l)),
                unread: cache.corpus.unread_of(h.doc),
                file_state: state,
                stamp: row.stamp,
                judged: h,
            });
        }
        let t4 = std::time::Instant::now();
        let ms = |a: std::time::Instant, b: std::time::Instant| (b - a).as_secs_f64() * 1e3;
        Ok(SearchOutcome {
            hits,
            dense,
            lexical,
            generation: cache.generation,
            documents: cache.corpus.doc_ids.len(),
            load_ms: ms(t0, t_loaded),
            lexical_ms: ms(t_loaded, t_lexical),
            dense_ms: ms(t1, t2),
            fuse_ms: ms(t2, t_fused),
            trust_ms: ms(t_fused, t4),
        })
    }
}

/// A hit's file as it stands, by what its size and time say against its stamp: `current`
/// (both as indexed), `changed` (another size, or no longer a file), `missing` (gone from a
/// folder that is there), `elsewhere` (its folder is not on this machine) or `unsure` (the time
/// was not recorded or has moved: only the content can say, which the caller reads).
pub fn file_state(source: &str, path: &str, stamp: &Stamp) -> &'static str {
    let file = std::path::Path::new(source).join(path);
    let meta = match std::fs::metadata(&file) {
        Ok(meta) => meta,
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                || e.kind() == std::io::ErrorKind::NotADirectory =>
        {
            return if std::path::Path::new(source).is_dir() {
                "missing"
            } else {
                "elsewhere"
            };
        }
        Err(_) => return "changed",
    };
    if !meta.is_file() || i64::try_from(meta.len()).ok() != Some(stamp.1) {
        return "changed";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let ns = meta
            .mtime()
            .checked_mul(1_000_000_000)
            .map(|s| s + meta.mtime_nsec());
        if stamp.2.is_some() && ns == stamp.2 {
            return "current";
        }
    }
    "unsure"
}

/// The columns of a chunk and its document that a hit shows.
struct ShownRow {
    source: String,
    path: String,
    title: String,
    ordinal: i64,
    text: String,
    heading_path: String,
    line_start: i64,
    line_end: i64,
    indexed_at: String,
    first_indexed_at: String,
    valid_from: Option<String>,
    valid_until: Option<String>,
    /// The retirement columns as stored, whether or not it is in force.
    retired: Option<Retired>,
    stamp: Stamp,
}

/// The candidate of `chunk` with the lexical evidence of its row; no row (a chunk a concurrent
/// writer removed) gives no evidence.
fn candidate_of(
    ev: &QueryEvidence,
    doc: usize,
    chunk: i64,
    score: f32,
    row: Option<&ShownRow>,
) -> Candidate {
    let body = row.map(|r| lexical_body(&r.title, &r.heading_path, &r.text));
    judgment::candidate(ev, doc, chunk, score, body.as_deref())
}
