//! Orphan file removal (`remove_orphan_files`, maintenance-rules.md §9): what a crashed compaction
//! leaves is removed and nothing any snapshot, tag, long-lived changelog or branch references
//! is; young files and files of unknown age are kept; a dry run changes nothing; stray files
//! of the snapshot and changelog directories go, hints, schemas, our lease and state
//! directories and unknown directories stay; a metadata read that keeps failing stops the run.

use crate::table_support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;

use paimon_compact::maintenance::orphans::{
    default_older_than, remove_orphan_files, times_from_listing, OrphanReport,
    DEFAULT_OLDER_THAN_MS,
};
use paimon_compact::maintenance::MaintenanceContext;
use paimon_compact::plan::PlanContext;
use paimon_compact::storage::{
    MemoryStorage, ObjectMeta, Storage, StorageError, StorageErrorKind, StorageResult,
    StorageWriter,
};
use paimon_compact::table::binary_row::Datum;
use paimon_compact::table::demo::{create_table, field, new_schema, RowKind, TableWriter};
use paimon_compact::table::index::{
    decode_index_manifest, encode_index_manifest, IndexManifestEntry,
};
use paimon_compact::table::manifest::{decode_manifest, decode_manifest_list, FileKind};
use paimon_compact::table::scan::Table;
use paimon_compact::table::snapshot::Snapshot;
use paimon_compact::table::{compact_table, CompactOptions};
use paimon_compact::ErrorKind;
use table_support::{clone_of, read_rows, FaultyStorage};

const NOW: i64 = 1_750_000_000_000;
const DAY: i64 = 86_400_000;
const T: &str = "wh/db.db/t";

fn ctx(dry_run: bool) -> MaintenanceContext {
    MaintenanceContext {
        now_ms: NOW,
        utc_offset_ms: 0,
        dry_run,
    }
}

/// Every file is five days old.
fn all_old(_: &str) -> Option<i64> {
    Some(NOW - 5 * DAY)
}

fn clean(st: &dyn Storage, dry_run: bool) -> OrphanReport {
    let c = ctx(dry_run);
    let r = remove_orphan_files(st, T, default_older_than(&c), &all_old, &c).unwrap();
    assert_eq!(
        r.candidates,
        r.deleted.len() + r.failed.len() + r.kept_too_young + r.kept_unknown_age,
        "every candidate is accounted for once: {r:?}"
    );
    r
}

/// A primary-key table partitioned by `dt` (d0, d1), two buckets, `commits` commits of
/// overlapping keys, written ten days ago.
fn pk_table(st: &dyn Storage, options: &[(&str, &str)], commits: i64) {
    let mut all = vec![("bucket", "2")];
    all.extend_from_slice(options);
    let schema = new_schema(
        vec![
            field(0, "k", "BIGINT NOT NULL").unwrap(),
            field(1, "dt", "STRING NOT NULL").unwrap(),
            field(2, "v", "STRING").unwrap(),
        ],
        &["dt"],
        &["dt", "k"],
        &all,
        NOW - 20 * DAY,
    );
    create_table(st, T, &schema).unwrap();
    let mut w = TableWriter::new(st, T, [200; 16]);
    for c in 0..commits {
        let rows: Vec<_> = (0..24i64)
            .map(|i| {
                (
                    RowKind::Insert,
                    vec![
                        Datum::BigInt(i + c % 2),
                        Datum::String(format!("d{}", i % 2)),
                        Datum::String(format!("c{c}-{i}")),
                    ],
                )
            })
            .collect();
        w.commit(&rows, NOW - 10 * DAY + c).unwrap();
    }
}

fn compact(st: &dyn paimon_compact::io::ToIo, seed: u8, full: bool) -> i64 {
    let mut o = CompactOptions::new(PlanContext::at(NOW - 9 * DAY, 3), [seed; 16]);
    o.full = full;
    let r = compact_table(st, T, &o).unwrap();
    let after = r.snapshot_after.expect("the compaction committed");
    assert!(
        r.snapshot_before < Some(after),
        "the compaction committed: {r:?}"
    );
    after
}

fn files(st: &MemoryStorage) -> BTreeMap<String, Vec<u8>> {
    st.paths()
        .into_iter()
        .map(|p| {
            let b = st.get(&p).unwrap().to_vec();
            (p, b)
        })
        .collect()
}

fn doc(st: &dyn Storage, path: &str) -> Snapshot {
    Snapshot::from_json(&st.read_all(path).unwrap(), path).unwrap()
}

/// The paths of every file a snapshot-shaped document references: its manifest lists, their
/// manifests, every data file and extra file those name (added or deleted), its index
/// manifest and index files, its statistics.
fn referenced_paths(st: &dyn Storage, s: &Snapshot) -> BTreeSet<String> {
    let table = Table::load(st, T).unwrap();
    let p = &table.paths;
    let mut out = BTreeSet::new();
    let lists = [&s.base_manifest_list, &s.delta_manifest_list]
        .into_iter()
        .chain(s.changelog_manifest_list.as_ref());
    for list in lists {
        let lp = p.manifest(list, "test").unwrap();
        for m in decode_manifest_list(&st.read_all(&lp).unwrap(), &lp).unwrap() {
            let mp = p.manifest(&m.file_name, "test").unwrap();
            for e in decode_manifest(&st.read_all(&mp).unwrap(), &mp).unwrap() {
                let part = table.partition_path(&e.partition, "test").unwrap();
                let data = p.live_data_file(&part, e.bucket, &e.file, "test").unwrap();
                let dir = data.rsplit_once('/').unwrap().0.to_string();
                for x in &e.file.extra_files {
                    out.insert(format!("{dir}/{x}"));
                }
                out.insert(data);
            }
            out.insert(mp);
        }
        out.insert(lp);
    }
    if let Some(i) = &s.index_manifest {
        let ip = p.manifest(i, "test").unwrap();
        for e in decode_index_manifest(&st.read_all(&ip).unwrap(), &ip).unwrap() {
            out.insert(p.index_file(&e.file_name, "test").unwrap());
        }
        out.insert(ip);
    }
    if let Some(stats) = &s.statistics {
        out.insert(format!("{T}/statistics/{stats}"));
    }
    out
}

fn snapshot_ids(st: &MemoryStorage) -> Vec<i64> {
    let prefix = format!("{T}/snapshot/snapshot-");
    st.paths()
        .iter()
        .filter_map(|p| p.strip_prefix(&prefix)?.parse().ok())
        .collect()
}

/// Every file referenced by every snapshot still exists.
fn assert_snapshots_intact(st: &MemoryStorage) {
    for id in snapshot_ids(st) {
        let s = doc(st, &format!("{T}/snapshot/snapshot-{id}"));
        for p in referenced_paths(st, &s) {
            assert!(st.get(&p).is_some(), "{p} of snapshot {id} was deleted");
        }
    }
}

/// Reads of paths containing `needle` always fail with an I/O error.
struct BrokenReads {
    inner: MemoryStorage,
    needle: &'static str,
}

impl Storage for BrokenReads {
    fn size(&self, path: &str) -> StorageResult<u64> {
        if path.contains(self.needle) {
            return Err(StorageError::new(
                StorageErrorKind::Io,
                path,
                "disk on fire",
            ));
        }
        self.inner.size(path)
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        if path.contains(self.needle) {
            return Err(StorageError::new(
                StorageErrorKind::Io,
                path,
                "disk on fire",
            ));
        }
        self.inner.read_range(path, offset, len)
    }
    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        self.inner.list(prefix)
    }
    fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter>> {
        self.inner.create_writer(path)
    }
    fn delete(&self, path: &str) -> StorageResult<()> {
        self.inner.delete(path)
    }
    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
        self.inner.create_if_absent(path, bytes)
    }
}

/// Listings carry the modification times of `times` (the others stay unknown).
struct TimedStorage {
    inner: MemoryStorage,
    times: BTreeMap<String, i64>,
}

impl Storage for TimedStorage {
    fn size(&self, path: &str) -> StorageResult<u64> {
        self.inner.size(path)
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        self.inner.read_range(path, offset, len)
    }
    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        let mut l = self.inner.list(prefix)?;
        for o in &mut l {
            o.modified_ms = self.times.get(&o.path).copied();
        }
        Ok(l)
    }
    fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter>> {
        self.inner.create_writer(path)
    }
    fn delete(&self, path: &str) -> StorageResult<()> {
        self.inner.delete(path)
    }
    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
        self.inner.create_if_absent(path, bytes)
    }
}

// ---------------------------------------------------------------------------------------------

#[test]
fn a_crashed_compaction_leaves_orphans_that_are_removed_and_nothing_else() {
    let base = MemoryStorage::new();
    pk_table(&base, &[], 4);
    let rows = read_rows(&base, T);
    let before = files(&base);
    let latest_before = *snapshot_ids(&base).iter().max().unwrap();

    // The number of storage calls of a successful run, then the latest crash point at which
    // no snapshot gets committed: the job wrote its files and died at the commit.
    let counting = FaultyStorage::new(clone_of(&base), None);
    compact_table(&counting, T, &{
        let mut o = CompactOptions::new(PlanContext::at(NOW - 9 * DAY, 3), [3; 16]);
        o.full = true;
        o
    })
    .unwrap();
    let total = counting.calls.load(Ordering::SeqCst);
    let crashed = (0..total)
        .rev()
        .find_map(|k| {
            let st = FaultyStorage::crashing_at(clone_of(&base), k);
            let mut o = CompactOptions::new(PlanContext::at(NOW - 9 * DAY, 3), [3; 16]);
            o.full = true;
            let failed = compact_table(&st, T, &o).is_err();
            let committed = *snapshot_ids(&st.inner).iter().max().unwrap() > latest_before;
            (failed && !committed).then_some(st.inner)
        })
        .expect("some crash point leaves no snapshot");

    let stray: BTreeSet<String> = crashed
        .paths()
        .into_iter()
        .filter(|p| !before.contains_key(p))
        .collect();
    assert!(
        stray.iter().any(|p| p.contains("/bucket-")),
        "the crash left data files: {stray:?}"
    );
    assert!(stray.iter().any(|p| p.contains("/manifest/")), "{stray:?}");
    let lease: BTreeSet<String> = stray
        .iter()
        .filter(|p| p.contains("/compaction-lease/"))
        .cloned()
        .collect();
    assert!(!lease.is_empty(), "the crashed job still holds its lease");

    let expected: BTreeSet<String> = stray.difference(&lease).cloned().collect();
    let expected_bytes: u64 = expected
        .iter()
        .map(|p| crashed.get(p).unwrap().len() as u64)
        .sum();
    let r = clean(&crashed, false);
    let deleted: BTreeSet<String> = r.deleted.iter().cloned().collect();
    assert_eq!(
        deleted, expected,
        "exactly the job's files, never its lease"
    );
    assert_eq!(r.deleted.len(), r.candidates);
    assert_eq!(r.deleted_bytes, expected_bytes);
    assert!(r.failed.is_empty());
    assert_eq!(r.branches, ["main"]);

    // The table is byte for byte what it was before the job (plus the lease), and reads the same.
    let mut after = files(&crashed);
    for l in &lease {
        after.remove(l);
    }
    assert_eq!(after, before);
    assert_eq!(read_rows(&crashed, T), rows);
    assert_snapshots_intact(&crashed);

    // A second run finds nothing.
    let again = clean(&crashed, false);
    assert_eq!(again.candidates, 0);
    assert!(again.deleted.is_empty());
}

#[test]
fn young_files_and_files_of_unknown_age_are_kept() {
    let st = MemoryStorage::new();
    pk_table(&st, &[], 2);
    let old = format!("{T}/dt=d0/bucket-0/data-old-stray.parquet");
    let young = format!("{T}/dt=d0/bucket-0/data-young-stray.parquet");
    let unknown = format!("{T}/manifest/manifest-unknown-0");
    let exactly_at_cutoff = format!("{T}/index/index-at-cutoff-0");
    for p in [&old, &young, &unknown, &exactly_at_cutoff] {
        st.put(p, vec![1, 2, 3]);
    }
    let c = ctx(false);
    let cutoff = default_older_than(&c);
    assert_eq!(cutoff, NOW - DEFAULT_OLDER_THAN_MS);
    let age = |p: &str| -> Option<i64> {
        if p == young {
            Some(NOW - 60_000)
        } else if p == unknown {
            None
        } else if p == exactly_at_cutoff {
            Some(cutoff)
        } else {
            Some(NOW - 2 * DAY)
        }
    };
    let r = remove_orphan_files(&st, T, cutoff, &age, &c).unwrap();
    assert_eq!(r.deleted, vec![old.clone()]);
    assert_eq!(r.deleted_bytes, 3);
    assert_eq!(
        r.kept_too_young, 2,
        "younger than, or exactly at, the cut-off"
    );
    assert_eq!(r.kept_unknown_age, 1);
    assert_eq!(r.candidates, 4);
    assert!(st.get(&old).is_none());
    for p in [&young, &unknown, &exactly_at_cutoff] {
        assert!(st.get(p).is_some(), "{p}");
    }

    // A cut-off of "now" or later is refused (it would delete files being written).
    for bad in [NOW, NOW + 1] {
        let e = remove_orphan_files(&st, T, bad, &all_old, &c).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::InvalidOption { .. }), "{e}");
    }
    // Nothing is ever deleted when no time is known.
    st.put(&old, vec![1]);
    let r = remove_orphan_files(&st, T, cutoff, &|_| None, &c).unwrap();
    assert!(r.deleted.is_empty());
    assert_eq!(r.kept_unknown_age, 4);
}

#[test]
fn a_dry_run_reports_and_changes_nothing() {
    let st = MemoryStorage::new();
    pk_table(&st, &[], 3);
    compact(&st, 4, true);
    st.put(
        &format!("{T}/dt=d1/bucket-1/data-stray.parquet"),
        vec![0; 10],
    );
    st.put(&format!("{T}/snapshot/.snapshot-9.tmp"), vec![0; 5]);
    let before = files(&st);
    let dry = clean(&st, true);
    assert!(dry.dry_run);
    assert_eq!(files(&st), before, "a dry run changes nothing");
    assert_eq!(dry.deleted.len(), 2);
    assert_eq!(dry.deleted_bytes, 15);
    let real = clean(&st, false);
    assert_eq!(
        real.deleted, dry.deleted,
        "the dry run reports what a run deletes"
    );
    assert_eq!(real.deleted_bytes, dry.deleted_bytes);
}

#[test]
fn replaced_inputs_of_retained_snapshots_are_kept() {
    // The second compaction folds the base manifests (tiny full-compaction threshold), so the
    // latest snapshot no longer names the first compaction's inputs at all.
    let st = MemoryStorage::new();
    pk_table(
        &st,
        &[("manifest.full-compaction-threshold-size", "1 b")],
        4,
    );
    compact(&st, 5, true);
    pk_extra_commits(&st, 2);
    compact(&st, 6, true);
    let rows = read_rows(&st, T);
    let before = files(&st);
    // The inputs the compactions replaced are still referenced by the older snapshots.
    let ids = snapshot_ids(&st);
    let latest = *ids.iter().max().unwrap();
    let only_older: BTreeSet<String> = ids
        .iter()
        .filter(|id| **id != latest)
        .flat_map(|id| referenced_paths(&st, &doc(&st, &format!("{T}/snapshot/snapshot-{id}"))))
        .filter(|p| p.contains("/bucket-"))
        .collect::<BTreeSet<_>>()
        .difference(&referenced_paths(
            &st,
            &doc(&st, &format!("{T}/snapshot/snapshot-{latest}")),
        ))
        .cloned()
        .collect();
    assert!(
        !only_older.is_empty(),
        "some data files only older snapshots reference"
    );
    let r = clean(&st, false);
    assert_eq!(r.candidates, 0, "{r:?}");
    assert!(r.deleted.is_empty());
    assert!(r.referenced > 0);
    assert_eq!(files(&st), before);
    assert_eq!(read_rows(&st, T), rows);
    assert_snapshots_intact(&st);
}

fn pk_extra_commits(st: &dyn Storage, n: i64) {
    let mut w = TableWriter::new(st, T, [11; 16]);
    for c in 0..n {
        let rows: Vec<_> = (0..6i64)
            .map(|i| {
                (
                    RowKind::Insert,
                    vec![
                        Datum::BigInt(i * 3),
                        Datum::String(format!("d{}", i % 2)),
                        Datum::String(format!("late{c}-{i}")),
                    ],
                )
            })
            .collect();
        w.commit(&rows, NOW - 9 * DAY + 1000 + c).unwrap();
    }
}

/// How the first snapshot outlives its expiry.
#[derive(Clone, Copy, Debug)]
enum Keeper {
    Tag,
    Changelog,
    Branch,
}

#[test]
fn files_referenced_only_by_a_tag_a_changelog_or_a_branch_are_kept() {
    for keeper in [Keeper::Tag, Keeper::Changelog, Keeper::Branch] {
        // Two compactions with a write between them; the second folds the base manifests
        // (a tiny full-compaction threshold), so the latest snapshot no longer names the
        // inputs of the first even as DELETE entries.
        let st = MemoryStorage::new();
        pk_table(
            &st,
            &[("manifest.full-compaction-threshold-size", "1 b")],
            4,
        );
        compact(&st, 7, true);
        pk_extra_commits(&st, 1);
        let latest = compact(&st, 12, true);
        let rows = read_rows(&st, T);
        let s1_path = format!("{T}/snapshot/snapshot-1");
        let s1_bytes = st.read_all(&s1_path).unwrap();
        let s1 = doc(&st, &s1_path);
        match keeper {
            Keeper::Tag => st.put(&format!("{T}/tag/tag-first"), s1_bytes.clone()),
            Keeper::Changelog => {
                st.put(&format!("{T}/changelog/changelog-1"), s1_bytes.clone());
                // A torn changelog write is ignored, not an error.
                st.put(&format!("{T}/changelog/changelog-2"), Vec::new());
            }
            Keeper::Branch => {
                let schema = st.read_all(&format!("{T}/schema/schema-0")).unwrap();
                st.put(&format!("{T}/branch/branch-b1/schema/schema-0"), schema);
                st.put(
                    &format!("{T}/branch/branch-b1/snapshot/snapshot-1"),
                    s1_bytes.clone(),
                );
            }
        }
        // Expire snapshots 1..latest-1 the crude way: drop their files, keep their data (what
        // a crash in the middle of an expiry, or a manual deletion, leaves).
        let expired: Vec<Snapshot> = (1..latest)
            .map(|id| doc(&st, &format!("{T}/snapshot/snapshot-{id}")))
            .collect();
        for id in 1..latest {
            st.delete(&format!("{T}/snapshot/snapshot-{id}")).unwrap();
        }
        let kept_doc = doc(&st, &format!("{T}/snapshot/snapshot-{latest}"));
        let mut protected = referenced_paths(&st, &s1);
        protected.extend(referenced_paths(&st, &kept_doc));
        let mut orphaned = BTreeSet::new();
        for s in &expired[1..] {
            orphaned.extend(referenced_paths(&st, s));
        }
        let orphaned: BTreeSet<String> = orphaned.difference(&protected).cloned().collect();
        assert!(
            orphaned.iter().any(|p| p.contains("/bucket-")),
            "later commits added data files the compaction replaced: {orphaned:?}"
        );

        let r = clean(&st, false);
        let deleted: BTreeSet<String> = r.deleted.iter().cloned().collect();
        assert_eq!(deleted, orphaned, "{keeper:?}");
        for p in &protected {
            assert!(st.get(p).is_some(), "{keeper:?}: {p} was deleted");
        }
        assert_eq!(read_rows(&st, T), rows, "{keeper:?}");
        match keeper {
            Keeper::Tag => assert!(st.get(&format!("{T}/tag/tag-first")).is_some()),
            Keeper::Changelog => {
                assert!(st.get(&format!("{T}/changelog/changelog-1")).is_some());
                assert!(st.get(&format!("{T}/changelog/changelog-2")).is_some());
            }
            Keeper::Branch => assert_eq!(r.branches, ["b1", "main"]),
        }
    }
}

#[test]
fn strays_of_metadata_directories_go_and_protected_places_stay() {
    let st = MemoryStorage::new();
    pk_table(&st, &[], 2);
    let live = st
        .paths()
        .into_iter()
        .find(|p| p.contains("/dt=d0/bucket-") && p.ends_with(".parquet"))
        .unwrap();
    let live_name = live.rsplit('/').next().unwrap().to_string();
    // The latest snapshot also names an index manifest (a hash index file) and statistics.
    let latest_path = format!("{T}/snapshot/snapshot-2");
    let mut latest = doc(&st, &latest_path);
    let table = Table::load(&st, T).unwrap();
    let lp = table
        .paths
        .manifest(&latest.delta_manifest_list, "t")
        .unwrap();
    let m = decode_manifest_list(&st.read_all(&lp).unwrap(), &lp).unwrap()[0].clone();
    let mp = table.paths.manifest(&m.file_name, "t").unwrap();
    let e = decode_manifest(&st.read_all(&mp).unwrap(), &mp).unwrap()[0].clone();
    let hash = IndexManifestEntry {
        kind: FileKind::Add,
        partition: e.partition.clone(),
        bucket: e.bucket,
        index_type: "HASH".to_string(),
        file_name: "index-hash-0".to_string(),
        file_size: 4,
        row_count: 1,
        dv_ranges: None,
        external_path: None,
        global_index: None,
    };
    st.put(&format!("{T}/index/index-hash-0"), vec![0; 4]);
    st.put(
        &format!("{T}/manifest/index-manifest-x-0"),
        encode_index_manifest(&[hash], apache_avro::Codec::Null, [0; 16]).unwrap(),
    );
    st.put(&format!("{T}/statistics/stat-x-0"), b"{}".to_vec());
    latest.index_manifest = Some("index-manifest-x-0".to_string());
    latest.statistics = Some("stat-x-0".to_string());
    st.put(&latest_path, latest.to_json());
    let gone = [
        "snapshot/.snapshot-3.abc.tmp",
        "snapshot/garbage",
        "changelog/whatever",
        "manifest/manifest-stray-0",
        "index/index-stray-0",
        "statistics/stat-stray",
        "dt=d0/bucket-0/data-stray.parquet",
        "dt=d1/bucket-postpone/data-stray2.parquet",
        "dt=d9/leftover.parquet",
    ];
    let kept = vec![
        "snapshot/EARLIEST".to_string(),
        "snapshot/sub/file".to_string(),
        "changelog/LATEST".to_string(),
        "schema/schema-junk".to_string(),
        "tag/not-a-tag".to_string(),
        "consumer/consumer-x".to_string(),
        "compaction-lease/0000-0".to_string(),
        "compaction-state/0000.json".to_string(),
        "other/data-x.parquet".to_string(),
        "bucket-0/data-unpartitioned.parquet".to_string(),
        "dt=d0/notbucket/data-x.parquet".to_string(),
        "dt=d0/bucket-0/sub/data-x.parquet".to_string(),
        "dt=d0/bucket-0/pack-1.managed.blob".to_string(),
        // A name that something references protects every file of that name.
        format!("dt=d1/bucket-1/{live_name}"),
    ];
    for p in gone
        .iter()
        .map(|s| s.to_string())
        .chain(kept.iter().cloned())
    {
        st.put(&format!("{T}/{p}"), b"x".to_vec());
    }
    let rows = read_rows(&st, T);
    let r = clean(&st, false);
    let deleted: BTreeSet<String> = r.deleted.iter().cloned().collect();
    let expected: BTreeSet<String> = gone.iter().map(|p| format!("{T}/{p}")).collect();
    assert_eq!(deleted, expected);
    let referenced = [
        "index/index-hash-0",
        "manifest/index-manifest-x-0",
        "statistics/stat-x-0",
    ];
    for p in kept.iter().map(String::as_str).chain(referenced) {
        assert!(st.get(&format!("{T}/{p}")).is_some(), "{p}");
    }
    assert!(st.get(&format!("{T}/snapshot/LATEST")).is_some());
    assert!(st.get(&format!("{T}/schema/schema-0")).is_some());
    assert_eq!(read_rows(&st, T), rows);
    assert_snapshots_intact(&st);
}

#[test]
fn data_path_directory_and_external_roots_are_searched() {
    let st = MemoryStorage::new();
    pk_table(
        &st,
        &[
            ("data-file.path-directory", "data"),
            ("data-file.external-paths", "file:///ext/t"),
            ("data-file.external-paths.strategy", "round-robin"),
        ],
        3,
    );
    compact(&st, 8, true);
    let external: Vec<String> = st
        .paths()
        .into_iter()
        .filter(|p| p.starts_with("file:/ext/t/"))
        .collect();
    assert!(
        !external.is_empty(),
        "the compaction wrote to the external root"
    );
    assert!(st
        .paths()
        .iter()
        .any(|p| p.starts_with(&format!("{T}/data/dt="))));
    let rows = read_rows(&st, T);
    let gone = [
        format!("{T}/data/dt=d0/bucket-0/data-stray.parquet"),
        "file:/ext/t/dt=d1/bucket-1/data-stray.parquet".to_string(),
    ];
    let kept = [format!("{T}/dt=d0/bucket-0/data-outside.parquet")];
    for p in gone.iter().chain(&kept) {
        st.put(p, b"x".to_vec());
    }
    let r = clean(&st, false);
    let deleted: BTreeSet<String> = r.deleted.iter().cloned().collect();
    assert_eq!(deleted, gone.iter().cloned().collect());
    for p in kept.iter().chain(&external) {
        assert!(st.get(p).is_some(), "{p}");
    }
    assert_eq!(read_rows(&st, T), rows);
    assert_snapshots_intact(&st);
}

#[test]
fn a_missing_manifest_makes_its_files_unreferenced() {
    // Paimon's `testAbnormallyRemoving`: a manually deleted manifest references nothing.
    let st = MemoryStorage::new();
    pk_table(&st, &[], 1);
    let s = doc(&st, &format!("{T}/snapshot/snapshot-1"));
    let table = Table::load(&st, T).unwrap();
    let lp = table.paths.manifest(&s.delta_manifest_list, "t").unwrap();
    let metas = decode_manifest_list(&st.read_all(&lp).unwrap(), &lp).unwrap();
    let data: BTreeSet<String> = st
        .paths()
        .into_iter()
        .filter(|p| p.contains("/bucket-"))
        .collect();
    assert!(!data.is_empty());
    for m in &metas {
        st.delete(&table.paths.manifest(&m.file_name, "t").unwrap())
            .unwrap();
    }
    let r = clean(&st, false);
    let deleted: BTreeSet<String> = r.deleted.iter().cloned().collect();
    assert_eq!(deleted, data);
}

#[test]
fn a_metadata_read_that_keeps_failing_stops_the_run() {
    let st = MemoryStorage::new();
    pk_table(&st, &[], 2);
    st.put(
        &format!("{T}/dt=d0/bucket-0/data-stray.parquet"),
        b"x".to_vec(),
    );
    let before = files(&st);
    let c = ctx(false);
    for needle in [
        "manifest-list-",
        "/snapshot/snapshot-2",
        "manifest/manifest-",
    ] {
        let broken = BrokenReads {
            inner: st.clone(),
            needle,
        };
        let e = remove_orphan_files(&broken, T, default_older_than(&c), &all_old, &c)
            .expect_err(needle);
        assert!(matches!(e.kind, ErrorKind::Io { .. }), "{needle}: {e}");
        assert_eq!(files(&st), before, "{needle}: nothing deleted");
    }
}

#[test]
fn single_storage_failures_are_retried_or_reported() {
    let base = MemoryStorage::new();
    pk_table(&base, &[], 3);
    compact(&base, 9, true);
    base.put(
        &format!("{T}/dt=d0/bucket-1/data-stray.parquet"),
        b"x".to_vec(),
    );
    base.put(&format!("{T}/manifest/manifest-stray-0"), b"x".to_vec());
    let baseline = clean(&clone_of(&base), false);
    assert_eq!(baseline.deleted.len(), 2);
    let c = ctx(false);
    let counting = FaultyStorage::new(clone_of(&base), None);
    remove_orphan_files(&counting, T, default_older_than(&c), &all_old, &c).unwrap();
    let total = counting.calls.load(Ordering::SeqCst);
    for k in 0..total {
        let st = FaultyStorage::new(clone_of(&base), Some(k));
        let r = remove_orphan_files(&st, T, default_older_than(&c), &all_old, &c)
            .unwrap_or_else(|e| panic!("failure of call {k} was not retried: {e}"));
        let mut seen: Vec<String> = r.deleted.clone();
        seen.extend(r.failed.iter().map(|f| f.path.clone()));
        seen.sort();
        assert_eq!(seen, baseline.deleted, "call {k}");
        for f in &r.failed {
            assert!(
                st.inner.get(&f.path).is_some(),
                "a failed deletion leaves the file"
            );
        }
    }
}

#[test]
fn a_branch_without_schema_aborts_before_anything_is_deleted() {
    let st = MemoryStorage::new();
    pk_table(&st, &[], 1);
    st.put(&format!("{T}/snapshot/garbage"), b"x".to_vec());
    st.put(
        &format!("{T}/branch/branch-broken/snapshot/snapshot-1"),
        b"{}".to_vec(),
    );
    let before = files(&st);
    let c = ctx(false);
    let e = remove_orphan_files(&st, T, default_older_than(&c), &all_old, &c).unwrap_err();
    assert!(e.message.contains("broken"), "{e}");
    assert_eq!(files(&st), before);
}

#[test]
fn listing_times_come_first_and_the_callers_times_fill_the_gaps() {
    let st = MemoryStorage::new();
    pk_table(&st, &[], 1);
    let p = |n: &str| format!("{T}/dt=d0/bucket-0/{n}");
    for n in ["listed-old", "listed-young", "caller-old", "nobody"] {
        st.put(&p(n), b"x".to_vec());
    }
    let timed = TimedStorage {
        inner: st.clone(),
        times: [
            (p("listed-old"), NOW - 3 * DAY),
            (p("listed-young"), NOW - 1000),
        ]
        .into_iter()
        .collect(),
    };
    let c = ctx(false);
    let cutoff = default_older_than(&c);

    let dry = ctx(true);
    let r = remove_orphan_files(&timed, T, cutoff, &times_from_listing, &dry).unwrap();
    assert_eq!(r.deleted, vec![p("listed-old")]);
    assert_eq!((r.kept_too_young, r.kept_unknown_age), (1, 2));

    // The caller's times only fill in what the listing does not know.
    let caller = |path: &str| (path != p("nobody")).then_some(NOW - 4 * DAY);
    let r = remove_orphan_files(&timed, T, cutoff, &caller, &c).unwrap();
    assert_eq!(r.deleted, vec![p("caller-old"), p("listed-old")]);
    assert_eq!((r.kept_too_young, r.kept_unknown_age), (1, 1));
    assert!(st.get(&p("listed-young")).is_some());
    assert!(st.get(&p("nobody")).is_some());
}
