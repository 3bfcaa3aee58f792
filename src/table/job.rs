//! A compaction job over a whole table: scan, plan every partition and bucket with the
//! planner, take the partitions' leases, run the tasks through the rewriters, commit one
//! COMPACT snapshot, release the leases.
//!
//! [`plan_table`] only reads. [`compact_table`] is all or nothing: any failure before the
//! snapshot exists deletes every file the job wrote (data, deletion vectors, manifests), so the
//! table is exactly as before. Metrics come back as a serde struct (delta-rs style): files and
//! bytes removed and added per partition and bucket, levels before and after, rows, the number
//! of rewrites, upgrades and fast copies, passthrough use, and time per phase when the caller
//! passes a clock (the core reads none).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use roaring::RoaringBitmap;

use super::binary_row::BinaryRow;
use super::commit::{self, CommitDelta, CommitOutcome, CommitSettings, WrittenFiles};
use super::delete_count;
use super::guards;
use super::ids::{uuid_string, IdGen};
use super::index::{self, IndexManifestEntry, DELETION_VECTORS_INDEX};
use super::job_state::{self, CoordinatorAge, PartitionState};
use super::lease::{self, Lease, LeaseHeld, LeaseRecord};
use super::manifest::{DataFile, FileKind, ManifestEntry, SimpleStats};
use super::merge_rewriter::{MergeRewriteInput, MergeRewriteRequest, MergeTreeRewriter};
use super::scan::{planner_meta, BucketState, LiveFile, Table, TableState};
use super::schema::TableSchema;
use super::scope::{JobScope, ResolvedScope};
use crate::error::{Error, ErrorKind, Result};
use crate::meta::{DataFileMeta, Level, Levels};
use crate::options::{ChangelogProducer, TableKind};
use crate::plan::{
    route_job, AppendCompactCoordinator, BucketedAppendCompactManager, CompactionMode,
    CoordinatorFile, DeletionFileRef, MergeTreeCompactManager, MergeTreeDecision, PlanContext,
    Reason, RewriteAlone, TaskAction, UpgradeStrategy,
};
use crate::rewrite::schema_evolution::{column_sources, ColumnSource};
use crate::rewrite::{rewrite_append, AppendInput, AppendRewrite};
use crate::storage::Storage;

// ---------------------------------------------------------------------------------------------
// Plan

/// Files and bytes of one level of a bucket.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LevelStat {
    pub level: u32,
    pub files: usize,
    pub bytes: u64,
}

/// One step of a planned task.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum PlannedAction {
    /// Append files rewritten together into new files.
    AppendRewrite { files: Vec<String>, bytes: u64 },
    /// A file recorded at a higher level (no data read or written).
    Upgrade {
        file: String,
        from_level: u32,
        to_level: u32,
        /// What the move involves (spec §10.2): metadata only, a changelog / deletion-vector
        /// lookup over the file, or a rewrite of the file with the looked-up values.
        strategy: UpgradeStrategy,
    },
    /// Primary-key files merged into new files at `output_level`.
    MergeRewrite {
        output_level: u32,
        files: Vec<String>,
        sections: usize,
        alone: Option<RewriteAlone>,
    },
}

/// The plan of one partition and bucket.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BucketPlan {
    /// The partition's directory (`k=v/...`; empty for an unpartitioned table).
    pub partition: String,
    pub bucket: i32,
    pub files: usize,
    pub bytes: u64,
    pub levels: Vec<LevelStat>,
    /// The planner's rule and its numbers.
    pub reason: Reason,
    /// The same, as one line.
    pub reason_text: String,
    pub actions: Vec<PlannedAction>,
    /// Files the plan removes from the bucket (rewritten inputs; upgrades stay).
    pub files_removed: usize,
    /// Set when the bucket has work this build cannot run; nothing is done to it.
    pub blocked: Option<String>,
    pub drop_delete: bool,
}

impl BucketPlan {
    pub fn has_work(&self) -> bool {
        !self.actions.is_empty() && self.blocked.is_none()
    }
}

/// The plan of a table.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TablePlan {
    pub table_path: String,
    pub snapshot_id: Option<i64>,
    pub table_kind: TableKind,
    pub mode: Option<CompactionMode>,
    /// Why the table is refused as a whole (a guarded option, data evolution, blob columns,
    /// ...), with nothing done to it.
    pub not_compactable: Option<String>,
    /// The error kind of that refusal: `not-compactable` (another job's work by design) or
    /// `unsupported` (this build cannot compact it correctly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal_kind: Option<String>,
    pub full: bool,
    pub buckets: Vec<BucketPlan>,
    pub summary: PlanSummary,
    /// What the job's scope left out.
    #[serde(default)]
    pub scope: ScopeSummary,
    /// Dynamic options that were ignored, and similar notes.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// Partitions and buckets a job's scope excluded (`--partition`/`--where`, idle time,
/// `--buckets`); they are not planned, read or touched.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScopeSummary {
    /// Buckets of partitions outside `--partition` / `--where`.
    pub buckets_outside_partitions: usize,
    /// Buckets of partitions written to more recently than `--partition-idle-time`.
    pub buckets_not_idle: usize,
    /// Buckets outside `--buckets`.
    pub buckets_outside_bucket_ranges: usize,
    /// Buckets of partitions that have already expired, with
    /// `compaction.skip-expired-partitions` (the job's compaction leaves them to partition
    /// expiration).
    #[serde(default)]
    pub buckets_of_expired_partitions: usize,
}

/// Totals of a plan.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlanSummary {
    pub partitions: usize,
    pub buckets: usize,
    pub files: usize,
    pub bytes: u64,
    pub buckets_with_work: usize,
    pub buckets_blocked: usize,
    pub rewrites: usize,
    pub upgrades: usize,
    pub files_removed: usize,
}

/// What to plan.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlanRequest {
    /// Forced full compaction of every bucket instead of the automatic pick.
    pub full: bool,
    pub context: PlanContext,
    /// A primary-key merge rewriter will run the plan (the default); without one, merges and
    /// upgrades that need one are reported as blocked.
    pub merge_rewriter: bool,
    /// Which partitions and buckets, and with which dynamic options.
    #[serde(default)]
    pub scope: JobScope,
}

impl Default for PlanRequest {
    fn default() -> Self {
        PlanRequest {
            full: false,
            context: PlanContext::default(),
            merge_rewriter: true,
            scope: JobScope::default(),
        }
    }
}

/// Internal work of one bucket.
#[derive(Clone, Debug)]
enum Work {
    /// Tasks of indices into the bucket's files, each rewritten together.
    Append(Vec<Vec<usize>>),
    MergeTree(Box<MergeTreeDecision>),
}

#[derive(Clone, Debug)]
struct PlannedBucket {
    key: (BinaryRow, i32),
    work: Option<Work>,
    /// Delete counts verified from footers, by file name (PK level-0 files).
    verified_delete_counts: HashMap<String, Option<u64>>,
}

struct InternalPlan {
    state: TableState,
    plan: TablePlan,
    buckets: Vec<PlannedBucket>,
    /// Planner state to keep for the next run, by partition lease key (`job_state`); empty
    /// for tables whose planning keeps none.
    kept_state: BTreeMap<String, PartitionState>,
}

fn level_stats(files: &[Arc<DataFileMeta>]) -> Vec<LevelStat> {
    let mut by: BTreeMap<u32, (usize, u64)> = BTreeMap::new();
    for f in files {
        let e = by.entry(f.level.get()).or_default();
        e.0 += 1;
        e.1 += f.file_size;
    }
    by.into_iter()
        .map(|(level, (files, bytes))| LevelStat {
            level,
            files,
            bytes,
        })
        .collect()
}

/// Plans the table at `table_path` (relative to the storage root). Reads only.
pub fn plan_table(
    storage: &dyn Storage,
    table_path: &str,
    request: &PlanRequest,
) -> Result<TablePlan> {
    Ok(plan_state(storage, table_path, request, None)?.plan)
}

/// Says whether a bucketed job leaves a partition out because it has already expired
/// (`compaction.skip-expired-partitions`): the table and the partition's typed values in,
/// `true` to skip. Supplied by the maintenance layer, which knows partition times.
pub type ExpiredPartitionTest<'a> = &'a dyn Fn(&Table, &[super::binary_row::Datum]) -> bool;

/// Reads the table as the job sees it (its dynamic options applied, `write-only` off) and
/// keeps the partitions and buckets of the job's scope.
fn scan_in_scope(
    storage: &dyn Storage,
    table_path: &str,
    request: &PlanRequest,
    expired: Option<ExpiredPartitionTest<'_>>,
) -> Result<(TableState, ScopeSummary, Vec<String>)> {
    let (table, warnings) = Table::load_for_job(storage, table_path, &request.scope.options)?;
    let resolved = ResolvedScope::resolve(&request.scope, &table.schema, table.options.bucket)?;
    let id = super::snapshot::latest_snapshot_id(storage, &table.paths)?;
    let mut state = super::scan::scan_at(storage, table, id)?;
    let mut summary = ScopeSummary::default();
    // Paimon applies the skip to bucketed compaction only, not to unaware-bucket appends.
    let bucketed = state.table.options.bucket != -1
        || state.table.options.table_kind == crate::options::TableKind::PrimaryKey;
    if let Some(expired) = expired.filter(|_| bucketed) {
        let table = state.table.clone();
        state.buckets.retain(|_, b| {
            let skip = expired(&table, &b.partition_values);
            summary.buckets_of_expired_partitions += usize::from(skip);
            !skip
        });
    }
    if request.scope.is_everything() {
        return Ok((state, summary, warnings));
    }
    // A partition's newest live file, for the idle-time test.
    let mut newest: BTreeMap<BinaryRow, i64> = BTreeMap::new();
    for b in state.buckets.values() {
        let n = newest.entry(b.partition.clone()).or_insert(i64::MIN);
        for f in &b.files {
            *n = (*n).max(f.entry.file.creation_time.unwrap_or(i64::MIN));
        }
    }
    let types = state.table.partition_types.clone();
    let now = request.context.now_ms;
    state.buckets.retain(|_, b| {
        if !resolved.partition_matches(&b.partition_values, &types) {
            summary.buckets_outside_partitions += 1;
            false
        } else if !resolved.idle_enough(newest[&b.partition], now) {
            summary.buckets_not_idle += 1;
            false
        } else if !resolved.bucket_matches(b.bucket) {
            summary.buckets_outside_bucket_ranges += 1;
            false
        } else {
            true
        }
    });
    Ok((state, summary, warnings))
}

fn plan_state(
    storage: &dyn Storage,
    table_path: &str,
    request: &PlanRequest,
    expired: Option<ExpiredPartitionTest<'_>>,
) -> Result<InternalPlan> {
    let (state, scope, warnings) = scan_in_scope(storage, table_path, request, expired)?;
    let table = &state.table;
    let mut plan = TablePlan {
        table_path: table.paths.root().to_string(),
        snapshot_id: state.snapshot_id(),
        table_kind: table.schema.table_kind(),
        mode: None,
        not_compactable: None,
        refusal_kind: None,
        full: request.full,
        buckets: Vec::new(),
        summary: PlanSummary::default(),
        scope,
        warnings,
    };
    let routed = match guards::refusal(&table.schema.options, table.options.bucket) {
        Some(e) => Err(e),
        None => route_job(&table.options, table.schema.has_blob_column()).into_result(),
    };
    let mode = match routed {
        Ok(m) => m,
        Err(e)
            if matches!(
                e.kind,
                ErrorKind::NotCompactable { .. } | ErrorKind::Unsupported
            ) =>
        {
            plan.refusal_kind = Some(
                match e.kind {
                    ErrorKind::Unsupported => "unsupported",
                    _ => "not-compactable",
                }
                .to_string(),
            );
            plan.not_compactable = Some(e.message);
            return Ok(InternalPlan {
                state,
                plan,
                buckets: Vec::new(),
                kept_state: BTreeMap::new(),
            });
        }
        Err(e) => return Err(e),
    };
    plan.mode = Some(mode);
    let mut planned = Vec::new();
    let mut kept_state = load_kept_state(storage, table, &state, mode);
    match mode {
        CompactionMode::MergeTree => {
            for (key, b) in &state.buckets {
                if b.bucket == POSTPONE_BUCKET {
                    plan.buckets.push(postpone_bucket_plan(table, b)?);
                    planned.push(PlannedBucket {
                        key: key.clone(),
                        work: None,
                        verified_delete_counts: HashMap::new(),
                    });
                    continue;
                }
                let pkey = lease::lease_key(&key.0 .0);
                let gentle = kept_state
                    .get(&pkey)
                    .map(|s| s.gentle_counters.get(&b.bucket).copied().unwrap_or(0));
                let (bp, pb, counter) = plan_merge_tree_bucket(storage, table, b, request, gentle)?;
                if let (Some(s), Some(c)) = (kept_state.get_mut(&pkey), counter) {
                    s.gentle_counters.insert(b.bucket, c);
                }
                plan.buckets.push(bp);
                planned.push(PlannedBucket {
                    key: key.clone(),
                    ..pb
                });
            }
        }
        CompactionMode::BucketedAppend => {
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
                let (bp, work) =
                    append_bucket_plan(storage, table, b, &files, decision.reason, tasks)?;
                plan.buckets.push(bp);
                planned.push(PlannedBucket {
                    key: key.clone(),
                    work,
                    verified_delete_counts: HashMap::new(),
                });
            }
        }
        CompactionMode::UnawareBucketCoordinator => {
            plan_coordinator(
                storage,
                table,
                &state,
                request,
                &mut plan,
                &mut planned,
                &mut kept_state,
            )?;
        }
    }
    let mut partitions = BTreeSet::new();
    for b in &plan.buckets {
        partitions.insert(b.partition.clone());
        let s = &mut plan.summary;
        s.buckets += 1;
        s.files += b.files;
        s.bytes += b.bytes;
        if b.blocked.is_some() {
            s.buckets_blocked += 1;
        }
        if b.has_work() {
            s.buckets_with_work += 1;
            s.files_removed += b.files_removed;
            for a in &b.actions {
                match a {
                    PlannedAction::Upgrade { .. } => s.upgrades += 1,
                    _ => s.rewrites += 1,
                }
            }
        }
    }
    plan.summary.partitions = partitions.len();
    Ok(InternalPlan {
        state,
        plan,
        buckets: planned,
        kept_state,
    })
}

/// The kept planner state of every partition in the scan, for the tables whose planning has
/// any (gentle lookup compaction, the Java unaware-bucket coordinator); see [`job_state`].
fn load_kept_state(
    storage: &dyn Storage,
    table: &Table,
    state: &TableState,
    mode: CompactionMode,
) -> BTreeMap<String, PartitionState> {
    let gentle = mode == CompactionMode::MergeTree
        && table.options.need_lookup()
        && table.options.lookup_compact == crate::options::LookupCompactMode::Gentle;
    let coordinator = mode == CompactionMode::UnawareBucketCoordinator
        && table.options.flavor == crate::options::Flavor::Java;
    if !gentle && !coordinator {
        return BTreeMap::new();
    }
    let mut out = BTreeMap::new();
    for (partition, _) in state.buckets.keys() {
        let key = lease::lease_key(&partition.0);
        if let std::collections::btree_map::Entry::Vacant(e) = out.entry(key) {
            let s = job_state::load(storage, &table.paths, e.key());
            e.insert(s);
        }
    }
    out
}

/// The bucket id Paimon gives files of a postpone-bucket table (`bucket = -2`) before a
/// rescale assigns them to real buckets.
const POSTPONE_BUCKET: i32 = -2;

/// The postpone bucket of a `bucket = -2` table: reported with its files and left alone.
fn postpone_bucket_plan(table: &Table, b: &BucketState) -> Result<BucketPlan> {
    let files = b.planner_files(table)?;
    let reason = Reason::Idle(crate::plan::Idle::PostponeBucket { files: files.len() });
    Ok(BucketPlan {
        partition: b.partition_path.clone(),
        bucket: b.bucket,
        files: files.len(),
        bytes: files.iter().map(|f| f.file_size).sum(),
        levels: level_stats(&files),
        reason_text: reason.to_string(),
        reason,
        actions: Vec::new(),
        files_removed: 0,
        blocked: (!files.is_empty()).then(|| {
            "files in the postpone bucket (bucket = -2) wait for Paimon's postpone-bucket \
             compaction, which assigns them to real buckets; this job compacts the real buckets \
             only"
                .to_string()
        }),
        drop_delete: false,
    })
}

fn indices_of(b: &BucketState, files: &[Arc<DataFileMeta>]) -> Vec<usize> {
    files
        .iter()
        .filter_map(|f| {
            b.files
                .iter()
                .position(|l| l.entry.file.file_name == f.file_name)
        })
        .collect()
}

/// The latest schema's row type as Arrow (the output of a schema-evolved append rewrite).
fn table_arrow_schema(schema: &TableSchema) -> Result<arrow::datatypes::SchemaRef> {
    let fields = schema
        .fields
        .iter()
        .map(|f| {
            Ok(arrow::datatypes::Field::new(
                &f.name,
                f.data_type.to_arrow()?,
                f.data_type.nullable,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(arrow::datatypes::Schema::new(fields)))
}

/// The schema version `schema_id` when files written under it need schema evolution, `None`
/// when they are read as files of the latest version are: decided once per version for the
/// whole job by [`super::schema::SchemaVersions`], so planning and both rewriters agree.
fn evolved_schema(
    storage: &dyn Storage,
    table: &Table,
    schema_id: i64,
) -> Result<Option<Arc<TableSchema>>> {
    table
        .schema_versions
        .evolved(storage, &table.paths, &table.schema, schema_id)
}

/// Why an append task cannot run here, if it cannot.
fn append_blocker(
    storage: &dyn Storage,
    table: &Table,
    b: &BucketState,
    task: &[usize],
) -> Result<Option<String>> {
    if table.options.file_format_for_level(0) != "parquet" {
        return Ok(Some(format!(
            "the append rewriter writes Parquet; the table's file.format is '{}'",
            table.options.file_format_for_level(0)
        )));
    }
    // Files that need schema evolution are read through the latest schema's Arrow form.
    let no_arrow_form = table_arrow_schema(&table.schema).err();
    for &i in task {
        let f = &b.files[i].entry.file;
        if !f.file_name.ends_with(".parquet") {
            return Ok(Some(format!(
                "file '{}' is not a Parquet file",
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

fn append_bucket_plan(
    storage: &dyn Storage,
    table: &Table,
    b: &BucketState,
    files: &[Arc<DataFileMeta>],
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
type PickedTask = (Vec<Arc<DataFileMeta>>, Reason);

fn plan_coordinator(
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
            let rest: Vec<Arc<DataFileMeta>> = files
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
                picked.push((
                    rest,
                    Reason::CoordinatorAged {
                        files: n,
                        age: crate::plan::COMPACT_AGE + 1,
                    },
                ));
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
            verified_delete_counts: HashMap::new(),
        });
    }
    Ok(())
}

/// Plans one primary-key bucket. `gentle`: the kept gentle lookup counter, when the table
/// keeps one; the counter after this decision comes back with the plan.
fn plan_merge_tree_bucket(
    storage: &dyn Storage,
    table: &Table,
    b: &BucketState,
    request: &PlanRequest,
    gentle: Option<usize>,
) -> Result<(BucketPlan, PlannedBucket, Option<usize>)> {
    let mut verified = HashMap::new();
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
    if let Some(counter) = gentle {
        let mut strategy = manager.strategy().clone();
        if let crate::plan::CompactStrategy::ForceUpLevel0(f) = &mut strategy {
            f.counter = counter;
        }
        manager = manager.with_strategy(strategy);
    }
    let levels_before = level_stats(&files);
    let max_level = manager.levels().max_level();
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
            TaskAction::Upgrade { file, to_level } => {
                actions.push(PlannedAction::Upgrade {
                    file: file.file_name.clone(),
                    from_level: file.level.get(),
                    to_level: to_level.get(),
                    strategy: crate::plan::upgrade_strategy_for(
                        &table.options,
                        file.level,
                        file.delete_row_count,
                        *to_level,
                        max_level,
                    ),
                });
                if blocked.is_none() && !request.merge_rewriter {
                    blocked = upgrade_blocker(table, manager.levels(), file, *to_level, max_level);
                }
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
                if blocked.is_none() && !request.merge_rewriter {
                    blocked = Some(
                        "the task merges files, which needs the primary-key merge rewriter \
                         (not available in this build); the bucket is left as it is"
                            .to_string(),
                    );
                }
            }
        }
    }
    if blocked.is_none() && !decision.task.actions.is_empty() {
        blocked = format_blocker(table, b, &decision);
    }
    if blocked.is_none() && request.merge_rewriter {
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

/// Why a merge-tree task cannot run here because of a file format, if it cannot: the merge
/// reads and writes Parquet only, and a lookup table's task may read any file of the bucket.
/// Decided before anything is read, so a table written with another format (ORC, or
/// `file.format.per.level = '0:avro'`) gets the reason instead of a misleading corrupt-footer
/// error.
fn format_blocker(table: &Table, b: &BucketState, decision: &MergeTreeDecision) -> Option<String> {
    let rewrites = decision
        .task
        .actions
        .iter()
        .any(|a| matches!(a, TaskAction::Rewrite { .. }));
    let reads_all = table.options.need_lookup();
    if rewrites || reads_all {
        let max_level = table.options.num_levels.saturating_sub(1);
        let outputs = decision.task.actions.iter().filter_map(|a| match a {
            TaskAction::Rewrite { output_level, .. } => Some(output_level.get()),
            TaskAction::Upgrade { to_level, .. } if reads_all => Some(to_level.get()),
            TaskAction::Upgrade { .. } => None,
        });
        for level in outputs.chain(reads_all.then_some(max_level)) {
            let format = table.options.file_format_for_level(level);
            if format != "parquet" {
                return Some(format!(
                    "unsupported: level {level} is written as '{format}' (file.format / \
                     file.format.per.level) and this build writes Parquet only; the bucket is \
                     left as it is"
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
        .find(|name| !name.ends_with(".parquet"))
        .map(|name| {
            format!(
                "unsupported: file '{name}' is not a Parquet file and this build reads Parquet \
                 only; the bucket is left as it is"
            )
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

/// Why a metadata-only upgrade of `file` to `to` is not enough here, if it is not.
fn upgrade_blocker(
    table: &Table,
    levels: &Levels,
    file: &DataFileMeta,
    to: Level,
    max_level: Level,
) -> Option<String> {
    let strategy = crate::plan::upgrade_strategy_for(
        &table.options,
        file.level,
        file.delete_row_count,
        to,
        max_level,
    );
    match strategy {
        UpgradeStrategy::NoChangelogNoRewrite => None,
        UpgradeStrategy::ChangelogWithRewrite => Some(format!(
            "moving '{}' up needs a merge with older values (lookup rewriter), which needs the \
             primary-key merge rewriter",
            file.file_name
        )),
        UpgradeStrategy::ChangelogNoRewrite => {
            if matches!(
                table.options.changelog_producer,
                ChangelogProducer::Lookup | ChangelogProducer::FullCompaction
            ) {
                return Some(format!(
                    "moving '{}' up must produce changelog ({}), which needs the primary-key \
                     merge rewriter",
                    file.file_name, table.options.changelog_producer
                ));
            }
            if table.options.deletion_vectors_enabled {
                // Older copies of its keys above the output level would need DV marks.
                let overlaps = levels.level_sorted_runs().iter().any(|r| {
                    r.level > to
                        && r.files
                            .iter()
                            .any(|f| f.min_key <= file.max_key && file.min_key <= f.max_key)
                });
                if overlaps {
                    return Some(format!(
                        "moving '{}' up must mark older copies of its keys in deletion vectors \
                         (lookup), which needs the primary-key merge rewriter",
                        file.file_name
                    ));
                }
            }
            None
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Compact

/// How to run a job.
#[derive(Clone)]
pub struct CompactOptions<'a> {
    /// Forced full compaction of every bucket.
    pub full: bool,
    /// `now` and the local hour for the planner; `now_ms` also stamps files and the snapshot.
    pub context: PlanContext,
    /// Random bytes from the host: every file name of the job derives from them.
    pub job_id: [u8; 16],
    /// Who runs the job (recorded in leases), e.g. `host:pid`.
    pub owner: String,
    /// Lease duration; `None` takes no leases.
    pub lease_ttl_ms: Option<i64>,
    /// Rebase attempts when another commit wins the next snapshot id.
    pub max_commit_retries: usize,
    /// The primary-key merge rewriter, when one is available.
    pub merge_rewriter: Option<&'a dyn MergeTreeRewriter>,
    /// Milliseconds from any monotonic clock, for the phase timings (optional).
    pub clock: Option<&'a dyn Fn() -> i64>,
    /// Waits the given milliseconds (supplied by the host): the back-off between commit
    /// attempts after losing the snapshot race. `None` retries at once.
    pub sleep: Option<&'a dyn Fn(u64)>,
    /// `commitUser` of the snapshot; defaults to one derived from the job id.
    pub commit_user: Option<String>,
    /// Which partitions and buckets, and with which dynamic options.
    pub scope: JobScope,
    /// `compaction.skip-expired-partitions`: the test for partitions to leave out (see
    /// [`ExpiredPartitionTest`]); `None` compacts every partition in scope.
    pub skip_expired_partitions: Option<ExpiredPartitionTest<'a>>,
}

/// The merge rewriter of this build: the primary-key rewriter ships with the table layer.
fn default_merge_rewriter() -> Option<&'static dyn MergeTreeRewriter> {
    static REWRITER: crate::rewrite::merge::PrimaryKeyRewriter =
        crate::rewrite::merge::PrimaryKeyRewriter;
    Some(&REWRITER)
}

impl<'a> CompactOptions<'a> {
    pub fn new(context: PlanContext, job_id: [u8; 16]) -> Self {
        CompactOptions {
            full: false,
            context,
            job_id,
            owner: "paimon-compact".to_string(),
            lease_ttl_ms: Some(10 * 60 * 1000),
            max_commit_retries: 10,
            merge_rewriter: default_merge_rewriter(),
            clock: None,
            sleep: None,
            commit_user: None,
            scope: JobScope::default(),
            skip_expired_partitions: None,
        }
    }
}

/// Metrics of one partition and bucket.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BucketMetrics {
    pub partition: String,
    pub bucket: i32,
    pub reason: String,
    pub files_before: usize,
    pub files_after: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub files_removed: usize,
    pub files_added: usize,
    pub bytes_removed: u64,
    pub bytes_added: u64,
    pub levels_before: Vec<LevelStat>,
    pub levels_after: Vec<LevelStat>,
    pub rows_read: u64,
    pub rows_written: u64,
    /// Rows dropped because a deletion vector marked them.
    pub rows_deleted: u64,
    pub rewrites: usize,
    pub upgrades: usize,
    /// Inputs whose row groups were copied without decoding.
    pub fast_copy_files: u64,
    pub fast_copy_refused: usize,
    /// Columns written through dictionary passthrough.
    pub passthrough_columns: Vec<String>,
    pub deletion_vectors_removed: usize,
    /// Row positions added to the deletion vectors of files above the output (lookup).
    pub deletion_vector_marks: u64,
    /// Changelog files written (`changelog-producer` lookup or full-compaction).
    pub changelog_files: usize,
    /// Pages whose zstd the host ran for the component (`codec` import); zero natively and
    /// on hosts that offer no codec.
    #[serde(default)]
    pub host_codec_pages_compressed: u64,
    #[serde(default)]
    pub host_codec_pages_decompressed: u64,
}

/// Totals over partitions.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Totals {
    pub partitions: usize,
    pub buckets_compacted: usize,
    pub files_removed: usize,
    pub files_added: usize,
    pub bytes_removed: u64,
    pub bytes_added: u64,
    pub rows_read: u64,
    pub rows_written: u64,
    pub rewrites: usize,
    pub upgrades: usize,
    pub fast_copy_files: u64,
    pub files_before: usize,
    pub files_after: usize,
}

/// Milliseconds per phase (zero without a clock).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PhaseTimes {
    pub scan_plan_ms: i64,
    pub lease_ms: i64,
    pub rewrite_ms: i64,
    pub commit_ms: i64,
    pub total_ms: i64,
}

/// A bucket that had work and was not compacted.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SkippedBucket {
    pub partition: String,
    pub bucket: i32,
    pub reason: String,
}

/// How a job ended, for exit codes and schedulers (`docs/report.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobStatus {
    /// Every bucket in scope that had work was compacted.
    #[default]
    Complete,
    /// No bucket in scope had work (nothing was committed).
    NothingToDo,
    /// Some bucket with work was left as it was: unsupported input, a refusal, or a partition
    /// another job holds (`skipped` lists each with its reason). What could be compacted was.
    Incomplete,
    /// The table was refused as a whole (`not_compactable` says why); nothing was done.
    Refused,
}

/// The version of the report's JSON schema (`docs/report.md`); raised on any change that is
/// not a pure addition.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// The result of a job.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CompactReport {
    /// [`REPORT_SCHEMA_VERSION`].
    #[serde(default)]
    pub schema_version: u32,
    #[serde(default)]
    pub status: JobStatus,
    pub table_path: String,
    pub job_id: String,
    pub full: bool,
    pub snapshot_before: Option<i64>,
    /// The COMPACT snapshot, when one was committed.
    pub snapshot_after: Option<i64>,
    pub commit: Option<CommitOutcome>,
    pub not_compactable: Option<String>,
    /// `not-compactable` or `unsupported`, when the table was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal_kind: Option<String>,
    /// What the job's scope left out.
    #[serde(default)]
    pub scope: ScopeSummary,
    pub buckets: Vec<BucketMetrics>,
    pub partitions: Vec<BucketMetrics>,
    pub skipped: Vec<SkippedBucket>,
    /// Partitions another job holds; retry later (`--wait`).
    pub leases_held_elsewhere: Vec<LeaseHeld>,
    pub totals: Totals,
    pub phases: PhaseTimes,
    pub warnings: Vec<String>,
}

/// Compacts the table at `table_path`; see the module documentation.
pub fn compact_table(
    storage: &dyn Storage,
    table_path: &str,
    opts: &CompactOptions<'_>,
) -> Result<CompactReport> {
    let now = || opts.clock.map_or(0, |c| c());
    let t0 = now();
    let internal = plan_state(
        storage,
        table_path,
        &PlanRequest {
            full: opts.full,
            context: opts.context,
            merge_rewriter: opts.merge_rewriter.is_some(),
            scope: opts.scope.clone(),
        },
        opts.skip_expired_partitions,
    )?;
    let t1 = now();
    let InternalPlan {
        state,
        plan,
        buckets,
        kept_state,
    } = internal;
    let job_id = uuid_string(opts.job_id);
    let mut report = CompactReport {
        schema_version: REPORT_SCHEMA_VERSION,
        status: JobStatus::Complete,
        refusal_kind: plan.refusal_kind.clone(),
        scope: plan.scope.clone(),
        table_path: plan.table_path.clone(),
        job_id: job_id.clone(),
        full: opts.full,
        snapshot_before: plan.snapshot_id,
        snapshot_after: None,
        commit: None,
        not_compactable: plan.not_compactable.clone(),
        buckets: Vec::new(),
        partitions: Vec::new(),
        skipped: Vec::new(),
        leases_held_elsewhere: Vec::new(),
        totals: Totals::default(),
        phases: PhaseTimes::default(),
        warnings: plan.warnings.clone(),
    };
    for b in &plan.buckets {
        if let Some(why) = &b.blocked {
            report.skipped.push(SkippedBucket {
                partition: b.partition.clone(),
                bucket: b.bucket,
                reason: why.clone(),
            });
        }
    }
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

    // Leases: one job per partition.
    let mut leases: Vec<Lease> = Vec::new();
    let mut leased_out: BTreeSet<BinaryRow> = BTreeSet::new();
    let mut work_partitions: BTreeMap<BinaryRow, String> = BTreeMap::new();
    for b in buckets.iter().filter(|b| b.work.is_some()) {
        let label = state.buckets[&b.key].partition_path.clone();
        work_partitions.insert(b.key.0.clone(), label);
    }
    if let Some(ttl) = opts.lease_ttl_ms {
        for (partition, label) in &work_partitions {
            let record = LeaseRecord {
                owner: opts.owner.clone(),
                job_id: job_id.clone(),
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
                Ok(Ok(l)) => leases.push(l),
                Ok(Err(held)) => {
                    leased_out.insert(partition.clone());
                    report.leases_held_elsewhere.push(held);
                }
                Err(e) => {
                    release_all(storage, &leases, &mut report.warnings);
                    return Err(e);
                }
            }
        }
    }
    let t2 = now();

    let mut ids = IdGen::new(opts.job_id);
    let mut written = WrittenFiles::default();
    let mut run = Run {
        storage,
        table: &state.table,
        state: &state,
        opts,
        ids: &mut ids,
        written: &mut written,
        delta: CommitDelta::default(),
        removed_dvs: BTreeMap::new(),
        dv_marks: BTreeMap::new(),
        external_pick: 0,
        external_seed: u64::from_le_bytes(opts.job_id[8..].try_into().unwrap_or_default()),
        metrics: Vec::new(),
    };
    let mut t3 = t2;
    let result = (|| -> Result<Option<CommitOutcome>> {
        for pb in &buckets {
            let Some(work) = &pb.work else { continue };
            if leased_out.contains(&pb.key.0) {
                continue;
            }
            run.bucket(pb, work)?;
        }
        run.deletion_vectors()?;
        t3 = now();
        if run.delta.is_empty() {
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
        let delta = std::mem::take(&mut run.delta);
        let request = commit::CommitRequest {
            table: &state.table,
            planned_on: Some(planned_on),
            delta: &delta,
            settings: &settings,
            sleep: opts.sleep,
        };
        commit::commit_with_backoff(storage, &request, run.ids, run.written).map(Some)
    })();
    let metrics = std::mem::take(&mut run.metrics);
    drop(run);
    let t4 = now();
    let outcome = match result {
        Ok(o) => o,
        Err(e) => {
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
            release_all(storage, &leases, &mut warnings);
            return Err(e);
        }
    };
    let held_elsewhere: BTreeSet<String> =
        leased_out.iter().map(|p| lease::lease_key(&p.0)).collect();
    save_kept_state(
        storage,
        &state.table,
        &kept_state,
        &held_elsewhere,
        &mut report.warnings,
    );
    release_all(storage, &leases, &mut report.warnings);
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
    report.partitions = by_partition(&metrics);
    report.totals = totals(&metrics, &report.partitions);
    report.buckets = metrics;
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

impl CompactReport {
    /// The status the report's contents imply.
    fn final_status(&self) -> JobStatus {
        if self.not_compactable.is_some() {
            JobStatus::Refused
        } else if !self.skipped.is_empty() {
            JobStatus::Incomplete
        } else if self.snapshot_after.is_none() && self.totals.buckets_compacted == 0 {
            JobStatus::NothingToDo
        } else {
            JobStatus::Complete
        }
    }
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

fn by_partition(buckets: &[BucketMetrics]) -> Vec<BucketMetrics> {
    let mut out: BTreeMap<String, BucketMetrics> = BTreeMap::new();
    for b in buckets {
        let p = out
            .entry(b.partition.clone())
            .or_insert_with(|| BucketMetrics {
                partition: b.partition.clone(),
                bucket: -1,
                reason: String::new(),
                ..BucketMetrics::default()
            });
        p.files_before += b.files_before;
        p.files_after += b.files_after;
        p.bytes_before += b.bytes_before;
        p.bytes_after += b.bytes_after;
        p.files_removed += b.files_removed;
        p.files_added += b.files_added;
        p.bytes_removed += b.bytes_removed;
        p.bytes_added += b.bytes_added;
        p.rows_read += b.rows_read;
        p.rows_written += b.rows_written;
        p.rows_deleted += b.rows_deleted;
        p.rewrites += b.rewrites;
        p.upgrades += b.upgrades;
        p.fast_copy_files += b.fast_copy_files;
        p.fast_copy_refused += b.fast_copy_refused;
        p.deletion_vectors_removed += b.deletion_vectors_removed;
        p.deletion_vector_marks += b.deletion_vector_marks;
        p.changelog_files += b.changelog_files;
        p.host_codec_pages_compressed += b.host_codec_pages_compressed;
        p.host_codec_pages_decompressed += b.host_codec_pages_decompressed;
    }
    out.into_values().collect()
}

fn totals(buckets: &[BucketMetrics], partitions: &[BucketMetrics]) -> Totals {
    let mut t = Totals {
        partitions: partitions.len(),
        buckets_compacted: buckets.len(),
        ..Totals::default()
    };
    for b in buckets {
        t.files_removed += b.files_removed;
        t.files_added += b.files_added;
        t.bytes_removed += b.bytes_removed;
        t.bytes_added += b.bytes_added;
        t.rows_read += b.rows_read;
        t.rows_written += b.rows_written;
        t.rewrites += b.rewrites;
        t.upgrades += b.upgrades;
        t.fast_copy_files += b.fast_copy_files;
        t.files_before += b.files_before;
        t.files_after += b.files_after;
    }
    t
}

/// The state of a running job.
struct Run<'s, 'a> {
    storage: &'s dyn Storage,
    table: &'s Table,
    state: &'s TableState,
    opts: &'s CompactOptions<'a>,
    ids: &'s mut IdGen,
    written: &'s mut WrittenFiles,
    delta: CommitDelta,
    /// Data files whose deletion vectors go away, by (partition, bucket).
    removed_dvs: BTreeMap<(BinaryRow, i32), BTreeSet<String>>,
    /// Counter of output directories handed out (external-path rotation).
    external_pick: usize,
    /// Seeds the `weight-robin` draws (from the job id).
    external_seed: u64,
    /// Row positions lookups found superseded, by (partition, bucket) and data file.
    dv_marks: BTreeMap<(BinaryRow, i32), BTreeMap<String, Vec<u64>>>,
    metrics: Vec<BucketMetrics>,
}

/// One merge of a merge-tree task: its inputs as sections of sorted runs, and what bounds the
/// lookup scope (the bucket's files above the output level, except the task's own).
struct MergeSpec<'t> {
    output_level: Level,
    max_level: Level,
    drop_delete: bool,
    sections: Vec<Vec<Vec<Arc<DataFileMeta>>>>,
    exclude: &'t BTreeSet<String>,
    bucket_files: &'t [Arc<DataFileMeta>],
}

fn live_file<'b>(b: &'b BucketState, name: &str) -> Result<&'b LiveFile> {
    b.files
        .iter()
        .find(|l| l.entry.file.file_name == name)
        .ok_or_else(|| Error::internal(format!("planned file '{name}' is not live")))
}

fn add_entry(b: &BucketState, file: DataFile) -> ManifestEntry {
    ManifestEntry {
        kind: FileKind::Add,
        partition: b.partition.clone(),
        bucket: b.bucket,
        total_buckets: b.total_buckets,
        file,
    }
}

fn delete_entry(l: &LiveFile) -> ManifestEntry {
    ManifestEntry {
        kind: FileKind::Delete,
        ..l.entry.clone()
    }
}

impl Run<'_, '_> {
    fn path_of(&self, b: &BucketState, l: &LiveFile) -> Result<String> {
        self.table
            .paths
            .live_data_file(&b.partition_path, b.bucket, &l.entry.file, &l.source)
    }

    /// For a file written under schema version `schema_id`: where each column of the latest
    /// schema comes from in the file, matched by Paimon field id at every depth (renames
    /// followed, added columns and nested fields `None`); `None` when the file is read as it is
    /// (the latest version, or one with its fields).
    fn column_map(&self, schema_id: i64) -> Result<Option<Vec<Option<ColumnSource>>>> {
        let latest = &self.table.schema;
        Ok(evolved_schema(self.storage, self.table, schema_id)?
            .map(|old| column_sources(&old.fields, &latest.fields)))
    }

    /// Where this job's next new files of the bucket go (rotating over external paths).
    fn output_dir(&mut self, b: &BucketState) -> (String, bool) {
        let pick = self.external_pick;
        self.external_pick += 1;
        // `weight-robin` draws at random, as Paimon's weighted provider does; the draws are a
        // splitmix64 stream seeded by the job id (the core has no randomness source).
        let mut z = self
            .external_seed
            .wrapping_add((pick as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let draw = z ^ (z >> 31);
        self.table
            .paths
            .output_bucket_dir(&b.partition_path, b.bucket, pick, draw)
    }

    fn deleted_rows(&self, l: &LiveFile) -> Result<Option<Vec<u64>>> {
        let Some((index_file, meta)) = &l.deletion_vector else {
            return Ok(None);
        };
        let path = self.table.paths.index_file(index_file, "index manifest")?;
        let bitmap = index::read_deletion_vector(self.storage, &path, meta)?;
        Ok(Some(bitmap.iter().map(u64::from).collect()))
    }

    /// Deletes whatever a failed rewrite may have left under its unique prefix.
    fn sweep(&mut self, dir: &str, prefix: &str) {
        if let Ok(list) = self.storage.list(&format!("{dir}/{prefix}")) {
            for o in list {
                self.written.track(&o.path);
            }
        }
    }

    fn bucket(&mut self, pb: &PlannedBucket, work: &Work) -> Result<()> {
        let b = &self.state.buckets[&pb.key];
        let before: Vec<Arc<DataFileMeta>> = b.planner_files(self.table)?;
        let mut m = BucketMetrics {
            partition: b.partition_path.clone(),
            bucket: b.bucket,
            files_before: before.len(),
            bytes_before: before.iter().map(|f| f.file_size).sum(),
            levels_before: level_stats(&before),
            ..BucketMetrics::default()
        };
        let mut removed: BTreeSet<String> = BTreeSet::new();
        let mut added: Vec<Arc<DataFileMeta>> = Vec::new();
        match work {
            Work::Append(tasks) => {
                m.reason = "append compaction".into();
                for task in tasks {
                    self.append_task(b, task, &mut m, &mut removed, &mut added)?;
                }
            }
            Work::MergeTree(decision) => {
                m.reason = decision.reason.to_string();
                self.merge_tree_task(b, pb, decision, &mut m, &mut removed, &mut added)?;
            }
        }
        let mut after: Vec<Arc<DataFileMeta>> = before
            .iter()
            .filter(|f| !removed.contains(&f.file_name))
            .cloned()
            .collect();
        after.extend(added);
        m.files_after = after.len();
        m.bytes_after = after.iter().map(|f| f.file_size).sum();
        m.levels_after = level_stats(&after);
        self.metrics.push(m);
        Ok(())
    }

    fn append_task(
        &mut self,
        b: &BucketState,
        task: &[usize],
        m: &mut BucketMetrics,
        removed: &mut BTreeSet<String>,
        added: &mut Vec<Arc<DataFileMeta>>,
    ) -> Result<()> {
        let latest = &self.table.schema;
        let maps = task
            .iter()
            .map(|&i| self.column_map(b.files[i].entry.file.schema_id))
            .collect::<Result<Vec<_>>>()?;
        let evolved = maps.iter().any(Option::is_some);
        let mut inputs = Vec::with_capacity(task.len());
        for (&i, map) in task.iter().zip(maps) {
            let l = &b.files[i];
            // In an evolved task every file is mapped onto the latest schema's Arrow form,
            // files with the latest fields through the identity map.
            let columns = match map {
                Some(map) => Some(map),
                None if evolved => Some(column_sources(&latest.fields, &latest.fields)),
                None => None,
            };
            inputs.push(AppendInput {
                path: self.path_of(b, l)?,
                meta: Arc::new(planner_meta(self.table, l)?),
                deleted_rows: self.deleted_rows(l)?,
                columns,
            });
        }
        // Files of several schema versions are all read as the latest one and written so.
        let table_schema = if evolved {
            Some(table_arrow_schema(latest)?)
        } else {
            None
        };
        let (output_dir, external) = self.output_dir(b);
        let prefix = format!("data-{}-", self.ids.next_uuid());
        let req = AppendRewrite {
            inputs,
            table_schema,
            output_dir: output_dir.clone(),
            file_prefix: prefix.clone(),
            output_level: Level::ZERO,
            creation_time_ms: self.opts.context.now_ms,
            collect_value_stats: true,
        };
        let result = match rewrite_append(self.storage, &req, &self.table.options) {
            Ok(r) => r,
            Err(e) => {
                self.sweep(&output_dir, &prefix);
                return Err(e);
            }
        };
        for o in &result.outputs {
            self.written.track(&o.path);
        }
        // Evolved or not, the outputs have the latest fields: files of versions that only
        // changed options are read as they are and their outputs are of the latest version.
        let schema_id = latest.id;
        for &i in task {
            let l = &b.files[i];
            self.delta.entries.push(delete_entry(l));
            removed.insert(l.entry.file.file_name.clone());
            m.files_removed += 1;
            m.bytes_removed += l.entry.file.file_size.max(0) as u64;
            if l.deletion_vector.is_some() {
                self.removed_dvs
                    .entry((b.partition.clone(), b.bucket))
                    .or_default()
                    .insert(l.entry.file.file_name.clone());
                m.deletion_vectors_removed += 1;
            }
        }
        for o in &result.outputs {
            // Value statistics name columns of the file's schema: only written when that is
            // the latest, whose fields they are computed against.
            let (value_stats, value_stats_cols) = match &o.value_stats {
                Some(columns) if schema_id == self.table.schema.id => {
                    super::value_stats::value_stats(self.table, columns, o.meta.row_count)?
                }
                _ => (SimpleStats::empty(), Vec::new()),
            };
            let f = DataFile {
                file_name: o.meta.file_name.clone(),
                file_size: o.meta.file_size as i64,
                row_count: o.meta.row_count as i64,
                min_key: BinaryRow::empty(),
                max_key: BinaryRow::empty(),
                key_stats: SimpleStats::empty(),
                value_stats,
                min_sequence_number: o.meta.min_sequence_number.0,
                max_sequence_number: o.meta.max_sequence_number.0,
                schema_id,
                level: 0,
                extra_files: Vec::new(),
                creation_time: Some(self.opts.context.now_ms),
                delete_row_count: Some(0),
                embedded_file_index: None,
                file_source: Some(1),
                value_stats_cols: Some(value_stats_cols),
                external_path: external.then(|| o.path.clone()),
                first_row_id: None,
                write_cols: None,
                write_cols_sequences: None,
            };
            self.delta.entries.push(add_entry(b, f));
            added.push(Arc::new(o.meta.clone()));
            m.files_added += 1;
            m.bytes_added += o.meta.file_size;
        }
        let rm = &result.metrics;
        m.rows_read += rm.input_rows;
        m.rows_written += rm.output_rows;
        m.rows_deleted += rm.deleted_rows;
        m.rewrites += 1;
        m.fast_copy_files += rm.fast_copy.files_copied;
        m.fast_copy_refused += rm.fast_copy.refused.len();
        m.host_codec_pages_compressed += rm.host_codec.pages_compressed;
        m.host_codec_pages_decompressed += rm.host_codec.pages_decompressed;
        for c in &rm.passthrough.columns {
            if !m.passthrough_columns.contains(c) {
                m.passthrough_columns.push(c.clone());
            }
        }
        Ok(())
    }

    fn merge_tree_task(
        &mut self,
        b: &BucketState,
        pb: &PlannedBucket,
        decision: &MergeTreeDecision,
        m: &mut BucketMetrics,
        removed: &mut BTreeSet<String>,
        added: &mut Vec<Arc<DataFileMeta>>,
    ) -> Result<()> {
        let bucket_files = b.planner_files(self.table)?;
        let max_level =
            Levels::new(self.table.options.num_levels, bucket_files.clone())?.max_level();
        // Every file the task reads or replaces; the rest of the bucket above the output level
        // is where lookups find older versions of its keys.
        let task_files: BTreeSet<String> = decision
            .task
            .actions
            .iter()
            .flat_map(|a| {
                a.inputs()
                    .iter()
                    .map(|f| f.file_name.clone())
                    .collect::<Vec<_>>()
            })
            .collect();
        for action in &decision.task.actions {
            match action {
                TaskAction::Upgrade { file, to_level } => {
                    let strategy = match self.opts.merge_rewriter {
                        Some(_) => crate::plan::upgrade_strategy_for(
                            &self.table.options,
                            file.level,
                            file.delete_row_count,
                            *to_level,
                            max_level,
                        ),
                        // Planning blocked every upgrade that needs more than metadata.
                        None => UpgradeStrategy::NoChangelogNoRewrite,
                    };
                    // The spec's "force drop delete" of upgrade-path merges: only the lookup
                    // rewriter in deletion-vector mode drops retracts there.
                    let drop_delete = self.table.options.deletion_vectors_enabled
                        && self.table.options.changelog_producer
                            != ChangelogProducer::FullCompaction;
                    let merge = MergeSpec {
                        output_level: *to_level,
                        max_level,
                        drop_delete,
                        sections: vec![vec![vec![file.clone()]]],
                        exclude: &task_files,
                        bucket_files: &bucket_files,
                    };
                    match strategy {
                        UpgradeStrategy::ChangelogWithRewrite => {
                            self.merge_rewrite(b, &merge, m, removed, added)?;
                            continue;
                        }
                        UpgradeStrategy::ChangelogNoRewrite => {
                            // Changelog and deletion-vector marks only; the file itself moves up.
                            self.run_merge(b, &merge, false, m)?;
                        }
                        UpgradeStrategy::NoChangelogNoRewrite => {}
                    }
                    let l = live_file(b, &file.file_name)?;
                    self.delta.entries.push(delete_entry(l));
                    let mut up = l.entry.file.with_level(to_level.get() as i32);
                    if let Some(verified) = pb.verified_delete_counts.get(&file.file_name) {
                        // Record what the footer proved; unknown stays unknown (readers merge).
                        up.delete_row_count = verified.map(|c| c as i64);
                    }
                    self.delta.entries.push(add_entry(b, up));
                    removed.insert(file.file_name.clone());
                    added.push(Arc::new(file.upgrade(*to_level)));
                    m.upgrades += 1;
                }
                TaskAction::Rewrite {
                    output_level,
                    sections,
                    ..
                } => {
                    let merge = MergeSpec {
                        output_level: *output_level,
                        max_level,
                        drop_delete: decision.drop_delete,
                        sections: sections
                            .iter()
                            .map(|s| s.iter().map(|r| r.files().to_vec()).collect())
                            .collect(),
                        exclude: &task_files,
                        bucket_files: &bucket_files,
                    };
                    self.merge_rewrite(b, &merge, m, removed, added)?;
                }
            }
        }
        Ok(())
    }

    /// Merges the spec's inputs into new files that replace them (their vectors go with them).
    fn merge_rewrite(
        &mut self,
        b: &BucketState,
        merge: &MergeSpec<'_>,
        m: &mut BucketMetrics,
        removed: &mut BTreeSet<String>,
        added: &mut Vec<Arc<DataFileMeta>>,
    ) -> Result<()> {
        let outputs = self.run_merge(b, merge, true, m)?;
        for f in merge.sections.iter().flatten().flatten() {
            let l = live_file(b, &f.file_name)?;
            self.delta.entries.push(delete_entry(l));
            removed.insert(f.file_name.clone());
            m.files_removed += 1;
            m.bytes_removed += f.file_size;
            if l.deletion_vector.is_some() {
                self.removed_dvs
                    .entry((b.partition.clone(), b.bucket))
                    .or_default()
                    .insert(f.file_name.clone());
                m.deletion_vectors_removed += 1;
            }
        }
        for f in outputs {
            let meta = planner_meta(
                self.table,
                &LiveFile {
                    entry: add_entry(b, f.clone()),
                    source: "merge rewriter output".into(),
                    deletion_vector: None,
                },
            )?;
            m.files_added += 1;
            m.bytes_added += meta.file_size;
            added.push(Arc::new(meta));
            self.delta.entries.push(add_entry(b, f));
        }
        m.rewrites += 1;
        Ok(())
    }

    /// Runs the merge rewriter over the spec (writing data files only with `write_data`),
    /// records its changelog files and deletion-vector marks, and returns the new data files.
    fn run_merge(
        &mut self,
        b: &BucketState,
        merge: &MergeSpec<'_>,
        write_data: bool,
        m: &mut BucketMetrics,
    ) -> Result<Vec<DataFile>> {
        let rewriter = self
            .opts
            .merge_rewriter
            .ok_or_else(|| Error::unsupported("a merge-tree rewrite without a merge rewriter"))?;
        let input = |f: &Arc<DataFileMeta>| -> Result<MergeRewriteInput> {
            let l = live_file(b, &f.file_name)?;
            Ok(MergeRewriteInput {
                path: self.path_of(b, l)?,
                meta: f.clone(),
                file: l.entry.file.clone(),
                deleted_rows: self.deleted_rows(l)?,
            })
        };
        let sections = merge
            .sections
            .iter()
            .map(|s| {
                s.iter()
                    .map(|r| r.iter().map(&input).collect::<Result<Vec<_>>>())
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        let higher_levels = merge
            .bucket_files
            .iter()
            .filter(|f| f.level > merge.output_level && !merge.exclude.contains(&f.file_name))
            .map(&input)
            .collect::<Result<Vec<_>>>()?;
        let (output_dir, external) = self.output_dir(b);
        let uuid = self.ids.next_uuid();
        let req = MergeRewriteRequest {
            table: self.table,
            output_dir: output_dir.clone(),
            file_prefix: format!("data-{uuid}-"),
            changelog_prefix: format!("changelog-{uuid}-"),
            output_level: merge.output_level,
            max_level: merge.max_level,
            drop_delete: merge.drop_delete,
            write_data,
            sections,
            higher_levels,
            creation_time_ms: self.opts.context.now_ms,
        };
        let mut result = match rewriter.rewrite(self.storage, &req) {
            Ok(r) => r,
            Err(e) => {
                self.sweep(&output_dir, &req.file_prefix);
                self.sweep(&output_dir, &req.changelog_prefix);
                return Err(e);
            }
        };
        for p in &result.written {
            self.written.track(p);
        }
        if external {
            for f in result.outputs.iter_mut().chain(result.changelog.iter_mut()) {
                f.external_path = Some(format!("{output_dir}/{}", f.file_name));
            }
        }
        if !result.deletion_vector_marks.is_empty() {
            let marks = self
                .dv_marks
                .entry((b.partition.clone(), b.bucket))
                .or_default();
            for (file, positions) in result.deletion_vector_marks {
                let l = live_file(b, &file)?;
                if !self
                    .delta
                    .marked
                    .iter()
                    .any(|e| e.identifier() == l.entry.identifier())
                {
                    self.delta.marked.push(l.entry.clone());
                }
                m.deletion_vector_marks += positions.len() as u64;
                marks.entry(file).or_default().extend(positions);
            }
        }
        for f in result.changelog {
            m.changelog_files += 1;
            self.delta.changelog.push(add_entry(b, f));
        }
        m.rows_read += result.rows_read;
        m.rows_written += result.rows_written;
        m.host_codec_pages_compressed += result.host_codec.pages_compressed;
        m.host_codec_pages_decompressed += result.host_codec.pages_decompressed;
        Ok(result.outputs)
    }

    /// Rewrites the deletion-vector index of every bucket whose vectors changed (files that
    /// were rewritten lose theirs, lookups add marks to files above the output): the bucket's
    /// old index files go and one new file holds every vector that remains, as Paimon's
    /// deletion-vector maintainer does.
    fn deletion_vectors(&mut self) -> Result<()> {
        let removed_dvs = std::mem::take(&mut self.removed_dvs);
        let dv_marks = std::mem::take(&mut self.dv_marks);
        let no_files = BTreeSet::new();
        let no_marks = BTreeMap::new();
        let touched: BTreeSet<&(BinaryRow, i32)> =
            removed_dvs.keys().chain(dv_marks.keys()).collect();
        for key in touched {
            let (partition, bucket) = key;
            let gone = removed_dvs.get(key).unwrap_or(&no_files);
            let marks = dv_marks.get(key).unwrap_or(&no_marks);
            let entries: Vec<&IndexManifestEntry> = self
                .state
                .index_entries
                .iter()
                .filter(|e| {
                    e.index_type == DELETION_VECTORS_INDEX
                        && &e.partition == partition
                        && e.bucket == *bucket
                })
                .collect();
            let mut keep: BTreeMap<String, RoaringBitmap> = BTreeMap::new();
            for e in &entries {
                let path = self
                    .table
                    .paths
                    .index_file(&e.file_name, "index manifest")?;
                for r in e.dv_ranges.iter().flatten() {
                    if !gone.contains(&r.data_file) {
                        let bm = index::read_deletion_vector(self.storage, &path, r)?;
                        keep.entry(r.data_file.clone())
                            .or_default()
                            .extend(bm.iter());
                    }
                }
                self.delta.index.push(IndexManifestEntry {
                    kind: FileKind::Delete,
                    ..(*e).clone()
                });
            }
            for (file, positions) in marks {
                if gone.contains(file) {
                    continue;
                }
                let bm = keep.entry(file.clone()).or_default();
                for &p in positions {
                    let p = u32::try_from(p).map_err(|_| {
                        Error::unsupported(format!(
                            "row position {p} of '{file}' is beyond a 32-bit deletion vector"
                        ))
                    })?;
                    bm.insert(p);
                }
            }
            keep.retain(|_, bm| !bm.is_empty());
            if !keep.is_empty() {
                let (bytes, ranges) = index::encode_deletion_vectors(&keep)?;
                let name = format!("index-{}-0", self.ids.next_uuid());
                let path = self.table.paths.index_file(&name, "compaction job")?;
                let size = commit::write_tracked(self.storage, self.written, &path, &bytes)?;
                self.delta.index.push(IndexManifestEntry {
                    kind: FileKind::Add,
                    partition: partition.clone(),
                    bucket: *bucket,
                    index_type: DELETION_VECTORS_INDEX.to_string(),
                    file_name: name,
                    file_size: size as i64,
                    row_count: ranges.len() as i64,
                    dv_ranges: Some(ranges),
                    external_path: None,
                    global_index: None,
                });
            }
        }
        Ok(())
    }
}
