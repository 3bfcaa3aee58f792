//! The CLI's fan-out commands over a task directory (`docs/fanout.md`):
//!
//! * `tasks <table> --out DIR` plans the job, takes its leases and writes `DIR/job.json` (the
//!   task set) and one `DIR/task-<n>.json` per task;
//! * `run-task DIR/task-<n>.json` runs one task as a fresh attempt and writes
//!   `DIR/result-<n>.json` (atomically: a retry replaces it whole);
//! * `commit-tasks DIR` commits the results as one COMPACT snapshot;
//! * `abort-tasks DIR` deletes everything the job's tasks wrote and releases the leases;
//! * `renew-leases DIR` extends the leases (rewriting `job.json`), for a driver whose tasks
//!   run longer than the lease.
//!
//! Every file carries `table_uri`, the table as given to `tasks` (a path made absolute, or an
//! object-store URI), so each step reopens the same table from any process on any machine
//! that can reach it. The core ignores the field.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use paimon_compact::maintenance::maintain::JobReport;
use paimon_compact::storage::Storage;
use paimon_compact::table::fanout::{AbortReport, Task, TaskResult, TaskSet};
use paimon_compact_host::{Compactor, HostError, Now, TableJob};

use crate::table::{open_table, JobArgs};

/// The lease time to live of `tasks`: the driver renews the leases (`renew-leases`, or the
/// Ray driver's thread) at its own pace, so they last longer than `compact`'s.
pub const DRIVER_RENEWED_LEASE_TTL_MS: i64 = 10 * 60 * 1000;

/// The field every file of a task directory carries besides the core's.
const TABLE_URI: &str = "table_uri";

/// The table argument as every step can reopen it: an absolute local path, or the URI.
fn table_uri(table: &Path) -> String {
    let arg = table.to_string_lossy();
    if arg.contains("://") {
        return arg.into_owned();
    }
    table
        .canonicalize()
        .map_or_else(|_| arg.into_owned(), |p| p.to_string_lossy().into_owned())
}

/// Writes `value` with `table_uri` added, atomically (a temporary file renamed into place).
fn write_json<T: serde::Serialize>(path: &Path, value: &T, uri: &str) -> Result<(), String> {
    let mut doc = serde_json::to_value(value).map_err(|e| e.to_string())?;
    if let Some(o) = doc.as_object_mut() {
        o.insert(TABLE_URI.into(), serde_json::Value::String(uri.into()));
    }
    let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Reads a file of the task directory: its text and its `table_uri`.
fn read_json(path: &Path) -> Result<(String, String), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
    let uri = doc[TABLE_URI]
        .as_str()
        .ok_or_else(|| format!("{} has no {TABLE_URI}", path.display()))?
        .to_string();
    Ok((text, uri))
}

/// Opens the table a task directory's file names.
fn open(uri: &str, allow_external: &[PathBuf]) -> Result<Arc<dyn Storage>, HostError> {
    let opened = open_table(Path::new(uri), allow_external).map_err(HostError::Setup)?;
    Ok(opened.storage)
}

/// `tasks`: plans the job and writes the task directory; returns the task set.
pub fn plan(
    compactor: &Compactor,
    table: &Path,
    args: &JobArgs,
    out: &Path,
    allow_external: &[PathBuf],
) -> Result<TaskSet, HostError> {
    let uri = table_uri(table);
    let opened = open_table(table, allow_external).map_err(HostError::Setup)?;
    let job = args.table_job();
    std::fs::create_dir_all(out)
        .map_err(|e| HostError::Setup(format!("cannot create {}: {e}", out.display())))?;
    let set = compactor.plan_tasks(opened.storage.clone(), &opened.table_path, &job)?;
    let written = (|| {
        for t in &set.tasks {
            write_json(&out.join(format!("task-{}.json", t.index)), t, &uri)?;
        }
        write_json(&out.join("job.json"), &set, &uri)
    })();
    if let Err(e) = written {
        // Without its directory nobody can run or abort the job: give its leases back.
        let _ = compactor.abort_tasks(opened.storage, &set, &[]);
        return Err(HostError::Setup(e));
    }
    Ok(set)
}

/// `run-task`: runs one task as a fresh attempt and writes `result-<n>.json` beside it (or
/// to `out`); returns the result.
pub fn run(
    compactor: &Compactor,
    task_file: &Path,
    out: Option<&Path>,
    allow_external: &[PathBuf],
) -> Result<TaskResult, HostError> {
    let (text, uri) = read_json(task_file).map_err(HostError::Setup)?;
    let task = Task::from_json(&text)?;
    let storage = open(&uri, allow_external)?;
    let result = compactor.run_task(
        storage,
        &task,
        paimon_compact_host::clock::random_id(),
        None,
    )?;
    let out = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| task_file.with_file_name(format!("result-{}.json", task.index)));
    write_json(&out, &result, &uri).map_err(HostError::Setup)?;
    Ok(result)
}

/// The task set and every result in a task directory.
fn read_dir(dir: &Path) -> Result<(TaskSet, Vec<TaskResult>, String), HostError> {
    let (text, uri) = read_json(&dir.join("job.json")).map_err(HostError::Setup)?;
    let set = TaskSet::from_json(&text)?;
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| HostError::Setup(format!("cannot read {}: {e}", dir.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("result-") && n.ends_with(".json"))
        })
        .collect();
    names.sort();
    let mut results = Vec::with_capacity(names.len());
    for p in names {
        let (text, _) = read_json(&p).map_err(HostError::Setup)?;
        results.push(TaskResult::from_json(&text)?);
    }
    Ok((set, results, uri))
}

/// `commit-tasks`: commits the directory's results as one COMPACT snapshot.
pub fn commit(
    compactor: &Compactor,
    dir: &Path,
    skip_maintenance: bool,
    allow_external: &[PathBuf],
) -> Result<JobReport, HostError> {
    let (set, results, uri) = read_dir(dir)?;
    let storage = open(&uri, allow_external)?;
    let job = TableJob {
        skip_maintenance,
        ..TableJob::now()
    };
    compactor.commit_tasks(storage, &set, &results, &job, &Default::default())
}

/// `abort-tasks`: deletes everything the job's tasks wrote and releases its leases.
pub fn abort(
    compactor: &Compactor,
    dir: &Path,
    allow_external: &[PathBuf],
) -> Result<AbortReport, HostError> {
    let (set, results, uri) = read_dir(dir)?;
    let storage = open(&uri, allow_external)?;
    compactor.abort_tasks(storage, &set, &results)
}

/// `renew-leases`: extends the job's leases by `ttl_ms` from now and rewrites `job.json`.
pub fn renew(
    compactor: &Compactor,
    dir: &Path,
    ttl_ms: i64,
    allow_external: &[PathBuf],
) -> Result<TaskSet, HostError> {
    let (text, uri) = read_json(&dir.join("job.json")).map_err(HostError::Setup)?;
    let set = TaskSet::from_json(&text)?;
    let storage = open(&uri, allow_external)?;
    let now = paimon_compact_host::clock::now().0;
    let renewed = compactor.renew_leases(storage, &set, now, ttl_ms)?;
    write_json(&dir.join("job.json"), &renewed, &uri).map_err(HostError::Setup)?;
    Ok(renewed)
}
