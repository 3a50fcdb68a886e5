//! The record of the last committed generation, kept beside the store (`<store>-committed`).
//!
//! Owns: writing it after each commit and `recall doctor`'s comparison with the generation the
//! store reads. Does not own: the commit itself (write.rs).
//!
//! Why: a commit lives in the `-wal` file until SQLite folds it into the main file (the commit
//! asks for that at once; a reader of another process can delay it). One damaged byte in the
//! WAL, or a WAL lost or left behind in a copy, makes SQLite stop reading at that frame: the
//! store silently reads an earlier generation, whose answers are the old notes'. The record is
//! written only after SQLite has committed, so it is never ahead of a sound store: a record
//! ahead of the store names a commit that was lost. It names the store it belongs to (meta
//! `store_id`), so a new store made at the same path is not taken for a rolled-back one.
//!
//! Format, one line: `recall-committed 1 STORE_ID GENERATION CRC` (CRC-32 of what precedes it,
//! in hex). It is replaced whole (written to a new file, then renamed over it), never written
//! through a symbolic link; a record that cannot be written is left as it was (it can only be
//! behind the store then, which says nothing).

use std::hash::{BuildHasher, Hasher};
use std::io::Write;

use super::doctor::{check, Check};
use super::Store;

const MAGIC: &str = "recall-committed 1";

/// Where the record of the store at `path` lives.
pub(crate) fn record_path(path: &str) -> String {
    format!("{path}-committed")
}

/// A new store's identity: 64 random bits in hex.
pub(super) fn new_store_id() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    hasher.write_u128(now);
    hasher.write_u32(std::process::id());
    format!("{:016x}", hasher.finish())
}

fn line(store_id: &str, generation: i64) -> String {
    let body = format!("{MAGIC} {store_id} {generation}");
    format!("{body} {:08x}\n", crc32fast::hash(body.as_bytes()))
}

/// (store id, generation) of a record's text; None when it is not one this build writes whole.
fn parse(text: &str) -> Option<(String, i64)> {
    let text = text.strip_suffix('\n')?;
    let (body, sum) = text.rsplit_once(' ')?;
    if u32::from_str_radix(sum, 16).ok()? != crc32fast::hash(body.as_bytes()) {
        return None;
    }
    let rest = body.strip_prefix(MAGIC)?.strip_prefix(' ')?;
    let (id, generation) = rest.split_once(' ')?;
    Some((id.to_string(), generation.parse().ok()?))
}

/// Replace the record at `path` with `text`, never through a symbolic link: a new file beside
/// it (created, so a link in its place is refused), then renamed over the record (a rename
/// replaces a link, it does not follow it).
fn replace(path: &str, text: &str) -> std::io::Result<()> {
    let temporary = format!("{path}.{}.tmp", std::process::id());
    let _ = std::fs::remove_file(&temporary);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temporary)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

impl Store {
    /// After a commit: record `generation` as the last one committed. Best effort (see the
    /// module's note).
    pub(super) fn record_commit(&self, generation: i64) {
        if let Ok(Some(id)) = self.meta("store_id") {
            let _ = replace(&record_path(&self.path), &line(&id, generation));
        }
    }

    /// `recall doctor`: the generation the store reads against the last one recorded as
    /// committed.
    pub(super) fn check_commits(&self) -> Check {
        let path = record_path(&self.path);
        let Ok(generation) = self.generation() else {
            return check(
                "commits",
                "warning",
                "not compared: the generation the store records cannot be read",
            );
        };
        let id = self.meta("store_id").ok().flatten();
        let text = match std::fs::symlink_metadata(&path) {
            Err(_) => {
                return check(
                    "commits",
                    "ok",
                    format!("generation {generation}; no record of commits beside the store"),
                )
            }
            Ok(m) if !m.is_file() => {
                return check(
                    "commits",
                    "warning",
                    format!("{path} is not a plain file; the next index run replaces it"),
                )
            }
            Ok(_) => std::fs::read(&path).unwrap_or_default(),
        };
        let record = std::str::from_utf8(&text[..text.len().min(256)])
            .ok()
            .and_then(parse);
        match record {
            None => check(
                "commits",
                "warning",
                format!("{path} cannot be read as written; the next index run writes it again"),
            ),
            Some((of, _)) if Some(&of) != id.as_ref() => check(
                "commits",
                "ok",
                format!(
                    "generation {generation}; the record beside the store is another store's \
                     (the next index run replaces it)"
                ),
            ),
            Some((_, committed)) if committed > generation => check(
                "commits",
                "damaged",
                format!(
                    "the store reads generation {generation}, but generation {committed} was \
                     committed ({path}): the commits after {generation} were lost (a damaged, \
                     missing or stale {}-wal file, or a copy of the store made before them); \
                     the notes are whole: run 'recall index' on them to redo the lost runs",
                    self.path
                ),
            ),
            Some((_, committed)) => check(
                "commits",
                "ok",
                format!("generation {generation}, the last one committed ({committed})"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::{doc, embedder, temp_db};

    #[test]
    fn a_record_reads_back_only_as_written() {
        let text = line("00ab", 12);
        assert_eq!(parse(&text), Some(("00ab".into(), 12)));
        assert_eq!(parse(&text.replace("12", "13")), None);
        assert_eq!(parse(&text[..text.len() - 1]), None);
        assert_eq!(parse("recall-committed 1 00ab 12 zz\n"), None);
    }

    #[test]
    fn a_store_read_at_an_older_generation_than_committed_is_damaged() {
        let dir = temp_db("committed");
        let mut store = Store::open(&dir).unwrap();
        let status = |s: &Store| s.check_commits().status;
        assert_eq!(status(&store), "ok", "no record yet");
        for (n, path) in ["a.md", "b.md"].iter().enumerate() {
            store.begin(&embedder(8)).unwrap();
            store.put_document(&doc(path, 1, 8), "t0").unwrap();
            assert_eq!(store.commit("t0").unwrap(), n as i64 + 1);
        }
        let record = record_path(&dir);
        let written = std::fs::read_to_string(&record).unwrap();
        assert!(written.contains(" 2 "), "{written}");
        assert_eq!(status(&store), "ok");
        // The last commit lost: the store reads generation 1.
        store.set_meta_value("generation", "1").unwrap();
        let found = store.check_commits();
        assert_eq!(found.status, "damaged");
        assert!(
            found
                .detail
                .contains("reads generation 1, but generation 2 was committed")
                && found.detail.contains("recall index"),
            "{}",
            found.detail
        );
        // The next run commits generation 2 again and records it: sound.
        store.begin(&embedder(8)).unwrap();
        store.commit("t1").unwrap();
        assert_eq!(status(&store), "ok");
        // Another store's record, and one damaged, say nothing of this store.
        std::fs::write(&record, line("another", 99)).unwrap();
        assert_eq!(status(&store), "ok");
        std::fs::write(&record, written.replace(" 2 ", " 9 ")).unwrap();
        assert_eq!(status(&store), "warning");
    }

    #[test]
    fn the_record_is_never_written_through_a_symbolic_link() {
        let dir = temp_db("committed-link");
        let elsewhere = format!("{}-elsewhere", &*dir);
        std::fs::write(&elsewhere, "untouched").unwrap();
        std::os::unix::fs::symlink(&elsewhere, record_path(&dir)).unwrap();
        let mut store = Store::open(&dir).unwrap();
        store.begin(&embedder(8)).unwrap();
        store.put_document(&doc("a.md", 1, 8), "t0").unwrap();
        store.commit("t0").unwrap();
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "untouched");
        let link = std::fs::symlink_metadata(record_path(&dir)).unwrap();
        assert!(link.is_file(), "the link was replaced by the record");
        let _ = std::fs::remove_file(&elsewhere);
    }
}
