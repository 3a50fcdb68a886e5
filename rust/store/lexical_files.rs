//! The lexical leg's persistence: its Tantivy files kept in the store (SPEC §1).
//!
//! Owns: loading the index of the committed generation from `lexical_files`, rebuilding it from
//! the chunks when those files are missing or stale, and writing the changed files into the
//! open transaction. Does not own: the index itself (lexical.rs) or when a write commits
//! (write.rs).

use rusqlite::params;
use tantivy::directory::FileSlice;
use tantivy::HasLen;

use crate::errors::{CoreError, Result};
use crate::lexical::LexicalIndex;

use super::{lexical_body, Store};

/// The in-memory lexical index and the files it changed that the store has not saved yet.
pub(crate) struct Lexical {
    pub(crate) index: LexicalIndex,
    /// Generation of the store state the index reflects.
    pub(super) generation: i64,
    /// name -> bytes (None = deleted), merged across commits until saved.
    unsaved: std::collections::BTreeMap<String, Option<FileSlice>>,
    /// Rebuilt from the chunks: the saved files are replaced wholesale.
    rebuilt: bool,
}

impl Lexical {
    /// A saved index, current at `generation`, as read.
    pub(super) fn loaded(index: LexicalIndex, generation: i64) -> Lexical {
        Lexical {
            index,
            generation,
            unsaved: Default::default(),
            rebuilt: false,
        }
    }
}

impl Store {
    /// The lexical index for the committed state, loaded from the store or rebuilt from the
    /// chunks when the saved files are missing or older than the store (SPEC §1).
    pub(crate) fn lexical_mut(&mut self) -> Result<&mut Lexical> {
        let generation = self.generation()?;
        if self
            .lexical
            .as_ref()
            .is_some_and(|l| l.generation != generation)
            && !self.in_write
        {
            self.lexical = None; // another process committed since
        }
        if self.lexical.is_none() {
            let saved = self
                .meta("lexical_generation")?
                .and_then(|g| g.parse::<i64>().ok());
            self.lexical = Some(self.load_lexical(saved == Some(generation), generation)?);
        }
        let spill = self.in_write.then(|| self.spill_folder()).flatten();
        let lexical = self.lexical.as_mut().expect("set above");
        if let Some(folder) = spill {
            lexical.index.spill_into(folder);
        }
        Ok(lexical)
    }

    /// The saved index when it is `current` and reads as written; otherwise (missing, stale or
    /// damaged) one rebuilt from the chunk rows, which are the source of truth, for the next
    /// write to save whole (`recall doctor` says so meanwhile).
    pub(super) fn load_lexical(&self, current: bool, generation: i64) -> Result<Lexical> {
        if current {
            match self.saved_lexical(true) {
                Ok(index) => return Ok(Lexical::loaded(index, generation)),
                Err(CoreError::Damaged { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        self.rebuild_lexical(generation)
    }

    /// The saved lexical index, checked against its files' checksums and, with `counted`, the
    /// number of chunk rows (`CoreError::Damaged` when it does not read as written; a panic
    /// inside Tantivy on such data counts as damage too).
    pub(crate) fn saved_lexical(&self, counted: bool) -> Result<LexicalIndex> {
        let files = saved_files(&self.conn)?;
        let live = if counted {
            Some(chunk_rows(&self.conn)?)
        } else {
            None
        };
        Self::open_lexical(files, live)
    }

    /// The saved lexical index read through a connection of its own, so that another thread
    /// reads and checks it while this one reads the rest of the cache: only when it is current
    /// at `generation` in that connection's snapshot too. None when it is not, when no such
    /// connection opens, or when it does not read as written (`lexical_mut` then decides).
    pub(super) fn lexical_apart(path: &str, generation: i64) -> Option<LexicalIndex> {
        let conn = super::open_read_only(path).ok()?;
        conn.execute_batch("BEGIN").ok()?;
        let read = (|| -> rusqlite::Result<_> {
            let meta = |key: &str| -> rusqlite::Result<Option<i64>> {
                Ok(super::meta_of(&conn, key)?.and_then(|v| v.parse().ok()))
            };
            let current = meta("generation")? == Some(generation)
                && meta("lexical_generation")? == Some(generation);
            current
                .then(|| Ok((saved_files(&conn)?, chunk_rows(&conn)?)))
                .transpose()
        })();
        let _ = conn.execute_batch("COMMIT");
        let (files, live) = read.ok()??;
        Self::open_lexical(files, Some(live)).ok()
    }

    /// The index over saved files, checked against their checksums and, with `live`, the
    /// number of chunk rows; needs no connection, so it can run on another thread.
    pub(super) fn open_lexical(
        files: Vec<(String, Vec<u8>)>,
        live: Option<u64>,
    ) -> Result<LexicalIndex> {
        std::panic::catch_unwind(|| LexicalIndex::open_checked(files, live)).unwrap_or_else(|_| {
            Err(CoreError::Damaged {
                part: "lexical index",
                detail: "Tantivy could not read it".into(),
            })
        })
    }

    fn rebuild_lexical(&self, generation: i64) -> Result<Lexical> {
        let mut index = LexicalIndex::open(Vec::new())?;
        let mut stmt = self.conn.prepare(
            "SELECT c.id, d.title, c.heading_path, c.text FROM chunks c
             JOIN documents d ON d.id = c.doc_id ORDER BY c.id",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let title: String = r.get(1).unwrap_or_default();
            let headings: String = r.get(2).unwrap_or_default();
            let text: String = r.get(3).unwrap_or_default();
            index.add(r.get(0)?, &lexical_body(&title, &headings, &text))?;
        }
        let (written, deleted) = index.commit()?;
        let mut unsaved: std::collections::BTreeMap<String, Option<FileSlice>> =
            written.into_iter().map(|(n, b)| (n, Some(b))).collect();
        unsaved.extend(deleted.into_iter().map(|n| (n, None)));
        Ok(Lexical {
            index,
            generation,
            unsaved,
            rebuilt: true,
        })
    }

    /// Commit the lexical index in memory and write its changed files into the open
    /// transaction.
    pub(super) fn save_lexical(&mut self) -> Result<()> {
        let lexical = self.lexical.as_mut().expect("caller checked");
        let (written, deleted) = lexical.index.commit_files()?;
        lexical
            .unsaved
            .extend(written.into_iter().map(|(n, b)| (n, Some(b))));
        lexical
            .unsaved
            .extend(deleted.into_iter().map(|n| (n, None)));
        let rebuilt = std::mem::take(&mut lexical.rebuilt);
        let unsaved = std::mem::take(&mut lexical.unsaved);
        if rebuilt {
            self.conn.execute("DELETE FROM lexical_files", [])?;
        }
        let mut put = self
            .conn
            .prepare_cached("INSERT OR REPLACE INTO lexical_files(name, data) VALUES (?1, ?2)")?;
        let mut del = self
            .conn
            .prepare_cached("DELETE FROM lexical_files WHERE name = ?1")?;
        let mut put_large = self.conn.prepare_cached(
            "INSERT OR REPLACE INTO lexical_files(name, data) VALUES (?1, zeroblob(?2))",
        )?;
        for (name, data) in unsaved {
            match data {
                Some(file) if file.len() > SAVE_PIECE => {
                    put_large.execute(params![name, file.len() as i64])?;
                    let row = self.conn.last_insert_rowid();
                    let mut blob = self.conn.blob_open(
                        rusqlite::MAIN_DB,
                        "lexical_files",
                        "data",
                        row,
                        false,
                    )?;
                    let mut at = 0;
                    while at < file.len() {
                        let end = (at + SAVE_PIECE).min(file.len());
                        let piece = file.read_bytes_slice(at..end).map_err(sqlite_error)?;
                        blob.write_at(piece.as_slice(), at)?;
                        at = end;
                    }
                }
                Some(file) => {
                    let bytes = file.read_bytes().map_err(sqlite_error)?;
                    put.execute(params![name, bytes.as_slice()])?;
                }
                None => {
                    del.execute([name])?;
                }
            };
        }
        Ok(())
    }

    /// Where a write's large lexical files wait until the commit: beside the store file, as
    /// its `-wal` does. None for a store SQLite holds in memory.
    fn spill_folder(&self) -> Option<std::path::PathBuf> {
        if self.path.is_empty() || self.path == ":memory:" {
            return None;
        }
        let mut folder = std::path::absolute(&self.path).ok()?.into_os_string();
        folder.push("-lexical");
        Some(folder.into())
    }
}

/// A lexical file larger than this is saved a piece at a time (it may be read from the spill
/// folder): the commit of a large write holds one piece, not the file.
const SAVE_PIECE: usize = 4 << 20;

/// The lexical files (name, bytes) saved in the store `conn` reads, each read straight into a
/// buffer of its own size (not assembled by SQLite first).
fn saved_files(conn: &rusqlite::Connection) -> rusqlite::Result<Vec<(String, Vec<u8>)>> {
    use std::io::Read;
    let named: Vec<(i64, String)> = conn
        .prepare("SELECT rowid, name FROM lexical_files")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    named
        .into_iter()
        .map(|(row, name)| {
            let mut blob = conn.blob_open(rusqlite::MAIN_DB, "lexical_files", "data", row, true)?;
            let mut data = crate::memory::huge_vec(blob.len());
            blob.read_to_end(&mut data).map_err(sqlite_error)?;
            Ok((name, data))
        })
        .collect()
}

/// The SQLite error inside a blob read's I/O error (a damaged page reads as damage); any other
/// failure to read as damage too.
fn sqlite_error(e: std::io::Error) -> rusqlite::Error {
    match e
        .into_inner()
        .map(|inner| inner.downcast::<rusqlite::Error>())
    {
        Some(Ok(err)) => *err,
        _ => rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
            Some("a lexical file could not be read".into()),
        ),
    }
}

/// The number of chunk rows, which the saved files should list.
fn chunk_rows(conn: &rusqlite::Connection) -> rusqlite::Result<u64> {
    let n: i64 = conn.query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))?;
    Ok(u64::try_from(n).unwrap_or(0))
}
