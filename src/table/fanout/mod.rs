//! A compaction job split into steps that may run in different processes, hosts and
//! machines, committed once (`docs/fanout.md`):
//!
//! 1. [`plan_tasks`] scans and plans the table, takes the partitions' leases and returns a
//!    [`TaskSet`]: one self-contained [`Task`] per bucket with work. A task carries the
//!    snapshot it was planned on, the bucket's live files and deletion-vector entries as of
//!    that snapshot, its planned work, the job's options and what its outputs are named after;
//!    running it reads only data files, never a manifest.
//! 2. [`run_task`] runs one task anywhere. It writes only new files and returns a
//!    [`TaskResult`]: the new files' metadata, the deletion-vector and changelog changes, and
//!    every path it wrote. A task may be run more than once; each run is an *attempt* with
//!    16 bytes of its own, and its files are named from the job, the task and the attempt.
//! 3. [`commit_tasks`] takes exactly one result per task (the first given), commits them all
//!    as one COMPACT snapshot with the usual conflict check and rebase, deletes what the other
//!    attempts wrote, keeps the planner state and releases the leases.
//! 4. [`abort_tasks`] ends a job that will not be committed: it deletes everything the job's
//!    tasks wrote (found by the job's name tag, results or not) and releases the leases.
//!
//! Every UUID a job writes starts with the job's tag ([`super::ids::job_tag`]), which is how
//! the commit and the abort find the files of attempts that died without a result. A job
//! that was committed can neither be committed again nor aborted: both look for a snapshot of
//! the job's commit user after the planned one first, and refuse with `illegal-state`.
//!
//! [`super::compact_table`] is these steps in one process, one task after another.

mod finish;
mod plan;
mod run;

pub use finish::{abort_tasks, commit_tasks, renew_leases, AbortReport, CommitTasksOptions};
pub(crate) use finish::{commit_tasks_on, discard};
pub use plan::plan_tasks;
pub(crate) use plan::plan_tasks_on;
pub(crate) use run::run_task_on;
pub use run::{attempt_for, run_task, RunTaskOptions};

use std::collections::BTreeMap;

use super::binary_row::BinaryRow;
use super::commit::CommitDelta;
use super::index::{DeletionVectorMeta, IndexManifestEntry};
use super::job_state::PartitionState;
use super::lease::{Lease, LeaseHeld};
use super::manifest::ManifestEntry;
use super::plan::{TablePlan, Work};
use super::report::BucketMetrics;
use crate::error::{Error, Result};

/// The version of the task, task-set and result JSON this build writes and reads. A reader
/// refuses any other version (`illegal-state`): a task planned by one build is run and
/// committed by the same format.
pub const TASK_FORMAT_VERSION: u32 = 1;

/// What a job's steps share: the settings the plan was made with, which the run and the
/// commit must use too.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TaskSettings {
    /// The job's `now` (epoch milliseconds): creation time of new files and the snapshot's
    /// time.
    pub now_ms: i64,
    /// A forced full compaction was planned.
    pub full: bool,
    /// The job's dynamic options (`paimon-compact.*` and table options for this job only).
    pub options: Vec<(String, String)>,
    /// Who holds the leases.
    pub owner: String,
    /// `commitUser` of the snapshot.
    pub commit_user: String,
    /// Rebase attempts when another commit wins the next snapshot id.
    pub max_commit_retries: usize,
}

/// A planned job: the plan, the leases it holds and one task per bucket with work (the
/// `job.json` of the CLI's task directory).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TaskSet {
    /// [`TASK_FORMAT_VERSION`].
    pub format_version: u32,
    /// The job id, 32 hex digits (16 bytes): every file name of the job derives from it.
    pub job_id: String,
    /// The table directory, relative to the storage root.
    pub table_path: String,
    /// The snapshot the plan was made on; `None` for a table without snapshots.
    pub planned_on: Option<i64>,
    /// The latest schema id at planning; a run or commit on another schema is refused.
    pub schema_id: i64,
    /// The job's settings.
    pub settings: TaskSettings,
    /// The plan, as `plan` reports it.
    pub plan: TablePlan,
    /// The leases the job holds until its commit or abort (renewed by
    /// [`renew_leases`]).
    pub leases: Vec<Lease>,
    /// Partitions another job holds: their buckets have no task.
    pub leases_held_elsewhere: Vec<LeaseHeld>,
    /// Planner state to keep after the commit, by partition lease key.
    pub kept_state: BTreeMap<String, PartitionState>,
    /// Milliseconds spent planning and leasing, on the planner's monotonic clock.
    pub plan_ms: i64,
    /// Milliseconds spent taking leases.
    pub lease_ms: i64,
    /// One task per bucket with work, `index` = position.
    pub tasks: Vec<Task>,
}

/// A live file as a task carries it: the manifest entry that made it live, where that entry
/// came from, and its deletion vector.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TaskFile {
    /// The ADD entry, every field as read from the manifest.
    pub entry: ManifestEntry,
    /// The manifest it came from (for error messages).
    pub source: String,
    /// Index file name and the vector's location in it.
    pub deletion_vector: Option<(String, DeletionVectorMeta)>,
}

/// One bucket's compaction, self-contained (a `task-<n>.json`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Task {
    /// [`TASK_FORMAT_VERSION`].
    pub format_version: u32,
    /// The job id, 32 hex digits.
    pub job_id: String,
    /// The task's position in its [`TaskSet`].
    pub index: usize,
    /// The table directory, relative to the storage root.
    pub table_path: String,
    /// The snapshot the task was planned on.
    pub planned_on: i64,
    /// The schema id at planning; running on another one is refused.
    pub schema_id: i64,
    /// The job's `now` (creation time of the new files).
    pub now_ms: i64,
    /// The job's dynamic options.
    pub options: Vec<(String, String)>,
    /// The partition, as serialized in the manifests (hex in JSON).
    pub partition: BinaryRow,
    /// The partition's directory, `k=v/...`.
    pub partition_path: String,
    /// Bucket id.
    pub bucket: i32,
    /// The partition's bucket count as the live entries record it.
    pub total_buckets: i32,
    /// The bucket's live files, in manifest order (the work's indices point here).
    pub files: Vec<TaskFile>,
    /// The bucket's live deletion-vector index entries.
    pub index_entries: Vec<IndexManifestEntry>,
    /// What to do.
    pub work: Work,
    /// Delete counts verified from footers at planning, by file name.
    pub verified_delete_counts: BTreeMap<String, Option<u64>>,
    /// For a postpone task (bucket -2): the partition's real buckets with live files, which
    /// the task compacts after replaying its postpone files into them; `index_entries` then
    /// holds the whole partition's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub real_buckets: Vec<RealBucket>,
}

/// A real bucket of a postpone task's partition, as of the planned snapshot.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RealBucket {
    /// Bucket id.
    pub bucket: i32,
    /// Its live files, in manifest order.
    pub files: Vec<TaskFile>,
}

/// What one attempt of a task wrote and what it changes (a `result-<n>.json`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TaskResult {
    /// [`TASK_FORMAT_VERSION`].
    pub format_version: u32,
    /// The job id, 32 hex digits.
    pub job_id: String,
    /// The task's index.
    pub task: usize,
    /// The attempt's 16 bytes, 32 hex digits.
    pub attempt: String,
    /// The manifest, changelog and index changes of the bucket.
    pub delta: CommitDelta,
    /// The bucket's metrics.
    pub metrics: BucketMetrics,
    /// Every path the attempt wrote, relative to the table directory (absolute URIs for
    /// files under external paths): valid whatever the storage root of the host that
    /// commits or aborts.
    pub written: Vec<String>,
    /// Milliseconds the attempt ran, on its host's monotonic clock.
    pub run_ms: i64,
}

/// 16 bytes from 32 hex digits (a job id or an attempt).
pub(crate) fn id_bytes(hex: &str, what: &str) -> Result<[u8; 16]> {
    super::ids::from_hex(hex)
        .and_then(|b| <[u8; 16]>::try_from(b).ok())
        .ok_or_else(|| Error::illegal_state(format!("{what} must be 32 hex digits, not '{hex}'")))
}

impl TaskResult {
    /// The written paths as `table_path`'s storage names them.
    pub fn written_paths(&self, table_path: &str) -> Vec<String> {
        self.written
            .iter()
            .map(|p| {
                let uri = p
                    .split_once(':')
                    .is_some_and(|(scheme, rest)| !scheme.contains('/') && rest.starts_with('/'));
                if uri || table_path.is_empty() {
                    p.clone()
                } else {
                    format!("{table_path}/{p}")
                }
            })
            .collect()
    }
}

/// The job id of a task set as bytes.
pub fn job_id_of(set: &TaskSet) -> Result<[u8; 16]> {
    id_bytes(&set.job_id, "the job id")
}

/// Refuses JSON of another format version.
fn check_version(version: u32, what: &str) -> Result<()> {
    if version == TASK_FORMAT_VERSION {
        Ok(())
    } else {
        Err(Error::illegal_state(format!(
            "{what} has format version {version}; this build reads version {TASK_FORMAT_VERSION}"
        )))
    }
}

impl TaskSet {
    /// Parses a task set's JSON, checking its version.
    pub fn from_json(json: &str) -> Result<Self> {
        let set: TaskSet = parse(json, "task set")?;
        check_version(set.format_version, "the task set")?;
        Ok(set)
    }
}

impl Task {
    /// Parses a task's JSON, checking its version.
    pub fn from_json(json: &str) -> Result<Self> {
        let task: Task = parse(json, "task")?;
        check_version(task.format_version, "the task")?;
        Ok(task)
    }
}

impl TaskResult {
    /// Parses a task result's JSON, checking its version.
    pub fn from_json(json: &str) -> Result<Self> {
        let r: TaskResult = parse(json, "task result")?;
        check_version(r.format_version, "the task result")?;
        Ok(r)
    }
}

fn parse<T: serde::de::DeserializeOwned>(json: &str, what: &str) -> Result<T> {
    serde_json::from_str(json)
        .map_err(|e| Error::corrupt(None, format!("not a {what}: {e}")).with_source(e))
}
