//! Unit tests of the file writer: dictionary arrays that are not forwarded, mirrored key
//! columns, and how a flush sends a large chunk on to storage.

use super::super::dictionary::DictWriters;
use super::super::sink::SINK_CHUNK;
use super::*;
use crate::storage::MemoryStorage;
use arrow_array::types::Int32Type;
use arrow_array::{Array, DictionaryArray, Int64Array, StringArray};
use arrow_schema::{Field, Schema};
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowSchemaConverter;

/// A vetoed (or never requested) passthrough must never let a dictionary array reach the
/// writer, whoever handed it over: it is decoded, counted, and written as values.
#[test]
fn dictionary_arrays_are_decoded_when_not_forwarded() {
    let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, true)]));
    let descr = ArrowSchemaConverter::new().convert(&schema).unwrap();
    let dict: DictionaryArray<Int32Type> = vec![Some("a"), None, Some("b"), Some("a")]
        .into_iter()
        .collect();
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new(
            "s",
            dict.data_type().clone(),
            true,
        )])),
        vec![Arc::new(dict) as ArrayRef],
    )
    .unwrap();
    let cfg = Arc::new(DictConfig {
        compression: parquet::basic::Compression::SNAPPY,
        offload: None,
        data_page_size_limit: 1 << 20,
        data_page_row_count_limit: 20_000,
        dictionary_page_size_limit: 1 << 20,
        write_batch_size: 1024,
        statistics: true,
        statistics_truncate_length: None,
        column_index_truncate_length: None,
        writers: DictWriters {
            strings: false,
            primitives: false,
        },
    });
    let props = WriterProperties::builder().build();
    let spec = FileSpec::new(schema, Arc::new(descr), props, cfg);
    let mut w = ParquetFileWriter::new(&spec, None).unwrap();
    let mut file = Vec::new();
    let mut out = |piece: &[u8]| -> Result<()> {
        file.extend_from_slice(piece);
        Ok(())
    };
    w.write(&batch, &mut out).unwrap();
    assert_eq!(w.dictionary_arrays_decoded, 1);
    w.finish(&mut out).unwrap();
    let read = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(file))
        .unwrap()
        .build()
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let expected = StringArray::from(vec![Some("a"), None, Some("b"), Some("a")]);
    assert_eq!(
        read.column(0).as_ref(),
        &expected as &dyn arrow_array::Array
    );
}

fn mirror_cfg() -> Arc<DictConfig> {
    Arc::new(DictConfig {
        compression: parquet::basic::Compression::ZSTD(Default::default()),
        offload: None,
        data_page_size_limit: 4096,
        data_page_row_count_limit: 20_000,
        dictionary_page_size_limit: 8192,
        write_batch_size: 1024,
        statistics: true,
        statistics_truncate_length: None,
        column_index_truncate_length: None,
        writers: DictWriters::default(),
    })
}

/// The layout of a primary-key file: each key column stored twice, `_KEY_<name>` first.
fn kv_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("_KEY_id", DataType::Int64, false),
        Field::new("_KEY_name", DataType::Utf8, false),
        Field::new("v", DataType::Utf8, true),
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, false),
    ]))
}

/// Rows `from..to`; `k` overrides the value column `id` of row `from + k.0`.
fn kv_batch(from: i64, to: i64, k: Option<(usize, i64)>) -> RecordBatch {
    let ids: Vec<i64> = (from..to).map(|i| i * 7 + 1).collect();
    let names: Vec<String> = (from..to).map(|i| format!("user-{:08}", i * 3)).collect();
    let mut value_ids = ids.clone();
    if let Some((at, v)) = k {
        value_ids[at] = v;
    }
    let v: Vec<Option<String>> = (from..to)
        .map(|i| (i % 5 != 0).then(|| format!("v{}", i % 97)))
        .collect();
    RecordBatch::try_new(
        kv_schema(),
        vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(StringArray::from(names.clone())),
            Arc::new(StringArray::from(v)),
            Arc::new(Int64Array::from(value_ids)),
            Arc::new(StringArray::from(names)),
        ],
    )
    .unwrap()
}

/// Writes `batches` to a file, with the key columns mirrored or not, spilling beyond
/// `spill` bytes of pages (through `storage`) when given.
fn write_kv(
    batches: &[RecordBatch],
    mirrored: bool,
    spill: Option<(&MemoryStorage, usize)>,
) -> Vec<u8> {
    let schema = kv_schema();
    let descr = ArrowSchemaConverter::new().convert(&schema).unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_bytes(Some(64 * 1024))
        .build();
    let spill = spill.map(|(st, budget)| {
        PageSpill::new(Arc::new(st.clone()), "out.parquet.spill".into(), budget)
    });
    let mut spec = FileSpec::new(schema, Arc::new(descr), props, mirror_cfg());
    if mirrored {
        spec.mirrors = vec![(3, 0), (4, 1)];
    }
    let mut w = ParquetFileWriter::new(&spec, spill).unwrap();
    if mirrored {
        let mirror_of: Vec<_> = w.fields.iter().map(|f| f.mirror_of).collect();
        assert_eq!(mirror_of, vec![None, None, None, Some(0), Some(1)]);
    }
    let mut file = Vec::new();
    let mut out = |piece: &[u8]| -> Result<()> {
        file.extend_from_slice(piece);
        Ok(())
    };
    for b in batches {
        w.write(b, &mut out).unwrap();
    }
    w.finish(&mut out).unwrap();
    file
}

fn read_back(file: Vec<u8>) -> (Vec<RecordBatch>, usize) {
    let builder = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(file)).unwrap();
    let row_groups = builder.metadata().num_row_groups();
    let batches = builder
        .build()
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    (batches, row_groups)
}

/// A mirrored key column is the source's pages copied under its own metadata, and that is
/// exactly what encoding it again gives: the files are the same byte for byte, over
/// several row groups, with pages in memory and with most of them spilled (so a source's
/// spilled pages are read back twice), and the spill objects are gone afterwards.
#[test]
fn a_mirrored_column_is_byte_for_byte_the_column_written_again() {
    let batches: Vec<RecordBatch> = (0..6)
        .map(|i| kv_batch(i * 5000, (i + 1) * 5000, None))
        .collect();
    let plain = write_kv(&batches, false, None);
    assert_eq!(write_kv(&batches, true, None), plain);
    let storage = MemoryStorage::new();
    assert_eq!(write_kv(&batches, true, Some((&storage, 8 * 1024))), plain);
    assert!(storage.paths().is_empty(), "{:?}", storage.paths());
    let (read, row_groups) = read_back(plain);
    assert!(row_groups > 2, "{row_groups} row groups");
    let rows: usize = read.iter().map(RecordBatch::num_rows).sum();
    assert_eq!(rows, 30_000);
}

/// A batch whose value column differs from its key column (never so in a file Paimon
/// wrote, but not trusted) ends the row group in progress, and from there on the column
/// is written as itself: every value reads back as written.
#[test]
fn a_batch_that_differs_ends_the_mirror_and_its_row_group() {
    let batches = vec![
        kv_batch(0, 1000, None),
        kv_batch(1000, 2000, Some((17, -5))),
        kv_batch(2000, 3000, None),
    ];
    let (read, row_groups) = read_back(write_kv(&batches, true, None));
    let expected = arrow_select::concat::concat_batches(&kv_schema(), &batches).unwrap();
    let got = arrow_select::concat::concat_batches(&kv_schema(), &read).unwrap();
    assert_eq!(got, expected);
    // The first batch ends its row group, which it would not have otherwise.
    let first_rows = |mirrored| {
        let file = Bytes::from(write_kv(&batches, mirrored, None));
        let reader = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
        reader.metadata().row_group(0).num_rows()
    };
    assert_eq!(first_rows(true), 1000);
    assert!(first_rows(false) > 1000);
    assert!(row_groups > 1);
}

/// A row group's chunks go to storage as they are copied (a megabyte at a time), not once
/// a whole chunk sits in the sink; a storage write that fails in the middle of a chunk is
/// that storage error, typed, not the Parquet error it passes through.
#[test]
fn a_flush_sends_a_large_chunk_on_as_it_goes_and_reports_a_failed_write_as_itself() {
    let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, false)]));
    let descr = ArrowSchemaConverter::new().convert(&schema).unwrap();
    let props = WriterProperties::builder()
        .set_compression(parquet::basic::Compression::UNCOMPRESSED)
        .build();
    // 4 MB of unique strings: one chunk, written PLAIN once the dictionary is full.
    let values: Vec<String> = (0..100_000).map(|i| format!("{i:040}")).collect();
    let batch =
        RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(values))]).unwrap();
    let cfg = Arc::new(DictConfig {
        compression: parquet::basic::Compression::UNCOMPRESSED,
        ..(*mirror_cfg()).clone()
    });
    let spec = FileSpec::new(schema.clone(), Arc::new(descr), props, cfg);
    let write = |fail_at: Option<usize>| {
        let mut w = ParquetFileWriter::new(&spec, None).unwrap();
        let (mut calls, mut largest, mut file) = (0usize, 0usize, Vec::new());
        let mut out = |piece: &[u8]| -> Result<()> {
            calls += 1;
            if Some(calls) == fail_at {
                return Err(crate::storage::StorageError::new(
                    crate::storage::StorageErrorKind::Io,
                    "out.parquet",
                    "disk full",
                )
                .into());
            }
            largest = largest.max(piece.len());
            file.extend_from_slice(piece);
            Ok(())
        };
        w.write(&batch, &mut out).unwrap();
        let result = w.flush_row_group(&mut out);
        // Never more than the piece being filled and the one before it.
        assert!(w.sink.most_held() <= 2, "{}", w.sink.most_held());
        let result = result.and_then(|()| w.finish(&mut out));
        (result.map(|_| ()), calls, largest, file)
    };
    let (result, calls, largest, file) = write(None);
    result.unwrap();
    assert!(
        calls >= 4 && largest <= SINK_CHUNK,
        "{calls} writes, the largest {largest} bytes"
    );
    assert!(file.len() > 4_000_000, "{}", file.len());
    assert_eq!(
        read_back(file)
            .0
            .iter()
            .map(RecordBatch::num_rows)
            .sum::<usize>(),
        100_000
    );
    let (result, ..) = write(Some(2));
    let err = result.unwrap_err();
    assert!(
        matches!(&err.kind, crate::error::ErrorKind::Io { path, .. } if path == "out.parquet"),
        "{err:?}"
    );
}
