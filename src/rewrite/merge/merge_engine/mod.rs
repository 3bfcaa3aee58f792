//! Merge engines (format.md §9): how the records of one key combine into one.
//!
//! The merge hands an engine every record of a key in sequence order (user `sequence.field`
//! values first, then `_SEQUENCE_NUMBER`), as Paimon's sort-merge reader does. An engine never
//! copies values: its result names where each value comes from (a record's row, or a value it
//! computed), and the output builds whole columns from those references at once.

mod aggregate;
mod collection;
mod deduplicate;
mod first_row;
pub(crate) mod hll_sketch;
mod partial_update;
mod product;
mod sequence_group;
pub(crate) mod theta_sketch;

use arrow_array::{Array, ArrayRef};

pub(crate) use aggregate::Aggregate;
pub(crate) use deduplicate::Deduplicate;
pub(crate) use first_row::FirstRow;
pub(crate) use partial_update::PartialUpdate;

use super::kv_format::{datum_at, RowKind};
use crate::error::Result;
use crate::options::{CoreOptions, MergeEngine};
use crate::value::Datum;

/// Where a record was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Input file `file` of the task, physical row `pos`.
    Input { file: usize, pos: u64 },
    /// Higher-level file `file` found by a lookup, physical row `pos`.
    Lookup { file: usize, pos: u64 },
}

/// One record of a key: where its row is (arena slot and row) and its system fields.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Record {
    pub slot: usize,
    pub row: usize,
    pub seq: i64,
    pub kind: RowKind,
    pub level: u32,
    pub origin: Origin,
}

/// Read access to the decoded batches records point into.
pub(crate) trait Columns {
    /// Value column `j` (0-based among the table columns) of the batch in `slot`.
    fn value(&self, slot: usize, j: usize) -> &ArrayRef;
    /// The file a record came from, for error messages.
    fn file_of(&self, record: &Record) -> &str;
}

/// One value of a merged row.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Cell {
    /// The value of `(slot, row)` in the same column.
    Src(usize, usize),
    /// A value the engine computed (or null).
    Val(Datum),
    /// A nested value the engine computed (a collection aggregate's): a one-row array of the
    /// column's type.
    Nested(ArrayRef),
}

impl Cell {
    pub(crate) const NULL: Cell = Cell::Val(Datum::Null);

    pub(crate) fn of(r: &Record) -> Cell {
        Cell::Src(r.slot, r.row)
    }

    pub(crate) fn is_null(&self, cols: &dyn Columns, j: usize) -> bool {
        match self {
            Cell::Src(s, r) => cols.value(*s, j).is_null(*r),
            Cell::Val(d) => d.is_null(),
            Cell::Nested(a) => a.is_null(0),
        }
    }

    /// The value as a one-row array of the column, `None` when null.
    pub(crate) fn nested(&self, cols: &dyn Columns, j: usize) -> Option<ArrayRef> {
        match self {
            Cell::Src(s, r) => {
                let a = cols.value(*s, j);
                (!a.is_null(*r)).then(|| a.slice(*r, 1))
            }
            Cell::Val(_) => None,
            Cell::Nested(a) => (!a.is_null(0)).then(|| a.clone()),
        }
    }

    pub(crate) fn datum(&self, cols: &dyn Columns, j: usize) -> Result<Datum> {
        match self {
            Cell::Src(s, r) => datum_at(cols.value(*s, j).as_ref(), *r),
            Cell::Val(d) => Ok(d.clone()),
            Cell::Nested(a) => datum_at(a.as_ref(), 0),
        }
    }
}

/// The values of a merged row.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Values {
    /// Every value from one record's row.
    Row(usize, usize),
    /// One cell per table column.
    Cells(Vec<Cell>),
}

/// The result of merging one key.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Merged {
    /// A row holding the key (any record of the key).
    pub key: (usize, usize),
    pub seq: i64,
    pub kind: RowKind,
    pub values: Values,
}

impl Merged {
    /// A record as it is (changelog rows of an old value, single-record keys).
    pub(crate) fn of(r: &Record, kind: RowKind) -> Self {
        Merged {
            key: (r.slot, r.row),
            seq: r.seq,
            kind,
            values: Values::Row(r.slot, r.row),
        }
    }
}

/// The table's merge function.
pub(crate) enum MergeFunction {
    /// No merge: every record of a key is kept, in sequence order. The merge of runs into a
    /// temporary run (`run_spill`) uses it, so records meet the table's engine only once, in
    /// the final merge.
    KeepAll,
    Deduplicate(Deduplicate),
    FirstRow(FirstRow),
    PartialUpdate(PartialUpdate),
    Aggregate(Aggregate),
}

impl MergeFunction {
    /// The engine of `options` for a file whose table columns are `columns`
    /// (name, Arrow type). Unsupported options are refused here, before anything is read.
    pub(crate) fn new(
        options: &CoreOptions,
        columns: &[(String, arrow_schema::DataType)],
        primary_keys: &[String],
    ) -> Result<Self> {
        Ok(match options.merge_engine {
            MergeEngine::Deduplicate => MergeFunction::Deduplicate(Deduplicate::new(options)),
            MergeEngine::FirstRow => MergeFunction::FirstRow(FirstRow::new(options)),
            MergeEngine::PartialUpdate => {
                MergeFunction::PartialUpdate(PartialUpdate::new(options, columns, primary_keys)?)
            }
            MergeEngine::Aggregation => {
                MergeFunction::Aggregate(Aggregate::new(options, columns, primary_keys)?)
            }
        })
    }

    /// Whether results always take every value from one record (no per-column cells).
    pub(crate) fn whole_rows(&self) -> bool {
        matches!(
            self,
            MergeFunction::KeepAll | MergeFunction::Deduplicate(_) | MergeFunction::FirstRow(_)
        )
    }

    /// Merges the records of one key (in sequence order); `None` when nothing remains.
    pub(crate) fn merge(
        &mut self,
        records: &[Record],
        cols: &dyn Columns,
    ) -> Result<Option<Merged>> {
        match self {
            MergeFunction::KeepAll => Err(crate::error::Error::internal(
                "a merge that keeps every record has no merged row",
            )),
            MergeFunction::Deduplicate(m) => Ok(m.merge(records)),
            MergeFunction::FirstRow(m) => m.merge(records, cols),
            MergeFunction::PartialUpdate(m) => m.merge(records, cols),
            MergeFunction::Aggregate(m) => m.merge(records, cols),
        }
    }
}
