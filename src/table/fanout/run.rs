//! Step 2 of a job: run one task, anywhere.

use super::{check_version, id_bytes, Task, TaskResult, TASK_FORMAT_VERSION};
use crate::error::{Error, Result};
use crate::io::ToIo;
use crate::table::commit::WrittenFiles;
use crate::table::ids::{to_hex, IdGen};
use std::collections::BTreeMap;

use crate::table::plan::Work;
use crate::table::postpone::{run_postpone, PostponeRun};
use crate::table::run::{run_bucket, BucketWork};
use crate::table::scan::{BucketState, LiveFile, Table};

/// How to run a task.
#[derive(Clone, Copy)]
pub struct RunTaskOptions<'a> {
    /// The attempt's 16 bytes: random where a task may run more than once (a retry must
    /// never write the names of an earlier attempt), [`attempt_for`] where it runs once.
    pub attempt: [u8; 16],
    /// Milliseconds from any monotonic clock, for the result's `run_ms` (optional).
    pub clock: Option<&'a dyn Fn() -> i64>,
}

/// The attempt bytes of a task that runs exactly once in its job (the in-process job):
/// derived from the job id and the task, so a replayed job writes the same names.
pub fn attempt_for(job_id: [u8; 16], task: usize) -> [u8; 16] {
    let mut a = job_id;
    for (i, b) in (task as u64).to_le_bytes().iter().enumerate() {
        a[i] ^= b;
    }
    a[15] ^= 0x3c;
    a
}

/// Runs `task` on the table it names: rewrites its bucket as planned and returns what the
/// attempt wrote and changes. Reads the table's schema and the data files, never a
/// manifest. A table whose schema changed since planning is refused (`conflict`: plan
/// again). On failure every file the attempt wrote is deleted before the error returns.
pub fn run_task(storage: &dyn ToIo, task: &Task, opts: &RunTaskOptions<'_>) -> Result<TaskResult> {
    check_version(task.format_version, "the task")?;
    let io = storage.to_io();
    let (table, _) = Table::load_for_job(io.storage.as_ref(), &task.table_path, &task.options)?;
    run_task_on(&io, &table, task, opts)
}

/// [`run_task`] on the table as the caller loaded it (with the task's options).
pub(crate) fn run_task_on(
    io: &crate::io::Io,
    table: &Table,
    task: &Task,
    opts: &RunTaskOptions<'_>,
) -> Result<TaskResult> {
    let storage = io.storage.as_ref();
    let now = || opts.clock.map_or(0, |c| c());
    let t0 = now();
    let job_id = id_bytes(&task.job_id, "the task's job id")?;
    if table.schema.id != task.schema_id {
        return Err(Error::conflict(format!(
            "the table's schema is version {} but task {} was planned on version {}; plan the \
             job again",
            table.schema.id, task.index, task.schema_id
        )));
    }
    let bucket = bucket_state(table, task)?;
    let mut ids = IdGen::for_task(job_id, task.index, opts.attempt);
    let mut written = WrittenFiles::default();
    let ran = match &task.work {
        Work::Postpone(work) => {
            let mut real = BTreeMap::new();
            for rb in &task.real_buckets {
                let state = BucketState {
                    bucket: rb.bucket,
                    total_buckets: work.buckets,
                    files: live_files(&rb.files),
                    ..bucket.clone()
                };
                real.insert(rb.bucket, state);
            }
            let run = PostponeRun {
                table,
                postpone: &bucket,
                real,
                index_entries: &task.index_entries,
                work,
                now_ms: task.now_ms,
                output_seed: output_seed(job_id, task.index),
            };
            run_postpone(io, &run, &mut ids, &mut written)
        }
        _ => {
            let work = BucketWork {
                table,
                bucket: &bucket,
                index_entries: &task.index_entries,
                work: &task.work,
                verified_delete_counts: &task.verified_delete_counts,
                now_ms: task.now_ms,
                output_seed: output_seed(job_id, task.index),
            };
            run_bucket(io, &work, &mut ids, &mut written)
        }
    };
    match ran {
        Ok((delta, metrics)) => Ok(TaskResult {
            format_version: TASK_FORMAT_VERSION,
            job_id: task.job_id.clone(),
            task: task.index,
            attempt: to_hex(&opts.attempt),
            delta,
            metrics,
            written: written
                .paths()
                .iter()
                .map(|p| relative_to_table(&task.table_path, p))
                .collect(),
            run_ms: now() - t0,
        }),
        Err(e) => Err(e.with_cleanup_failures(&written.delete_all(storage))),
    }
}

/// The bucket as of the planned snapshot, from the task's files.
fn bucket_state(table: &Table, task: &Task) -> Result<BucketState> {
    let source = format!("task {}", task.index);
    Ok(BucketState {
        partition: task.partition.clone(),
        partition_values: table.partition_values(&task.partition, &source)?,
        partition_path: task.partition_path.clone(),
        bucket: task.bucket,
        total_buckets: task.total_buckets,
        files: live_files(&task.files),
    })
}

fn live_files(files: &[super::TaskFile]) -> Vec<LiveFile> {
    files
        .iter()
        .map(|f| LiveFile {
            entry: f.entry.clone(),
            source: f.source.clone(),
            deletion_vector: f.deletion_vector.clone(),
        })
        .collect()
}

/// Seeds a task's choice of external output directories: its own stream of the job's.
fn output_seed(job_id: [u8; 16], task: usize) -> u64 {
    let mut g = IdGen::for_task(job_id, task, [0; 16]);
    let b = g.next_bytes();
    u64::from_le_bytes(b[8..].try_into().unwrap_or_default())
}

/// A written path as a result records it: relative to the table directory (so a result is
/// valid whatever the storage root of the host that commits it), or the absolute URI of a
/// file under an external path.
fn relative_to_table(table_path: &str, path: &str) -> String {
    if table_path.is_empty() {
        return path.to_string();
    }
    path.strip_prefix(table_path)
        .and_then(|rest| rest.strip_prefix('/'))
        .map_or_else(|| path.to_string(), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::relative_to_table;
    use crate::table::fanout::{TaskResult, TASK_FORMAT_VERSION};

    #[test]
    fn written_paths_are_relative_to_the_table_and_resolve_under_any_root() {
        assert_eq!(
            relative_to_table("wh/db.db/t", "wh/db.db/t/bucket-0/data-a-0.parquet"),
            "bucket-0/data-a-0.parquet"
        );
        // External files keep their URI; a table at the root changes nothing.
        let ext = "s3://other/ext/t/bucket-0/data-b-0.parquet";
        assert_eq!(relative_to_table("wh/db.db/t", ext), ext);
        assert_eq!(relative_to_table("", "t/x"), "t/x");
        let r = TaskResult {
            format_version: TASK_FORMAT_VERSION,
            job_id: "00".repeat(16),
            task: 0,
            attempt: "00".repeat(16),
            delta: Default::default(),
            metrics: Default::default(),
            written: vec![
                "dt=10:00/bucket-0/data-a-0.parquet".into(),
                ext.into(),
                "file:/mnt/ext/t/bucket-0/data-c-0.parquet".into(),
            ],
            run_ms: 0,
        };
        assert_eq!(
            r.written_paths("t"),
            vec![
                "t/dt=10:00/bucket-0/data-a-0.parquet".to_string(),
                ext.to_string(),
                "file:/mnt/ext/t/bucket-0/data-c-0.parquet".to_string(),
            ]
        );
    }
}
