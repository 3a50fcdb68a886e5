//! `Postings`: the lexical leg of a store that keeps its chunks elsewhere (a PostgreSQL
//! namespace), over the copy a process holds of their analysed terms (`postings::Postings`).
//!
//! Owns: the Python face of it. Does not own: fetching the terms or knowing which chunks
//! changed (the Python side of the server backend).

use std::collections::HashMap;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::postings::Postings;

#[pyclass(module = "recall._core", name = "Postings")]
pub struct PyPostings {
    inner: Postings,
}

#[pymethods]
impl PyPostings {
    #[new]
    fn new() -> Self {
        PyPostings {
            inner: Postings::new(),
        }
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// The largest chunk id held, or 0.
    #[getter]
    fn last_id(&self) -> i64 {
        self.inner.last_id()
    }

    /// Add the chunks `ids` (ascending, each above every id held) with their token counts
    /// `lengths`; `vectors` holds their `tsvector`s as PostgreSQL sends them in binary, back
    /// to back in the same order. Nothing is added when a value cannot be read.
    fn extend(
        &mut self,
        py: Python<'_>,
        ids: Vec<i64>,
        lengths: Vec<u32>,
        vectors: &[u8],
    ) -> PyResult<()> {
        py.detach(|| self.inner.extend(&ids, &lengths, vectors))
            .map_err(|e| PyValueError::new_err(format!("Postings.extend: {}", e.0)))
    }

    /// Give back what the lists grew beyond what they hold; call once a long read is done.
    fn shrink(&mut self, py: Python<'_>) {
        py.detach(|| self.inner.shrink())
    }

    /// Drop the chunks `ids` (ids not held are passed over); returns how many were dropped.
    fn remove(&mut self, py: Python<'_>, ids: Vec<i64>) -> usize {
        py.detach(|| self.inner.remove(&ids))
    }

    /// The lexical leg's best `limit` chunks for `text` as (chunk id, BM25), best first, ties
    /// by chunk id: every chunk held that holds one of its terms, scored as the file store's
    /// index scores it, `term_dfs` giving each query term's document frequency among
    /// `chunk_count` chunks of `token_count` tokens.
    fn rank(
        &self,
        py: Python<'_>,
        text: &str,
        term_dfs: Vec<(String, u64)>,
        chunk_count: u64,
        token_count: u64,
        limit: usize,
    ) -> Vec<(i64, f64)> {
        let dfs: HashMap<String, u64> = term_dfs.into_iter().collect();
        let df = |t: &str| dfs.get(t).copied().unwrap_or(0);
        py.detach(|| self.inner.rank(text, df, chunk_count, token_count, limit))
            .into_iter()
            .map(|(c, s)| (c, f64::from(s)))
            .collect()
    }
}
