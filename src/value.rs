//! Typed values of Paimon rows ([`Datum`]) and their order-preserving key bytes
//! ([`order_key`]).
//!
//! Shared by the table layer (partitions, manifests' min/max keys and statistics as BinaryRows)
//! and the rewriters (the keys and key statistics of the files a merge writes), so neither
//! depends on the other for them.

use crate::meta::Key;
use crate::types::{DataType, TypeRoot};

/// One typed value of a row.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "kebab-case")]
pub enum Datum {
    /// SQL `NULL`, of any type; sorts before every other value in [`order_key`].
    Null,
    /// A `BOOLEAN`.
    Boolean(bool),
    /// A `TINYINT`.
    TinyInt(i8),
    /// A `SMALLINT`.
    SmallInt(i16),
    /// An `INT`.
    Int(i32),
    /// A `BIGINT`.
    BigInt(i64),
    /// A `FLOAT`; keys order it by IEEE 754 total order.
    Float(f32),
    /// A `DOUBLE`; keys order it by IEEE 754 total order.
    Double(f64),
    /// The unscaled value; the scale comes from the type.
    Decimal(i128),
    /// A `CHAR` or `VARCHAR`/`STRING` value; keys order it by its UTF-8 bytes, unsigned.
    String(String),
    /// A `BINARY` or `VARBINARY`/`BYTES` value; keys order it as unsigned bytes.
    Bytes(Vec<u8>),
    /// Days since the epoch.
    Date(i32),
    /// Milliseconds of the day.
    Time(i32),
    /// Milliseconds since the epoch and the nanoseconds within that millisecond.
    /// Used for both `TIMESTAMP` and `TIMESTAMP WITH LOCAL TIME ZONE`.
    Timestamp {
        /// Milliseconds since 1970-01-01 00:00:00 (may be negative).
        millis: i64,
        /// Nanoseconds within that millisecond (`0..1_000_000`); 0 for precisions up to 3.
        nanos: i32,
    },
}

impl Datum {
    /// Whether this is [`Datum::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, Datum::Null)
    }

    /// The text Paimon puts in a partition path (before escaping).
    pub fn to_partition_string(&self, t: &DataType) -> Option<String> {
        Some(match self {
            Datum::Null => return None,
            Datum::Boolean(b) => b.to_string(),
            Datum::TinyInt(v) => v.to_string(),
            Datum::SmallInt(v) => v.to_string(),
            Datum::Int(v) => v.to_string(),
            Datum::BigInt(v) => v.to_string(),
            Datum::Float(v) => java_float(*v as f64, true),
            Datum::Double(v) => java_float(*v, false),
            Datum::Decimal(u) => {
                let scale = match t.root {
                    TypeRoot::Decimal { scale, .. } => scale as usize,
                    _ => 0,
                };
                decimal_string(*u, scale)
            }
            Datum::String(s) => s.clone(),
            Datum::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
            Datum::Date(d) => date_string(*d),
            Datum::Time(ms) => {
                let s = ms / 1000;
                let mut out = format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
                if ms % 1000 != 0 {
                    out.push_str(&format!(".{:03}", ms % 1000));
                }
                out
            }
            Datum::Timestamp { millis, nanos } => timestamp_string(*millis, *nanos),
        })
    }
}

fn java_float(v: f64, single: bool) -> String {
    if v.fract() == 0.0 && v.abs() < 1e7 {
        format!("{v:.1}")
    } else if single {
        format!("{}", v as f32)
    } else {
        format!("{v}")
    }
}

fn decimal_string(unscaled: i128, scale: usize) -> String {
    let neg = unscaled < 0;
    let digits = unscaled.unsigned_abs().to_string();
    let s = if scale == 0 {
        digits
    } else if digits.len() > scale {
        format!(
            "{}.{}",
            &digits[..digits.len() - scale],
            &digits[digits.len() - scale..]
        )
    } else {
        format!("0.{}{}", "0".repeat(scale - digits.len()), digits)
    };
    if neg {
        format!("-{s}")
    } else {
        s
    }
}

/// Civil date from days since the epoch (proleptic Gregorian), `YYYY-MM-DD`.
fn date_string(days: i32) -> String {
    let (y, m, d) = civil_from_days(days as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn timestamp_string(millis: i64, nanos: i32) -> String {
    let days = millis.div_euclid(86_400_000);
    let ms = millis.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let s = ms / 1000;
    let mut out = format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        s / 3600,
        (s / 60) % 60,
        s % 60
    );
    let frac = (ms % 1000) * 1_000_000 + nanos as i64;
    if frac != 0 {
        let f = format!("{frac:09}");
        out.push('.');
        out.push_str(f.trim_end_matches('0'));
    }
    out
}

/// The order-preserving encoding of typed key values: bytewise comparison of the result equals
/// Paimon's key comparator (field by field, nulls first; integers, dates and timestamps
/// numerically; floats by total order; strings and bytes as unsigned bytes).
pub fn order_key(values: &[Datum]) -> Key {
    let mut out = Vec::with_capacity(values.len() * 9);
    for v in values {
        if v.is_null() {
            out.push(0);
            continue;
        }
        out.push(1);
        let flip64 = |x: i64| ((x as u64) ^ (1 << 63)).to_be_bytes();
        match v {
            Datum::Null => {}
            Datum::Boolean(b) => out.push(*b as u8),
            Datum::TinyInt(x) => out.extend_from_slice(&flip64(*x as i64)),
            Datum::SmallInt(x) => out.extend_from_slice(&flip64(*x as i64)),
            Datum::Int(x) | Datum::Date(x) | Datum::Time(x) => {
                out.extend_from_slice(&flip64(*x as i64))
            }
            Datum::BigInt(x) => out.extend_from_slice(&flip64(*x)),
            Datum::Float(x) => out.extend_from_slice(&total_order(*x as f64)),
            Datum::Double(x) => out.extend_from_slice(&total_order(*x)),
            Datum::Decimal(u) => out.extend_from_slice(&((*u as u128) ^ (1 << 127)).to_be_bytes()),
            Datum::Timestamp { millis, nanos } => {
                out.extend_from_slice(&flip64(*millis));
                out.extend_from_slice(&(*nanos as u32).to_be_bytes());
            }
            Datum::String(s) => escape_bytes(s.as_bytes(), &mut out),
            Datum::Bytes(b) => escape_bytes(b, &mut out),
        }
    }
    Key::from_bytes(out)
}

fn total_order(x: f64) -> [u8; 8] {
    let bits = x.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    ordered.to_be_bytes()
}

/// Escapes 0x00 as 0x00 0xFF and terminates with 0x00 0x00, so a proper prefix sorts first and
/// the next field never bleeds into the comparison.
fn escape_bytes(b: &[u8], out: &mut Vec<u8>) {
    for &x in b {
        out.push(x);
        if x == 0 {
            out.push(0xff);
        }
    }
    out.extend_from_slice(&[0, 0]);
}
