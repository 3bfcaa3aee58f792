//! Planning a compaction job over a whole table: scan the partitions and buckets of the job's
//! scope, refuse the table as a whole when a guard says so, and plan every bucket with the
//! planner — primary-key buckets in [`merge_tree`], append buckets (bucketed, or packed by the
//! unaware-bucket coordinator) in [`append`] — with the reason a bucket's work cannot run
//! here, if it cannot. Reads only.

mod append;
pub(super) mod merge_tree;

pub(super) use merge_tree::plan_merge_tree_bucket;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::binary_row::BinaryRow;
use super::guards;
use super::job_state::{self, PartitionState};
use super::lease;
use super::manifest::POSTPONE_BUCKET;
use super::scan::{BucketState, Table, TableState};
use super::schema::TableSchema;
use super::scope::{JobScope, ResolvedScope};
use crate::error::{ErrorKind, Result};
use crate::meta::CompactionFile;
use crate::options::TableKind;
use crate::plan::{
    route_job, CompactionMode, MergeTreeDecision, PlanContext, Reason, RewriteAlone,
    UpgradeStrategy,
};
use crate::storage::Storage;

/// Files and bytes of one level of a bucket.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LevelStat {
    /// The LSM level (always 0 for append tables); only levels holding files are listed.
    pub level: u32,
    /// Live data files at this level.
    pub files: usize,
    /// Sum of their sizes in bytes, as the manifests record them.
    pub bytes: u64,
}

/// One step of a planned task.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum PlannedAction {
    /// Append files rewritten together into new files.
    AppendRewrite {
        /// Names of the input files, in the order they are rewritten.
        files: Vec<String>,
        /// Sum of the inputs' sizes in bytes.
        bytes: u64,
    },
    /// A file recorded at a higher level (no data read or written).
    Upgrade {
        /// Name of the file that moves.
        file: String,
        /// The level it is recorded at now.
        from_level: u32,
        /// The level it is recorded at after the commit.
        to_level: u32,
        /// What the move involves (compaction.md §10.2): metadata only, a changelog /
        /// deletion-vector lookup over the file, or a rewrite of the file with the looked-up
        /// values.
        strategy: UpgradeStrategy,
    },
    /// Primary-key files merged into new files at `output_level`.
    MergeRewrite {
        /// The level of the new files (`compaction.md` §4.5).
        output_level: u32,
        /// Names of every input file, section by section.
        files: Vec<String>,
        /// Number of sections: groups of overlapping sorted runs merged independently, in
        /// key order (`compaction.md` §8).
        sections: usize,
        /// Set when a single file is rewritten for a reason other than merging (deletes at
        /// the max level, `compaction.force-rewrite-all-files`, expired records).
        alone: Option<RewriteAlone>,
    },
    /// A partition's postpone files replayed into its real buckets (compaction.md §11.2);
    /// each bucket that receives rows is then compacted as the table's strategy decides.
    Replay {
        /// Names of the postpone files, in replay order (oldest creation time first).
        files: Vec<String>,
        /// The partition's bucket count.
        buckets: i32,
    },
}

/// The plan of one partition and bucket.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BucketPlan {
    /// The partition's directory (`k=v/...`; empty for an unpartitioned table).
    pub partition: String,
    /// Bucket id (-2 for the postpone bucket of a `bucket = -2` table, which is never
    /// compacted here).
    pub bucket: i32,
    /// Live data files of the bucket.
    pub files: usize,
    /// Sum of the live data files' sizes in bytes.
    pub bytes: u64,
    /// Files and bytes per level, lowest level first.
    pub levels: Vec<LevelStat>,
    /// The planner's rule and its numbers.
    pub reason: Reason,
    /// The same, as one line.
    pub reason_text: String,
    /// The planned steps in execution order; empty when the bucket has nothing to do.
    pub actions: Vec<PlannedAction>,
    /// Files the plan removes from the bucket (rewritten inputs; upgrades stay).
    pub files_removed: usize,
    /// Set when the bucket has work this build cannot run; nothing is done to it.
    pub blocked: Option<String>,
    /// Whether the merge drops retract records from its output (`compaction.md` §7.2);
    /// always `false` for append buckets.
    pub drop_delete: bool,
}

impl BucketPlan {
    /// `true` when the job will run this bucket's actions: there are some and nothing
    /// blocks them.
    pub fn has_work(&self) -> bool {
        !self.actions.is_empty() && self.blocked.is_none()
    }
}

/// The plan of a table.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TablePlan {
    /// The table directory, relative to the storage root.
    pub table_path: String,
    /// The snapshot the plan was made on; `None` for a table without snapshots.
    pub snapshot_id: Option<i64>,
    /// Primary-key or append table, from the schema.
    pub table_kind: TableKind,
    /// The compaction machinery routing chose; `None` when the table is refused.
    pub mode: Option<CompactionMode>,
    /// Why the table is refused as a whole (a guarded option, data evolution, blob columns,
    /// ...), with nothing done to it.
    pub not_compactable: Option<String>,
    /// The error kind of that refusal: `not-compactable` (another job's work by design) or
    /// `unsupported` (this build cannot compact it correctly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal_kind: Option<String>,
    /// Whether a forced full compaction was planned ([`PlanRequest::full`]).
    pub full: bool,
    /// One entry per bucket in scope, with or without work; empty when the table is
    /// refused.
    pub buckets: Vec<BucketPlan>,
    /// Totals over `buckets`.
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
    /// Distinct partitions among the planned buckets.
    pub partitions: usize,
    /// Planned buckets, with or without work.
    pub buckets: usize,
    /// Live data files of all planned buckets.
    pub files: usize,
    /// Sum of those files' sizes in bytes.
    pub bytes: u64,
    /// Buckets the job would run ([`BucketPlan::has_work`]).
    pub buckets_with_work: usize,
    /// Buckets with work this build cannot run ([`BucketPlan::blocked`]).
    pub buckets_blocked: usize,
    /// Rewrite actions (append or merge) over the buckets with work.
    pub rewrites: usize,
    /// Upgrade actions over the buckets with work.
    pub upgrades: usize,
    /// Sum of [`BucketPlan::files_removed`] over the buckets with work.
    pub files_removed: usize,
}

/// What to plan.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlanRequest {
    /// Forced full compaction of every bucket instead of the automatic pick.
    pub full: bool,
    /// `now` (epoch milliseconds) and the local hour the planner's time-based rules use
    /// (early full compaction, off-peak hours, idle time).
    pub context: PlanContext,
    /// Which partitions and buckets, and with which dynamic options.
    #[serde(default)]
    pub scope: JobScope,
}

/// The work the job does in one bucket; in a fan-out task's JSON `{"append": [[0, 1], ...]}`
/// or `{"merge-tree": <decision>}`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Work {
    /// Groups of indices into the bucket's files, each group rewritten together.
    Append(Vec<Vec<usize>>),
    /// The merge-tree planner's decision, its files named as the bucket's live files.
    MergeTree(Box<MergeTreeDecision>),
    /// A partition's postpone files replayed into its real buckets, which are then compacted
    /// (the task carries the real buckets' files too).
    Postpone(super::postpone::PostponeWork),
}

/// The plan of one bucket as the job runs it.
#[derive(Clone, Debug)]
pub(in crate::table) struct PlannedBucket {
    pub(in crate::table) key: (BinaryRow, i32),
    pub(in crate::table) work: Option<Work>,
    /// Delete counts verified from footers, by file name (PK level-0 files).
    pub(in crate::table) verified_delete_counts: BTreeMap<String, Option<u64>>,
}

/// A table's plan with what running it needs: the scanned state the plan was made on and the
/// plan of each bucket.
pub(in crate::table) struct InternalPlan {
    pub(in crate::table) state: TableState,
    pub(in crate::table) plan: TablePlan,
    pub(in crate::table) buckets: Vec<PlannedBucket>,
    /// Planner state to keep for the next run, by partition lease key (`job_state`); empty
    /// for tables whose planning keeps none.
    pub(in crate::table) kept_state: BTreeMap<String, PartitionState>,
}

/// Files and bytes per level of `files`.
pub(in crate::table) fn level_stats(files: &[Arc<CompactionFile>]) -> Vec<LevelStat> {
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

/// Scans and plans the table (see the module documentation), keeping what running the plan
/// needs.
pub(in crate::table) fn plan_state(
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
        CompactionMode::MergeTree => merge_tree::plan_buckets(
            storage,
            table,
            &state,
            request,
            &mut plan,
            &mut planned,
            &mut kept_state,
        )?,
        CompactionMode::BucketedAppend => {
            append::plan_bucketed(storage, table, &state, request, &mut plan, &mut planned)?
        }
        CompactionMode::UnawareBucketCoordinator => append::plan_coordinator(
            storage,
            table,
            &state,
            request,
            &mut plan,
            &mut planned,
            &mut kept_state,
        )?,
    }
    summarize(&mut plan);
    Ok(InternalPlan {
        state,
        plan,
        buckets: planned,
        kept_state,
    })
}

/// Fills in the plan's totals from its buckets.
fn summarize(plan: &mut TablePlan) {
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

/// Where each of `files` is in the bucket's live files.
fn indices_of(b: &BucketState, files: &[Arc<CompactionFile>]) -> Vec<usize> {
    files
        .iter()
        .filter_map(|f| {
            b.files
                .iter()
                .position(|l| l.entry.file.file_name == f.file_name)
        })
        .collect()
}

/// The schema version `schema_id` when files written under it need schema evolution, `None`
/// when they are read as files of the latest version are: decided once per version for the
/// whole job by [`super::schema::SchemaVersions`], so planning and both rewriters agree.
pub(super) fn evolved_schema(
    storage: &dyn Storage,
    table: &Table,
    schema_id: i64,
) -> Result<Option<Arc<TableSchema>>> {
    table
        .schema_versions
        .evolved(storage, &table.paths, &table.schema, schema_id)
}
