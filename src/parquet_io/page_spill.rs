//! Spilling encoded pages: bounds the memory of the output row group in progress.
//!
//! A Parquet row group stores each column's pages contiguously, so a writer must hold every
//! page of a row group until the group is complete: with Paimon's `parquet.block.size` of
//! 128 MB that is up to 128 MB of compressed pages per output file, more than everything else
//! a rewrite holds. arrow-rs's writer keeps those pages in a [`PageStore`]; this one keeps them
//! in memory up to a budget (the caller's, see [`super::writer::FileSpec::spill_budget`]) and appends
//! the rest to a temporary object next to the output (`<output>.spill`), read back page by page
//! when the row group is assembled and deleted right after. Nothing changes in the file.
//!
//! The store is created by arrow-rs through a `'static` factory, so the spill owns a handle to
//! the storage (`Arc<dyn Storage>`).

use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use parquet::arrow::arrow_writer::{PageKey, PageStore, PageStoreArgs, PageStoreFactory};
use parquet::errors::ParquetError;

use super::column_chunk::ChunkPageStore;
use crate::storage::{Storage, StorageError, StorageWriter};

struct SpillState {
    storage: Arc<dyn Storage>,
    path: String,
    budget: usize,
    /// Page bytes of the row group in progress held in memory.
    resident: usize,
    writer: Option<Box<dyn StorageWriter>>,
    /// Bytes appended to the spill object of this row group.
    written: u64,
    /// The spill object is complete (readable) and must be deleted.
    finished: bool,
    /// The first storage failure, reported by the writer as itself (not as a Parquet error).
    error: Option<StorageError>,
    spilled_bytes: u64,
}

impl SpillState {
    fn fail(&mut self, e: StorageError) -> ParquetError {
        let msg = e.to_string();
        self.error.get_or_insert(e);
        ParquetError::General(format!("spilling pages: {msg}"))
    }

    fn append(&mut self, page: &[u8]) -> Result<u64, ParquetError> {
        if self.writer.is_none() {
            match self.storage.create_writer(&self.path) {
                Ok(w) => self.writer = Some(w),
                Err(e) => return Err(self.fail(e)),
            }
        }
        let offset = self.written;
        if let Some(w) = self.writer.as_mut() {
            if let Err(e) = w.write(page) {
                return Err(self.fail(e));
            }
        }
        self.written += page.len() as u64;
        self.spilled_bytes += page.len() as u64;
        Ok(offset)
    }

    fn read(&mut self, offset: u64, len: u64) -> Result<Bytes, ParquetError> {
        if let Some(w) = self.writer.take() {
            if let Err(e) = w.finish() {
                return Err(self.fail(e));
            }
            self.finished = true;
        }
        match self.storage.read_range(&self.path, offset, len) {
            Ok(b) if b.len() as u64 == len => Ok(Bytes::from(b)),
            Ok(b) => Err(ParquetError::General(format!(
                "spill object '{}' returned {} bytes at {offset}, {len} expected",
                self.path,
                b.len()
            ))),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Drops this row group's spill object (after the group is written, or on failure).
    fn reset(&mut self) -> Result<(), StorageError> {
        self.resident = 0;
        self.written = 0;
        if let Some(w) = self.writer.take() {
            w.abort()?;
        }
        if std::mem::take(&mut self.finished) {
            self.storage.delete(&self.path)?;
        }
        Ok(())
    }
}

impl Drop for SpillState {
    fn drop(&mut self) {
        let _ = self.reset();
    }
}

fn lock(state: &Mutex<SpillState>) -> MutexGuard<'_, SpillState> {
    // Nothing panics while holding it; a poisoned state is still consistent.
    state.lock().unwrap_or_else(|p| p.into_inner())
}

enum Slot {
    Memory(Bytes),
    Spilled { offset: u64, len: u64 },
    Taken,
}

/// One column chunk's pages: in memory while the file's budget allows, else spilled.
struct SpillPageStore {
    state: Arc<Mutex<SpillState>>,
    pages: Vec<Slot>,
    resident: usize,
}

impl PageStore for SpillPageStore {
    fn put(&mut self, value: Bytes) -> parquet::errors::Result<PageKey> {
        // A tight copy: arrow-rs reserves the codec's worst case for each page.
        self.put_tight(Bytes::from(value.to_vec()))
    }

    fn take(&mut self, key: PageKey) -> parquet::errors::Result<Bytes> {
        let slot = usize::try_from(key.get())
            .ok()
            .and_then(|i| self.pages.get_mut(i))
            .map(|s| std::mem::replace(s, Slot::Taken))
            .ok_or_else(|| ParquetError::General(format!("invalid page key {}", key.get())))?;
        match slot {
            Slot::Memory(b) => {
                self.resident -= b.len();
                let mut s = lock(&self.state);
                s.resident = s.resident.saturating_sub(b.len());
                Ok(b)
            }
            Slot::Spilled { offset, len } => lock(&self.state).read(offset, len),
            Slot::Taken => Err(ParquetError::General(format!(
                "page {} taken twice",
                key.get()
            ))),
        }
    }

    fn memory_size(&self) -> usize {
        self.resident
    }
}

impl ChunkPageStore for SpillPageStore {
    fn put_tight(&mut self, value: Bytes) -> parquet::errors::Result<PageKey> {
        let key = PageKey::new(self.pages.len() as u64);
        let mut s = lock(&self.state);
        // Once the row group is being assembled its spill object is complete; the last page a
        // column writer flushes on close then stays in memory (one page, at most a page size).
        if s.finished || s.resident + value.len() <= s.budget {
            s.resident += value.len();
            self.resident += value.len();
            self.pages.push(Slot::Memory(value));
        } else {
            let offset = s.append(&value)?;
            self.pages.push(Slot::Spilled {
                offset,
                len: value.len() as u64,
            });
        }
        Ok(key)
    }

    fn get(&self, key: PageKey) -> parquet::errors::Result<Bytes> {
        match usize::try_from(key.get())
            .ok()
            .and_then(|i| self.pages.get(i))
        {
            Some(Slot::Memory(b)) => Ok(b.clone()),
            Some(Slot::Spilled { offset, len }) => lock(&self.state).read(*offset, *len),
            Some(Slot::Taken) | None => Err(ParquetError::General(format!(
                "invalid page key {}",
                key.get()
            ))),
        }
    }
}

impl Drop for SpillPageStore {
    fn drop(&mut self) {
        let mut s = lock(&self.state);
        s.resident = s.resident.saturating_sub(self.resident);
    }
}

#[derive(Debug)]
struct SpillPageStoreFactory {
    state: Arc<Mutex<SpillState>>,
}

impl std::fmt::Debug for SpillState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpillState")
            .field("path", &self.path)
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

impl PageStoreFactory for SpillPageStoreFactory {
    fn create(&self, _args: &PageStoreArgs<'_>) -> parquet::errors::Result<Box<dyn PageStore>> {
        Ok(Box::new(SpillPageStore {
            state: self.state.clone(),
            pages: Vec::new(),
            resident: 0,
        }))
    }
}

/// The spill of one output file: the page store factory for its writer, and the hooks the
/// writer calls after each row group and on errors.
pub(crate) struct PageSpill {
    state: Arc<Mutex<SpillState>>,
}

impl PageSpill {
    /// Spills beyond `budget` bytes of pages to `path` (next to the output, under its name so a
    /// caller's clean-up of the output's prefix also finds it).
    pub(crate) fn new(storage: Arc<dyn Storage>, path: String, budget: usize) -> Self {
        PageSpill {
            state: Arc::new(Mutex::new(SpillState {
                storage,
                path,
                budget,
                resident: 0,
                writer: None,
                written: 0,
                finished: false,
                error: None,
                spilled_bytes: 0,
            })),
        }
    }

    /// A page store for a column writer of ours (arrow-rs's writers get theirs from
    /// [`Self::factory`]).
    pub(crate) fn store(&self) -> Box<dyn ChunkPageStore> {
        Box::new(SpillPageStore {
            state: self.state.clone(),
            pages: Vec::new(),
            resident: 0,
        })
    }

    pub(crate) fn factory(&self) -> Arc<dyn PageStoreFactory> {
        Arc::new(SpillPageStoreFactory {
            state: self.state.clone(),
        })
    }

    /// Called once a row group is written: its spill object is no longer needed.
    pub(crate) fn row_group_done(&self) -> Result<(), StorageError> {
        lock(&self.state).reset()
    }

    /// The storage failure behind a writer error, if spilling caused it.
    pub(crate) fn take_error(&self) -> Option<StorageError> {
        lock(&self.state).error.take()
    }

    /// Bytes written to spill objects so far.
    pub(crate) fn spilled_bytes(&self) -> u64 {
        lock(&self.state).spilled_bytes
    }
}
