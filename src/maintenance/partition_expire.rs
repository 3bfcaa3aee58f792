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
    pub expiration_time_ms: i64,
    /// `0`: check on every call.
    pub check_interval_ms: i64,
    pub strategy: ExpireStrategy,
    pub timestamp_formatter: Option<String>,
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
    pub dry_run: bool,
    /// The dropped partitions (in a dry run: those that would be), in Paimon's order.
    pub expired: Vec<ExpiredPartition>,
    /// The OVERWRITE snapshots committed, one per batch.
    pub snapshots: Vec<i64>,
    /// Data files removed from the table by those snapshots (still on storage until snapshot
    /// expiration passes them).
    pub files_dropped: usize,
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
                    let failed = written.delete_all(storage);
                    if !failed.is_empty() {
                        e.message = format!(
                            "{} (cleanup could not delete: {})",
                            e.message,
                            failed.join("; ")
                        );
                    }
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

/// Java's `java.time` parsing as Paimon uses it, on local wall-clock milliseconds (a
/// `LocalDateTime` read as if it were UTC): the partition timestamp formats and the tag
/// period names. Parsing is strict about the text (every character consumed, digits counted
/// as Java's adjacent value parsing counts them) and resolves fields leniently or "smartly"
/// as the formatter says.
pub(crate) mod time {
    pub const DAY_MS: i64 = 86_400_000;

    /// Days since 1970-01-01 of a proleptic Gregorian date.
    pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y.rem_euclid(400);
        let mp = (m + 9) % 12;
        let doy = (153 * mp + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    /// `(year, month, day)` of days since 1970-01-01.
    pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
        let z = z + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let y = yoe + era * 400;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        (if m <= 2 { y + 1 } else { y }, m, d)
    }

    /// Calendar fields of local milliseconds: year, month, day, hour, minute, second, nanos.
    pub fn fields_of(local_ms: i64) -> [i64; 7] {
        let days = local_ms.div_euclid(DAY_MS);
        let ms = local_ms.rem_euclid(DAY_MS);
        let (y, m, d) = civil_from_days(days);
        [
            y,
            m,
            d,
            ms / 3_600_000,
            ms / 60_000 % 60,
            ms / 1000 % 60,
            ms % 1000 * 1_000_000,
        ]
    }

    fn is_leap(y: i64) -> bool {
        y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
    }

    fn month_len(y: i64, m: i64) -> i64 {
        match m {
            4 | 6 | 9 | 11 => 30,
            2 if is_leap(y) => 29,
            2 => 28,
            _ => 31,
        }
    }

    /// `LocalDateTime.toString()`: `yyyy-MM-ddTHH:mm[:ss[.fff[fff[fff]]]]`.
    pub fn local_date_time_string(millis: i64, nanos: i32) -> String {
        let [y, mo, d, h, mi, s, n] = fields_of(millis);
        let nano = n + nanos as i64;
        let mut out = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}");
        if s > 0 || nano > 0 {
            out.push_str(&format!(":{s:02}"));
            if nano > 0 {
                if nano % 1_000_000 == 0 {
                    out.push_str(&format!(".{:03}", nano / 1_000_000));
                } else if nano % 1000 == 0 {
                    out.push_str(&format!(".{:06}", nano / 1000));
                } else {
                    out.push_str(&format!(".{nano:09}"));
                }
            }
        }
        out
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Field {
        Year,
        Month,
        Day,
        Hour,
        Minute,
        Second,
        Nano,
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Sign {
        Normal,
        NotNegative,
        ExceedsPad,
    }

    /// A number field (Java's `NumberPrinterParser` and the fixed-width subclasses).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Num {
        pub field: Field,
        pub min: usize,
        pub max: usize,
        pub sign: Sign,
        /// Digits reserved for the fixed-width fields that follow it without a separator;
        /// `-1` once it stopped being the first of such a run.
        pub subsequent: i64,
        /// `yy`: two digits added to this base.
        pub reduced_base: Option<i64>,
        /// `S..S`: the digits are a fraction of a second.
        pub fraction: bool,
    }

    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum Tok {
        Num(Num),
        Lit(char),
        /// `.` and 1 to 9 digits of a second (the default partition timestamp format).
        PointFraction,
        Optional(Vec<Tok>),
    }

    /// Java's `DateTimeFormatterBuilder`: appending a value after a value starts or extends an
    /// adjacent run; anything else ends it.
    #[derive(Default)]
    pub struct Builder {
        toks: Vec<Tok>,
        active: Option<usize>,
    }

    impl Builder {
        pub fn value(&mut self, mut n: Num) -> &mut Self {
            match self.active {
                Some(a) => {
                    let fixed = n.min == n.max && n.sign == Sign::NotNegative;
                    if let Tok::Num(base) = &mut self.toks[a] {
                        if fixed {
                            base.subsequent += n.max as i64;
                            n.subsequent = -1;
                            self.toks.push(Tok::Num(n));
                            return self;
                        }
                        base.subsequent = -1;
                    }
                    self.toks.push(Tok::Num(n));
                    self.active = Some(self.toks.len() - 1);
                }
                None => {
                    self.toks.push(Tok::Num(n));
                    self.active = Some(self.toks.len() - 1);
                }
            }
            self
        }

        pub fn other(&mut self, t: Tok) -> &mut Self {
            self.toks.push(t);
            self.active = None;
            self
        }

        pub fn lit(&mut self, s: &str) -> &mut Self {
            for c in s.chars() {
                self.other(Tok::Lit(c));
            }
            self
        }

        pub fn build(self) -> Vec<Tok> {
            self.toks
        }
    }

    pub fn num(field: Field, min: usize, max: usize, sign: Sign) -> Num {
        Num {
            field,
            min,
            max,
            sign,
            subsequent: 0,
            reduced_base: None,
            fraction: false,
        }
    }

    /// Compiles a `DateTimeFormatter.ofPattern` pattern (the letters a date-time partition
    /// needs: `y u M L d H m s S`, literals and quoted text).
    pub fn compile_pattern(pattern: &str) -> Result<Vec<Tok>, String> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut b = Builder::default();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c.is_ascii_alphabetic() {
                let mut n = 1;
                while i + n < chars.len() && chars[i + n] == c {
                    n += 1;
                }
                i += n;
                let simple = |field: Field| -> Result<Num, String> {
                    match n {
                        1 => Ok(num(field, 1, 19, Sign::Normal)),
                        2 => Ok(num(field, 2, 2, Sign::NotNegative)),
                        _ => Err(format!("too many pattern letters: {c}")),
                    }
                };
                let tok = match c {
                    'y' | 'u' => match n {
                        2 => Num {
                            reduced_base: Some(2000),
                            ..num(Field::Year, 2, 2, Sign::NotNegative)
                        },
                        1 | 3 => num(Field::Year, n, 19, Sign::Normal),
                        _ => num(Field::Year, n, 19, Sign::ExceedsPad),
                    },
                    'M' | 'L' if n <= 2 => simple(Field::Month)?,
                    'd' => simple(Field::Day)?,
                    'H' => simple(Field::Hour)?,
                    'm' => simple(Field::Minute)?,
                    's' => simple(Field::Second)?,
                    'S' if n <= 9 => Num {
                        fraction: true,
                        ..num(Field::Nano, n, n, Sign::NotNegative)
                    },
                    _ => {
                        return Err(format!(
                            "pattern letter '{c}' ({n}x) is not supported; use y, u, M, d, H, \
                             m, s, S and literals"
                        ))
                    }
                };
                b.value(tok);
            } else if c == '\'' {
                let mut j = i + 1;
                let mut text = String::new();
                loop {
                    match chars.get(j) {
                        None => return Err("unterminated quote".into()),
                        Some('\'') if chars.get(j + 1) == Some(&'\'') => {
                            text.push('\'');
                            j += 2;
                        }
                        Some('\'') => break,
                        Some(&ch) => {
                            text.push(ch);
                            j += 1;
                        }
                    }
                }
                if j == i + 1 {
                    text.push('\'');
                }
                b.lit(&text);
                i = j + 1;
            } else if matches!(c, '[' | ']' | '{' | '}' | '#') {
                return Err(format!("'{c}' is not supported in the pattern"));
            } else {
                b.other(Tok::Lit(c));
                i += 1;
            }
        }
        Ok(b.build())
    }

    type Values = [Option<i64>; 7];

    fn slot(f: Field) -> usize {
        f as usize
    }

    fn set(v: &mut Values, f: Field, x: i64) -> bool {
        match v[slot(f)] {
            Some(old) if old != x => false,
            _ => {
                v[slot(f)] = Some(x);
                true
            }
        }
    }

    fn digits_at(text: &[char], pos: usize, max: usize) -> usize {
        text[pos..]
            .iter()
            .take(max)
            .take_while(|c| c.is_ascii_digit())
            .count()
    }

    fn parse_seq(toks: &[Tok], text: &[char], mut pos: usize, v: &mut Values) -> Option<usize> {
        for t in toks {
            match t {
                Tok::Lit(c) => {
                    if text.get(pos) != Some(c) {
                        return None;
                    }
                    pos += 1;
                }
                Tok::Optional(inner) => {
                    let saved = *v;
                    match parse_seq(inner, text, pos, v) {
                        Some(p) => pos = p,
                        None => *v = saved,
                    }
                }
                Tok::PointFraction => {
                    if text.get(pos) != Some(&'.') {
                        return None;
                    }
                    let n = digits_at(text, pos + 1, 9);
                    if n == 0 {
                        return None;
                    }
                    let digits: String = text[pos + 1..pos + 1 + n].iter().collect();
                    let x: i64 = digits.parse().ok()?;
                    if !set(v, Field::Nano, x * 10i64.pow(9 - n as u32)) {
                        return None;
                    }
                    pos += 1 + n;
                }
                Tok::Num(n) => {
                    // Strict parsing: exactly `min..=max` digits, plus the reserved widths
                    // of a run, given back on a second pass (Java's adjacent value parsing).
                    if pos + n.min > text.len() {
                        return None;
                    }
                    let sub = n.subsequent.max(0) as usize;
                    let mut width = n.max.saturating_add(sub);
                    let mut count = digits_at(text, pos, width);
                    if sub > 0 {
                        width = n.min.max(count.saturating_sub(sub));
                        count = digits_at(text, pos, width);
                    }
                    if count < n.min {
                        return None;
                    }
                    if n.sign == Sign::ExceedsPad && count > n.min {
                        return None;
                    }
                    if count > 18 {
                        return None;
                    }
                    let digits: String = text[pos..pos + count].iter().collect();
                    let mut x: i64 = digits.parse().ok()?;
                    if let Some(base) = n.reduced_base {
                        x += base;
                    }
                    if n.fraction {
                        x *= 10i64.pow(9u32.saturating_sub(count as u32));
                    }
                    if !set(v, n.field, x) {
                        return None;
                    }
                    pos += count;
                }
            }
        }
        Some(pos)
    }

    /// The fields of `text` if the whole text matches.
    pub fn parse_fields(toks: &[Tok], text: &str) -> Option<Values> {
        let chars: Vec<char> = text.chars().collect();
        let mut v: Values = [None; 7];
        let end = parse_seq(toks, &chars, 0, &mut v)?;
        (end == chars.len()).then_some(v)
    }

    /// Java's resolver styles.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Style {
        Smart,
        Lenient,
    }

    /// The resolved date (epoch day) and time (nanos of day) if they can be built; `Err` when
    /// a value is out of range (Java fails the whole parse).
    pub fn resolve(v: &Values, style: Style) -> Result<(Option<i64>, Option<i64>), ()> {
        let get = |f: Field| v[slot(f)];
        let mut time: Option<i64> = None;
        let mut excess_days = 0;
        if style == Style::Smart {
            for (f, lo, hi) in [
                (Field::Month, 1, 12),
                (Field::Day, 1, 31),
                (Field::Hour, 0, 24),
                (Field::Minute, 0, 59),
                (Field::Second, 0, 59),
                (Field::Nano, 0, 999_999_999),
            ] {
                if get(f).is_some_and(|x| x < lo || x > hi) {
                    return Err(());
                }
            }
        }
        if let Some(h) = get(Field::Hour) {
            let (mi, s, n) = (get(Field::Minute), get(Field::Second), get(Field::Nano));
            let invalid_combination = (mi.is_none() && (s.is_some() || n.is_some()))
                || (mi.is_some() && s.is_none() && n.is_some());
            if !invalid_combination {
                let (mi, s, n) = (mi.unwrap_or(0), s.unwrap_or(0), n.unwrap_or(0));
                if style == Style::Smart && h == 24 {
                    if mi != 0 || s != 0 || n != 0 {
                        return Err(());
                    }
                    excess_days = 1;
                    time = Some(0);
                } else {
                    let total = h
                        .checked_mul(3_600_000_000_000)
                        .and_then(|t| t.checked_add(mi.checked_mul(60_000_000_000)?))
                        .and_then(|t| t.checked_add(s.checked_mul(1_000_000_000)?))
                        .and_then(|t| t.checked_add(n))
                        .ok_or(())?;
                    let day = 86_400_000_000_000;
                    excess_days = total.div_euclid(day);
                    time = Some(total.rem_euclid(day));
                }
            }
        }
        let date = match (get(Field::Year), get(Field::Month), get(Field::Day)) {
            (Some(y), Some(m), Some(d)) => Some(match style {
                Style::Lenient => {
                    let months = y
                        .checked_mul(12)
                        .and_then(|t| t.checked_add(m - 1))
                        .ok_or(())?;
                    let (ny, nm) = (months.div_euclid(12), months.rem_euclid(12) + 1);
                    days_from_civil(ny, nm, 1) + (d - 1)
                }
                Style::Smart => days_from_civil(y, m, d.min(month_len(y, m))),
            }),
            _ => None,
        };
        Ok((date.map(|d| d + excess_days), time))
    }

    /// `LocalDateTime.parse`, falling back to `LocalDate.parse` at midnight: local ms.
    pub fn parse_date_time_or_date(toks: &[Tok], text: &str, style: Style) -> Option<i64> {
        let v = parse_fields(toks, text)?;
        let (date, time) = resolve(&v, style).ok()?;
        let date = date?;
        let nanos = time.unwrap_or(0);
        Some(date * DAY_MS + nanos / 1_000_000)
    }

    /// `LocalDateTime.parse` only: local ms.
    pub fn parse_date_time(toks: &[Tok], text: &str, style: Style) -> Option<i64> {
        let v = parse_fields(toks, text)?;
        let (date, time) = resolve(&v, style).ok()?;
        Some(date? * DAY_MS + time? / 1_000_000)
    }

    /// `LocalDate.parse(...).atStartOfDay()`: local ms.
    pub fn parse_date(toks: &[Tok], text: &str, style: Style) -> Option<i64> {
        let v = parse_fields(toks, text)?;
        let (date, _) = resolve(&v, style).ok()?;
        Some(date? * DAY_MS)
    }

    /// Paimon's default partition timestamp format: `y-M-d[ H:m:s[.fraction]]`, lenient,
    /// falling back to the date at midnight.
    pub fn default_timestamp_tokens() -> Vec<Tok> {
        let mut b = Builder::default();
        b.value(num(Field::Year, 1, 10, Sign::Normal))
            .lit("-")
            .value(num(Field::Month, 1, 2, Sign::Normal))
            .lit("-")
            .value(num(Field::Day, 1, 2, Sign::Normal));
        let mut t = Builder::default();
        t.lit(" ")
            .value(num(Field::Hour, 1, 2, Sign::Normal))
            .lit(":")
            .value(num(Field::Minute, 1, 2, Sign::Normal))
            .lit(":")
            .value(num(Field::Second, 1, 2, Sign::Normal))
            .other(Tok::Optional(vec![Tok::PointFraction]));
        b.other(Tok::Optional(t.build()));
        b.build()
    }

    /// `toLocalDateTimeDefault`: local ms.
    pub fn parse_default_timestamp(text: &str) -> Option<i64> {
        // LocalDateTime with the timestamp format, else LocalDate with the date format; the
        // date format is the timestamp format's first part, so one parse decides both.
        let toks = default_timestamp_tokens();
        let v = parse_fields(&toks, text)?;
        let (date, time) = resolve(&v, Style::Lenient).ok()?;
        Some(date? * DAY_MS + time.unwrap_or(0) / 1_000_000)
    }

    /// A `partition.timestamp-formatter` read (SMART resolution): local ms.
    pub fn parse_with_pattern(pattern: &str, text: &str) -> Option<i64> {
        let toks = compile_pattern(pattern).ok()?;
        parse_date_time_or_date(&toks, text, Style::Smart)
    }

    /// Formats local ms with number/literal tokens (tag names).
    pub fn format(toks: &[Tok], local_ms: i64) -> String {
        let f = fields_of(local_ms);
        let mut out = String::new();
        for t in toks {
            match t {
                Tok::Lit(c) => out.push(*c),
                Tok::Num(n) => {
                    let x = f[slot(n.field)];
                    out.push_str(&format!("{x:0width$}", width = n.min));
                }
                Tok::PointFraction | Tok::Optional(_) => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::time::*;

    fn ms(y: i64, m: i64, d: i64, h: i64, mi: i64, s: i64) -> i64 {
        days_from_civil(y, m, d) * DAY_MS + ((h * 60 + mi) * 60 + s) * 1000
    }

    /// Expectations from JDK 17 (`java.time`), see the module docs.
    #[test]
    fn default_partition_timestamps_as_java_reads_them() {
        assert_eq!(
            parse_default_timestamp("2024-1-2"),
            Some(ms(2024, 1, 2, 0, 0, 0))
        );
        assert_eq!(
            parse_default_timestamp("2024-13-40 25:61:61.5"),
            Some(ms(2025, 2, 10, 2, 2, 1) + 500)
        );
        assert_eq!(parse_default_timestamp("2024-01-02 10:00"), None);
        assert_eq!(parse_default_timestamp("abcd"), None);
        assert_eq!(
            parse_default_timestamp("2024-01-02 10:00:00"),
            Some(ms(2024, 1, 2, 10, 0, 0))
        );
        assert_eq!(parse_default_timestamp("20240102"), None);
    }

    #[test]
    fn formatter_patterns_as_java_reads_them() {
        let p = |f: &str, t: &str| parse_with_pattern(f, t);
        assert_eq!(p("yyyyMMdd", "20240102"), Some(ms(2024, 1, 2, 0, 0, 0)));
        assert_eq!(
            p("yyyyMMddHH", "2024010210"),
            Some(ms(2024, 1, 2, 10, 0, 0))
        );
        assert_eq!(
            p("yyyy-MM-dd HH:mm:ss", "2024-01-02 10:00:00"),
            Some(ms(2024, 1, 2, 10, 0, 0))
        );
        assert_eq!(
            p("yyyy-MM-dd", "2024-02-30"),
            Some(ms(2024, 2, 29, 0, 0, 0))
        );
        assert_eq!(p("yyyy-MM-dd", "2024-02-32"), None);
        assert_eq!(
            p("yyyy-MM-dd HH", "2024-02-03 24"),
            Some(ms(2024, 2, 4, 0, 0, 0))
        );
        assert_eq!(p("yyyy-MM-dd HH", "2024-01-02 25"), None);
        assert_eq!(p("yyyy-M-d", "2024-2-3"), Some(ms(2024, 2, 3, 0, 0, 0)));
        assert_eq!(p("yyMMdd", "240203"), Some(ms(2024, 2, 3, 0, 0, 0)));
        assert_eq!(
            p("yyyyMMddHHmmssSSS", "20240203101112123"),
            Some(ms(2024, 2, 3, 10, 11, 12) + 123)
        );
        assert_eq!(
            p("yyyy-MM-dd'T'HH", "2024-01-02T10"),
            Some(ms(2024, 1, 2, 10, 0, 0))
        );
        assert_eq!(
            p("yyyy-MM-dd mmss", "2024-01-02 0510"),
            Some(ms(2024, 1, 2, 0, 0, 0))
        );
        assert_eq!(p("yyyy-MM-dd", "2024-1-02"), None);
        assert_eq!(p("yyyy-MM-dd", "12024-01-02"), None);
        assert_eq!(p("y-M-d", "2024-1-2"), Some(ms(2024, 1, 2, 0, 0, 0)));
        assert_eq!(p("dd-MM-yyyy", "02-01-2024"), Some(ms(2024, 1, 2, 0, 0, 0)));
        assert_eq!(p("MMdd", "0102"), None);
        assert_eq!(p("uuuuMMdd", "20240102"), Some(ms(2024, 1, 2, 0, 0, 0)));
        for (f, t, want) in [
            ("yyyyMdd", "2024102", None),
            ("yyyyMdd", "20241002", None),
            ("yyyy-M-dd", "2024-1-02", Some(ms(2024, 1, 2, 0, 0, 0))),
            (
                "yyyyMMddHHmm",
                "202401021030",
                Some(ms(2024, 1, 2, 10, 30, 0)),
            ),
            ("yyyy-MM-dd HH:mm:ss", "2024-01-02 10:00:60", None),
            (
                "yyyy-MM-dd HH:mm:ss",
                "2024-01-02 24:00:00",
                Some(ms(2024, 1, 3, 0, 0, 0)),
            ),
            ("yyyy-MM-dd", "2023-02-29", Some(ms(2023, 2, 28, 0, 0, 0))),
            ("yyyy-MM-dd", "2024-00-10", None),
            ("yyyy-MM-dd HH", "2024-01-02 7", None),
            (
                "yyyy-MM-dd H",
                "2024-01-02 7",
                Some(ms(2024, 1, 2, 7, 0, 0)),
            ),
            ("yyyyMMdd", "2024010", None),
            ("yyyyMMdd", "202401021", None),
            ("yyyy.MM.dd", "2024.01.02", Some(ms(2024, 1, 2, 0, 0, 0))),
            ("yy-MM-dd", "99-01-02", Some(ms(2099, 1, 2, 0, 0, 0))),
            ("yyyy-MM-dd'T'HH:mm:ss.SSS", "2024-01-02T10:00:00.5", None),
            (
                "yyyyMMddHHmmss",
                "20240102100000",
                Some(ms(2024, 1, 2, 10, 0, 0)),
            ),
            ("yyyy-MM-dd HH:mm", "2024-01-02 10:5", None),
            ("d/M/yyyy", "2/1/2024", Some(ms(2024, 1, 2, 0, 0, 0))),
            ("yyyyMMdd", "+20240102", None),
        ] {
            assert_eq!(p(f, t), want, "{f} {t}");
        }
        assert!(compile_pattern("yyyy-MMM-dd").is_err());
        assert!(compile_pattern("yyyy-MM-ddd").is_err());
    }

    #[test]
    fn local_date_time_strings() {
        assert_eq!(
            local_date_time_string(ms(2024, 1, 2, 10, 0, 0), 0),
            "2024-01-02T10:00"
        );
        assert_eq!(
            local_date_time_string(ms(2024, 1, 2, 10, 0, 5), 0),
            "2024-01-02T10:00:05"
        );
        assert_eq!(
            local_date_time_string(ms(2024, 1, 2, 10, 0, 5) + 120, 0),
            "2024-01-02T10:00:05.120"
        );
        for d in [-800_000, -1, 0, 1, 19_000, 2_000_000] {
            let (y, m, dd) = civil_from_days(d);
            assert_eq!(days_from_civil(y, m, dd), d);
        }
    }
}
