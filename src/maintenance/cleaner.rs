//! Deleting what expiring snapshots and changelogs leave behind, through a [`Deleter`]: the
//! data and changelog files their deltas remove (checked against the newest older tag), their
//! manifests, index files and statistics (unless a retained snapshot or tag still names them),
//! and the directories left empty. Shared by snapshot and changelog expiration; what each
//! deletion depends on is in [`super::expire_snapshots`].

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::versions::{exists, join};
use super::Deleter;
use crate::error::{Error, ErrorKind, Result};
use crate::storage::{Storage, StorageErrorKind};
use crate::table::binary_row::BinaryRow;
use crate::table::manifest::{DataFileMeta, FileKind};
use crate::table::path::{validate_external_path, validate_name};
use crate::table::scan::{read_index_manifest, read_manifest, read_manifest_list, Table};
use crate::table::snapshot::Snapshot;

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

    /// Deleted paths, empty directories and warnings, for the report of the expiration.
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
        file: &DataFileMeta,
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
    pub(crate) fn snapshot_skipping_set(
        &mut self,
        snaps: &[&Snapshot],
    ) -> Result<Option<HashSet<String>>> {
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
    pub(crate) fn clean_index_files(
        &mut self,
        s: &Snapshot,
        claimed: &mut HashSet<String>,
    ) -> Result<()> {
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

    pub(crate) fn clean_statistics(
        &mut self,
        s: &Snapshot,
        claimed: &mut HashSet<String>,
    ) -> Result<()> {
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
