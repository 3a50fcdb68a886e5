//! Forgetting documents (SPEC §8.4): removing them from the store while their files stay, and
//! bringing them back.
//!
//! Owns: the `forgotten` journal (what was removed, with its content hash and first indexing
//! time), the plan a dry run shows (chunks, and the notes whose edges will dangle), and undo.
//! Does not own: choosing which documents (Python), or the index run that skips forgotten files
//! and brings undone ones back with their first indexing time (write.rs).

use rusqlite::{params, OptionalExtension};

use super::Store;
use crate::errors::Result;

/// One document a forget would remove: where it is, when it was first indexed, its chunk
/// count, and the (source, path) of every other document whose edges name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForgetPlan {
    pub source: String,
    pub path: String,
    pub first_indexed_at: String,
    pub chunks: i64,
    pub referenced_by: Vec<(String, String)>,
}

/// A journal row: a forgotten document, and when it was brought back (None: still forgotten).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forgotten {
    pub source: String,
    pub path: String,
    pub first_indexed_at: String,
    pub forgotten_at: String,
    pub undone_at: Option<String>,
}

impl Store {
    /// Every indexed document as (source, path, first_indexed_at): what a forget selects from.
    pub fn document_list(&self) -> Result<Vec<(String, String, String)>> {
        let mut stmt = self.conn.prepare(
            "SELECT source, path, first_indexed_at FROM documents ORDER BY source, path",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Every root documents were indexed from, with how many documents it holds.
    pub fn sources(&self) -> Result<Vec<(String, i64)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT source, count(*) FROM documents GROUP BY source ORDER BY source")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// What forgetting `targets` would remove, in the order given; unknown paths are left out.
    pub fn forget_plan(&self, targets: &[(String, String)]) -> Result<Vec<ForgetPlan>> {
        let mut plan = Vec::new();
        let mut doc_stmt = self.conn.prepare_cached(
            "SELECT d.id, d.first_indexed_at,
                    (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id)
             FROM documents d WHERE d.source = ?1 AND d.path = ?2",
        )?;
        // SPEC §2.5: edges resolve as the trust layer resolves them (numbers, nearest first).
        let corpus = self.load_corpus()?;
        for (source, path) in targets {
            let row: Option<(i64, String, i64)> = doc_stmt
                .query_row(params![source, path], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()?;
            let Some((id, first, chunks)) = row else {
                continue;
            };
            let referenced_by = corpus
                .index_of
                .get(&id)
                .map(|&d| corpus.declarers_toward(d))
                .unwrap_or_default();
            plan.push(ForgetPlan {
                source: source.clone(),
                path: path.clone(),
                first_indexed_at: first,
                chunks,
                referenced_by,
            });
        }
        Ok(plan)
    }

    /// Remove `targets` from the store and journal them, in the open write. Returns how many
    /// documents were removed.
    pub fn forget(&mut self, targets: &[(String, String)], now: &str) -> Result<usize> {
        self.require_write()?;
        let mut removed = 0;
        for (source, path) in targets {
            let row: Option<(String, String)> = self
                .conn
                .query_row(
                    "SELECT content_hash, first_indexed_at FROM documents
                     WHERE source = ?1 AND path = ?2",
                    params![source, path],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            let Some((hash, first)) = row else {
                continue;
            };
            self.conn.execute(
                "INSERT INTO forgotten(source, path, content_hash, first_indexed_at, forgotten_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(source, path) DO UPDATE SET content_hash = excluded.content_hash,
                     first_indexed_at = excluded.first_indexed_at,
                     forgotten_at = excluded.forgotten_at, undone_at = NULL",
                params![source, path, hash, first, now],
            )?;
            removed += self.remove_documents(source, std::slice::from_ref(path))?;
        }
        Ok(removed)
    }

    /// The journal: every forgotten document, brought back or not.
    pub fn forgotten(&self) -> Result<Vec<Forgotten>> {
        let mut stmt = self.conn.prepare(
            "SELECT source, path, first_indexed_at, forgotten_at, undone_at FROM forgotten
             ORDER BY forgotten_at, source, path",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(Forgotten {
                source: r.get(0)?,
                path: r.get(1)?,
                first_indexed_at: r.get(2)?,
                forgotten_at: r.get(3)?,
                undone_at: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Paths under `source` an index run must skip (forgotten and not brought back).
    pub fn forgotten_paths(&self, source: &str) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT path FROM forgotten WHERE source = ?1 AND undone_at IS NULL ORDER BY path",
        )?;
        let rows = stmt.query_map([source], |r| r.get(0))?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Bring forgotten documents back, in the open write: the next index run indexes their
    /// files again with their first indexing time. Returns how many were still forgotten.
    pub fn undo_forget(&mut self, targets: &[(String, String)], now: &str) -> Result<usize> {
        self.require_write()?;
        let mut stmt = self.conn.prepare_cached(
            "UPDATE forgotten SET undone_at = ?3
             WHERE source = ?1 AND path = ?2 AND undone_at IS NULL",
        )?;
        let mut undone = 0;
        for (source, path) in targets {
            undone += stmt.execute(params![source, path, now])?;
        }
        Ok(undone)
    }

    /// The first indexing time of a document brought back by `undo_forget`, consuming its
    /// journal row (SPEC §2.4: transaction time is never lost).
    pub(super) fn take_undone_forget(&self, source: &str, path: &str) -> Result<Option<String>> {
        let first: Option<String> = self
            .conn
            .query_row(
                "SELECT first_indexed_at FROM forgotten
                 WHERE source = ?1 AND path = ?2 AND undone_at IS NOT NULL",
                params![source, path],
                |r| r.get(0),
            )
            .optional()?;
        if first.is_some() {
            self.conn.execute(
                "DELETE FROM forgotten WHERE source = ?1 AND path = ?2",
                params![source, path],
            )?;
        }
        Ok(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::{doc, embedder, temp_db};

    #[test]
    fn forget_journals_and_undo_restores_first_indexed_time() {
        let path = temp_db("forget");
        let mut store = Store::open(&path).unwrap();
        store.begin(&embedder(4)).unwrap();
        store
            .put_document(&doc("a.md", 2, 4), "2026-01-01T00:00:00.000000Z")
            .unwrap();
        let mut b = doc("b.md", 1, 4);
        b.key = "b".into();
        b.declarations.edges[0].key = "a".into();
        store
            .put_document(&b, "2026-01-01T00:00:00.000000Z")
            .unwrap();
        store.commit("2026-01-01T00:00:00.000000Z").unwrap();

        let target = vec![("/corpus".to_string(), "a.md".to_string())];
        let plan = store.forget_plan(&target).unwrap();
        assert_eq!(plan.len(), 1);
        assert_eq!(plan[0].chunks, 2);
        assert_eq!(
            plan[0].referenced_by,
            vec![("/corpus".to_string(), "b.md".to_string())]
        );

        store.begin(&embedder(4)).unwrap();
        assert_eq!(
            store
                .forget(&target, "2026-02-01T00:00:00.000000Z")
                .unwrap(),
            1
        );
        store.commit("2026-02-01T00:00:00.000000Z").unwrap();
        assert_eq!(store.forgotten_paths("/corpus").unwrap(), vec!["a.md"]);
        assert!(store.forget_plan(&target).unwrap().is_empty());

        store.begin(&embedder(4)).unwrap();
        assert_eq!(
            store
                .undo_forget(&target, "2026-03-01T00:00:00.000000Z")
                .unwrap(),
            1
        );
        assert!(store.forgotten_paths("/corpus").unwrap().is_empty());
        store
            .put_document(&doc("a.md", 2, 4), "2026-03-01T00:00:00.000000Z")
            .unwrap();
        store.commit("2026-03-01T00:00:00.000000Z").unwrap();
        let list = store.document_list().unwrap();
        let a = list.iter().find(|(_, p, _)| p == "a.md").unwrap();
        assert_eq!(a.2, "2026-01-01T00:00:00.000000Z");
        assert!(store.forgotten().unwrap().is_empty());
    }
}
