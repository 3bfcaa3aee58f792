//! Step 1 of a job: plan the table, take the leases, and cut the plan into tasks.

use std::collections::{BTreeMap, BTreeSet};

use super::{RealBucket, Task, TaskFile, TaskSet, TaskSettings, TASK_FORMAT_VERSION};
use crate::error::Result;
use crate::storage::Storage;
use crate::table::binary_row::BinaryRow;
use crate::table::ids::{to_hex, uuid_string};
use crate::table::index::DELETION_VECTORS_INDEX;
use crate::table::lease::{self, LeaseRecord};
use crate::table::plan::{plan_state, InternalPlan, PlanRequest, PlannedBucket, Work};
use crate::table::report::CompactOptions;
use crate::table::scan::{Table, TableState};

/// Plans the table at `table_path` as a job with `opts` (scope, full, expired-partition
/// test), takes the lease of every partition with work (a partition another job holds gets no
/// task and is reported), and returns the job's [`TaskSet`]: one task per bucket with work.
/// A table without work, or one the plan refuses, gets a set without tasks (committing it
/// keeps the planner state and reports the refusal). A failure releases the leases taken.
pub fn plan_tasks(
    storage: &dyn Storage,
    table_path: &str,
    opts: &CompactOptions<'_>,
) -> Result<TaskSet> {
    plan_tasks_on(storage, table_path, opts).map(|(set, _)| set)
}

/// [`plan_tasks`], also returning the table as the job loaded it (the in-process job runs
/// and commits on it without reading the schema again).
pub(crate) fn plan_tasks_on(
    storage: &dyn Storage,
    table_path: &str,
    opts: &CompactOptions<'_>,
) -> Result<(TaskSet, Table)> {
    let now = || opts.clock.map_or(0, |c| c());
    let t0 = now();
    let InternalPlan {
        state,
        plan,
        buckets,
        kept_state,
    } = plan_state(
        storage,
        table_path,
        &PlanRequest {
            full: opts.full,
            context: opts.context,
            scope: opts.scope.clone(),
        },
        opts.skip_expired_partitions,
    )?;
    let t1 = now();
    let job_hex = to_hex(&opts.job_id);
    let mut set = TaskSet {
        format_version: TASK_FORMAT_VERSION,
        job_id: job_hex.clone(),
        table_path: plan.table_path.clone(),
        planned_on: plan.snapshot_id,
        schema_id: state.table.schema.id,
        settings: TaskSettings {
            now_ms: opts.context.now_ms,
            full: opts.full,
            options: opts.scope.options.clone(),
            owner: opts.owner.clone(),
            commit_user: opts
                .commit_user
                .clone()
                .unwrap_or_else(|| format!("paimon-compact-{}", uuid_string(opts.job_id))),
            max_commit_retries: opts.max_commit_retries,
        },
        plan,
        leases: Vec::new(),
        leases_held_elsewhere: Vec::new(),
        kept_state,
        plan_ms: t1 - t0,
        lease_ms: 0,
        tasks: Vec::new(),
    };
    let Some(planned_on) = set.planned_on else {
        return Ok((set, state.table));
    };
    if !buckets.iter().any(|b| b.work.is_some()) {
        return Ok((set, state.table));
    }
    let leased_out = take_leases(storage, &state, &buckets, opts, &mut set)?;
    set.lease_ms = now() - t1;
    // The planner state of a partition another job holds is that job's to keep.
    for p in &leased_out {
        set.kept_state.remove(&lease::lease_key(&p.0));
    }
    for pb in buckets {
        let Some(work) = pb.work else { continue };
        if leased_out.contains(&pb.key.0) {
            continue;
        }
        let b = &state.buckets[&pb.key];
        let postpone = matches!(work, Work::Postpone(_));
        let index_entries = state
            .index_entries
            .iter()
            .filter(|e| {
                e.index_type == DELETION_VECTORS_INDEX
                    && e.partition == b.partition
                    && (postpone || e.bucket == b.bucket)
            })
            .cloned()
            .collect();
        let total_buckets = match &work {
            Work::Postpone(p) => p.buckets,
            _ => b.total_buckets,
        };
        let real_buckets = if postpone {
            state
                .buckets
                .iter()
                .filter(|((p, bucket), _)| p == &b.partition && *bucket >= 0)
                .map(|((_, bucket), rb)| RealBucket {
                    bucket: *bucket,
                    files: task_files(rb),
                })
                .collect()
        } else {
            Vec::new()
        };
        set.tasks.push(Task {
            format_version: TASK_FORMAT_VERSION,
            job_id: job_hex.clone(),
            index: set.tasks.len(),
            table_path: set.table_path.clone(),
            planned_on,
            schema_id: set.schema_id,
            now_ms: opts.context.now_ms,
            options: opts.scope.options.clone(),
            partition: b.partition.clone(),
            partition_path: b.partition_path.clone(),
            bucket: b.bucket,
            total_buckets,
            files: task_files(b),
            index_entries,
            work,
            verified_delete_counts: pb.verified_delete_counts,
            real_buckets,
        });
    }
    Ok((set, state.table))
}

/// A bucket's live files as a task carries them.
fn task_files(b: &crate::table::scan::BucketState) -> Vec<TaskFile> {
    b.files
        .iter()
        .map(|l| TaskFile {
            entry: l.entry.clone(),
            source: l.source.clone(),
            deletion_vector: l.deletion_vector.clone(),
        })
        .collect()
}

/// Takes the lease of every partition with work (none without a lease duration) into
/// `set.leases`; returns the partitions another job holds (recorded in
/// `set.leases_held_elsewhere`). A failure releases the leases taken so far.
fn take_leases(
    storage: &dyn Storage,
    state: &TableState,
    buckets: &[PlannedBucket],
    opts: &CompactOptions<'_>,
    set: &mut TaskSet,
) -> Result<BTreeSet<BinaryRow>> {
    let mut leased_out = BTreeSet::new();
    let Some(ttl) = opts.lease_ttl_ms else {
        return Ok(leased_out);
    };
    let mut work_partitions: BTreeMap<BinaryRow, String> = BTreeMap::new();
    for b in buckets.iter().filter(|b| b.work.is_some()) {
        let label = state.buckets[&b.key].partition_path.clone();
        work_partitions.insert(b.key.0.clone(), label);
    }
    for (partition, label) in &work_partitions {
        let record = LeaseRecord {
            owner: opts.owner.clone(),
            job_id: uuid_string(opts.job_id),
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
            Ok(Ok(l)) => set.leases.push(l),
            Ok(Err(held)) => {
                leased_out.insert(partition.clone());
                set.leases_held_elsewhere.push(held);
            }
            Err(e) => {
                super::finish::release_all(storage, &set.leases, &mut Vec::new());
                set.leases.clear();
                return Err(e);
            }
        }
    }
    Ok(leased_out)
}
