//! Explain over the file store (SPEC §8.2): the document's best chunk and ranks in both legs
//! from the search cache and the lexical index, and its stored declarations.
//!
//! Owns: reading what explanation.rs needs for one document. Does not own: the explanation
//! itself (explanation.rs), the search (search.rs) or loading the cache (cache.rs).

use rusqlite::OptionalExtension;

use crate::errors::Result;
use crate::explanation::{
    self, Explanation, IgnoredDeclaration, RetiredColumns, RetiredView, EXPLAIN_DEPTH,
};
use crate::trust::{Candidate, Policy};

use super::Store;

impl Store {
    /// Explain one document's verdict for `query` (SPEC §8.2). `file` is a stored path or an
    /// absolute path under an indexed root. Returns None when no document matches. Every
    /// statement reads the same commit, as a search's do (`in_read`).
    pub fn explain(
        &mut self,
        file: &str,
        query: &[f32],
        text: &str,
        policy: &Policy,
    ) -> Result<Option<Explanation>> {
        self.in_read(|store| store.explain_read(file, query, text, policy))
    }

    fn explain_read(
        &mut self,
        file: &str,
        query: &[f32],
        text: &str,
        policy: &Policy,
    ) -> Result<Option<Explanation>> {
        self.ensure_cache()?;
        self.lexical_mut()?;
        let lexical = self
            .lexical
            .as_ref()
            .expect("loaded above")
            .index
            .search(text, EXPLAIN_DEPTH)?;
        let cache = self.cache.as_ref().expect("cache loaded above");
        let Some(d) = cache.corpus.locate(file) else {
            return Ok(None);
        };
        let ev = self.query_evidence(text)?;
        // The best chunk by cosine among those holding the identifiers the query asks for, if
        // any does, as search judges a lookup (judgment::shortlist).
        let best_chunk = if query.len() == cache.dense.dim() {
            let scores = cache
                .rows_of(d)
                .map(|row| Ok((cache.row_chunk[row], self.cached_score(cache, row, query)?)))
                .collect::<Result<Vec<(i64, f32)>>>()?;
            let scored = || scores.iter().copied();
            let holding = scored()
                .filter(|&(chunk, _)| {
                    ev.identifiers().is_empty()
                        || self.candidate(&ev, d, chunk, 0.0).identifiers_held
                })
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
            holding.or_else(|| scored().max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0))))
        } else {
            None
        };
        let mut cand = match best_chunk {
            Some((chunk, score)) => self.candidate(&ev, d, chunk, score),
            None => Candidate::dense(d, -1, f32::NEG_INFINITY),
        };
        // What the question asks for is the document's to hold, in any of its chunks.
        if cand.lacks.is_some()
            && cache.rows_of(d).any(|row| {
                let chunk = cache.row_chunk[row];
                self.candidate(&ev, d, chunk, 0.0).lacks.is_none()
            })
        {
            cand.lacks = None;
        }
        let mut e = explanation::explain(&cache.corpus, d, best_chunk, &cand, &ev, policy);
        e.dense_rank = self
            .cached_top(cache, query, EXPLAIN_DEPTH)?
            .iter()
            .position(|&(row, _)| cache.row_doc[row] == d)
            .map(|i| i + 1);
        e.lexical_rank = lexical
            .iter()
            .position(|(c, _)| cache.row_of(*c).is_some_and(|r| cache.row_doc[r] == d))
            .map(|i| i + 1);
        let retired_in_force = cache.corpus.windows[d].retired;
        (e.retired, e.ignored) = self.declarations_of(cache.corpus.doc_ids[d], retired_in_force)?;
        Ok(Some(e))
    }

    /// A document's retirement (when in force) and its declarations not in force.
    fn declarations_of(
        &self,
        doc_id: i64,
        retired_in_force: bool,
    ) -> Result<(Option<RetiredView>, Vec<IgnoredDeclaration>)> {
        let setting = self.meta("vocabularies")?.unwrap_or_else(|| "all".into());
        let mut stmt = self.conn.prepare_cached(
            "SELECT vocabulary, line, statement, overridden, standing FROM edges
             WHERE doc_id = ?1 ORDER BY id",
        )?;
        let edges = stmt
            .query_map([doc_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let retired: Option<RetiredColumns> = self
            .conn
            .query_row(
                "SELECT retired_state, retired_since, retired_vocabulary, retired_line,
                            retired_statement, retired_overridden
                     FROM documents WHERE id = ?1 AND retired_state IS NOT NULL",
                [doc_id],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                },
            )
            .optional()?;
        Ok(explanation::declarations_view(
            edges,
            retired,
            retired_in_force,
            &setting,
        ))
    }
}
