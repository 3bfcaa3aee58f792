//! Rebuilding a file's arrays as the output's types: by the evolution's shape (fields picked
//! by name, added ones filled with nulls), or by position where only the spelling of nested
//! fields differs. Leaves that differ in type are cast.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{new_null_array, Array, ArrayRef, ListArray, MapArray, StructArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Fields};

use super::{entries, position, Shape};
use crate::error::{Error, Result};

/// `array` (the file's values) as `target`, through `shape`.
pub(super) fn adapt(
    array: &ArrayRef,
    shape: &Shape,
    target: &DataType,
    path: &str,
) -> Result<ArrayRef> {
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
        _ => arrow_cast::cast(array, target)
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
            narrowed = arrow_cast::cast(array, &DataType::List(f.clone()))
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
