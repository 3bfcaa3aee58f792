//! The append-only compaction rewrite against real Parquet files in `MemoryStorage`: rows and
//! order, every codec, rolling, output metadata, value statistics, deletion vectors, fast copy
//! and dictionary passthrough (with the output's page layout checked from its page headers).
//! Failure cases live in `append_rewrite_errors.rs`.
#![cfg(feature = "rewrite")]

use crate::append_support as support;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use arrow_schema::DataType;
use parquet::basic::{Compression, Encoding, GzipLevel, PageType, ZstdLevel};
use parquet::file::properties::WriterProperties;

use paimon_compact::meta::{FileSource, Level};
use paimon_compact::rewrite::{
    rewrite_append, FastCopyRefusalReason, NotForwardedReason, PassthroughVeto, StatValue,
    FAST_COPY_OPTION,
};
use paimon_compact::storage::{MemoryStorage, ObjectMeta, Storage, StorageResult, StorageWriter};
use support::*;

/// Every codec Paimon writes, by its `file.compression` name.
fn codecs() -> Vec<(&'static str, Compression)> {
    vec![
        ("zstd", Compression::ZSTD(ZstdLevel::default())),
        ("snappy", Compression::SNAPPY),
        ("lz4", Compression::LZ4),
        ("lz4_raw", Compression::LZ4_RAW),
        ("gzip", Compression::GZIP(GzipLevel::default())),
        ("none", Compression::UNCOMPRESSED),
    ]
}

#[test]
fn rows_and_order_survive_every_codec() {
    for (name, codec) in codecs() {
        let storage = MemoryStorage::new();
        let inputs = put_inputs(&storage, 3, 5000, &props(codec, 2000), 100);
        let options = opts(&[("file.compression", name)]);
        let result = rewrite_append(&storage, &request(&inputs), &options).unwrap();
        assert_eq!(result.outputs.len(), 1, "{name}");
        assert_rows_identical(&storage, &inputs, &result);
        for out in &result.outputs {
            let md = footer(&storage, &out.path);
            for rg in md.row_groups() {
                for chunk in rg.columns() {
                    assert_eq!(
                        std::mem::discriminant(&chunk.compression()),
                        std::mem::discriminant(&codec),
                        "{name}: output chunk codec"
                    );
                }
            }
        }
        // One footer read per input plus one read per input row group (3 row groups each).
        assert!(
            result.metrics.storage_reads <= 3 * 4,
            "{name}: {:?}",
            result.metrics
        );
        assert_eq!(result.metrics.input_rows, 15_000);
        assert_eq!(result.metrics.output_rows, 15_000);
    }
}

#[test]
fn output_metadata_is_ready_to_commit() {
    let storage = MemoryStorage::new();
    let inputs = put_inputs(&storage, 3, 3000, &props(Compression::SNAPPY, 1000), 40);
    let mut req = request(&inputs);
    req.output_level = Level::new(2);
    req.creation_time_ms = 1_700_000_000_000;
    let result = rewrite_append(
        &storage,
        &req,
        &opts(&[("file.format.per.level", "2:parquet")]),
    )
    .unwrap();
    let out = &result.outputs[0];
    assert_eq!(out.meta.file_source, FileSource::Compact);
    assert_eq!(out.meta.level, Level::new(2));
    assert_eq!(out.meta.row_count, 9000);
    assert_eq!(out.meta.min_sequence_number.0, 40);
    assert_eq!(out.meta.max_sequence_number.0, 40 + 9000 - 1);
    assert_eq!(out.meta.creation_time_ms, 1_700_000_000_000);
    assert_eq!(out.meta.delete_row_count, Some(0));
    assert_eq!(out.meta.file_size, storage.size(&out.path).unwrap());
    assert_eq!(out.path, format!("t/bucket-0/{}", out.meta.file_name));
    assert!(
        out.meta.file_name.starts_with("data-out-") && out.meta.file_name.ends_with(".parquet")
    );
    assert!(
        result.requeue_last,
        "a 9000-row file is far below compaction.file-size"
    );
}

#[test]
fn rolls_at_target_file_size() {
    let storage = MemoryStorage::new();
    let inputs = put_inputs(&storage, 6, 20_000, &props(Compression::SNAPPY, 5000), 1);
    let target: u64 = 256 * 1024;
    let options = opts(&[
        ("file.compression", "snappy"),
        ("target-file-size", "256kb"),
        ("parquet.block.size", "64kb"),
    ]);
    let result = rewrite_append(&storage, &request(&inputs), &options).unwrap();
    assert!(
        result.outputs.len() >= 4,
        "{} outputs",
        result.outputs.len()
    );
    assert_rows_identical(&storage, &inputs, &result);
    let (last, full) = result.outputs.split_last().unwrap();
    for f in full {
        let size = f.meta.file_size;
        assert!(
            size >= target * 8 / 10 && size <= target * 13 / 10,
            "rolled file of {size} bytes for a target of {target}"
        );
    }
    assert!(last.meta.file_size <= target * 13 / 10);
    // Sequence ranges follow each other from the first input's minimum.
    let mut next = 1;
    for f in &result.outputs {
        assert_eq!(f.meta.min_sequence_number.0, next);
        next = f.meta.max_sequence_number.0 + 1;
    }
    assert_eq!(next, 1 + 120_000);
    let cfs = options.compaction_file_size;
    assert_eq!(result.requeue_last, last.meta.file_size < cfs);
    // Row groups are cut by parquet.block.size.
    let md = footer(&storage, &full[0].path);
    assert!(
        md.num_row_groups() >= 3,
        "{} row groups",
        md.num_row_groups()
    );
}

#[test]
fn value_stats_bound_every_column() {
    let storage = MemoryStorage::new();
    let inputs = put_inputs(&storage, 2, 4000, &props(Compression::SNAPPY, 1500), 1);
    let result = rewrite_append(&storage, &request(&inputs), &opts(&[])).unwrap();
    let stats = result.outputs[0].value_stats.as_ref().unwrap();
    let all = read_inputs(&storage, &inputs);
    let id = stats.iter().find(|s| s.column == "id").unwrap();
    assert_eq!(id.min, Some(StatValue::Long(0)));
    assert_eq!(id.max, Some(StatValue::Long(7999)));
    assert_eq!(id.null_count, Some(0));
    let s_col = all.column_by_name("s").unwrap().as_string::<i32>();
    let values: Vec<&str> = s_col.iter().flatten().collect();
    let s = stats.iter().find(|s| s.column == "s").unwrap();
    assert_eq!(
        s.min,
        Some(StatValue::Bytes(
            values.iter().min().unwrap().as_bytes().to_vec()
        ))
    );
    assert_eq!(
        s.max,
        Some(StatValue::Bytes(
            values.iter().max().unwrap().as_bytes().to_vec()
        ))
    );
    assert_eq!(s.null_count, Some(s_col.null_count() as u64));
}

#[test]
fn deletion_vectors_drop_their_rows() {
    let storage = MemoryStorage::new();
    let mut inputs = put_inputs(&storage, 2, 3000, &props(Compression::SNAPPY, 1000), 10);
    let deleted: Vec<u64> = (0..3000)
        .filter(|i| i % 7 == 0 || (1200..1300).contains(i))
        .collect();
    inputs[1].deleted_rows = Some(deleted.clone());
    let result = rewrite_append(&storage, &request(&inputs), &opts(&[])).unwrap();
    let out = read_outputs(&storage, &result);
    let before = read_inputs(&storage, &inputs[..1]);
    let second = read_file(&storage, &inputs[1].path);
    let keep: arrow_array::BooleanArray = (0..3000u64)
        .map(|i| Some(deleted.binary_search(&i).is_err()))
        .collect();
    let second = arrow_select::filter::filter_record_batch(&second, &keep).unwrap();
    let expected =
        arrow_select::concat::concat_batches(&before.schema(), &[before, second]).unwrap();
    assert_eq!(out.columns(), expected.columns());
    assert_eq!(result.metrics.deleted_rows, deleted.len() as u64);
    let rows = 6000 - deleted.len() as u64;
    assert_eq!(result.outputs[0].meta.row_count, rows);
    assert_eq!(
        result.outputs[0].meta.max_sequence_number.0,
        10 + rows as i64 - 1
    );
}

#[test]
fn table_schema_with_dictionary_types_writes_plain_types() {
    let storage = MemoryStorage::new();
    let inputs = put_inputs(&storage, 2, 2000, &props(Compression::SNAPPY, 1000), 1);
    let mut req = request(&inputs);
    let fields: Vec<arrow_schema::Field> = schema()
        .fields()
        .iter()
        .map(|f| {
            if f.name() == "s" {
                f.as_ref().clone().with_data_type(DataType::Dictionary(
                    Box::new(DataType::Int32),
                    Box::new(DataType::Utf8),
                ))
            } else {
                f.as_ref().clone()
            }
        })
        .collect();
    req.table_schema = Some(std::sync::Arc::new(arrow_schema::Schema::new(fields)));
    let result = rewrite_append(&storage, &req, &opts(&[])).unwrap();
    assert_rows_identical(&storage, &inputs, &result);
}

// ---- fast copy -------------------------------------------------------------------------------

#[test]
fn fast_copy_splices_matching_files() {
    let storage = MemoryStorage::new();
    let inputs = put_inputs(
        &storage,
        3,
        4000,
        &props(Compression::ZSTD(ZstdLevel::default()), 1000),
        1,
    );
    let options = opts(&[(FAST_COPY_OPTION, "true")]);
    let result = rewrite_append(&storage, &request(&inputs), &options).unwrap();
    let m = &result.metrics.fast_copy;
    assert!(m.requested);
    assert_eq!(m.files_copied, 3, "{m:?}");
    assert_eq!(m.row_groups_copied, 12);
    assert!(m.refused.is_empty(), "{m:?}");
    assert_eq!(result.metrics.row_groups_decoded, 0);
    assert_rows_identical(&storage, &inputs, &result);
    let md = footer(&storage, &result.outputs[0].path);
    assert_eq!(md.num_row_groups(), 12, "row groups are copied, not merged");
    // Copied chunks keep their encodings (and encoding statistics, for the next round).
    assert!(md.row_group(0).column(2).page_encoding_stats().is_some());
    // ... and their page index, with page offsets moved to where the pages now are: a reader
    // that skips pages through it reads the right rows.
    use arrow_array::RecordBatch;
    use parquet::arrow::arrow_reader::{
        ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
    };
    let out = bytes::Bytes::from(storage.get(&result.outputs[0].path).unwrap().to_vec());
    let indexed = parquet::file::metadata::ParquetMetaDataReader::new()
        .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Required)
        .parse_and_finish(&out)
        .expect("the output has a page index");
    for rg in 0..indexed.num_row_groups() {
        let pages = indexed.page_index_for_row_group(rg);
        for c in 0..indexed.row_group(rg).num_columns() {
            let oi = pages.offset_index(c).expect("offset index of every chunk");
            let chunk = indexed.row_group(rg).column(c);
            let (start, len) = chunk.byte_range();
            for loc in oi.page_locations() {
                assert!(loc.offset as u64 >= start && (loc.offset as u64) < start + len);
            }
        }
    }
    let all = read_file(&storage, &result.outputs[0].path);
    let total = all.num_rows();
    let selection = RowSelection::from(vec![
        RowSelector::skip(2500),
        RowSelector::select(700),
        RowSelector::skip(total - 3200),
    ]);
    let reader = ParquetRecordBatchReaderBuilder::try_new_with_options(
        out,
        ArrowReaderOptions::new()
            .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Required),
    )
    .unwrap()
    .with_row_selection(selection)
    .with_batch_size(10_000)
    .build()
    .unwrap();
    let picked: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    let picked = arrow_select::concat::concat_batches(&all.schema(), &picked).unwrap();
    assert_eq!(picked, all.slice(2500, 700));
}

#[test]
fn fast_copy_refuses_and_says_why() {
    let storage = MemoryStorage::new();
    let mut inputs = put_inputs(
        &storage,
        1,
        2000,
        &props(Compression::ZSTD(ZstdLevel::default()), 1000),
        1,
    );
    // Another codec than the table's.
    inputs.extend(put_inputs_named(
        &storage,
        "snappy",
        1,
        2000,
        &props(Compression::SNAPPY, 1000),
        2001,
    ));
    // Rows to delete.
    let mut dv = put_inputs_named(
        &storage,
        "dv",
        1,
        2000,
        &props(Compression::ZSTD(ZstdLevel::default()), 1000),
        4001,
    );
    dv[0].deleted_rows = Some(vec![5, 6, 7]);
    inputs.extend(dv);
    // A row group larger than parquet.block.size.
    inputs.extend(put_inputs_named(
        &storage,
        "big",
        1,
        60_000,
        &props(Compression::ZSTD(ZstdLevel::default()), 60_000),
        6001,
    ));
    // A Parquet schema that differs (nullable where the others are required).
    inputs.extend(put_nullable_id_input(&storage, 66_001));
    let options = opts(&[(FAST_COPY_OPTION, "true"), ("parquet.block.size", "200kb")]);
    let result = rewrite_append(&storage, &request(&inputs), &options).unwrap();
    let m = &result.metrics.fast_copy;
    assert_eq!(m.files_copied, 1, "{m:?}");
    let reasons: Vec<&FastCopyRefusalReason> = m.refused.iter().map(|r| &r.reason).collect();
    assert!(
        matches!(reasons[0], FastCopyRefusalReason::CodecDiffers { file, table, .. } if file == "snappy" && table == "zstd"),
        "{reasons:?}"
    );
    assert_eq!(reasons[1], &FastCopyRefusalReason::HasDeletions);
    assert!(
        matches!(
            reasons[2],
            FastCopyRefusalReason::RowGroupTooLarge { row_group: 0, .. }
        ),
        "{reasons:?}"
    );
    assert!(
        matches!(reasons[3], FastCopyRefusalReason::SchemaDiffers { column } if column == "id"),
        "{reasons:?}"
    );
    assert_eq!(m.refused[0].file, inputs[1].path);
    // Copied and rewritten row groups interleave in sequence order.
    let out = read_outputs(&storage, &result);
    let ids: Vec<i64> = out
        .column_by_name("id")
        .unwrap()
        .as_primitive::<arrow_array::types::Int64Type>()
        .iter()
        .map(|v| v.unwrap())
        .collect();
    let mut expected: Vec<i64> = (0..2000)
        .chain(0..2000)
        .chain((0..2000).filter(|i| ![5, 6, 7].contains(i)))
        .chain(0..60_000)
        .chain(0..500)
        .collect();
    expected.truncate(ids.len());
    assert_eq!(ids.len(), 2000 + 2000 + 1997 + 60_000 + 500);
    assert_eq!(ids, expected);
}

// ---- dictionary passthrough ------------------------------------------------------------------

#[test]
fn passthrough_forwards_fully_encoded_strings_only() {
    let storage = MemoryStorage::new();
    // `name` is unique per row; a 1 KiB dictionary limit makes its chunks fall back to PLAIN
    // midway, so their `encodings` list still names a dictionary.
    let input_props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(2000))
        .set_column_dictionary_page_size_limit("name".into(), 1024)
        .build();
    let inputs = put_inputs(&storage, 3, 5000, &input_props, 1);
    let md = footer(&storage, &inputs[0].path);
    assert!(md
        .row_group(0)
        .column(3)
        .encodings()
        .any(|e| e == Encoding::RLE_DICTIONARY));
    let options = opts(&[
        ("parquet.read.enable-dictionary-passthrough", "true"),
        ("file.compression", "snappy"),
    ]);
    let result = rewrite_append(&storage, &request(&inputs), &options).unwrap();
    assert_rows_identical(&storage, &inputs, &result);
    let p = &result.metrics.passthrough;
    assert!(p.requested && p.veto.is_none(), "{p:?}");
    assert_eq!(p.columns, vec!["s", "name"]);
    assert_eq!(p.files.len(), 3);
    for f in &p.files {
        assert_eq!(f.forwarded, vec!["s"]);
        let reasons: Vec<(&str, &NotForwardedReason)> = f
            .not_forwarded
            .iter()
            .map(|n| (n.column.as_str(), &n.reason))
            .collect();
        assert!(
            reasons.contains(&(
                "name",
                &NotForwardedReason::NotDictionaryEncoded { row_group: 0 }
            )),
            "{reasons:?}"
        );
        assert!(
            reasons.contains(&("b", &NotForwardedReason::Binary)),
            "{reasons:?}"
        );
    }
    // At most one input dictionary per input row group of `s` (3 files x 3 row groups),
    // each mapped once; consecutive equal dictionaries share one table.
    assert!((3..=9).contains(&p.dictionaries_mapped), "{p:?}");
    assert!(p.rows_mapped > 0 && p.rows_hashed > 0, "{p:?}");
    // Golden layout: `s` is one dictionary page then dictionary-encoded data pages.
    let out = storage.get(&result.outputs[0].path).unwrap();
    let pages = page_layout(&out, 2);
    assert!(!pages.is_empty());
    for rg in &pages {
        assert_eq!(rg[0], (PageType::DICTIONARY_PAGE, Encoding::PLAIN));
        assert!(
            rg[1..]
                .iter()
                .all(|p| *p == (PageType::DATA_PAGE, Encoding::RLE_DICTIONARY)),
            "{rg:?}"
        );
    }
    // And the encoding statistics say so, so the output is eligible on the next round.
    let md = footer(&storage, &result.outputs[0].path);
    let stats = md.row_group(0).column(2).page_encoding_stats().unwrap();
    assert!(stats
        .iter()
        .any(|s| s.page_type == PageType::DICTIONARY_PAGE));
}

#[test]
fn passthrough_output_matches_a_plain_rewrite() {
    for differing in [false, true] {
        let storage = MemoryStorage::new();
        let p = props(Compression::ZSTD(ZstdLevel::default()), 4000);
        let inputs = if differing {
            // Each file draws from its own (overlapping) range of values: differing dictionaries.
            put_inputs_with(&storage, 4, 12_000, &p, 1, |file| {
                Box::new(random_s(file as u64 * 17))
            })
        } else {
            // The same values in the same first-appearance order: identical dictionaries.
            put_inputs_with(&storage, 4, 12_000, &p, 1, |_| {
                Box::new(|i| Some(format!("v{:03}", i % 50)))
            })
        };
        let plain =
            rewrite_append(&storage, &request_named(&inputs, "plain-"), &opts(&[])).unwrap();
        let on = rewrite_append(
            &storage,
            &request_named(&inputs, "on-"),
            &opts(&[("parquet.read.enable-dictionary-passthrough", "true")]),
        )
        .unwrap();
        assert_rows_identical(&storage, &inputs, &on);
        let (a, b) = (
            plain.outputs[0].meta.file_size as f64,
            on.outputs[0].meta.file_size as f64,
        );
        assert!(
            (b - a).abs() / a < 0.01,
            "differing={differing}: plain {a} vs passthrough {b}"
        );
        // One dictionary per output row group, never a fallback to PLAIN.
        assert_eq!(on.metrics.passthrough.fallbacks_to_plain, 0);
        let bytes = storage.get(&on.outputs[0].path).unwrap();
        let written = read_file(&storage, &on.outputs[0].path);
        assert_string_column_index(&bytes, 2, written.column(2).as_string::<i32>());
        for rg in page_layout(&bytes, 2) {
            assert_eq!(
                rg.iter()
                    .filter(|p| p.0 == PageType::DICTIONARY_PAGE)
                    .count(),
                1
            );
            assert!(rg
                .iter()
                .all(|p| p.1 != Encoding::PLAIN || p.0 == PageType::DICTIONARY_PAGE));
        }
    }
}

#[test]
fn passthrough_vetoes_switch_it_off() {
    let cases: &[(&[(&str, &str)], PassthroughVeto)] = &[
        (
            &[("parquet.enable.dictionary", "false")],
            PassthroughVeto::DictionaryDisabled,
        ),
        (
            &[("variant.shreddingSchema", "{\"type\":\"ROW\"}")],
            PassthroughVeto::Shredding {
                key: "variant.shreddingSchema".into(),
            },
        ),
    ];
    for (extra, veto) in cases {
        let storage = MemoryStorage::new();
        let inputs = put_inputs(&storage, 2, 3000, &props(Compression::SNAPPY, 1000), 1);
        let mut pairs = vec![("parquet.read.enable-dictionary-passthrough", "true")];
        pairs.extend_from_slice(extra);
        let result = rewrite_append(&storage, &request(&inputs), &opts(&pairs)).unwrap();
        let p = &result.metrics.passthrough;
        assert_eq!(p.veto.as_ref(), Some(veto));
        assert!(
            p.columns.is_empty() && p.files.is_empty() && p.rows_mapped == 0,
            "{p:?}"
        );
        assert_rows_identical(&storage, &inputs, &result);
        let bytes = storage.get(&result.outputs[0].path).unwrap();
        let has_dict = page_layout(&bytes, 2)
            .iter()
            .flatten()
            .any(|p| p.0 == PageType::DICTIONARY_PAGE);
        assert_eq!(
            has_dict,
            !matches!(veto, PassthroughVeto::DictionaryDisabled)
        );
    }
}

#[test]
fn passthrough_materialises_a_file_index_column_alone() {
    let storage = MemoryStorage::new();
    let inputs = put_inputs(&storage, 2, 3000, &props(Compression::SNAPPY, 1000), 1);
    let options = opts(&[
        ("parquet.read.enable-dictionary-passthrough", "true"),
        ("file-index.bloom-filter.columns", "s"),
    ]);
    let result = rewrite_append(&storage, &request(&inputs), &options).unwrap();
    let p = &result.metrics.passthrough;
    assert_eq!(p.file_index_columns, vec!["s"]);
    assert_eq!(p.columns, vec!["name"]);
    for f in &p.files {
        assert_eq!(f.forwarded, vec!["name"]);
        assert!(f
            .not_forwarded
            .iter()
            .any(|n| n.column == "s" && n.reason == NotForwardedReason::FileIndex));
    }
    assert_rows_identical(&storage, &inputs, &result);
}

#[test]
fn passthrough_mixes_encoded_and_plain_inputs() {
    let storage = MemoryStorage::new();
    let mut inputs = put_inputs(&storage, 1, 3000, &props(Compression::SNAPPY, 1000), 1);
    let plain_props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(1000))
        .set_dictionary_enabled(false)
        .build();
    inputs.extend(put_inputs_named(
        &storage,
        "plain",
        1,
        3000,
        &plain_props,
        3001,
    ));
    inputs.extend(put_inputs_named(
        &storage,
        "again",
        1,
        3000,
        &props(Compression::SNAPPY, 1000),
        6001,
    ));
    let options = opts(&[("parquet.read.enable-dictionary-passthrough", "true")]);
    let result = rewrite_append(&storage, &request(&inputs), &options).unwrap();
    assert_rows_identical(&storage, &inputs, &result);
    let files = &result.metrics.passthrough.files;
    assert_eq!(files[0].forwarded, vec!["s", "name"]);
    assert!(files[1].forwarded.is_empty());
    assert_eq!(files[2].forwarded, vec!["s", "name"]);
}

#[test]
fn passthrough_falls_back_to_plain_when_the_dictionary_outgrows_its_page() {
    let storage = MemoryStorage::new();
    let inputs = put_inputs(&storage, 3, 4000, &props(Compression::SNAPPY, 4000), 1);
    let options = opts(&[
        ("parquet.read.enable-dictionary-passthrough", "true"),
        ("parquet.dictionary.page.size", "4kb"),
    ]);
    let result = rewrite_append(&storage, &request(&inputs), &options).unwrap();
    assert_rows_identical(&storage, &inputs, &result);
    assert!(result.metrics.passthrough.fallbacks_to_plain > 0);
    let bytes = storage.get(&result.outputs[0].path).unwrap();
    let written = read_file(&storage, &result.outputs[0].path);
    assert_string_column_index(&bytes, 3, written.column(3).as_string::<i32>());
    let name_pages = page_layout(&bytes, 3);
    assert!(
        name_pages[0].contains(&(PageType::DATA_PAGE, Encoding::PLAIN)),
        "{:?}",
        name_pages[0]
    );
    assert!(name_pages[0].contains(&(PageType::DATA_PAGE, Encoding::RLE_DICTIONARY)));
}

/// Only in `bench-comparisons` builds, where arrow-rs's writer is a choice.
#[cfg(feature = "bench-comparisons")]
#[test]
fn passthrough_into_arrow_rs_writer_for_comparison() {
    let storage = MemoryStorage::new();
    let inputs = put_inputs(&storage, 3, 3000, &props(Compression::SNAPPY, 1000), 1);
    let options = opts(&[
        ("parquet.read.enable-dictionary-passthrough", "true"),
        (paimon_compact::rewrite::PASSTHROUGH_WRITER_OPTION, "arrow"),
    ]);
    let result = rewrite_append(&storage, &request(&inputs), &options).unwrap();
    assert_rows_identical(&storage, &inputs, &result);
    let p = &result.metrics.passthrough;
    assert_eq!(p.writer, "arrow");
    assert_eq!(p.files[0].forwarded, vec!["s", "name"]);
    assert_eq!(
        (p.rows_mapped, p.dictionary_arrays_decoded),
        (0, 0),
        "{p:?}"
    );
    let bytes = storage.get(&result.outputs[0].path).unwrap();
    for rg in page_layout(&bytes, 2) {
        assert_eq!(rg[0], (PageType::DICTIONARY_PAGE, Encoding::PLAIN));
    }
}

#[test]
fn writer_honours_page_size_and_zstd_level() {
    let storage = MemoryStorage::new();
    let inputs = put_inputs(&storage, 2, 8000, &props(Compression::SNAPPY, 8000), 1);
    let run = |prefix: &str, pairs: &[(&str, &str)]| {
        let result =
            rewrite_append(&storage, &request_named(&inputs, prefix), &opts(pairs)).unwrap();
        assert_rows_identical(&storage, &inputs, &result);
        let bytes = storage.get(&result.outputs[0].path).unwrap();
        (
            result.outputs[0].meta.file_size,
            page_layout(&bytes, 0)[0].len(),
        )
    };
    // `id` is unique: a dictionary-less column whose pages are cut by parquet.page.size.
    let (_, default_pages) = run("a-", &[("parquet.enable.dictionary", "false")]);
    let (_, small_pages) = run(
        "b-",
        &[
            ("parquet.enable.dictionary", "false"),
            ("parquet.page.size", "8kb"),
        ],
    );
    assert!(
        small_pages >= 8 * default_pages.max(1),
        "{small_pages} vs {default_pages}"
    );
    let (level1, _) = run("c-", &[("file.compression.zstd-level", "1")]);
    let (level19, _) = run("d-", &[("file.compression.zstd-level", "19")]);
    assert!(
        level19 < level1,
        "zstd level 19 {level19} vs level 1 {level1}"
    );
}

/// Nested columns (a list and a struct) before a STRING column, an all-null STRING column and
/// empty strings: the generic path and the passthrough writer both keep every row.
#[test]
fn nested_columns_all_null_and_empty_strings() {
    use arrow_array::types::Int32Type;
    use arrow_array::{ArrayRef, Int32Array, ListArray, RecordBatch, StringArray, StructArray};
    use arrow_schema::{Field, Fields, Schema};
    use std::sync::Arc;

    let make = |first: i32, rows: i32| {
        let list = ListArray::from_iter_primitive::<Int32Type, _, _>(
            (first..first + rows)
                .map(|i| (i % 4 != 0).then(|| (0..i % 3).map(Some).collect::<Vec<_>>())),
        );
        let point_fields = Fields::from(vec![
            Field::new("px", DataType::Int32, true),
            Field::new("label", DataType::Utf8, true),
        ]);
        let point = StructArray::new(
            point_fields.clone(),
            vec![
                Arc::new(Int32Array::from_iter((first..first + rows).map(Some))) as ArrayRef,
                Arc::new(StringArray::from_iter(
                    (first..first + rows).map(|i| Some(format!("l{}", i % 5))),
                )),
            ],
            None,
        );
        let empty_or_not = StringArray::from_iter((first..first + rows).map(|i| {
            Some(if i % 3 == 0 {
                String::new()
            } else {
                format!("k{}", i % 9)
            })
        }));
        let all_null = StringArray::from_iter((0..rows).map(|_| None::<String>));
        let schema = Arc::new(Schema::new(vec![
            Field::new("tags", list.data_type().clone(), true),
            Field::new("point", DataType::Struct(point_fields), true),
            Field::new("k", DataType::Utf8, false),
            Field::new("nothing", DataType::Utf8, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(list),
                Arc::new(point),
                Arc::new(empty_or_not),
                Arc::new(all_null),
            ],
        )
        .unwrap()
    };
    for passthrough in ["false", "true"] {
        let storage = MemoryStorage::new();
        let mut inputs = Vec::new();
        let mut expected = Vec::new();
        for k in 0..3 {
            let batch = make(k * 3000, 3000);
            let bytes = write_parquet(&batch, &props(Compression::SNAPPY, 1000));
            let path = format!("{DIR}/data-nested-{k}.parquet");
            storage.put(&path, bytes);
            let mut meta = paimon_compact::meta::CompactionFile::new(
                format!("data-nested-{k}.parquet"),
                Level::ZERO,
                0,
                Default::default(),
                Default::default(),
                k as i64 * 3000,
                k as i64 * 3000 + 2999,
            );
            meta.row_count = 3000;
            inputs.push(paimon_compact::rewrite::RewriteInput {
                path,
                meta: std::sync::Arc::new(meta),
                deleted_rows: None,
                columns: None,
            });
            expected.push(batch);
        }
        let options = opts(&[("parquet.read.enable-dictionary-passthrough", passthrough)]);
        let result = rewrite_append(&storage, &request(&inputs), &options).unwrap();
        let actual: Vec<RecordBatch> = result
            .outputs
            .iter()
            .map(|o| read_file(&storage, &o.path))
            .collect();
        let actual = arrow_select::concat::concat_batches(&actual[0].schema(), &actual).unwrap();
        let expected =
            arrow_select::concat::concat_batches(&expected[0].schema(), &expected).unwrap();
        assert_eq!(
            actual.columns(),
            expected.columns(),
            "passthrough={passthrough}"
        );
        if passthrough == "true" {
            let p = &result.metrics.passthrough;
            assert_eq!(p.columns, vec!["k", "nothing"], "{p:?}");
            assert_eq!(p.files[0].forwarded, vec!["k", "nothing"], "{p:?}");
        }
    }
}

/// A list column whose item field two writers name differently (`item` from arrow-rs,
/// `element` from parquet-mr and pyarrow) is the same column: both files compact together.
#[test]
fn list_item_names_of_different_writers_are_the_same_column() {
    use arrow_array::types::Int32Type;
    use arrow_array::{ArrayRef, Int64Array, ListArray, RecordBatch};
    use arrow_schema::{Field, Schema};
    use std::sync::Arc;

    let make = |first: i64, item: &str| {
        let list = ListArray::from_iter_primitive::<Int32Type, _, _>(
            (first..first + 100).map(|i| Some((0..(i % 4) as i32).map(Some).collect::<Vec<_>>())),
        );
        let named = DataType::List(Arc::new(Field::new(item, DataType::Int32, true)));
        let list = arrow_cast::cast(&list, &named).unwrap();
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("tags", named, true),
        ]));
        let ids = Arc::new(Int64Array::from_iter_values(first..first + 100)) as ArrayRef;
        RecordBatch::try_new(schema, vec![ids, list]).unwrap()
    };
    let storage = MemoryStorage::new();
    let mut inputs = Vec::new();
    let batches = [make(0, "item"), make(100, "element")];
    for (k, batch) in batches.iter().enumerate() {
        let path = format!("{DIR}/data-lists-{k}.parquet");
        storage.put(
            &path,
            write_parquet(batch, &props(Compression::SNAPPY, 1000)),
        );
        let mut meta = paimon_compact::meta::CompactionFile::new(
            format!("data-lists-{k}.parquet"),
            Level::ZERO,
            0,
            Default::default(),
            Default::default(),
            k as i64 * 100,
            k as i64 * 100 + 99,
        );
        meta.row_count = 100;
        inputs.push(paimon_compact::rewrite::RewriteInput {
            path,
            meta: std::sync::Arc::new(meta),
            deleted_rows: None,
            columns: None,
        });
    }
    let result = rewrite_append(&storage, &request(&inputs), &opts(&[])).unwrap();
    assert_eq!(result.metrics.output_rows, 200);
    let out: Vec<RecordBatch> = result
        .outputs
        .iter()
        .map(|o| read_file(&storage, &o.path))
        .collect();
    let out = arrow_select::concat::concat_batches(&out[0].schema(), &out).unwrap();
    // The output keeps the first input's spelling; every value of both files is there.
    let first_type = batches[0].schema().field(1).data_type().clone();
    let expected: Vec<ArrayRef> = batches
        .iter()
        .map(|b| arrow_cast::cast(b.column(1), &first_type).unwrap())
        .collect();
    let expected =
        arrow_select::concat::concat(&expected.iter().map(|a| a.as_ref()).collect::<Vec<_>>())
            .unwrap();
    assert_eq!(out.column(1).as_ref(), expected.as_ref());
}

/// The column index of STRING leaf `leaf` (a top-level column, `values` in file order) bounds
/// every page exactly: per page the smallest and largest value and the null count, found
/// through the offset index.
fn assert_string_column_index(bytes: &[u8], leaf: usize, values: &arrow_array::StringArray) {
    use parquet::file::page_index::column_index::ColumnIndexMetaData;
    let b = bytes::Bytes::copy_from_slice(bytes);
    let md = parquet::file::metadata::ParquetMetaDataReader::new()
        .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Required)
        .parse_and_finish(&b)
        .expect("a page index");
    let mut base = 0usize;
    for rg in 0..md.num_row_groups() {
        let rows = md.row_group(rg).num_rows() as usize;
        let pages = md.page_index_for_row_group(rg);
        let locations = pages
            .offset_index(leaf)
            .expect("offset index")
            .page_locations();
        let Some(ColumnIndexMetaData::BYTE_ARRAY(ci)) = pages.column_index(leaf) else {
            panic!("row group {rg}: no column index for leaf {leaf}");
        };
        for (p, loc) in locations.iter().enumerate() {
            let start = base + loc.first_row_index as usize;
            let end = base
                + locations
                    .get(p + 1)
                    .map_or(rows, |n| n.first_row_index as usize);
            let page: Vec<&str> = (start..end)
                .filter(|&i| values.is_valid(i))
                .map(|i| values.value(i))
                .collect();
            assert_eq!(ci.null_count(p), Some((end - start - page.len()) as i64));
            match (page.iter().min(), page.iter().max()) {
                (Some(lo), Some(hi)) => {
                    assert_eq!(ci.min_value(p), Some(lo.as_bytes()), "rg {rg} page {p}");
                    assert_eq!(ci.max_value(p), Some(hi.as_bytes()), "rg {rg} page {p}");
                }
                _ => assert!(ci.is_null_page(p)),
            }
        }
        base += rows;
    }
}

/// Spilling pages past the memory budget changes nothing in the files: the outputs are byte
/// for byte those of a rewrite that keeps every page in memory.
#[test]
fn spilled_pages_write_the_same_files() {
    let storage = MemoryStorage::new();
    let inputs = put_inputs(
        &storage,
        3,
        20_000,
        &props(Compression::ZSTD(ZstdLevel::default()), 5000),
        1,
    );
    let keep = rewrite_append(
        &storage,
        &request_named(&inputs, "keep-"),
        &opts(&[("paimon-compact.write.spill-threshold", "0")]),
    )
    .unwrap();
    let spill = rewrite_append(
        &storage,
        &request_named(&inputs, "spill-"),
        &opts(&[("paimon-compact.write.spill-threshold", "16kb")]),
    )
    .unwrap();
    assert_eq!(keep.metrics.spilled_bytes, 0);
    assert!(spill.metrics.spilled_bytes > 0, "{:?}", spill.metrics);
    assert_eq!(keep.outputs.len(), spill.outputs.len());
    for (a, b) in keep.outputs.iter().zip(&spill.outputs) {
        assert_eq!(storage.get(&a.path).unwrap(), storage.get(&b.path).unwrap());
    }
    assert!(storage.paths().iter().all(|p| !p.ends_with(".spill")));
}

/// Serves `inner` and records every ranged read of `watched`: (offset, length).
#[derive(Clone)]
struct ReadLog {
    inner: MemoryStorage,
    watched: String,
    reads: std::sync::Arc<std::sync::Mutex<Vec<(u64, u64)>>>,
}

impl Storage for ReadLog {
    fn size(&self, path: &str) -> StorageResult<u64> {
        self.inner.size(path)
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        if path == self.watched {
            self.reads.lock().unwrap().push((offset, len));
        }
        self.inner.read_range(path, offset, len)
    }
    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        self.inner.list(prefix)
    }
    fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter>> {
        self.inner.create_writer(path)
    }
    fn delete(&self, path: &str) -> StorageResult<()> {
        self.inner.delete(path)
    }
    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
        self.inner.create_if_absent(path, bytes)
    }
}

/// A row group is not held whole when one of its column chunks is larger than the read
/// window: that file's column chunks are fetched in windows, and the rows come out the same.
/// Without a window (`0`) the row group is one read, as for a file whose chunks all fit.
#[test]
fn a_column_chunk_larger_than_the_read_window_is_fetched_in_windows() {
    const WINDOW: u64 = 16 * 1024;
    let storage = MemoryStorage::new();
    // One row group of 6 000 rows, uncompressed, in pages of a few KB (a page is the smallest
    // read: one larger than the window is fetched whole): the unique `name` column alone is
    // far over the window.
    let small_pages = WriterProperties::builder()
        .set_compression(Compression::UNCOMPRESSED)
        .set_max_row_group_row_count(Some(6000))
        .set_dictionary_enabled(false)
        .set_data_page_size_limit(2048)
        .set_write_batch_size(64)
        .build();
    let inputs = put_inputs(&storage, 1, 6000, &small_pages, 1);
    let path = inputs[0].path.clone();
    let md = footer(&storage, &path);
    assert_eq!(md.num_row_groups(), 1);
    let chunks: Vec<(u64, u64)> = md.row_groups()[0]
        .columns()
        .iter()
        .map(|c| c.byte_range())
        .collect();
    let data_end = chunks.iter().map(|(s, l)| s + l).max().unwrap();
    assert!(
        chunks.iter().any(|(_, l)| *l > 4 * WINDOW),
        "a chunk over the window: {chunks:?}"
    );
    // The reads of column chunk bytes (the footer's tail read and the page index lie after).
    let data_reads = |window: &str| {
        let log = ReadLog {
            inner: storage.clone(),
            watched: path.clone(),
            reads: Default::default(),
        };
        let options = opts(&[
            ("file.compression", "none"),
            (paimon_compact::rewrite::APPEND_READ_WINDOW_OPTION, window),
        ]);
        let req = request_named(&inputs, &format!("data-out-{window}-"));
        let result = rewrite_append(&log, &req, &options).unwrap();
        assert_rows_identical(&storage, &inputs, &result);
        let reads = log.reads.lock().unwrap().clone();
        reads
            .into_iter()
            .filter(|(offset, len)| offset + len <= data_end)
            .collect::<Vec<_>>()
    };
    let windowed = data_reads("16 kb");
    assert!(
        windowed.iter().all(|(_, len)| *len <= WINDOW),
        "every read within the window: {windowed:?}"
    );
    let fetched: u64 = windowed.iter().map(|(_, len)| len).sum();
    assert!(
        fetched >= data_end - chunks[0].0,
        "every byte read: {windowed:?}"
    );
    let whole = data_reads("0");
    assert_eq!(whole.len(), 1, "one read of the row group: {whole:?}");
}
