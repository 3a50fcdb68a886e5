//! Vectors read back at their place in the store's file: one `pread` of a vector's own bytes,
//! not SQLite's blob read, which copies the vector's whole 16 KiB page into its page cache
//! first (a search at 100k rows of 384 dimensions reads about 46 vectors back).
//!
//! Owns: finding where each sqlite-vec block's vectors lie in the file, by a walk of its
//! table's b-tree pages as the file holds them, and reading a vector there. A place found so is
//! only where to look, as a row's block and slot are (vectors.rs): a file checkpointed since
//! the walk, or a damaged page, make it wrong, and the caller checks every vector read here
//! against its code's checksum and reads one that fails through SQLite. Nothing is read here
//! while the store's write-ahead log holds a frame (`Direct::current`): the last version of a
//! page may be there, and the file's older copy could still match its code. The walk gives up
//! (no places) on anything it does not expect. Does not own: the rows' blocks and
//! slots (vectors.rs), when the walk is made (cache.rs) or the checksum (codes.rs).

use std::sync::atomic::{AtomicBool, Ordering};

/// Where the vectors of each block of a sqlite-vec table lie in a store's file, and the file.
pub(crate) struct Direct {
    file: std::fs::File,
    /// The store's write-ahead log: while it holds any frame, a page's last version may be
    /// there and not in the file (`Direct::current`).
    wal: std::path::PathBuf,
    /// The file offset of block `first + i`'s first vector at `i` (0: not found).
    offsets: Vec<u64>,
    first: i64,
    /// Bytes a vector takes.
    width: usize,
    /// Vectors a block holds.
    per_block: usize,
}

/// The largest payload a table leaf page of `usable` bytes keeps on the page (SQLite's file
/// format): a larger one spills to overflow pages, which the walk does not follow.
fn local_most(usable: usize) -> usize {
    usable - 35
}

/// An SQLite varint at `at`: its value and length, or None past the end of `page`.
fn varint(page: &[u8], at: usize) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for i in 0..9 {
        let byte = *page.get(at + i)?;
        if i == 8 {
            return Some((value << 8 | u64::from(byte), 9));
        }
        value = value << 7 | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Bytes a record value of serial type `t` takes; None for the reserved types.
fn serial_size(t: u64) -> Option<usize> {
    let size = match t {
        0 | 8 | 9 => 0,
        1..=4 => t,
        5 => 6,
        6 | 7 => 8,
        10 | 11 => return None,
        t => (t - 12) / 2,
    };
    usize::try_from(size).ok()
}

/// Bytes of a leaf cell read to find its block and where its vectors begin: the payload's
/// length and the row id (9 bytes at most each), the record's header (its length, the block
/// column's type, the vectors' type) and the block column's value (8 bytes at most).
const CELL_HEAD: usize = 48;

/// The block id of the leaf cell whose first bytes are `cell` (`room` bytes of the page from
/// its start, on a page of `usable` bytes) and the offset in the cell of its vectors, a blob of
/// `blob` bytes kept whole on the page; None for any other cell.
fn block_at(cell: &[u8], room: usize, usable: usize, blob: usize) -> Option<(i64, usize)> {
    let (payload, a) = varint(cell, 0)?;
    let (block, b) = varint(cell, a)?;
    let body = a + b;
    let payload = usize::try_from(payload).ok()?;
    if payload > local_most(usable) || body + payload > room {
        return None;
    }
    let (header, c) = varint(cell, body)?;
    let (first, d) = varint(cell, body + c)?;
    let (second, _) = varint(cell, body + c + d)?;
    let from = body + usize::try_from(header).ok()? + serial_size(first)?;
    let is_blob = second >= 12 && second % 2 == 0;
    if !is_blob || serial_size(second)? != blob || from + blob > body + payload {
        return None;
    }
    Some((i64::try_from(block).ok()?, from))
}

fn be16(page: &[u8], at: usize) -> Option<usize> {
    Some(usize::from(u16::from_be_bytes([
        *page.get(at)?,
        *page.get(at + 1)?,
    ])))
}

fn be32(page: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(page.get(at..at + 4)?.try_into().ok()?))
}

impl Direct {
    /// The places of the blocks of the table whose b-tree is rooted at page `root` of the file at
    /// `path` (sqlite-vec's `_vector_chunks00`: each row a block id and a blob of `per_block`
    /// vectors of `dim` components); None when the file cannot be read, `stop` is set, or the
    /// walk meets a page or record it does not expect.
    pub(crate) fn open(
        path: &str,
        root: u32,
        dim: usize,
        per_block: usize,
        stop: &AtomicBool,
    ) -> Option<Direct> {
        let file = std::fs::File::open(path).ok()?;
        let length = file.metadata().ok()?.len();
        let mut header = [0u8; 100];
        read_at(&file, &mut header, 0)?;
        if &header[..16] != b"SQLite format 3\0" {
            return None;
        }
        let page_size = match be16(&header, 16)? {
            1 => 65536,
            n if n >= 512 && n.is_power_of_two() => n,
            _ => return None,
        };
        let usable = page_size.checked_sub(usize::from(header[20]))?;
        let pages = usize::try_from(length).ok()? / page_size;
        let width = dim * 4;
        let blob = per_block * width;
        if blob == 0 || usable < 480 {
            return None;
        }
        let mut found = Vec::new();
        let mut page = vec![0u8; page_size];
        let (mut todo, mut walked) = (vec![root], 0usize);
        while let Some(number) = todo.pop() {
            walked += 1;
            let index = usize::try_from(number).ok()?.checked_sub(1)?;
            // A page twice (a cycle), more pages to walk than the file holds, or a page past
            // its end is damage.
            let overfull = walked + todo.len() > pages;
            if overfull || index >= pages || stop.load(Ordering::Relaxed) {
                return None;
            }
            let base = (index * page_size) as u64;
            let head = if number == 1 { 100 } else { 0 };
            let mut top = [0u8; 12];
            read_at(&file, &mut top, base + head as u64)?;
            let cells = be16(&top, 3)?;
            match top[0] {
                0x05 => {
                    read_at(&file, &mut page, base)?;
                    for i in 0..cells {
                        let at = be16(&page, head + 12 + 2 * i)?;
                        todo.push(be32(&page, at)?);
                    }
                    todo.push(be32(&top, 8)?);
                }
                // A leaf: only its cells' pointers and the first bytes of each cell are read,
                // not the vectors (the whole table's bytes).
                0x0d => {
                    let mut pointers = vec![0u8; 2 * cells];
                    read_at(&file, &mut pointers, base + (head + 8) as u64)?;
                    for i in 0..cells {
                        let at = be16(&pointers, 2 * i)?;
                        let mut cell = [0u8; CELL_HEAD];
                        let seen = CELL_HEAD.min(usable.checked_sub(at)?);
                        read_at(&file, &mut cell[..seen], base + at as u64)?;
                        let (block, from) = block_at(&cell[..seen], usable - at, usable, blob)?;
                        found.push((block, base + (at + from) as u64));
                    }
                }
                _ => return None,
            }
        }
        found.sort_unstable();
        let first = found.first().map_or(0, |b| b.0);
        let span = usize::try_from(found.last().map_or(0, |b| b.0) - first).ok()? + 1;
        // Blocks are numbered from one up as sqlite-vec adds them; ids spread far wider than
        // the blocks found are not a table this walk understands.
        if span > 2 * found.len() + 1024 {
            return None;
        }
        let mut offsets = vec![0u64; span];
        for (block, at) in found {
            offsets[(block - first) as usize] = at;
        }
        Some(Direct {
            file,
            wal: format!("{path}-wal").into(),
            first,
            offsets,
            width,
            per_block,
        })
    }

    /// Whether the file holds the last version of every page: its write-ahead log is there
    /// (a connection is open, so SQLite keeps it) and empty. A vector changed since the last
    /// checkpoint is in the log, and the file's older copy may still match the code it had:
    /// while the log holds frames, nothing is read here.
    pub(crate) fn current(&self) -> bool {
        std::fs::metadata(&self.wal).is_ok_and(|m| m.is_file() && m.len() == 0)
    }

    /// The vector in `slot` of `block` read into `to` (`dim` components); false when the block
    /// is not known, the slot is outside it or the file cannot be read there. What is read must
    /// still be checked against the row's checksum.
    pub(crate) fn read(&self, block: i64, slot: i64, to: &mut [f32], bytes: &mut [u8]) -> bool {
        let at = usize::try_from(block - self.first).ok();
        let Some(&start) = at.and_then(|i| self.offsets.get(i)).filter(|&&o| o > 0) else {
            return false;
        };
        let Some(slot) = usize::try_from(slot).ok().filter(|&s| s < self.per_block) else {
            return false;
        };
        if bytes.len() != self.width || to.len() * 4 != self.width {
            return false;
        }
        let offset = start + (slot * self.width) as u64;
        if read_at(&self.file, bytes, offset).is_none() {
            return false;
        }
        for (x, b) in to.iter_mut().zip(bytes.chunks_exact(4)) {
            *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        true
    }

    /// The same file with every block found `by` bytes further on (tests: places that are
    /// wrong).
    #[cfg(test)]
    pub(crate) fn shifted(&self, by: u64) -> Direct {
        Direct {
            file: self.file.try_clone().unwrap(),
            wal: self.wal.clone(),
            offsets: self.offsets.iter().map(|&o| o + by).collect(),
            first: self.first,
            width: self.width,
            per_block: self.per_block,
        }
    }

    /// Blocks whose place is known.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.offsets.iter().filter(|&&o| o > 0).count()
    }
}

#[cfg(unix)]
fn read_at(file: &std::fs::File, to: &mut [u8], offset: u64) -> Option<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, to, offset).ok()
}

#[cfg(not(unix))]
fn read_at(_: &std::fs::File, _: &mut [u8], _: u64) -> Option<()> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_read_as_sqlite_writes_them() {
        assert_eq!(varint(&[0x05], 0), Some((5, 1)));
        assert_eq!(varint(&[0x81, 0x00], 0), Some((128, 2)));
        assert_eq!(varint(&[0xff; 9], 0), Some((u64::MAX, 9)));
        assert_eq!(varint(&[0x81], 0), None);
        assert_eq!(serial_size(6), Some(8));
        assert_eq!(serial_size(12 + 2 * 12288), Some(12288));
        assert_eq!(serial_size(10), None);
    }
}
