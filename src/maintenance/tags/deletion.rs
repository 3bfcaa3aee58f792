//! Deleting a tag: the tag file first, then (unless another tag names its snapshot or the
//! snapshot still exists) the files only this tag protected; see the module documentation of
//! [`super`].

use std::collections::{BTreeSet, HashSet};

use super::super::partition_expire::is_not_found;
use super::super::Deleter;
use super::{
    earliest_snapshot_id, snapshot_exists, statistics_path, tag_path, try_read_snapshot,
    DeletedTag, TagDeleteReason, TagEntry, TagReport,
};
use crate::error::Result;
use crate::storage::Storage;
use crate::table::binary_row::BinaryRow;
use crate::table::path::{validate_name, TablePaths};
use crate::table::scan::{
    live_entries, read_index_manifest, read_manifest_list, snapshot_manifests, Table,
};
use crate::table::snapshot::Snapshot;

/// Deletes tag `name`; `tags` is the current view of all tags (read before the deletion, as
/// Paimon reads them) and loses the entry.
pub(super) fn delete_tag_with(
    storage: &dyn Storage,
    table: &Table,
    name: &str,
    tags: &mut Vec<TagEntry>,
    deleter: &mut Deleter<'_>,
    report: &mut TagReport,
    reason: TagDeleteReason,
) -> Result<()> {
    let paths = &table.paths;
    let Some(pos) = tags.iter().position(|t| t.name == name) else {
        report.warnings.push(format!("Tag '{name}' doesn't exist."));
        return Ok(());
    };
    let tag = tags[pos].clone();
    let id = tag.snapshot.id;
    let path = tag_path(paths, name)?;
    let mut deleted = DeletedTag {
        name: name.to_string(),
        snapshot_id: id,
        reason,
        cleaned: false,
    };
    if snapshot_exists(storage, paths, id)? {
        deleter.delete(&path)?;
        tags.remove(pos);
        report.deleted.push(deleted);
        return Ok(());
    }
    let all = tags.clone();
    deleter.delete(&path)?;
    tags.remove(pos);
    if all.iter().filter(|t| t.snapshot.id == id).count() > 1 {
        report.deleted.push(deleted);
        return Ok(());
    }
    // Neighbours: the previous tagged snapshot, and the nearer of the next tagged snapshot
    // and the earliest snapshot.
    let mut tagged: Vec<&Snapshot> = Vec::new();
    let mut by_id: Vec<&TagEntry> = all.iter().collect();
    by_id.sort_by_key(|t| t.snapshot.id);
    for t in by_id {
        if tagged.last().is_none_or(|s| s.id != t.snapshot.id) {
            tagged.push(&t.snapshot);
        }
    }
    let idx = tagged.iter().position(|s| s.id == id).unwrap_or(0);
    let left = idx.checked_sub(1).map(|i| tagged[i].clone());
    let earliest = match earliest_snapshot_id(storage, paths)? {
        Some(e) => try_read_snapshot(storage, paths, e)?.map(|(_, s)| s),
        None => None,
    };
    let right = match (earliest, tagged.get(idx + 1)) {
        (Some(e), Some(r)) => Some(if e.id < r.id { e } else { (*r).clone() }),
        (Some(e), None) => Some(e),
        (None, _) => None,
    };
    let Some(right) = right else {
        report.warnings.push(format!(
            "tag '{name}': the table has no snapshot to compare with; the files only this tag \
             held are left for orphan-file removal"
        ));
        report.deleted.push(deleted);
        return Ok(());
    };
    let neighbours: Vec<Snapshot> = left.into_iter().chain([right]).collect();
    deleted.cleaned = true;
    report.deleted.push(deleted);
    clean_data_files(storage, table, &tag.snapshot, &neighbours, deleter, report)?;
    clean_metadata(storage, paths, &tag.snapshot, &neighbours, deleter, report)?;
    Ok(())
}

type FileKey = (BinaryRow, i32, String);

/// The live data files of the snapshots, as `(partition, bucket, name)`.
fn live_file_set(
    storage: &dyn Storage,
    table: &Table,
    snapshots: &[Snapshot],
) -> Result<HashSet<FileKey>> {
    let mut out = HashSet::new();
    for s in snapshots {
        let manifests = snapshot_manifests(storage, &table.paths, s)?;
        let source = table.paths.snapshot(s.id);
        for (e, _) in live_entries(storage, &table.paths, &manifests, &source, &|_| true)? {
            out.insert((e.partition, e.bucket, e.file.file_name));
        }
    }
    Ok(out)
}

fn clean_data_files(
    storage: &dyn Storage,
    table: &Table,
    tag: &Snapshot,
    neighbours: &[Snapshot],
    deleter: &mut Deleter<'_>,
    report: &mut TagReport,
) -> Result<()> {
    let skip = match live_file_set(storage, table, neighbours) {
        Ok(s) => s,
        Err(e) => {
            report.warnings.push(format!(
                "skipped deleting the data files of the tag of snapshot {}: a neighbour could \
                 not be read: {e}",
                tag.id
            ));
            return Ok(());
        }
    };
    let planned = (|| -> Result<BTreeSet<String>> {
        let manifests = snapshot_manifests(storage, &table.paths, tag)?;
        let source = table.paths.snapshot(tag.id);
        let mut out = BTreeSet::new();
        for (e, src) in live_entries(storage, &table.paths, &manifests, &source, &|_| true)? {
            let key = (e.partition.clone(), e.bucket, e.file.file_name.clone());
            if skip.contains(&key) {
                continue;
            }
            let ppath = table.partition_path(&e.partition, &src)?;
            let data = table
                .paths
                .live_data_file(&ppath, e.bucket, &e.file, &src)?;
            let dir = data.rsplit_once('/').map_or("", |(d, _)| d).to_string();
            for extra in &e.file.extra_files {
                validate_name(extra, &src)?;
                out.insert(if dir.is_empty() {
                    extra.clone()
                } else {
                    format!("{dir}/{extra}")
                });
            }
            out.insert(data);
        }
        Ok(out)
    })();
    match planned {
        Ok(files) => {
            for f in files {
                deleter.delete(&f)?;
            }
        }
        Err(e) => report.warnings.push(format!(
            "skipped deleting the data files of the tag of snapshot {}: {e}",
            tag.id
        )),
    }
    Ok(())
}

/// Manifest lists, manifests, index manifests, index files and statistics the snapshots use.
fn manifest_skipping_set(
    storage: &dyn Storage,
    paths: &TablePaths,
    snapshots: &[Snapshot],
) -> Result<HashSet<String>> {
    let mut set = HashSet::new();
    for s in snapshots {
        set.insert(s.base_manifest_list.clone());
        set.insert(s.delta_manifest_list.clone());
        for m in snapshot_manifests(storage, paths, s)? {
            set.insert(m.file_name);
        }
        if let Some(im) = &s.index_manifest {
            set.insert(im.clone());
            for e in read_index_manifest(storage, paths, s)? {
                set.insert(e.file_name);
            }
        }
        if let Some(st) = &s.statistics {
            set.insert(st.clone());
        }
    }
    Ok(set)
}

fn clean_metadata(
    storage: &dyn Storage,
    paths: &TablePaths,
    tag: &Snapshot,
    neighbours: &[Snapshot],
    deleter: &mut Deleter<'_>,
    report: &mut TagReport,
) -> Result<()> {
    let mut claimed = match manifest_skipping_set(storage, paths, neighbours) {
        Ok(s) => s,
        Err(e) => {
            report.warnings.push(format!(
                "skipped deleting the manifests of the tag of snapshot {}: a neighbour could \
                 not be read: {e}",
                tag.id
            ));
            return Ok(());
        }
    };
    let source = paths.snapshot(tag.id);
    for list in [&tag.base_manifest_list, &tag.delta_manifest_list] {
        // An unreadable list: only the list itself goes.
        if let Ok(metas) = read_manifest_list(storage, paths, list, &source) {
            for m in metas {
                if claimed.insert(m.file_name.clone()) {
                    deleter.delete(&paths.manifest(&m.file_name, &source)?)?;
                }
            }
        }
        if claimed.insert(list.clone()) {
            deleter.delete(&paths.manifest(list, &source)?)?;
        }
    }
    if let Some(im) = &tag.index_manifest {
        match read_index_manifest(storage, paths, tag) {
            Ok(entries) => {
                for e in entries {
                    if claimed.insert(e.file_name.clone()) {
                        let p = match &e.external_path {
                            Some(x) => x.clone(),
                            None => paths.index_file(&e.file_name, &source)?,
                        };
                        deleter.delete(&p)?;
                    }
                }
                if claimed.insert(im.clone()) {
                    deleter.delete(&paths.manifest(im, &source)?)?;
                }
            }
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(e),
        }
    }
    if let Some(st) = &tag.statistics {
        if claimed.insert(st.clone()) {
            deleter.delete(&statistics_path(paths, st, &source)?)?;
        }
    }
    Ok(())
}
