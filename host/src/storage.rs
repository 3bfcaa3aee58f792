//! What the host hands the component besides its storage (progress events), and a
//! fault-injecting storage wrapper for tests. The storage itself is the core's trait, shared as
//! an `Arc<dyn Storage>`; its writers are owned, so they live in the guest's resource table
//! between calls.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use paimon_compact::storage::{
    ObjectMeta, Storage, StorageError, StorageErrorKind, StorageResult, StorageWriter,
};

/// A progress event from the component.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Progress {
    /// The phase: `rewrite`, `compact`, ...
    pub phase: String,
    /// Units done so far in this phase, counted in `unit`.
    pub done: u64,
    /// Units the phase has in all, in `unit`.
    pub total: u64,
    /// What `done` and `total` count: `files`, `steps`, ...
    pub unit: String,
    /// A line for people.
    pub message: String,
}

/// The host's progress callback, for either engine. Calls are serialized (one at a time), but
/// may come from a thread other than the caller's; it should return quickly, since the job
/// waits for it.
pub type ProgressFn = Box<dyn FnMut(Progress) + Send>;

/// Fails chosen storage calls: the k-th call (counting every method, writer calls included), or
/// every call whose path contains a marker. For fault-injection tests.
pub struct FaultyStorage<S> {
    inner: S,
    calls: Arc<AtomicUsize>,
    fail_at: Option<usize>,
    fail_kind: StorageErrorKind,
    fail_path_containing: Option<String>,
}

impl<S> FaultyStorage<S> {
    /// Wraps `inner`, failing nothing until [`Self::fail_call`] or [`Self::fail_path`] says
    /// what to fail.
    pub fn new(inner: S) -> Self {
        FaultyStorage {
            inner,
            calls: Arc::new(AtomicUsize::new(0)),
            fail_at: None,
            fail_kind: StorageErrorKind::Io,
            fail_path_containing: None,
        }
    }
    /// Fail the `k`-th call (1-based) with `kind`.
    pub fn fail_call(mut self, k: usize, kind: StorageErrorKind) -> Self {
        self.fail_at = Some(k);
        self.fail_kind = kind;
        self
    }
    /// Fail every call on a path containing `marker` with `kind`.
    pub fn fail_path(mut self, marker: &str, kind: StorageErrorKind) -> Self {
        self.fail_path_containing = Some(marker.to_string());
        self.fail_kind = kind;
        self
    }
    /// Calls made so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    fn check(&self, path: &str) -> StorageResult<()> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let by_count = self.fail_at == Some(n);
        let by_path = self
            .fail_path_containing
            .as_deref()
            .is_some_and(|m| path.contains(m));
        if by_count || by_path {
            return Err(StorageError::new(
                self.fail_kind,
                path,
                format!("injected failure at call {n}"),
            ));
        }
        Ok(())
    }
}

/// A writer of a [`FaultyStorage`]: its calls count and fail as the storage's do.
struct FaultyWriter {
    inner: Box<dyn StorageWriter>,
    calls: Arc<AtomicUsize>,
    fail_at: Option<usize>,
    fail_kind: StorageErrorKind,
    fail_path: bool,
    path: String,
}

impl FaultyWriter {
    fn check(&self) -> StorageResult<()> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if self.fail_at == Some(n) || self.fail_path {
            return Err(StorageError::new(
                self.fail_kind,
                &self.path,
                format!("injected failure at call {n}"),
            ));
        }
        Ok(())
    }
}

impl StorageWriter for FaultyWriter {
    fn write(&mut self, chunk: &[u8]) -> StorageResult<()> {
        self.check()?;
        self.inner.write(chunk)
    }
    fn finish(self: Box<Self>) -> StorageResult<u64> {
        if let Err(e) = self.check() {
            let _ = self.inner.abort();
            return Err(e);
        }
        self.inner.finish()
    }
    fn abort(self: Box<Self>) -> StorageResult<()> {
        self.inner.abort()
    }
}

impl<S: Storage> Storage for FaultyStorage<S> {
    fn size(&self, path: &str) -> StorageResult<u64> {
        self.check(path)?;
        self.inner.size(path)
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        self.check(path)?;
        self.inner.read_range(path, offset, len)
    }
    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        self.check(prefix)?;
        self.inner.list(prefix)
    }
    fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter>> {
        self.check(path)?;
        Ok(Box::new(FaultyWriter {
            inner: self.inner.create_writer(path)?,
            calls: self.calls.clone(),
            fail_at: self.fail_at,
            fail_kind: self.fail_kind,
            fail_path: self
                .fail_path_containing
                .as_deref()
                .is_some_and(|m| path.contains(m)),
            path: path.to_string(),
        }))
    }
    fn delete(&self, path: &str) -> StorageResult<()> {
        self.check(path)?;
        self.inner.delete(path)
    }
    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
        self.check(path)?;
        self.inner.create_if_absent(path, bytes)
    }
}
