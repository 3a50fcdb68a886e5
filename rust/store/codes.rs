//! The dense leg's codes as the store keeps them (`vector_codes`, one per vector).
//!
//! Owns: reading the dense index from the stored codes (and only the vectors they do not
//! reproduce), and writing the codes of vectors stored before the table existed. Does not own:
//! the code itself (row_code.rs), reading vectors (vectors.rs) or writing a document's rows
//! (write.rs, which writes each code with its vector).

use rustc_hash::FxHashSet;

use crate::dense::DenseIndex;
use crate::errors::Result;
use crate::row_code::{code_bytes, StoredCodes};

use super::doctor::{check, some, Check};
use super::vectors::Loaded;
use super::Store;

/// The dense index with (chunk id, document id) per row.
pub(super) type Dense = (Vec<(i64, i64)>, DenseIndex);

/// Stored codes as read, with (chunk id, document id) per row, before any vector is added.
type ReadCodes = (Vec<(i64, i64)>, StoredCodes);

/// Meta `vector_codes` once every stored vector has its code.
const COMPLETE: &str = "complete";

impl Store {
    /// The dense index of every vector whose document `known` accepts, in chunk-id order, with
    /// (chunk id, document id) per row: from the stored codes when they are complete and
    /// readable, else by coding every vector.
    pub(super) fn load_dense(&self, dim: usize, known: impl Fn(i64) -> bool) -> Result<Dense> {
        if self.meta("vector_codes")?.as_deref() == Some(COMPLETE) {
            if let Some(loaded) = self.load_codes(dim, &known)? {
                return Ok(loaded);
            }
        }
        let (ids, data) = self.load_vectors(dim, |_, doc| known(doc))?;
        Ok((ids, DenseIndex::from_data(dim, data)))
    }

    /// The index from the stored codes, reading only the vectors they do not reproduce; None
    /// when a code is not one this build reads or the vectors do not match the codes (the
    /// caller codes the vectors instead).
    fn load_codes(&self, dim: usize, known: &impl Fn(i64) -> bool) -> Result<Option<Dense>> {
        let Some((ids, codes)) = read_codes(&self.conn, dim, known)? else {
            return Ok(None);
        };
        let need = codes.unreproduced();
        let mut data = Vec::new();
        if !need.is_empty() {
            let wanted: FxHashSet<i64> = need.iter().map(|&i| ids[i].0).collect();
            let (got, vectors) = self.load_vectors(dim, |chunk, _| wanted.contains(&chunk))?;
            if got.len() != need.len() || got.iter().zip(&need).any(|(g, &i)| g.0 != ids[i].0) {
                return Ok(None);
            }
            data = vectors;
        }
        Ok(Some((ids, codes.into_index(data))))
    }

    /// The index of every stored code, read through a connection of its own so that another
    /// thread reads it while this one reads the documents: only when that connection's
    /// snapshot is at `generation` too, the codes are complete and every one reproduces its
    /// vector (a model's rows need their vectors, read by `load_dense`). None otherwise.
    pub(super) fn codes_apart(path: &str, generation: i64, dim: usize) -> Option<Dense> {
        let conn = super::open_read_only(path).ok()?;
        conn.execute_batch("BEGIN").ok()?;
        let read = (|| -> rusqlite::Result<Option<Dense>> {
            if super::meta_of(&conn, "generation")?.and_then(|g| g.parse().ok()) != Some(generation)
                || super::meta_of(&conn, "vector_codes")?.as_deref() != Some(COMPLETE)
            {
                return Ok(None);
            }
            Ok(read_codes(&conn, dim, &|_| true)?
                .filter(|(_, codes)| codes.unreproduced().is_empty())
                .map(|(ids, codes)| (ids, codes.into_index(Vec::new()))))
        })();
        let _ = conn.execute_batch("COMMIT");
        read.ok().flatten()
    }

    /// Write the code of every stored vector that has none (vectors written before the codes
    /// were kept), once per store, inside the open write. Storage whose vectors cannot be read
    /// is left as it is: searches then code the vectors they can read, and `recall doctor`
    /// names the damage.
    pub(super) fn complete_codes(&mut self) -> Result<()> {
        if self.meta("vector_codes")?.as_deref() == Some(COMPLETE) {
            return Ok(());
        }
        let Some(dim) = self.embedder()?.map(|e| e.dim) else {
            return Ok(());
        };
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
                insert.execute(rusqlite::params![chunk, doc, code_bytes(vector)])?;
            }
        }
        self.set_meta("vector_codes", COMPLETE)
    }
}

/// Every stored code whose document `known` accepts, in chunk-id order, with (chunk id, document
/// id) per row; None when a code is not one this build reads.
fn read_codes(
    conn: &rusqlite::Connection,
    dim: usize,
    known: &impl Fn(i64) -> bool,
) -> rusqlite::Result<Option<ReadCodes>> {
    // Room for every row before the first is read: the chunk ids are at most the largest.
    let rows: i64 = conn.query_row(
        "SELECT coalesce(max(chunk_id), 0) FROM vector_codes",
        [],
        |r| r.get(0),
    )?;
    let rows = usize::try_from(rows).unwrap_or(0).min(1 << 28);
    let mut codes = StoredCodes::with_capacity(dim, rows);
    let mut ids = crate::memory::huge_vec(rows);
    let mut stmt =
        conn.prepare("SELECT chunk_id, doc_id, code FROM vector_codes ORDER BY chunk_id")?;
    let mut found = stmt.query([])?;
    while let Some(r) = found.next()? {
        let doc: i64 = r.get(1)?;
        if !known(doc) {
            continue;
        }
        let Ok(code) = r.get_ref(2)?.as_blob() else {
            return Ok(None);
        };
        if !codes.push(code) {
            return Ok(None);
        }
        ids.push((r.get(0)?, doc));
    }
    Ok(Some((ids, codes)))
}

impl Store {
    /// `recall doctor`: every vector (as the vectors check read them, with their dimension) has
    /// the code it would be given now, and no code is left without a vector (searches rank by
    /// the codes, not the vectors).
    pub(super) fn check_codes(&self, vectors: Option<&(usize, Loaded)>) -> Check {
        if self.embedder().ok().flatten().is_none() {
            return check("codes", "ok", "nothing indexed");
        }
        if self.meta("vector_codes").ok().flatten().as_deref() != Some(COMPLETE) {
            return check(
                "codes",
                "warning",
                "the vectors stored before this version have no codes yet; searches code them \
                 as they load, and the next index run stores them",
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
        for (&(chunk, _), vector) in ids.iter().zip(data.chunks_exact(dim)) {
            if stored.remove(&chunk).as_deref() != Some(&code_bytes(vector)[..]) {
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

    fn same(a: &Dense, b: &Dense) {
        assert_eq!(a.0, b.0);
        assert_eq!(a.1.len(), b.1.len());
        for row in 0..a.1.len() {
            let bits = |d: &DenseIndex| d.row(row).iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&a.1), bits(&b.1), "row {row}");
        }
    }

    #[test]
    fn a_store_reads_its_codes_as_the_vectors_coded() {
        let (_dir, store) = store("codes-read");
        assert_eq!(
            store.meta("vector_codes").unwrap().as_deref(),
            Some(COMPLETE)
        );
        let from_codes = store
            .load_codes(DIM, &|_| true)
            .unwrap()
            .expect("codes read");
        same(&from_codes, &coded(&store));
        assert_eq!(from_codes.0.len(), 5);
        // a.md's three rows and b.md's row with a listed component keep their vectors.
        assert_eq!(from_codes.1.vectors_held(), 4);
        // A document the corpus does not know is left out, as the vectors path leaves it.
        let b = from_codes.0[4].1;
        let known = |doc: i64| doc != b;
        let (ids, _) = store.load_codes(DIM, &known).unwrap().unwrap();
        assert_eq!(ids, from_codes.0[..3]);
    }

    #[test]
    fn vectors_written_before_the_codes_get_theirs_at_the_next_commit() {
        let (_dir, mut store) = store("codes-backfill");
        let before = coded(&store);
        store
            .conn
            .execute_batch("DELETE FROM vector_codes; DELETE FROM meta WHERE key = 'vector_codes';")
            .unwrap();
        // Until then the vectors are coded as they are read.
        same(&store.load_dense(DIM, |_| true).unwrap(), &before);
        store.begin(&embedder(DIM)).unwrap();
        store.commit("t1").unwrap();
        assert_eq!(
            store.meta("vector_codes").unwrap().as_deref(),
            Some(COMPLETE)
        );
        let count: i64 = store
            .conn
            .query_row("SELECT count(*) FROM vector_codes", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count, 5);
        same(&store.load_codes(DIM, &|_| true).unwrap().unwrap(), &before);
    }

    #[test]
    fn codes_read_apart_only_when_they_are_all_a_store_needs_at_that_generation() {
        // a.md's rows need their vectors: the codes alone do not make the index.
        let (_dir, store) = store("codes-apart");
        let generation = store.generation().unwrap();
        assert!(Store::codes_apart(&store.path, generation, DIM).is_none());
        store
            .conn
            .execute_batch(
                "DELETE FROM vector_codes WHERE chunk_id IN
                     (SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc_id
                      WHERE d.path = 'a.md')",
            )
            .unwrap();
        let apart = Store::codes_apart(&store.path, generation, DIM).expect("read apart");
        same(&apart, &store.load_codes(DIM, &|_| true).unwrap().unwrap());
        assert_eq!(apart.0.len(), 2);
        assert!(Store::codes_apart(&store.path, generation + 1, DIM).is_none());
    }

    #[test]
    fn doctor_finds_a_vector_changed_behind_its_code() {
        let (_dir, store) = store("codes-doctor");
        let status = |store: &Store| {
            let read = store.load_vectors(DIM, |_, _| true).unwrap();
            store.check_codes(Some(&(DIM, read)))
        };
        assert_eq!(status(&store).status, "ok", "{}", status(&store).detail);
        store
            .conn
            .execute(
                "UPDATE vec_chunks SET embedding = ?1 WHERE chunk_id = 2",
                [crate::store::f32_blob(&[0.5; DIM])],
            )
            .unwrap();
        let found = status(&store);
        assert_eq!(found.status, "damaged");
        assert!(found.detail.contains("(chunks 2)"), "{}", found.detail);
        store
            .conn
            .execute_batch("DELETE FROM meta WHERE key = 'vector_codes'")
            .unwrap();
        assert_eq!(status(&store).status, "warning");
    }

    #[test]
    fn a_code_that_cannot_be_read_codes_the_vectors_instead() {
        let (_dir, store) = store("codes-damaged");
        let before = coded(&store);
        store
            .conn
            .execute(
                "UPDATE vector_codes SET code = x'0201' WHERE chunk_id = 4",
                [],
            )
            .unwrap();
        assert!(store.load_codes(DIM, &|_| true).unwrap().is_none());
        same(&store.load_dense(DIM, |_| true).unwrap(), &before);
        // A code whose vector is gone is no row either way.
        store
            .conn
            .execute_batch("UPDATE vector_codes SET code = (SELECT code FROM vector_codes WHERE chunk_id = 5) WHERE chunk_id = 4; DELETE FROM vec_chunks WHERE chunk_id = 1;")
            .unwrap();
        let loaded = store.load_dense(DIM, |_| true).unwrap();
        assert_eq!(loaded.0.len(), 4);
        assert!(loaded.0.iter().all(|&(c, _)| c != 1));
    }
}
