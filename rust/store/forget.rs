//! Forgetting documents (SPEC §8.4): removing them from the store while their files stay, and
//! bringing them back.
//!
//! Owns: the `forgotten` table (the journal's entries as they are given) and the plan a dry run
//! shows (chunks, and the notes whose edges will dangle). Does not own: what the journal means
//! (`recall.forgetting` writes the entries, and the index run skips forgotten files and brings
//! undone ones back with their first indexing time), or removing documents (write.rs).

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

/// A journal entry: a forgotten document (its content hash and first indexing time), when it
/// was forgotten, and when it was brought back (None: still forgotten).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalEntry {
    pub source: String,
    pub path: String,
    pub content_hash: String,
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
        let mut doc_stmt = self.conn.prepare_cached(
            "SELECT d.id, d.first_indexed_at,
                    (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id)
             FROM documents d WHERE d.source = ?1 AND d.path = ?2",
        )?;
        let mut found = Vec::new();
        for (source, path) in targets {
            let row: Option<(i64, String, i64)> = doc_stmt
                .query_row(params![source, path], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()?;
            if let Some(row) = row {
                found.push((source, path, row));
            }
        }
        // SPEC §2.5: edges resolve as the trust layer resolves them (numbers, nearest first).
        self.with_corpus(|corpus| {
            found
                .into_iter()
                .map(|(source, path, (id, first, chunks))| ForgetPlan {
                    source: source.clone(),
                    path: path.clone(),
                    first_indexed_at: first,
                    chunks,
                    referenced_by: corpus
                        .index_of
                        .get(id)
                        .map(|d| corpus.declarers_toward(d))
                        .unwrap_or_default(),
                })
                .collect()
        })
    }

    /// The journal, oldest forgotten first.
    pub fn journal(&self) -> Result<Vec<JournalEntry>> {
        let mut stmt = self.conn.prepare(
            "SELECT source, path, content_hash, first_indexed_at, forgotten_at, undone_at
             FROM forgotten ORDER BY forgotten_at, source, path",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(JournalEntry {
                source: r.get(0)?,
                path: r.get(1)?,
                content_hash: r.get(2)?,
                first_indexed_at: r.get(3)?,
                forgotten_at: r.get(4)?,
                undone_at: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Store journal entries in the open write, each replacing the entry of its (source, path).
    pub fn write_journal(&mut self, entries: &[JournalEntry]) -> Result<()> {
        self.require_write()?;
        let mut stmt = self.conn.prepare_cached(
            "INSERT OR REPLACE INTO forgotten(source, path, content_hash, first_indexed_at,
                 forgotten_at, undone_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        for e in entries {
            stmt.execute(params![
                e.source,
                e.path,
                e.content_hash,
                e.first_indexed_at,
                e.forgotten_at,
                e.undone_at
            ])?;
        }
        Ok(())
    }

    /// Delete the journal entries of these (source, path) in the open write.
    pub fn drop_journal(&mut self, targets: &[(String, String)]) -> Result<()> {
        self.require_write()?;
        let mut stmt = self
            .conn
            .prepare_cached("DELETE FROM forgotten WHERE source = ?1 AND path = ?2")?;
        for (source, path) in targets {
            stmt.execute(params![source, path])?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::{doc, embedder, temp_db};

    #[test]
    fn the_plan_names_referrers_and_the_journal_replaces_by_path() {
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

        let entry = JournalEntry {
            source: "/corpus".into(),
            path: "a.md".into(),
            content_hash: "h".into(),
            first_indexed_at: "2026-01-01T00:00:00.000000Z".into(),
            forgotten_at: "2026-02-01T00:00:00.000000Z".into(),
            undone_at: None,
        };
        assert!(store.write_journal(std::slice::from_ref(&entry)).is_err()); // outside a write
        store.begin(&embedder(4)).unwrap();
        store.write_journal(std::slice::from_ref(&entry)).unwrap();
        let undone = JournalEntry {
            undone_at: Some("2026-03-01T00:00:00.000000Z".into()),
            ..entry.clone()
        };
        store.write_journal(std::slice::from_ref(&undone)).unwrap(); // replaces, never adds
        store.commit("2026-02-01T00:00:00.000000Z").unwrap();
        assert_eq!(store.journal().unwrap(), vec![undone]);

        store.begin(&embedder(4)).unwrap();
        store.drop_journal(&target).unwrap();
        store.commit("2026-03-01T00:00:00.000000Z").unwrap();
        assert!(store.journal().unwrap().is_empty());
    }
}
