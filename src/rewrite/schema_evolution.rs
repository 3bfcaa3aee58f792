//! Schema evolution: reading a data file written under an older schema version as rows of the
//! table's latest schema, as Paimon's readers do.
//!
//! Paimon identifies columns by field id, not by name, at every depth: a ROW's fields carry
//! ids of their own. `ALTER TABLE` may add a column or a nested field (older files lack it and
//! read it as null), drop one (older files still have it; it is left out), rename one (older
//! files have the old name), move one, or widen its type (`INT` to `BIGINT`, read with a cast).
//! The caller matches field ids between the file's schema version and the latest one
//! ([`column_sources`]) and hands over, for each output column, where it comes from in the file
//! ([`ColumnMap`]); this module checks that map against the file and applies it to each
//! decoded batch.
//!
//! Nested arrays are rebuilt by position into exactly the output's types. Files name nested
//! Arrow fields as their writer did (a list's item is `element` for Paimon and pyarrow, `item`
//! for arrow-rs by default) and Paimon's Java writer adds Parquet field ids, which arrow-rs
//! keeps as nested field metadata; a cast that compared those names or that metadata would
//! refuse data that is the same.

use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, ListArray, MapArray, RecordBatch, StructArray,
};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Fields, Schema, SchemaRef};

use crate::error::{Error, Result};
use crate::types::{DataField, DataType as PaimonType, TypeRoot};

/// Where one output column, or one field of an output ROW, is read from in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnSource {
    /// Its name in the file: the name it had when the file was written.
    pub name: String,
    /// How the values become the output's type.
    pub shape: Shape,
}

impl ColumnSource {
    /// The file's column `name`, taken as it is (cast where the type was widened).
    pub fn named(name: impl Into<String>) -> Self {
        ColumnSource {
            name: name.into(),
            shape: Shape::Same,
        }
    }
}

/// How a file's values map onto an output type whose nested fields may have changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Shape {
    /// Taken as it is: cast where the type was widened; nested arrays rebuilt by position
    /// (same fields in the same order, names and field metadata as the output has them).
    #[default]
    Same,
    /// A ROW: for each output field, its field in the file's struct (`None`: added since the
    /// file was written, read as nulls). File fields no output field names are dropped.
    Row(Vec<Option<ColumnSource>>),
    /// An ARRAY: how its elements map.
    List(Box<Shape>),
    /// A MAP (or a MULTISET, stored as a map to counts): how its keys and its values map.
    Map(Box<Shape>, Box<Shape>),
}

/// For each output column, where it is read from in the file (`None`: added since the file was
/// written, read as nulls).
pub type ColumnMap = [Option<ColumnSource>];

/// For a file written with the fields `old`: the source of each of the `latest` fields,
/// matched by Paimon field id at every depth (renames followed; added fields `None`; dropped
/// ones absent; order taken from `latest`).
pub fn column_sources(old: &[DataField], latest: &[DataField]) -> Vec<Option<ColumnSource>> {
    latest
        .iter()
        .map(|f| {
            old.iter().find(|o| o.id == f.id).map(|o| ColumnSource {
                name: o.name.clone(),
                shape: shape_of(&o.data_type, &f.data_type),
            })
        })
        .collect()
}

/// How values of the Paimon type `old` become values of `latest` (same field id).
pub fn shape_of(old: &PaimonType, latest: &PaimonType) -> Shape {
    match (&old.root, &latest.root) {
        (TypeRoot::Row { fields: a }, TypeRoot::Row { fields: b }) => {
            Shape::Row(column_sources(a, b))
        }
        (TypeRoot::Array { element: a }, TypeRoot::Array { element: b }) => {
            Shape::List(Box::new(shape_of(a, b)))
        }
        (TypeRoot::Multiset { element: a }, TypeRoot::Multiset { element: b }) => {
            Shape::Map(Box::new(shape_of(a, b)), Box::new(Shape::Same))
        }
        (TypeRoot::Map { key: ka, value: va }, TypeRoot::Map { key: kb, value: vb }) => {
            Shape::Map(Box::new(shape_of(ka, kb)), Box::new(shape_of(va, vb)))
        }
        _ => Shape::Same,
    }
}

/// How one file becomes rows of the output schema.
#[derive(Clone, Debug)]
pub(crate) struct Evolution {
    /// Per output column: the index of its source column in the file's batches and how its
    /// values map, or `None`.
    sources: Vec<Option<(usize, Shape)>>,
}

impl Evolution {
    /// Checks `map` against the file's schema (`file_schema`, as decoded) and the output:
    /// every mapped column and nested field exists, its type can become the output's, and no
    /// column or nested field added since is `NOT NULL`.
    pub(crate) fn new(
        path: &str,
        file_schema: &Schema,
        output: &Schema,
        map: &ColumnMap,
    ) -> Result<Self> {
        if map.len() != output.fields().len() {
            return Err(Error::internal(format!(
                "schema evolution map of '{path}' has {} columns, the output {}",
                map.len(),
                output.fields().len()
            )));
        }
        let mut sources = Vec::with_capacity(map.len());
        for (target, from) in output.fields().iter().zip(map) {
            let Some(from) = from else {
                if !target.is_nullable() {
                    return Err(added_not_null(path, "column", target.name()));
                }
                sources.push(None);
                continue;
            };
            let fields = file_schema.fields();
            let index = position(fields, &from.name).ok_or_else(|| {
                Error::corrupt(
                    Some(path),
                    format!(
                        "schema does not match its schema version: no column '{}' (for the \
                         table's '{}')",
                        from.name,
                        target.name()
                    ),
                )
            })?;
            check(
                path,
                &from.name,
                fields[index].data_type(),
                &from.shape,
                target.data_type(),
            )?;
            sources.push(Some((index, from.shape.clone())));
        }
        Ok(Evolution { sources })
    }

    /// The file's column holding output column `column`, if it has one.
    pub(crate) fn source(&self, column: usize) -> Option<usize> {
        self.sources
            .get(column)
            .and_then(|s| s.as_ref().map(|(i, _)| *i))
    }

    /// The rows of `batch` (decoded with the file's own schema) as the output schema.
    pub(crate) fn apply(
        &self,
        batch: &RecordBatch,
        output: &SchemaRef,
        path: &str,
    ) -> Result<RecordBatch> {
        let columns = output
            .fields()
            .iter()
            .zip(&self.sources)
            .map(|(target, source)| match source {
                Some((i, shape)) => adapt(batch.column(*i), shape, target.data_type(), path),
                None => Ok(new_null_array(target.data_type(), batch.num_rows())),
            })
            .collect::<Result<Vec<_>>>()?;
        RecordBatch::try_new(output.clone(), columns)
            .map_err(|e| Error::corrupt(Some(path), &e).with_source(e))
    }
}

/// `a` and `b` are the same type spelled otherwise, as writers of the same schema version
/// differ: equal but for nested field metadata (Parquet field ids) and the names of a list's
/// item or of a map's entries and their key and value. ROW fields must have the same names in
/// the same order, so that reading such a file by position ([`Shape::Same`]) is exact.
pub(crate) fn same_but_spelling(a: &DataType, b: &DataType) -> bool {
    let field = |x: &arrow::datatypes::Field, y: &arrow::datatypes::Field| {
        x.is_nullable() == y.is_nullable() && same_but_spelling(x.data_type(), y.data_type())
    };
    match (a, b) {
        (DataType::List(x), DataType::List(y)) => field(x, y),
        (DataType::Struct(x), DataType::Struct(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(f, g)| f.name() == g.name() && field(f, g))
        }
        (DataType::Map(x, xs), DataType::Map(y, ys)) => {
            xs == ys
                && x.is_nullable() == y.is_nullable()
                && match (entries(a), entries(b)) {
                    (Some(p), Some(q)) => field(&p[0], &q[0]) && field(&p[1], &q[1]),
                    _ => false,
                }
        }
        _ => a == b,
    }
}

/// The index of the field `name` (exact, else ignoring case as Paimon's readers do).
fn position(fields: &Fields, name: &str) -> Option<usize> {
    fields.iter().position(|f| f.name() == name).or_else(|| {
        fields
            .iter()
            .position(|f| f.name().eq_ignore_ascii_case(name))
    })
}

fn added_not_null(path: &str, what: &str, name: &str) -> Error {
    Error::corrupt(
        Some(path),
        format!(
            "{what} '{name}' is NOT NULL in the table but did not exist when the file was written"
        ),
    )
}

fn cannot_become(path: &str, name: &str, source: &DataType, target: &DataType) -> Error {
    Error::unsupported(format!(
        "column '{name}' of '{path}' is {source} and cannot become the table's {target}"
    ))
}

/// A dictionary column's value type (files may be decoded with dictionary arrays).
fn value_type(t: &DataType) -> &DataType {
    match t {
        DataType::Dictionary(_, v) => v,
        other => other,
    }
}

/// The key and value fields of a map type's entries.
fn entries(t: &DataType) -> Option<&Fields> {
    match t {
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(f) if f.len() == 2 => Some(f),
            _ => None,
        },
        _ => None,
    }
}

/// Checks that values of `source` (the file's, at `name`) can become `target` through `shape`.
fn check(
    path: &str,
    name: &str,
    source: &DataType,
    shape: &Shape,
    target: &DataType,
) -> Result<()> {
    let source = value_type(source);
    let cannot = || cannot_become(path, name, source, target);
    match shape {
        Shape::Same => fits(source, target).then_some(()).ok_or_else(cannot),
        Shape::Row(children) => {
            let (DataType::Struct(from), DataType::Struct(to)) = (source, target) else {
                return Err(cannot());
            };
            if children.len() != to.len() {
                return Err(Error::internal(format!(
                    "schema evolution map of '{path}' has {} fields for '{name}', the output {}",
                    children.len(),
                    to.len()
                )));
            }
            for (t, child) in to.iter().zip(children) {
                let inner = format!("{name}.{}", t.name());
                let Some(child) = child else {
                    if !t.is_nullable() {
                        return Err(added_not_null(path, "field", &inner));
                    }
                    continue;
                };
                let i = position(from, &child.name).ok_or_else(|| {
                    Error::corrupt(
                        Some(path),
                        format!(
                            "schema does not match its schema version: no field '{name}.{}' \
                             (for the table's '{inner}')",
                            child.name
                        ),
                    )
                })?;
                check(
                    path,
                    &inner,
                    from[i].data_type(),
                    &child.shape,
                    t.data_type(),
                )?;
            }
            Ok(())
        }
        Shape::List(element) => match (source, target) {
            (DataType::List(f) | DataType::LargeList(f), DataType::List(t)) => check(
                path,
                &format!("{name}[]"),
                f.data_type(),
                element,
                t.data_type(),
            ),
            _ => Err(cannot()),
        },
        Shape::Map(key, value) => match (entries(source), entries(target)) {
            (Some(f), Some(t)) => {
                check(
                    path,
                    &format!("{name}.key"),
                    f[0].data_type(),
                    key,
                    t[0].data_type(),
                )?;
                check(
                    path,
                    &format!("{name}.value"),
                    f[1].data_type(),
                    value,
                    t[1].data_type(),
                )
            }
            _ => Err(cannot()),
        },
    }
}

/// Values of `source` become `target` by position: equal, nested types with the same number
/// of fields whose leaves cast, or leaves Arrow casts.
fn fits(source: &DataType, target: &DataType) -> bool {
    if source == target {
        return true;
    }
    match (value_type(source), target) {
        (DataType::Struct(a), DataType::Struct(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| fits(x.data_type(), y.data_type()))
        }
        (DataType::List(a) | DataType::LargeList(a), DataType::List(b)) => {
            fits(a.data_type(), b.data_type())
        }
        (DataType::Map(a, _), DataType::Map(b, _)) => fits(a.data_type(), b.data_type()),
        (
            DataType::Struct(_) | DataType::List(_) | DataType::LargeList(_) | DataType::Map(..),
            _,
        )
        | (_, DataType::Struct(_) | DataType::List(_) | DataType::Map(..)) => false,
        (s, t) => arrow::compute::can_cast_types(s, t),
    }
}

/// `array` (the file's values) as `target`, through `shape`.
fn adapt(array: &ArrayRef, shape: &Shape, target: &DataType, path: &str) -> Result<ArrayRef> {
    match shape {
        Shape::Same => same(array, target, path),
        Shape::Row(children) => {
            let (Some(s), DataType::Struct(to)) = (array.as_struct_opt(), target) else {
                return Err(mismatch(array, target, path));
            };
            let columns = to
                .iter()
                .zip(children)
                .map(|(t, child)| match child {
                    None => Ok(new_null_array(t.data_type(), s.len())),
                    Some(c) => {
                        let i = position(s.fields(), &c.name).ok_or_else(|| {
                            Error::corrupt(
                                Some(path),
                                format!("no field '{}' in a struct of the file", c.name),
                            )
                        })?;
                        adapt(s.column(i), &c.shape, t.data_type(), path)
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            rebuild_struct(to, columns, s.nulls(), s.len(), path)
        }
        Shape::List(element) => rebuild_list(array, target, path, |values, t| {
            adapt(values, element, t, path)
        }),
        Shape::Map(key, value) => rebuild_map(
            array,
            target,
            path,
            |keys, t| adapt(keys, key, t, path),
            |values, t| adapt(values, value, t, path),
        ),
    }
}

/// `array` as `target` when their nested fields correspond by position.
fn same(array: &ArrayRef, target: &DataType, path: &str) -> Result<ArrayRef> {
    if array.data_type() == target {
        return Ok(array.clone());
    }
    match (array.data_type(), target) {
        (DataType::Struct(from), DataType::Struct(to)) if from.len() == to.len() => {
            let s = array
                .as_struct_opt()
                .ok_or_else(|| mismatch(array, target, path))?;
            let columns = s
                .columns()
                .iter()
                .zip(to)
                .map(|(c, t)| same(c, t.data_type(), path))
                .collect::<Result<Vec<_>>>()?;
            rebuild_struct(to, columns, s.nulls(), s.len(), path)
        }
        (DataType::List(_) | DataType::LargeList(_), DataType::List(_)) => {
            rebuild_list(array, target, path, |v, t| same(v, t, path))
        }
        (DataType::Map(..), DataType::Map(..)) => rebuild_map(
            array,
            target,
            path,
            |k, t| same(k, t, path),
            |v, t| same(v, t, path),
        ),
        _ => arrow::compute::cast(array, target)
            .map_err(|e| Error::corrupt(Some(path), &e).with_source(e)),
    }
}

fn mismatch(array: &ArrayRef, target: &DataType, path: &str) -> Error {
    Error::corrupt(
        Some(path),
        format!(
            "a {} array where the schema evolution expected one to become {target}",
            array.data_type()
        ),
    )
}

fn rebuild_struct(
    fields: &Fields,
    columns: Vec<ArrayRef>,
    nulls: Option<&NullBuffer>,
    len: usize,
    path: &str,
) -> Result<ArrayRef> {
    StructArray::try_new_with_length(fields.clone(), columns, nulls.cloned(), len)
        .map(|s| Arc::new(s) as ArrayRef)
        .map_err(|e| Error::corrupt(Some(path), &e).with_source(e))
}

/// A list (or large list) array as the list type `target`, its values converted by `values`.
fn rebuild_list(
    array: &ArrayRef,
    target: &DataType,
    path: &str,
    values: impl Fn(&ArrayRef, &DataType) -> Result<ArrayRef>,
) -> Result<ArrayRef> {
    let DataType::List(item) = target else {
        return Err(mismatch(array, target, path));
    };
    // 64-bit offsets (an Arrow schema hint of another writer) first become 32-bit ones.
    let narrowed;
    let array = match array.data_type() {
        DataType::LargeList(f) => {
            narrowed = arrow::compute::cast(array, &DataType::List(f.clone()))
                .map_err(|e| Error::corrupt(Some(path), &e).with_source(e))?;
            &narrowed
        }
        _ => array,
    };
    let list = array
        .as_list_opt::<i32>()
        .ok_or_else(|| mismatch(array, target, path))?;
    let converted = values(list.values(), item.data_type())?;
    ListArray::try_new(
        item.clone(),
        list.offsets().clone(),
        converted,
        list.nulls().cloned(),
    )
    .map(|l| Arc::new(l) as ArrayRef)
    .map_err(|e| Error::corrupt(Some(path), &e).with_source(e))
}

/// A map array as the map type `target`, its keys and values converted.
fn rebuild_map(
    array: &ArrayRef,
    target: &DataType,
    path: &str,
    keys: impl Fn(&ArrayRef, &DataType) -> Result<ArrayRef>,
    values: impl Fn(&ArrayRef, &DataType) -> Result<ArrayRef>,
) -> Result<ArrayRef> {
    let (DataType::Map(entries_field, sorted), Some(fields), Some(map)) =
        (target, entries(target), array.as_map_opt())
    else {
        return Err(mismatch(array, target, path));
    };
    let columns = vec![
        keys(map.keys(), fields[0].data_type())?,
        values(map.values(), fields[1].data_type())?,
    ];
    let entries = StructArray::try_new(fields.clone(), columns, map.entries().nulls().cloned())
        .map_err(|e| Error::corrupt(Some(path), &e).with_source(e))?;
    MapArray::try_new(
        entries_field.clone(),
        map.offsets().clone(),
        entries,
        map.nulls().cloned(),
        *sorted,
    )
    .map(|m| Arc::new(m) as ArrayRef)
    .map_err(|e| Error::corrupt(Some(path), &e).with_source(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, Int64Array, MapBuilder, StringArray, StringBuilder};
    use arrow::buffer::OffsetBuffer;
    use arrow::datatypes::{Field, FieldRef};
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
        let n = b.column(2).as_primitive::<arrow::datatypes::Int64Type>();
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
                .as_primitive::<arrow::datatypes::Int32Type>()
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
        let a = r.column(1).as_primitive::<arrow::datatypes::Int64Type>();
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
        let x = row.column(0).as_primitive::<arrow::datatypes::Int64Type>();
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
            arrow::array::StructBuilder::from_fields(value.clone(), 0),
        );
        for (k, p) in [("k1", 10), ("k2", 20)] {
            builder.keys().append_value(k);
            let v = builder.values();
            v.field_builder::<arrow::array::Int32Builder>(0)
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
            q.as_primitive::<arrow::datatypes::Int64Type>().values(),
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
                .as_primitive::<arrow::datatypes::Int64Type>()
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
        let e =
            Evolution::new("f", &file, &out, &source(Shape::Row(vec![named("zz")]))).unwrap_err();
        assert!(e.message.contains("no field 'r.zz'"), "{e}");
        // A type no cast reaches.
        let inner = Fields::from(vec![Field::new("x", DataType::Int32, true)]);
        let out = row(Field::new("a", DataType::Struct(inner), true));
        let e =
            Evolution::new("f", &file, &out, &source(Shape::Row(vec![named("a")]))).unwrap_err();
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
}
