//! A compaction job over a whole table, in five phases, each its own function:
//!
//! 1. **plan** — scan the table and plan every partition and bucket with the planner
//!    ([`super::plan`]; [`super::plan::plan_table`] stops after this phase and only reads);
//! 2. **lease** — take the lease of every partition with work: one job per partition, and a
//!    partition another job holds is skipped and reported;
//! 3. **run** — run the tasks through the rewriters ([`super::run`]);
//! 4. **commit** — one COMPACT snapshot, with conflict check and bounded rebase
//!    ([`super::commit`]);
//! 5. **cleanup** — keep the planner state for the next run and release the leases; after a
//!    failure, delete every file the job wrote.
//!
//! [`compact_table`] is all or nothing: any failure before the snapshot exists deletes every
//! file the job wrote (data, deletion vectors, manifests), so the table is exactly as before.
//! Metrics come back in a [`CompactReport`] (delta-rs style), with the time per phase when the
//! caller passes a clock (the core reads none).

use std::collections::{BTreeMap, BTreeSet};

use super::binary_row::BinaryRow;
use super::commit::{self, CommitDelta, CommitOutcome, CommitSettings, WrittenFiles};
use super::ids::{uuid_string, IdGen};
use super::job_state::{self, PartitionState};
use super::lease::{self, Lease, LeaseHeld, LeaseRecord};
use super::plan::{plan_state, InternalPlan, PlanRequest, PlannedBucket};
use super::report::{BucketMetrics, CompactOptions, CompactReport, PhaseTimes, SkippedBucket};
use super::run::run_buckets;
use super::scan::{Table, TableState};
use crate::error::{Error, Result};
use crate::io::ToIo;
use crate::storage::Storage;

/// Compacts the table at `table_path`; see the module documentation.
/// `storage`: see [`crate::io`].
pub fn compact_table(
    storage: &dyn ToIo,
    table_path: &str,
    opts: &CompactOptions<'_>,
) -> Result<CompactReport> {
    let io = storage.to_io();
    let storage = io.storage.as_ref();
    let now = || opts.clock.map_or(0, |c| c());
    let t0 = now();
    let InternalPlan {
        state,
        plan,
        buckets,
        kept_state,
    } = plan_phase(storage, table_path, opts)?;
    let t1 = now();
    let job_id = uuid_string(opts.job_id);
    let mut report = CompactReport::for_plan(&plan, job_id.clone(), opts.full);
    let (Some(planned_on), true) = (plan.snapshot_id, buckets.iter().any(|b| b.work.is_some()))
    else {
        report.phases.scan_plan_ms = t1 - t0;
        report.phases.total_ms = t1 - t0;
        save_kept_state(
            storage,
            &state.table,
            &kept_state,
            &BTreeSet::new(),
            &mut report.warnings,
        );
        report.status = report.final_status();
        return Ok(report);
    };

    let leases = lease_phase(storage, &state, &buckets, opts, &job_id)?;
    let t2 = now();

    let mut ids = IdGen::new(opts.job_id);
    let mut written = WrittenFiles::default();
    let mut t3 = t2;
    let result = (|| -> Result<(Option<CommitOutcome>, Vec<BucketMetrics>)> {
        let (delta, metrics) = run_buckets(
            &io,
            &state,
            &buckets,
            &leases.leased_out,
            opts,
            &mut ids,
            &mut written,
        )?;
        t3 = now();
        let outcome = commit_phase(
            storage,
            &state.table,
            planned_on,
            &delta,
            opts,
            &job_id,
            &mut ids,
            &mut written,
        )?;
        Ok((outcome, metrics))
    })();
    let t4 = now();
    let (outcome, metrics) = match result {
        Ok(r) => r,
        Err(e) => return Err(clean_up_failed_job(storage, e, &mut written, &leases.taken)),
    };

    clean_up(storage, &state.table, &kept_state, leases, &mut report);
    if let Some(o) = &outcome {
        report.snapshot_after = Some(o.snapshot_id);
        report.warnings.extend(o.warnings.iter().cloned());
    }
    report.commit = outcome;
    report.record_buckets(metrics);
    report.phases = PhaseTimes {
        scan_plan_ms: t1 - t0,
        lease_ms: t2 - t1,
        rewrite_ms: t3 - t2,
        commit_ms: t4 - t3,
        total_ms: t4 - t0,
    };
    report.status = report.final_status();
    Ok(report)
}

/// Phase 1: the job's plan (its scope, forced full compaction and expired-partition test).
fn plan_phase(
    storage: &dyn Storage,
    table_path: &str,
    opts: &CompactOptions<'_>,
) -> Result<InternalPlan> {
    plan_state(
        storage,
        table_path,
        &PlanRequest {
            full: opts.full,
            context: opts.context,
            scope: opts.scope.clone(),
        },
        opts.skip_expired_partitions,
    )
}

/// The partitions' leases a job took, and those another job holds.
struct Leases {
    taken: Vec<Lease>,
    /// Partitions another job holds: their buckets are not run.
    leased_out: BTreeSet<BinaryRow>,
    held_elsewhere: Vec<LeaseHeld>,
}

/// Phase 2: takes the lease of every partition with work (none without a lease duration).
/// A failure releases the leases taken so far.
fn lease_phase(
    storage: &dyn Storage,
    state: &TableState,
    buckets: &[PlannedBucket],
    opts: &CompactOptions<'_>,
    job_id: &str,
) -> Result<Leases> {
    let mut leases = Leases {
        taken: Vec::new(),
        leased_out: BTreeSet::new(),
        held_elsewhere: Vec::new(),
    };
    let Some(ttl) = opts.lease_ttl_ms else {
        return Ok(leases);
    };
    let mut work_partitions: BTreeMap<BinaryRow, String> = BTreeMap::new();
    for b in buckets.iter().filter(|b| b.work.is_some()) {
        let label = state.buckets[&b.key].partition_path.clone();
        work_partitions.insert(b.key.0.clone(), label);
    }
    for (partition, label) in &work_partitions {
        let record = LeaseRecord {
            owner: opts.owner.clone(),
            job_id: job_id.to_string(),
            acquired_ms: opts.context.now_ms,
            expires_ms: opts.context.now_ms.saturating_add(ttl),
        };
        let got = lease::acquire(
            storage,
            &state.table.paths,
            &lease::lease_key(&partition.0),
            label,
            record,
            opts.context.now_ms,
        );
        match got {
            Ok(Ok(l)) => leases.taken.push(l),
            Ok(Err(held)) => {
                leases.leased_out.insert(partition.clone());
                leases.held_elsewhere.push(held);
            }
            Err(e) => {
                release_all(storage, &leases.taken, &mut Vec::new());
                return Err(e);
            }
        }
    }
    Ok(leases)
}

/// Phase 4: commits the run's delta as one COMPACT snapshot on top of `planned_on` (rebased
/// if another commit won the next id); `None` when the run changed nothing.
#[allow(
    clippy::too_many_arguments,
    reason = "what the commit reads and writes, passed on to commit_with_backoff"
)]
fn commit_phase(
    storage: &dyn Storage,
    table: &Table,
    planned_on: i64,
    delta: &CommitDelta,
    opts: &CompactOptions<'_>,
    job_id: &str,
    ids: &mut IdGen,
    written: &mut WrittenFiles,
) -> Result<Option<CommitOutcome>> {
    if delta.is_empty() {
        return Ok(None);
    }
    let settings = CommitSettings {
        kind: super::snapshot::CommitKind::Compact,
        commit_user: opts
            .commit_user
            .clone()
            .unwrap_or_else(|| format!("paimon-compact-{job_id}")),
        now_ms: opts.context.now_ms,
        max_retries: opts.max_commit_retries,
        jitter_seed: u64::from_le_bytes(opts.job_id[..8].try_into().unwrap_or_default()),
        merge_manifests: true,
        commit_identifier: i64::MAX,
    };
    let request = commit::CommitRequest {
        table,
        planned_on: Some(planned_on),
        delta,
        settings: &settings,
        sleep: opts.sleep,
    };
    commit::commit_with_backoff(storage, &request, ids, written).map(Some)
}

/// Phase 5 after a commit (or a run with nothing to commit): keeps the planner state of the
/// partitions this job planned, releases the leases, and reports the partitions another job
/// holds as skipped.
fn clean_up(
    storage: &dyn Storage,
    table: &Table,
    kept_state: &BTreeMap<String, PartitionState>,
    leases: Leases,
    report: &mut CompactReport,
) {
    let held_elsewhere: BTreeSet<String> = leases
        .leased_out
        .iter()
        .map(|p| lease::lease_key(&p.0))
        .collect();
    save_kept_state(
        storage,
        table,
        kept_state,
        &held_elsewhere,
        &mut report.warnings,
    );
    release_all(storage, &leases.taken, &mut report.warnings);
    report.leases_held_elsewhere = leases.held_elsewhere;
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
}

/// Phase 5 after a failure: deletes every file the job wrote (unless the commit's outcome is
/// unknown: the snapshot may exist and reference them) and releases the leases. Returns the
/// error, naming the files that could not be deleted.
fn clean_up_failed_job(
    storage: &dyn Storage,
    e: Error,
    written: &mut WrittenFiles,
    leases: &[Lease],
) -> Error {
    let mut e = e;
    if !e.commit_may_have_happened() {
        let failed = written.delete_all(storage);
        if !failed.is_empty() {
            e.message = format!(
                "{} (cleanup could not delete: {})",
                e.message,
                failed.join("; ")
            );
        }
    }
    let mut warnings = Vec::new();
    release_all(storage, leases, &mut warnings);
    e
}

/// Writes the kept planner state of the partitions this job planned (not those another job
/// holds), after its commit; a failure is a warning (see [`job_state`]).
fn save_kept_state(
    storage: &dyn Storage,
    table: &Table,
    kept: &BTreeMap<String, PartitionState>,
    held_elsewhere: &BTreeSet<String>,
    warnings: &mut Vec<String>,
) {
    for (key, s) in kept {
        if held_elsewhere.contains(key) {
            continue;
        }
        if let Err(e) = job_state::save(storage, &table.paths, key, s) {
            warnings.push(format!(
                "could not keep the planner state of partition {key} for the next run: {e}"
            ));
        }
    }
}

/// Releases `leases`; a failure is a warning (the lease expires on its own).
fn release_all(storage: &dyn Storage, leases: &[Lease], warnings: &mut Vec<String>) {
    for l in leases {
        if let Err(e) = lease::release(storage, l) {
            warnings.push(format!(
                "could not release the lease of '{}': {e} (it expires at {})",
                l.partition, l.record.expires_ms
            ));
        }
    }
}
