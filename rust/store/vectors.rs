//! Reading the stored vectors out of sqlite-vec.
//!
//! Owns: how the table is declared (with blocks small enough to read one vector back as one
//! page), visiting every vector with its chunk and document, from sqlite-vec's own storage when
//! every check on it passes and through the virtual table otherwise, refusing storage whose
//! positions contradict each other, and reading back the vectors of given chunks (`read_rows`),
//! by the places a search cache holds for them (`places_of`) where it has them.
//! Does not own: writing vectors (write.rs), reading them at their place in the file
//! (direct.rs) or what the cache does with them (cache.rs, codes.rs).

use rustc_hash::FxHashMap as HashMap;

use std::sync::atomic::{AtomicBool, Ordering};

use rusqlite::OptionalExtension;

use crate::errors::{CoreError, Result};

use super::direct::Direct;
use super::{is_busy, Store, VEC_TABLE};

/// Why the fast path did not serve the vectors.
#[derive(Debug)]
pub(super) enum Declined {
    /// Storage this reader does not know, or a check failed that the virtual table does not
    /// depend on: the virtual table, the source of truth, decides.
    Layout(String),
    /// `_rowids` puts a row in a slot that `_chunks` gives to another row or to none. The
    /// virtual table reads through the same positions without checking them and would return
    /// a wrong vector, so neither path can be trusted.
    Misplaced(String),
}

impl From<rusqlite::Error> for Declined {
    fn from(e: rusqlite::Error) -> Self {
        Declined::Layout(e.to_string())
    }
}

/// One sqlite-vec block of `size` slots. Slot `i` is live when bit `i` of `validity` is set;
/// the native-endian i64 at `rowids[8 i..]` names its row and its vector is the `i`-th run of
/// `dim` float32 in its `_vector_chunks00` row (`vectors`: that row exists with the right
/// length).
struct Block {
    size: usize,
    validity: Vec<u8>,
    rowids: Vec<u8>,
    vectors: bool,
}

/// Vectors per sqlite-vec block in a store this build makes: a block of eight 384-d vectors
/// (12 KiB) fits one 16 KiB page, so reading one vector back reads one page (~6 µs). A block of
/// sqlite-vec's default 1,024 spans a hundred overflow pages walked in turn (~110 µs a vector),
/// which earlier builds wrote.
pub(super) const POINT_BLOCK: usize = 8;

/// How `VEC_TABLE` was declared, when `Store::begin` declared it: by this build, with blocks
/// small enough to read one vector back by its chunk id (`Store::read_rows`), or by an earlier
/// one, with sqlite-vec's default blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Declared {
    PointBlocks,
    DefaultBlocks,
}

/// The declaration of `VEC_TABLE` for `dim` components, as `Store::begin` writes it.
pub(super) fn declaration(dim: usize) -> String {
    format!(
        "CREATE VIRTUAL TABLE {VEC_TABLE} USING vec0(chunk_id INTEGER PRIMARY KEY,
         embedding float[{dim}] distance_metric=cosine, chunk_size={POINT_BLOCK})"
    )
}

/// Whether `sql`, from `sqlite_master`, declares `VEC_TABLE` as `Store::begin` creates it, or
/// as earlier builds did (without the block size): one float32 column of `dim` components
/// keyed by chunk id. Only those tables have the storage read here. Whitespace is not
/// significant.
pub(super) fn declared_as_written(sql: &str, dim: usize) -> Option<Declared> {
    let squeeze = |s: &str| s.split_whitespace().collect::<String>();
    let sql = squeeze(sql);
    let now = squeeze(&declaration(dim));
    if sql == now {
        Some(Declared::PointBlocks)
    } else if sql == now.replace(&format!(",chunk_size={POINT_BLOCK}"), "") {
        Some(Declared::DefaultBlocks)
    } else {
        None
    }
}

/// How long `Store::places_apart` waits before it opens its connection, in tests of a thread
/// that outlives its store.
#[cfg(test)]
pub(super) static PLACES_LATE_MS: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(0);

/// Chunks `places_of` reads between two looks at whether it should stop.
const STOP_EVERY: usize = 4096;

/// A chunk's vector place no `place` packs: its block and slot are looked up in `_rowids`.
pub(super) const NO_PLACE: u64 = u64::MAX;
/// Bits of a packed place that hold the slot (sqlite-vec's blocks hold at most 2^16 slots).
const SLOT_BITS: u32 = 16;

/// A vector's block and slot, packed into a word (`NO_PLACE` when either is out of range).
fn place(block: i64, slot: i64) -> u64 {
    match (u64::try_from(block), u64::try_from(slot)) {
        (Ok(b), Ok(s)) if b < 1 << (63 - SLOT_BITS) && s < 1 << SLOT_BITS => b << SLOT_BITS | s,
        _ => NO_PLACE,
    }
}

/// The block and slot `place` packed, or None for `NO_PLACE`.
pub(super) fn unplace(packed: u64) -> Option<(i64, i64)> {
    (packed != NO_PLACE).then_some((
        (packed >> SLOT_BITS) as i64,
        (packed & ((1 << SLOT_BITS) - 1)) as i64,
    ))
}

/// Where sqlite-vec keeps the vector of each chunk of `chunks` (ascending chunk ids): its block
/// and slot, packed by `place`, or `NO_PLACE`. Held by the search cache, so that reading a vector
/// back is one lookup, not two (`Store::read_rows`). A place is only where to look: the vector
/// found there must still match its code's checksum. None once `stop` is set: the read gave up.
pub(super) fn places_of(
    conn: &rusqlite::Connection,
    chunks: &[i64],
    stop: &AtomicBool,
) -> rusqlite::Result<Option<Vec<u64>>> {
    let mut places = crate::memory::huge_vec(chunks.len());
    let mut stmt = conn.prepare(&format!(
        "SELECT rowid, chunk_id, chunk_offset FROM \"{VEC_TABLE}_rowids\" ORDER BY rowid"
    ))?;
    let mut rows = stmt.query([])?;
    let mut next = rows.next()?;
    for (n, &chunk) in chunks.iter().enumerate() {
        if n % STOP_EVERY == 0 && stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        // Both ascend: skip the rows of chunks not asked for.
        while let Some(r) = next {
            if r.get::<_, i64>(0)? >= chunk {
                break;
            }
            next = rows.next()?;
        }
        places.push(match next {
            Some(r) if r.get::<_, i64>(0)? == chunk => place(r.get(1)?, r.get(2)?),
            _ => NO_PLACE,
        });
    }
    Ok(Some(places))
}

/// Stored rows: (chunk id, document id) of each, in chunk-id order, and their vectors
/// (row-major float32).
pub(super) type Loaded = (Vec<(i64, i64)>, Vec<f32>);

/// Little-endian float32 bytes into `out`.
fn floats_into(blob: &[u8], out: &mut [f32]) {
    for (x, b) in out.iter_mut().zip(blob.chunks_exact(4)) {
        *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
}

impl Store {
    /// How `VEC_TABLE` is declared (None: not yet, or not as any build of recall declares it).
    pub(super) fn vectors_declared(conn: &rusqlite::Connection, dim: usize) -> Option<Declared> {
        conn.query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [VEC_TABLE],
            |r| r.get::<_, String>(0),
        )
        .ok()
        .and_then(|sql| declared_as_written(&sql, dim))
    }

    /// `places_of` the chunks `chunks` of generation `generation`, read on a connection of its
    /// own (None when the store has moved on or cannot be read).
    pub(super) fn places_apart(
        path: &str,
        generation: i64,
        chunks: &[i64],
        stop: &AtomicBool,
    ) -> Option<Vec<u64>> {
        #[cfg(test)]
        std::thread::sleep(std::time::Duration::from_millis(
            PLACES_LATE_MS.load(Ordering::Relaxed),
        ));
        let conn = super::open_read_only(path).ok()?;
        conn.execute_batch("BEGIN").ok()?;
        let read = (|| -> rusqlite::Result<Option<Vec<u64>>> {
            if super::meta_of(&conn, "generation")?.and_then(|g| g.parse().ok()) != Some(generation)
            {
                return Ok(None);
            }
            places_of(&conn, chunks, stop)
        })();
        let _ = conn.execute_batch("COMMIT");
        read.ok().flatten()
    }

    /// Where the blocks of `VEC_TABLE` lie in the file at `path` (direct.rs), read on a
    /// connection of its own; None for a table of another block size, or when it cannot be
    /// read or `stop` is set.
    pub(super) fn direct_apart(path: &str, dim: usize, stop: &AtomicBool) -> Option<Direct> {
        let conn = super::open_read_only(path).ok()?;
        if Store::vectors_declared(&conn, dim) != Some(Declared::PointBlocks) {
            return None;
        }
        let root: i64 = conn
            .query_row(
                "SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [format!("{VEC_TABLE}_vector_chunks00")],
                |r| r.get(0),
            )
            .ok()?;
        drop(conn);
        Direct::open(path, u32::try_from(root).ok()?, dim, POINT_BLOCK, stop)
    }

    /// The vectors of `chunks`, in that order (`dim` floats each), each read by its chunk id:
    /// one page a vector in a table of `Declared::PointBlocks`. Read from sqlite-vec's storage
    /// (the row's block and slot, from `places` when given and known, else from `_rowids`; its
    /// bytes from the block), a few times faster than its virtual table, which
    /// `read_rows_table` reads when a position is not there or not in its block; the caller
    /// checks every vector against its code's checksum and reads through the table when one
    /// fails.
    pub(super) fn read_rows(
        &self,
        chunks: &[i64],
        places: Option<&[u64]>,
        dim: usize,
    ) -> Result<Vec<f32>> {
        match self.read_rows_shadow(chunks, places, dim) {
            Ok(Some(read)) => Ok(read),
            Ok(None) => self.read_rows_table(chunks, dim),
            Err(e) if is_busy(&e) => Err(self.busy(e)),
            Err(_) => self.read_rows_table(chunks, dim),
        }
    }

    /// `read_rows` from sqlite-vec's storage; None when a row's position is missing or falls
    /// outside its block.
    fn read_rows_shadow(
        &self,
        chunks: &[i64],
        places: Option<&[u64]>,
        dim: usize,
    ) -> rusqlite::Result<Option<Vec<f32>>> {
        let mut at = self.conn.prepare_cached(&format!(
            "SELECT chunk_id, chunk_offset FROM \"{VEC_TABLE}_rowids\" WHERE rowid = ?1"
        ))?;
        let width = dim * 4;
        let mut out = vec![0.0f32; chunks.len() * dim];
        let mut bytes = vec![0u8; width];
        let mut blob: Option<rusqlite::blob::Blob<'_>> = None;
        for (n, (&chunk, to)) in chunks.iter().zip(out.chunks_exact_mut(dim)).enumerate() {
            let known = places.and_then(|p| unplace(*p.get(n)?));
            let found = match known {
                Some(place) => Some(place),
                None => at
                    .query_row([chunk], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
                    .optional()?,
            };
            let Some((block, slot)) = found else {
                return Ok(None);
            };
            match blob.as_mut() {
                Some(b) => b.reopen(block)?,
                None => {
                    blob = Some(self.conn.blob_open(
                        rusqlite::MAIN_DB,
                        format!("{VEC_TABLE}_vector_chunks00").as_str(),
                        "vectors",
                        block,
                        true,
                    )?)
                }
            }
            let b = blob.as_ref().expect("opened above");
            let Some(start) = usize::try_from(slot).ok().map(|s| s * width) else {
                return Ok(None);
            };
            if start + width > b.len() {
                return Ok(None);
            }
            b.read_at_exact(&mut bytes, start)?;
            floats_into(&bytes, to);
        }
        Ok(Some(out))
    }

    /// `read_rows` through sqlite-vec's virtual table, the source of truth. A chunk without a
    /// vector of `dim` components is damage.
    pub(super) fn read_rows_table(&self, chunks: &[i64], dim: usize) -> Result<Vec<f32>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT embedding FROM {VEC_TABLE} WHERE chunk_id = ?1"
        ))?;
        let mut out = vec![0.0f32; chunks.len() * dim];
        for (&chunk, to) in chunks.iter().zip(out.chunks_exact_mut(dim)) {
            let read = stmt.query_row([chunk], |r| {
                Ok(match r.get_ref(0)?.as_blob() {
                    Ok(blob) if blob.len() == dim * 4 => {
                        floats_into(blob, to);
                        true
                    }
                    _ => false,
                })
            });
            match read {
                Ok(true) => {}
                Ok(false) | Err(rusqlite::Error::QueryReturnedNoRows) => {
                    return Err(CoreError::Damaged {
                        part: "vector storage",
                        detail: format!(
                            "chunk {chunk} has no vector of {dim} components in {VEC_TABLE}; \
                             re-index into a new --db"
                        ),
                    })
                }
                Err(e) if is_busy(&e) => return Err(self.busy(e)),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(out)
    }

    /// Every stored vector that `keep` accepts (given its chunk and document), in chunk-id
    /// order. Vectors that are
    /// not float32 blobs of the store's dimension (hand-edited) are left out rather than
    /// failing the search. The fast path checks everything before it reads the first vector,
    /// then reads one block at a time into rows allocated once.
    pub(super) fn load_vectors(
        &self,
        dim: usize,
        keep: impl Fn(i64, i64) -> bool,
    ) -> Result<Loaded> {
        match self.load_vectors_shadow(dim, &keep) {
            Ok(loaded) => Ok(loaded),
            Err(Declined::Misplaced(why)) => Err(CoreError::Damaged {
                part: "vector storage",
                detail: format!("the vectors of {VEC_TABLE}: {why}; re-index into a new --db"),
            }),
            Err(Declined::Layout(why)) => {
                self.load_vectors_table(dim, &keep).map_err(|e| match e {
                    e if is_busy(&e) => self.busy(e),
                    e => CoreError::Damaged {
                        part: "vector storage",
                        detail: format!(
                            "the vectors of {VEC_TABLE} cannot be read ({e}; its storage: \
                             {why}); re-index into a new --db"
                        ),
                    },
                })
            }
        }
    }

    /// The virtual table, row by row: the source of truth, and the slow path.
    pub(super) fn load_vectors_table(
        &self,
        dim: usize,
        keep: &impl Fn(i64, i64) -> bool,
    ) -> rusqlite::Result<Loaded> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT v.chunk_id, v.embedding, c.doc_id FROM {VEC_TABLE} v
             JOIN chunks c ON c.id = v.chunk_id ORDER BY v.chunk_id"
        ))?;
        let mut rows = stmt.query([])?;
        let (mut ids, mut data) = (Vec::new(), Vec::new());
        while let Some(r) = rows.next()? {
            let Ok(blob) = r.get_ref(1)?.as_blob() else {
                continue;
            };
            let (chunk, doc): (i64, i64) = (r.get(0)?, r.get(2)?);
            if blob.len() == dim * 4 && keep(chunk, doc) {
                let start = data.len();
                data.resize(start + dim, 0.0);
                floats_into(blob, &mut data[start..]);
                ids.push((chunk, doc));
            }
        }
        Ok((ids, data))
    }

    /// The fast path of `load_vectors`: read sqlite-vec's own storage (blocks in `_chunks`,
    /// their vectors in `_vector_chunks00`, row positions in `_rowids`) instead of the virtual
    /// table row by row, ~10x faster at 100k rows. It serves only storage that checks out
    /// completely, before the first vector is read: the table is declared as this store writes
    /// it; every block's bitmap, row list and vectors have the lengths its size implies; every
    /// row's slot lies in its block, is live and names that row; and there are as many live
    /// slots as rows. A failed check declines (see `Declined`), never a wrong vector.
    pub(super) fn load_vectors_shadow(
        &self,
        dim: usize,
        keep: &impl Fn(i64, i64) -> bool,
    ) -> std::result::Result<Loaded, Declined> {
        let layout = |why: String| Err(Declined::Layout(why));
        let declared: Option<String> = self
            .conn
            .query_row(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [VEC_TABLE],
                |r| r.get(0),
            )
            .optional()?;
        if declared
            .and_then(|sql| declared_as_written(&sql, dim))
            .is_none()
        {
            return layout(format!(
                "{VEC_TABLE} is not declared as this store writes it"
            ));
        }
        let width = dim * 4;
        let mut blocks: HashMap<i64, Block> = HashMap::default();
        {
            let mut stmt = self.conn.prepare(&format!(
                "SELECT chunk_id, size, validity, rowids FROM \"{VEC_TABLE}_chunks\""
            ))?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let id: i64 = r.get(0)?;
                let size: i64 = r.get(1)?;
                let (Ok(validity), Ok(rowids)) = (r.get_ref(2)?.as_blob(), r.get_ref(3)?.as_blob())
                else {
                    return layout(format!("block {id}: validity or rowids is not a blob"));
                };
                // sqlite-vec sizes both at creation: one bit and one i64 per slot.
                let size = match usize::try_from(size) {
                    Ok(s) if s > 0 && s % 8 == 0 && validity.len() == s / 8 => s,
                    _ => return layout(format!("block {id}: size {size} does not fit its bitmap")),
                };
                if rowids.len() != size * 8 {
                    return layout(format!("block {id}: {} bytes of rowids", rowids.len()));
                }
                let block = Block {
                    size,
                    validity: validity.to_vec(),
                    rowids: rowids.to_vec(),
                    vectors: false,
                };
                blocks.insert(id, block);
            }
        }
        {
            // sqlite-vec declares this table's `rowid` column without INTEGER, so it is not the
            // SQLite rowid it opens the blob by (`_rowid_`); stores where they drifted apart
            // are left to the virtual table. Only the blobs' types and lengths are read here.
            let mut stmt = self.conn.prepare(&format!(
                "SELECT _rowid_, rowid, typeof(vectors), length(vectors)
                 FROM \"{VEC_TABLE}_vector_chunks00\""
            ))?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let id: i64 = r.get(0)?;
                if r.get::<_, i64>(1).ok() != Some(id) {
                    return layout(format!("vectors of block {id}: rowid column differs"));
                }
                if r.get::<_, String>(2)? != "blob" {
                    return layout(format!("vectors of block {id}: not a blob"));
                }
                let Some(block) = blocks.get_mut(&id) else {
                    return layout(format!("vectors of block {id}: no such block"));
                };
                let length: i64 = r.get(3)?;
                if usize::try_from(length).ok() != Some(block.size * width) {
                    return layout(format!(
                        "vectors of block {id}: {length} bytes for {} slots of {width}",
                        block.size
                    ));
                }
                block.vectors = true;
            }
        }
        // (chunk id, document id, block, slot), in chunk-id order.
        let mut slots: Vec<(i64, i64, i64, usize)> = Vec::new();
        // The virtual table's own count: its full scan walks `_rowids` (sqlite-vec
        // `vec0Filter_fullscan`), orphans of `chunks` included.
        let mut rows_total = 0usize;
        {
            let mut stmt = self.conn.prepare(&format!(
                "SELECT r.rowid, r.chunk_id, r.chunk_offset, c.doc_id FROM \"{VEC_TABLE}_rowids\" r
                 LEFT JOIN chunks c ON c.id = r.rowid ORDER BY r.rowid"
            ))?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                rows_total += 1;
                let (row, block_id, offset): (i64, i64, i64) = (r.get(0)?, r.get(1)?, r.get(2)?);
                let Some(block) = blocks.get(&block_id) else {
                    return layout(format!("row {row}: block {block_id} is not in _chunks"));
                };
                if !block.vectors {
                    return layout(format!("row {row}: block {block_id} has no vectors"));
                }
                let slot = match usize::try_from(offset) {
                    Ok(s) if s < block.size => s,
                    _ => {
                        return Err(Declined::Misplaced(format!(
                            "row {row} is at offset {offset} of block {block_id}, which has {} \
                             slots",
                            block.size
                        )))
                    }
                };
                let owner = i64::from_ne_bytes(
                    block.rowids[slot * 8..slot * 8 + 8]
                        .try_into()
                        .expect("eight bytes"),
                );
                if owner != row {
                    return Err(Declined::Misplaced(format!(
                        "row {row} is at slot {slot} of block {block_id}, which belongs to row \
                         {owner}"
                    )));
                }
                if block.validity[slot / 8] >> (slot % 8) & 1 == 0 {
                    return layout(format!(
                        "row {row}: slot {slot} of block {block_id} is free"
                    ));
                }
                if let Some(doc_id) = r.get::<_, Option<i64>>(3)? {
                    if keep(row, doc_id) {
                        slots.push((row, doc_id, block_id, slot));
                    }
                }
            }
        }
        // Each row's slot names that row and rows are unique (`_rowids` primary key), so no two
        // rows share a slot; equal counts then mean no live slot is left without a row.
        let live: usize = blocks
            .values()
            .flat_map(|b| &b.validity)
            .map(|byte| byte.count_ones() as usize)
            .sum();
        if live != rows_total {
            return layout(format!("{live} live slots for {rows_total} rows"));
        }
        // Everything checked: one block's vectors at a time into rows allocated once.
        let mut data = vec![0f32; slots.len() * dim];
        let mut by_block: std::collections::BTreeMap<i64, Vec<(usize, usize)>> = Default::default();
        for (position, &(_, _, block, slot)) in slots.iter().enumerate() {
            by_block.entry(block).or_default().push((slot, position));
        }
        let mut read = self.conn.prepare(&format!(
            "SELECT vectors FROM \"{VEC_TABLE}_vector_chunks00\" WHERE _rowid_ = ?1"
        ))?;
        for (block, placed) in by_block {
            read.query_row([block], |r| {
                let vectors = r.get_ref(0)?.as_blob()?;
                for &(slot, position) in &placed {
                    floats_into(
                        &vectors[slot * width..(slot + 1) * width],
                        &mut data[position * dim..(position + 1) * dim],
                    );
                }
                Ok(())
            })?;
        }
        let ids = slots.iter().map(|&(c, d, _, _)| (c, d)).collect();
        Ok((ids, data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::{doc, embedder, temp_db, TempDb};
    use crate::store::{f32_blob, NewDocument};

    const DIM: usize = 4;

    type Vectors = Vec<(i64, i64, Vec<f32>)>;

    /// The vector written for chunk `ordinal` of `path`: no two chunks of a test store share one.
    fn vector_of(path: &str, ordinal: i64) -> Vec<f32> {
        let base = f32::from(path.as_bytes()[0]) * 100.0 + ordinal as f32 * 10.0;
        (0..DIM).map(|j| base + j as f32).collect()
    }

    fn document(path: &str, chunks: usize) -> NewDocument {
        let mut d = doc(path, chunks, DIM);
        d.vectors = (0..chunks as i64)
            .flat_map(|o| vector_of(path, o))
            .collect();
        d
    }

    /// Chunks 1-3 (a.md) and 4-5 (b.md) fill slots 0-4 of one block; the second run removes
    /// a.md and puts c.md's chunks 6-7 into the freed slots 0-1, so slot 2 is free with its
    /// row cleared, and slot order is not chunk-id order.
    fn store(name: &str) -> (TempDb, Store) {
        let dir = temp_db(name);
        let mut store = Store::open(&dir).unwrap();
        store.begin(&embedder(DIM)).unwrap();
        store.put_document(&document("a.md", 3), "t0").unwrap();
        store.put_document(&document("b.md", 2), "t0").unwrap();
        store.commit("t0").unwrap();
        store.begin(&embedder(DIM)).unwrap();
        store.remove_documents("/corpus", &["a.md".into()]).unwrap();
        store.put_document(&document("c.md", 2), "t1").unwrap();
        store.commit("t1").unwrap();
        (dir, store)
    }

    /// (chunk id, document id, vector) of every chunk as it was written, in chunk-id order.
    fn written(store: &Store) -> Vectors {
        let mut stmt = store
            .conn
            .prepare(
                "SELECT c.id, c.doc_id, d.path, c.ordinal FROM chunks c
                 JOIN documents d ON d.id = c.doc_id ORDER BY c.id",
            )
            .unwrap();
        let rows = stmt
            .query_map([], |r| {
                let path: String = r.get(2)?;
                Ok((r.get(0)?, r.get(1)?, vector_of(&path, r.get(3)?)))
            })
            .unwrap();
        rows.collect::<std::result::Result<_, _>>().unwrap()
    }

    fn listed((ids, data): Loaded) -> Vectors {
        ids.iter()
            .zip(data.chunks_exact(DIM))
            .map(|(&(c, d), v)| (c, d, v.to_vec()))
            .collect()
    }

    /// What the cache loads.
    fn read(store: &Store) -> Result<Vectors> {
        Ok(listed(store.load_vectors(DIM, |_, _| true)?))
    }

    fn read_shadow(store: &Store) -> std::result::Result<Vectors, Declined> {
        Ok(listed(store.load_vectors_shadow(DIM, &|_, _| true)?))
    }

    fn read_table(store: &Store) -> Vectors {
        listed(store.load_vectors_table(DIM, &|_, _| true).unwrap())
    }

    fn vector_read_for(vectors: &Vectors, chunk: i64) -> Vec<f32> {
        vectors.iter().find(|v| v.0 == chunk).unwrap().2.clone()
    }

    fn run(store: &Store, sql: &str) {
        store.conn.execute_batch(sql).unwrap();
    }

    /// Rewrite block 1's validity bitmap.
    fn edit_validity(store: &Store, edit: impl FnOnce(&mut Vec<u8>)) {
        let mut bits: Vec<u8> = store
            .conn
            .query_row(
                "SELECT validity FROM vec_chunks_chunks WHERE chunk_id = 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        edit(&mut bits);
        store
            .conn
            .execute(
                "UPDATE vec_chunks_chunks SET validity = ?1 WHERE chunk_id = 1",
                [bits],
            )
            .unwrap();
    }

    /// The fast path declined without calling the storage misplaced, and the virtual table
    /// served exactly the vectors written.
    fn assert_falls_back(store: &Store, because: &str) {
        assert_declined_layout(store, because);
        assert_eq!(read(store).unwrap(), written(store));
    }

    fn assert_declined_layout(store: &Store, because: &str) {
        match read_shadow(store) {
            Err(Declined::Layout(why)) => assert!(why.contains(because), "{why}"),
            other => panic!("expected the layout to be declined: {other:?}"),
        }
    }

    fn assert_misplaced(store: &Store, because: &str) {
        match read_shadow(store) {
            Err(Declined::Misplaced(why)) => assert!(why.contains(because), "{why}"),
            other => panic!("expected a misplaced row: {other:?}"),
        }
    }

    /// The read fails as damage, saying which table and what to do, rather than return any
    /// vector.
    fn assert_refused(store: &Store, says: &str) {
        let err = read(store).unwrap_err();
        assert!(matches!(err, CoreError::Damaged { .. }), "{err}");
        let err = err.to_string();
        assert!(err.contains(says), "{err}");
        assert!(
            err.contains("vec_chunks") && err.contains("re-index"),
            "{err}"
        );
    }

    #[test]
    fn vec0_knn_sees_stored_vectors() {
        let path = temp_db("knn");
        let mut store = Store::open(&path).unwrap();
        store.begin(&embedder(4)).unwrap();
        store.put_document(&doc("a.md", 3, 4), "t").unwrap();
        store.commit("t").unwrap();
        let query = f32_blob(&[1.0, 2.0, 3.0, 4.0]);
        let ids: Vec<i64> = store
            .conn
            .prepare("SELECT chunk_id FROM vec_chunks WHERE embedding MATCH ?1 AND k = 2")
            .unwrap()
            .query_map([query], |r| r.get(0))
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        assert_eq!(ids.len(), 2);
    }

    #[test]
    fn declaration_is_checked_up_to_whitespace() {
        let earlier = "CREATE VIRTUAL TABLE vec_chunks USING vec0(
                             chunk_id INTEGER PRIMARY KEY,
                             embedding float[4] distance_metric=cosine)";
        let now = declaration(4);
        let cases = [
            (now.as_str(), 4, Some(Declared::PointBlocks)),
            (&now.replace('\n', " "), 4, Some(Declared::PointBlocks)),
            (earlier, 4, Some(Declared::DefaultBlocks)),
            (&now.replace("chunk_size=8", "chunk_size=16"), 4, None),
            (earlier, 8, None),
            (&earlier.replace("float[4]", "int8[4]"), 4, None),
            (&earlier.replace("cosine", "l2"), 4, None),
            (&earlier.replace("cosine)", "cosine, doc integer)"), 4, None),
        ];
        for (sql, dim, expected) in cases {
            assert_eq!(
                declared_as_written(sql, dim),
                expected,
                "{sql} with dim {dim}"
            );
        }
    }

    #[test]
    fn rows_read_back_by_chunk_id_are_the_rows_written() {
        let (_dir, store) = store("vectors-rows");
        let written = written(&store);
        let chunks: Vec<i64> = written.iter().rev().map(|w| w.0).collect();
        let expected: Vec<f32> = written.iter().rev().flat_map(|w| w.2.clone()).collect();
        assert_eq!(
            store.read_rows_shadow(&chunks, None, DIM).unwrap(),
            Some(expected.clone())
        );
        assert_eq!(store.read_rows_table(&chunks, DIM).unwrap(), expected);
        assert_eq!(store.read_rows(&chunks, None, DIM).unwrap(), expected);
        // A position outside its block: read through the table, which holds the row elsewhere
        // no more than the storage does.
        run(
            &store,
            "UPDATE vec_chunks_rowids SET chunk_offset = 8 WHERE rowid = 4",
        );
        assert_eq!(store.read_rows_shadow(&[4], None, DIM).unwrap(), None);
        assert!(store.read_rows(&[5], None, DIM).is_ok());
        // A chunk with no vector at all is damage, named.
        let err = store.read_rows(&[99], None, DIM).unwrap_err().to_string();
        assert!(
            err.contains("chunk 99 has no vector") && err.contains("--db"),
            "{err}"
        );
    }

    #[test]
    fn blocks_found_in_the_file_read_the_vectors_the_table_holds() {
        let dir = temp_db("vectors-direct");
        let mut store = Store::open(&dir).unwrap();
        store.begin(&embedder(DIM)).unwrap();
        // 1,200 chunks in 150 blocks of 128 bytes: the table spans several leaf pages under an
        // interior one.
        for d in 0..300 {
            store
                .put_document(&document(&format!("n{d}.md"), 4), "t0")
                .unwrap();
        }
        store.commit("t0").unwrap();
        let stop = AtomicBool::new(false);
        // The walk reads the file: pages still in the WAL are not there yet.
        store
            .conn
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
        let direct = Store::direct_apart(&dir, DIM, &stop).unwrap();
        let blocks: usize = store
            .conn
            .query_row("SELECT count(*) FROM vec_chunks_vector_chunks00", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!((blocks, direct.len()), (150, 150));
        let written = written(&store);
        let held: Vec<i64> = written.iter().map(|w| w.0).collect();
        let places = places_of(&store.conn, &held, &stop).unwrap().unwrap();
        let (mut to, mut bytes) = (vec![0.0f32; DIM], vec![0u8; DIM * 4]);
        for (w, &packed) in written.iter().zip(&places) {
            let (block, slot) = unplace(packed).unwrap();
            assert!(
                direct.read(block, slot, &mut to, &mut bytes),
                "chunk {}",
                w.0
            );
            assert_eq!(to, w.2, "chunk {}", w.0);
        }
        // A slot past its block, or a block the walk did not find, is not read.
        let (block, _) = unplace(places[0]).unwrap();
        assert!(!direct.read(block, POINT_BLOCK as i64, &mut to, &mut bytes));
        assert!(!direct.read(block + 10_000, 0, &mut to, &mut bytes));
        // A walk from a page that is not a table's b-tree (an index's root) finds nothing.
        let index_root: u32 = store
            .conn
            .query_row(
                "SELECT rootpage FROM sqlite_master WHERE type = 'index' LIMIT 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(Direct::open(&dir, index_root, DIM, POINT_BLOCK, &stop).is_none());
        // Nor does one told to stop, or one of a table of another block size.
        assert!(Direct::open(&dir, 2, DIM, POINT_BLOCK, &AtomicBool::new(true)).is_none());
        assert!(Store::direct_apart(&dir, DIM + 1, &stop).is_none());
    }

    #[test]
    fn places_held_are_the_positions_in_rowids_and_read_the_same_rows() {
        let (_dir, store) = store("vectors-places");
        let written = written(&store);
        let mut chunks: Vec<i64> = written.iter().map(|w| w.0).collect();
        // A chunk the storage does not hold, between two it does, has no place.
        chunks.insert(2, chunks[1] + 1000);
        chunks.sort_unstable();
        let places = places_of(&store.conn, &chunks, &AtomicBool::new(false))
            .unwrap()
            .unwrap();
        assert_eq!(places.len(), chunks.len());
        for (&chunk, &packed) in chunks.iter().zip(&places) {
            let stored: Option<(i64, i64)> = store
                .conn
                .query_row(
                    "SELECT chunk_id, chunk_offset FROM vec_chunks_rowids WHERE rowid = ?1",
                    [chunk],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()
                .unwrap();
            assert_eq!(unplace(packed), stored, "chunk {chunk}");
        }
        assert_eq!(places.iter().filter(|&&p| p == NO_PLACE).count(), 1);
        let held: Vec<i64> = written.iter().map(|w| w.0).collect();
        let expected: Vec<f32> = written.iter().flat_map(|w| w.2.clone()).collect();
        let places = places_of(&store.conn, &held, &AtomicBool::new(false))
            .unwrap()
            .unwrap();
        assert_eq!(
            store.read_rows_shadow(&held, Some(&places), DIM).unwrap(),
            Some(expected.clone())
        );
        // A place outside its block reads through the table, as a position in `_rowids` does.
        let mut outside = places.clone();
        outside[0] = place(unplace(places[0]).unwrap().0, POINT_BLOCK as i64);
        assert_eq!(
            store.read_rows_shadow(&held, Some(&outside), DIM).unwrap(),
            None
        );
        assert_eq!(
            store.read_rows(&held, Some(&outside), DIM).unwrap(),
            expected
        );
        // What cannot be packed is looked up.
        assert_eq!(place(-1, 0), NO_PLACE);
        assert_eq!(place(1, 1 << SLOT_BITS), NO_PLACE);
        assert_eq!(unplace(place(7, 3)), Some((7, 3)));
    }

    #[test]
    fn fast_path_serves_a_sound_store() {
        let (_dir, store) = store("vectors-sound");
        let written = written(&store);
        assert_eq!(written.len(), 4);
        assert_eq!(read_shadow(&store).unwrap(), written);
        assert_eq!(read_table(&store), written);
        assert_eq!(read(&store).unwrap(), written);
    }

    #[test]
    fn short_vectors_blob_falls_back() {
        // Still holds the live slots 0-4, but is not the block's length nor a whole number of
        // vectors.
        let (_dir, store) = store("vectors-short");
        run(
            &store,
            "UPDATE vec_chunks_vector_chunks00 SET vectors = substr(vectors, 1, 5 * 16 + 3)",
        );
        assert_falls_back(&store, "83 bytes for 8 slots");
    }

    #[test]
    fn vectors_blob_cut_through_a_live_vector_is_refused() {
        let (_dir, store) = store("vectors-cut");
        run(
            &store,
            "UPDATE vec_chunks_vector_chunks00 SET vectors = substr(vectors, 1, 4 * 16 + 8)",
        );
        assert_declined_layout(&store, "72 bytes for 8 slots");
        assert_refused(&store, "cannot be read");
    }

    #[test]
    fn row_moved_into_another_rows_slot_is_refused() {
        let (_dir, store) = store("vectors-moved");
        run(
            &store,
            "UPDATE vec_chunks_rowids SET chunk_offset =
                 (SELECT chunk_offset FROM vec_chunks_rowids WHERE rowid = 5)
             WHERE rowid = 4",
        );
        // Why falling back would not do: the virtual table hands chunk 4 chunk 5's vector.
        let table = read_table(&store);
        assert_eq!(vector_read_for(&table, 4), vector_of("b.md", 1));
        assert_misplaced(
            &store,
            "row 4 is at slot 4 of block 1, which belongs to row 5",
        );
        assert_refused(&store, "damaged");
    }

    #[test]
    fn row_moved_to_a_free_or_missing_slot_is_refused() {
        // Slot 2 is free (vector zeroed, row cleared); 8 and -1 are outside the block.
        let cases = [
            (2, "row 4 is at slot 2 of block 1, which belongs to row 0"),
            (8, "row 4 is at offset 8 of block 1, which has 8 slots"),
            (-1, "row 4 is at offset -1 of block 1"),
        ];
        for (offset, because) in cases {
            let (_dir, store) = store(&format!("vectors-offset{offset}"));
            run(
                &store,
                &format!("UPDATE vec_chunks_rowids SET chunk_offset = {offset} WHERE rowid = 4"),
            );
            if offset == 2 {
                // The virtual table would hand chunk 4 the zeroed vector.
                assert_eq!(vector_read_for(&read_table(&store), 4), vec![0.0; DIM]);
            }
            assert_misplaced(&store, because);
            assert_refused(&store, "damaged");
        }
    }

    #[test]
    fn cleared_validity_bit_falls_back() {
        let (_dir, store) = store("vectors-cleared");
        // Chunk 4 sits in slot 3.
        edit_validity(&store, |bits| bits[0] &= !(1 << 3));
        assert_falls_back(&store, "row 4: slot 3 of block 1 is free");
    }

    #[test]
    fn live_slot_without_a_row_falls_back() {
        let (_dir, store) = store("vectors-stray");
        edit_validity(&store, |bits| bits[0] |= 1 << 2);
        assert_falls_back(&store, "5 live slots for 4 rows");
    }

    #[test]
    fn missing_block_row_falls_back() {
        // The virtual table's scan reads positions and vectors only, not `_chunks`.
        let (_dir, store) = store("vectors-noblock");
        run(&store, "DELETE FROM vec_chunks_chunks");
        assert_falls_back(&store, "vectors of block 1: no such block");
    }

    #[test]
    fn missing_vectors_block_is_refused() {
        let (_dir, store) = store("vectors-novectors");
        run(&store, "DELETE FROM vec_chunks_vector_chunks00");
        assert_declined_layout(&store, "block 1 has no vectors");
        assert_refused(&store, "cannot be read");
    }

    #[test]
    fn vectors_stored_as_text_fall_back() {
        let (_dir, store) = store("vectors-text");
        run(
            &store,
            "UPDATE vec_chunks_vector_chunks00 SET vectors = CAST(vectors AS TEXT)",
        );
        assert_eq!(
            store
                .conn
                .query_row(
                    "SELECT typeof(vectors) FROM vec_chunks_vector_chunks00",
                    [],
                    |r| r.get::<_, String>(0)
                )
                .unwrap(),
            "text"
        );
        assert_falls_back(&store, "vectors of block 1: not a blob");
    }

    #[test]
    fn block_rowid_column_drifted_from_its_rowid_falls_back() {
        // The sqlite-vec quirk: `rowid` is a plain column of `_vector_chunks00`.
        let (_dir, store) = store("vectors-quirk");
        run(&store, "UPDATE vec_chunks_vector_chunks00 SET rowid = 99");
        assert_falls_back(&store, "rowid column differs");
    }
}
