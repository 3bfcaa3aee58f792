//! Table maintenance that Paimon's dedicated compaction job owns: with `write-only = true`
//! writers never expire anything, so the job's commit does, in Paimon's order (tag creation
//! and expiry, partition expiration, consumer expiry, snapshot expiration, changelog
//! expiration), and the standalone procedures do the same on demand, plus orphan-file removal.
//! What each step deletes and why that is safe is described in `docs/maintenance.md`.
//!
//! One concept per file: [`expire_snapshots`], [`expire_changelogs`], [`partition_expire`],
//! [`tags`], [`consumers`], [`orphans`]; shared by the expirations: `versions` (the
//! `snapshot/` and `changelog/` directories, tags and consumers they read) and `cleaner` (the
//! deletion of what expires); `time` is Java's date-time parsing for partition values and tag
//! names. Like the rest of the core, nothing here reads a clock
//! or touches a file system: the caller passes the time ([`MaintenanceContext`]) and a
//! [`crate::storage::Storage`]; deletions go through [`Deleter`], which honours dry runs and
//! records what it removed.

mod cleaner;
pub mod consumers;
pub mod expire_changelogs;
pub mod expire_snapshots;
pub mod maintain;
pub mod orphans;
pub mod partition_expire;
pub mod tags;
pub(crate) mod time;
mod versions;

use crate::error::Result;
use crate::storage::{Storage, StorageErrorKind};

/// The time a maintenance step runs at, and whether it only reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MaintenanceContext {
    /// Epoch milliseconds (snapshot and tag times, consumer and orphan ages).
    pub now_ms: i64,
    /// The host's offset from UTC in milliseconds at `now_ms`. Paimon compares some times
    /// as local wall-clock values (partition values, tag periods, file creation times).
    pub utc_offset_ms: i64,
    /// Report what would be deleted or created, and change nothing.
    pub dry_run: bool,
}

impl MaintenanceContext {
    /// `now` as local wall-clock milliseconds (what Java's `LocalDateTime.now()` holds).
    pub fn local_now_ms(&self) -> i64 {
        self.now_ms.saturating_add(self.utc_offset_ms)
    }
}

/// Deletes files for a maintenance step: in a dry run it only records them. A file that is
/// already gone counts as deleted (every step is idempotent, so a rerun after a crash finishes
/// the work); any other failure is returned, and the caller stops before deleting what depends
/// on it (data before metadata, see `docs/maintenance.md`).
pub struct Deleter<'a> {
    storage: &'a dyn Storage,
    dry_run: bool,
    /// Every path deleted (or, in a dry run, that would be), in order.
    pub deleted: Vec<String>,
}

impl<'a> Deleter<'a> {
    /// A deleter over `storage` with nothing deleted yet; with `dry_run` it deletes nothing and
    /// only records the paths.
    pub fn new(storage: &'a dyn Storage, dry_run: bool) -> Self {
        Deleter {
            storage,
            dry_run,
            deleted: Vec::new(),
        }
    }

    /// The storage deletions go to, for steps that also read before deleting.
    pub fn storage(&self) -> &'a dyn Storage {
        self.storage
    }

    /// Whether this deleter only records (a dry run), so callers can skip writes of their own
    /// (hints, tag files) as well.
    pub fn dry_run(&self) -> bool {
        self.dry_run
    }

    /// Deletes `path` (or records it in a dry run).
    pub fn delete(&mut self, path: &str) -> Result<()> {
        if !self.dry_run {
            match self.storage.delete(path) {
                Ok(()) => {}
                Err(e) if e.kind == StorageErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.deleted.push(path.to_string());
        Ok(())
    }
}
