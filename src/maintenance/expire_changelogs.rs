//! Changelog expiration: what Paimon's `ExpireChangelogImpl` and `ChangelogDeletion` do with the
//! long-lived changelogs `changelog/changelog-<id>` that snapshot expiration leaves behind when
//! changelogs are decoupled ([`ExpireConfig::changelog_decoupled`]).
//!
//! **Which changelogs go.** Changelog and snapshot ids form one line, so the counts are taken
//! from the latest *snapshot*: the newest `changelog.num-retained.min` ids stay, ids older than
//! the newest `changelog.num-retained.max` go whatever their age, and in between a changelog goes
//! while its *own* commit time is before `now - changelog.time-retained` (the first one too young
//! stops the scan). Every consumer's `nextSnapshot` caps the range (`consumer.changelog-only` or
//! not), one run removes at most `snapshot.expire.limit` changelogs, and the newest changelog is
//! never removed. The result is a range `[earliest changelog, end)`.
//!
//! **What is deleted**, changelog by changelog, oldest first, after computing what must stay
//! (the base/delta manifest lists, manifests and index manifests that still exist of the tags
//! around the range, of changelog `end` and of the earliest snapshot):
//! * the files its changelog manifests ADD (when it has a changelog manifest list), or else the
//!   files its delta DELETEs and does not re-ADD, except those alive in the newest tag older than
//!   it (if that tag cannot be read, the changelog is left alone entirely);
//! * its changelog manifest list and manifests, or else its delta and base manifest lists that
//!   still exist and their manifests, except what must stay (index manifests and statistics are
//!   snapshot expiration's);
//! * then its changelog file.
//!
//! Finally emptied directories are reported (with `snapshot.clean-empty-directories`) and the
//! changelog `EARLIEST` hint is set to `end`. As with snapshots, a missing or corrupt manifest
//! cancels only what depended on it, any other storage failure stops the run, and a rerun
//! finishes the work.

use super::cleaner::Cleaner;
use super::expire_snapshots::{
    ExpireConfig, CHANGELOG_NUM_RETAINED_MAX, CHANGELOG_NUM_RETAINED_MIN,
};
use super::versions::{
    find_skipping_tags, min_consumer_next_snapshot, read_tags, write_hint, Versioned,
};
use super::MaintenanceContext;
use crate::error::{Error, Result};
use crate::storage::Storage;
use crate::table::scan::Table;
use crate::table::snapshot::{latest_snapshot_id, Snapshot};

/// What one changelog expiration did (or, in a dry run, would do).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChangelogExpireReport {
    /// The run only reported ([`MaintenanceContext::dry_run`]): the lists say what would have
    /// been deleted.
    pub dry_run: bool,
    /// Changelog ids whose files were deleted, ascending.
    pub expired_changelogs: Vec<i64>,
    /// Every file deleted, in order.
    pub deleted: Vec<String>,
    /// As [`super::expire_snapshots::ExpireReport::empty_directories`].
    pub empty_directories: Vec<String>,
    /// The earliest long-lived changelog before the run (`None`: none).
    pub earliest_before: Option<i64>,
    /// The earliest long-lived changelog after the run (in a dry run: that it would leave);
    /// equal to `earliest_before` when nothing expired, `None` when there were none.
    pub earliest_after: Option<i64>,
    /// Changelogs kept or deletions cancelled because metadata was missing or unreadable, and
    /// hints that could not be written; none of them fails the run.
    pub warnings: Vec<String>,
}

/// Expires long-lived changelogs of `table` (main branch) per `config` at `ctx.now_ms`; see the
/// module documentation. A table without changelogs (or without snapshots) is left as it is.
pub fn expire_changelogs(
    storage: &dyn Storage,
    table: &Table,
    config: &ExpireConfig,
    ctx: &MaintenanceContext,
) -> Result<ChangelogExpireReport> {
    let mut report = ChangelogExpireReport {
        dry_run: ctx.dry_run,
        ..ChangelogExpireReport::default()
    };
    let root = table.paths.root();
    let changelogs = Versioned::changelogs(root);
    let latest = latest_snapshot_id(storage, &table.paths)?;
    let earliest_snapshot = Versioned::snapshots(root).earliest(storage)?;
    let latest_cl = changelogs.latest(storage)?;
    let earliest_cl = changelogs.earliest(storage)?;
    let (Some(latest), Some(earliest_snapshot), Some(latest_cl), Some(earliest_cl)) =
        (latest, earliest_snapshot, latest_cl, earliest_cl)
    else {
        return Ok(report);
    };
    report.earliest_before = Some(earliest_cl);
    report.earliest_after = Some(earliest_cl);
    if config.changelog_retain_max < config.changelog_retain_min {
        return Err(Error::invalid_option(
            CHANGELOG_NUM_RETAINED_MAX,
            &config.changelog_retain_max.to_string(),
            format!(
                "must be at least {CHANGELOG_NUM_RETAINED_MIN} ({})",
                config.changelog_retain_min
            ),
        ));
    }
    let older_than = ctx.now_ms.saturating_sub(config.changelog_time_retained_ms);
    let min = (latest - i64::from(config.changelog_retain_max) + 1).max(earliest_cl);
    let mut max_exclusive = latest - i64::from(config.changelog_retain_min) + 1;
    if let Some(next) = min_consumer_next_snapshot(storage, table)? {
        max_exclusive = max_exclusive.min(next);
    }
    max_exclusive =
        max_exclusive.min(earliest_cl.saturating_add(i64::from(config.changelog_max_deletes)));
    max_exclusive = max_exclusive.min(latest_cl);
    if max_exclusive <= earliest_cl {
        return Ok(report);
    }
    let mut end = max_exclusive;
    for id in min..=max_exclusive {
        // A changelog's age is its own commit time.
        if let Some(cl) = changelogs.read(storage, id)? {
            if older_than <= cl.time_millis {
                end = id;
                break;
            }
        }
    }
    expire_until(
        storage,
        table,
        config,
        ctx,
        earliest_cl,
        end,
        earliest_snapshot,
        report,
    )
}

#[allow(
    clippy::too_many_arguments,
    reason = "the range to expire and the state of the run, each a separate input of the one loop"
)]
fn expire_until(
    storage: &dyn Storage,
    table: &Table,
    config: &ExpireConfig,
    ctx: &MaintenanceContext,
    earliest_cl: i64,
    end: i64,
    earliest_snapshot: i64,
    mut report: ChangelogExpireReport,
) -> Result<ChangelogExpireReport> {
    let root = table.paths.root();
    let changelogs = Versioned::changelogs(root);
    let snapshots = Versioned::snapshots(root);
    let tags = read_tags(storage, table)?;
    let Some(end_changelog) = changelogs.read(storage, end)? else {
        report
            .warnings
            .push(format!("changelog {end} vanished: nothing expired"));
        return Ok(report);
    };
    // The earliest snapshot; if another expirer just removed it, the one after.
    let earliest = match snapshots.read(storage, earliest_snapshot)? {
        Some(s) => Some(s),
        None => match snapshots.earliest(storage)? {
            Some(id) => snapshots.read(storage, id)?,
            None => None,
        },
    };
    let Some(earliest) = earliest else {
        report
            .warnings
            .push("the earliest snapshot vanished: nothing expired".to_string());
        return Ok(report);
    };
    let mut skipping: Vec<&Snapshot> = find_skipping_tags(&tags, earliest_cl, end).iter().collect();
    skipping.push(&end_changelog);
    skipping.push(&earliest);

    let mut cleaner = Cleaner::new(storage, table, ctx.dry_run, config.clean_empty_directories);
    let mut keep = cleaner.changelog_skipping_set(&skipping)?;
    for id in earliest_cl..end {
        let Some(cl) = changelogs.read(storage, id)? else {
            continue;
        };
        if !cleaner.prepare_tag_skipper(&tags, cl.id)? {
            cleaner.warnings.push(format!(
                "changelog {id} kept: the files of the tag before it are unreadable"
            ));
            continue;
        }
        let source = changelogs.file(id);
        // Data: the changelog files, or else what the delta removed.
        match &cl.changelog_manifest_list {
            Some(list) => cleaner.delete_added_files(list, &source)?,
            None => {
                if cleaner.manifest_exists(&cl.delta_manifest_list, &source)? {
                    let planned = cleaner.plan_delta_deletes(&cl.delta_manifest_list, &source)?;
                    for f in planned.unwrap_or_default() {
                        if !cleaner.skipped_by_tag(&f) {
                            cleaner.delete_planned(&f)?;
                        }
                    }
                }
            }
        }
        // Manifests.
        match &cl.changelog_manifest_list {
            Some(list) => cleaner.clean_manifest_list(list, &mut keep, &source)?,
            None => {
                for list in [&cl.delta_manifest_list, &cl.base_manifest_list] {
                    if cleaner.manifest_exists(list, &source)? {
                        cleaner.clean_manifest_list(list, &mut keep, &source)?;
                    }
                }
            }
        }
        cleaner.deleter.delete(&source)?;
        report.expired_changelogs.push(id);
    }
    cleaner.clean_empty_directories();
    if !ctx.dry_run {
        if let Err(e) = write_hint(storage, &changelogs.earliest_hint(), end) {
            cleaner.warnings.push(e);
        }
    }
    report.earliest_after = Some(end);
    let (deleted, empty_directories, warnings) = cleaner.into_parts();
    report.deleted = deleted;
    report.empty_directories = empty_directories;
    report.warnings.extend(warnings);
    Ok(report)
}
