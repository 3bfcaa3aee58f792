//! The merge rewriter plugged into the table layer: primary-key tables written by the demo
//! writer (overlapping keys, updates, deletes, several partitions and buckets) are compacted
//! by `compact_table` with its primary-key merge; the rows every reader sees stay the same,
//! and the committed files hold the LSM invariants (one sorted run per level, exact manifest
//! metadata, no retracts after a full compaction).
#![cfg(feature = "rewrite")]

use crate::table_support;

use std::collections::{BTreeMap, BTreeSet};

use paimon_compact::meta::SortedRun;
use paimon_compact::plan::PlanContext;
use paimon_compact::storage::MemoryStorage;
use paimon_compact::table::binary_row::Datum;
use paimon_compact::table::demo::{create_table, field, new_schema, RowKind, TableWriter};
use paimon_compact::table::scan::{planner_meta, scan};
use paimon_compact::table::{compact_table, CompactOptions};
use table_support::{clone_of, read_changelog, read_rows, read_rows_without_merge, FaultyStorage};

const NOW: i64 = 1_760_000_000_000;

fn pk_table(st: &MemoryStorage, path: &str, options: &[(&str, &str)], commits: i64) {
    let schema = new_schema(
        vec![
            field(0, "k", "BIGINT NOT NULL").unwrap(),
            field(1, "dt", "STRING NOT NULL").unwrap(),
            field(2, "v", "STRING").unwrap(),
            field(3, "n", "BIGINT").unwrap(),
        ],
        &["dt"],
        &["k", "dt"],
        options,
        NOW,
    );
    create_table(st, path, &schema).unwrap();
    let mut w = TableWriter::new(st, path, [3; 16]);
    for c in 0..commits {
        let rows: Vec<(RowKind, Vec<Datum>)> = (0..60)
            .map(|i| {
                let k = (i * 7 + c * 13) % 90;
                let kind = match (i + c) % 10 {
                    0 => RowKind::Delete,
                    1..=3 => RowKind::UpdateAfter,
                    _ => RowKind::Insert,
                };
                (
                    kind,
                    vec![
                        Datum::BigInt(k),
                        Datum::String(format!("2025-01-0{}", k % 2 + 1)),
                        Datum::String(format!("c{c}-{i}")),
                        if i % 4 == 0 {
                            Datum::Null
                        } else {
                            Datum::BigInt(c * 100 + i)
                        },
                    ],
                )
            })
            .collect();
        w.commit(&rows, NOW + c).unwrap();
    }
}

fn opts(full: bool, job: u8) -> CompactOptions<'static> {
    let mut o = CompactOptions::new(PlanContext::at(NOW + 1000, 3), [job; 16]);
    o.full = full;
    o
}

/// Every level >= 1 of every bucket is one sorted run, and each file's manifest record
/// agrees with its rows.
fn check_lsm(st: &MemoryStorage, path: &str) {
    let state = scan(st, path).unwrap();
    for b in state.buckets.values() {
        let mut levels: BTreeMap<i32, Vec<_>> = BTreeMap::new();
        for l in &b.files {
            let m = planner_meta(&state.table, l).unwrap();
            levels
                .entry(l.entry.file.level)
                .or_default()
                .push(std::sync::Arc::new(m));
        }
        for (level, files) in levels {
            if level > 0 {
                SortedRun::from_unsorted(files).expect("one sorted run per level");
            }
        }
    }
}

#[test]
fn full_compaction_of_primary_key_tables_keeps_every_row() {
    for options in [
        vec![("bucket", "2")],
        vec![("bucket", "1"), ("target-file-size", "2 kb")],
        vec![("bucket", "1"), ("changelog-producer", "full-compaction")],
        vec![
            ("bucket", "2"),
            ("merge-engine", "partial-update"),
            ("ignore-delete", "true"),
        ],
    ] {
        let st = MemoryStorage::new();
        pk_table(&st, "t", &options, 6);
        let before = read_rows(&st, "t");
        let report = compact_table(&st, "t", &opts(true, 9)).unwrap();
        assert!(report.snapshot_after.is_some(), "{options:?}: {report:#?}");
        assert!(
            report.skipped.is_empty(),
            "{options:?}: {:?}",
            report.skipped
        );
        assert!(report.totals.rewrites > 0);
        let state = scan(&st, "t").unwrap();
        for l in state.buckets.values().flat_map(|b| &b.files) {
            let f = &l.entry.file;
            assert_eq!(
                f.level, 5,
                "{options:?}: full compaction goes to the max level"
            );
            assert_eq!(
                f.delete_row_count,
                Some(0),
                "deletes are dropped at the max level"
            );
            assert_eq!(f.file_source, Some(1));
        }
        check_lsm(&st, "t");
        if options.iter().any(|(k, _)| *k == "merge-engine") {
            // partial-update merges values, which the newest-record reader does not model;
            // its semantics are checked against the reference model in merge_properties.
        } else {
            assert_eq!(read_rows(&st, "t"), before, "{options:?}");
        }
        if options.contains(&("changelog-producer", "full-compaction")) {
            let snap = state.snapshot.as_ref().unwrap();
            assert!(
                snap.changelog_manifest_list.is_some(),
                "a full-compaction changelog is committed"
            );
        }
        // A second, automatic compaction after more writes keeps the rows too.
        let mut w = TableWriter::new(&st, "t", [4; 16]);
        let more: Vec<(RowKind, Vec<Datum>)> = (0..20)
            .map(|k| {
                (
                    if k % 5 == 0 {
                        RowKind::Delete
                    } else {
                        RowKind::Insert
                    },
                    vec![
                        Datum::BigInt(k * 3),
                        Datum::String(format!("2025-01-0{}", (k * 3) % 2 + 1)),
                        Datum::String(format!("late-{k}")),
                        Datum::BigInt(k),
                    ],
                )
            })
            .collect();
        w.commit(&more, NOW + 100).unwrap();
        if !options.iter().any(|(k, _)| *k == "merge-engine") {
            let before = read_rows(&st, "t");
            let report = compact_table(&st, "t", &opts(true, 10)).unwrap();
            assert!(report.skipped.is_empty(), "{:?}", report.skipped);
            assert_eq!(read_rows(&st, "t"), before, "{options:?} second round");
            check_lsm(&st, "t");
        }
    }
}

/// A later round of writes over the table's keys: updates, deletes and new keys.
fn write_round(st: &MemoryStorage, path: &str, round: i64, deletes: bool) {
    let mut w = TableWriter::new(st, path, [round as u8 + 20; 16]);
    for c in 0..2 {
        let rows: Vec<(RowKind, Vec<Datum>)> = (0..25)
            .map(|i| {
                let k = (i * 11 + round * 5 + c * 3) % 120;
                let kind = if deletes && i % 6 == 0 {
                    RowKind::Delete
                } else {
                    RowKind::Insert
                };
                (
                    kind,
                    vec![
                        Datum::BigInt(k),
                        Datum::String(format!("2025-01-0{}", k % 2 + 1)),
                        Datum::String(format!("r{round}-{c}-{i}")),
                        Datum::BigInt(round * 1000 + i),
                    ],
                )
            })
            .collect();
        w.commit(&rows, NOW + round * 10 + c).unwrap();
    }
}

/// An independent copy of the storage (a `MemoryStorage` clone shares its objects).
fn paths_of(st: &MemoryStorage) -> BTreeSet<String> {
    st.paths().into_iter().collect()
}

/// `k|dt` of a row line (`k|dt|v|n`).
fn key_of(line: &str) -> String {
    line.splitn(3, '|').take(2).collect::<Vec<_>>().join("|")
}

#[test]
fn lookup_with_deletion_vectors_marks_superseded_rows_instead_of_rewriting() {
    let st = MemoryStorage::new();
    pk_table(
        &st,
        "t",
        &[("bucket", "1"), ("deletion-vectors.enabled", "true")],
        4,
    );
    // Many more keys, so that the max level outweighs later level-0 files and the size-ratio
    // rule leaves it alone.
    let mut w = TableWriter::new(&st, "t", [30; 16]);
    let wide: Vec<(RowKind, Vec<Datum>)> = (1000..5000i64)
        .map(|k| {
            (
                RowKind::Insert,
                vec![
                    Datum::BigInt(k),
                    Datum::String(format!("2025-01-0{}", k % 2 + 1)),
                    Datum::String(format!("wide-{k}-{}", k * 7919 % 10007)),
                    Datum::BigInt(k),
                ],
            )
        })
        .collect();
    w.commit(&wide, NOW + 5).unwrap();
    // Round 1: everything is level 0; the automatic pick takes it to the max level.
    let expected = read_rows(&st, "t");
    let r1 = compact_table(&st, "t", &opts(false, 1)).unwrap();
    assert!(r1.snapshot_after.is_some(), "{r1:#?}");
    let (visible, level0) = read_rows_without_merge(&st, "t");
    assert_eq!(level0, 0);
    assert_eq!(visible, expected);

    // Round 2: new level-0 files over the same keys. Radical force-up-level-0 moves them below
    // the max level, and the older copies of their keys there are marked deleted.
    write_round(&st, "t", 1, true);
    let expected = read_rows(&st, "t");
    let base = clone_of(&st);
    let r2 = compact_table(&st, "t", &opts(false, 2)).unwrap();
    assert!(r2.snapshot_after.is_some(), "{r2:#?}");
    assert!(r2.skipped.is_empty(), "{:?}", r2.skipped);
    let marks: u64 = r2.buckets.iter().map(|b| b.deletion_vector_marks).sum();
    assert!(marks > 0, "lookups marked older rows: {r2:#?}");
    assert!(
        r2.buckets
            .iter()
            .all(|b| b.levels_after.iter().any(|l| l.level == 5)),
        "the max-level files stay (marked, not rewritten): {r2:#?}"
    );
    let (visible, level0) = read_rows_without_merge(&st, "t");
    assert_eq!(level0, 0);
    assert_eq!(
        visible, expected,
        "the deletion-vector reader sees the newest rows"
    );
    assert_eq!(read_rows(&st, "t"), expected);
    check_lsm(&st, "t");
    let after_round2 = clone_of(&st);

    // Round 3: one small level-0 file of inserts only (smaller than level 4, so the size ratio
    // stops there). It moves up
    // without a rewrite (the lookup only marks the older copies of its keys).
    let mut w = TableWriter::new(&st, "t", [31; 16]);
    let updates: Vec<(RowKind, Vec<Datum>)> = (0..6i64)
        .map(|i| {
            let k = i * 97 % 4000 + 1000;
            (
                RowKind::Insert,
                vec![
                    Datum::BigInt(k),
                    Datum::String(format!("2025-01-0{}", k % 2 + 1)),
                    Datum::String(format!("round3-{i}")),
                    Datum::BigInt(-i),
                ],
            )
        })
        .collect();
    w.commit(&updates, NOW + 50).unwrap();
    let expected3 = read_rows(&st, "t");
    let r3 = compact_table(&st, "t", &opts(false, 3)).unwrap();
    assert!(r3.skipped.is_empty(), "{:?}", r3.skipped);
    let b3: Vec<_> = r3.buckets.iter().filter(|b| b.upgrades > 0).collect();
    assert!(!b3.is_empty(), "{r3:#?}");
    assert!(
        b3.iter()
            .all(|b| b.rewrites == 0 && b.deletion_vector_marks > 0),
        "{r3:#?}"
    );
    let (visible, level0) = read_rows_without_merge(&st, "t");
    assert_eq!(level0, 0);
    assert_eq!(visible, expected3);
    check_lsm(&st, "t");
    drop(after_round2);

    // A failure at any storage call of round 2 leaves the table as it was, with no stray file.
    let o = opts(false, 2);
    let probe = FaultyStorage::new(clone_of(&base), None);
    compact_table(&probe, "t", &o).unwrap();
    let total = probe.calls.load(std::sync::atomic::Ordering::SeqCst);
    let initial = paths_of(&base);
    for k in 0..total {
        let mem = clone_of(&base);
        let faulty = FaultyStorage::new(mem.clone(), Some(k));
        match compact_table(&faulty, "t", &o) {
            Err(e) => {
                assert_eq!(
                    paths_of(&mem),
                    initial,
                    "k={k}: a failed run left files ({e})"
                );
                assert_eq!(read_rows(&mem, "t"), expected, "k={k}");
            }
            Ok(_) => {
                assert_eq!(read_rows_without_merge(&mem, "t").0, expected, "k={k}");
            }
        }
    }
}

#[test]
fn lookup_changelog_describes_each_change_of_a_key() {
    let st = MemoryStorage::new();
    pk_table(
        &st,
        "t",
        &[("bucket", "1"), ("changelog-producer", "lookup")],
        3,
    );
    let before_first = paths_of(&st);
    let first = read_rows(&st, "t");
    compact_table(&st, "t", &opts(false, 1)).unwrap();
    // Nothing was visible to compaction before: every visible row is an insert.
    let new: Vec<String> = paths_of(&st)
        .difference(&before_first)
        .filter(|p| p.contains("/changelog-"))
        .cloned()
        .collect();
    assert!(!new.is_empty());
    let expected: Vec<String> = first.iter().map(|l| format!("+I:{l}")).collect();
    assert_eq!(read_changelog(&st, "t", &new), expected);

    write_round(&st, "t", 1, true);
    let after = read_rows(&st, "t");
    let before_second = paths_of(&st);
    let report = compact_table(&st, "t", &opts(false, 2)).unwrap();
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert!(
        report
            .buckets
            .iter()
            .map(|b| b.changelog_files)
            .sum::<usize>()
            > 0
    );
    let snapshot = scan(&st, "t").unwrap().snapshot.unwrap();
    assert!(snapshot.changelog_manifest_list.is_some());
    let new: Vec<String> = paths_of(&st)
        .difference(&before_second)
        .filter(|p| p.contains("/changelog-"))
        .cloned()
        .collect();
    // The changelog moves a reader from the old visible rows to the new ones.
    let old: BTreeMap<String, &String> = first.iter().map(|l| (key_of(l), l)).collect();
    let now: BTreeMap<String, &String> = after.iter().map(|l| (key_of(l), l)).collect();
    let mut touched = BTreeSet::new();
    for i in 0..25 {
        for c in 0..2 {
            let k = (i * 11 + 5 + c * 3) % 120;
            touched.insert(format!("{k}|2025-01-0{}", k % 2 + 1));
        }
    }
    let mut expected = Vec::new();
    for key in &touched {
        match (old.get(key), now.get(key)) {
            (None, Some(n)) => expected.push(format!("+I:{n}")),
            (Some(o), None) => expected.push(format!("-D:{o}")),
            (Some(o), Some(n)) => {
                expected.push(format!("-U:{o}"));
                expected.push(format!("+U:{n}"));
            }
            (None, None) => {}
        }
    }
    expected.sort();
    assert_eq!(read_changelog(&st, "t", &new), expected);
    assert_eq!(read_rows(&st, "t"), after);
    check_lsm(&st, "t");
}

#[test]
fn first_row_keeps_the_first_row_of_each_key_across_rounds() {
    let st = MemoryStorage::new();
    let schema = new_schema(
        vec![
            field(0, "k", "BIGINT NOT NULL").unwrap(),
            field(1, "dt", "STRING NOT NULL").unwrap(),
            field(2, "v", "STRING").unwrap(),
            field(3, "n", "BIGINT").unwrap(),
        ],
        &["dt"],
        &["k", "dt"],
        &[("bucket", "2"), ("merge-engine", "first-row")],
        NOW,
    );
    create_table(&st, "t", &schema).unwrap();
    let mut first: BTreeMap<String, String> = BTreeMap::new();
    for round in 0..3i64 {
        let mut w = TableWriter::new(&st, "t", [round as u8 + 40; 16]);
        for c in 0..3i64 {
            let rows: Vec<(RowKind, Vec<Datum>)> = (0..30)
                .map(|i| {
                    let k = (i * 7 + round * 17 + c * 5) % 80;
                    let dt = format!("2025-01-0{}", k % 2 + 1);
                    let v = format!("r{round}-{c}-{i}");
                    first
                        .entry(format!("{k}|{dt}"))
                        .or_insert_with(|| format!("{k}|{dt}|{v}|{i}"));
                    (
                        RowKind::Insert,
                        vec![
                            Datum::BigInt(k),
                            Datum::String(dt),
                            Datum::String(v),
                            Datum::BigInt(i),
                        ],
                    )
                })
                .collect();
            w.commit(&rows, NOW + round * 10 + c).unwrap();
        }
        let report = compact_table(&st, "t", &opts(false, round as u8 + 1)).unwrap();
        assert!(report.skipped.is_empty(), "{:?}", report.skipped);
        let (visible, level0) = read_rows_without_merge(&st, "t");
        assert_eq!(level0, 0, "round {round}");
        let mut expected: Vec<String> = first.values().cloned().collect();
        expected.sort();
        assert_eq!(visible, expected, "round {round}");
        check_lsm(&st, "t");
    }
}

#[test]
fn files_of_different_schema_versions_are_merged_into_the_latest() {
    let st = MemoryStorage::new();
    pk_table(&st, "t", &[("bucket", "1")], 3);
    // A second schema version (as after ALTER TABLE), and files written under it.
    let mut schema = paimon_compact::table::scan::Table::load(&st, "t")
        .unwrap()
        .schema;
    schema.id = 1;
    let paths = paimon_compact::table::path::TablePaths::new("t");
    st.put(&paths.schema(1), schema.to_json());
    write_round(&st, "t", 1, false);
    let rows = read_rows(&st, "t");
    let report = compact_table(&st, "t", &opts(true, 5)).unwrap();
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert!(report.snapshot_after.is_some());
    assert_eq!(read_rows(&st, "t"), rows);
    let state = scan(&st, "t").unwrap();
    assert!(state
        .buckets
        .values()
        .flat_map(|b| &b.files)
        .all(|f| f.entry.file.schema_id == 1));
    check_lsm(&st, "t");
}

/// Merged files carry value statistics: for every listed column, the exact smallest and largest
/// value of the file's rows and its null count.
#[test]
fn merged_files_carry_exact_value_statistics() {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;
    let st = MemoryStorage::new();
    pk_table(&st, "t", &[("bucket", "2")], 6);
    compact_table(&st, "t", &opts(true, 7)).unwrap();
    let state = scan(&st, "t").unwrap();
    let table = &state.table;
    let mut checked = 0;
    for b in state.buckets.values() {
        for l in &b.files {
            let f = &l.entry.file;
            let cols = f.value_stats_cols.clone().unwrap();
            assert_eq!(cols, ["k", "dt", "v", "n"], "{}", f.file_name);
            let types: Vec<_> = table
                .schema
                .fields
                .iter()
                .map(|x| x.data_type.clone())
                .collect();
            let min = f.value_stats.min_values.decode(&types, "t", "min").unwrap();
            let max = f.value_stats.max_values.decode(&types, "t", "max").unwrap();
            let path = table
                .paths
                .data_file(&b.partition_path, b.bucket, &f.file_name, "t")
                .unwrap();
            let bytes = bytes::Bytes::from(st.get(&path).unwrap().to_vec());
            let batches: Vec<_> =
                parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes)
                    .unwrap()
                    .build()
                    .unwrap()
                    .map(|b| b.unwrap())
                    .collect();
            let n: Vec<i64> = batches
                .iter()
                .flat_map(|b| {
                    let c = b.column_by_name("n").unwrap().as_primitive::<Int64Type>();
                    (0..c.len())
                        .filter(|&i| c.is_valid(i))
                        .map(|i| c.value(i))
                        .collect::<Vec<_>>()
                })
                .collect();
            let nulls: usize = batches
                .iter()
                .map(|b| b.column_by_name("n").unwrap().null_count())
                .sum();
            assert_eq!(min[3], Datum::BigInt(*n.iter().min().unwrap()));
            assert_eq!(max[3], Datum::BigInt(*n.iter().max().unwrap()));
            let counts = f.value_stats.null_counts.clone().unwrap();
            assert_eq!(counts[3], Some(nulls as i64));
            let v: Vec<String> = batches
                .iter()
                .flat_map(|b| {
                    let c = b.column_by_name("v").unwrap().as_string::<i32>();
                    (0..c.len())
                        .map(|i| c.value(i).to_string())
                        .collect::<Vec<_>>()
                })
                .collect();
            assert_eq!(min[2], Datum::String(v.iter().min().unwrap().clone()));
            assert_eq!(max[2], Datum::String(v.iter().max().unwrap().clone()));
            checked += 1;
        }
    }
    assert!(checked >= 2);
}

/// Keys of a STRING primary key differ in length and share long prefixes ("k", "k-0000000",
/// "k-00000001", ...): the merge's prefix comparisons must fall back to the whole key.
#[test]
fn string_keys_of_every_length_merge_in_key_order() {
    let st = MemoryStorage::new();
    create_table(
        &st,
        "t",
        &new_schema(
            vec![
                field(0, "id", "STRING NOT NULL").unwrap(),
                field(1, "v", "BIGINT").unwrap(),
            ],
            &[],
            &["id"],
            &[("bucket", "1")],
            NOW,
        ),
    )
    .unwrap();
    let key = |i: i64| match i % 4 {
        0 => format!("k-{i:07}"),
        1 => format!("k-{i:08}"),
        2 => format!("k-{i:07}-with-a-much-longer-tail"),
        _ => "k".repeat((i % 11) as usize + 1),
    };
    let mut w = TableWriter::new(&st, "t", [4; 16]);
    for c in 0..6i64 {
        let rows: Vec<(RowKind, Vec<Datum>)> = (0..50)
            .map(|i| {
                let k = (i * 7 + c * 5) % 70;
                let kind = if (i + c) % 9 == 0 {
                    RowKind::Delete
                } else {
                    RowKind::Insert
                };
                (
                    kind,
                    vec![Datum::String(key(k)), Datum::BigInt(c * 100 + i)],
                )
            })
            .collect();
        w.commit(&rows, NOW + c).unwrap();
    }
    let before = read_rows(&st, "t");
    let report = compact_table(&st, "t", &opts(true, 11)).unwrap();
    assert!(report.snapshot_after.is_some(), "{report:#?}");
    assert!(report.totals.rewrites > 0);
    assert_eq!(read_rows(&st, "t"), before);
    let (raw, _) = read_rows_without_merge(&st, "t");
    assert_eq!(
        raw.len(),
        before.len(),
        "one row per key after a full compaction"
    );
    check_lsm(&st, "t");
}

/// Record-level expiry through the table job (docs/compaction.md §11.1): a full compaction
/// drops the rows it merges whose time has expired, before the merge (an expired newer
/// version lets the older one win), and later, when the bucket is one run at the max level,
/// rewrites the file whose smallest time has expired instead of leaving it.
#[test]
fn record_level_expiry_drops_expired_rows_and_rewrites_expired_files() {
    const DAY_MS: i64 = 86_400_000;
    let now_s = NOW / 1000;
    let st = MemoryStorage::new();
    let schema = new_schema(
        vec![
            field(0, "k", "BIGINT NOT NULL").unwrap(),
            field(1, "v", "STRING").unwrap(),
            field(2, "t", "BIGINT").unwrap(),
        ],
        &[],
        &["k"],
        &[
            ("bucket", "1"),
            ("record-level.expire-time", "1 d"),
            ("record-level.time-field", "t"),
        ],
        NOW,
    );
    create_table(&st, "t", &schema).unwrap();
    let row = |k: i64, v: &str, t: Option<i64>| {
        (
            RowKind::Insert,
            vec![
                Datum::BigInt(k),
                Datum::String(v.to_string()),
                t.map_or(Datum::Null, Datum::BigInt),
            ],
        )
    };
    let (fresh, stale) = (Some(now_s), Some(now_s - 2 * 86_400));
    let mut w = TableWriter::new(&st, "t", [5; 16]);
    w.commit(
        &[
            row(1, "a1", stale),
            row(2, "b1", fresh),
            row(3, "c1", stale),
        ],
        NOW,
    )
    .unwrap();
    w.commit(
        &[row(1, "a2", fresh), row(2, "b2", stale), row(4, "d2", None)],
        NOW + 1,
    )
    .unwrap();
    let job = |now: i64, id: u8| {
        let mut o = CompactOptions::new(PlanContext::at(now, 3), [id; 16]);
        o.full = true;
        compact_table(&st, "t", &o).unwrap()
    };
    let report = job(NOW + 1000, 1);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert_eq!(report.totals.rows_expired, 3, "{report:#?}");
    let f = |s: &str| s.to_string();
    assert_eq!(
        read_rows(&st, "t"),
        vec![
            f(&format!("1|a2|{now_s}")),
            f(&format!("2|b1|{now_s}")),
            f("4|d2|null")
        ]
    );
    // Two days on, the bucket is one max-level file whose smallest time has expired: a full
    // compaction rewrites it alone (without the file rule it would find nothing to do).
    let report = job(NOW + 2 * DAY_MS, 2);
    assert!(report.snapshot_after.is_some(), "{report:#?}");
    assert_eq!(report.totals.rows_expired, 2, "{report:#?}");
    assert_eq!(read_rows(&st, "t"), vec![f("4|d2|null")]);
    // With nothing expired left (the null time is kept), a full compaction has no work.
    let report = job(NOW + 3 * DAY_MS, 3);
    assert!(report.snapshot_after.is_none(), "{report:#?}");
    assert_eq!(read_rows(&st, "t"), vec![f("4|d2|null")]);
}

/// The options that name and encode new files (`data-file.prefix`, `changelog-file.prefix`,
/// `file.suffix.include.compression`, `file.compression.per.level`,
/// `changelog-file.compression`, `metadata.stats-mode.per.level`): a full compaction into
/// level 5 writes `part-<uuid>-<n>.zst.parquet` in snappy without value statistics, and its
/// changelog `cl-<uuid>-<n>.zst.parquet` in gzip.
#[test]
fn new_files_are_named_and_encoded_as_the_options_ask() {
    use parquet::basic::Compression;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let st = MemoryStorage::new();
    pk_table(
        &st,
        "t",
        &[
            ("bucket", "1"),
            ("changelog-producer", "full-compaction"),
            ("data-file.prefix", "part-"),
            ("changelog-file.prefix", "cl-"),
            ("file.suffix.include.compression", "true"),
            ("file.compression.per.level", "5:snappy"),
            ("changelog-file.compression", "gzip"),
            ("metadata.stats-mode.per.level", "5:none"),
        ],
        3,
    );
    let before = paths_of(&st);
    compact_table(&st, "t", &opts(true, 1)).unwrap();
    let codec = |path: &str| {
        let bytes = bytes::Bytes::from(st.get(path).unwrap().to_vec());
        let reader = SerializedFileReader::new(bytes).unwrap();
        reader.metadata().row_group(0).column(0).compression()
    };
    let new: Vec<String> = paths_of(&st).difference(&before).cloned().collect();
    let name = |p: &String| p.rsplit('/').next().unwrap_or_default().to_string();
    let data: Vec<&String> = new
        .iter()
        .filter(|p| name(p).starts_with("part-"))
        .collect();
    let changelog: Vec<&String> = new.iter().filter(|p| name(p).starts_with("cl-")).collect();
    assert!(!data.is_empty() && !changelog.is_empty(), "{new:?}");
    for p in &data {
        assert!(p.ends_with(".zst.parquet"), "{p}");
        assert_eq!(codec(p), Compression::SNAPPY, "{p}");
    }
    for p in &changelog {
        assert!(p.ends_with(".zst.parquet"), "{p}");
        assert!(matches!(codec(p), Compression::GZIP(_)), "{p}");
    }
    let state = scan(&st, "t").unwrap();
    for l in state.buckets.values().flat_map(|b| &b.files) {
        assert_eq!(l.entry.file.level, 5);
        assert_eq!(
            l.entry.file.value_stats_cols,
            Some(Vec::new()),
            "stats-mode none"
        );
    }
    assert_eq!(read_rows(&st, "t").len(), {
        let fresh = MemoryStorage::new();
        pk_table(&fresh, "t", &[("bucket", "1")], 3);
        read_rows(&fresh, "t").len()
    });
}

/// DECIMAL (INT32, INT64 and byte-array storage), TIMESTAMP (milliseconds, microseconds) and
/// TIME columns get value statistics: exactly the smallest and largest value written,
/// negative values and sub-millisecond digits included.
#[test]
fn decimal_timestamp_and_time_columns_carry_exact_value_statistics() {
    let st = MemoryStorage::new();
    let schema = new_schema(
        vec![
            field(0, "k", "BIGINT NOT NULL").unwrap(),
            field(1, "d", "DECIMAL(9, 2)").unwrap(),
            field(2, "l", "DECIMAL(18, 3)").unwrap(),
            field(3, "b", "DECIMAL(30, 4)").unwrap(),
            field(4, "ts3", "TIMESTAMP(3)").unwrap(),
            field(5, "ts6", "TIMESTAMP(6)").unwrap(),
            field(6, "t", "TIME").unwrap(),
        ],
        &[],
        &["k"],
        &[("bucket", "1")],
        NOW,
    );
    create_table(&st, "t", &schema).unwrap();
    let ts = |millis: i64, nanos: i32| Datum::Timestamp { millis, nanos };
    let rows: Vec<Vec<Datum>> = (0..40i64)
        .map(|i| {
            let sign = if i % 3 == 0 { -1 } else { 1 };
            vec![
                Datum::BigInt(i),
                Datum::Decimal(i128::from(sign * i * 1_234)),
                Datum::Decimal(i128::from(sign * i) * 10_000_000_007),
                Datum::Decimal(i128::from(sign * i) * 10i128.pow(25) + 7),
                ts(1_700_000_000_000 + sign * i * 997, 0),
                ts(-5_000 + sign * i * 1_001, (i as i32 % 1000) * 1_000),
                Datum::Time(i as i32 * 61_000),
            ]
        })
        .collect();
    let mut w = TableWriter::new(&st, "t", [6; 16]);
    for chunk in rows.chunks(10) {
        let commit: Vec<(RowKind, Vec<Datum>)> =
            chunk.iter().map(|r| (RowKind::Insert, r.clone())).collect();
        w.commit(&commit, NOW).unwrap();
    }
    compact_table(&st, "t", &opts(true, 1)).unwrap();
    let state = scan(&st, "t").unwrap();
    let table = &state.table;
    let types: Vec<_> = table
        .schema
        .fields
        .iter()
        .map(|x| x.data_type.clone())
        .collect();
    let files: Vec<_> = state.buckets.values().flat_map(|b| &b.files).collect();
    assert_eq!(files.len(), 1);
    let f = &files[0].entry.file;
    assert_eq!(
        f.value_stats_cols.clone().unwrap(),
        ["k", "d", "l", "b", "ts3", "ts6", "t"]
    );
    let min = f.value_stats.min_values.decode(&types, "t", "min").unwrap();
    let max = f.value_stats.max_values.decode(&types, "t", "max").unwrap();
    let order = |a: &Datum, b: &Datum| match (a, b) {
        (Datum::Decimal(x), Datum::Decimal(y)) => x.cmp(y),
        (Datum::Time(x), Datum::Time(y)) => x.cmp(y),
        (
            Datum::Timestamp { millis, nanos },
            Datum::Timestamp {
                millis: m2,
                nanos: n2,
            },
        ) => (millis, nanos).cmp(&(m2, n2)),
        (Datum::BigInt(x), Datum::BigInt(y)) => x.cmp(y),
        _ => panic!("{a:?} {b:?}"),
    };
    for c in 0..types.len() {
        let column: Vec<&Datum> = rows.iter().map(|r| &r[c]).collect();
        let lo = column.iter().copied().min_by(|a, b| order(a, b)).unwrap();
        let hi = column.iter().copied().max_by(|a, b| order(a, b)).unwrap();
        assert_eq!(&min[c], lo, "min of column {c}");
        assert_eq!(&max[c], hi, "max of column {c}");
    }
}
