//! Sorted chunks (`paimon-compact.merge.sorted-chunks`): the merge orders the rows of all runs a
//! chunk at a time instead of one heap step per row. Output must be byte for byte the heap's,
//! for keys the 16-byte heads decide and for longer STRING keys of differing lengths (where the
//! key rows decide), with runs of several batches, with a key repeated across a batch boundary
//! of one file, and through each changelog mode; an invalid value is a typed error.
#![cfg(feature = "rewrite")]

use crate::merge_support;

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, Int8Type};
use arrow_array::{Array, ArrayRef, Int64Array, Int8Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use bytes::Bytes;
use merge_support::{files_in, full_merge_request, opts, stored_input};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use paimon_compact::rewrite::merge::kv_format::planner_key;
use paimon_compact::rewrite::merge::{
    rewrite_merge_tree, MergeTreeRewriteResult, RowKind, SORTED_CHUNKS_OPTION,
};
use paimon_compact::rewrite::RewriteInput;
use paimon_compact::storage::MemoryStorage;
use paimon_compact::table::binary_row::Datum;
use paimon_compact::ErrorKind;

/// One record of a table keyed by a STRING `id`.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    id: String,
    seq: i64,
    kind: RowKind,
    n: Option<i64>,
}

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("_KEY_id", DataType::Utf8, false),
        Field::new("_SEQUENCE_NUMBER", DataType::Int64, false),
        Field::new("_VALUE_KIND", DataType::Int8, false),
        Field::new("id", DataType::Utf8, false),
        Field::new("n", DataType::Int64, true),
    ]))
}

/// A small deterministic generator (xorshift), so failures replay.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Key `i` of the key space: lengths from 2 to 27 bytes, many sharing their first 16 bytes,
/// so the heads alone cannot order them.
fn id(i: u64) -> String {
    match i % 4 {
        0 => format!("{i}"),
        1 => format!("customer/region-{:03}", i % 7),
        2 => format!("customer/region-{:03}/{i:06}", i % 7),
        _ => format!("customer/{i:012}"),
    }
}

/// Writes one level-0 run holding `rows` (sorted by key) in row groups of 10 000 rows, so a
/// reader's 8 192-row batches straddle them.
fn put(st: &MemoryStorage, name: &str, rows: &[Row]) -> RewriteInput {
    let batch = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(
                rows.iter()
                    .map(|r| Some(r.id.as_str()))
                    .collect::<StringArray>(),
            ) as ArrayRef,
            Arc::new(rows.iter().map(|r| Some(r.seq)).collect::<Int64Array>()),
            Arc::new(
                rows.iter()
                    .map(|r| Some(r.kind as i8))
                    .collect::<Int8Array>(),
            ),
            Arc::new(
                rows.iter()
                    .map(|r| Some(r.id.as_str()))
                    .collect::<StringArray>(),
            ),
            Arc::new(rows.iter().map(|r| r.n).collect::<Int64Array>()),
        ],
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_max_row_group_row_count(Some(10_000))
        .build();
    let mut bytes = Vec::new();
    let mut w = ArrowWriter::try_new(&mut bytes, schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let key = |r: &Row| planner_key(&[Datum::String(r.id.clone())]);
    let keys = (key(&rows[0]), key(&rows[rows.len() - 1]));
    stored_input(st, name, 0, bytes, keys, rows.iter().map(|r| r.seq))
}

/// `runs` overlapping runs of about `per_run` keys each out of a space of 3 × `per_run`;
/// with `repeat`, the last run holds every one of its keys twice (two sequence numbers).
fn runs(seed: u64, runs: usize, per_run: u64, repeat: bool) -> Vec<Vec<Row>> {
    let mut rng = Rng(seed | 1);
    let mut seq = 0;
    (0..runs)
        .map(|r| {
            let mut ids: Vec<String> = (0..3 * per_run)
                .filter(|_| rng.below(3) == 0)
                .map(id)
                .collect();
            ids.sort();
            ids.dedup();
            let copies = if repeat && r == runs - 1 { 2 } else { 1 };
            let mut rows = Vec::new();
            for id in ids {
                for _ in 0..copies {
                    seq += 1;
                    let kind = match rng.below(20) {
                        0 => RowKind::Delete,
                        1..=6 => RowKind::UpdateAfter,
                        _ => RowKind::Insert,
                    };
                    let n = (rng.below(9) != 0).then_some(seq * 10);
                    rows.push(Row {
                        id: id.clone(),
                        seq,
                        kind,
                        n,
                    });
                }
            }
            rows
        })
        .collect()
}

fn read(st: &MemoryStorage, path: &str) -> Vec<Row> {
    let bytes = Bytes::from(st.get(path).unwrap().to_vec());
    let mut out = Vec::new();
    for b in ParquetRecordBatchReaderBuilder::try_new(bytes)
        .unwrap()
        .build()
        .unwrap()
    {
        let b = b.unwrap();
        let (key, seq) = (b.column(0).as_string::<i32>(), b.column(1));
        let (kind, n) = (b.column(2).as_primitive::<Int8Type>(), b.column(4));
        let (seq, n) = (
            seq.as_primitive::<Int64Type>(),
            n.as_primitive::<Int64Type>(),
        );
        for i in 0..b.num_rows() {
            out.push(Row {
                id: key.value(i).to_string(),
                seq: seq.value(i),
                kind: RowKind::from_byte(kind.value(i) as i64).unwrap(),
                n: (!n.is_null(i)).then(|| n.value(i)),
            });
        }
    }
    out
}

/// Merges the runs (deduplicate, deletes dropped, output rolled at 64 KB) with `extra`
/// options; returns the result, each output's bytes and the rows read back.
fn merge(
    all: &[Vec<Row>],
    extra: &[(&str, &str)],
) -> (MergeTreeRewriteResult, Vec<Vec<u8>>, Vec<Row>) {
    let st = MemoryStorage::new();
    let inputs: Vec<RewriteInput> = all
        .iter()
        .enumerate()
        .map(|(i, rows)| put(&st, &format!("data-{i}.parquet"), rows))
        .collect();
    let req = full_merge_request(inputs.into_iter().rev().map(|i| vec![i]).collect(), None);
    let mut pairs = vec![("target-file-size", "64kb")];
    pairs.extend_from_slice(extra);
    let result = rewrite_merge_tree(&st, &req, &opts(&pairs)).unwrap();
    let bytes = result
        .outputs
        .iter()
        .map(|f| st.get(&f.path).unwrap().to_vec())
        .collect();
    let rows = result
        .outputs
        .iter()
        .flat_map(|f| read(&st, &f.path))
        .collect();
    (result, bytes, rows)
}

/// Deduplicate's answer: per key (in byte order) the highest sequence number, deletes dropped.
fn model(all: &[Vec<Row>]) -> Vec<Row> {
    let mut latest: BTreeMap<&str, &Row> = BTreeMap::new();
    for r in all.iter().flatten() {
        let e = latest.entry(r.id.as_str()).or_insert(r);
        if r.seq > e.seq {
            *e = r;
        }
    }
    latest
        .into_values()
        .filter(|r| !r.kind.is_retract())
        .cloned()
        .collect()
}

fn assert_same_as_heap(all: &[Vec<Row>]) {
    let (on, on_bytes, on_rows) = merge(all, &[]);
    let (off, off_bytes, off_rows) = merge(all, &[(SORTED_CHUNKS_OPTION, "false")]);
    assert!(on.outputs.len() > 1, "the output rolls");
    assert_eq!(on.metrics.keys, off.metrics.keys);
    // Most rows are ordered by chunks; the heap takes only each chunk's bound.
    let input = on.metrics.input_rows;
    assert!(
        on.metrics.sorted_chunk_rows * 10 > input * 9,
        "{:?}",
        on.metrics
    );
    assert_eq!(off.metrics.sorted_chunk_rows, 0);
    assert_eq!(on_rows.len(), off_rows.len());
    assert!(on_rows == model(all), "sorted chunks differ from the model");
    assert!(
        off_rows == on_rows,
        "the heap differs from the sorted chunks"
    );
    assert!(on_bytes == off_bytes, "the files differ");
    for (a, b) in on.outputs.iter().zip(&off.outputs) {
        assert_eq!(a.meta.min_key, b.meta.min_key);
        assert_eq!(a.meta.max_key, b.meta.max_key);
        assert_eq!(a.meta.row_count, b.meta.row_count);
    }
}

#[test]
fn long_string_keys_of_differing_lengths_merge_as_the_heap_merges_them() {
    // Six runs of about 20 000 rows: three read batches each, keys up to 27 bytes.
    assert_same_as_heap(&runs(7, 6, 20_000, false));
}

#[test]
fn a_key_repeated_across_a_batch_boundary_of_one_file_forms_one_group() {
    // The newest run holds each of its keys twice, so some pair straddles a batch boundary
    // (and the chunk bound): both copies must meet the other runs' rows in one group.
    let all = runs(11, 4, 12_000, true);
    assert!(all[3].len() > 8192 * 2);
    assert_same_as_heap(&all);
}

#[test]
fn short_keys_decided_by_their_heads_merge_as_the_heap_merges_them() {
    // Keys of 2..=6 bytes only (the first case of `id`): arrow's row format encodes each in
    // 10 bytes, so the heads are the whole keys and the chunk sorts them packed with their
    // cursor and row; single-run stretches alternate with overlaps.
    let all: Vec<Vec<Row>> = runs(5, 5, 15_000, false)
        .into_iter()
        .map(|rows| rows.into_iter().filter(|r| r.id.len() <= 6).collect())
        .collect();
    assert_same_as_heap(&all);
}

#[test]
fn changelog_modes_produce_the_same_files_either_way() {
    let all = runs(3, 4, 10_000, false);
    for mode in [
        [("changelog-producer", "full-compaction")],
        [("changelog-producer", "lookup")],
    ] {
        let (on, on_bytes, _) = merge(&all, &mode);
        let (off, off_bytes, _) = merge(&all, &[mode[0], (SORTED_CHUNKS_OPTION, "false")]);
        assert_eq!(on.changelog.len(), off.changelog.len(), "{mode:?}");
        assert!(!on.changelog.is_empty(), "{mode:?}");
        assert!(on_bytes == off_bytes, "{mode:?}: data files differ");
        for (a, b) in on.changelog.iter().zip(&off.changelog) {
            assert_eq!(a.meta.row_count, b.meta.row_count, "{mode:?}");
        }
    }
}

#[test]
fn an_invalid_value_is_a_typed_option_error() {
    let st = MemoryStorage::new();
    let input = put(&st, "data-0.parquet", &runs(1, 1, 100, false)[0]);
    let req = full_merge_request(vec![vec![input]], None);
    let before = files_in(&st);
    let err =
        rewrite_merge_tree(&st, &req, &opts(&[(SORTED_CHUNKS_OPTION, "sometimes")])).unwrap_err();
    assert!(
        matches!(&err.kind, ErrorKind::InvalidOption { key, .. } if key == SORTED_CHUNKS_OPTION),
        "{err:?}"
    );
    assert_eq!(files_in(&st), before, "no output is left behind");
}
