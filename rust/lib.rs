//! `recall._core`: the PyO3 module. Declarations only: the work lives in the plain Rust modules
//! so they can be tested and benched without Python, and each Python-facing piece in its own
//! `py_*` module (the store, the corpus and vectors of a server backend, hits, errors, free
//! functions).

pub use recall_judgment::{answer, corpus, evidence, explanation, fusion, graph, shortlist, trust};

pub mod dense;
pub mod errors;
mod fine;
pub mod hashing;
pub mod judgment;
pub mod lexical;
mod lexical_dir;
pub mod lists;
pub mod memory;
pub mod postings;
mod py_corpus;
mod py_documents;
mod py_errors;
mod py_functions;
mod py_hits;
mod py_policy;
mod py_postings;
mod py_store;
mod py_vectors;
pub mod row_code;
mod scan;
mod signs;
mod sliced;
pub mod store;
pub mod triggers;

use pyo3::prelude::*;

use py_errors::{
    EmbedderMismatchError, RecallError, StoreDamagedError, StoreError, StoreLockedError,
};
use py_functions::{
    hashing_embed, identifiers, judge, may_declare, resolution_key, resolve_references, rrf,
    trigger_offsets,
};
use py_store::PyStore;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("SCHEMA_VERSION", store::SCHEMA_VERSION)?;
    m.add("EXPLAIN_DEPTH", explanation::EXPLAIN_DEPTH)?;
    m.add("RecallError", py.get_type::<RecallError>())?;
    m.add("StoreError", py.get_type::<StoreError>())?;
    m.add("StoreLockedError", py.get_type::<StoreLockedError>())?;
    m.add("StoreDamagedError", py.get_type::<StoreDamagedError>())?;
    m.add(
        "EmbedderMismatchError",
        py.get_type::<EmbedderMismatchError>(),
    )?;
    m.add_class::<PyStore>()?;
    m.add_class::<py_policy::PyPolicy>()?;
    m.add_function(wrap_pyfunction!(hashing_embed, m)?)?;
    m.add_function(wrap_pyfunction!(resolution_key, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_references, m)?)?;
    m.add_function(wrap_pyfunction!(may_declare, m)?)?;
    m.add_function(wrap_pyfunction!(trigger_offsets, m)?)?;
    m.add_function(wrap_pyfunction!(identifiers, m)?)?;
    m.add_function(wrap_pyfunction!(judge, m)?)?;
    m.add_class::<py_corpus::PyCorpus>()?;
    m.add_class::<py_documents::PyDocuments>()?;
    m.add_class::<py_vectors::PyVectors>()?;
    m.add_class::<py_postings::PyPostings>()?;
    m.add_function(wrap_pyfunction!(py_corpus::lexical_terms, m)?)?;
    m.add_function(wrap_pyfunction!(py_corpus::bm25_vectors, m)?)?;
    m.add_function(wrap_pyfunction!(py_corpus::lexical_row, m)?)?;
    m.add_function(wrap_pyfunction!(py_corpus::lexical_body, m)?)?;
    m.add_function(wrap_pyfunction!(py_corpus::relevance, m)?)?;
    m.add_function(wrap_pyfunction!(py_corpus::dense_order, m)?)?;
    m.add_function(wrap_pyfunction!(rrf, m)?)?;
    Ok(())
}
