//! Manifest merging at commit (Paimon's `ManifestFileMerger`, format.md §11 step 4).
//!
//! Every commit appends a manifest to the base list of the next snapshot, and every reader
//! opens every manifest of that list. Java writers merge small manifests when they commit;
//! pypaimon never does ("handled by external maintenance"), and a compactor is that
//! maintenance. So the base list of our COMPACT snapshot is merged the way Java merges it:
//!
//! * **full compaction** when the manifests that must change (any with DELETE entries, and
//!   every one smaller than `manifest.target-file-size`) add up to
//!   `manifest.full-compaction-threshold-size`: those manifests, plus every large one whose
//!   partition range could hold a deleted file, are folded into ADD entries only (each DELETE
//!   cancels its ADD) and rewritten in files of about the target size; the other large ones
//!   stay as they are;
//! * otherwise a **minor** merge: consecutive manifests are gathered until they reach the
//!   target size and each such batch becomes one folded file; a trailing batch is merged only
//!   if it has at least `manifest.merge-min-count` manifests. In a minor merge a DELETE whose
//!   ADD lies in an earlier manifest stays.
//!
//! The decisions ([`plan_minor`], [`full_triggered`], [`may_contain`]) are pure; [`merge`]
//! reads the manifests through storage and hands the folded entries to the commit's manifest
//! writer, so new files are tracked (and deleted on failure) like every other file the commit
//! writes. Replaced manifests are never deleted: older snapshots still list them.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use super::binary_row::{order_key, BinaryRow, Datum};
use super::manifest::{FileIdentifier, FileKind, ManifestEntry, ManifestFileMeta};
use super::scan::{read_manifest, Table};
use crate::error::{Error, Result};
use crate::options::ManifestOptions;
use crate::storage::Storage;

/// Which merge ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ManifestMergeKind {
    /// Consecutive small manifests gathered into target-size files; a DELETE whose ADD lies
    /// in an earlier manifest may stay.
    Minor,
    /// Every manifest that must change (and every large one that could hold a deleted file)
    /// folded into ADD entries only and rewritten.
    Full,
}

/// What merging did to the base manifest list of a commit.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ManifestMergeReport {
    /// Which merge ran.
    pub kind: ManifestMergeKind,
    /// Manifests in the list before and after.
    pub manifests_before: usize,
    /// Manifests in the merged base list.
    pub manifests_after: usize,
    /// Manifests read and folded, and the files they became.
    pub manifests_merged: usize,
    /// New manifest files the folded entries were written to (0 when everything cancelled
    /// out).
    pub manifests_written: usize,
    /// Entries that cancelled out (an ADD and its DELETE count as two).
    pub entries_cancelled: usize,
}

/// One step of a minor merge, in list order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MinorStep {
    /// The manifest at this position stays as it is.
    Keep(usize),
    /// These manifests become one folded file.
    Merge(Range<usize>),
}

fn size_of(m: &ManifestFileMeta) -> u64 {
    u64::try_from(m.file_size).unwrap_or(0)
}

/// The minor merge: batches of consecutive manifests that reach the target size, then a
/// trailing batch if it is long enough. `None` when nothing would be merged.
pub fn plan_minor(metas: &[ManifestFileMeta], o: &ManifestOptions) -> Option<Vec<MinorStep>> {
    fn batch(r: Range<usize>, steps: &mut Vec<MinorStep>) {
        if r.len() == 1 {
            steps.push(MinorStep::Keep(r.start));
        } else {
            steps.push(MinorStep::Merge(r));
        }
    }
    let mut steps = Vec::new();
    let (mut start, mut size) = (0usize, 0u64);
    for (i, m) in metas.iter().enumerate() {
        size = size.saturating_add(size_of(m));
        if size >= o.target_file_size {
            batch(start..i + 1, &mut steps);
            start = i + 1;
            size = 0;
        }
    }
    if metas.len() - start >= o.merge_min_count {
        batch(start..metas.len(), &mut steps);
    } else {
        steps.extend((start..metas.len()).map(MinorStep::Keep));
    }
    steps
        .iter()
        .any(|s| matches!(s, MinorStep::Merge(_)))
        .then_some(steps)
}

/// A manifest that a full compaction always rewrites: it has DELETE entries, or is small.
pub fn must_change(m: &ManifestFileMeta, o: &ManifestOptions) -> bool {
    m.num_deleted_files > 0 || size_of(m) < o.target_file_size
}

/// Whether the manifests that must change are big enough together for a full compaction.
pub fn full_triggered(metas: &[ManifestFileMeta], o: &ManifestOptions) -> bool {
    let delta: u64 = metas
        .iter()
        .filter(|m| must_change(m, o))
        .map(size_of)
        .sum();
    delta >= o.full_compaction_threshold_size
}

/// A manifest's partition statistics, decoded.
#[derive(Clone, Copy, Debug)]
pub struct PartitionBounds<'a> {
    /// Smallest value of each partition column among the manifest's entries.
    pub min: &'a [Datum],
    /// Largest value of each partition column among the manifest's entries.
    pub max: &'a [Datum],
    /// Nulls per partition column; `None` when the statistics have no counts (an inner
    /// `None`: that column's count is unknown).
    pub null_counts: Option<&'a [Option<i64>]>,
}

/// Whether a manifest's partition statistics admit `partition` (decoded values). Anything
/// the statistics cannot rule out counts as possible: rewriting a manifest needlessly costs
/// I/O, keeping one that holds the ADD of a cancelled DELETE would bring the file back.
pub fn may_contain(stats: Option<PartitionBounds<'_>>, partition: &[Datum]) -> bool {
    let Some(PartitionBounds {
        min,
        max,
        null_counts: nulls,
    }) = stats
    else {
        return true;
    };
    if min.len() != partition.len() || max.len() != partition.len() {
        return true;
    }
    partition.iter().enumerate().all(|(i, v)| {
        if v.is_null() {
            return nulls
                .and_then(|n| n.get(i).copied().flatten())
                .is_none_or(|n| n > 0);
        }
        if min[i].is_null() || max[i].is_null() {
            // Only nulls in this field (or no statistics): a non-null value is impossible when
            // both bounds are null and the null count covers the entries, but that is not
            // worth the bookkeeping.
            return true;
        }
        let k = order_key(std::slice::from_ref(v));
        order_key(std::slice::from_ref(&min[i])) <= k
            && k <= order_key(std::slice::from_ref(&max[i]))
    })
}

/// Folds entries in order (Java's `FileEntry.mergeEntries`): an ADD after its DELETE's ADD is
/// an error (a file is added once), a DELETE removes its ADD if the ADD is among `entries`
/// and is kept otherwise, unless `drop_deletes` (full compaction, where every ADD a DELETE
/// could refer to is among `entries`).
pub fn fold(
    entries: impl IntoIterator<Item = (ManifestEntry, String)>,
    drop_deletes: bool,
) -> Result<(Vec<ManifestEntry>, usize)> {
    let mut folder = Folder::new(drop_deletes);
    for (e, path) in entries {
        folder.push(e, &path)?;
    }
    Ok(folder.finish())
}

/// [`fold`] one entry at a time, so that manifests can be folded as they are read: it holds
/// the entries still standing (live files, and DELETEs kept), never every entry read. A list
/// whose manifests add and delete the same files over and over folds in the memory of what
/// is left, not of its history.
struct Folder {
    /// Standing entries by file, with the order they arrived in.
    standing: HashMap<FileIdentifier, (usize, ManifestEntry)>,
    arrived: usize,
    cancelled: usize,
    drop_deletes: bool,
}

impl Folder {
    fn new(drop_deletes: bool) -> Self {
        Folder {
            standing: HashMap::new(),
            arrived: 0,
            cancelled: 0,
            drop_deletes,
        }
    }

    /// Folds `e`, read from the manifest at `path`.
    fn push(&mut self, e: ManifestEntry, path: &str) -> Result<()> {
        let id = e.identifier();
        self.arrived += 1;
        match e.kind {
            FileKind::Add => {
                if self.standing.contains_key(&id) {
                    return Err(Error::corrupt(
                        Some(path),
                        format!(
                            "file '{}' (bucket {}, level {}) is added again while merging \
                             manifests",
                            e.file.file_name, e.bucket, e.file.level
                        ),
                    ));
                }
                self.standing.insert(id, (self.arrived, e));
            }
            FileKind::Delete => match self.standing.get(&id) {
                Some((_, a)) if a.kind == FileKind::Add => {
                    self.standing.remove(&id);
                    self.cancelled += 2;
                }
                // A DELETE of a file already deleted here replaces the first: one is enough.
                _ if !self.drop_deletes => {
                    self.standing.insert(id, (self.arrived, e));
                }
                _ => self.cancelled += 1,
            },
        }
        Ok(())
    }

    /// The standing entries in the order they arrived, and how many entries cancelled out.
    fn finish(self) -> (Vec<ManifestEntry>, usize) {
        let mut standing: Vec<_> = self.standing.into_values().collect();
        standing.sort_by_key(|(order, _)| *order);
        (
            standing.into_iter().map(|(_, e)| e).collect(),
            self.cancelled,
        )
    }
}

/// Writes folded entries through the commit's writer: one manifest, or several if they
/// outgrow `manifest.target-file-size`.
pub type WriteManifest<'a> = dyn FnMut(&[ManifestEntry]) -> Result<Vec<ManifestFileMeta>> + 'a;

/// Writes `entries` in files of about `target` bytes (by the read manifests' bytes per entry).
fn write_rolling(
    entries: &[ManifestEntry],
    bytes_per_entry: u64,
    target: u64,
    write: &mut WriteManifest<'_>,
) -> Result<Vec<ManifestFileMeta>> {
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    let per_file = usize::try_from(target / bytes_per_entry.max(1))
        .unwrap_or(usize::MAX)
        .max(1);
    let mut out = Vec::new();
    for chunk in entries.chunks(per_file) {
        out.extend(write(chunk)?);
    }
    Ok(out)
}

/// Reads the manifests at `indices` one after the other and folds their entries as they
/// come (see [`Folder`]); also returns bytes per entry.
fn read_and_fold(
    storage: &dyn Storage,
    table: &Table,
    metas: &[ManifestFileMeta],
    indices: impl Iterator<Item = usize>,
    drop_deletes: bool,
    source: &str,
) -> Result<(Vec<ManifestEntry>, usize, u64)> {
    let mut folder = Folder::new(drop_deletes);
    let (mut entries, mut bytes) = (0u64, 0u64);
    for i in indices {
        let (path, read) = read_manifest(storage, &table.paths, &metas[i], source)?;
        bytes = bytes.saturating_add(size_of(&metas[i]));
        for e in read {
            entries += 1;
            folder.push(e, &path)?;
        }
    }
    let (folded, cancelled) = folder.finish();
    Ok((folded, cancelled, bytes / entries.max(1)))
}

/// The partitions of the DELETE entries of the manifests that must change. The full
/// compaction reads those manifests again to fold them rather than keep them from here: held,
/// they would cost the memory of every entry they list (a list of many manifests of deletes
/// would not fit), read twice they cost a second read of the few a table usually has.
fn deleted_partitions(
    storage: &dyn Storage,
    table: &Table,
    metas: &[ManifestFileMeta],
    o: &ManifestOptions,
    source: &str,
) -> Result<HashSet<BinaryRow>> {
    let mut out = HashSet::new();
    for m in metas {
        if !(must_change(m, o) && m.num_deleted_files > 0) {
            continue;
        }
        let (_, entries) = read_manifest(storage, &table.paths, m, source)?;
        out.extend(
            entries
                .into_iter()
                .filter(|e| e.kind == FileKind::Delete)
                .map(|e| e.partition),
        );
    }
    Ok(out)
}

/// The full compaction, or `None` when it does not apply (not triggered, or it would rewrite
/// at most one manifest).
fn full(
    storage: &dyn Storage,
    table: &Table,
    metas: &[ManifestFileMeta],
    o: &ManifestOptions,
    source: &str,
    write: &mut WriteManifest<'_>,
) -> Result<Option<(Vec<ManifestFileMeta>, ManifestMergeReport)>> {
    if !full_triggered(metas, o) {
        return Ok(None);
    }
    let deleted = deleted_partitions(storage, table, metas, o, source)?;
    let mut decoded: Vec<Vec<Datum>> = Vec::with_capacity(deleted.len());
    for p in &deleted {
        decoded.push(table.partition_values(p, source)?);
    }
    let rewrite: Vec<bool> = metas
        .iter()
        .map(|m| {
            if must_change(m, o) {
                return true;
            }
            if decoded.is_empty() {
                return false;
            }
            if table.partition_types.is_empty() {
                return true;
            }
            let stats = m.partition_stats.clone();
            let min = table.partition_values(&stats.min_values, source).ok();
            let max = table.partition_values(&stats.max_values, source).ok();
            let bounds = min.zip(max);
            decoded.iter().any(|p| {
                may_contain(
                    bounds.as_ref().map(|(lo, hi)| PartitionBounds {
                        min: lo,
                        max: hi,
                        null_counts: stats.null_counts.as_deref(),
                    }),
                    p,
                )
            })
        })
        .collect();
    let count = rewrite.iter().filter(|r| **r).count();
    if count <= 1 {
        return Ok(None);
    }
    let (folded, cancelled, per_entry) = read_and_fold(
        storage,
        table,
        metas,
        (0..metas.len()).filter(|&i| rewrite[i]),
        true,
        source,
    )?;
    let mut out: Vec<ManifestFileMeta> = metas
        .iter()
        .zip(&rewrite)
        .filter(|(_, r)| !**r)
        .map(|(m, _)| m.clone())
        .collect();
    let written = write_rolling(&folded, per_entry, o.target_file_size, write)?;
    let report = ManifestMergeReport {
        kind: ManifestMergeKind::Full,
        manifests_before: metas.len(),
        manifests_after: out.len() + written.len(),
        manifests_merged: count,
        manifests_written: written.len(),
        entries_cancelled: cancelled,
    };
    out.extend(written);
    Ok(Some((out, report)))
}

/// Merges the base manifest list the way Java's commit does; `None` when it is left as is.
pub fn merge(
    storage: &dyn Storage,
    table: &Table,
    metas: &[ManifestFileMeta],
    source: &str,
    write: &mut WriteManifest<'_>,
) -> Result<Option<(Vec<ManifestFileMeta>, ManifestMergeReport)>> {
    let o = &table.options.manifest;
    if let Some(done) = full(storage, table, metas, o, source, write)? {
        return Ok(Some(done));
    }
    let Some(steps) = plan_minor(metas, o) else {
        return Ok(None);
    };
    let mut out = Vec::new();
    let (mut merged, mut written, mut cancelled) = (0usize, 0usize, 0usize);
    for step in steps {
        match step {
            MinorStep::Keep(i) => out.push(metas[i].clone()),
            MinorStep::Merge(r) => {
                merged += r.len();
                let (folded, c, per_entry) =
                    read_and_fold(storage, table, metas, r, false, source)?;
                cancelled += c;
                // One file per batch, as Java writes it (the batch is about the target size).
                let files = write_rolling(&folded, per_entry, u64::MAX, write)?;
                written += files.len();
                out.extend(files);
            }
        }
    }
    let report = ManifestMergeReport {
        kind: ManifestMergeKind::Minor,
        manifests_before: metas.len(),
        manifests_after: out.len(),
        manifests_merged: merged,
        manifests_written: written,
        entries_cancelled: cancelled,
    };
    Ok(Some((out, report)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::manifest::tests::sample_file;
    use crate::table::manifest::SimpleStats;

    fn meta(size: i64, deleted: i64) -> ManifestFileMeta {
        ManifestFileMeta {
            file_name: format!("m-{size}-{deleted}"),
            file_size: size,
            num_added_files: 1,
            num_deleted_files: deleted,
            partition_stats: SimpleStats::empty(),
            schema_id: 0,
            min_bucket: None,
            max_bucket: None,
            min_level: None,
            max_level: None,
            min_row_id: None,
            max_row_id: None,
        }
    }

    fn opts(min_count: usize, target: u64, full: u64) -> ManifestOptions {
        ManifestOptions {
            merge_min_count: min_count,
            target_file_size: target,
            full_compaction_threshold_size: full,
        }
    }

    #[test]
    fn minor_merges_batches_that_reach_the_target_and_a_long_tail() {
        let o = opts(3, 100, u64::MAX);
        // 60+50 reaches 100: one batch; 200 alone is kept; the tail of two is too short.
        let metas = [
            meta(60, 0),
            meta(50, 0),
            meta(200, 0),
            meta(10, 0),
            meta(10, 0),
        ];
        assert_eq!(
            plan_minor(&metas, &o),
            Some(vec![
                MinorStep::Merge(0..2),
                MinorStep::Keep(2),
                MinorStep::Keep(3),
                MinorStep::Keep(4)
            ])
        );
        // A tail of three small ones is merged.
        let metas = [meta(10, 0), meta(10, 0), meta(10, 0)];
        assert_eq!(plan_minor(&metas, &o), Some(vec![MinorStep::Merge(0..3)]));
        // Two small ones: nothing to do.
        assert_eq!(plan_minor(&metas[..2], &o), None);
        // Large manifests alone are never merged.
        assert_eq!(plan_minor(&[meta(500, 0), meta(500, 0)], &o), None);
    }

    #[test]
    fn thirty_small_manifests_merge_by_default() {
        let o = ManifestOptions::default();
        let metas: Vec<_> = (0..30).map(|_| meta(2_000, 0)).collect();
        assert_eq!(plan_minor(&metas, &o), Some(vec![MinorStep::Merge(0..30)]));
        assert_eq!(plan_minor(&metas[..29], &o), None);
        assert!(!full_triggered(&metas, &o));
    }

    #[test]
    fn full_compaction_counts_small_manifests_and_those_with_deletes() {
        let o = opts(30, 100, 250);
        assert!(!full_triggered(
            &[meta(90, 0), meta(90, 0), meta(500, 0)],
            &o
        ));
        assert!(full_triggered(
            &[meta(90, 0), meta(90, 0), meta(500, 1)],
            &o
        ));
        assert!(must_change(&meta(500, 1), &o));
        assert!(!must_change(&meta(500, 0), &o));
    }

    fn entry(kind: FileKind, name: &str) -> (ManifestEntry, String) {
        (
            ManifestEntry {
                kind,
                partition: BinaryRow::empty(),
                bucket: 0,
                total_buckets: 1,
                file: sample_file(name, 0),
            },
            "m".to_string(),
        )
    }

    #[test]
    fn fold_cancels_pairs_and_keeps_or_drops_orphan_deletes() {
        let entries = vec![
            entry(FileKind::Delete, "old"),
            entry(FileKind::Add, "a"),
            entry(FileKind::Add, "b"),
            entry(FileKind::Delete, "a"),
            entry(FileKind::Add, "c"),
        ];
        let (kept, cancelled) = fold(entries.clone(), false).unwrap();
        let names: Vec<_> = kept
            .iter()
            .map(|e| (e.kind, e.file.file_name.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                (FileKind::Delete, "old"),
                (FileKind::Add, "b"),
                (FileKind::Add, "c")
            ]
        );
        assert_eq!(cancelled, 2);
        let (kept, cancelled) = fold(entries, true).unwrap();
        assert_eq!(kept.len(), 2);
        assert!(kept.iter().all(|e| e.kind == FileKind::Add));
        assert_eq!(cancelled, 3);
        let twice = vec![entry(FileKind::Add, "a"), entry(FileKind::Add, "a")];
        assert!(fold(twice, false).is_err());
    }

    #[test]
    fn partition_ranges_rule_out_only_what_they_exclude() {
        let min = [Datum::Int(10), Datum::String("a".into())];
        let max = [Datum::Int(20), Datum::String("m".into())];
        let nulls = [Some(0), Some(0)];
        let s = Some(PartitionBounds {
            min: &min,
            max: &max,
            null_counts: Some(&nulls),
        });
        assert!(may_contain(s, &[Datum::Int(15), Datum::String("c".into())]));
        assert!(may_contain(s, &[Datum::Int(10), Datum::String("m".into())]));
        assert!(!may_contain(
            s,
            &[Datum::Int(21), Datum::String("c".into())]
        ));
        assert!(!may_contain(
            s,
            &[Datum::Int(15), Datum::String("z".into())]
        ));
        assert!(!may_contain(s, &[Datum::Null, Datum::String("c".into())]));
        assert!(may_contain(None, &[Datum::Int(99)]));
        let unknown_nulls = Some(PartitionBounds {
            min: &min,
            max: &max,
            null_counts: None,
        });
        assert!(may_contain(
            unknown_nulls,
            &[Datum::Null, Datum::String("c".into())]
        ));
    }
}
