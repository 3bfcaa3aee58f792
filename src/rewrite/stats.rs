//! Value statistics of an output file, read back from the footer the writer just produced.
//!
//! Paimon keeps per-column min/max/null counts in each manifest entry (`_VALUE_STATS`) and
//! trusts them for filter pushdown, so wrong bounds silently drop rows. These come straight from
//! the Parquet column chunk statistics, aggregated over row groups; a column where any row
//! group lacks statistics gets none (absent stats are always safe). Values are Parquet's
//! physical values; the table layer turns them into Paimon's BinaryRow (and applies Paimon's
//! `truncate(16)` for strings, which is a looser bound and therefore still correct).

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Int16Type, Int32Type, Int64Type, Int8Type, Time32MillisecondType,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Schema, TimeUnit};
use parquet::basic::{LogicalType, Type as PhysicalType};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::statistics::Statistics;

/// A physical Parquet value.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "kebab-case")]
pub enum StatValue {
    /// BOOLEAN.
    Boolean(bool),
    /// INT32 (also DATE, TINYINT, SMALLINT and decimals of precision ≤ 9).
    Int(i32),
    /// INT64 (also timestamps, in the column's unit, and decimals of precision ≤ 18).
    Long(i64),
    /// FLOAT.
    Float(f32),
    /// DOUBLE.
    Double(f64),
    /// BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY (strings as UTF-8, decimals big-endian).
    Bytes(Vec<u8>),
}

/// Statistics of one top-level column of an output file.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ColumnStats {
    /// Name of the top-level column in the file's Parquet schema.
    pub column: String,
    /// Nulls summed over all row groups; `None` when any row group does not record a null
    /// count, and always `None` for nested columns.
    pub null_count: Option<u64>,
    /// Smallest non-null value over all row groups, in Parquet's order for the column (signed
    /// for decimals stored as bytes, unsigned for other bytes). `None` when the column has no
    /// non-null value, is nested or INT96, or any row group lacks bounds.
    pub min: Option<StatValue>,
    /// Largest non-null value, under the same rules as `min`.
    pub max: Option<StatValue>,
    /// Both bounds are the actual extreme values (not truncated bounds); `false` whenever
    /// `min`/`max` are `None`.
    pub exact: bool,
    /// For an INT64 timestamp column, the unit its values count (`Long` bounds are in it).
    #[serde(default)]
    pub timestamp_unit: Option<TimestampUnit>,
}

/// The unit of a Parquet timestamp column's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimestampUnit {
    /// Milliseconds since the epoch.
    Millis,
    /// Microseconds since the epoch.
    Micros,
    /// Nanoseconds since the epoch.
    Nanos,
}

fn is_signed_bytes(descr: &parquet::schema::types::ColumnDescriptor) -> bool {
    matches!(descr.logical_type_ref(), Some(LogicalType::Decimal { .. }))
}

/// Orders two byte values as Parquet does: unsigned bytes, or signed big-endian for decimals.
fn bytes_lt(a: &[u8], b: &[u8], signed: bool) -> bool {
    if signed {
        let neg = |x: &[u8]| x.first().is_some_and(|b| *b & 0x80 != 0);
        match (neg(a), neg(b)) {
            (true, false) => return true,
            (false, true) => return false,
            _ => {}
        }
        // Same sign: sign-extend to equal length, then compare unsigned.
        let width = a.len().max(b.len());
        let fill = if neg(a) { 0xff } else { 0x00 };
        let ext = |x: &[u8]| {
            let mut v = vec![fill; width - x.len()];
            v.extend_from_slice(x);
            v
        };
        return ext(a) < ext(b);
    }
    a < b
}

fn value(stats: &Statistics, min: bool) -> Option<StatValue> {
    macro_rules! pick {
        ($s:expr, $variant:ident) => {
            if min {
                $s.min_opt().copied().map(StatValue::$variant)
            } else {
                $s.max_opt().copied().map(StatValue::$variant)
            }
        };
    }
    match stats {
        Statistics::Boolean(s) => pick!(s, Boolean),
        Statistics::Int32(s) => pick!(s, Int),
        Statistics::Int64(s) => pick!(s, Long),
        Statistics::Float(s) => pick!(s, Float),
        Statistics::Double(s) => pick!(s, Double),
        Statistics::ByteArray(_) | Statistics::FixedLenByteArray(_) => {
            let b = if min {
                stats.min_bytes_opt()
            } else {
                stats.max_bytes_opt()
            };
            b.map(|b| StatValue::Bytes(b.to_vec()))
        }
        Statistics::Int96(_) => None,
    }
}

fn less(a: &StatValue, b: &StatValue, signed_bytes: bool) -> bool {
    match (a, b) {
        (StatValue::Boolean(a), StatValue::Boolean(b)) => !a & b,
        (StatValue::Int(a), StatValue::Int(b)) => a < b,
        (StatValue::Long(a), StatValue::Long(b)) => a < b,
        (StatValue::Float(a), StatValue::Float(b)) => a < b,
        (StatValue::Double(a), StatValue::Double(b)) => a < b,
        (StatValue::Bytes(a), StatValue::Bytes(b)) => bytes_lt(a, b, signed_bytes),
        _ => false,
    }
}

/// Statistics per top-level column of `metadata` (nested columns get none).
pub(crate) fn collect(metadata: &ParquetMetaData) -> Vec<ColumnStats> {
    let descr = metadata.file_metadata().schema_descr();
    let leaves = crate::parquet_io::writer::field_leaves(descr);
    let fields = descr.root_schema().get_fields();
    fields
        .iter()
        .zip(leaves)
        .map(|(field, leaves)| {
            let mut out = ColumnStats {
                column: field.name().to_string(),
                null_count: None,
                min: None,
                max: None,
                exact: false,
                timestamp_unit: None,
            };
            let leaf = leaves.start;
            let primitive = leaves.len() == 1 && field.is_primitive();
            if !primitive {
                return out;
            }
            let column = descr.column(leaf);
            out.timestamp_unit = match column.logical_type_ref() {
                Some(LogicalType::Timestamp(t)) => Some(match t.unit {
                    parquet::basic::TimeUnit::MILLIS => TimestampUnit::Millis,
                    parquet::basic::TimeUnit::MICROS => TimestampUnit::Micros,
                    parquet::basic::TimeUnit::NANOS => TimestampUnit::Nanos,
                }),
                _ => None,
            };
            let signed = is_signed_bytes(&column);
            let bool_or_num = column.physical_type() != PhysicalType::INT96;
            let (mut nulls, mut min, mut max, mut exact) = (Some(0u64), None, None, true);
            let mut complete = bool_or_num;
            let mut any_values = false;
            for rg in metadata.row_groups() {
                let chunk = rg.column(leaf);
                // Statistics that count more nulls than the chunk holds values are not
                // statistics of it (a damaged or hostile footer, which a fast copy carries
                // over unread): taken as absent, so no reader skips by them.
                let values = u64::try_from(chunk.num_values()).unwrap_or(0);
                let Some((s, non_null)) = chunk.statistics().and_then(|s| {
                    let non_null = values.checked_sub(s.null_count_opt().unwrap_or(0))?;
                    Some((s, non_null))
                }) else {
                    complete = false;
                    nulls = None;
                    break;
                };
                nulls = match (nulls, s.null_count_opt()) {
                    (Some(a), Some(b)) => a.checked_add(b),
                    _ => None,
                };
                if non_null == 0 && s.null_count_opt().is_some() {
                    continue; // all nulls: no bounds to merge
                }
                any_values = true;
                match (value(s, true), value(s, false)) {
                    (Some(lo), Some(hi)) => {
                        exact &= s.min_is_exact() && s.max_is_exact();
                        if min.as_ref().is_none_or(|m| less(&lo, m, signed)) {
                            min = Some(lo);
                        }
                        if max.as_ref().is_none_or(|m| less(m, &hi, signed)) {
                            max = Some(hi);
                        }
                    }
                    _ => complete = false,
                }
            }
            out.null_count = nulls;
            if complete && any_values {
                out.min = min;
                out.max = max;
                out.exact = exact;
            }
            out
        })
        .collect()
}

/// Value statistics of a file gathered from the rows written into it, for formats whose
/// writer does not hand back Parquet-style column statistics (ORC): the same
/// [`ColumnStats`] [`collect`] reads from a Parquet footer, with exact bounds for the types
/// the table layer keeps bounds of, and null counts for every column.
pub(crate) struct ValueStatsCollector {
    columns: Vec<TopStats>,
}

impl ValueStatsCollector {
    pub(crate) fn new(schema: &Schema) -> Self {
        ValueStatsCollector {
            columns: schema
                .fields()
                .iter()
                .map(|f| TopStats::new(f.name(), f.data_type()))
                .collect(),
        }
    }

    /// Folds in `batch`, whose columns are the schema's (dictionary arrays are read as their
    /// values).
    pub(crate) fn add(&mut self, batch: &RecordBatch) {
        for (c, a) in self.columns.iter_mut().zip(batch.columns()) {
            match a.data_type() {
                DataType::Dictionary(_, values) => match arrow_cast::cast(a, values) {
                    Ok(plain) => c.add(plain.as_ref()),
                    // Undecodable here: no bounds rather than wrong ones.
                    Err(_) => c.bounded = false,
                },
                _ => c.add(a.as_ref()),
            }
        }
    }

    pub(crate) fn finish(self) -> Vec<ColumnStats> {
        self.columns.into_iter().map(TopStats::finish).collect()
    }
}

/// Statistics of one top-level column, gathered from its values.
struct TopStats {
    out: ColumnStats,
    t: DataType,
    /// Bounds are kept for this type.
    bounded: bool,
}

impl TopStats {
    fn new(name: &str, t: &DataType) -> Self {
        let timestamp_unit = match t {
            DataType::Timestamp(TimeUnit::Millisecond, _) => Some(TimestampUnit::Millis),
            DataType::Timestamp(TimeUnit::Microsecond, _) => Some(TimestampUnit::Micros),
            DataType::Timestamp(TimeUnit::Nanosecond, _) => Some(TimestampUnit::Nanos),
            _ => None,
        };
        let bounded = matches!(
            t,
            DataType::Boolean
                | DataType::Int8
                | DataType::Int16
                | DataType::Int32
                | DataType::Int64
                | DataType::Date32
                | DataType::Time32(TimeUnit::Millisecond)
                | DataType::Utf8
                | DataType::Binary
                | DataType::Decimal128(..)
        ) || timestamp_unit.is_some();
        TopStats {
            out: ColumnStats {
                column: name.to_string(),
                null_count: Some(0),
                min: None,
                max: None,
                exact: bounded,
                timestamp_unit,
            },
            t: t.clone(),
            bounded,
        }
    }

    fn add(&mut self, a: &dyn Array) {
        if let Some(n) = self.out.null_count.as_mut() {
            *n += a.logical_null_count() as u64;
        }
        if !self.bounded {
            return;
        }
        let nulls = a.logical_nulls();
        let valid = |i: usize| nulls.as_ref().is_none_or(|v| v.is_valid(i));
        let mut see = |v: StatValue| {
            if self.out.min.as_ref().is_none_or(|m| stat_lt(&v, m)) {
                self.out.min = Some(v.clone());
            }
            if self.out.max.as_ref().is_none_or(|m| stat_lt(m, &v)) {
                self.out.max = Some(v);
            }
        };
        macro_rules! each {
            ($arr:expr, $f:expr) => {
                for i in (0..a.len()).filter(|&i| valid(i)) {
                    see($f($arr.value(i)));
                }
            };
        }
        match &self.t {
            DataType::Boolean => each!(a.as_boolean(), StatValue::Boolean),
            DataType::Int8 => each!(a.as_primitive::<Int8Type>(), |v: i8| StatValue::Int(
                v.into()
            )),
            DataType::Int16 => each!(a.as_primitive::<Int16Type>(), |v: i16| StatValue::Int(
                v.into()
            )),
            DataType::Int32 => each!(a.as_primitive::<Int32Type>(), StatValue::Int),
            DataType::Date32 => each!(a.as_primitive::<Date32Type>(), StatValue::Int),
            DataType::Time32(_) => each!(a.as_primitive::<Time32MillisecondType>(), StatValue::Int),
            DataType::Int64 => each!(a.as_primitive::<Int64Type>(), StatValue::Long),
            DataType::Utf8 => each!(a.as_string::<i32>(), |v: &str| StatValue::Bytes(
                v.as_bytes().to_vec()
            )),
            DataType::Binary => each!(a.as_binary::<i32>(), |v: &[u8]| StatValue::Bytes(
                v.to_vec()
            )),
            DataType::Decimal128(..) => each!(a.as_primitive::<Decimal128Type>(), |v: i128| {
                StatValue::Bytes(v.to_be_bytes().to_vec())
            }),
            DataType::Timestamp(TimeUnit::Millisecond, _) => each!(
                a.as_primitive::<TimestampMillisecondType>(),
                StatValue::Long
            ),
            DataType::Timestamp(TimeUnit::Microsecond, _) => each!(
                a.as_primitive::<TimestampMicrosecondType>(),
                StatValue::Long
            ),
            DataType::Timestamp(TimeUnit::Nanosecond, _) => {
                each!(a.as_primitive::<TimestampNanosecondType>(), StatValue::Long)
            }
            _ => {}
        }
    }

    fn finish(self) -> ColumnStats {
        let mut out = self.out;
        if out.min.is_none() || !self.bounded {
            out.exact = false;
            out.min = None;
            out.max = None;
        }
        out
    }
}

/// The order of two bounds of one column (decimals as signed 16-byte big-endian values).
fn stat_lt(a: &StatValue, b: &StatValue) -> bool {
    match (a, b) {
        (StatValue::Boolean(a), StatValue::Boolean(b)) => !a & b,
        (StatValue::Int(a), StatValue::Int(b)) => a < b,
        (StatValue::Long(a), StatValue::Long(b)) => a < b,
        (StatValue::Bytes(a), StatValue::Bytes(b)) if a.len() == 16 && b.len() == 16 => {
            i128::from_be_bytes(a.as_slice().try_into().unwrap_or([0; 16]))
                < i128::from_be_bytes(b.as_slice().try_into().unwrap_or([0; 16]))
        }
        (StatValue::Bytes(a), StatValue::Bytes(b)) => a < b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use parquet::file::metadata::{
        ColumnChunkMetaData, FileMetaData, ParquetMetaData, RowGroupMetaData,
    };
    use parquet::file::statistics::Statistics;
    use parquet::schema::parser::parse_message_type;
    use parquet::schema::types::SchemaDescriptor;

    use super::*;

    /// A file of one INT32 column `v` in one row group of `values` values, whose chunk
    /// records `stats`.
    fn metadata(values: i64, stats: Statistics) -> ParquetMetaData {
        let schema = parse_message_type("message m { optional int32 v; }").unwrap();
        let descr = Arc::new(SchemaDescriptor::new(Arc::new(schema)));
        let chunk = ColumnChunkMetaData::builder(descr.column(0))
            .set_num_values(values)
            .set_statistics(stats)
            .build()
            .unwrap();
        let rg = RowGroupMetaData::builder(descr.clone())
            .set_num_rows(values)
            .set_column_metadata(vec![chunk])
            .build()
            .unwrap();
        let file = FileMetaData::new(1, values, None, None, descr, None);
        ParquetMetaData::new(file, vec![rg])
    }

    #[test]
    fn statistics_counting_more_nulls_than_values_are_taken_as_absent() {
        // Found by the `parquet_append` fuzz target: a fast copy carries such a footer over
        // unread, and the subtraction of the null count overflowed.
        let lying = collect(&metadata(
            5,
            Statistics::int32(Some(1), Some(9), None, Some(7), false),
        ));
        assert_eq!(
            (lying[0].null_count, &lying[0].min, &lying[0].max),
            (None, &None, &None)
        );
        let honest = collect(&metadata(
            5,
            Statistics::int32(Some(1), Some(9), None, Some(2), false),
        ));
        assert_eq!(honest[0].null_count, Some(2));
        assert_eq!(honest[0].min, Some(StatValue::Int(1)));
    }
}
