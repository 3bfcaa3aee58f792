//! Partition expiration (Paimon's `NormalPartitionExpire` and its strategies).
//!
//! A partitioned table with `partition.expiration-time` loses whole partitions once they are
//! old enough. "Old" has two meanings (`partition.expiration-strategy`):
//! * `values-time` (default): the partition's values spell a date or date-time. Without
//!   `partition.timestamp-pattern` the first partition column is the text; with it, every
//!   `$column` in the template is replaced by that column's value (longer column names first,
//!   so `$hr` is not eaten by `$h`). The text is read with `partition.timestamp-formatter` (a
//!   Java `DateTimeFormatter` pattern; a date without a time means midnight) or, without one,
//!   as `y-M-d[ H:m:s[.fraction]]` with lenient field values. A partition whose text cannot be
//!   read, or that holds a null, is never expired.
//! * `update-time`: the newest creation time among the partition's live files.
//!
//! Both are compared, strictly, with `now - expiration-time` on the local wall clock
//! ([`MaintenanceContext::local_now_ms`]), as Java compares `LocalDateTime`s. The candidates
//! come from the latest snapshot, are ordered by their `,`-joined value strings (a null shows as
//! `partition.default-name`) and cut to `partition.expiration-max-num`.
//!
//! Dropping is a commit, never a file deletion: one `OVERWRITE` snapshot per batch of
//! `partition.expiration-batch-size` partitions (default: all in one), whose delta deletes every
//! live data file of the batch and the batch's index files. The files themselves go when
//! snapshot expiration later passes that snapshot. A commit that loses a race to a commit
//! touching the same partitions re-reads the table and drops what is live then, as Paimon's
//! overwrite does.
//!
//! How often: Paimon's committer checks at most once per `partition.expiration-check-interval`
//! and remembers the last check in memory only, starting at its construction time minus a
//! random part of the interval (so a short batch job never reaches a check unless
//! `end-input.check-partition-expire` is set and the commit is the end-of-input one).
//! [`PartitionExpirer`] is that memory: it starts the same way (the random part comes from the
//! job id), and [`PartitionExpirer::load`] / [`PartitionExpirer::save`] keep it in
//! `compaction-state/partition-expire.json` so a one-shot job run periodically behaves like
//! Paimon's long-running job. [`expire_partitions`] is the procedure: it always checks.
//!
//! [`expired_partitions`] is the pure selection, and [`PartitionExpireConfig::is_value_expired`]
//! the `values-time` test that `compaction.skip-expired-partitions` uses to leave expired
//! partitions out of compaction plans.

use std::collections::{BTreeMap, HashSet};

use super::time;
use super::MaintenanceContext;
use crate::error::{Error, ErrorKind, Result};
use crate::options::maintenance::{PartitionExpireLimits, PartitionExpireOptions};
use crate::storage::{Storage, StorageErrorKind};
use crate::table::binary_row::{BinaryRow, Datum};
use crate::table::commit::{self, CommitDelta, CommitSettings, WrittenFiles};
use crate::table::ids::IdGen;
use crate::table::manifest::FileKind;
use crate::table::path::TablePaths;
use crate::table::scan::{scan_at, Table, TableState};
use crate::table::schema::DataType;
use crate::table::snapshot::{latest_snapshot_id, CommitKind};

pub use crate::options::maintenance::{
    ExpireStrategy, BATCH_SIZE, CHECK_INTERVAL, END_INPUT_CHECK, EXPIRATION_TIME, MAX_NUM,
    SKIP_EXPIRED, STRATEGY, TIMESTAMP_FORMATTER, TIMESTAMP_PATTERN,
};

/// Where [`PartitionExpirer::save`] keeps the last check time (beside the job's other state).
pub const CHECK_STATE_FILE: &str = "compaction-state/partition-expire.json";

/// The partition-expiration options of a table.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PartitionExpireConfig {
    /// `partition.expiration-time` in milliseconds: a partition older than `now` minus this
    /// expires.
    pub expiration_time_ms: i64,
    /// `0`: check on every call.
    pub check_interval_ms: i64,
    /// `partition.expiration-strategy`: judge a partition by its values or by its files'
    /// creation times.
    pub strategy: ExpireStrategy,
    /// `partition.timestamp-formatter`, a Java `DateTimeFormatter` pattern, already checked to
    /// compile; `None` reads `y-M-d[ H:m:s[.fraction]]` leniently.
    pub timestamp_formatter: Option<String>,
    /// `partition.timestamp-pattern`, a template of `$column` references; `None` uses the
    /// first partition column's value.
    pub timestamp_pattern: Option<String>,
    /// At most this many partitions per check.
    pub max_num: usize,
    /// Partitions per OVERWRITE commit; `<= 0` or `>=` the count: one commit.
    pub batch_size: i64,
    /// `end-input.check-partition-expire`: always check at the end-of-input commit.
    pub end_input_check: bool,
    /// `compaction.skip-expired-partitions`, effective for `values-time` only.
    pub skip_expired_in_compaction: bool,
}

impl PartitionExpireConfig {
    /// Reads the options; `None` when `partition.expiration-time` is not set.
    pub fn from_options(raw: &BTreeMap<String, String>) -> Result<Option<Self>> {
        let Some(o) = PartitionExpireOptions::read_if_enabled(raw)? else {
            return Ok(None);
        };
        let Some(expiration_time_ms) = o.expiration_time_ms else {
            return Ok(None);
        };
        if let Some(f) = &o.timestamp_formatter {
            time::compile_pattern(f)
                .map_err(|why| Error::invalid_option(TIMESTAMP_FORMATTER, f, why))?;
        }
        let limits = PartitionExpireLimits::read(raw)?;
        Ok(Some(PartitionExpireConfig {
            expiration_time_ms,
            check_interval_ms: o.check_interval_ms,
            strategy: o.strategy,
            timestamp_formatter: o.timestamp_formatter,
            timestamp_pattern: limits.timestamp_pattern,
            max_num: limits.max_num,
            batch_size: limits.batch_size.unwrap_or(limits.max_num as i64),
            end_input_check: limits.end_input_check,
            skip_expired_in_compaction: limits.skip_expired_in_compaction,
        }))
    }

    /// Whether compaction should leave value-expired partitions out of its plans
    /// (`compaction.skip-expired-partitions`; `values-time` only).
    pub fn skips_expired_in_compaction(&self) -> bool {
        self.skip_expired_in_compaction && self.strategy == ExpireStrategy::ValuesTime
    }

    /// The partition's time by its values (local wall-clock milliseconds), `None` when the
    /// values do not spell one (or hold a null).
    pub fn partition_time(
        &self,
        keys: &[String],
        types: &[DataType],
        values: &[Datum],
    ) -> Option<i64> {
        let text = match &self.timestamp_pattern {
            None => java_string(values.first()?, types.first()?)?,
            Some(pattern) => {
                let strings: Vec<String> = values
                    .iter()
                    .zip(types)
                    .map(|(v, t)| java_string(v, t))
                    .collect::<Option<_>>()?;
                let mut order: Vec<usize> = (0..keys.len().min(strings.len())).collect();
                order.sort_by_key(|&i| std::cmp::Reverse(keys[i].len()));
                let mut text = pattern.clone();
                for i in order {
                    text = text.replace(&format!("${}", keys[i]), &strings[i]);
                }
                text
            }
        };
        match &self.timestamp_formatter {
            None => time::parse_default_timestamp(&text),
            Some(f) => time::parse_with_pattern(f, &text),
        }
    }

    /// The `values-time` test: the partition's time is strictly before
    /// `local now - expiration-time`. Unreadable or null values are never expired.
    pub fn is_value_expired(
        &self,
        table: &Table,
        values: &[Datum],
        ctx: &MaintenanceContext,
    ) -> bool {
        let keys = &table.schema.partition_keys;
        let expire_at = ctx.local_now_ms().saturating_sub(self.expiration_time_ms);
        self.partition_time(keys, &table.partition_types, values)
            .is_some_and(|t| expire_at > t)
    }
}

/// A value as Java's `toString` of the partition object shows it (`LocalDateTime` form for
/// timestamps); `None` for null.
fn java_string(d: &Datum, t: &DataType) -> Option<String> {
    match d {
        Datum::Null => None,
        Datum::Timestamp { millis, nanos } => Some(time::local_date_time_string(*millis, *nanos)),
        other => other.to_partition_string(t),
    }
}

/// One partition chosen for expiration.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExpiredPartition {
    /// The typed values, in partition-key order.
    pub values: Vec<Datum>,
    /// `(key, value)` as Paimon reports them (null as `partition.default-name`).
    pub spec: Vec<(String, String)>,
    /// The serialized partition row.
    #[serde(skip)]
    pub partition: BinaryRow,
}

impl ExpiredPartition {
    /// `k=v, k2=v2`, the procedure's output row.
    pub fn display(&self) -> String {
        self.spec
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The partitions of `state` that a check at `ctx` expires, in Paimon's order, at most
/// `max-num` of them. Pure: reads nothing beyond `state`.
pub fn expired_partitions(
    state: &TableState,
    config: &PartitionExpireConfig,
    ctx: &MaintenanceContext,
) -> Result<Vec<ExpiredPartition>> {
    Ok(select(state, config, ctx).0)
}

/// [`expired_partitions`] with warnings about partitions that could not be judged.
fn select(
    state: &TableState,
    config: &PartitionExpireConfig,
    ctx: &MaintenanceContext,
) -> (Vec<ExpiredPartition>, Vec<String>) {
    let table = &state.table;
    let keys = &table.schema.partition_keys;
    let mut warnings = Vec::new();
    if keys.is_empty() {
        return (Vec::new(), warnings);
    }
    // Each partition once, with the newest creation time of its live files.
    let mut partitions: BTreeMap<&BinaryRow, (&[Datum], Option<i64>)> = BTreeMap::new();
    for b in state.buckets.values() {
        let e = partitions
            .entry(&b.partition)
            .or_insert((b.partition_values.as_slice(), None));
        for f in &b.files {
            if let Some(t) = f.entry.file.creation_time {
                e.1 = e.1.max(Some(t));
            }
        }
    }
    let expire_at = ctx.local_now_ms().saturating_sub(config.expiration_time_ms);
    let mut chosen: Vec<(String, ExpiredPartition)> = Vec::new();
    for (row, (values, newest)) in partitions {
        let spec: Vec<(String, String)> = keys
            .iter()
            .zip(values.iter().zip(&table.partition_types))
            .map(|(k, (v, t))| {
                (
                    k.clone(),
                    java_string(v, t).unwrap_or_else(|| table.default_partition_name.clone()),
                )
            })
            .collect();
        let expired = match config.strategy {
            ExpireStrategy::ValuesTime => {
                match config.partition_time(keys, &table.partition_types, values) {
                    Some(t) => expire_at > t,
                    None => {
                        warnings.push(format!(
                            "partition {} has no readable time in its values; it is never \
                             expired by values-time (drop it by hand or use update-time)",
                            spec_text(&spec)
                        ));
                        false
                    }
                }
            }
            ExpireStrategy::UpdateTime => match newest {
                Some(t) => expire_at > t,
                None => {
                    warnings.push(format!(
                        "partition {}: no live file records a creation time; not expired",
                        spec_text(&spec)
                    ));
                    false
                }
            },
        };
        if expired {
            let joined = spec
                .iter()
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
                .join(",");
            chosen.push((
                joined,
                ExpiredPartition {
                    values: values.to_vec(),
                    spec,
                    partition: row.clone(),
                },
            ));
        }
    }
    chosen.sort_by(|a, b| a.0.cmp(&b.0));
    chosen.truncate(config.max_num);
    (chosen.into_iter().map(|(_, p)| p).collect(), warnings)
}

fn spec_text(spec: &[(String, String)]) -> String {
    spec.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Who the drop commits are attributed to, and how they retry.
#[derive(Clone)]
pub struct DropCommit<'a> {
    /// Paimon reuses the triggering commit's user (the procedure uses `""`).
    pub commit_user: String,
    /// The triggering commit's identifier (`i64::MAX` for end of input and procedures).
    pub identifier: i64,
    /// Random bytes from the host: names of the written metadata, the check's random start.
    pub job_id: [u8; 16],
    /// Rebase attempts per commit after losing the snapshot race.
    pub max_retries: usize,
    /// Waits between attempts (milliseconds), supplied by the host.
    pub sleep: Option<&'a dyn Fn(u64)>,
}

impl DropCommit<'_> {
    /// The `expire_partitions` procedure's attribution: user `""`, identifier `i64::MAX`.
    pub fn procedure(job_id: [u8; 16]) -> Self {
        DropCommit {
            commit_user: String::new(),
            identifier: i64::MAX,
            job_id,
            max_retries: 10,
            sleep: None,
        }
    }
}

/// What one check did.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PartitionExpireReport {
    /// `false` when the check interval had not passed (nothing was read).
    pub checked: bool,
    /// The run only reported ([`MaintenanceContext::dry_run`]): nothing was committed.
    pub dry_run: bool,
    /// The dropped partitions (in a dry run: those that would be), in Paimon's order.
    pub expired: Vec<ExpiredPartition>,
    /// The OVERWRITE snapshots committed, one per batch.
    pub snapshots: Vec<i64>,
    /// Data files removed from the table by those snapshots (still on storage until snapshot
    /// expiration passes them).
    pub files_dropped: usize,
    /// Partitions that could not be judged (so were kept), and caveats of the drop; none of
    /// them fails the run.
    pub warnings: Vec<String>,
}

impl PartitionExpireReport {
    /// The procedure's output: one `k=v, k2=v2` row per partition.
    pub fn rows(&self) -> Vec<String> {
        if self.expired.is_empty() {
            return vec!["No expired partitions.".to_string()];
        }
        self.expired.iter().map(ExpiredPartition::display).collect()
    }
}

/// Checks now (as the `expire_partitions` procedure does, whatever the check interval) and
/// drops the expired partitions of the table's latest snapshot.
pub fn expire_partitions(
    storage: &dyn Storage,
    table: &Table,
    config: &PartitionExpireConfig,
    ctx: &MaintenanceContext,
    commit: &DropCommit<'_>,
) -> Result<PartitionExpireReport> {
    let mut report = PartitionExpireReport {
        checked: true,
        dry_run: ctx.dry_run,
        ..Default::default()
    };
    if table.schema.partition_keys.is_empty() {
        return Ok(report);
    }
    let latest = latest_snapshot_id(storage, &table.paths)?;
    let state = scan_at(storage, table.clone(), latest)?;
    let (expired, warnings) = select(&state, config, ctx);
    report.warnings = warnings;
    if table
        .schema
        .options
        .get("metastore.partitioned-table")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    {
        report.warnings.push(
            "metastore.partitioned-table is set: Paimon drops such partitions through the \
             catalog; this drop is the file-system OVERWRITE commit and the metastore is not told"
                .to_string(),
        );
    }
    report.expired = expired;
    if report.expired.is_empty() || ctx.dry_run {
        report.files_dropped = state
            .buckets
            .values()
            .filter(|b| report.expired.iter().any(|p| p.partition == b.partition))
            .map(|b| b.files.len())
            .sum();
        return Ok(report);
    }
    let batch = if config.batch_size > 0 && (config.batch_size as usize) < report.expired.len() {
        config.batch_size as usize
    } else {
        report.expired.len()
    };
    // The names of the written metadata come from the job id and the snapshot the selection
    // read, so a job id reused on a changed table still writes fresh names.
    let mut seed = commit.job_id;
    let read_at = state.snapshot_id().unwrap_or(0).to_le_bytes();
    for (b, x) in seed.iter_mut().zip(read_at) {
        *b ^= x;
    }
    let mut ids = IdGen::new(seed);
    let batches: Vec<HashSet<BinaryRow>> = report
        .expired
        .chunks(batch)
        .map(|c| c.iter().map(|p| p.partition.clone()).collect())
        .collect();
    let mut current = state;
    for partitions in batches {
        if let Some((id, files)) = drop_batch(
            storage,
            table,
            &mut current,
            &partitions,
            ctx,
            commit,
            &mut ids,
        )? {
            report.snapshots.push(id);
            report.files_dropped += files;
        }
    }
    Ok(report)
}

/// The delta that removes every live data and index file of `partitions` in `state`.
fn drop_delta(state: &TableState, partitions: &HashSet<BinaryRow>) -> CommitDelta {
    let mut delta = CommitDelta::default();
    for b in state.buckets.values() {
        if partitions.contains(&b.partition) {
            for f in &b.files {
                let mut e = f.entry.clone();
                e.kind = FileKind::Delete;
                delta.entries.push(e);
            }
        }
    }
    for e in &state.index_entries {
        if partitions.contains(&e.partition) {
            let mut e = e.clone();
            e.kind = FileKind::Delete;
            delta.index.push(e);
        }
    }
    delta
}

/// Commits one batch as an OVERWRITE snapshot; on a conflict (another commit changed these
/// partitions since `state` was read) re-reads the table and tries again with what is live
/// then. Returns the snapshot and the number of data files it removed, or `None` when nothing
/// of the batch is live any more.
fn drop_batch(
    storage: &dyn Storage,
    table: &Table,
    state: &mut TableState,
    partitions: &HashSet<BinaryRow>,
    ctx: &MaintenanceContext,
    commit: &DropCommit<'_>,
    ids: &mut IdGen,
) -> Result<Option<(i64, usize)>> {
    const REREADS: usize = 3;
    let settings = CommitSettings {
        kind: CommitKind::Overwrite,
        commit_user: commit.commit_user.clone(),
        now_ms: ctx.now_ms,
        max_retries: commit.max_retries,
        jitter_seed: u64::from_le_bytes(commit.job_id[..8].try_into().unwrap_or_default()),
        merge_manifests: true,
        commit_identifier: commit.identifier,
    };
    let mut attempt = 0;
    loop {
        let delta = drop_delta(state, partitions);
        if delta.entries.is_empty() && delta.index.is_empty() {
            return Ok(None);
        }
        let mut written = WrittenFiles::default();
        let request = commit::CommitRequest {
            table,
            planned_on: state.snapshot_id(),
            delta: &delta,
            settings: &settings,
            sleep: commit.sleep,
        };
        let result = commit::commit_with_backoff(storage, &request, ids, &mut written);
        match result {
            Ok(outcome) => return Ok(Some((outcome.snapshot_id, delta.entries.len()))),
            Err(mut e) => {
                if !e.commit_may_have_happened() {
                    e = e.with_cleanup_failures(&written.delete_all(storage));
                }
                if e.kind != ErrorKind::Conflict || attempt >= REREADS {
                    return Err(e);
                }
                attempt += 1;
                let latest = latest_snapshot_id(storage, &table.paths)?;
                *state = scan_at(storage, table.clone(), latest)?;
            }
        }
    }
}

/// The committer's memory of its last check (Paimon keeps it in memory only).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PartitionExpirer {
    /// The options it expires by (the table's as of the run; not persisted in the state file).
    pub config: PartitionExpireConfig,
    /// The last check, local wall-clock milliseconds.
    pub last_check_local_ms: i64,
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct CheckState {
    version: u32,
    last_check_local_ms: i64,
}

fn check_state_path(paths: &TablePaths) -> String {
    if paths.root().is_empty() {
        CHECK_STATE_FILE.to_string()
    } else {
        format!("{}/{CHECK_STATE_FILE}", paths.root())
    }
}

impl PartitionExpirer {
    /// A fresh committer's memory: the last check is "now" minus a random whole number of
    /// seconds below the interval (drawn from the job id), as in Paimon.
    pub fn new(config: PartitionExpireConfig, ctx: &MaintenanceContext, job_id: [u8; 16]) -> Self {
        let secs = (config.check_interval_ms / 1000).max(0) as u64;
        let rnd = if secs > 0 {
            u64::from_le_bytes(job_id[8..].try_into().unwrap_or_default()) % secs
        } else {
            0
        };
        let last_check_local_ms = ctx
            .local_now_ms()
            .saturating_sub((rnd as i64).saturating_mul(1000));
        PartitionExpirer {
            config,
            last_check_local_ms,
        }
    }

    /// The memory kept by [`PartitionExpirer::save`]; a fresh one ([`PartitionExpirer::new`])
    /// when there is none or it cannot be read (the file is advisory).
    pub fn load(
        storage: &dyn Storage,
        paths: &TablePaths,
        config: PartitionExpireConfig,
        ctx: &MaintenanceContext,
        job_id: [u8; 16],
    ) -> Self {
        let path = check_state_path(paths);
        match storage
            .read_all(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<CheckState>(&b).ok())
        {
            Some(s) => PartitionExpirer {
                config,
                last_check_local_ms: s.last_check_local_ms,
            },
            None => Self::new(config, ctx, job_id),
        }
    }

    /// Keeps the last check time for the next run.
    pub fn save(&self, storage: &dyn Storage, paths: &TablePaths) -> Result<()> {
        let path = check_state_path(paths);
        let bytes = serde_json::to_vec(&CheckState {
            version: 1,
            last_check_local_ms: self.last_check_local_ms,
        })
        .unwrap_or_default();
        storage.write_all(&path, &bytes)?;
        Ok(())
    }

    /// Whether a check is due: interval zero, strictly more than the interval since the last
    /// check, or the end-of-input commit with `end-input.check-partition-expire`.
    pub fn is_due(&self, ctx: &MaintenanceContext, identifier: i64) -> bool {
        self.config.check_interval_ms == 0
            || ctx.local_now_ms()
                > self
                    .last_check_local_ms
                    .saturating_add(self.config.check_interval_ms)
            || (self.config.end_input_check && identifier == i64::MAX)
    }

    /// The post-commit hook: checks if due (see [`PartitionExpirer::is_due`]) and remembers
    /// the check once it succeeded (not in a dry run, which changes nothing).
    pub fn expire(
        &mut self,
        storage: &dyn Storage,
        table: &Table,
        ctx: &MaintenanceContext,
        commit: &DropCommit<'_>,
    ) -> Result<PartitionExpireReport> {
        if !self.is_due(ctx, commit.identifier) {
            return Ok(PartitionExpireReport {
                dry_run: ctx.dry_run,
                ..Default::default()
            });
        }
        let report = expire_partitions(storage, table, &self.config, ctx, commit)?;
        if !ctx.dry_run {
            self.last_check_local_ms = ctx.local_now_ms();
        }
        Ok(report)
    }
}

/// Whether a storage error is "not found" (used by the other maintenance files).
pub(crate) fn is_not_found(e: &Error) -> bool {
    matches!(
        &e.kind,
        ErrorKind::Io {
            storage: StorageErrorKind::NotFound,
            ..
        }
    )
}
