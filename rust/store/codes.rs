//! The dense leg's codes as the store keeps them (`vector_codes`, one per vector).
//!
//! Owns: reading the dense index from the stored codes (and only the vectors they do not
//! reproduce, or none where the store can read one back cheaply: a model's rows are then held
//! as their fine codes), the exact scores of cached rows with the vectors they read back, and
//! writing the codes of vectors stored before the table existed. Does not own: the codes
//! themselves (row_code.rs, fine.rs), reading vectors (vectors.rs, direct.rs: each read at its
//! place in the file is checked here against its code's checksum, and one that fails is read
//! through SQLite) or writing a document's rows (write.rs, which writes each code with its
//! vector).

use rusqlite::types::ValueRef;
use rustc_hash::FxHashSet;

use crate::dense::{DenseIndex, ReadRows, Unread};
use crate::errors::{CoreError, Result};
use crate::row_code::{code_bytes, code_tag, StoredCodes};

use super::doctor::{check, some, Check};
use super::vectors::{self, Declared, Loaded};
use super::{SearchCache, Store};

/// The dense index with (chunk id, document id) per row.
pub(super) type Dense = (Vec<(i64, i64)>, DenseIndex);

/// Stored codes as read, with (chunk id, document id) per row, before any vector is added, how
/// many code rows there are in all (the rows of documents left out included), and each row's
/// code tag (`code_tag`: its list's entry must carry it).
type ReadCodes = (Vec<(i64, i64)>, StoredCodes, u64, Vec<u16>);

/// Meta `vector_codes` once every stored vector has its code, of the checked layout with fine
/// codes (`code_bytes`). An earlier value ("complete": codes without checksums; "checked":
/// without fine codes) is rewritten whole by the next write.
const CHECKED: &str = "checked-fine";

/// Rows from which a lean load (`Store::set_lean`) leaves the fine codes unread: 100 MB of
/// them at 384 dimensions. Below it, reading back every shortlisted row would cost a
/// calibration more time than the memory is worth (below the code pass's size, every row).
const LEAN_FROM: usize = if cfg!(test) { 1 } else { 1 << 18 };

impl Store {
    /// The dense index of every vector whose document `known` accepts, in chunk-id order, with
    /// (chunk id, document id) per row: from the stored codes when they are complete, checked
    /// as they are read (`load_codes`), else by coding every vector. A store whose vectors can
    /// be read back one by one (`Declared::PointBlocks`) holds the fine codes of a model's rows,
    /// not their vectors: a search reads the few it rescores (`Store::read_rows`).
    pub(super) fn load_dense(&self, dim: usize, known: impl Fn(i64) -> bool) -> Result<Dense> {
        if self.meta("vector_codes")?.as_deref() == Some(CHECKED) {
            return self.load_codes(dim, &known);
        }
        let (ids, data) = self.load_vectors(dim, |_, doc| known(doc))?;
        Ok((ids, DenseIndex::from_data(dim, data)))
    }

    /// The index from the stored codes, reading only the vectors they do not reproduce. Every
    /// byte is checked before it is used: a code must pass its checksum (one that fails is
    /// coded again from its vector), every vector read must match the checksum its code
    /// recorded, and there must be one code per chunk. Damage that leaves no sound copy is
    /// `CoreError::Damaged`, never a different answer.
    fn load_codes(&self, dim: usize, known: &impl Fn(i64) -> bool) -> Result<Dense> {
        let fine = Store::vectors_declared(&self.conn, dim) == Some(Declared::PointBlocks);
        let (ids, codes, rows, tags) =
            read_codes(&self.conn, dim, known, Stop::Never, fine, self.lean)?.expect("read whole");
        let chunks = chunk_count(&self.conn)?;
        if rows != chunks {
            return Err(damaged(format!(
                "{chunks} chunks but {rows} codes: every chunk has one"
            )));
        }
        let need = if fine {
            codes.damaged().to_vec()
        } else {
            codes.unreproduced()
        };
        let mut data = Vec::new();
        if !need.is_empty() {
            let wanted: FxHashSet<i64> = need.iter().map(|&i| ids[i].0).collect();
            let (got, vectors) = self.load_vectors(dim, |chunk, _| wanted.contains(&chunk))?;
            if got.len() != need.len() || got.iter().zip(&need).any(|(g, &i)| g.0 != ids[i].0) {
                let held: FxHashSet<i64> = got.iter().map(|g| g.0).collect();
                let lost: Vec<i64> = need
                    .iter()
                    .map(|&i| ids[i].0)
                    .filter(|c| !held.contains(c))
                    .collect();
                return Err(damaged(format!(
                    "{} chunks have a code but no vector (chunks {})",
                    lost.len(),
                    some(&lost, 5)
                )));
            }
            data = vectors;
        }
        let index = if fine {
            DenseIndex::from_stored_fine(codes, data)
        } else {
            DenseIndex::from_stored(codes, data)
        };
        match index {
            Ok(mut index) => {
                super::lists::attach_lists(&self.conn, dim, &ids, &tags, &mut index)?;
                Ok((ids, index))
            }
            Err(rows) => {
                let chunks: Vec<i64> = rows.iter().map(|&r| ids[r].0).collect();
                Err(damaged(format!(
                    "{} vectors do not match the checksum their code recorded (chunks {})",
                    chunks.len(),
                    some(&chunks, 5)
                )))
            }
        }
    }

    /// The index of every stored code, read through a connection of its own so that another
    /// thread reads it while this one reads the documents: only when that connection's
    /// snapshot is at `generation` too, the codes are complete, one per chunk, every one passes
    /// its checksum, and no vector need be read (every code reproduces its vector, or the
    /// store's vectors are read back one by one as a search needs them: a model's rows in a
    /// store of `Declared::PointBlocks`). None otherwise: `load_dense` reads the vectors.
    pub(super) fn codes_apart(
        path: &str,
        generation: i64,
        dim: usize,
        lean: bool,
    ) -> Option<Dense> {
        let conn = super::open_read_only(path).ok()?;
        conn.execute_batch("BEGIN").ok()?;
        let read = (|| -> rusqlite::Result<Option<Dense>> {
            if super::meta_of(&conn, "generation")?.and_then(|g| g.parse().ok()) != Some(generation)
                || super::meta_of(&conn, "vector_codes")?.as_deref() != Some(CHECKED)
            {
                return Ok(None);
            }
            let fine = Store::vectors_declared(&conn, dim) == Some(Declared::PointBlocks);
            let stop = if fine {
                Stop::Damaged
            } else {
                Stop::Unreproduced
            };
            let Some((ids, codes, rows, tags)) =
                read_codes(&conn, dim, &|_| true, stop, fine, lean)?
            else {
                return Ok(None);
            };
            if rows != chunk_count(&conn)? {
                return Ok(None);
            }
            let index = if fine {
                DenseIndex::from_stored_fine(codes, Vec::new())
            } else {
                DenseIndex::from_stored(codes, Vec::new())
            };
            let Ok(mut index) = index else {
                return Ok(None);
            };
            super::lists::attach_lists(&conn, dim, &ids, &tags, &mut index)?;
            Ok(Some((ids, index)))
        })();
        let _ = conn.execute_batch("COMMIT");
        read.ok().flatten()
    }

    /// Write the code of every stored vector that has none (vectors written before the codes
    /// were kept), once per store, inside the open write; codes written before they carried
    /// checksums (meta `vector_codes` of another value) are all written again. Storage whose
    /// vectors cannot be read is left as it is: searches then code the vectors they can read,
    /// and `recall doctor` names the damage.
    pub(super) fn complete_codes(&mut self) -> Result<()> {
        let state = self.meta("vector_codes")?;
        if state.as_deref() == Some(CHECKED) {
            return Ok(());
        }
        let Some(dim) = self.embedder()?.map(|e| e.dim) else {
            return Ok(());
        };
        if state.is_some() {
            self.conn.execute("DELETE FROM vector_codes", [])?;
        }
        let missing: FxHashSet<i64> = self
            .conn
            .prepare(
                "SELECT c.id FROM chunks c
                 WHERE NOT EXISTS (SELECT 1 FROM vector_codes k WHERE k.chunk_id = c.id)",
            )?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if !missing.is_empty() {
            let Ok((ids, data)) = self.load_vectors(dim, |chunk, _| missing.contains(&chunk))
            else {
                return Ok(());
            };
            let mut insert = self
                .conn
                .prepare("INSERT INTO vector_codes(chunk_id, doc_id, code) VALUES (?1, ?2, ?3)")?;
            for (&(chunk, doc), vector) in ids.iter().zip(data.chunks_exact(dim)) {
                insert.execute(rusqlite::params![
                    chunk,
                    doc,
                    code_bytes(chunk, doc, vector)
                ])?;
            }
        }
        self.set_meta("vector_codes", CHECKED)
    }
}

impl Store {
    /// The `k` best cached rows for `query` with exact cosines (`DenseIndex::top_k_reading`):
    /// a row whose fine code alone is held has its vector read back when it may place.
    pub(super) fn cached_top(
        &self,
        cache: &SearchCache,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<(usize, f32)>> {
        self.reading(cache, |read| cache.dense.top_k_reading(query, k, read))
    }

    /// The exact cosine of cached row `row` with `query`.
    pub(super) fn cached_score(
        &self,
        cache: &SearchCache,
        row: usize,
        query: &[f32],
    ) -> Result<f32> {
        self.reading(cache, |read| cache.dense.score_reading(row, query, read))
    }

    /// `scan` with a reader of the cached rows' vectors from sqlite-vec's storage, and again
    /// through its virtual table when a vector read so fails its checksum: damage only when the
    /// source of truth fails it too.
    fn reading<T>(
        &self,
        cache: &SearchCache,
        scan: impl Fn(&mut ReadRows<'_, CoreError>) -> std::result::Result<T, Unread<CoreError>>,
    ) -> Result<T> {
        let chunks =
            |rows: &[usize]| -> Vec<i64> { rows.iter().map(|&r| cache.row_chunk[r]).collect() };
        let dim = cache.dense.dim();
        // Where each row's vector lies, once the cache's thread has read it.
        let places = cache.places(&self.path);
        let placed = |rows: &[usize]| -> Option<Vec<u64>> {
            places.map(|p| rows.iter().map(|&r| p[r]).collect())
        };
        // At their place in the file first (direct.rs), while the file holds every page's last
        // version, each checked against its code's checksum here; a row not read so, or read
        // wrong, is read through SQLite.
        let direct = places.and(cache.direct.get()).filter(|d| d.current());
        let mut fast = |rows: &[usize]| {
            let (chunks, places) = (chunks(rows), placed(rows));
            let (Some(direct), Some(places)) = (direct, places.as_deref()) else {
                return self.read_rows(&chunks, places.as_deref(), dim);
            };
            let mut out = vec![0.0f32; rows.len() * dim];
            let mut bytes = vec![0u8; dim * 4];
            let mut missed = Vec::new();
            for (n, (&row, to)) in rows.iter().zip(out.chunks_exact_mut(dim)).enumerate() {
                let read = vectors::unplace(places[n])
                    .is_some_and(|(block, slot)| direct.read(block, slot, to, &mut bytes));
                if !(read && cache.dense.vector_matches(row, to)) {
                    missed.push(n);
                }
            }
            if !missed.is_empty() {
                let again: Vec<i64> = missed.iter().map(|&n| chunks[n]).collect();
                let at: Vec<u64> = missed.iter().map(|&n| places[n]).collect();
                let read = self.read_rows(&again, Some(&at), dim)?;
                for (&n, from) in missed.iter().zip(read.chunks_exact(dim)) {
                    out[n * dim..(n + 1) * dim].copy_from_slice(from);
                }
            }
            Ok(out)
        };
        match scan(&mut fast) {
            Err(Unread::Sum(_)) => {
                let mut table = |rows: &[usize]| self.read_rows_table(&chunks(rows), dim);
                scan(&mut table).map_err(|e| unread(&cache.row_chunk, e))
            }
            other => other.map_err(|e| unread(&cache.row_chunk, e)),
        }
    }
}

/// A failed read of rows' vectors as the error a search returns (`row_chunk`: each row's chunk).
fn unread(row_chunk: &[i64], e: Unread<CoreError>) -> CoreError {
    match e {
        Unread::Read(e) => e,
        Unread::Sum(rows) => {
            let chunks: Vec<i64> = rows.iter().map(|&r| row_chunk[r]).collect();
            damaged(format!(
                "{} vectors do not match the checksum their code recorded (chunks {})",
                chunks.len(),
                some(&chunks, 5)
            ))
        }
    }
}

/// Damage to the dense data, with the way out.
fn damaged(detail: String) -> CoreError {
    CoreError::Damaged {
        part: "dense index",
        detail: format!("{detail}; re-index into a new --db"),
    }
}

/// The number of chunk rows.
fn chunk_count(conn: &rusqlite::Connection) -> rusqlite::Result<u64> {
    let n: i64 = conn.query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Where `read_codes` gives up (None): at no code, at the first code that fails its checksum,
/// or at the first that fails it or does not reproduce its vector.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Never,
    Damaged,
    Unreproduced,
}

/// Every stored code whose document `known` accepts, in chunk-id order, with (chunk id,
/// document id) per row, and the number of code rows in all. A code that fails its checksum
/// is read as a row its vector must fill in (`StoredCodes::push`); reading stops as `stop`
/// says (None). The fine codes are kept only with `fine` (the rows will not hold their vectors).
fn read_codes(
    conn: &rusqlite::Connection,
    dim: usize,
    known: &impl Fn(i64) -> bool,
    stop: Stop,
    fine: bool,
    lean: bool,
) -> rusqlite::Result<Option<ReadCodes>> {
    // Room for every row before the first is read: the chunk ids are at most the largest.
    let rows: i64 = conn.query_row(
        "SELECT coalesce(max(chunk_id), 0) FROM vector_codes",
        [],
        |r| r.get(0),
    )?;
    let rows = usize::try_from(rows).unwrap_or(0).min(1 << 28);
    let mut codes = StoredCodes::with_capacity(dim, rows);
    if !fine {
        codes = codes.holding_vectors();
    } else if lean && rows >= LEAN_FROM {
        codes = codes.lean();
    }
    let mut ids = crate::memory::huge_vec(rows);
    let mut tags = Vec::with_capacity(rows);
    let mut stmt =
        conn.prepare("SELECT chunk_id, doc_id, code FROM vector_codes ORDER BY chunk_id")?;
    let mut found = stmt.query([])?;
    let mut all = 0u64;
    while let Some(r) = found.next()? {
        all += 1;
        let doc: i64 = r.get(1)?;
        if !known(doc) {
            continue;
        }
        let chunk: i64 = r.get(0)?;
        // Bytes stored as text (an edit by hand) are read as they are: the checksum decides.
        let code = match r.get_ref(2)? {
            ValueRef::Blob(b) | ValueRef::Text(b) => b,
            _ => &[],
        };
        let sound = codes.push(chunk, doc, code);
        if (stop == Stop::Damaged && !sound)
            || (stop == Stop::Unreproduced && codes.needs_vectors())
        {
            return Ok(None);
        }
        ids.push((chunk, doc));
        tags.push(code_tag(code));
    }
    Ok(Some((ids, codes, all, tags)))
}

impl Store {
    /// `recall doctor`: every vector (as the vectors check read them, with their dimension) has
    /// the code it would be given now, and no code is left without a vector (searches rank by
    /// the codes, not the vectors).
    pub(super) fn check_codes(&self, vectors: Option<&(usize, Loaded)>) -> Check {
        if self.embedder().ok().flatten().is_none() {
            return check("codes", "ok", "nothing indexed");
        }
        if self.meta("vector_codes").ok().flatten().as_deref() != Some(CHECKED) {
            return check(
                "codes",
                "warning",
                "the vectors stored before this version have no checked codes yet; searches \
                 code them as they load, and the next index run stores them",
            );
        }
        let Some((dim, (ids, data))) = vectors else {
            return check(
                "codes",
                "warning",
                "not compared: the vectors cannot be read",
            );
        };
        let dim = *dim;
        let stored: rusqlite::Result<rustc_hash::FxHashMap<i64, Vec<u8>>> = self
            .conn
            .prepare("SELECT chunk_id, code FROM vector_codes")
            .and_then(|mut st| st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect());
        let mut stored = match stored {
            Ok(stored) => stored,
            Err(e) => return check("codes", "damaged", format!("the codes cannot be read: {e}")),
        };
        let mut wrong = Vec::new();
        for (&(chunk, doc), vector) in ids.iter().zip(data.chunks_exact(dim)) {
            if stored.remove(&chunk).as_deref() != Some(&code_bytes(chunk, doc, vector)[..]) {
                wrong.push(chunk);
            }
        }
        let mut stray: Vec<i64> = stored.into_keys().collect();
        stray.sort_unstable();
        if wrong.is_empty() && stray.is_empty() {
            return check(
                "codes",
                "ok",
                format!("{} codes, one per vector", ids.len()),
            );
        }
        check(
            "codes",
            "damaged",
            format!(
                "{} vectors whose code is missing or differs (chunks {}), {} codes without a \
                 vector ({}): searches rank by the codes; re-index into a new --db",
                wrong.len(),
                some(&wrong, 5),
                stray.len(),
                some(&stray, 5)
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::{doc, embedder, temp_db, TempDb};

    const DIM: usize = 64;

    /// a.md holds rows a model would write (no code reproduces them), b.md hashed rows (each
    /// its code), the second with four tokens in one bucket.
    fn store(name: &str) -> (TempDb, Store) {
        let dir = temp_db(name);
        let mut store = Store::open(&dir).unwrap();
        store.begin(&embedder(DIM)).unwrap();
        store.put_document(&doc("a.md", 3, DIM), "t0").unwrap();
        let mut hashed = doc("b.md", 2, DIM);
        hashed.vectors = vec![0.0; 2 * DIM];
        for (row, buckets) in [(0, [1usize, 5, 9]), (1, [2, 7, 40])] {
            for (n, b) in buckets.into_iter().enumerate() {
                hashed.vectors[row * DIM + b] = if n == 0 && row == 1 { 4.0 } else { -1.0 };
            }
        }
        store.put_document(&hashed, "t0").unwrap();
        store.commit("t0").unwrap();
        (dir, store)
    }

    fn coded(store: &Store) -> Dense {
        let (ids, data) = store.load_vectors(DIM, |_, _| true).unwrap();
        (ids, DenseIndex::from_data(DIM, data))
    }

    /// Rows' vectors as a search reads them back.
    fn reader<'a>(
        store: &'a Store,
        ids: &'a [(i64, i64)],
    ) -> impl FnMut(&[usize]) -> Result<Vec<f32>> + 'a {
        move |rows: &[usize]| {
            let chunks: Vec<i64> = rows.iter().map(|&r| ids[r].0).collect();
            store.read_rows(&chunks, None, DIM)
        }
    }

    /// Row `row`'s cosine with `query`, as a search scores it.
    fn score(store: &Store, dense: &Dense, row: usize, query: &[f32]) -> Result<f32> {
        let row_chunk: Vec<i64> = dense.0.iter().map(|p| p.0).collect();
        dense
            .1
            .score_reading(row, query, &mut reader(store, &dense.0))
            .map_err(|e| unread(&row_chunk, e))
    }

    /// The same rows with the same vectors: each component is the cosine with its axis.
    fn same(store: &Store, a: &Dense, b: &Dense) {
        assert_eq!(a.0, b.0);
        assert_eq!(a.1.len(), b.1.len());
        for axis in 0..DIM {
            let mut unit = vec![0.0f32; DIM];
            unit[axis] = 1.0;
            for row in 0..a.1.len() {
                let (x, y) = (score(store, a, row, &unit), score(store, b, row, &unit));
                assert_eq!(x.unwrap().to_bits(), y.unwrap().to_bits(), "row {row}");
            }
        }
    }

    fn run(store: &Store, sql: &str) {
        store.conn.execute_batch(sql).unwrap();
    }

    /// Declare the vectors' table as earlier builds did (sqlite-vec's default blocks).
    fn earlier_blocks(store: &Store) {
        run(
            store,
            &format!(
                "CREATE TEMP TABLE kept AS SELECT chunk_id, embedding FROM vec_chunks;
                 DROP TABLE vec_chunks;
                 CREATE VIRTUAL TABLE vec_chunks USING vec0(chunk_id INTEGER PRIMARY KEY,
                     embedding float[{DIM}] distance_metric=cosine);
                 INSERT INTO vec_chunks(chunk_id, embedding) SELECT * FROM kept;
                 DROP TABLE kept;"
            ),
        );
        assert_eq!(
            Store::vectors_declared(&store.conn, DIM),
            Some(Declared::DefaultBlocks)
        );
    }

    /// The damage a search meets, as the dense index loads or as a row's vector is read back
    /// for its exact cosine: named, with the way out.
    fn assert_refused(store: &Store, says: &str) {
        let err = match store.load_dense(DIM, |_| true) {
            Err(e) => e,
            Ok(dense) => {
                let query = vec![1.0f32; DIM];
                (0..dense.1.len())
                    .find_map(|row| score(store, &dense, row, &query).err())
                    .expect("neither the load nor a read refused")
            }
        };
        let text = err.to_string();
        assert!(matches!(err, CoreError::Damaged { .. }), "{text}");
        assert!(text.contains(says) && text.contains("--db"), "{text}");
    }

    #[test]
    fn a_held_place_that_points_at_another_vector_is_read_again_through_the_table() {
        let (_dir, mut store) = store("codes-places");
        store.ensure_cache().unwrap();
        let query: Vec<f32> = (0..DIM).map(|i| (i % 7) as f32 - 3.0).collect();
        let right = store
            .cached_top(store.cache.as_ref().unwrap(), &query, 5)
            .unwrap();
        // The first search's reads started the thread that reads every row's place.
        let cell = std::sync::Arc::clone(&store.cache.as_ref().unwrap().places);
        waited(&cell);
        let cache = store.cache.as_mut().unwrap();
        let mut places = super::super::vectors::places_of(
            &store.conn,
            &cache.row_chunk,
            &std::sync::atomic::AtomicBool::new(false),
        )
        .unwrap()
        .unwrap();
        assert_eq!(cell.get(), Some(&places));
        assert_eq!(places.len(), cache.row_chunk.len());
        // a.md's first two rows: each place now names the other's vector.
        places.swap(0, 1);
        cache.places = std::sync::Arc::new(std::sync::OnceLock::from(places));
        let cache = store.cache.as_ref().unwrap();
        let swapped: Vec<i64> = cache.row_chunk[..2].to_vec();
        let read = store
            .read_rows(&swapped, cache.places.get().map(|p| &p[..2]), DIM)
            .unwrap();
        assert_ne!(read, store.read_rows_table(&swapped, DIM).unwrap());
        let again = store.cached_top(cache, &query, 5).unwrap();
        assert_eq!(bits(&again), bits(&right));
    }

    #[test]
    fn a_vector_read_wrong_at_its_place_in_the_file_is_read_again_through_sqlite() {
        let (_dir, mut store) = store("codes-direct");
        // The walk reads the file: pages still in the WAL are not there yet.
        store
            .conn
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
        store.ensure_cache().unwrap();
        let query: Vec<f32> = (0..DIM).map(|i| (i % 7) as f32 - 3.0).collect();
        let right = store
            .cached_top(store.cache.as_ref().unwrap(), &query, 5)
            .unwrap();
        // The first search's reads started the thread that finds every block in the file.
        let cell = std::sync::Arc::clone(&store.cache.as_ref().unwrap().direct);
        let direct = waited(&cell).expect("the blocks are found");
        let cache = store.cache.as_ref().unwrap();
        let place = cache.places.get().unwrap()[0];
        let (block, slot) = super::super::vectors::unplace(place).unwrap();
        let (mut to, mut bytes) = (vec![0.0f32; DIM], vec![0u8; DIM * 4]);
        assert!(direct.read(block, slot, &mut to, &mut bytes));
        assert!(cache.dense.vector_matches(0, &to));
        assert_eq!(
            bits(&store.cached_top(cache, &query, 5).unwrap()),
            bits(&right)
        );
        // Every block found one vector further on: each vector read there is its neighbour's.
        let shifted = direct.shifted((DIM * 4) as u64);
        assert!(shifted.read(block, slot, &mut to, &mut bytes));
        assert!(!cache.dense.vector_matches(0, &to));
        let cache = store.cache.as_mut().unwrap();
        cache.direct = std::sync::Arc::new(std::sync::OnceLock::from(shifted));
        let cache = store.cache.as_ref().unwrap();
        assert_eq!(
            bits(&store.cached_top(cache, &query, 5).unwrap()),
            bits(&right)
        );
    }

    /// A top k with each score as its bits: equal only when every cosine is the same float.
    fn bits(top: &[(usize, f32)]) -> Vec<(usize, u32)> {
        top.iter().map(|&(r, s)| (r, s.to_bits())).collect()
    }

    /// What the cache's thread sets in `cell`, once it has (20 s at most).
    fn waited<T>(cell: &std::sync::OnceLock<T>) -> Option<&T> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while cell.get().is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        cell.get()
    }

    #[test]
    fn a_store_let_go_while_its_places_are_read_leaves_no_wal_files_behind() {
        let dir = temp_db("codes-places-closed");
        // The thread opens its connection after the store is let go, unless the store waits.
        super::super::vectors::PLACES_LATE_MS.store(100, std::sync::atomic::Ordering::Relaxed);
        {
            let mut store = Store::open(&dir).unwrap();
            store.begin(&embedder(DIM)).unwrap();
            for d in 0..200 {
                store
                    .put_document(&doc(&format!("n{d}.md"), 4, DIM), "t0")
                    .unwrap();
            }
            store.commit("t0").unwrap();
            store.ensure_cache().unwrap();
            let query: Vec<f32> = (0..DIM).map(|i| (i % 5) as f32 - 2.0).collect();
            // Reads vectors back, which starts the thread reading the places; the store is let
            // go at once, before it reads.
            store
                .cached_top(store.cache.as_ref().unwrap(), &query, 5)
                .unwrap();
        }
        super::super::vectors::PLACES_LATE_MS.store(0, std::sync::atomic::Ordering::Relaxed);
        // Time for a thread left running to open, read and close.
        std::thread::sleep(std::time::Duration::from_millis(400));
        for end in ["-wal", "-shm"] {
            let left = format!("{}{end}", &*dir);
            assert!(!std::path::Path::new(&left).exists(), "{left} was left");
        }
    }

    #[test]
    fn a_store_reads_its_codes_as_the_vectors_coded() {
        let (_dir, store) = store("codes-read");
        assert_eq!(
            store.meta("vector_codes").unwrap().as_deref(),
            Some(CHECKED)
        );
        let from_codes = store.load_codes(DIM, &|_| true).unwrap();
        same(&store, &from_codes, &coded(&store));
        assert_eq!(from_codes.0.len(), 5);
        // b.md's row with a listed component keeps its vector; a.md's three rows their fine
        // codes, their vectors read back as a search needs them.
        assert_eq!(from_codes.1.vectors_held(), 1);
        // A store of earlier builds cannot read one vector back cheaply: a.md's rows keep
        // their vectors there.
        earlier_blocks(&store);
        let held = store.load_codes(DIM, &|_| true).unwrap();
        same(&store, &held, &from_codes);
        assert_eq!(held.1.vectors_held(), 4);
        // A document the corpus does not know is left out, as the vectors path leaves it.
        let b = from_codes.0[4].1;
        let known = |doc: i64| doc != b;
        let (ids, _) = store.load_codes(DIM, &known).unwrap();
        assert_eq!(ids, from_codes.0[..3]);
    }

    #[test]
    fn codes_without_checksums_are_written_again_at_the_next_commit() {
        for (case, sql) in [
            (
                "no codes",
                "DELETE FROM vector_codes; DELETE FROM meta WHERE key = 'vector_codes';",
            ),
            (
                "codes of the layout before checksums",
                "UPDATE vector_codes SET code = x'01'; UPDATE meta SET value = 'complete'
                 WHERE key = 'vector_codes';",
            ),
        ] {
            let (_dir, mut store) = store("codes-backfill");
            let before = coded(&store);
            run(&store, sql);
            // Until then the vectors are coded as they are read.
            same(&store, &store.load_dense(DIM, |_| true).unwrap(), &before);
            let read = store.load_vectors(DIM, |_, _| true).unwrap();
            assert_eq!(
                store.check_codes(Some(&(DIM, read))).status,
                "warning",
                "{case}"
            );
            store.begin(&embedder(DIM)).unwrap();
            store.commit("t1").unwrap();
            assert_eq!(
                store.meta("vector_codes").unwrap().as_deref(),
                Some(CHECKED)
            );
            let count: i64 = store
                .conn
                .query_row("SELECT count(*) FROM vector_codes", [], |r| r.get(0))
                .unwrap();
            assert_eq!(count, 5, "{case}");
            same(&store, &store.load_codes(DIM, &|_| true).unwrap(), &before);
            let read = store.load_vectors(DIM, |_, _| true).unwrap();
            assert_eq!(store.check_codes(Some(&(DIM, read))).status, "ok", "{case}");
        }
    }

    #[test]
    fn codes_read_apart_only_when_they_are_all_a_store_needs_at_that_generation() {
        // a.md's rows hold their fine codes: the codes alone make the index.
        let (_dir, store) = store("codes-apart");
        let generation = store.generation().unwrap();
        let apart = Store::codes_apart(&store.path, generation, DIM, false).expect("read apart");
        same(&store, &apart, &store.load_codes(DIM, &|_| true).unwrap());
        assert_eq!(apart.0.len(), 5);
        assert!(Store::codes_apart(&store.path, generation + 1, DIM, false).is_none());
        // Not when a code fails its checksum, nor when a chunk has no code.
        run(
            &store,
            "UPDATE vector_codes SET code = code || x'00' WHERE chunk_id = 4",
        );
        assert!(Store::codes_apart(&store.path, generation, DIM, false).is_none());
        run(&store, "DELETE FROM vector_codes WHERE chunk_id = 4");
        assert!(Store::codes_apart(&store.path, generation, DIM, false).is_none());
        // In a store of earlier builds a.md's rows need their vectors, read by `load_dense`;
        // without them the codes alone make the index.
        let (_dir, earlier) = super::tests::store("codes-apart-earlier");
        earlier_blocks(&earlier);
        let generation = earlier.generation().unwrap();
        assert!(Store::codes_apart(&earlier.path, generation, DIM, false).is_none());
        run(
            &earlier,
            "PRAGMA foreign_keys = OFF;
             DELETE FROM chunks WHERE doc_id = (SELECT id FROM documents WHERE path = 'a.md');
             DELETE FROM vector_codes WHERE doc_id = (SELECT id FROM documents WHERE path = 'a.md');",
        );
        let apart = Store::codes_apart(&earlier.path, generation, DIM, false).expect("read apart");
        same(
            &earlier,
            &apart,
            &earlier.load_codes(DIM, &|_| true).unwrap(),
        );
        assert_eq!(apart.0.len(), 2);
    }

    /// Chunk 2's stored vector replaced behind its code (a model's row of a.md).
    fn change_vector_of_chunk_2(store: &Store) {
        store
            .conn
            .execute(
                "UPDATE vec_chunks SET embedding = ?1 WHERE chunk_id = 2",
                [crate::store::f32_blob(&[0.5; DIM])],
            )
            .unwrap();
    }

    #[test]
    fn doctor_finds_a_vector_changed_behind_its_code() {
        let (_dir, store) = store("codes-doctor");
        let status = |store: &Store| {
            let read = store.load_vectors(DIM, |_, _| true).unwrap();
            store.check_codes(Some(&(DIM, read)))
        };
        assert_eq!(status(&store).status, "ok", "{}", status(&store).detail);
        change_vector_of_chunk_2(&store);
        let found = status(&store);
        assert_eq!(found.status, "damaged");
        assert!(found.detail.contains("(chunks 2)"), "{}", found.detail);
        // A search refuses rather than rank by it.
        assert_refused(
            &store,
            "1 vectors do not match the checksum their code recorded (chunks 2)",
        );
        run(&store, "DELETE FROM meta WHERE key = 'vector_codes'");
        assert_eq!(status(&store).status, "warning");
    }

    #[test]
    fn a_lean_searcher_answers_as_a_whole_one_and_is_let_go_when_cleared() {
        let (_dir, mut store) = store("codes-lean");
        let policy = crate::store::fixtures::policy();
        let query = coded(&store).1.row(1).to_vec();
        let shown = |store: &mut Store| {
            let out = store.search(&query, "chunk", 5, 20, &policy).unwrap();
            let hits: Vec<(i64, u32)> = out
                .hits
                .iter()
                .map(|h| (h.judged.chunk, h.judged.score.to_bits()))
                .collect();
            (out.dense, hits)
        };
        let whole = shown(&mut store);
        let whole_bytes = store.cache.as_ref().expect("loaded").dense.bytes_per_row();
        store.cache = None;
        store.set_lean(true);
        assert_eq!(shown(&mut store), whole);
        let cache = store.cache.as_ref().expect("loaded by the search");
        assert!(cache.dense.is_lean());
        // The model's rows hold no fine code (the hashed rows' codes are their vectors).
        assert!(cache.dense.bytes_per_row() < whole_bytes);
        store.set_lean(false);
        assert!(store.cache.is_none());
        assert_eq!(shown(&mut store), whole);
        assert!(!store.cache.as_ref().expect("loaded whole").dense.is_lean());
        // A whole searcher already held serves lean searches as it is, and stays.
        store.set_lean(true);
        assert_eq!(shown(&mut store), whole);
        store.set_lean(false);
        assert!(store.cache.as_ref().is_some_and(|c| !c.dense.is_lean()));
    }

    #[test]
    fn a_search_refuses_a_vector_changed_after_its_codes_loaded() {
        let (_dir, mut store) = store("codes-search-behind");
        // Every page in the file, none in the write-ahead log: the vectors are read there.
        store
            .conn
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
        let policy = crate::store::fixtures::policy();
        let query = coded(&store).1.row(1).to_vec();
        let first = store.search(&query, "chunk", 5, 20, &policy).unwrap();
        assert_eq!(first.dense[0].0, 2);
        let cell = std::sync::Arc::clone(&store.cache.as_ref().unwrap().direct);
        assert!(waited(&cell).is_some_and(|d| d.current()));
        // Chunk 2's vector changed behind its code, its generation the same: the held codes
        // stay, and its vector read back for its exact cosine fails the checksum both ways.
        // The file still holds the vector it had (the change is in the log), which matches its
        // code: it is not read there.
        change_vector_of_chunk_2(&store);
        let err = store.search(&query, "chunk", 5, 20, &policy).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, CoreError::Damaged { .. }), "{text}");
        assert!(
            text.contains("(chunks 2)") && text.contains("--db"),
            "{text}"
        );
    }

    #[test]
    fn a_damaged_code_is_coded_again_from_its_sound_vector() {
        let (_dir, store) = store("codes-damaged");
        let before = coded(&store);
        let results = |store: &Store| {
            let (ids, index) = store.load_dense(DIM, |_| true).unwrap();
            let q: Vec<f32> = (0..DIM).map(|i| ((i * 7) % 5) as f32 - 2.0).collect();
            let top = index.top_k_reading(&q, 5, &mut reader(store, &ids));
            top.unwrap()
        };
        let sound = results(&store);
        // A flipped mask bit in a hashed row's code (reproduced: no vector is read for it
        // otherwise), and in a model row's code.
        run(
            &store,
            "UPDATE vector_codes SET code = substr(code, 1, 20) || x'ff' || substr(code, 22)
             WHERE chunk_id IN (2, 4)",
        );
        same(&store, &store.load_dense(DIM, |_| true).unwrap(), &before);
        assert_eq!(results(&store), sound);
        // Its vector gone too: nothing sound is left for that row.
        run(&store, "DELETE FROM vec_chunks WHERE chunk_id = 4");
        assert_refused(&store, "1 chunks have a code but no vector (chunks 4)");
        // A code moved onto another row vouches for that row's vector, not this one's.
        let (_dir, moved) = super::tests::store("codes-moved");
        run(
            &moved,
            "UPDATE vector_codes SET code = (SELECT code FROM vector_codes WHERE chunk_id = 5)
             WHERE chunk_id = 4",
        );
        assert_refused(
            &moved,
            "do not match the checksum their code recorded (chunks 4)",
        );
    }

    #[test]
    fn a_chunk_without_its_code_or_a_vector_negated_is_refused() {
        let (_dir, missing) = store("codes-missing");
        run(&missing, "DELETE FROM vector_codes WHERE chunk_id = 5");
        assert_refused(&missing, "5 chunks but 4 codes");
        let (_dir, negated) = store("codes-negated");
        negated
            .conn
            .execute(
                "UPDATE vec_chunks SET embedding = ?1 WHERE chunk_id = 1",
                [crate::store::f32_blob(
                    &coded(&negated)
                        .1
                        .row(0)
                        .iter()
                        .map(|x| -x)
                        .collect::<Vec<_>>(),
                )],
            )
            .unwrap();
        assert_refused(&negated, "(chunks 1)");
        // A model row's vector that is gone: refused as it is read back, or as the index
        // loads in a store of earlier builds.
        let (_dir, gone) = store("codes-vector-gone");
        run(&gone, "DELETE FROM vec_chunks WHERE chunk_id = 2");
        assert_refused(&gone, "chunk 2 has no vector");
        earlier_blocks(&gone);
        assert_refused(&gone, "a code but no vector (chunks 2)");
    }
}
