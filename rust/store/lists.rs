//! The dense leg's lists as the store keeps them (`dense_lists`: the centroids; `vector_lists`:
//! each row's list, in blocks of chunk ids), so that a searcher of many of a model's rows cuts
//! only the lists nearest a query (lists.rs).
//!
//! Owns: keeping the lists at each commit (trained over a sample of the stored codes once a
//! store of a model's rows reaches `LISTS_FROM` rows, trained again when it has doubled since,
//! and the rows written since given their nearest list), reading them back checked, and their
//! doctor check. A row's entry carries its code's tag (`code_tag`), so that an entry left by a
//! chunk since removed is never taken for another row of that id. A row read back without a
//! sound entry is in no list, which every query reads: damage here costs time, never a row.
//! Does not own: the codes (codes.rs), the k-means and the lists' use (lists.rs, dense.rs).

use rusqlite::OptionalExtension;

use crate::dense::DenseIndex;
use crate::errors::Result;
use crate::lists::{nearest, train, Lists, UNLISTED};
use crate::row_code::{code_tag, StoredCodes};

use super::doctor::{check, some, Check};
use super::Store;

/// Rows from which a store of a model's rows keeps lists: where a query's sign cut over every
/// row splits over two cores (`dense::ROWS_PER_THREAD`). Below it a search of 100k rows takes
/// 2.5 ms whole (benches/RESULTS.md); lists there are not measured.
const LISTS_FROM: usize = if cfg!(test) { 512 } else { 1 << 18 };
/// Lists trained, and sample rows a list.
const LISTS: usize = if cfg!(test) { 8 } else { 256 };
const SAMPLE_PER_LIST: usize = 64;
/// The lists are trained again once the rows are this many times those they were trained on.
const GROWTH: i64 = 2;
/// Codes decoded and placed at a time.
const BATCH: usize = 16_384;
/// Chunk ids a block of entries holds, and the bytes of an entry (list, tag).
const BLOCK: i64 = if cfg!(test) { 64 } else { 4096 };
const ENTRY: usize = 4;
/// The list of an entry in none.
const NONE: u16 = u16::MAX;

/// The centroids as stored, once checked: the rows they were trained on, the largest chunk id
/// placed, and the centroids.
struct Centroids {
    trained_on: i64,
    placed_through: i64,
    centroids: Vec<f32>,
}

impl Store {
    /// Keep the lists at a commit, inside its write (see the module docs). A store of a hashed
    /// embedder keeps none: its queries take the sliced pass, not the sign cut.
    pub(super) fn keep_lists(&mut self) -> Result<()> {
        let Some(embedder) = self.embedder()? else {
            return Ok(());
        };
        if embedder.name.starts_with("hashing-") {
            return Ok(());
        }
        let dim = embedder.dim;
        // Counted only where there may be enough (a count reads a whole index of the chunks).
        let largest: i64 = self.conn.query_row(
            "SELECT coalesce(max(chunk_id), 0) FROM vector_codes",
            [],
            |r| r.get(0),
        )?;
        if (largest as usize) < LISTS_FROM {
            return Ok(());
        }
        let rows: i64 = self
            .conn
            .query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))?;
        if (rows as usize) < LISTS_FROM {
            return Ok(());
        }
        let held = match read_centroids(&self.conn, dim) {
            Some(Ok(c)) if rows < GROWTH * c.trained_on => c,
            _ => {
                let centroids = self.train_lists(dim, largest)?;
                self.conn.execute("DELETE FROM vector_lists", [])?;
                self.conn.execute("DELETE FROM dense_lists", [])?;
                self.conn.execute(
                    "INSERT INTO dense_lists(id, dim, trained_on, placed_through, centroids,
                     checksum) VALUES (1, ?1, ?2, 0, ?3, 0)",
                    rusqlite::params![dim as i64, rows, floats(&centroids)],
                )?;
                Centroids {
                    trained_on: rows,
                    placed_through: 0,
                    centroids,
                }
            }
        };
        let through = self.place_rows(dim, &held.centroids, held.placed_through)?;
        let held = Centroids {
            placed_through: through.max(held.placed_through),
            ..held
        };
        self.conn.execute(
            "UPDATE dense_lists SET placed_through = ?1, checksum = ?2 WHERE id = 1",
            rusqlite::params![held.placed_through, held.sum(dim)],
        )?;
        Ok(())
    }

    /// The centroids of a sample of the stored codes, `SAMPLE_PER_LIST` a list: the first row
    /// at or after each of as many chunk ids spread evenly up to the largest.
    fn train_lists(&self, dim: usize, largest: i64) -> Result<Vec<f32>> {
        let want = (LISTS * SAMPLE_PER_LIST) as i64;
        let mut st = self.conn.prepare(
            "SELECT chunk_id, doc_id, code FROM vector_codes WHERE chunk_id >= ?1
             ORDER BY chunk_id LIMIT 1",
        )?;
        let (mut sample, mut last) = (Vec::new(), None);
        for s in 0..want {
            let mut found = st.query([1 + s * largest / want])?;
            let Some(r) = found.next()? else {
                break;
            };
            let chunk: i64 = r.get(0)?;
            if last == Some(chunk) {
                continue;
            }
            last = Some(chunk);
            if let Some(v) = decoded(chunk, r.get(1)?, blob(r.get_ref(2)?), dim) {
                sample.extend(v);
            }
        }
        Ok(train(&sample, dim, LISTS))
    }

    /// Give each row of chunk id above `after` its nearest list; the largest chunk id placed
    /// (0 for none). A code that fails its checks is left in no list.
    fn place_rows(&mut self, dim: usize, centroids: &[f32], after: i64) -> Result<i64> {
        let mut st = self.conn.prepare(
            "SELECT chunk_id, doc_id, code FROM vector_codes WHERE chunk_id > ?1 ORDER BY chunk_id",
        )?;
        let mut found = st.query([after])?;
        let mut blocks = Blocks::new(&self.conn);
        let (mut rows, mut vectors) = (Vec::with_capacity(BATCH), Vec::new());
        let mut through = 0;
        let mut place = |rows: &mut Vec<(i64, u16)>, vectors: &mut Vec<f32>| -> Result<()> {
            for (&(chunk, tag), list) in rows.iter().zip(nearest(centroids, dim, vectors)) {
                blocks.set(chunk, list as u16, tag)?;
            }
            rows.clear();
            vectors.clear();
            Ok(())
        };
        while let Some(r) = found.next()? {
            let chunk: i64 = r.get(0)?;
            through = chunk;
            let code = blob(r.get_ref(2)?);
            if let Some(v) = decoded(chunk, r.get(1)?, code, dim) {
                rows.push((chunk, code_tag(code)));
                vectors.extend(v);
            }
            if rows.len() == BATCH {
                place(&mut rows, &mut vectors)?;
            }
        }
        place(&mut rows, &mut vectors)?;
        blocks.flush()?;
        Ok(through)
    }

    /// `recall doctor`: the centroids and every block of entries pass their checksums.
    pub(super) fn check_lists(&self) -> Check {
        let dim = match self.embedder() {
            Ok(Some(e)) => e.dim,
            _ => return check("lists", "ok", "nothing indexed"),
        };
        match read_centroids(&self.conn, dim) {
            None => return check("lists", "ok", "none kept (a scan of every row)"),
            Some(Err(why)) => {
                return check(
                    "lists",
                    "damaged",
                    format!("{why}: searches read every row; the next index run keeps them again"),
                )
            }
            Some(Ok(_)) => {}
        }
        let blocks = (|| -> rusqlite::Result<(usize, Vec<i64>)> {
            let mut st = self
                .conn
                .prepare("SELECT block, entries, checksum FROM vector_lists ORDER BY block")?;
            let mut found = st.query([])?;
            let (mut all, mut wrong) = (0, Vec::new());
            while let Some(r) = found.next()? {
                all += 1;
                let block: i64 = r.get(0)?;
                if entries(block, blob(r.get_ref(1)?), r.get(2)?).is_none() {
                    wrong.push(block * BLOCK);
                }
            }
            Ok((all, wrong))
        })();
        match blocks {
            Err(e) => check("lists", "damaged", format!("the lists cannot be read: {e}")),
            Ok((all, wrong)) if wrong.is_empty() => check(
                "lists",
                "ok",
                format!("{all} blocks of entries, each passing its checksum"),
            ),
            Ok((_, wrong)) => check(
                "lists",
                "damaged",
                format!(
                    "{} blocks of {BLOCK} entries fail their checksum (from chunks {}): \
                     searches read their rows with every query; the next index run that trains \
                     the lists again rewrites them",
                    wrong.len(),
                    some(&wrong, 5)
                ),
            ),
        }
    }
}

/// The blocks of entries a placement changes, read as it first reaches each and written when
/// it moves past it (chunk ids come in order).
struct Blocks<'c> {
    conn: &'c rusqlite::Connection,
    open: Option<(i64, Vec<u8>)>,
}

impl<'c> Blocks<'c> {
    fn new(conn: &'c rusqlite::Connection) -> Blocks<'c> {
        Blocks { conn, open: None }
    }

    fn set(&mut self, chunk: i64, list: u16, tag: u16) -> rusqlite::Result<()> {
        let block = chunk.div_euclid(BLOCK);
        if self.open.as_ref().map(|(b, _)| *b) != Some(block) {
            self.flush()?;
            let held = self
                .conn
                .query_row(
                    "SELECT entries, checksum FROM vector_lists WHERE block = ?1",
                    [block],
                    |r| Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, i64>(1)?)),
                )
                .optional()?;
            let bytes = held
                .and_then(|(bytes, checksum)| entries(block, &bytes, checksum).map(|_| bytes))
                .unwrap_or_else(empty_block);
            self.open = Some((block, bytes));
        }
        let (_, bytes) = self.open.as_mut().expect("opened above");
        let at = chunk.rem_euclid(BLOCK) as usize * ENTRY;
        bytes[at..at + 2].copy_from_slice(&list.to_le_bytes());
        bytes[at + 2..at + ENTRY].copy_from_slice(&tag.to_le_bytes());
        Ok(())
    }

    fn flush(&mut self) -> rusqlite::Result<()> {
        if let Some((block, bytes)) = self.open.take() {
            self.conn.execute(
                "INSERT OR REPLACE INTO vector_lists(block, entries, checksum) VALUES (?1, ?2, ?3)",
                rusqlite::params![block, bytes, block_sum(block, &bytes)],
            )?;
        }
        Ok(())
    }
}

fn empty_block() -> Vec<u8> {
    let mut bytes = vec![0u8; BLOCK as usize * ENTRY];
    for entry in bytes.chunks_exact_mut(ENTRY) {
        entry[..2].copy_from_slice(&NONE.to_le_bytes());
    }
    bytes
}

/// A block's entries as (list, tag), when its bytes pass the checks.
fn entries(block: i64, bytes: &[u8], checksum: i64) -> Option<Vec<(u16, u16)>> {
    if bytes.len() != BLOCK as usize * ENTRY || block_sum(block, bytes) != checksum {
        return None;
    }
    Some(
        bytes
            .chunks_exact(ENTRY)
            .map(|e| {
                (
                    u16::from_le_bytes([e[0], e[1]]),
                    u16::from_le_bytes([e[2], e[3]]),
                )
            })
            .collect(),
    )
}

fn block_sum(block: i64, bytes: &[u8]) -> i64 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&block.to_le_bytes());
    hasher.update(bytes);
    i64::from(hasher.finalize())
}

/// Set the lists kept in the store on `index`, whose rows are those of `ids` (chunk id,
/// document id), in chunk-id order, with their codes' tags. Nothing is set when the store keeps
/// no sound centroids; a row whose entry is missing, fails its block's checksum or carries
/// another tag is in no list.
pub(super) fn attach_lists(
    conn: &rusqlite::Connection,
    dim: usize,
    ids: &[(i64, i64)],
    tags: &[u16],
    index: &mut DenseIndex,
) -> rusqlite::Result<()> {
    let Some(Ok(held)) = read_centroids(conn, dim) else {
        return Ok(());
    };
    let lists = held.centroids.len() / dim;
    let mut of_row = vec![UNLISTED; ids.len()];
    let mut st =
        conn.prepare("SELECT block, entries, checksum FROM vector_lists ORDER BY block")?;
    let mut found = st.query([])?;
    let mut at = 0;
    while let Some(r) = found.next()? {
        let block: i64 = r.get(0)?;
        let Some(entries) = entries(block, blob(r.get_ref(1)?), r.get(2)?) else {
            continue;
        };
        while at < ids.len() && ids[at].0 < block * BLOCK {
            at += 1;
        }
        while at < ids.len() && ids[at].0 < (block + 1) * BLOCK {
            let (list, tag) = entries[(ids[at].0 - block * BLOCK) as usize];
            if usize::from(list) < lists && tag == tags[at] {
                of_row[at] = u32::from(list);
            }
            at += 1;
        }
    }
    index.set_lists(Lists::new(dim, held.centroids, of_row));
    Ok(())
}

/// The stored centroids: None when there are none, an error naming the damage when they fail
/// their checks (their checksum, their length, a value that is not a finite number).
fn read_centroids(
    conn: &rusqlite::Connection,
    dim: usize,
) -> Option<std::result::Result<Centroids, String>> {
    let row = conn
        .query_row(
            "SELECT dim, trained_on, placed_through, centroids, checksum FROM dense_lists
             WHERE id = 1",
            [],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Vec<u8>>(3)?,
                    r.get::<_, i64>(4)?,
                ))
            },
        )
        .optional();
    let (stored_dim, trained_on, placed_through, bytes, checksum) = match row {
        Ok(None) => return None,
        Ok(Some(row)) => row,
        Err(e) => return Some(Err(format!("the lists' centroids cannot be read: {e}"))),
    };
    let centroids: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().expect("four bytes")))
        .collect();
    if stored_dim != dim as i64
        || bytes.len() % (4 * dim) != 0
        || centroids.is_empty()
        || centroids.len() / dim > usize::from(NONE)
        || centroids.iter().any(|x| !x.is_finite())
    {
        return Some(Err("the lists' centroids fail their checksum".into()));
    }
    let held = Centroids {
        trained_on,
        placed_through,
        centroids,
    };
    if i64::from(held.sum(dim)) != checksum {
        return Some(Err(
            "the lists' centroids, or the counts kept with them, fail their checksum".into(),
        ));
    }
    Some(Ok(held))
}

impl Centroids {
    /// CRC-32 of the dimension, the rows trained on and the largest chunk id placed (i64 each)
    /// and the centroids, little-endian: every field a later commit or a search acts on.
    fn sum(&self, dim: usize) -> u32 {
        let mut hasher = crc32fast::Hasher::new();
        for field in [dim as i64, self.trained_on, self.placed_through] {
            hasher.update(&field.to_le_bytes());
        }
        hasher.update(&floats(&self.centroids));
        hasher.finalize()
    }
}

/// A stored code's bytes (bytes stored as text, an edit by hand, as they are: the checksum
/// decides).
fn blob(value: rusqlite::types::ValueRef<'_>) -> &[u8] {
    match value {
        rusqlite::types::ValueRef::Blob(b) | rusqlite::types::ValueRef::Text(b) => b,
        _ => &[],
    }
}

/// The vector a stored code stands for, or None when the code fails its checks.
fn decoded(chunk: i64, doc: i64, bytes: &[u8], dim: usize) -> Option<Vec<f32>> {
    let mut one = StoredCodes::new(dim);
    one.push(chunk, doc, bytes).then(|| one.decoded(0))
}

fn floats(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row_code::fixtures::unit_rows;
    use crate::store::fixtures::{doc, temp_db, TempDb};
    use crate::store::EmbedderInfo;

    const DIM: usize = 32;
    /// Rows a note: 40 notes reach `LISTS_FROM` (512 under test).
    const ROWS: usize = 16;

    fn model() -> EmbedderInfo {
        EmbedderInfo {
            name: "onnx:model".into(),
            dim: DIM,
            fingerprint: "fp".into(),
        }
    }

    /// Notes `from..to`, each of `ROWS` rows a model would write, in one commit.
    fn write(store: &mut Store, from: usize, to: usize) {
        store.begin(&model()).unwrap();
        for n in from..to {
            let mut note = doc(&format!("n{n}.md"), ROWS, DIM);
            note.vectors = unit_rows(ROWS, DIM, 7 + n as u64);
            store.put_document(&note, "t0").unwrap();
        }
        store.commit("t0").unwrap();
    }

    fn count(store: &Store, sql: &str) -> i64 {
        store.conn.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    fn trained_on(store: &Store) -> i64 {
        count(store, "SELECT trained_on FROM dense_lists")
    }

    fn listed(store: &Store) -> Option<usize> {
        let (_, index) = store.load_dense(DIM, |_| true).unwrap();
        index.lists().map(Lists::listed)
    }

    fn lists_check(store: &mut Store) -> Check {
        let checks = store.doctor().unwrap();
        checks.into_iter().find(|c| c.name == "lists").unwrap()
    }

    fn opened(name: &str, notes: usize) -> (TempDb, Store) {
        let db = temp_db(name);
        let mut store = Store::open(&db).unwrap();
        write(&mut store, 0, notes);
        (db, store)
    }

    #[test]
    fn a_commit_keeps_lists_from_enough_rows_and_places_the_rows_written_since() {
        let (_db, mut store) = opened("lists-kept", 31);
        assert_eq!(
            count(&store, "SELECT count(*) FROM dense_lists"),
            0,
            "too few rows"
        );
        assert_eq!(listed(&store), None);
        write(&mut store, 31, 33);
        assert_eq!(trained_on(&store), 33 * ROWS as i64);
        assert_eq!(listed(&store), Some(33 * ROWS));
        // Written since: placed in the lists trained before.
        write(&mut store, 33, 40);
        assert_eq!(trained_on(&store), 33 * ROWS as i64);
        assert_eq!(listed(&store), Some(40 * ROWS));
        assert_eq!(lists_check(&mut store).status, "ok");
        // Twice the rows they were trained on: trained again.
        write(&mut store, 40, 70);
        assert_eq!(trained_on(&store), 70 * ROWS as i64);
        assert_eq!(listed(&store), Some(70 * ROWS));
    }

    #[test]
    fn an_entry_left_by_a_removed_row_is_never_taken_for_a_row_given_its_id() {
        let (_db, mut store) = opened("lists-reused", 40);
        let last = count(&store, "SELECT max(chunk_id) FROM vector_codes");
        store.begin(&model()).unwrap();
        store
            .remove_documents("/corpus", &["n39.md".into()])
            .unwrap();
        store.commit("t0").unwrap();
        // A note written now takes the removed note's chunk ids, at or below those placed.
        write(&mut store, 40, 41);
        assert_eq!(
            count(&store, "SELECT max(chunk_id) FROM vector_codes"),
            last
        );
        let (ids, index) = store.load_dense(DIM, |_| true).unwrap();
        assert_eq!(index.lists().map(Lists::listed), Some(39 * ROWS));
        // In no list, every query reads them: each new row is found by its own vector.
        let mut read = |rows: &[usize]| {
            let chunks: Vec<i64> = rows.iter().map(|&r| ids[r].0).collect();
            store.read_rows(&chunks, None, DIM)
        };
        let rows = unit_rows(ROWS, DIM, 47);
        for (j, row) in rows.chunks_exact(DIM).enumerate() {
            let top = index.top_k_reading(row, 1, &mut read).ok().unwrap();
            assert_eq!(top[0].0, 39 * ROWS + j);
        }
    }

    #[test]
    fn a_store_of_hashed_rows_keeps_no_lists() {
        let db = temp_db("lists-hashed");
        let mut store = Store::open(&db).unwrap();
        store.begin(&crate::store::fixtures::embedder(DIM)).unwrap();
        for n in 0..40 {
            store
                .put_document(&doc(&format!("n{n}.md"), ROWS, DIM), "t0")
                .unwrap();
        }
        store.commit("t0").unwrap();
        assert_eq!(count(&store, "SELECT count(*) FROM dense_lists"), 0);
        assert_eq!(listed(&store), None);
    }

    #[test]
    fn damaged_lists_cost_a_search_time_never_a_row_and_doctor_names_them() {
        let (_db, mut store) = opened("lists-damaged", 40);
        let rows = 40 * ROWS;
        // A block's entry changed: every row of the block (chunk ids 64..127) is read by every
        // query.
        store
            .conn
            .execute_batch(
                "UPDATE vector_lists SET entries = x'0000' || substr(entries, 3) WHERE block = 1",
            )
            .unwrap();
        assert_eq!(listed(&store), Some(rows - BLOCK as usize));
        let check = lists_check(&mut store);
        assert_eq!(check.status, "damaged");
        assert!(check.detail.contains("from chunks 64"), "{}", check.detail);
        // Centroids whose bytes changed: no lists, every row read.
        store
            .conn
            .execute_batch(
                "UPDATE dense_lists SET centroids = \
                 substr(centroids, 1, 8) || x'00000000' || substr(centroids, 13)",
            )
            .unwrap();
        assert_eq!(listed(&store), None);
        let (_, index) = store.load_dense(DIM, |_| true).unwrap();
        assert_eq!(index.len(), rows);
        let check = lists_check(&mut store);
        assert_eq!(check.status, "damaged");
        assert!(check.detail.contains("centroids"), "{}", check.detail);
        // The next commit trains them again.
        write(&mut store, 40, 41);
        assert_eq!(listed(&store), Some(rows + ROWS));
        assert_eq!(lists_check(&mut store).status, "ok");
    }

    #[test]
    fn a_changed_count_or_placed_mark_is_damage_like_changed_centroids() {
        for column in ["trained_on", "placed_through", "dim"] {
            let (_db, mut store) = opened(&format!("lists-head-{column}"), 40);
            assert_eq!(lists_check(&mut store).status, "ok");
            // A mark moved past every row would leave the rows written next in no list; a
            // count changed would train again too early or too late.
            store
                .conn
                .execute(
                    &format!("UPDATE dense_lists SET {column} = {column} + 1"),
                    [],
                )
                .unwrap();
            let check = lists_check(&mut store);
            assert_eq!(check.status, "damaged", "{column}");
            assert_eq!(listed(&store), None, "{column}");
            // The next commit trains them again.
            write(&mut store, 40, 41);
            assert_eq!(lists_check(&mut store).status, "ok", "{column}");
            assert_eq!(listed(&store), Some(41 * ROWS), "{column}");
        }
    }
}
