//! The directory the lexical index lives in while a store is open (SPEC §1, §3).
//!
//! Owns: which files Tantivy wrote or deleted since the store last saved them, the files the
//! index was opened with (held as read, no copy), and where a write's large files wait for
//! the commit: in a folder beside the store (`<store>-lexical`), read back a range at a time,
//! so that a first index of a million notes does not hold its lexical index in memory until
//! it commits. Once the store has saved them, the store lets the index go and the folder goes
//! with its last handle; the next search loads the index from the store.
//! Does not own: the index (lexical.rs) or the `lexical_files` table (store/lexical_files.rs).

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use tantivy::directory::error::{DeleteError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, FileHandle, FileSlice, OwnedBytes, RamDirectory, TerminatingWrite,
    WatchCallback, WatchHandle, WritePtr,
};
use tantivy::{Directory, HasLen};

/// A file Tantivy writes is held in memory up to this size, and goes to the spill folder past
/// it: a small write (`remember`) never touches the disk, a large one holds about this much a
/// file being written. Smaller in tests, so that a test's write spills as a large one does.
#[cfg(not(test))]
const SPILL_AFTER: usize = 1 << 20;
#[cfg(test)]
pub(crate) const SPILL_AFTER: usize = 1 << 14;

#[derive(Debug, Default)]
pub(crate) struct Changes {
    pub(crate) written: BTreeSet<PathBuf>,
    pub(crate) deleted: BTreeSet<PathBuf>,
}

/// The folder a write's large files wait in, removed with the last handle on it: a run that
/// rolls back or fails leaves nothing behind it. A run killed outright leaves it; the next
/// write of the store removes it before it writes (`TrackedDir::spill_into`).
#[derive(Debug)]
struct Spill {
    folder: PathBuf,
    made: Mutex<bool>,
}

impl Spill {
    fn create(&self, path: &Path) -> io::Result<(PathBuf, File)> {
        let mut made = self.made.lock().expect("spill lock");
        if !*made {
            // Never through a symbolic link: a link (or a file) where the folder goes leaves the
            // files in memory, so that no write lands outside the store's folder.
            match std::fs::create_dir(&self.folder) {
                Ok(()) => {}
                Err(e)
                    if e.kind() == io::ErrorKind::AlreadyExists
                        && std::fs::symlink_metadata(&self.folder)?.is_dir() => {}
                Err(e) => return Err(e),
            }
            *made = true;
        }
        let name = path.to_string_lossy().replace(['/', '\\'], "_");
        let at = self.folder.join(name);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&at)?;
        Ok((at, file))
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        if *self.made.get_mut().expect("spill lock") {
            let _ = std::fs::remove_dir_all(&self.folder);
        }
    }
}

/// A spilled file, read back a range at a time; removed from the folder with its last handle.
#[derive(Debug)]
struct Spilled {
    file: File,
    at: PathBuf,
    len: usize,
    /// The CRC-32 of the bytes written, which the file must still hold when first read.
    crc: u32,
    checked: std::sync::OnceLock<Result<(), String>>,
}

impl Spilled {
    /// The whole file read once, before any of it is used, against the CRC of what was
    /// written: a file changed on disk since is an error, not an index. Read whole again (the
    /// settle), it is checked again; what the store saved of it is checked by every load
    /// (Tantivy's checksums, `LexicalIndex::open_checked`).
    fn check(&self) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let checked = self.checked.get_or_init(|| {
            let mut crc = crc32fast::Hasher::new();
            let mut piece = vec![0u8; 1 << 20];
            let mut at = 0;
            while at < self.len {
                let n = piece.len().min(self.len - at);
                self.file
                    .read_exact_at(&mut piece[..n], at as u64)
                    .map_err(|e| e.to_string())?;
                crc.update(&piece[..n]);
                at += n;
            }
            (crc.finalize() == self.crc)
                .then_some(())
                .ok_or_else(|| "does not hold the bytes written to it".to_string())
        });
        checked.clone().map_err(|why| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {why}", self.at.display()),
            )
        })
    }
}

impl Drop for Spilled {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.at);
    }
}

/// A file written since the directory was opened, and whether it waits in the spill folder.
#[derive(Debug, Clone)]
struct Written {
    file: FileSlice,
    spilled: bool,
}

impl HasLen for Spilled {
    fn len(&self) -> usize {
        self.len
    }
}

impl FileHandle for Spilled {
    fn read_bytes(&self, range: Range<usize>) -> io::Result<OwnedBytes> {
        use std::os::unix::fs::FileExt;
        if range.start > range.end || range.end > self.len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{}: range {range:?} past {} bytes",
                    self.at.display(),
                    self.len
                ),
            ));
        }
        self.check()?;
        let mut data = vec![0u8; range.len()];
        self.file.read_exact_at(&mut data, range.start as u64)?;
        // The whole file (the settle's read, a small file's save) is checked again as read.
        if range.len() == self.len && crc32fast::hash(&data) != self.crc {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: does not hold the bytes written to it",
                    self.at.display()
                ),
            ));
        }
        Ok(OwnedBytes::new(data))
    }
}

/// What Tantivy writes through `open_write`: bytes in memory until `SPILL_AFTER`, then a file
/// in the spill folder; the file is the directory's once Tantivy terminates it.
struct Writer {
    path: PathBuf,
    dir: TrackedDir,
    spill: Option<Arc<Spill>>,
    held: Vec<u8>,
    file: Option<(PathBuf, BufWriter<File>)>,
    /// The CRC-32 of every byte written.
    crc: crc32fast::Hasher,
}

impl Write for Writer {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if let Some((_, file)) = self.file.as_mut() {
            let n = file.write(data)?;
            self.crc.update(&data[..n]);
            return Ok(n);
        }
        self.crc.update(data);
        self.held.extend_from_slice(data);
        if self.held.len() > SPILL_AFTER {
            // A folder that cannot be made or written (a full disk, a folder the user may not
            // write in) leaves the file in memory, as before there was a spill folder.
            if let Some((at, file)) = self.spill.take().and_then(|s| s.create(&self.path).ok()) {
                let mut file = BufWriter::with_capacity(1 << 16, file);
                if file.write_all(&self.held).is_ok() {
                    self.held = Vec::new();
                    self.file = Some((at, file));
                } else {
                    let _ = std::fs::remove_file(&at);
                }
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.file.as_mut() {
            Some((_, file)) => file.flush(),
            None => Ok(()),
        }
    }
}

impl TerminatingWrite for Writer {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        let written = match self.file.take() {
            None => Written {
                file: FileSlice::from(std::mem::take(&mut self.held)),
                spilled: false,
            },
            Some((at, file)) => {
                let file = file.into_inner().map_err(|e| e.into_error())?;
                let len = file.metadata()?.len() as usize;
                Written {
                    file: FileSlice::new(Arc::new(Spilled {
                        file,
                        at,
                        len,
                        crc: self.crc.clone().finalize(),
                        checked: std::sync::OnceLock::new(),
                    })),
                    spilled: true,
                }
            }
        };
        self.dir
            .written
            .write()
            .expect("lexical files lock")
            .insert(self.path.clone(), written);
        Ok(())
    }
}

/// A directory that remembers which files were written or deleted since the last `take`.
/// The files it was opened with are held as read (no copy); the segment files Tantivy writes
/// are held in memory, or past `SPILL_AFTER` in the spill folder when the index has one; the
/// rest (its metadata, its locks) goes to a `RamDirectory`.
#[derive(Debug, Clone)]
pub(crate) struct TrackedDir {
    inner: RamDirectory,
    saved: Arc<RwLock<HashMap<PathBuf, FileSlice>>>,
    written: Arc<RwLock<HashMap<PathBuf, Written>>>,
    pub(crate) changes: Arc<Mutex<Changes>>,
    /// Shared by every clone: the index's own and the one Tantivy writes through.
    spill: Arc<Mutex<Option<Arc<Spill>>>>,
}

impl TrackedDir {
    /// A directory holding `files`, each counted as already persisted.
    pub(crate) fn holding(files: Vec<(String, Vec<u8>)>) -> TrackedDir {
        let saved = files
            .into_iter()
            .map(|(name, data)| (PathBuf::from(name), FileSlice::from(data)))
            .collect();
        TrackedDir {
            inner: RamDirectory::create(),
            saved: Arc::new(RwLock::new(saved)),
            written: Arc::default(),
            changes: Arc::default(),
            spill: Arc::default(),
        }
    }

    /// Large files written from now on go to `folder`, which is emptied first: whatever a
    /// killed write left there is no one's (the caller holds the store's write lock). Called
    /// again with the same folder, it removes it when this directory did not make it.
    pub(crate) fn spill_into(&self, folder: PathBuf) {
        let mut spill = self.spill.lock().expect("spill lock");
        if let Some(ours) = spill.as_ref().filter(|s| s.folder == folder) {
            // Ours, unless it was made by a write of another process since ours last settled.
            let made = ours.made.lock().expect("spill lock");
            if !*made && folder.exists() {
                let _ = std::fs::remove_dir_all(&folder);
            }
            return;
        }
        let _ = std::fs::remove_dir_all(&folder);
        *spill = Some(Arc::new(Spill {
            folder,
            made: Mutex::new(false),
        }));
    }

    /// A file the directory was opened with, unless written or deleted since.
    fn saved(&self, path: &Path) -> Option<FileSlice> {
        self.saved
            .read()
            .expect("lexical files lock")
            .get(path)
            .cloned()
    }

    /// A file written since the directory was opened.
    pub(crate) fn written(&self, path: &Path) -> Option<FileSlice> {
        self.written
            .read()
            .expect("lexical files lock")
            .get(path)
            .map(|w| w.file.clone())
    }

    /// Forget the saved or written `path` (it is being deleted); whether it was there.
    fn forget(&self, path: &Path) -> bool {
        let saved = self.saved.write().expect("lexical files lock").remove(path);
        let written = self
            .written
            .write()
            .expect("lexical files lock")
            .remove(path);
        saved.is_some() || written.is_some()
    }

    /// Whether a file written since the directory was opened waits in the spill folder.
    pub(crate) fn spilled(&self) -> bool {
        let written = self.written.read().expect("lexical files lock");
        written.values().any(|w| w.spilled)
    }

    /// Every written file held as saved, a spilled one read into memory: called once the store
    /// holds them. A spilled file leaves the folder with its last reader (`Spilled`'s drop).
    pub(crate) fn settle(&self) -> io::Result<()> {
        let written: Vec<(PathBuf, Written)> = self
            .written
            .read()
            .expect("lexical files lock")
            .iter()
            .map(|(p, w)| (p.clone(), w.clone()))
            .collect();
        let mut held = Vec::with_capacity(written.len());
        for (path, w) in written {
            let file = if w.spilled {
                let bytes = w.file.read_bytes()?;
                let mut data = crate::memory::huge_vec(bytes.len());
                data.extend_from_slice(bytes.as_slice());
                FileSlice::from(data)
            } else {
                w.file
            };
            held.push((path, file));
        }
        let mut saved = self.saved.write().expect("lexical files lock");
        let mut written = self.written.write().expect("lexical files lock");
        for (path, file) in held {
            written.remove(&path);
            saved.insert(path, file);
        }
        Ok(())
    }

    /// The spill folder removed once nothing waits in it (after `settle` and the readers'
    /// reload); it is made again by the next large file.
    pub(crate) fn tidy(&self) {
        if let Some(spill) = self.spill.lock().expect("spill lock").as_ref() {
            let mut made = spill.made.lock().expect("spill lock");
            if *made && std::fs::remove_dir(&spill.folder).is_ok() {
                *made = false;
            }
        }
    }

    fn mark_written(&self, path: &Path) {
        if !is_lock(path) {
            let mut c = self.changes.lock().expect("lexical directory lock");
            c.deleted.remove(path);
            c.written.insert(path.to_path_buf());
        }
    }
}

fn is_lock(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "lock")
}

/// A segment's file, as opposed to the index's metadata and locks.
fn is_segment_file(path: &Path) -> bool {
    !is_lock(path) && path.extension().is_some_and(|e| e != "json")
}

impl Directory for TrackedDir {
    fn get_file_handle(
        &self,
        path: &Path,
    ) -> std::result::Result<Arc<dyn FileHandle>, OpenReadError> {
        match self.saved(path).or_else(|| self.written(path)) {
            Some(file) => Ok(Arc::new(file)),
            None => self.inner.get_file_handle(path),
        }
    }

    fn delete(&self, path: &Path) -> std::result::Result<(), DeleteError> {
        if !self.forget(path) {
            self.inner.delete(path)?;
        }
        if !is_lock(path) {
            let mut c = self.changes.lock().expect("lexical directory lock");
            c.written.remove(path);
            c.deleted.insert(path.to_path_buf());
        }
        Ok(())
    }

    fn exists(&self, path: &Path) -> std::result::Result<bool, OpenReadError> {
        Ok(
            self.saved(path).is_some()
                || self.written(path).is_some()
                || self.inner.exists(path)?,
        )
    }

    fn open_write(&self, path: &Path) -> std::result::Result<WritePtr, OpenWriteError> {
        if self.saved(path).is_some() || self.written(path).is_some() {
            return Err(OpenWriteError::FileAlreadyExists(path.to_path_buf()));
        }
        self.mark_written(path);
        if !is_segment_file(path) {
            return self.inner.open_write(path);
        }
        let writer = Writer {
            path: path.to_path_buf(),
            dir: self.clone(),
            spill: self.spill.lock().expect("spill lock").clone(),
            held: Vec::new(),
            file: None,
            crc: crc32fast::Hasher::new(),
        };
        Ok(BufWriter::new(Box::new(writer)))
    }

    fn atomic_read(&self, path: &Path) -> std::result::Result<Vec<u8>, OpenReadError> {
        match self.saved(path).or_else(|| self.written(path)) {
            Some(file) => Ok(file
                .read_bytes()
                .map_err(|e| OpenReadError::wrap_io_error(e, path.to_path_buf()))?
                .as_slice()
                .to_vec()),
            None => self.inner.atomic_read(path),
        }
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.forget(path);
        self.mark_written(path);
        self.inner.atomic_write(path, data)
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.inner.sync_directory()
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}

#[cfg(test)]
mod tests {
    use crate::lexical::LexicalIndex;
    use crate::store::fixtures::{temp_db, TempDb};
    use std::path::{Path, PathBuf};

    /// Where a store's spill folder goes, in a temporary folder removed with the guard.
    fn folder(name: &str) -> (TempDb, PathBuf) {
        let db = temp_db(&format!("spill-{name}"));
        let folder = PathBuf::from(format!("{}-lexical", &*db));
        (db, folder)
    }

    fn words(i: usize) -> String {
        (0..40)
            .map(|j| format!("w{}", (i * 31 + j * 7) % 4999))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn filled(spill: &Path, chunks: usize) -> LexicalIndex {
        let mut idx = LexicalIndex::open(Vec::new()).unwrap();
        idx.spill_into(spill.to_path_buf());
        for i in 0..chunks {
            idx.add(i as i64, &words(i)).unwrap();
        }
        idx
    }

    fn spilled(spill: &Path) -> Vec<u64> {
        std::fs::read_dir(spill)
            .map(|d| d.map(|e| e.unwrap().metadata().unwrap().len()).collect())
            .unwrap_or_default()
    }

    #[test]
    fn a_writes_large_files_wait_in_the_spill_folder_until_the_store_holds_them() {
        let (_db, spill) = folder("wait");
        let mut idx = filled(&spill, 3000);
        let (written, _) = idx.commit().unwrap();
        // Only files past the threshold wait on disk; each reads back whole from there.
        let on_disk = spilled(&spill);
        assert!(!on_disk.is_empty());
        assert!(on_disk.iter().all(|&n| n as usize > super::SPILL_AFTER));
        let large = written
            .iter()
            .filter(|(_, f)| tantivy::HasLen::len(f) > super::SPILL_AFTER)
            .count();
        assert_eq!(on_disk.len(), large);
        let before = idx.search("w31 w38", 10).unwrap();
        assert_eq!(before.len(), 10);
        // The files as the store would save them open an index that searches alike.
        let saved = written
            .iter()
            .map(|(n, f)| (n.clone(), f.read_bytes().unwrap().to_vec()))
            .collect();
        let reopened = LexicalIndex::open_checked(saved, Some(3000)).unwrap();
        assert_eq!(reopened.search("w31 w38", 10).unwrap(), before);
        // Settled once saved (the store lets go of what it saved): held in memory, the folder
        // gone, the search unchanged.
        drop(written);
        idx.settle().unwrap();
        assert!(!spill.exists());
        assert_eq!(idx.search("w31 w38", 10).unwrap(), before);
        // The next write spills again and settles again.
        for i in 3000..4000 {
            idx.add(i as i64, &words(i)).unwrap();
        }
        idx.commit().unwrap();
        idx.settle().unwrap();
        assert!(!spill.exists());
        assert_eq!(idx.num_docs(), 4000);
    }

    #[test]
    fn a_spilled_file_changed_on_disk_is_an_error_not_an_index() {
        let (_db, spill) = folder("changed");
        let mut idx = filled(&spill, 3000);
        let (written, _) = idx.commit().unwrap();
        let (name, file) = written
            .iter()
            .find(|(_, f)| tantivy::HasLen::len(f) > super::SPILL_AFTER)
            .unwrap();
        let on_disk = spill.join(name.replace(['/', '\\'], "_"));
        let mut bytes = std::fs::read(&on_disk).unwrap();
        bytes[10] ^= 0xff;
        std::fs::write(&on_disk, &bytes).unwrap();
        let read = file.read_bytes();
        assert!(read.is_err_and(|e| e.kind() == std::io::ErrorKind::InvalidData));
        drop(written);
        assert!(idx.settle().is_err());
    }

    #[test]
    fn an_abandoned_write_takes_its_spill_folder_with_it() {
        let (_db, spill) = folder("abandoned");
        let mut idx = filled(&spill, 3000);
        idx.commit().unwrap();
        assert!(!spilled(&spill).is_empty());
        drop(idx);
        assert!(!spill.exists());
    }

    #[test]
    fn a_spill_folder_that_cannot_be_made_leaves_the_files_in_memory() {
        let (_db, spill) = folder("blocked");
        // A file where the folder would be: nothing can be made inside it.
        let blocker = spill.parent().unwrap().join("blocker");
        std::fs::write(&blocker, b"not a folder").unwrap();
        let mut idx = LexicalIndex::open(Vec::new()).unwrap();
        idx.spill_into(blocker.join("memory.db-lexical"));
        for i in 0..3000 {
            idx.add(i as i64, &words(i)).unwrap();
        }
        let (written, _) = idx.commit().unwrap();
        assert!(written
            .iter()
            .any(|(_, f)| tantivy::HasLen::len(f) > super::SPILL_AFTER));
        assert_eq!(idx.search("w31 w38", 10).unwrap().len(), 10);
        drop(written);
        idx.settle().unwrap();
        assert_eq!(idx.num_docs(), 3000);
    }

    #[test]
    fn a_link_where_the_spill_folder_goes_is_not_followed() {
        let (_db, spill) = folder("linked");
        let elsewhere = spill.parent().unwrap().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let mut idx = LexicalIndex::open(Vec::new()).unwrap();
        idx.spill_into(spill.clone());
        std::os::unix::fs::symlink(&elsewhere, &spill).unwrap();
        for i in 0..3000 {
            idx.add(i as i64, &words(i)).unwrap();
        }
        idx.commit().unwrap();
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        assert_eq!(idx.search("w31 w38", 10).unwrap().len(), 10);
    }

    #[test]
    fn what_a_killed_write_left_in_the_folder_is_removed_before_the_next_write() {
        let (_db, spill) = folder("killed");
        std::fs::create_dir_all(&spill).unwrap();
        std::fs::write(spill.join("0123.idx"), b"left by a killed run").unwrap();
        let mut idx = LexicalIndex::open(Vec::new()).unwrap();
        idx.spill_into(spill.clone());
        assert!(!spill.exists());
        for i in 0..10 {
            idx.add(i, &words(i as usize)).unwrap();
        }
        // A small write holds its files in memory: no folder is made.
        idx.commit().unwrap();
        assert!(!spill.exists());
        assert_eq!(idx.search("w31", 10).unwrap().len(), 1);
        // Another process's write killed since: its files go before this index writes again.
        std::fs::create_dir_all(&spill).unwrap();
        std::fs::write(spill.join("4567.idx"), b"left by another killed run").unwrap();
        idx.spill_into(spill.clone());
        assert!(!spill.exists());
    }
}
