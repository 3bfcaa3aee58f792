//! One job's tasks on threads of this process, committed once: every `compact` (`--parallelism
//! N`, one thread included, so that the driver renews the leases while the tasks run). The job
//! is planned into tasks ([`Compactor::plan_tasks`]), `N` workers
//! take tasks from a shared counter and run them ([`Compactor::run_task`]: natively on the
//! thread, or in a component instance of the thread's own), and the results are committed as
//! one COMPACT snapshot ([`Compactor::commit_tasks`]). Meanwhile the driver renews the job's
//! leases every third of their time to live, counted from the job's clock reading, which the
//! leases run from (not from the end of the plan).
//!
//! Each task names its outputs after the job and its index (the attempt derived from the job
//! id, as the one-thread job does), so the files, the snapshot and the report are those of
//! `--parallelism 1`; only the phase times differ. Memory: each worker holds one bucket's
//! rewrite at a time, so the peak is about `N` times one bucket's (benches/README.md,
//! "Parallel buckets").
//!
//! A task that fails stops the others from starting; the job is then aborted
//! ([`Compactor::abort_tasks`]: every file the tasks wrote is deleted, the leases released)
//! and the first failure (by task index) is returned. A job that fails at any step leaves no
//! lease behind, even when the component was stopped half-way ([`crate::cleanup`]).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use paimon_compact::maintenance::maintain::JobReport;
use paimon_compact::storage::Storage;
use paimon_compact::table::fanout::{attempt_for, job_id_of, TaskResult};

use crate::cleanup::release_job_leases;
use crate::engine::{Compactor, TableJob};
use crate::error::HostError;
use crate::storage::{Progress, ProgressFn};

/// The default parallelism: the cores this process may use.
pub fn default_parallelism() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Compacts the table with `parallelism` workers (see the module documentation).
pub fn compact_parallel(
    compactor: &Compactor,
    storage: Arc<dyn Storage>,
    table_path: &str,
    job: &TableJob,
    parallelism: usize,
    progress: Option<ProgressFn>,
) -> Result<JobReport, HostError> {
    let result = run_job(
        compactor,
        storage.clone(),
        table_path,
        job,
        parallelism,
        progress,
    );
    if result.is_err() {
        // Whichever step failed: the core releases the leases on the errors it returns, but
        // a component stopped while planning, in a task or in the commit did not
        // (crate::cleanup). Releasing what is already gone is a listing of the lease
        // directory, nothing more.
        let _ = release_job_leases(&*storage, table_path, &job.job_id);
    }
    result
}

/// How often the driver renews leases of `ttl_ms`: every third of it, so that one late or
/// failed renewal still leaves time for the next.
fn renewal_interval(ttl_ms: i64) -> Duration {
    Duration::from_millis(u64::try_from((ttl_ms / 3).max(1)).unwrap_or(1))
}

/// How long after `now_ms` the first renewal of leases of `ttl_ms` is due, for leases taken at
/// the job's clock reading `job_now_ms`, before the plan: a third of the TTL after that reading
/// (at once when the plan took longer), not a third after the plan, which a plan longer than
/// two thirds of the TTL would put after the leases lapsed. Never later than one interval.
fn first_renewal_in(job_now_ms: i64, ttl_ms: i64, now_ms: i64) -> Duration {
    // A job clock ahead of this one counts as no time spent.
    let spent = u64::try_from(now_ms.saturating_sub(job_now_ms)).unwrap_or(0);
    renewal_interval(ttl_ms).saturating_sub(Duration::from_millis(spent))
}

/// Plans, runs and commits the job; on a failure, aborts what the tasks wrote (the leases are
/// `compact_parallel`'s business).
fn run_job(
    compactor: &Compactor,
    storage: Arc<dyn Storage>,
    table_path: &str,
    job: &TableJob,
    parallelism: usize,
    progress: Option<ProgressFn>,
) -> Result<JobReport, HostError> {
    let set = compactor.plan_tasks(storage.clone(), table_path, job)?;
    let job_id = job_id_of(&set)?;
    let tasks = set.tasks.clone();
    let total = tasks.len();
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<(usize, Result<TaskResult, HostError>)>> = Mutex::new(Vec::new());
    let progress = Mutex::new(progress);
    let current = Mutex::new(set);
    let renew_error: Mutex<Option<HostError>> = Mutex::new(None);
    let (stop, stopped) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let renewing = current.lock().is_ok_and(|c| !c.leases.is_empty());
        if let Some(ttl) = job.lease_ttl_ms.filter(|&t| t > 0 && renewing) {
            let (storage, current, renew_error, failed) =
                (storage.clone(), &current, &renew_error, &failed);
            s.spawn(move || {
                let mut wait = first_renewal_in(job.now_ms, ttl, crate::clock::now().0);
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(wait) {
                    wait = renewal_interval(ttl);
                    let Ok(set) = current.lock().map(|c| c.clone()) else {
                        return;
                    };
                    match compactor.renew_leases(storage.clone(), &set, crate::clock::now().0, ttl)
                    {
                        Ok(renewed) => {
                            if let Ok(mut c) = current.lock() {
                                *c = renewed;
                            }
                        }
                        Err(e) => {
                            failed.store(true, Ordering::SeqCst);
                            if let Ok(mut r) = renew_error.lock() {
                                *r = Some(e);
                            }
                            return;
                        }
                    }
                }
            });
        }
        let workers: Vec<_> = (0..parallelism.clamp(1, total.max(1)))
            .map(|_| {
                let storage = storage.clone();
                let (tasks, next, done, failed, results, progress) =
                    (&tasks, &next, &done, &failed, &results, &progress);
                s.spawn(move || loop {
                    if failed.load(Ordering::SeqCst) {
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(task) = tasks.get(i) else { return };
                    let r = compactor.run_task(storage.clone(), task, attempt_for(job_id, i), None);
                    if r.is_err() {
                        failed.store(true, Ordering::SeqCst);
                    }
                    let finished = done.fetch_add(1, Ordering::SeqCst) + 1;
                    if let Ok(mut p) = progress.lock() {
                        if let Some(p) = p.as_mut() {
                            p(Progress {
                                phase: "tasks".into(),
                                done: finished as u64,
                                total: total as u64,
                                unit: "tasks".into(),
                                message: format!(
                                    "{finished} of {total} tasks done (task {i}: {})",
                                    if r.is_ok() { "ok" } else { "failed" }
                                ),
                            });
                        }
                    }
                    if let Ok(mut all) = results.lock() {
                        all.push((i, r));
                    }
                })
            })
            .collect();
        for w in workers {
            let _ = w.join();
        }
        let _ = stop.send(());
    });
    let rewrite_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    let set = current
        .into_inner()
        .map_err(|_| HostError::Trap("a task thread panicked".into()))?;
    let mut results = results
        .into_inner()
        .map_err(|_| HostError::Trap("a task thread panicked".into()))?;
    results.sort_by_key(|(i, _)| *i);
    let mut ok = Vec::with_capacity(results.len());
    let mut first_error = renew_error.into_inner().ok().flatten();
    for (_, r) in results {
        match r {
            Ok(r) => ok.push(r),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if first_error.is_none() && ok.len() != total {
        first_error = Some(HostError::Trap("a task thread panicked".into()));
    }
    if let Some(e) = first_error {
        // Best effort: what cannot be deleted stays an orphan for remove-orphan-files. A
        // component stopped by its limit would likely be stopped again aborting, so the
        // native engine aborts in its place (the same core, no limits to run into).
        let aborted = compactor.abort_tasks(storage.clone(), &set, &ok);
        if aborted.is_err() && !matches!(compactor, Compactor::Native) {
            let _ = Compactor::Native.abort_tasks(storage.clone(), &set, &ok);
        }
        return Err(e);
    }
    // All or nothing, as one-thread `compact`: no one will retry this commit.
    let commit = paimon_compact::api::CommitOptions {
        rewrite_ms: Some(rewrite_ms),
        all_or_nothing: true,
    };
    let committed = compactor.commit_tasks(storage.clone(), &set, &ok, job, &commit);
    if let Err(e) = &committed {
        if e.stopped_the_component() {
            // Stopped mid-commit: storage is final (HostError::stopped_the_component), so
            // the native abort can tell whether the commit happened. It refuses a committed
            // job and otherwise deletes what the tasks wrote. After a core error whose
            // outcome is unknown the files stay (orphans, if the commit did not land).
            let _ = Compactor::Native.abort_tasks(storage.clone(), &set, &ok);
        }
    }
    committed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_renewal_counts_from_the_job_s_clock_reading() {
        let ttl = 60_000;
        let every = Duration::from_millis(20_000);
        // A plan of 5 s: due 15 s later.
        assert_eq!(
            first_renewal_in(1_000, ttl, 6_000),
            Duration::from_millis(15_000)
        );
        // A plan as long as the interval or longer, up to past the TTL: due at once.
        assert_eq!(first_renewal_in(1_000, ttl, 21_000), Duration::ZERO);
        assert_eq!(first_renewal_in(1_000, ttl, 90_000), Duration::ZERO);
        // A job clock ahead of this one: never more than one interval.
        assert_eq!(first_renewal_in(50_000, ttl, 1_000), every);
        // Extreme readings neither overflow nor panic.
        assert_eq!(first_renewal_in(i64::MAX, ttl, i64::MIN), every);
        assert_eq!(first_renewal_in(i64::MIN, ttl, i64::MAX), Duration::ZERO);
        assert_eq!(renewal_interval(1), Duration::from_millis(1));
        assert_eq!(
            renewal_interval(i64::MAX),
            Duration::from_millis((i64::MAX / 3) as u64)
        );
    }
}
