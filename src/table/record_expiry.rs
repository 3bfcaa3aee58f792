//! Which files of a primary-key bucket hold rows past `record-level.expire-time`, from the
//! smallest value of the time field in their manifest value statistics (compaction.md
//! "Record-level expiry"). The planner rewrites such files instead of upgrading them, and a
//! full compaction whose bucket is one run at the max level rewrites them one by one, so that
//! expired rows leave the table even where nothing else would rewrite their file (Paimon
//! does this since 1.1; 1.0 only dropped expired rows from files it merged anyway).
//!
//! A file counts as expired only on evidence: a file whose statistics do not cover the time
//! field (dense statistics without it, a column added after the file was written, a null
//! minimum) is not.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::binary_row::Datum;
use super::scan::{LiveFile, Table};
use super::schema::{TableSchema, TypeRoot};
use crate::error::{Error, Result};
use crate::options::RecordLevelExpire;
use crate::storage::Storage;

/// How a time field's value reads as seconds, by its type in the latest schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TimeKind {
    Int,
    BigInt,
    Timestamp,
}

/// Record-level expiry of a table, checked against its latest schema.
pub(crate) struct TableExpiry<'a> {
    setting: &'a RecordLevelExpire,
    /// Field id of the time field.
    field_id: i32,
    kind: TimeKind,
}

impl<'a> TableExpiry<'a> {
    /// The table's expiry, or `None` without one. A time field that is not a column of the
    /// latest schema, or whose type holds no time, is an invalid option: Paimon's writers
    /// refuse such a table, and so does the job, before anything is read or written.
    pub(crate) fn of(table: &'a Table) -> Result<Option<Self>> {
        let Some(setting) = table.options.record_level_expire.as_ref() else {
            return Ok(None);
        };
        const KEY: &str = "record-level.time-field";
        let name = setting.time_field.as_str();
        let field = table
            .schema
            .fields
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| Error::invalid_option(KEY, name, "is not a column of the table"))?;
        let kind = match field.data_type.root {
            TypeRoot::Int => TimeKind::Int,
            TypeRoot::BigInt => TimeKind::BigInt,
            TypeRoot::Timestamp { .. } | TypeRoot::LocalZonedTimestamp { .. } => {
                TimeKind::Timestamp
            }
            ref other => {
                return Err(Error::invalid_option(
                    KEY,
                    name,
                    format!(
                        "is a column of type {other:?}; record-level expiry needs an INT, \
                         BIGINT or TIMESTAMP column"
                    ),
                ))
            }
        };
        Ok(Some(TableExpiry {
            setting,
            field_id: field.id,
            kind,
        }))
    }

    /// The names of the files of `files` whose smallest time has expired at `now_ms`.
    pub(crate) fn expired_files(
        &self,
        storage: &dyn Storage,
        table: &Table,
        files: &[LiveFile],
        now_ms: i64,
    ) -> Result<BTreeSet<String>> {
        let mut out = BTreeSet::new();
        for l in files {
            if let Some(seconds) = self.min_seconds(storage, table, l)? {
                if self.setting.has_expired(seconds, now_ms) {
                    out.insert(l.entry.file.file_name.clone());
                }
            }
        }
        Ok(out)
    }

    /// The smallest time of a file in seconds, when its statistics give one.
    fn min_seconds(
        &self,
        storage: &dyn Storage,
        table: &Table,
        l: &LiveFile,
    ) -> Result<Option<i64>> {
        let d = &l.entry.file;
        let evolved: Option<Arc<TableSchema>> =
            table
                .schema_versions
                .evolved(storage, &table.paths, &table.schema, d.schema_id)?;
        let schema = evolved.as_deref().unwrap_or(&table.schema);
        let Some(field) = schema.fields.iter().find(|f| f.id == self.field_id) else {
            return Ok(None);
        };
        // Dense statistics list their columns by name; otherwise every column has a slot.
        let index = match &d.value_stats_cols {
            Some(cols) => cols.iter().position(|c| *c == field.name),
            None => schema.fields.iter().position(|f| f.id == self.field_id),
        };
        let Some(index) = index else {
            return Ok(None);
        };
        let what = format!("value statistics of file '{}'", d.file_name);
        let min =
            d.value_stats
                .min_values
                .decode_field(index, &field.data_type, &l.source, &what)?;
        Ok(min.and_then(|d| self.seconds(d)))
    }

    /// A statistic of the time field as seconds, read with the latest schema's type.
    fn seconds(&self, d: Datum) -> Option<i64> {
        match (self.kind, d) {
            (TimeKind::Int, Datum::Int(v)) => Some(v.into()),
            // A BIGINT file value under an INT column: Paimon casts the statistic to INT,
            // which a value outside INT's range does not survive.
            (TimeKind::Int, Datum::BigInt(v)) => i32::try_from(v).ok().map(i64::from),
            (TimeKind::BigInt, Datum::Int(v)) => Some(RecordLevelExpire::bigint_seconds(v.into())),
            (TimeKind::BigInt, Datum::BigInt(v)) => Some(RecordLevelExpire::bigint_seconds(v)),
            (TimeKind::Timestamp, Datum::Timestamp { millis, .. }) => {
                Some(RecordLevelExpire::millis_seconds(millis))
            }
            // Null, or a column whose type changed to one without a common reading: no
            // evidence.
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::binary_row::BinaryRow;
    use crate::table::schema::DataType;

    fn of_root(root: TypeRoot) -> DataType {
        DataType {
            root,
            nullable: true,
        }
    }

    #[test]
    fn a_single_field_decodes_whatever_the_other_fields_hold() {
        let types = [
            of_root(TypeRoot::VarChar { length: 100 }),
            of_root(TypeRoot::Int),
            of_root(TypeRoot::Timestamp { precision: 6 }),
        ];
        let row = BinaryRow::encode(
            &[
                Datum::String("a string longer than seven bytes".into()),
                Datum::Int(7),
                Datum::Timestamp {
                    millis: 1_700_000_000_123,
                    nanos: 456_000,
                },
            ],
            &types,
        )
        .unwrap();
        let int = row.decode_field(1, &types[1], "f", "stats").unwrap();
        assert_eq!(int, Some(Datum::Int(7)));
        let ts = row.decode_field(2, &types[2], "f", "stats").unwrap();
        assert!(matches!(
            ts,
            Some(Datum::Timestamp {
                millis: 1_700_000_000_123,
                ..
            })
        ));
        assert_eq!(row.decode_field(3, &types[1], "f", "stats").unwrap(), None);
    }
}
