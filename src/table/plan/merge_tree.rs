//! Planning primary-key buckets: Paimon's merge-tree compaction manager per bucket (with the
//! level-0 delete counts verified from footers first), and the reasons a task cannot run here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::super::delete_count;
use super::super::job_state::PartitionState;
use super::super::lease;
use super::super::postpone;
use super::super::record_expiry::TableExpiry;
use super::super::scan::{planner_meta, BucketState, Table, TableState};
use super::{
    evolved_schema, level_stats, postpone_bucket_plan, BucketPlan, PlanRequest, PlannedAction,
    PlannedBucket, TablePlan, Work, POSTPONE_BUCKET,
};
use crate::error::Result;
use crate::options::ChangelogProducer;
use crate::plan::{MergeTreeCompactManager, MergeTreeDecision, TaskAction};
use crate::rewrite::foreign_data::DataFormat;
use crate::storage::Storage;

/// Plans every bucket of a primary-key table, keeping the gentle lookup counters in `kept`.
pub(super) fn plan_buckets(
    storage: &dyn Storage,
    table: &Table,
    state: &TableState,
    request: &PlanRequest,
    plan: &mut TablePlan,
    planned: &mut Vec<PlannedBucket>,
    kept: &mut BTreeMap<String, PartitionState>,
) -> Result<()> {
    let expiry = TableExpiry::of(table)?;
    // Partitions whose postpone files are replayed: their real buckets are compacted by the
    // same task, after the replay.
    let mut replayed: BTreeSet<&super::super::binary_row::BinaryRow> = BTreeSet::new();
    for (key, b) in &state.buckets {
        if b.bucket == POSTPONE_BUCKET {
            let (bp, work) = postpone_plan(storage, table, state, b, request)?;
            if work.is_some() {
                replayed.insert(&key.0);
            }
            plan.buckets.push(bp);
            planned.push(PlannedBucket {
                key: key.clone(),
                work,
                verified_delete_counts: BTreeMap::new(),
            });
        }
    }
    for (key, b) in &state.buckets {
        if b.bucket == POSTPONE_BUCKET || replayed.contains(&key.0) {
            continue;
        }
        let pkey = lease::lease_key(&key.0 .0);
        let gentle = kept
            .get(&pkey)
            .map(|s| s.gentle_counters.get(&b.bucket).copied().unwrap_or(0));
        let (bp, pb, counter) =
            plan_merge_tree_bucket(storage, table, b, request, gentle, expiry.as_ref())?;
        if let (Some(s), Some(c)) = (kept.get_mut(&pkey), counter) {
            s.gentle_counters.insert(b.bucket, c);
        }
        plan.buckets.push(bp);
        planned.push(PlannedBucket {
            key: key.clone(),
            ..pb
        });
    }
    Ok(())
}

/// Plans one primary-key bucket. `gentle`: the kept gentle lookup counter, when the table
/// keeps one; the counter after this decision comes back with the plan. `expiry`: the
/// table's record-level expiry, whose expired files the planner rewrites rather than keeps.
pub(in crate::table) fn plan_merge_tree_bucket(
    storage: &dyn Storage,
    table: &Table,
    b: &BucketState,
    request: &PlanRequest,
    gentle: Option<usize>,
    expiry: Option<&TableExpiry<'_>>,
) -> Result<(BucketPlan, PlannedBucket, Option<usize>)> {
    let mut verified = BTreeMap::new();
    let mut files = Vec::with_capacity(b.files.len());
    for l in &b.files {
        let mut m = planner_meta(table, l)?;
        if m.level.is_zero() && m.delete_row_count == Some(0) {
            let path = table.paths.live_data_file(
                &b.partition_path,
                b.bucket,
                &l.entry.file,
                &l.source,
            )?;
            let proven = if !l.entry.file.file_name.ends_with(".parquet") {
                None
            } else {
                delete_count::proven_no_retracts(storage, &path)?
            };
            m.delete_row_count = proven;
            verified.insert(m.file_name.clone(), proven);
        }
        files.push(Arc::new(m));
    }
    let mut manager = MergeTreeCompactManager::new(&table.options, files.clone())?;
    if let Some(expiry) = expiry {
        let expired = expiry.expired_files(storage, table, &b.files, request.context.now_ms)?;
        if !expired.is_empty() {
            manager = manager.with_expiry(Arc::new(move |f| expired.contains(&f.file_name)));
        }
    }
    if let Some(counter) = gentle {
        let mut strategy = manager.strategy().clone();
        if let crate::plan::CompactStrategy::ForceUpLevel0(f) = &mut strategy {
            f.counter = counter;
        }
        manager = manager.with_strategy(strategy);
    }
    let levels_before = level_stats(&files);
    let decision = manager.trigger(request.full, &request.context)?;
    let counter_after = gentle.map(|_| match manager.strategy() {
        crate::plan::CompactStrategy::ForceUpLevel0(f) => f.counter,
        crate::plan::CompactStrategy::Universal(_) => 0,
    });
    let mut actions = Vec::new();
    let mut blocked: Option<String> = None;
    let mut removed = 0;
    for a in &decision.task.actions {
        match a {
            TaskAction::Upgrade {
                file,
                to_level,
                strategy,
            } => {
                actions.push(PlannedAction::Upgrade {
                    file: file.file_name.clone(),
                    from_level: file.level.get(),
                    to_level: to_level.get(),
                    strategy: *strategy,
                });
            }
            TaskAction::Rewrite {
                output_level,
                sections,
                alone,
            } => {
                let names: Vec<String> = a.inputs().iter().map(|f| f.file_name.clone()).collect();
                removed += names.len();
                actions.push(PlannedAction::MergeRewrite {
                    output_level: output_level.get(),
                    files: names,
                    sections: sections.len(),
                    alone: *alone,
                });
            }
        }
    }
    if blocked.is_none() && !decision.task.actions.is_empty() {
        blocked = format_blocker(table, b, &decision);
    }
    if blocked.is_none() {
        blocked = mixed_schema_blocker(storage, table, b, &decision)?;
    }
    let bp = BucketPlan {
        partition: b.partition_path.clone(),
        bucket: b.bucket,
        files: files.len(),
        bytes: files.iter().map(|f| f.file_size).sum(),
        levels: levels_before,
        reason_text: decision.reason.to_string(),
        reason: decision.reason.clone(),
        files_removed: removed,
        actions,
        blocked: blocked.clone(),
        drop_delete: decision.drop_delete,
    };
    let work = (!decision.task.actions.is_empty() && blocked.is_none())
        .then(|| Work::MergeTree(Box::new(decision)));
    Ok((
        bp,
        PlannedBucket {
            key: (b.partition.clone(), b.bucket),
            work,
            verified_delete_counts: verified,
        },
        counter_after,
    ))
}

/// The plan of a partition's postpone bucket: its files replayed into the partition's real
/// buckets, or the reason they cannot be here (left as they are).
fn postpone_plan(
    storage: &dyn Storage,
    table: &Table,
    state: &TableState,
    b: &BucketState,
    request: &PlanRequest,
) -> Result<(BucketPlan, Option<Work>)> {
    let mut bp = postpone_bucket_plan(table, b)?;
    if b.files.is_empty() {
        return Ok((bp, None));
    }
    bp.blocked = postpone::blocker(storage, table, b)?;
    if bp.blocked.is_some() {
        return Ok((bp, None));
    }
    let buckets = postpone::bucket_count(table, state, &b.partition)?;
    let names: Vec<String> = postpone::replay_order(b)
        .iter()
        .map(|l| l.entry.file.file_name.clone())
        .collect();
    bp.reason = crate::plan::Reason::PostponeReplay {
        files: names.len(),
        buckets,
    };
    bp.reason_text = bp.reason.to_string();
    bp.files_removed = names.len();
    bp.actions = vec![PlannedAction::Replay {
        files: names,
        buckets,
    }];
    Ok((bp, Some(postpone::work(buckets, request))))
}

/// Why a merge-tree task cannot run here because of a file format, if it cannot: the merge
/// reads and writes Parquet, ORC and Avro (of the types Paimon writes to Avro), and a lookup
/// table's task may read any file of the bucket. Decided before anything is read, so a table
/// written with another format gets the reason instead of a misleading corrupt-footer error.
fn format_blocker(table: &Table, b: &BucketState, decision: &MergeTreeDecision) -> Option<String> {
    let rewrites = decision
        .task
        .actions
        .iter()
        .any(|a| matches!(a, TaskAction::Rewrite { .. }));
    let reads_all = table.options.need_lookup();
    // Avro files (`file.format.per.level = '0:avro'`) are read and written when every
    // column is flat (`rewrite::avro_data`, `rewrite::avro_output`); ORC files of every type.
    let avro_ok = avro_supported(table);
    if rewrites || reads_all {
        let max_level = table.options.num_levels.saturating_sub(1);
        let outputs = decision.task.actions.iter().filter_map(|a| match a {
            TaskAction::Rewrite { output_level, .. } => Some(output_level.get()),
            TaskAction::Upgrade { to_level, .. } if reads_all => Some(to_level.get()),
            TaskAction::Upgrade { .. } => None,
        });
        for level in outputs.chain(reads_all.then_some(max_level)) {
            let changelog_too = table.options.changelog_producer != ChangelogProducer::None;
            for changelog in [false, true].into_iter().filter(|c| !c || changelog_too) {
                let format = table.options.format_for(level, changelog);
                let why = match format {
                    "parquet" | "orc" => continue,
                    "avro" if avro_ok => continue,
                    "avro" => "and the table has a column type Paimon does not write to Avro",
                    _ => "which this build does not write",
                };
                return Some(format!(
                    "unsupported: level {level} is written as '{format}' (file.format / \
                     file.format.per.level / changelog-file.format) {why}; the bucket is left \
                     as it is"
                ));
            }
        }
    }
    let inputs: BTreeSet<String> = decision
        .task
        .actions
        .iter()
        .flat_map(|a| a.inputs())
        .map(|f| f.file_name.clone())
        .collect();
    b.files
        .iter()
        .map(|l| &l.entry.file.file_name)
        .filter(|name| reads_all || inputs.contains(name.as_str()))
        .find(|name| match DataFormat::of(name) {
            Some(DataFormat::Parquet | DataFormat::Orc) => false,
            Some(DataFormat::Avro) => !avro_ok,
            None => true,
        })
        .map(|name| {
            let why = if name.ends_with(".avro") {
                "is an Avro file with a column type Paimon does not write to Avro, which this \
                 build does not read"
            } else {
                "is not Parquet, ORC or Avro, the formats this build reads"
            };
            format!("unsupported: file '{name}' {why}; the bucket is left as it is")
        })
}

/// Whether every column of `table` is of a type the Avro reader and writer handle: the
/// types Paimon writes to Avro, flat and nested (timestamps above precision 6, which
/// Paimon's writer refuses, are refused when a file is written).
pub(crate) fn avro_supported(table: &Table) -> bool {
    table.schema.fields.iter().all(|f| {
        f.data_type
            .to_arrow()
            .is_ok_and(|t| crate::rewrite::avro_data::is_readable(&t))
    })
}

/// A merge reads its inputs (and, for lookup tables, the bucket's other files) as rows of the
/// latest schema version, mapping files of versions with other fields onto it by field id:
/// that needs the latest schema in Arrow form, which this build has for every type but
/// VARIANT and BLOB. Files of versions with the latest fields are read as they are.
fn mixed_schema_blocker(
    storage: &dyn Storage,
    table: &Table,
    b: &BucketState,
    decision: &MergeTreeDecision,
) -> Result<Option<String>> {
    let merges = decision.task.actions.iter().any(|a| match a {
        TaskAction::Rewrite { .. } => true,
        TaskAction::Upgrade { .. } => table.options.need_lookup(),
    });
    let Some(unsupported) = table
        .schema
        .fields
        .iter()
        .find_map(|f| f.data_type.to_arrow().err().map(|e| (f, e)))
    else {
        return Ok(None);
    };
    if !merges {
        return Ok(None);
    }
    for l in &b.files {
        let f = &l.entry.file;
        if evolved_schema(storage, table, f.schema_id)?.is_some() {
            return Ok(Some(format!(
                "file '{}' was written under schema version {} and mapping it onto the latest \
                 needs column '{}' as Arrow: {}",
                f.file_name, f.schema_id, unsupported.0.name, unsupported.1
            )));
        }
    }
    Ok(None)
}
