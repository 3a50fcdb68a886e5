//! A row's fine code: its components as signed bytes of one scale, what a search holds of a
//! model's row instead of its float32 vector (SPEC §4, §10).
//!
//! Owns: coding a row (`x ≈ scale × c`, `c` in −127..=127, `scale` the largest magnitude over
//! 127), the estimate of a query's cosine with a coded row, and the bound the estimate keeps
//! to: every component is off by at most half a scale, so the cosine is off by at most half a
//! scale times the query's L1 norm (and a float rounding allowance). A search ranks its
//! shortlist by these estimates and reads the float32 vector of every row whose bound reaches
//! the k-th exact score (dense.rs), so what it returns is the exact top k of the shortlist
//! with exact cosines. Does not own: where the code is kept (row_code.rs, store/codes.rs) or
//! reading vectors back (store/).

/// The largest code magnitude.
const TOP: f32 = 127.0;
/// Allowance for float rounding in the estimate and the exact dot product, per unit of the
/// product of the query's and the row's L2 norms (each sum of a few hundred products rounds
/// off by a few parts in ten million of that).
const ROUNDING: f32 = 1e-4;

/// Write the fine code of `row` into `out` (`row.len()` bytes); returns its scale. A row whose
/// components are not all finite numbers, or all zero, gets scale 0 and a zero code.
pub(crate) fn encode(row: &[f32], out: &mut [i8]) -> f32 {
    debug_assert_eq!(row.len(), out.len());
    let max = row.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if !(max.is_finite() && max > 0.0) || row.iter().any(|x| !x.is_finite()) {
        out.fill(0);
        return 0.0;
    }
    let scale = max / TOP;
    let inverse = TOP / max;
    for (c, &x) in out.iter_mut().zip(row) {
        *c = (x * inverse).round().clamp(-TOP, TOP) as i8;
    }
    scale
}

/// What a query brings to every estimate: its L1 and L2 norms.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Norms {
    l1: f32,
    l2: f32,
}

impl Norms {
    pub(crate) fn of(query: &[f32]) -> Norms {
        Norms {
            l1: query.iter().map(|x| x.abs()).sum(),
            l2: query.iter().map(|x| x * x).sum::<f32>().sqrt(),
        }
    }

    /// How far the exact cosine of a row of `scale` (over `dim` components) may lie from its
    /// estimate: half a scale per component, weighed by the query's magnitudes, and the
    /// rounding of both sums (the row's norm is at most `TOP × scale × √dim`). A row of scale
    /// 0 (all zero, or with values that are not finite numbers) says nothing of its vector:
    /// unbounded, so it is read back whenever it might place.
    pub(crate) fn bound(&self, scale: f32, dim: usize) -> f32 {
        if scale > 0.0 {
            0.5 * scale * self.l1 + ROUNDING * self.l2 * TOP * scale * (dim as f32).sqrt()
        } else {
            f32::INFINITY
        }
    }
}

/// The estimate of `query · row` from the row's fine code and scale.
#[inline]
pub(crate) fn estimate(query: &[f32], code: &[i8], scale: f32) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { dot_avx2(query, code) } * scale;
        }
    }
    dot_portable(query, code) * scale
}

#[inline(always)]
fn dot_portable(q: &[f32], c: &[i8]) -> f32 {
    crate::scan::dot_lanes(q, c, f32::from)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(q: &[f32], c: &[i8]) -> f32 {
    dot_portable(q, c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unit vectors with every component set, from a seed.
    fn unit_vectors(n: usize, dim: usize, seed: usize) -> Vec<Vec<f32>> {
        (0..n)
            .map(|i| {
                let v: Vec<f32> = (0..dim)
                    .map(|j| ((seed + i * 7919 + j * 104_729) as f32).sin())
                    .collect();
                let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt();
                v.iter().map(|a| a / norm).collect()
            })
            .collect()
    }

    #[test]
    fn every_estimate_lies_within_its_bound_of_the_exact_cosine() {
        for dim in [7, 64, 384, 768] {
            let rows = unit_vectors(300, dim, 11 + dim);
            let queries = unit_vectors(20, dim, 97 + dim);
            let mut code = vec![0i8; dim];
            for q in &queries {
                let norms = Norms::of(q);
                for row in &rows {
                    let scale = encode(row, &mut code);
                    let exact = crate::scan::dot_lanes(row, q, |y| y);
                    let off = (estimate(q, &code, scale) - exact).abs();
                    let bound = norms.bound(scale, dim);
                    assert!(off <= bound, "dim {dim}: off by {off}, bound {bound}");
                    // The bound is not slack for its own sake: within a few times the error.
                    assert!(bound < 0.05, "dim {dim}: bound {bound}");
                }
            }
        }
    }

    #[test]
    fn the_largest_component_is_coded_at_full_scale_and_damage_codes_to_nothing() {
        let mut code = vec![0i8; 4];
        let scale = encode(&[0.5, -1.0, 0.25, 0.0], &mut code);
        assert_eq!(code, [64, -127, 32, 0]);
        assert!((scale - 1.0 / 127.0).abs() < 1e-9);
        assert_eq!(encode(&[0.5, f32::NAN, 0.1, 0.2], &mut code), 0.0);
        assert_eq!(code, [0; 4]);
        assert_eq!(encode(&[0.0; 4], &mut code), 0.0);
        assert_eq!(estimate(&[1.0; 4], &code, 0.0), 0.0);
        // Such a row is read back whenever it might place: its vector decides.
        assert_eq!(Norms::of(&[1.0; 4]).bound(0.0, 4), f32::INFINITY);
    }

    #[test]
    fn the_vector_path_sums_as_the_portable_one() {
        let rows = unit_vectors(50, 384, 5);
        let mut code = vec![0i8; 384];
        for (row, q) in rows.iter().zip(rows.iter().rev()) {
            let scale = encode(row, &mut code);
            assert_eq!(
                estimate(q, &code, scale).to_bits(),
                (dot_portable(q, &code) * scale).to_bits()
            );
        }
    }
}
