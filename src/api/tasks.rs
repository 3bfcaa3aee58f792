//! The fan-out operations of `table-compactor.compaction-job` (`plan-tasks`, `run-task`,
//! `commit-tasks`, `abort-tasks`, `renew-leases`): one job's compaction spread over processes,
//! hosts or machines and committed once (`docs/fanout.md`). Tasks, task sets and results cross
//! the WIT edge as versioned JSON ([`crate::table::fanout::TASK_FORMAT_VERSION`]), so a task
//! planned by the CLI can run in Node and be committed by the CLI again.

use std::sync::Arc;
use std::time::Instant;

use super::table::TableJob;
use super::{elapsed_ms, sleep_ms, Services};
use crate::maintenance::maintain::{maintain_after_commit, with_expired_partition_test, JobReport};
use crate::storage::Storage;
use crate::table::fanout::{
    self, AbortReport, CommitTasksOptions, RunTaskOptions, Task, TaskResult, TaskSet,
};
use crate::Result;

/// Plans the job on the table at `table_path` and takes its leases; returns one task per
/// bucket with work. `job.job_id` names everything the job writes.
pub fn plan_tasks(storage: Arc<dyn Storage>, table_path: &str, job: &TableJob) -> Result<TaskSet> {
    let job_id = super::job_id(&job.job_id)?;
    let started = Instant::now();
    let clock = move || elapsed_ms(started);
    let opts = job.compact_options(job_id, &clock, &sleep_ms);
    with_expired_partition_test(
        storage.as_ref(),
        table_path,
        &opts,
        &job.maintenance_settings(job_id),
        |o| fanout::plan_tasks(storage.as_ref(), table_path, o),
    )
}

/// Runs one task as attempt `attempt` (16 random bytes: a retry must use new ones). Reports
/// the start and the end on `services.progress` (phase `task`, unit `steps`).
pub fn run_task(
    storage: Arc<dyn Storage>,
    task: &Task,
    attempt: &[u8],
    services: &Services<'_>,
) -> Result<TaskResult> {
    let attempt = super::random_16("attempt", attempt)?;
    let started = Instant::now();
    let clock = move || elapsed_ms(started);
    let label = if task.partition_path.is_empty() {
        format!("bucket {}", task.bucket)
    } else {
        format!("{} bucket {}", task.partition_path, task.bucket)
    };
    services.report(
        "task",
        0,
        1,
        "steps",
        format!("task {}: {label}", task.index),
    );
    let result = fanout::run_task(
        &services.io(storage),
        task,
        &RunTaskOptions {
            attempt,
            clock: Some(&clock),
        },
    )?;
    services.report(
        "task",
        1,
        1,
        "steps",
        format!(
            "task {}: {} files replaced by {}",
            task.index, result.metrics.files_removed, result.metrics.files_added
        ),
    );
    Ok(result)
}

/// How [`commit_tasks`] commits (the WIT `commit-options`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CommitOptions {
    /// The run phase's wall time when the caller measured it (tasks in parallel); `None`
    /// sums the results' times.
    pub rewrite_ms: Option<i64>,
    /// Any failure deletes every file of the job and releases its leases (a host that ran
    /// the tasks itself and will not retry); otherwise only a conflict does, and other
    /// failures keep both for another commit or an abort.
    pub all_or_nothing: bool,
}

/// Commits one result per task as one COMPACT snapshot, then runs the maintenance a
/// dedicated job runs after its commit (unless `job.skip_maintenance`; the maintenance's
/// clock is `job.now_ms`).
pub fn commit_tasks(
    storage: Arc<dyn Storage>,
    set: &TaskSet,
    results: &[TaskResult],
    job: &TableJob,
    options: &CommitOptions,
) -> Result<JobReport> {
    let job_id = fanout::job_id_of(set)?;
    let started = Instant::now();
    let clock = move || elapsed_ms(started);
    let compaction = fanout::commit_tasks(
        storage.as_ref(),
        set,
        results,
        &CommitTasksOptions {
            clock: Some(&clock),
            sleep: Some(&sleep_ms),
            external_results: true,
            keep_on_failure: !options.all_or_nothing,
            rewrite_ms: options.rewrite_ms,
        },
    )?;
    if job.skip_maintenance {
        return Ok(JobReport::without_maintenance(compaction));
    }
    let mut opts = job.compact_options(job_id, &clock, &sleep_ms);
    opts.scope.options = set.settings.options.clone();
    opts.commit_user = Some(set.settings.commit_user.clone());
    Ok(maintain_after_commit(
        storage.as_ref(),
        &set.table_path,
        compaction,
        &opts,
        &job.maintenance_settings(job_id),
    ))
}

/// Aborts the job: deletes everything its tasks wrote and releases its leases.
pub fn abort_tasks(
    storage: Arc<dyn Storage>,
    set: &TaskSet,
    results: &[TaskResult],
) -> Result<AbortReport> {
    fanout::abort_tasks(storage.as_ref(), set, results)
}

/// Renews the job's leases until `now_ms + ttl_ms`; returns the set with the renewed leases.
pub fn renew_leases(
    storage: Arc<dyn Storage>,
    set: &TaskSet,
    now_ms: i64,
    ttl_ms: i64,
) -> Result<TaskSet> {
    fanout::renew_leases(storage.as_ref(), set, now_ms, ttl_ms)
}

/// Releases every lease of the table at `table_path` that names the job `job_id` (its 16
/// bytes, `TableJob::job_id`), and returns the lease objects deleted. For a host whose call of
/// that job stopped before the job released them itself (a trap, or the host's time or memory
/// limit): the CLI calls it natively, a JavaScript host on a fresh instance, and the job's
/// partitions are free at once instead of after one TTL. Touches no other job's lease, since
/// a job id is unique (`table::lease::release_job`).
pub fn release_job_leases(
    storage: &dyn Storage,
    table_path: &str,
    job_id: &[u8],
) -> Result<Vec<String>> {
    let id = super::job_id(job_id)?;
    let paths = crate::table::path::TablePaths::new(table_path);
    crate::table::lease::release_job(storage, &paths, &crate::table::ids::uuid_string(id))
}
