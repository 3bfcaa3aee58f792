//! Committing a compaction as snapshot `N+1` with commit kind COMPACT (spec §11).
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
use super::manifest::{self, FileKind, ManifestEntry, ManifestFileMeta, SimpleStats};
use super::manifest_merge::{self, ManifestMergeReport};
use super::scan::{live_entries, read_index_manifest, snapshot_manifests, Table};
use super::snapshot::{latest_snapshot_id, read_snapshot, CommitKind, Snapshot};
use crate::error::{Error, Result};
use crate::storage::{Storage, StorageErrorKind};

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

    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    pub fn forget(&mut self, path: &str) {
        self.paths.retain(|p| p != path);
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

/// What a compaction commits.
#[derive(Clone, Debug, Default)]
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
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.changelog.is_empty() && self.index.is_empty()
    }
}

/// Settings of a commit.
#[derive(Clone, Debug)]
pub struct CommitSettings {
    /// COMPACT for compaction jobs; APPEND for the demo writer.
    pub kind: CommitKind,
    pub commit_user: String,
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
    pub snapshot_id: i64,
    /// Snapshots that landed between planning and commit (rebased on).
    pub rebased_over: Vec<i64>,
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

/// Writes a manifest with `entries` and returns its list entry.
fn write_manifest(
    storage: &dyn Storage,
    table: &Table,
    ids: &mut IdGen,
    uuid: &str,
    counter: &mut u32,
    written: &mut WrittenFiles,
    entries: &[ManifestEntry],
) -> Result<ManifestFileMeta> {
    let name = format!("manifest-{uuid}-{counter}");
    *counter += 1;
    let path = table.paths.manifest(&name, "compaction job")?;
    let bytes = manifest::encode_manifest(entries, codec(table)?, ids.next_bytes())?;
    let size = write_tracked(storage, written, &path, &bytes)?;
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
        partition_stats: partition_stats(table, &refs, &path)?,
        schema_id: table.schema.id,
        min_bucket,
        max_bucket,
        min_level,
        max_level,
        min_row_id: None,
        max_row_id: None,
    })
}

fn write_list(
    storage: &dyn Storage,
    table: &Table,
    ids: &mut IdGen,
    uuid: &str,
    counter: &mut u32,
    written: &mut WrittenFiles,
    metas: &[ManifestFileMeta],
) -> Result<(String, i64)> {
    let name = format!("manifest-list-{uuid}-{counter}");
    *counter += 1;
    let path = table.paths.manifest(&name, "compaction job")?;
    let bytes = manifest::encode_manifest_list(metas, codec(table)?, ids.next_bytes())?;
    let size = write_tracked(storage, written, &path, &bytes)?;
    Ok((name, size as i64))
}

/// Checks the delta against snapshot `latest`; `Err(conflict)` when it no longer applies.
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
    for e in delta.entries.iter().filter(|e| e.kind == FileKind::Delete) {
        if by_id.remove(&e.identifier()).is_none() {
            return Err(Error::conflict(format!(
                "file '{}' (bucket {}, level {}) is no longer live in snapshot {}: another job \
                 compacted or overwrote it",
                e.file.file_name, e.bucket, e.file.level, latest.id
            )));
        }
    }
    for e in &delta.marked {
        if !by_id.contains_key(&e.identifier()) {
            return Err(Error::conflict(format!(
                "file '{}' (bucket {}, level {}), whose deletion vector this job extends, is no \
                 longer live in snapshot {}",
                e.file.file_name, e.bucket, e.file.level, latest.id
            )));
        }
    }
    for e in delta.entries.iter().filter(|e| e.kind == FileKind::Add) {
        if by_id.contains_key(&e.identifier()) {
            return Err(Error::conflict(format!(
                "file '{}' (bucket {}, level {}) is already live in snapshot {}",
                e.file.file_name, e.bucket, e.file.level, latest.id
            )));
        }
    }
    // The bucket count of a partition is frozen once written.
    let mut totals: HashMap<&BinaryRow, i32> = HashMap::new();
    for (e, _) in &live {
        totals.entry(&e.partition).or_insert(e.total_buckets);
    }
    for e in &delta.entries {
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
    // Primary-key tables: every level >= 1 of a touched bucket stays one sorted run.
    if !table.key_types.is_empty() {
        let touched: HashSet<(&BinaryRow, i32)> = delta
            .entries
            .iter()
            .map(|e| (&e.partition, e.bucket))
            .collect();
        /// A file's key range and name.
        type Range<'n> = (crate::meta::Key, crate::meta::Key, &'n str);
        let mut levels: BTreeMap<(&BinaryRow, i32, i32), Vec<Range<'_>>> = BTreeMap::new();
        let adds = delta.entries.iter().filter(|e| e.kind == FileKind::Add);
        for e in by_id.values().copied().chain(adds) {
            if e.file.level >= 1 && touched.contains(&(&e.partition, e.bucket)) {
                levels
                    .entry((&e.partition, e.bucket, e.file.level))
                    .or_default()
                    .push((
                        table.key(&e.file.min_key, &source, "min key")?,
                        table.key(&e.file.max_key, &source, "max key")?,
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
    }
    // Index files this job replaces must still be live, and a bucket whose deletion vectors
    // this job rewrites must have gained no other index file (its vectors would be lost).
    if !delta.index.is_empty() {
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
    commit_with_backoff(
        storage, table, planned_on, delta, settings, ids, written, None,
    )
}

/// [`commit`], calling `sleep` (milliseconds; supplied by the host, as the core has no clock)
/// with [`retry_wait_ms`] before each attempt after a lost race.
#[allow(clippy::too_many_arguments)]
pub fn commit_with_backoff(
    storage: &dyn Storage,
    table: &Table,
    planned_on: Option<i64>,
    delta: &CommitDelta,
    settings: &CommitSettings,
    ids: &mut IdGen,
    written: &mut WrittenFiles,
    sleep: Option<&dyn Fn(u64)>,
) -> Result<CommitOutcome> {
    let uuid = ids.next_uuid();
    let mut counter = 0u32;
    let delta_meta = if delta.entries.is_empty() {
        None
    } else {
        Some(write_manifest(
            storage,
            table,
            ids,
            &uuid,
            &mut counter,
            written,
            &delta.entries,
        )?)
    };
    let changelog_meta = if delta.changelog.is_empty() {
        None
    } else {
        Some(write_manifest(
            storage,
            table,
            ids,
            &uuid,
            &mut counter,
            written,
            &delta.changelog,
        )?)
    };
    let added_rows: i64 = delta
        .entries
        .iter()
        .map(|e| match e.kind {
            FileKind::Add => e.file.row_count,
            FileKind::Delete => -e.file.row_count,
        })
        .sum();

    // The delta and changelog lists do not depend on the snapshot the commit lands on: written
    // once, so an attempt only writes the base list (and index manifest) between reading the
    // latest snapshot and creating the next one.
    let (delta_list, delta_size) = write_list(
        storage,
        table,
        ids,
        &uuid,
        &mut counter,
        written,
        delta_meta.as_slice(),
    )?;
    let changelog_list = match &changelog_meta {
        None => None,
        Some(m) => Some(write_list(
            storage,
            table,
            ids,
            &uuid,
            &mut counter,
            written,
            std::slice::from_ref(m),
        )?),
    };

    let mut rebased_over = Vec::new();
    let mut attempt_files: Vec<String> = Vec::new();
    for attempt in 0..=settings.max_retries {
        if attempt > 0 {
            if let Some(sleep) = sleep {
                sleep(retry_wait_ms(attempt, settings.jitter_seed));
            }
        }
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
                check_conflicts(storage, table, latest, delta)?;
            }
            for id in planned_on.unwrap_or(0) + 1..=latest_id.unwrap_or(0) {
                if !rebased_over.contains(&id) {
                    rebased_over.push(id);
                }
            }
        }
        // Files of a lost attempt are not referenced by anything.
        for p in attempt_files.drain(..) {
            if storage.delete(&p).is_ok() {
                written.forget(&p);
            }
        }
        let before = written.paths().len();

        let mut base = match &latest {
            Some(l) => snapshot_manifests(storage, &table.paths, l)?,
            None => Vec::new(),
        };
        // Merged on every attempt: a lost attempt's merged manifests are deleted with its
        // other files, and the next attempt merges the new latest list.
        let source = latest
            .as_ref()
            .map(|l| table.paths.snapshot(l.id))
            .unwrap_or_default();
        let merged = if settings.merge_manifests {
            manifest_merge::merge(storage, table, &base, &source, &mut |entries| {
                write_manifest(storage, table, ids, &uuid, &mut counter, written, entries)
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
        let (base_list, base_size) =
            write_list(storage, table, ids, &uuid, &mut counter, written, &base)?;
        let index_manifest = if delta.index.is_empty() {
            latest.as_ref().and_then(|l| l.index_manifest.clone())
        } else {
            let entries = fold_index(storage, table, latest.as_ref(), &delta.index)?;
            if entries.is_empty() {
                None
            } else {
                let name = format!("index-manifest-{uuid}-{counter}");
                counter += 1;
                let path = table.paths.manifest(&name, "compaction job")?;
                let bytes =
                    index::encode_index_manifest(&entries, codec(table)?, ids.next_bytes())?;
                write_tracked(storage, written, &path, &bytes)?;
                Some(name)
            }
        };
        attempt_files.extend(written.paths()[before..].iter().cloned());

        let prev = |f: &dyn Fn(&Snapshot) -> Option<i64>| latest.as_ref().and_then(f);
        // An id at i64::MAX has no successor: wrapping would publish a negative snapshot id.
        let next_id = latest_id.unwrap_or(0).checked_add(1).ok_or_else(|| {
            Error::corrupt(
                Some(&table.paths.snapshot(latest_id.unwrap_or(0))),
                "the latest snapshot id is the largest possible; no snapshot can follow it",
            )
        })?;
        let snapshot = Snapshot {
            version: 3,
            id: next_id,
            schema_id: table
                .schema
                .id
                .max(prev(&|l| Some(l.schema_id)).unwrap_or(0)),
            base_manifest_list: base_list,
            base_manifest_list_size: Some(base_size),
            delta_manifest_list: delta_list.clone(),
            delta_manifest_list_size: Some(delta_size),
            changelog_manifest_list: changelog_list.as_ref().map(|(n, _)| n.clone()),
            changelog_manifest_list_size: changelog_list.as_ref().map(|(_, s)| *s),
            index_manifest,
            commit_user: settings.commit_user.clone(),
            commit_identifier: settings.commit_identifier,
            commit_kind: settings.kind,
            time_millis: settings.now_ms,
            total_record_count: Some(prev(&|l| l.total_record_count).unwrap_or(0) + added_rows),
            delta_record_count: Some(added_rows),
            changelog_record_count: changelog_meta.as_ref().map(|_| {
                delta
                    .changelog
                    .iter()
                    .map(|e| e.file.row_count)
                    .sum::<i64>()
            }),
            watermark: prev(&|l| l.watermark),
            statistics: latest.as_ref().and_then(|l| l.statistics.clone()),
            properties: None,
            next_row_id: prev(&|l| l.next_row_id),
            uuid: Some(ids.next_uuid()),
            writer_version: Some(WRITER_VERSION.to_string()),
            extra: BTreeMap::new(),
        };
        let path = table.paths.snapshot(snapshot.id);
        match storage.create_if_absent(&path, &snapshot.to_json()) {
            Ok(()) => {
                let mut warnings = Vec::new();
                if let Err(e) = storage.write_all(
                    &table.paths.latest_hint(),
                    snapshot.id.to_string().as_bytes(),
                ) {
                    warnings.push(format!("could not update the LATEST hint: {e}"));
                }
                return Ok(CommitOutcome {
                    snapshot_id: snapshot.id,
                    rebased_over,
                    attempts: attempt + 1,
                    warnings,
                    manifest_merge,
                });
            }
            Err(e) if e.kind == StorageErrorKind::AlreadyExists => continue,
            Err(e) => {
                // The snapshot may exist even though the call failed: look before anyone
                // deletes the files it would reference.
                return match storage.read_all(&path) {
                    Ok(bytes) => match Snapshot::from_json(&bytes, &path) {
                        Ok(s) if s.uuid == snapshot.uuid => {
                            let mut warnings = vec![format!(
                                "creating the snapshot reported '{e}' but it was created"
                            )];
                            if let Err(e) = storage.write_all(
                                &table.paths.latest_hint(),
                                snapshot.id.to_string().as_bytes(),
                            ) {
                                warnings.push(format!("could not update the LATEST hint: {e}"));
                            }
                            Ok(CommitOutcome {
                                snapshot_id: snapshot.id,
                                rebased_over,
                                attempts: attempt + 1,
                                warnings,
                                manifest_merge,
                            })
                        }
                        _ => Err(Error::from(e)),
                    },
                    Err(r) if r.kind == StorageErrorKind::NotFound => Err(Error::from(e)),
                    Err(r) => Err(Error::commit_unknown(
                        r.kind,
                        &path,
                        format!(
                            "{} ({UNKNOWN_OUTCOME}: checking '{path}' failed too: {r}; the \
                             job's files are kept)",
                            Error::from(e.clone()).message
                        ),
                    )
                    .with_source(e)),
                };
            }
        }
    }
    Err(Error::conflict(format!(
        "lost the race for the next snapshot {} times in a row; giving up",
        settings.max_retries + 1
    )))
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
