//! The dense leg's lists: an inverted file over a model's rows, so that a query over many rows
//! cuts only the rows of the lists nearest it.
//!
//! Owns: the centroids (spherical k-means over a sample of the rows), each row's list, the rows
//! laid out list by list (`Layout`: the sign words are held in that order, so that a list is
//! one run of them) and which lists a query reads: those whose centroid is nearest it, best
//! first, until they hold `share` of the listed rows, and always every row in no list (rows
//! written since the lists were last kept up). Does not own: the cut and the code pass over
//! what a query reads (signs.rs, dense.rs) or keeping the lists in the store (store/lists.rs).

use crate::scan::{cores, dot, fan_out};

/// A row in no list: every query reads it.
pub const UNLISTED: u32 = u32::MAX;
/// Rounds of k-means.
const ROUNDS: usize = 10;

/// The centroids (unit length, `dim` floats each) and each row's list.
#[derive(Debug, Clone, Default)]
pub struct Lists {
    dim: usize,
    centroids: Vec<f32>,
    of_row: Vec<u32>,
}

/// The rows list by list: position `p` holds row `order[p]`; list `l` is positions
/// `starts[l]..starts[l + 1]` and the rows in no list are the last run,
/// `starts[lists]..starts[lists + 1]`. Rows keep their order within a run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Layout {
    pub(crate) order: Vec<u32>,
    pub(crate) starts: Vec<usize>,
}

impl Lists {
    /// Lists of `centroids` (`dim` floats each) with each row's list; a list past the last one
    /// reads as `UNLISTED`.
    pub fn new(dim: usize, centroids: Vec<f32>, mut of_row: Vec<u32>) -> Lists {
        assert!(dim > 0 && centroids.len().is_multiple_of(dim));
        let lists = (centroids.len() / dim) as u32;
        of_row
            .iter_mut()
            .filter(|l| **l >= lists)
            .for_each(|l| *l = UNLISTED);
        Lists {
            dim,
            centroids,
            of_row,
        }
    }

    pub fn count(&self) -> usize {
        self.centroids.len().checked_div(self.dim).unwrap_or(0)
    }

    pub fn rows(&self) -> usize {
        self.of_row.len()
    }

    /// The rows in a list.
    pub fn listed(&self) -> usize {
        self.of_row.iter().filter(|&&l| l != UNLISTED).count()
    }

    /// `added` rows appended, in no list.
    pub fn push_unlisted(&mut self, added: usize) {
        self.of_row.resize(self.of_row.len() + added, UNLISTED);
    }

    /// Keep the rows whose `keep` is true, in their order.
    pub fn retain(&mut self, keep: &[bool]) {
        assert_eq!(keep.len(), self.of_row.len(), "one flag per row");
        let mut flags = keep.iter();
        self.of_row
            .retain(|_| *flags.next().expect("one flag per row"));
    }

    /// The rows laid out list by list (a counting sort: rows keep their order in a list).
    pub(crate) fn layout(&self) -> Layout {
        let lists = self.count();
        let slot = |l: u32| if l == UNLISTED { lists } else { l as usize };
        let mut starts = vec![0usize; lists + 2];
        for &l in &self.of_row {
            starts[slot(l) + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut order = vec![0u32; self.of_row.len()];
        for (row, &l) in self.of_row.iter().enumerate() {
            order[next[slot(l)]] = row as u32;
            next[slot(l)] += 1;
        }
        Layout { order, starts }
    }

    /// The runs of `layout` a query reads, in position order: the lists whose centroids score
    /// best against `query` until they hold at least `share` of the listed rows, and the rows in
    /// no list.
    pub(crate) fn chosen(&self, layout: &Layout, query: &[f32], share: f64) -> Vec<(usize, usize)> {
        let lists = self.count();
        let mut scored: Vec<(usize, f32)> = self
            .centroids
            .chunks_exact(self.dim)
            .map(|c| dot(c, query))
            .enumerate()
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let want = (layout.starts[lists] as f64 * share).ceil() as usize;
        let mut runs = Vec::new();
        let mut held = 0;
        for (l, _) in scored {
            if held >= want {
                break;
            }
            let (lo, hi) = (layout.starts[l], layout.starts[l + 1]);
            if hi > lo {
                runs.push((lo, hi));
                held += hi - lo;
            }
        }
        let (lo, hi) = (layout.starts[lists], layout.starts[lists + 1]);
        if hi > lo {
            runs.push((lo, hi));
        }
        runs.sort_unstable();
        runs
    }
}

/// `lists` centroids of the unit rows `sample` (`dim` floats each) by spherical k-means: the
/// first centroids are drawn k-means++ style (each next row with odds growing with how far it
/// lies from every centroid drawn, from a fixed seed), and each round moves every centroid to
/// the mean direction of the rows nearest it (a list left empty keeps its centroid).
pub fn train(sample: &[f32], dim: usize, lists: usize) -> Vec<f32> {
    let rows = sample.len() / dim;
    let lists = lists.min(rows);
    if lists == 0 {
        return Vec::new();
    }
    let mut next = {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        }
    };
    let mut centroids: Vec<f32> = sample[..dim].to_vec();
    let mut far: Vec<f64> = vec![f64::INFINITY; rows];
    for _ in 1..lists {
        let newest = &centroids[centroids.len() - dim..];
        for (f, row) in far.iter_mut().zip(sample.chunks_exact(dim)) {
            *f = f.min(f64::from(1.0 - dot(newest, row)).max(0.0));
        }
        let total: f64 = far.iter().map(|f| f * f).sum();
        let mut at = next() * total;
        let mut pick = rows - 1;
        for (r, f) in far.iter().enumerate() {
            at -= f * f;
            if at < 0.0 {
                pick = r;
                break;
            }
        }
        centroids.extend_from_slice(&sample[pick * dim..][..dim]);
    }
    for _ in 0..ROUNDS {
        let nearest = nearest(&centroids, dim, sample);
        let mut sums = vec![0f64; lists * dim];
        for (row, &l) in sample.chunks_exact(dim).zip(&nearest) {
            let sum = &mut sums[l as usize * dim..][..dim];
            sum.iter_mut()
                .zip(row)
                .for_each(|(s, &x)| *s += f64::from(x));
        }
        for (c, sum) in centroids.chunks_exact_mut(dim).zip(sums.chunks_exact(dim)) {
            let norm = sum.iter().map(|s| s * s).sum::<f64>().sqrt();
            if norm > 0.0 {
                c.iter_mut()
                    .zip(sum)
                    .for_each(|(c, s)| *c = (s / norm) as f32);
            }
        }
    }
    centroids
}

/// Each row's nearest centroid (the largest dot product; the first of equals), over the cores.
pub fn nearest(centroids: &[f32], dim: usize, rows: &[f32]) -> Vec<u32> {
    let n = rows.len() / dim;
    let parts = cores().min(n / 1024).max(1);
    let per = n.div_ceil(parts);
    fan_out(parts, |p| {
        let part = &rows[(p * per).min(n) * dim..((p + 1) * per).min(n) * dim];
        part.chunks_exact(dim)
            .map(|row| {
                let mut best = (0u32, f32::NEG_INFINITY);
                for (l, c) in centroids.chunks_exact(dim).enumerate() {
                    let s = dot(c, row);
                    if s > best.1 {
                        best = (l as u32, s);
                    }
                }
                best.0
            })
            .collect::<Vec<u32>>()
    })
    .concat()
}

/// `runs` (position ranges) cut into `parts` parts of about as many positions each.
pub(crate) fn split(runs: &[(usize, usize)], parts: usize) -> Vec<Vec<(usize, usize)>> {
    let total: usize = runs.iter().map(|(lo, hi)| hi - lo).sum();
    let per = total.div_ceil(parts.max(1)).max(1);
    let mut out = vec![Vec::new()];
    let mut room = per;
    for &(mut lo, hi) in runs {
        while lo < hi {
            if room == 0 {
                out.push(Vec::new());
                room = per;
            }
            let take = (hi - lo).min(room);
            out.last_mut()
                .expect("one part at least")
                .push((lo, lo + take));
            (lo, room) = (lo + take, room - take);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row_code::fixtures::unit_rows;

    /// Rows about `centres` directions: each a centre plus a little noise, unit length.
    fn clustered(rows: usize, dim: usize, centres: usize, seed: u64) -> Vec<f32> {
        let tops = unit_rows(centres, dim, seed);
        let noise = unit_rows(rows, dim, seed + 1);
        let mut out = Vec::with_capacity(rows * dim);
        for r in 0..rows {
            let top = &tops[(r * 7 % centres) * dim..][..dim];
            let v: Vec<f32> = top
                .iter()
                .zip(&noise[r * dim..][..dim])
                .map(|(t, n)| t + 0.4 * n)
                .collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            out.extend(v.iter().map(|x| x / norm));
        }
        out
    }

    #[test]
    fn k_means_finds_the_directions_the_rows_gather_about() {
        let (dim, centres) = (32, 8);
        let sample = clustered(4000, dim, centres, 3);
        let centroids = train(&sample, dim, centres);
        let lists = nearest(&centroids, dim, &sample);
        // Rows of one centre share one list, and each list holds one centre's rows.
        for c in 0..centres {
            let of: Vec<u32> = (0..4000)
                .filter(|r| r * 7 % centres == c)
                .map(|r| lists[r])
                .collect();
            assert!(
                of.iter().all(|&l| l == of[0]),
                "centre {c} split over lists"
            );
        }
        let mut used: Vec<u32> = lists.clone();
        used.sort_unstable();
        used.dedup();
        assert_eq!(used.len(), centres);
        for c in centroids.chunks_exact(dim) {
            let norm = c.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4);
        }
    }

    #[test]
    fn the_layout_holds_each_list_in_row_order_and_the_unlisted_rows_last() {
        let lists = Lists::new(2, vec![1.0, 0.0, 0.0, 1.0], vec![1, 0, UNLISTED, 1, 7, 0]);
        assert_eq!(lists.listed(), 4, "a list past the last reads as unlisted");
        let layout = lists.layout();
        assert_eq!(layout.order, vec![1, 5, 0, 3, 2, 4]);
        assert_eq!(layout.starts, vec![0, 2, 4, 6]);
    }

    #[test]
    fn a_query_reads_its_nearest_lists_up_to_the_share_and_every_unlisted_row() {
        // Four lists along the axes of the plane, ten rows each, and three rows in none.
        let centroids = vec![1.0, 0.0, 0.0, 1.0, -1.0, 0.0, 0.0, -1.0];
        let mut of_row: Vec<u32> = (0..40).map(|r| r % 4).collect();
        of_row.extend([UNLISTED; 3]);
        let lists = Lists::new(2, centroids, of_row);
        let layout = lists.layout();
        let runs = |q: [f32; 2], share| lists.chosen(&layout, &q, share);
        assert_eq!(runs([0.9, 0.1], 0.25), vec![(0, 10), (40, 43)]);
        assert_eq!(runs([0.9, 0.2], 0.26), vec![(0, 10), (10, 20), (40, 43)]);
        assert_eq!(runs([-0.1, -0.9], 0.5), vec![(20, 30), (30, 40), (40, 43)]);
        assert_eq!(runs([0.0, 1.0], 1.0).len(), 5);
    }

    #[test]
    fn rows_appended_are_unlisted_and_retained_rows_keep_their_lists() {
        let mut lists = Lists::new(1, vec![1.0, -1.0], vec![0, 1, 1, 0]);
        lists.push_unlisted(2);
        assert_eq!(lists.of_row, vec![0, 1, 1, 0, UNLISTED, UNLISTED]);
        lists.retain(&[true, false, true, false, true, false]);
        assert_eq!(lists.of_row, vec![0, 1, UNLISTED]);
    }

    #[test]
    fn split_parts_hold_about_as_many_positions_each() {
        let runs = [(0, 10), (20, 23), (30, 37)];
        assert_eq!(
            split(&runs, 2),
            vec![vec![(0, 10)], vec![(20, 23), (30, 37)]]
        );
        assert_eq!(
            split(&runs, 3),
            vec![
                vec![(0, 7)],
                vec![(7, 10), (20, 23), (30, 31)],
                vec![(31, 37)]
            ]
        );
        assert_eq!(split(&runs, 1), vec![runs.to_vec()]);
    }
}
