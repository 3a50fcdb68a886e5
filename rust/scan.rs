//! What every scan of the rows shares: the k best rows seen so far, the threads a scan fans
//! out over, and the dot product (in eight lanes). Used by the full code pass (dense.rs), the
//! sliced pass (sliced.rs), the checks of stored codes (row_code.rs) and the fine estimates
//! (fine.rs), and the lists (lists.rs); depends on none of them.

use std::cmp::Ordering;

/// The cores this process may use, read once (the standard library reads cgroup files on
/// every call, ~25 µs).
pub(crate) fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// `work(0) … work(parts - 1)` side by side, in order: part 0 on the calling thread, each
/// other on a scoped thread of its own (a query pays for one thread fewer than it has parts).
pub(crate) fn fan_out<T: Send>(parts: usize, work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let work = &work;
    std::thread::scope(|scope| {
        let others: Vec<_> = (1..parts).map(|p| scope.spawn(move || work(p))).collect();
        let mut out = Vec::with_capacity(parts.max(1));
        out.push(work(0));
        out.extend(
            others
                .into_iter()
                .map(|h| h.join().expect("a worker thread panicked")),
        );
        out
    })
}

/// The `k` largest scores seen, with their positions; earlier positions win ties. Scores
/// above the running k-th best are buffered and the buffer is cut back to `k` when full, so a
/// pass over N rows costs N comparisons plus a few linear selections, whatever k is.
pub(crate) struct TopK {
    k: usize,
    cap: usize,
    kept: Vec<(usize, f32)>,
    /// The k-th best score once `k` rows have been cut to; a later row must beat it.
    floor: f32,
}

/// Best score first; equal scores keep the earlier row first.
pub(crate) fn better(a: &(usize, f32), b: &(usize, f32)) -> Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

impl TopK {
    pub(crate) fn new(k: usize) -> TopK {
        let cap = (2 * k).max(1024);
        TopK {
            k,
            cap,
            kept: Vec::with_capacity(cap),
            floor: f32::NEG_INFINITY,
        }
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, i: usize, s: f32) {
        // Strictly better only: an equal score never displaces an earlier row.
        if self.k > 0 && (s > self.floor || self.floor == f32::NEG_INFINITY) {
            self.kept.push((i, s));
            if self.kept.len() == self.cap {
                self.cut();
            }
        }
    }

    fn cut(&mut self) {
        if self.kept.len() > self.k {
            self.kept.select_nth_unstable_by(self.k - 1, better);
            self.kept.truncate(self.k);
        }
        if self.kept.len() == self.k {
            self.floor = self
                .kept
                .iter()
                .map(|p| p.1)
                .min_by(|a, b| a.total_cmp(b))
                .unwrap_or(f32::NEG_INFINITY);
        }
    }

    /// The score a row must beat to be kept (minus infinity until `k` rows are held).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(crate) fn floor(&self) -> f32 {
        self.floor
    }

    pub(crate) fn finish(mut self, base: usize) -> Vec<(usize, f32)> {
        if self.k == 0 {
            return Vec::new();
        }
        self.cut();
        self.kept.sort_by(better);
        self.kept.iter_mut().for_each(|p| p.0 += base);
        self.kept
    }
}

/// Σ a·f(b) in eight lanes, each adding its own components in order: the same sum whatever
/// code the compiler makes of it (it does not fuse a multiply and an add unless asked).
#[inline(always)]
pub(crate) fn dot_lanes<T: Copy>(a: &[f32], b: &[T], f: impl Fn(T) -> f32) -> f32 {
    // Eight independent accumulators let the compiler keep a full vector register busy.
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, &y)| x * f(y))
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * f(y[i]);
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[inline]
fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    dot_lanes(a, b, |y| y)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    dot_portable(a, b)
}

/// The dot product, with AVX2 + FMA code generation when the CPU has it.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the features were detected at runtime just above.
            return unsafe { dot_avx2(a, b) };
        }
    }
    dot_portable(a, b)
}
