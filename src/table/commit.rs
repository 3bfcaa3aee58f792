//! Committing a compaction as snapshot `N+1` with commit kind COMPACT (format.md §11).
//!
//! The delta manifest is written once. Each attempt then re-reads the latest snapshot; if it
//! moved since the job planned, the delta is checked against it (every removed file must still
//! be live, no added file may be live already, level ≥ 1 key ranges must stay disjoint, the
//! bucket count must not change, removed index files must still be listed). A failed check is a
//! conflict: the job is abandoned, never retried blindly. Otherwise the manifest lists (and the
//! index manifest, if deletion vectors changed) are rebuilt on top of the latest snapshot and
//! the snapshot is created with `create_if_absent`; losing that race retries a bounded number
//! of times. Replaced files are never deleted: older snapshots still reference them.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::avro;
use super::binary_row::{order_key, BinaryRow, Datum};
use super::ids::IdGen;
use super::index::{self, IndexManifestEntry};
use super::manifest::{
    self, FileIdentifier, FileKind, ManifestEntry, ManifestFileMeta, SimpleStats,
};
use super::manifest_merge::{self, ManifestMergeReport};
use super::scan::{live_entries, read_index_manifest, snapshot_manifests, Table};
use super::snapshot::{latest_snapshot_id, read_snapshot, CommitKind, Snapshot};
use crate::error::{Error, Result};
use crate::storage::{Storage, StorageError, StorageErrorKind};

/// The writer version recorded in our snapshots.
pub const WRITER_VERSION: &str = concat!("paimon-compact-", env!("CARGO_PKG_VERSION"));

/// Paths this job wrote, so a failure can delete every one of them.
#[derive(Clone, Debug, Default)]
pub struct WrittenFiles {
    paths: Vec<String>,
}

impl WrittenFiles {
    /// Records a path before it is written (a write that fails half-way may leave it behind).
    pub fn track(&mut self, path: &str) {
        self.paths.push(path.to_string());
    }

    /// The recorded paths, relative to the storage root, in the order they were tracked.
    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    /// Stops tracking `path` (every occurrence), e.g. after it was deleted, so a later
    /// cleanup does not touch it.
    pub fn forget(&mut self, path: &str) {
        self.paths.retain(|p| p != path);
    }

    /// Deletes `paths` now (temporary files a step has read) and stops tracking those that
    /// went; one that could not be deleted stays tracked, so a failing job still removes it,
    /// and a successful one leaves it as an orphan no snapshot references.
    pub fn delete_now<'p>(
        &mut self,
        storage: &dyn Storage,
        paths: impl IntoIterator<Item = &'p String>,
    ) {
        for p in paths {
            if storage.delete(p).is_ok() {
                self.forget(p);
            }
        }
    }

    /// Deletes everything recorded (missing files are fine); returns what could not be deleted.
    pub fn delete_all(&mut self, storage: &dyn Storage) -> Vec<String> {
        let mut failed = Vec::new();
        for p in self.paths.drain(..) {
            match storage.delete(&p) {
                Ok(()) => {}
                Err(e) if e.kind == StorageErrorKind::NotFound => {}
                Err(e) => failed.push(format!("{p}: {e}")),
            }
        }
        failed
    }
}

/// Writes a small metadata file, recording it first.
pub fn write_tracked(
    storage: &dyn Storage,
    written: &mut WrittenFiles,
    path: &str,
    bytes: &[u8],
) -> Result<u64> {
    written.track(path);
    Ok(storage.write_all(path, bytes)?)
}

/// What a compaction commits (in JSON, a fan-out task result's `delta`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CommitDelta {
    /// DELETE entries (verbatim copies of the live entries) and ADD entries.
    pub entries: Vec<ManifestEntry>,
    /// Changelog files produced by compaction (ADD only).
    pub changelog: Vec<ManifestEntry>,
    /// Index file changes (DELETE of replaced deletion-vector files, ADD of new ones).
    pub index: Vec<IndexManifestEntry>,
    /// Live files outside `entries` whose deletion vectors this commit extends (lookup marks):
    /// they must still be live when it lands, or the superseded rows would come back.
    pub marked: Vec<ManifestEntry>,
}

impl CommitDelta {
    /// `true` when there is nothing to commit: no data, changelog or index entries
    /// (`marked` alone never occurs, as marks always come with index changes).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.changelog.is_empty() && self.index.is_empty()
    }
}

/// Settings of a commit.
#[derive(Clone, Debug)]
pub struct CommitSettings {
    /// COMPACT for compaction jobs; APPEND for the demo writer.
    pub kind: CommitKind,
    /// `commitUser` of the snapshot; a job's defaults to `paimon-compact-<job id>`.
    pub commit_user: String,
    /// Commit time, epoch milliseconds: the snapshot's `timeMillis`.
    pub now_ms: i64,
    /// Rebase attempts after losing the snapshot race to an unrelated commit.
    pub max_retries: usize,
    /// Random bytes (from the job id) that spread the waits between attempts of concurrent
    /// jobs apart.
    pub jitter_seed: u64,
    /// Merge small manifests of the base list (`manifest.*` options), as Java's commit does.
    /// The demo writer turns it off to leave tables as pypaimon leaves them.
    pub merge_manifests: bool,
    /// `commitIdentifier` of the snapshot: `i64::MAX` for batch commits (a compaction job,
    /// a procedure); partition expiration after a commit reuses that commit's.
    pub commit_identifier: i64,
}

/// How long to wait before attempt `attempt` (1-based) after a lost race: exponential from
/// 10 ms up to 10 s, ±20% jitter, as Paimon's `commit.min-retry-wait` / `max-retry-wait`
/// defaults. The wait gives the winning writer room to finish, so that a steady stream of
/// other commits does not starve this one.
pub fn retry_wait_ms(attempt: usize, jitter_seed: u64) -> u64 {
    let base = 10u64.saturating_mul(1u64 << attempt.min(20)).min(10_000);
    // splitmix64 of the seed and the attempt: a fraction in [0.8, 1.2).
    let mut z = jitter_seed.wrapping_add((attempt as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let permille = 800 + z % 400;
    base * permille / 1000
}

/// The outcome of a commit.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CommitOutcome {
    /// Id of the snapshot this commit created.
    pub snapshot_id: i64,
    /// Snapshots that landed between planning and commit (rebased on).
    pub rebased_over: Vec<i64>,
    /// Attempts to create the snapshot, the successful one included (1 when no race was
    /// lost).
    pub attempts: usize,
    /// Problems after the snapshot existed (the commit stands), e.g. the LATEST hint.
    pub warnings: Vec<String>,
    /// How the base manifest list was merged, if it was.
    #[serde(default)]
    pub manifest_merge: Option<ManifestMergeReport>,
}

/// Part of the message of an [`ErrorKind::CommitUnknown`](crate::ErrorKind::CommitUnknown)
/// error, for people: programs branch on the kind
/// ([`Error::commit_may_have_happened`]), never on this text.
const UNKNOWN_OUTCOME: &str = "the commit's outcome is unknown";

fn codec(table: &Table) -> Result<apache_avro::Codec> {
    avro::codec_for(
        table
            .schema
            .options
            .get("manifest.compression")
            .map(String::as_str)
            .unwrap_or("zstd"),
    )
}

/// Minimum, maximum and null count of every partition field over the entries.
fn partition_stats(table: &Table, entries: &[&ManifestEntry], source: &str) -> Result<SimpleStats> {
    let n = table.partition_types.len();
    let mut min: Vec<Option<(crate::meta::Key, Datum)>> = vec![None; n];
    let mut max: Vec<Option<(crate::meta::Key, Datum)>> = vec![None; n];
    let mut nulls = vec![0i64; n];
    let mut decoded: HashMap<&BinaryRow, Vec<Datum>> = HashMap::new();
    for e in entries {
        if !decoded.contains_key(&e.partition) {
            decoded.insert(&e.partition, table.partition_values(&e.partition, source)?);
        }
        for (i, v) in decoded[&e.partition].iter().enumerate() {
            if v.is_null() {
                nulls[i] += 1;
                continue;
            }
            let k = order_key(std::slice::from_ref(v));
            if min[i].as_ref().is_none_or(|(m, _)| k < *m) {
                min[i] = Some((k.clone(), v.clone()));
            }
            if max[i].as_ref().is_none_or(|(m, _)| k > *m) {
                max[i] = Some((k, v.clone()));
            }
        }
    }
    let row = |v: Vec<Option<(crate::meta::Key, Datum)>>| {
        let values: Vec<Datum> = v
            .into_iter()
            .map(|d| d.map_or(Datum::Null, |(_, d)| d))
            .collect();
        BinaryRow::encode(&values, &table.partition_types)
    };
    Ok(SimpleStats {
        min_values: row(min)?,
        max_values: row(max)?,
        null_counts: Some(nulls.into_iter().map(Some).collect()),
    })
}

/// The commit's metadata files, named `manifest-<uuid>-<n>`, `manifest-list-<uuid>-<n>` and
/// `index-manifest-<uuid>-<n>` with `n` counting up in the order they are written; each path
/// is recorded in `written` before it is written, so a failure can delete it.
struct CommitFiles<'a> {
    storage: &'a dyn Storage,
    table: &'a Table,
    ids: &'a mut IdGen,
    written: &'a mut WrittenFiles,
    uuid: String,
    counter: u32,
}

impl<'a> CommitFiles<'a> {
    fn new(
        storage: &'a dyn Storage,
        table: &'a Table,
        ids: &'a mut IdGen,
        written: &'a mut WrittenFiles,
    ) -> Self {
        let uuid = ids.next_uuid();
        CommitFiles {
            storage,
            table,
            ids,
            written,
            uuid,
            counter: 0,
        }
    }

    /// The next name with `prefix`, and its path under the table's manifest directory.
    fn next_name(&mut self, prefix: &str) -> Result<(String, String)> {
        let name = format!("{prefix}-{}-{}", self.uuid, self.counter);
        self.counter += 1;
        let path = self.table.paths.manifest(&name, "compaction job")?;
        Ok((name, path))
    }

    /// Writes `entries` as manifests that roll at `manifest.target-file-size`, as Paimon's
    /// rolling manifest writer does (one file unless the entries outgrow it: a commit of
    /// 100 000 files is several manifests, each decoded on its own by every reader), and
    /// returns their list entries.
    fn manifests(&mut self, entries: &[ManifestEntry]) -> Result<Vec<ManifestFileMeta>> {
        let table = self.table;
        let ids = &mut *self.ids;
        let files = manifest::encode_manifests_rolling(
            entries,
            codec(table)?,
            table.options.manifest.target_file_size,
            || ids.next_bytes(),
        )?;
        let mut metas = Vec::with_capacity(files.len());
        let mut start = 0;
        for (bytes, n) in files {
            let chunk = &entries[start..start + n];
            start += n;
            let (name, path) = self.next_name("manifest")?;
            let size = write_tracked(self.storage, self.written, &path, &bytes)?;
            metas.push(manifest_meta(table, name, &path, size, chunk)?);
        }
        Ok(metas)
    }

    /// Writes a manifest list of `metas`; returns its name and size.
    fn list(&mut self, metas: &[ManifestFileMeta]) -> Result<(String, i64)> {
        let (name, path) = self.next_name("manifest-list")?;
        let bytes =
            manifest::encode_manifest_list(metas, codec(self.table)?, self.ids.next_bytes())?;
        let size = write_tracked(self.storage, self.written, &path, &bytes)?;
        Ok((name, size as i64))
    }

    /// Writes an index manifest of `entries`; returns its name.
    fn index_manifest(&mut self, entries: &[IndexManifestEntry]) -> Result<String> {
        let (name, path) = self.next_name("index-manifest")?;
        let bytes =
            index::encode_index_manifest(entries, codec(self.table)?, self.ids.next_bytes())?;
        write_tracked(self.storage, self.written, &path, &bytes)?;
        Ok(name)
    }

    /// Deletes the files of a lost attempt (nothing references them) and forgets the ones
    /// that are gone.
    fn discard(&mut self, attempt_files: &mut Vec<String>) {
        for p in attempt_files.drain(..) {
            if self.storage.delete(&p).is_ok() {
                self.written.forget(&p);
            }
        }
    }
}

/// Checks the delta against snapshot `latest`; `Err(conflict)` when it no longer applies.
/// The checks run in this order, and the first that fails names the conflict: the files the
/// delta touches, the partitions' bucket counts, the key ranges of levels >= 1, the index
/// files.
fn check_conflicts(
    storage: &dyn Storage,
    table: &Table,
    latest: &Snapshot,
    delta: &CommitDelta,
) -> Result<()> {
    let source = table.paths.snapshot(latest.id);
    let partitions: HashSet<BinaryRow> = delta
        .entries
        .iter()
        .chain(&delta.marked)
        .map(|e| e.partition.clone())
        .collect();
    let manifests = snapshot_manifests(storage, &table.paths, latest)?;
    let live = live_entries(storage, &table.paths, &manifests, &source, &|p| {
        partitions.contains(p)
    })?;
    let mut by_id: HashMap<_, &ManifestEntry> =
        live.iter().map(|(e, _)| (e.identifier(), e)).collect();
    check_files(&mut by_id, latest.id, delta)?;
    check_bucket_counts(live.iter().map(|(e, _)| e), delta)?;
    // Primary-key tables: every level >= 1 of a touched bucket stays one sorted run.
    if !table.key_types.is_empty() {
        check_levels_disjoint(table, &source, by_id.values().copied(), delta)?;
    }
    if !delta.index.is_empty() {
        check_index_files(storage, table, latest, delta)?;
    }
    Ok(())
}

/// Every file the delta removes or marks must still be live, and none it adds may be live
/// already. `live` (by identifier) keeps only what the delta leaves live.
fn check_files(
    live: &mut HashMap<FileIdentifier, &ManifestEntry>,
    latest_id: i64,
    delta: &CommitDelta,
) -> Result<()> {
    for e in delta.entries.iter().filter(|e| e.kind == FileKind::Delete) {
        if live.remove(&e.identifier()).is_none() {
            return Err(Error::conflict(format!(
                "file '{}' (bucket {}, level {}) is no longer live in snapshot {latest_id}: \
                 another job compacted or overwrote it",
                e.file.file_name, e.bucket, e.file.level
            )));
        }
    }
    for e in &delta.marked {
        if !live.contains_key(&e.identifier()) {
            return Err(Error::conflict(format!(
                "file '{}' (bucket {}, level {}), whose deletion vector this job extends, is no \
                 longer live in snapshot {latest_id}",
                e.file.file_name, e.bucket, e.file.level
            )));
        }
    }
    for e in delta.entries.iter().filter(|e| e.kind == FileKind::Add) {
        if live.contains_key(&e.identifier()) {
            return Err(Error::conflict(format!(
                "file '{}' (bucket {}, level {}) is already live in snapshot {latest_id}",
                e.file.file_name, e.bucket, e.file.level
            )));
        }
    }
    Ok(())
}

/// The bucket count of a partition is frozen once written: a rescale since planning is a
/// conflict.
fn check_bucket_counts<'e>(
    live: impl Iterator<Item = &'e ManifestEntry>,
    delta: &CommitDelta,
) -> Result<()> {
    // The postpone bucket's entries record -2, not the partition's count (and a postpone
    // compaction deletes them while adding files with the real count).
    let real = |e: &&ManifestEntry| e.bucket != super::manifest::POSTPONE_BUCKET;
    let mut totals: HashMap<&BinaryRow, i32> = HashMap::new();
    for e in live.filter(real) {
        totals.entry(&e.partition).or_insert(e.total_buckets);
    }
    for e in delta.entries.iter().filter(real) {
        if let Some(t) = totals.get(&e.partition) {
            if *t != e.total_buckets {
                return Err(Error::conflict(format!(
                    "the partition's bucket count changed to {t} (this job saw {}); the table \
                     was rescaled",
                    e.total_buckets
                )));
            }
        }
    }
    Ok(())
}

/// In every bucket the delta touches, each level >= 1 (the files that stay live plus the
/// delta's new ones) must remain one sorted run: no two key ranges overlap.
fn check_levels_disjoint<'e>(
    table: &Table,
    source: &str,
    staying: impl Iterator<Item = &'e ManifestEntry>,
    delta: &'e CommitDelta,
) -> Result<()> {
    let touched: HashSet<(&BinaryRow, i32)> = delta
        .entries
        .iter()
        .map(|e| (&e.partition, e.bucket))
        .collect();
    /// A file's key range and name.
    type Range<'n> = (crate::meta::Key, crate::meta::Key, &'n str);
    let mut levels: BTreeMap<(&BinaryRow, i32, i32), Vec<Range<'_>>> = BTreeMap::new();
    let adds = delta.entries.iter().filter(|e| e.kind == FileKind::Add);
    for e in staying.chain(adds) {
        if e.file.level >= 1 && touched.contains(&(&e.partition, e.bucket)) {
            levels
                .entry((&e.partition, e.bucket, e.file.level))
                .or_default()
                .push((
                    table.key(&e.file.min_key, source, "min key")?,
                    table.key(&e.file.max_key, source, "max key")?,
                    &e.file.file_name,
                ));
        }
    }
    for ((_, bucket, level), mut files) in levels {
        files.sort();
        for w in files.windows(2) {
            if w[1].0 <= w[0].1 {
                return Err(Error::conflict(format!(
                    "files '{}' and '{}' would overlap in level {level} of bucket {bucket}",
                    w[0].2, w[1].2
                )));
            }
        }
    }
    Ok(())
}

/// Index files this job replaces must still be live, and a bucket whose deletion vectors
/// this job rewrites must have gained no other index file (its vectors would be lost).
fn check_index_files(
    storage: &dyn Storage,
    table: &Table,
    latest: &Snapshot,
    delta: &CommitDelta,
) -> Result<()> {
    let current = read_index_manifest(storage, &table.paths, latest)?;
    let ids: HashSet<_> = current.iter().map(IndexManifestEntry::identifier).collect();
    for e in delta.index.iter().filter(|e| e.kind == FileKind::Delete) {
        if !ids.contains(&e.identifier()) {
            return Err(Error::conflict(format!(
                "index file '{}' was replaced by another commit after snapshot {}",
                e.file_name, latest.id
            )));
        }
    }
    let replaced: HashSet<_> = delta
        .index
        .iter()
        .filter(|e| e.kind == FileKind::Delete)
        .map(IndexManifestEntry::identifier)
        .collect();
    for add in delta.index.iter().filter(|e| e.kind == FileKind::Add) {
        if let Some(other) = current.iter().find(|c| {
            c.index_type == add.index_type
                && c.partition == add.partition
                && c.bucket == add.bucket
                && !replaced.contains(&c.identifier())
        }) {
            return Err(Error::conflict(format!(
                "index file '{}' of bucket {} was added by another commit after this job \
                 planned (snapshot {})",
                other.file_name, add.bucket, latest.id
            )));
        }
    }
    Ok(())
}

/// The index manifest after applying the delta to `latest`'s.
fn fold_index(
    storage: &dyn Storage,
    table: &Table,
    latest: Option<&Snapshot>,
    delta: &[IndexManifestEntry],
) -> Result<Vec<IndexManifestEntry>> {
    let mut entries = match latest {
        Some(l) => read_index_manifest(storage, &table.paths, l)?,
        None => Vec::new(),
    };
    let removed: BTreeSet<_> = delta
        .iter()
        .filter(|e| e.kind == FileKind::Delete)
        .map(IndexManifestEntry::identifier)
        .collect();
    entries.retain(|e| !removed.contains(&e.identifier()));
    entries.extend(delta.iter().filter(|e| e.kind == FileKind::Add).cloned());
    Ok(entries)
}

/// One commit: what to put on top of which snapshot, and how.
#[derive(Clone, Copy)]
pub struct CommitRequest<'a> {
    /// The table as loaded for the job (its paths and options).
    pub table: &'a Table,
    /// The snapshot the job planned on; `None` for a table that had no snapshot.
    pub planned_on: Option<i64>,
    /// What to commit; its manifests are written once, before the first attempt.
    pub delta: &'a CommitDelta,
    /// Kind, user, time, retry budget and manifest merging of the commit.
    pub settings: &'a CommitSettings,
    /// Called with [`retry_wait_ms`] (milliseconds) before each attempt after a lost race;
    /// supplied by the host, as the core has no clock. `None` retries without waiting.
    pub sleep: Option<&'a dyn Fn(u64)>,
}

/// Commits `delta` on top of the snapshot the job planned on (`planned_on`; `None` for a
/// table that had no snapshot), retrying without waiting.
pub fn commit(
    storage: &dyn Storage,
    table: &Table,
    planned_on: Option<i64>,
    delta: &CommitDelta,
    settings: &CommitSettings,
    ids: &mut IdGen,
    written: &mut WrittenFiles,
) -> Result<CommitOutcome> {
    let request = CommitRequest {
        table,
        planned_on,
        delta,
        settings,
        sleep: None,
    };
    commit_with_backoff(storage, &request, ids, written)
}

/// Commits `request`, waiting with its `sleep` before each attempt after a lost race.
///
/// The phases: the delta's files are written once (`write_delta`); then each attempt reads
/// the latest snapshot and checks the delta still applies to it (`read_latest`), writes the
/// base list on top of it (`write_base`), builds the next snapshot (`next_snapshot`) and
/// tries to create it (`publish`). Losing the race for the snapshot file starts another
/// attempt, up to `max_retries` more; anything else ends the commit. Every file written is
/// recorded in `written`; the files of a lost attempt are deleted by the next one.
pub fn commit_with_backoff(
    storage: &dyn Storage,
    request: &CommitRequest<'_>,
    ids: &mut IdGen,
    written: &mut WrittenFiles,
) -> Result<CommitOutcome> {
    let settings = request.settings;
    let mut files = CommitFiles::new(storage, request.table, ids, written);
    let delta = write_delta(&mut files, request.delta)?;
    let mut rebased_over = Vec::new();
    let mut attempt_files: Vec<String> = Vec::new();
    for attempt in 0..=settings.max_retries {
        if attempt > 0 {
            if let Some(sleep) = request.sleep {
                sleep(retry_wait_ms(attempt, settings.jitter_seed));
            }
        }
        let latest = read_latest(storage, request, &mut rebased_over)?;
        files.discard(&mut attempt_files);
        let before = files.written.paths().len();
        let base = write_base(&mut files, request, latest.snapshot.as_ref())?;
        attempt_files.extend(files.written.paths()[before..].iter().cloned());
        let manifest_merge = base.manifest_merge.clone();
        let snapshot = next_snapshot(request, &delta, base, &latest, files.ids)?;
        match publish(storage, request.table, &snapshot)? {
            Published::Committed { warnings } => {
                return Ok(CommitOutcome {
                    snapshot_id: snapshot.id,
                    rebased_over,
                    attempts: attempt + 1,
                    warnings,
                    manifest_merge,
                })
            }
            Published::LostRace => continue,
        }
    }
    Err(Error::conflict(format!(
        "lost the race for the next snapshot {} times in a row; giving up",
        settings.max_retries + 1
    )))
}

/// The list entry of the manifest `name` at `path`, `size` bytes, holding `entries`.
fn manifest_meta(
    table: &Table,
    name: String,
    path: &str,
    size: u64,
    entries: &[ManifestEntry],
) -> Result<ManifestFileMeta> {
    let refs: Vec<&ManifestEntry> = entries.iter().collect();
    let range = |f: &dyn Fn(&ManifestEntry) -> i32| {
        (entries.iter().map(f).min(), entries.iter().map(f).max())
    };
    let (min_bucket, max_bucket) = range(&|e| e.bucket);
    let (min_level, max_level) = range(&|e| e.file.level);
    Ok(ManifestFileMeta {
        file_name: name,
        file_size: size as i64,
        num_added_files: entries.iter().filter(|e| e.kind == FileKind::Add).count() as i64,
        num_deleted_files: entries
            .iter()
            .filter(|e| e.kind == FileKind::Delete)
            .count() as i64,
        partition_stats: partition_stats(table, &refs, path)?,
        schema_id: table.schema.id,
        min_bucket,
        max_bucket,
        min_level,
        max_level,
        min_row_id: None,
        max_row_id: None,
    })
}

/// The files of the delta, written once for every attempt.
struct DeltaFiles {
    list: (String, i64),
    changelog_list: Option<(String, i64)>,
    /// Rows the delta adds, net of the rows it removes.
    added_rows: i64,
    /// Rows of the changelog files, when there are any.
    changelog_rows: Option<i64>,
}

/// Writes the delta and changelog manifests and their lists. They do not depend on the
/// snapshot the commit lands on, so an attempt only writes the base list (and the index
/// manifest) between reading the latest snapshot and creating the next one.
fn write_delta(files: &mut CommitFiles<'_>, delta: &CommitDelta) -> Result<DeltaFiles> {
    let delta_metas = if delta.entries.is_empty() {
        Vec::new()
    } else {
        files.manifests(&delta.entries)?
    };
    let changelog_metas = if delta.changelog.is_empty() {
        Vec::new()
    } else {
        files.manifests(&delta.changelog)?
    };
    let added_rows: i64 = delta
        .entries
        .iter()
        .map(|e| match e.kind {
            FileKind::Add => e.file.row_count,
            FileKind::Delete => -e.file.row_count,
        })
        .sum();
    let list = files.list(&delta_metas)?;
    let changelog_list = if changelog_metas.is_empty() {
        None
    } else {
        Some(files.list(&changelog_metas)?)
    };
    Ok(DeltaFiles {
        list,
        changelog_list,
        added_rows,
        changelog_rows: (!changelog_metas.is_empty())
            .then(|| delta.changelog.iter().map(|e| e.file.row_count).sum()),
    })
}

/// The latest snapshot an attempt builds on.
struct Latest {
    id: Option<i64>,
    snapshot: Option<Snapshot>,
}

/// Reads the latest snapshot and, if it moved since the job planned, checks that the delta
/// still applies to it (a failed check is a conflict: never retried blindly) and adds the
/// snapshots that landed meanwhile to `rebased_over`.
fn read_latest(
    storage: &dyn Storage,
    request: &CommitRequest<'_>,
    rebased_over: &mut Vec<i64>,
) -> Result<Latest> {
    let (table, planned_on) = (request.table, request.planned_on);
    let latest_id = latest_snapshot_id(storage, &table.paths)?;
    if latest_id < planned_on {
        let show = |id: Option<i64>| id.map_or_else(|| "none".to_string(), |i| i.to_string());
        return Err(Error::conflict(format!(
            "the latest snapshot is {}, older than snapshot {} this job planned on (was the \
             table dropped?)",
            show(latest_id),
            show(planned_on)
        )));
    }
    let latest = latest_id
        .map(|id| read_snapshot(storage, &table.paths, id))
        .transpose()?;
    if latest_id != planned_on {
        if let Some(latest) = &latest {
            check_conflicts(storage, table, latest, request.delta)?;
        }
        for id in planned_on.unwrap_or(0) + 1..=latest_id.unwrap_or(0) {
            if !rebased_over.contains(&id) {
                rebased_over.push(id);
            }
        }
    }
    Ok(Latest {
        id: latest_id,
        snapshot: latest,
    })
}

/// What an attempt wrote on top of the latest snapshot.
struct BaseFiles {
    list: (String, i64),
    index_manifest: Option<String>,
    manifest_merge: Option<ManifestMergeReport>,
}

/// Writes the base manifest list (the latest snapshot's manifests, merged as the `manifest.*`
/// options say) and, when deletion vectors changed, the index manifest folded over the
/// latest one. Merged on every attempt: a lost attempt's merged manifests are deleted with
/// its other files, and the next attempt merges the new latest list.
fn write_base(
    files: &mut CommitFiles<'_>,
    request: &CommitRequest<'_>,
    latest: Option<&Snapshot>,
) -> Result<BaseFiles> {
    let (storage, table) = (files.storage, files.table);
    let mut base = match latest {
        Some(l) => snapshot_manifests(storage, &table.paths, l)?,
        None => Vec::new(),
    };
    let source = latest
        .map(|l| table.paths.snapshot(l.id))
        .unwrap_or_default();
    let merged = if request.settings.merge_manifests {
        manifest_merge::merge(storage, table, &base, &source, &mut |entries| {
            files.manifests(entries)
        })?
    } else {
        None
    };
    let manifest_merge = match merged {
        Some((merged, report)) => {
            base = merged;
            Some(report)
        }
        None => None,
    };
    let list = files.list(&base)?;
    let index_manifest = if request.delta.index.is_empty() {
        latest.and_then(|l| l.index_manifest.clone())
    } else {
        let entries = fold_index(storage, table, latest, &request.delta.index)?;
        if entries.is_empty() {
            None
        } else {
            Some(files.index_manifest(&entries)?)
        }
    };
    Ok(BaseFiles {
        list,
        index_manifest,
        manifest_merge,
    })
}

/// The snapshot after `latest`: the delta and base lists, totals carried over from `latest`.
fn next_snapshot(
    request: &CommitRequest<'_>,
    delta: &DeltaFiles,
    base: BaseFiles,
    latest: &Latest,
    ids: &mut IdGen,
) -> Result<Snapshot> {
    let (table, settings) = (request.table, request.settings);
    let prev = |f: &dyn Fn(&Snapshot) -> Option<i64>| latest.snapshot.as_ref().and_then(f);
    // An id at i64::MAX has no successor: wrapping would publish a negative snapshot id.
    let next_id = latest.id.unwrap_or(0).checked_add(1).ok_or_else(|| {
        Error::corrupt(
            Some(&table.paths.snapshot(latest.id.unwrap_or(0))),
            "the latest snapshot id is the largest possible; no snapshot can follow it",
        )
    })?;
    Ok(Snapshot {
        version: 3,
        id: next_id,
        schema_id: table
            .schema
            .id
            .max(prev(&|l| Some(l.schema_id)).unwrap_or(0)),
        base_manifest_list: base.list.0,
        base_manifest_list_size: Some(base.list.1),
        delta_manifest_list: delta.list.0.clone(),
        delta_manifest_list_size: Some(delta.list.1),
        changelog_manifest_list: delta.changelog_list.as_ref().map(|(n, _)| n.clone()),
        changelog_manifest_list_size: delta.changelog_list.as_ref().map(|(_, s)| *s),
        index_manifest: base.index_manifest,
        commit_user: settings.commit_user.clone(),
        commit_identifier: settings.commit_identifier,
        commit_kind: settings.kind,
        time_millis: settings.now_ms,
        total_record_count: Some(prev(&|l| l.total_record_count).unwrap_or(0) + delta.added_rows),
        delta_record_count: Some(delta.added_rows),
        changelog_record_count: delta.changelog_rows,
        watermark: prev(&|l| l.watermark),
        statistics: latest.snapshot.as_ref().and_then(|l| l.statistics.clone()),
        properties: None,
        next_row_id: prev(&|l| l.next_row_id),
        uuid: Some(ids.next_uuid()),
        writer_version: Some(WRITER_VERSION.to_string()),
        extra: BTreeMap::new(),
    })
}

/// How creating the snapshot file went.
enum Published {
    /// The snapshot exists; `warnings` are problems after that (the commit stands).
    Committed { warnings: Vec<String> },
    /// Another writer created that snapshot first: rebase and try again.
    LostRace,
}

/// Creates the snapshot file (`create_if_absent`: exactly one writer wins) and points the
/// LATEST hint at it.
fn publish(storage: &dyn Storage, table: &Table, snapshot: &Snapshot) -> Result<Published> {
    let path = table.paths.snapshot(snapshot.id);
    match storage.create_if_absent(&path, &snapshot.to_json()) {
        Ok(()) => {
            let mut warnings = Vec::new();
            update_latest_hint(storage, table, snapshot.id, &mut warnings);
            Ok(Published::Committed { warnings })
        }
        Err(e) if e.kind == StorageErrorKind::AlreadyExists => Ok(Published::LostRace),
        Err(e) => settle_failed_create(storage, table, snapshot, &path, e),
    }
}

/// Creating the snapshot failed with `e`, yet it may exist: look before anyone deletes the
/// files it would reference. Ours (same uuid): committed after all. Absent or another
/// writer's: the failure stands. Unreadable: the outcome is unknown
/// ([`Error::commit_unknown`]), and the job must keep its files.
fn settle_failed_create(
    storage: &dyn Storage,
    table: &Table,
    snapshot: &Snapshot,
    path: &str,
    e: StorageError,
) -> Result<Published> {
    match storage.read_all(path) {
        Ok(bytes) => match Snapshot::from_json(&bytes, path) {
            Ok(s) if s.uuid == snapshot.uuid => {
                let mut warnings = vec![format!(
                    "creating the snapshot reported '{e}' but it was created"
                )];
                update_latest_hint(storage, table, snapshot.id, &mut warnings);
                Ok(Published::Committed { warnings })
            }
            _ => Err(Error::from(e)),
        },
        Err(r) if r.kind == StorageErrorKind::NotFound => Err(Error::from(e)),
        Err(r) => Err(Error::commit_unknown(
            r.kind,
            path,
            format!(
                "{} ({UNKNOWN_OUTCOME}: checking '{path}' failed too: {r}; the job's files \
                 are kept)",
                Error::from(e.clone()).message
            ),
        )
        .with_source(e)),
    }
}

/// Points the LATEST hint at `id`; a failure is a warning (readers fall back to listing).
fn update_latest_hint(storage: &dyn Storage, table: &Table, id: i64, warnings: &mut Vec<String>) {
    if let Err(e) = storage.write_all(&table.paths.latest_hint(), id.to_string().as_bytes()) {
        warnings.push(format!("could not update the LATEST hint: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::retry_wait_ms;

    #[test]
    fn retry_waits_grow_to_ten_seconds_with_jitter() {
        for seed in [0u64, 1, 0xdead_beef, u64::MAX] {
            let mut last_base = 0;
            for attempt in 1..30 {
                let w = retry_wait_ms(attempt, seed);
                let base = (10u64 << attempt.min(20)).min(10_000);
                assert!(w >= base * 8 / 10 && w < base * 12 / 10, "{attempt}: {w}");
                assert!(base >= last_base);
                last_base = base;
            }
        }
        assert_ne!(
            retry_wait_ms(3, 1),
            retry_wait_ms(3, 2),
            "jobs spread apart"
        );
    }
}
