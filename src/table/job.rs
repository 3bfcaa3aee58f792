//! A compaction job over a whole table, in one process: the fan-out steps
//! ([`super::fanout`]) run one after another.
//!
//! 1. **plan and lease** — scan the table, plan every partition and bucket with the planner,
//!    take the lease of every partition with work (one job per partition; a partition another
//!    job holds is skipped and reported) and cut the plan into one task per bucket
//!    ([`super::fanout::plan_tasks`]; [`super::plan::plan_table`] only plans and reads);
//! 2. **run** — run each task through the rewriters ([`super::fanout::run_task`]);
//! 3. **commit** — one COMPACT snapshot, with conflict check and bounded rebase, then keep
//!    the planner state for the next run and release the leases
//!    ([`super::fanout::commit_tasks`]).
//!
//! [`compact_table`] is all or nothing: any failure before the snapshot exists deletes every
//! file the job wrote (data, deletion vectors, manifests), so the table is exactly as before.
//! Metrics come back in a [`CompactReport`] (delta-rs style), with the time per phase when the
//! caller passes a clock (the core reads none).

use super::fanout::{
    attempt_for, commit_tasks_on, discard, plan_tasks_on, run_task_on, CommitTasksOptions,
    RunTaskOptions, TaskResult,
};
use super::report::{CompactOptions, CompactReport};
use crate::error::Result;
use crate::io::ToIo;

/// Compacts the table at `table_path`; see the module documentation.
/// `storage`: see [`crate::io`].
pub fn compact_table(
    storage: &dyn ToIo,
    table_path: &str,
    opts: &CompactOptions<'_>,
) -> Result<CompactReport> {
    let io = storage.to_io();
    let (set, table) = plan_tasks_on(io.storage.as_ref(), table_path, opts)?;
    let mut results: Vec<TaskResult> = Vec::with_capacity(set.tasks.len());
    for task in &set.tasks {
        let run = RunTaskOptions {
            attempt: attempt_for(opts.job_id, task.index),
            clock: opts.clock,
        };
        match run_task_on(&io, &table, task, &run) {
            Ok(r) => results.push(r),
            Err(e) => {
                // The failed task cleaned up after itself; the others' files and the leases go.
                let done: Vec<&TaskResult> = results.iter().collect();
                return Err(e.with_cleanup_failures(&discard(io.storage.as_ref(), &set, &done)));
            }
        }
    }
    commit_tasks_on(
        io.storage.as_ref(),
        &table,
        &set,
        &results,
        &CommitTasksOptions {
            clock: opts.clock,
            sleep: opts.sleep,
            external_results: false,
            keep_on_failure: false,
            rewrite_ms: None,
        },
    )
}
