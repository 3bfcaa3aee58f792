//! Ordering the merge's rows a chunk at a time instead of one heap step per row.
//!
//! The heap of run cursors pays a sift for every row it yields: two key comparisons per level,
//! each following a cursor into its batch, in an order the branch predictor cannot learn (the
//! runs' keys interleave every few rows). But every run's current batch is sorted, and below the
//! smallest *last* key among those batches (the bound) no run has a row outside its current
//! batch. So all rows below the bound can be put in order at once: their 16-byte key heads are
//! collected run by run and sorted by a stable sort, which finds each run as an ascending stretch
//! and merges the stretches in passes of plain sequential code. The merge then walks the result;
//! rows equal to the bound are left to the heap, which moves the run that set the bound on to its
//! next batch (a run may repeat a key across its batches), and the next chunk starts there.
//!
//! Ties keep the heap's rule: equal keys come in cursor order, and within a cursor in row order,
//! because rows are collected cursor by cursor in ascending cursor index and the sort is stable.
//! When the 16-byte heads do not decide (keys longer than that, or batches whose key rows differ
//! in length) the sort falls back to the key rows, as the heap does.

use std::cmp::Ordering;

use super::merge_tree::Arena;

/// One row of a chunk: its key head and where it is.
#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    /// The first 16 key bytes (`Slot::head`).
    pub head: (u64, u64),
    /// The run cursor the row belongs to (its slot is looked up there: a flush renumbers slots
    /// while a chunk is being walked).
    pub cursor: u32,
    pub row: u32,
}

/// A live cursor as a chunk sees it: its batch (`slot`) and the rows `row..len` not yet merged.
#[derive(Clone, Copy, Debug)]
pub(super) struct CursorView {
    pub cursor: usize,
    pub slot: usize,
    pub row: usize,
    pub len: usize,
}

/// The rows of one chunk in merge order, and where each cursor resumes once they are merged.
#[derive(Default)]
pub(super) struct SortedChunk {
    entries: Vec<Entry>,
    next: usize,
    ends: Vec<(usize, usize)>,
    /// Slot of each cursor during `fill` (indexed by cursor).
    slots: Vec<usize>,
}

impl SortedChunk {
    /// Collects and orders the rows of `live` (ascending cursor index, each with at least one
    /// row left) below the smallest last key of their batches. `false` when there are none:
    /// the smallest row left equals that bound, and the heap must take it.
    pub(super) fn fill(&mut self, live: &[CursorView], arena: &Arena) -> bool {
        self.entries.clear();
        self.ends.clear();
        self.next = 0;
        let Some(first) = live.first() else {
            return false;
        };
        let last = |v: &CursorView| (v.slot, v.len - 1);
        let mut bound = last(first);
        for v in &live[1..] {
            if arena.cmp_keys(last(v), bound) == Ordering::Less {
                bound = last(v);
            }
        }
        // The heads decide every comparison when all batches hold equally long short keys.
        let short = arena.slots[bound.0].short_len();
        let mut heads_decide = short.is_some();
        self.slots.clear();
        for v in live {
            let slot = &arena.slots[v.slot];
            heads_decide &= slot.short_len() == short;
            // The first row at or above the bound (the batch's last row is at or above it).
            let (mut lo, mut hi) = (v.row, v.len - 1);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if arena.cmp_keys((v.slot, mid), bound) == Ordering::Less {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            let (prefixes, tails) = slot.heads(v.row..lo);
            self.entries.extend(
                prefixes
                    .iter()
                    .zip(tails)
                    .zip(v.row..lo)
                    .map(|((&p, &t), row)| Entry {
                        head: (p, t),
                        cursor: v.cursor as u32,
                        row: row as u32,
                    }),
            );
            self.ends.push((v.cursor, lo));
            if self.slots.len() <= v.cursor {
                self.slots.resize(v.cursor + 1, 0);
            }
            self.slots[v.cursor] = v.slot;
        }
        if heads_decide {
            self.entries.sort_by(|a, b| a.head.cmp(&b.head));
        } else {
            let slots = &self.slots;
            self.entries.sort_by(|a, b| {
                a.head.cmp(&b.head).then_with(|| {
                    arena.cmp_after_head(
                        (slots[a.cursor as usize], a.row as usize),
                        (slots[b.cursor as usize], b.row as usize),
                    )
                })
            });
        }
        !self.entries.is_empty()
    }

    /// Rows in the chunk.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The next row in merge order, taken.
    pub(super) fn take(&mut self) -> Option<Entry> {
        let e = self.entries.get(self.next).copied()?;
        self.next += 1;
        Some(e)
    }

    /// The next row in merge order, left in place.
    pub(super) fn peek(&self) -> Option<Entry> {
        self.entries.get(self.next).copied()
    }

    /// A chunk was filled and all its rows taken: its cursors must move on (`ends`) before
    /// anything else reads them.
    pub(super) fn consumed(&self) -> bool {
        !self.entries.is_empty() && self.next == self.entries.len()
    }

    /// Where each cursor of the chunk resumes: `(cursor, row)`.
    pub(super) fn ends(&self) -> &[(usize, usize)] {
        &self.ends
    }

    pub(super) fn clear(&mut self) {
        self.entries.clear();
        self.ends.clear();
        self.next = 0;
    }
}
