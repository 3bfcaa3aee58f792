//! Record-level expiry in the merge rewrite (`record-level.expire-time` with
//! `record-level.time-field`, docs/compaction.md §11.1): input rows whose time has expired are
//! dropped before the merge engine sees them, null times are kept, the boundary is
//! `now <= t + expire`, and a table whose time field cannot hold a time is refused.
#![cfg(feature = "rewrite")]

use crate::merge_support;

use merge_support::*;
use paimon_compact::options::{CoreOptions, Flavor, TableKind};
use paimon_compact::rewrite::merge::{rewrite_merge_tree, MergeTreeRewriteResult, RowKind};
use paimon_compact::storage::MemoryStorage;
use paimon_compact::ErrorKind;

/// The job's clock: 2026-01-01T00:00:00Z.
const NOW_S: i64 = 1_767_225_600;
const DAY: i64 = 86_400;

fn rec(key: i64, seq: i64, kind: RowKind, n: Option<i64>, v: &str) -> Rec {
    Rec {
        key,
        seq,
        kind,
        v: Some(v.to_string()),
        n,
        b: None,
    }
}

/// Two runs merged fully at `NOW_S` with the time field `n` and `pairs` on top.
fn merge(runs: [Vec<Rec>; 2], pairs: &[(&str, &str)]) -> (Vec<Rec>, MergeTreeRewriteResult) {
    let st = MemoryStorage::new();
    let inputs = put_runs(&st, &runs);
    let mut req = full_merge_request(inputs, None);
    req.creation_time_ms = NOW_S * 1000 + 999;
    let mut all = vec![("record-level.time-field", "n")];
    all.extend_from_slice(pairs);
    let r = rewrite_merge_tree(&st, &req, &opts(&all)).unwrap();
    let rows = r
        .outputs
        .iter()
        .flat_map(|f| check_meta(&st, f, 5))
        .collect();
    (rows, r)
}

#[test]
fn expired_rows_are_dropped_before_the_merge_and_null_times_are_kept() {
    use RowKind::*;
    let fresh = Some(NOW_S);
    let stale = Some(NOW_S - 2 * DAY);
    let (rows, r) = merge(
        [
            vec![
                rec(1, 1, Insert, fresh, "k1-old-fresh"),
                rec(2, 2, Insert, stale, "k2-old-stale"),
                rec(3, 3, Insert, fresh, "k3-old-fresh"),
                rec(4, 4, Insert, None, "k4-null"),
                rec(5, 5, Insert, stale, "k5-stale"),
            ],
            vec![
                // the newest record expired: the older fresh one wins
                rec(1, 6, Insert, stale, "k1-new-stale"),
                // both expired: the key is gone
                rec(2, 7, UpdateAfter, stale, "k2-new-stale"),
                // an expired retraction retracts nothing
                rec(3, 8, Delete, stale, "k3-delete-stale"),
                // a null time is kept whatever its neighbours
                rec(4, 9, Insert, None, "k4-null-newer"),
            ],
        ],
        &[("record-level.expire-time", "1 d")],
    );
    let got: Vec<(i64, String)> = rows
        .iter()
        .map(|r| (r.key, r.v.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        got,
        vec![
            (1, "k1-old-fresh".to_string()),
            (3, "k3-old-fresh".to_string()),
            (4, "k4-null-newer".to_string()),
        ]
    );
    assert_eq!(r.metrics.expired_rows, 5);
    assert_eq!(r.metrics.input_rows, 4);
}

#[test]
fn a_row_is_kept_up_to_its_time_plus_the_expire_time_in_whole_seconds() {
    use RowKind::*;
    // expire 1 d 0.9 s counts as one day: at NOW_S, a row of NOW_S - 1 d is kept (now <= t +
    // expire), one of a second earlier is dropped. BIGINT millis (>= 10^12) count too.
    let (rows, r) = merge(
        [
            vec![
                rec(1, 1, Insert, Some(NOW_S - DAY), "edge"),
                rec(2, 2, Insert, Some(NOW_S - DAY - 1), "past-edge"),
            ],
            vec![
                rec(3, 3, Insert, Some((NOW_S - DAY) * 1000), "edge-millis"),
                rec(
                    4,
                    4,
                    Insert,
                    Some((NOW_S - DAY - 1) * 1000 + 999),
                    "past-edge-millis",
                ),
            ],
        ],
        &[("record-level.expire-time", "86400900 ms")],
    );
    let keys: Vec<i64> = rows.iter().map(|r| r.key).collect();
    assert_eq!(keys, vec![1, 3]);
    assert_eq!(r.metrics.expired_rows, 2);
}

#[test]
fn without_an_expire_time_or_with_the_cpp_flavor_nothing_expires() {
    use RowKind::*;
    let runs = || {
        [
            vec![rec(1, 1, Insert, Some(0), "ancient")],
            vec![rec(2, 2, Insert, Some(0), "ancient too")],
        ]
    };
    let (rows, r) = merge(runs(), &[]);
    assert_eq!(rows.len(), 2);
    assert_eq!(r.metrics.expired_rows, 0);
    let cpp = CoreOptions::from_pairs(
        TableKind::PrimaryKey,
        Flavor::Cpp,
        [
            ("record-level.expire-time", "1 s"),
            ("record-level.time-field", "n"),
        ],
    )
    .unwrap();
    assert!(cpp.record_level_expire.is_none());
}

#[test]
fn a_time_field_that_cannot_hold_a_time_is_an_invalid_option() {
    // No time field at all.
    let e = CoreOptions::from_pairs(
        TableKind::PrimaryKey,
        Flavor::Java,
        [("record-level.expire-time", "1 d")],
    )
    .unwrap_err();
    assert!(
        matches!(&e.kind, ErrorKind::InvalidOption { key, .. } if key == "record-level.expire-time"),
        "{e}"
    );
    assert!(e.to_string().contains("record-level.time-field"), "{e}");
    // Append tables ignore the options, as Paimon does.
    let append = CoreOptions::from_pairs(
        TableKind::Append,
        Flavor::Java,
        [("record-level.expire-time", "1 d")],
    )
    .unwrap();
    assert!(append.record_level_expire.is_none());
    // A STRING column, and a column that does not exist, refused by the merge before any
    // output is written.
    for field in ["v", "missing"] {
        let st = MemoryStorage::new();
        let rows = vec![rec(1, 1, RowKind::Insert, Some(NOW_S), "x")];
        let req = full_merge_request(
            vec![vec![put_file(&st, "data-0.parquet", 0, &rows, 2)]],
            None,
        );
        let o = opts(&[
            ("record-level.expire-time", "1 d"),
            ("record-level.time-field", field),
        ]);
        let e = rewrite_merge_tree(&st, &req, &o).unwrap_err();
        assert!(
            matches!(&e.kind, ErrorKind::InvalidOption { key, .. } if key == "record-level.time-field"),
            "{e}"
        );
        assert!(e.to_string().contains(field), "{e}");
        assert_eq!(files_in(&st), vec![format!("{DIR}/data-0.parquet")]);
    }
}
