//! Shared helpers of the append-rewrite tests: real Parquet inputs written by arrow-rs into
//! `MemoryStorage`, requests, and read-back checks. A module of the `it` test binary.
#![allow(
    dead_code,
    reason = "included by several test files, each using a different part"
)]
#![cfg(feature = "rewrite")]

use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, PageType};
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataOptions, ParquetMetaDataReader};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};

use paimon_compact::meta::{CompactionFile, Key, Level};
use paimon_compact::options::{CoreOptions, Flavor, TableKind};
use paimon_compact::rewrite::{AppendRewrite, AppendRewriteResult, RewriteInput};
use paimon_compact::storage::MemoryStorage;

pub const DIR: &str = "t/bucket-0";

pub fn opts(pairs: &[(&str, &str)]) -> CoreOptions {
    CoreOptions::from_pairs(TableKind::Append, Flavor::Java, pairs.iter().copied()).unwrap()
}

/// id BIGINT NOT NULL, x DOUBLE, s STRING (low cardinality), name STRING NOT NULL (unique),
/// b BYTES.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("name", DataType::Utf8, false),
        Field::new("b", DataType::Binary, true),
    ]))
}

/// A deterministic scramble, so the low-cardinality column is not sorted.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `rows` rows with ids `first_id..`; `s_of(i)` gives the low-cardinality column.
pub fn batch_with(
    first_id: i64,
    rows: usize,
    tag: &str,
    s_of: &dyn Fn(u64) -> Option<String>,
) -> RecordBatch {
    let ids: Vec<i64> = (0..rows as i64).map(|i| first_id + i).collect();
    let x: Float64Array = ids
        .iter()
        .map(|&i| (i % 11 != 0).then_some(i as f64 * 0.5))
        .collect();
    let s: StringArray = ids.iter().map(|&i| s_of(i as u64)).collect();
    let name: StringArray = ids
        .iter()
        .map(|&i| Some(format!("name-{tag}-{i}")))
        .collect();
    let b: BinaryArray = ids
        .iter()
        .map(|&i| (i % 5 != 0).then(|| vec![(i % 7) as u8; 3]))
        .collect::<Vec<_>>()
        .iter()
        .map(|v| v.as_deref())
        .collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ids)),
        Arc::new(x),
        Arc::new(s),
        Arc::new(name),
        Arc::new(b),
    ];
    RecordBatch::try_new(schema(), columns).unwrap()
}

/// Random low-cardinality strings `v000`..`v049` (shifted by `shift`), null every 13th row.
pub fn random_s(shift: u64) -> impl Fn(u64) -> Option<String> {
    move |i| (i % 13 != 0).then(|| format!("v{:03}", mix(i) % 50 + shift))
}

pub fn props(codec: Compression, row_group_rows: usize) -> WriterProperties {
    WriterProperties::builder()
        .set_compression(codec)
        .set_max_row_group_row_count(Some(row_group_rows))
        .build()
}

pub fn write_parquet(batch: &RecordBatch, props: &WriterProperties) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), Some(props.clone())).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
    buf
}

fn put(
    storage: &MemoryStorage,
    path: String,
    bytes: Vec<u8>,
    rows: usize,
    min_seq: i64,
) -> RewriteInput {
    let name = path.rsplit('/').next().unwrap().to_string();
    let mut meta = CompactionFile::new(
        name,
        Level::ZERO,
        bytes.len() as u64,
        Key::default(),
        Key::default(),
        min_seq,
        min_seq + rows as i64 - 1,
    );
    meta.row_count = rows as u64;
    storage.put(&path, bytes);
    RewriteInput {
        path,
        meta: Arc::new(meta),
        deleted_rows: None,
        columns: None,
    }
}

/// `n` files of `rows` rows (ids continue across files), sequence numbers from `min_seq`.
pub fn put_inputs(
    storage: &MemoryStorage,
    n: usize,
    rows: usize,
    props: &WriterProperties,
    min_seq: i64,
) -> Vec<RewriteInput> {
    put_inputs_with(storage, n, rows, props, min_seq, |_| Box::new(random_s(0)))
}

/// Generates the low-cardinality column of one file.
pub type SColumn = Box<dyn Fn(u64) -> Option<String>>;

/// As [`put_inputs`], with file `k`'s low-cardinality column from `s_for(k)`.
pub fn put_inputs_with(
    storage: &MemoryStorage,
    n: usize,
    rows: usize,
    props: &WriterProperties,
    min_seq: i64,
    s_for: impl Fn(usize) -> SColumn,
) -> Vec<RewriteInput> {
    (0..n)
        .map(|k| {
            let batch = batch_with((k * rows) as i64, rows, &k.to_string(), &s_for(k));
            let path = format!("{DIR}/data-in-{k}.parquet");
            put(
                storage,
                path,
                write_parquet(&batch, props),
                rows,
                min_seq + (k * rows) as i64,
            )
        })
        .collect()
}

/// Files named after `tag`, ids from 0.
pub fn put_inputs_named(
    storage: &MemoryStorage,
    tag: &str,
    n: usize,
    rows: usize,
    props: &WriterProperties,
    min_seq: i64,
) -> Vec<RewriteInput> {
    (0..n)
        .map(|k| {
            let batch = batch_with(0, rows, tag, &random_s(0));
            let path = format!("{DIR}/data-{tag}-{k}.parquet");
            put(
                storage,
                path,
                write_parquet(&batch, props),
                rows,
                min_seq + (k * rows) as i64,
            )
        })
        .collect()
}

/// 500 rows whose `id` column is declared nullable (a different Parquet schema).
pub fn put_nullable_id_input(storage: &MemoryStorage, min_seq: i64) -> Vec<RewriteInput> {
    let batch = batch_with(0, 500, "nullable", &random_s(0));
    let fields: Vec<Field> = schema()
        .fields()
        .iter()
        .map(|f| {
            let f = f.as_ref().clone();
            if f.name() == "id" {
                f.with_nullable(true)
            } else {
                f
            }
        })
        .collect();
    let batch =
        RecordBatch::try_new(Arc::new(Schema::new(fields)), batch.columns().to_vec()).unwrap();
    let bytes = write_parquet(&batch, &props(Compression::ZSTD(Default::default()), 1000));
    vec![put(
        storage,
        format!("{DIR}/data-nullable-0.parquet"),
        bytes,
        500,
        min_seq,
    )]
}

pub fn request(inputs: &[RewriteInput]) -> AppendRewrite {
    request_named(inputs, "data-out-")
}

pub fn request_named(inputs: &[RewriteInput], prefix: &str) -> AppendRewrite {
    AppendRewrite {
        inputs: inputs.to_vec(),
        table_schema: None,
        output_dir: DIR.to_string(),
        file_prefix: prefix.to_string(),
        output_level: Level::ZERO,
        creation_time_ms: 0,
        collect_value_stats: true,
        column_types: Vec::new(),
    }
}

/// Every row of a Parquet file, read with arrow-rs's own reader.
pub fn read_bytes(bytes: Bytes) -> RecordBatch {
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    let schema = batches.first().map(|b| b.schema()).unwrap_or_else(schema);
    arrow_select::concat::concat_batches(&schema, &batches).unwrap()
}

pub fn read_file(storage: &MemoryStorage, path: &str) -> RecordBatch {
    read_bytes(Bytes::from(storage.get(path).unwrap().to_vec()))
}

/// The inputs' rows, in order, as one batch (nullability normalised to the test schema).
pub fn read_inputs(storage: &MemoryStorage, inputs: &[RewriteInput]) -> RecordBatch {
    let batches: Vec<RecordBatch> = inputs
        .iter()
        .map(|i| {
            RecordBatch::try_new(schema(), read_file(storage, &i.path).columns().to_vec()).unwrap()
        })
        .collect();
    arrow_select::concat::concat_batches(&schema(), &batches).unwrap()
}

pub fn read_outputs(storage: &MemoryStorage, result: &AppendRewriteResult) -> RecordBatch {
    let batches: Vec<RecordBatch> = result
        .outputs
        .iter()
        .map(|o| {
            RecordBatch::try_new(schema(), read_file(storage, &o.path).columns().to_vec()).unwrap()
        })
        .collect();
    arrow_select::concat::concat_batches(&schema(), &batches).unwrap()
}

/// Reads inputs and outputs back and compares them row by row, in order.
pub fn assert_rows_identical(
    storage: &MemoryStorage,
    inputs: &[RewriteInput],
    result: &AppendRewriteResult,
) {
    let expected = read_inputs(storage, inputs);
    let actual = read_outputs(storage, result);
    assert_eq!(actual.num_rows(), expected.num_rows());
    for (i, (a, e)) in actual.columns().iter().zip(expected.columns()).enumerate() {
        assert_eq!(a, e, "column {i} differs");
    }
    let rows: u64 = result.outputs.iter().map(|o| o.meta.row_count).sum();
    assert_eq!(rows, expected.num_rows() as u64);
}

/// The footer of a file, with page encoding statistics in full.
pub fn footer(storage: &MemoryStorage, path: &str) -> ParquetMetaData {
    let bytes = Bytes::from(storage.get(path).unwrap().to_vec());
    ParquetMetaDataReader::new()
        .with_metadata_options(Some(
            ParquetMetaDataOptions::new().with_encoding_stats_as_mask(false),
        ))
        .parse_and_finish(&bytes)
        .unwrap()
}

/// Per row group, the (page type, encoding) of every page of leaf column `column`, read from
/// the page headers.
pub fn page_layout(file: &[u8], column: usize) -> Vec<Vec<(PageType, Encoding)>> {
    let reader = SerializedFileReader::new(Bytes::from(file.to_vec())).unwrap();
    (0..reader.num_row_groups())
        .map(|rg| {
            let rg = reader.get_row_group(rg).unwrap();
            rg.get_column_page_reader(column)
                .unwrap()
                .map(|p| {
                    let p = p.unwrap();
                    (p.page_type(), p.encoding())
                })
                .collect()
        })
        .collect()
}
