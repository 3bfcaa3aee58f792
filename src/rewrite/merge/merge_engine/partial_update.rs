//! `merge-engine = partial-update`: each non-null field of a newer record overwrites the
//! field; nulls leave it as it was (format.md §9).
//!
//! Without sequence groups, retract records are refused unless `ignore-delete` (skip them) or
//! `partial-update.remove-record-on-delete` (a `-D` clears the row and the result is a `-D`
//! until a later record starts it again; a `-U` is ignored) says what to do, as Paimon does.
//! This path follows Paimon 1.0 where HEAD differs: HEAD starts a key whose first record is a
//! retract from that record's values and restarts a removed row from the `-D`'s values, where
//! 1.0 (and this build) start from nulls; the two differ only on fields no later record sets.
//!
//! With sequence groups ([`SequenceGroups`]) the merge follows Paimon HEAD's merge function:
//! a group's columns change only with a record whose ordering fields are at least the row's
//! (a record whose ordering fields are all null leaves the group alone); a protected column
//! with an aggregate function folds the input in (`agg`, or `aggReversed` for an input that
//! lost the comparison); a retract record nulls (or retracts, for aggregated columns) the
//! groups it wins; a `-D` that wins a group named by
//! `partial-update.remove-record-on-sequence-group` removes the row. As in HEAD, a key whose
//! first record is a retract starts from that record's values, and a key that saw no insert
//! merges to a `-D`: Paimon 1.0 differs on both (an empty row and a `+I`), which matters only
//! when a compaction does not start at the key's first insert.

use super::aggregate::{self, FieldAgg};
use super::sequence_group::{self, SequenceGroups};
use super::{Cell, Columns, Merged, Record, Values};
use crate::error::{Error, Result};
use crate::options::CoreOptions;
use crate::rewrite::merge::kv_format::RowKind;
use crate::value::Datum;

/// The one aggregate function Paimon HEAD allows on a column that no group protects.
const UNGROUPED_FUNCTION: &str = "last_non_null_value";

pub(crate) struct PartialUpdate {
    ignore_delete: bool,
    remove_record_on_delete: bool,
    columns: usize,
    cells: Vec<Cell>,
    groups: SequenceGroups,
    /// Per column, with sequence groups: its aggregate function (primary-key columns keep
    /// their latest value; ordering fields have none).
    aggs: Vec<Option<FieldAgg>>,
    /// Per group, for the record being merged: `None` when its ordering fields are all null,
    /// else whether the record wins the group.
    wins: Vec<Option<bool>>,
}

impl PartialUpdate {
    pub(crate) fn new(
        options: &CoreOptions,
        columns: &[(String, arrow_schema::DataType)],
        primary_keys: &[String],
    ) -> Result<Self> {
        // Paimon validates aggregate-function names for partial-update tables too: a name it
        // does not know (e.g. the retired `count`) makes the table invalid, not unsupported.
        aggregate::check_function_names(options, columns)?;
        if options.partial_update_remove_record_on_delete && options.ignore_delete {
            return Err(Error::invalid_option(
                "partial-update.remove-record-on-delete",
                "true",
                "conflicts with 'ignore-delete' = true",
            ));
        }
        let names: Vec<String> = columns.iter().map(|(n, _)| n.clone()).collect();
        let groups = SequenceGroups::parse(options, &names, primary_keys)?;
        let mut aggs = Vec::with_capacity(columns.len());
        for (i, (name, data_type)) in columns.iter().enumerate() {
            if groups.is_seq[i] {
                aggs.push(None);
                continue;
            }
            if primary_keys.contains(name) {
                aggs.push(Some(FieldAgg::new(name, data_type, None, options)?));
                continue;
            }
            let Some((key, func)) = aggregate::configured_function(options, name) else {
                aggs.push(None);
                continue;
            };
            if func != UNGROUPED_FUNCTION && !groups.protects(i) {
                return Err(Error::invalid_option(
                    &key,
                    func,
                    format!(
                        "partial-update aggregates only the fields of a sequence group, and \
                         field '{name}' is in none ('{UNGROUPED_FUNCTION}' excepted)"
                    ),
                ));
            }
            aggs.push(Some(FieldAgg::new(name, data_type, Some(func), options)?));
        }
        Ok(PartialUpdate {
            ignore_delete: options.ignore_delete,
            remove_record_on_delete: options.partial_update_remove_record_on_delete,
            columns: columns.len(),
            cells: Vec::new(),
            wins: vec![None; groups.groups.len()],
            groups,
            aggs,
        })
    }

    pub(crate) fn merge(
        &mut self,
        records: &[Record],
        cols: &dyn Columns,
    ) -> Result<Option<Merged>> {
        if self.groups.is_empty() {
            self.merge_plain(records, cols)
        } else {
            self.merge_grouped(records, cols)
        }
    }

    fn merge_plain(&mut self, records: &[Record], cols: &dyn Columns) -> Result<Option<Merged>> {
        self.cells.clear();
        self.cells.resize(self.columns, Cell::NULL);
        let mut last: Option<&Record> = None;
        let mut deleted: Option<&Record> = None;
        for r in records {
            if r.kind.is_retract() {
                if self.ignore_delete {
                    continue;
                }
                if self.remove_record_on_delete {
                    // A `-D` removes the row; Paimon ignores a `-U` here.
                    if r.kind == RowKind::Delete {
                        self.cells.iter_mut().for_each(|c| *c = Cell::NULL);
                        deleted = Some(r);
                        last = Some(r);
                    }
                    continue;
                }
                return Err(Error::unsupported(format!(
                    "'{}' holds a {:?} record: partial-update cannot accept delete records \
                     unless 'ignore-delete', 'partial-update.remove-record-on-delete' or \
                     sequence groups say what to do",
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

    fn merge_grouped(&mut self, records: &[Record], cols: &dyn Columns) -> Result<Option<Merged>> {
        let Some(last) = records.last() else {
            return Ok(None);
        };
        self.cells.clear();
        self.cells.resize(self.columns, Cell::NULL);
        self.aggs.iter_mut().flatten().for_each(FieldAgg::reset);
        let (mut filled, mut met_insert, mut deleted) = (false, false, false);
        let mut seq = None;
        for r in records {
            deleted = false;
            if r.kind.is_retract() {
                // HEAD: a key's first record seeds the row even when it is a retract.
                if !filled {
                    self.cells.iter_mut().for_each(|c| *c = Cell::of(r));
                    filled = true;
                }
                if self.ignore_delete {
                    continue;
                }
                seq = Some(r.seq);
                deleted = self.retract(r, cols)?;
                continue;
            }
            seq = Some(r.seq);
            self.update(r, cols)?;
            met_insert = true;
            filled = true;
        }
        Ok(Some(Merged {
            key: (last.slot, last.row),
            // Paimon keeps 0 when every record was an ignored retract; the last record's
            // number keeps the output's sequence range within its inputs'.
            seq: seq.unwrap_or(last.seq),
            kind: if deleted || !met_insert {
                RowKind::Delete
            } else {
                RowKind::Insert
            },
            values: Values::Cells(self.cells.clone()),
        }))
    }

    /// Whether `r` wins each group against the row as it is now.
    fn decide(&mut self, r: &Record, cols: &dyn Columns) -> Result<()> {
        let input = Cell::of(r);
        for (g, group) in self.groups.groups.iter().enumerate() {
            let mut mine = Vec::with_capacity(group.seq.len());
            let mut row = Vec::with_capacity(group.seq.len());
            for &j in &group.seq {
                mine.push(input.datum(cols, j)?);
                row.push(self.cells[j].datum(cols, j)?);
            }
            self.wins[g] = if mine.iter().all(Datum::is_null) {
                None
            } else {
                Some(sequence_group::compare(&mine, &row).is_ge())
            };
        }
        Ok(())
    }

    /// Paimon's `updateWithSequenceGroup`, column by column.
    fn update(&mut self, r: &Record, cols: &dyn Columns) -> Result<()> {
        self.decide(r, cols)?;
        for j in 0..self.columns {
            let input = Cell::of(r);
            let acc = std::mem::replace(&mut self.cells[j], Cell::NULL);
            let agg = self.aggs[j].as_mut();
            self.cells[j] = match self.groups.group_of[j] {
                None => match agg {
                    Some(a) => a.agg(j, acc, input, cols, r)?,
                    None if input.is_null(cols, j) => acc,
                    None => input,
                },
                Some(g) => match (self.wins[g], agg) {
                    (None, _) | (Some(false), None) => acc,
                    (Some(true), None) => input,
                    (Some(true), Some(a)) => a.agg(j, acc, input, cols, r)?,
                    (Some(false), Some(a)) => a.agg_reversed(j, acc, input, cols, r)?,
                },
            };
        }
        Ok(())
    }

    /// Paimon's `retractWithSequenceGroup`, column by column: whether `r` removed the row.
    fn retract(&mut self, r: &Record, cols: &dyn Columns) -> Result<bool> {
        self.decide(r, cols)?;
        for j in 0..self.columns {
            let Some(g) = self.groups.group_of[j] else {
                // Columns outside every group ignore retractions.
                continue;
            };
            let input = Cell::of(r);
            if self.groups.is_seq[j] {
                if self.wins[g] == Some(true) {
                    if r.kind == RowKind::Delete && self.groups.groups[g].removes_row {
                        self.cells.iter_mut().for_each(|c| *c = Cell::of(r));
                        return Ok(true);
                    }
                    self.cells[j] = input;
                }
                continue;
            }
            let acc = std::mem::replace(&mut self.cells[j], Cell::NULL);
            self.cells[j] = match (self.wins[g], self.aggs[j].as_mut()) {
                (None, _) | (Some(false), None) => acc,
                (Some(true), None) => Cell::NULL,
                (Some(_), Some(a)) => a.retract(j, acc, input, cols, r)?,
            };
        }
        Ok(false)
    }
}
