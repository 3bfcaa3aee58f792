//! `merge-engine = partial-update`: each non-null field of a newer record overwrites the
//! field; nulls leave it as it was.
//!
//! Retract records are refused unless `ignore-delete` (skip them) or
//! `partial-update.remove-record-on-delete` (a `-D` clears the row and the result is a `-D`
//! until a later record starts it again) says what to do, as Paimon does. Sequence groups
//! (`fields.<f>.sequence-group`) merge per group and are not supported by this build: such a
//! table is refused with an `unsupported` error before anything is read.

use super::{Cell, Columns, Merged, Record, Values};
use crate::error::{Error, Result};
use crate::options::CoreOptions;
use crate::rewrite::merge::kv_format::RowKind;

pub(crate) struct PartialUpdate {
    ignore_delete: bool,
    remove_record_on_delete: bool,
    columns: usize,
    cells: Vec<Cell>,
}

impl PartialUpdate {
    pub(crate) fn new(
        options: &CoreOptions,
        columns: &[(String, arrow_schema::DataType)],
    ) -> Result<Self> {
        // Paimon validates aggregate-function names for partial-update tables too: a name it
        // does not know (e.g. the retired `count`) makes the table invalid, not unsupported.
        super::aggregate::check_function_names(options, columns)?;
        if let Some(k) = options
            .raw
            .keys()
            .find(|k| k.starts_with("fields.") && k.ends_with(".sequence-group"))
        {
            return Err(Error::unsupported(format!(
                "partial-update with sequence groups ('{k}') is not supported by the merge \
                 rewriter"
            )));
        }
        if let Some(k) = options
            .raw
            .keys()
            .find(|k| k.starts_with("fields.") && k.ends_with(".aggregate-function"))
        {
            return Err(Error::unsupported(format!(
                "partial-update with per-field aggregation ('{k}') is not supported by the \
                 merge rewriter"
            )));
        }
        Ok(PartialUpdate {
            ignore_delete: options.ignore_delete,
            remove_record_on_delete: options.partial_update_remove_record_on_delete,
            columns: columns.len(),
            cells: Vec::new(),
        })
    }

    pub(crate) fn merge(
        &mut self,
        records: &[Record],
        cols: &dyn Columns,
    ) -> Result<Option<Merged>> {
        self.cells.clear();
        self.cells.resize(self.columns, Cell::NULL);
        let mut last: Option<&Record> = None;
        let mut deleted: Option<&Record> = None;
        for r in records {
            if r.kind.is_retract() {
                if self.ignore_delete {
                    continue;
                }
                if self.remove_record_on_delete && r.kind == RowKind::Delete {
                    self.cells.iter_mut().for_each(|c| *c = Cell::NULL);
                    deleted = Some(r);
                    last = Some(r);
                    continue;
                }
                return Err(Error::unsupported(format!(
                    "'{}' holds a {:?} record: partial-update cannot accept delete records \
                     unless 'ignore-delete' or 'partial-update.remove-record-on-delete' is set",
                    cols.file_of(r),
                    r.kind
                )));
            }
            deleted = None;
            last = Some(r);
            for (j, cell) in self.cells.iter_mut().enumerate() {
                if !cols.value(r.slot, j).is_null(r.row) {
                    *cell = Cell::of(r);
                }
            }
        }
        let Some(last) = last else {
            return Ok(None);
        };
        if let Some(d) = deleted {
            // Readers ignore the values of a `-D`; the delete record's own row keeps the
            // NOT NULL columns (the key) filled.
            return Ok(Some(Merged::of(d, RowKind::Delete)));
        }
        Ok(Some(Merged {
            key: (last.slot, last.row),
            seq: last.seq,
            kind: RowKind::Insert,
            values: Values::Cells(self.cells.clone()),
        }))
    }
}
