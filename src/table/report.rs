//! What a compaction job is asked to do ([`CompactOptions`]) and what it reports
//! ([`CompactReport`]: files and bytes removed and added per partition and bucket, levels
//! before and after, rows, rewrites, upgrades, fast copies, passthrough use, time per phase,
//! and the job's [`JobStatus`]; `docs/report.md` describes the JSON form).

use std::collections::BTreeMap;

use super::commit::CommitOutcome;
use super::lease::LeaseHeld;
use super::plan::{ExpiredPartitionTest, LevelStat, ScopeSummary, TablePlan};
use super::scope::JobScope;
use crate::plan::PlanContext;

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

impl<'a> CompactOptions<'a> {
    /// Options for an incremental (not full) job over the whole table: owner
    /// `paimon-compact`, 10-minute leases, 10 commit retries, no clock, no back-off sleep,
    /// the default commit user, the default [`JobScope`] and no expired-partition test.
    pub fn new(context: PlanContext, job_id: [u8; 16]) -> Self {
        CompactOptions {
            full: false,
            context,
            job_id,
            owner: "paimon-compact".to_string(),
            lease_ttl_ms: Some(10 * 60 * 1000),
            max_commit_retries: 10,
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
    /// Partition path, `k1=v1/k2=v2` as in the bucket directory (empty for an unpartitioned
    /// table).
    pub partition: String,
    /// Bucket id; `-1` in the per-partition sums ([`CompactReport::partitions`]).
    pub bucket: i32,
    /// Why the bucket was compacted: the planner rule that fired with its numbers
    /// (`compaction.md` §4), or `append compaction`; empty in the per-partition sums.
    pub reason: String,
    /// Live data files of the bucket before the job.
    pub files_before: usize,
    /// Live data files of the bucket after the job's commit (an upgraded file counts once,
    /// at its new level).
    pub files_after: usize,
    /// Bytes of the live data files before the job.
    pub bytes_before: u64,
    /// Bytes of the live data files after the job's commit.
    pub bytes_after: u64,
    /// Input files the rewrites replaced (upgrades are not counted here).
    pub files_removed: usize,
    /// Data files the rewrites wrote (changelog files are counted in `changelog_files`).
    pub files_added: usize,
    /// Bytes of the files in `files_removed`.
    pub bytes_removed: u64,
    /// Bytes of the files in `files_added`.
    pub bytes_added: u64,
    /// Files and bytes per level before the job, lowest level first.
    pub levels_before: Vec<LevelStat>,
    /// Files and bytes per level after the job's commit, lowest level first.
    pub levels_after: Vec<LevelStat>,
    /// Rows the rewriters read from their inputs, retracts included (the append rewrite counts
    /// rows before deletion vectors are applied, the merge rewrite after).
    pub rows_read: u64,
    /// Rows the rewriters wrote to new data files.
    pub rows_written: u64,
    /// Rows dropped because a deletion vector marked them.
    pub rows_deleted: u64,
    /// Rows dropped because their time field had expired (`record-level.expire-time`).
    #[serde(default)]
    pub rows_expired: u64,
    /// Level-0 runs merged into temporary runs first, because a merge would have read more
    /// runs side by side than `paimon-compact.merge.max-runs` (`compaction.md` §10.1).
    #[serde(default)]
    pub spilled_runs: u64,
    /// Rewrite tasks run: one per append task and one per merge-tree rewrite (including an
    /// upgrade that has to rewrite to produce changelog, `compaction.md` §10.2).
    pub rewrites: usize,
    /// Files moved to a higher level without rewriting (`compaction.md` §9): a DELETE at the
    /// old level and an ADD of the same file at the new one.
    pub upgrades: usize,
    /// Inputs whose row groups were copied without decoding.
    pub fast_copy_files: u64,
    /// Inputs the append rewrite considered for the row-group fast copy and had to decode
    /// instead.
    pub fast_copy_refused: usize,
    /// Columns written through dictionary passthrough.
    pub passthrough_columns: Vec<String>,
    /// Inputs whose deletion vector went away with them (their deleted rows were dropped by
    /// the rewrite, `format.md` §10).
    pub deletion_vectors_removed: usize,
    /// Row positions added to the deletion vectors of files above the output (lookup).
    pub deletion_vector_marks: u64,
    /// Changelog files written (`changelog-producer` lookup or full-compaction).
    pub changelog_files: usize,
    /// Pages whose zstd the host ran for the component (`codec` import); zero natively and
    /// on hosts that offer no codec.
    #[serde(default)]
    pub host_codec_pages_compressed: u64,
    /// Pages whose zstd decompression the host ran for the component; zero natively and on
    /// hosts that offer no codec.
    #[serde(default)]
    pub host_codec_pages_decompressed: u64,
}

/// Totals over partitions.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Totals {
    /// Partitions with at least one compacted bucket.
    pub partitions: usize,
    /// Buckets the job compacted (entries of [`CompactReport::buckets`]).
    pub buckets_compacted: usize,
    /// Sum of [`BucketMetrics::files_removed`].
    pub files_removed: usize,
    /// Sum of [`BucketMetrics::files_added`].
    pub files_added: usize,
    /// Sum of [`BucketMetrics::bytes_removed`].
    pub bytes_removed: u64,
    /// Sum of [`BucketMetrics::bytes_added`].
    pub bytes_added: u64,
    /// Sum of [`BucketMetrics::rows_read`].
    pub rows_read: u64,
    /// Sum of [`BucketMetrics::rows_written`].
    pub rows_written: u64,
    /// Sum of [`BucketMetrics::rows_expired`].
    #[serde(default)]
    pub rows_expired: u64,
    /// Sum of [`BucketMetrics::rewrites`].
    pub rewrites: usize,
    /// Sum of [`BucketMetrics::upgrades`].
    pub upgrades: usize,
    /// Sum of [`BucketMetrics::fast_copy_files`].
    pub fast_copy_files: u64,
    /// Live data files of the compacted buckets before the job (buckets not compacted are
    /// not counted).
    pub files_before: usize,
    /// Live data files of the compacted buckets after the job's commit.
    pub files_after: usize,
}

/// Milliseconds per phase (zero without a clock).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PhaseTimes {
    /// Reading the schema, snapshot and manifests, and planning every bucket.
    pub scan_plan_ms: i64,
    /// Taking the partitions' leases (`format.md` §11).
    pub lease_ms: i64,
    /// Running the rewriters and writing the deletion-vector index files.
    pub rewrite_ms: i64,
    /// Writing manifests and publishing the snapshot, rebases and back-off waits included.
    pub commit_ms: i64,
    /// From the start of the scan to the end of the commit (cleanup is not timed).
    pub total_ms: i64,
}

/// A bucket that had work and was not compacted.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SkippedBucket {
    /// Partition path, `k1=v1/k2=v2` (empty for an unpartitioned table).
    pub partition: String,
    /// Bucket id; `-1` when the whole partition was skipped because another job holds its
    /// lease.
    pub bucket: i32,
    /// Why the work was left: the refusal or unsupported input, or the lease holder.
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
    /// How the job ended, derived from the rest of the report.
    #[serde(default)]
    pub status: JobStatus,
    /// The table directory, relative to the storage root.
    pub table_path: String,
    /// The job id in UUID form; every file the job wrote derives its name from it
    /// (`format.md` §1).
    pub job_id: String,
    /// Whether this was a forced full compaction ([`CompactOptions::full`]).
    pub full: bool,
    /// The snapshot the job planned on; `None` for a table without snapshots.
    pub snapshot_before: Option<i64>,
    /// The COMPACT snapshot, when one was committed.
    pub snapshot_after: Option<i64>,
    /// How the commit went (attempts, rebases, warnings, manifest merge); `None` when
    /// nothing was committed.
    pub commit: Option<CommitOutcome>,
    /// Why the table was refused as a whole; `None` unless [`JobStatus::Refused`].
    pub not_compactable: Option<String>,
    /// `not-compactable` or `unsupported`, when the table was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal_kind: Option<String>,
    /// What the job's scope left out.
    #[serde(default)]
    pub scope: ScopeSummary,
    /// One entry per compacted bucket.
    pub buckets: Vec<BucketMetrics>,
    /// `buckets` summed per partition, in partition-path order, with `bucket` -1 and an empty
    /// `reason`.
    pub partitions: Vec<BucketMetrics>,
    /// Every bucket (or leased partition) with work that was left as it was.
    pub skipped: Vec<SkippedBucket>,
    /// Partitions another job holds; retry later (`--wait`).
    pub leases_held_elsewhere: Vec<LeaseHeld>,
    /// Sums over `buckets`.
    pub totals: Totals,
    /// Milliseconds per phase, on the caller's monotonic clock.
    pub phases: PhaseTimes,
    /// Problems that did not stop the job (an ignored dynamic option, a lease that could not
    /// be released, ...).
    pub warnings: Vec<String>,
}

impl CompactReport {
    /// The report of a job that planned `plan`, before it ran: the plan's refusal, scope and
    /// warnings, and a skipped entry for every bucket the plan blocked.
    pub(super) fn for_plan(plan: &TablePlan, job_id: String, full: bool) -> Self {
        let mut report = CompactReport {
            schema_version: REPORT_SCHEMA_VERSION,
            status: JobStatus::Complete,
            refusal_kind: plan.refusal_kind.clone(),
            scope: plan.scope.clone(),
            table_path: plan.table_path.clone(),
            job_id,
            full,
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
        report
    }

    /// Records the metrics of the buckets the job compacted, with their sums per partition
    /// and in total.
    pub(super) fn record_buckets(&mut self, metrics: Vec<BucketMetrics>) {
        self.partitions = by_partition(&metrics);
        self.totals = totals(&metrics, &self.partitions);
        self.buckets = metrics;
    }

    /// The status the report's contents imply.
    pub(super) fn final_status(&self) -> JobStatus {
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
        p.rows_expired += b.rows_expired;
        p.spilled_runs += b.spilled_runs;
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
        t.rows_expired += b.rows_expired;
        t.rewrites += b.rewrites;
        t.upgrades += b.upgrades;
        t.fast_copy_files += b.fast_copy_files;
        t.files_before += b.files_before;
        t.files_after += b.files_after;
    }
    t
}
