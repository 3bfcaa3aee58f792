//! The collection aggregates through the merge rewrite: `collect` (with `distinct`),
//! `merge_map` and `nested_update` (with `nested-key` and Paimon HEAD's
//! `nested-sequence-field`, `nested-key-null-strategy` and `count-limit`), each with its
//! retraction, as Paimon's field aggregators fold them.
#![cfg(feature = "rewrite")]

use std::sync::Arc;

use arrow_array::builder::{Int32Builder, ListBuilder, MapBuilder, StringBuilder, StructBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, Int64Array, Int8Array, RecordBatch};
use arrow_schema::{DataType, Field, Fields, Schema};
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;

use crate::merge_support::{full_merge_request, key_of, opts, stored_input, DIR};
use paimon_compact::rewrite::merge::{rewrite_merge_tree, RowKind};
use paimon_compact::storage::MemoryStorage;
use paimon_compact::ErrorKind;

/// One record: key, sequence number, kind, then `tags ARRAY<INT>`, `attrs MAP<STRING, INT>`,
/// `items ARRAY<ROW<id INT, qty INT>>` (null when `None`).
#[derive(Clone, Debug, PartialEq)]
struct R {
    key: i64,
    seq: i64,
    kind: RowKind,
    tags: Option<Vec<Option<i32>>>,
    attrs: Option<Vec<(String, i32)>>,
    items: Option<Vec<(Option<i32>, i32)>>,
    /// `bits BYTES`: a serialized 32-bit RoaringBitmap of these values.
    bits: Option<Vec<u32>>,
}

fn r(key: i64, seq: i64, kind: RowKind) -> R {
    R {
        key,
        seq,
        kind,
        tags: None,
        attrs: None,
        items: None,
        bits: None,
    }
}

impl R {
    fn tags(mut self, t: &[i32]) -> Self {
        self.tags = Some(t.iter().map(|&x| Some(x)).collect());
        self
    }
    fn attrs(mut self, a: &[(&str, i32)]) -> Self {
        self.attrs = Some(a.iter().map(|(k, v)| (k.to_string(), *v)).collect());
        self
    }
    fn bits(mut self, b: impl IntoIterator<Item = u32>) -> Self {
        self.bits = Some(b.into_iter().collect());
        self
    }
    fn items(mut self, i: &[(i32, i32)]) -> Self {
        self.items = Some(i.iter().map(|&(id, q)| (Some(id), q)).collect());
        self
    }
}

fn item_fields() -> Fields {
    Fields::from(vec![
        Field::new("id", DataType::Int32, true),
        Field::new("qty", DataType::Int32, true),
    ])
}

fn batch(rows: &[R]) -> RecordBatch {
    let keys: Int64Array = rows.iter().map(|r| Some(r.key)).collect();
    let mut tags = ListBuilder::new(Int32Builder::new());
    let mut attrs = MapBuilder::new(None, StringBuilder::new(), Int32Builder::new());
    let mut items = ListBuilder::new(StructBuilder::from_fields(item_fields(), 0));
    for r in rows {
        match &r.tags {
            Some(t) => {
                t.iter().for_each(|x| tags.values().append_option(*x));
                tags.append(true);
            }
            None => tags.append(false),
        }
        match &r.attrs {
            Some(a) => {
                for (k, v) in a {
                    attrs.keys().append_value(k);
                    attrs.values().append_value(*v);
                }
                attrs.append(true).unwrap();
            }
            None => attrs.append(false).unwrap(),
        }
        match &r.items {
            Some(list) => {
                for (id, qty) in list {
                    let s = items.values();
                    s.field_builder::<Int32Builder>(0)
                        .unwrap()
                        .append_option(*id);
                    s.field_builder::<Int32Builder>(1)
                        .unwrap()
                        .append_value(*qty);
                    s.append(true);
                }
                items.append(true);
            }
            None => items.append(false),
        }
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(keys.clone()),
        Arc::new(rows.iter().map(|r| Some(r.seq)).collect::<Int64Array>()),
        Arc::new(
            rows.iter()
                .map(|r| Some(r.kind.as_byte()))
                .collect::<Int8Array>(),
        ),
        Arc::new(keys),
        Arc::new(tags.finish()),
        Arc::new(attrs.finish()),
        Arc::new(items.finish()),
        Arc::new(
            rows.iter()
                .map(|r| {
                    r.bits.as_ref().map(|b| {
                        let bitmap: roaring::RoaringBitmap = b.iter().copied().collect();
                        let mut out = Vec::new();
                        bitmap.serialize_into(&mut out).unwrap();
                        out
                    })
                })
                .collect::<arrow_array::BinaryArray>(),
        ),
    ];
    let fields: Vec<Field> = vec![
        Field::new("_KEY_k", DataType::Int64, false),
        Field::new("_SEQUENCE_NUMBER", DataType::Int64, false),
        Field::new("_VALUE_KIND", DataType::Int8, false),
        Field::new("k", DataType::Int64, false),
        Field::new("tags", columns[4].data_type().clone(), true),
        Field::new("attrs", columns[5].data_type().clone(), true),
        Field::new("items", columns[6].data_type().clone(), true),
        Field::new("bits", DataType::Binary, true),
    ];
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

/// The runs (one level-0 file each) fully merged under the aggregation options `pairs`.
fn merge(runs: &[Vec<R>], pairs: &[(&str, &str)]) -> paimon_compact::Result<Vec<R>> {
    let st = MemoryStorage::new();
    let inputs = runs
        .iter()
        .enumerate()
        .map(|(i, rows)| {
            let b = batch(rows);
            let mut bytes = Vec::new();
            let mut w = ArrowWriter::try_new(&mut bytes, b.schema(), None).unwrap();
            w.write(&b).unwrap();
            w.close().unwrap();
            vec![stored_input(
                &st,
                &format!("data-{i}.parquet"),
                0,
                bytes,
                (key_of(rows[0].key), key_of(rows[rows.len() - 1].key)),
                rows.iter().map(|r| r.seq),
            )]
        })
        .collect();
    let mut all = vec![("merge-engine", "aggregation")];
    all.extend_from_slice(pairs);
    let out = rewrite_merge_tree(&st, &full_merge_request(inputs, None), &opts(&all))?;
    let mut got = Vec::new();
    for f in &out.outputs {
        assert!(f.path.starts_with(DIR));
        let bytes = Bytes::from(st.get(&f.path).unwrap().to_vec());
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap();
        for b in reader {
            got.extend(unbatch(&b.unwrap()));
        }
    }
    Ok(got)
}

fn unbatch(b: &RecordBatch) -> Vec<R> {
    let int64 = |i: usize| {
        b.column(i)
            .as_primitive::<arrow_array::types::Int64Type>()
            .clone()
    };
    let (keys, seqs) = (int64(3), int64(1));
    let kinds = b.column(2).as_primitive::<arrow_array::types::Int8Type>();
    let tags = b.column(4).as_list::<i32>();
    let attrs = b.column(5).as_map();
    let items = b.column(6).as_list::<i32>();
    let bits = b.column(7).as_binary::<i32>();
    (0..b.num_rows())
        .map(|i| R {
            key: keys.value(i),
            seq: seqs.value(i),
            kind: RowKind::from_byte(kinds.value(i) as i64).unwrap(),
            tags: tags.is_valid(i).then(|| {
                let v = tags.value(i);
                v.as_primitive::<Int32Type>().iter().collect()
            }),
            attrs: attrs.is_valid(i).then(|| {
                let e = attrs.value(i);
                let (k, v) = (
                    e.column(0).as_string::<i32>(),
                    e.column(1).as_primitive::<Int32Type>(),
                );
                (0..e.len())
                    .map(|j| (k.value(j).to_string(), v.value(j)))
                    .collect()
            }),
            items: items.is_valid(i).then(|| {
                let s = items.value(i);
                let s = s.as_struct();
                let (id, qty) = (
                    s.column(0).as_primitive::<Int32Type>(),
                    s.column(1).as_primitive::<Int32Type>(),
                );
                (0..s.len())
                    .map(|j| (id.is_valid(j).then(|| id.value(j)), qty.value(j)))
                    .collect()
            }),
            bits: bits.is_valid(i).then(|| {
                roaring::RoaringBitmap::deserialize_from(bits.value(i))
                    .unwrap()
                    .iter()
                    .collect()
            }),
        })
        .collect()
}

fn tags_of(rows: &[R]) -> Vec<(i64, Option<Vec<Option<i32>>>)> {
    rows.iter().map(|r| (r.key, r.tags.clone())).collect()
}

fn ints(v: &[i32]) -> Option<Vec<Option<i32>>> {
    Some(v.iter().map(|&x| Some(x)).collect())
}

#[test]
fn collect_appends_and_retracts_one_element_per_retracted_one() {
    use RowKind::*;
    let runs = [
        vec![r(1, 1, Insert).tags(&[1, 2]), r(2, 2, Insert).tags(&[5])],
        vec![
            r(1, 3, Insert).tags(&[2, 3]),
            r(1, 4, Insert),
            // one 2 goes (the earliest), and the 9 retracts nothing
            r(1, 5, UpdateBefore).tags(&[2, 9]),
            r(2, 6, Insert),
        ],
    ];
    let pairs = [("fields.tags.aggregate-function", "collect")];
    assert_eq!(
        tags_of(&merge(&runs, &pairs).unwrap()),
        vec![(1, ints(&[1, 2, 3])), (2, ints(&[5]))]
    );
    // distinct: each element once, in first-seen order (even a lone input's duplicates).
    let runs = [
        vec![r(1, 1, Insert).tags(&[1, 1, 2]), r(2, 2, Insert)],
        vec![
            r(1, 3, Insert).tags(&[2, 3, 1]),
            r(2, 4, Insert).tags(&[7, 7]),
        ],
    ];
    let distinct = [
        ("fields.tags.aggregate-function", "collect"),
        ("fields.tags.distinct", "true"),
    ];
    assert_eq!(
        tags_of(&merge(&runs, &distinct).unwrap()),
        vec![(1, ints(&[1, 2, 3])), (2, ints(&[7]))]
    );
}

#[test]
fn merge_map_unions_with_later_values_and_retracts_keys() {
    use RowKind::*;
    let runs = [
        vec![
            r(1, 1, Insert).attrs(&[("a", 1), ("b", 2)]),
            r(2, 2, Insert).attrs(&[("x", 1)]),
        ],
        vec![
            r(1, 3, Insert).attrs(&[("b", 20), ("c", 3)]),
            r(1, 4, Insert),
            r(2, 5, UpdateBefore).attrs(&[("x", 99), ("y", 0)]),
        ],
    ];
    let got = merge(&runs, &[("fields.attrs.aggregate-function", "merge_map")]).unwrap();
    let attrs: Vec<_> = got.iter().map(|r| (r.key, r.attrs.clone())).collect();
    let owned = |v: &[(&str, i32)]| Some(v.iter().map(|(k, x)| (k.to_string(), *x)).collect());
    assert_eq!(
        attrs,
        vec![
            (1, owned(&[("a", 1), ("b", 20), ("c", 3)])),
            (2, owned(&[]))
        ]
    );
}

#[test]
fn nested_update_keeps_one_row_per_nested_key_and_retracts_by_key() {
    use RowKind::*;
    let runs = [
        vec![
            r(1, 1, Insert).items(&[(1, 10), (2, 20)]),
            r(2, 2, Insert).items(&[(1, 1)]),
        ],
        vec![
            r(1, 3, Insert).items(&[(2, 21), (3, 30)]),
            r(1, 4, UpdateBefore).items(&[(1, 999)]),
            r(2, 5, Insert).items(&[(1, 1)]),
        ],
    ];
    let keyed = [
        ("fields.items.aggregate-function", "nested_update"),
        ("fields.items.nested-key", "id"),
    ];
    let items = |rows: Vec<R>| -> Vec<_> { rows.into_iter().map(|r| (r.key, r.items)).collect() };
    let some = |v: &[(i32, i32)]| Some(v.iter().map(|&(a, b)| (Some(a), b)).collect::<Vec<_>>());
    assert_eq!(
        items(merge(&runs, &keyed).unwrap()),
        vec![(1, some(&[(2, 21), (3, 30)])), (2, some(&[(1, 1)]))]
    );
    // Without a key, rows append and a retraction removes equal rows.
    let plain = [("fields.items.aggregate-function", "nested_update")];
    assert_eq!(
        items(merge(&runs, &plain).unwrap()),
        vec![
            (1, some(&[(1, 10), (2, 20), (2, 21), (3, 30)])),
            (2, some(&[(1, 1), (1, 1)]))
        ]
    );
    // A nested sequence field: a row replaces its key's row only when not older; the count
    // limit drops new keys beyond it.
    let mut seq = keyed.to_vec();
    seq.push(("fields.items.nested-sequence-field", "qty"));
    seq.push(("fields.items.count-limit", "2"));
    let runs = [
        vec![r(1, 1, Insert).items(&[(1, 10), (2, 20)])],
        vec![r(1, 2, Insert).items(&[(1, 5), (2, 25), (3, 30)])],
    ];
    assert_eq!(
        items(merge(&runs, &seq).unwrap()),
        vec![(1, some(&[(1, 10), (2, 25)]))]
    );
}

#[test]
fn collection_options_paimon_refuses_are_invalid_and_wrong_types_unsupported() {
    use RowKind::*;
    let runs = [
        vec![r(1, 1, Insert).tags(&[1])],
        vec![r(1, 2, Insert).tags(&[2])],
    ];
    for (pairs, key) in [
        (
            vec![
                ("fields.items.aggregate-function", "nested_update"),
                ("fields.items.nested-key", "nope"),
            ],
            "fields.items.nested-key",
        ),
        (
            vec![
                ("fields.items.aggregate-function", "nested_update"),
                ("fields.items.nested-sequence-field", "qty"),
            ],
            "fields.items.nested-sequence-field",
        ),
    ] {
        let e = merge(&runs, &pairs).unwrap_err();
        assert!(
            matches!(&e.kind, ErrorKind::InvalidOption { key: k, .. } if k == key),
            "{pairs:?}: {e}"
        );
    }
    for pairs in [
        vec![("fields.attrs.aggregate-function", "collect")],
        vec![("fields.tags.aggregate-function", "merge_map")],
        vec![("fields.tags.aggregate-function", "nested_update")],
    ] {
        let e = merge(&runs, &pairs).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unsupported, "{pairs:?}: {e}");
    }
}

#[test]
fn rbm32_unions_bitmaps_into_the_run_optimized_serialization() {
    use RowKind::*;
    let runs = [
        vec![
            r(1, 1, Insert).bits([1, 5, 70_000]),
            r(2, 2, Insert).bits(0..100),
        ],
        vec![
            r(1, 3, Insert).bits([5, 6]),
            r(1, 4, Insert),
            r(2, 5, Insert).bits(100..3000),
        ],
    ];
    let pairs = [("fields.bits.aggregate-function", "rbm32")];
    let got = merge(&runs, &pairs).unwrap();
    let bits: Vec<_> = got.iter().map(|r| (r.key, r.bits.clone())).collect();
    assert_eq!(
        bits,
        vec![
            (1, Some(vec![1, 5, 6, 70_000])),
            (2, Some((0..3000).collect::<Vec<u32>>()))
        ]
    );
    // A retraction is refused: Paimon's rbm32 cannot retract.
    let retracting = [
        vec![r(1, 1, Insert).bits([1])],
        vec![r(1, 2, UpdateBefore).bits([1])],
    ];
    let e = merge(&retracting, &pairs).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
    // rbm64 is refused with its reason.
    let e = merge(&runs, &[("fields.bits.aggregate-function", "rbm64")]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
    assert!(e.message.contains("rbm64"), "{e}");
    // Theta and HLL sketches are merged (byte for byte as Java: `merge_engine::theta_sketch`,
    // `merge_engine::hll_sketch` and the Java peer's `aggregation_sketches`,
    // `aggregation_hll`); bitmaps are not sketches, and the merge says so, naming the file.
    for f in ["theta_sketch", "hll_sketch"] {
        let e = merge(&runs, &[("fields.bits.aggregate-function", f)]).unwrap_err();
        assert!(
            matches!(&e.kind, ErrorKind::CorruptInput { file: Some(_) }),
            "{f}: {e}"
        );
        assert!(e.message.contains(f), "{e}");
    }
}

#[test]
fn nested_partial_update_groups_rows_by_key_and_cannot_retract() {
    use RowKind::*;
    let pairs = [
        ("fields.items.aggregate-function", "nested_partial_update"),
        ("fields.items.nested-key", "id"),
    ];
    let runs = [
        vec![r(1, 1, Insert).items(&[(1, 10), (2, 20)])],
        vec![r(1, 2, Insert).items(&[(2, 25), (3, 30)])],
    ];
    let got = merge(&runs, &pairs).unwrap();
    let items: Vec<_> = got.into_iter().map(|r| (r.key, r.items)).collect();
    let some = |v: &[(i32, i32)]| Some(v.iter().map(|&(a, b)| (Some(a), b)).collect::<Vec<_>>());
    assert_eq!(items, vec![(1, some(&[(1, 10), (2, 25), (3, 30)]))]);
    // Paimon's function has no retraction, and needs a nested key.
    let retracting = [
        vec![r(1, 1, Insert).items(&[(1, 10)])],
        vec![r(1, 2, UpdateBefore).items(&[(1, 10)])],
    ];
    let e = merge(&retracting, &pairs).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
    let e = merge(&runs, &pairs[..1]).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::InvalidOption { .. }), "{e}");
    // merge_map_with_keytime needs MAP<_, ROW<..>> with a STRING time field.
    let e = merge(
        &runs,
        &[("fields.attrs.aggregate-function", "merge_map_with_keytime")],
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
}
