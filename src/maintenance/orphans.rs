//! Orphan file removal: Paimon's `remove_orphan_files` procedure (`OrphanFilesClean`,
//! `LocalOrphanFilesClean`), described in `docs/maintenance.md` ("Orphan file removal").
//!
//! A file is an orphan when it sits where Paimon keeps table files (manifests, index files,
//! statistics, bucket directories, external data roots) and no snapshot, tag or long-lived
//! changelog of any branch names it: typically the output of a writer or compaction that
//! crashed before its commit, or files a crashed expiry left behind. The run:
//!
//! 1. refuses to start when a branch has no schema;
//! 2. removes stray files from each branch's `snapshot/` and `changelog/` directory (anything
//!    that is neither a `snapshot-`/`changelog-` file nor a hint);
//! 3. lists the candidate directories, **then** reads every snapshot, tag and changelog of
//!    every branch and collects the names they reference (reading after listing means a file
//!    committed while the run lists is still seen as referenced);
//! 4. deletes the listed files whose name nothing references and that are older than the
//!    cut-off.
//!
//! The only guard against a writer that has written files but not committed them yet is that
//! cut-off: Paimon compares file modification times with it, by default one day before now.
//! A listing's [`ObjectMeta::modified_ms`] gives that time; for storages that do not fill it
//! the caller may supply one per path (`modified_ms`); a file whose time is known to neither
//! is never deleted. Nothing else is locked, exactly as in Paimon.
//!
//! Reads that find a file missing count it as "references nothing" (a snapshot, tag or
//! manifest expired concurrently); any other read failure, after three attempts, stops the run
//! before anything in step 4 is deleted: a partial view of the references must never widen a
//! deletion.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::{Deleter, MaintenanceContext};
use crate::error::{Error, ErrorKind, Result};
use crate::storage::{ObjectMeta, Storage, StorageErrorKind, StorageResult};
use crate::table::index::decode_index_manifest;
use crate::table::job_state::STATE_DIR;
use crate::table::manifest::{decode_manifest, decode_manifest_list};
use crate::table::path::{normalize_uri, TablePaths};
use crate::table::scan::Table;
use crate::table::snapshot::Snapshot;

/// Paimon's default margin: files modified in the last day are never deleted.
pub const DEFAULT_OLDER_THAN_MS: i64 = 24 * 60 * 60 * 1000;

/// Attempts of a metadata read or listing that fails with anything but "not found".
const READ_ATTEMPTS: usize = 3;

/// Blob packs Paimon manages itself; never candidates.
const MANAGED_BLOB_SUFFIX: &str = ".managed.blob";

/// The directory of our compaction leases (see [`crate::table::lease`]).
const LEASE_DIR: &str = "compaction-lease";

/// A file that should have been deleted but could not be. Like Paimon, the run goes on: the
/// file stays an orphan and a later run retries it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FailedDeletion {
    /// Path of the file, relative to the storage root.
    pub path: String,
    /// The storage error, as text.
    pub error: String,
}

/// What a run found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OrphanReport {
    /// The cut-off (epoch ms): only files modified strictly before it were deletable.
    pub older_than_ms: i64,
    /// Nothing was deleted; `deleted` lists what would have been.
    pub dry_run: bool,
    /// The branches whose snapshots, tags and changelogs were read (`main` last).
    pub branches: Vec<String>,
    /// Directories searched for candidates (manifest, index, statistics, bucket directories).
    pub directories: usize,
    /// Distinct file names referenced by the table's metadata.
    pub referenced: usize,
    /// Unreferenced files found: strays of the snapshot and changelog directories plus the
    /// files of the searched directories that no metadata names. Each ends up in exactly one
    /// of `deleted`, `failed`, `kept_too_young`, `kept_unknown_age`.
    pub candidates: usize,
    /// Every path deleted (or, in a dry run, that would be), in order.
    pub deleted: Vec<String>,
    /// Their total size.
    pub deleted_bytes: u64,
    /// Candidates modified at or after the cut-off.
    pub kept_too_young: usize,
    /// Candidates whose modification time is unknown.
    pub kept_unknown_age: usize,
    /// Deletions that failed.
    pub failed: Vec<FailedDeletion>,
}

/// The cut-off Paimon uses when the caller gives none: one day before `now`.
pub fn default_older_than(ctx: &MaintenanceContext) -> i64 {
    ctx.now_ms.saturating_sub(DEFAULT_OLDER_THAN_MS)
}

/// For storages whose listings carry modification times: no other source of ages.
pub fn times_from_listing(_path: &str) -> Option<i64> {
    None
}

/// Removes the orphan files of the table at `table_path` that were modified before
/// `older_than_ms` (epoch ms; it must be earlier than `ctx.now_ms`, see
/// [`default_older_than`]). A file's modification time is its listing's
/// [`ObjectMeta::modified_ms`], else `modified_ms(path)` (epoch ms); when neither knows it
/// the file is kept. A dry run deletes nothing.
pub fn remove_orphan_files(
    storage: &dyn Storage,
    table_path: &str,
    older_than_ms: i64,
    modified_ms: &dyn Fn(&str) -> Option<i64>,
    ctx: &MaintenanceContext,
) -> Result<OrphanReport> {
    if older_than_ms >= ctx.now_ms {
        return Err(Error::invalid_option(
            "older_than",
            &older_than_ms.to_string(),
            format!(
                "must be earlier than now ({}): files being written and not yet committed \
                 would be deleted",
                ctx.now_ms
            ),
        ));
    }
    let table = load_table(storage, table_path)?;
    let root = table.paths.root().to_string();
    let mut report = OrphanReport {
        older_than_ms,
        dry_run: ctx.dry_run,
        ..OrphanReport::default()
    };
    let ages = Ages {
        older_than_ms,
        modified_ms,
    };
    let mut deleter = Deleter::new(storage, ctx.dry_run);

    // Branches: every `branch/branch-<name>` plus main; each must have a schema.
    let branches = valid_branches(storage, &root)?;
    report.branches = branches.iter().map(|b| b.name.clone()).collect();

    // maintenance-rules.md §9.2 step 1. Strays of the snapshot and changelog directories (no
    //    reference check: nothing references a file there).
    for b in &branches {
        for (dir, keep_prefix) in [("snapshot", "snapshot-"), ("changelog", "changelog-")] {
            let dir = join(&b.root, dir);
            for meta in plain_files(&try_list(storage, &dir), &dir) {
                let name = file_name(&meta.path);
                if name.starts_with(keep_prefix) || name == "EARLIEST" || name == "LATEST" {
                    continue;
                }
                report.candidates += 1;
                ages.judge(&meta, &mut deleter, &mut report);
            }
        }
    }

    // maintenance-rules.md §9.2 step 2. Candidates: files of the searched directories, by name.
    let dirs = candidate_dirs(storage, &table, &root);
    report.directories = dirs.len();
    let mut candidates: BTreeMap<String, Vec<ObjectMeta>> = BTreeMap::new();
    let mut seen: HashSet<String> = HashSet::new();
    let protected = [join(&root, LEASE_DIR) + "/", join(&root, STATE_DIR) + "/"];
    for (_dir, files) in dirs {
        for meta in files {
            let name = file_name(&meta.path).to_string();
            if name.ends_with(MANAGED_BLOB_SUFFIX)
                || (protected.iter().any(|p| meta.path.starts_with(p.as_str()))
                    && !is_writer_temp(&name))
                || !seen.insert(meta.path.clone())
            {
                continue;
            }
            candidates.entry(name).or_default().push(meta);
        }
    }
    if candidates.is_empty() {
        report.deleted = deleter.deleted;
        return Ok(report);
    }

    // maintenance-rules.md §9.2 step 3. Every name the metadata of every branch references. Read
    // after listing.
    let used = used_names(storage, &table.paths, &branches)?;
    report.referenced = used.len();

    // maintenance-rules.md §9.2 step 4. Unreferenced candidates old enough.
    for (name, metas) in &candidates {
        if used.contains(name) {
            continue;
        }
        for meta in metas {
            report.candidates += 1;
            ages.judge(meta, &mut deleter, &mut report);
        }
    }
    report.deleted = deleter.deleted;
    Ok(report)
}

/// The age test of a candidate, and its deletion.
struct Ages<'a> {
    older_than_ms: i64,
    modified_ms: &'a dyn Fn(&str) -> Option<i64>,
}

impl Ages<'_> {
    /// The candidate's modification time: the listing's, else the caller's.
    fn modified(&self, meta: &ObjectMeta) -> Option<i64> {
        meta.modified_ms.or_else(|| (self.modified_ms)(&meta.path))
    }

    fn judge(&self, meta: &ObjectMeta, deleter: &mut Deleter<'_>, report: &mut OrphanReport) {
        match self.modified(meta) {
            None => report.kept_unknown_age += 1,
            Some(t) if t >= self.older_than_ms => report.kept_too_young += 1,
            Some(_) => match deleter.delete(&meta.path) {
                Ok(()) => report.deleted_bytes += meta.size,
                Err(e) => report.failed.push(FailedDeletion {
                    path: meta.path.clone(),
                    error: e.to_string(),
                }),
            },
        }
    }
}

/// A branch and the directory of its snapshot, changelog, tag and schema files.
#[derive(Clone, Debug)]
struct Branch {
    name: String,
    root: String,
}

fn join(root: &str, rel: &str) -> String {
    if root.is_empty() {
        rel.to_string()
    } else {
        format!("{root}/{rel}")
    }
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `dir/` as a listing prefix (the storage root itself when `dir` is empty).
fn dir_prefix(dir: &str) -> String {
    if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    }
}

/// Retries a storage call that fails with anything but "not found".
fn retry<T>(mut call: impl FnMut() -> StorageResult<T>) -> StorageResult<T> {
    let mut attempt = 1;
    loop {
        match call() {
            Err(e) if e.kind != StorageErrorKind::NotFound && attempt < READ_ATTEMPTS => {
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// The table's latest schema, retried like every other metadata read.
fn load_table(storage: &dyn Storage, table_path: &str) -> Result<Table> {
    let mut attempt = 1;
    loop {
        match Table::load(storage, table_path) {
            Err(e) if attempt < READ_ATTEMPTS && is_transient(&e) => attempt += 1,
            other => return other,
        }
    }
}

fn is_transient(e: &Error) -> bool {
    matches!(e.kind, ErrorKind::Io { storage, .. } if storage != StorageErrorKind::NotFound)
}

/// A listing of a candidate directory: a failure reads as empty (not deleting is safe).
fn try_list(storage: &dyn Storage, dir: &str) -> Vec<ObjectMeta> {
    retry(|| storage.list(&dir_prefix(dir))).unwrap_or_default()
}

/// A listing of metadata: a failure stops the run (missing references would widen deletion).
fn list_metadata(storage: &dyn Storage, prefix: &str) -> Result<Vec<ObjectMeta>> {
    match retry(|| storage.list(prefix)) {
        Ok(l) => Ok(l),
        Err(e) if e.kind == StorageErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// A metadata file's bytes; `None` when it no longer exists.
fn read_metadata(storage: &dyn Storage, path: &str) -> Result<Option<Vec<u8>>> {
    match retry(|| storage.read_all(path)) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind == StorageErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The files directly in `dir` (not in its sub-directories).
fn plain_files(listing: &[ObjectMeta], dir: &str) -> Vec<ObjectMeta> {
    let prefix = dir_prefix(dir);
    listing
        .iter()
        .filter(|o| {
            o.path
                .strip_prefix(&prefix)
                .is_some_and(|rest| !rest.is_empty() && !rest.contains('/'))
        })
        .cloned()
        .collect()
}

/// Main and every `branch/branch-<name>`; an error naming the branches without a schema.
fn valid_branches(storage: &dyn Storage, root: &str) -> Result<Vec<Branch>> {
    let branch_dir = dir_prefix(&join(root, "branch"));
    let mut names = BTreeSet::new();
    for o in list_metadata(storage, &format!("{branch_dir}branch-"))? {
        // Only directories: `branch-<name>/...`.
        let rest = o.path.strip_prefix(&branch_dir).unwrap_or_default();
        if let Some((dir, _)) = rest.split_once('/') {
            if let Some(name) = dir.strip_prefix("branch-") {
                names.insert(name.to_string());
            }
        }
    }
    let mut branches: Vec<Branch> = names
        .into_iter()
        .map(|name| Branch {
            root: format!("{branch_dir}branch-{name}"),
            name,
        })
        .collect();
    let mut without_schema = Vec::new();
    for b in &branches {
        let prefix = format!("{}/schema/schema-", b.root);
        let has_schema = list_metadata(storage, &prefix)?
            .iter()
            .any(|o| id_of(&o.path, &prefix).is_some());
        if !has_schema {
            without_schema.push(b.name.clone());
        }
    }
    if !without_schema.is_empty() {
        return Err(Error::illegal_state(format!(
            "branches {without_schema:?} have no schema; orphan file removal aborted, \
             check these branches by hand"
        )));
    }
    // Main's schema was checked when the table was loaded.
    branches.push(Branch {
        name: "main".to_string(),
        root: root.to_string(),
    });
    Ok(branches)
}

/// Whether `name` is a writer's temporary file (`.<name>.<…>.tmp`, hidden, renamed or linked
/// into place when complete): a leftover of a killed writer once old enough, never data.
fn is_writer_temp(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".tmp")
}

/// The directories whose files are candidates, with their files: `manifest/`, `index/`,
/// `statistics/`, the bucket directories under the data path and under every
/// `data-file.external-paths` root, and the temporary files writers leave in the metadata
/// directories ([`is_writer_temp`]).
fn candidate_dirs(
    storage: &dyn Storage,
    table: &Table,
    root: &str,
) -> Vec<(String, Vec<ObjectMeta>)> {
    let mut out = Vec::new();
    for d in ["manifest", "index", "statistics"] {
        let dir = join(root, d);
        let files = plain_files(&try_list(storage, &dir), &dir);
        out.push((dir, files));
    }
    // A writer killed while it wrote metadata leaves its temporary file beside the target (a
    // tag's, a lease's, the planner state's: `.<name>.<pid>-<n>.tmp`): never a name Paimon
    // uses, so only those are candidates in these directories (`snapshot/` and `changelog/`
    // have their strays, step 1).
    for d in ["tag", "schema", "consumer", LEASE_DIR, STATE_DIR] {
        let dir = join(root, d);
        let files = plain_files(&try_list(storage, &dir), &dir)
            .into_iter()
            .filter(|o| is_writer_temp(file_name(&o.path)))
            .collect();
        out.push((dir, files));
    }
    let levels = table.schema.partition_keys.len();
    let data_root = match table
        .schema
        .options
        .get("data-file.path-directory")
        .filter(|d| !d.is_empty())
    {
        Some(d) => join(root, d.trim_matches('/')),
        None => root.to_string(),
    };
    out.extend(bucket_dirs(
        &data_root,
        &try_list(storage, &data_root),
        levels,
    ));
    // Paimon walks every configured root, whatever the strategy that picks among them.
    if let Some(ext) = table.schema.options.get("data-file.external-paths") {
        let roots: BTreeSet<String> = ext
            .split(',')
            .map(normalize_uri)
            .filter(|p| !p.is_empty())
            .collect();
        for r in roots {
            out.extend(bucket_dirs(&r, &try_list(storage, &r), levels));
        }
    }
    out
}

/// The bucket directories under a data root and their files: `levels` levels of partition
/// directories (names containing `=`), then directories named `bucket-*`. A partition
/// directory without such children is searched itself, as Paimon does (there it is how empty
/// partition directories are found).
fn bucket_dirs(
    data_root: &str,
    listing: &[ObjectMeta],
    levels: usize,
) -> Vec<(String, Vec<ObjectMeta>)> {
    // The directory tree the listing implies: children directories and files of each.
    let mut subdirs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut files: BTreeMap<String, Vec<ObjectMeta>> = BTreeMap::new();
    let prefix = dir_prefix(data_root);
    for o in listing {
        let Some(rest) = o.path.strip_prefix(&prefix) else {
            continue;
        };
        let parts: Vec<&str> = rest.split('/').collect();
        if parts.iter().any(|p| p.is_empty()) {
            continue;
        }
        let mut dir = data_root.to_string();
        for p in &parts[..parts.len() - 1] {
            subdirs
                .entry(dir.clone())
                .or_default()
                .insert(p.to_string());
            dir = join(&dir, p);
        }
        files.entry(dir).or_default().push(o.clone());
    }
    let mut selected = Vec::new();
    walk(&subdirs, data_root, levels, false, &mut selected);
    selected
        .into_iter()
        .map(|d| {
            let f = files.get(&d).cloned().unwrap_or_default();
            (d, f)
        })
        .collect()
}

fn walk(
    subdirs: &BTreeMap<String, BTreeSet<String>>,
    dir: &str,
    level: usize,
    is_partition: bool,
    out: &mut Vec<String>,
) {
    let empty = BTreeSet::new();
    let children = subdirs.get(dir).unwrap_or(&empty);
    let wanted: Vec<&String> = if level == 0 {
        children
            .iter()
            .filter(|c| c.starts_with("bucket-"))
            .collect()
    } else {
        children.iter().filter(|c| c.contains('=')).collect()
    };
    if wanted.is_empty() && is_partition {
        out.push(dir.to_string());
        return;
    }
    for c in wanted {
        let child = join(dir, c);
        if level == 0 {
            out.push(child);
        } else {
            walk(subdirs, &child, level - 1, true, out);
        }
    }
}

/// The id of a `<prefix><id>` path.
fn id_of(path: &str, prefix: &str) -> Option<i64> {
    path.strip_prefix(prefix)?.parse::<i64>().ok()
}

/// The `dir/<prefix><id>` files (temporary and other names are skipped).
fn versioned_files(storage: &dyn Storage, dir: &str, prefix: &str) -> Result<Vec<String>> {
    let full = format!("{}{prefix}", dir_prefix(dir));
    Ok(list_metadata(storage, &full)?
        .into_iter()
        .filter(|o| id_of(&o.path, &full).is_some())
        .map(|o| o.path)
        .collect())
}

/// Every snapshot-shaped document of a branch: its snapshots, its tags and its long-lived
/// changelogs. Files gone by the time they are read are skipped; an empty changelog file (a
/// torn write) too.
fn branch_documents(storage: &dyn Storage, b: &Branch) -> Result<Vec<Snapshot>> {
    let mut paths = versioned_files(storage, &join(&b.root, "snapshot"), "snapshot-")?;
    let tag_dir = join(&b.root, "tag");
    let tag_prefix = format!("{}tag-", dir_prefix(&tag_dir));
    paths.extend(
        list_metadata(storage, &tag_prefix)?
            .into_iter()
            .filter(|o| {
                o.path
                    .strip_prefix(&tag_prefix)
                    .is_some_and(|name| !name.contains('/'))
            })
            .map(|o| o.path),
    );
    let changelogs = versioned_files(storage, &join(&b.root, "changelog"), "changelog-")?;
    let mut out = Vec::new();
    for path in paths {
        if let Some(bytes) = read_metadata(storage, &path)? {
            out.push(Snapshot::from_json(&bytes, &path)?);
        }
    }
    for path in changelogs {
        match read_metadata(storage, &path)? {
            Some(bytes) if bytes.iter().any(|b| !b.is_ascii_whitespace()) => {
                out.push(Snapshot::from_json(&bytes, &path)?);
            }
            _ => {}
        }
    }
    Ok(out)
}

/// The names referenced by every snapshot, tag and changelog of every branch: their manifest
/// lists, the manifests those list and every data and extra file those name (added or
/// deleted), their index manifest (when it exists) and its index files, their statistics.
fn used_names(
    storage: &dyn Storage,
    paths: &TablePaths,
    branches: &[Branch],
) -> Result<HashSet<String>> {
    let mut used: HashSet<String> = HashSet::new();
    let mut lists: BTreeMap<String, String> = BTreeMap::new();
    let mut index_manifests: BTreeMap<String, String> = BTreeMap::new();
    for b in branches {
        for s in branch_documents(storage, b)? {
            let source = format!("{} (snapshot {})", b.root, s.id);
            for list in s
                .changelog_manifest_list
                .iter()
                .chain([&s.delta_manifest_list, &s.base_manifest_list])
            {
                used.insert(list.clone());
                lists.entry(list.clone()).or_insert_with(|| source.clone());
            }
            if let Some(i) = &s.index_manifest {
                index_manifests
                    .entry(i.clone())
                    .or_insert_with(|| source.clone());
            }
            if let Some(st) = &s.statistics {
                used.insert(st.clone());
            }
        }
    }
    // Manifest lists and index manifests live in the table's `manifest/`, shared by branches.
    let mut manifests: BTreeMap<String, String> = BTreeMap::new();
    for (name, source) in &lists {
        let path = paths.manifest(name, source)?;
        let Some(bytes) = read_metadata(storage, &path)? else {
            continue;
        };
        for m in decode_manifest_list(&bytes, &path)? {
            used.insert(m.file_name.clone());
            manifests.entry(m.file_name).or_insert_with(|| path.clone());
        }
    }
    for (name, source) in &manifests {
        let path = paths.manifest(name, source)?;
        let Some(bytes) = read_metadata(storage, &path)? else {
            continue;
        };
        for e in decode_manifest(&bytes, &path)? {
            used.extend(e.file.extra_files);
            used.insert(e.file.file_name);
        }
    }
    for (name, source) in &index_manifests {
        let path = paths.manifest(name, source)?;
        let Some(bytes) = read_metadata(storage, &path)? else {
            continue;
        };
        used.insert(name.clone());
        used.extend(
            decode_index_manifest(&bytes, &path)?
                .into_iter()
                .map(|e| e.file_name),
        );
    }
    Ok(used)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metas(paths: &[&str]) -> Vec<ObjectMeta> {
        paths
            .iter()
            .map(|p| ObjectMeta {
                path: p.to_string(),
                size: 1,
                modified_ms: None,
            })
            .collect()
    }

    fn dirs(root: &str, paths: &[&str], levels: usize) -> Vec<(String, Vec<String>)> {
        bucket_dirs(root, &metas(paths), levels)
            .into_iter()
            .map(|(d, f)| (d, f.into_iter().map(|m| m.path).collect()))
            .collect()
    }

    #[test]
    fn bucket_directories_follow_the_partition_levels() {
        let listing = [
            "t/a=1/b=x/bucket-0/f1",
            "t/a=1/b=x/bucket-0/sub/f2",
            "t/a=1/b=x/notbucket/f3",
            "t/a=1/b=y/stray",
            "t/a=1/f4",
            "t/a=2/plain",
            "t/manifest/m",
            "t/bucket-0/f5",
            "t/compaction-lease/k-0",
        ];
        assert_eq!(
            dirs("t", &listing, 2),
            vec![
                (
                    "t/a=1/b=x/bucket-0".to_string(),
                    vec!["t/a=1/b=x/bucket-0/f1".to_string()]
                ),
                // partition directories without matching children are searched themselves
                ("t/a=1/b=y".to_string(), vec!["t/a=1/b=y/stray".to_string()]),
                ("t/a=2".to_string(), vec!["t/a=2/plain".to_string()]),
            ]
        );
        assert_eq!(
            dirs("t", &listing, 0),
            vec![("t/bucket-0".to_string(), vec!["t/bucket-0/f5".to_string()])]
        );
        assert_eq!(
            dirs("file:/ext", &["file:/ext/bucket-postpone/f"], 0),
            vec![(
                "file:/ext/bucket-postpone".to_string(),
                vec!["file:/ext/bucket-postpone/f".to_string()]
            )]
        );
        assert!(dirs("", &["bucket-1/f"], 0).len() == 1);
    }

    #[test]
    fn retries_stop_at_not_found_and_after_three_attempts() {
        let mut n = 0;
        let r: StorageResult<()> = retry(|| {
            n += 1;
            Err(crate::storage::StorageError::new(
                StorageErrorKind::Io,
                "p",
                "",
            ))
        });
        assert!(r.is_err());
        assert_eq!(n, 3);
        let mut n = 0;
        let r: StorageResult<()> = retry(|| {
            n += 1;
            Err(crate::storage::StorageError::not_found("p"))
        });
        assert_eq!(r.unwrap_err().kind, StorageErrorKind::NotFound);
        assert_eq!(n, 1);
    }
}
