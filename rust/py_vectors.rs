//! `Vectors`: the dense leg of a store that keeps its vectors elsewhere (a PostgreSQL namespace),
//! over the codes a process holds of them.
//!
//! Owns: the chunk ids of the rows, kept in ascending order as they are added and removed, so
//! the scan (`dense::DenseIndex`, the file store's own) breaks ties by chunk id as the file
//! store's does. A row its 3-bit code does not reproduce (a model's) is held as its fine code,
//! as the file store holds it: the few vectors a query rescores are read back through the
//! caller, checked against the checksum of the vector added. Does not own: fetching the vectors
//! or knowing which changed (the Python side of the server backend).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::dense::{DenseIndex, Unread};
use crate::py_corpus::le_f32s;
use crate::py_errors::StoreDamagedError;

#[pyclass(module = "recall._core", name = "Vectors")]
pub struct PyVectors {
    index: DenseIndex,
    /// The chunk id of each row, ascending (a row is found by its id's place).
    ids: Vec<i64>,
}

fn floats(bytes: &[u8], dim: usize, what: &str) -> PyResult<Vec<f32>> {
    if dim == 0 || !bytes.len().is_multiple_of(4 * dim) {
        return Err(PyValueError::new_err(format!(
            "{what}: {} bytes are not whole rows of {dim} float32",
            bytes.len()
        )));
    }
    Ok(le_f32s(bytes))
}

#[pymethods]
impl PyVectors {
    #[new]
    fn new(dim: usize) -> PyResult<Self> {
        if dim == 0 {
            return Err(PyValueError::new_err(
                "Vectors: the dimension must be positive",
            ));
        }
        Ok(PyVectors {
            index: DenseIndex::new(dim),
            ids: Vec::new(),
        })
    }

    #[getter]
    fn dim(&self) -> usize {
        self.index.dim()
    }

    fn __len__(&self) -> usize {
        self.ids.len()
    }

    fn __contains__(&self, id: i64) -> bool {
        self.ids.binary_search(&id).is_ok()
    }

    /// The largest chunk id held, or 0.
    #[getter]
    fn last_id(&self) -> i64 {
        self.ids.last().copied().unwrap_or(0)
    }

    /// Add the rows of `ids` (ascending, each above every id held); `data` holds their vectors,
    /// little-endian float32, one row per id.
    fn extend(&mut self, py: Python<'_>, ids: Vec<i64>, data: &[u8]) -> PyResult<()> {
        let rows = floats(data, self.index.dim(), "Vectors.extend")?;
        if rows.len() != ids.len() * self.index.dim() {
            return Err(PyValueError::new_err(format!(
                "Vectors.extend: {} ids but {} rows",
                ids.len(),
                rows.len() / self.index.dim()
            )));
        }
        let mut last = self.last_id();
        for &id in &ids {
            if id <= last {
                return Err(PyValueError::new_err(format!(
                    "Vectors.extend: chunk id {id} is not above {last}"
                )));
            }
            last = id;
        }
        py.detach(|| self.index.extend_fine(&rows));
        self.ids.extend(ids);
        Ok(())
    }

    /// Give back what the rows grew beyond what they hold; call once a long read is done.
    fn shrink(&mut self, py: Python<'_>) {
        py.detach(|| self.index.shrink_to_fit());
        self.ids.shrink_to_fit();
    }

    /// Drop the rows of `ids` (ids not held are passed over); returns how many were dropped.
    fn remove(&mut self, py: Python<'_>, ids: Vec<i64>) -> usize {
        let mut keep = vec![true; self.ids.len()];
        let mut dropped = 0;
        for id in ids {
            if let Ok(row) = self.ids.binary_search(&id) {
                if keep[row] {
                    keep[row] = false;
                    dropped += 1;
                }
            }
        }
        if dropped > 0 {
            py.detach(|| self.index.retain_rows(&keep));
            let mut row = 0;
            self.ids.retain(|_| {
                row += 1;
                keep[row - 1]
            });
        }
        dropped
    }

    /// Chunk `id`'s vector (little-endian float32) as the scan scores it, or None when it is not
    /// held: a chunk not there, or one held as its fine code (its vector is the namespace's).
    fn get<'py>(&self, py: Python<'py>, id: i64) -> Option<Bound<'py, PyBytes>> {
        let row = self.ids.binary_search(&id).ok()?;
        let held = self.index.held_row(row)?;
        let bytes: Vec<u8> = held.iter().flat_map(|x| x.to_le_bytes()).collect();
        Some(PyBytes::new(py, &bytes))
    }

    /// The `n` chunks nearest `query` (little-endian float32) as (id, cosine), best first, ties
    /// by chunk id: the file store's scan over these rows. `read(ids)` returns the vectors of
    /// the chunks `ids`, in that order, as little-endian float32 bytes: the rows held as fine
    /// codes whose estimate may place are read back for their exact cosine. A vector read back
    /// that is not the one added is damage (`StoreDamagedError`).
    fn nearest(
        &self,
        py: Python<'_>,
        query: &[u8],
        n: usize,
        read: Py<PyAny>,
    ) -> PyResult<Vec<(i64, f32)>> {
        let dim = self.index.dim();
        let q = floats(query, dim, "Vectors.nearest")?;
        if q.len() != dim {
            return Err(PyValueError::new_err(format!(
                "Vectors.nearest: the query has {} dimensions, the vectors {dim}",
                q.len()
            )));
        }
        let ids = &self.ids;
        let mut reader = |rows: &[usize]| -> PyResult<Vec<f32>> {
            let asked: Vec<i64> = rows.iter().map(|&r| ids[r]).collect();
            Python::attach(|py| {
                let got = read.call1(py, (asked,))?;
                let bytes = got.bind(py).cast::<PyBytes>()?;
                floats(bytes.as_bytes(), dim, "Vectors.nearest: the vectors read")
            })
        };
        let top = py
            .detach(|| self.index.top_k_reading(&q, n, &mut reader))
            .map_err(|e| match e {
                Unread::Read(e) => e,
                Unread::Sum(rows) => StoreDamagedError::new_err(format!(
                    "the vectors read back for chunks {:?} are not the ones this process \
                     loaded: the store changed under its generation; run 'recall doctor'",
                    rows.iter().map(|&r| self.ids[r]).collect::<Vec<_>>()
                )),
            })?;
        Ok(top.into_iter().map(|(row, s)| (self.ids[row], s)).collect())
    }
}
