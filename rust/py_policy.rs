//! `_core.Policy`: what a query is judged under besides its hits (SPEC §5.5, §7), built once in
//! Python and handed to every judgment (the store's search and explain, a server backend's
//! corpus, the bare trust layer).
//!
//! Owns: the crossing of `trust::Policy`. Does not own: choosing the values (`recall.api` reads
//! them from the calibration in use) or what they mean (trust.rs).

use pyo3::prelude::*;

use crate::trust::Policy;

#[pyclass(name = "Policy", module = "recall._core", frozen)]
#[derive(Clone)]
pub struct PyPolicy {
    pub(crate) inner: Policy,
}

#[pymethods]
impl PyPolicy {
    /// `now_us` and `known_as_of_us`: microseconds since the epoch, UTC; `threshold` and
    /// `scale`: the calibration's boundary and logistic scale; `unverified`: no calibration,
    /// so no hit is `ok`; the weights: the calibration's relevance features.
    #[new]
    #[pyo3(signature = (*, now_us, threshold, scale, known_as_of_us=None, unverified=false,
        lexical_weight=0.0, identifier_weight=0.0))]
    fn new(
        now_us: i64,
        threshold: f64,
        scale: f64,
        known_as_of_us: Option<i64>,
        unverified: bool,
        lexical_weight: f64,
        identifier_weight: f64,
    ) -> Self {
        PyPolicy {
            inner: Policy {
                now_us,
                known_as_of_us,
                threshold,
                scale,
                unverified,
                lexical_weight,
                identifier_weight,
            },
        }
    }

    #[getter]
    fn now_us(&self) -> i64 {
        self.inner.now_us
    }

    #[getter]
    fn known_as_of_us(&self) -> Option<i64> {
        self.inner.known_as_of_us
    }

    #[getter]
    fn threshold(&self) -> f64 {
        self.inner.threshold
    }

    #[getter]
    fn scale(&self) -> f64 {
        self.inner.scale
    }

    #[getter]
    fn unverified(&self) -> bool {
        self.inner.unverified
    }

    #[getter]
    fn lexical_weight(&self) -> f64 {
        self.inner.lexical_weight
    }

    #[getter]
    fn identifier_weight(&self) -> f64 {
        self.inner.identifier_weight
    }

    fn __repr__(&self) -> String {
        let p = &self.inner;
        format!(
            "Policy(now_us={}, known_as_of_us={:?}, threshold={}, scale={}, unverified={}, \
             lexical_weight={}, identifier_weight={})",
            p.now_us,
            p.known_as_of_us,
            p.threshold,
            p.scale,
            p.unverified,
            p.lexical_weight,
            p.identifier_weight
        )
    }
}
