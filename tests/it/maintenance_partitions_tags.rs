//! Partition expiration, tags and consumers on tables written by the demo writer: which
//! partitions Paimon's rules expire (values-time with the default format, a pattern and a
//! formatter; update-time; max-num; batches; the check interval), that a drop is an OVERWRITE
//! snapshot removing exactly those partitions' files while the rest stays readable, dry runs,
//! automatic tags (process time with a delay, watermark, the cap on automatic tags, retention),
//! tag deletion and the files only a tag kept, consumer expiry, and a failure injected at every
//! storage call of a partition expiry (every snapshot stays readable and a rerun finishes).

use crate::table_support;

use std::collections::{BTreeMap, BTreeSet};

use paimon_compact::maintenance::consumers::{
    expire_consumers, list_consumers, min_next_snapshot, reset_consumer,
};
use paimon_compact::maintenance::partition_expire::{
    expire_partitions, expired_partitions, DropCommit, PartitionExpireConfig, PartitionExpirer,
};
use paimon_compact::maintenance::tags::{
    auto_create_tags, create_tag, delete_tag, expire_tags, list_tags, read_tag, TagDeleteReason,
};
use paimon_compact::maintenance::MaintenanceContext;
use paimon_compact::storage::{MemoryStorage, Storage};
use paimon_compact::table::binary_row::Datum;
use paimon_compact::table::demo::{create_table, field, new_schema, RowKind, TableWriter};
use paimon_compact::table::scan::{live_entries, scan, scan_at, snapshot_manifests, Table};
use paimon_compact::table::snapshot::{latest_snapshot_id, read_snapshot, CommitKind, Snapshot};
use table_support::{clone_of, read_rows, FaultyStorage};

const MIN: i64 = 60_000;
const HOUR: i64 = 3_600_000;
const DAY: i64 = 86_400_000;

/// Epoch milliseconds of a UTC date-time.
fn at(y: i64, m: i64, d: i64, h: i64, mi: i64) -> i64 {
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    days * DAY + h * HOUR + mi * MIN
}

fn ctx(now_ms: i64) -> MaintenanceContext {
    MaintenanceContext {
        now_ms,
        utc_offset_ms: 0,
        dry_run: false,
    }
}

/// A table partitioned by `dt` (and `hr` when `with_hr`), append-only, one bucket.
fn new_table(st: &dyn Storage, path: &str, with_hr: bool, options: &[(&str, &str)]) {
    let mut fields = vec![
        field(0, "id", "BIGINT NOT NULL").unwrap(),
        field(1, "dt", "STRING").unwrap(),
    ];
    let mut keys = vec!["dt"];
    if with_hr {
        fields.push(field(2, "hr", "STRING").unwrap());
        keys.push("hr");
    }
    fields.push(field(3, "v", "STRING").unwrap());
    let schema = new_schema(fields, &keys, &[], options, at(2020, 1, 1, 0, 0));
    create_table(st, path, &schema).unwrap();
}

/// Writes one commit with three rows in each partition (`hr` ignored for `dt`-only tables).
fn write(
    st: &dyn Storage,
    path: &str,
    seed: u8,
    parts: &[(Option<&str>, Option<&str>)],
    now_ms: i64,
) -> i64 {
    let with_hr = Table::load(st, path).unwrap().schema.partition_keys.len() == 2;
    let mut rows = Vec::new();
    for (p, (dt, hr)) in parts.iter().enumerate() {
        for i in 0..3i64 {
            let mut row = vec![
                Datum::BigInt(seed as i64 * 1000 + p as i64 * 10 + i),
                dt.map_or(Datum::Null, |s| Datum::String(s.into())),
            ];
            if with_hr {
                row.push(hr.map_or(Datum::Null, |s| Datum::String(s.into())));
            }
            row.push(Datum::String(format!("{}-{}", dt.unwrap_or("null"), i)));
            rows.push((RowKind::Insert, row));
        }
    }
    TableWriter::new(st, path, [seed; 16])
        .commit(&rows, now_ms)
        .unwrap()
}

fn config(table: &Table) -> PartitionExpireConfig {
    PartitionExpireConfig::from_options(&table.schema.options)
        .unwrap()
        .expect("partition.expiration-time is set")
}

/// Live partitions (their directory paths) of the latest snapshot.
fn live_partitions(st: &dyn Storage, path: &str) -> BTreeSet<String> {
    scan(st, path)
        .unwrap()
        .buckets
        .values()
        .map(|b| b.partition_path.clone())
        .collect()
}

/// Every data file path live at the latest snapshot.
fn live_files(st: &dyn Storage, path: &str) -> BTreeSet<String> {
    let state = scan(st, path).unwrap();
    let mut out = BTreeSet::new();
    for b in state.buckets.values() {
        for f in &b.files {
            out.insert(
                state
                    .table
                    .paths
                    .live_data_file(&b.partition_path, b.bucket, &f.entry.file, "t")
                    .unwrap(),
            );
        }
    }
    out
}

fn everything(st: &MemoryStorage) -> BTreeMap<String, Vec<u8>> {
    st.paths()
        .into_iter()
        .map(|p| {
            let b = st.get(&p).unwrap().to_vec();
            (p, b)
        })
        .collect()
}

fn dates(rows: &[String]) -> BTreeSet<String> {
    rows.iter()
        .map(|r| r.split('|').nth(1).unwrap().to_string())
        .collect()
}

#[test]
fn values_time_with_the_default_format_drops_old_partitions_in_one_overwrite() {
    let st = MemoryStorage::new();
    new_table(&st, "t", false, &[("partition.expiration-time", "3 d")]);
    let days = [
        "2024-01-01",
        "2024-01-02",
        "2024-01-03",
        "2024-01-04",
        "2024-1-5",
    ];
    let mut parts: Vec<(Option<&str>, Option<&str>)> =
        days.iter().map(|d| (Some(*d), None)).collect();
    parts.push((Some("abcd"), None));
    parts.push((None, None));
    write(&st, "t", 1, &parts, at(2024, 1, 6, 0, 0));
    let files_before = live_files(&st, "t");
    let table = Table::load(&st, "t").unwrap();
    let cfg = config(&table);
    let now = ctx(at(2024, 1, 6, 12, 0));

    // 2024-01-03 00:00 is strictly before 2024-01-03 12:00; `abcd` and null never expire.
    let state = scan(&st, "t").unwrap();
    let chosen: Vec<String> = expired_partitions(&state, &cfg, &now)
        .unwrap()
        .iter()
        .map(|p| p.display())
        .collect();
    assert_eq!(chosen, ["dt=2024-01-01", "dt=2024-01-02", "dt=2024-01-03"]);

    let report =
        expire_partitions(&st, &table, &cfg, &now, &DropCommit::procedure([3; 16])).unwrap();
    assert_eq!(
        report.rows(),
        ["dt=2024-01-01", "dt=2024-01-02", "dt=2024-01-03"]
    );
    assert_eq!(report.snapshots, vec![2]);
    assert_eq!(report.files_dropped, 3);
    assert_eq!(report.warnings.len(), 2, "{:?}", report.warnings);
    let snap = read_snapshot(&st, &table.paths, 2).unwrap();
    assert_eq!(snap.commit_kind, CommitKind::Overwrite);
    assert_eq!(snap.commit_user, "");
    assert_eq!(snap.commit_identifier, i64::MAX);
    assert_eq!(snap.total_record_count, Some(12));

    assert_eq!(
        live_partitions(&st, "t"),
        [
            "dt=2024-01-04",
            "dt=2024-1-5",
            "dt=__DEFAULT_PARTITION__",
            "dt=abcd"
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    );
    assert_eq!(
        dates(&read_rows(&st, "t")),
        ["2024-01-04", "2024-1-5", "abcd", "null"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
    // Nothing is deleted physically: snapshot 1 still reads every file.
    for f in &files_before {
        assert!(st.get(f).is_some(), "{f} is still on storage");
    }
    let old = scan_at(&st, table.clone(), Some(1)).unwrap();
    assert_eq!(old.file_count(), 7);

    // The compaction skip test agrees (values-time only, and only with the option on).
    assert!(!cfg.skips_expired_in_compaction());
    let mut raw = table.schema.options.clone();
    raw.insert("compaction.skip-expired-partitions".into(), "true".into());
    let skip = PartitionExpireConfig::from_options(&raw).unwrap().unwrap();
    assert!(skip.skips_expired_in_compaction());
    let old_day = [Datum::String("2024-01-02".into())];
    let new_day = [Datum::String("2024-01-04".into())];
    assert!(skip.is_value_expired(&table, &old_day, &now));
    assert!(!skip.is_value_expired(&table, &new_day, &now));
    assert!(!skip.is_value_expired(&table, &[Datum::Null], &now));
    raw.insert("partition.expiration-strategy".into(), "update-time".into());
    let update = PartitionExpireConfig::from_options(&raw).unwrap().unwrap();
    assert!(!update.skips_expired_in_compaction());

    // A second check finds nothing more.
    let again =
        expire_partitions(&st, &table, &cfg, &now, &DropCommit::procedure([4; 16])).unwrap();
    assert!(again.expired.is_empty());
    assert_eq!(again.rows(), ["No expired partitions."]);
    assert_eq!(latest_snapshot_id(&st, &table.paths).unwrap(), Some(2));
}

#[test]
fn values_time_with_a_pattern_and_a_formatter() {
    // `$dt $hr:00:00` read by the default format.
    let st = MemoryStorage::new();
    new_table(
        &st,
        "p",
        true,
        &[
            ("partition.expiration-time", "1 d"),
            ("partition.timestamp-pattern", "$dt $hr:00:00"),
        ],
    );
    let parts = [
        (Some("2024-03-01"), Some("09")),
        (Some("2024-03-01"), Some("11")),
        (Some("2024-03-02"), Some("09")),
        (Some("2024-03-01"), None),
    ];
    write(&st, "p", 1, &parts, at(2024, 3, 2, 10, 0));
    let table = Table::load(&st, "p").unwrap();
    let now = ctx(at(2024, 3, 2, 10, 30));
    let report = expire_partitions(
        &st,
        &table,
        &config(&table),
        &now,
        &DropCommit::procedure([1; 16]),
    )
    .unwrap();
    assert_eq!(report.rows(), ["dt=2024-03-01, hr=09"]);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("__DEFAULT_PARTITION__")),
        "a null in the pattern is never expired: {:?}",
        report.warnings
    );
    assert_eq!(live_partitions(&st, "p").len(), 3);

    // `yyyyMMdd HH` formatter with the same template idea.
    let st = MemoryStorage::new();
    new_table(
        &st,
        "f",
        true,
        &[
            ("partition.expiration-time", "2 h"),
            ("partition.timestamp-pattern", "$dt $hr"),
            ("partition.timestamp-formatter", "yyyyMMdd HH"),
        ],
    );
    let parts = [
        (Some("20240301"), Some("07")),
        (Some("20240301"), Some("08")),
        (Some("20240301"), Some("09")),
        (Some("2024-03-01"), Some("01")),
    ];
    write(&st, "f", 1, &parts, at(2024, 3, 1, 10, 0));
    let table = Table::load(&st, "f").unwrap();
    let now = ctx(at(2024, 3, 1, 10, 0));
    let report = expire_partitions(
        &st,
        &table,
        &config(&table),
        &now,
        &DropCommit::procedure([1; 16]),
    )
    .unwrap();
    // 08:00 is not strictly before 10:00 - 2 h; the dashed value does not fit the formatter.
    assert_eq!(report.rows(), ["dt=20240301, hr=07"]);

    // A formatter letter outside what a partition time needs is refused up front.
    let mut raw = table.schema.options.clone();
    raw.insert("partition.timestamp-formatter".into(), "yyyy-MMM-dd".into());
    assert!(PartitionExpireConfig::from_options(&raw).is_err());
}

#[test]
fn update_time_uses_the_newest_file_of_each_partition() {
    let st = MemoryStorage::new();
    new_table(
        &st,
        "u",
        false,
        &[
            ("partition.expiration-time", "2 d"),
            ("partition.expiration-strategy", "update-time"),
        ],
    );
    let now = at(2024, 6, 10, 0, 0);
    write(
        &st,
        "u",
        1,
        &[(Some("a"), None), (Some("b"), None), (Some("c"), None)],
        now - 5 * DAY,
    );
    write(&st, "u", 2, &[(Some("b"), None)], now - DAY);
    write(&st, "u", 3, &[(Some("c"), None)], now - 2 * DAY);
    let table = Table::load(&st, "u").unwrap();
    let report = expire_partitions(
        &st,
        &table,
        &config(&table),
        &ctx(now),
        &DropCommit::procedure([1; 16]),
    )
    .unwrap();
    // `c` was last written exactly 2 days ago: not strictly older.
    assert_eq!(report.rows(), ["dt=a"]);
    assert_eq!(
        dates(&read_rows(&st, "u")),
        ["b", "c"].iter().map(|s| s.to_string()).collect()
    );
}

#[test]
fn max_num_and_batch_size_make_several_overwrite_snapshots() {
    let st = MemoryStorage::new();
    new_table(
        &st,
        "m",
        false,
        &[
            ("partition.expiration-time", "1 d"),
            ("partition.expiration-max-num", "4"),
            ("partition.expiration-batch-size", "1"),
        ],
    );
    let days = [
        "2024-01-05",
        "2024-01-01",
        "2024-01-03",
        "2024-01-02",
        "2024-01-04",
        "2024-02-01",
    ];
    let parts: Vec<_> = days.iter().map(|d| (Some(*d), None)).collect();
    write(&st, "m", 1, &parts, at(2024, 1, 31, 0, 0));
    let table = Table::load(&st, "m").unwrap();
    let cfg = config(&table);
    let now = ctx(at(2024, 1, 31, 0, 0));
    let commit = DropCommit {
        commit_user: "job-user".into(),
        ..DropCommit::procedure([2; 16])
    };
    let report = expire_partitions(&st, &table, &cfg, &now, &commit).unwrap();
    assert_eq!(
        report.rows(),
        [
            "dt=2024-01-01",
            "dt=2024-01-02",
            "dt=2024-01-03",
            "dt=2024-01-04"
        ]
    );
    assert_eq!(report.snapshots, vec![2, 3, 4, 5]);
    for (id, day) in [
        (2, "2024-01-01"),
        (3, "2024-01-02"),
        (4, "2024-01-03"),
        (5, "2024-01-04"),
    ] {
        let s = read_snapshot(&st, &table.paths, id).unwrap();
        assert_eq!(s.commit_kind, CommitKind::Overwrite);
        assert_eq!(s.commit_user, "job-user");
        let state = scan_at(&st, table.clone(), Some(id)).unwrap();
        assert!(
            !state
                .buckets
                .values()
                .any(|b| b.partition_path == format!("dt={day}")),
            "snapshot {id} dropped {day}"
        );
        assert_eq!(state.buckets.len(), 6 - (id as usize - 1));
    }
    // The fifth expired partition goes at the next check.
    let next = expire_partitions(&st, &table, &cfg, &now, &commit).unwrap();
    assert_eq!(next.rows(), ["dt=2024-01-05"]);
    assert_eq!(
        dates(&read_rows(&st, "m")),
        ["2024-02-01"].iter().map(|s| s.to_string()).collect()
    );
}

#[test]
fn the_check_interval_is_honoured_and_kept_between_runs() {
    let st = MemoryStorage::new();
    new_table(
        &st,
        "c",
        false,
        &[
            ("partition.expiration-time", "1 d"),
            ("partition.expiration-check-interval", "1 h"),
        ],
    );
    write(
        &st,
        "c",
        1,
        &[(Some("2024-01-01"), None), (Some("2024-01-10"), None)],
        at(2024, 1, 10, 0, 0),
    );
    let table = Table::load(&st, "c").unwrap();
    let t0 = at(2024, 1, 10, 0, 0);
    let commit = DropCommit {
        identifier: 7,
        ..DropCommit::procedure([5; 16])
    };
    // A fresh committer's last check lies less than an interval back: nothing is checked yet.
    let mut expirer = PartitionExpirer::new(config(&table), &ctx(t0), [5; 16]);
    assert!(expirer.last_check_local_ms <= t0 && expirer.last_check_local_ms > t0 - HOUR);
    let r = expirer.expire(&st, &table, &ctx(t0), &commit).unwrap();
    assert!(!r.checked && r.expired.is_empty());
    let due = expirer.last_check_local_ms + HOUR + 1;
    let r = expirer.expire(&st, &table, &ctx(due), &commit).unwrap();
    assert!(r.checked);
    assert_eq!(r.rows(), ["dt=2024-01-01"]);
    assert_eq!(expirer.last_check_local_ms, due);

    // New expired data within the interval waits for the next check ...
    write(&st, "c", 2, &[(Some("2024-01-02"), None)], due);
    expirer.save(&st, &table.paths).unwrap();
    let mut reloaded =
        PartitionExpirer::load(&st, &table.paths, config(&table), &ctx(due), [9; 16]);
    assert_eq!(reloaded, expirer);
    let r = reloaded
        .expire(&st, &table, &ctx(due + 30 * MIN), &commit)
        .unwrap();
    assert!(!r.checked);
    assert!(live_partitions(&st, "c").contains("dt=2024-01-02"));
    // ... unless the end-of-input commit asks for it.
    let mut raw = table.schema.options.clone();
    raw.insert("end-input.check-partition-expire".into(), "true".into());
    let mut end_input = PartitionExpirer {
        config: PartitionExpireConfig::from_options(&raw).unwrap().unwrap(),
        ..reloaded.clone()
    };
    let r = end_input
        .expire(&st, &table, &ctx(due + 30 * MIN), &commit)
        .unwrap();
    assert!(!r.checked, "identifier 7 is not the end of input");
    let end = DropCommit {
        identifier: i64::MAX,
        ..commit.clone()
    };
    let r = end_input
        .expire(&st, &table, &ctx(due + 30 * MIN), &end)
        .unwrap();
    assert_eq!(r.rows(), ["dt=2024-01-02"]);
    // And after the interval the plain committer checks again (nothing left).
    let r = reloaded
        .expire(&st, &table, &ctx(due + HOUR + 1), &commit)
        .unwrap();
    assert!(r.checked && r.expired.is_empty());
}

#[test]
fn a_dry_run_reports_and_changes_nothing() {
    let st = MemoryStorage::new();
    new_table(&st, "d", false, &[("partition.expiration-time", "1 d")]);
    write(
        &st,
        "d",
        1,
        &[(Some("2024-01-01"), None), (Some("2030-01-01"), None)],
        at(2024, 1, 10, 0, 0),
    );
    let table = Table::load(&st, "d").unwrap();
    let before = everything(&st);
    let dry = MaintenanceContext {
        dry_run: true,
        ..ctx(at(2024, 1, 10, 0, 0))
    };
    let report = expire_partitions(
        &st,
        &table,
        &config(&table),
        &dry,
        &DropCommit::procedure([1; 16]),
    )
    .unwrap();
    assert!(report.dry_run);
    assert_eq!(report.rows(), ["dt=2024-01-01"]);
    assert_eq!(report.files_dropped, 1);
    assert!(report.snapshots.is_empty());
    let mut expirer = PartitionExpirer::new(config(&table), &dry, [0; 16]);
    let last = expirer.last_check_local_ms;
    let r = expirer
        .expire(
            &st,
            &table,
            &MaintenanceContext {
                now_ms: dry.now_ms + 2 * HOUR,
                ..dry
            },
            &DropCommit::procedure([1; 16]),
        )
        .unwrap();
    assert!(r.checked);
    assert_eq!(
        expirer.last_check_local_ms, last,
        "a dry run does not count as a check"
    );
    assert_eq!(everything(&st), before);
}

/// Rewrites a snapshot's watermark (the demo writer carries the previous one forward).
fn set_watermark(st: &MemoryStorage, path: &str, id: i64, watermark: Option<i64>) {
    let file = format!("{path}/snapshot/snapshot-{id}");
    let mut s = Snapshot::from_json(&st.read_all(&file).unwrap(), &file).unwrap();
    s.watermark = watermark;
    st.put(&file, s.to_json());
}

fn tag_names(st: &dyn Storage, table: &Table) -> Vec<(String, i64)> {
    list_tags(st, &table.paths)
        .unwrap()
        .into_iter()
        .map(|(n, s)| (n, s.id))
        .collect()
}

#[test]
fn process_time_tags_daily_with_a_delay_a_cap_and_retention() {
    let st = MemoryStorage::new();
    new_table(
        &st,
        "g",
        false,
        &[
            ("tag.automatic-creation", "process-time"),
            ("tag.creation-period", "daily"),
            ("tag.creation-delay", "10 min"),
            ("tag.num-retained-max", "2"),
            ("tag.default-time-retained", "3 d"),
        ],
    );
    let commits = [
        at(2023, 7, 18, 9, 0),
        at(2023, 7, 19, 0, 5),
        at(2023, 7, 19, 0, 15),
        at(2023, 7, 20, 1, 0),
    ];
    let mut created = Vec::new();
    for (i, t) in commits.iter().enumerate() {
        write(&st, "g", i as u8 + 1, &[(Some("x"), None)], *t);
        let table = Table::load(&st, "g").unwrap();
        if i == 0 {
            // A manual tag on the first snapshot never counts toward the cap.
            create_tag(&st, &table, "savepoint", 1, None, &ctx(*t)).unwrap();
        }
        let r = auto_create_tags(&st, &table, &ctx(*t + MIN)).unwrap();
        created.extend(r.created.iter().map(|c| (c.name.clone(), c.snapshot_id)));
        if i == 3 {
            assert_eq!(r.deleted.len(), 1);
            assert_eq!(r.deleted[0].name, "2023-07-17");
            assert_eq!(r.deleted[0].reason, TagDeleteReason::NumRetainedMax);
            assert!(!r.deleted[0].cleaned, "its snapshot still exists");
            assert_eq!(r.deleted_files, ["g/tag/tag-2023-07-17"]);
        }
    }
    // The first tag at once, for the day before; then each day once its end plus the delay
    // is reached (00:05 is within the delay, 00:15 is not).
    assert_eq!(
        created,
        [
            ("2023-07-17".to_string(), 1),
            ("2023-07-18".to_string(), 3),
            ("2023-07-19".to_string(), 4)
        ]
    );
    let table = Table::load(&st, "g").unwrap();
    assert_eq!(
        tag_names(&st, &table),
        [
            ("savepoint".to_string(), 1),
            ("2023-07-18".to_string(), 3),
            ("2023-07-19".to_string(), 4)
        ]
    );
    // A rerun creates nothing twice.
    assert!(auto_create_tags(&st, &table, &ctx(commits[3] + HOUR))
        .unwrap()
        .created
        .is_empty());

    // Auto tags carry the default retention.
    let tag = read_tag(&st, &table.paths, "2023-07-18").unwrap().unwrap();
    assert_eq!(tag.time_retained_ms, Some(3 * DAY));
    assert_eq!(tag.create_time_local_ms, Some(commits[2] + MIN));
    let text = String::from_utf8(st.read_all("g/tag/tag-2023-07-18").unwrap().to_vec()).unwrap();
    assert!(
        text.contains("\"tagTimeRetained\": 259200.000000000"),
        "{text}"
    );

    // Retention: strictly after create time + 3 d (the manual tag got the default too).
    let r = expire_tags(&st, &table, &ctx(commits[2] + MIN + 3 * DAY)).unwrap();
    let names: Vec<&str> = r.deleted.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["savepoint"]);
    let r = expire_tags(&st, &table, &ctx(commits[3] + MIN + 3 * DAY + 1)).unwrap();
    let names: Vec<&str> = r.deleted.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["2023-07-18", "2023-07-19"]);
    assert!(r
        .deleted
        .iter()
        .all(|d| d.reason == TagDeleteReason::TimeRetained));
    assert!(tag_names(&st, &table).is_empty());
}

#[test]
fn a_tag_without_retention_is_the_snapshot_file_and_zones_shift_periods() {
    let st = MemoryStorage::new();
    new_table(
        &st,
        "z",
        false,
        &[
            ("tag.automatic-creation", "process-time"),
            ("tag.creation-period", "hourly"),
        ],
    );
    write(&st, "z", 1, &[(Some("x"), None)], at(2023, 7, 18, 20, 30));
    let table = Table::load(&st, "z").unwrap();
    // The host is at UTC+8: 20:30 UTC is 04:30 local, the previous hour is 03.
    let east = MaintenanceContext {
        utc_offset_ms: 8 * HOUR,
        ..ctx(at(2023, 7, 18, 21, 0))
    };
    let before = everything(&st);
    let dry = MaintenanceContext {
        dry_run: true,
        ..east
    };
    let planned = auto_create_tags(&st, &table, &dry).unwrap();
    assert_eq!(everything(&st), before, "a dry run writes no tag");
    let r = auto_create_tags(&st, &table, &east).unwrap();
    assert_eq!(r.created, planned.created);
    assert_eq!(r.created[0].name, "2023-07-19 03");
    assert_eq!(
        st.read_all("z/tag/tag-2023-07-19 03").unwrap(),
        st.read_all("z/snapshot/snapshot-1").unwrap(),
        "without retention a tag is the snapshot's bytes"
    );
    // An auto-format name on an already auto-tagged snapshot is refused, as in Paimon.
    let e = create_tag(&st, &table, "2023-07-19 05", 1, None, &east).unwrap_err();
    assert!(e.message.contains("already auto-tagged"), "{e}");
}

#[test]
fn watermark_tags_follow_the_watermark_and_skip_missing_ones() {
    let st = MemoryStorage::new();
    new_table(
        &st,
        "w",
        false,
        &[
            ("tag.automatic-creation", "watermark"),
            ("tag.creation-period", "hourly"),
            ("tag.automatic-completion", "true"),
        ],
    );
    let wall = at(2030, 1, 1, 0, 0);
    let marks = [
        None,
        Some(i64::MIN),
        Some(at(2023, 7, 18, 12, 12)),
        Some(at(2023, 7, 18, 12, 59)),
        Some(at(2023, 7, 18, 13, 0)),
        Some(at(2023, 7, 18, 16, 30)),
        Some(at(2023, 7, 18, 16, 40)),
    ];
    let mut created = Vec::new();
    for (i, m) in marks.iter().enumerate() {
        write(&st, "w", i as u8 + 1, &[(Some("x"), None)], wall + i as i64);
        set_watermark(&st, "w", i as i64 + 1, *m);
        let table = Table::load(&st, "w").unwrap();
        let r = auto_create_tags(&st, &table, &ctx(wall + HOUR)).unwrap();
        created.extend(r.created.into_iter().map(|c| (c.name, c.snapshot_id)));
    }
    // No watermark and Long.MIN_VALUE make no tag; 12:12 tags hour 11 at once; 13:00 closes
    // hour 12; with completion the gap (13, 14, 15) is filled one tag per snapshot.
    assert_eq!(
        created,
        [
            ("2023-07-18 11".to_string(), 3),
            ("2023-07-18 12".to_string(), 5),
            ("2023-07-18 13".to_string(), 6),
            ("2023-07-18 14".to_string(), 7)
        ]
    );
}

#[test]
fn a_region_watermark_zone_names_tags_by_its_wall_clock_in_summer_and_winter() {
    // `sink.watermark-time-zone = America/New_York`: UTC-4 in July, UTC-5 in January, as
    // Java's `ZoneId` rules say (a fixed offset could only be right for one of them).
    for (mark, tag) in [
        (at(2023, 7, 18, 16, 30), "2023-07-18 11"),
        (at(2024, 1, 18, 16, 30), "2024-01-18 10"),
    ] {
        let st = MemoryStorage::new();
        new_table(
            &st,
            "w",
            false,
            &[
                ("tag.automatic-creation", "watermark"),
                ("tag.creation-period", "hourly"),
                ("sink.watermark-time-zone", "America/New_York"),
            ],
        );
        let wall = at(2030, 1, 1, 0, 0);
        write(&st, "w", 1, &[(Some("x"), None)], wall);
        set_watermark(&st, "w", 1, Some(mark));
        let table = Table::load(&st, "w").unwrap();
        let r = auto_create_tags(&st, &table, &ctx(wall + HOUR)).unwrap();
        let names: Vec<String> = r.created.into_iter().map(|c| c.name).collect();
        assert_eq!(names, vec![tag.to_string()]);
    }
    // A name the bundled database does not know is an invalid option naming its key.
    let st = MemoryStorage::new();
    new_table(
        &st,
        "bad",
        false,
        &[
            ("tag.automatic-creation", "watermark"),
            ("sink.watermark-time-zone", "Mars/Olympus_Mons"),
        ],
    );
    let table = Table::load(&st, "bad").unwrap();
    let e = auto_create_tags(&st, &table, &ctx(at(2030, 1, 1, 0, 0))).unwrap_err();
    assert!(
        matches!(&e.kind, paimon_compact::ErrorKind::InvalidOption { key, .. } if key == "sink.watermark-time-zone"),
        "{e}"
    );
}

/// Deletes snapshot files below `keep_from` and points EARLIEST at it, as snapshot expiration
/// leaves the snapshot directory (its other deletions are not needed here).
fn drop_snapshot_files(st: &MemoryStorage, path: &str, keep_from: i64) {
    for id in 1..keep_from {
        let _ = st.delete(&format!("{path}/snapshot/snapshot-{id}"));
    }
    st.put(
        &format!("{path}/snapshot/EARLIEST"),
        keep_from.to_string().into_bytes(),
    );
}

#[test]
fn deleting_a_tag_of_an_expired_snapshot_deletes_only_what_it_alone_kept() {
    let st = MemoryStorage::new();
    new_table(&st, "k", false, &[("partition.expiration-time", "1 d")]);
    let t1 = at(2024, 1, 10, 0, 0);
    write(
        &st,
        "k",
        1,
        &[(Some("2024-01-01"), None), (Some("2024-01-09"), None)],
        t1,
    );
    let table = Table::load(&st, "k").unwrap();
    let s1 = read_snapshot(&st, &table.paths, 1).unwrap();
    let old_files = live_files(&st, "k");
    create_tag(&st, &table, "t1", 1, None, &ctx(t1)).unwrap();
    create_tag(&st, &table, "t1-copy", 1, None, &ctx(t1)).unwrap();
    // Snapshot 2 drops 2024-01-01, snapshot 3 adds more data.
    expire_partitions(
        &st,
        &table,
        &config(&table),
        &ctx(t1),
        &DropCommit::procedure([1; 16]),
    )
    .unwrap();
    write(&st, "k", 3, &[(Some("2024-01-09"), None)], t1 + MIN);
    let dropped: Vec<String> = old_files
        .iter()
        .filter(|f| f.contains("dt=2024-01-01"))
        .cloned()
        .collect();
    assert_eq!(dropped.len(), 1);

    // While snapshot 1 exists, deleting a tag removes the tag file only.
    let r = delete_tag(&st, &table, "t1-copy", &ctx(t1)).unwrap();
    assert_eq!(r.deleted_files, ["k/tag/tag-t1-copy"]);
    create_tag(&st, &table, "t1-copy", 1, None, &ctx(t1)).unwrap();

    drop_snapshot_files(&st, "k", 3);
    // Two tags on the expired snapshot: deleting one keeps every file.
    let r = delete_tag(&st, &table, "t1-copy", &ctx(t1)).unwrap();
    assert_eq!(r.deleted_files, ["k/tag/tag-t1-copy"]);
    assert!(!r.deleted[0].cleaned);

    // A dry run of the last tag's deletion reports and keeps everything.
    let before = everything(&st);
    let dry = MaintenanceContext {
        dry_run: true,
        ..ctx(t1)
    };
    let planned = delete_tag(&st, &table, "t1", &dry).unwrap();
    assert_eq!(everything(&st), before);

    let r = delete_tag(&st, &table, "t1", &ctx(t1)).unwrap();
    assert_eq!(r.deleted_files, planned.deleted_files);
    assert!(r.deleted[0].cleaned);
    assert_eq!(r.deleted_files[0], "k/tag/tag-t1");
    // The dropped partition's file was held by the tag alone; the other is live.
    assert!(
        r.deleted_files.contains(&dropped[0]),
        "{:?}",
        r.deleted_files
    );
    for f in &old_files {
        assert_eq!(st.get(f).is_none(), dropped.contains(f), "{f}");
    }
    // Its manifest lists go; manifests the earliest snapshot still lists stay.
    let s3 = read_snapshot(&st, &table.paths, 3).unwrap();
    let kept: BTreeSet<String> = snapshot_manifests(&st, &table.paths, &s3)
        .unwrap()
        .into_iter()
        .map(|m| m.file_name)
        .collect();
    for list in [&s1.base_manifest_list, &s1.delta_manifest_list] {
        assert!(
            st.get(&format!("k/manifest/{list}")).is_none(),
            "{list} deleted"
        );
    }
    for m in snapshot_manifests(&st, &table.paths, &s3).unwrap() {
        assert!(st.get(&format!("k/manifest/{}", m.file_name)).is_some());
    }
    assert!(r
        .deleted_files
        .iter()
        .all(|f| !kept.iter().any(|k| f.ends_with(k.as_str()))));
    assert_eq!(
        dates(&read_rows(&st, "k")),
        ["2024-01-09"].iter().map(|s| s.to_string()).collect()
    );
    assert!(tag_names(&st, &table).is_empty());
}

#[test]
fn consumers_expire_by_modification_time() {
    let st = MemoryStorage::new();
    new_table(&st, "q", false, &[("consumer.expiration-time", "1 d")]);
    write(&st, "q", 1, &[(Some("x"), None)], at(2024, 1, 1, 0, 0));
    write(&st, "q", 2, &[(Some("x"), None)], at(2024, 1, 2, 0, 0));
    let table = Table::load(&st, "q").unwrap();
    let now = at(2024, 1, 10, 0, 0);
    for (id, next) in [("old", 1), ("young", 2), ("unknown", 2), ("gone", 1)] {
        reset_consumer(&st, &table.paths, id, Some(next), &ctx(now)).unwrap();
    }
    assert!(reset_consumer(&st, &table.paths, "bad", Some(9), &ctx(now)).is_err());
    reset_consumer(&st, &table.paths, "gone", None, &ctx(now)).unwrap();
    assert_eq!(
        list_consumers(&st, &table.paths).unwrap(),
        [
            ("old".to_string(), 1),
            ("unknown".to_string(), 2),
            ("young".to_string(), 2)
        ]
    );
    assert_eq!(min_next_snapshot(&st, &table.paths).unwrap(), Some(1));
    let mtimes: BTreeMap<&str, i64> = [
        ("q/consumer/consumer-old", now - DAY - 1),
        ("q/consumer/consumer-young", now - DAY),
    ]
    .into_iter()
    .collect();
    let modified = |p: &str| mtimes.get(p).copied();
    let dry = MaintenanceContext {
        dry_run: true,
        ..ctx(now)
    };
    let r = expire_consumers(&st, &table.paths, now - DAY, &dry, &modified).unwrap();
    assert_eq!(r.expired, ["old"]);
    assert_eq!(list_consumers(&st, &table.paths).unwrap().len(), 3);
    let r = expire_consumers(&st, &table.paths, now - DAY, &ctx(now), &modified).unwrap();
    assert_eq!(r.expired, ["old"]);
    assert_eq!(r.age_unknown, ["unknown"]);
    assert_eq!(r.kept, 1);
    assert_eq!(min_next_snapshot(&st, &table.paths).unwrap(), Some(2));
}

/// Every snapshot of the table can be read and names only files that exist.
fn assert_readable_everywhere(st: &MemoryStorage, path: &str) {
    let table = Table::load(st, path).unwrap();
    let latest = latest_snapshot_id(st, &table.paths).unwrap().unwrap();
    for id in 1..=latest {
        let state = scan_at(st, table.clone(), Some(id)).unwrap();
        for b in state.buckets.values() {
            for f in &b.files {
                let p = table
                    .paths
                    .live_data_file(&b.partition_path, b.bucket, &f.entry.file, "t")
                    .unwrap();
                assert!(st.get(&p).is_some(), "snapshot {id} names missing {p}");
            }
        }
    }
    read_rows(st, path);
}

#[test]
fn a_failure_at_any_storage_call_leaves_a_readable_table_and_a_rerun_finishes() {
    let base = MemoryStorage::new();
    new_table(
        &base,
        "f",
        false,
        &[
            ("partition.expiration-time", "1 d"),
            ("partition.expiration-batch-size", "1"),
        ],
    );
    let parts = [
        (Some("2024-01-01"), None),
        (Some("2024-01-02"), None),
        (Some("2024-01-03"), None),
        (Some("2030-01-01"), None),
    ];
    write(&base, "f", 1, &parts, at(2024, 1, 5, 0, 0));
    write(&base, "f", 2, &parts, at(2024, 1, 5, 1, 0));
    let now = ctx(at(2024, 1, 10, 0, 0));
    let expected = ["2030-01-01"]
        .iter()
        .map(|s| s.to_string())
        .collect::<BTreeSet<_>>();

    let mut failures = 0;
    for fail_at in 0.. {
        let inner = clone_of(&base);
        let faulty = FaultyStorage::new(inner.clone(), Some(fail_at));
        let table = Table::load(&inner, "f").unwrap();
        let cfg = config(&table);
        let result = expire_partitions(
            &faulty,
            &table,
            &cfg,
            &now,
            &DropCommit::procedure([fail_at as u8; 16]),
        );
        let hit = faulty.calls.load(std::sync::atomic::Ordering::SeqCst) > fail_at;
        assert_readable_everywhere(&inner, "f");
        if result.is_err() {
            failures += 1;
        }
        let rerun = expire_partitions(
            &inner,
            &table,
            &cfg,
            &now,
            &DropCommit::procedure([200; 16]),
        )
        .unwrap();
        assert_readable_everywhere(&inner, "f");
        assert_eq!(
            dates(&read_rows(&inner, "f")),
            expected,
            "fail_at {fail_at}: {rerun:?}"
        );
        if !hit {
            assert!(result.is_ok());
            assert!(rerun.expired.is_empty());
            break;
        }
    }
    assert!(failures > 10, "the loop injected failures ({failures})");
}

/// Whether every file a tag needs (manifest lists, manifests, data files) exists.
fn tag_is_whole(st: &MemoryStorage, table: &Table, name: &str) -> bool {
    let Some(tag) = read_tag(st, &table.paths, name).unwrap() else {
        return false;
    };
    let s = &tag.snapshot;
    let Ok(manifests) = snapshot_manifests(st, &table.paths, s) else {
        return false;
    };
    let Ok(entries) = live_entries(st, &table.paths, &manifests, "tag", &|_| true) else {
        return false;
    };
    entries.iter().all(|(e, _)| {
        let ppath = table.partition_path(&e.partition, "tag").unwrap();
        let p = table
            .paths
            .live_data_file(&ppath, e.bucket, &e.file, "tag")
            .unwrap();
        st.get(&p).is_some()
    })
}

#[test]
fn a_failure_during_tag_deletion_never_leaves_a_tag_naming_missing_files() {
    let base = MemoryStorage::new();
    new_table(&base, "k", false, &[("partition.expiration-time", "1 d")]);
    let t1 = at(2024, 1, 10, 0, 0);
    write(
        &base,
        "k",
        1,
        &[(Some("2024-01-01"), None), (Some("2024-01-09"), None)],
        t1,
    );
    let table = Table::load(&base, "k").unwrap();
    create_tag(&base, &table, "t1", 1, None, &ctx(t1)).unwrap();
    expire_partitions(
        &base,
        &table,
        &config(&table),
        &ctx(t1),
        &DropCommit::procedure([1; 16]),
    )
    .unwrap();
    write(&base, "k", 3, &[(Some("2024-01-09"), None)], t1 + MIN);
    drop_snapshot_files(&base, "k", 3);
    let clean = clone_of(&base);
    let full = delete_tag(&clean, &table, "t1", &ctx(t1)).unwrap();
    assert!(full.deleted_files.len() > 2, "{:?}", full.deleted_files);

    for fail_at in 0.. {
        let inner = clone_of(&base);
        let faulty = FaultyStorage::new(inner.clone(), Some(fail_at));
        let result = delete_tag(&faulty, &table, "t1", &ctx(t1));
        let hit = faulty.calls.load(std::sync::atomic::Ordering::SeqCst) > fail_at;
        read_rows(&inner, "k");
        if inner.get("k/tag/tag-t1").is_some() {
            assert!(tag_is_whole(&inner, &table, "t1"), "fail_at {fail_at}");
            // The tag is still there: a rerun does the whole deletion.
            let rerun = delete_tag(&inner, &table, "t1", &ctx(t1)).unwrap();
            assert_eq!(rerun.deleted_files, full.deleted_files, "fail_at {fail_at}");
        } else {
            // Deleted first: a failure later only leaves files for orphan removal.
            for f in &full.deleted_files {
                if inner.get(f).is_some() {
                    // Either the run failed, or a read failed and the cleanup was skipped
                    // with a warning (never guessed).
                    let skipped = result.as_ref().map_or(true, |r| !r.warnings.is_empty());
                    assert!(skipped, "fail_at {fail_at}: {f}");
                }
            }
        }
        read_rows(&inner, "k");
        if !hit {
            assert!(result.is_ok());
            assert_eq!(everything(&inner), everything(&clean));
            break;
        }
    }
}

#[test]
fn a_zero_tag_period_is_an_invalid_option_not_a_division_by_zero() {
    use paimon_compact::error::ErrorKind;
    use paimon_compact::options::maintenance::TagOptions;
    let raw: BTreeMap<String, String> = [
        ("tag.automatic-creation", "process-time"),
        ("tag.creation-period-duration", "0 s"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let e = TagOptions::from_options(&raw).unwrap_err();
    assert!(
        matches!(&e.kind, ErrorKind::InvalidOption { key, .. } if key == "tag.creation-period-duration"),
        "{e}"
    );
    let ok: BTreeMap<String, String> = [(
        "tag.creation-period-duration".to_string(),
        "2 h".to_string(),
    )]
    .into_iter()
    .collect();
    assert_eq!(
        TagOptions::from_options(&ok).unwrap().period_duration_ms,
        Some(7_200_000)
    );
}
