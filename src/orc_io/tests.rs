//! Round trips through this layer's writer and reader, and hostile bytes. Interoperability
//! with ORC's Java reader and writer is tested against Paimon Java
//! (`tests/java_interop`).

use std::sync::Arc;

use arrow_array::builder::{Int32Builder, ListBuilder, MapBuilder, StringBuilder};
use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
    Int16Array, Int32Array, Int64Array, Int8Array, RecordBatch, StringArray, StructArray,
    Time32MillisecondArray, TimestampMicrosecondArray, TimestampMillisecondArray,
    TimestampNanosecondArray,
};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};

use super::proto::{CompressionKind, TypeKind};
use super::read::read_orc_batches;
use super::write::{ColumnHint, OrcFileWriter, OrcWriteSettings};
use crate::error::ErrorKind;
use crate::storage::{MemoryStorage, Storage};

/// Every fifth value (from the fourth) is null.
fn opt<T>(i: usize, v: T) -> Option<T> {
    (i % 5 != 3).then_some(v)
}

fn batch(rows: usize, seed: i64) -> RecordBatch {
    let n = |i: usize| (i as i64 * 7919 + seed) % 1000;
    let point = Fields::from(vec![
        Field::new("x", DataType::Int32, true),
        Field::new("label", DataType::Utf8, true),
    ]);
    let mut list = ListBuilder::new(Int32Builder::new());
    let mut map = MapBuilder::new(None, StringBuilder::new(), Int32Builder::new());
    for i in 0..rows {
        if i % 4 == 1 {
            list.append_null();
            map.append(false).unwrap();
        } else {
            for j in 0..(i % 3) {
                list.values().append_option((j != 1).then_some(j as i32));
                map.keys().append_value(format!("k{j}"));
                map.values().append_option((j != 0).then_some(i as i32));
            }
            list.append(true);
            map.append(true).unwrap();
        }
    }
    let structs = StructArray::new(
        point.clone(),
        vec![
            Arc::new(Int32Array::from_iter(
                (0..rows).map(|i| opt(i + 1, i as i32)),
            )) as ArrayRef,
            Arc::new(StringArray::from_iter(
                (0..rows).map(|i| opt(i + 2, format!("p{i}"))),
            )),
        ],
        Some((0..rows).map(|i| i % 6 != 2).collect()),
    );
    let columns: Vec<ArrayRef> = vec![
        Arc::new(BooleanArray::from_iter(
            (0..rows).map(|i| opt(i, n(i) % 2 == 0)),
        )),
        Arc::new(Int8Array::from_iter(
            (0..rows).map(|i| opt(i, (n(i) % 250 - 125) as i8)),
        )),
        Arc::new(Int16Array::from_iter(
            (0..rows).map(|i| opt(i, n(i) as i16 - 500)),
        )),
        Arc::new(Int32Array::from_iter_values(
            (0..rows).map(|i| i as i32 * 3),
        )),
        Arc::new(Int64Array::from_iter((0..rows).map(|i| opt(i, n(i) << 40)))),
        Arc::new(Float32Array::from_iter(
            (0..rows).map(|i| opt(i, n(i) as f32 / 3.0)),
        )),
        Arc::new(Float64Array::from_iter(
            (0..rows).map(|i| opt(i, n(i) as f64 * -1.5)),
        )),
        Arc::new(StringArray::from_iter(
            (0..rows).map(|i| opt(i, format!("s{}", n(i)))),
        )),
        Arc::new(StringArray::from_iter(
            (0..rows).map(|i| opt(i, format!("c{}", i % 3))),
        )),
        Arc::new(BinaryArray::from_iter(
            (0..rows).map(|i| opt(i, vec![i as u8; i % 4])),
        )),
        Arc::new(
            Decimal128Array::from_iter(
                (0..rows).map(|i| opt(i, (n(i) as i128 - 500) * 10i128.pow(20))),
            )
            .with_precision_and_scale(38, 4)
            .unwrap(),
        ),
        Arc::new(Date32Array::from_iter(
            (0..rows).map(|i| opt(i, n(i) as i32 * 40 - 20_000)),
        )),
        Arc::new(Time32MillisecondArray::from_iter(
            (0..rows).map(|i| opt(i, n(i) as i32 * 86_000)),
        )),
        Arc::new(TimestampMillisecondArray::from_iter(
            (0..rows).map(|i| opt(i, (n(i) - 500) * 3_600_001 + 7)),
        )),
        Arc::new(
            TimestampMicrosecondArray::from_iter(
                (0..rows).map(|i| opt(i, (n(i) - 500) * 1_000_003)),
            )
            .with_timezone("UTC"),
        ),
        Arc::new(TimestampNanosecondArray::from_iter(
            (0..rows).map(|i| opt(i, (n(i) - 500) * 1_000_000_007)),
        )),
        Arc::new(list.finish()),
        Arc::new(map.finish()),
        Arc::new(structs),
    ];
    let fields: Vec<Field> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| Field::new(format!("f{i}"), c.data_type().clone(), true))
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

fn settings(
    compression: CompressionKind,
    stripe_bytes: usize,
    schema: &Schema,
) -> OrcWriteSettings {
    let mut columns = vec![ColumnHint::default(); schema.fields().len()];
    if let Some(c) = columns.get_mut(8) {
        c.string_kind = Some((TypeKind::Char, 3));
    }
    OrcWriteSettings {
        compression,
        stripe_bytes,
        columns,
    }
}

fn write(
    batches: &[RecordBatch],
    s: &OrcWriteSettings,
) -> (Vec<u8>, Vec<crate::rewrite::stats::ColumnStats>) {
    let mut w = OrcFileWriter::new(&batches[0].schema(), s).unwrap();
    let mut stats = crate::rewrite::stats::ValueStatsCollector::new(&batches[0].schema());
    let mut bytes = Vec::new();
    let mut out = |b: &[u8]| {
        bytes.extend_from_slice(b);
        Ok(())
    };
    for b in batches {
        w.write(b, &mut out).unwrap();
        stats.add(b);
    }
    w.finish(&mut out).unwrap();
    (bytes, stats.finish())
}

fn read(
    bytes: Vec<u8>,
    schema: &SchemaRef,
    rows: Option<u64>,
) -> crate::error::Result<Vec<RecordBatch>> {
    let storage = MemoryStorage::new();
    storage.put("f.orc", bytes);
    let mut out = Vec::new();
    read_orc_batches(&storage as &dyn Storage, "f.orc", schema, rows, |b| {
        out.push(b);
        Ok(())
    })?;
    Ok(out)
}

#[test]
fn every_type_round_trips_with_every_codec_across_stripes() {
    let batches = vec![batch(1000, 1), batch(37, 2), batch(2500, 3)];
    let schema = batches[0].schema();
    let expected = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
    for codec in [
        CompressionKind::None,
        CompressionKind::Zlib,
        CompressionKind::Snappy,
        CompressionKind::Lz4,
        CompressionKind::Zstd,
        CompressionKind::Lzo,
    ] {
        for stripe_bytes in [1 << 30, 20_000] {
            let (bytes, stats) = write(&batches, &settings(codec, stripe_bytes, &schema));
            let (plain, _) = write(
                &batches,
                &settings(CompressionKind::None, stripe_bytes, &schema),
            );
            if codec != CompressionKind::None {
                // Each codec compresses (LZO included: our own encoder, not stored chunks).
                assert!(bytes.len() < plain.len(), "{codec:?}: {}", bytes.len());
            }
            let got = read(bytes, &schema, Some(3537)).unwrap();
            if stripe_bytes < 1 << 20 {
                assert!(got.len() >= 2, "{codec:?}: small stripes roll");
            }
            let got = arrow_select::concat::concat_batches(&schema, &got).unwrap();
            for (i, (a, b)) in expected.columns().iter().zip(got.columns()).enumerate() {
                if a.as_ref() != b.as_ref() {
                    let first =
                        (0..a.len()).find(|&r| a.slice(r, 1).as_ref() != b.slice(r, 1).as_ref());
                    let r = first.unwrap_or(0);
                    panic!(
                        "{codec:?} column f{i} row {first:?}: {:?} vs {:?}",
                        a.slice(r, 1),
                        b.slice(r, 1)
                    );
                }
            }
            assert_eq!(stats.len(), schema.fields().len());
            assert_eq!(stats[3].null_count, Some(0));
            assert_eq!(stats[3].min, Some(crate::rewrite::stats::StatValue::Int(0)));
            assert!(stats[1].null_count.unwrap() > 0 && stats[1].exact);
        }
    }
}

#[test]
fn a_wrong_row_count_or_a_missing_column_is_corrupt() {
    let b = batch(10, 1);
    let schema = b.schema();
    let (bytes, _) = write(&[b], &settings(CompressionKind::Zstd, 1 << 20, &schema));
    let e = read(bytes.clone(), &schema, Some(11)).unwrap_err();
    assert!(
        matches!(e.kind, ErrorKind::CorruptInput { file: Some(ref f) } if f == "f.orc"),
        "{e}"
    );
    let other = Arc::new(Schema::new(vec![Field::new("nope", DataType::Int32, true)]));
    let e = read(bytes.clone(), &other, None).unwrap_err();
    assert!(e.message.contains("no column 'nope'"), "{e}");
    let wrong = Arc::new(Schema::new(vec![Field::new("f3", DataType::Utf8, true)]));
    let e = read(bytes, &wrong, None).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::CorruptInput { .. }), "{e}");
}

#[test]
fn truncated_and_flipped_files_are_errors_not_panics() {
    let b = batch(300, 5);
    let schema = b.schema();
    for codec in [CompressionKind::None, CompressionKind::Zstd] {
        let (bytes, _) = write(std::slice::from_ref(&b), &settings(codec, 4000, &schema));
        for cut in (0..bytes.len()).step_by(7) {
            assert!(read(bytes[..cut].to_vec(), &schema, None).is_err());
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..3000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut flipped = bytes.clone();
            let bit = (x % (flipped.len() as u64 * 8)) as usize;
            flipped[bit / 8] ^= 1 << (bit % 8);
            // Either a typed error or batches of the wanted schema; never a panic.
            if let Ok(batches) = read(flipped, &schema, None) {
                assert!(batches.iter().all(|b| b.schema() == schema));
            }
        }
    }
}

#[test]
fn timestamps_around_the_epoch_decode_as_orc_readers_decode_them() {
    // ORC's readers step negative times with a millisecond or more of fraction back a
    // second; the writer compensates (`write::encode_timestamp`).
    let values = vec![
        -1_500,
        -2_000,
        -1_001,
        1_500,
        0,
        -86_400_000 * 365 * 60 + 123,
    ];
    let a = TimestampMillisecondArray::from(values.clone());
    let schema = Arc::new(Schema::new(vec![Field::new(
        "t",
        DataType::Timestamp(TimeUnit::Millisecond, None),
        false,
    )]));
    let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(a)]).unwrap();
    let (bytes, _) = write(
        std::slice::from_ref(&b),
        &settings(CompressionKind::None, 1 << 20, &schema),
    );
    let got = read(bytes, &schema, None).unwrap();
    assert_eq!(got[0].column(0).as_ref(), b.column(0).as_ref());
}

#[test]
fn a_time_in_the_second_before_the_epoch_is_refused_not_written_a_second_late() {
    // ORC's readers would read -1 ms written in UTC as +999 ms; so would Java's UTC writer.
    for v in [-1i64, -999] {
        let schema = Arc::new(Schema::new(vec![Field::new(
            "t",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        )]));
        let a = TimestampMillisecondArray::from(vec![5_000, v]);
        let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(a)]).unwrap();
        let s = settings(CompressionKind::None, 1 << 20, &schema);
        let mut w = OrcFileWriter::new(&schema, &s).unwrap();
        let e = w.write(&b, &mut |_: &[u8]| Ok(())).unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::Unsupported, "{e}");
        assert!(e.message.contains("before 1970"), "{e}");
    }
}

#[test]
fn low_cardinality_strings_are_written_with_a_sorted_dictionary() {
    use super::proto::{EncodingKind, StripeFooter};
    let rows = 1000;
    let schema = Arc::new(Schema::new(vec![
        Field::new("few", DataType::Utf8, true),
        Field::new("many", DataType::Utf8, false),
    ]));
    let few = StringArray::from_iter((0..rows).map(|i| opt(i, ["b", "a", "c"][i % 3])));
    let many = StringArray::from_iter_values((0..rows).map(|i| format!("v{i}")));
    let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(few), Arc::new(many)]).unwrap();
    let (bytes, _) = write(
        std::slice::from_ref(&b),
        &settings(CompressionKind::Zstd, 1 << 20, &schema),
    );
    let storage = MemoryStorage::new();
    storage.put("f.orc", bytes.clone());
    let tail = super::read::read_tail(&storage, "f.orc").unwrap();
    let s = &tail.footer.stripes[0];
    let start = (s.offset + s.index_length + s.data_length) as usize;
    let footer = StripeFooter::decode(
        &tail
            .codec
            .decompress(&bytes[start..start + s.footer_length as usize])
            .unwrap(),
    )
    .unwrap();
    assert_eq!(footer.columns[1].kind, EncodingKind::DictionaryV2);
    assert_eq!(footer.columns[1].dictionary_size, 3);
    assert_eq!(footer.columns[2].kind, EncodingKind::DirectV2);
    let got = read(bytes, &schema, Some(rows as u64)).unwrap();
    assert_eq!(got[0], b);
}
