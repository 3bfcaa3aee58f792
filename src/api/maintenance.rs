//! The `table-maintenance` interface: one maintenance task on a table, on its own.

use std::sync::Arc;

use super::sleep_ms;
use crate::maintenance::maintain::{self, MaintenanceReport, MaintenanceSettings, MaintenanceTask};
use crate::maintenance::MaintenanceContext;
use crate::storage::Storage;
use crate::Result;

/// How to run a maintenance task (the WIT `maintenance-settings`). The host supplies the clock
/// and the randomness.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MaintenanceRequest {
    /// The clock: epoch milliseconds and the host's offset from UTC.
    pub now_ms: i64,
    /// Milliseconds to add to UTC for the host's local wall-clock time, which Paimon compares
    /// partition values, tag periods and creation times against (`maintenance.md`, "Time").
    pub utc_offset_ms: i64,
    /// Report what would be deleted or committed, and change nothing.
    pub dry_run: bool,
    /// 16 random bytes: names of what partition expiration commits.
    pub job_id: Vec<u8>,
    /// Table options for this run only (what the procedures' arguments set, e.g.
    /// `snapshot.num-retained.max`); the schema is never changed.
    pub options: Vec<(String, String)>,
    /// Orphan removal: only files modified before this (epoch ms); default one day ago.
    pub older_than_ms: Option<i64>,
}

/// Runs `task` on the table at `table_path` (`docs/maintenance.md`). Commits that lose a race
/// back off with a sleep.
pub fn run_maintenance(
    storage: Arc<dyn Storage>,
    table_path: &str,
    task: MaintenanceTask,
    request: &MaintenanceRequest,
) -> Result<MaintenanceReport> {
    let job_id = super::job_id(&request.job_id)?;
    let settings = MaintenanceSettings {
        options: request.options.clone(),
        older_than_ms: request.older_than_ms,
        sleep: Some(&sleep_ms),
        ..MaintenanceSettings::new(
            MaintenanceContext {
                now_ms: request.now_ms,
                utc_offset_ms: request.utc_offset_ms,
                dry_run: request.dry_run,
            },
            job_id,
        )
    };
    maintain::run(storage.as_ref(), table_path, task, &settings)
}
