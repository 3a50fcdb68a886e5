//! The exception classes recall raises from the core, and the one mapping from the core's errors
//! (and a caught panic) to them, in the user's terms (SPEC §11).

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

use crate::errors::CoreError;

create_exception!(
    recall,
    RecallError,
    PyException,
    "Root of every error recall raises."
);
create_exception!(
    recall,
    StoreError,
    RecallError,
    "The store file could not be used."
);
create_exception!(
    recall,
    StoreLockedError,
    StoreError,
    "Another process holds the store's write lock."
);
create_exception!(
    recall,
    StoreDamagedError,
    StoreError,
    "A part of the store file cannot be read as it was written."
);
create_exception!(
    recall,
    EmbedderMismatchError,
    StoreError,
    "The store was built with another embedder."
);

/// The single mapping from Rust errors to Python exception classes.
pub(crate) fn to_py(err: CoreError) -> PyErr {
    let msg = err.to_string();
    match err {
        CoreError::Locked { .. } => StoreLockedError::new_err(msg),
        CoreError::EmbedderMismatch { .. } => EmbedderMismatchError::new_err(msg),
        CoreError::Sqlite(_)
        | CoreError::SchemaTooNew { .. }
        | CoreError::NotAStore { .. }
        | CoreError::ReadOnly { .. }
        | CoreError::Missing { .. }
        | CoreError::Lexical(_)
        | CoreError::Usage(_) => StoreError::new_err(msg),
        CoreError::Damaged { .. } => StoreDamagedError::new_err(msg),
    }
}

/// An error from the store in the user's terms (SPEC §11): damage names the way to find out
/// more, a full disk says so, and any other SQLite failure, which a sound file does not give,
/// points at `recall doctor`.
pub(crate) fn damaged(err: CoreError, path: &str) -> PyErr {
    use rusqlite::ErrorCode as Code;
    let code = match &err {
        CoreError::Sqlite(e) => e.sqlite_error_code(),
        _ => None,
    };
    match (&err, code) {
        (CoreError::Damaged { .. }, _) | (_, Some(Code::DatabaseCorrupt | Code::NotADatabase)) => {
            StoreDamagedError::new_err(format!(
                "{err}: {path} is damaged; run 'recall doctor --db {path}' to see what is wrong \
                 and how to recover"
            ))
        }
        (_, Some(Code::SystemIoFailure)) => StoreError::new_err(format!(
            "recall store: reading or writing {path} failed ({err}): the disk may be full or \
             failing; the last commit is kept, and 'recall doctor --db {path}' checks the file"
        )),
        (_, Some(Code::DiskFull)) => StoreError::new_err(format!(
            "recall store: the disk holding {path} is full ({err}); nothing of this write was \
             kept, the last commit is: free some space and run it again"
        )),
        (CoreError::Sqlite(_), Some(code))
            if !matches!(
                code,
                Code::DatabaseBusy
                    | Code::DatabaseLocked
                    | Code::ReadOnly
                    | Code::CannotOpen
                    | Code::PermissionDenied
                    | Code::OperationInterrupted
            ) =>
        {
            StoreError::new_err(format!(
                "{err}; {path} may be damaged: run 'recall doctor --db {path}' to check it"
            ))
        }
        _ => to_py(err),
    }
}

/// A panic inside the core, caught before it reaches Python: with every input checked, the
/// cause is data that does not read as it was written (SPEC §11).
pub(crate) fn panicked(payload: Box<dyn std::any::Any + Send>, path: &str) -> PyErr {
    let why = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string());
    StoreDamagedError::new_err(format!(
        "recall store: reading {path} failed inside recall ({why}); the file is probably \
         damaged: run 'recall doctor --db {path}' to see what is wrong and how to recover"
    ))
}
