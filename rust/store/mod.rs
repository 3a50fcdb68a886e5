//! The single-file store: the only module that writes SQL.
//!
//! Owns: the `Store` handle and opening the file (bundled SQLite, WAL, busy timeout, sqlite-vec
//! registered statically), reading `meta` and the committed generation, and the helpers its jobs
//! share. One file per job: `schema` (tables and forward migrations), `write` (the write path of
//! an index run, one transaction per run, SPEC §1), `lexical_files` (the lexical leg's files kept
//! in the store), `cache` (the in-memory search cache), `vectors` (reading sqlite-vec's storage),
//! `stats` (read-only summaries), `search` and `explain` (the read path of a query). Does not
//! own: parsing, chunking, embedding (Python), any trust rule (trust.rs), scoring inside a leg
//! (dense.rs, lexical.rs) or fusion (fusion.rs).

mod cache;
mod explain;
mod lexical_files;
mod schema;
mod search;
mod stats;
mod vectors;
mod write;

use std::path::Path;
use std::sync::Once;

use rusqlite::{params, Connection, ErrorCode, OptionalExtension};

use crate::errors::{CoreError, Result};
use crate::trust;

pub(crate) use cache::SearchCache;
pub use explain::{ClaimView, Explanation, EXPLAIN_DEPTH};
pub(crate) use lexical_files::Lexical;
pub use schema::SCHEMA_VERSION;
pub use search::{HitRow, SearchOutcome};
pub use stats::Stats;
pub use write::{NewChunk, NewDocument};

/// Name of the sqlite-vec table holding one vector per chunk (`chunk_id` = `chunks.id`).
pub const VEC_TABLE: &str = "vec_chunks";

static REGISTER_VEC: Once = Once::new();

/// Register sqlite-vec with the bundled SQLite so every connection opened afterwards has it.
fn register_sqlite_vec() {
    REGISTER_VEC.call_once(|| {
        // SAFETY: sqlite3_vec_init has the signature of an SQLite extension entry point; the
        // crate declares it without arguments, hence the transmute. auto_extension is process
        // global and idempotent behind the Once.
        unsafe {
            type EntryPoint = unsafe extern "C" fn(
                *mut rusqlite::ffi::sqlite3,
                *mut *mut std::os::raw::c_char,
                *const rusqlite::ffi::sqlite3_api_routines,
            ) -> std::os::raw::c_int;
            let entry: EntryPoint = std::mem::transmute(sqlite_vec::sqlite3_vec_init as *const ());
            rusqlite::ffi::sqlite3_auto_extension(Some(entry));
        }
    });
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedderInfo {
    pub name: String,
    pub dim: usize,
    pub fingerprint: String,
}

/// Parse the store's fixed-width instant `YYYY-MM-DDTHH:MM:SS.ffffffZ` into µs since the epoch;
/// None when it is not in that form (the document is then treated as undated, SPEC §2.4).
pub fn parse_instant_us(raw: &str) -> Option<i64> {
    let b = raw.as_bytes();
    if b.len() != 27
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'.'
        || b[26] != b'Z'
    {
        return None;
    }
    let day = trust::parse_day_start_us(&raw[..10])?;
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        b[r].iter().try_fold(0i64, |acc, c| {
            c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
        })
    };
    let (h, m, s, us) = (num(11..13)?, num(14..16)?, num(17..19)?, num(20..26)?);
    if h > 23 || m > 59 || s > 60 {
        return None;
    }
    Some(day + ((h * 60 + m) * 60 + s) * 1_000_000 + us)
}

pub struct Store {
    pub(crate) conn: Connection,
    path: String,
    in_write: bool,
    pub(crate) cache: Option<SearchCache>,
    pub(crate) lexical: Option<Lexical>,
}

fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked)
    )
}

impl Store {
    /// Open (creating if missing) the store at `path` and migrate it forward.
    pub fn open(path: &str) -> Result<Store> {
        register_sqlite_vec();
        if let Some(parent) = Path::new(path).parent() {
            if !parent.as_os_str().is_empty() && !parent.is_dir() {
                return Err(CoreError::Usage(format!(
                    "cannot create {path}: folder {} does not exist",
                    parent.display()
                )));
            }
        }
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        // WAL: readers never block on the writer; NORMAL keeps committed data across a killed
        // process (only a power loss can drop the last commit).
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") && !mode.eq_ignore_ascii_case("memory") {
            return Err(CoreError::Usage(format!(
                "cannot switch {path} to WAL mode (got '{mode}')"
            )));
        }
        conn.execute_batch("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")?;
        let mut store = Store {
            conn,
            path: path.to_string(),
            in_write: false,
            cache: None,
            lexical: None,
        };
        store.migrate()?;
        Ok(store)
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    fn busy(&self, err: rusqlite::Error) -> CoreError {
        if is_busy(&err) {
            CoreError::Locked {
                path: self.path.clone(),
            }
        } else {
            err.into()
        }
    }

    pub fn schema_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    pub fn meta(&self, key: &str) -> Result<Option<String>> {
        // Cached: a search reads a dozen meta values.
        let mut stmt = self
            .conn
            .prepare_cached("SELECT value FROM meta WHERE key = ?1")?;
        Ok(stmt.query_row([key], |r| r.get(0)).optional()?)
    }

    fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?1, ?2)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    }

    pub fn embedder(&self) -> Result<Option<EmbedderInfo>> {
        let (Some(name), Some(dim), Some(fingerprint)) = (
            self.meta("embedder_name")?,
            self.meta("embedder_dim")?,
            self.meta("embedder_fingerprint")?,
        ) else {
            return Ok(None);
        };
        let dim = dim.parse::<usize>().map_err(|_| {
            CoreError::Usage(format!(
                "{}: stored embedder dimension '{dim}' is not a number",
                self.path
            ))
        })?;
        Ok(Some(EmbedderInfo {
            name,
            dim,
            fingerprint,
        }))
    }

    pub fn generation(&self) -> Result<i64> {
        Ok(self
            .meta("generation")?
            .and_then(|g| g.parse().ok())
            .unwrap_or(0))
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.rollback();
    }
}

/// What the lexical leg indexes for a chunk: its text under its title and heading path (SPEC §4).
pub(crate) fn lexical_body(title: &str, heading_path: &str, text: &str) -> String {
    format!("{title}\n{heading_path}\n{text}")
}

/// Little-endian f32 bytes, the vector format sqlite-vec reads.
pub fn f32_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Fixtures shared by the store's tests: a small embedder, a document, a fresh file.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    pub(crate) fn embedder(dim: usize) -> EmbedderInfo {
        EmbedderInfo {
            name: format!("hashing-{dim}"),
            dim,
            fingerprint: "fp".into(),
        }
    }

    pub(crate) fn doc(path: &str, n_chunks: usize, dim: usize) -> NewDocument {
        NewDocument {
            source: "/corpus".into(),
            path: path.into(),
            key: path.trim_end_matches(".md").into(),
            title: path.into(),
            content_hash: format!("hash-{path}"),
            size_bytes: 10,
            valid_from_raw: None,
            valid_until_raw: None,
            valid_from: None,
            valid_until: None,
            metadata_error: None,
            frontmatter: "{}".into(),
            chunks: (0..n_chunks)
                .map(|i| NewChunk {
                    ordinal: i as i64,
                    text: format!("chunk {i}"),
                    byte_start: 0,
                    byte_end: 7,
                    line_start: 1,
                    line_end: 1,
                    heading_path: String::new(),
                })
                .collect(),
            vectors: (0..n_chunks * dim).map(|i| (i % 7) as f32 + 1.0).collect(),
            edges: vec![("[[b]]".into(), "b".into())],
        }
    }

    pub(crate) fn temp_db(name: &str) -> String {
        let dir =
            std::env::temp_dir().join(format!("recall-store-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("memory.db").to_string_lossy().into_owned()
    }
}
