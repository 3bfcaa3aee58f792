//! Planning append buckets: bucketed tables by Paimon's bucketed append compaction, and
//! unaware-bucket tables (`bucket = -1`) by the append compaction coordinator, which packs
//! small files across the partition's files.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::super::binary_row::BinaryRow;
use super::super::job_state::{self, CoordinatorAge, PartitionState};
use super::super::lease;
use super::super::scan::{BucketState, Table, TableState};
use super::{
    evolved_schema, indices_of, level_stats, BucketPlan, PlanRequest, PlannedAction, PlannedBucket,
    TablePlan, Work,
};
use crate::error::Result;
use crate::meta::CompactionFile;
use crate::plan::{
    AppendCompactCoordinator, BucketedAppendCompactManager, CoordinatorFile, DeletionFileRef,
    Reason,
};
use crate::rewrite::foreign_data::DataFormat;
use crate::storage::Storage;

/// Plans every bucket of a bucketed append table.
pub(super) fn plan_bucketed(
    storage: &dyn Storage,
    table: &Table,
    state: &TableState,
    request: &PlanRequest,
    plan: &mut TablePlan,
    planned: &mut Vec<PlannedBucket>,
) -> Result<()> {
    for (key, b) in &state.buckets {
        let files = b.planner_files(table)?;
        let mut manager = BucketedAppendCompactManager::new(&table.options, files.clone());
        let decision = if request.full {
            manager.trigger_full()?
        } else {
            manager.pick_auto()
        };
        let idx = indices_of(b, &decision.files);
        let tasks = if idx.is_empty() { vec![] } else { vec![idx] };
        let (bp, work) = append_bucket_plan(storage, table, b, &files, decision.reason, tasks)?;
        plan.buckets.push(bp);
        planned.push(PlannedBucket {
            key: key.clone(),
            work,
            verified_delete_counts: BTreeMap::new(),
        });
    }
    Ok(())
}

/// Why an append task cannot run here, if it cannot.
fn append_blocker(
    storage: &dyn Storage,
    table: &Table,
    b: &BucketState,
    task: &[usize],
) -> Result<Option<String>> {
    let format = table.options.file_format_for_level(0);
    let avro_ok = super::merge_tree::avro_supported(table);
    if !(matches!(format, "parquet" | "orc") || format == "avro" && avro_ok) {
        return Ok(Some(format!(
            "the append rewriter writes Parquet, ORC and Avro (of the types Paimon writes to \
             Avro); the table's file.format is '{format}'"
        )));
    }
    // Files that need schema evolution, and ORC and Avro files (read through a Parquet
    // copy), are read through the latest schema's Arrow form.
    let no_arrow_form = crate::types::arrow_schema(&table.schema.fields).err();
    for &i in task {
        let f = &b.files[i].entry.file;
        let why = match DataFormat::of(&f.file_name) {
            Some(DataFormat::Parquet) => None,
            Some(DataFormat::Orc) => no_arrow_form.as_ref().map(|e| e.to_string()),
            Some(DataFormat::Avro) if avro_ok => no_arrow_form.as_ref().map(|e| e.to_string()),
            Some(DataFormat::Avro) => {
                Some("an Avro file with a column type Paimon does not write to Avro".to_string())
            }
            None => Some("not Parquet, ORC or Avro".to_string()),
        };
        if let Some(why) = why {
            return Ok(Some(format!(
                "file '{}' cannot be read by this build: {why}",
                f.file_name
            )));
        }
        if let Some(e) = &no_arrow_form {
            if evolved_schema(storage, table, f.schema_id)?.is_some() {
                return Ok(Some(format!(
                    "file '{}' was written under schema version {} and the latest schema cannot \
                     be written by this build: {e}",
                    f.file_name, f.schema_id
                )));
            }
        }
    }
    Ok(None)
}

/// The plan of an append bucket whose tasks (indices into its files) are `tasks`.
fn append_bucket_plan(
    storage: &dyn Storage,
    table: &Table,
    b: &BucketState,
    files: &[Arc<CompactionFile>],
    reason: Reason,
    tasks: Vec<Vec<usize>>,
) -> Result<(BucketPlan, Option<Work>)> {
    let mut blocked = None;
    for t in &tasks {
        blocked = append_blocker(storage, table, b, t)?;
        if blocked.is_some() {
            break;
        }
    }
    let actions: Vec<PlannedAction> = tasks
        .iter()
        .map(|t| PlannedAction::AppendRewrite {
            files: t
                .iter()
                .map(|&i| b.files[i].entry.file.file_name.clone())
                .collect(),
            bytes: t.iter().map(|&i| files[i].file_size).sum(),
        })
        .collect();
    let bp = BucketPlan {
        partition: b.partition_path.clone(),
        bucket: b.bucket,
        files: files.len(),
        bytes: files.iter().map(|f| f.file_size).sum(),
        levels: level_stats(files),
        reason_text: reason.to_string(),
        reason,
        files_removed: tasks.iter().map(Vec::len).sum(),
        actions,
        blocked: blocked.clone(),
        drop_delete: false,
    };
    let work = (!tasks.is_empty() && blocked.is_none()).then_some(Work::Append(tasks));
    Ok((bp, work))
}

/// Files packed together by the coordinator, and why.
type PickedTask = (Vec<Arc<CompactionFile>>, Reason);

/// Plans every bucket of an unaware-bucket append table through the coordinator.
pub(super) fn plan_coordinator(
    storage: &dyn Storage,
    table: &Table,
    state: &TableState,
    request: &PlanRequest,
    plan: &mut TablePlan,
    planned: &mut Vec<PlannedBucket>,
    kept: &mut BTreeMap<String, PartitionState>,
) -> Result<()> {
    let mut coordinator = AppendCompactCoordinator::new(&table.options)?;
    let mut by_partition: BTreeMap<String, (BinaryRow, i32)> = BTreeMap::new();
    for (key, b) in &state.buckets {
        let files = b.planner_files(table)?;
        let pkey = lease::lease_key(&key.0 .0);
        by_partition.insert(format!("{pkey}/{}", b.bucket), key.clone());
        coordinator.notify(
            &format!("{pkey}/{}", b.bucket),
            files.iter().zip(&b.files).map(|(f, l)| CoordinatorFile {
                file: f.clone(),
                deletion_file: l.deletion_vector.as_ref().map(|(idx, m)| DeletionFileRef {
                    index_file: idx.clone(),
                    cardinality: m.cardinality.map(|c| c.max(0) as u64),
                }),
            }),
        );
    }
    // A partition whose candidates are the ones the last run counted received no new file
    // since: its age goes on from there instead of restarting (see `job_state`).
    let mut fingerprints: BTreeMap<String, String> = BTreeMap::new();
    for (pkey, key) in &by_partition {
        let b = &state.buckets[key];
        let files = b.planner_files(table)?;
        let print = job_state::fingerprint(
            files
                .iter()
                .filter(|f| f.file_size < table.options.compaction_file_size)
                .map(|f| f.file_name.as_str()),
        );
        let lease_key = lease::lease_key(&key.0 .0);
        if let Some(age) = kept
            .get(&lease_key)
            .and_then(|s| s.coordinator.as_ref())
            .filter(|c| c.files == print)
        {
            coordinator.restore_age(pkey, age.age);
        }
        fingerprints.insert(pkey.clone(), print);
    }
    let mut tasks: BTreeMap<String, Vec<PickedTask>> = BTreeMap::new();
    for t in coordinator.plan() {
        tasks
            .entry(t.partition.clone())
            .or_default()
            .push((t.files, t.reason));
    }
    for (pkey, key) in &by_partition {
        if let Some(s) = kept.get_mut(&lease::lease_key(&key.0 .0)) {
            // Kept only while the coordinator still tracks the partition with no task; a
            // task compacts its files, so the next run sees new ones and starts afresh.
            s.coordinator = match (coordinator.partition_state(pkey), tasks.contains_key(pkey)) {
                (Some((_, age)), false) => fingerprints.get(pkey).map(|f| CoordinatorAge {
                    age,
                    files: f.clone(),
                }),
                _ => None,
            };
        }
        let b = &state.buckets[key];
        let files = b.planner_files(table)?;
        let mut picked: Vec<PickedTask> = tasks.remove(pkey).unwrap_or_default();
        if request.full {
            // A forced full compaction also takes the small files that did not fill a bin.
            let taken: BTreeSet<&str> = picked
                .iter()
                .flat_map(|(fs, _)| fs.iter().map(|f| f.file_name.as_str()))
                .collect();
            let rest: Vec<Arc<CompactionFile>> = files
                .iter()
                .zip(&b.files)
                .filter(|(f, l)| {
                    !taken.contains(f.file_name.as_str())
                        && coordinator.should_compact(&CoordinatorFile {
                            file: (*f).clone(),
                            deletion_file: l.deletion_vector.as_ref().map(|(i, m)| {
                                DeletionFileRef {
                                    index_file: i.clone(),
                                    cardinality: m.cardinality.map(|c| c.max(0) as u64),
                                }
                            }),
                        })
                })
                .map(|(f, _)| f.clone())
                .collect();
            let needed = if table.options.deletion_vectors_enabled {
                1
            } else {
                2
            };
            if rest.len() >= needed {
                let n = rest.len();
                picked.push((rest, Reason::CoordinatorFull { files: n }));
            }
        }
        let reason = match picked.first() {
            Some((_, r)) => r.clone(),
            None => Reason::Idle(crate::plan::Idle::Empty),
        };
        let idx: Vec<Vec<usize>> = picked.iter().map(|(fs, _)| indices_of(b, fs)).collect();
        let (mut bp, work) = append_bucket_plan(storage, table, b, &files, reason, idx)?;
        if picked.is_empty() {
            bp.reason_text = format!(
                "nothing to pack: {} small file(s) wait for more (compaction.min.file-num = {}, \
                 or two target files' worth)",
                files
                    .iter()
                    .filter(|f| f.file_size < table.options.compaction_file_size)
                    .count(),
                table.options.min_file_num
            );
        }
        plan.buckets.push(bp);
        planned.push(PlannedBucket {
            key: key.clone(),
            work,
            verified_delete_counts: BTreeMap::new(),
        });
    }
    Ok(())
}
