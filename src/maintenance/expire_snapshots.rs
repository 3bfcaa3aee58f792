//! Snapshot expiration: what Paimon's `ExpireSnapshotsImpl` and `SnapshotDeletion` do after a
//! commit (and the `expire_snapshots` procedure), for the table's main branch.
//!
//! **Which snapshots go.** The newest `snapshot.num-retained.min` snapshots always stay; anything
//! older than the newest `snapshot.num-retained.max` goes whatever its age; in between, a snapshot
//! goes only while the snapshot *after* it was committed before `now - snapshot.time-retained`,
//! and the first successor that is too young stops the scan (snapshots past it are never read).
//! A consumer's `nextSnapshot` caps the range (unless the table decouples changelogs and sets
//! `consumer.changelog-only`), and one run expires at most `snapshot.expire.limit` snapshots,
//! counted from the earliest. The result is a range `[earliest, end)`; snapshot `end` becomes
//! the new earliest.
//!
//! **What is deleted, in this order** (so a failure at any point leaves orphans, never a retained
//! snapshot or tag pointing at a missing file):
//! 1. data files: for every snapshot `s` in `(begin, end]`, the files its delta DELETEs (they were
//!    alive in its predecessor, which is expiring) unless the same delta ADDs them again (an
//!    upgrade), with their extra files; the files alive in the newest tag older than `s` are
//!    kept, and if that tag cannot be read nothing of `s` is deleted; with decoupled changelogs
//!    and `changelog-producer = none` the APPEND files are kept too (they are the changelog);
//! 2. changelog files (only when changelogs are not decoupled): the files the changelog
//!    manifests of the expiring snapshots ADD;
//! 3. directories left empty, when `snapshot.clean-empty-directories` is on (reported, see
//!    [`ExpireReport::empty_directories`]);
//! 4. (if snapshot `end` vanished meanwhile, another expirer is at work: stop here)
//! 5. what snapshot `end` and the tags around the range name (if any of it is unreadable, no
//!    metadata is deleted this run);
//! 6. metadata: manifest lists, manifests, index manifests, index files and statistics of the
//!    expiring snapshots that step 5 did not collect;
//! 7. snapshot files, oldest first, each copied to `changelog/changelog-<id>` first when
//!    changelogs are decoupled;
//! 8. the `EARLIEST` hint.
//!
//! A manifest read that finds the file gone or unreadable cancels only the deletions that
//! depended on it (never widening them); any other storage failure stops the run with an error,
//! and a rerun recomputes the same range and finishes the work (every delete treats a missing file
//! as done). Manifests are read one snapshot delta (or one tag's file set) at a time.
//!
//! Helpers shared with [`super::expire_changelogs`] (hints and id discovery of `snapshot/` and
//! `changelog/`, the data and manifest cleaners) live here too; the hint and id helpers would
//! belong to `table/`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::{Deleter, MaintenanceContext};
use crate::error::{Error, ErrorKind, Result};
use crate::options::maintenance::ExpireOptions;
use crate::options::ChangelogProducer;
use crate::storage::{Storage, StorageErrorKind};
use crate::table::binary_row::BinaryRow;
use crate::table::manifest::{DataFile, FileKind};
use crate::table::path::{validate_external_path, validate_name};
use crate::table::scan::{read_index_manifest, read_manifest, read_manifest_list, Table};
use crate::table::snapshot::{latest_snapshot_id, Snapshot};

pub use crate::options::maintenance::{
    ExpireExecutionMode, CHANGELOG_NUM_RETAINED_MAX, CHANGELOG_NUM_RETAINED_MIN,
    CHANGELOG_TIME_RETAINED, CLEAN_EMPTY_DIRECTORIES, CONSUMER_CHANGELOG_ONLY, EXECUTION_MODE,
    EXPIRE_LIMIT, NUM_RETAINED_MAX, NUM_RETAINED_MIN, TIME_RETAINED,
};

/// Options of snapshot and changelog expiration (Paimon's `ExpireConfig`).
///
/// Counts are Java `int`s, times are milliseconds. Changelog values left unset copy the
/// snapshot values; changelogs are *decoupled* ([`ExpireConfig::changelog_decoupled`]) when
/// any changelog value retains more than its snapshot counterpart.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExpireConfig {
    /// `snapshot.num-retained.min` (default 10): the newest snapshots that always stay.
    pub retain_min: i32,
    /// `snapshot.num-retained.max` (default `i32::MAX`): older snapshots go whatever their age.
    pub retain_max: i32,
    /// `snapshot.time-retained` (default 1 h).
    pub time_retained_ms: i64,
    /// `snapshot.expire.limit` (default 50): snapshots expired per run at most.
    pub max_deletes: i32,
    /// `snapshot.clean-empty-directories` (default false; fallback key
    /// `snapshot.expire.clean-empty-directories`).
    pub clean_empty_directories: bool,
    /// `changelog.num-retained.min` (default: `retain_min`).
    pub changelog_retain_min: i32,
    /// `changelog.num-retained.max` (default: `retain_max`).
    pub changelog_retain_max: i32,
    /// `changelog.time-retained` (default: `time_retained_ms`).
    pub changelog_time_retained_ms: i64,
    /// Changelogs expired per run at most (Paimon reuses `snapshot.expire.limit`).
    pub changelog_max_deletes: i32,
    /// `consumer.changelog-only` as written; it only counts when changelogs are decoupled
    /// ([`ExpireConfig::consumer_changelog_only_effective`]).
    pub consumer_changelog_only: bool,
    /// `snapshot.expire.execution-mode` (default sync).
    pub execution_mode: ExpireExecutionMode,
}

impl ExpireConfig {
    /// Reads the expiration options of a table (its schema's raw option map), with Paimon's
    /// defaults. Malformed values, `snapshot.num-retained.min < 1`, `min > max` and
    /// `changelog.num-retained.min < 1` are invalid-option errors naming the key; a changelog
    /// minimum above the changelog maximum is reported when changelogs are expired, as Paimon
    /// does.
    pub fn from_options(raw: &BTreeMap<String, String>) -> Result<Self> {
        let o = ExpireOptions::read(raw)?;
        let retain_min = o.retain_min.map_or(10, |(n, _)| n);
        Ok(ExpireConfig {
            retain_min,
            retain_max: o.retain_max,
            time_retained_ms: o.time_retained_ms,
            max_deletes: o.max_deletes,
            clean_empty_directories: o.clean_empty_directories,
            changelog_retain_min: o.changelog_retain_min.unwrap_or(retain_min),
            changelog_retain_max: o.changelog_retain_max.unwrap_or(o.retain_max),
            changelog_time_retained_ms: o.changelog_time_retained_ms.unwrap_or(o.time_retained_ms),
            changelog_max_deletes: o.max_deletes,
            consumer_changelog_only: o.consumer_changelog_only,
            execution_mode: o.execution_mode,
        })
    }

    /// The defaults of Paimon's `ExpireConfig.Builder`, which the procedures start from: keep
    /// at least one snapshot, no count or age limit, no per-run limit, changelog values equal
    /// to the snapshot values (so never decoupled).
    pub fn procedure_defaults() -> Self {
        ExpireConfig {
            retain_min: 1,
            retain_max: i32::MAX,
            time_retained_ms: i64::MAX,
            max_deletes: i32::MAX,
            clean_empty_directories: false,
            changelog_retain_min: 1,
            changelog_retain_max: i32::MAX,
            changelog_time_retained_ms: i64::MAX,
            changelog_max_deletes: i32::MAX,
            consumer_changelog_only: false,
            execution_mode: ExpireExecutionMode::Sync,
        }
    }

    /// Whether changelogs outlive snapshots: expired snapshots are then kept as long-lived
    /// changelogs in `changelog/` and [`super::expire_changelogs`] removes them later.
    pub fn changelog_decoupled(&self) -> bool {
        self.changelog_retain_max > self.retain_max
            || self.changelog_retain_min > self.retain_min
            || self.changelog_time_retained_ms > self.time_retained_ms
    }

    /// `consumer.changelog-only` as Paimon applies it: only with decoupled changelogs.
    pub fn consumer_changelog_only_effective(&self) -> bool {
        self.consumer_changelog_only && self.changelog_decoupled()
    }
}

/// What one snapshot expiration did (or, in a dry run, would do).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExpireReport {
    pub dry_run: bool,
    /// Snapshot ids whose files were deleted, ascending.
    pub expired_snapshots: Vec<i64>,
    /// Ids copied to `changelog/changelog-<id>` before their snapshot file was deleted
    /// (decoupled changelogs only).
    pub changelogs_written: Vec<i64>,
    /// Every file deleted, in order (data, changelog data, manifests, index, statistics,
    /// snapshots).
    pub deleted: Vec<String>,
    /// With `snapshot.clean-empty-directories`: bucket and partition directories that no
    /// longer hold any file, deepest first. Storage has no directories of its own, so a host
    /// whose file system has them removes these (non-recursively).
    pub empty_directories: Vec<String>,
    /// The earliest snapshot before and after the run (`None`: no snapshot).
    pub earliest_before: Option<i64>,
    pub earliest_after: Option<i64>,
    /// Deletions cancelled because metadata was missing or unreadable, and hints that could
    /// not be written.
    pub warnings: Vec<String>,
}

/// Expires snapshots of `table` (main branch) per `config` at `ctx.now_ms`; see the module
/// documentation for the range and the order. In a dry run nothing is written or deleted and
/// the report says what would be.
pub fn expire_snapshots(
    storage: &dyn Storage,
    table: &Table,
    config: &ExpireConfig,
    ctx: &MaintenanceContext,
) -> Result<ExpireReport> {
    let mut report = ExpireReport {
        dry_run: ctx.dry_run,
        ..ExpireReport::default()
    };
    let root = table.paths.root();
    let snapshots = Versioned::snapshots(root);
    let latest = latest_snapshot_id(storage, &table.paths)?;
    let earliest = snapshots.earliest(storage)?;
    let (Some(latest), Some(earliest)) = (latest, earliest) else {
        return Ok(report);
    };
    report.earliest_before = Some(earliest);
    report.earliest_after = Some(earliest);
    if config.retain_max < config.retain_min {
        return Err(Error::invalid_option(
            NUM_RETAINED_MAX,
            &config.retain_max.to_string(),
            format!(
                "must be at least {NUM_RETAINED_MIN} ({})",
                config.retain_min
            ),
        ));
    }
    let older_than = ctx.now_ms.saturating_sub(config.time_retained_ms);
    let min = (latest - i64::from(config.retain_max) + 1).max(earliest);
    let mut max_exclusive = latest - i64::from(config.retain_min) + 1;
    if !config.consumer_changelog_only_effective() {
        if let Some(next) = min_consumer_next_snapshot(storage, table)? {
            max_exclusive = max_exclusive.min(next);
        }
    }
    max_exclusive = max_exclusive.min(earliest.saturating_add(i64::from(config.max_deletes)));
    let mut end = max_exclusive;
    for id in min..max_exclusive {
        // A snapshot goes by age only when its successor is old enough.
        if let Some(next) = snapshots.read(storage, id + 1)? {
            if older_than <= next.time_millis {
                end = id;
                break;
            }
        }
    }
    expire_until(storage, table, config, ctx, earliest, end, report)
}

fn expire_until(
    storage: &dyn Storage,
    table: &Table,
    config: &ExpireConfig,
    ctx: &MaintenanceContext,
    earliest: i64,
    end: i64,
    mut report: ExpireReport,
) -> Result<ExpireReport> {
    let root = table.paths.root();
    let snapshots = Versioned::snapshots(root);
    if end <= earliest {
        if !ctx.dry_run && !exists(storage, &snapshots.earliest_hint())? {
            if let Err(e) = write_hint(storage, &snapshots.earliest_hint(), earliest) {
                report.warnings.push(e);
            }
        }
        return Ok(report);
    }
    let mut snaps: Vec<Snapshot> = Vec::new();
    for id in earliest..=end {
        if let Some(s) = snapshots.read(storage, id)? {
            snaps.push(s);
        }
    }
    let Some(begin) = snaps.first().map(|s| s.id) else {
        return Ok(report);
    };
    let end_read = snaps.last().is_some_and(|s| s.id == end);
    let expiring_count = if end_read {
        snaps.len() - 1
    } else {
        snaps.len()
    };
    let tags = read_tags(storage, table)?;
    let decoupled = config.changelog_decoupled();
    let producer_none = table.options.changelog_producer == ChangelogProducer::None;

    let mut cleaner = Cleaner::new(storage, table, ctx.dry_run, config.clean_empty_directories);

    // 1. Data files DELETEd by the deltas of (begin, end].
    for s in snaps.iter().filter(|s| s.id > begin) {
        if !cleaner.prepare_tag_skipper(&tags, s.id)? {
            continue;
        }
        let source = table.paths.snapshot(s.id);
        let Some(planned) = cleaner.plan_delta_deletes(&s.delta_manifest_list, &source)? else {
            continue;
        };
        for f in planned {
            if cleaner.skipped_by_tag(&f) {
                continue;
            }
            // Decoupled without a changelog producer: APPEND files are the changelog, which
            // changelog expiration deletes.
            if decoupled && producer_none && f.file_source.unwrap_or(0) == 0 {
                continue;
            }
            cleaner.delete_planned(&f)?;
        }
    }

    // 2. Changelog files, when they live and die with their snapshot.
    if !decoupled {
        for s in &snaps[..expiring_count] {
            if let Some(list) = &s.changelog_manifest_list {
                cleaner.delete_added_files(list, &table.paths.snapshot(s.id))?;
            }
        }
    }

    // 3. Directories the deletions emptied.
    cleaner.clean_empty_directories();

    // 4. Another expirer removed snapshot `end`: it owns the rest.
    if !end_read {
        return Ok(cleaner.finish(report));
    }

    // 5. What snapshot `end` and the tags around the range still name.
    let mut skipping: Vec<&Snapshot> = find_skipping_tags(&tags, begin, end).iter().collect();
    skipping.extend(snaps.last());
    // 6. Metadata of the expiring snapshots that nothing retained names.
    if let Some(mut claimed) = cleaner.snapshot_skipping_set(&skipping)? {
        for s in &snaps[..expiring_count] {
            let source = table.paths.snapshot(s.id);
            if !decoupled || !producer_none {
                cleaner.clean_manifest_list(&s.base_manifest_list, &mut claimed, &source)?;
                cleaner.clean_manifest_list(&s.delta_manifest_list, &mut claimed, &source)?;
            }
            if !decoupled {
                if let Some(list) = &s.changelog_manifest_list {
                    cleaner.clean_manifest_list(list, &mut claimed, &source)?;
                }
            }
            cleaner.clean_index_files(s, &mut claimed)?;
            cleaner.clean_statistics(s, &mut claimed)?;
        }
    }

    // 7. Snapshot files, oldest first (the remaining ones stay a contiguous suffix).
    let changelogs = Versioned::changelogs(root);
    for s in &snaps[..expiring_count] {
        if decoupled {
            if !ctx.dry_run {
                storage.write_all(&changelogs.file(s.id), &s.to_json())?;
                if let Err(e) = write_hint(storage, &changelogs.latest_hint(), s.id) {
                    cleaner.warnings.push(e);
                }
            }
            report.changelogs_written.push(s.id);
        }
        cleaner.deleter.delete(&snapshots.file(s.id))?;
        report.expired_snapshots.push(s.id);
    }

    // 8. The new earliest snapshot.
    if !ctx.dry_run {
        if let Err(e) = write_hint(storage, &snapshots.earliest_hint(), end) {
            cleaner.warnings.push(e);
        }
    }
    report.earliest_after = Some(end);
    Ok(cleaner.finish(report))
}

// ---------------------------------------------------------------------------------------------
// Shared with changelog expiration.

/// `root/rel`, or `rel` for a table at the storage root.
pub(crate) fn join(root: &str, rel: &str) -> String {
    if root.is_empty() {
        rel.to_string()
    } else {
        format!("{root}/{rel}")
    }
}

pub(crate) fn exists(storage: &dyn Storage, path: &str) -> Result<bool> {
    match storage.size(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind == StorageErrorKind::NotFound => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Reads a hint file; anything unreadable counts as no hint (hints are advisory).
fn read_hint(storage: &dyn Storage, path: &str) -> Option<i64> {
    let bytes = storage.read_all(path).ok()?;
    std::str::from_utf8(&bytes).ok()?.trim().parse().ok()
}

/// Overwrites a hint with the decimal id; a failure is returned as a warning.
pub(crate) fn write_hint(
    storage: &dyn Storage,
    path: &str,
    id: i64,
) -> std::result::Result<(), String> {
    storage
        .write_all(path, id.to_string().as_bytes())
        .map(|_| ())
        .map_err(|e| format!("could not write the hint '{path}': {e}"))
}

/// A directory of numbered JSON files with `EARLIEST` / `LATEST` hints: `snapshot/` or
/// `changelog/` (Paimon's `HintFileUtils` and `listVersionedFiles`).
pub(crate) struct Versioned {
    dir: String,
    prefix: &'static str,
}

impl Versioned {
    pub(crate) fn snapshots(root: &str) -> Self {
        Versioned {
            dir: join(root, "snapshot"),
            prefix: "snapshot-",
        }
    }

    pub(crate) fn changelogs(root: &str) -> Self {
        Versioned {
            dir: join(root, "changelog"),
            prefix: "changelog-",
        }
    }

    pub(crate) fn file(&self, id: i64) -> String {
        format!("{}/{}{id}", self.dir, self.prefix)
    }

    pub(crate) fn earliest_hint(&self) -> String {
        format!("{}/EARLIEST", self.dir)
    }

    pub(crate) fn latest_hint(&self) -> String {
        format!("{}/LATEST", self.dir)
    }

    /// The ids present, ascending (names whose rest is not a number are ignored).
    fn ids(&self, storage: &dyn Storage) -> Result<Vec<i64>> {
        let prefix = format!("{}/{}", self.dir, self.prefix);
        let mut ids: Vec<i64> = storage
            .list(&prefix)?
            .iter()
            .filter_map(|o| o.path.strip_prefix(&prefix)?.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// The `EARLIEST` hint when its file exists, else the smallest id present.
    pub(crate) fn earliest(&self, storage: &dyn Storage) -> Result<Option<i64>> {
        if let Some(hint) = read_hint(storage, &self.earliest_hint()) {
            if exists(storage, &self.file(hint))? {
                return Ok(Some(hint));
            }
        }
        Ok(self.ids(storage)?.first().copied())
    }

    /// The `LATEST` hint when it is positive and no file follows it, else the largest id.
    pub(crate) fn latest(&self, storage: &dyn Storage) -> Result<Option<i64>> {
        if let Some(hint) = read_hint(storage, &self.latest_hint()) {
            if hint > 0 && !exists(storage, &self.file(hint + 1))? {
                return Ok(Some(hint));
            }
        }
        Ok(self.ids(storage)?.last().copied())
    }

    /// File `id`, `None` when it does not exist.
    pub(crate) fn read(&self, storage: &dyn Storage, id: i64) -> Result<Option<Snapshot>> {
        let path = self.file(id);
        match storage.read_all(&path) {
            Ok(bytes) => Snapshot::from_json(&bytes, &path).map(Some),
            Err(e) if e.kind == StorageErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

/// The snapshots the main branch's tags (`tag/tag-<name>`) point at, ascending by id, one per
/// id (several tags may name one snapshot). A tag file deleted while listing is skipped.
pub(crate) fn read_tags(storage: &dyn Storage, table: &Table) -> Result<Vec<Snapshot>> {
    let mut tags: Vec<Snapshot> = super::tags::list_tags(storage, &table.paths)?
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    tags.sort_by_key(|t| t.id);
    tags.dedup_by_key(|t| t.id);
    Ok(tags)
}

/// The smallest `nextSnapshot` of the main branch's consumers (`consumer/consumer-<id>`); a
/// file deleted while listing is skipped, one that does not parse is an error.
pub(crate) fn min_consumer_next_snapshot(
    storage: &dyn Storage,
    table: &Table,
) -> Result<Option<i64>> {
    super::consumers::min_next_snapshot(storage, &table.paths)
}

/// The tags whose metadata may be shared with snapshots in `[begin, end)`: from the last tag at
/// or before `begin` (or the first tag) to the last tag before `end`.
pub(crate) fn find_skipping_tags(tags: &[Snapshot], begin: i64, end: i64) -> &[Snapshot] {
    let Some(right) = tags.iter().rposition(|t| t.id < end) else {
        return &[];
    };
    let left = tags.iter().rposition(|t| t.id <= begin).unwrap_or(0);
    &tags[left..=right]
}

/// A data file a delta removes, located.
#[derive(Clone, Debug)]
pub(crate) struct PlannedFile {
    partition: BinaryRow,
    bucket: i32,
    file_name: String,
    /// 0 APPEND, 1 COMPACT, absent for old files.
    pub(crate) file_source: Option<i32>,
    partition_path: String,
    path: String,
    extra_paths: Vec<String>,
}

type FileKey = (BinaryRow, i32, String);

/// The live files of the tag a snapshot's deletions are checked against.
struct TagFiles {
    tag_id: i64,
    /// `None`: the tag's manifests could not be read.
    files: Option<HashSet<FileKey>>,
}

/// Deletes what expiration plans, through a [`Deleter`], and remembers the buckets it touched
/// and the warnings it met.
pub(crate) struct Cleaner<'a> {
    storage: &'a dyn Storage,
    table: &'a Table,
    pub(crate) deleter: Deleter<'a>,
    pub(crate) warnings: Vec<String>,
    clean_empty: bool,
    empty_directories: Vec<String>,
    partition_paths: HashMap<BinaryRow, String>,
    /// (partition path, bucket) of every data or changelog file deleted since the last
    /// directory cleaning.
    touched: BTreeSet<(String, i32)>,
    tag_cache: Option<TagFiles>,
    /// Whether the current snapshot has a previous tag to check deletions against.
    tag_active: bool,
}

/// A metadata read that found its file gone or corrupt: the deletions depending on it are
/// cancelled. Other failures (I/O, permissions) stop the run.
fn cancels(e: &Error) -> bool {
    match &e.kind {
        ErrorKind::CorruptInput { .. } => true,
        ErrorKind::Io { storage, .. } => *storage == StorageErrorKind::NotFound,
        _ => false,
    }
}

impl<'a> Cleaner<'a> {
    pub(crate) fn new(
        storage: &'a dyn Storage,
        table: &'a Table,
        dry_run: bool,
        clean_empty: bool,
    ) -> Self {
        Cleaner {
            storage,
            table,
            deleter: Deleter::new(storage, dry_run),
            warnings: Vec::new(),
            clean_empty,
            empty_directories: Vec::new(),
            partition_paths: HashMap::new(),
            touched: BTreeSet::new(),
            tag_cache: None,
            tag_active: false,
        }
    }

    /// Moves what was deleted, found empty and warned about into `report`.
    fn finish(self, mut report: ExpireReport) -> ExpireReport {
        report.deleted = self.deleter.deleted;
        report.empty_directories = self.empty_directories;
        report.warnings.extend(self.warnings);
        report
    }

    /// Deleted paths, empty directories and warnings, for changelog expiration's report.
    pub(crate) fn into_parts(self) -> (Vec<String>, Vec<String>, Vec<String>) {
        (self.deleter.deleted, self.empty_directories, self.warnings)
    }

    /// `Ok(None)` with a warning when `r` failed in a way that cancels (see [`cancels`]).
    fn soft<T>(&mut self, r: Result<T>, what: impl FnOnce() -> String) -> Result<Option<T>> {
        match r {
            Ok(v) => Ok(Some(v)),
            Err(e) if cancels(&e) => {
                self.warnings.push(format!("{}: {e}", what()));
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    fn bucket_dir(&self, partition_path: &str, bucket: i32) -> String {
        if bucket == -2 {
            // Postpone-bucket files live in `bucket-postpone`.
            let dir = self.table.paths.bucket_dir(partition_path, 0);
            format!("{}postpone", &dir[..dir.len() - 1])
        } else {
            self.table.paths.bucket_dir(partition_path, bucket)
        }
    }

    fn partition_path(&mut self, partition: &BinaryRow, source: &str) -> Result<String> {
        if let Some(p) = self.partition_paths.get(partition) {
            return Ok(p.clone());
        }
        let p = self.table.partition_path(partition, source)?;
        self.partition_paths.insert(partition.clone(), p.clone());
        Ok(p)
    }

    /// Where a manifest entry's file and its extra files are: its external path, or the
    /// bucket directory; extra files sit next to the file.
    fn locate(
        &mut self,
        partition: &BinaryRow,
        bucket: i32,
        file: &DataFile,
        source: &str,
    ) -> Result<(String, String, Vec<String>)> {
        let partition_path = self.partition_path(partition, source)?;
        let path = match &file.external_path {
            Some(uri) => {
                validate_external_path(uri, &file.file_name, source)?;
                uri.clone()
            }
            None => {
                validate_name(&file.file_name, source)?;
                format!(
                    "{}/{}",
                    self.bucket_dir(&partition_path, bucket),
                    file.file_name
                )
            }
        };
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        let mut extra_paths = Vec::with_capacity(file.extra_files.len());
        for extra in &file.extra_files {
            validate_name(extra, source)?;
            extra_paths.push(format!("{dir}/{extra}"));
        }
        Ok((partition_path, path, extra_paths))
    }

    /// The files the manifests of `list` DELETE and do not ADD again, by path. `None` when the
    /// list or one of its manifests cannot be read: then nothing is deleted (never guess).
    pub(crate) fn plan_delta_deletes(
        &mut self,
        list: &str,
        source: &str,
    ) -> Result<Option<Vec<PlannedFile>>> {
        let paths = &self.table.paths;
        let read = read_manifest_list(self.storage, paths, list, source);
        let Some(metas) = self.soft(read, || {
            format!("data files of {source} kept: manifest list {list} unreadable")
        })?
        else {
            return Ok(None);
        };
        let mut deleted: BTreeMap<String, PlannedFile> = BTreeMap::new();
        let mut added: HashSet<String> = HashSet::new();
        for meta in &metas {
            let read = read_manifest(self.storage, &self.table.paths, meta, source);
            let Some((manifest, entries)) = self.soft(read, || {
                format!(
                    "data files of {source} kept: manifest {} unreadable",
                    meta.file_name
                )
            })?
            else {
                return Ok(None);
            };
            for e in entries {
                let located = self.locate(&e.partition, e.bucket, &e.file, &manifest);
                let Some((partition_path, path, extra_paths)) =
                    self.soft(located, || format!("data files of {source} kept"))?
                else {
                    return Ok(None);
                };
                match e.kind {
                    FileKind::Add => {
                        added.insert(path);
                    }
                    FileKind::Delete => {
                        deleted.insert(
                            path.clone(),
                            PlannedFile {
                                partition: e.partition,
                                bucket: e.bucket,
                                file_name: e.file.file_name,
                                file_source: e.file.file_source,
                                partition_path,
                                path,
                                extra_paths,
                            },
                        );
                    }
                }
            }
        }
        Ok(Some(
            deleted
                .into_values()
                .filter(|f| !added.contains(&f.path))
                .collect(),
        ))
    }

    /// Deletes a planned file and its extra files.
    pub(crate) fn delete_planned(&mut self, f: &PlannedFile) -> Result<()> {
        self.deleter.delete(&f.path)?;
        for extra in &f.extra_paths {
            self.deleter.delete(extra)?;
        }
        self.touched.insert((f.partition_path.clone(), f.bucket));
        Ok(())
    }

    /// Deletes every file the manifests of `list` ADD (changelog files). Stops at the first
    /// unreadable manifest: the rest stay as orphans.
    pub(crate) fn delete_added_files(&mut self, list: &str, source: &str) -> Result<()> {
        let read = read_manifest_list(self.storage, &self.table.paths, list, source);
        let Some(metas) = self.soft(read, || {
            format!("changelog files of {source} kept: manifest list {list} unreadable")
        })?
        else {
            return Ok(());
        };
        for meta in &metas {
            let read = read_manifest(self.storage, &self.table.paths, meta, source);
            let Some((manifest, entries)) = self.soft(read, || {
                format!(
                    "changelog files of {source} kept: manifest {} unreadable",
                    meta.file_name
                )
            })?
            else {
                return Ok(());
            };
            for e in entries.into_iter().filter(|e| e.kind == FileKind::Add) {
                let located = self.locate(&e.partition, e.bucket, &e.file, &manifest);
                let Some((partition_path, path, _)) =
                    self.soft(located, || format!("changelog files of {source} kept"))?
                else {
                    return Ok(());
                };
                self.deleter.delete(&path)?;
                self.touched.insert((partition_path, e.bucket));
            }
        }
        Ok(())
    }

    /// The live files of a tag (its base and delta manifests folded), `None` if unreadable.
    fn live_files(&mut self, tag: &Snapshot) -> Result<Option<HashSet<FileKey>>> {
        let source = join(
            self.table.paths.root(),
            &format!("tag (snapshot {})", tag.id),
        );
        let mut live: HashSet<FileKey> = HashSet::new();
        for list in [&tag.base_manifest_list, &tag.delta_manifest_list] {
            let read = read_manifest_list(self.storage, &self.table.paths, list, &source);
            let Some(metas) = self.soft(read, || {
                format!("files of tagged snapshot {} unreadable", tag.id)
            })?
            else {
                return Ok(None);
            };
            for meta in &metas {
                let read = read_manifest(self.storage, &self.table.paths, meta, &source);
                let Some((_, entries)) = self.soft(read, || {
                    format!("files of tagged snapshot {} unreadable", tag.id)
                })?
                else {
                    return Ok(None);
                };
                for e in entries {
                    let key = (e.partition, e.bucket, e.file.file_name);
                    match e.kind {
                        FileKind::Add => live.insert(key),
                        FileKind::Delete => live.remove(&key),
                    };
                }
            }
        }
        Ok(Some(live))
    }

    /// Selects the newest tag older than snapshot `id` for [`Cleaner::skipped_by_tag`] (its
    /// file set is cached until another tag is needed). `false` when that tag's files cannot
    /// be read: nothing of snapshot `id` may then be deleted.
    pub(crate) fn prepare_tag_skipper(&mut self, tags: &[Snapshot], id: i64) -> Result<bool> {
        let Some(tag) = tags.iter().rev().find(|t| t.id < id) else {
            self.tag_active = false;
            return Ok(true);
        };
        if self.tag_cache.as_ref().map(|c| c.tag_id) != Some(tag.id) {
            self.tag_cache = None; // free the previous tag's set before reading the next
            let files = self.live_files(tag)?;
            self.tag_cache = Some(TagFiles {
                tag_id: tag.id,
                files,
            });
        }
        self.tag_active = true;
        Ok(self.tag_cache.as_ref().is_some_and(|c| c.files.is_some()))
    }

    /// Whether the tag selected by [`Cleaner::prepare_tag_skipper`] still has `f`.
    pub(crate) fn skipped_by_tag(&self, f: &PlannedFile) -> bool {
        if !self.tag_active {
            return false;
        }
        let key = (f.partition.clone(), f.bucket, f.file_name.clone());
        self.tag_cache
            .as_ref()
            .and_then(|c| c.files.as_ref())
            .is_none_or(|files| files.contains(&key))
    }

    /// Snapshot expiration's skipping set: every manifest list, manifest, index manifest,
    /// index file and statistics file the given snapshots name. `None` (with a warning) when
    /// any of it is missing or unreadable: then no metadata is deleted this run.
    fn snapshot_skipping_set(&mut self, snaps: &[&Snapshot]) -> Result<Option<HashSet<String>>> {
        let mut set = HashSet::new();
        for s in snaps {
            let source = self.table.paths.snapshot(s.id);
            let what = || {
                format!(
                    "no manifest, index or statistics file deleted: metadata of snapshot {} \
                     (retained or tagged) unreadable",
                    s.id
                )
            };
            for list in [&s.base_manifest_list, &s.delta_manifest_list] {
                set.insert(list.clone());
                let read = read_manifest_list(self.storage, &self.table.paths, list, &source);
                let Some(metas) = self.soft(read, what)? else {
                    return Ok(None);
                };
                set.extend(metas.into_iter().map(|m| m.file_name));
            }
            if let Some(index) = &s.index_manifest {
                set.insert(index.clone());
                let read = read_index_manifest(self.storage, &self.table.paths, s);
                let Some(entries) = self.soft(read, what)? else {
                    return Ok(None);
                };
                set.extend(entries.into_iter().map(|e| e.file_name));
            }
            if let Some(stats) = &s.statistics {
                set.insert(stats.clone());
            }
        }
        Ok(Some(set))
    }

    /// Deletes the manifests of `list` that are not yet claimed, then `list` itself if not
    /// claimed (an unreadable list: only the list). Claims what it deletes.
    pub(crate) fn clean_manifest_list(
        &mut self,
        list: &str,
        claimed: &mut HashSet<String>,
        source: &str,
    ) -> Result<()> {
        let read = read_manifest_list(self.storage, &self.table.paths, list, source);
        let metas = self
            .soft(read, || {
                format!("manifests of {list} ({source}) kept: list unreadable")
            })?
            .unwrap_or_default();
        for m in metas {
            if claimed.insert(m.file_name.clone()) {
                self.delete_manifest_file(&m.file_name, source)?;
            }
        }
        if claimed.insert(list.to_string()) {
            self.delete_manifest_file(list, source)?;
        }
        Ok(())
    }

    fn delete_manifest_file(&mut self, name: &str, source: &str) -> Result<()> {
        let path = self.table.paths.manifest(name, source);
        if let Some(path) = self.soft(path, || format!("'{name}' not deleted"))? {
            self.deleter.delete(&path)?;
        }
        Ok(())
    }

    /// Deletes the index files of `s`'s index manifest that are not claimed, then the index
    /// manifest (a missing index manifest: nothing).
    fn clean_index_files(&mut self, s: &Snapshot, claimed: &mut HashSet<String>) -> Result<()> {
        let Some(index) = &s.index_manifest else {
            return Ok(());
        };
        // Claimed: a retained snapshot names it (and so every index file in it), or it was
        // handled earlier in this run.
        if claimed.contains(index) {
            return Ok(());
        }
        let read = read_index_manifest(self.storage, &self.table.paths, s);
        let Some(entries) = self.soft(read, || {
            format!("index files of snapshot {} kept: {index} unreadable", s.id)
        })?
        else {
            return Ok(());
        };
        let source = self.table.paths.manifest(index, "snapshot")?;
        for e in entries {
            if !claimed.insert(e.file_name.clone()) {
                continue;
            }
            let path = match &e.external_path {
                Some(uri) => {
                    validate_external_path(uri, &e.file_name, &source).map(|_| uri.clone())
                }
                None => self.table.paths.index_file(&e.file_name, &source),
            };
            if let Some(path) = self.soft(path, || format!("index file '{}' kept", e.file_name))? {
                self.deleter.delete(&path)?;
            }
        }
        claimed.insert(index.clone());
        self.delete_manifest_file(index, &source)
    }

    fn clean_statistics(&mut self, s: &Snapshot, claimed: &mut HashSet<String>) -> Result<()> {
        let Some(stats) = &s.statistics else {
            return Ok(());
        };
        if !claimed.insert(stats.clone()) {
            return Ok(());
        }
        let source = self.table.paths.snapshot(s.id);
        let checked = validate_name(stats, &source);
        if self
            .soft(checked, || format!("statistics '{stats}' kept"))?
            .is_some()
        {
            let path = join(self.table.paths.root(), &format!("statistics/{stats}"));
            self.deleter.delete(&path)?;
        }
        Ok(())
    }

    /// Paimon's `cleanEmptyDirectories`: the touched bucket directories, then each touched
    /// partition's directory, then (if that was empty) its ancestors, deepest first. Only with
    /// the option on and outside dry runs; the set of touched buckets is reset either way.
    pub(crate) fn clean_empty_directories(&mut self) {
        let touched = std::mem::take(&mut self.touched);
        if !self.clean_empty || self.deleter.dry_run() {
            return;
        }
        let mut ancestors: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
        let mut by_partition: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for (partition, bucket) in touched {
            by_partition.entry(partition).or_default().push(bucket);
        }
        for (partition, buckets) in by_partition {
            for b in buckets {
                let dir = self.bucket_dir(&partition, b);
                self.try_empty_directory(&dir);
            }
            if partition.is_empty() {
                continue;
            }
            if self.try_empty_directory(&self.partition_dir(&partition)) {
                let parts: Vec<&str> = partition.split('/').collect();
                for depth in 1..parts.len() {
                    ancestors
                        .entry(depth)
                        .or_default()
                        .insert(parts[..depth].join("/"));
                }
            }
        }
        for dirs in ancestors.values().rev() {
            for d in dirs {
                self.try_empty_directory(&self.partition_dir(d));
            }
        }
    }

    fn partition_dir(&self, partition_path: &str) -> String {
        let dir = self.table.paths.bucket_dir(partition_path, 0);
        dir.strip_suffix("/bucket-0").unwrap_or(&dir).to_string()
    }

    /// Records `dir` as removable when nothing is stored under it (a failed listing counts as
    /// not empty, as Paimon's failed non-recursive delete does).
    fn try_empty_directory(&mut self, dir: &str) -> bool {
        match self.storage.list(&format!("{dir}/")) {
            Ok(files) if files.is_empty() => {
                self.empty_directories.push(dir.to_string());
                true
            }
            _ => false,
        }
    }

    /// Changelog expiration's skipping set: the base and delta lists (and their manifests) and
    /// the index manifest (and its files) of each snapshot *if the file exists*, and its
    /// statistics name. Read failures are errors (nothing has been deleted yet).
    pub(crate) fn changelog_skipping_set(&self, snaps: &[&Snapshot]) -> Result<HashSet<String>> {
        let mut set = HashSet::new();
        let paths = &self.table.paths;
        for s in snaps {
            let source = paths.snapshot(s.id);
            for list in [&s.base_manifest_list, &s.delta_manifest_list] {
                if exists(self.storage, &paths.manifest(list, &source)?)? {
                    set.insert(list.clone());
                    let metas = read_manifest_list(self.storage, paths, list, &source)?;
                    set.extend(metas.into_iter().map(|m| m.file_name));
                }
            }
            if let Some(index) = &s.index_manifest {
                if exists(self.storage, &paths.manifest(index, &source)?)? {
                    set.insert(index.clone());
                    let entries = read_index_manifest(self.storage, paths, s)?;
                    set.extend(entries.into_iter().map(|e| e.file_name));
                }
            }
            if let Some(stats) = &s.statistics {
                set.insert(stats.clone());
            }
        }
        Ok(set)
    }

    pub(crate) fn manifest_exists(&self, name: &str, source: &str) -> Result<bool> {
        exists(self.storage, &self.table.paths.manifest(name, source)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;

    fn raw(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn options_defaults_fallbacks_and_errors() {
        let c = ExpireConfig::from_options(&raw(&[])).unwrap();
        assert_eq!((c.retain_min, c.retain_max), (10, i32::MAX));
        assert_eq!((c.time_retained_ms, c.max_deletes), (3_600_000, 50));
        assert_eq!(c.changelog_retain_min, 10);
        assert_eq!(c.changelog_time_retained_ms, 3_600_000);
        assert!(!c.changelog_decoupled() && !c.clean_empty_directories);
        assert_eq!(c.execution_mode, ExpireExecutionMode::Sync);

        let c = ExpireConfig::from_options(&raw(&[
            ("snapshot.num-retained.min", "2"),
            ("snapshot.num-retained.max", "3"),
            ("snapshot.time-retained", "10 min"),
            ("snapshot.expire.limit", "7"),
            ("snapshot.expire.clean-empty-directories", "true"),
            ("changelog.num-retained.max", "9"),
            ("consumer.changelog-only", "true"),
            ("snapshot.expire.execution-mode", "ASYNC"),
        ]))
        .unwrap();
        assert_eq!((c.retain_min, c.retain_max, c.max_deletes), (2, 3, 7));
        assert_eq!(c.time_retained_ms, 600_000);
        assert_eq!((c.changelog_retain_min, c.changelog_retain_max), (2, 9));
        assert_eq!(c.changelog_max_deletes, 7);
        assert!(c.clean_empty_directories && c.changelog_decoupled());
        assert!(c.consumer_changelog_only_effective());
        assert_eq!(c.execution_mode, ExpireExecutionMode::Async);
        let longer = ExpireConfig::from_options(&raw(&[("changelog.time-retained", "2 h")]));
        assert!(longer.unwrap().changelog_decoupled());
        // The primary key wins over the fallback.
        let c = ExpireConfig::from_options(&raw(&[
            ("snapshot.clean-empty-directories", "false"),
            ("snapshot.expire.clean-empty-directories", "true"),
        ]))
        .unwrap();
        assert!(!c.clean_empty_directories);

        for (k, v) in [
            ("snapshot.num-retained.min", "0"),
            ("snapshot.num-retained.min", "x"),
            ("snapshot.num-retained.max", "5"),
            ("snapshot.time-retained", "1 fortnight"),
            ("snapshot.expire.limit", "many"),
            ("snapshot.clean-empty-directories", "yes"),
            ("changelog.num-retained.min", "0"),
            ("consumer.changelog-only", "1"),
            ("snapshot.expire.execution-mode", "later"),
        ] {
            let e = ExpireConfig::from_options(&raw(&[(k, v)])).unwrap_err();
            let ErrorKind::InvalidOption { key, .. } = &e.kind else {
                panic!("{k}: {e}");
            };
            // max 5 < the default min 10: blamed on the minimum.
            let expected = if v == "5" { NUM_RETAINED_MIN } else { k };
            assert_eq!(key, expected, "{e}");
        }
        let p = ExpireConfig::procedure_defaults();
        assert!(!p.changelog_decoupled());
        assert_eq!(p.retain_min, 1);
    }

    #[test]
    fn hints_are_checked_against_the_files() {
        let st = MemoryStorage::new();
        let v = Versioned::changelogs("t");
        assert_eq!(v.earliest(&st).unwrap(), None);
        assert_eq!(v.latest(&st).unwrap(), None);
        for id in [3, 4, 5] {
            st.put(&v.file(id), b"{}".to_vec());
        }
        st.put("t/changelog/changelog-x.tmp", b"".to_vec());
        assert_eq!(v.earliest(&st).unwrap(), Some(3));
        assert_eq!(v.latest(&st).unwrap(), Some(5));
        st.put(&v.earliest_hint(), b"1".to_vec()); // file gone: listed minimum
        st.put(&v.latest_hint(), b"4".to_vec()); // 5 exists: listed maximum
        assert_eq!(v.earliest(&st).unwrap(), Some(3));
        assert_eq!(v.latest(&st).unwrap(), Some(5));
        st.put(&v.earliest_hint(), b"4".to_vec());
        st.put(&v.latest_hint(), b"5".to_vec());
        assert_eq!(v.earliest(&st).unwrap(), Some(4));
        assert_eq!(v.latest(&st).unwrap(), Some(5));
        st.put(&v.earliest_hint(), b"junk".to_vec());
        assert_eq!(v.earliest(&st).unwrap(), Some(3));
    }

    #[test]
    fn skipping_tags() {
        let tag = |id: i64| {
            let json = format!(
                r#"{{"version":3,"id":{id},"schemaId":0,"baseManifestList":"b","deltaManifestList":"d",
                   "commitUser":"u","commitIdentifier":1,"commitKind":"APPEND","timeMillis":0}}"#
            );
            Snapshot::from_json(json.as_bytes(), "tag").unwrap()
        };
        let tags: Vec<Snapshot> = [2, 5, 8, 12].into_iter().map(tag).collect();
        let ids = |s: &[Snapshot]| s.iter().map(|t| t.id).collect::<Vec<_>>();
        assert_eq!(ids(find_skipping_tags(&tags, 6, 10)), [5, 8]);
        assert_eq!(ids(find_skipping_tags(&tags, 1, 6)), [2, 5]);
        assert_eq!(ids(find_skipping_tags(&tags, 5, 6)), [5]);
        assert!(find_skipping_tags(&tags, 0, 2).is_empty());
        assert_eq!(ids(find_skipping_tags(&tags, 13, 20)), [12]);
    }
}
