//! A judged hit as Python receives it: one builder for every backend (the file store's search
//! and `Corpus.judge` for PostgreSQL), so the keys a hit carries and what they mean cannot drift
//! apart. `python/recall/_core.pyi` types them (`HitDict`, `JudgmentDict`).

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::fusion::{self, Fused};
use crate::store::HitRow;
use crate::trust::Judged;

/// Per-leg ranks and reciprocal-rank contributions of a retrieved chunk.
pub(crate) fn retrieval_dict<'py>(py: Python<'py>, f: &Fused) -> PyResult<Bound<'py, PyDict>> {
    let r = PyDict::new(py);
    r.set_item(intern!(py, "dense_rank"), f.dense_rank)?;
    r.set_item(intern!(py, "lexical_rank"), f.lexical_rank)?;
    r.set_item(intern!(py, "dense_rrf"), fusion::contribution(f.dense_rank))?;
    r.set_item(
        intern!(py, "lexical_rrf"),
        fusion::contribution(f.lexical_rank),
    )?;
    r.set_item(intern!(py, "fused"), f.score)?;
    Ok(r)
}

/// What a judged hit names, resolved for the user: documents as paths, the lack as words.
pub(crate) struct Named {
    pub superseded_by: Option<String>,
    pub promoted_from: Option<String>,
    /// The retired best match that displaced it.
    pub displaced_by: Option<String>,
    /// What the passage lacks of what the question asks for ("an amount of money", "2024").
    pub lacks: Option<String>,
    /// (vocabulary, line, statement) the reader could not act on.
    pub unread: Vec<(String, Option<i64>, String)>,
}

/// What the trust layer decided of a hit, with what it names resolved (`Named`): verdict,
/// confidence, cosine, evidence (lexical share, identifiers, `proven`), promotion, the retired
/// best match that displaced it, what the passage lacks, the statements left unread and the
/// retrieval legs (None for a fetched successor).
pub(crate) fn judgment<'py>(
    py: Python<'py>,
    j: &Judged,
    named: Named,
    retrieval: Option<&Fused>,
) -> PyResult<Bound<'py, PyDict>> {
    let Named {
        superseded_by,
        promoted_from,
        displaced_by,
        lacks,
        unread,
    } = named;
    let d = PyDict::new(py);
    d.set_item(intern!(py, "verdict"), j.verdict.as_str())?;
    d.set_item(intern!(py, "confidence"), j.confidence)?;
    d.set_item(intern!(py, "score"), f64::from(j.score))?;
    d.set_item(intern!(py, "superseded_by"), superseded_by)?;
    d.set_item(intern!(py, "promoted_from"), promoted_from)?;
    d.set_item(intern!(py, "displaced_by"), displaced_by)?;
    d.set_item(intern!(py, "lacks"), lacks)?;
    d.set_item(intern!(py, "promoted"), j.promoted)?;
    d.set_item(intern!(py, "fetched"), j.fetched)?;
    d.set_item(intern!(py, "lexical"), f64::from(j.lexical))?;
    d.set_item(intern!(py, "identifiers_held"), j.identifiers_held)?;
    d.set_item(intern!(py, "identifier_match"), j.identifier_match)?;
    d.set_item(intern!(py, "proven"), j.proven)?;
    d.set_item(intern!(py, "unread"), unread)?;
    let legs = retrieval.map(|f| retrieval_dict(py, f)).transpose()?;
    d.set_item(intern!(py, "retrieval"), legs)?;
    Ok(d)
}

/// A whole hit of the file store: where the passage is and what it says, and its judgment.
pub(crate) fn hit<'py>(py: Python<'py>, h: HitRow) -> PyResult<Bound<'py, PyDict>> {
    let named = Named {
        superseded_by: h.superseded_by,
        promoted_from: h.promoted_from,
        displaced_by: h.displaced_by,
        lacks: h.lacks,
        unread: h.unread,
    };
    let d = judgment(py, &h.judged, named, h.retrieval.as_ref())?;
    d.set_item(intern!(py, "source"), h.source)?;
    d.set_item(intern!(py, "path"), h.path)?;
    d.set_item(intern!(py, "title"), h.title)?;
    d.set_item(intern!(py, "ordinal"), h.ordinal)?;
    d.set_item(intern!(py, "text"), h.text)?;
    d.set_item(intern!(py, "heading_path"), h.heading_path)?;
    d.set_item(intern!(py, "line_start"), h.line_start)?;
    d.set_item(intern!(py, "line_end"), h.line_end)?;
    d.set_item(intern!(py, "indexed_at"), h.indexed_at)?;
    d.set_item(intern!(py, "first_indexed_at"), h.first_indexed_at)?;
    d.set_item(intern!(py, "valid_from"), h.valid_from)?;
    d.set_item(intern!(py, "valid_until"), h.valid_until)?;
    d.set_item(intern!(py, "retired"), h.retired)?;
    d.set_item(intern!(py, "stamp"), h.stamp)?;
    d.set_item(intern!(py, "file_state"), h.file_state)?;
    Ok(d)
}
