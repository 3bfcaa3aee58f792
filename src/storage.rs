//! The one door between the core and the outside world's bytes.
//!
//! Everything that reads or writes a table goes through [`Storage`]: ranged reads (never whole
//! files, so a 20 GiB bucket fits in a 4 GiB wasm address space), streaming writes that can be
//! aborted, listing, deletion, and an atomic create-if-absent that the commit protocol relies
//! on. The component imports it from the host (local directory, object store, memory, browser
//! files); native code and tests use the same trait. [`MemoryStorage`] is the reference
//! implementation.
//!
//! A storage is `Send + Sync` and its writers are owned (they do not borrow it), so one storage
//! can be shared as an `Arc<dyn Storage>` by everything that must keep it: the rewriters hand
//! it to arrow-rs's page stores and chunk readers, which must be `'static`, and parallel work
//! shares one handle. Services that are not storage (the host's codec) travel beside it, in
//! [`crate::io::Io`].

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

pub use crate::error::StorageErrorKind;

/// A failed storage call, with the path it was about.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct StorageError {
    /// Which kind of failure, the only part callers branch on (for example, `NotFound` as
    /// "absent").
    pub kind: StorageErrorKind,
    /// Path the call was about, relative to the storage's root.
    pub path: String,
    /// The storage's own words about the failure, without the path; often empty.
    pub message: String,
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            StorageErrorKind::NotFound => "not found",
            StorageErrorKind::AlreadyExists => "already exists",
            StorageErrorKind::Permission => "permission denied",
            StorageErrorKind::Io => "I/O error",
        };
        write!(f, "storage: {what}: '{}'", self.path)?;
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

impl StorageError {
    /// A failure of `kind` on `path`, with the storage's own `message` (may be empty).
    pub fn new(kind: StorageErrorKind, path: &str, message: impl Into<String>) -> Self {
        StorageError {
            kind,
            path: path.to_string(),
            message: message.into(),
        }
    }
    /// `path` does not exist ([`StorageErrorKind::NotFound`], no message).
    pub fn not_found(path: &str) -> Self {
        Self::new(StorageErrorKind::NotFound, path, "")
    }
}

/// The result of a storage call.
pub type StorageResult<T> = std::result::Result<T, StorageError>;

/// The core's `Io` error, keeping the storage error as its cause.
impl From<StorageError> for crate::error::Error {
    fn from(e: StorageError) -> Self {
        crate::error::Error::io(e.kind, &e.path, e.to_string()).keeping(e)
    }
}

/// An entry of a listing.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ObjectMeta {
    /// Full path relative to the storage's root (not to the listed prefix).
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// When the object was last written, in epoch milliseconds, where the store knows it.
    /// Orphan-file removal deletes only files older than its threshold and keeps any file of
    /// unknown age, so a writer's uncommitted files are never taken.
    #[serde(default)]
    pub modified_ms: Option<i64>,
}

/// Requests a storage made to a remote store, by kind, as a host reports them for one job
/// (`docs/report.md`). A storage that is not remote (a local directory, memory) reports none.
/// `put` counts every request that writes: single and conditional PUTs, each part of a
/// multipart upload and its start and completion; `list` counts pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RequestCounts {
    /// Ranged and whole-object reads.
    pub get: u64,
    /// Metadata requests (the size of an object).
    pub head: u64,
    /// Requests that write (see the type's description).
    pub put: u64,
    /// Listing requests, one per page.
    pub list: u64,
    /// Deletions, including the abort of a multipart upload.
    pub delete: u64,
}

/// A file being written. Nothing is visible at the path until `finish`; `abort` discards.
///
/// `Send`: a writer may be kept by an owner that moves between threads (a host's resource
/// table, a page store arrow-rs requires to be `Send`).
pub trait StorageWriter: Send {
    /// Appends `chunk` to the file; nothing becomes visible before `finish`.
    fn write(&mut self, chunk: &[u8]) -> StorageResult<()>;
    /// Makes the file visible; returns its size.
    fn finish(self: Box<Self>) -> StorageResult<u64>;
    /// Discards everything written; the path is left as it was.
    fn abort(self: Box<Self>) -> StorageResult<()>;
}

/// Object-store shaped storage. Paths are `/`-separated and relative to the storage's root.
///
/// `Send + Sync`, so it can be shared (`Arc<dyn Storage>`) by the writers and readers of one
/// operation and across threads; calls on a shared storage may come from any of them.
pub trait Storage: Send + Sync {
    /// The size of a file.
    fn size(&self, path: &str) -> StorageResult<u64>;
    /// `len` bytes from `offset` (fewer only at the end of the file).
    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>>;
    /// Files whose path starts with `prefix`, sorted by path.
    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>>;
    /// Starts writing a file (replacing it on `finish` if it exists). The writer is owned: it
    /// may outlive this borrow of the storage.
    fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter>>;
    /// Removes a file. A missing file is an error of kind `NotFound`, which callers that
    /// tolerate a file already gone check for.
    fn delete(&self, path: &str) -> StorageResult<()>;
    /// Atomically creates a file with `bytes`, or fails with `AlreadyExists`.
    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()>;

    /// A whole (small) file: metadata, never data files.
    fn read_all(&self, path: &str) -> StorageResult<Vec<u8>> {
        let size = self.size(path)?;
        self.read_range(path, 0, size)
    }

    /// Writes a whole (small) file.
    fn write_all(&self, path: &str, bytes: &[u8]) -> StorageResult<u64> {
        let mut w = self.create_writer(path)?;
        if let Err(e) = w.write(bytes) {
            let _ = w.abort();
            return Err(e);
        }
        w.finish()
    }
}

/// A file read front to back through ranged reads of `window` bytes, as an [`std::io::Read`]:
/// for decoders that take a reader (apache-avro's) over a data file, which may be larger than
/// the memory a job has, so [`Storage::read_all`] is not for it. A failed read is kept
/// ([`SequentialRead::take_error`]) so the caller reports the storage's typed error rather
/// than the decoder's rewording of it.
pub struct SequentialRead<'a> {
    storage: &'a dyn Storage,
    path: &'a str,
    size: u64,
    offset: u64,
    window: u64,
    buf: Vec<u8>,
    at: usize,
    error: Option<StorageError>,
}

impl<'a> SequentialRead<'a> {
    /// Reads `path`, `window` bytes per storage call (at least one).
    pub fn new(storage: &'a dyn Storage, path: &'a str, window: u64) -> StorageResult<Self> {
        let size = storage.size(path)?;
        Ok(SequentialRead {
            storage,
            path,
            size,
            offset: 0,
            window: window.max(1),
            buf: Vec::new(),
            at: 0,
            error: None,
        })
    }

    /// The storage failure that ended the reading, if one did.
    pub fn take_error(&mut self) -> Option<StorageError> {
        self.error.take()
    }
}

impl std::io::Read for SequentialRead<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.buf.len() {
            if self.offset >= self.size || out.is_empty() {
                return Ok(0);
            }
            let len = self.window.min(self.size - self.offset);
            match self.storage.read_range(self.path, self.offset, len) {
                // A store that returns nothing before the size it reported: the file shrank.
                Ok(b) if b.is_empty() => return Ok(0),
                Ok(b) => {
                    self.offset += b.len() as u64;
                    self.buf = b;
                    self.at = 0;
                }
                Err(e) => {
                    let io = std::io::Error::other(e.to_string());
                    self.error = Some(e);
                    return Err(io);
                }
            }
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Files in memory: the reference storage for tests, benchmarks and the browser. Cloning shares
/// the same files.
#[derive(Clone, Default, Debug)]
pub struct MemoryStorage {
    files: Arc<Mutex<BTreeMap<String, Arc<Vec<u8>>>>>,
}

impl MemoryStorage {
    /// An empty storage.
    pub fn new() -> Self {
        Self::default()
    }

    fn files(&self) -> MutexGuard<'_, BTreeMap<String, Arc<Vec<u8>>>> {
        // A poisoned lock only means another test thread panicked mid-call; the map is intact.
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every path, sorted.
    pub fn paths(&self) -> Vec<String> {
        self.files().keys().cloned().collect()
    }

    /// Stores `bytes` at `path` at once, replacing any file there (a test and demo shortcut
    /// for a writer's `finish`).
    pub fn put(&self, path: &str, bytes: Vec<u8>) {
        self.files().insert(path.to_string(), Arc::new(bytes));
    }

    /// The bytes at `path`, shared rather than copied; `None` if there is no such file.
    pub fn get(&self, path: &str) -> Option<Arc<Vec<u8>>> {
        self.files().get(path).cloned()
    }
}

/// A [`MemoryStorage`] writer. Owned: it shares the files, not a borrow of the storage.
pub struct MemoryWriter {
    storage: MemoryStorage,
    path: String,
    buf: Vec<u8>,
}

impl StorageWriter for MemoryWriter {
    fn write(&mut self, chunk: &[u8]) -> StorageResult<()> {
        self.buf.extend_from_slice(chunk);
        Ok(())
    }
    fn finish(self: Box<Self>) -> StorageResult<u64> {
        let n = self.buf.len() as u64;
        self.storage.put(&self.path, self.buf);
        Ok(n)
    }
    fn abort(self: Box<Self>) -> StorageResult<()> {
        Ok(())
    }
}

impl Storage for MemoryStorage {
    fn size(&self, path: &str) -> StorageResult<u64> {
        self.files()
            .get(path)
            .map(|b| b.len() as u64)
            .ok_or_else(|| StorageError::not_found(path))
    }

    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        let data = self
            .get(path)
            .ok_or_else(|| StorageError::not_found(path))?;
        let start = (offset as usize).min(data.len());
        let end = start.saturating_add(len as usize).min(data.len());
        Ok(data[start..end].to_vec())
    }

    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        Ok(self
            .files()
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| ObjectMeta {
                path: k.clone(),
                size: v.len() as u64,
                modified_ms: None,
            })
            .collect())
    }

    fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter>> {
        Ok(Box::new(MemoryWriter {
            storage: self.clone(),
            path: path.to_string(),
            buf: Vec::new(),
        }))
    }

    fn delete(&self, path: &str) -> StorageResult<()> {
        self.files()
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| StorageError::not_found(path))
    }

    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
        let mut files = self.files();
        if files.contains_key(path) {
            return Err(StorageError::new(StorageErrorKind::AlreadyExists, path, ""));
        }
        files.insert(path.to_string(), Arc::new(bytes.to_vec()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_storage_contract() {
        let s = MemoryStorage::new();
        assert_eq!(s.size("a").unwrap_err().kind, StorageErrorKind::NotFound);
        s.write_all("t/a", b"hello world").unwrap();
        assert_eq!(s.read_range("t/a", 6, 100).unwrap(), b"world");
        let mut w = s.create_writer("t/b").unwrap();
        w.write(b"x").unwrap();
        w.abort().unwrap();
        assert!(s.get("t/b").is_none(), "an aborted write leaves nothing");
        s.create_if_absent("t/c", b"1").unwrap();
        assert_eq!(
            s.create_if_absent("t/c", b"2").unwrap_err().kind,
            StorageErrorKind::AlreadyExists
        );
        assert_eq!(s.list("t/").unwrap().len(), 2);
        s.delete("t/a").unwrap();
        assert_eq!(s.list("t/").unwrap().len(), 1);
    }

    /// A storage whose reads past `fail_from` fail.
    struct FailingReads {
        inner: MemoryStorage,
        fail_from: u64,
    }

    impl Storage for FailingReads {
        fn size(&self, path: &str) -> StorageResult<u64> {
            self.inner.size(path)
        }
        fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
            if offset >= self.fail_from {
                return Err(StorageError::new(
                    StorageErrorKind::Io,
                    path,
                    "connection reset",
                ));
            }
            self.inner.read_range(path, offset, len)
        }
        fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
            self.inner.list(prefix)
        }
        fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter>> {
            self.inner.create_writer(path)
        }
        fn delete(&self, path: &str) -> StorageResult<()> {
            self.inner.delete(path)
        }
        fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
            self.inner.create_if_absent(path, bytes)
        }
    }

    #[test]
    fn a_sequential_read_returns_the_file_across_windows_and_keeps_a_failure_typed() {
        use std::io::Read;
        let s = MemoryStorage::new();
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        s.put("f", data.clone());
        s.put("empty", Vec::new());
        for window in [0, 1, 3, 999, 1000, 4096] {
            let mut out = Vec::new();
            SequentialRead::new(&s, "f", window)
                .unwrap()
                .read_to_end(&mut out)
                .unwrap();
            assert_eq!(out, data, "window {window}");
        }
        let mut out = Vec::new();
        let mut r = SequentialRead::new(&s, "empty", 8).unwrap();
        assert_eq!(r.read_to_end(&mut out).unwrap(), 0);
        assert_eq!(
            SequentialRead::new(&s, "missing", 8).err().map(|e| e.kind),
            Some(StorageErrorKind::NotFound)
        );
        // A read that fails after the first window: the decoder sees an I/O error, and the
        // storage's own error is kept for the caller to report.
        let failing = FailingReads {
            inner: s,
            fail_from: 300,
        };
        let mut r = SequentialRead::new(&failing, "f", 256).unwrap();
        let mut out = Vec::new();
        assert!(r.read_to_end(&mut out).is_err());
        assert_eq!(out, data[..512], "two windows read before the failing one");
        let e = r.take_error().unwrap();
        assert_eq!((e.kind, e.path.as_str()), (StorageErrorKind::Io, "f"));
    }
}
