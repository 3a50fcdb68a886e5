//! `recall doctor` (SPEC §11): what is wrong with a store file, check by check.
//!
//! Owns: SQLite's own integrity check, the schema, the vector storage against the chunk rows,
//! and the saved lexical index against the chunk rows (the codes against the vectors: codes.rs). Reads only. Does not own: the
//! calibration records (Python parses them) or what the user is told to do (the CLI).

use std::collections::HashSet;

use crate::errors::{CoreError, Result};

use super::vectors::{Declined, Loaded};
use super::{Store, SCHEMA_VERSION, VEC_TABLE};

/// The outcome of one check: "ok", "warning" (works, but not as written) or "damaged".
#[derive(Debug, Clone)]
pub struct Check {
    pub name: &'static str,
    pub status: &'static str,
    pub detail: String,
}

pub(super) fn check(name: &'static str, status: &'static str, detail: impl Into<String>) -> Check {
    Check {
        name,
        status,
        detail: detail.into(),
    }
}

/// Up to `n` items of a set difference, for a message.
pub(super) fn some(ids: &[i64], n: usize) -> String {
    let shown: Vec<String> = ids.iter().take(n).map(i64::to_string).collect();
    let more = if ids.len() > n { ", …" } else { "" };
    format!("{}{more}", shown.join(", "))
}

impl Store {
    /// Every check, in order; a check that cannot run because an earlier one found damage says
    /// so rather than failing the whole report.
    pub fn doctor(&mut self) -> Result<Vec<Check>> {
        let mut checks = Vec::new();
        let integrity: rusqlite::Result<Vec<String>> = self
            .conn
            .prepare("PRAGMA integrity_check(20)")
            .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect());
        let sqlite_ok = match integrity {
            Ok(lines) if lines == ["ok"] => {
                checks.push(check("sqlite", "ok", "integrity check passed"));
                true
            }
            Ok(lines) => {
                checks.push(check("sqlite", "damaged", lines.join("; ")));
                false
            }
            Err(e) => {
                checks.push(check("sqlite", "damaged", e.to_string()));
                false
            }
        };
        let version = self.schema_version().unwrap_or(-1);
        checks.push(self.check_schema(version));
        let chunks: rusqlite::Result<Vec<i64>> = self
            .conn
            .prepare("SELECT id FROM chunks ORDER BY id")
            .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect());
        let chunks: HashSet<i64> = match chunks {
            Ok(ids) => ids.into_iter().collect(),
            Err(e) => {
                let why = format!("the chunk rows cannot be read: {e}");
                checks.push(check("vectors", "damaged", why.clone()));
                checks.push(check("lexical", "damaged", why));
                return Ok(checks);
            }
        };
        checks.push(self.check_rows());
        let (vectors, read) = self.check_vectors(&chunks);
        checks.push(vectors);
        checks.push(self.check_codes(read.as_ref()));
        checks.push(self.check_lists());
        checks.push(self.check_lexical(&chunks));
        checks.push(self.check_commits());
        if !sqlite_ok {
            // The other checks read what SQLite could; its own verdict stands above them.
            for c in checks.iter_mut().skip(2) {
                if c.status == "ok" {
                    c.detail.push_str(" (in the pages SQLite could read)");
                }
            }
        }
        Ok(checks)
    }

    /// The store's tables, columns and indexes against the schema of the version it records,
    /// built from this build's migrations (SPEC §11): a store missing its `edges` table passed
    /// as healthy, and search then failed. An older store is checked against its own version,
    /// which an upgrade then brings forward; one already holding every table and column of a
    /// later version had its recorded version lowered, and the upgrade would fail on it.
    fn check_schema(&self, version: i64) -> Check {
        let recorded = version.clamp(0, SCHEMA_VERSION);
        let (Ok(want), Ok(latest), Ok(have)) = (
            super::schema::expected(recorded),
            super::schema::expected(SCHEMA_VERSION),
            super::schema::shape(&self.conn),
        ) else {
            return check("schema", "damaged", "the schema cannot be read");
        };
        let have: std::collections::HashMap<&str, &Vec<String>> =
            have.iter().map(|(n, c)| (n.as_str(), c)).collect();
        let lacking = |want: &[(String, Vec<String>)]| -> Vec<String> {
            let mut missing = Vec::new();
            for (name, columns) in want {
                match have.get(name.as_str()) {
                    None if name.starts_with("index ") => missing.push(name.clone()),
                    None => missing.push(format!("table {name}")),
                    Some(found) => missing.extend(
                        columns
                            .iter()
                            .filter(|c| !found.contains(c))
                            .map(|c| format!("column {name}.{c}")),
                    ),
                }
            }
            missing
        };
        let missing = lacking(&want);
        if !missing.is_empty() {
            let why = format!(
                "version {version}, but missing what this recall needs: {}",
                missing.join(", ")
            );
            check("schema", "damaged", why)
        } else if version == SCHEMA_VERSION {
            check("schema", "ok", format!("version {version}"))
        } else if (0..SCHEMA_VERSION).contains(&version)
            && want != latest
            && lacking(&latest).is_empty()
        {
            let why = format!(
                "version {version} recorded, but the store already holds every table and column \
                 of version {SCHEMA_VERSION}: the recorded version was changed"
            );
            check("schema", "damaged", why)
        } else {
            let why = format!("version {version}; this recall writes {SCHEMA_VERSION}");
            check("schema", "warning", why)
        }
    }

    /// Every chunk row belongs to a document row (an orphan makes every later index run fail
    /// on the chunk's unique key).
    fn check_rows(&self) -> Check {
        let orphans: rusqlite::Result<Vec<i64>> = self
            .conn
            .prepare(
                "SELECT c.id FROM chunks c LEFT JOIN documents d ON d.id = c.doc_id
                 WHERE d.id IS NULL ORDER BY c.id",
            )
            .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect());
        match orphans {
            Ok(ids) if ids.is_empty() => check("rows", "ok", "every chunk belongs to a document"),
            Ok(ids) => check(
                "rows",
                "damaged",
                format!(
                    "{} chunks whose document row is gone ({})",
                    ids.len(),
                    some(&ids, 5)
                ),
            ),
            Err(e) => check("rows", "damaged", format!("the rows cannot be read: {e}")),
        }
    }

    /// The vectors check, and the vectors as read (with their dimension) for the codes check.
    fn check_vectors(&self, chunks: &HashSet<i64>) -> (Check, Option<(usize, Loaded)>) {
        let dim = match self.embedder() {
            Ok(Some(e)) => e.dim,
            Ok(None) if chunks.is_empty() => {
                return (check("vectors", "ok", "nothing indexed"), None)
            }
            Ok(None) => {
                return (
                    check("vectors", "damaged", "chunks but no embedder recorded"),
                    None,
                )
            }
            Err(e) => return (check("vectors", "damaged", e.to_string()), None),
        };
        let (loaded, how) = match self.load_vectors_shadow(dim, &|_, _| true) {
            Ok(loaded) => (loaded, "sqlite-vec's blocks check out".to_string()),
            Err(Declined::Misplaced(why)) => return (check("vectors", "damaged", why), None),
            Err(Declined::Layout(why)) => match self.load_vectors_table(dim, &|_, _| true) {
                Ok(loaded) => (
                    loaded,
                    format!("read through {VEC_TABLE} (its blocks do not check out: {why})"),
                ),
                Err(e) => {
                    let why = format!("{e} (blocks: {why})");
                    return (check("vectors", "damaged", why), None);
                }
            },
        };
        let outcome = self.vectors_outcome(chunks, dim, &loaded, &how);
        (outcome, Some((dim, loaded)))
    }

    /// What the vectors as read say against the chunk rows.
    fn vectors_outcome(
        &self,
        chunks: &HashSet<i64>,
        dim: usize,
        loaded: &Loaded,
        how: &str,
    ) -> Check {
        let have: HashSet<i64> = loaded.0.iter().map(|&(c, _)| c).collect();
        let mut missing: Vec<i64> = chunks.difference(&have).copied().collect();
        let mut ghosts: Vec<i64> = have.difference(chunks).copied().collect();
        missing.sort_unstable();
        ghosts.sort_unstable();
        // A vector that is not finite scores `nan` against every query.
        let broken: Vec<i64> = loaded
            .0
            .iter()
            .enumerate()
            .filter(|&(i, _)| {
                loaded.1[i * dim..(i + 1) * dim]
                    .iter()
                    .any(|x| !x.is_finite())
            })
            .map(|(_, &(c, _))| c)
            .collect();
        if !broken.is_empty() {
            return check(
                "vectors",
                "damaged",
                format!(
                    "{} vectors hold values that are not finite numbers (chunks {}); {how}",
                    broken.len(),
                    some(&broken, 5)
                ),
            );
        }
        if missing.is_empty() && ghosts.is_empty() {
            check(
                "vectors",
                "ok",
                format!("{} vectors, one per chunk; {how}", have.len()),
            )
        } else {
            check(
                "vectors",
                "damaged",
                format!(
                    "{} chunks without a vector ({}), {} vectors without a chunk ({}); {how}",
                    missing.len(),
                    some(&missing, 5),
                    ghosts.len(),
                    some(&ghosts, 5)
                ),
            )
        }
    }

    fn check_lexical(&self, chunks: &HashSet<i64>) -> Check {
        let saved = self
            .meta("lexical_generation")
            .ok()
            .flatten()
            .and_then(|g| g.parse::<i64>().ok());
        let generation = self.generation().unwrap_or(-1);
        if saved != Some(generation) {
            return check(
                "lexical",
                "warning",
                "the saved index is missing or older than the chunks; the next search rebuilds \
                 it in memory and the next index run saves it",
            );
        }
        // Not counted here: the comparison below names the chunks that differ.
        let index = match self.saved_lexical(false) {
            Ok(index) => index,
            Err(CoreError::Damaged { detail, .. }) => {
                return check(
                    "lexical",
                    "damaged",
                    format!(
                        "the saved index: {detail}; searches rebuild it from the chunk rows in \
                         memory until the next 'recall index' saves it whole"
                    ),
                )
            }
            Err(e) => return check("lexical", "damaged", format!("the saved index: {e}")),
        };
        let ids = match index.chunk_ids() {
            Ok(ids) => ids,
            Err(e) => return check("lexical", "damaged", format!("the saved index: {e}")),
        };
        let have: HashSet<i64> = ids.iter().copied().collect();
        let mut missing: Vec<i64> = chunks.difference(&have).copied().collect();
        let mut ghosts: Vec<i64> = have.difference(chunks).copied().collect();
        missing.sort_unstable();
        ghosts.sort_unstable();
        let doubled = ids.len() - have.len();
        if missing.is_empty() && ghosts.is_empty() && doubled == 0 {
            check(
                "lexical",
                "ok",
                format!("{} chunks indexed, one entry each", have.len()),
            )
        } else {
            check(
                "lexical",
                "damaged",
                format!(
                    "{} chunks not in the index ({}), {} entries without a chunk ({}), {} \
                     chunks indexed twice",
                    missing.len(),
                    some(&missing, 5),
                    ghosts.len(),
                    some(&ghosts, 5),
                    doubled
                ),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::{doc, embedder, temp_db, TempDb};

    fn indexed(name: &str) -> (TempDb, Store) {
        let path = temp_db(name);
        let mut store = Store::open(&path).unwrap();
        store.begin(&embedder(4)).unwrap();
        for name in ["a.md", "b.md", "c.md"] {
            store.put_document(&doc(name, 3, 4), "t0").unwrap();
        }
        store.commit("t0").unwrap();
        (path, store)
    }

    fn statuses(store: &mut Store) -> Vec<(&'static str, &'static str)> {
        store
            .doctor()
            .unwrap()
            .iter()
            .map(|c| (c.name, c.status))
            .collect()
    }

    #[test]
    fn a_sound_store_passes_every_check() {
        let (_, mut store) = indexed("doctor-sound");
        assert_eq!(
            statuses(&mut store),
            [
                ("sqlite", "ok"),
                ("schema", "ok"),
                ("rows", "ok"),
                ("vectors", "ok"),
                ("codes", "ok"),
                ("lists", "ok"),
                ("lexical", "ok"),
                ("commits", "ok")
            ]
        );
    }

    #[test]
    fn a_store_missing_a_table_column_or_index_is_damaged() {
        for (sql, named) in [
            ("DROP TABLE edges", "table edges"),
            ("DROP INDEX documents_key", "index documents_key"),
            (
                "ALTER TABLE documents DROP COLUMN alias",
                "column documents.alias",
            ),
        ] {
            let (_, mut store) = indexed("doctor-schema");
            if sql.contains("alias") {
                store
                    .conn
                    .execute_batch("DROP INDEX documents_alias")
                    .unwrap();
            }
            store.conn.execute_batch(sql).unwrap();
            let checks = store.doctor().unwrap();
            let schema = checks.iter().find(|c| c.name == "schema").unwrap();
            assert_eq!(schema.status, "damaged", "{sql}");
            assert!(schema.detail.contains(named), "{sql}: {}", schema.detail);
        }
    }

    #[test]
    fn an_older_store_is_checked_against_its_own_version() {
        // A version-5 store has no `vector_codes` yet: an upgrade adds it, nothing is damaged.
        let (_, mut store) = indexed("doctor-older");
        store.conn.execute_batch("DROP TABLE vector_codes").unwrap();
        store.conn.pragma_update(None, "user_version", 5).unwrap();
        let checks = store.doctor().unwrap();
        let schema = checks.iter().find(|c| c.name == "schema").unwrap();
        assert_eq!(schema.status, "warning", "{}", schema.detail);
    }

    #[test]
    fn a_lowered_schema_version_is_damage_not_an_upgrade() {
        let (_, mut store) = indexed("doctor-version");
        store.conn.pragma_update(None, "user_version", 3).unwrap();
        let checks = store.doctor().unwrap();
        let schema = checks.iter().find(|c| c.name == "schema").unwrap();
        assert_eq!(schema.status, "damaged");
        assert!(
            schema.detail.contains("version 3 recorded"),
            "{}",
            schema.detail
        );
    }

    #[test]
    fn a_chunk_whose_document_is_gone_is_found() {
        let (_, mut store) = indexed("doctor-orphan");
        store
            .conn
            .execute_batch("PRAGMA foreign_keys = OFF; DELETE FROM documents WHERE id = 1;")
            .unwrap();
        let checks = store.doctor().unwrap();
        let rows = checks.iter().find(|c| c.name == "rows").unwrap();
        assert_eq!(rows.status, "damaged");
        assert!(
            rows.detail
                .contains("3 chunks whose document row is gone (1, 2, 3)"),
            "{rows:?}"
        );
    }

    #[test]
    fn a_vector_that_is_not_finite_is_found() {
        let (_, mut store) = indexed("doctor-nan");
        let nan: Vec<u8> = [f32::NAN, 0.0, 1.0, 0.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        store
            .conn
            .execute(
                &format!("UPDATE {VEC_TABLE} SET embedding = ?1 WHERE chunk_id = 2"),
                [nan],
            )
            .unwrap();
        let checks = store.doctor().unwrap();
        let vectors = checks.iter().find(|c| c.name == "vectors").unwrap();
        assert_eq!(vectors.status, "damaged");
        assert!(
            vectors
                .detail
                .contains("1 vectors hold values that are not finite numbers (chunks 2)"),
            "{vectors:?}"
        );
    }

    #[test]
    fn a_chunk_behind_the_legs_back_is_found_in_both() {
        let (_, mut store) = indexed("doctor-chunk");
        store
            .conn
            .execute_batch(
                "INSERT INTO chunks(doc_id, ordinal, text, byte_start, byte_end, line_start,
                     line_end, heading_path) VALUES (1, 99, 'x', 0, 1, 1, 1, '')",
            )
            .unwrap();
        let checks = store.doctor().unwrap();
        let by = |n: &str| checks.iter().find(|c| c.name == n).unwrap().clone();
        assert_eq!(by("vectors").status, "damaged");
        assert!(
            by("vectors").detail.contains("1 chunks without a vector"),
            "{:?}",
            by("vectors")
        );
        assert_eq!(by("lexical").status, "damaged");
        assert!(by("lexical").detail.contains("1 chunks not in the index"));
    }

    #[test]
    fn garbage_in_the_middle_of_the_file_is_reported_by_sqlite() {
        let (path, store) = indexed("doctor-garbage");
        drop(store);
        let mut bytes = std::fs::read(&path).unwrap();
        // A whole page in the middle (the header's page size), so no garbage falls only on a
        // page's free space.
        let page = match u16::from_be_bytes([bytes[16], bytes[17]]) {
            1 => 65536,
            size => usize::from(size),
        };
        let middle = bytes.len() / 2 / page * page;
        let end = (middle + page).min(bytes.len());
        bytes[middle..end].iter_mut().for_each(|b| *b = 0xA5);
        std::fs::write(&path, bytes).unwrap();
        let mut store = Store::open(&path).unwrap();
        let checks = store.doctor().unwrap();
        assert_eq!(checks[0].status, "damaged", "{checks:?}");
    }
}
