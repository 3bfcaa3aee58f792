//! Unit tests of schema evolution.

use super::*;
use std::sync::Arc;

use arrow_array::builder::{MapBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, Int32Array, Int64Array, ListArray, StringArray, StructArray};
use arrow_buffer::NullBuffer;
use arrow_buffer::OffsetBuffer;
use arrow_schema::{Field, FieldRef};
use std::collections::HashMap;

fn s(v: &[Option<&str>]) -> ArrayRef {
    Arc::new(StringArray::from(v.to_vec()))
}

fn with_id(f: Field, id: i32) -> Field {
    f.with_metadata(HashMap::from([(
        "PARQUET:field_id".to_string(),
        id.to_string(),
    )]))
}

fn named(n: &str) -> Option<ColumnSource> {
    Some(ColumnSource::named(n))
}

fn evolve(file: RecordBatch, out: &SchemaRef, map: &ColumnMap) -> Result<RecordBatch> {
    Evolution::new("f", &file.schema(), out, map)?.apply(&file, out, "f")
}

#[test]
fn added_renamed_and_widened_columns() {
    let file = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v", DataType::Utf8, true),
        Field::new("n", DataType::Int32, true),
    ]));
    let out = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("label", DataType::Utf8, true),
        Field::new("n", DataType::Int64, true),
        Field::new("extra", DataType::Utf8, true),
    ]));
    let map = [named("id"), named("v"), named("n"), None];
    let batch = RecordBatch::try_new(
        file,
        vec![
            Arc::new(Int64Array::from(vec![1, 2])),
            s(&[Some("a"), None]),
            Arc::new(Int32Array::from(vec![7, 8])),
        ],
    )
    .unwrap();
    let b = evolve(batch, &out, &map).unwrap();
    assert_eq!(b.schema(), out);
    let n = b.column(2).as_primitive::<arrow_array::types::Int64Type>();
    assert_eq!(n.values(), &[7, 8]);
    assert_eq!(b.column(3).null_count(), 2);
}

#[test]
fn dropped_and_reordered_columns() {
    let file = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int32, true),
        Field::new("gone", DataType::Utf8, true),
        Field::new("b", DataType::Utf8, true),
    ]));
    let out = Arc::new(Schema::new(vec![
        Field::new("b", DataType::Utf8, true),
        Field::new("a", DataType::Int32, true),
    ]));
    let batch = RecordBatch::try_new(
        file,
        vec![
            Arc::new(Int32Array::from(vec![1, 2])),
            s(&[Some("x"), Some("y")]),
            s(&[Some("p"), None]),
        ],
    )
    .unwrap();
    let b = evolve(batch, &out, &[named("b"), named("a")]).unwrap();
    assert_eq!(b.column(0).as_string::<i32>().value(0), "p");
    assert!(b.column(0).is_null(1));
    assert_eq!(
        b.column(1)
            .as_primitive::<arrow_array::types::Int32Type>()
            .values(),
        &[1, 2]
    );
}

#[test]
fn a_missing_column_or_an_added_not_null_one_is_an_error() {
    let file = Schema::new(vec![Field::new("id", DataType::Int64, false)]);
    let out = Schema::new(vec![Field::new("x", DataType::Int64, false)]);
    let e = Evolution::new("f", &file, &out, &[named("gone")]).unwrap_err();
    assert!(e.message.contains("no column 'gone'"), "{e}");
    let e = Evolution::new("f", &file, &out, &[None]).unwrap_err();
    assert!(e.message.contains("NOT NULL"), "{e}");
    assert!(matches!(e.kind, crate::ErrorKind::CorruptInput { .. }));
}

/// A ROW with a field added, one renamed, one dropped, one widened, all reordered; the
/// struct's own nulls are kept.
#[test]
fn struct_fields_follow_their_ids() {
    let file_fields = Fields::from(vec![
        with_id(Field::new("a", DataType::Int32, true), 2),
        with_id(Field::new("b", DataType::Utf8, true), 3),
        with_id(Field::new("gone", DataType::Utf8, true), 4),
    ]);
    let r = StructArray::try_new(
        file_fields.clone(),
        vec![
            Arc::new(Int32Array::from(vec![1, 2, 3])),
            s(&[Some("b1"), None, Some("b3")]),
            s(&[Some("g1"), Some("g2"), Some("g3")]),
        ],
        Some(NullBuffer::from(vec![true, true, false])),
    )
    .unwrap();
    let file = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new(
            "r",
            DataType::Struct(file_fields),
            true,
        )])),
        vec![Arc::new(r)],
    )
    .unwrap();
    let out_fields = Fields::from(vec![
        Field::new("bee", DataType::Utf8, true),
        Field::new("a", DataType::Int64, true),
        Field::new("c", DataType::Utf8, true),
    ]);
    let out = Arc::new(Schema::new(vec![Field::new(
        "r",
        DataType::Struct(out_fields),
        true,
    )]));
    let shape = Shape::Row(vec![named("b"), named("a"), None]);
    let map = [Some(ColumnSource {
        name: "r".into(),
        shape,
    })];
    let b = evolve(file, &out, &map).unwrap();
    assert_eq!(b.schema(), out);
    let r = b.column(0).as_struct();
    assert_eq!(r.nulls().map(|n| n.null_count()), Some(1));
    assert!(r.is_null(2));
    let bee = r.column(0).as_string::<i32>();
    assert_eq!((bee.value(0), bee.is_null(1)), ("b1", true));
    let a = r.column(1).as_primitive::<arrow_array::types::Int64Type>();
    assert_eq!(&a.values()[..2], &[1, 2]);
    assert_eq!(r.column(2).null_count(), 3);
}

/// ARRAY<ROW<...>> decoded from a Java-written file (nested field ids as metadata, item
/// named `element`) becomes the table's type: element fields added and widened, offsets,
/// list nulls and slicing kept.
#[test]
fn list_of_struct_elements_evolve() {
    let element = Fields::from(vec![
        with_id(Field::new("x", DataType::Int32, true), 6),
        with_id(Field::new("y", DataType::Utf8, true), 7),
    ]);
    let values = StructArray::try_new(
        element.clone(),
        vec![
            Arc::new(Int32Array::from(vec![1, 2, 3, 4])),
            s(&[Some("a"), Some("b"), Some("c"), Some("d")]),
        ],
        None,
    )
    .unwrap();
    let item: FieldRef = Arc::new(with_id(
        Field::new("element", DataType::Struct(element), true),
        1001,
    ));
    let list = ListArray::try_new(
        item.clone(),
        OffsetBuffer::from_lengths([2, 0, 2, 0]),
        Arc::new(values),
        Some(NullBuffer::from(vec![true, true, true, false])),
    )
    .unwrap();
    let sliced: ArrayRef = Arc::new(list.slice(1, 3));
    let file = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new(
            "tags",
            DataType::List(item),
            true,
        )])),
        vec![sliced],
    )
    .unwrap();
    let out_element = Fields::from(vec![
        Field::new("x", DataType::Int64, true),
        Field::new("z", DataType::Int64, true),
    ]);
    let out = Arc::new(Schema::new(vec![Field::new(
        "tags",
        DataType::List(Arc::new(Field::new(
            "element",
            DataType::Struct(out_element),
            true,
        ))),
        true,
    )]));
    let map = [Some(ColumnSource {
        name: "tags".into(),
        shape: Shape::List(Box::new(Shape::Row(vec![named("x"), None]))),
    })];
    let b = evolve(file, &out, &map).unwrap();
    assert_eq!(b.schema(), out);
    let l = b.column(0).as_list::<i32>();
    assert_eq!(l.len(), 3);
    assert_eq!(l.value_length(0), 0);
    assert!(l.is_null(2));
    let row = l.value(1);
    let row = row.as_struct();
    let x = row
        .column(0)
        .as_primitive::<arrow_array::types::Int64Type>();
    assert_eq!(x.values(), &[3, 4]);
    assert_eq!(row.column(1).null_count(), 2);
}

/// MAP<STRING, ROW<...>> with its value's field renamed and widened.
#[test]
fn map_values_evolve() {
    let value = Fields::from(vec![Field::new("p", DataType::Int32, true)]);
    let mut builder = MapBuilder::new(
        None,
        StringBuilder::new(),
        arrow_array::builder::StructBuilder::from_fields(value.clone(), 0),
    );
    for (k, p) in [("k1", 10), ("k2", 20)] {
        builder.keys().append_value(k);
        let v = builder.values();
        v.field_builder::<arrow_array::builder::Int32Builder>(0)
            .unwrap()
            .append_value(p);
        v.append(true);
        builder.append(true).unwrap();
    }
    builder.append(false).unwrap();
    let map_array: ArrayRef = Arc::new(builder.finish());
    let file = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new(
            "m",
            map_array.data_type().clone(),
            true,
        )])),
        vec![map_array],
    )
    .unwrap();
    let target = PaimonType::new(TypeRoot::Map {
        key: Box::new(PaimonType::new(TypeRoot::VarChar {
            length: crate::types::MAX_LENGTH,
        })),
        value: Box::new(PaimonType::new(TypeRoot::Row {
            fields: vec![DataField {
                id: 9,
                name: "q".into(),
                data_type: PaimonType::new(TypeRoot::BigInt),
                description: None,
            }],
        })),
    })
    .to_arrow()
    .unwrap();
    let out = Arc::new(Schema::new(vec![Field::new("m", target, true)]));
    let map = [Some(ColumnSource {
        name: "m".into(),
        shape: Shape::Map(
            Box::new(Shape::Same),
            Box::new(Shape::Row(vec![named("p")])),
        ),
    })];
    let b = evolve(file, &out, &map).unwrap();
    assert_eq!(b.schema(), out);
    let m = b.column(0).as_map();
    assert!(m.is_null(2));
    assert_eq!(m.keys().as_string::<i32>().value(1), "k2");
    let q = m.values().as_struct().column(0);
    assert_eq!(
        q.as_primitive::<arrow_array::types::Int64Type>().values(),
        &[10, 20]
    );
}

/// The same nested type spelled otherwise (arrow-rs's `item`/`entries` names, field ids)
/// is rebuilt into exactly the output's spelling.
#[test]
fn nested_names_and_metadata_do_not_matter() {
    let file_item = Arc::new(with_id(Field::new("item", DataType::Int32, true), 77));
    let list = ListArray::try_new(
        file_item.clone(),
        OffsetBuffer::from_lengths([1, 2]),
        Arc::new(Int32Array::from(vec![1, 2, 3])),
        None,
    )
    .unwrap();
    let file = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new(
            "a",
            DataType::List(file_item),
            true,
        )])),
        vec![Arc::new(list)],
    )
    .unwrap();
    let out_type = PaimonType::new(TypeRoot::Array {
        element: Box::new(PaimonType::new(TypeRoot::BigInt)),
    })
    .to_arrow()
    .unwrap();
    let out = Arc::new(Schema::new(vec![Field::new("a", out_type, true)]));
    let b = evolve(file, &out, &[named("a")]).unwrap();
    assert_eq!(b.schema(), out);
    assert_eq!(
        b.column(0)
            .as_list::<i32>()
            .values()
            .as_primitive::<arrow_array::types::Int64Type>()
            .values(),
        &[1, 2, 3]
    );
}

#[test]
fn nested_errors_are_typed() {
    let file = Schema::new(vec![Field::new(
        "r",
        DataType::Struct(Fields::from(vec![Field::new("a", DataType::Int32, true)])),
        true,
    )]);
    let row = |f: Field| {
        Schema::new(vec![Field::new(
            "r",
            DataType::Struct(Fields::from(vec![f])),
            true,
        )])
    };
    let source = |shape| {
        [Some(ColumnSource {
            name: "r".into(),
            shape,
        })]
    };
    // A nested field added since as NOT NULL: the file cannot hold the table's rows.
    let out = row(Field::new("n", DataType::Int32, false));
    let e = Evolution::new("f", &file, &out, &source(Shape::Row(vec![None]))).unwrap_err();
    assert!(
        matches!(e.kind, crate::ErrorKind::CorruptInput { .. }),
        "{e}"
    );
    assert!(e.message.contains("'r.n' is NOT NULL"), "{e}");
    // A nested field the file does not have.
    let out = row(Field::new("a", DataType::Int32, true));
    let e = Evolution::new("f", &file, &out, &source(Shape::Row(vec![named("zz")]))).unwrap_err();
    assert!(e.message.contains("no field 'r.zz'"), "{e}");
    // A type no cast reaches.
    let inner = Fields::from(vec![Field::new("x", DataType::Int32, true)]);
    let out = row(Field::new("a", DataType::Struct(inner), true));
    let e = Evolution::new("f", &file, &out, &source(Shape::Row(vec![named("a")]))).unwrap_err();
    assert!(matches!(e.kind, crate::ErrorKind::Unsupported), "{e}");
    assert!(e.message.contains("cannot become"), "{e}");
    // A ROW read as a list.
    let out = Schema::new(vec![Field::new(
        "r",
        DataType::List(Arc::new(Field::new("element", DataType::Int32, true))),
        true,
    )]);
    let e = Evolution::new(
        "f",
        &file,
        &out,
        &source(Shape::List(Box::new(Shape::Same))),
    )
    .unwrap_err();
    assert!(matches!(e.kind, crate::ErrorKind::Unsupported), "{e}");
}

/// The map a file of an older version gets from the Paimon fields of both versions.
#[test]
fn column_sources_match_ids_at_every_depth() {
    let f = |id, name: &str, t: PaimonType| DataField {
        id,
        name: name.into(),
        data_type: t,
        description: None,
    };
    let int = || PaimonType::new(TypeRoot::Int);
    let big = || PaimonType::new(TypeRoot::BigInt);
    let row = |fields| PaimonType::new(TypeRoot::Row { fields });
    let array = |e| {
        PaimonType::new(TypeRoot::Array {
            element: Box::new(e),
        })
    };
    let old = vec![
        f(0, "id", big()),
        f(1, "r", row(vec![f(2, "a", int()), f(3, "b", int())])),
        f(4, "gone", int()),
        f(5, "tags", array(row(vec![f(6, "x", int())]))),
    ];
    let latest = vec![
        f(
            5,
            "tags",
            array(row(vec![f(7, "new", int()), f(6, "x", big())])),
        ),
        f(0, "id", big()),
        f(1, "r", row(vec![f(3, "bee", int()), f(8, "c", int())])),
        f(9, "added", int()),
    ];
    let got = column_sources(&old, &latest);
    let src = |name: &str, shape| {
        Some(ColumnSource {
            name: name.into(),
            shape,
        })
    };
    assert_eq!(
        got,
        vec![
            src(
                "tags",
                Shape::List(Box::new(Shape::Row(vec![None, named("x")])))
            ),
            named("id"),
            src("r", Shape::Row(vec![named("b"), None])),
            None,
        ]
    );
}
