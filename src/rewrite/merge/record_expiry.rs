//! Record-level expiry in the merge (`record-level.expire-time`, compaction.md "Record-level
//! expiry"): rows of the inputs being rewritten whose time field has expired are dropped
//! before the merge engine sees them, as Paimon's compaction readers drop them.
//!
//! A row is kept when its time, in seconds, is not expired at the job's clock
//! ([`RecordLevelExpire::has_expired`]; "now" is the merge request's `creation_time_ms`, as
//! the core reads no clock). A row whose time is null is kept, as Paimon has done since 1.1
//! (1.0 failed the compaction).
//!
//! Dropping happens per input row, before merging: when a key's newest record has expired and
//! an older one has not, the older one is the result, and an expired retraction retracts
//! nothing. Files only upgraded to another level keep their rows, and the files above the
//! output that lookups read are read whole, so that deletion-vector marks and lookup
//! changelog see the rows readers still see.

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, BooleanArray, RecordBatch};
use arrow_schema::{DataType, Schema, TimeUnit};

use crate::error::{Error, Result};
use crate::options::RecordLevelExpire;

/// How the time column's values read as seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TimeKind {
    /// INT: seconds.
    Seconds32,
    /// BIGINT: [`RecordLevelExpire::bigint_seconds`].
    SecondsOrMillis64,
    /// TIMESTAMP / TIMESTAMP_LTZ in the given unit.
    Instant(TimeUnit),
}

impl TimeKind {
    fn of(data_type: &DataType) -> Option<Self> {
        match data_type {
            DataType::Int32 => Some(TimeKind::Seconds32),
            DataType::Int64 => Some(TimeKind::SecondsOrMillis64),
            DataType::Timestamp(unit, _) => Some(TimeKind::Instant(*unit)),
            _ => None,
        }
    }
}

/// Milliseconds (rounded down) of a timestamp value in `unit`.
fn instant_millis(v: i64, unit: TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => v.saturating_mul(1000),
        TimeUnit::Millisecond => v,
        TimeUnit::Microsecond => v.div_euclid(1000),
        TimeUnit::Nanosecond => v.div_euclid(1_000_000),
    }
}

/// The expiry of one merge: which column holds the time and when "now" is.
#[derive(Clone, Debug)]
pub(super) struct RecordExpiry {
    column: usize,
    kind: TimeKind,
    setting: RecordLevelExpire,
    now_ms: i64,
}

impl RecordExpiry {
    /// The expiry of a merge in `schema` (the merge's data-file schema) at `now_ms`, or
    /// `None` without one. A time field that is not a value column of the schema, or of a
    /// type without a time, is an invalid option (Paimon's writer refuses such a table).
    pub(super) fn new(
        setting: Option<&RecordLevelExpire>,
        schema: &Schema,
        value_columns: &[usize],
        now_ms: i64,
    ) -> Result<Option<Self>> {
        let Some(setting) = setting else {
            return Ok(None);
        };
        const KEY: &str = "record-level.time-field";
        let name = setting.time_field.as_str();
        let column = value_columns
            .iter()
            .copied()
            .find(|&c| schema.field(c).name() == name)
            .ok_or_else(|| Error::invalid_option(KEY, name, "is not a column of the table"))?;
        let data_type = schema.field(column).data_type();
        let kind = TimeKind::of(data_type).ok_or_else(|| {
            Error::invalid_option(
                KEY,
                name,
                format!(
                    "is a column of type {data_type}; record-level expiry needs an INT, BIGINT \
                     or TIMESTAMP column"
                ),
            )
        })?;
        Ok(Some(RecordExpiry {
            column,
            kind,
            setting: setting.clone(),
            now_ms,
        }))
    }

    /// The rows of `batch` that have not expired, and how many were dropped.
    pub(super) fn retain(&self, batch: RecordBatch, path: &str) -> Result<(RecordBatch, u64)> {
        let col = batch.column(self.column);
        // INT, BIGINT and every timestamp unit as their raw 64-bit values; the kind says how
        // each reads as seconds.
        let raw = arrow_cast::cast(col, &DataType::Int64).map_err(|e| {
            Error::internal(format!(
                "'{path}': the time column of record-level expiry decoded as {}: {e}",
                col.data_type()
            ))
        })?;
        let seconds = |t: i64| match self.kind {
            TimeKind::Seconds32 => t,
            TimeKind::SecondsOrMillis64 => RecordLevelExpire::bigint_seconds(t),
            TimeKind::Instant(unit) => RecordLevelExpire::millis_seconds(instant_millis(t, unit)),
        };
        let keep: BooleanArray = raw
            .as_primitive::<Int64Type>()
            .iter()
            .map(|v| Some(!v.is_some_and(|t| self.setting.has_expired(seconds(t), self.now_ms))))
            .collect();
        let kept = keep.true_count();
        let dropped = (batch.num_rows() - kept) as u64;
        if dropped == 0 {
            return Ok((batch, 0));
        }
        let batch = arrow_select::filter::filter_record_batch(&batch, &keep)
            .map_err(|e| Error::internal(format!("'{path}': dropping expired rows: {e}")))?;
        Ok((batch, dropped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(expire_seconds: i64) -> RecordLevelExpire {
        RecordLevelExpire {
            expire_seconds,
            time_field: "t".into(),
        }
    }

    #[test]
    fn a_row_expires_strictly_after_its_time_plus_the_expire_time() {
        // kept while now <= t + expire
        assert!(!setting(10).has_expired(100, 110_999));
        assert!(setting(10).has_expired(100, 111_000));
        // no overflow far in the future or the past
        assert!(!setting(i64::MAX).has_expired(i64::MAX, i64::MAX));
        assert!(setting(0).has_expired(i64::MIN, 0));
    }

    #[test]
    fn bigint_times_are_seconds_below_ten_to_the_twelfth_and_millis_from_it() {
        let s = RecordLevelExpire::bigint_seconds;
        assert_eq!(s(1_700_000_000), 1_700_000_000);
        assert_eq!(s(999_999_999_999), 999_999_999_999);
        assert_eq!(s(1_700_000_000_123), 1_700_000_000);
    }

    #[test]
    fn instants_round_down_to_millis_then_truncate_to_seconds() {
        let s = |v, unit| RecordLevelExpire::millis_seconds(instant_millis(v, unit));
        assert_eq!(instant_millis(-1, TimeUnit::Microsecond), -1);
        assert_eq!(s(-1, TimeUnit::Microsecond), 0);
        assert_eq!(s(-1_500, TimeUnit::Millisecond), -1);
        assert_eq!(s(2, TimeUnit::Second), 2);
        assert_eq!(s(3_999_999_999, TimeUnit::Nanosecond), 3);
    }
}
