//! The single-file store: the only module that writes SQL.
//!
//! Owns: the `Store` handle and opening the file (bundled SQLite, WAL, busy timeout, sqlite-vec
//! registered statically), reading `meta` and the committed generation, and the helpers its jobs
//! share. One file per job: `schema` (tables and forward migrations), `write` (the write path of
//! an index run, one transaction per run, SPEC §1), `lexical_files` (the lexical leg's files kept
//! in the store), `cache` (the in-memory search cache), `vectors` (reading sqlite-vec's storage),
//! `committed` (the record of the last commit kept beside the file), `stats` (read-only summaries), `search` and `explain` (the read path of a query), `export`
//! (reading a store out whole for `recall migrate`). Does not
//! own: parsing, chunking, embedding (Python), any trust rule (trust.rs), scoring inside a leg
//! (dense.rs, lexical.rs) or fusion (fusion.rs).

mod cache;
mod codes;
mod committed;
mod corpus_rows;
mod direct;
mod doctor;
mod explain;
mod export;
mod forget;
mod lexical_files;
mod lists;
mod schema;
mod search;
mod stats;
mod vectors;
mod write;

use std::path::Path;
use std::sync::Once;

use rusqlite::{params, Connection, ErrorCode, OptionalExtension};

use crate::errors::{CoreError, Result};
use crate::evidence::QueryEvidence;
use crate::trust;

pub use crate::explanation::{
    ClaimView, Explanation, IgnoredDeclaration, RetiredView, EXPLAIN_DEPTH,
};
pub(crate) use crate::judgment::lexical_body;
pub use crate::judgment::Edge;
pub(crate) use cache::SearchCache;
pub use doctor::Check;
pub use export::{ExportedDocument, StoredVectors};
pub use forget::{ForgetPlan, JournalEntry};
pub(crate) use lexical_files::Lexical;
pub use schema::SCHEMA_VERSION;
pub use search::{HitRow, SearchOutcome};
pub use stats::{SearchState, Stats};
pub use write::{Declarations, KnownDocument, NewChunk, NewDocument, NewRetirement};

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

/// How `Store::open_with` opens a file.
#[derive(Debug, Clone, Copy)]
pub struct OpenOptions {
    /// Create a new store when the file is missing (writes do; reads never should).
    pub create: bool,
    /// Open for reading only, whatever the file's permissions.
    pub read_only: bool,
}

pub struct Store {
    pub(crate) conn: Connection,
    path: String,
    pub(crate) in_write: bool,
    /// Why the store is read-only, when it is.
    read_only: Option<String>,
    pub(crate) cache: Option<SearchCache>,
    /// Set while searches may do without the fine codes (`set_lean`).
    pub(crate) lean: bool,
    pub(crate) lexical: Option<Lexical>,
    /// What the search of a text starts with, read ahead with the state a search reads first
    /// (`read_ahead`): the text, the lexical index's generation, the query's evidence.
    pub(crate) ahead: Option<(String, i64, QueryEvidence)>,
    /// The vector table's declared width, with the schema cookie it was read under: read again
    /// only when the schema changes, not on every search.
    declared_width: std::cell::Cell<Option<(i64, Option<usize>)>>,
    /// The last search state read (`search_state`), with the data version, this connection's
    /// count of rows written and the record prefix it was read under.
    pub(crate) state_read: Option<((i64, u64, String), stats::SearchState)>,
}

fn open_read_only(path: &str) -> Result<Connection> {
    Ok(Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?)
}

/// The meta value `key` as `conn` sees it (cached: a search reads a dozen meta values).
fn meta_of(conn: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT value FROM meta WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .optional()
}

/// `path` as the path part of an SQLite `file:` URI.
fn uri_path(path: &str) -> String {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.into());
    absolute
        .to_string_lossy()
        .replace('%', "%25")
        .replace('?', "%3f")
        .replace('#', "%23")
}

/// What a read-only connection to a WAL store says when its shared-memory file cannot be made.
fn is_disk_trouble(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::DiskFull | ErrorCode::SystemIoFailure)
    )
}

fn is_cantopen(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly)
    )
}

/// The oldest schema a read-only handle can search as it is (later versions only add what
/// writes use).
const READABLE_FROM: i64 = 2;

/// The tables every recall schema has had since its first version.
const STORE_TABLES: [&str; 3] = ["meta", "documents", "chunks"];

/// Whether the first pages of the file at `path` hold the text of recall's schema (the
/// `CREATE TABLE` of its lexical files), read past a header that SQLite no longer accepts.
fn holds_recall_schema(path: &str) -> bool {
    use std::io::Read;
    let mut head = Vec::new();
    let read = std::fs::File::open(path).and_then(|f| f.take(1 << 16).read_to_end(&mut head));
    read.is_ok()
        && head
            .windows(b"CREATE TABLE lexical_files".len())
            .any(|w| w == b"CREATE TABLE lexical_files")
}

/// Whether the open file is empty or a recall store; reads only. Anything else (another
/// application's database, a file that is not SQLite at all) is `NotAStore`.
fn check_is_store(conn: &Connection, path: &str) -> Result<()> {
    let not_a_store = |why: String| CoreError::NotAStore {
        path: path.into(),
        why,
    };
    let tables: Vec<String> = match conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .and_then(|mut st| {
            st.query_map([], |r| r.get(0))?
                .collect::<std::result::Result<Vec<String>, _>>()
        }) {
        Ok(tables) => tables,
        Err(e) if e.sqlite_error_code() == Some(ErrorCode::NotADatabase) => {
            if holds_recall_schema(path) {
                // recall's own schema text is there: a store whose header was damaged, not
                // another application's file.
                return Err(CoreError::Damaged {
                    part: "SQLite header",
                    detail: "the file holds recall's tables but does not open as SQLite".into(),
                });
            }
            return Err(not_a_store("it is not an SQLite database".into()));
        }
        Err(e) => return Err(e.into()),
    };
    if tables.is_empty() {
        return Ok(());
    }
    let missing: Vec<&str> = STORE_TABLES
        .iter()
        .copied()
        .filter(|t| !tables.iter().any(|have| have == t))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let shown: Vec<&str> = tables.iter().take(5).map(String::as_str).collect();
    let more = if tables.len() > 5 { ", …" } else { "" };
    Err(not_a_store(format!(
        "an SQLite database with tables {}{more} and no {}",
        shown.join(", "),
        missing.join(", ")
    )))
}

fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked)
    )
}

impl Store {
    /// Open (creating if missing) the store at `path` and migrate it forward; a file that
    /// cannot be written is opened read-only.
    pub fn open(path: &str) -> Result<Store> {
        Store::open_with(
            path,
            OpenOptions {
                create: true,
                read_only: false,
            },
        )
    }

    /// Open the store at `path` (SPEC §1, §11). Only a missing file (when `create`) or an
    /// empty one becomes a new store; a file that is not a recall store is refused before
    /// anything is written to it. A store whose file cannot be written (a read-only medium,
    /// another user's file) or that is asked for `read_only` is opened for reading: searches
    /// work, writes are refused with `ReadOnly`.
    pub fn open_with(path: &str, options: OpenOptions) -> Result<Store> {
        register_sqlite_vec();
        if !Path::new(path).exists() {
            if !options.create || options.read_only {
                return Err(CoreError::Missing { path: path.into() });
            }
            if let Some(parent) = Path::new(path).parent() {
                if !parent.as_os_str().is_empty() && !parent.is_dir() {
                    return Err(CoreError::Usage(format!(
                        "cannot create {path}: folder {} does not exist",
                        parent.display()
                    )));
                }
            }
        }
        let mut read_only = options.read_only.then(|| "asked for".to_string());
        let conn = match &read_only {
            Some(_) => open_read_only(path)?,
            None => {
                let conn = Connection::open(path)?;
                if conn.is_readonly(rusqlite::MAIN_DB)? {
                    read_only = Some("the file cannot be written".into());
                    drop(conn);
                    open_read_only(path)?
                } else {
                    conn
                }
            }
        };
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        // Nothing has been written yet: a file of another application stays byte-identical.
        let conn = match check_is_store(&conn, path) {
            // A WAL store where its shared-memory file cannot be made (a read-only medium, a
            // full disk): read it as the immutable file it is. Every commit folds the WAL back
            // into the file, so that is the last commit; writes are refused, saying why.
            Err(CoreError::Sqlite(e))
                if (read_only.is_some() && is_cantopen(&e)) || is_disk_trouble(&e) =>
            {
                if read_only.is_none() {
                    read_only = Some(
                        "its shared-memory file cannot be made: the disk is probably full".into(),
                    );
                }
                drop(conn);
                let conn = Connection::open_with_flags(
                    format!("file:{}?immutable=1", uri_path(path)),
                    rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                        | rusqlite::OpenFlags::SQLITE_OPEN_URI,
                )?;
                check_is_store(&conn, path)?;
                conn
            }
            Err(e) => return Err(e),
            Ok(()) => conn,
        };
        let mut store = Store {
            conn,
            path: path.to_string(),
            in_write: false,
            read_only,
            cache: None,
            lean: false,
            lexical: None,
            ahead: None,
            declared_width: std::cell::Cell::new(None),
            state_read: None,
        };
        if let Some(why) = store.read_only.clone() {
            let found: i64 = store
                .conn
                .query_row("PRAGMA user_version", [], |r| r.get(0))?;
            if found > SCHEMA_VERSION {
                return Err(CoreError::SchemaTooNew {
                    path: path.into(),
                    found,
                    supported: SCHEMA_VERSION,
                });
            }
            if found < READABLE_FROM {
                return Err(CoreError::ReadOnly {
                    path: path.into(),
                    why: format!("{why}, and it needs an upgrade to schema {SCHEMA_VERSION}"),
                });
            }
            store.conn.execute_batch("PRAGMA foreign_keys=ON;")?;
            return Ok(store);
        }
        // A new file gets 16 KiB pages: loading the search cache reads the codes, documents
        // and lexical files page by page, and bigger pages make that a quarter of the reads.
        // An existing file keeps its page size (SQLite ignores this once it holds a page).
        store.conn.execute_batch("PRAGMA page_size=16384")?;
        // WAL: readers never block on the writer; NORMAL keeps committed data across a killed
        // process (only a power loss can drop the last commit).
        let mode: String = store
            .conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") && !mode.eq_ignore_ascii_case("memory") {
            return Err(CoreError::Usage(format!(
                "cannot switch {path} to WAL mode (got '{mode}')"
            )));
        }
        store
            .conn
            .execute_batch("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")?;
        store.migrate()?;
        Ok(store)
    }

    /// Run `f` in a write transaction of its own (not an index run's): committed when it
    /// succeeds, rolled back when it fails.
    pub(crate) fn in_own_write<T>(&mut self, f: impl FnOnce(&mut Store) -> Result<T>) -> Result<T> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| self.busy(e))?;
        match f(self) {
            Ok(value) => {
                self.conn
                    .execute_batch("COMMIT")
                    .map_err(|e| self.busy(e))?;
                Ok(value)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Run `f` in one read transaction, so that every statement it makes reads the same
    /// commit (and the file's locks are taken once); inside a transaction already open (an
    /// index run's write, an outer read), in that one.
    pub(crate) fn in_read<T>(&mut self, f: impl FnOnce(&mut Store) -> Result<T>) -> Result<T> {
        let own = self.conn.is_autocommit();
        if own {
            self.conn.execute_batch("BEGIN")?;
        }
        let out = f(self);
        // Read-only: ending it cannot lose anything; a failed end is rolled back.
        if own && !self.conn.is_autocommit() && self.conn.execute_batch("COMMIT").is_err() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        out
    }

    /// Why writes are refused, when the store is open read-only.
    pub fn read_only(&self) -> Option<&str> {
        self.read_only.as_deref()
    }

    /// Refuse a write on a read-only store.
    pub(crate) fn require_writable(&self) -> Result<()> {
        match &self.read_only {
            Some(why) => Err(CoreError::ReadOnly {
                path: self.path.clone(),
                why: why.clone(),
            }),
            None => Ok(()),
        }
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
        Ok(meta_of(&self.conn, key)?)
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
        let damaged = |detail: String| CoreError::Damaged {
            part: "metadata",
            detail,
        };
        let dim = match dim.parse::<usize>() {
            Ok(d) if d > 0 => d,
            _ => {
                return Err(damaged(format!(
                    "the embedder's dimension is recorded as '{dim}', not a positive number"
                )))
            }
        };
        // The vector table declares its own width: the record must agree with it.
        if let Some(width) = self.vector_width()? {
            if width != dim {
                return Err(damaged(format!(
                    "it records {dim} dimensions for {name}, its vector table holds {width}"
                )));
            }
        }
        Ok(Some(EmbedderInfo {
            name,
            dim,
            fingerprint,
        }))
    }

    /// The width the vector table declares, if it exists.
    fn vector_width(&self) -> Result<Option<usize>> {
        let cookie: i64 = self
            .conn
            .prepare_cached("PRAGMA schema_version")?
            .query_row([], |r| r.get(0))?;
        if let Some((seen, width)) = self.declared_width.get() {
            if seen == cookie {
                return Ok(width);
            }
        }
        let declared: Option<String> = self
            .conn
            .prepare_cached("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1")?
            .query_row([VEC_TABLE], |r| r.get(0))
            .optional()?;
        let width = declared.as_deref().and_then(declared_width);
        self.declared_width.set(Some((cookie, width)));
        Ok(width)
    }

    /// The committed generation (0 before the first commit). A value that is not a whole
    /// number is damage: every cache and saved index is keyed by it.
    pub fn generation(&self) -> Result<i64> {
        match self.meta("generation")? {
            None => Ok(0),
            Some(g) => g
                .parse()
                .ok()
                .filter(|&g: &i64| g >= 0)
                .ok_or_else(|| CoreError::Damaged {
                    part: "metadata",
                    detail: format!("the generation is recorded as {g:?}, not a whole number"),
                }),
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.rollback();
        // Before the connection: the cache joins the thread reading its places, whose own
        // connection must close first.
        self.cache = None;
    }
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

    /// A plain policy: the epoch, threshold 0.5, dense relevance only.
    pub(crate) fn policy() -> crate::trust::Policy {
        crate::trust::Policy {
            now_us: 0,
            known_as_of_us: None,
            threshold: 0.5,
            scale: 0.05,
            unverified: false,
            lexical_weight: 0.0,
            identifier_weight: 0.0,
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
            mtime_ns: None,
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
            declarations: Declarations {
                edges: vec![Edge {
                    raw: "[[b]]".into(),
                    key: "b".into(),
                    vocabulary: "frontmatter".into(),
                    ..Edge::default()
                }],
                ..Declarations::default()
            },
        }
    }

    /// A store's path in a folder of its own, removed with everything in it when dropped:
    /// keep it alive as long as the store is open.
    pub(crate) struct TempDb {
        dir: std::path::PathBuf,
        path: String,
    }

    impl std::ops::Deref for TempDb {
        type Target = str;
        fn deref(&self) -> &str {
            &self.path
        }
    }

    impl AsRef<Path> for TempDb {
        fn as_ref(&self) -> &Path {
            Path::new(&self.path)
        }
    }

    impl Drop for TempDb {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    pub(crate) fn temp_db(name: &str) -> TempDb {
        let dir =
            std::env::temp_dir().join(format!("recall-store-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("memory.db").to_string_lossy().into_owned();
        TempDb { dir, path }
    }
}

/// The width a vector table's declaration gives its `embedding` column (`float[N]`).
fn declared_width(sql: &str) -> Option<usize> {
    let after = &sql[sql.find("float[")? + "float[".len()..];
    after[..after.find(']')?].trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::fixtures::{doc, embedder, policy, temp_db};
    use super::*;

    #[test]
    fn a_dimension_record_the_vector_table_contradicts_is_damage() {
        let path = temp_db("dimension");
        let mut store = Store::open(&path).unwrap();
        store.begin(&embedder(4)).unwrap();
        store.commit("t0").unwrap();
        assert_eq!(store.embedder().unwrap().unwrap().dim, 4);
        for bad in ["8", "0", "four"] {
            store.set_meta("embedder_dim", bad).unwrap();
            let err = store.embedder().unwrap_err();
            assert!(
                matches!(
                    err,
                    CoreError::Damaged {
                        part: "metadata",
                        ..
                    }
                ),
                "{bad}: {err}"
            );
        }
        assert_eq!(
            declared_width("CREATE VIRTUAL TABLE v USING vec0(embedding float[ 384 ])"),
            Some(384)
        );
    }

    #[test]
    fn another_applications_database_is_refused_and_left_byte_identical() {
        let path = temp_db("foreign");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE orders(id INTEGER PRIMARY KEY, total REAL); INSERT INTO orders VALUES (1, 9.5);")
            .unwrap();
        drop(conn);
        let before = std::fs::read(&path).unwrap();
        let err = Store::open(&path).err().expect("refused");
        assert!(matches!(err, CoreError::NotAStore { .. }), "{err}");
        assert!(err.to_string().contains("orders"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
        assert!(!Path::new(&format!("{}-wal", &*path)).exists());
    }

    #[test]
    fn a_file_that_is_not_sqlite_is_refused_untouched() {
        let path = temp_db("text");
        std::fs::write(
            &path,
            "# notes\nnot a database, long enough to have a header or not\n".repeat(20),
        )
        .unwrap();
        let before = std::fs::read(&path).unwrap();
        let err = Store::open(&path).err().expect("refused");
        assert!(err.to_string().contains("not an SQLite database"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn an_empty_file_becomes_a_store_and_reads_never_create_one() {
        let path = temp_db("empty");
        std::fs::write(&path, b"").unwrap();
        assert_eq!(
            Store::open(&path).unwrap().schema_version().unwrap(),
            SCHEMA_VERSION
        );
        let missing = temp_db("missing");
        let read = OpenOptions {
            create: false,
            read_only: false,
        };
        assert!(matches!(
            Store::open_with(&missing, read),
            Err(CoreError::Missing { .. })
        ));
        assert!(!Path::new(&*missing).exists());
    }

    #[test]
    fn a_read_only_store_answers_reads_and_refuses_writes() {
        let path = temp_db("readonly");
        let mut store = Store::open(&path).unwrap();
        store.begin(&embedder(4)).unwrap();
        store.put_document(&doc("a.md", 2, 4), "t0").unwrap();
        store.commit("t0").unwrap();
        drop(store);
        let before = std::fs::read(&path).unwrap();
        let options = OpenOptions {
            create: false,
            read_only: true,
        };
        let mut store = Store::open_with(&path, options).unwrap();
        assert!(store.read_only().is_some());
        assert_eq!(store.stats().unwrap().chunks, 2);
        let policy = policy();
        let out = store
            .search(&[1.0, 2.0, 3.0, 4.0], "chunk", 5, 20, &policy)
            .unwrap();
        assert!(!out.hits.is_empty());
        assert!(matches!(
            store.begin(&embedder(4)),
            Err(CoreError::ReadOnly { .. })
        ));
        assert!(matches!(
            store.set_meta_value("k", "v"),
            Err(CoreError::ReadOnly { .. })
        ));
        drop(store);
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn a_search_reads_ahead_only_what_its_own_text_and_index_give() {
        let path = temp_db("ahead");
        let mut store = Store::open(&path).unwrap();
        store.begin(&embedder(4)).unwrap();
        store.put_document(&doc("a.md", 2, 4), "t0").unwrap();
        store.commit("t0").unwrap();
        let policy = policy();
        let query = [1.0, 2.0, 3.0, 4.0];
        let judged = |out: &SearchOutcome| -> Vec<crate::trust::Judged> {
            out.hits.iter().map(|h| h.judged.clone()).collect()
        };
        // A handle that holds nothing yet loads nothing to read ahead: its first search loads
        // the lexical index itself.
        drop(store);
        let mut store = Store::open(&path).unwrap();
        store.read_ahead("chunk").unwrap();
        assert!(store.ahead.is_none());
        let first = store.search(&query, "chunk", 5, 20, &policy).unwrap();
        store.read_ahead("chunk").unwrap();
        assert!(store.ahead.as_ref().is_some_and(|a| a.0 == "chunk"));
        let again = store.search(&query, "chunk", 5, 20, &policy).unwrap();
        assert!(store.ahead.is_none(), "taken by the search of its text");
        assert_eq!(judged(&again), judged(&first));
        // Read ahead for another text, or before a commit: the search reads its own.
        store.read_ahead("other words").unwrap();
        let other = store.search(&query, "chunk", 5, 20, &policy).unwrap();
        assert_eq!(judged(&other), judged(&first));
        store.read_ahead("chunk").unwrap();
        store.begin(&embedder(4)).unwrap();
        store.put_document(&doc("b.md", 1, 4), "t1").unwrap();
        store.read_ahead("chunk").unwrap();
        assert!(store.ahead.is_none(), "nothing inside a write");
        store.commit("t1").unwrap();
        let later = store.search(&query, "chunk", 5, 20, &policy).unwrap();
        assert_eq!(later.hits.len(), first.hits.len() + 1);
    }

    #[test]
    fn the_search_state_is_read_again_after_every_commit_and_rollback() {
        let path = temp_db("state");
        let mut store = Store::open(&path).unwrap();
        let documents = |s: &mut Store| s.search_state("rec:", None).unwrap().freshness.0;
        assert_eq!(store.search_state("rec:", None).unwrap().embedder, None);
        store.begin(&embedder(4)).unwrap();
        store.put_document(&doc("a.md", 1, 4), "t0").unwrap();
        store.commit("t0").unwrap();
        assert_eq!(documents(&mut store), 1, "its own commit");
        assert_eq!(store.search_state("rec:", None).unwrap().record, None);
        // Another connection's commits: a document, then a record under the prefix.
        let mut other = Store::open(&path).unwrap();
        other.begin(&embedder(4)).unwrap();
        other.put_document(&doc("b.md", 1, 4), "t1").unwrap();
        other.commit("t1").unwrap();
        assert_eq!(documents(&mut store), 2, "another connection's commit");
        other.set_meta_value("rec:fp", "{}").unwrap();
        let state = store.search_state("rec:", None).unwrap();
        assert_eq!(state.record.as_deref(), Some("{}"));
        assert_eq!(store.search_state("other:", None).unwrap().record, None);
        // Read inside a write that is then rolled back: the rows it wrote are not kept.
        store.begin(&embedder(4)).unwrap();
        store.put_document(&doc("c.md", 1, 4), "t2").unwrap();
        assert_eq!(documents(&mut store), 2, "counted as a commit counts them");
        store.set_meta("documents", "3").unwrap();
        assert_eq!(documents(&mut store), 3, "a row written inside its write");
        store.rollback();
        assert_eq!(documents(&mut store), 2, "after the rollback");
        assert_eq!(store.search_state("rec:", None).unwrap(), state);
    }

    #[test]
    fn a_hits_file_is_looked_at_by_its_size_and_time() {
        use std::os::unix::fs::MetadataExt;
        let dir = temp_db("files");
        let root = std::path::Path::new(dir.as_ref()).with_extension("notes");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("a.md"), b"hello\n").unwrap();
        let meta = std::fs::metadata(root.join("a.md")).unwrap();
        let ns = meta.mtime() * 1_000_000_000 + meta.mtime_nsec();
        let source = root.to_str().unwrap();
        let stamp = |size: i64, mtime: Option<i64>| (String::new(), size, mtime);
        let state = super::search::file_state;
        assert_eq!(state(source, "a.md", &stamp(6, Some(ns))), "current");
        assert_eq!(state(source, "a.md", &stamp(6, None)), "unsure");
        assert_eq!(state(source, "a.md", &stamp(6, Some(ns + 1))), "unsure");
        assert_eq!(state(source, "a.md", &stamp(7, Some(ns))), "changed");
        assert_eq!(state(source, "sub", &stamp(6, Some(ns))), "changed");
        assert_eq!(state(source, "gone.md", &stamp(6, Some(ns))), "missing");
        assert_eq!(state(source, "a.md/x.md", &stamp(6, Some(ns))), "missing");
        assert_eq!(
            state("/nowhere/at/all", "a.md", &stamp(6, Some(ns))),
            "elsewhere"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
