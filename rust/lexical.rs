//! The lexical leg (SPEC §4): Tantivy BM25 with English stemming over chunk text, title and
//! heading path, persisted inside the store file (SPEC §1).
//!
//! Owns: the Tantivy schema, adds/deletes by chunk id, the commit that lists the files it
//! changed, and BM25 search. The index lives in memory while the store is open (a write's large
//! files wait beside the store until its commit: lexical_dir.rs); its files are written into the
//! store's `lexical_files` table by store/lexical_files.rs in the same SQLite transaction as the
//! chunk rows, so the two legs commit together. Does not own: the directory its files live in
//! (lexical_dir.rs), SQL, fusion (fusion.rs) or scores' meaning.

use std::path::PathBuf;

use tantivy::collector::TopDocs;
use tantivy::directory::error::OpenReadError;
use tantivy::directory::FileSlice;
use tantivy::indexer::NoMergePolicy;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED,
};
use tantivy::{doc, Directory, Index, IndexReader, IndexWriter, ReloadPolicy, Term};

use crate::errors::{CoreError, Result};
use crate::lexical_dir::TrackedDir;

/// Distinct words of a query that are searched; the rest of a very long query is ignored.
const MAX_QUERY_TERMS: usize = 64;

/// More entries than one segment of a store on one machine ever holds: a count above it is
/// damage, not data.
const MAX_SEGMENT_ENTRIES: u64 = 1 << 28;

/// Memory budget of the single indexing thread (Tantivy's minimum is 15 MB per thread); the
/// minimum in tests, so that a test's write flushes several segments as a large one does.
#[cfg(not(test))]
const WRITER_BUDGET: usize = 50_000_000;
#[cfg(test)]
const WRITER_BUDGET: usize = 15_000_000;
/// A commit whose write added at least one in this many of the index's documents merges its
/// segments into one.
const MERGE_SHARE: u64 = 4;

/// Tantivy failed while the index was built or written.
fn tantivy_err(e: impl std::fmt::Display) -> CoreError {
    CoreError::Lexical(e.to_string())
}

fn damaged(detail: impl std::fmt::Display) -> CoreError {
    CoreError::Damaged {
        part: "lexical index",
        detail: detail.to_string(),
    }
}

/// Files to persist after a commit: (name, file) written and names deleted. The files are the
/// directory's own (no copy: at a million chunks a copy of the written files was a third of
/// what a first index held at its commit), read a range at a time where they were spilled.
pub type FileChanges = (Vec<(String, FileSlice)>, Vec<String>);

thread_local! {
    /// Tantivy's `en_stem`, built once per thread: a `TokenizerManager` builds every analyser
    /// it knows, and a search analyses each candidate's text.
    static EN_STEM: std::cell::RefCell<Option<tantivy::tokenizer::TextAnalyzer>> =
        std::cell::RefCell::new(tantivy::tokenizer::TokenizerManager::default().get("en_stem"));
}

/// Hand every analysed token of `text` to `visit`, in order.
fn each_token(text: &str, mut visit: impl FnMut(&tantivy::tokenizer::Token)) {
    EN_STEM.with(|analyser| {
        if let Some(analyser) = analyser.borrow_mut().as_mut() {
            let mut stream = analyser.token_stream(text);
            while stream.advance() {
                visit(stream.token());
            }
        }
    });
}

/// Hand every analysed token of `text` to `visit` as its term, in order, without copying it.
pub fn each_term(text: &str, visit: &mut dyn FnMut(&str)) {
    each_token(text, |token| visit(&token.text));
}

/// Every analysed token of `text` in order (Tantivy's `en_stem`: words split on anything not
/// alphanumeric, long ones dropped, lower-cased, English-stemmed): what the index holds.
pub fn analyse(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    each_token(text, |token| out.push(token.text.clone()));
    out
}

/// `analyse` with each token's word as written in `text`.
fn analyse_words(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    each_token(text, |token| {
        let word = text
            .get(token.offset_from..token.offset_to)
            .unwrap_or(&token.text);
        out.push((token.text.clone(), word.to_string()));
    });
    out
}

/// The distinct analysed terms of `text`, in order of first appearance.
pub fn terms(text: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    each_token(text, |token| {
        if !seen.contains(&token.text) {
            seen.insert(token.text.clone());
            out.push(token.text.clone());
        }
    });
    out
}

/// The terms of a query that are searched: its distinct analysed words, at most
/// `MAX_QUERY_TERMS` (SPEC §11: the user's text is never query syntax).
pub fn query_terms(text: &str) -> Vec<String> {
    let mut t = terms(text);
    t.truncate(MAX_QUERY_TERMS);
    t
}

/// BM25's term-saturation and length-normalisation parameters, as Tantivy scores them.
const BM25_K1: f32 = 1.2;
const BM25_B: f32 = 0.75;

/// Rank `pool` (chunk id, indexed text) by BM25 for `query` as this index would score it:
/// the same analyser, Tantivy's IDF over `docs` chunks (`df` gives each term's document
/// frequency), its one-byte length norm against `tokens / docs`, summed over the query's
/// terms; best first, ties by chunk id. Chunks matching no term drop.
pub fn bm25_rank(
    query: &str,
    df: impl Fn(&str) -> u64,
    docs: u64,
    tokens: u64,
    pool: &[(i64, &str)],
) -> Vec<(i64, f32)> {
    let counted = pool.iter().map(|&(chunk, body)| {
        let analysed = analyse(body);
        let length = u32::try_from(analysed.len()).unwrap_or(u32::MAX);
        (chunk, length, move |t: &str| {
            analysed.iter().filter(|x| *x == t).count() as u32
        })
    });
    bm25_counted(query, df, docs, tokens, counted)
}

/// The most one term held by `df` of `docs` chunks adds to a chunk's BM25, as Tantivy scores
/// it: its IDF times (k1 + 1). A backend that prunes its lexical pool bounds scores with it.
pub fn term_weight(df: u64, docs: u64) -> f32 {
    let n = df.min(docs);
    let x = ((docs - n) as f32 + 0.5) / (n as f32 + 0.5);
    (1.0 + x).ln() * (1.0 + BM25_K1)
}

/// BM25's share of a term's weight that `tf` occurrences in a text of `length` tokens earn,
/// against an average length of `average`: `tf / (tf + k1 (1 - b + b length / average))`, the
/// length quantised to Tantivy's one-byte field norm as the index stores it.
pub(crate) fn saturation(tf: u32, length: u32, average: f32) -> f32 {
    use tantivy::fieldnorm::FieldNormReader;
    let norm = FieldNormReader::id_to_fieldnorm(FieldNormReader::fieldnorm_to_id(length));
    let k = BM25_K1 * (1.0 - BM25_B + BM25_B * norm as f32 / average.max(f32::MIN_POSITIVE));
    let tf = tf as f32;
    tf / (tf + k)
}

/// One text's terms as BM25 weighs them among `texts`: (term, weight, the first word of the
/// text it was analysed from), in order of first appearance. A term's weight is what it adds
/// to the text's score for a query of that term alone: its IDF among the texts times its
/// saturated frequency, exactly as the index scores a chunk. Comparing two texts' weights
/// (a cosine) is the lexical closeness of two notes under the store's own model.
pub fn bm25_vectors(texts: &[&str]) -> Vec<Vec<(String, f32, String)>> {
    let analysed: Vec<Vec<(String, String)>> = texts.iter().map(|t| analyse_words(t)).collect();
    let docs = analysed.len() as u64;
    let tokens: usize = analysed.iter().map(Vec::len).sum();
    let average = tokens as f32 / docs.max(1) as f32;
    let counted: Vec<Vec<(String, u32, String)>> = analysed
        .into_iter()
        .map(|tokens| {
            let mut slot: std::collections::HashMap<String, usize> = Default::default();
            let mut out: Vec<(String, u32, String)> = Vec::new();
            for (term, word) in tokens {
                match slot.get(&term) {
                    Some(&i) => out[i].1 += 1,
                    None => {
                        slot.insert(term.clone(), out.len());
                        out.push((term, 1, word));
                    }
                }
            }
            out
        })
        .collect();
    let mut df: std::collections::HashMap<&str, u64> = Default::default();
    for text in &counted {
        for (term, _, _) in text {
            *df.entry(term.as_str()).or_default() += 1;
        }
    }
    counted
        .iter()
        .map(|text| {
            let length =
                u32::try_from(text.iter().map(|t| t.1 as usize).sum::<usize>()).unwrap_or(u32::MAX);
            text.iter()
                .map(|(term, tf, word)| {
                    let weight =
                        term_weight(df[term.as_str()], docs) * saturation(*tf, length, average);
                    (term.clone(), weight, word.clone())
                })
                .collect()
        })
        .collect()
}

fn bm25_counted<F: Fn(&str) -> u32>(
    query: &str,
    df: impl Fn(&str) -> u64,
    docs: u64,
    tokens: u64,
    pool: impl Iterator<Item = (i64, u32, F)>,
) -> Vec<(i64, f32)> {
    let terms = query_terms(query);
    if terms.is_empty() || docs == 0 {
        return Vec::new();
    }
    let average = tokens as f32 / docs as f32;
    let weights: Vec<f32> = terms.iter().map(|t| term_weight(df(t), docs)).collect();
    let mut scored: Vec<(i64, f32)> = pool
        .filter_map(|(chunk, length, tf_of)| {
            let mut score = 0.0f32;
            let mut matched = false;
            for (t, w) in terms.iter().zip(&weights) {
                let tf = tf_of(t);
                if tf > 0 {
                    matched = true;
                    score += w * saturation(tf, length, average);
                }
            }
            matched.then_some((chunk, score))
        })
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored
}

/// PostgreSQL's limits on a `tsvector`: the highest position, and positions kept per lexeme.
const TSVECTOR_MAX_POSITION: usize = 16_383;
const TSVECTOR_POSITIONS: usize = 255;

/// Each distinct token of `tokens` (in order of first use) with the positions a `tsvector`
/// keeps of it: 1-based, capped as PostgreSQL caps them.
fn tsvector_positions(tokens: &[String]) -> Vec<(&str, Vec<usize>)> {
    let mut positions: Vec<(&str, Vec<usize>)> = Vec::new();
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, token) in tokens.iter().enumerate() {
        let pos = (i + 1).min(TSVECTOR_MAX_POSITION);
        let slot = *at.entry(token.as_str()).or_insert_with(|| {
            positions.push((token.as_str(), Vec::new()));
            positions.len() - 1
        });
        let list = &mut positions[slot].1;
        if list.len() < TSVECTOR_POSITIONS && list.last() != Some(&pos) {
            list.push(pos);
        }
    }
    positions
}

/// Analysed `tokens` as PostgreSQL receives a `tsvector` in binary (its `tsvectorrecv`): the
/// lexeme count, then per lexeme, in byte order, its bytes, a NUL, its position count and its
/// positions (weight D), all integers big-endian.
pub fn tsvector_binary(tokens: &[String]) -> Vec<u8> {
    let mut positions = tsvector_positions(tokens);
    positions.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut out = Vec::with_capacity(4 + tokens.len() * 10);
    out.extend_from_slice(&(positions.len() as u32).to_be_bytes());
    for (lexeme, at) in &positions {
        out.extend_from_slice(lexeme.as_bytes());
        out.push(0);
        out.extend_from_slice(&(at.len() as u16).to_be_bytes());
        for &p in at {
            out.extend_from_slice(&(p as u16).to_be_bytes());
        }
    }
    out
}

pub struct LexicalIndex {
    index: Index,
    reader: IndexReader,
    dir: TrackedDir,
    chunk: Field,
    body: Field,
    writer: Option<IndexWriter>,
    /// Documents added since the last commit.
    added: u64,
}

fn schema() -> (Schema, Field, Field) {
    let mut sb = Schema::builder();
    let chunk = sb.add_u64_field("chunk", INDEXED | FAST);
    // Frequencies without positions: no query reads them (the user's words are ORed, never a
    // phrase), and they were close to half of the index to write, merge and load. An index
    // saved with positions keeps its own schema and reads as before.
    let indexing = TextFieldIndexing::default()
        .set_tokenizer("en_stem")
        .set_index_option(IndexRecordOption::WithFreqs);
    let body = sb.add_text_field(
        "body",
        TextOptions::default().set_indexing_options(indexing),
    );
    (sb.build(), chunk, body)
}

impl LexicalIndex {
    /// Open from persisted files, or create an empty index when `files` is empty. Every file
    /// loaded counts as already persisted.
    pub fn open(files: Vec<(String, Vec<u8>)>) -> Result<LexicalIndex> {
        let empty = files.is_empty();
        let dir = TrackedDir::holding(files);
        let index = if empty {
            Index::create(dir.clone(), schema().0, tantivy::IndexSettings::default())
                .map_err(tantivy_err)?
        } else {
            Index::open(dir.clone()).map_err(damaged)?
        };
        Self::reading(index, dir)
    }

    /// Open saved files, checking them before any is read: each segment's entry count (a
    /// damaged count would size allocations), their sum against `live` chunks when given, then
    /// every file's checksum. Anything wrong is `CoreError::Damaged`.
    pub fn open_checked(files: Vec<(String, Vec<u8>)>, live: Option<u64>) -> Result<LexicalIndex> {
        let dir = TrackedDir::holding(files);
        let index = Index::open(dir.clone()).map_err(damaged)?;
        let mut listed = 0u64;
        for segment in index.searchable_segment_metas().map_err(damaged)? {
            let (max, deleted) = (
                u64::from(segment.max_doc()),
                u64::from(segment.num_deleted_docs()),
            );
            if max == 0 || max > MAX_SEGMENT_ENTRIES || deleted > max {
                return Err(damaged(format!(
                    "a segment lists {max} entries, {deleted} of them deleted"
                )));
            }
            listed += max - deleted;
        }
        if let Some(live) = live.filter(|&live| live != listed) {
            return Err(damaged(format!(
                "it lists {listed} chunks, the store holds {live}"
            )));
        }
        let mut bad: Vec<String> = index
            .validate_checksum()
            .map_err(damaged)?
            .into_iter()
            .map(|p| p.display().to_string())
            .collect();
        if !bad.is_empty() {
            bad.sort();
            return Err(damaged(format!("{} fail their checksum", bad.join(", "))));
        }
        Self::reading(index, dir)
    }

    fn reading(index: Index, dir: TrackedDir) -> Result<LexicalIndex> {
        let (_, chunk, body) = schema();
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(damaged)?;
        Ok(LexicalIndex {
            index,
            reader,
            dir,
            chunk,
            body,
            writer: None,
            added: 0,
        })
    }

    /// From now on the segment files a write makes past a megabyte wait in `folder` until the
    /// store has saved them, instead of in memory. The caller holds the store's
    /// write lock: whatever the folder holds is emptied first, as no one's.
    pub fn spill_into(&mut self, folder: PathBuf) {
        self.dir.spill_into(folder);
    }

    /// Whether some file written since the index was opened waits in the spill folder.
    pub fn spilled(&self) -> bool {
        self.dir.spilled()
    }

    /// The files the store has just saved, held in memory as the ones it was opened with, and
    /// the spill folder emptied and removed; searches see the committed index from then on.
    pub fn settle(&mut self) -> Result<()> {
        self.dir.settle().map_err(tantivy_err)?;
        self.reader.reload().map_err(tantivy_err)?;
        self.dir.tidy();
        Ok(())
    }

    /// Live documents (chunks) in the committed index.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// The chunk id of every live document in the committed index (for `recall doctor`).
    pub fn chunk_ids(&self) -> Result<Vec<i64>> {
        let searcher = self.reader.searcher();
        let mut ids = Vec::with_capacity(searcher.num_docs() as usize);
        for segment in searcher.segment_readers() {
            let column = segment.fast_fields().u64("chunk").map_err(damaged)?;
            for doc in segment.doc_ids_alive() {
                if let Some(id) = column.first(doc) {
                    ids.push(id as i64);
                }
            }
        }
        Ok(ids)
    }

    fn writer(&mut self) -> Result<&mut IndexWriter> {
        if self.writer.is_none() {
            let w = self
                .index
                .writer_with_num_threads(1, WRITER_BUDGET)
                .map_err(tantivy_err)?;
            self.writer = Some(w);
        }
        Ok(self.writer.as_mut().expect("writer set above"))
    }

    pub fn add(&mut self, chunk_id: i64, body: &str) -> Result<()> {
        let (chunk, field) = (self.chunk, self.body);
        self.writer()?
            .add_document(doc!(chunk => chunk_id as u64, field => body))
            .map_err(tantivy_err)?;
        self.added += 1;
        Ok(())
    }

    pub fn delete(&mut self, chunk_id: i64) -> Result<()> {
        let term = Term::from_field_u64(self.chunk, chunk_id as u64);
        self.writer()?.delete_term(term);
        Ok(())
    }

    /// Commit pending adds/deletes, let merges finish, and return every file written or deleted
    /// since the last call (for the store to persist in its open transaction); searches see
    /// the committed index from then on.
    pub fn commit(&mut self) -> Result<FileChanges> {
        let changes = self.commit_files()?;
        self.reader.reload().map_err(tantivy_err)?;
        Ok(changes)
    }

    /// `commit` without opening the committed segments for search: searches see the index as
    /// it was until `settle`. The store's write takes this, since it either settles the index
    /// once its files are saved or, when some of them waited in the spill folder, lets it go
    /// (`Store::commit`), and opening a large write's segments reads a share of them.
    pub fn commit_files(&mut self) -> Result<FileChanges> {
        let added = std::mem::take(&mut self.added);
        if let Some(mut w) = self.writer.take() {
            // A write that adds a large share of the index (a first run, a full re-index)
            // leaves it one segment: a query then walks each word's postings once, not once per
            // segment (a quarter less time at 1M chunks). The merge reads what the write wrote
            // about four times at most, far faster than the write made it.
            let before = self.index.searchable_segment_metas().map_err(tantivy_err)?;
            let docs = added + before.iter().map(|m| u64::from(m.max_doc())).sum::<u64>();
            let merge_all = added > 0 && added * MERGE_SHARE >= docs;
            if merge_all {
                // Tantivy's own policy would start merging some of the same segments in the
                // background as the commit ends, and whichever merge ended second would find
                // its segments gone.
                w.set_merge_policy(Box::new(NoMergePolicy));
            }
            w.commit().map_err(tantivy_err)?;
            let segments = self.index.searchable_segment_metas().map_err(tantivy_err)?;
            if merge_all && segments.len() > 1 {
                let ids: Vec<_> = segments.iter().map(|m| m.id()).collect();
                w.merge(&ids).wait().map_err(tantivy_err)?;
            }
            // Merges run in background threads: wait, so that no file is still being written
            // when its bytes are copied into the store.
            w.wait_merging_threads().map_err(tantivy_err)?;
            // Tantivy deletes a merged-away segment's files only when no merge in flight still
            // lists it, and the merges its policy started during a large write often do: with
            // every merge done, delete every file of a segment the index no longer lists, so
            // that none is saved, held or loaded again.
            let mut living = self
                .index
                .load_metas()
                .map_err(tantivy_err)?
                .list_segment_files();
            living.insert(PathBuf::from("meta.json"));
            self.index
                .directory_mut()
                .garbage_collect(|| living)
                .map_err(tantivy_err)?;
        }
        let changes =
            std::mem::take(&mut *self.dir.changes.lock().expect("lexical directory lock"));
        let mut written = Vec::with_capacity(changes.written.len());
        for path in changes.written {
            match self.dir.open_read(&path) {
                Ok(file) => written.push((path.to_string_lossy().into_owned(), file)),
                Err(OpenReadError::FileDoesNotExist(_)) => {}
                Err(e) => return Err(tantivy_err(e)),
            }
        }
        let deleted = changes
            .deleted
            .into_iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        Ok((written, deleted))
    }

    /// The analysed terms of `text` (the index's own English stemming analyser), distinct.
    pub fn terms(&self, text: &str) -> Vec<String> {
        terms(text)
    }

    /// BM25 IDF of each analysed term of `text` over the committed chunks (SPEC §7 evidence).
    pub fn term_idfs(&self, text: &str) -> Result<Vec<(String, f64)>> {
        let searcher = self.reader.searcher();
        let n = searcher.num_docs();
        self.terms(text)
            .into_iter()
            .map(|t| {
                let df = searcher
                    .doc_freq(&Term::from_field_text(self.body, &t))
                    .map_err(damaged)?;
                Ok((t, crate::evidence::idf(df, n)))
            })
            .collect()
    }

    /// BM25 top `k` chunk ids for a free-text query. The user's text is never query syntax
    /// (SPEC §11): it is analysed into words, and the query is the OR of those words over the
    /// text field, so `chunk:3`, quotes, `AND`, `*` or `-x` are searched as words or not at all
    /// and never reach another field or raise.
    pub fn search(&self, query: &str, k: usize) -> Result<Vec<(i64, f32)>> {
        let terms = query_terms(query);
        if k == 0 || terms.is_empty() {
            return Ok(Vec::new());
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|t| {
                let term = Term::from_field_text(self.body, t);
                let q: Box<dyn Query> =
                    Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs));
                (Occur::Should, q)
            })
            .collect();
        let searcher = self.reader.searcher();
        let top = searcher
            .search(
                &BooleanQuery::new(clauses),
                &TopDocs::with_limit(k).order_by_score(),
            )
            .map_err(damaged)?;
        // A segment's column of chunk ids is opened once per query, not once per hit.
        let mut columns = rustc_hash::FxHashMap::default();
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let column = match columns.entry(addr.segment_ord) {
                std::collections::hash_map::Entry::Occupied(open) => open.into_mut(),
                std::collections::hash_map::Entry::Vacant(slot) => slot.insert(
                    searcher
                        .segment_reader(addr.segment_ord)
                        .fast_fields()
                        .u64("chunk")
                        .map_err(damaged)?,
                ),
            };
            if let Some(id) = column.first(addr.doc_id) {
                out.push((id as i64, score));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn bm25_rank_scores_as_the_index_does() {
        let texts = [
            "The gateway returns HTTP 429 when rate limited; the rate limit is 100 rps",
            "Backups run nightly with WAL archiving",
            "Rate limits per tenant: the gateway allows bursts",
            "A very long note about the gateway, the gateway and the gateway again, with \
             many other words that make it longer than the rest of the notes here",
            "rate",
        ];
        let mut idx = LexicalIndex::open(Vec::new()).unwrap();
        for (i, t) in texts.iter().enumerate() {
            idx.add(i as i64 + 1, t).unwrap();
        }
        idx.commit().unwrap();
        let tokens: u64 = texts.iter().map(|t| analyse(t).len() as u64).sum();
        let pool: Vec<(i64, &str)> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| (i as i64 + 1, *t))
            .collect();
        for query in [
            "gateway rate limit",
            "nightly backups",
            "429",
            "rate",
            "nothing here",
        ] {
            let df = |t: &str| {
                texts
                    .iter()
                    .filter(|x| analyse(x).iter().any(|y| y == t))
                    .count() as u64
            };
            let ours = bm25_rank(query, df, texts.len() as u64, tokens, &pool);
            let theirs = idx.search(query, 10).unwrap();
            assert_eq!(ours.len(), theirs.len(), "{query}");
            for ((a, sa), (b, sb)) in ours.iter().zip(&theirs) {
                assert_eq!(a, b, "{query}");
                assert!((sa - sb).abs() < 1e-5, "{query}: {sa} vs {sb}");
            }
        }
    }

    #[test]
    fn a_texts_bm25_vector_holds_what_the_index_scores_it_for_each_term() {
        let texts = [
            "Retries: the client retries twice on timeouts",
            "Backups run nightly with WAL archiving",
            "The client gives up after one retry",
        ];
        let mut idx = LexicalIndex::open(Vec::new()).unwrap();
        for (i, t) in texts.iter().enumerate() {
            idx.add(i as i64, t).unwrap();
        }
        idx.commit().unwrap();
        let vectors = bm25_vectors(&texts);
        assert_eq!(vectors.len(), texts.len());
        for (i, vector) in vectors.iter().enumerate() {
            for (term, weight, _) in vector {
                let scored = idx.search(term, 10).unwrap();
                let theirs = scored.iter().find(|(c, _)| *c == i as i64).unwrap().1;
                assert!(
                    (weight - theirs).abs() < 1e-5,
                    "{term} in {i}: {weight} vs {theirs}"
                );
            }
        }
        // Terms are stems, each named by the first word it was read from.
        let first: Vec<(&str, &str)> = vectors[0]
            .iter()
            .map(|(t, _, w)| (t.as_str(), w.as_str()))
            .take(2)
            .collect();
        assert_eq!(first, [("retri", "Retries"), ("the", "the")]);
    }

    #[test]
    fn the_binary_tsvector_holds_each_lexeme_once_in_byte_order_with_its_positions() {
        let tokens = analyse("Backups back up; backup O'Neil");
        let bytes = tsvector_binary(&tokens);
        let mut at = 4;
        let mut read = Vec::new();
        for _ in 0..u32::from_be_bytes(bytes[..4].try_into().unwrap()) {
            let end = at + bytes[at..].iter().position(|&b| b == 0).unwrap();
            let lexeme = std::str::from_utf8(&bytes[at..end]).unwrap().to_string();
            let n = u16::from_be_bytes([bytes[end + 1], bytes[end + 2]]) as usize;
            let positions: Vec<u16> = (0..n)
                .map(|i| u16::from_be_bytes([bytes[end + 3 + 2 * i], bytes[end + 4 + 2 * i]]))
                .collect();
            read.push((lexeme, positions));
            at = end + 3 + 2 * n;
        }
        assert_eq!(at, bytes.len());
        let expected = [
            ("back", vec![2]),
            ("backup", vec![1, 4]),
            ("neil", vec![6]),
            ("o", vec![5]),
            ("up", vec![3]),
        ];
        let expected: Vec<(String, Vec<u16>)> = expected
            .into_iter()
            .map(|(l, p)| (l.to_string(), p))
            .collect();
        assert_eq!(read, expected);
        // At most 255 positions per lexeme, as PostgreSQL keeps them.
        let many = tsvector_binary(&analyse(&"word ".repeat(300)));
        assert_eq!(u16::from_be_bytes([many[9], many[10]]), 255);
        assert_eq!(many.len(), 4 + 5 + 2 + 2 * 255);
    }

    #[test]
    fn add_search_delete_persist_reload() {
        let mut idx = LexicalIndex::open(Vec::new()).unwrap();
        idx.add(1, "The gateway returns HTTP 429 when rate limited")
            .unwrap();
        idx.add(2, "Backups run nightly with WAL archiving")
            .unwrap();
        let (written, _) = idx.commit().unwrap();
        assert!(written.iter().any(|(n, _)| n == "meta.json"));
        assert_eq!(
            idx.search("429", 5)
                .unwrap()
                .iter()
                .map(|p| p.0)
                .collect::<Vec<_>>(),
            vec![1]
        );
        // Stemming: "backup" matches "Backups".
        assert_eq!(idx.search("backup", 5).unwrap()[0].0, 2);

        let files: Vec<(String, Vec<u8>)> = written
            .into_iter()
            .map(|(n, b)| (n, b.read_bytes().unwrap().to_vec()))
            .collect();
        let mut again = LexicalIndex::open(files.clone()).unwrap();
        assert_eq!(again.num_docs(), 2);
        again.delete(1).unwrap();
        let (w2, d2) = again.commit().unwrap();
        assert!(again.search("429", 5).unwrap().is_empty());
        // Apply the changes to the persisted set and reload: the deletion survives.
        let mut store: std::collections::BTreeMap<String, Vec<u8>> = files.into_iter().collect();
        for name in d2 {
            store.remove(&name);
        }
        store.extend(
            w2.into_iter()
                .map(|(n, b)| (n, b.read_bytes().unwrap().to_vec())),
        );
        let reloaded = LexicalIndex::open(store.into_iter().collect()).unwrap();
        assert_eq!(reloaded.num_docs(), 1);
        assert!(reloaded.search("429", 5).unwrap().is_empty());
        assert_eq!(reloaded.search("nightly", 5).unwrap()[0].0, 2);
    }

    #[test]
    fn a_reopened_index_merges_away_the_files_it_was_opened_with() {
        // Each commit is a segment; enough of them make Tantivy merge, deleting segment files
        // the index was opened with (held as read) and writing new ones.
        let mut saved: std::collections::BTreeMap<String, Vec<u8>> = Default::default();
        let mut commit = |idx: &mut LexicalIndex| {
            let (written, deleted) = idx.commit().unwrap();
            // A segment written and merged away between two commits is listed as deleted
            // without ever having been saved.
            for name in deleted {
                saved.remove(&name);
            }
            saved.extend(
                written
                    .into_iter()
                    .map(|(n, b)| (n, b.read_bytes().unwrap().to_vec())),
            );
            saved.clone()
        };
        let mut idx = LexicalIndex::open(Vec::new()).unwrap();
        for i in 0..10 {
            idx.add(i, &format!("first batch note {i} word{i}"))
                .unwrap();
            commit(&mut idx);
        }
        let before = commit(&mut idx);
        let mut again = LexicalIndex::open(before.clone().into_iter().collect()).unwrap();
        assert_eq!(again.num_docs(), 10);
        for i in 10..30 {
            again
                .add(i, &format!("second batch note {i} word{i}"))
                .unwrap();
            commit(&mut again);
        }
        let after = commit(&mut again);
        assert!(
            before
                .keys()
                .any(|name| name != "meta.json" && !after.contains_key(name)),
            "no segment the index was opened with was merged away"
        );
        let reloaded = LexicalIndex::open(after.into_iter().collect()).unwrap();
        assert_eq!(reloaded.num_docs(), 30);
        for i in [0, 9, 10, 29] {
            assert_eq!(reloaded.search(&format!("word{i}"), 3).unwrap()[0].0, i);
        }
    }

    #[test]
    fn a_commit_saves_only_the_files_of_the_segments_its_index_lists() {
        // A write larger than the writer's memory flushes several segments, which Tantivy's
        // policy starts merging as they come and the commit then merges into one: the files
        // of every segment merged away are deleted, never saved beside the one that holds
        // them all (a first index of a million chunks saved and loaded twice its size so).
        let mut idx = LexicalIndex::open(Vec::new()).unwrap();
        for i in 0..60_000u64 {
            let words: Vec<String> = (0..24)
                .map(|j| format!("w{}", (i * 31 + j * 7) % 9973))
                .collect();
            idx.add(i as i64, &words.join(" ")).unwrap();
        }
        let (written, deleted) = idx.commit().unwrap();
        let segment = |name: &String| name.split('.').next().unwrap_or_default().to_string();
        let flushed: BTreeSet<String> = written
            .iter()
            .map(|(n, _)| n)
            .chain(&deleted)
            .filter(|n| n.len() > 32)
            .map(segment)
            .collect();
        assert!(
            flushed.len() > 1,
            "one segment was flushed: the test proves nothing"
        );
        let live: Vec<String> = idx
            .index
            .searchable_segment_ids()
            .unwrap()
            .iter()
            .map(|id| id.uuid_string())
            .collect();
        assert_eq!(live.len(), 1);
        for (name, _) in &written {
            if name != "meta.json" && name != ".managed.json" {
                assert!(
                    live.iter().any(|id| name.starts_with(id.as_str())),
                    "{name} is dead"
                );
            }
        }
        assert_eq!(idx.num_docs(), 60_000);
    }

    #[test]
    fn a_large_commit_among_small_ones_merges_without_racing_tantivys_own_merges() {
        // Small commits pile up segments until Tantivy's merge policy merges them in the
        // background; a commit that adds a large share also merges every segment itself. When
        // one commit does both, the two must not claim the same segments ("the segments that
        // were merged could not be found"): notes indexed one run at a time failed so.
        for attempt in 0..20 {
            let mut idx = LexicalIndex::open(Vec::new()).unwrap();
            let mut next = 0i64;
            // One segment of 2,000, six of one document each, then a commit of 700: a large
            // share (700 × 4 ≥ 2,706) that makes eight small segments at once.
            for batch in [2000, 1, 1, 1, 1, 1, 1, 700] {
                for _ in 0..batch {
                    idx.add(next, &format!("note {next} word{next} shared text"))
                        .unwrap();
                    next += 1;
                }
                idx.commit()
                    .unwrap_or_else(|e| panic!("attempt {attempt}, batch {batch}: {e}"));
            }
            assert_eq!(idx.num_docs(), next as u64);
            assert_eq!(idx.search("word7", 3).unwrap()[0].0, 7);
        }
    }

    /// The indexing of the body field in `idx`'s schema.
    fn body_option(idx: &LexicalIndex) -> IndexRecordOption {
        match idx.index.schema().get_field_entry(idx.body).field_type() {
            tantivy::schema::FieldType::Str(options) => options
                .get_indexing_options()
                .expect("the body is indexed")
                .index_option(),
            other => panic!("the body is {other:?}"),
        }
    }

    #[test]
    fn an_index_saved_with_positions_reads_and_takes_writes_as_before() {
        assert_eq!(
            body_option(&LexicalIndex::open(Vec::new()).unwrap()),
            IndexRecordOption::WithFreqs
        );
        // The schema indexes were created with before positions were dropped.
        let mut sb = Schema::builder();
        sb.add_u64_field("chunk", INDEXED | FAST);
        sb.add_text_field(
            "body",
            TextOptions::default().set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer("en_stem")
                    .set_index_option(IndexRecordOption::WithFreqsAndPositions),
            ),
        );
        let dir = TrackedDir::holding(Vec::new());
        let index =
            Index::create(dir.clone(), sb.build(), tantivy::IndexSettings::default()).unwrap();
        let mut old = LexicalIndex::reading(index, dir).unwrap();
        for i in 0..10 {
            old.add(i, &format!("old note {i} word{i}")).unwrap();
        }
        let (saved, _) = old.commit().unwrap();
        let saved = saved
            .into_iter()
            .map(|(n, b)| (n, b.read_bytes().unwrap().to_vec()))
            .collect();
        let mut idx = LexicalIndex::open(saved).unwrap();
        assert_eq!(body_option(&idx), IndexRecordOption::WithFreqsAndPositions);
        assert_eq!(idx.search("word3", 3).unwrap()[0].0, 3);
        for i in 10..20 {
            idx.add(i, &format!("new note {i} word{i}")).unwrap();
        }
        idx.commit().unwrap();
        assert_eq!(idx.num_docs(), 20);
        for i in [3, 15] {
            assert_eq!(idx.search(&format!("word{i}"), 3).unwrap()[0].0, i);
        }
    }

    #[test]
    fn a_write_of_a_large_share_of_the_index_leaves_one_segment() {
        let mut saved: std::collections::BTreeMap<String, Vec<u8>> = Default::default();
        let mut idx = LexicalIndex::open(Vec::new()).unwrap();
        let mut write = |idx: &mut LexicalIndex, ids: std::ops::Range<i64>| {
            for i in ids {
                idx.add(i, &format!("note {i} word{i}")).unwrap();
            }
            let (written, deleted) = idx.commit().unwrap();
            for name in deleted {
                saved.remove(&name);
            }
            saved.extend(
                written
                    .into_iter()
                    .map(|(n, b)| (n, b.read_bytes().unwrap().to_vec())),
            );
            idx.index.searchable_segment_ids().unwrap().len()
        };
        assert_eq!(write(&mut idx, 0..12), 1);
        // 2 of 14 documents: below a quarter, the new segment stays apart.
        assert_eq!(write(&mut idx, 12..14), 2);
        // 6 of 20: the write merges the index into one segment.
        assert_eq!(write(&mut idx, 14..20), 1);
        let reopened = LexicalIndex::open(saved.into_iter().collect()).unwrap();
        assert_eq!(reopened.index.searchable_segment_ids().unwrap().len(), 1);
        assert_eq!(reopened.num_docs(), 20);
        for i in [0, 13, 19] {
            assert_eq!(reopened.search(&format!("word{i}"), 3).unwrap()[0].0, i);
        }
    }

    #[test]
    fn lenient_queries_never_fail() {
        let mut idx = LexicalIndex::open(Vec::new()).unwrap();
        idx.add(7, "ticket PROJ-4312 about quotas").unwrap();
        idx.commit().unwrap();
        for q in ["PROJ-4312", "\"unclosed", "AND OR", "field:x", "((", ""] {
            let _ = idx.search(q, 3).unwrap();
        }
        assert_eq!(idx.search("PROJ-4312", 3).unwrap()[0].0, 7);
        // Syntax is words: a field name finds nothing by itself, `chunk:7` does not address
        // the internal chunk field, and operators are ignored words.
        assert!(idx.search("chunk:7", 3).unwrap().is_empty());
        assert_eq!(idx.search("quotas:* AND -ticket", 3).unwrap()[0].0, 7);
        assert_eq!(idx.search(&"quotas ".repeat(3000), 3).unwrap()[0].0, 7);
        assert!(idx.search("!!! ?? 🙂", 3).unwrap().is_empty());
    }
}
