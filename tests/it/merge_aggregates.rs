//! Aggregate functions through the merge rewrite, beyond what the merge property tests model:
//! `product` (Paimon's `FieldProductAgg`: exact integer products, truncating division on
//! retraction, nulls leave the accumulator, an overflow fails the merge as it fails Paimon's).
#![cfg(feature = "rewrite")]

use crate::merge_support;

use merge_support::*;
use paimon_compact::rewrite::merge::{rewrite_merge_tree, RowKind};
use paimon_compact::storage::MemoryStorage;
use paimon_compact::ErrorKind;

fn rec(key: i64, seq: i64, kind: RowKind, n: Option<i64>) -> Rec {
    Rec {
        key,
        seq,
        kind,
        v: None,
        n,
        b: None,
    }
}

fn product_of(runs: [Vec<Rec>; 2]) -> paimon_compact::Result<Vec<(i64, Option<i64>)>> {
    let st = MemoryStorage::new();
    let inputs = put_runs(&st, &runs);
    let o = opts(&[
        ("merge-engine", "aggregation"),
        ("fields.n.aggregate-function", "product"),
    ]);
    let r = rewrite_merge_tree(&st, &full_merge_request(inputs, None), &o)?;
    Ok(r.outputs
        .iter()
        .flat_map(|f| check_meta(&st, f, 5))
        .map(|r| (r.key, r.n))
        .collect())
}

#[test]
fn product_multiplies_skips_nulls_and_divides_on_retraction() {
    use RowKind::*;
    let got = product_of([
        vec![
            rec(1, 1, Insert, Some(2)),
            rec(2, 2, Insert, None),
            rec(3, 3, Insert, Some(-7)),
        ],
        vec![
            rec(1, 4, Insert, Some(-3)),
            rec(1, 5, Insert, None),
            rec(1, 6, Insert, Some(4)),
            rec(2, 7, Insert, Some(5)),
            // -7 / 2 truncates toward zero, as Java's division does
            rec(3, 8, UpdateBefore, Some(2)),
        ],
    ])
    .unwrap();
    assert_eq!(got, vec![(1, Some(-24)), (2, Some(5)), (3, Some(-3))]);
}

#[test]
fn a_product_that_overflows_or_divides_by_zero_fails_the_merge() {
    use RowKind::*;
    for second in [
        rec(1, 2, Insert, Some(i64::MAX / 2)),
        rec(1, 2, UpdateBefore, Some(0)),
    ] {
        let e = product_of([vec![rec(1, 1, Insert, Some(3))], vec![second.clone()]]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unsupported, "{second:?}: {e}");
        assert!(e.message.contains("'product' of field 'n'"), "{e}");
    }
}

fn listagg_of(runs: [Vec<Rec>; 2], delimiter: &str) -> Vec<(i64, Option<String>)> {
    let st = MemoryStorage::new();
    let inputs = put_runs(&st, &runs);
    let o = opts(&[
        ("merge-engine", "aggregation"),
        ("fields.v.aggregate-function", "listagg"),
        ("fields.v.distinct", "true"),
        ("fields.v.list-agg-delimiter", delimiter),
    ]);
    let r = rewrite_merge_tree(&st, &full_merge_request(inputs, None), &o).unwrap();
    r.outputs
        .iter()
        .flat_map(|f| check_meta(&st, f, 5))
        .map(|r| (r.key, r.v))
        .collect()
}

fn text(key: i64, seq: i64, v: Option<&str>) -> Rec {
    Rec {
        v: v.map(str::to_string),
        ..rec(key, seq, RowKind::Insert, None)
    }
}

#[test]
fn listagg_distinct_appends_only_tokens_not_yet_in_the_accumulator() {
    let got = listagg_of(
        [
            vec![text(1, 1, Some("a;b;a")), text(2, 2, Some("x"))],
            vec![
                // "a" is known, the empty and blank tokens are skipped, "c" is new once
                text(1, 3, Some("a;;c; ;c")),
                text(1, 4, None),
                text(1, 5, Some("b")),
                // a blank input leaves the accumulator
                text(2, 6, Some("  ")),
            ],
        ],
        ";",
    );
    assert_eq!(
        got,
        vec![(1, Some("a;b;a;c".to_string())), (2, Some("x".to_string()))]
    );
    // An empty delimiter splits on spaces and joins with nothing.
    let got = listagg_of(
        [vec![text(1, 1, Some("a b"))], vec![text(1, 2, Some("b c"))]],
        "",
    );
    assert_eq!(got, vec![(1, Some("a bc".to_string()))]);
}

/// `aggregation.remove-record-on-delete` (Paimon HEAD's `AggregateMergeFunction`): a `-D`
/// makes the row the delete's own values, which later records aggregate onto, and the result
/// a `-D` while it is the key's last record (dropped at the max level).
#[test]
fn remove_record_on_delete_restarts_the_row_from_the_delete() {
    use RowKind::*;
    let st = MemoryStorage::new();
    let runs = [
        vec![
            rec(1, 1, Insert, Some(5)),
            rec(2, 2, Insert, Some(5)),
            rec(3, 3, Insert, Some(7)),
        ],
        vec![
            rec(1, 4, Delete, Some(2)),
            rec(1, 5, Insert, Some(3)),
            rec(2, 6, Delete, Some(2)),
            rec(3, 7, UpdateBefore, Some(1)),
        ],
    ];
    let inputs = put_runs(&st, &runs);
    let o = opts(&[
        ("merge-engine", "aggregation"),
        ("fields.n.aggregate-function", "sum"),
        ("aggregation.remove-record-on-delete", "true"),
    ]);
    let r = rewrite_merge_tree(&st, &full_merge_request(inputs, None), &o).unwrap();
    let got: Vec<(i64, Option<i64>)> = r
        .outputs
        .iter()
        .flat_map(|f| check_meta(&st, f, 5))
        .map(|r| (r.key, r.n))
        .collect();
    // key 1: the delete's 2, then + 3; key 2 ends deleted; key 3: a -U still retracts.
    assert_eq!(got, vec![(1, Some(5)), (3, Some(6))]);
    // Paimon refuses the option together with a field's ignore-retract.
    let e = rewrite_merge_tree(
        &st,
        &full_merge_request(put_runs(&st, &runs), None),
        &opts(&[
            ("merge-engine", "aggregation"),
            ("fields.n.aggregate-function", "sum"),
            ("fields.n.ignore-retract", "true"),
            ("aggregation.remove-record-on-delete", "true"),
        ]),
    )
    .unwrap_err();
    assert!(
        matches!(&e.kind, ErrorKind::InvalidOption { key, .. } if key == "aggregation.remove-record-on-delete"),
        "{e}"
    );
}
