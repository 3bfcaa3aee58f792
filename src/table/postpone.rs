//! Postpone-bucket compaction (`bucket = -2`, compaction.md §11.2): the job that
//! makes a postpone table's new rows visible. Writers of such a table put every row, unsorted,
//! in its partition's `bucket-postpone` directory, which readers skip; this job replays them
//! into the partition's real buckets and compacts those, as Paimon's dedicated compaction does
//! for these tables, all in the job's one COMPACT snapshot:
//!
//! 1. **Bucket count** (at planning): a partition that has real buckets keeps their count
//!    (`_TOTAL_BUCKETS`); a new one gets `postpone.default-bucket-num`, or its postpone rows
//!    over `postpone.target-row-num-per-bucket`, or their bytes over
//!    `postpone.target-size-per-bucket` ([`crate::options::PostponeOptions`]).
//! 2. **Replay**: the postpone files, oldest creation time first, are read record by record;
//!    each record goes to the bucket [`super::bucket_function`] gives its key and takes that
//!    bucket's next sequence number (after its existing files), as a Paimon writer's
//!    `newSequenceNumber` does; the writers' sequence numbers in the files mean nothing
//!    outside their writer and are replaced. Each bucket's records are sorted and merged with
//!    the table's merge engine into new level-0 files ([`crate::rewrite::merge::redistribute`],
//!    then one merge per bucket: Paimon's write-buffer flush).
//! 3. **Compaction**: each bucket that received rows is planned again with its new level-0
//!    files and compacted as the table's strategy decides (not forced full, as Paimon does;
//!    `--full` forces it). Level-0 files the compaction consumes never reach a snapshot: they
//!    are deleted and left out of the commit, the rest are added (Paimon's
//!    `PostponeBucketCommittableRewriter`).
//! 4. **Commit**: DELETE of every replayed postpone file, the buckets' changes, new files
//!    recording the partition's bucket count.
//!
//! Postpone files are read as Parquet, ORC or Avro (Paimon's Java writers force Avro for
//! them), nested columns included; a file written under an older schema version with other
//! fields is read through its column map onto the latest version, as merges read such files.
//! What is refused, with the reason: postpone files in another format, a level written in a
//! format this build does not write, `changelog-producer = input` (the replayed rows would
//! need input changelog this job cannot tell apart from what the writers produced), and a
//! bucket function over a key it cannot hash (`mod` over anything but one INT or BIGINT,
//! `hive` over a timestamp).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::binary_row::BinaryRow;
use super::bucket_function::BucketAssigner;
use super::commit::{CommitDelta, WrittenFiles};
use super::ids::IdGen;
use super::index::IndexManifestEntry;
use super::manifest::{FileKind, ManifestEntry, POSTPONE_BUCKET};
use super::plan::{evolved_schema, PlanRequest, Work};
use super::report::BucketMetrics;
use super::run::{run_bucket, BucketWork};
use super::scan::{planner_meta, BucketState, LiveFile, Table, TableState};
use crate::error::{Error, Result};
use crate::io::Io;
use crate::meta::Level;
use crate::options::ChangelogProducer;
use crate::plan::PlanContext;
use crate::rewrite::foreign_data::DataFormat;
use crate::rewrite::merge::redistribute::{redistribute, Evolved, Redistribution, ReplayInput};
use crate::rewrite::merge::MergeTreeRewrite;
use crate::rewrite::RewriteInput;

/// The planned replay of one partition's postpone files (a fan-out task's `work`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PostponeWork {
    /// The partition's bucket count, kept or chosen at planning.
    pub buckets: i32,
    /// Forced full compaction of the buckets after the replay (`--full`).
    pub full: bool,
    /// The planner's clock for the buckets' compaction.
    pub context: PlanContext,
}

/// The bucket count of `partition` in `state`: the count its real buckets record, else the
/// table's choice for a new partition from its postpone files' rows and bytes.
pub(super) fn bucket_count(
    table: &Table,
    state: &TableState,
    partition: &BinaryRow,
) -> Result<i32> {
    let mut known: Option<i32> = None;
    let mut rows = 0u64;
    let mut bytes = 0u64;
    for ((p, bucket), b) in state.buckets.range((partition.clone(), i32::MIN)..) {
        if p != partition {
            break;
        }
        if *bucket == POSTPONE_BUCKET {
            for l in &b.files {
                rows += l.entry.file.row_count.max(0) as u64;
                bytes += l.entry.file.file_size.max(0) as u64;
            }
        } else if *bucket >= 0 && !b.files.is_empty() {
            match known {
                Some(n) if n != b.total_buckets => {
                    return Err(Error::corrupt(
                        None,
                        format!(
                            "partition '{}' records bucket counts {n} and {} in its live files",
                            b.partition_path, b.total_buckets
                        ),
                    ))
                }
                _ => known = Some(b.total_buckets),
            }
        }
    }
    match known {
        Some(n) if n > 0 => Ok(n),
        Some(n) => Err(Error::corrupt(
            None,
            format!("a real bucket records {n} buckets in its partition"),
        )),
        None => table.options.postpone.bucket_count(rows, bytes),
    }
}

/// Why a postpone partition cannot be compacted here, if it cannot (decided at planning,
/// before anything is read).
pub(super) fn blocker(
    storage: &dyn crate::storage::Storage,
    table: &Table,
    postpone: &BucketState,
) -> Result<Option<String>> {
    if table.options.changelog_producer == ChangelogProducer::Input {
        return Ok(Some(
            "unsupported: postpone-bucket compaction with 'changelog-producer' = 'input' (the \
             replayed rows' changelog is the writers' to produce); the postpone files are left"
                .to_string(),
        ));
    }
    let avro_ok = super::plan::merge_tree::avro_supported(table);
    for level in 0..table.options.num_levels {
        let format = table.options.file_format_for_level(level);
        if !(matches!(format, "parquet" | "orc") || format == "avro" && avro_ok) {
            return Ok(Some(format!(
                "unsupported: level {level} is written as '{format}' (file.format / \
                 file.format.per.level), which this build does not write for this table; the \
                 postpone files are left"
            )));
        }
    }
    if let Err(e) = BucketAssigner::new(table, 1) {
        return Ok(Some(e.to_string()));
    }
    for l in &postpone.files {
        let f = &l.entry.file;
        if DataFormat::of(&f.file_name) == Some(DataFormat::Avro) && !avro_ok {
            return Ok(Some(format!(
                "unsupported: postpone file '{}' is an Avro file with a column type Paimon \
                 does not write to Avro, which this build does not read; the postpone files \
                 are left",
                f.file_name
            )));
        }
        if DataFormat::of(&f.file_name).is_none() {
            return Ok(Some(format!(
                "unsupported: postpone file '{}' is not Parquet, ORC or Avro (this build reads \
                 those); the postpone files are left",
                f.file_name
            )));
        }
        if let Some(old) = evolved_schema(storage, table, f.schema_id)? {
            if let Err(e) = super::merge::kv_schema(&old) {
                return Ok(Some(format!(
                    "unsupported: postpone file '{}' was written under schema version {}, \
                     whose row type this build cannot read ({e}); the postpone files are left",
                    f.file_name, f.schema_id
                )));
            }
        }
    }
    Ok(None)
}

/// The postpone files in the order they are replayed: oldest creation time first, as Paimon
/// replays a writer's files (a stable sort: ties keep manifest order).
pub(super) fn replay_order(postpone: &BucketState) -> Vec<&LiveFile> {
    let mut files: Vec<&LiveFile> = postpone.files.iter().collect();
    files.sort_by_key(|l| l.entry.file.creation_time.unwrap_or(i64::MIN));
    files
}

/// One partition's postpone task as the run sees it.
pub(super) struct PostponeRun<'a> {
    pub(super) table: &'a Table,
    /// The partition's postpone bucket (bucket -2) with its live files.
    pub(super) postpone: &'a BucketState,
    /// The partition's real buckets with live files, by bucket id.
    pub(super) real: BTreeMap<i32, BucketState>,
    /// The partition's live deletion-vector index entries.
    pub(super) index_entries: &'a [IndexManifestEntry],
    pub(super) work: &'a PostponeWork,
    pub(super) now_ms: i64,
    pub(super) output_seed: u64,
}

/// Runs a postpone task: replay, per-bucket merge into level-0 files, compaction of the
/// buckets, and the delta that commits it all (see the module documentation). Every file it
/// writes is tracked in `written`; temporary ones are deleted before it returns.
pub(super) fn run_postpone(
    io: &Io,
    p: &PostponeRun<'_>,
    ids: &mut IdGen,
    written: &mut WrittenFiles,
) -> Result<(CommitDelta, BucketMetrics)> {
    let table = p.table;
    let storage = io.storage.as_ref();
    let n = p.work.buckets;
    let assigner = BucketAssigner::new(table, n)?;
    let post = p.postpone;
    let files = replay_order(post);
    let mut inputs = Vec::with_capacity(files.len());
    let mut evolutions: BTreeMap<i64, Option<Evolved>> = BTreeMap::new();
    for l in &files {
        let schema_id = l.entry.file.schema_id;
        let evolution = match evolutions.get(&schema_id) {
            Some(e) => e.clone(),
            None => {
                let e = super::merge::evolved_file_schema(storage, table, schema_id)?;
                evolutions.insert(schema_id, e.clone());
                e
            }
        };
        inputs.push(ReplayInput {
            file: RewriteInput {
                path: table.paths.live_data_file(
                    &post.partition_path,
                    POSTPONE_BUCKET,
                    &l.entry.file,
                    &l.source,
                )?,
                meta: Arc::new(planner_meta(table, l)?),
                deleted_rows: None,
                columns: None,
            },
            evolution,
        });
    }
    let mut buckets: Vec<BucketState> = (0..n)
        .map(|b| {
            p.real.get(&b).cloned().unwrap_or_else(|| BucketState {
                partition: post.partition.clone(),
                partition_values: post.partition_values.clone(),
                partition_path: post.partition_path.clone(),
                bucket: b,
                total_buckets: n,
                files: Vec::new(),
            })
        })
        .collect();
    if let Some(b) = p.real.keys().find(|&&b| b < 0 || b >= n) {
        return Err(Error::corrupt(
            None,
            format!(
                "bucket {b} of partition '{}' is outside its {n} buckets",
                post.partition_path
            ),
        ));
    }
    let first_sequence: Vec<i64> = buckets
        .iter()
        .map(|b| {
            b.files
                .iter()
                .map(|l| l.entry.file.max_sequence_number)
                .max()
                .map_or(0, |m| m.saturating_add(1))
        })
        .collect();
    let schema = super::merge::kv_schema(&table.schema)?;
    let replay_tag = ids.next_uuid();
    let outputs: Vec<(String, String)> = (0..n)
        .map(|b| {
            (
                table.paths.bucket_dir(&post.partition_path, b),
                format!("data-{replay_tag}-replay-"),
            )
        })
        .collect();
    let bucket_of = |batch: &arrow_array::RecordBatch, file: &str| assigner.buckets(batch, file);
    let replay = Redistribution {
        inputs,
        schema: schema.clone(),
        bucket_of: &bucket_of,
        first_sequence,
        outputs,
        buffer_bytes: usize::try_from(table.options.engine.replay_buffer.get()?)
            .unwrap_or(usize::MAX),
    };
    let replayed = redistribute(&io.storage, &replay)?;
    for t in &replayed.temps {
        written.track(t);
    }
    let mut delta = CommitDelta::default();
    let mut metrics = BucketMetrics {
        partition: post.partition_path.clone(),
        bucket: POSTPONE_BUCKET,
        reason: format!(
            "postpone compaction: {} file{} replayed into {n} bucket{}",
            files.len(),
            if files.len() == 1 { "" } else { "s" },
            if n == 1 { "" } else { "s" }
        ),
        files_before: files.len(),
        bytes_before: files
            .iter()
            .map(|l| l.entry.file.file_size.max(0) as u64)
            .sum(),
        files_removed: files.len(),
        bytes_removed: files
            .iter()
            .map(|l| l.entry.file.file_size.max(0) as u64)
            .sum(),
        rows_read: replayed.rows,
        ..BucketMetrics::default()
    };
    for l in &files {
        delta.entries.push(ManifestEntry {
            kind: FileKind::Delete,
            ..l.entry.clone()
        });
    }
    let result = flush_and_compact(io, p, &mut buckets, &replayed.runs, &schema, ids, written);
    // The temporary runs are read; whatever happened they go now (a failed deletion leaves an
    // orphan that no snapshot references).
    written.delete_now(storage, &replayed.temps);
    for (bucket_delta, m) in result? {
        delta.entries.extend(bucket_delta.entries);
        delta.changelog.extend(bucket_delta.changelog);
        delta.index.extend(bucket_delta.index);
        delta.marked.extend(bucket_delta.marked);
        add_metrics(&mut metrics, &m);
    }
    Ok((delta, metrics))
}

/// Merges each bucket's replayed runs into its new level-0 files, then compacts the bucket
/// with them; returns each touched bucket's delta and metrics.
fn flush_and_compact(
    io: &Io,
    p: &PostponeRun<'_>,
    buckets: &mut [BucketState],
    runs: &[Vec<RewriteInput>],
    schema: &arrow_schema::SchemaRef,
    ids: &mut IdGen,
    written: &mut WrittenFiles,
) -> Result<Vec<(CommitDelta, BucketMetrics)>> {
    let table = p.table;
    let storage = io.storage.as_ref();
    let max_level = Level::new(table.options.num_levels.saturating_sub(1));
    let mut out = Vec::new();
    for (b, bucket_runs) in runs.iter().enumerate() {
        if bucket_runs.is_empty() {
            continue;
        }
        let state = &mut buckets[b];
        let dir = table.paths.bucket_dir(&state.partition_path, state.bucket);
        let uuid = ids.next_uuid();
        let req = MergeTreeRewrite {
            sections: vec![bucket_runs.iter().map(|r| vec![r.clone()]).collect()],
            schema: Some(schema.clone()),
            higher_levels: Vec::new(),
            output_dir: dir.clone(),
            file_prefix: format!("{}{uuid}-", table.options.data_file_prefix),
            changelog_prefix: format!("{}{uuid}-", table.options.changelog_file_prefix),
            output_level: Level::ZERO,
            max_level,
            drop_delete: false,
            write_data: true,
            column_types: super::merge::kv_types(&table.schema),
            creation_time_ms: p.now_ms,
        };
        let (r, level0, _) = match super::merge::merge(io, table, &req) {
            Ok(x) => x,
            Err(e) => {
                if let Ok(list) = storage.list(&format!("{dir}/{}", req.file_prefix)) {
                    for o in list {
                        written.track(&o.path);
                    }
                }
                return Err(e);
            }
        };
        for f in &r.outputs {
            written.track(&f.path);
        }
        // Flushed files, as Paimon's writers record them: level 0, file source APPEND.
        let mut new_names = BTreeSet::new();
        for mut f in level0 {
            f.file_source = Some(0);
            new_names.insert(f.file_name.clone());
            state.files.push(LiveFile {
                entry: ManifestEntry {
                    kind: FileKind::Add,
                    partition: state.partition.clone(),
                    bucket: state.bucket,
                    total_buckets: p.work.buckets,
                    file: f,
                },
                source: "postpone replay".to_string(),
                deletion_vector: None,
            });
        }
        let (bucket_delta, mut m) = compact_bucket(io, p, state, &new_names, ids, written)?;
        m.rows_read = r.metrics.input_rows;
        m.rows_expired += r.metrics.expired_rows;
        m.spilled_runs += r.metrics.spilled_runs;
        out.push((bucket_delta, m));
    }
    Ok(out)
}

/// Plans and runs the bucket's compaction with its new level-0 files `new_names`, and turns
/// its delta into the commit's: a new file the compaction consumed is deleted and appears
/// nowhere, one it kept is added.
fn compact_bucket(
    io: &Io,
    p: &PostponeRun<'_>,
    state: &BucketState,
    new_names: &BTreeSet<String>,
    ids: &mut IdGen,
    written: &mut WrittenFiles,
) -> Result<(CommitDelta, BucketMetrics)> {
    let table = p.table;
    let storage = io.storage.as_ref();
    let request = PlanRequest {
        full: p.work.full,
        context: p.work.context,
        scope: Default::default(),
    };
    let (plan, planned, _) =
        super::plan::plan_merge_tree_bucket(storage, table, state, &request, None, None)?;
    let mut delta = CommitDelta::default();
    let mut metrics = BucketMetrics::default();
    if let Some(work) = planned.work.as_ref().filter(|_| plan.blocked.is_none()) {
        let index_entries: Vec<IndexManifestEntry> = p
            .index_entries
            .iter()
            .filter(|e| e.bucket == state.bucket)
            .cloned()
            .collect();
        let bw = BucketWork {
            table,
            bucket: state,
            index_entries: &index_entries,
            work,
            verified_delete_counts: &planned.verified_delete_counts,
            now_ms: p.now_ms,
            output_seed: p.output_seed ^ (state.bucket as u64).wrapping_mul(0x9E37_79B9),
        };
        let (d, m) = run_bucket(io, &bw, ids, written)?;
        delta = d;
        metrics = m;
    }
    // What the compaction left of the new files is added; what it consumed is gone.
    let re_added: BTreeSet<String> = delta
        .entries
        .iter()
        .filter(|e| e.kind == FileKind::Add)
        .map(|e| e.file.file_name.clone())
        .collect();
    let removed: BTreeSet<String> = delta
        .entries
        .iter()
        .filter(|e| e.kind == FileKind::Delete && new_names.contains(&e.file.file_name))
        .map(|e| e.file.file_name.clone())
        .collect();
    delta
        .entries
        .retain(|e| !(e.kind == FileKind::Delete && new_names.contains(&e.file.file_name)));
    for l in &state.files {
        let name = &l.entry.file.file_name;
        if !new_names.contains(name) {
            continue;
        }
        if !removed.contains(name) {
            delta.entries.push(l.entry.clone());
        } else if !re_added.contains(name) {
            let path = table.paths.live_data_file(
                &state.partition_path,
                state.bucket,
                &l.entry.file,
                &l.source,
            )?;
            written.delete_now(storage, [&path]);
        }
    }
    if metrics.partition.is_empty() {
        metrics.partition = state.partition_path.clone();
        metrics.bucket = state.bucket;
    }
    metrics.files_added += new_names.len().saturating_sub(removed.len());
    Ok((delta, metrics))
}

/// Adds a bucket's counters to the task's.
fn add_metrics(total: &mut BucketMetrics, m: &BucketMetrics) {
    total.files_after += m.files_after;
    total.bytes_after += m.bytes_after;
    total.files_removed += m.files_removed;
    total.bytes_removed += m.bytes_removed;
    total.files_added += m.files_added;
    total.bytes_added += m.bytes_added;
    total.rows_written += m.rows_written;
    total.rows_deleted += m.rows_deleted;
    total.rows_expired += m.rows_expired;
    total.spilled_runs += m.spilled_runs;
    total.rewrites += m.rewrites;
    total.upgrades += m.upgrades;
    total.deletion_vectors_removed += m.deletion_vectors_removed;
    total.deletion_vector_marks += m.deletion_vector_marks;
    total.changelog_files += m.changelog_files;
}

/// Work of a partition's postpone bucket, for [`super::plan`].
pub(super) fn work(buckets: i32, request: &PlanRequest) -> Work {
    Work::Postpone(PostponeWork {
        buckets,
        full: request.full,
        context: request.context,
    })
}
