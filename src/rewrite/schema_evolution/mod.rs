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

use arrow_array::{new_null_array, RecordBatch};
use arrow_schema::{DataType, Fields, Schema, SchemaRef};

use crate::error::{Error, Result};
use crate::types::{DataField, DataType as PaimonType, TypeRoot};
use rebuild::adapt;

mod rebuild;

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
    let field = |x: &arrow_schema::Field, y: &arrow_schema::Field| {
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
pub(super) fn position(fields: &Fields, name: &str) -> Option<usize> {
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
pub(super) fn entries(t: &DataType) -> Option<&Fields> {
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
        (s, t) => arrow_cast::can_cast_types(s, t),
    }
}

#[cfg(test)]
mod tests;
