//! The primary-key data file layout (format.md §8): `_KEY_<k>` columns (the trimmed primary
//! key), `_SEQUENCE_NUMBER`, `_VALUE_KIND`, then every table column.
//!
//! The merge never trusts a file to have this shape: a missing or mistyped system column is
//! corrupt input naming the file, because guessing would silently reorder or resurrect rows.
//! This module also turns key values into the planner's order-preserving [`Key`] bytes through
//! [`order_key`], the function the table layer uses too, so the keys recorded for new files
//! compare exactly like the keys the table layer derives from manifests.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Float32Type, Float64Type, Time32MillisecondType, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType,
};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Decimal128Array, FixedSizeBinaryArray, Int16Array, Int32Array,
    Int64Array, Int8Array, LargeBinaryArray, LargeStringArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::error::{Error, Result};
use crate::meta::Key;
use crate::types::DataField;
use crate::value::{order_key, Datum};

/// Prefix of the key columns.
pub const KEY_PREFIX: &str = "_KEY_";
/// The per-record sequence number column.
pub const SEQUENCE_NUMBER: &str = "_SEQUENCE_NUMBER";
/// The row kind column.
pub const VALUE_KIND: &str = "_VALUE_KIND";

/// The name of the key column of primary-key field `name`: `_KEY_<name>`.
pub fn key_column(name: &str) -> String {
    format!("{KEY_PREFIX}{name}")
}

/// The system columns between the keys and the values, as written: `_SEQUENCE_NUMBER`
/// (BIGINT) and `_VALUE_KIND` (TINYINT, a [`RowKind`] byte), never null.
pub fn system_fields() -> [Field; 2] {
    [
        Field::new(SEQUENCE_NUMBER, DataType::Int64, false),
        Field::new(VALUE_KIND, DataType::Int8, false),
    ]
}

/// The data-file row type of a primary-key table as Arrow: [`key_column`] of each of `keys`
/// (the trimmed primary key, never null), the [`system_fields`], then `values` (every table
/// column).
pub fn data_file_schema(keys: &[DataField], values: &[DataField]) -> Result<SchemaRef> {
    let mut fields = Vec::with_capacity(keys.len() + 2 + values.len());
    for k in keys {
        fields.push(Field::new(
            key_column(&k.name),
            k.data_type.to_arrow()?,
            false,
        ));
    }
    fields.extend(system_fields());
    for v in values {
        fields.push(v.to_arrow()?);
    }
    Ok(std::sync::Arc::new(Schema::new(fields)))
}

/// Paimon's `RowKind`, as stored in `_VALUE_KIND`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[repr(i8)]
pub enum RowKind {
    /// `+I`
    Insert = 0,
    /// `-U`
    UpdateBefore = 1,
    /// `+U`
    UpdateAfter = 2,
    /// `-D`
    Delete = 3,
}

impl RowKind {
    /// The kind stored as `v` in `_VALUE_KIND` (0 `+I`, 1 `-U`, 2 `+U`, 3 `-D`); `None` for
    /// any other value, which callers report as corrupt input.
    pub fn from_byte(v: i64) -> Option<Self> {
        Some(match v {
            0 => RowKind::Insert,
            1 => RowKind::UpdateBefore,
            2 => RowKind::UpdateAfter,
            3 => RowKind::Delete,
            _ => return None,
        })
    }

    /// The value written to `_VALUE_KIND` (TINYINT) for this kind.
    pub fn as_byte(self) -> i8 {
        self as i8
    }

    /// `-U` and `-D`: records that take a row away.
    pub fn is_retract(self) -> bool {
        matches!(self, RowKind::UpdateBefore | RowKind::Delete)
    }

    /// `+I` and `+U`: records that put a row in place (the complement of
    /// [`RowKind::is_retract`]).
    pub fn is_add(self) -> bool {
        !self.is_retract()
    }
}

/// Where the system columns and the value columns are in a primary-key file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KvLayout {
    /// The `_KEY_*` columns, in key order.
    pub key_cols: Vec<usize>,
    /// Index of `_SEQUENCE_NUMBER` (BIGINT), after every key column.
    pub seq_col: usize,
    /// Index of `_VALUE_KIND` (a [`RowKind`] byte; TINYINT as Paimon writes it, any integer
    /// type accepted), always `seq_col + 1`.
    pub kind_col: usize,
    /// The table columns (after `_VALUE_KIND`).
    pub value_cols: Vec<usize>,
    /// Indices (into the file's columns) of the `sequence.field` columns, in option order.
    pub user_seq_cols: Vec<usize>,
    /// Per key column, the value column of the same field (`_KEY_k` and `k`), when the file
    /// has it: Paimon writes the key twice, and a file where the two disagree is corrupt
    /// (merging by one and writing the other would change rows silently).
    pub key_value_cols: Vec<Option<usize>>,
}

impl KvLayout {
    /// Locates the columns of `schema` (the file `file`), checking the system columns' types.
    /// `sequence_fields` are the table's `sequence.field` names.
    pub fn of(schema: &Schema, file: &str, sequence_fields: &[String]) -> Result<Self> {
        let find = |name: &str| schema.fields().iter().position(|f| f.name() == name);
        let seq_col = find(SEQUENCE_NUMBER).ok_or_else(|| {
            Error::corrupt(
                Some(file),
                format!("a primary-key data file without the {SEQUENCE_NUMBER} column"),
            )
        })?;
        let kind_col = find(VALUE_KIND).ok_or_else(|| {
            Error::corrupt(
                Some(file),
                format!("a primary-key data file without the {VALUE_KIND} column"),
            )
        })?;
        if schema.field(seq_col).data_type() != &DataType::Int64 {
            return Err(Error::corrupt(
                Some(file),
                format!(
                    "{SEQUENCE_NUMBER} is {} where BIGINT was expected",
                    schema.field(seq_col).data_type()
                ),
            ));
        }
        if !matches!(
            schema.field(kind_col).data_type(),
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
        ) {
            return Err(Error::corrupt(
                Some(file),
                format!(
                    "{VALUE_KIND} is {} where TINYINT was expected",
                    schema.field(kind_col).data_type()
                ),
            ));
        }
        let key_cols: Vec<usize> = schema
            .fields()
            .iter()
            .enumerate()
            .filter(|(_, f)| f.name().starts_with(KEY_PREFIX))
            .map(|(i, _)| i)
            .collect();
        if key_cols.is_empty() {
            return Err(Error::corrupt(
                Some(file),
                format!("a primary-key data file without {KEY_PREFIX}* key columns"),
            ));
        }
        if key_cols.iter().any(|&k| k > seq_col) || kind_col != seq_col + 1 {
            return Err(Error::corrupt(
                Some(file),
                format!(
                    "columns are not in the primary-key layout ({KEY_PREFIX}*, \
                     {SEQUENCE_NUMBER}, {VALUE_KIND}, values)"
                ),
            ));
        }
        let value_cols: Vec<usize> = (kind_col + 1..schema.fields().len()).collect();
        let mut user_seq_cols = Vec::new();
        for name in sequence_fields {
            let i = value_cols
                .iter()
                .copied()
                .find(|&i| schema.field(i).name() == name)
                .ok_or_else(|| {
                    Error::corrupt(
                        Some(file),
                        format!("the sequence field '{name}' is not a column of the file"),
                    )
                })?;
            user_seq_cols.push(i);
        }
        let key_value_cols = key_cols
            .iter()
            .map(|&k| {
                let name = schema.field(k).name().strip_prefix(KEY_PREFIX)?;
                value_cols
                    .iter()
                    .copied()
                    .find(|&v| schema.field(v).name() == name)
            })
            .collect();
        Ok(KvLayout {
            key_cols,
            seq_col,
            kind_col,
            value_cols,
            user_seq_cols,
            key_value_cols,
        })
    }
}

/// The `_VALUE_KIND` column as bytes, validated (an unknown kind is corrupt input).
pub fn kinds_of(column: &ArrayRef, file: &str) -> Result<Vec<RowKind>> {
    let bad = |v: i64| Error::corrupt(Some(file), format!("{VALUE_KIND} holds {v}"));
    if column.null_count() > 0 {
        return Err(Error::corrupt(
            Some(file),
            format!("{VALUE_KIND} has nulls"),
        ));
    }
    // Validated in one pass, then mapped through a table: one fallible conversion per row
    // (a `Result` per value, collected) cost a branchy loop on every decoded batch.
    const KINDS: [RowKind; 4] = [
        RowKind::Insert,
        RowKind::UpdateBefore,
        RowKind::UpdateAfter,
        RowKind::Delete,
    ];
    macro_rules! conv {
        ($t:ty) => {{
            let values = column
                .as_any()
                .downcast_ref::<$t>()
                .ok_or_else(|| Error::corrupt(Some(file), format!("{VALUE_KIND} type")))?
                .values();
            if let Some(&v) = values.iter().find(|&&v| !(0..=3).contains(&v)) {
                return Err(bad(v as i64));
            }
            Ok(values.iter().map(|&v| KINDS[(v & 3) as usize]).collect())
        }};
    }
    match column.data_type() {
        DataType::Int8 => conv!(Int8Array),
        DataType::Int16 => conv!(Int16Array),
        DataType::Int32 => conv!(Int32Array),
        DataType::Int64 => conv!(Int64Array),
        other => Err(Error::corrupt(
            Some(file),
            format!("{VALUE_KIND} is {other}"),
        )),
    }
}

/// `_VALUE_KIND` values of `kinds` as an array of the file's type.
pub fn kind_array(kinds: &[i8], data_type: &DataType) -> ArrayRef {
    use std::sync::Arc;
    match data_type {
        DataType::Int16 => Arc::new(Int16Array::from_iter_values(
            kinds.iter().map(|&k| k as i16),
        )),
        DataType::Int32 => Arc::new(Int32Array::from_iter_values(
            kinds.iter().map(|&k| k as i32),
        )),
        DataType::Int64 => Arc::new(Int64Array::from_iter_values(
            kinds.iter().map(|&k| k as i64),
        )),
        _ => Arc::new(Int8Array::from(kinds.to_vec())),
    }
}

/// One value of an Arrow array as the table layer's typed value (key columns and aggregates).
pub fn datum_at(array: &dyn Array, row: usize) -> Result<Datum> {
    if array.is_null(row) {
        return Ok(Datum::Null);
    }
    let unsupported = || {
        Error::unsupported(format!(
            "a primary-key column of Arrow type {} (not a Paimon key type this build handles)",
            array.data_type()
        ))
    };
    Ok(match array.data_type() {
        DataType::Boolean => Datum::Boolean(
            array
                .as_any()
                .downcast_ref::<BooleanArray>()
                .ok_or_else(unsupported)?
                .value(row),
        ),
        DataType::Int8 => Datum::TinyInt(
            array
                .as_primitive::<arrow_array::types::Int8Type>()
                .value(row),
        ),
        DataType::Int16 => Datum::SmallInt(
            array
                .as_primitive::<arrow_array::types::Int16Type>()
                .value(row),
        ),
        DataType::Int32 => Datum::Int(
            array
                .as_primitive::<arrow_array::types::Int32Type>()
                .value(row),
        ),
        DataType::Int64 => Datum::BigInt(
            array
                .as_primitive::<arrow_array::types::Int64Type>()
                .value(row),
        ),
        DataType::Float32 => Datum::Float(array.as_primitive::<Float32Type>().value(row)),
        DataType::Float64 => Datum::Double(array.as_primitive::<Float64Type>().value(row)),
        DataType::Decimal128(_, _) => Datum::Decimal(
            array
                .as_any()
                .downcast_ref::<Decimal128Array>()
                .ok_or_else(unsupported)?
                .value(row),
        ),
        DataType::Utf8 => Datum::String(array.as_string::<i32>().value(row).to_string()),
        DataType::LargeUtf8 => Datum::String(
            array
                .as_any()
                .downcast_ref::<LargeStringArray>()
                .ok_or_else(unsupported)?
                .value(row)
                .to_string(),
        ),
        DataType::Utf8View => Datum::String(array.as_string_view().value(row).to_string()),
        DataType::Binary => Datum::Bytes(array.as_binary::<i32>().value(row).to_vec()),
        DataType::LargeBinary => Datum::Bytes(
            array
                .as_any()
                .downcast_ref::<LargeBinaryArray>()
                .ok_or_else(unsupported)?
                .value(row)
                .to_vec(),
        ),
        DataType::BinaryView => Datum::Bytes(array.as_binary_view().value(row).to_vec()),
        DataType::FixedSizeBinary(_) => Datum::Bytes(
            array
                .as_any()
                .downcast_ref::<FixedSizeBinaryArray>()
                .ok_or_else(unsupported)?
                .value(row)
                .to_vec(),
        ),
        DataType::Date32 => Datum::Date(array.as_primitive::<Date32Type>().value(row)),
        DataType::Time32(TimeUnit::Millisecond) => {
            Datum::Time(array.as_primitive::<Time32MillisecondType>().value(row))
        }
        DataType::Timestamp(unit, _) => {
            let (millis, nanos) = match unit {
                TimeUnit::Second => (
                    array
                        .as_primitive::<TimestampSecondType>()
                        .value(row)
                        .saturating_mul(1000),
                    0,
                ),
                TimeUnit::Millisecond => (
                    array.as_primitive::<TimestampMillisecondType>().value(row),
                    0,
                ),
                TimeUnit::Microsecond => {
                    let v = array.as_primitive::<TimestampMicrosecondType>().value(row);
                    (v.div_euclid(1000), (v.rem_euclid(1000) * 1000) as i32)
                }
                TimeUnit::Nanosecond => {
                    let v = array.as_primitive::<TimestampNanosecondType>().value(row);
                    (v.div_euclid(1_000_000), v.rem_euclid(1_000_000) as i32)
                }
            };
            Datum::Timestamp { millis, nanos }
        }
        _ => return Err(unsupported()),
    })
}

/// The typed key of row `row` of the key columns.
pub fn key_datums(columns: &[&dyn Array], row: usize) -> Result<Vec<Datum>> {
    columns.iter().map(|c| datum_at(*c, row)).collect()
}

/// The planner key of typed key values (same bytes as the table layer's manifest keys).
pub fn planner_key(values: &[Datum]) -> Key {
    order_key(values)
}

/// Builds an array of `data_type` from typed values (the values an engine computed).
pub fn array_of(values: &[Datum], data_type: &DataType) -> Result<ArrayRef> {
    use arrow_array::builder::{
        BinaryBuilder, BooleanBuilder, Date32Builder, Decimal128Builder, Float32Builder,
        Float64Builder, Int16Builder, Int32Builder, Int64Builder, Int8Builder, LargeBinaryBuilder,
        LargeStringBuilder, StringBuilder, Time32MillisecondBuilder,
    };
    use arrow_array::{
        new_null_array, TimestampMicrosecondArray, TimestampMillisecondArray,
        TimestampNanosecondArray, TimestampSecondArray,
    };
    use std::sync::Arc;
    let mismatch =
        |d: &Datum| Error::internal(format!("value {d:?} computed for a {data_type} column"));
    macro_rules! prim {
        ($builder:ty, $variant:ident) => {{
            let mut b = <$builder>::new();
            for v in values {
                match v {
                    Datum::Null => b.append_null(),
                    Datum::$variant(x) => b.append_value(x.clone()),
                    other => return Err(mismatch(other)),
                }
            }
            Arc::new(b.finish()) as ArrayRef
        }};
    }
    Ok(match data_type {
        DataType::Boolean => prim!(BooleanBuilder, Boolean),
        DataType::Int8 => prim!(Int8Builder, TinyInt),
        DataType::Int16 => prim!(Int16Builder, SmallInt),
        DataType::Int32 => prim!(Int32Builder, Int),
        DataType::Int64 => prim!(Int64Builder, BigInt),
        DataType::Float32 => prim!(Float32Builder, Float),
        DataType::Float64 => prim!(Float64Builder, Double),
        DataType::Date32 => prim!(Date32Builder, Date),
        DataType::Time32(TimeUnit::Millisecond) => prim!(Time32MillisecondBuilder, Time),
        DataType::Utf8 => prim!(StringBuilder, String),
        DataType::LargeUtf8 => prim!(LargeStringBuilder, String),
        DataType::Binary => prim!(BinaryBuilder, Bytes),
        DataType::LargeBinary => prim!(LargeBinaryBuilder, Bytes),
        DataType::Decimal128(p, s) => {
            let mut b = Decimal128Builder::with_capacity(values.len());
            for v in values {
                match v {
                    Datum::Null => b.append_null(),
                    Datum::Decimal(x) => b.append_value(*x),
                    other => return Err(mismatch(other)),
                }
            }
            Arc::new(
                b.finish()
                    .with_precision_and_scale(*p, *s)
                    .map_err(|e| Error::internal(e.to_string()))?,
            )
        }
        DataType::Timestamp(unit, tz) => {
            let mut out: Vec<Option<i64>> = Vec::with_capacity(values.len());
            for v in values {
                out.push(match v {
                    Datum::Null => None,
                    Datum::Timestamp { millis, nanos } => Some(match unit {
                        TimeUnit::Second => millis.div_euclid(1000),
                        TimeUnit::Millisecond => *millis,
                        TimeUnit::Microsecond => millis * 1000 + (*nanos as i64) / 1000,
                        TimeUnit::Nanosecond => millis * 1_000_000 + *nanos as i64,
                    }),
                    other => return Err(mismatch(other)),
                });
            }
            let a: ArrayRef = match unit {
                TimeUnit::Second => {
                    Arc::new(TimestampSecondArray::from(out).with_timezone_opt(tz.clone()))
                }
                TimeUnit::Millisecond => {
                    Arc::new(TimestampMillisecondArray::from(out).with_timezone_opt(tz.clone()))
                }
                TimeUnit::Microsecond => {
                    Arc::new(TimestampMicrosecondArray::from(out).with_timezone_opt(tz.clone()))
                }
                TimeUnit::Nanosecond => {
                    Arc::new(TimestampNanosecondArray::from(out).with_timezone_opt(tz.clone()))
                }
            };
            a
        }
        _ if values.iter().all(Datum::is_null) => new_null_array(data_type, values.len()),
        other => {
            return Err(Error::unsupported(format!(
                "computed values of Arrow type {other} cannot be written by the merge rewriter"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::Field;

    fn schema(names: &[(&str, DataType)]) -> Schema {
        Schema::new(
            names
                .iter()
                .map(|(n, t)| Field::new(*n, t.clone(), false))
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn layout_is_found_and_checked() {
        let s = schema(&[
            ("_KEY_k", DataType::Int64),
            ("_SEQUENCE_NUMBER", DataType::Int64),
            ("_VALUE_KIND", DataType::Int8),
            ("k", DataType::Int64),
            ("v", DataType::Utf8),
        ]);
        let l = KvLayout::of(&s, "f", &["v".to_string()]).unwrap();
        assert_eq!(l.key_cols, vec![0]);
        assert_eq!((l.seq_col, l.kind_col), (1, 2));
        assert_eq!(l.value_cols, vec![3, 4]);
        assert_eq!(l.user_seq_cols, vec![4]);
        let e =
            KvLayout::of(&schema(&[("_KEY_k", DataType::Int64)]), "f.parquet", &[]).unwrap_err();
        assert!(
            matches!(e.kind, crate::ErrorKind::CorruptInput { file: Some(ref f) } if f == "f.parquet")
        );
        let e = KvLayout::of(
            &schema(&[
                ("_KEY_k", DataType::Int64),
                ("_SEQUENCE_NUMBER", DataType::Int32),
                ("_VALUE_KIND", DataType::Int8),
            ]),
            "f",
            &[],
        )
        .unwrap_err();
        assert!(e.message.contains("BIGINT"), "{e}");
    }

    #[test]
    fn row_kinds() {
        assert!(RowKind::Delete.is_retract() && RowKind::UpdateBefore.is_retract());
        assert!(RowKind::Insert.is_add() && RowKind::UpdateAfter.is_add());
        assert_eq!(RowKind::from_byte(4), None);
    }
}
