//! Steps 3 and 4 of a job: commit the tasks' results once, or abort the job; and the lease
//! renewal a driver runs while its tasks are out.

use std::collections::{BTreeMap, BTreeSet};

use super::{check_version, id_bytes, TaskResult, TaskSet};
use crate::error::{Error, ErrorKind, Result};
use crate::storage::{Storage, StorageErrorKind};
use crate::table::commit::{self, CommitDelta, CommitOutcome, CommitSettings, WrittenFiles};
use crate::table::ids::{job_tag, uuid_string, IdGen};
use crate::table::job_state;
use crate::table::lease::{self, Lease, LeaseRecord};
use crate::table::report::{CompactReport, PhaseTimes, SkippedBucket};
use crate::table::scan::Table;
use crate::table::snapshot::{self, CommitKind};

/// How to commit.
#[derive(Clone, Copy, Default)]
pub struct CommitTasksOptions<'a> {
    /// Milliseconds from any monotonic clock, for the report's commit time (optional).
    pub clock: Option<&'a dyn Fn() -> i64>,
    /// Waits the given milliseconds between commit attempts after a lost race.
    pub sleep: Option<&'a dyn Fn(u64)>,
    /// The results come from outside this call (other processes, a task directory), as in
    /// every fan-out: the commit first checks that the job was not committed already, and
    /// after the commit it deletes files of the job's attempts that no chosen result names
    /// (attempts that died without one: one listing per output directory of every task).
    /// Off for the in-process job, where every task ran once in this call.
    pub external_results: bool,
    /// A failure that a retry may get past (I/O, not a conflict) keeps the results' files
    /// and the leases, for another commit or an abort; off, every failure deletes them (the
    /// job is all or nothing, as `compact` is).
    pub keep_on_failure: bool,
    /// The rewrite phase's wall time when the caller measured it (tasks run in parallel);
    /// `None` sums the results' `run_ms`.
    pub rewrite_ms: Option<i64>,
}

/// What [`abort_tasks`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AbortReport {
    /// The job id, 32 hex digits.
    pub job_id: String,
    /// Files of the job that were deleted.
    pub deleted: Vec<String>,
    /// Files that could not be deleted, with the reason (orphans for `remove-orphan-files`).
    pub failed: Vec<String>,
    /// Leases released.
    pub leases_released: usize,
}

/// The results [`commit_tasks`] commits, one per task, and those it discards.
struct Chosen<'r> {
    chosen: Vec<&'r TaskResult>,
    others: Vec<&'r TaskResult>,
}

/// Checks every result belongs to the set and picks the first one of each task. A task
/// without a result is the caller's error: nothing is touched.
fn choose<'r>(set: &TaskSet, results: &'r [TaskResult]) -> Result<Chosen<'r>> {
    let mut chosen: Vec<Option<&TaskResult>> = vec![None; set.tasks.len()];
    let mut others = Vec::new();
    for r in results {
        check_version(r.format_version, "a task result")?;
        if r.job_id != set.job_id {
            return Err(Error::illegal_state(format!(
                "a result of job {} was given to job {}",
                r.job_id, set.job_id
            )));
        }
        let Some(slot) = chosen.get_mut(r.task) else {
            return Err(Error::illegal_state(format!(
                "a result names task {} but the job has {} tasks",
                r.task,
                set.tasks.len()
            )));
        };
        match slot {
            None => *slot = Some(r),
            // The same attempt given twice is one result.
            Some(c) if c.attempt == r.attempt => {}
            Some(_) => others.push(r),
        }
    }
    let missing: Vec<String> = chosen
        .iter()
        .enumerate()
        .filter(|(_, c)| c.is_none())
        .map(|(i, _)| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(Error::illegal_state(format!(
            "task{} {} of job {} {} no result: run {} (run-task) or abort the job (abort-tasks)",
            if missing.len() > 1 { "s" } else { "" },
            missing.join(", "),
            set.job_id,
            if missing.len() > 1 { "have" } else { "has" },
            if missing.len() > 1 { "them" } else { "it" },
        )));
    }
    Ok(Chosen {
        chosen: chosen.into_iter().flatten().collect(),
        others,
    })
}

/// The first snapshot after the planned one that this job's commit user made, if any: a
/// job that was committed is never committed again nor aborted.
fn committed_as(storage: &dyn Storage, table: &Table, set: &TaskSet) -> Result<Option<i64>> {
    let Some(planned_on) = set.planned_on else {
        return Ok(None);
    };
    let Some(latest) = snapshot::latest_snapshot_id(storage, &table.paths)? else {
        return Ok(None);
    };
    let Some(first) = planned_on.checked_add(1) else {
        return Ok(None);
    };
    for id in first..=latest {
        match snapshot::read_snapshot(storage, &table.paths, id) {
            Ok(s) if s.commit_user == set.settings.commit_user => return Ok(Some(id)),
            Ok(_) => {}
            // Expired already: not ours (a job's own snapshot outlives its commit call).
            Err(e)
                if matches!(
                    e.kind,
                    ErrorKind::Io {
                        storage: StorageErrorKind::NotFound,
                        ..
                    }
                ) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// Commits one result per task of `set` as one COMPACT snapshot (see the module docs), then
/// deletes the other attempts' files, keeps the planner state and releases the leases.
///
/// Refused, touching nothing (`illegal-state`): a result of another job or version, a task
/// without a result, a job already committed. A conflict (the job can never be committed)
/// deletes every file the job wrote and releases the leases, so the table is as before;
/// other failures do the same unless [`CommitTasksOptions::keep_on_failure`] keeps the files
/// and leases for a retry or an abort. When the commit's outcome is unknown the files are
/// always kept.
pub fn commit_tasks(
    storage: &dyn Storage,
    set: &TaskSet,
    results: &[TaskResult],
    opts: &CommitTasksOptions<'_>,
) -> Result<CompactReport> {
    check_version(set.format_version, "the task set")?;
    let chosen = choose(set, results)?;
    let table = Table::load_for_job(storage, &set.table_path, &set.settings.options)
        .map(|(t, _)| t)
        .map_err(|e| fail(storage, set, &chosen, None, opts, e))?;
    commit_on(storage, &table, set, &chosen, opts)
}

/// [`commit_tasks`] with the table already loaded (the in-process job's).
pub(crate) fn commit_tasks_on(
    storage: &dyn Storage,
    table: &Table,
    set: &TaskSet,
    results: &[TaskResult],
    opts: &CommitTasksOptions<'_>,
) -> Result<CompactReport> {
    check_version(set.format_version, "the task set")?;
    let chosen = choose(set, results)?;
    commit_on(storage, table, set, &chosen, opts)
}

/// After a failed commit: what the policy says to delete (see [`commit_tasks`]) goes, and
/// the error says what could not be deleted or what was kept.
fn fail(
    storage: &dyn Storage,
    set: &TaskSet,
    chosen: &Chosen<'_>,
    table: Option<&Table>,
    opts: &CommitTasksOptions<'_>,
    e: Error,
) -> Error {
    if e.commit_may_have_happened() {
        return e;
    }
    let definitive = e.kind == ErrorKind::Conflict;
    if opts.keep_on_failure && !definitive {
        return e.with_note(
            "the results' files and the leases are kept: run commit-tasks again, or abort-tasks",
        );
    }
    let all: Vec<&TaskResult> = chosen
        .chosen
        .iter()
        .chain(&chosen.others)
        .copied()
        .collect();
    let mut failed = discard(storage, set, &all);
    if let (true, Some(table)) = (opts.external_results, table) {
        let (found, _) = job_files(storage, table, set, false);
        failed.extend(delete_paths(storage, &found).1);
    }
    e.with_cleanup_failures(&failed)
}

/// Deletes what `results` wrote and releases the job's leases, reading nothing; returns what
/// could not be deleted. What the in-process job does after a failed task.
pub(crate) fn discard(
    storage: &dyn Storage,
    set: &TaskSet,
    results: &[&TaskResult],
) -> Vec<String> {
    let mut w = WrittenFiles::default();
    for p in results
        .iter()
        .flat_map(|r| r.written_paths(&set.table_path))
    {
        w.track(&p);
    }
    let failed = w.delete_all(storage);
    release_all(storage, &set.leases, &mut Vec::new());
    failed
}

fn commit_on(
    storage: &dyn Storage,
    table: &Table,
    set: &TaskSet,
    picked: &Chosen<'_>,
    opts: &CommitTasksOptions<'_>,
) -> Result<CompactReport> {
    let job_id = id_bytes(&set.job_id, "the job id")?;
    let now = || opts.clock.map_or(0, |c| c());
    let t0 = now();
    let Chosen { chosen, others } = picked;
    let mut report = CompactReport::for_plan(&set.plan, uuid_string(job_id), set.settings.full);
    report.leases_held_elsewhere = set.leases_held_elsewhere.clone();
    if opts.external_results {
        // An error here leaves the question open: nothing may be deleted.
        if let Some(id) = committed_as(storage, table, set)? {
            return Err(Error::illegal_state(format!(
                "job {} was already committed as snapshot {id}",
                set.job_id
            )));
        }
    }
    let root = &set.table_path;
    let mut written = WrittenFiles::default();
    let outcome = (|| {
        if table.schema.id != set.schema_id {
            return Err(Error::conflict(format!(
                "the table's schema is version {} but the job was planned on version {}",
                table.schema.id, set.schema_id
            )));
        }
        let mut delta = CommitDelta::default();
        for r in chosen {
            delta.entries.extend(r.delta.entries.iter().cloned());
            delta.changelog.extend(r.delta.changelog.iter().cloned());
            delta.index.extend(r.delta.index.iter().cloned());
            delta.marked.extend(r.delta.marked.iter().cloned());
        }
        let (Some(planned_on), false) = (set.planned_on, delta.is_empty()) else {
            return Ok(None);
        };
        let settings = CommitSettings {
            kind: CommitKind::Compact,
            commit_user: set.settings.commit_user.clone(),
            now_ms: set.settings.now_ms,
            max_retries: set.settings.max_commit_retries,
            jitter_seed: u64::from_le_bytes(job_id[..8].try_into().unwrap_or_default()),
            merge_manifests: true,
            commit_identifier: i64::MAX,
        };
        let request = commit::CommitRequest {
            table,
            planned_on: Some(planned_on),
            delta: &delta,
            settings: &settings,
            sleep: opts.sleep,
        };
        let mut ids = IdGen::new(job_id);
        commit::commit_with_backoff(storage, &request, &mut ids, &mut written).map(Some)
    })();
    let t1 = now();
    let outcome: Option<CommitOutcome> = match outcome {
        Ok(o) => o,
        Err(e) => {
            // The commit's own metadata files go unless the snapshot may reference them.
            let kept_metadata = e.commit_may_have_happened();
            let e = fail(storage, set, picked, Some(table), opts, e);
            if !kept_metadata {
                written.delete_all(storage);
            }
            return Err(e);
        }
    };
    // Committed (or nothing to commit): what the chosen results wrote stays, the rest goes.
    // Kept files are compared by name (unique: every name carries the job's tag, the task
    // and the attempt), so no spelling of a path can make a committed file look unused.
    let keep: BTreeSet<String> = chosen.iter().flat_map(|r| r.written_paths(root)).collect();
    let keep_names: BTreeSet<&str> = keep.iter().map(|p| file_name(p)).collect();
    let mut leftovers: Vec<String> = others
        .iter()
        .flat_map(|r| r.written_paths(root))
        .filter(|p| !keep_names.contains(file_name(p)))
        .collect();
    if opts.external_results {
        let (found, warnings) = job_files(storage, table, set, false);
        report.warnings.extend(warnings);
        leftovers.extend(
            found
                .into_iter()
                .filter(|p| !keep_names.contains(file_name(p))),
        );
    }
    if outcome.is_none() {
        // Nothing was committed: what the chosen results wrote is unreferenced too.
        leftovers.extend(keep.iter().cloned());
    }
    leftovers.sort();
    leftovers.dedup();
    for f in delete_paths(storage, &leftovers).1 {
        report
            .warnings
            .push(format!("could not delete a file of an unused attempt: {f}"));
    }
    save_kept_state(storage, table, &set.kept_state, &mut report.warnings);
    release_all(storage, &set.leases, &mut report.warnings);
    for l in &report.leases_held_elsewhere {
        report.skipped.push(SkippedBucket {
            partition: l.partition.clone(),
            bucket: -1,
            reason: format!(
                "partition is leased by '{}' (job {}) until {}",
                l.holder.owner, l.holder.job_id, l.holder.expires_ms
            ),
        });
    }
    if let Some(o) = &outcome {
        report.snapshot_after = Some(o.snapshot_id);
        report.warnings.extend(o.warnings.iter().cloned());
    }
    report.commit = outcome;
    report.record_buckets(chosen.iter().map(|r| r.metrics.clone()).collect());
    let rewrite_ms = opts
        .rewrite_ms
        .unwrap_or_else(|| chosen.iter().map(|r| r.run_ms).sum());
    report.phases = PhaseTimes {
        scan_plan_ms: set.plan_ms,
        lease_ms: set.lease_ms,
        rewrite_ms,
        commit_ms: t1 - t0,
        total_ms: set.plan_ms + set.lease_ms + rewrite_ms + (t1 - t0),
    };
    report.status = report.final_status();
    Ok(report)
}

/// Ends a job that will not be committed: deletes what the given results wrote and every
/// file of the job's tasks found by its name tag (attempts without a result, a commit that
/// died half-way), then releases the leases. Refused (`illegal-state`) for a job that was
/// committed. Files that cannot be deleted are reported; they are orphans that
/// `remove-orphan-files` reclaims.
pub fn abort_tasks(
    storage: &dyn Storage,
    set: &TaskSet,
    results: &[TaskResult],
) -> Result<AbortReport> {
    check_version(set.format_version, "the task set")?;
    id_bytes(&set.job_id, "the job id")?;
    let (table, _) = Table::load_for_job(storage, &set.table_path, &set.settings.options)?;
    if let Some(id) = committed_as(storage, &table, set)? {
        return Err(Error::illegal_state(format!(
            "job {} was committed as snapshot {id}; there is nothing to abort",
            set.job_id
        )));
    }
    let (mut paths, warnings) = job_files(storage, &table, set, true);
    for r in results.iter().filter(|r| r.job_id == set.job_id) {
        paths.extend(r.written_paths(&set.table_path));
    }
    // Sweeping a job whose results were never handed in finds the same files by their tag.
    paths.sort();
    paths.dedup();
    let (deleted, mut failed) = delete_paths(storage, &paths);
    failed.extend(warnings);
    let mut release_warnings = Vec::new();
    release_all(storage, &set.leases, &mut release_warnings);
    failed.extend(release_warnings);
    Ok(AbortReport {
        job_id: set.job_id.clone(),
        deleted,
        failed,
        leases_released: set.leases.len(),
    })
}

/// Extends the job's leases to `now_ms + ttl_ms`, as a driver does while its tasks run.
/// Each renewal is a new lease generation, so the set's leases are replaced by the renewed
/// ones (keep the returned set). A partition another job took meanwhile (the lease had
/// expired) is a `conflict`: that job may compact the same files, so this one must not
/// commit.
pub fn renew_leases(
    storage: &dyn Storage,
    set: &TaskSet,
    now_ms: i64,
    ttl_ms: i64,
) -> Result<TaskSet> {
    let table = crate::table::path::TablePaths::new(&set.table_path);
    let mut renewed = set.clone();
    for (i, l) in set.leases.iter().enumerate() {
        let key = l
            .path
            .rsplit('/')
            .next()
            .and_then(|name| name.rsplit_once('-'))
            .map(|(key, _)| key.to_string())
            .ok_or_else(|| Error::corrupt(Some(&l.path), "not a lease path"))?;
        let record = LeaseRecord {
            expires_ms: now_ms.saturating_add(ttl_ms),
            ..l.record.clone()
        };
        match lease::acquire(storage, &table, &key, &l.partition, record, now_ms)? {
            Ok(new) => renewed.leases[i] = new,
            Err(held) => {
                return Err(Error::conflict(format!(
                    "the lease of partition '{}' was taken by '{}' (job {}) after it expired",
                    l.partition, held.holder.owner, held.holder.job_id
                )))
            }
        }
    }
    Ok(renewed)
}

/// Every file of the job's tasks the storage lists under the job's tag: data and changelog
/// files in each task's output directories and deletion-vector files in `index/`; with
/// `metadata`, also the manifests a commit may have left. A listing that fails is a warning.
fn job_files(
    storage: &dyn Storage,
    table: &Table,
    set: &TaskSet,
    metadata: bool,
) -> (Vec<String>, Vec<String>) {
    let Ok(job_id) = id_bytes(&set.job_id, "the job id") else {
        return (Vec::new(), Vec::new());
    };
    let tag = job_tag(job_id);
    let mut prefixes = Vec::new();
    let mut dirs = BTreeSet::new();
    for t in &set.tasks {
        // A postpone task writes into every real bucket of its partition.
        let buckets = match t.bucket {
            crate::table::manifest::POSTPONE_BUCKET => 0..t.total_buckets.max(0),
            b => b..b + 1,
        };
        for b in buckets {
            for dir in table.paths.output_bucket_dirs(&t.partition_path, b) {
                dirs.insert(dir);
            }
        }
    }
    for dir in dirs {
        prefixes.push(format!("{dir}/data-{tag}"));
        prefixes.push(format!("{dir}/changelog-{tag}"));
    }
    if let Ok(p) = table.paths.index_file(&format!("index-{tag}"), "job") {
        prefixes.push(p);
    }
    if metadata {
        for name in ["manifest", "manifest-list", "index-manifest"] {
            if let Ok(p) = table.paths.manifest(&format!("{name}-{tag}"), "job") {
                prefixes.push(p);
            }
        }
    }
    let mut found = Vec::new();
    let mut warnings = Vec::new();
    for prefix in prefixes {
        match storage.list(&prefix) {
            Ok(list) => found.extend(list.into_iter().map(|o| o.path)),
            Err(e) if e.kind == StorageErrorKind::NotFound => {}
            Err(e) => warnings.push(format!("could not list '{prefix}': {e}")),
        }
    }
    (found, warnings)
}

/// The last component of a path.
fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Deletes `paths` (missing ones are fine); returns those deleted and those that failed.
fn delete_paths(storage: &dyn Storage, paths: &[String]) -> (Vec<String>, Vec<String>) {
    let mut deleted = Vec::new();
    let mut failed = Vec::new();
    for p in paths {
        match storage.delete(p) {
            Ok(()) => deleted.push(p.clone()),
            Err(e) if e.kind == StorageErrorKind::NotFound => {}
            Err(e) => failed.push(format!("{p}: {e}")),
        }
    }
    (deleted, failed)
}

/// Writes the kept planner state (the plan left out the partitions another job holds); a
/// failure is a warning (see [`job_state`]).
fn save_kept_state(
    storage: &dyn Storage,
    table: &Table,
    kept: &BTreeMap<String, job_state::PartitionState>,
    warnings: &mut Vec<String>,
) {
    for (key, s) in kept {
        if let Err(e) = job_state::save(storage, &table.paths, key, s) {
            warnings.push(format!(
                "could not keep the planner state of partition {key} for the next run: {e}"
            ));
        }
    }
}

/// Releases `leases`; a failure is a warning (the lease expires on its own).
pub(super) fn release_all(storage: &dyn Storage, leases: &[Lease], warnings: &mut Vec<String>) {
    for l in leases {
        if let Err(e) = lease::release(storage, l) {
            warnings.push(format!(
                "could not release the lease of '{}': {e} (it expires at {})",
                l.partition, l.record.expires_ms
            ));
        }
    }
}
