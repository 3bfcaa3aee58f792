//! The table job as Paimon's dedicated compaction job: it compacts `write-only` tables (the
//! option is forced off for the job, whatever the table or a dynamic option says), runs with
//! dynamic options that never reach the schema file, covers only the partitions and buckets
//! of its scope, refuses the tables it would compact wrongly with the reason and leaves them
//! byte for byte as they were, and says how it ended (`JobStatus`).

use crate::table_support;

use std::collections::{BTreeMap, BTreeSet};

use paimon_compact::plan::PlanContext;
use paimon_compact::storage::{MemoryStorage, Storage};
use paimon_compact::table::binary_row::Datum;
use paimon_compact::table::demo::{create_table, field, new_schema, RowKind, TableWriter};
use paimon_compact::table::scan::scan;
use paimon_compact::table::{
    compact_table, plan_table, CompactOptions, JobScope, JobStatus, PlanRequest,
};
use paimon_compact::ErrorKind;
use table_support::read_rows;

const NOW: i64 = 1_750_000_000_000;
const DAY: i64 = 86_400_000;

fn opts(seed: u8, scope: JobScope) -> CompactOptions<'static> {
    let mut o = CompactOptions::new(PlanContext::at(NOW, 3), [seed; 16]);
    o.scope = scope;
    o
}

/// An append table partitioned by `dt` (d0, d1, d2) with `commits` commits of 30 rows.
fn append_table(st: &dyn Storage, path: &str, options: &[(&str, &str)], commits: i64) {
    let schema = new_schema(
        vec![
            field(0, "id", "BIGINT NOT NULL").unwrap(),
            field(1, "dt", "STRING").unwrap(),
            field(2, "v", "STRING").unwrap(),
        ],
        &["dt"],
        &[],
        options,
        NOW,
    );
    create_table(st, path, &schema).unwrap();
    let mut w = TableWriter::new(st, path, [9; 16]);
    for c in 0..commits {
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
        w.commit(&rows, NOW - 10 * DAY + c).unwrap();
    }
}

/// A primary-key table with one bucket and six overlapping commits.
fn pk_table(st: &dyn Storage, path: &str, options: &[(&str, &str)]) {
    let mut all = vec![("bucket", "1")];
    all.extend_from_slice(options);
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
            &all,
            NOW,
        ),
    )
    .unwrap();
    let mut w = TableWriter::new(st, path, [8; 16]);
    for c in 0..6i64 {
        let rows: Vec<_> = (0..20i64)
            .map(|i| {
                (
                    RowKind::Insert,
                    vec![Datum::BigInt(i * 2 + c % 2), Datum::String(format!("c{c}"))],
                )
            })
            .collect();
        w.commit(&rows, NOW - 10 * DAY + c).unwrap();
    }
}

/// Every path and its bytes.
fn snapshot_of(st: &MemoryStorage) -> BTreeMap<String, Vec<u8>> {
    st.paths()
        .into_iter()
        .map(|p| {
            let bytes = st.read_all(&p).unwrap();
            (p, bytes.to_vec())
        })
        .collect()
}

/// Live files by partition directory.
fn live_by_partition(st: &dyn Storage, path: &str) -> BTreeMap<String, BTreeSet<String>> {
    let state = scan(st, path).unwrap();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for b in state.buckets.values() {
        let e = out
            .entry(format!("{}#{}", b.partition_path, b.bucket))
            .or_default();
        e.extend(b.files.iter().map(|f| f.entry.file.file_name.clone()));
    }
    out
}

#[test]
fn write_only_tables_are_compacted_and_their_schema_is_left_alone() {
    for key in ["write-only", "write.compaction-skip"] {
        let st = MemoryStorage::new();
        pk_table(&st, "w", &[(key, "true")]);
        append_table(&st, "a", &[("bucket", "-1"), (key, "true")], 6);
        for table in ["w", "a"] {
            let schema_before = st.read_all(&format!("{table}/schema/schema-0")).unwrap();
            let rows = read_rows(&st, table);
            let plan = plan_table(&st, table, &PlanRequest::default()).unwrap();
            assert_eq!(plan.not_compactable, None, "{key} {table}: {plan:#?}");
            assert!(plan.summary.buckets_with_work > 0, "{key} {table}");
            let report = compact_table(&st, table, &opts(1, JobScope::default())).unwrap();
            assert_eq!(report.status, JobStatus::Complete, "{report:#?}");
            assert!(report.snapshot_after.is_some());
            assert_eq!(read_rows(&st, table), rows);
            assert_eq!(
                st.read_all(&format!("{table}/schema/schema-0")).unwrap(),
                schema_before,
                "the job never rewrites the schema"
            );
        }
    }
}

#[test]
fn a_dynamic_option_cannot_turn_write_only_back_on() {
    let st = MemoryStorage::new();
    pk_table(&st, "w", &[("write-only", "true")]);
    let scope = JobScope {
        options: vec![("write-only".into(), "true".into())],
        ..JobScope::default()
    };
    let report = compact_table(&st, "w", &opts(1, scope)).unwrap();
    assert_eq!(report.status, JobStatus::Complete);
    assert!(report.snapshot_after.is_some());
    assert!(
        report.warnings.iter().any(|w| w.contains("write-only")),
        "{:?}",
        report.warnings
    );
}

#[test]
fn dynamic_options_apply_to_the_job_only() {
    let st = MemoryStorage::new();
    // Auto compaction of an append bucket needs compaction.min.file-num (5) files; with the
    // trigger raised for this job nothing is picked, and the schema keeps its value.
    append_table(&st, "a", &[("bucket", "1"), ("bucket-key", "id")], 6);
    let schema_before = st.read_all("a/schema/schema-0").unwrap();
    let raised = JobScope {
        options: vec![("compaction.min.file-num".into(), "50".into())],
        ..JobScope::default()
    };
    let report = compact_table(&st, "a", &opts(1, raised)).unwrap();
    assert_eq!(report.status, JobStatus::NothingToDo, "{report:#?}");
    assert_eq!(report.snapshot_after, None);
    let report = compact_table(&st, "a", &opts(2, JobScope::default())).unwrap();
    assert_eq!(report.status, JobStatus::Complete, "{report:#?}");
    assert_eq!(st.read_all("a/schema/schema-0").unwrap(), schema_before);

    // A typo in the compaction namespace and a layout option are typed errors.
    for (k, v) in [("compaction.min.file-nun", "3"), ("bucket", "4")] {
        let bad = JobScope {
            options: vec![(k.into(), v.into())],
            ..JobScope::default()
        };
        let e = compact_table(&st, "a", &opts(3, bad)).unwrap_err();
        assert!(
            matches!(&e.kind, ErrorKind::InvalidOption { key, .. } if key == k),
            "{k}: {e}"
        );
    }
}

#[test]
fn a_partition_scope_compacts_only_those_partitions() {
    for (name, scope) in [
        (
            "partition",
            JobScope {
                partitions: vec!["dt=d1".into()],
                ..JobScope::default()
            },
        ),
        (
            "where",
            JobScope {
                where_clause: Some("dt > 'd0' AND dt < 'd2'".into()),
                ..JobScope::default()
            },
        ),
    ] {
        let st = MemoryStorage::new();
        append_table(&st, "t", &[("bucket", "-1")], 6);
        let rows = read_rows(&st, "t");
        let before = live_by_partition(&st, "t");
        let report = compact_table(&st, "t", &opts(1, scope)).unwrap();
        assert_eq!(report.status, JobStatus::Complete, "{name}: {report:#?}");
        assert_eq!(report.scope.buckets_outside_partitions, 2, "{name}");
        let after = live_by_partition(&st, "t");
        for (p, files) in &before {
            if p.starts_with("dt=d1#") {
                assert_ne!(&after[p], files, "{name}: {p} was compacted");
                assert_eq!(after[p].len(), 1, "{name}");
            } else {
                assert_eq!(&after[p], files, "{name}: {p} must be untouched");
            }
        }
        assert_eq!(read_rows(&st, "t"), rows);
    }
}

#[test]
fn partition_idle_time_leaves_recently_written_partitions() {
    let st = MemoryStorage::new();
    append_table(&st, "t", &[("bucket", "-1")], 6);
    // The files were written ten days before NOW: a day of idleness passes, thirty do not.
    let scope = |idle: &str| JobScope {
        partition_idle_time: Some(idle.into()),
        ..JobScope::default()
    };
    let plan = plan_table(
        &st,
        "t",
        &PlanRequest {
            context: PlanContext::at(NOW, 3),
            scope: scope("30 d"),
            ..PlanRequest::default()
        },
    )
    .unwrap();
    assert_eq!(plan.scope.buckets_not_idle, 3);
    assert_eq!(plan.summary.buckets, 0);
    let report = compact_table(&st, "t", &opts(1, scope("1 d"))).unwrap();
    assert_eq!(report.status, JobStatus::Complete);
    assert_eq!(report.totals.buckets_compacted, 3);
    let e = compact_table(&st, "t", &opts(2, scope("a while"))).unwrap_err();
    assert!(
        matches!(&e.kind, ErrorKind::InvalidOption { key, .. } if key == "partition-idle-time"),
        "{e}"
    );
}

#[test]
fn bucket_ranges_scope_fixed_bucket_tables_only() {
    let st = MemoryStorage::new();
    append_table(&st, "f", &[("bucket", "2"), ("bucket-key", "id")], 6);
    let before = live_by_partition(&st, "f");
    let scope = JobScope {
        buckets: Some("1".into()),
        ..JobScope::default()
    };
    let report = compact_table(&st, "f", &opts(1, scope)).unwrap();
    assert_eq!(report.status, JobStatus::Complete, "{report:#?}");
    assert!(report.buckets.iter().all(|b| b.bucket == 1));
    let after = live_by_partition(&st, "f");
    for (p, files) in &before {
        if p.ends_with("#0") {
            assert_eq!(&after[p], files, "{p} must be untouched");
        }
    }
    assert_eq!(report.scope.buckets_outside_bucket_ranges, 3);

    append_table(&st, "u", &[("bucket", "-1")], 2);
    for (table, ranges) in [("u", "0"), ("f", "2"), ("f", "1-0"), ("f", "0,,1")] {
        let scope = JobScope {
            buckets: Some(ranges.into()),
            ..JobScope::default()
        };
        let e = compact_table(&st, table, &opts(2, scope)).unwrap_err();
        assert!(
            matches!(&e.kind, ErrorKind::InvalidOption { key, .. } if key == "buckets"),
            "{table} {ranges}: {e}"
        );
    }
}

#[test]
fn malformed_scopes_are_typed_errors_naming_the_argument() {
    let st = MemoryStorage::new();
    append_table(&st, "t", &[("bucket", "-1")], 1);
    let cases = [
        (
            "partition",
            JobScope {
                partitions: vec!["region=eu".into()],
                ..JobScope::default()
            },
        ),
        (
            "partition",
            JobScope {
                partitions: vec!["dt".into()],
                ..JobScope::default()
            },
        ),
        (
            "where",
            JobScope {
                where_clause: Some("v = 'x'".into()),
                ..JobScope::default()
            },
        ),
        (
            "where",
            JobScope {
                where_clause: Some("dt LIKE 'd%'".into()),
                ..JobScope::default()
            },
        ),
        (
            "where",
            JobScope {
                partitions: vec!["dt=d1".into()],
                where_clause: Some("dt = 'd1'".into()),
                ..JobScope::default()
            },
        ),
    ];
    for (want, scope) in cases {
        let before = snapshot_of(&st);
        let e = compact_table(&st, "t", &opts(1, scope.clone())).unwrap_err();
        assert!(
            matches!(&e.kind, ErrorKind::InvalidOption { key, .. } if key == want),
            "{scope:?}: {e}"
        );
        assert!(!e.message.contains('\n'));
        assert_eq!(
            snapshot_of(&st),
            before,
            "a failed job leaves the table as it was"
        );
    }
}

#[test]
fn guarded_tables_are_refused_and_left_byte_for_byte() {
    for (key, value, kind) in [
        ("row-tracking.enabled", "true", "not-compactable"),
        ("clustering.incremental", "true", "not-compactable"),
        ("pk-clustering-override", "true", "not-compactable"),
        ("chain-table.enabled", "true", "not-compactable"),
        ("pk-lookup.index.columns", "v", "not-compactable"),
        (
            "metadata.iceberg.storage",
            "table-location",
            "not-compactable",
        ),
        ("data-file.thin-mode", "true", "unsupported"),
        ("deletion-vectors.bitmap64", "true", "unsupported"),
    ] {
        let st = MemoryStorage::new();
        pk_table(&st, "t", &[(key, value), ("write-only", "true")]);
        let before = snapshot_of(&st);
        let plan = plan_table(&st, "t", &PlanRequest::default()).unwrap();
        let why = plan
            .not_compactable
            .unwrap_or_else(|| panic!("{key} not refused"));
        assert!(why.contains(key), "{why}");
        assert_eq!(plan.refusal_kind.as_deref(), Some(kind), "{key}");
        let report = compact_table(&st, "t", &opts(1, JobScope::default())).unwrap();
        assert_eq!(report.status, JobStatus::Refused, "{key}");
        assert_eq!(report.snapshot_after, None);
        assert_eq!(
            snapshot_of(&st),
            before,
            "{key}: the table must be untouched"
        );
    }
}

#[test]
fn the_report_carries_its_schema_version_and_status() {
    let st = MemoryStorage::new();
    append_table(&st, "t", &[("bucket", "-1")], 6);
    let report = compact_table(&st, "t", &opts(1, JobScope::default())).unwrap();
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["schema_version"], 1);
    assert_eq!(json["status"], "complete");
    let again = compact_table(&st, "t", &opts(2, JobScope::default())).unwrap();
    assert_eq!(
        serde_json::to_value(&again).unwrap()["status"],
        "nothing-to-do"
    );
}

/// Runs the job `runs` times (each a new one-shot job, a minute apart); returns the run (from
/// 1) that committed, if any.
fn first_committing_run(st: &MemoryStorage, table: &str, runs: u8) -> Option<u8> {
    (1..=runs).find(|&r| {
        let mut o = opts(r, JobScope::default());
        o.context = PlanContext::at(NOW + i64::from(r) * 60_000, 3);
        compact_table(st, table, &o)
            .unwrap()
            .snapshot_after
            .is_some()
    })
}

#[test]
fn gentle_lookup_counters_carry_across_one_shot_runs() {
    let st = MemoryStorage::new();
    pk_table(
        &st,
        "g",
        &[
            ("changelog-producer", "lookup"),
            ("lookup-compact", "gentle"),
            ("lookup-compact.max-interval", "4"),
            ("num-sorted-run.compaction-trigger", "4"),
        ],
    );
    // Six level-0 runs: the universal pick would fire; compact them away first, then leave one
    // new level-0 file that only the gentle force-up takes.
    let full = CompactOptions {
        full: true,
        ..opts(1, JobScope::default())
    };
    compact_table(&st, "g", &full).unwrap();
    let mut w = TableWriter::new(&st, "g", [3; 16]);
    w.commit(
        &[(
            RowKind::Insert,
            vec![Datum::BigInt(1), Datum::String("late".into())],
        )],
        NOW,
    )
    .unwrap();
    let rows = read_rows(&st, "g");
    let committed = first_committing_run(&st, "g", 8);
    assert_eq!(
        committed,
        Some(4),
        "forced up on the interval's check, not before"
    );
    assert_eq!(read_rows(&st, "g"), rows);
    let kept = st
        .paths()
        .into_iter()
        .filter(|p| p.starts_with("g/compaction-state/"))
        .count();
    assert_eq!(kept, 1, "one state file for the unpartitioned table");
}

#[test]
fn the_coordinators_partition_age_carries_across_one_shot_runs() {
    let st = MemoryStorage::new();
    // Three small files per partition never fill a bin (compaction.min.file-num = 5): only
    // age compacts them, after COMPACT_AGE fruitless plans with no new file.
    append_table(&st, "u", &[("bucket", "-1")], 3);
    let rows = read_rows(&st, "u");
    let committed = first_committing_run(&st, "u", 8);
    assert_eq!(
        committed,
        Some(paimon_compact::plan::COMPACT_AGE as u8 + 1),
        "aged out after COMPACT_AGE plans"
    );
    assert_eq!(read_rows(&st, "u"), rows);
    assert!(live_by_partition(&st, "u").values().all(|f| f.len() == 1));

    // A new file resets the age, as a streaming coordinator's scan would.
    let st = MemoryStorage::new();
    append_table(&st, "u", &[("bucket", "-1")], 3);
    assert_eq!(first_committing_run(&st, "u", 3), None);
    let mut w = TableWriter::new(&st, "u", [4; 16]);
    w.commit(
        &[(
            RowKind::Insert,
            vec![
                Datum::BigInt(9999),
                Datum::String("d0".into()),
                Datum::String("new".into()),
            ],
        )],
        NOW,
    )
    .unwrap();
    // d0 now has four files and starts again; d1 and d2 go on ageing and compact first.
    let mut o = opts(9, JobScope::default());
    for r in 4..=6u8 {
        o.job_id = [r; 16];
        o.context = PlanContext::at(NOW + i64::from(r) * 60_000, 3);
        let report = compact_table(&st, "u", &o).unwrap();
        let compacted: BTreeSet<String> =
            report.buckets.iter().map(|b| b.partition.clone()).collect();
        if r < 6 {
            assert!(compacted.is_empty(), "run {r}: {compacted:?}");
        } else {
            assert_eq!(
                compacted,
                ["dt=d1".to_string(), "dt=d2".to_string()].into(),
                "run {r}"
            );
        }
    }
}

#[test]
fn non_parquet_levels_block_the_bucket_with_the_reason_and_change_nothing() {
    let st = MemoryStorage::new();
    pk_table(&st, "p", &[]);
    let rows = read_rows(&st, "p");
    // A full compaction writes the highest level; the table asks for a format this build does not write there.
    let per_level = JobScope {
        options: vec![("file.format.per.level".into(), "5:lance".into())],
        ..JobScope::default()
    };
    let before = snapshot_of(&st);
    let full = CompactOptions {
        full: true,
        ..opts(1, per_level)
    };
    let report = compact_table(&st, "p", &full).unwrap();
    assert_eq!(report.status, JobStatus::Incomplete, "{report:#?}");
    assert_eq!(report.skipped.len(), 1);
    assert!(
        report.skipped[0].reason.contains("'lance'")
            && report.skipped[0].reason.contains("level 5"),
        "{}",
        report.skipped[0].reason
    );
    assert_eq!(snapshot_of(&st), before, "nothing written");
    assert_eq!(read_rows(&st, "p"), rows);
}

#[test]
fn the_job_runs_the_tables_maintenance_after_its_commit_unless_told_not_to() {
    use paimon_compact::maintenance::maintain::{compact_and_maintain, MaintenanceSettings};
    use paimon_compact::maintenance::MaintenanceContext;
    let snapshots = |st: &MemoryStorage| {
        st.paths()
            .into_iter()
            .filter(|p| p.starts_with("w/snapshot/snapshot-"))
            .count()
    };
    for skip in [true, false] {
        let st = MemoryStorage::new();
        pk_table(
            &st,
            "w",
            &[
                ("write-only", "true"),
                ("snapshot.num-retained.min", "1"),
                ("snapshot.num-retained.max", "3"),
            ],
        );
        let rows = read_rows(&st, "w");
        assert_eq!(snapshots(&st), 6);
        let settings = MaintenanceSettings::new(
            MaintenanceContext {
                now_ms: NOW,
                utc_offset_ms: 0,
                dry_run: false,
            },
            [7; 16],
        );
        let full = CompactOptions {
            full: true,
            ..opts(1, JobScope::default())
        };
        let report = compact_and_maintain(&st, "w", &full, &settings, !skip).unwrap();
        assert_eq!(report.compaction.status, JobStatus::Complete);
        assert_eq!(read_rows(&st, "w"), rows);
        if skip {
            assert!(report.maintenance.is_none());
            assert_eq!(snapshots(&st), 7);
        } else {
            let m = report.maintenance.expect("maintenance ran");
            let expired = &m.snapshots.as_ref().unwrap().expired_snapshots;
            // At most three stay (num-retained.max); beyond the one always kept
            // (num-retained.min), a snapshot also goes once its successor is older than
            // snapshot.time-retained (1 h): the writes were ten days ago, so only the newest
            // write and the job's COMPACT snapshot stay.
            assert_eq!(expired, &vec![1, 2, 3, 4, 5], "{m:#?}");
            assert_eq!(snapshots(&st), 2);
            // Every file the retained snapshots name still exists: the table reads the same.
            assert_eq!(read_rows(&st, "w"), rows);
            let json = serde_json::to_value(&m).unwrap();
            assert!(json.get("snapshots").is_some());
        }
    }
}

#[test]
fn expired_partitions_are_left_out_of_bucketed_compaction_when_asked() {
    use paimon_compact::maintenance::maintain::{compact_and_maintain, MaintenanceSettings};
    use paimon_compact::maintenance::MaintenanceContext;
    for skip_expired in ["true", "false"] {
        let st = MemoryStorage::new();
        let schema = new_schema(
            vec![
                field(0, "id", "BIGINT NOT NULL").unwrap(),
                field(1, "dt", "STRING").unwrap(),
            ],
            &["dt"],
            &[],
            &[
                ("bucket", "1"),
                ("bucket-key", "id"),
                ("partition.expiration-time", "30 d"),
                ("compaction.skip-expired-partitions", skip_expired),
            ],
            NOW,
        );
        create_table(&st, "t", &schema).unwrap();
        let mut w = TableWriter::new(&st, "t", [9; 16]);
        for c in 0..6i64 {
            let rows: Vec<_> = ["2020-01-01", "2025-06-15"]
                .iter()
                .map(|dt| {
                    (
                        RowKind::Insert,
                        vec![Datum::BigInt(c), Datum::String(dt.to_string())],
                    )
                })
                .collect();
            w.commit(&rows, NOW - DAY + c).unwrap();
        }
        let settings = MaintenanceSettings::new(
            MaintenanceContext {
                now_ms: NOW,
                utc_offset_ms: 0,
                dry_run: false,
            },
            [7; 16],
        );
        // Maintenance off: only the compaction's own choice is under test here.
        let report =
            compact_and_maintain(&st, "t", &opts(1, JobScope::default()), &settings, false)
                .unwrap();
        let compacted: BTreeSet<String> = report
            .compaction
            .buckets
            .iter()
            .map(|b| b.partition.clone())
            .collect();
        if skip_expired == "true" {
            assert_eq!(compacted, ["dt=2025-06-15".to_string()].into());
            assert_eq!(report.compaction.scope.buckets_of_expired_partitions, 1);
        } else {
            assert_eq!(compacted.len(), 2, "{compacted:?}");
        }
    }
}
