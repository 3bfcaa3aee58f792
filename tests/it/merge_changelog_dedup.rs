//! `changelog-producer.row-deduplicate` (with `-ignore-fields`): a full-compaction changelog
//! leaves out the `-U`/`+U` pair of a key whose value did not change in the compared columns.
#![cfg(feature = "rewrite")]

use crate::merge_support;

use merge_support::*;
use paimon_compact::rewrite::merge::{rewrite_merge_tree, RowKind};
use paimon_compact::storage::MemoryStorage;

fn rec(key: i64, seq: i64, v: &str, n: i64) -> Rec {
    Rec {
        key,
        seq,
        kind: RowKind::Insert,
        v: Some(v.to_string()),
        n: Some(n),
        b: None,
    }
}

/// The changelog of merging a max-level run with a level-0 run, as (kind, key, v).
fn changelog(pairs: &[(&str, &str)]) -> Vec<(RowKind, i64, String)> {
    let st = MemoryStorage::new();
    let top = vec![rec(1, 1, "x", 1), rec(2, 2, "x", 1), rec(3, 3, "x", 1)];
    let l0 = vec![rec(1, 4, "x", 2), rec(2, 5, "y", 2), rec(4, 6, "z", 2)];
    let inputs = vec![
        vec![put_file(&st, "data-top.parquet", 5, &top, 2)],
        vec![put_file(&st, "data-l0.parquet", 0, &l0, 2)],
    ];
    let mut all = vec![("changelog-producer", "full-compaction")];
    all.extend_from_slice(pairs);
    let r = rewrite_merge_tree(&st, &full_merge_request(inputs, None), &opts(&all)).unwrap();
    r.changelog
        .iter()
        .flat_map(|f| read_rows(&st, &f.path))
        .map(|r| (r.kind, r.key, r.v.unwrap_or_default()))
        .collect()
}

#[test]
fn unchanged_values_write_no_update_pair() {
    use RowKind::*;
    let s = |v: &str| v.to_string();
    let every = vec![
        (UpdateBefore, 1, s("x")),
        (UpdateAfter, 1, s("x")),
        (UpdateBefore, 2, s("x")),
        (UpdateAfter, 2, s("y")),
        (Insert, 4, s("z")),
    ];
    assert_eq!(changelog(&[]), every);
    // n changed for key 1, so it still counts as an update...
    assert_eq!(
        changelog(&[("changelog-producer.row-deduplicate", "true")]),
        every
    );
    // ...unless n is ignored.
    assert_eq!(
        changelog(&[
            ("changelog-producer.row-deduplicate", "true"),
            (
                "changelog-producer.row-deduplicate-ignore-fields",
                "n, not_a_column"
            ),
        ]),
        vec![
            (UpdateBefore, 2, s("x")),
            (UpdateAfter, 2, s("y")),
            (Insert, 4, s("z"))
        ]
    );
}
