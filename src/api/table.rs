//! The `table-compactor` interface: planning and compacting whole Paimon tables (with the
//! maintenance a dedicated job runs after its commit), and the demo tables.

use std::sync::Arc;
use std::time::Instant;

use super::{elapsed_ms, sleep_ms, Services};
use crate::maintenance::maintain::{compact_and_maintain, JobReport, MaintenanceSettings};
use crate::maintenance::MaintenanceContext;
use crate::plan::PlanContext;
use crate::storage::Storage;
use crate::table::{CompactOptions, JobScope, PlanRequest, TablePlan};
use crate::Result;

/// A table compaction job's settings (the WIT `job-settings`). The host supplies the clock and
/// the randomness: the core reads no wall clock and draws no random numbers.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TableJob {
    /// A forced full compaction of every bucket instead of the automatic pick.
    pub full: bool,
    /// The job's clock: epoch milliseconds and local hour (0-23).
    pub now_ms: i64,
    /// Hour of the host's local wall clock (0–23), for the off-peak window
    /// (compaction.md §4.7).
    pub local_hour: u8,
    /// 16 random bytes; new file names and the commit derive from them. Checked by
    /// [`compact_table`] (planning does not need them).
    pub job_id: Vec<u8>,
    /// Who holds the partition leases, as other jobs will see it.
    pub owner: String,
    /// Time-to-live of the per-partition leases; `None` runs without leases.
    pub lease_ttl_ms: Option<i64>,
    /// How often a commit that lost a race with concurrent appends is rebased and retried.
    pub max_commit_retries: u32,
    /// Which partitions and buckets, and with which dynamic options (default: all).
    pub scope: JobScope,
    /// Leave out the maintenance after the commit.
    pub skip_maintenance: bool,
    /// The host's offset from UTC in milliseconds (Paimon compares partition values, tag
    /// periods and file times as local wall-clock time).
    pub utc_offset_ms: i64,
}

impl TableJob {
    fn context(&self) -> PlanContext {
        PlanContext::at(self.now_ms, self.local_hour)
    }

    /// The table layer's plan request for this job.
    fn plan_request(&self) -> PlanRequest {
        PlanRequest {
            full: self.full,
            context: self.context(),
            scope: self.scope.clone(),
        }
    }

    /// The maintenance settings of this job (its clock, its id, the commit back-off).
    pub(super) fn maintenance_settings(&self, job_id: [u8; 16]) -> MaintenanceSettings<'static> {
        MaintenanceSettings {
            sleep: Some(&sleep_ms),
            ..MaintenanceSettings::new(
                MaintenanceContext {
                    now_ms: self.now_ms,
                    utc_offset_ms: self.utc_offset_ms,
                    dry_run: false,
                },
                job_id,
            )
        }
    }

    /// The table layer's options for running this job, with the phase clock and the commit
    /// back-off's sleep.
    pub(super) fn compact_options<'a>(
        &self,
        job_id: [u8; 16],
        clock: &'a dyn Fn() -> i64,
        sleep: &'a dyn Fn(u64),
    ) -> CompactOptions<'a> {
        let mut opts = CompactOptions::new(self.context(), job_id);
        opts.full = self.full;
        opts.owner = self.owner.clone();
        opts.lease_ttl_ms = self.lease_ttl_ms;
        opts.max_commit_retries = self.max_commit_retries as usize;
        opts.scope = self.scope.clone();
        opts.clock = Some(clock);
        opts.sleep = Some(sleep);
        opts
    }
}

/// What the job would do on the table at `table_path`, relative to the storage root. Reads
/// only.
pub fn plan_table(
    storage: Arc<dyn Storage>,
    table_path: &str,
    job: &TableJob,
) -> Result<TablePlan> {
    crate::table::plan_table(storage.as_ref(), table_path, &job.plan_request())
}

/// Compacts the table at `table_path` and commits one COMPACT snapshot, then runs the
/// maintenance a dedicated job runs after its commit (unless `job.skip_maintenance`). Any
/// failure before the snapshot exists deletes every file the job wrote. The report's phase
/// times are measured on a monotonic clock; commit retries back off with a sleep. Reports the
/// start and the end on `services.progress` (phase `compact`, unit `steps`).
///
/// ```rust
/// use std::sync::Arc;
/// use paimon_compact::api::{compact_table, plan_table, write_demo_tables, Services, TableJob};
/// use paimon_compact::storage::MemoryStorage;
///
/// let now_ms = 1_700_000_000_000;
/// let storage = Arc::new(MemoryStorage::new());
/// let tables = write_demo_tables(storage.clone(), "warehouse", now_ms, 42)?;
/// let job = TableJob {
///     full: true,
///     now_ms,
///     local_hour: 3,
///     job_id: vec![7; 16],
///     owner: "doc-example".into(),
///     lease_ttl_ms: None,
///     max_commit_retries: 3,
///     scope: Default::default(),
///     skip_maintenance: false,
///     utc_offset_ms: 0,
/// };
/// let plan = plan_table(storage.clone(), &tables[0], &job)?;
/// assert!(plan.summary.buckets_with_work > 0);
/// let report = compact_table(storage.clone(), &tables[0], &job, &Services::none())?;
/// assert!(report.compaction.snapshot_after > report.compaction.snapshot_before);
/// # Ok::<(), paimon_compact::Error>(())
/// ```
pub fn compact_table(
    storage: Arc<dyn Storage>,
    table_path: &str,
    job: &TableJob,
    services: &Services<'_>,
) -> Result<JobReport> {
    let job_id = super::job_id(&job.job_id)?;
    let started = Instant::now();
    let clock = move || elapsed_ms(started);
    let opts = job.compact_options(job_id, &clock, &sleep_ms);
    services.report("compact", 0, 1, "steps", format!("compacting {table_path}"));
    let maintain = job.maintenance_settings(job_id);
    let report = compact_and_maintain(
        &services.io(storage),
        table_path,
        &opts,
        &maintain,
        !job.skip_maintenance,
    )?;
    let r = &report.compaction;
    services.report(
        "compact",
        1,
        1,
        "steps",
        match r.snapshot_after {
            Some(id) => format!(
                "committed snapshot {id}: {} files replaced by {}",
                r.totals.files_removed, r.totals.files_added
            ),
            None => "nothing committed".to_string(),
        },
    );
    Ok(report)
}

/// Writes the built-in demo tables (append and primary-key, several commits of small files)
/// under `root`, in Paimon's format; returns their paths. Deterministic for a given `now_ms`
/// and `seed`.
pub fn write_demo_tables(
    storage: Arc<dyn Storage>,
    root: &str,
    now_ms: i64,
    seed: u64,
) -> Result<Vec<String>> {
    let seed = crate::table::demo::seed_from_u64(seed);
    crate::table::demo::write_demo(storage.as_ref(), root, now_ms, seed)
}
