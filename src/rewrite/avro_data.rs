//! Avro data files read as Arrow batches of a given schema: Paimon's `file.format = avro`
//! (often only for level 0, `file.format.per.level = '0:avro'`, a documented setting for
//! faster writes), and the format Paimon's Java writers force for the files of a postpone
//! bucket (pypaimon's too unless the table names a format). The postpone replay reads the
//! batches; the merge reads a Parquet copy ([`super::foreign_data::transcode_to_parquet`]).
//!
//! Records are decoded with the writer schema the file carries ([`crate::avro_file`]: bounded
//! allocations, contained panics) and matched to the wanted columns by name; a column the file
//! lacks is corrupt input naming the file. The types are those Paimon's writers put in Avro
//! (docs/format.md §8.2): booleans, integers, floats, strings, bytes, decimals (bytes or fixed
//! with the `decimal` logical type), dates, times in milliseconds and timestamps in milli-,
//! micro- or nanoseconds, and, nested to any depth, arrays, rows (Avro records matched by
//! field name) and maps and multisets. Avro maps take only string keys, so Paimon writes a
//! map or multiset whose key is not a string as an array of `{key, value}` records; both
//! forms are read. A string-keyed Avro map comes out of the decoder as a hash map, whose
//! order means nothing: its entries are laid out in key order, so the same file always gives
//! the same output (Paimon's maps are unordered; its readers and ours compare them as sets).
//! A column of any other type is `unsupported`, so a table with one is refused rather than
//! read wrongly. A string or byte value is limited as every Avro value here is (8 MiB,
//! [`crate::avro_file`]).

use std::sync::Arc;

use apache_avro::types::Value;
use arrow_array::{ArrayRef, ListArray, MapArray, RecordBatch, StructArray};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, SchemaRef, TimeUnit};

use super::merge::kv_format::array_of;
use crate::error::{Error, Result};
use crate::storage::{SequentialRead, Storage};
use crate::value::Datum;

/// Rows per batch handed to the caller.
const BATCH_ROWS: usize = 8192;

/// Bytes of the file fetched per storage call: the file is read front to back, never held
/// whole (a data file may be larger than the job's memory).
const READ_WINDOW: u64 = 4 << 20;

/// Reads the Avro data file `path` as batches of `schema`, handing each to `each`; the file
/// must hold `rows` records, as its metadata records.
pub(crate) fn read_avro_batches(
    storage: &dyn Storage,
    path: &str,
    schema: &SchemaRef,
    rows: u64,
    mut each: impl FnMut(RecordBatch) -> Result<()>,
) -> Result<()> {
    for f in schema.fields() {
        if !is_readable(f.data_type()) {
            return Err(Error::unsupported(format!(
                "Avro data file '{path}': column '{}' of type {} (not a type Paimon writes to \
                 Avro)",
                f.name(),
                f.data_type()
            )));
        }
    }
    let mut source = SequentialRead::new(storage, path, READ_WINDOW)?;
    let width = schema.fields().len();
    let mut columns: Vec<Column> = schema
        .fields()
        .iter()
        .map(|f| match is_flat(f.data_type()) {
            true => Column::Flat(Vec::with_capacity(BATCH_ROWS)),
            false => Column::Nested(Vec::with_capacity(BATCH_ROWS)),
        })
        .collect();
    let mut slots: Vec<Option<usize>> = Vec::new();
    let mut seen = 0u64;
    let mut flush = |columns: &mut Vec<Column>| -> Result<()> {
        if columns[0].is_empty() {
            return Ok(());
        }
        let arrays = columns
            .iter_mut()
            .zip(schema.fields())
            .map(|(values, f)| match values {
                Column::Flat(values) => {
                    let a = array_of(values, f.data_type());
                    values.clear();
                    a
                }
                Column::Nested(values) => {
                    let values = std::mem::take(values);
                    nested_array(
                        values,
                        f.data_type(),
                        &Where {
                            path,
                            column: f.name(),
                        },
                    )
                }
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        let batch = RecordBatch::try_new(schema.clone(), arrays)
            .map_err(|e| Error::corrupt(Some(path), format!("Avro rows as Arrow: {e}")))?;
        each(batch)
    };
    let decoded = crate::avro_file::each_record(&mut source, path, &mut |record| {
        // Paimon's Java writers make the top-level schema a union of null and the record.
        let record = match record {
            Value::Union(_, inner) => inner.as_ref(),
            v => v,
        };
        let Value::Record(fields) = record else {
            return Err(Error::corrupt(
                Some(path),
                "an Avro data record that is not a record",
            ));
        };
        if slots.is_empty() {
            // The writer schema is the same for every record: match names once.
            slots = schema
                .fields()
                .iter()
                .map(|f| fields.iter().position(|(n, _)| n == f.name()))
                .collect();
            if let Some(i) = slots.iter().position(Option::is_none) {
                return Err(Error::corrupt(
                    Some(path),
                    format!("no column '{}' in the Avro records", schema.field(i).name()),
                ));
            }
        }
        for (c, slot) in slots.iter().enumerate() {
            let (name, value) = slot
                .and_then(|s| fields.get(s))
                .ok_or_else(|| Error::corrupt(Some(path), "an Avro record of another shape"))?;
            let f = schema.field(c);
            if name != f.name() {
                return Err(Error::corrupt(
                    Some(path),
                    "an Avro record of another shape",
                ));
            }
            match &mut columns[c] {
                Column::Flat(values) => {
                    values.push(datum(value, f.data_type(), &Where { path, column: name })?)
                }
                Column::Nested(values) => values.push(value.clone()),
            }
        }
        seen += 1;
        if columns[0].len() == BATCH_ROWS {
            flush(&mut columns)?;
        }
        Ok(())
    });
    // A failed read reaches apache-avro as an I/O error it words as a bad file: report the
    // storage's own typed error instead.
    if let Some(e) = source.take_error() {
        return Err(e.into());
    }
    decoded?;
    if width > 0 {
        flush(&mut columns)?;
    }
    if seen != rows {
        return Err(Error::corrupt(
            Some(path),
            format!("the file holds {seen} rows where its metadata records {rows}"),
        ));
    }
    Ok(())
}

/// The values of one column of the batch being gathered: typed values for a flat column,
/// the decoded Avro values of a nested one (built into an array when the batch is full).
enum Column {
    Flat(Vec<Datum>),
    Nested(Vec<Value>),
}

impl Column {
    fn len(&self) -> usize {
        match self {
            Column::Flat(v) => v.len(),
            Column::Nested(v) => v.len(),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Whether a column of Arrow type `t` can be read from Avro here: a flat type, or an array,
/// map (multisets are maps) or row of readable types.
pub(crate) fn is_readable(t: &DataType) -> bool {
    match t {
        DataType::List(item) => is_readable(item.data_type()),
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) => kv.len() == 2 && kv.iter().all(|f| is_readable(f.data_type())),
            _ => false,
        },
        DataType::Struct(fields) => fields.iter().all(|f| is_readable(f.data_type())),
        t => is_flat(t),
    }
}

/// Whether a column of Arrow type `t` is of a flat type Paimon writes to Avro (gathered as
/// typed values; the postpone replay reads only these).
pub(crate) fn is_flat(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Boolean
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::Decimal128(..)
            | DataType::Date32
            | DataType::Time32(TimeUnit::Millisecond)
            | DataType::Timestamp(..)
    )
}

/// One Avro value as the typed value of a column of Arrow type `t`.
fn datum(value: &Value, t: &DataType, at: &Where) -> Result<Datum> {
    let value = match value {
        Value::Union(_, inner) => inner.as_ref(),
        v => v,
    };
    let bad = || at.bad(value, t);
    let small = |i: i32, to: fn(i32) -> Option<Datum>| to(i).ok_or_else(bad);
    Ok(match (t, value) {
        (_, Value::Null) => Datum::Null,
        (DataType::Boolean, Value::Boolean(b)) => Datum::Boolean(*b),
        (DataType::Int8, Value::Int(i)) => small(*i, |i| i8::try_from(i).ok().map(Datum::TinyInt))?,
        (DataType::Int16, Value::Int(i)) => {
            small(*i, |i| i16::try_from(i).ok().map(Datum::SmallInt))?
        }
        (DataType::Int32, Value::Int(i)) => Datum::Int(*i),
        (DataType::Int64, Value::Long(l)) => Datum::BigInt(*l),
        (DataType::Float32, Value::Float(f)) => Datum::Float(*f),
        (DataType::Float64, Value::Double(d)) => Datum::Double(*d),
        (DataType::Utf8 | DataType::LargeUtf8, Value::String(s)) => Datum::String(s.clone()),
        (DataType::Binary | DataType::LargeBinary, Value::Bytes(b) | Value::Fixed(_, b)) => {
            Datum::Bytes(b.clone())
        }
        (DataType::Decimal128(..), Value::Decimal(d)) => {
            let bytes = <Vec<u8>>::try_from(d).map_err(|_| bad())?;
            Datum::Decimal(unscaled(&bytes).ok_or_else(bad)?)
        }
        (DataType::Decimal128(..), Value::Bytes(b) | Value::Fixed(_, b)) => {
            Datum::Decimal(unscaled(b).ok_or_else(bad)?)
        }
        (DataType::Date32, Value::Date(d) | Value::Int(d)) => Datum::Date(*d),
        (DataType::Time32(TimeUnit::Millisecond), Value::TimeMillis(ms) | Value::Int(ms)) => {
            Datum::Time(*ms)
        }
        (DataType::Timestamp(..), Value::TimestampMillis(ms) | Value::LocalTimestampMillis(ms)) => {
            Datum::Timestamp {
                millis: *ms,
                nanos: 0,
            }
        }
        (DataType::Timestamp(..), Value::TimestampMicros(us) | Value::LocalTimestampMicros(us)) => {
            Datum::Timestamp {
                millis: us.div_euclid(1000),
                nanos: (us.rem_euclid(1000) * 1000) as i32,
            }
        }
        (DataType::Timestamp(..), Value::TimestampNanos(ns) | Value::LocalTimestampNanos(ns)) => {
            Datum::Timestamp {
                millis: ns.div_euclid(1_000_000),
                nanos: ns.rem_euclid(1_000_000) as i32,
            }
        }
        _ => return Err(bad()),
    })
}

/// The file and column a nested value belongs to, for errors.
struct Where<'a> {
    path: &'a str,
    column: &'a str,
}

impl Where<'_> {
    fn bad(&self, value: &Value, t: &DataType) -> Error {
        Error::corrupt(
            Some(self.path),
            format!(
                "column '{}': Avro value {value:?} for Arrow type {t}",
                self.column
            ),
        )
    }

    fn arrow(&self, e: arrow_schema::ArrowError) -> Error {
        Error::corrupt(
            Some(self.path),
            format!("column '{}': Avro values as Arrow: {e}", self.column),
        )
    }
}

/// The value inside a union (Paimon writes every nullable type as a union with null).
fn unwrap_union(v: Value) -> Value {
    match v {
        Value::Union(_, inner) => *inner,
        v => v,
    }
}

/// An array of Arrow type `t` from one Avro value per row, recursively for arrays, maps and
/// rows; flat leaves go through [`datum`].
fn nested_array(values: Vec<Value>, t: &DataType, at: &Where) -> Result<ArrayRef> {
    match t {
        DataType::List(item) => {
            let mut offsets = Vec::with_capacity(values.len() + 1);
            offsets.push(0i32);
            let mut valid = BooleanBufferBuilder::new(values.len());
            let mut items = Vec::new();
            for v in values {
                match unwrap_union(v) {
                    Value::Null => valid.append(false),
                    Value::Array(xs) => {
                        items.extend(xs);
                        valid.append(true);
                    }
                    other => return Err(at.bad(&other, t)),
                }
                offsets.push(offset(items.len(), at)?);
            }
            let child = nested_array(items, item.data_type(), at)?;
            let nulls = Some(NullBuffer::new(valid.finish())).filter(|n| n.null_count() > 0);
            let list = ListArray::try_new(item.clone(), offsets_of(offsets), child, nulls)
                .map_err(|e| at.arrow(e))?;
            Ok(Arc::new(list))
        }
        DataType::Map(entries, ordered) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(Error::internal(format!("map entries of type {t}")));
            };
            let mut offsets = Vec::with_capacity(values.len() + 1);
            offsets.push(0i32);
            let mut valid = BooleanBufferBuilder::new(values.len());
            let (mut keys, mut vals) = (Vec::new(), Vec::new());
            for v in values {
                match unwrap_union(v) {
                    Value::Null => valid.append(false),
                    Value::Map(m) => {
                        let mut m: Vec<(String, Value)> = m.into_iter().collect();
                        m.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                        for (k, v) in m {
                            keys.push(Value::String(k));
                            vals.push(v);
                        }
                        valid.append(true);
                    }
                    // A map whose key is not a string: an array of {key, value} records.
                    Value::Array(pairs) => {
                        for pair in pairs {
                            let (k, v) = key_value(unwrap_union(pair), at, t)?;
                            keys.push(k);
                            vals.push(v);
                        }
                        valid.append(true);
                    }
                    other => return Err(at.bad(&other, t)),
                }
                offsets.push(offset(keys.len(), at)?);
            }
            let children = vec![
                nested_array(keys, kv[0].data_type(), at)?,
                nested_array(vals, kv[1].data_type(), at)?,
            ];
            let entries_array =
                StructArray::try_new(kv.clone(), children, None).map_err(|e| at.arrow(e))?;
            let nulls = Some(NullBuffer::new(valid.finish())).filter(|n| n.null_count() > 0);
            let map = MapArray::try_new(
                entries.clone(),
                offsets_of(offsets),
                entries_array,
                nulls,
                *ordered,
            )
            .map_err(|e| at.arrow(e))?;
            Ok(Arc::new(map))
        }
        DataType::Struct(fields) => {
            let mut valid = BooleanBufferBuilder::new(values.len());
            let mut children: Vec<Vec<Value>> =
                vec![Vec::with_capacity(values.len()); fields.len()];
            for v in values {
                match unwrap_union(v) {
                    Value::Null => {
                        valid.append(false);
                        for c in &mut children {
                            c.push(Value::Null);
                        }
                    }
                    Value::Record(mut record) => {
                        valid.append(true);
                        for (f, c) in fields.iter().zip(&mut children) {
                            let i = record.iter().position(|(n, _)| n == f.name()).ok_or_else(
                                || {
                                    Error::corrupt(
                                        Some(at.path),
                                        format!(
                                            "column '{}': a nested Avro record without field '{}'",
                                            at.column,
                                            f.name()
                                        ),
                                    )
                                },
                            )?;
                            c.push(std::mem::replace(&mut record[i].1, Value::Null));
                        }
                    }
                    other => return Err(at.bad(&other, t)),
                }
            }
            let arrays = children
                .into_iter()
                .zip(fields.iter())
                .map(|(c, f)| nested_array(c, f.data_type(), at))
                .collect::<Result<Vec<_>>>()?;
            let nulls = Some(NullBuffer::new(valid.finish())).filter(|n| n.null_count() > 0);
            let row =
                StructArray::try_new(fields.clone(), arrays, nulls).map_err(|e| at.arrow(e))?;
            Ok(Arc::new(row))
        }
        t => {
            let datums = values
                .iter()
                .map(|v| datum(v, t, at))
                .collect::<Result<Vec<_>>>()?;
            array_of(&datums, t)
        }
    }
}

/// The key and value of one entry of a map written as an array of records.
fn key_value(pair: Value, at: &Where, t: &DataType) -> Result<(Value, Value)> {
    let Value::Record(fields) = pair else {
        return Err(at.bad(&pair, t));
    };
    let mut key = None;
    let mut value = None;
    for (name, v) in fields {
        match name.as_str() {
            "key" => key = Some(v),
            "value" => value = Some(v),
            _ => {}
        }
    }
    match (key, value) {
        (Some(k), Some(v)) => Ok((k, v)),
        _ => Err(Error::corrupt(
            Some(at.path),
            format!(
                "column '{}': a map entry record without 'key' and 'value'",
                at.column
            ),
        )),
    }
}

/// An offset of a list or map: a batch's nested values beyond `i32` are refused.
fn offset(n: usize, at: &Where) -> Result<i32> {
    i32::try_from(n).map_err(|_| {
        Error::corrupt(
            Some(at.path),
            format!(
                "column '{}': more nested values than one batch holds",
                at.column
            ),
        )
    })
}

fn offsets_of(offsets: Vec<i32>) -> OffsetBuffer<i32> {
    // Built in order from counts, so they never decrease.
    OffsetBuffer::new(offsets.into())
}

/// A big-endian two's complement integer of at most 16 bytes.
fn unscaled(bytes: &[u8]) -> Option<i128> {
    if bytes.is_empty() || bytes.len() > 16 {
        return None;
    }
    let fill = if bytes[0] & 0x80 != 0 { 0xff } else { 0 };
    let mut full = [fill; 16];
    full[16 - bytes.len()..].copy_from_slice(bytes);
    Some(i128::from_be_bytes(full))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unscaled_decimals_are_sign_extended() {
        assert_eq!(unscaled(&[0x01, 0x18]), Some(280));
        assert_eq!(unscaled(&[0xff]), Some(-1));
        assert_eq!(unscaled(&[0xfe, 0xe8]), Some(-280));
        assert_eq!(unscaled(&[]), None);
        assert_eq!(unscaled(&[0; 17]), None);
    }

    /// A file laid out as Paimon's Avro writer lays out arrays, maps with string and with
    /// other keys, multisets and rows (nullable types as unions with null), read back as the
    /// Arrow types Paimon's types map to.
    #[test]
    fn nested_columns_are_read_as_paimon_writes_them() {
        use apache_avro::types::Record;
        use apache_avro::{Schema as AvroSchema, Writer};
        use arrow_cast::display::array_value_to_string;
        use arrow_schema::{Field, Fields, Schema};

        use crate::storage::{MemoryStorage, Storage};

        let avro = AvroSchema::parse_str(
            r#"{"type": "record", "name": "record", "fields": [
              {"name": "k", "type": "int"},
              {"name": "arr", "type": ["null", {"type": "array", "items": ["null", "int"]}],
               "default": null},
              {"name": "m", "type": ["null", {"type": "map", "values": ["null", "int"]}],
               "default": null},
              {"name": "mi", "type": ["null", {"type": "array", "logicalType": "map",
                "items": {"type": "record", "name": "record_mi", "fields": [
                  {"name": "key", "type": "int"},
                  {"name": "value", "type": ["null", "string"], "default": null}]}}],
               "default": null},
              {"name": "bag", "type": ["null", {"type": "map", "values": "int"}],
               "default": null},
              {"name": "r", "type": ["null", {"type": "record", "name": "record_r", "fields": [
                  {"name": "a", "type": ["null", "int"], "default": null},
                  {"name": "tags", "type": ["null", {"type": "array",
                    "items": ["null", "string"]}], "default": null}]}], "default": null}]}"#,
        )
        .unwrap();
        let some = |v: Value| Value::Union(1, Box::new(v));
        let null = || Value::Union(0, Box::new(Value::Null));
        let kv = |k: i32, v: Option<&str>| {
            Value::Record(vec![
                ("key".into(), Value::Int(k)),
                (
                    "value".into(),
                    v.map_or_else(null, |v| some(Value::String(v.into()))),
                ),
            ])
        };
        let mut w = Writer::new(&avro, Vec::new());
        for k in 0..3 {
            let mut r = Record::new(&avro).unwrap();
            r.put("k", Value::Int(k));
            if k == 1 {
                for c in ["arr", "m", "mi", "bag", "r"] {
                    r.put(c, null());
                }
            } else {
                r.put(
                    "arr",
                    some(Value::Array(vec![
                        some(Value::Int(k)),
                        null(),
                        some(Value::Int(7)),
                    ])),
                );
                r.put(
                    "m",
                    some(Value::Map(
                        [
                            ("b".to_string(), some(Value::Int(2))),
                            ("a".to_string(), null()),
                        ]
                        .into_iter()
                        .collect(),
                    )),
                );
                r.put(
                    "mi",
                    some(Value::Array(vec![kv(5, Some("five")), kv(-1, None)])),
                );
                r.put(
                    "bag",
                    some(Value::Map(
                        [("x".to_string(), Value::Int(3))].into_iter().collect(),
                    )),
                );
                r.put(
                    "r",
                    some(Value::Record(vec![
                        (
                            "a".into(),
                            if k == 0 { null() } else { some(Value::Int(k)) },
                        ),
                        (
                            "tags".into(),
                            some(Value::Array(vec![some(Value::String(format!("t{k}")))])),
                        ),
                    ])),
                );
            }
            w.append(r).unwrap();
        }
        let bytes = w.into_inner().unwrap();

        let map = |key: DataType, value: DataType| crate::types::arrow_map(key, value, true);
        let list = |t: DataType| DataType::List(Arc::new(Field::new("element", t, true)));
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, false),
            Field::new("arr", list(DataType::Int32), true),
            Field::new("m", map(DataType::Utf8, DataType::Int32), true),
            Field::new("mi", map(DataType::Int32, DataType::Utf8), true),
            Field::new("bag", map(DataType::Utf8, DataType::Int32), true),
            Field::new(
                "r",
                DataType::Struct(Fields::from(vec![
                    Field::new("a", DataType::Int32, true),
                    Field::new("tags", list(DataType::Utf8), true),
                ])),
                true,
            ),
        ]));
        assert!(schema.fields().iter().all(|f| is_readable(f.data_type())));
        assert!(!is_flat(schema.field(1).data_type()));
        let storage = MemoryStorage::new();
        storage.put("f.avro", bytes);
        let mut batches = Vec::new();
        read_avro_batches(&storage as &dyn Storage, "f.avro", &schema, 3, |b| {
            batches.push(b);
            Ok(())
        })
        .unwrap();
        assert_eq!(batches.len(), 1);
        let b = &batches[0];
        let row = |i: usize| {
            (1..b.num_columns())
                .map(|c| array_value_to_string(b.column(c), i).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            row(0),
            [
                "[0, , 7]",
                "{a: , b: 2}",
                "{5: five, -1: }",
                "{x: 3}",
                "{a: , tags: [t0]}"
            ]
        );
        assert_eq!(row(1), ["", "", "", "", ""]);
        assert_eq!(b.column(5).null_count(), 1);
        assert_eq!(row(2)[4], "{a: 2, tags: [t2]}");

        // A map entry without its key, and a row where a list belongs, are corrupt input.
        let t = map(DataType::Int32, DataType::Utf8);
        let at = Where {
            path: "f.avro",
            column: "mi",
        };
        let no_key = Value::Array(vec![Value::Record(vec![("value".into(), null())])]);
        assert!(matches!(
            nested_array(vec![no_key], &t, &at).unwrap_err().kind,
            crate::error::ErrorKind::CorruptInput { .. }
        ));
        let wrong = Value::Record(vec![]);
        assert!(nested_array(vec![wrong], &list(DataType::Int32), &at).is_err());
    }

    #[test]
    fn values_become_the_columns_datums_and_mismatches_are_corrupt() {
        let ts = DataType::Timestamp(TimeUnit::Microsecond, None);
        let at = Where {
            path: "f",
            column: "c",
        };
        let v = Value::Union(1, Box::new(Value::TimestampMicros(-1)));
        assert_eq!(
            datum(&v, &ts, &at).unwrap(),
            Datum::Timestamp {
                millis: -1,
                nanos: 999_000
            }
        );
        assert_eq!(
            datum(&Value::Null, &DataType::Int32, &at).unwrap(),
            Datum::Null
        );
        assert!(datum(&Value::Int(300), &DataType::Int8, &at).is_err());
        assert!(datum(&Value::String("x".into()), &DataType::Int64, &at).is_err());
    }
}
