//! Partial-update sequence groups (`fields.<seq>.sequence-group`), as Paimon HEAD's
//! `PartialUpdateMergeFunction` merges them: a group's columns change only with a record whose
//! ordering fields are at least the row's, an aggregated column folds late inputs in reversed,
//! retractions null (or retract) the groups they win, and
//! `partial-update.remove-record-on-sequence-group` removes the row.
#![cfg(feature = "rewrite")]

use crate::merge_support;

use merge_support::*;
use paimon_compact::meta::Level;
use paimon_compact::rewrite::merge::{rewrite_merge_tree, RowKind};
use paimon_compact::storage::MemoryStorage;
use paimon_compact::ErrorKind;

fn rec(key: i64, seq: i64, kind: RowKind, n: Option<i64>, v: Option<&str>, b: Option<bool>) -> Rec {
    Rec {
        key,
        seq,
        kind,
        v: v.map(str::to_string),
        n,
        b,
    }
}

/// The runs fully merged under `pairs` (partial-update added); with `keep_deletes` the output
/// goes to level 3 with deletes kept, else to the max level with deletes dropped.
fn merge(
    runs: &[Vec<Rec>],
    pairs: &[(&str, &str)],
    keep_deletes: bool,
) -> paimon_compact::Result<Vec<Rec>> {
    let st = MemoryStorage::new();
    let inputs = put_runs(&st, runs);
    let mut all = vec![("merge-engine", "partial-update")];
    all.extend_from_slice(pairs);
    let mut req = full_merge_request(inputs, None);
    let level = if keep_deletes { 3 } else { 5 };
    if keep_deletes {
        req.drop_delete = false;
        req.output_level = Level::new(3);
    }
    let r = rewrite_merge_tree(&st, &req, &opts(&all))?;
    Ok(r.outputs
        .iter()
        .flat_map(|f| check_meta(&st, f, level))
        .collect())
}

const N_ORDERS_V: (&str, &str) = ("fields.n.sequence-group", "v");

#[test]
fn a_group_changes_only_with_a_record_at_least_as_new_as_the_row() {
    use RowKind::*;
    let runs = [
        vec![
            rec(1, 1, Insert, Some(5), Some("a"), Some(true)),
            rec(2, 2, Insert, Some(5), Some("a"), None),
            rec(3, 3, Insert, None, Some("a"), None),
        ],
        vec![
            // older n: v stays; b is in no group and takes the non-null value
            rec(1, 4, Insert, Some(3), Some("b"), Some(false)),
            // n all null: the group is left alone, even v's non-null value
            rec(1, 5, Insert, None, Some("c"), None),
            // an equal n wins, and a null v in the winning record nulls the field
            rec(2, 6, Insert, Some(5), None, Some(true)),
            // a row whose n is null loses to any n
            rec(3, 7, Insert, Some(-9), Some("z"), None),
        ],
    ];
    assert_eq!(
        merge(&runs, &[N_ORDERS_V], false).unwrap(),
        vec![
            rec(1, 5, Insert, Some(5), Some("a"), Some(false)),
            rec(2, 6, Insert, Some(5), None, Some(true)),
            rec(3, 7, Insert, Some(-9), Some("z"), None),
        ]
    );
}

#[test]
fn a_retraction_nulls_the_groups_it_wins_and_leaves_other_columns() {
    use RowKind::*;
    let runs = [
        vec![
            rec(1, 1, Insert, Some(5), Some("a"), Some(true)),
            rec(2, 2, Insert, Some(5), Some("a"), Some(true)),
        ],
        vec![
            // wins: v nulled, n takes the retraction's; b (no group) ignores retractions
            rec(1, 3, UpdateBefore, Some(6), Some("a"), Some(false)),
            // a later insert with an older n loses to the retraction's n
            rec(1, 4, Insert, Some(4), Some("z"), None),
            // loses: nothing changes
            rec(2, 5, Delete, Some(4), Some("a"), None),
        ],
    ];
    assert_eq!(
        merge(&runs, &[N_ORDERS_V], false).unwrap(),
        vec![
            rec(1, 4, Insert, Some(6), None, Some(true)),
            rec(2, 5, Insert, Some(5), Some("a"), Some(true)),
        ]
    );
}

#[test]
fn an_aggregated_column_folds_late_inputs_reversed_and_retracts() {
    use RowKind::*;
    // v orders n, and n sums.
    let pairs = [
        ("fields.v.sequence-group", "n"),
        ("fields.n.aggregate-function", "sum"),
    ];
    let runs = [
        vec![
            rec(1, 1, Insert, Some(1), Some("b"), None),
            rec(2, 2, Insert, Some(10), Some("b"), None),
        ],
        vec![
            // loses (a < b) but still adds: aggReversed
            rec(1, 3, Insert, Some(2), Some("a"), None),
            // v null: the group is skipped, nothing is added
            rec(1, 4, Insert, Some(100), None, None),
            // wins and retracts 1
            rec(1, 5, UpdateBefore, Some(1), Some("c"), None),
            // a losing retraction retracts too
            rec(2, 6, UpdateBefore, Some(4), Some("a"), None),
        ],
    ];
    assert_eq!(
        merge(&runs, &pairs, false).unwrap(),
        vec![
            rec(1, 5, Insert, Some(2), Some("c"), None),
            rec(2, 6, Insert, Some(6), Some("b"), None),
        ]
    );
    // ignore-retract keeps the accumulator.
    let mut ignoring = pairs.to_vec();
    ignoring.push(("fields.n.ignore-retract", "true"));
    assert_eq!(
        merge(&runs, &ignoring, false).unwrap(),
        vec![
            rec(1, 5, Insert, Some(3), Some("c"), None),
            rec(2, 6, Insert, Some(10), Some("b"), None),
        ]
    );
}

#[test]
fn a_delete_that_wins_a_removal_group_removes_the_row() {
    use RowKind::*;
    let pairs = [
        N_ORDERS_V,
        ("partial-update.remove-record-on-sequence-group", "n"),
    ];
    let runs = [
        vec![
            rec(1, 1, Insert, Some(5), Some("a"), Some(true)),
            rec(2, 2, Insert, Some(5), Some("a"), Some(true)),
            rec(3, 3, Insert, Some(5), Some("a"), Some(true)),
        ],
        vec![
            // wins: the row is removed
            rec(1, 4, Delete, Some(6), Some("a"), None),
            // loses: nothing happens
            rec(2, 5, Delete, Some(4), Some("a"), None),
            // a -U is not a delete: it only retracts
            rec(3, 6, UpdateBefore, Some(6), Some("a"), None),
        ],
    ];
    assert_eq!(
        merge(&runs, &pairs, false).unwrap(),
        vec![
            rec(2, 5, Insert, Some(5), Some("a"), Some(true)),
            rec(3, 6, Insert, Some(6), None, Some(true)),
        ]
    );
    // Below the max level the removal is kept as a -D carrying the delete's own values.
    let kept = merge(&runs, &pairs, true).unwrap();
    assert_eq!(kept[0], rec(1, 4, Delete, Some(6), Some("a"), None));
}

#[test]
fn a_key_that_starts_with_a_retraction_starts_from_its_values_and_stays_deleted_without_insert() {
    use RowKind::*;
    let runs = [
        vec![
            rec(1, 1, UpdateBefore, Some(5), Some("x"), Some(true)),
            rec(2, 2, UpdateBefore, Some(5), Some("x"), Some(true)),
        ],
        vec![
            rec(1, 3, Insert, Some(6), Some("y"), None),
            rec(2, 4, UpdateBefore, Some(7), Some("w"), None),
        ],
    ];
    // key 1: seeded from the -U (b = true survives), which then nulls v; the insert wins.
    // key 2: no insert at all: a -D (kept below the max level, dropped at it).
    assert_eq!(
        merge(&runs, &[N_ORDERS_V], true).unwrap(),
        vec![
            rec(1, 3, Insert, Some(6), Some("y"), Some(true)),
            rec(2, 4, Delete, Some(7), None, Some(true)),
        ]
    );
    assert_eq!(
        merge(&runs, &[N_ORDERS_V], false).unwrap(),
        vec![rec(1, 3, Insert, Some(6), Some("y"), Some(true))]
    );
}

#[test]
fn configurations_paimon_refuses_are_invalid_options() {
    use RowKind::*;
    let runs = [
        vec![rec(1, 1, Insert, Some(5), Some("a"), None)],
        vec![rec(1, 2, Insert, Some(6), Some("b"), None)],
    ];
    for (pairs, key) in [
        // a primary key field in a group
        (
            vec![("fields.n.sequence-group", "k")],
            "fields.n.sequence-group",
        ),
        (
            vec![("fields.k.sequence-group", "v")],
            "fields.k.sequence-group",
        ),
        // a field that is not a column
        (
            vec![("fields.n.sequence-group", "w")],
            "fields.n.sequence-group",
        ),
        // a key without the dots
        (
            vec![("fieldsn-sequence-group", "v")],
            "fieldsn-sequence-group",
        ),
        // a column in two groups
        (
            vec![
                ("fields.n.sequence-group", "v"),
                ("fields.b.sequence-group", "v"),
            ],
            "fields.n.sequence-group",
        ),
        // an aggregate on a column no group protects
        (
            vec![N_ORDERS_V, ("fields.b.aggregate-function", "bool_or")],
            "fields.b.aggregate-function",
        ),
        (
            vec![("fields.n.aggregate-function", "sum")],
            "fields.n.aggregate-function",
        ),
        // removal by a field that orders no group
        (
            vec![
                N_ORDERS_V,
                ("partial-update.remove-record-on-sequence-group", "v"),
            ],
            "partial-update.remove-record-on-sequence-group",
        ),
        // removal with ignore-delete, and remove-record-on-delete with groups
        (
            vec![
                N_ORDERS_V,
                ("partial-update.remove-record-on-sequence-group", "n"),
                ("ignore-delete", "true"),
            ],
            "partial-update.remove-record-on-sequence-group",
        ),
        (
            vec![
                N_ORDERS_V,
                ("partial-update.remove-record-on-delete", "true"),
            ],
            "partial-update.remove-record-on-delete",
        ),
    ] {
        let e = merge(&runs, &pairs, false).unwrap_err();
        assert!(
            matches!(&e.kind, ErrorKind::InvalidOption { key: k, .. } if k == key),
            "{pairs:?}: {e}"
        );
    }
    // last_non_null_value needs no group (and changes nothing without one).
    let got = merge(
        &runs,
        &[("fields.v.aggregate-function", "last_non_null_value")],
        false,
    );
    assert_eq!(
        got.unwrap(),
        vec![rec(1, 2, Insert, Some(6), Some("b"), None)]
    );
    // A function Paimon has that this build does not is unsupported, with the field named.
    let e = merge(
        &runs,
        &[N_ORDERS_V, ("fields.v.aggregate-function", "collect")],
        false,
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
}

#[test]
fn remove_record_on_delete_ignores_an_update_before() {
    use RowKind::*;
    // Without sequence groups: a -U is ignored (Paimon returns before it), a -D removes.
    let runs = [
        vec![
            rec(1, 1, Insert, Some(5), Some("a"), Some(true)),
            rec(2, 2, Insert, Some(5), Some("a"), Some(true)),
        ],
        vec![
            rec(1, 3, UpdateBefore, Some(5), Some("a"), Some(true)),
            rec(1, 4, Insert, Some(6), None, None),
            rec(2, 5, Delete, None, None, None),
        ],
    ];
    let got = merge(
        &runs,
        &[("partial-update.remove-record-on-delete", "true")],
        false,
    )
    .unwrap();
    assert_eq!(got, vec![rec(1, 4, Insert, Some(6), Some("a"), Some(true))]);
}
