//! The one error type of the Rust core and its single mapping to Python exceptions.
//!
//! Owns: the variants and their messages. Does not own: the Python class hierarchy, which is
//! declared in `lib.rs` and re-exported by `recall.errors`.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum CoreError {
    /// The SQLite file could not be opened, read or written.
    #[error("recall store: {0}")]
    Sqlite(#[from] rusqlite::Error),

    /// Another process holds the write lock longer than the busy timeout.
    #[error("recall store: {path} is locked by another writer; wait for it to finish and retry")]
    Locked { path: String },

    /// The store was written by a newer recall than this one.
    #[error(
        "recall store: {path} has schema version {found}, newer than this recall supports \
         ({supported}); upgrade recall"
    )]
    SchemaTooNew {
        path: String,
        found: i64,
        supported: i64,
    },

    /// The store's vectors were built with another embedder.
    #[error(
        "recall store: {path} was built with embedder '{stored}', not '{requested}'; \
         use --embedder {stored} or a new --db"
    )]
    EmbedderMismatch {
        path: String,
        stored: String,
        requested: String,
    },

    /// The file exists but is not a recall store: it is left exactly as it was.
    #[error(
        "recall store: {path} is not a recall store ({why}); recall leaves it untouched: \
         choose another --db"
    )]
    NotAStore { path: String, why: String },

    /// A write on a store opened read-only.
    #[error(
        "recall store: {path} is open read-only ({why}); search, stats and explain work, \
         but indexing and calibrating need a writable store: copy it (cp {path} NEW.db) and \
         use --db NEW.db"
    )]
    ReadOnly { path: String, why: String },

    /// A read of a store that does not exist (reads never create one).
    #[error(
        "recall store: there is no store at {path}; run 'recall index PATH --db {path}' first"
    )]
    Missing { path: String },

    /// A part of the store cannot be read as it was written (bit rot, a bad copy): the caller
    /// adds the way out.
    #[error("recall store: the {part} is damaged: {detail}")]
    Damaged { part: &'static str, detail: String },

    /// The lexical index failed while it was built or written (not while read: a saved index
    /// that cannot be read is `Damaged`).
    #[error("recall store: the lexical index failed: {0}")]
    Lexical(String),

    /// A caller broke an API precondition (wrong vector length, no open write, ...).
    #[error("recall store: {0}")]
    Usage(String),
}

pub type Result<T> = std::result::Result<T, CoreError>;
