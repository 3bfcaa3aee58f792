//! Shared helpers of the merge-rewrite tests: primary-key Parquet files in `MemoryStorage`,
//! a straightforward reference model of the merge engines, and read-back checks. Included by
//! the `tests/merge_*.rs` files with `mod merge_support;`.
#![allow(
    dead_code,
    reason = "each test file uses a different part of the support module"
)]

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, Int8Type};
use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, Int8Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use paimon_compact::meta::{CompactionFile, Key, Level, SequenceNumber};
use paimon_compact::options::{CoreOptions, Flavor, TableKind};
use paimon_compact::rewrite::merge::kv_format::planner_key;
use paimon_compact::rewrite::merge::{MergeOutputFile, MergeTreeRewrite, RowKind};
use paimon_compact::rewrite::RewriteInput;
use paimon_compact::storage::{MemoryStorage, Storage};
use paimon_compact::table::binary_row::Datum;

pub const DIR: &str = "t/bucket-0";

/// One record of a primary-key table with columns k BIGINT (key), v STRING, n BIGINT, b BOOLEAN.
#[derive(Clone, Debug, PartialEq)]
pub struct Rec {
    pub key: i64,
    pub seq: i64,
    pub kind: RowKind,
    pub v: Option<String>,
    pub n: Option<i64>,
    pub b: Option<bool>,
}

pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("_KEY_k", DataType::Int64, false),
        Field::new("_SEQUENCE_NUMBER", DataType::Int64, false),
        Field::new("_VALUE_KIND", DataType::Int8, false),
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Utf8, true),
        Field::new("n", DataType::Int64, true),
        Field::new("b", DataType::Boolean, true),
    ]))
}

pub fn batch(rows: &[Rec]) -> RecordBatch {
    let keys: Int64Array = rows.iter().map(|r| Some(r.key)).collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(keys.clone()),
        Arc::new(rows.iter().map(|r| Some(r.seq)).collect::<Int64Array>()),
        Arc::new(
            rows.iter()
                .map(|r| Some(r.kind as i8))
                .collect::<Int8Array>(),
        ),
        Arc::new(keys),
        Arc::new(rows.iter().map(|r| r.v.clone()).collect::<StringArray>()),
        Arc::new(rows.iter().map(|r| r.n).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|r| r.b).collect::<BooleanArray>()),
    ];
    RecordBatch::try_new(schema(), columns).unwrap()
}

/// Parquet bytes of `rows` (as given: callers sort them), zstd, `rg` rows per row group.
pub fn parquet(rows: &[Rec], rg: usize) -> Vec<u8> {
    parquet_with(rows, rg, true)
}

/// [`parquet`], with or without an offset index (pyarrow, and so pypaimon, writes none).
pub fn parquet_with(rows: &[Rec], rg: usize, offset_index: bool) -> Vec<u8> {
    let mut props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_max_row_group_row_count(Some(rg.max(1)));
    if !offset_index {
        props = props
            .set_statistics_enabled(parquet::file::properties::EnabledStatistics::Chunk)
            .set_offset_index_disabled(true)
            .set_data_page_row_count_limit(16);
    }
    let props = props.build();
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, schema(), Some(props)).unwrap();
    w.write(&batch(rows)).unwrap();
    w.close().unwrap();
    buf
}

pub fn key_of(k: i64) -> Key {
    planner_key(&[Datum::BigInt(k)])
}

/// Writes a file and returns its input description (metadata as a writer records it).
pub fn put_file(
    st: &MemoryStorage,
    name: &str,
    level: u32,
    rows: &[Rec],
    rg: usize,
) -> RewriteInput {
    put_file_with(st, name, level, rows, rg, true)
}

/// Each run as one level-0 file (`data-<i>.parquet`, two rows per row group): the runs of a
/// section, for [`full_merge_request`].
pub fn put_runs(st: &MemoryStorage, runs: &[Vec<Rec>]) -> Vec<Vec<RewriteInput>> {
    runs.iter()
        .enumerate()
        .map(|(i, rows)| vec![put_file(st, &format!("data-{i}.parquet"), 0, rows, 2)])
        .collect()
}

/// [`put_file`], with or without an offset index (small pages without one).
pub fn put_file_with(
    st: &MemoryStorage,
    name: &str,
    level: u32,
    rows: &[Rec],
    rg: usize,
    offset_index: bool,
) -> RewriteInput {
    let input = stored_input(
        st,
        name,
        level,
        parquet_with(rows, rg, offset_index),
        (
            key_of(rows.first().map_or(0, |r| r.key)),
            key_of(rows.last().map_or(0, |r| r.key)),
        ),
        rows.iter().map(|r| r.seq),
    );
    let mut meta = (*input.meta).clone();
    meta.delete_row_count = Some(rows.iter().filter(|r| r.kind.is_retract()).count() as u64);
    RewriteInput {
        meta: Arc::new(meta),
        ..input
    }
}

/// Stores `bytes` as `name` under [`DIR`] and describes it as a merge input of `level`, with
/// the metadata a writer records: size, key range, sequence range and row count (one sequence
/// number per row).
pub fn stored_input(
    st: &MemoryStorage,
    name: &str,
    level: u32,
    bytes: Vec<u8>,
    (min_key, max_key): (Key, Key),
    seqs: impl Iterator<Item = i64> + Clone,
) -> RewriteInput {
    let path = format!("{DIR}/{name}");
    let size = bytes.len() as u64;
    st.put(&path, bytes);
    let mut meta = CompactionFile::new(
        name,
        Level::new(level),
        size,
        min_key,
        max_key,
        seqs.clone().min().unwrap_or(0),
        seqs.clone().max().unwrap_or(0),
    );
    meta.row_count = seqs.count() as u64;
    RewriteInput {
        path,
        meta: Arc::new(meta),
        deleted_rows: None,
        columns: None,
    }
}

/// One section of `runs` fully compacted: merged into the max level 5 with deletes dropped,
/// outputs under [`DIR`]; `schema` fixes the merge's schema when given.
pub fn full_merge_request(
    runs: Vec<Vec<RewriteInput>>,
    schema: Option<SchemaRef>,
) -> MergeTreeRewrite {
    MergeTreeRewrite {
        sections: vec![runs],
        higher_levels: Vec::new(),
        output_dir: DIR.into(),
        file_prefix: "data-out-".into(),
        changelog_prefix: "changelog-out-".into(),
        output_level: Level::new(5),
        max_level: Level::new(5),
        drop_delete: true,
        write_data: true,
        column_types: Vec::new(),
        creation_time_ms: 1,
        schema,
    }
}

/// A merge of `sections` into level `out` of a bucket whose max level is 4, outputs under
/// [`DIR`], the schema taken from the inputs.
pub fn merge_request(
    sections: Vec<Vec<Vec<RewriteInput>>>,
    out: u32,
    drop_delete: bool,
) -> MergeTreeRewrite {
    MergeTreeRewrite {
        sections,
        higher_levels: Vec::new(),
        output_dir: DIR.into(),
        file_prefix: "data-out-".into(),
        changelog_prefix: "changelog-out-".into(),
        output_level: Level::new(out),
        max_level: Level::new(4),
        drop_delete,
        write_data: true,
        column_types: Vec::new(),
        creation_time_ms: 1,
        schema: None,
    }
}

pub fn opts(pairs: &[(&str, &str)]) -> CoreOptions {
    CoreOptions::from_pairs(TableKind::PrimaryKey, Flavor::Java, pairs.iter().copied()).unwrap()
}

/// Reads a written file back as records.
pub fn read_rows(st: &MemoryStorage, path: &str) -> Vec<Rec> {
    let bytes = Bytes::from(st.get(path).expect("file exists").to_vec());
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .unwrap()
        .build()
        .unwrap();
    let mut out = Vec::new();
    for b in reader {
        let b = b.unwrap();
        let key = b.column(0).as_primitive::<Int64Type>();
        let seq = b.column(1).as_primitive::<Int64Type>();
        let kind = b.column(2).as_primitive::<Int8Type>();
        let k = b.column(3).as_primitive::<Int64Type>();
        let v = b.column(4).as_string::<i32>();
        let n = b.column(5).as_primitive::<Int64Type>();
        let bo = b.column(6).as_boolean();
        for i in 0..b.num_rows() {
            assert_eq!(key.value(i), k.value(i), "_KEY_k equals k");
            out.push(Rec {
                key: key.value(i),
                seq: seq.value(i),
                kind: RowKind::from_byte(kind.value(i) as i64).unwrap(),
                v: (!v.is_null(i)).then(|| v.value(i).to_string()),
                n: (!n.is_null(i)).then(|| n.value(i)),
                b: (!bo.is_null(i)).then(|| bo.value(i)),
            });
        }
    }
    out
}

/// Checks a written file's metadata against its rows: exact key range, sequence range, row
/// and retract counts, level, and one row per key in key order.
pub fn check_meta(st: &MemoryStorage, f: &MergeOutputFile, level: u32) -> Vec<Rec> {
    let rows = read_rows(st, &f.path);
    assert!(!rows.is_empty(), "{}: empty output", f.path);
    let m = &f.meta;
    assert_eq!(m.level, Level::new(level));
    assert_eq!(m.file_size, st.get(&f.path).unwrap().len() as u64);
    assert_eq!(m.row_count, rows.len() as u64, "{}", f.path);
    assert_eq!(m.min_key, key_of(rows[0].key));
    assert_eq!(m.max_key, key_of(rows[rows.len() - 1].key));
    assert_eq!(f.min_key, vec![Datum::BigInt(rows[0].key)]);
    assert_eq!(f.max_key, vec![Datum::BigInt(rows[rows.len() - 1].key)]);
    assert_eq!(
        m.min_sequence_number,
        SequenceNumber(rows.iter().map(|r| r.seq).min().unwrap())
    );
    assert_eq!(
        m.max_sequence_number,
        SequenceNumber(rows.iter().map(|r| r.seq).max().unwrap())
    );
    assert_eq!(
        m.delete_row_count,
        Some(rows.iter().filter(|r| r.kind.is_retract()).count() as u64)
    );
    assert_eq!(f.key_stats.len(), 1);
    assert_eq!(f.key_stats[0].min, Datum::BigInt(rows[0].key));
    assert_eq!(f.key_stats[0].max, Datum::BigInt(rows[rows.len() - 1].key));
    rows
}

/// The engine under test and its options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Deduplicate,
    FirstRow,
    PartialUpdate,
    Aggregation,
}

#[derive(Clone, Debug)]
pub struct Config {
    pub engine: Engine,
    pub ignore_delete: bool,
    pub remove_record_on_delete: bool,
    pub sequence_field: bool,
    /// `sequence.field.sort-order = descending` (with `sequence_field`): the smallest `n` wins.
    pub seq_descending: bool,
}

impl Config {
    pub fn options(&self, extra: &[(&str, &str)]) -> CoreOptions {
        let mut p: Vec<(&str, &str)> = vec![(
            "merge-engine",
            match self.engine {
                Engine::Deduplicate => "deduplicate",
                Engine::FirstRow => "first-row",
                Engine::PartialUpdate => "partial-update",
                Engine::Aggregation => "aggregation",
            },
        )];
        if self.ignore_delete {
            p.push(("ignore-delete", "true"));
        }
        if self.remove_record_on_delete {
            p.push(("partial-update.remove-record-on-delete", "true"));
        }
        if self.sequence_field {
            p.push(("sequence.field", "n"));
            if self.seq_descending {
                p.push(("sequence.field.sort-order", "descending"));
            }
        }
        if self.engine == Engine::Aggregation {
            p.push(("fields.n.aggregate-function", "sum"));
            p.push(("fields.b.aggregate-function", "bool_or"));
            p.push(("fields.b.ignore-retract", "true"));
        }
        p.extend_from_slice(extra);
        opts(&p)
    }

    /// Whether this config may see retract records without failing.
    pub fn accepts_retracts(&self) -> bool {
        match self.engine {
            Engine::Deduplicate | Engine::Aggregation => true,
            Engine::FirstRow | Engine::PartialUpdate => self.ignore_delete,
        }
    }
}

/// Sequence order: `n` first when it is the sequence field (nulls first), then `seq`. As
/// Paimon's `UserDefinedSeqComparator`, descending reverses two non-null `n` only: a null is
/// the oldest either way, and `seq` always ascends.
pub fn seq_order(cfg: &Config, a: &Rec, b: &Rec) -> std::cmp::Ordering {
    if cfg.sequence_field {
        let o = match (a.n, b.n) {
            (Some(x), Some(y)) if cfg.seq_descending => y.cmp(&x),
            _ => a.n.cmp(&b.n),
        };
        if o != std::cmp::Ordering::Equal {
            return o;
        }
    }
    a.seq.cmp(&b.seq)
}

/// The reference model of one key: the records in sequence order, merged as Paimon does.
pub fn merge_model(cfg: &Config, recs: &[Rec]) -> Option<Rec> {
    match cfg.engine {
        Engine::Deduplicate => recs
            .iter()
            .rev()
            .find(|r| !(cfg.ignore_delete && r.kind.is_retract()))
            .cloned(),
        Engine::FirstRow => recs.iter().find(|r| r.kind.is_add()).cloned(),
        Engine::PartialUpdate => {
            let mut out: Option<Rec> = None;
            let mut deleted: Option<Rec> = None;
            for r in recs {
                if r.kind.is_retract() {
                    if cfg.ignore_delete {
                        continue;
                    }
                    assert!(cfg.remove_record_on_delete && r.kind == RowKind::Delete);
                    deleted = Some(r.clone());
                    out = Some(Rec {
                        v: None,
                        n: None,
                        b: None,
                        ..r.clone()
                    });
                    continue;
                }
                deleted = None;
                let o = out.get_or_insert(Rec {
                    v: None,
                    n: None,
                    b: None,
                    ..r.clone()
                });
                o.seq = r.seq;
                o.kind = RowKind::Insert;
                if r.v.is_some() {
                    o.v = r.v.clone();
                }
                if r.n.is_some() {
                    o.n = r.n;
                }
                if r.b.is_some() {
                    o.b = r.b;
                }
            }
            if let Some(d) = deleted {
                return Some(d);
            }
            out
        }
        Engine::Aggregation => {
            let last = recs.last()?;
            let (mut v, mut n, mut b): (Option<String>, Option<i64>, Option<bool>) =
                (None, None, None);
            for r in recs {
                let retract = r.kind.is_retract();
                // v: last_non_null_value (retract clears when the input is non-null)
                if r.v.is_some() {
                    v = if retract { None } else { r.v.clone() };
                }
                // n: sum, or last_value when it is the sequence field (Paimon HEAD gives the
                // sequence field last_value whatever the configured function)
                n = match (n, r.n) {
                    _ if cfg.sequence_field => {
                        if retract {
                            None
                        } else {
                            r.n
                        }
                    }
                    (None, None) => None,
                    (None, Some(x)) => Some(if retract { x.wrapping_neg() } else { x }),
                    (Some(a), None) => Some(a),
                    (Some(a), Some(x)) => Some(if retract {
                        a.wrapping_sub(x)
                    } else {
                        a.wrapping_add(x)
                    }),
                };
                // b: bool_or, ignoring retractions
                if !retract {
                    b = match (b, r.b) {
                        (None, x) => x,
                        (a, None) => a,
                        (Some(a), Some(x)) => Some(a || x),
                    };
                }
            }
            Some(Rec {
                key: last.key,
                seq: last.seq,
                kind: RowKind::Insert,
                v,
                n,
                b,
            })
        }
    }
}

/// Merges a key as the plain rewriter does: one record passes through unmerged.
pub fn plain_model(cfg: &Config, recs: &[Rec]) -> Option<Rec> {
    match recs {
        [only] => Some(only.clone()),
        _ => merge_model(cfg, recs),
    }
}

/// Records grouped by key, each group in sequence order.
pub fn by_key(cfg: &Config, all: &[Rec]) -> BTreeMap<i64, Vec<Rec>> {
    let mut m: BTreeMap<i64, Vec<Rec>> = BTreeMap::new();
    for r in all {
        m.entry(r.key).or_default().push(r.clone());
    }
    for v in m.values_mut() {
        v.sort_by(|a, b| seq_order(cfg, a, b));
    }
    m
}

/// Every path under the bucket directory.
pub fn files_in(st: &MemoryStorage) -> Vec<String> {
    st.list(DIR).unwrap().into_iter().map(|o| o.path).collect()
}
