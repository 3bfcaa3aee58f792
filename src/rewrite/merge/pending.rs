//! Merged results on their way out: references into the arena until a batch's worth is
//! assembled with `interleave` and written to the data or changelog files, after which the
//! arena is cut back to the batches the cursors still read.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch};
use arrow_schema::SchemaRef;
use arrow_select::interleave::interleave;

use super::arena::{Arena, Slot};
use super::changelog::Emit;
use super::kv_format::{array_of, kind_array, KvLayout};
use super::lookup::LookupLevels;
use super::merge_engine::{Cell, Merged, Values};
use super::merge_tree::Merge;
use super::output::RollingOutput;
use crate::error::{Error, Result};
use crate::value::Datum;

/// Results waiting to be assembled into a batch.
#[derive(Default)]
pub(super) struct Pending {
    keys: Vec<(usize, usize)>,
    seqs: Vec<i64>,
    kinds: Vec<i8>,
    rows: Vec<(usize, usize)>,
    /// Per value column (engines that merge per column).
    cells: Vec<Vec<Cell>>,
}

impl Pending {
    pub(super) fn len(&self) -> usize {
        self.seqs.len()
    }

    pub(super) fn push(&mut self, m: Merged, whole_rows: bool, value_cols: usize) {
        self.keys.push(m.key);
        self.seqs.push(m.seq);
        self.kinds.push(m.kind.as_byte());
        if whole_rows {
            if let Values::Row(s, r) = m.values {
                self.rows.push((s, r));
                return;
            }
        }
        if self.cells.len() != value_cols {
            self.cells = vec![Vec::new(); value_cols];
        }
        match m.values {
            Values::Row(s, r) => self.cells.iter_mut().for_each(|c| c.push(Cell::Src(s, r))),
            Values::Cells(cells) => {
                for (col, cell) in self.cells.iter_mut().zip(cells) {
                    col.push(cell);
                }
            }
        }
    }

    pub(super) fn clear(&mut self) {
        self.keys.clear();
        self.seqs.clear();
        self.kinds.clear();
        self.rows.clear();
        self.cells.iter_mut().for_each(Vec::clear);
    }
}

/// Assembles pending results into a batch of the output schema.
pub(super) fn assemble(
    p: &Pending,
    arena: &Arena,
    layout: &KvLayout,
    schema: &SchemaRef,
    whole_rows: bool,
) -> Result<RecordBatch> {
    let fail = |e: arrow_schema::ArrowError| {
        Error::internal(format!("assembling rows: {e}")).with_source(e)
    };
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    let sources = |c: usize| -> Vec<&dyn Array> {
        arena
            .slots
            .iter()
            .map(|s| s.batch.column(c).as_ref())
            .collect()
    };
    for &c in &layout.key_cols {
        columns.push(interleave(&sources(c), &p.keys).map_err(fail)?);
    }
    columns.push(Arc::new(Int64Array::from(p.seqs.clone())));
    columns.push(kind_array(
        &p.kinds,
        schema.field(layout.kind_col).data_type(),
    ));
    for (j, &c) in layout.value_cols.iter().enumerate() {
        if whole_rows {
            columns.push(interleave(&sources(c), &p.rows).map_err(fail)?);
            continue;
        }
        let cells = &p.cells[j];
        let mut computed: Vec<Datum> = Vec::new();
        let mut nested: Vec<&dyn Array> = Vec::new();
        let mut idx: Vec<(usize, usize)> = Vec::with_capacity(cells.len());
        // Computed scalars are one extra source, computed nested values another.
        let (scalars, nests) = (arena.slots.len(), arena.slots.len() + 1);
        for cell in cells {
            match cell {
                Cell::Src(s, r) => idx.push((*s, *r)),
                Cell::Val(d) => {
                    idx.push((scalars, computed.len()));
                    computed.push(d.clone());
                }
                Cell::Nested(a) => {
                    idx.push((nests, nested.len()));
                    nested.push(a.as_ref());
                }
            }
        }
        let mut src = sources(c);
        let (computed_array, nested_array);
        let t = schema.field(c).data_type();
        if !computed.is_empty() || !nested.is_empty() {
            computed_array = array_of(&computed, t)?;
            src.push(computed_array.as_ref());
        }
        if !nested.is_empty() {
            nested_array = arrow_select::concat::concat(&nested).map_err(fail)?;
            src.push(nested_array.as_ref());
        }
        columns.push(interleave(&src, &idx).map_err(fail)?);
    }
    RecordBatch::try_new(schema.clone(), columns).map_err(fail)
}

/// The two output streams and the pending results of each.
pub(super) struct Sinks<'s> {
    pub(super) data: Option<RollingOutput<'s>>,
    pub(super) changelog: Option<RollingOutput<'s>>,
    pub(super) pending_data: Pending,
    pub(super) pending_changelog: Pending,
    pub(super) whole_rows: bool,
    pub(super) value_cols: usize,
    pub(super) drop_delete: bool,
    pub(super) retracts_dropped: u64,
}

impl Emit for Sinks<'_> {
    fn data(&mut self, row: Merged) -> Result<()> {
        if self.drop_delete && row.kind.is_retract() {
            self.retracts_dropped += 1;
            return Ok(());
        }
        if self.data.is_some() {
            self.pending_data
                .push(row, self.whole_rows, self.value_cols);
        }
        Ok(())
    }
    fn changelog(&mut self, row: Merged) -> Result<()> {
        if self.changelog.is_some() {
            self.pending_changelog
                .push(row, self.whole_rows, self.value_cols);
        }
        Ok(())
    }
}

/// Flushes pending results of both streams and cuts the arena back to live batches.
pub(super) fn flush(
    merge: &mut Merge<'_, '_>,
    sinks: &mut Sinks<'_>,
    lookup: &mut Option<LookupLevels>,
    layout: &KvLayout,
) -> Result<()> {
    let whole_rows = sinks.whole_rows;
    // The merge's schema, with the columns read as dictionaries typed as such.
    let schema = merge.reader.dicts.batch_schema().clone();
    for (pending, out) in [
        (&mut sinks.pending_data, sinks.data.as_mut()),
        (&mut sinks.pending_changelog, sinks.changelog.as_mut()),
    ] {
        if pending.len() > 0 {
            let batch = assemble(pending, &merge.arena, layout, &schema, whole_rows)?;
            if let Some(out) = out {
                out.write(&batch)?;
            }
            pending.clear();
        }
    }
    // Keep only the batches cursors still read, renumbered.
    let mut live: Vec<&mut usize> = merge
        .cursors
        .iter_mut()
        .filter(|c| c.len > 0)
        .map(|c| &mut c.slot)
        .collect();
    if let Some(l) = lookup.as_mut() {
        live.extend(l.live_slots());
    }
    let old = std::mem::take(&mut merge.arena.slots);
    let mut old: Vec<Option<Slot>> = old.into_iter().map(Some).collect();
    let mut remap: BTreeMap<usize, usize> = BTreeMap::new();
    for s in live {
        let new = match remap.get(s) {
            Some(&n) => n,
            None => {
                let slot = old
                    .get_mut(*s)
                    .and_then(Option::take)
                    .ok_or_else(|| Error::internal("a cursor's batch is missing"))?;
                let n = merge.arena.push(slot);
                remap.insert(*s, n);
                n
            }
        };
        *s = new;
    }
    Ok(())
}
