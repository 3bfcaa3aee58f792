//! The table layer end to end on tables written by our own writer in Paimon's format:
//! planning, compaction of append tables (bucket = -1 and fixed buckets), metadata-only
//! upgrades of primary-key tables, blocked merges, conflicts, rebases, leases, and a failure
//! injected at every storage call of a whole compaction.

use crate::table_support;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use paimon_compact::plan::PlanContext;
use paimon_compact::storage::{MemoryStorage, Storage};
use paimon_compact::table::binary_row::Datum;
use paimon_compact::table::demo::{create_table, field, new_schema, RowKind, TableWriter};
use paimon_compact::table::lease::{self, LeaseRecord};
use paimon_compact::table::manifest::ManifestFileMeta;
use paimon_compact::table::manifest_merge::ManifestMergeKind;
use paimon_compact::table::scan::{read_manifest_list, scan, Table};
use paimon_compact::table::snapshot::{latest_snapshot_id, read_snapshot, CommitKind};
use paimon_compact::table::{compact_table, plan_table, CompactOptions, PlanRequest};
use paimon_compact::ErrorKind;
use table_support::{clone_of, read_rows, FaultyStorage, HookStorage};

const NOW: i64 = 1_750_000_000_000;

fn ctx() -> PlanContext {
    PlanContext::at(NOW, 3)
}

fn opts(seed: u8) -> CompactOptions<'static> {
    CompactOptions::new(ctx(), [seed; 16])
}

/// An append table with `bucket` and `commits` commits of 3 partitions x 10 rows.
fn append_table(st: &dyn Storage, path: &str, bucket: &str, commits: i64) {
    append_table_with(st, path, bucket, commits, &[]);
}

/// [`append_table`] with more table options.
fn append_table_with(
    st: &dyn Storage,
    path: &str,
    bucket: &str,
    commits: i64,
    extra: &[(&str, &str)],
) {
    let mut options = vec![("bucket", bucket), ("bucket-key", "id")];
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
    let schema = if bucket == "-1" {
        let mut s = schema;
        s.options.remove("bucket-key");
        s
    } else {
        schema
    };
    create_table(st, path, &schema).unwrap();
    append_commits(st, path, 0..commits);
}

/// Commits `commits` (numbers) of 3 partitions x 10 rows each to an append table.
fn append_commits(st: &dyn Storage, path: &str, commits: std::ops::Range<i64>) {
    let mut w = TableWriter::new(st, path, [9; 16]);
    for c in commits {
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
        w.commit(&rows, NOW + c).unwrap();
    }
}

/// A primary-key table with one bucket; `disjoint` commits never touch the same key.
fn pk_table(st: &dyn Storage, path: &str, extra: &[(&str, &str)], disjoint: bool) {
    let mut options = vec![("bucket", "1")];
    options.extend_from_slice(extra);
    create_table(
        st,
        path,
        &new_schema(
            vec![
                field(0, "k", "BIGINT NOT NULL").unwrap(),
                field(1, "v", "STRING").unwrap(),
            ],
            &[],
            &["k"],
            &options,
            NOW,
        ),
    )
    .unwrap();
    let mut w = TableWriter::new(st, path, [8; 16]);
    for c in 0..6i64 {
        let rows: Vec<_> = (0..20i64)
            .map(|i| {
                let k = if disjoint { c * 100 + i } else { i * 2 + c % 2 };
                let kind = if !disjoint && i % 7 == 6 {
                    RowKind::Delete
                } else {
                    RowKind::Insert
                };
                (kind, vec![Datum::BigInt(k), Datum::String(format!("c{c}"))])
            })
            .collect();
        w.commit(&rows, NOW + c).unwrap();
    }
}

/// Sets an option in the table's first schema file, after its files were written (as if the
/// table had always had it).
fn set_table_option(st: &MemoryStorage, path: &str, key: &str, value: &str) {
    let p = paimon_compact::table::path::TablePaths::new(path);
    let mut schema = paimon_compact::table::scan::Table::load(st, path)
        .unwrap()
        .schema;
    schema.options.insert(key.into(), value.into());
    st.put(&p.schema(0), schema.to_json());
}

fn file_set(st: &MemoryStorage) -> BTreeSet<String> {
    st.paths().into_iter().collect()
}

#[test]
fn unaware_bucket_append_table_is_compacted_per_partition() {
    let st = MemoryStorage::new();
    append_table(&st, "wh/db.db/t", "-1", 6);
    let rows = read_rows(&st, "wh/db.db/t");
    assert_eq!(rows.len(), 180);

    let plan = plan_table(&st, "wh/db.db/t", &PlanRequest::default()).unwrap();
    assert_eq!(plan.snapshot_id, Some(6));
    assert_eq!(plan.buckets.len(), 3, "{plan:#?}");
    assert_eq!(plan.summary.buckets_with_work, 3);
    assert!(plan
        .buckets
        .iter()
        .all(|b| b.files == 6 && b.files_removed == 6));
    let before = file_set(&st);
    assert_eq!(file_set(&st), before, "planning writes nothing");

    let report = compact_table(&st, "wh/db.db/t", &opts(1)).unwrap();
    assert_eq!(report.snapshot_after, Some(7));
    assert_eq!(report.totals.files_removed, 18);
    assert_eq!(report.totals.files_added, 3);
    assert_eq!(report.totals.rows_read, 180);
    assert_eq!(report.totals.rows_written, 180);
    let json = serde_json::to_string(&report).unwrap();
    assert!(json.contains("\"files_removed\":18"), "{json}");

    let p = paimon_compact::table::path::TablePaths::new("wh/db.db/t");
    let snap = read_snapshot(&st, &p, 7).unwrap();
    assert_eq!(snap.commit_kind, CommitKind::Compact);
    assert_eq!(snap.delta_record_count, Some(0));
    assert_eq!(snap.total_record_count, Some(180));
    assert_eq!(read_rows(&st, "wh/db.db/t"), rows);
    assert_eq!(scan(&st, "wh/db.db/t").unwrap().file_count(), 3);
    // Replaced files stay for older snapshots.
    assert!(before.is_subset(&file_set(&st)));
    // No lease objects left behind.
    assert!(st.list("wh/db.db/t/compaction-lease/").unwrap().is_empty());

    // Nothing left to do; a writer can append on top and it is read back.
    let again = compact_table(&st, "wh/db.db/t", &opts(2)).unwrap();
    assert_eq!(again.snapshot_after, None);
    let mut w = TableWriter::new(&st, "wh/db.db/t", [5; 16]);
    w.commit(
        &[(
            RowKind::Insert,
            vec![
                Datum::BigInt(-1),
                Datum::String("d0".into()),
                Datum::String("late".into()),
            ],
        )],
        NOW + 100,
    )
    .unwrap();
    assert_eq!(read_rows(&st, "wh/db.db/t").len(), 181);
}

#[test]
fn fixed_bucket_append_table_compacts_five_file_windows() {
    let st = MemoryStorage::new();
    append_table(&st, "t", "2", 6);
    let rows = read_rows(&st, "t");
    let plan = plan_table(&st, "t", &PlanRequest::default()).unwrap();
    assert_eq!(plan.buckets.len(), 6, "3 partitions x 2 buckets");
    for b in &plan.buckets {
        assert_eq!(b.files, 6);
        assert_eq!(b.files_removed, 5, "{}", b.reason_text);
    }
    let report = compact_table(&st, "t", &opts(1)).unwrap();
    assert_eq!(report.totals.files_removed, 30);
    assert_eq!(report.totals.files_added, 6);
    assert_eq!(read_rows(&st, "t"), rows);
    assert_eq!(scan(&st, "t").unwrap().file_count(), 12);

    // Two files per bucket are too few for a full compaction (Paimon wants at least 3).
    let mut full = opts(2);
    full.full = true;
    let report = compact_table(&st, "t", &full).unwrap();
    assert_eq!(report.snapshot_after, None, "{report:#?}");

    // On a fresh table, --full folds each bucket's six files into one.
    let st = MemoryStorage::new();
    append_table(&st, "t", "2", 6);
    let report = compact_table(&st, "t", &full).unwrap();
    assert_eq!(report.totals.files_removed, 36);
    assert_eq!(report.totals.files_added, 6);
    assert_eq!(read_rows(&st, "t"), rows);
}

#[test]
fn primary_key_upgrades_are_metadata_only_and_merges_need_the_rewriter() {
    // Disjoint keys and a tiny target size: full compaction only moves files up a level.
    let st = MemoryStorage::new();
    pk_table(&st, "pk", &[("target-file-size", "1 kb")], true);
    let rows = read_rows(&st, "pk");
    assert_eq!(rows.len(), 120);
    let mut full = opts(1);
    full.full = true;
    let plan = plan_table(
        &st,
        "pk",
        &PlanRequest {
            full: true,
            ..PlanRequest::default()
        },
    )
    .unwrap();
    assert_eq!(plan.summary.upgrades, 6, "{plan:#?}");
    assert_eq!(plan.summary.buckets_blocked, 0);
    let report = compact_table(&st, "pk", &full).unwrap();
    assert_eq!(report.totals.upgrades, 6);
    assert_eq!(report.buckets[0].levels_after[0].level, 5);
    assert_eq!(read_rows(&st, "pk"), rows);
    let state = scan(&st, "pk").unwrap();
    assert!(state
        .buckets
        .values()
        .flat_map(|b| &b.files)
        .all(|f| f.entry.file.level == 5 && f.entry.file.delete_row_count == Some(0)));

    // Overlapping keys with deletes are merged into one max-level run.
    let st = MemoryStorage::new();
    pk_table(&st, "pk2", &[], false);
    let rows = read_rows(&st, "pk2");
    let report = compact_table(&st, "pk2", &full).unwrap();
    assert_eq!(report.snapshot_after, Some(7), "{report:#?}");
    assert_eq!(report.totals.rewrites, 1);
    assert_eq!(report.totals.files_removed, 6);
    assert_eq!(read_rows(&st, "pk2"), rows);
    let state = scan(&st, "pk2").unwrap();
    let files: Vec<_> = state.buckets.values().flat_map(|b| &b.files).collect();
    assert!(files
        .iter()
        .all(|f| f.entry.file.level == 5 && f.entry.file.delete_row_count == Some(0)));
}

#[test]
fn racing_compactors_exactly_one_commits() {
    let st = MemoryStorage::new();
    append_table(&st, "t", "-1", 6);
    let rows = read_rows(&st, "t");
    let other = st.clone();
    // Job B starts; when it writes its first data file, job A runs to completion.
    let hook = HookStorage {
        inner: st.clone(),
        trigger: "/bucket-0/data-".into(),
        hook: Arc::new(Mutex::new(Some(Box::new(move || {
            let mut a = CompactOptions::new(PlanContext::at(NOW, 3), [1; 16]);
            a.lease_ttl_ms = None;
            compact_table(&other, "t", &a).unwrap();
        })))),
    };
    let mut b = opts(2);
    b.lease_ttl_ms = None;
    let before_b = file_set(&st);
    let e = compact_table(&hook, "t", &b).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Conflict), "{e}");
    // Said in words a user reads: the file, and the snapshot that took it (no Rust `Some(7)`).
    assert!(
        e.message.contains("is no longer live in snapshot 7") && !e.to_string().contains("Some("),
        "{e}"
    );
    let p = paimon_compact::table::path::TablePaths::new("t");
    assert_eq!(latest_snapshot_id(&st, &p).unwrap(), Some(7));
    assert_eq!(read_rows(&st, "t"), rows);
    // B left nothing: every file is A's or was there before.
    let a_snapshot = read_snapshot(&st, &p, 7).unwrap();
    assert_eq!(a_snapshot.commit_kind, CommitKind::Compact);
    let after = file_set(&st);
    let leftovers: Vec<_> = after
        .difference(&before_b)
        .filter(|f| !f.contains("compaction-lease"))
        .filter(|f| {
            // A's files are referenced by snapshot 7; count data files B might have left.
            f.ends_with(".parquet")
        })
        .collect();
    assert_eq!(leftovers.len(), 3, "only A's three outputs: {leftovers:?}");
}

/// A storage over `st` where another writer appends one row (`id`, partition `d1`, `v`) to
/// table `t` just before the first call whose path contains `trigger`.
fn commit_when(st: &MemoryStorage, trigger: &str, id: i64, v: &str) -> HookStorage {
    let (writer_st, v) = (st.clone(), v.to_string());
    HookStorage {
        inner: st.clone(),
        trigger: trigger.into(),
        hook: Arc::new(Mutex::new(Some(Box::new(move || {
            let mut w = TableWriter::new(&writer_st, "t", [id.unsigned_abs() as u8; 16]);
            let row = vec![
                Datum::BigInt(id),
                Datum::String("d1".into()),
                Datum::String(v),
            ];
            w.commit(&[(RowKind::Insert, row)], NOW + 50).unwrap();
        })))),
    }
}

#[test]
fn an_append_during_compaction_is_rebased_not_lost() {
    let st = MemoryStorage::new();
    append_table(&st, "t", "-1", 6);
    let hook = commit_when(&st, "/bucket-0/data-", -7, "during");
    let report = compact_table(&hook, "t", &opts(3)).unwrap();
    assert_eq!(report.snapshot_after, Some(8));
    assert_eq!(report.commit.as_ref().unwrap().rebased_over, vec![7]);
    let rows = read_rows(&st, "t");
    assert_eq!(rows.len(), 181);
    assert!(rows.iter().any(|r| r.contains("during")));
}

#[test]
fn losing_the_snapshot_race_backs_off_and_retries() {
    let st = MemoryStorage::new();
    append_table(&st, "t", "-1", 6);
    // Another writer commits snapshot 7 right before our create of snapshot 7.
    let hook = commit_when(&st, "snapshot/snapshot-7", -8, "raced");
    let waits = Mutex::new(Vec::new());
    let sleep = |ms: u64| waits.lock().unwrap().push(ms);
    let mut o = opts(3);
    o.sleep = Some(&sleep);
    let report = compact_table(&hook, "t", &o).unwrap();
    let commit = report.commit.as_ref().unwrap();
    assert_eq!(commit.snapshot_id, 8);
    assert_eq!(commit.attempts, 2);
    assert_eq!(commit.rebased_over, vec![7]);
    let waits = waits.into_inner().unwrap();
    assert_eq!(waits.len(), 1, "one back-off before the second attempt");
    assert!((16..=24).contains(&waits[0]), "20 ms ± 20%: {waits:?}");
    assert!(read_rows(&st, "t").iter().any(|r| r.contains("raced")));
}

#[test]
fn a_leased_partition_is_skipped() {
    let st = MemoryStorage::new();
    append_table(&st, "t", "-1", 6);
    let state = scan(&st, "t").unwrap();
    let (partition, _) = state.buckets.keys().next().unwrap().clone();
    lease::acquire(
        &st,
        &state.table.paths,
        &lease::lease_key(partition.as_bytes()),
        "dt=d0",
        LeaseRecord {
            owner: "someone".into(),
            job_id: "other".into(),
            acquired_ms: NOW,
            expires_ms: NOW + 60_000,
        },
        NOW,
    )
    .unwrap()
    .unwrap();
    let report = compact_table(&st, "t", &opts(1)).unwrap();
    assert_eq!(report.leases_held_elsewhere.len(), 1);
    assert_eq!(report.totals.files_removed, 12, "two of three partitions");
    assert!(report
        .skipped
        .iter()
        .any(|s| s.reason.contains("leased by 'someone'")));
}

#[test]
fn corrupt_metadata_is_a_typed_error_naming_the_file() {
    let st = MemoryStorage::new();
    append_table(&st, "t", "-1", 2);
    let p = paimon_compact::table::path::TablePaths::new("t");
    let snap = read_snapshot(&st, &p, 2).unwrap();
    let list = p.manifest(&snap.delta_manifest_list, "t").unwrap();
    let bytes = st.get(&list).unwrap();
    st.put(&list, bytes[..bytes.len() / 2].to_vec());
    let e = plan_table(&st, "t", &PlanRequest::default()).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::CorruptInput { .. }), "{e}");
    assert!(e.message.contains(&snap.delta_manifest_list), "{e}");

    let st = MemoryStorage::new();
    append_table(&st, "t", "-1", 1);
    st.put(&p.snapshot(1), b"{\"version\": 3, \"id\":".to_vec());
    let e = plan_table(&st, "t", &PlanRequest::default()).unwrap_err();
    assert!(e.message.contains("snapshot-1"), "{e}");
}

/// Fails the k-th storage call of a whole compaction, for every k: each run ends in a typed
/// error or a valid commit, the rows never change, and a failed run leaves no file behind.
#[test]
fn a_failure_at_any_storage_call_leaves_the_table_unchanged() {
    a_failure_at_any_storage_call_leaves_unchanged(&[]);
}

#[test]
fn a_failure_at_any_storage_call_while_merging_manifests_leaves_the_table_unchanged() {
    // Six small manifests: merged at the commit with a minimum count of two.
    a_failure_at_any_storage_call_leaves_unchanged(&[("manifest.merge-min-count", "2")]);
}

fn a_failure_at_any_storage_call_leaves_unchanged(extra: &[(&str, &str)]) {
    let base = MemoryStorage::new();
    append_table_with(&base, "t", "-1", 6, extra);
    let rows = read_rows(&base, "t");
    let probe = FaultyStorage::new(clone_of(&base), None);
    compact_table(&probe, "t", &opts(1)).unwrap();
    let total = probe.calls.load(std::sync::atomic::Ordering::SeqCst);
    assert!(total > 50, "{total} calls");
    let initial: BTreeSet<String> = base.paths().into_iter().collect();
    let (mut ok, mut failed) = (0, 0);
    for k in 0..total {
        let mem = clone_of(&base);
        let st = FaultyStorage::new(mem.clone(), Some(k));
        match compact_table(&st, "t", &opts(1)) {
            Ok(r) => {
                ok += 1;
                assert!(r.snapshot_after.is_some(), "k={k}");
                let merged = r.commit.as_ref().and_then(|c| c.manifest_merge.as_ref());
                assert_eq!(merged.is_some(), !extra.is_empty(), "k={k}");
            }
            Err(e) => {
                failed += 1;
                assert!(
                    matches!(e.kind, ErrorKind::Io { .. }),
                    "k={k}: unexpected error kind: {e}"
                );
                let now: BTreeSet<String> = mem.paths().into_iter().collect();
                assert_eq!(
                    now.difference(&initial).collect::<Vec<_>>(),
                    Vec::<&String>::new(),
                    "k={k}: a failed run left files ({e})"
                );
            }
        }
        assert_eq!(read_rows(&mem, "t"), rows, "k={k}");
    }
    assert!(ok > 0 && failed > 0, "ok {ok}, failed {failed}");
}

/// Adds deletion vectors (rows 0 and 5 of the first two files of each partition) to an
/// append table, as a writer with deletion vectors would.
fn add_deletion_vectors(st: &MemoryStorage, path: &str) {
    use paimon_compact::table::commit::{commit, CommitDelta, CommitSettings, WrittenFiles};
    use paimon_compact::table::ids::IdGen;
    use paimon_compact::table::index::{
        encode_deletion_vectors, IndexManifestEntry, DELETION_VECTORS_INDEX,
    };
    use paimon_compact::table::manifest::FileKind;
    let state = scan(st, path).unwrap();
    let mut delta = CommitDelta::default();
    for (i, b) in state.buckets.values().enumerate() {
        let mut vectors = std::collections::BTreeMap::new();
        for f in b.files.iter().take(2) {
            vectors.insert(
                f.entry.file.file_name.clone(),
                roaring::RoaringBitmap::from_iter([0u32, 5]),
            );
        }
        let (bytes, ranges) = encode_deletion_vectors(&vectors).unwrap();
        let name = format!("index-dv-{i}-0");
        st.put(
            &state.table.paths.index_file(&name, "t").unwrap(),
            bytes.clone(),
        );
        delta.index.push(IndexManifestEntry {
            kind: FileKind::Add,
            partition: b.partition.clone(),
            bucket: b.bucket,
            index_type: DELETION_VECTORS_INDEX.into(),
            file_name: name,
            file_size: bytes.len() as i64,
            row_count: ranges.len() as i64,
            dv_ranges: Some(ranges),
            external_path: None,
            global_index: None,
        });
    }
    commit(
        st,
        &state.table,
        state.snapshot_id(),
        &delta,
        &CommitSettings {
            kind: CommitKind::Append,
            commit_user: "test".into(),
            now_ms: NOW,
            max_retries: 0,
            jitter_seed: 0,
            merge_manifests: true,
            commit_identifier: i64::MAX,
        },
        &mut IdGen::new([3; 16]),
        &mut WrittenFiles::default(),
    )
    .unwrap();
}

#[test]
fn deletion_vectors_are_applied_and_dropped_with_their_files() {
    let st = MemoryStorage::new();
    append_table(&st, "t", "-1", 6);
    let all = read_rows(&st, "t");
    // The schema says DVs are on (the writer above wrote none yet).
    set_table_option(&st, "t", "deletion-vectors.enabled", "true");
    add_deletion_vectors(&st, "t");
    let visible = read_rows(&st, "t");
    assert_eq!(
        visible.len(),
        all.len() - 12,
        "2 rows x 2 files x 3 partitions"
    );
    let report = compact_table(&st, "t", &opts(1)).unwrap();
    // Files with vectors are packed by index file and always compacted; the other four of a
    // partition stay below compaction.min.file-num.
    assert_eq!(report.totals.files_removed, 6, "{report:#?}");
    assert_eq!(
        report.buckets.iter().map(|b| b.rows_deleted).sum::<u64>(),
        12
    );
    assert_eq!(read_rows(&st, "t"), visible);
    let state = scan(&st, "t").unwrap();
    assert!(
        state.index_entries.is_empty(),
        "every vector went with its file"
    );
    assert!(state
        .buckets
        .values()
        .flat_map(|b| &b.files)
        .all(|f| f.deletion_vector.is_none()));
}

/// The same fault injection over a table with deletion vectors (index files rewritten) and a
/// primary-key table (upgrades).
#[test]
fn a_failure_at_any_call_with_deletion_vectors_or_upgrades_leaves_the_table_unchanged() {
    let dv = MemoryStorage::new();
    append_table(&dv, "t", "-1", 6);
    set_table_option(&dv, "t", "deletion-vectors.enabled", "true");
    add_deletion_vectors(&dv, "t");
    let pk = MemoryStorage::new();
    pk_table(&pk, "t", &[("target-file-size", "1 kb")], true);
    for (base, full) in [(dv, false), (pk, true)] {
        let rows = read_rows(&base, "t");
        let mut o = opts(1);
        o.full = full;
        let probe = FaultyStorage::new(clone_of(&base), None);
        compact_table(&probe, "t", &o).unwrap();
        let total = probe.calls.load(std::sync::atomic::Ordering::SeqCst);
        let initial: BTreeSet<String> = base.paths().into_iter().collect();
        for k in 0..total {
            let mem = clone_of(&base);
            let st = FaultyStorage::new(mem.clone(), Some(k));
            if let Err(e) = compact_table(&st, "t", &o) {
                assert!(matches!(e.kind, ErrorKind::Io { .. }), "k={k}: {e}");
                let now: BTreeSet<String> = mem.paths().into_iter().collect();
                assert!(now == initial, "k={k}: a failed run left files ({e})");
            }
            assert_eq!(read_rows(&mem, "t"), rows, "k={k}");
        }
    }
}

/// New append files carry value statistics readers can trust: every value of a listed column
/// lies within its bounds, null counts are exact, and a `none` column is left out.
#[test]
fn compacted_append_files_carry_exact_value_statistics() {
    let st = MemoryStorage::new();
    append_table(&st, "t", "-1", 6);
    // `v` opts out of statistics; `dt` and `id` follow the default truncate(16).
    set_table_option(&st, "t", "fields.v.stats-mode", "none");
    let report = compact_table(&st, "t", &opts(1)).unwrap();
    assert!(report.snapshot_after.is_some());
    let state = scan(&st, "t").unwrap();
    let table = &state.table;
    for b in state.buckets.values() {
        for l in &b.files {
            let f = &l.entry.file;
            let cols = f.value_stats_cols.clone().expect("listed columns");
            assert_eq!(
                cols,
                vec!["id".to_string(), "dt".to_string()],
                "{}",
                f.file_name
            );
            let types: Vec<_> = cols
                .iter()
                .map(|c| {
                    table
                        .schema
                        .fields
                        .iter()
                        .find(|x| &x.name == c)
                        .unwrap()
                        .data_type
                        .clone()
                })
                .collect();
            let min = f.value_stats.min_values.decode(&types, "t", "min").unwrap();
            let max = f.value_stats.max_values.decode(&types, "t", "max").unwrap();
            // Partition dK holds ids c * 100 + i for commits c in 0..6 and i in 0..30, i % 3 == K.
            let k: i64 = b.partition_path.trim_start_matches("dt=d").parse().unwrap();
            assert_eq!(
                (&min[0], &max[0]),
                (&Datum::BigInt(k), &Datum::BigInt(527 + k))
            );
            assert_eq!(
                f.value_stats.null_counts.as_ref().unwrap(),
                &vec![Some(0), Some(0)]
            );
            // The partition column holds one value per partition: its bounds are that value.
            let dt = b.partition_path.trim_start_matches("dt=").to_string();
            assert_eq!(min[1], Datum::String(dt.clone()));
            assert_eq!(max[1], Datum::String(dt));
        }
    }
}

/// The manifests of the latest snapshot's base list.
fn base_manifests(st: &dyn Storage, path: &str) -> Vec<ManifestFileMeta> {
    let table = Table::load(st, path).unwrap();
    let id = latest_snapshot_id(st, &table.paths).unwrap().unwrap();
    let snap = read_snapshot(st, &table.paths, id).unwrap();
    read_manifest_list(st, &table.paths, &snap.base_manifest_list, "test").unwrap()
}

#[test]
fn thirty_small_manifests_are_merged_into_one_by_the_compaction_commit() {
    let st = MemoryStorage::new();
    append_table(&st, "t", "-1", 35);
    let rows = read_rows(&st, "t");
    let before = base_manifests(&st, "t").len();
    assert_eq!(
        before, 34,
        "34 commits in the base list, the 35th is the delta"
    );
    let files_before = file_set(&st);
    let r = compact_table(&st, "t", &opts(3)).unwrap();
    let m = r.commit.as_ref().unwrap().manifest_merge.clone().unwrap();
    assert_eq!(m.kind, ManifestMergeKind::Minor);
    assert_eq!((m.manifests_before, m.manifests_merged), (35, 35));
    assert_eq!((m.manifests_after, m.manifests_written), (1, 1));
    let after = base_manifests(&st, "t");
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].num_added_files, 35 * 3);
    assert_eq!(after[0].num_deleted_files, 0);
    assert_eq!(read_rows(&st, "t"), rows);
    // The replaced manifests stay: older snapshots still list them.
    assert!(files_before.is_subset(&file_set(&st)));
    // The next compaction leaves a short list alone.
    append_commits(&st, "t", 35..40);
    let r = compact_table(&st, "t", &opts(4)).unwrap();
    assert!(r.commit.as_ref().unwrap().manifest_merge.is_none());
    assert_eq!(base_manifests(&st, "t").len(), 1 + 1 + 5);
}

#[test]
fn full_manifest_compaction_cancels_the_deletes_of_earlier_compactions() {
    let st = MemoryStorage::new();
    append_table_with(
        &st,
        "t",
        "-1",
        6,
        &[("manifest.full-compaction-threshold-size", "1 b")],
    );
    compact_table(&st, "t", &opts(5)).unwrap();
    // The first compaction's delta (DELETE of 18 files, ADD of 3) is now in the base list.
    append_commits(&st, "t", 6..12);
    let rows = read_rows(&st, "t");
    let r = compact_table(&st, "t", &opts(6)).unwrap();
    let m = r.commit.as_ref().unwrap().manifest_merge.clone().unwrap();
    assert_eq!(m.kind, ManifestMergeKind::Full);
    assert_eq!(
        m.manifests_before, 8,
        "the first merge's 1, its delta, and 6 new"
    );
    assert_eq!(m.entries_cancelled, 36, "18 ADDs and their 18 DELETEs");
    let after = base_manifests(&st, "t");
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].num_deleted_files, 0);
    assert_eq!(after[0].num_added_files, 3 + 18);
    assert_eq!(read_rows(&st, "t"), rows);
}

#[test]
fn manifest_options_are_checked() {
    let st = MemoryStorage::new();
    append_table_with(&st, "t", "-1", 0, &[("manifest.merge-min-count", "0")]);
    let e = compact_table(&st, "t", &opts(7)).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::InvalidOption { .. }), "{e}");
    assert!(e.to_string().contains("manifest.merge-min-count"), "{e}");
}

#[test]
fn a_snapshot_id_at_the_largest_value_is_a_typed_error_not_a_wrapped_id() {
    let st = MemoryStorage::new();
    append_table(&st, "t", "-1", 6);
    // Move the latest snapshot to id i64::MAX (as a hostile or corrupt table could have it).
    let latest = latest_snapshot_id(&st, &paimon_compact::table::path::TablePaths::new("t"))
        .unwrap()
        .unwrap();
    let mut snap = read_snapshot(
        &st,
        &paimon_compact::table::path::TablePaths::new("t"),
        latest,
    )
    .unwrap();
    snap.id = i64::MAX;
    st.put(&format!("t/snapshot/snapshot-{}", i64::MAX), snap.to_json());
    st.put("t/snapshot/LATEST", i64::MAX.to_string().into_bytes());
    let before = file_set(&st);
    let e = compact_table(&st, "t", &opts(1)).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::CorruptInput { .. }), "{e}");
    assert!(e.message.contains("largest possible"), "{e}");
    assert_eq!(file_set(&st), before, "nothing is left behind");
}
