//! Deletion vectors written by a merge, exported for an independent reader.
//!
//! A lookup compaction with `deletion-vectors.enabled` marks the rows it supersedes in
//! higher-level files; those marks (merged with the files' existing vectors) go into a
//! deletion-vector index file in Paimon's format. The test checks the marks against the
//! rows, then writes the index file and the expected positions (JSON) to
//! `$PAIMON_MERGE_DV_OUT` (default: `<target>/tmp/merge-dv`), where
//! `tests/merge_py/test_dv_pyroaring.py` reads them back with pyroaring.
#![cfg(feature = "rewrite")]

use crate::merge_support;

use std::collections::BTreeMap;

use roaring::RoaringBitmap;

use merge_support::*;
use paimon_compact::meta::Level;
use paimon_compact::rewrite::merge::{
    rewrite_merge_tree, DeletionVectorMaintainer, MergeTreeRewrite, RowKind,
};
use paimon_compact::storage::{MemoryStorage, Storage};
use paimon_compact::table::index::read_deletion_vector;

fn rec(key: i64, seq: i64) -> Rec {
    Rec {
        key,
        seq,
        kind: RowKind::Insert,
        v: Some(format!("v{seq}")),
        n: Some(seq),
        b: None,
    }
}

#[test]
fn deletion_vectors_of_a_merge_are_written_in_paimons_format() {
    let st = MemoryStorage::new();
    // Level 2: keys 0..100_000 step 3 and a second file above; level 4: everything below.
    let l4: Vec<Rec> = (0..70_000).map(|k| rec(k, k)).collect();
    let l2: Vec<Rec> = (0..70_000)
        .filter(|k| k % 3 == 0)
        .map(|k| rec(k, 100_000 + k))
        .collect();
    let l0: Vec<Rec> = (0..70_000)
        .filter(|k| k % 5 == 0 || k % 7 == 0)
        .map(|k| rec(k, 200_000 + k))
        .collect();
    let mut l4_input = put_file(&st, "data-l4.parquet", 4, &l4, 8192);
    // Existing vector of the level-4 file: the keys level 2 superseded.
    let existing: Vec<u64> = (0..70_000u64).filter(|k| k % 3 == 0).collect();
    l4_input.deleted_rows = Some(existing.clone());
    let l2_input = put_file(&st, "data-l2.parquet", 2, &l2, 8192);
    let req = MergeTreeRewrite {
        sections: vec![vec![vec![put_file(&st, "data-l0.parquet", 0, &l0, 4096)]]],
        higher_levels: vec![l2_input, l4_input],
        output_dir: DIR.into(),
        file_prefix: "data-out-".into(),
        changelog_prefix: "changelog-out-".into(),
        output_level: Level::new(1),
        max_level: Level::new(4),
        drop_delete: true,
        write_data: true,
        column_types: Vec::new(),
        creation_time_ms: 1,
        schema: None,
    };
    let o = opts(&[("deletion-vectors.enabled", "true")]);
    let r = rewrite_merge_tree(&st, &req, &o).unwrap();
    // Keys of level 0 found in level 2 (k % 3 == 0) are marked there at position k / 3; the
    // others are found in level 4 at position k.
    let mut want: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for k in (0..70_000u64).filter(|k| k % 5 == 0 || k % 7 == 0) {
        if k % 3 == 0 {
            want.entry("data-l2.parquet".into())
                .or_default()
                .push(k / 3);
        } else {
            want.entry("data-l4.parquet".into()).or_default().push(k);
        }
    }
    assert_eq!(r.deletion_vector_marks, want);

    // The bucket's vectors after the task: existing ones plus the marks.
    let mut vectors: BTreeMap<String, RoaringBitmap> = BTreeMap::new();
    vectors.insert(
        "data-l4.parquet".into(),
        existing.iter().map(|&p| p as u32).collect(),
    );
    let mut dv = DeletionVectorMaintainer::from_vectors(vectors);
    for (file, positions) in &r.deletion_vector_marks {
        for &p in positions {
            dv.mark(file, p).unwrap();
        }
    }
    let index = dv.write_index_file(&st, "t/index/index-merge-0").unwrap();
    let mut expected: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for range in &index.ranges {
        let bm = read_deletion_vector(&st, &index.path, range).unwrap();
        let positions: Vec<u64> = bm.iter().map(u64::from).collect();
        assert_eq!(range.cardinality, Some(positions.len() as i64));
        expected.insert(range.data_file.clone(), positions);
    }
    let l4_expected: std::collections::BTreeSet<u64> = existing
        .iter()
        .copied()
        .chain(want["data-l4.parquet"].iter().copied())
        .collect();
    assert_eq!(
        expected["data-l4.parquet"],
        l4_expected.into_iter().collect::<Vec<_>>()
    );

    // Export for the independent reader.
    let dir = std::env::var("PAIMON_MERGE_DV_OUT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("merge-dv"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("index-merge-0"), st.read_all(&index.path).unwrap()).unwrap();
    let ranges: Vec<serde_json::Value> = index
        .ranges
        .iter()
        .map(|r| {
            serde_json::json!({
                "data_file": r.data_file,
                "offset": r.offset,
                "length": r.length,
                "cardinality": r.cardinality,
                "positions": expected[&r.data_file],
            })
        })
        .collect();
    std::fs::write(
        dir.join("index-merge-0.json"),
        serde_json::to_vec_pretty(&ranges).unwrap(),
    )
    .unwrap();
}
