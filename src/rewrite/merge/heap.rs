//! Ordering the rows of a section's runs: a binary heap of run cursors keyed by each cursor's
//! current key, and the sorted chunks that take most keys without a heap step per row
//! ([`super::sorted_chunk`]). Each step yields the group of every run's records of the next
//! key.

use std::cmp::Ordering;

use super::arena::Arena;
use super::merge_engine::Record;
use super::merge_tree::Merge;
use super::run_cursor::RunCursor;
use super::sorted_chunk::{CursorView, SortedChunk};
use crate::error::Result;

impl Merge<'_, '_> {
    fn less(&self, a: usize, b: usize) -> bool {
        let (ca, cb) = (&self.cursors[a], &self.cursors[b]);
        let by_head = ca.head.cmp(&cb.head);
        let ord = if by_head == Ordering::Equal {
            self.arena
                .cmp_after_head((ca.slot, ca.row), (cb.slot, cb.row))
        } else {
            by_head
        };
        match ord {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => a < b,
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < n && self.less(self.heap[l], self.heap[m]) {
                m = l;
            }
            if r < n && self.less(self.heap[r], self.heap[m]) {
                m = r;
            }
            if m == i {
                return;
            }
            self.heap.swap(i, m);
            i = m;
        }
    }

    /// Moves the heap's top cursor one row on.
    fn advance_top(&mut self) -> Result<()> {
        let c = self.heap[0];
        let cur = &mut self.cursors[c];
        cur.row += 1;
        let alive = if cur.row < cur.len {
            cur.head = self.arena.slots[cur.slot].head(cur.row);
            true
        } else {
            self.load(c)?
        };
        if alive {
            self.sift_down(0);
        } else {
            let last = self.heap.len() - 1;
            self.heap.swap(0, last);
            self.heap.pop();
            self.sift_down(0);
        }
        Ok(())
    }

    fn record_of(&self, c: usize) -> Record {
        let cur = &self.cursors[c];
        self.arena.record((cur.slot, cur.row))
    }

    /// Restores the heap order after cursors moved outside it.
    pub(super) fn heapify(&mut self) {
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
    }

    /// Appends the records of the next key (every run's rows of it, in cursor order) to
    /// `group` and returns where that key is; `None` once the section's runs are exhausted.
    pub(super) fn next_group(&mut self, group: &mut Vec<Record>) -> Result<Option<(usize, usize)>> {
        let Some(chunk) = self.chunk.as_mut() else {
            return self.heap_group(group);
        };
        // Almost every key comes from the current chunk: served in place. (Taking the chunk
        // out of its `Option` and putting it back moved its 96 bytes twice per key, and the
        // reload of a field just overwritten by the take stalled on store forwarding: about a
        // quarter of the merge loop's own samples.)
        if let Some(gk) = chunk_group(chunk, &self.cursors, &self.arena, group) {
            return Ok(Some(gk));
        }
        let mut chunk = std::mem::take(&mut self.chunk).unwrap_or_default();
        let next = self.refill_group(&mut chunk, group);
        self.chunk = Some(chunk);
        next
    }

    /// [`Self::next_group`] once the chunk is spent: the cursors move past it, and the next
    /// chunk is filled (or the heap takes the key when no chunk can be cut).
    fn refill_group(
        &mut self,
        chunk: &mut SortedChunk,
        group: &mut Vec<Record>,
    ) -> Result<Option<(usize, usize)>> {
        loop {
            if chunk.consumed() {
                for &(c, row) in chunk.ends() {
                    let cur = &mut self.cursors[c];
                    cur.row = row;
                    cur.head = self.arena.slots[cur.slot].head(row);
                }
                chunk.clear();
                self.heapify();
            }
            if self.heap.is_empty() {
                return Ok(None);
            }
            self.live.clear();
            for &c in &self.heap {
                let cur = &self.cursors[c];
                self.live.push(CursorView {
                    cursor: c,
                    slot: cur.slot,
                    row: cur.row,
                    len: cur.len,
                });
            }
            self.live.sort_unstable_by_key(|v| v.cursor);
            if !chunk.fill(&self.live, &self.arena) {
                // The smallest row left is the bound itself: the heap takes that key.
                return self.heap_group(group);
            }
            self.metrics.sorted_chunk_rows += chunk.len() as u64;
            if let Some(gk) = chunk_group(chunk, &self.cursors, &self.arena, group) {
                return Ok(Some(gk));
            }
        }
    }

    /// [`Self::next_group`] by the heap: the smallest key, from every cursor that has it.
    fn heap_group(&mut self, group: &mut Vec<Record>) -> Result<Option<(usize, usize)>> {
        let Some(&top) = self.heap.first() else {
            return Ok(None);
        };
        let gk = (self.cursors[top].slot, self.cursors[top].row);
        let head = self.cursors[top].head;
        group.push(self.record_of(top));
        self.advance_top()?;
        // The rows after it join while their key equals it (the head settles almost every
        // inequality).
        while let Some(&c) = self.heap.first() {
            let cur = &self.cursors[c];
            if cur.head != head || self.arena.cmp_keys((cur.slot, cur.row), gk) != Ordering::Equal {
                break;
            }
            group.push(self.record_of(c));
            self.advance_top()?;
        }
        Ok(Some(gk))
    }
}

/// The next key of a sorted chunk (its first entry and every following one with an equal
/// key), appended to `group`; `None` when the chunk is spent. Inlined: returned through memory,
/// the key's location was stored as two words and reloaded as one, a store-forwarding stall per
/// key.
#[inline(always)]
fn chunk_group(
    chunk: &mut SortedChunk,
    cursors: &[RunCursor],
    arena: &Arena,
    group: &mut Vec<Record>,
) -> Option<(usize, usize)> {
    let e = chunk.take()?;
    let gk = (cursors[e.cursor as usize].slot, e.row as usize);
    group.push(arena.record(gk));
    while let Some(f) = chunk.peek() {
        if f.head != e.head {
            break;
        }
        let fk = (cursors[f.cursor as usize].slot, f.row as usize);
        if arena.cmp_after_head(fk, gk) != Ordering::Equal {
            break;
        }
        group.push(arena.record(fk));
        chunk.take();
    }
    Some(gk)
}
