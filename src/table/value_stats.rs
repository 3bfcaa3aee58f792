//! `_VALUE_STATS` of a file the job wrote, from the Parquet statistics of its column chunks.
//!
//! Readers prune files with these bounds, so a wrong bound silently drops rows: only bounds
//! that are certainly right are written. A column gets statistics when its Paimon type is
//! boolean, an integer type, DATE, TIME, DECIMAL, TIMESTAMP or TIMESTAMP_LTZ (precision up to
//! 6) or a string, the Parquet bounds are exact and the column's
//! `stats-mode` (`fields.<name>.stats-mode`, else the file's level or changelog mode
//! (`metadata.stats-mode.per.level`, `changelog-file.stats-mode`), else `metadata.stats-mode`,
//! Paimon's default `truncate(16)`) asks for them; a string longer than the truncation length keeps its prefix
//! as the lower bound, and the column is left out when its upper bound would need truncating.
//! Floating-point columns are left out (Parquet bounds skip NaN, Paimon's do not), as are
//! `counts` and `none` columns. The columns written are listed in `_VALUE_STATS_COLS`, so a
//! reader never mistakes one column's bounds for another's.

use super::binary_row::{BinaryRow, Datum};
use super::manifest::SimpleStats;
use super::scan::Table;
use super::schema::{DataField, TypeRoot};
use crate::error::Result;
use crate::rewrite::stats::{ColumnStats, StatValue, TimestampUnit};

/// What a column's `stats-mode` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StatsMode {
    None,
    Counts,
    Full,
    Truncate(usize),
}

fn parse_mode(text: &str) -> StatsMode {
    let t = text.trim().to_ascii_lowercase();
    match t.as_str() {
        "none" => StatsMode::None,
        "counts" => StatsMode::Counts,
        "full" => StatsMode::Full,
        _ => t
            .strip_prefix("truncate(")
            .and_then(|r| r.strip_suffix(')'))
            .and_then(|n| n.trim().parse::<usize>().ok())
            .map_or(StatsMode::None, StatsMode::Truncate),
    }
}

/// A column's mode: `fields.<name>.stats-mode`, else the file's `default` (a per-level or
/// changelog mode, [`crate::options::CoreOptions::stats_mode_for`]), else
/// `metadata.stats-mode`, else `truncate(16)`.
fn mode_of(table: &Table, field: &DataField, default: Option<&str>) -> StatsMode {
    let raw = &table.schema.options;
    raw.get(&format!("fields.{}.stats-mode", field.name))
        .map(String::as_str)
        .or(default)
        .or_else(|| raw.get("metadata.stats-mode").map(String::as_str))
        .map_or(StatsMode::Truncate(16), parse_mode)
}

/// The bounds of one column as Paimon values, or `None` to leave the column out.
fn bounds(field: &DataField, mode: StatsMode, s: &ColumnStats) -> Option<(Datum, Datum)> {
    let (Some(min), Some(max)) = (&s.min, &s.max) else {
        return None;
    };
    if !s.exact {
        return None;
    }
    let pair = |f: &dyn Fn(&StatValue) -> Option<Datum>| Some((f(min)?, f(max)?));
    match &field.data_type.root {
        TypeRoot::Boolean => pair(&|v| match v {
            StatValue::Boolean(b) => Some(Datum::Boolean(*b)),
            _ => None,
        }),
        TypeRoot::TinyInt => pair(&|v| match v {
            StatValue::Int(i) => i8::try_from(*i).ok().map(Datum::TinyInt),
            _ => None,
        }),
        TypeRoot::SmallInt => pair(&|v| match v {
            StatValue::Int(i) => i16::try_from(*i).ok().map(Datum::SmallInt),
            _ => None,
        }),
        TypeRoot::Int => pair(&|v| match v {
            StatValue::Int(i) => Some(Datum::Int(*i)),
            _ => None,
        }),
        TypeRoot::BigInt => pair(&|v| match v {
            StatValue::Long(i) => Some(Datum::BigInt(*i)),
            _ => None,
        }),
        TypeRoot::Date => pair(&|v| match v {
            StatValue::Int(d) => Some(Datum::Date(*d)),
            _ => None,
        }),
        TypeRoot::Time { .. } => pair(&|v| match v {
            StatValue::Int(ms) => Some(Datum::Time(*ms)),
            _ => None,
        }),
        // Paimon's DECIMAL: unscaled values, as INT32, INT64 or big-endian bytes, within the
        // type's precision (a bound beyond it is not one BinaryRow can hold).
        TypeRoot::Decimal { precision, .. } => {
            let limit = 10i128.checked_pow(*precision).unwrap_or(i128::MAX);
            pair(&|v| {
                let unscaled = match v {
                    StatValue::Int(i) => i128::from(*i),
                    StatValue::Long(i) => i128::from(*i),
                    StatValue::Bytes(b) if !b.is_empty() && b.len() <= 16 => {
                        let fill = if b[0] & 0x80 != 0 { 0xff } else { 0 };
                        let mut full = [fill; 16];
                        full[16 - b.len()..].copy_from_slice(b);
                        i128::from_be_bytes(full)
                    }
                    _ => return None,
                };
                (unscaled.unsigned_abs() < limit.unsigned_abs()).then_some(Datum::Decimal(unscaled))
            })
        }
        // TIMESTAMP and TIMESTAMP_LTZ: INT64 values in the unit the column declares (INT96
        // columns have no bounds); a bound the type's precision cannot hold is left out.
        TypeRoot::Timestamp { precision } | TypeRoot::LocalZonedTimestamp { precision } => {
            let per_milli = match s.timestamp_unit? {
                TimestampUnit::Millis => 1,
                TimestampUnit::Micros => 1_000,
                TimestampUnit::Nanos => 1_000_000,
            };
            let precision = *precision;
            pair(&|v| match v {
                StatValue::Long(t) => {
                    let nanos =
                        i32::try_from(t.rem_euclid(per_milli) * (1_000_000 / per_milli)).ok()?;
                    // Up to precision 3 a row holds whole milliseconds only: a bound with more
                    // would be rounded, and an upper bound rounded down is no bound.
                    (precision > 3 || nanos == 0).then(|| Datum::Timestamp {
                        millis: t.div_euclid(per_milli),
                        nanos,
                    })
                }
                _ => None,
            })
        }
        TypeRoot::Char { .. } | TypeRoot::VarChar { .. } => {
            let text = |v: &StatValue| match v {
                StatValue::Bytes(b) => String::from_utf8(b.clone()).ok(),
                _ => None,
            };
            let (lo, hi) = (text(min)?, text(max)?);
            match mode {
                StatsMode::Full => Some((Datum::String(lo), Datum::String(hi))),
                StatsMode::Truncate(n) => {
                    if hi.chars().count() > n {
                        return None;
                    }
                    // A prefix is still a lower bound.
                    let lo: String = lo.chars().take(n).collect();
                    Some((Datum::String(lo), Datum::String(hi)))
                }
                StatsMode::None | StatsMode::Counts => None,
            }
        }
        _ => None,
    }
}

/// `_VALUE_STATS` and `_VALUE_STATS_COLS` of a file of `row_count` rows whose Parquet columns
/// have statistics `columns` (matched to the table's fields by name); `default_mode` is the
/// file's own default mode, when its level or kind has one.
pub fn value_stats(
    table: &Table,
    columns: &[ColumnStats],
    row_count: u64,
    default_mode: Option<&str>,
) -> Result<(SimpleStats, Vec<String>)> {
    let (mut names, mut types, mut mins, mut maxs, mut nulls) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for field in &table.schema.fields {
        let mode = mode_of(table, field, default_mode);
        if matches!(mode, StatsMode::None | StatsMode::Counts) {
            continue;
        }
        let Some(s) = columns.iter().find(|c| c.column == field.name) else {
            continue;
        };
        let Some(null_count) = s.null_count else {
            continue;
        };
        let (lo, hi) = if null_count == row_count && s.min.is_none() && s.max.is_none() {
            (Datum::Null, Datum::Null)
        } else {
            match bounds(field, mode, s) {
                Some(b) => b,
                None => continue,
            }
        };
        names.push(field.name.clone());
        types.push(field.data_type.clone());
        mins.push(lo);
        maxs.push(hi);
        nulls.push(i64::try_from(null_count).ok());
    }
    if names.is_empty() {
        return Ok((SimpleStats::empty(), names));
    }
    Ok((
        SimpleStats {
            min_values: BinaryRow::encode(&mins, &types)?,
            max_values: BinaryRow::encode(&maxs, &types)?,
            null_counts: Some(nulls),
        },
        names,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_modes_parse_as_paimon_spells_them() {
        assert_eq!(parse_mode("truncate(16)"), StatsMode::Truncate(16));
        assert_eq!(parse_mode(" FULL "), StatsMode::Full);
        assert_eq!(parse_mode("counts"), StatsMode::Counts);
        assert_eq!(parse_mode("none"), StatsMode::None);
        assert_eq!(
            parse_mode("truncate(x)"),
            StatsMode::None,
            "unknown: no stats"
        );
    }
}
