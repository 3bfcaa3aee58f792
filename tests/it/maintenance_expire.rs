//! Snapshot and changelog expiration on tables written by the demo writer and compacted by the
//! table job: Paimon's range rules (counts, age of the successor, limit, consumers), what is
//! deleted and what a tag, a retained snapshot or a long-lived changelog keeps, dry runs, and a
//! failure injected at every storage call of a whole expiration (the table stays readable at
//! every retained snapshot and tag, and a rerun ends exactly where an undisturbed run does).

use crate::table_support;

use std::collections::{BTreeMap, BTreeSet};

use arrow_array::{Array, RecordBatch};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use bytes::Bytes;
use paimon_compact::maintenance::expire_changelogs::{expire_changelogs, ChangelogExpireReport};
use paimon_compact::maintenance::expire_snapshots::{expire_snapshots, ExpireConfig, ExpireReport};
use paimon_compact::maintenance::MaintenanceContext;
use paimon_compact::plan::PlanContext;
use paimon_compact::storage::{MemoryStorage, ObjectMeta, Storage, StorageResult, StorageWriter};
use paimon_compact::table::binary_row::Datum;
use paimon_compact::table::demo::{create_table, field, new_schema, RowKind, TableWriter};
use paimon_compact::table::manifest::FileKind;
use paimon_compact::table::scan::{
    live_entries, read_index_manifest, read_manifest, read_manifest_list, snapshot_manifests, Table,
};
use paimon_compact::table::snapshot::{read_snapshot, Snapshot};
use paimon_compact::table::{compact_table, CompactOptions};
use paimon_compact::ErrorKind;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use table_support::{clone_of, FaultyStorage};

const NOW: i64 = 1_750_000_000_000;
const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;
const T: &str = "wh/db.db/t";

// ---------------------------------------------------------------------------------------------
// Building tables.

/// An append table (bucket -1, partitioned by `dt` in three partitions) with `extra` options.
fn append_table(st: &dyn Storage, extra: &[(&str, &str)]) {
    let mut options = vec![("bucket", "-1")];
    options.extend_from_slice(extra);
    let schema = new_schema(
        vec![
            field(0, "id", "BIGINT NOT NULL").unwrap(),
            field(1, "dt", "STRING").unwrap(),
            field(2, "v", "STRING").unwrap(),
        ],
        &["dt"],
        &[],
        &options,
        NOW,
    );
    create_table(st, T, &schema).unwrap();
}

/// Commit number `c` (30 rows, one file per partition) at `time`; returns the snapshot id.
fn commit(st: &dyn Storage, c: i64, time: i64) -> i64 {
    let rows: Vec<_> = (0..30i64)
        .map(|i| {
            (
                RowKind::Insert,
                vec![
                    Datum::BigInt(c * 100 + i),
                    Datum::String(format!("d{}", i % 3)),
                    Datum::String(format!("value-{c}-{i}")),
                ],
            )
        })
        .collect();
    TableWriter::new(st, T, [100 + c as u8; 16])
        .commit(&rows, time)
        .unwrap()
}

/// A COMPACT snapshot at `time` (the job folds each partition's files into one).
fn compact(st: &dyn paimon_compact::io::ToIo, time: i64, seed: u8) -> i64 {
    let mut o = CompactOptions::new(PlanContext::at(time, 3), [seed; 16]);
    o.full = true;
    let report = compact_table(st, T, &o).unwrap();
    report.snapshot_after.expect("a compaction was committed")
}

/// Commits 1..=4 a minute apart, a compaction (5) replacing their 12 files, commits 6 and 7.
fn standard_table(st: &MemoryStorage, extra: &[(&str, &str)]) {
    append_table(st, extra);
    for c in 1..=4 {
        assert_eq!(commit(st, c, NOW + c * MINUTE), c);
    }
    assert_eq!(compact(st, NOW + 5 * MINUTE, 1), 5);
    assert_eq!(commit(st, 6, NOW + 6 * MINUTE), 6);
    assert_eq!(commit(st, 7, NOW + 7 * MINUTE), 7);
}

fn set_option(st: &MemoryStorage, key: &str, value: &str) {
    let mut schema = Table::load(st, T).unwrap().schema;
    schema.options.insert(key.into(), value.into());
    let p = paimon_compact::table::path::TablePaths::new(T);
    st.put(&p.schema(schema.id), schema.to_json());
}

fn config(pairs: &[(&str, &str)]) -> ExpireConfig {
    let raw: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    ExpireConfig::from_options(&raw).unwrap()
}

fn ctx(now_ms: i64) -> MaintenanceContext {
    MaintenanceContext {
        now_ms,
        utc_offset_ms: 0,
        dry_run: false,
    }
}

fn expire(st: &dyn Storage, pairs: &[(&str, &str)], now: i64) -> ExpireReport {
    let table = Table::load(st, T).unwrap();
    expire_snapshots(st, &table, &config(pairs), &ctx(now)).unwrap()
}

fn expire_cl(st: &dyn Storage, pairs: &[(&str, &str)], now: i64) -> ChangelogExpireReport {
    let table = Table::load(st, T).unwrap();
    expire_changelogs(st, &table, &config(pairs), &ctx(now)).unwrap()
}

/// Puts a tag (a plain copy of the snapshot file, as Paimon writes one without TTL).
fn tag(st: &MemoryStorage, name: &str, id: i64) {
    let bytes = st.get(&format!("{T}/snapshot/snapshot-{id}")).unwrap();
    st.put(&format!("{T}/tag/tag-{name}"), bytes.to_vec());
}

fn read_tag(st: &dyn Storage, name: &str) -> Snapshot {
    let path = format!("{T}/tag/tag-{name}");
    Snapshot::from_json(&st.read_all(&path).unwrap(), &path).unwrap()
}

fn snapshot(st: &dyn Storage, id: i64) -> Snapshot {
    read_snapshot(st, &Table::load(st, T).unwrap().paths, id).unwrap()
}

fn changelog(st: &dyn Storage, id: i64) -> Snapshot {
    let path = format!("{T}/changelog/changelog-{id}");
    Snapshot::from_json(&st.read_all(&path).unwrap(), &path).unwrap()
}

fn ids_in(st: &MemoryStorage, dir: &str, prefix: &str) -> Vec<i64> {
    let p = format!("{T}/{dir}/{prefix}");
    let mut ids: Vec<i64> = st
        .paths()
        .iter()
        .filter_map(|f| f.strip_prefix(&p)?.parse().ok())
        .collect();
    ids.sort();
    ids
}

fn snapshot_ids(st: &MemoryStorage) -> Vec<i64> {
    ids_in(st, "snapshot", "snapshot-")
}

fn changelog_ids(st: &MemoryStorage) -> Vec<i64> {
    ids_in(st, "changelog", "changelog-")
}

fn hint(st: &MemoryStorage, path: &str) -> Option<String> {
    st.get(&format!("{T}/{path}"))
        .map(|b| String::from_utf8(b.to_vec()).unwrap())
}

// ---------------------------------------------------------------------------------------------
// Reading a table at a given snapshot, independently of expiration.

fn cell(a: &dyn Array, row: usize) -> String {
    if a.is_null(row) {
        return "null".into();
    }
    ArrayFormatter::try_new(a, &FormatOptions::default())
        .unwrap()
        .value(row)
        .to_string()
}

/// Every row of an append table at `snap` (a snapshot, tag or changelog), sorted.
fn rows_at(st: &dyn Storage, snap: &Snapshot) -> Vec<String> {
    let table = Table::load(st, T).unwrap();
    let manifests = snapshot_manifests(st, &table.paths, snap).unwrap();
    let live = live_entries(st, &table.paths, &manifests, "test", &|_| true).unwrap();
    let mut rows = Vec::new();
    for (e, _) in live {
        let ppath = table.partition_path(&e.partition, "test").unwrap();
        let path = table
            .paths
            .live_data_file(&ppath, e.bucket, &e.file, "test")
            .unwrap();
        let bytes = Bytes::from(st.read_all(&path).unwrap());
        for batch in ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap()
        {
            let batch: RecordBatch = batch.unwrap();
            for r in 0..batch.num_rows() {
                let cells: Vec<String> = (0..batch.num_columns())
                    .map(|c| cell(batch.column(c).as_ref(), r))
                    .collect();
                rows.push(cells.join("|"));
            }
        }
    }
    rows.sort();
    rows
}

/// Every file `snap` names: manifest lists, manifests, live data files, changelog files, index
/// manifest and index files, statistics. `lists_may_be_gone` (a long-lived changelog of a table
/// with a changelog producer) skips base and delta lists that no longer exist.
fn referenced(st: &dyn Storage, snap: &Snapshot, lists_may_be_gone: bool) -> BTreeSet<String> {
    let table = Table::load(st, T).unwrap();
    let p = &table.paths;
    let mut out = BTreeSet::new();
    let present = |name: &str| st.size(&p.manifest(name, "t").unwrap()).is_ok();
    if !lists_may_be_gone || present(&snap.base_manifest_list) {
        let manifests = snapshot_manifests(st, p, snap).unwrap();
        out.insert(p.manifest(&snap.base_manifest_list, "t").unwrap());
        out.insert(p.manifest(&snap.delta_manifest_list, "t").unwrap());
        for m in &manifests {
            out.insert(p.manifest(&m.file_name, "t").unwrap());
        }
        for (e, _) in live_entries(st, p, &manifests, "t", &|_| true).unwrap() {
            let ppath = table.partition_path(&e.partition, "t").unwrap();
            out.insert(p.live_data_file(&ppath, e.bucket, &e.file, "t").unwrap());
        }
    }
    if let Some(list) = &snap.changelog_manifest_list {
        out.insert(p.manifest(list, "t").unwrap());
        for m in read_manifest_list(st, p, list, "t").unwrap() {
            let (path, entries) = read_manifest(st, p, &m, "t").unwrap();
            out.insert(path);
            for e in entries.iter().filter(|e| e.kind == FileKind::Add) {
                let ppath = table.partition_path(&e.partition, "t").unwrap();
                out.insert(p.live_data_file(&ppath, e.bucket, &e.file, "t").unwrap());
            }
        }
    }
    if let Some(index) = &snap.index_manifest {
        out.insert(p.manifest(index, "t").unwrap());
        for e in read_index_manifest(st, p, snap).unwrap() {
            out.insert(p.index_file(&e.file_name, "t").unwrap());
        }
    }
    out
}

/// Data, manifest and index files of the table (what expiration may delete).
fn table_files(st: &MemoryStorage) -> BTreeSet<String> {
    st.paths()
        .into_iter()
        .filter(|f| {
            let rel = &f[T.len() + 1..];
            ![
                "schema/",
                "snapshot/",
                "changelog/",
                "tag/",
                "consumer/",
                "compaction-",
            ]
            .iter()
            .any(|d| rel.starts_with(d))
        })
        .collect()
}

/// Asserts that every file of the table is named by one of `keepers` and that each keeper's
/// files all exist: nothing dangling, nothing orphaned.
fn assert_exactly_referenced(st: &MemoryStorage, keepers: &[(Snapshot, bool)]) {
    let mut needed = BTreeSet::new();
    for (s, lists_may_be_gone) in keepers {
        needed.extend(referenced(st, s, *lists_may_be_gone));
    }
    let files = table_files(st);
    let missing: Vec<_> = needed.difference(&files).collect();
    assert!(missing.is_empty(), "dangling references: {missing:#?}");
    let orphans: Vec<_> = files.difference(&needed).collect();
    assert!(orphans.is_empty(), "orphans: {orphans:#?}");
}

/// The files compaction 5 replaced (commits 1..=4), and those of commit 4 alone.
fn replaced_by_compaction(st: &MemoryStorage) -> (BTreeSet<String>, BTreeSet<String>) {
    let live = |id: i64| referenced(st, &snapshot(st, id), false);
    let data = |s: BTreeSet<String>| -> BTreeSet<String> {
        s.into_iter().filter(|f| f.ends_with(".parquet")).collect()
    };
    let before = data(live(4));
    let after = data(live(5));
    let replaced: BTreeSet<String> = before.difference(&after).cloned().collect();
    let of_commit_3 = data(live(3));
    let of_commit_4 = replaced.difference(&of_commit_3).cloned().collect();
    (replaced, of_commit_4)
}

// ---------------------------------------------------------------------------------------------
// Range rules.

#[test]
fn count_retention_deletes_exactly_what_no_retained_snapshot_names() {
    let st = MemoryStorage::new();
    standard_table(&st, &[]);
    let rows6 = rows_at(&st, &snapshot(&st, 6));
    let rows7 = rows_at(&st, &snapshot(&st, 7));
    let (replaced, _) = replaced_by_compaction(&st);
    assert_eq!(replaced.len(), 12);

    // Defaults: 10 snapshots retained, nothing goes (but the EARLIEST hint is written).
    let r = expire(&st, &[], NOW + 10 * HOUR);
    assert!(
        r.expired_snapshots.is_empty() && r.deleted.is_empty(),
        "{r:#?}"
    );
    assert_eq!(hint(&st, "snapshot/EARLIEST").as_deref(), Some("1"));

    // At most two retained: 1..=5 go, whatever their age.
    let r = expire(
        &st,
        &[
            ("snapshot.num-retained.max", "2"),
            ("snapshot.num-retained.min", "1"),
        ],
        NOW,
    );
    assert_eq!(r.expired_snapshots, [1, 2, 3, 4, 5]);
    assert_eq!((r.earliest_before, r.earliest_after), (Some(1), Some(6)));
    assert_eq!(snapshot_ids(&st), [6, 7]);
    assert_eq!(hint(&st, "snapshot/EARLIEST").as_deref(), Some("6"));
    let deleted: BTreeSet<String> = r.deleted.iter().cloned().collect();
    assert_eq!(deleted.len(), r.deleted.len(), "each file deleted once");
    let data: BTreeSet<String> = deleted
        .iter()
        .filter(|f| f.ends_with(".parquet"))
        .cloned()
        .collect();
    assert_eq!(data, replaced, "exactly the files compaction replaced");
    // Data first, snapshot files last.
    let first_meta = r
        .deleted
        .iter()
        .position(|f| f.contains("/manifest/"))
        .unwrap();
    let last_data = r
        .deleted
        .iter()
        .rposition(|f| f.ends_with(".parquet"))
        .unwrap();
    assert!(last_data < first_meta);
    assert!(r.deleted[r.deleted.len() - 5..]
        .iter()
        .all(|f| f.contains("/snapshot/snapshot-")));
    assert!(r.changelogs_written.is_empty() && changelog_ids(&st).is_empty());

    assert_eq!(rows_at(&st, &snapshot(&st, 6)), rows6);
    assert_eq!(rows_at(&st, &snapshot(&st, 7)), rows7);
    assert_exactly_referenced(&st, &[(snapshot(&st, 6), false), (snapshot(&st, 7), false)]);

    // A rerun is a no-op.
    let again = expire(
        &st,
        &[
            ("snapshot.num-retained.max", "2"),
            ("snapshot.num-retained.min", "1"),
        ],
        NOW,
    );
    assert!(
        again.expired_snapshots.is_empty() && again.deleted.is_empty(),
        "{again:#?}"
    );

    // num-retained.min keeps the newest even when everything is old; a bad config is typed.
    let r = expire(
        &st,
        &[
            ("snapshot.num-retained.min", "1"),
            ("snapshot.time-retained", "1 ms"),
        ],
        NOW + HOUR,
    );
    assert_eq!(r.expired_snapshots, [6]);
    assert_eq!(snapshot_ids(&st), [7]);
    let table = Table::load(&st, T).unwrap();
    let mut bad = config(&[]);
    bad.retain_max = 3;
    let e = expire_snapshots(&st, &table, &bad, &ctx(NOW)).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::InvalidOption { .. }), "{e}");
}

/// Records the path of every read (size, read, list) it serves.
struct Recording {
    inner: MemoryStorage,
    paths: std::sync::Mutex<Vec<String>>,
}

impl Storage for Recording {
    fn size(&self, path: &str) -> StorageResult<u64> {
        self.paths.lock().unwrap().push(path.into());
        self.inner.size(path)
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        self.paths.lock().unwrap().push(path.into());
        self.inner.read_range(path, offset, len)
    }
    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        self.paths.lock().unwrap().push(prefix.into());
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

#[test]
fn age_is_judged_by_the_successor_and_the_first_young_one_stops() {
    let st = MemoryStorage::new();
    append_table(&st, &[]);
    for c in 1..=6 {
        commit(&st, c, NOW + c * 10 * MINUTE);
    }
    let opts = [
        ("snapshot.num-retained.min", "1"),
        ("snapshot.time-retained", "25 min"),
    ];
    // olderThan = NOW + 35 min: snapshot 3's successor (40 min) is too young, so 3 stays and
    // the snapshots after it are never read.
    let seen = Recording {
        inner: st.clone(),
        paths: Default::default(),
    };
    let r = expire(&seen, &opts, NOW + 60 * MINUTE);
    assert_eq!(r.expired_snapshots, [1, 2]);
    let touched = seen.paths.lock().unwrap().clone();
    assert!(touched.iter().any(|p| p.ends_with("/snapshot-4")));
    assert!(
        !touched.iter().any(|p| p.ends_with("/snapshot-5")),
        "{touched:?}"
    );
    assert_eq!(snapshot_ids(&st), [3, 4, 5, 6]);
    // Exactly at the boundary (successor time == olderThan) the snapshot stays.
    let r = expire(&st, &opts, NOW + 65 * MINUTE);
    assert!(r.expired_snapshots.is_empty(), "{r:#?}");
    let r = expire(&st, &opts, NOW + 65 * MINUTE + 1);
    assert_eq!(r.expired_snapshots, [3]);
    // Much later everything but num-retained.min goes.
    let r = expire(&st, &opts, NOW + 10 * HOUR);
    assert_eq!(r.expired_snapshots, [4, 5]);
    assert_eq!(snapshot_ids(&st), [6]);
    assert_eq!(rows_at(&st, &snapshot(&st, 6)).len(), 180);
    // num-retained.max overrides age: with max 1 the newest stays alone regardless.
    let st2 = MemoryStorage::new();
    append_table(&st2, &[]);
    for c in 1..=3 {
        commit(&st2, c, NOW + c * MINUTE);
    }
    let r = expire(
        &st2,
        &[
            ("snapshot.num-retained.min", "1"),
            ("snapshot.num-retained.max", "1"),
        ],
        NOW,
    );
    assert_eq!(r.expired_snapshots, [1, 2]);
}

#[test]
fn expire_limit_bounds_each_run() {
    let st = MemoryStorage::new();
    append_table(&st, &[]);
    for c in 1..=8 {
        commit(&st, c, NOW + c * MINUTE);
    }
    let opts = [
        ("snapshot.num-retained.min", "1"),
        ("snapshot.expire.limit", "2"),
    ];
    let mut runs = Vec::new();
    for _ in 0..5 {
        runs.push(expire(&st, &opts, NOW + 10 * HOUR).expired_snapshots);
    }
    assert_eq!(runs, [vec![1, 2], vec![3, 4], vec![5, 6], vec![7], vec![]]);
    assert_eq!(snapshot_ids(&st), [8]);
    assert_eq!(rows_at(&st, &snapshot(&st, 8)).len(), 240);
}

#[test]
fn a_tag_keeps_its_files_but_not_its_snapshot_file() {
    let st = MemoryStorage::new();
    append_table(&st, &[]);
    for c in 1..=4 {
        commit(&st, c, NOW + c * MINUTE);
    }
    tag(&st, "t3", 3);
    compact(&st, NOW + 5 * MINUTE, 1);
    commit(&st, 6, NOW + 6 * MINUTE);
    let tag_rows = rows_at(&st, &read_tag(&st, "t3"));
    assert_eq!(tag_rows.len(), 90);
    let (replaced, of_commit_4) = replaced_by_compaction(&st);

    let opts = [
        ("snapshot.num-retained.min", "1"),
        ("snapshot.num-retained.max", "1"),
    ];
    let r = expire(&st, &opts, NOW);
    assert_eq!(r.expired_snapshots, [1, 2, 3, 4, 5]);
    assert_eq!(
        snapshot_ids(&st),
        [6],
        "a tag does not keep its snapshot file"
    );
    let deleted_data: BTreeSet<String> = r
        .deleted
        .iter()
        .filter(|f| f.ends_with(".parquet"))
        .cloned()
        .collect();
    assert_eq!(
        deleted_data, of_commit_4,
        "only the files the tag never saw"
    );
    assert!(replaced
        .difference(&of_commit_4)
        .all(|f| st.get(f).is_some()));
    let t3 = read_tag(&st, "t3");
    assert_eq!(rows_at(&st, &t3), tag_rows);
    assert_exactly_referenced(&st, &[(t3, false), (snapshot(&st, 6), false)]);

    // Later expirations keep the tag's files as long as the tag exists.
    commit(&st, 7, NOW + 7 * MINUTE);
    let r = expire(&st, &opts, NOW);
    assert_eq!(r.expired_snapshots, [6]);
    assert_eq!(rows_at(&st, &read_tag(&st, "t3")), tag_rows);
}

#[test]
fn consumers_protect_snapshots_unless_changelog_only() {
    let st = MemoryStorage::new();
    standard_table(&st, &[]);
    st.put(
        &format!("{T}/consumer/consumer-job"),
        b"{\n  \"nextSnapshot\" : 3\n}".to_vec(),
    );
    let opts = [
        ("snapshot.num-retained.min", "1"),
        ("snapshot.num-retained.max", "1"),
    ];
    let r = expire(&st, &opts, NOW + 10 * HOUR);
    assert_eq!(r.expired_snapshots, [1, 2]);
    assert_eq!(snapshot_ids(&st)[0], 3);
    let s3 = snapshot(&st, 3);
    let rows3 = rows_at(&st, &s3);

    // changelog-only counts only when changelogs are decoupled.
    let only = [
        ("snapshot.num-retained.min", "1"),
        ("snapshot.num-retained.max", "1"),
        ("consumer.changelog-only", "true"),
    ];
    assert!(expire(&st, &only, NOW + 10 * HOUR)
        .expired_snapshots
        .is_empty());
    let decoupled = [
        ("snapshot.num-retained.min", "1"),
        ("snapshot.num-retained.max", "1"),
        ("changelog.num-retained.max", "10"),
        ("consumer.changelog-only", "true"),
    ];
    let r = expire(&st, &decoupled, NOW + 10 * HOUR);
    assert_eq!(r.expired_snapshots, [3, 4, 5, 6]);
    assert_eq!(r.changelogs_written, [3, 4, 5, 6]);
    // The consumer still caps changelog expiration: changelog 3 stays.
    let r = expire_cl(&st, &decoupled, NOW + 10 * HOUR);
    assert!(r.expired_changelogs.is_empty(), "{r:#?}");
    assert_eq!(changelog_ids(&st), [3, 4, 5, 6]);
    assert_eq!(rows_at(&st, &changelog(&st, 3)), rows3);
    // An unparsable consumer stops expiration with an error, before anything is deleted.
    st.put(&format!("{T}/consumer/consumer-bad"), b"".to_vec());
    let before = st.paths();
    let table = Table::load(&st, T).unwrap();
    let e = expire_snapshots(&st, &table, &config(&opts), &ctx(NOW + 10 * HOUR)).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::CorruptInput { .. }), "{e}");
    assert_eq!(st.paths(), before);
}

// ---------------------------------------------------------------------------------------------
// Changelog decoupling.

/// Snapshots: the newest 2 (within an hour). Changelogs: ids from the newest 4 (counted with
/// the snapshots) stay.
const DECOUPLED: [(&str, &str); 4] = [
    ("snapshot.num-retained.min", "1"),
    ("snapshot.num-retained.max", "2"),
    ("changelog.num-retained.min", "4"),
    ("changelog.num-retained.max", "4"),
];

#[test]
fn decoupled_changelogs_outlive_snapshots_and_expire_later() {
    let st = MemoryStorage::new();
    standard_table(&st, &[]);
    let (replaced, _) = replaced_by_compaction(&st);
    let rows: Vec<Vec<String>> = (1..=7).map(|id| rows_at(&st, &snapshot(&st, id))).collect();
    // Every snapshot is younger than snapshot.time-retained (1 h): only the counts decide.
    let now = NOW + 10 * MINUTE;

    let r = expire(&st, &DECOUPLED, now);
    assert_eq!(r.expired_snapshots, [1, 2, 3, 4, 5]);
    assert_eq!(r.changelogs_written, [1, 2, 3, 4, 5]);
    assert_eq!(changelog_ids(&st), [1, 2, 3, 4, 5]);
    assert_eq!(hint(&st, "changelog/LATEST").as_deref(), Some("5"));
    // changelog-producer none: the replaced APPEND files are the changelog and stay, and every
    // changelog still reads as its snapshot did.
    assert!(
        r.deleted.iter().all(|f| f.contains("/snapshot/snapshot-")),
        "{r:#?}"
    );
    assert!(replaced.iter().all(|f| st.get(f).is_some()));
    for id in 1..=5 {
        assert_eq!(changelog(&st, id).id, id);
        assert_eq!(rows_at(&st, &changelog(&st, id)), rows[id as usize - 1]);
    }

    // Changelog expiration counts from the latest snapshot (7): ids 4..=7 stay.
    let r = expire_cl(&st, &DECOUPLED, now);
    assert_eq!(r.expired_changelogs, [1, 2, 3]);
    assert_eq!(changelog_ids(&st), [4, 5]);
    assert_eq!(hint(&st, "changelog/EARLIEST").as_deref(), Some("4"));
    assert!(r.deleted.iter().all(|f| !f.ends_with(".parquet")), "{r:#?}");
    for id in 4..=5 {
        assert_eq!(rows_at(&st, &changelog(&st, id)), rows[id as usize - 1]);
    }
    assert!(expire_cl(&st, &DECOUPLED, now)
        .expired_changelogs
        .is_empty());

    // More commits: snapshots 6 and 7 become changelogs, and changelog 5 (whose delta removed
    // the replaced files) expires with 4.
    commit(&st, 8, NOW + 8 * MINUTE);
    commit(&st, 9, NOW + 9 * MINUTE);
    assert_eq!(expire(&st, &DECOUPLED, now).changelogs_written, [6, 7]);
    let r = expire_cl(&st, &DECOUPLED, now);
    assert_eq!(r.expired_changelogs, [4, 5]);
    let deleted_data: BTreeSet<String> = r
        .deleted
        .iter()
        .filter(|f| f.ends_with(".parquet"))
        .cloned()
        .collect();
    assert_eq!(deleted_data, replaced);
    assert_eq!(changelog_ids(&st), [6, 7]);
    assert_eq!(snapshot_ids(&st), [8, 9]);
    assert_exactly_referenced(
        &st,
        &[
            (changelog(&st, 6), false),
            (changelog(&st, 7), false),
            (snapshot(&st, 8), false),
            (snapshot(&st, 9), false),
        ],
    );

    // Changelog age is the changelog's own commit time; the first young one stops the range.
    let st = MemoryStorage::new();
    standard_table(&st, &[]);
    let aged = [
        ("snapshot.num-retained.min", "1"),
        ("snapshot.num-retained.max", "1"),
        ("snapshot.time-retained", "1 ms"),
        ("changelog.num-retained.max", "10"),
        ("changelog.time-retained", "210 s"),
    ];
    let now = NOW + 7 * MINUTE;
    assert_eq!(
        expire(&st, &aged, now).changelogs_written,
        [1, 2, 3, 4, 5, 6]
    );
    // changelog i was committed at NOW + i min; olderThan = NOW + 3.5 min: 1..=3 are old.
    let r = expire_cl(&st, &aged, now);
    assert_eq!(r.expired_changelogs, [1, 2, 3]);
    assert_eq!(changelog_ids(&st), [4, 5, 6]);
}

#[test]
fn lookup_changelog_files_die_with_their_snapshot_or_with_their_changelog() {
    // A primary-key table whose compactions produce changelog files.
    let build = || {
        let st = MemoryStorage::new();
        create_table(
            &st,
            T,
            &new_schema(
                vec![
                    field(0, "k", "BIGINT NOT NULL").unwrap(),
                    field(1, "v", "STRING").unwrap(),
                ],
                &[],
                &["k"],
                &[("bucket", "1"), ("changelog-producer", "lookup")],
                NOW,
            ),
        )
        .unwrap();
        let mut w = TableWriter::new(&st, T, [8; 16]);
        for c in 0..3i64 {
            let rows: Vec<_> = (0..10i64)
                .map(|i| {
                    (
                        RowKind::Insert,
                        vec![Datum::BigInt(i), Datum::String(format!("c{c}"))],
                    )
                })
                .collect();
            w.commit(&rows, NOW + c * MINUTE).unwrap();
            let seed = [1 + c as u8; 16];
            let mut o = CompactOptions::new(PlanContext::at(NOW + c * MINUTE + 1, 3), seed);
            o.full = true;
            compact_table(&st, T, &o).unwrap();
        }
        st
    };
    let changelog_files = |st: &MemoryStorage| -> BTreeSet<String> {
        st.paths()
            .into_iter()
            .filter(|p| p.contains("/bucket-0/changelog-"))
            .collect()
    };
    let st = build();
    let with_changelog: Vec<i64> = snapshot_ids(&st)
        .into_iter()
        .filter(|id| snapshot(&st, *id).changelog_manifest_list.is_some())
        .collect();
    assert!(
        !with_changelog.is_empty(),
        "the lookup compactions wrote changelog"
    );
    let all = changelog_files(&st);
    let latest = *snapshot_ids(&st).last().unwrap();

    // Coupled: changelog files of expired snapshots go in step 2.
    let coupled = [
        ("snapshot.num-retained.min", "1"),
        ("snapshot.num-retained.max", "1"),
    ];
    let r = expire(&st, &coupled, NOW + HOUR);
    assert_eq!(snapshot_ids(&st), [latest]);
    let kept_changelog = referenced(&st, &snapshot(&st, latest), false);
    let left = changelog_files(&st);
    assert!(left.is_subset(&kept_changelog), "{left:?}");
    assert!(r.deleted.iter().any(|f| f.contains("/bucket-0/changelog-")));
    assert_exactly_referenced(&st, &[(snapshot(&st, latest), false)]);

    // Decoupled: snapshot expiration drops base/delta lists but keeps the changelog lists and
    // files; changelog expiration removes them.
    let st = build();
    let decoupled = [
        ("snapshot.num-retained.min", "1"),
        ("snapshot.num-retained.max", "1"),
        ("changelog.num-retained.max", "3"),
    ];
    let r = expire(&st, &decoupled, NOW + HOUR);
    assert_eq!(r.changelogs_written.len() as i64, latest - 1);
    assert_eq!(changelog_files(&st), all);
    let mut keepers: Vec<(Snapshot, bool)> = vec![(snapshot(&st, latest), false)];
    keepers.extend(
        changelog_ids(&st)
            .into_iter()
            .map(|id| (changelog(&st, id), true)),
    );
    assert_exactly_referenced(&st, &keepers);
    // Everything is younger than an hour: only ids older than the newest 3 go.
    let r = expire_cl(&st, &decoupled, NOW + HOUR);
    assert_eq!(r.earliest_after, Some(latest - 2));
    assert!(r.deleted.iter().any(|f| f.contains("/bucket-0/changelog-")));
    assert_eq!(changelog_ids(&st), [latest - 2, latest - 1]);
    let mut keepers: Vec<(Snapshot, bool)> = vec![(snapshot(&st, latest), false)];
    keepers.extend(
        changelog_ids(&st)
            .into_iter()
            .map(|id| (changelog(&st, id), true)),
    );
    assert_exactly_referenced(&st, &keepers);
}

// ---------------------------------------------------------------------------------------------
// Dry runs and empty directories.

#[test]
fn a_dry_run_changes_nothing_and_reports_what_a_run_does() {
    let st = MemoryStorage::new();
    standard_table(&st, &[]);
    tag(&st, "t2", 2);
    let table = Table::load(&st, T).unwrap();
    for opts in [&DECOUPLED[..], &DECOUPLED[..2]] {
        let cfg = config(opts);
        let real_st = clone_of(&st);
        let before: Vec<(String, Vec<u8>)> = st
            .paths()
            .into_iter()
            .map(|p| (p.clone(), st.get(&p).unwrap().to_vec()))
            .collect();
        let dry = MaintenanceContext {
            dry_run: true,
            ..ctx(NOW + HOUR)
        };
        let planned = expire_snapshots(&st, &table, &cfg, &dry).unwrap();
        let after: Vec<(String, Vec<u8>)> = st
            .paths()
            .into_iter()
            .map(|p| (p.clone(), st.get(&p).unwrap().to_vec()))
            .collect();
        assert_eq!(before, after, "a dry run writes nothing");
        let done = expire_snapshots(&real_st, &table, &cfg, &ctx(NOW + HOUR)).unwrap();
        assert!(planned.dry_run && !done.dry_run);
        assert_eq!(planned.expired_snapshots, done.expired_snapshots);
        assert_eq!(planned.changelogs_written, done.changelogs_written);
        assert_eq!(planned.deleted, done.deleted);
        assert_eq!(planned.earliest_after, done.earliest_after);
        assert!(!planned.deleted.is_empty());
        if cfg.changelog_decoupled() {
            let planned = expire_changelogs(&real_st, &table, &cfg, &dry).unwrap();
            let done =
                expire_changelogs(&clone_of(&real_st), &table, &cfg, &ctx(NOW + HOUR)).unwrap();
            assert_eq!(planned.expired_changelogs, done.expired_changelogs);
            assert_eq!(planned.deleted, done.deleted);
            assert!(!planned.expired_changelogs.is_empty());
        }
    }
}

#[test]
fn emptied_directories_are_reported_when_asked() {
    // Commits write into the table directory; the compaction writes to an external path, so
    // expiring the commits empties every table-local bucket and partition directory.
    let st = MemoryStorage::new();
    append_table(&st, &[]);
    commit(&st, 1, NOW);
    commit(&st, 2, NOW + MINUTE);
    set_option(&st, "data-file.external-paths", "file:///ext/t");
    set_option(&st, "data-file.external-paths.strategy", "round-robin");
    compact(&st, NOW + 2 * MINUTE, 1);
    let s3 = snapshot(&st, 3);
    let external: Vec<String> = referenced(&st, &s3, false)
        .into_iter()
        .filter(|f| f.starts_with("file:/ext/t/"))
        .collect();
    assert_eq!(
        external.len(),
        3,
        "the compaction wrote to the external path"
    );
    let rows = rows_at(&st, &s3);
    let mut opts = vec![
        ("snapshot.num-retained.min", "1"),
        ("snapshot.num-retained.max", "1"),
    ];
    let without = expire(&clone_of(&st), &opts, NOW);
    assert!(without.empty_directories.is_empty());
    opts.push(("snapshot.clean-empty-directories", "true"));
    let r = expire(&st, &opts, NOW);
    assert_eq!(r.expired_snapshots, [1, 2]);
    assert_eq!(r.deleted, without.deleted);
    let dirs: Vec<String> = ["d0", "d1", "d2"]
        .iter()
        .flat_map(|d| [format!("{T}/dt={d}/bucket-0"), format!("{T}/dt={d}")])
        .collect();
    assert_eq!(r.empty_directories, dirs);
    assert_eq!(rows_at(&st, &snapshot(&st, 3)), rows);
    assert!(external.iter().all(|f| st.get(f).is_some()));

    // Expiring files that live on the external path deletes them there.
    commit(&st, 4, NOW + 3 * MINUTE);
    let mut o = CompactOptions::new(PlanContext::at(NOW + 4 * MINUTE, 3), [2; 16]);
    o.full = true;
    compact_table(&st, T, &o).unwrap();
    let latest = *snapshot_ids(&st).last().unwrap();
    let gone: Vec<String> = external
        .iter()
        .filter(|f| !referenced(&st, &snapshot(&st, latest), false).contains(*f))
        .cloned()
        .collect();
    assert!(!gone.is_empty());
    let r = expire(&st, &opts, NOW);
    assert!(gone
        .iter()
        .all(|f| r.deleted.contains(f) && st.get(f).is_none()));
    assert_eq!(rows_at(&st, &snapshot(&st, latest)).len(), 90);
}

// ---------------------------------------------------------------------------------------------
// Fault injection.

/// Every file and its bytes, except hints (advisory, and not written when their write fails).
fn state(st: &MemoryStorage) -> BTreeMap<String, Vec<u8>> {
    st.paths()
        .into_iter()
        .filter(|p| !p.ends_with("/EARLIEST") && !p.ends_with("/LATEST"))
        .map(|p| {
            let b = st.get(&p).unwrap().to_vec();
            (p, b)
        })
        .collect()
}

/// What must read the same whatever happens: (label, snapshot, rows).
fn checkpoints(
    st: &MemoryStorage,
    snapshots: &[i64],
    changelogs: &[i64],
) -> Vec<(String, Snapshot, Vec<String>)> {
    let mut out = Vec::new();
    for &id in snapshots {
        let s = snapshot(st, id);
        out.push((format!("snapshot {id}"), s.clone(), rows_at(st, &s)));
    }
    for &id in changelogs {
        let s = changelog(st, id);
        out.push((format!("changelog {id}"), s.clone(), rows_at(st, &s)));
    }
    if st.get(&format!("{T}/tag/tag-t2")).is_some() {
        let s = read_tag(st, "t2");
        out.push(("tag t2".into(), s.clone(), rows_at(st, &s)));
    }
    out
}

/// Runs `run` on a copy of `base` failing at every storage call in turn: whatever the failure,
/// every checkpoint still reads its rows, and a rerun ends in exactly the undisturbed state.
/// `changelog_rows`: rows every long-lived changelog present must read (when the run writes
/// them).
fn inject_everywhere<R>(
    base: &MemoryStorage,
    keep: &[(String, Snapshot, Vec<String>)],
    changelog_rows: &BTreeMap<i64, Vec<String>>,
    run: &dyn Fn(&dyn Storage) -> paimon_compact::Result<R>,
) -> usize {
    let clean = FaultyStorage::new(clone_of(base), None);
    run(&clean).unwrap();
    let calls = clean.calls.load(std::sync::atomic::Ordering::SeqCst);
    let expected = state(&clean.inner);
    assert_ne!(expected, state(base), "the run does something");
    let mut failed = 0;
    for k in 0..calls {
        let s = FaultyStorage::new(clone_of(base), Some(k));
        if run(&s).is_err() {
            failed += 1;
        }
        for (what, snap, rows) in keep {
            assert_eq!(
                &rows_at(&s.inner, snap),
                rows,
                "{what} after a failure at call {k}"
            );
        }
        for (id, rows) in changelog_rows {
            if s.inner
                .get(&format!("{T}/changelog/changelog-{id}"))
                .is_some()
            {
                let cl = changelog(&s.inner, *id);
                assert_eq!(
                    &rows_at(&s.inner, &cl),
                    rows,
                    "changelog {id} after call {k}"
                );
            }
        }
        run(&s.inner).unwrap();
        assert_eq!(
            state(&s.inner),
            expected,
            "rerun after a failure at call {k}"
        );
    }
    assert!(
        failed > calls / 2,
        "most injected failures surface: {failed} of {calls}"
    );
    calls
}

#[test]
fn a_failure_at_any_storage_call_leaves_only_orphans_and_a_rerun_finishes() {
    let none = BTreeMap::new();
    // Coupled, with a tag in the expired range.
    let st = MemoryStorage::new();
    standard_table(&st, &[]);
    tag(&st, "t2", 2);
    let table = Table::load(&st, T).unwrap();
    let coupled = config(&[
        ("snapshot.num-retained.min", "1"),
        ("snapshot.num-retained.max", "2"),
    ]);
    let keep = checkpoints(&st, &[6, 7], &[]);
    let calls = inject_everywhere(&st, &keep, &none, &|s| {
        expire_snapshots(s, &table, &coupled, &ctx(NOW + HOUR))
    });
    assert!(calls > 50, "{calls}");

    // Decoupled: snapshot expiration writing changelogs, then changelog expiration.
    let st = MemoryStorage::new();
    standard_table(&st, &[]);
    tag(&st, "t2", 2);
    let table = Table::load(&st, T).unwrap();
    let decoupled = config(&DECOUPLED);
    let keep = checkpoints(&st, &[6, 7], &[]);
    let rows: BTreeMap<i64, Vec<String>> = (1..=5)
        .map(|id| (id, rows_at(&st, &snapshot(&st, id))))
        .collect();
    inject_everywhere(&st, &keep, &rows, &|s| {
        expire_snapshots(s, &table, &decoupled, &ctx(NOW + HOUR))
    });
    expire_snapshots(&st, &table, &decoupled, &ctx(NOW + HOUR)).unwrap();
    commit(&st, 8, NOW + 8 * MINUTE);
    commit(&st, 9, NOW + 9 * MINUTE);
    expire_snapshots(&st, &table, &decoupled, &ctx(NOW + HOUR)).unwrap();
    assert_eq!(changelog_ids(&st), [1, 2, 3, 4, 5, 6, 7]);
    let keep = checkpoints(&st, &[8, 9], &[6, 7]);
    inject_everywhere(&st, &keep, &none, &|s| {
        expire_changelogs(s, &table, &decoupled, &ctx(NOW + HOUR))
    });
    let r = expire_changelogs(&st, &table, &decoupled, &ctx(NOW + HOUR)).unwrap();
    assert_eq!(r.expired_changelogs, [1, 2, 3, 4, 5]);
    assert_eq!(rows_at(&st, &read_tag(&st, "t2")), keep.last().unwrap().2);
}

#[test]
fn set_option_is_honoured_through_the_schema() {
    // ExpireConfig comes from the table's raw options (as the post-commit hook passes them).
    let st = MemoryStorage::new();
    standard_table(&st, &[("snapshot.num-retained.min", "1")]);
    set_option(&st, "snapshot.num-retained.max", "3");
    let table = Table::load(&st, T).unwrap();
    let cfg = ExpireConfig::from_options(&table.schema.options).unwrap();
    assert_eq!((cfg.retain_min, cfg.retain_max), (1, 3));
    let r = expire_snapshots(&st, &table, &cfg, &ctx(NOW)).unwrap();
    assert_eq!(r.expired_snapshots, [1, 2, 3, 4]);
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["earliest_after"], 5);
}

#[test]
fn deletion_vector_index_files_follow_the_snapshots_that_name_them() {
    let st = MemoryStorage::new();
    create_table(
        &st,
        T,
        &new_schema(
            vec![
                field(0, "k", "BIGINT NOT NULL").unwrap(),
                field(1, "v", "STRING").unwrap(),
            ],
            &[],
            &["k"],
            &[("bucket", "1"), ("deletion-vectors.enabled", "true")],
            NOW,
        ),
    )
    .unwrap();
    let mut w = TableWriter::new(&st, T, [8; 16]);
    for (c, n) in [(0i64, 40i64), (1, 20), (2, 10), (3, 5)] {
        let rows: Vec<_> = (0..n)
            .map(|i| {
                (
                    RowKind::Insert,
                    vec![Datum::BigInt(i), Datum::String(format!("c{c}"))],
                )
            })
            .collect();
        w.commit(&rows, NOW + c * MINUTE).unwrap();
        let o = CompactOptions::new(PlanContext::at(NOW + c * MINUTE + 1, 3), [1 + c as u8; 16]);
        compact_table(&st, T, &o).unwrap();
    }
    // Compactions 4, 6 and 8 each wrote a new deletion-vector index file; 5 and 7 (appends)
    // share their predecessor's index manifest.
    let index_of = |st: &MemoryStorage, id: i64| -> BTreeSet<String> {
        referenced(st, &snapshot(st, id), false)
            .into_iter()
            .filter(|f| f.contains("/index/"))
            .collect()
    };
    assert_eq!(snapshot_ids(&st), (1..=8).collect::<Vec<_>>());
    assert_eq!(
        snapshot(&st, 4).index_manifest,
        snapshot(&st, 5).index_manifest
    );
    let (i5, i6, i8) = (index_of(&st, 5), index_of(&st, 6), index_of(&st, 8));
    assert!(!i5.is_empty() && i5 != i6 && i6 != i8);
    tag(&st, "t5", 5);
    let rows = table_support::read_rows(&st, T);
    let opts = [
        ("snapshot.num-retained.min", "1"),
        ("snapshot.num-retained.max", "1"),
    ];
    let table = Table::load(&st, T).unwrap();
    let cfg = config(&opts);
    // A failure anywhere leaves a rerun to finish the same way.
    inject_everywhere(&st, &[], &BTreeMap::new(), &|s| {
        expire_snapshots(s, &table, &cfg, &ctx(NOW))
    });
    let r = expire(&st, &opts, NOW);
    assert_eq!(r.expired_snapshots, [1, 2, 3, 4, 5, 6, 7]);
    // The tag keeps snapshot 5's index file; snapshot 6's is gone.
    let left: BTreeSet<String> = st
        .paths()
        .into_iter()
        .filter(|p| p.contains("/index/"))
        .collect();
    assert_eq!(left, i5.union(&i8).cloned().collect());
    assert!(i6.iter().all(|f| r.deleted.contains(f)));
    assert_exactly_referenced(
        &st,
        &[(read_tag(&st, "t5"), false), (snapshot(&st, 8), false)],
    );
    assert_eq!(table_support::read_rows(&st, T), rows);
}
