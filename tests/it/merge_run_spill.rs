//! Many sorted runs (compaction.md §10.1, "Many sorted runs"): a section with more runs than
//! `paimon-compact.merge.max-runs` (or Paimon's `sort-spill-threshold`) first merges groups of
//! its level-0 runs into temporary runs. The result must be exactly the merge's without that
//! step, under every engine and changelog mode, and the temporary files must be gone
//! afterwards, also when the merge fails.
#![cfg(feature = "rewrite")]

use crate::merge_support;

use merge_support::*;
use paimon_compact::rewrite::merge::{rewrite_merge_tree, RowKind};
use paimon_compact::rewrite::RewriteInput;
use paimon_compact::storage::MemoryStorage;
use paimon_compact::ErrorKind;

/// A max-level run of keys 0..60 and `n` level-0 runs of overlapping keys, with updates,
/// nulls and retractions.
fn bucket(st: &MemoryStorage, n: usize) -> Vec<Vec<RewriteInput>> {
    let top: Vec<Rec> = (0..60)
        .map(|k| Rec {
            key: k,
            seq: k,
            kind: RowKind::Insert,
            v: Some(format!("top{k}")),
            n: Some(k),
            b: Some(true),
        })
        .collect();
    let mut runs = vec![vec![put_file(st, "data-top.parquet", 4, &top, 16)]];
    let mut seq = 1000;
    for r in 0..n as i64 {
        let rows: Vec<Rec> = (0..60)
            .filter(|k| (k * 7 + r * 3) % 5 < 2)
            .map(|k| {
                seq += 1;
                Rec {
                    key: k,
                    seq,
                    kind: match (k + r) % 9 {
                        0 => RowKind::Delete,
                        1 => RowKind::UpdateBefore,
                        _ => RowKind::Insert,
                    },
                    v: ((k + r) % 4 != 0).then(|| format!("r{r}k{k}")),
                    n: ((k + r) % 3 != 0).then_some(r * 10 + k),
                    b: ((k + r) % 5 != 0).then_some((k + r) % 2 == 0),
                }
            })
            .collect();
        runs.push(vec![put_file(
            st,
            &format!("data-l0-{r}.parquet"),
            0,
            &rows,
            8,
        )]);
    }
    runs
}

/// The rows of every data and changelog output of one merge of a fresh bucket of 40 level-0
/// runs under `pairs`, the spill counters, and whether only inputs and outputs are left.
fn merge(pairs: &[(&str, &str)], out: u32) -> (Vec<Rec>, Vec<Rec>, u64, bool) {
    let st = MemoryStorage::new();
    let section = bucket(&st, 40);
    let before = files_in(&st);
    let r = rewrite_merge_tree(
        &st,
        &merge_request(vec![section], out, out == 4),
        &opts(pairs),
    )
    .unwrap();
    let data = r
        .outputs
        .iter()
        .flat_map(|f| read_rows(&st, &f.path))
        .collect();
    let changelog = r
        .changelog
        .iter()
        .flat_map(|f| read_rows(&st, &f.path))
        .collect();
    let mut expected = before;
    expected.extend(r.outputs.iter().chain(&r.changelog).map(|f| f.path.clone()));
    expected.sort();
    (
        data,
        changelog,
        r.metrics.spilled_runs,
        files_in(&st) == expected,
    )
}

#[test]
fn spilling_runs_changes_nothing_but_memory() {
    for engine in [
        vec![],
        vec![
            ("merge-engine", "partial-update"),
            ("ignore-delete", "true"),
        ],
        vec![
            ("merge-engine", "aggregation"),
            ("fields.n.aggregate-function", "sum"),
            ("fields.b.aggregate-function", "bool_or"),
            ("fields.b.ignore-retract", "true"),
        ],
        vec![("changelog-producer", "full-compaction")],
        vec![("sequence.field", "n")],
    ] {
        for out in [3, 4] {
            let mut plain = engine.clone();
            plain.push(("paimon-compact.merge.max-runs", "1000"));
            let (want, want_cl, none, clean) = merge(&plain, out);
            assert_eq!(none, 0);
            assert!(clean);
            assert!(!want.is_empty());
            for bound in [
                ("paimon-compact.merge.max-runs", "4"),
                ("sort-spill-threshold", "7"),
            ] {
                let mut spilling = engine.clone();
                spilling.push(bound);
                let (got, got_cl, spilled, clean) = merge(&spilling, out);
                assert!(
                    spilled >= 36,
                    "{engine:?} {bound:?}: {spilled} runs spilled"
                );
                assert!(clean, "{engine:?} {bound:?}: temporary files left");
                assert_eq!(got, want, "{engine:?} {bound:?} into level {out}");
                assert_eq!(got_cl, want_cl, "{engine:?} {bound:?} changelog");
            }
        }
    }
}

#[test]
fn a_failed_merge_leaves_no_temporary_run() {
    let st = MemoryStorage::new();
    let mut section = bucket(&st, 20);
    // The last run is out of key order: the final merge fails on it after the spills.
    let mut bad: Vec<Rec> = (0..30)
        .map(|k| Rec {
            key: k,
            seq: 5000 + k,
            kind: RowKind::Insert,
            v: None,
            n: None,
            b: None,
        })
        .collect();
    bad.swap(20, 21);
    section.insert(1, vec![put_file(&st, "data-bad.parquet", 0, &bad, 8)]);
    let before = files_in(&st);
    let e = rewrite_merge_tree(
        &st,
        &merge_request(vec![section], 4, true),
        &opts(&[("paimon-compact.merge.max-runs", "3")]),
    )
    .unwrap_err();
    assert!(matches!(e.kind, ErrorKind::CorruptInput { .. }), "{e}");
    assert_eq!(files_in(&st), before);
    // A bound below 2 is refused.
    let e = rewrite_merge_tree(
        &st,
        &merge_request(vec![bucket(&st, 3)], 4, true),
        &opts(&[("paimon-compact.merge.max-runs", "1")]),
    )
    .unwrap_err();
    assert!(matches!(e.kind, ErrorKind::InvalidOption { .. }), "{e}");
}
