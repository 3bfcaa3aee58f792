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
//! What this shares with [`super::expire_changelogs`] lives beside both: the hints and id
//! discovery of `snapshot/` and `changelog/` in `versions`, the data and manifest cleaners in
//! `cleaner`.

use std::collections::BTreeMap;

use super::cleaner::Cleaner;
use super::versions::{
    exists, find_skipping_tags, min_consumer_next_snapshot, read_tags, write_hint, Versioned,
};
use super::MaintenanceContext;
use crate::error::{Error, Result};
use crate::options::maintenance::ExpireOptions;
use crate::options::ChangelogProducer;
use crate::storage::Storage;
use crate::table::scan::Table;
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
    /// The run only reported ([`MaintenanceContext::dry_run`]): the lists say what would have
    /// been deleted or written.
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
    /// The earliest snapshot before the run (`None`: no snapshot).
    pub earliest_before: Option<i64>,
    /// The earliest snapshot after the run (in a dry run: that it would leave); equal to
    /// `earliest_before` when nothing expired, `None` when there was no snapshot.
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
        return Ok(finish(cleaner, report));
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
    Ok(finish(cleaner, report))
}

/// Moves what the cleaner deleted, found empty and warned about into `report`.
fn finish(cleaner: Cleaner<'_>, mut report: ExpireReport) -> ExpireReport {
    let (deleted, empty_directories, warnings) = cleaner.into_parts();
    report.deleted = deleted;
    report.empty_directories = empty_directories;
    report.warnings.extend(warnings);
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

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
}
