//! The values file indexes are built from: each row of an Arrow column as the value Paimon's
//! index writers receive (format.md §6, "File indexes"). Every index type sees the same
//! mapping, so a reader that maps a literal the same way finds what the writer recorded.
//!
//! - Integers, DATE (days) and TIME (milliseconds) are their integer; TINYINT, SMALLINT, INT
//!   and BIGINT keep their width for the indexes that serialize values.
//! - TIMESTAMP and TIMESTAMP_LTZ are the epoch millisecond up to precision 3 and the epoch
//!   microsecond (floored) above, as Paimon's `Timestamp.getMillisecond` and `toMicros`.
//!   Arrow's unit tells the two apart: files store precision up to 3 in seconds or
//!   milliseconds, and above it in micro- or nanoseconds.
//! - FLOAT and DOUBLE are their IEEE bits with one canonical NaN (Java's `floatToIntBits`).
//! - CHAR, VARCHAR and STRING are their UTF-8 bytes, binaries their bytes.
//! - DECIMAL is its unscaled value, where it fits 64 bits (Paimon's `toUnscaledLong`).

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, Time32MillisecondType, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use arrow_array::Array;
use arrow_schema::{DataType, TimeUnit};

use crate::error::{Error, Result};

/// The family of an indexed column: what its values are and how wide they serialize.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum KeyType {
    Bool,
    /// TINYINT: 1 byte.
    Byte,
    /// SMALLINT: 2 bytes.
    Short,
    /// INT, DATE, TIME: 4 bytes.
    Int,
    /// BIGINT, TIMESTAMP: 8 bytes.
    Long,
    Float,
    Double,
    /// CHAR, VARCHAR, STRING.
    Str,
    /// BINARY, VARBINARY.
    Bin,
    /// DECIMAL, as its unscaled value.
    Decimal,
}

/// The family of an Arrow column type, `None` when no Paimon index covers it (nested types).
pub(super) fn key_type(t: &DataType) -> Option<KeyType> {
    Some(match t {
        DataType::Dictionary(_, v) => return key_type(v),
        DataType::Boolean => KeyType::Bool,
        DataType::Int8 => KeyType::Byte,
        DataType::Int16 => KeyType::Short,
        DataType::Int32 | DataType::Date32 | DataType::Time32(TimeUnit::Millisecond) => {
            KeyType::Int
        }
        DataType::Int64 | DataType::Timestamp(_, _) => KeyType::Long,
        DataType::Float32 => KeyType::Float,
        DataType::Float64 => KeyType::Double,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => KeyType::Str,
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => KeyType::Bin,
        DataType::Decimal128(_, _) => KeyType::Decimal,
        _ => return None,
    })
}

/// One value of an indexed column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Key<'a> {
    Bool(bool),
    /// Integers, dates, times, timestamps (mapped as above) and unscaled decimals.
    Int(i64),
    /// A FLOAT's bits, NaN canonical.
    Float(u32),
    /// A DOUBLE's bits, NaN canonical.
    Double(u64),
    /// A string's UTF-8 bytes or a binary's bytes.
    Bytes(&'a [u8]),
}

/// Calls `f` with every row of `col` in order, `None` for a null.
pub(super) fn for_each_key(col: &dyn Array, f: &mut dyn FnMut(Option<Key<'_>>)) -> Result<()> {
    macro_rules! ints {
        ($t:ty, $map:expr) => {
            col.as_primitive::<$t>()
                .iter()
                .for_each(|v| f(v.map(|v| Key::Int($map(v)))))
        };
    }
    match col.data_type() {
        DataType::Dictionary(_, v) => {
            let plain = arrow_cast::cast(col, v)
                .map_err(|e| Error::internal(format!("file index of a dictionary column: {e}")))?;
            return for_each_key(plain.as_ref(), f);
        }
        DataType::Boolean => col.as_boolean().iter().for_each(|v| f(v.map(Key::Bool))),
        DataType::Int8 => ints!(Int8Type, |v: i8| v as i64),
        DataType::Int16 => ints!(Int16Type, |v: i16| v as i64),
        DataType::Int32 => ints!(Int32Type, |v: i32| v as i64),
        DataType::Int64 => ints!(Int64Type, |v: i64| v),
        DataType::Date32 => ints!(Date32Type, |v: i32| v as i64),
        DataType::Time32(TimeUnit::Millisecond) => ints!(Time32MillisecondType, |v: i32| v as i64),
        DataType::Timestamp(TimeUnit::Second, _) => {
            ints!(TimestampSecondType, |v: i64| v.wrapping_mul(1000))
        }
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            ints!(TimestampMillisecondType, |v: i64| v)
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            ints!(TimestampMicrosecondType, |v: i64| v)
        }
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            ints!(TimestampNanosecondType, |v: i64| v.div_euclid(1000))
        }
        DataType::Float32 => col.as_primitive::<Float32Type>().iter().for_each(|v| {
            f(v.map(|v| Key::Float(if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() })))
        }),
        DataType::Float64 => col.as_primitive::<Float64Type>().iter().for_each(|v| {
            f(v.map(|v| {
                Key::Double(if v.is_nan() {
                    0x7ff8_0000_0000_0000
                } else {
                    v.to_bits()
                })
            }))
        }),
        DataType::Decimal128(_, _) => {
            for v in col.as_primitive::<Decimal128Type>().iter() {
                let key = match v {
                    None => None,
                    Some(v) => Some(Key::Int(i64::try_from(v).map_err(|_| {
                        Error::unsupported(format!(
                            "a file index over the decimal {v} (unscaled), which does not fit \
                             64 bits (Paimon's writer fails on it too)"
                        ))
                    })?)),
                };
                f(key);
            }
        }
        DataType::Utf8 => col
            .as_string::<i32>()
            .iter()
            .for_each(|s| f(s.map(|s| Key::Bytes(s.as_bytes())))),
        DataType::LargeUtf8 => col
            .as_string::<i64>()
            .iter()
            .for_each(|s| f(s.map(|s| Key::Bytes(s.as_bytes())))),
        DataType::Utf8View => col
            .as_string_view()
            .iter()
            .for_each(|s| f(s.map(|s| Key::Bytes(s.as_bytes())))),
        DataType::Binary => col
            .as_binary::<i32>()
            .iter()
            .for_each(|b| f(b.map(Key::Bytes))),
        DataType::LargeBinary => col
            .as_binary::<i64>()
            .iter()
            .for_each(|b| f(b.map(Key::Bytes))),
        DataType::BinaryView => col
            .as_binary_view()
            .iter()
            .for_each(|b| f(b.map(Key::Bytes))),
        DataType::FixedSizeBinary(_) => {
            let a = col.as_fixed_size_binary();
            for i in 0..a.len() {
                f(a.is_valid(i).then(|| Key::Bytes(a.value(i))));
            }
        }
        other => {
            return Err(Error::unsupported(format!(
                "a file index over a column of type {other}"
            )))
        }
    }
    Ok(())
}
