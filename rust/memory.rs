//! Asking the system for memory the way large, long-lived buffers want it.
//!
//! Owns: large buffers backed by huge pages where the system offers them on request, and handing
//! freed memory back. Does not own: what the buffers hold.

/// Buffers below this many bytes gain nothing from huge pages.
const HUGE_FROM: usize = 8 << 20;

/// An empty vector with room for `capacity` items, its memory backed by 2 MiB pages where the
/// system offers them on request (Linux `madvise`): filling a few hundred megabytes of codes
/// then takes a few hundred page faults instead of tens of thousands. Elsewhere, or when the
/// request is refused, a plain vector.
pub fn huge_vec<T>(capacity: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(capacity);
    let bytes = v.capacity() * std::mem::size_of::<T>();
    #[cfg(target_os = "linux")]
    if bytes >= HUGE_FROM {
        extern "C" {
            fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
        }
        const MADV_HUGEPAGE: i32 = 14;
        const PAGE: usize = 4096;
        let start = v.as_ptr() as usize;
        let aligned = start.next_multiple_of(PAGE);
        let len = (start + bytes).saturating_sub(aligned) / PAGE * PAGE;
        // SAFETY: the range lies inside this vector's own allocation, page-aligned; the advice
        // changes how pages are backed, never their contents. A refusal is harmless.
        unsafe {
            madvise(aligned as *mut std::ffi::c_void, len, MADV_HUGEPAGE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (bytes, HUGE_FROM);
    v
}

/// Hand the memory a load freed back to the system: the allocator keeps what it freed (a
/// second thread's arena above all) unless asked.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: glibc's malloc_trim only returns free pages; it touches no live allocation.
        unsafe {
            malloc_trim(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_vector_is_a_vector() {
        for n in [0, 10, 3 << 20] {
            let mut v: Vec<u64> = huge_vec(n);
            assert!(v.capacity() >= n);
            v.extend((0..n as u64).map(|i| i * 3));
            assert_eq!(v.len(), n);
            assert_eq!(v.last().copied(), n.checked_sub(1).map(|i| i as u64 * 3));
        }
    }
}
