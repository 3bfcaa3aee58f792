//! `sequence.field.sort-order`: with `descending`, the record with the smallest
//! `sequence.field` value is the newest, as in Paimon (`CoreOptions.SEQUENCE_FIELD_SORT_ORDER`,
//! applied by `UserDefinedSeqComparator`). Only the user field reverses: equal values are still
//! ordered by `_SEQUENCE_NUMBER` ascending, and a null value is the oldest in both orders.
#![cfg(feature = "rewrite")]

use crate::merge_support;

use merge_support::*;
use paimon_compact::rewrite::merge::{rewrite_merge_tree, RowKind};
use paimon_compact::storage::MemoryStorage;

fn rec(key: i64, seq: i64, n: Option<i64>, v: Option<&str>, b: Option<bool>) -> Rec {
    Rec {
        key,
        seq,
        kind: RowKind::Insert,
        v: v.map(str::to_string),
        n,
        b,
    }
}

/// Three runs (one row per key each), fully compacted with `sequence.field = n` in `order`
/// (`None`: the option unset), under `engine`.
fn merge(engine: &str, order: Option<&str>) -> Vec<Rec> {
    let st = MemoryStorage::new();
    // key 1: n = 5, 3, 9 — the smallest n (3) is the second record, the largest the third.
    // key 2: n = 3, 3, 7 — a tie on n is broken by the sequence number, ascending.
    // key 3: n = null, 4, null — nulls are the oldest whichever the order.
    let runs = [
        vec![
            rec(1, 1, Some(5), Some("a"), None),
            rec(2, 2, Some(3), Some("x"), Some(true)),
            rec(3, 3, None, Some("p"), Some(true)),
        ],
        vec![
            rec(1, 4, Some(3), None, Some(true)),
            rec(2, 5, Some(3), Some("y"), None),
            rec(3, 6, Some(4), Some("q"), None),
        ],
        vec![
            rec(1, 7, Some(9), Some("c"), Some(false)),
            rec(2, 8, Some(7), Some("z"), Some(false)),
            rec(3, 9, None, Some("r"), Some(false)),
        ],
    ];
    let inputs = put_runs(&st, &runs);
    let mut pairs = vec![("merge-engine", engine), ("sequence.field", "n")];
    if let Some(order) = order {
        pairs.push(("sequence.field.sort-order", order));
    }
    let r = rewrite_merge_tree(&st, &full_merge_request(inputs, None), &opts(&pairs)).unwrap();
    r.outputs
        .iter()
        .flat_map(|f| check_meta(&st, f, 5))
        .collect()
}

#[test]
fn deduplicate_keeps_the_smallest_sequence_value_when_descending() {
    let got = merge("deduplicate", Some("descending"));
    assert_eq!(
        got,
        vec![
            // n = 3 is the newest
            rec(1, 4, Some(3), None, Some(true)),
            // n = 7 is older than both n = 3; of those, sequence number 5 is newer than 2
            rec(2, 5, Some(3), Some("y"), None),
            // the only non-null n beats both nulls
            rec(3, 6, Some(4), Some("q"), None),
        ]
    );
    // Upper case parses too (Paimon matches enum values case-insensitively).
    assert_eq!(merge("deduplicate", Some("DESCENDING")), got);
}

#[test]
fn deduplicate_keeps_the_largest_sequence_value_when_ascending() {
    let want = vec![
        rec(1, 7, Some(9), Some("c"), Some(false)),
        rec(2, 8, Some(7), Some("z"), Some(false)),
        rec(3, 6, Some(4), Some("q"), None),
    ];
    assert_eq!(merge("deduplicate", Some("ascending")), want);
    // The default is ascending.
    assert_eq!(merge("deduplicate", None), want);
}

#[test]
fn partial_update_applies_records_in_descending_sequence_order() {
    // key 1 in order n = 9 (seq 7), 5 (seq 1), 3 (seq 4): v c→a, b false→true; the result
    // carries the newest record's sequence number.
    // key 2 in order n = 7 (seq 8), 3 (seq 2), 3 (seq 5).
    // key 3 in order null (seq 3), null (seq 9), 4 (seq 6).
    assert_eq!(
        merge("partial-update", Some("descending")),
        vec![
            rec(1, 4, Some(3), Some("a"), Some(true)),
            rec(2, 5, Some(3), Some("y"), Some(true)),
            rec(3, 6, Some(4), Some("q"), Some(false)),
        ]
    );
}

#[test]
fn partial_update_in_ascending_order_is_unchanged() {
    // key 1 in order n = 3 (seq 4), 5 (seq 1), 9 (seq 7).
    // key 2 in order n = 3 (seq 2), 3 (seq 5), 7 (seq 8).
    // key 3 in order null (seq 3), null (seq 9), 4 (seq 6).
    let want = vec![
        rec(1, 7, Some(9), Some("c"), Some(false)),
        rec(2, 8, Some(7), Some("z"), Some(false)),
        rec(3, 6, Some(4), Some("q"), Some(false)),
    ];
    assert_eq!(merge("partial-update", Some("ascending")), want);
    assert_eq!(merge("partial-update", None), want);
}
