//! The append rewrite inside a wasm target: for every codec Paimon writes, and with dictionary
//! passthrough off and on, two Parquet files are written with arrow-rs into `MemoryStorage`,
//! rewritten, and read back row by row. `smoke()` is exported for hosts without WASI (the
//! browser target), which count the cases that passed.

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::WriterProperties;

use paimon_compact::meta::{CompactionFile, Key, Level};
use paimon_compact::options::{CoreOptions, Flavor, TableKind};
use paimon_compact::rewrite::{rewrite_append, AppendRewrite, RewriteInput};
use paimon_compact::storage::MemoryStorage;

fn batch(first: i64, rows: usize) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let ids: Vec<i64> = (first..first + rows as i64).collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ids.clone())),
        Arc::new(
            ids.iter()
                .map(|&i| (i % 7 != 0).then_some(i as f64 / 3.0))
                .collect::<Float64Array>(),
        ),
        Arc::new(
            ids.iter()
                .map(|&i| (i % 11 != 0).then(|| format!("v{}", (i * 31) % 40)))
                .collect::<StringArray>(),
        ),
    ];
    RecordBatch::try_new(schema, columns).expect("batch")
}

fn read(bytes: &[u8]) -> Result<RecordBatch, String> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(bytes.to_vec()))
        .map_err(|e| e.to_string())?
        .build()
        .map_err(|e| e.to_string())?;
    let batches: Vec<RecordBatch> = reader
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let schema = batches.first().map(|b| b.schema()).ok_or("no batches")?;
    arrow::compute::concat_batches(&schema, &batches).map_err(|e| e.to_string())
}

fn case(name: &str, codec: Compression, passthrough: bool) -> Result<(), String> {
    let storage = MemoryStorage::new();
    let props = WriterProperties::builder()
        .set_compression(codec)
        .set_max_row_group_row_count(Some(1500))
        .build();
    let mut inputs = Vec::new();
    let mut expected = Vec::new();
    for k in 0..2 {
        let b = batch(k * 4000, 4000);
        let mut buf = Vec::new();
        let mut w = ArrowWriter::try_new(&mut buf, b.schema(), Some(props.clone()))
            .map_err(|e| e.to_string())?;
        w.write(&b).map_err(|e| e.to_string())?;
        w.close().map_err(|e| e.to_string())?;
        let path = format!("t/in-{k}.parquet");
        let mut meta = CompactionFile::new(
            format!("in-{k}.parquet"),
            Level::ZERO,
            buf.len() as u64,
            Key::default(),
            Key::default(),
            k * 4000,
            k * 4000 + 3999,
        );
        meta.row_count = 4000;
        storage.put(&path, buf);
        inputs.push(RewriteInput {
            path,
            meta: Arc::new(meta),
            deleted_rows: None,
            columns: None,
        });
        expected.push(b);
    }
    let options = CoreOptions::from_pairs(
        TableKind::Append,
        Flavor::Java,
        [
            ("file.compression", name),
            (
                "parquet.read.enable-dictionary-passthrough",
                if passthrough { "true" } else { "false" },
            ),
        ],
    )
    .map_err(|e| e.to_string())?;
    let req = AppendRewrite {
        inputs,
        table_schema: None,
        output_dir: "t".into(),
        file_prefix: "data-out-".into(),
        output_level: Level::ZERO,
        creation_time_ms: 0,
        collect_value_stats: true,
        column_types: Vec::new(),
    };
    let result = rewrite_append(&storage, &req, &options).map_err(|e| e.to_string())?;
    let mut actual = Vec::new();
    for o in &result.outputs {
        let bytes = storage.get(&o.path).ok_or("output missing")?;
        actual.push(read(&bytes)?);
    }
    let schema = expected[0].schema();
    let expected = arrow::compute::concat_batches(&schema, &expected).map_err(|e| e.to_string())?;
    let actual =
        arrow::compute::concat_batches(&actual[0].schema(), &actual).map_err(|e| e.to_string())?;
    if actual.columns() != expected.columns() {
        return Err(format!("{name}: rows differ after the rewrite"));
    }
    if passthrough && result.metrics.passthrough.rows_mapped == 0 {
        return Err(format!("{name}: passthrough did not map any row"));
    }
    Ok(())
}

/// Every case; the names of those that passed, or the first failure.
pub fn run_all() -> Result<Vec<String>, String> {
    let codecs = [
        ("zstd", Compression::ZSTD(ZstdLevel::default())),
        ("snappy", Compression::SNAPPY),
        ("lz4", Compression::LZ4),
        ("lz4_raw", Compression::LZ4_RAW),
        ("gzip", Compression::GZIP(GzipLevel::default())),
        ("none", Compression::UNCOMPRESSED),
    ];
    let mut passed = Vec::new();
    for (name, codec) in codecs {
        for passthrough in [false, true] {
            case(name, codec, passthrough)?;
            passed.push(format!("{name} passthrough={passthrough}"));
        }
    }
    Ok(passed)
}

/// For hosts without WASI: the number of cases passed (12), or -1.
#[no_mangle]
pub extern "C" fn smoke() -> i32 {
    match run_all() {
        Ok(passed) => passed.len() as i32,
        Err(_) => -1,
    }
}
