//! Fuzz targets: every parser of what comes from outside, each behind one function that takes
//! arbitrary bytes and returns.
//!
//! The contract each target checks is the crate's contract for outside data: any input ends in
//! a typed error or a correct result, never a panic, a hang or unbounded memory. The same
//! functions run in two places (`fuzz/README.md`):
//! * `fuzz/` (cargo-fuzz on the nightly toolchain, outside the workspace) runs them under
//!   libFuzzer for as long as one likes, with its time and memory limits;
//! * the `it` tests replay the committed corpora (`fuzz/corpus/<target>/`) and a fixed set of
//!   mutations of every seed on stable, so each CI run exercises every target and an input
//!   that once crashed stays fixed.
//!
//! Where a parser needs more than bytes (which types a row has, which of a table's files the
//! bytes replace), the input's first byte chooses; each function documents its input.
//! Nothing here trusts a size read from the input: a harness that allocated by a fuzzed count
//! would report its own memory, not the parser's.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use crate::api::{
    compact_append_files, compact_table, plan_bucket, plan_table, run_conformance,
    write_demo_tables, AppendInputFile, AppendRequest, BucketRequest, Services, TableJob,
};
use crate::deletion_vectors::{encode_deletion_vectors, read_deletion_vector, DeletionVectorMeta};
use crate::error::Result;
use crate::maintenance::consumers::read_consumer;
use crate::maintenance::tags::parse_tag;
use crate::maintenance::time::{parse_default_timestamp, parse_with_pattern};
use crate::meta::Level;
use crate::options::maintenance::{
    zone_offset_ms, ExpireOptions, PartitionExpireOptions, TagOptions,
};

use crate::options::{parse_duration_ms, parse_memory_size, CoreOptions, Flavor, TableKind};
use crate::parquet_io::footer::{read_footer, FooterPolicy};
use crate::parquet_io::read::IoCounters;
use crate::rewrite::merge::{rewrite_merge_tree, MergeTreeRewrite};
use crate::rewrite::RewriteInput;
use crate::storage::MemoryStorage;
use crate::table::binary_row::BinaryRow;
use crate::table::fanout::{Task, TaskResult, TaskSet};
use crate::table::index::decode_index_manifest;
use crate::table::lease::{acquire, LeaseRecord};
use crate::table::manifest::{decode_manifest, decode_manifest_list};
use crate::table::path::TablePaths;
use crate::table::schema::TableSchema;
use crate::table::snapshot::Snapshot;
use crate::types::DataType;

/// One fuzz target: its name (the binary `fuzz/fuzz_targets/<name>.rs` and the corpus
/// directory `fuzz/corpus/<name>/`) and its function.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The target's name.
    pub name: &'static str,
    /// Runs one input; returns whatever the input holds (errors are the expected outcome of
    /// most inputs).
    pub run: fn(&[u8]),
}

/// Every target, in the order `fuzz/README.md` lists them.
pub const TARGETS: &[Target] = &[
    Target {
        name: "parquet_append",
        run: parquet_append,
    },
    Target {
        name: "parquet_merge",
        run: parquet_merge,
    },
    Target {
        name: "orc_data",
        run: orc_data,
    },
    Target {
        name: "avro_data",
        run: avro_data,
    },
    Target {
        name: "avro_metadata",
        run: avro_metadata,
    },
    Target {
        name: "theta_sketch",
        run: theta_sketch,
    },
    Target {
        name: "hll_sketch",
        run: hll_sketch,
    },
    Target {
        name: "json_metadata",
        run: json_metadata,
    },
    Target {
        name: "binary_row",
        run: binary_row,
    },
    Target {
        name: "deletion_vector",
        run: deletion_vector,
    },
    Target {
        name: "options",
        run: options,
    },
    Target {
        name: "plan_request",
        run: plan_request,
    },
    Target {
        name: "table_job",
        run: table_job,
    },
];

/// Where the targets put a Parquet input.
const INPUT: &str = "t/bucket-0/data-input.parquet";

/// Deleted positions the targets mark in a file, at most this many rows in (a fuzzed row count
/// never sizes an allocation of the harness).
const MAX_MARKED_ROWS: u64 = 4096;

/// The row count `data`'s footer declares (0 when there is no readable footer): what a table's
/// manifest would say of the file.
fn declared_rows(storage: &MemoryStorage) -> u64 {
    read_footer(
        storage,
        INPUT,
        FooterPolicy::ROWS,
        &mut IoCounters::default(),
    )
    .map(|f| u64::try_from(f.metadata.file_metadata().num_rows()).unwrap_or(0))
    .unwrap_or(0)
}

/// Every third row of the first [`MAX_MARKED_ROWS`], as a deletion vector would mark them.
fn every_third_row(rows: u64) -> Vec<u64> {
    (0..rows.min(MAX_MARKED_ROWS)).step_by(3).collect()
}

/// Lets a panic inside [`crate::decoder_panics::contain`] unwind to it, where it becomes the
/// corrupt-input error the targets' contract allows; every other panic goes to the hook this
/// one replaces. Needed under libFuzzer, whose harness installs a hook that aborts on every
/// panic, caught or not, so a contained decoder panic would count as a crash. Installed once,
/// on the first input (after the harness installed its own).
fn contained_panics_unwind() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !crate::decoder_panics::is_decoding() {
                previous(info);
            }
        }));
    });
}

/// Input: a Parquet data file of an append table. Rewritten by the append rewrite twice: with
/// fast copy (row groups spliced when they can be) and without it, every third row deleted
/// (each page decoded, the deletion vector applied).
pub fn parquet_append(data: &[u8]) {
    contained_panics_unwind();
    for (fast_copy, deleted) in [("true", false), ("false", true)] {
        let storage = Arc::new(MemoryStorage::new());
        storage.put(INPUT, data.to_vec());
        let rows = declared_rows(&storage);
        let request = AppendRequest {
            inputs: vec![AppendInputFile {
                path: INPUT.into(),
                row_count: rows,
                min_sequence_number: 0,
                max_sequence_number: i64::try_from(rows).unwrap_or(i64::MAX).max(1) - 1,
                deleted_rows: deleted.then(|| every_third_row(rows)),
            }],
            output_dir: "t/bucket-0".into(),
            file_prefix: "data-out-".into(),
            options: vec![("paimon-compact.append.fast-copy".into(), fast_copy.into())],
            creation_time_ms: 0,
        };
        let _ = compact_append_files(storage, &request, &Services::none());
    }
}

/// Input: a Parquet data file of a primary-key table (`_KEY_*`, `_SEQUENCE_NUMBER`,
/// `_VALUE_KIND` and the values). Merged alone into the top level, its layout resolved from its
/// own footer: once with the deduplicate engine dropping deletes, once with partial updates,
/// full-compaction changelog and every third row deleted.
pub fn parquet_merge(data: &[u8]) {
    contained_panics_unwind();
    let configs: [(&[(&str, &str)], bool); 2] = [
        (&[], false),
        (
            &[
                ("merge-engine", "partial-update"),
                ("changelog-producer", "full-compaction"),
            ],
            true,
        ),
    ];
    for (pairs, deleted) in configs {
        let Ok(options) =
            CoreOptions::from_pairs(TableKind::PrimaryKey, Flavor::Java, pairs.iter().copied())
        else {
            continue;
        };
        let storage = MemoryStorage::new();
        storage.put(INPUT, data.to_vec());
        let rows = declared_rows(&storage);
        let mut input = RewriteInput::from_parts(
            INPUT.into(),
            rows,
            0,
            i64::try_from(rows).unwrap_or(i64::MAX).max(1) - 1,
            None,
        );
        if deleted {
            input.deleted_rows = Some(every_third_row(rows));
        }
        let request = MergeTreeRewrite {
            sections: vec![vec![vec![input]]],
            schema: None,
            higher_levels: Vec::new(),
            output_dir: "t/bucket-0".into(),
            file_prefix: "data-out-".into(),
            changelog_prefix: "changelog-out-".into(),
            output_level: Level::new(5),
            max_level: Level::new(5),
            drop_delete: true,
            write_data: true,
            column_types: Vec::new(),
            creation_time_ms: 0,
        };
        let _ = rewrite_merge_tree(&storage, &request, &options);
    }
}

/// Input: an ORC data file. Read as its own types, stripe by stripe; each stripe that decodes
/// is written back by this crate's ORC writer, which must accept it, and read again, which
/// must give the same values (but for a time in the second before 1970 with a millisecond or
/// more of fraction, which ORC's encoding cannot carry; `orc_io` documents it).
pub fn orc_data(data: &[u8]) {
    use crate::orc_io::proto::CompressionKind;
    use crate::orc_io::read::{arrow_schema_of, read_orc_batches, read_tail};
    use crate::orc_io::write::{OrcFileWriter, OrcWriteSettings};
    contained_panics_unwind();
    const PATH: &str = "t/bucket-0/data-input.orc";
    let storage = MemoryStorage::new();
    storage.put(PATH, data.to_vec());
    let Ok(schema) = read_tail(&storage, PATH).and_then(|t| arrow_schema_of(&t.footer)) else {
        return;
    };
    let settings = OrcWriteSettings {
        compression: CompressionKind::Zstd,
        stripe_bytes: 1 << 16,
        columns: Vec::new(),
    };
    let _ = read_orc_batches(&storage, PATH, &schema, None, |batch| {
        let mut writer = match OrcFileWriter::new(&schema, &settings) {
            Ok(w) => w,
            Err(e) => panic!("the ORC writer refuses a schema the reader produced: {e}"),
        };
        let mut bytes = Vec::new();
        let mut out = |b: &[u8]| {
            bytes.extend_from_slice(b);
            Ok(())
        };
        let written = writer
            .write(&batch, &mut out)
            .and_then(|()| writer.finish(&mut out));
        if let Err(e) = written {
            panic!("the ORC writer refuses values the reader produced: {e}");
        }
        let back = MemoryStorage::new();
        back.put(PATH, bytes);
        let mut again = Vec::new();
        let read = read_orc_batches(&back, PATH, &schema, None, |b| {
            again.push(b);
            Ok(())
        });
        if let Err(e) = read {
            panic!("this crate cannot read what it wrote: {e}");
        }
        let rows: usize = again.iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows, batch.num_rows(), "rows written back");
        if !has_unencodable_time(&batch) {
            let mut at = 0;
            for b in &again {
                for (c, col) in b.columns().iter().enumerate() {
                    let want = batch.column(c).slice(at, b.num_rows());
                    assert!(
                        want.as_ref() == col.as_ref(),
                        "column {c} reads back other values"
                    );
                }
                at += b.num_rows();
            }
        }
        Ok(())
    });
}

/// Whether a top-level timestamp column of `batch` holds a time in (-1 s, 0) with at least a
/// millisecond of fraction, or a nested column holds any timestamp (not checked here).
fn has_unencodable_time(batch: &arrow_array::RecordBatch) -> bool {
    use arrow_array::cast::AsArray;
    use arrow_array::types::TimestampNanosecondType;
    use arrow_schema::DataType as A;
    batch.columns().iter().any(|c| match c.data_type() {
        A::Timestamp(..) => c
            .as_primitive_opt::<TimestampNanosecondType>()
            .is_none_or(|a| {
                a.iter()
                    .flatten()
                    .any(|v| (-999_999_999..=-1_000_000).contains(&v))
            }),
        A::List(_) | A::Map(..) | A::Struct(_) => true,
        _ => false,
    })
}

/// The columns `avro_data` reads a file as: every family of flat type Paimon writes to Avro.
fn avro_fuzz_schema() -> arrow_schema::SchemaRef {
    use arrow_schema::{DataType as A, Field, Schema, TimeUnit};
    Arc::new(Schema::new(vec![
        Field::new("k", A::Int64, false),
        Field::new("s", A::Utf8, true),
        Field::new("n", A::Int32, true),
        Field::new("d", A::Decimal128(12, 3), true),
        Field::new("ts", A::Timestamp(TimeUnit::Microsecond, None), true),
        Field::new("day", A::Date32, true),
        Field::new("raw", A::Binary, true),
    ]))
}

/// The nested columns `avro_data` also reads a file as: an array, a row holding an array, a
/// string-keyed map (an Avro map) and an int-keyed one (an array of key/value records), as
/// Paimon's writer lays them out.
fn avro_nested_fuzz_schema() -> arrow_schema::SchemaRef {
    use arrow_schema::{DataType as A, Field, Fields, Schema};
    let list = |t: A| A::List(Arc::new(Field::new("element", t, true)));
    let map = |k: A, v: A| crate::types::arrow_map(k, v, true);
    Arc::new(Schema::new(vec![
        Field::new("k", A::Int64, false),
        Field::new("arr", list(A::Int32), true),
        Field::new("m", map(A::Utf8, A::Int32), true),
        Field::new("mi", map(A::Int32, A::Utf8), true),
        Field::new(
            "r",
            A::Struct(Fields::from(vec![
                Field::new("a", A::Int32, true),
                Field::new("tags", list(A::Utf8), true),
            ])),
            true,
        ),
    ]))
}

/// Input: a row count (4 bytes, big-endian: what a manifest would say of the file) and an
/// Avro data file, read as [`avro_nested_fuzz_schema`]'s columns and as [`avro_fuzz_schema`]'s
/// (matched by name, the file's own writer schema resolving them). A file that reads is
/// written back by this crate's Avro writer, which must accept it, and read again, which must
/// give the same rows ([`avro_round_trip`]).
pub fn avro_data(data: &[u8]) {
    contained_panics_unwind();
    let Some((head, file)) = data.split_first_chunk::<4>() else {
        return;
    };
    let rows = u64::from(u32::from_be_bytes(*head));
    let storage = MemoryStorage::new();
    storage.put(AVRO_PATH, file.to_vec());
    avro_round_trip(&storage, rows, &avro_nested_fuzz_schema());
    avro_round_trip(&storage, rows, &avro_fuzz_schema());
}

const AVRO_PATH: &str = "t/bucket-0/data-input.avro";

/// Reads the file at [`AVRO_PATH`] as `schema`'s columns; when it reads, writes the rows back
/// with this crate's Avro writer, which must accept them, and reads that file again, which
/// must give the same rows.
fn avro_round_trip(storage: &MemoryStorage, rows: u64, schema: &arrow_schema::SchemaRef) {
    use crate::rewrite::avro_data::read_avro_batches;
    use crate::rewrite::avro_output::{AvroFileWriter, AvroSpec};
    let mut batches = Vec::new();
    let read = read_avro_batches(storage, AVRO_PATH, schema, rows, |b| {
        batches.push(b);
        Ok(())
    });
    if read.is_err() {
        return;
    }
    let Ok(options) =
        CoreOptions::from_pairs(TableKind::PrimaryKey, Flavor::Java, std::iter::empty())
    else {
        return;
    };
    let spec = match AvroSpec::new(&options, schema, &[], "zstd", "file.compression") {
        Ok(s) => Arc::new(s),
        Err(e) => panic!("the Avro writer refuses the fuzz schema: {e}"),
    };
    let mut writer = AvroFileWriter::new(spec, [3; 16]);
    let mut bytes = Vec::new();
    let mut out = |b: &[u8]| {
        bytes.extend_from_slice(b);
        Ok(())
    };
    for b in &batches {
        if let Err(e) = writer.write(b, &mut out) {
            panic!("the Avro writer refuses rows the reader produced: {e}");
        }
    }
    if let Err(e) = writer.finish(&mut out) {
        panic!("the Avro writer cannot finish: {e}");
    }
    let back = MemoryStorage::new();
    back.put(AVRO_PATH, bytes);
    let mut again = Vec::new();
    if let Err(e) = read_avro_batches(&back, AVRO_PATH, schema, rows, |b| {
        again.push(b);
        Ok(())
    }) {
        panic!("this crate cannot read the Avro file it wrote: {e}");
    }
    let concat = |b: &[arrow_array::RecordBatch]| arrow_select::concat::concat_batches(schema, b);
    match (concat(&batches), concat(&again)) {
        (Ok(a), Ok(b)) => assert!(a == b, "the Avro file reads back other rows"),
        (a, b) => panic!("concatenating the batches: {:?} {:?}", a.err(), b.err()),
    }
}

/// An Avro data file of [`avro_nested_fuzz_schema`]'s columns as Paimon's writer lays them
/// out, written by apache-avro (not by this crate's writer, so that the seed does not share
/// its assumptions), prefixed with its row count.
fn avro_nested_seed() -> Option<Vec<u8>> {
    use apache_avro::types::{Record, Value};
    let schema = apache_avro::Schema::parse_str(
        r#"{"type": "record", "name": "record", "fields": [
          {"name": "k", "type": "long"},
          {"name": "arr", "type": ["null", {"type": "array", "items": ["null", "int"]}],
           "default": null},
          {"name": "m", "type": ["null", {"type": "map", "values": ["null", "int"]}],
           "default": null},
          {"name": "mi", "type": ["null", {"type": "array", "logicalType": "map",
            "items": {"type": "record", "name": "record_mi", "fields": [
              {"name": "key", "type": "int"},
              {"name": "value", "type": ["null", "string"], "default": null}]}}],
           "default": null},
          {"name": "r", "type": ["null", {"type": "record", "name": "record_r", "fields": [
              {"name": "a", "type": ["null", "int"], "default": null},
              {"name": "tags", "type": ["null", {"type": "array",
                "items": ["null", "string"]}], "default": null}]}], "default": null}]}"#,
    )
    .ok()?;
    let some = |v: Value| Value::Union(1, Box::new(v));
    let null = || Value::Union(0, Box::new(Value::Null));
    let mut w = apache_avro::Writer::new(&schema, Vec::new());
    let n = 40i64;
    for k in 0..n {
        let mut r = Record::new(&schema)?;
        r.put("k", Value::Long(k));
        // Every m-th row (from the first) leaves the column null.
        let opt = |m: i64, v: Value| if k % m == 1 { null() } else { some(v) };
        let arr = (0..k % 4).map(|i| match i {
            2 => null(),
            i => some(Value::Int(i as i32)),
        });
        r.put("arr", opt(5, Value::Array(arr.collect())));
        let m = (0..k % 3).map(|i| (format!("m{i}"), some(Value::Int(i as i32))));
        r.put("m", opt(6, Value::Map(m.collect())));
        let kv = (0..k % 3).map(|i| {
            Value::Record(vec![
                ("key".into(), Value::Int(i as i32 - 1)),
                ("value".into(), some(Value::String(format!("v{i}")))),
            ])
        });
        r.put("mi", opt(7, Value::Array(kv.collect())));
        let tags = some(Value::Array(vec![some(Value::String(format!("t{k}")))]));
        let row = Value::Record(vec![
            ("a".into(), opt(4, Value::Int(k as i32))),
            ("tags".into(), tags),
        ]);
        r.put("r", opt(9, row));
        w.append(r).ok()?;
    }
    let file = w.into_inner().ok()?;
    Some([(n as u32).to_be_bytes().to_vec(), file].concat())
}

/// Avro data files of this crate's writer for `avro_data`: nulls in every nullable column,
/// zstd and uncompressed, prefixed with their row count.
fn avro_seeds() -> Vec<Vec<u8>> {
    use crate::rewrite::avro_output::{AvroFileWriter, AvroSpec};
    use arrow_array::{
        ArrayRef, BinaryArray, Date32Array, Decimal128Array, Int32Array, Int64Array, RecordBatch,
        StringArray, TimestampMicrosecondArray,
    };
    let n = 200usize;
    let schema = avro_fuzz_schema();
    let Ok(decimals) = Decimal128Array::from_iter(
        (0..n).map(|i| (i % 7 != 2).then_some(i as i128 * 1_001 - 90_000)),
    )
    .with_precision_and_scale(12, 3) else {
        return Vec::new();
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(
            (0..n).map(|i| i as i64 * 3 - 100),
        )),
        Arc::new(StringArray::from_iter(
            (0..n).map(|i| (i % 5 != 1).then(|| format!("s{i}"))),
        )),
        Arc::new(Int32Array::from_iter(
            (0..n).map(|i| (i % 4 != 0).then_some(i as i32)),
        )),
        Arc::new(decimals),
        Arc::new(TimestampMicrosecondArray::from_iter((0..n).map(|i| {
            (i % 6 != 3).then_some((i as i64 - 100) * 86_400_000_001)
        }))),
        Arc::new(Date32Array::from_iter(
            (0..n).map(|i| (i % 3 != 1).then_some(i as i32 * 50 - 3_000)),
        )),
        Arc::new(BinaryArray::from_iter(
            (0..n).map(|i| (i % 8 != 5).then(|| vec![i as u8; i % 3])),
        )),
    ];
    let Ok(batch) = RecordBatch::try_new(schema.clone(), columns) else {
        return Vec::new();
    };
    let Ok(options) =
        CoreOptions::from_pairs(TableKind::PrimaryKey, Flavor::Java, std::iter::empty())
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for codec in ["zstd", "none"] {
        let Ok(spec) = AvroSpec::new(&options, &schema, &[], codec, "file.compression") else {
            continue;
        };
        let mut w = AvroFileWriter::new(Arc::new(spec), [9; 16]);
        let mut bytes = (n as u32).to_be_bytes().to_vec();
        let mut sink = |b: &[u8]| {
            bytes.extend_from_slice(b);
            Ok(())
        };
        if w.write(&batch, &mut sink)
            .and_then(|()| w.finish(&mut sink))
            .is_ok()
        {
            out.push(bytes);
        }
    }
    out
}

/// ORC files of this crate's writer: flat and nested columns with nulls, uncompressed and
/// zstd, several stripes.
fn orc_seeds() -> Vec<Vec<u8>> {
    use crate::orc_io::proto::CompressionKind;
    use crate::orc_io::write::{OrcFileWriter, OrcWriteSettings};
    use arrow_array::builder::{Int32Builder, ListBuilder};
    use arrow_array::{
        ArrayRef, Date32Array, Decimal128Array, Int64Array, RecordBatch, StringArray,
        TimestampMicrosecondArray,
    };
    let n = 300;
    let mut list = ListBuilder::new(Int32Builder::new());
    for i in 0..n {
        if i % 7 == 3 {
            list.append_null();
        } else {
            for j in 0..(i % 4) {
                list.values().append_option((j != 2).then_some(j as i32));
            }
            list.append(true);
        }
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter(
            (0..n).map(|i| (i % 5 != 1).then_some(i as i64 * 7 - 900)),
        )),
        Arc::new(StringArray::from_iter(
            (0..n).map(|i| (i % 6 != 2).then(|| format!("v{}", i % 13))),
        )),
        Arc::new(
            Decimal128Array::from_iter((0..n).map(|i| Some(i as i128 * 12_345 - 1_000_000)))
                .with_precision_and_scale(20, 3)
                .unwrap_or_else(|_| Decimal128Array::from(vec![0i128; n])),
        ),
        Arc::new(Date32Array::from_iter_values(
            (0..n).map(|i| i as i32 * 40 - 5_000),
        )),
        Arc::new(TimestampMicrosecondArray::from_iter_values(
            (0..n).map(|i| (i as i64 - 150) * 86_400_000_123),
        )),
        Arc::new(list.finish()),
    ];
    let Ok(batch) =
        RecordBatch::try_from_iter(["k", "s", "d", "day", "ts", "arr"].into_iter().zip(columns))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for compression in [CompressionKind::None, CompressionKind::Zstd] {
        let settings = OrcWriteSettings {
            compression,
            stripe_bytes: 2_000,
            columns: Vec::new(),
        };
        let Ok(mut w) = OrcFileWriter::new(&batch.schema(), &settings) else {
            continue;
        };
        let mut bytes = Vec::new();
        let mut sink = |b: &[u8]| {
            bytes.extend_from_slice(b);
            Ok(())
        };
        let done = (0..3)
            .try_for_each(|k| w.write(&batch.slice(k * 100, 100), &mut sink))
            .and_then(|()| w.finish(&mut sink));
        if done.is_ok() {
            out.push(bytes);
        }
    }
    out
}

/// Input: a selector byte (0 a manifest, 1 a manifest list, 2 an index manifest; modulo 3)
/// and the Avro object container file.
pub fn avro_metadata(data: &[u8]) {
    contained_panics_unwind();
    let Some((&which, file)) = data.split_first() else {
        return;
    };
    match which % 3 {
        0 => drop(decode_manifest(file, "fuzz")),
        1 => drop(decode_manifest_list(file, "fuzz")),
        _ => drop(decode_index_manifest(file, "fuzz")),
    }
}

/// Input: a selector byte (modulo 8: a snapshot, a schema, a tag, a task set, a task, a task
/// result, another job's lease record, a consumer) and the JSON document. Leases and
/// consumers are read from storage as a job reads them; a schema that parses also derives its
/// options, keys and Arrow types.
pub fn json_metadata(data: &[u8]) {
    contained_panics_unwind();
    let Some((&which, doc)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(doc);
    match which % 8 {
        0 => drop(Snapshot::from_json(doc, "fuzz")),
        1 => {
            if let Ok(schema) = TableSchema::from_json(doc, "fuzz") {
                let _ = schema.core_options();
                let _ = schema.partition_fields();
                let _ = schema.trimmed_primary_keys();
                for f in &schema.fields {
                    let _ = f.data_type.to_arrow();
                }
            }
        }
        2 => drop(parse_tag("fuzz", doc, "fuzz")),
        3 => drop(TaskSet::from_json(&text)),
        4 => drop(Task::from_json(&text)),
        5 => drop(TaskResult::from_json(&text)),
        6 => {
            let storage = MemoryStorage::new();
            let paths = TablePaths::new("t");
            storage.put(&format!("{}/00-0", paths.lease_dir()), doc.to_vec());
            let record = LeaseRecord {
                owner: "fuzz".into(),
                job_id: "00000000-0000-0000-0000-000000000000".into(),
                acquired_ms: 0,
                expires_ms: 60_000,
            };
            let _ = acquire(&storage, &paths, "00", "p", record, 0);
        }
        _ => {
            let storage = MemoryStorage::new();
            let paths = TablePaths::new("t");
            storage.put("t/consumer/consumer-c", doc.to_vec());
            let _ = read_consumer(&storage, &paths, "c");
        }
    }
}

/// The field types a [`binary_row`] input may choose.
const ROW_TYPES: &[&[&str]] = &[
    &["INT"],
    &["BIGINT", "STRING"],
    &["STRING"],
    &[
        "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE",
    ],
    &[
        "DECIMAL(10, 2)",
        "DECIMAL(38, 10)",
        "DATE",
        "TIME",
        "TIMESTAMP(3)",
        "TIMESTAMP(9)",
    ],
    &["BYTES", "VARCHAR(10)", "CHAR(3)", "BINARY(4)"],
];

/// The types of [`ROW_TYPES`] entry `which` (modulo their count).
fn row_types(which: u8) -> Result<Vec<DataType>> {
    ROW_TYPES[usize::from(which) % ROW_TYPES.len()]
        .iter()
        .map(|t| DataType::parse(t, "fuzz"))
        .collect()
}

/// Input: a selector byte choosing the field types ([`ROW_TYPES`], modulo their count) and a
/// serialized `BinaryRow`. A row that decodes must encode again, and that encoding must be
/// stable: decoding and encoding it once more gives the same bytes (a panic here is a finding).
pub fn binary_row(data: &[u8]) {
    contained_panics_unwind();
    let Some((&which, bytes)) = data.split_first() else {
        return;
    };
    let Ok(types) = row_types(which) else {
        return;
    };
    let Ok(values) = BinaryRow(bytes.to_vec()).decode(&types, "fuzz", "row") else {
        return;
    };
    let encoded = match BinaryRow::encode(&values, &types) {
        Ok(row) => row,
        Err(e) => panic!("a decoded row does not encode again: {e}"),
    };
    let again = encoded
        .decode(&types, "fuzz", "row")
        .and_then(|v| BinaryRow::encode(&v, &types));
    match again {
        Ok(row) => assert_eq!(
            row.as_bytes(),
            encoded.as_bytes(),
            "encoding a decoded row is not stable"
        ),
        Err(e) => panic!("an encoded row does not decode again: {e}"),
    }
}

/// Input: the first sketch's length (big-endian `u16`), the first sketch, the second. Two
/// serialized theta sketches unioned as the `theta_sketch` aggregate unions them; a union
/// that succeeds is a sketch the union takes back unchanged (its union with itself).
pub fn theta_sketch(data: &[u8]) {
    use crate::rewrite::merge::merge_engine::theta_sketch::union;
    contained_panics_unwind();
    let Some((a, b)) = two_sketches(data) else {
        return;
    };
    let Ok(out) = union(a, b) else {
        return;
    };
    match union(&out, &out) {
        Ok(again) => assert_eq!(
            again, out,
            "a union's result changes when unioned with itself"
        ),
        Err(e) => panic!("a union's result is not a sketch: {e}"),
    }
}

/// Input: the first sketch's length (big-endian `u16`), the first sketch, the second. Two
/// serialized HLL sketches unioned as the `hll_sketch` aggregate unions them, and the result
/// with itself: each ends in a sketch or a typed error, never a panic. Nothing more is asked
/// of the result: Paimon's union copies a hostile set image into its result as it is (a
/// coupon held twice, a table left full), and the next union of that result refuses it, in
/// Java's union as in ours (`fuzz/README.md`, the two "Not a bug" findings; both inputs are
/// in the corpus, and the second is a Java-checked unit test of the union).
pub fn hll_sketch(data: &[u8]) {
    use crate::rewrite::merge::merge_engine::hll_sketch::union;
    contained_panics_unwind();
    let Some((a, b)) = two_sketches(data) else {
        return;
    };
    let Ok(out) = union(a, b) else {
        return;
    };
    let _ = union(&out, &out);
}

/// The two sketches of a sketch target's input: the first's length (big-endian `u16`), the
/// first, then the rest.
fn two_sketches(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = usize::from(u16::from_be_bytes(data.get(0..2)?.try_into().ok()?));
    let rest = &data[2..];
    Some(rest.split_at(len.min(rest.len())))
}

/// Input: the vector's offset and length in the index file (big-endian `i32`s) and the index
/// file's bytes. A vector that reads must encode into an index file that reads back equal.
pub fn deletion_vector(data: &[u8]) {
    contained_panics_unwind();
    let (Some(offset), Some(length), Some(file)) = (
        data.get(0..4).and_then(|b| b.try_into().ok()),
        data.get(4..8).and_then(|b| b.try_into().ok()),
        data.get(8..),
    ) else {
        return;
    };
    let storage = MemoryStorage::new();
    storage.put("t/index/index-fuzz", file.to_vec());
    let meta = DeletionVectorMeta {
        data_file: "data-fuzz.parquet".into(),
        offset: i32::from_be_bytes(offset),
        length: i32::from_be_bytes(length),
        cardinality: None,
    };
    let Ok(bitmap) = read_deletion_vector(&storage, "t/index/index-fuzz", &meta) else {
        return;
    };
    let vectors = BTreeMap::from([(meta.data_file.clone(), bitmap.clone())]);
    let (bytes, metas) = match encode_deletion_vectors(&vectors) {
        Ok(encoded) => encoded,
        Err(e) => panic!("a vector that reads does not encode: {e}"),
    };
    storage.put("t/index/index-again", bytes);
    for m in &metas {
        match read_deletion_vector(&storage, "t/index/index-again", m) {
            Ok(back) => assert_eq!(back, bitmap, "a re-encoded vector reads differently"),
            Err(e) => panic!("a re-encoded vector does not read: {e}"),
        }
    }
}

/// Input: text, one `key=value` option a line. Parsed as a primary-key and as an append
/// table's options in both flavours and as the expiry, partition-expiry and tag options; each
/// value also as a memory size, a duration, a data type and a zone offset; a line
/// `pattern|text` also as a partition timestamp read with that pattern.
pub fn options(data: &[u8]) {
    contained_panics_unwind();
    let text = String::from_utf8_lossy(data);
    let raw: BTreeMap<String, String> = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for kind in [TableKind::PrimaryKey, TableKind::Append] {
        for flavor in [Flavor::Java, Flavor::Cpp] {
            let _ = CoreOptions::parse_with(kind, flavor, &raw);
        }
    }
    let _ = ExpireOptions::read(&raw);
    let _ = PartitionExpireOptions::read_if_enabled(&raw);
    let _ = TagOptions::from_options(&raw);
    for v in raw.values() {
        let _ = parse_memory_size(v);
        let _ = parse_duration_ms(v);
        let _ = DataType::parse(v, "fuzz");
        let _ = zone_offset_ms("fuzz", v);
        let _ = parse_default_timestamp(v);
    }
    for line in text.lines() {
        if let Some((pattern, value)) = line.split_once('|') {
            let _ = parse_with_pattern(pattern, value);
        }
    }
}

/// Input: a selector byte (even: a bucket request, the WIT `bucket-request` as JSON, planned;
/// odd: a conformance vectors file, run in both flavours) and the JSON text.
pub fn plan_request(data: &[u8]) {
    contained_panics_unwind();
    let Some((&which, doc)) = data.split_first() else {
        return;
    };
    if which % 2 == 0 {
        if let Ok(request) = serde_json::from_slice::<BucketRequest>(doc) {
            let _ = plan_bucket(&request);
        }
    } else {
        let text = String::from_utf8_lossy(doc);
        for flavor in [Flavor::Java, Flavor::Cpp] {
            let _ = run_conformance(&text, flavor);
        }
    }
}

/// The kinds of file a [`table_job`] input may replace, by a piece of their path.
const TABLE_FILE_KINDS: &[&str] = &[
    "/snapshot/snapshot-",
    "/snapshot/LATEST",
    "/schema/schema-",
    "/manifest/manifest-list-",
    "/manifest/index-manifest-",
    "/manifest/manifest-",
    "/bucket-",
    "/",
];

/// The demo tables, written once per process: their paths and every file.
struct DemoTables {
    tables: Vec<String>,
    files: Vec<(String, Arc<Vec<u8>>)>,
}

fn demo_tables() -> Option<&'static DemoTables> {
    static DEMO: OnceLock<Option<DemoTables>> = OnceLock::new();
    DEMO.get_or_init(|| {
        let storage = Arc::new(MemoryStorage::new());
        let tables = write_demo_tables(storage.clone(), "w", DEMO_NOW_MS, 7).ok()?;
        let files = storage
            .paths()
            .into_iter()
            .filter_map(|p| storage.get(&p).map(|b| (p, b)))
            .collect();
        Some(DemoTables { tables, files })
    })
    .as_ref()
}

impl DemoTables {
    /// A storage holding every file of the demo tables.
    fn copy(&self) -> Arc<MemoryStorage> {
        let storage = Arc::new(MemoryStorage::new());
        for (path, content) in &self.files {
            storage.put(path, content.as_ref().clone());
        }
        storage
    }
}

/// A dedicated job's full compaction of a demo table, a minute after it was written.
fn full_job(owner: &str, skip_maintenance: bool) -> TableJob {
    TableJob {
        full: true,
        now_ms: DEMO_NOW_MS + 60_000,
        local_hour: 3,
        job_id: vec![7; 16],
        owner: owner.into(),
        lease_ttl_ms: None,
        max_commit_retries: 1,
        scope: Default::default(),
        skip_maintenance,
        utc_offset_ms: 0,
    }
}

/// The demo tables' clock.
const DEMO_NOW_MS: i64 = 1_700_000_000_000;

/// The file a [`table_job`] selector byte picks: kind `which % 8` of [`TABLE_FILE_KINDS`]
/// (`manifest-` excludes the lists and index manifests; the last kind is any file), the
/// `which / 8`-th of that kind modulo their count.
fn pick_file(demo: &DemoTables, which: u8) -> Option<&str> {
    let kind = TABLE_FILE_KINDS[usize::from(which) % TABLE_FILE_KINDS.len()];
    let of_kind: Vec<&str> = demo
        .files
        .iter()
        .map(|(p, _)| p.as_str())
        .filter(|p| {
            p.contains(kind)
                && (kind != "/manifest/manifest-"
                    || !(p.contains("manifest-list-") || p.contains("index-manifest-")))
        })
        .collect();
    if of_kind.is_empty() {
        return None;
    }
    Some(of_kind[usize::from(which) / TABLE_FILE_KINDS.len() % of_kind.len()])
}

/// Input: a selector byte ([`pick_file`]) and a file's bytes. A copy of the demo tables gets
/// the bytes in place of the chosen file (a snapshot, the hint, a schema, a manifest list, an
/// index manifest, a manifest, a data file or any file), and the table that holds it is
/// planned and fully compacted as a dedicated job would, maintenance included.
pub fn table_job(data: &[u8]) {
    contained_panics_unwind();
    let (Some((&which, bytes)), Some(demo)) = (data.split_first(), demo_tables()) else {
        return;
    };
    let Some(replaced) = pick_file(demo, which) else {
        return;
    };
    let Some(table) = demo
        .tables
        .iter()
        .find(|t| replaced.starts_with(&format!("{t}/")))
    else {
        return;
    };
    let storage = demo.copy();
    storage.put(replaced, bytes.to_vec());
    let job = full_job("fuzz", false);
    let _ = plan_table(storage.clone(), table, &job);
    let _ = compact_table(storage, table, &job, &Services::none());
}

/// The starting corpus of each target, made from the demo tables (before and after a full
/// compaction), encoded rows and vectors, the conformance vectors' shapes and typical options:
/// what `fuzz/corpus/` was written from (the `it` tests' `write_fuzz_seeds`).
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
    let Some(demo) = demo_tables() else {
        return out;
    };
    let first = |piece: &str, table: &str| {
        demo.files
            .iter()
            .find(|(p, _)| p.starts_with(table) && p.contains(piece))
            .map(|(_, b)| b.as_ref().clone())
    };
    let (events, orders) = (&demo.tables[0], &demo.tables[demo.tables.len() - 1]);
    if let Some(f) = first(".parquet", events) {
        out.push(("parquet_append", f));
    }
    if let Some(f) = first(".parquet", orders) {
        out.push(("parquet_merge", f));
    }
    // Files of our own writers: the tables fully compacted.
    let compacted = demo.copy();
    let job = full_job("seeds", true);
    for (table, target) in [(events, "parquet_append"), (orders, "parquet_merge")] {
        if compact_table(compacted.clone(), table, &job, &Services::none()).is_ok() {
            if let Some(p) = compacted
                .paths()
                .into_iter()
                .filter(|p| p.starts_with(table.as_str()) && p.ends_with(".parquet"))
                .find(|p| !demo.files.iter().any(|(q, _)| q == p))
            {
                if let Some(b) = compacted.get(&p) {
                    out.push((target, b.as_ref().clone()));
                }
            }
        }
    }
    out.extend(orc_seeds().into_iter().map(|f| ("orc_data", f)));
    out.extend(avro_seeds().into_iter().map(|f| ("avro_data", f)));
    out.extend(avro_nested_seed().map(|f| ("avro_data", f)));
    // A sketch target's input of two sketches (see `two_sketches`).
    let pair = |a: Vec<u8>, b: Vec<u8>| [(a.len() as u16).to_be_bytes().to_vec(), a, b].concat();
    {
        use crate::rewrite::merge::merge_engine::theta_sketch::{from_hex, JAVA_SKETCHES};
        let sketch = |i: usize| from_hex(JAVA_SKETCHES[i]);
        // Exact, single and empty sketches; an estimation-mode union past the rebuild.
        out.push(("theta_sketch", pair(sketch(0), sketch(1))));
        out.push(("theta_sketch", pair(sketch(2), sketch(3))));
        let big = |from: i64| {
            let mut hashes: Vec<i64> = (from..from + 5000).map(|i| i * 1_000_003).collect();
            hashes.sort_unstable();
            let mut s = vec![2u8, 3, 3, 0, 0, 0x1A, 0xCC, 0x93];
            s.extend_from_slice(&(hashes.len() as i32).to_le_bytes());
            s.extend_from_slice(&1.0f32.to_le_bytes());
            hashes
                .iter()
                .for_each(|h| s.extend_from_slice(&h.to_le_bytes()));
            s
        };
        let (a, b) = (big(1), big(3000));
        out.push(("theta_sketch", pair(a, b)));
    }
    {
        use crate::rewrite::merge::merge_engine::hll_sketch::JAVA_CASES;
        use crate::rewrite::merge::merge_engine::theta_sketch::from_hex;
        // Every mode, type and form of the Java cases (lists, sets, HLL_4 with exceptions,
        // HLL_6, HLL_8, updatable images, several lgK), as pairs.
        for (_, a, b, _) in JAVA_CASES.iter().filter(|c| c.1 != "-" && c.2 != "-") {
            out.push(("hll_sketch", pair(from_hex(a), from_hex(b))));
        }
    }
    for (which, piece) in [
        (0u8, "/manifest/manifest-"),
        (1, "/manifest/manifest-list-"),
    ] {
        if let Some(f) = demo
            .files
            .iter()
            .find(|(p, _)| p.contains(piece) && (which == 1 || !p.contains("manifest-list-")))
            .map(|(_, b)| b.as_ref().clone())
        {
            out.push(("avro_metadata", [vec![which], f].concat()));
        }
    }
    for (which, piece) in [(0u8, "/snapshot/snapshot-"), (1, "/schema/schema-")] {
        if let Some(f) = first(piece, orders) {
            out.push(("json_metadata", [vec![which], f].concat()));
        }
    }
    let lease = br#"{"owner":"host:1","job_id":"00000000-0000-0000-0000-000000000001","acquired_ms":1,"expires_ms":2}"#;
    out.push(("json_metadata", [&[6u8][..], lease].concat()));
    out.push((
        "json_metadata",
        [&[7u8][..], br#"{"nextSnapshot":3}"#].concat(),
    ));
    out.push((
        "json_metadata",
        [&[2u8][..], br#"{"id":1,"schemaId":0,"baseManifestList":"a","deltaManifestList":"b","commitUser":"u","commitIdentifier":1,"commitKind":"APPEND","timeMillis":1,"version":3,"tagCreateTime":[2025,1,1,0,0,0,0],"tagTimeRetained":"PT1H"}"#].concat(),
    ));
    use crate::value::Datum;
    let rows: [(u8, Vec<Datum>); 3] = [
        (0, vec![Datum::Int(-7)]),
        (
            1,
            vec![
                Datum::BigInt(1 << 40),
                Datum::String("a longer string".into()),
            ],
        ),
        (
            5,
            vec![
                Datum::Bytes(vec![1, 2, 3, 4, 5, 6, 7, 8, 9]),
                Datum::String("short".into()),
                Datum::Null,
                Datum::Bytes(vec![0, 1, 2, 3]),
            ],
        ),
    ];
    for (which, values) in rows {
        if let Ok(row) = row_types(which).and_then(|t| BinaryRow::encode(&values, &t)) {
            out.push(("binary_row", [vec![which], row.0].concat()));
        }
    }
    let bitmap: roaring::RoaringBitmap = [0u32, 3, 6, 70_000].into_iter().collect();
    if let Ok((file, metas)) = encode_deletion_vectors(&BTreeMap::from([("f".to_string(), bitmap)]))
    {
        for m in metas {
            let mut seed = m.offset.to_be_bytes().to_vec();
            seed.extend_from_slice(&m.length.to_be_bytes());
            seed.extend_from_slice(&file);
            out.push(("deletion_vector", seed));
        }
    }
    out.push((
        "options",
        b"bucket=4\nnum-sorted-run.compaction-trigger=3\ncompaction.max-size-amplification-percent=150\ntarget-file-size=64 mb\nsnapshot.time-retained=1 h\npartition.expiration-time=7 d\npartition.timestamp-formatter=yyyyMMdd\nsink.watermark-time-zone=+08:00\ntag.automatic-creation=process-time\ncompaction.offpeak.start.hour=22\nyyyy-MM-dd HH:mm|2025-01-02 03:04\nDECIMAL(10, 2)=ARRAY<MAP<STRING, INT NOT NULL>>\n".to_vec(),
    ));
    let files = (0..6)
        .map(|i| {
            crate::meta::CompactionFile::new(
                format!("data-{i}.parquet"),
                Level::new(if i < 4 { 0 } else { 5 }),
                1 << (10 + i),
                crate::meta::Key::from_i64(i),
                crate::meta::Key::from_i64(i + 10),
                i,
                i,
            )
        })
        .collect();
    let request = BucketRequest {
        table_kind: TableKind::PrimaryKey,
        flavor: Flavor::Java,
        options: vec![("bucket".into(), "1".into())],
        files,
        full: false,
        now_ms: DEMO_NOW_MS,
        local_hour: 3,
        state: None,
        role: Default::default(),
    };
    if let Ok(json) = serde_json::to_vec(&request) {
        out.push(("plan_request", [vec![0], json].concat()));
    }
    for kind in [0u8, 2, 3, 5, 6] {
        if let Some(f) = pick_file(demo, kind) {
            if let Some((_, b)) = demo.files.iter().find(|(p, _)| p == f) {
                out.push(("table_job", [vec![kind], b.as_ref().clone()].concat()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The nested seed is a file the nested reader reads whole, so the fuzzer starts from
    /// inputs that reach every nested arm rather than from the first refusal.
    #[test]
    fn the_nested_avro_seed_reads_as_the_nested_columns() {
        let seed = avro_nested_seed().unwrap();
        let (head, file) = seed.split_first_chunk::<4>().unwrap();
        let rows = u64::from(u32::from_be_bytes(*head));
        let storage = MemoryStorage::new();
        storage.put("f.avro", file.to_vec());
        let mut got = 0;
        let schema = avro_nested_fuzz_schema();
        crate::rewrite::avro_data::read_avro_batches(&storage, "f.avro", &schema, rows, |b| {
            assert!(b.columns().iter().skip(1).all(|c| c.null_count() > 0));
            got += b.num_rows();
            Ok(())
        })
        .unwrap();
        assert_eq!(got, 40);
    }
}
