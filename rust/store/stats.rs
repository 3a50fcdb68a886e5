//! Read-only summaries of the store: freshness for every search and the full `stats` report.
//!
//! Owns: counting documents, chunks, vectors and edge resolutions, and the freshness values
//! kept in `meta`. Does not own: writing those meta values (write.rs).

use crate::errors::Result;

use super::{EmbedderInfo, Store, VEC_TABLE};
use crate::judgment::{Corpus, Tally};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    pub schema_version: i64,
    pub generation: i64,
    pub documents: i64,
    pub chunks: i64,
    pub vectors: i64,
    pub embedder: Option<EmbedderInfo>,
    pub newest_indexed_at: Option<String>,
    pub last_run_at: Option<String>,
    pub file_size_bytes: i64,
    pub metadata_errors: i64,
    pub chunk_churn: i64,
    /// SPEC §8.4: the `--vocabularies` setting in force.
    pub vocabularies: String,
    /// The declarations under that setting, counted as the trust layer reads them.
    pub declarations: Tally,
    /// Documents forgotten and not brought back.
    pub forgotten: i64,
}

/// What a search reads before it embeds (`Store::search_state`): `freshness`, `embedder` and
/// the calibration record of that embedder under the prefix asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchState {
    pub freshness: (i64, Option<String>, Option<String>, i64),
    pub embedder: Option<EmbedderInfo>,
    pub record: Option<String>,
}

impl Store {
    /// What a search reads before it embeds, as of one commit, with what the search of `text`
    /// starts with read ahead (`read_ahead`). The state is read again only when a commit has
    /// landed since it was last read (this connection's own writes or another's): a warm
    /// search otherwise runs a dozen statements for values that have not changed.
    pub fn search_state(&mut self, record_prefix: &str, text: Option<&str>) -> Result<SearchState> {
        self.in_read(|s| {
            if let Some(text) = text {
                s.read_ahead(text)?;
            }
            // `data_version` moves with every commit of another connection, `total_changes`
            // with every row this one writes; both stand still inside one read.
            let version: i64 = s
                .conn
                .prepare_cached("PRAGMA data_version")?
                .query_row([], |r| r.get(0))?;
            let seen = (version, s.conn.total_changes(), record_prefix.to_string());
            if let Some((at, state)) = s.state_read.as_ref() {
                if *at == seen {
                    return Ok(state.clone());
                }
            }
            let embedder = s.embedder()?;
            let record = match &embedder {
                Some(e) => s.meta(&format!("{record_prefix}{}", e.fingerprint))?,
                None => None,
            };
            let state = SearchState {
                freshness: s.freshness()?,
                embedder,
                record,
            };
            s.state_read = Some((seen, state.clone()));
            Ok(state)
        })
    }

    /// What every search needs to know about the store, without the full `stats` scan:
    /// (documents, newest `indexed_at`, last run, chunk churn).
    pub fn freshness(&self) -> Result<(i64, Option<String>, Option<String>, i64)> {
        // Kept in `meta` by every commit; a store last written before that counts once.
        let documents = self.meta("documents")?.and_then(|d| d.parse::<i64>().ok());
        let (documents, newest) = match documents {
            Some(n) => (n, self.meta("newest_indexed_at")?.filter(|t| !t.is_empty())),
            None => self.document_summary()?,
        };
        let churn = self
            .meta("chunk_churn")?
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        Ok((documents, newest, self.meta("last_run_at")?, churn))
    }

    /// (documents, newest indexed_at): a scan of the documents table.
    pub(super) fn document_summary(&self) -> Result<(i64, Option<String>)> {
        Ok(self
            .conn
            .query_row("SELECT count(*), max(indexed_at) FROM documents", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?)
    }

    pub fn stats(&self) -> Result<Stats> {
        let count = |sql: &str| -> Result<i64> { Ok(self.conn.query_row(sql, [], |r| r.get(0))?) };
        let embedder = self.embedder()?;
        let vectors = if embedder.is_some() {
            count(&format!("SELECT count(*) FROM {VEC_TABLE}"))?
        } else {
            0
        };
        let setting = self.meta("vocabularies")?.unwrap_or_else(|| "all".into());
        // SPEC §2.3, §2.5: each edge in force resolved exactly as the trust layer resolves it.
        let declarations = self.with_corpus(Corpus::tally)?;
        let page_size = count("PRAGMA page_size")?;
        let page_count = count("PRAGMA page_count")?;
        let wal_size = std::fs::metadata(format!("{}-wal", self.path))
            .map(|m| m.len())
            .unwrap_or(0);
        Ok(Stats {
            schema_version: self.schema_version()?,
            generation: self
                .meta("generation")?
                .and_then(|g| g.parse().ok())
                .unwrap_or(0),
            documents: count("SELECT count(*) FROM documents")?,
            chunks: count("SELECT count(*) FROM chunks")?,
            vectors,
            embedder,
            newest_indexed_at: self.conn.query_row(
                "SELECT max(indexed_at) FROM documents",
                [],
                |r| r.get(0),
            )?,
            last_run_at: self.meta("last_run_at")?,
            file_size_bytes: page_size * page_count + wal_size as i64,
            chunk_churn: self
                .meta("chunk_churn")?
                .and_then(|c| c.parse().ok())
                .unwrap_or(0),
            metadata_errors: count(
                "SELECT count(*) FROM documents WHERE metadata_error IS NOT NULL",
            )?,
            vocabularies: setting,
            declarations,
            forgotten: count("SELECT count(*) FROM forgotten WHERE undone_at IS NULL")?,
        })
    }
}
