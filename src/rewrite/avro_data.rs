//! Avro data files read as Arrow batches of a given schema: Paimon's `file.format = avro`
//! (often only for level 0, `file.format.per.level = '0:avro'`, a documented setting for
//! faster writes), and the format Paimon's Java writers force for the files of a postpone
//! bucket (pypaimon's too unless the table names a format). The postpone replay reads the
//! batches; the merge reads a Parquet copy ([`super::foreign_data::transcode_to_parquet`]).
//!
//! Records are decoded with the writer schema the file carries ([`crate::avro_file`]: bounded
//! allocations, contained panics) and matched to the wanted columns by name; a column the file
//! lacks is corrupt input naming the file. Flat types only, as Paimon writes them in Avro:
//! booleans, integers, floats, strings, bytes, decimals (bytes or fixed with the `decimal`
//! logical type), dates, times in milliseconds and timestamps in milli-, micro- or
//! nanoseconds; a nested column (array, map, row) is `unsupported`, so a table with one is
//! refused rather than read wrongly. A string or byte value is limited as every Avro value
//! here is (8 MiB, [`crate::avro_file`]).

use apache_avro::types::Value;
use arrow_array::{ArrayRef, RecordBatch};
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
        if !is_flat(f.data_type()) {
            return Err(Error::unsupported(format!(
                "Avro data file '{path}': column '{}' of type {} (this build reads flat Avro \
                 columns only)",
                f.name(),
                f.data_type()
            )));
        }
    }
    let mut source = SequentialRead::new(storage, path, READ_WINDOW)?;
    let width = schema.fields().len();
    let mut columns: Vec<Vec<Datum>> = vec![Vec::with_capacity(BATCH_ROWS); width];
    let mut slots: Vec<Option<usize>> = Vec::new();
    let mut seen = 0u64;
    let mut flush = |columns: &mut Vec<Vec<Datum>>| -> Result<()> {
        if columns[0].is_empty() {
            return Ok(());
        }
        let arrays = columns
            .iter_mut()
            .zip(schema.fields())
            .map(|(values, f)| {
                let a = array_of(values, f.data_type());
                values.clear();
                a
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
            columns[c].push(datum(value, f.data_type(), path, name)?);
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

/// Whether a column of Arrow type `t` can be read from Avro here.
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
fn datum(value: &Value, t: &DataType, path: &str, column: &str) -> Result<Datum> {
    let value = match value {
        Value::Union(_, inner) => inner.as_ref(),
        v => v,
    };
    let bad = || {
        Error::corrupt(
            Some(path),
            format!("column '{column}': Avro value {value:?} for Arrow type {t}"),
        )
    };
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

    #[test]
    fn values_become_the_columns_datums_and_mismatches_are_corrupt() {
        let ts = DataType::Timestamp(TimeUnit::Microsecond, None);
        let v = Value::Union(1, Box::new(Value::TimestampMicros(-1)));
        assert_eq!(
            datum(&v, &ts, "f", "c").unwrap(),
            Datum::Timestamp {
                millis: -1,
                nanos: 999_000
            }
        );
        assert_eq!(
            datum(&Value::Null, &DataType::Int32, "f", "c").unwrap(),
            Datum::Null
        );
        assert!(datum(&Value::Int(300), &DataType::Int8, "f", "c").is_err());
        assert!(datum(&Value::String("x".into()), &DataType::Int64, "f", "c").is_err());
    }
}
