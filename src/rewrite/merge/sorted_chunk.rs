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

use super::arena::Arena;

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
    /// Entries packed for sorting (kept to reuse the allocation).
    packed: Vec<u128>,
}

impl SortedChunk {
    /// Collects and orders the rows of `live` (ascending cursor index, each with at least one
    /// row left) below the smallest last key of their batches. `false` when there are none:
    /// the smallest row left equals that bound, and the heap must take it.
    pub(super) fn fill(&mut self, live: &[CursorView], arena: &Arena) -> bool {
        self.clear();
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
            self.entries
                .extend(
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
        match short.filter(|_| heads_decide) {
            Some(len) => self.sort_heads(len),
            None => {
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
        }
        !self.entries.is_empty()
    }

    /// Sorts entries whose heads are their whole keys, every key `len` (at most 16) bytes.
    ///
    /// When the bytes a key leaves unused in its 16-byte head can hold the cursor and the
    /// row, each entry is packed into one `u128` (key bytes, then cursor, then row) and those
    /// are sorted: half the bytes moved and one comparison each, in exactly the stable order,
    /// since entries are collected in ascending cursor and row order. Otherwise (an INT key
    /// in a batch of millions of rows, say) the entries are sorted as they are.
    fn sort_heads(&mut self, len: usize) {
        let bits = |n: u64| 64 - n.leading_zeros();
        let max_row = self.entries.iter().map(|e| e.row).max().unwrap_or(0);
        let max_cursor = self.entries.iter().map(|e| e.cursor).max().unwrap_or(0);
        let (row_bits, cursor_bits) = (bits(max_row as u64), bits(max_cursor as u64));
        let free = 8 * (16 - len.min(16)) as u32;
        if row_bits + cursor_bits > free {
            self.entries.sort_by_key(|e| e.head);
            return;
        }
        let packed = &mut self.packed;
        packed.clear();
        packed.extend(self.entries.iter().map(|e| {
            let head = (e.head.0 as u128) << 64 | e.head.1 as u128;
            head | (e.cursor as u128) << row_bits | e.row as u128
        }));
        packed.sort();
        let row_mask = (1u128 << row_bits) - 1;
        let cursor_mask = (1u128 << cursor_bits) - 1;
        let key_mask = !((1u128 << (row_bits + cursor_bits)) - 1);
        for (e, &p) in self.entries.iter_mut().zip(packed.iter()) {
            let head = p & key_mask;
            *e = Entry {
                head: ((head >> 64) as u64, head as u64),
                cursor: ((p >> row_bits) & cursor_mask) as u32,
                row: (p & row_mask) as u32,
            };
        }
    }

    /// Rows in the chunk.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The next row in merge order, taken.
    pub(super) fn take(&mut self) -> Option<Entry> {
        let e = self.peek()?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries of `cursors` runs, each ascending, with `len`-byte keys (unused head bytes
    /// zero) drawn from few values so that keys repeat across and within runs.
    fn entries(len: usize, cursors: u32, rows: u32, seed: u64) -> Vec<Entry> {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mask = |bytes: usize| -> u128 {
            if bytes >= 16 {
                u128::MAX
            } else {
                !(u128::MAX >> (8 * bytes))
            }
        };
        let mut out = Vec::new();
        for c in 0..cursors {
            let mut keys: Vec<u128> = (0..rows)
                .map(|_| {
                    ((next() % 50) as u128).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835)
                        & mask(len)
                })
                .collect();
            keys.sort();
            out.extend(keys.into_iter().enumerate().map(|(row, k)| Entry {
                head: ((k >> 64) as u64, k as u64),
                cursor: c,
                row: row as u32,
            }));
        }
        out
    }

    #[test]
    fn packed_and_plain_head_sorts_give_the_stable_order() {
        // 9 bytes: a BIGINT key (packed); 10: short strings (packed); 14 with many rows and
        // cursors: too few spare bits (plain); 16: none spare (plain).
        for (len, cursors, rows) in [(9, 10, 300), (10, 3, 1000), (14, 40, 3000), (16, 5, 200)] {
            for seed in 1..4 {
                let all = entries(len, cursors, rows, seed);
                let mut want = all.clone();
                want.sort_by_key(|e| e.head);
                let mut chunk = SortedChunk {
                    entries: all,
                    ..SortedChunk::default()
                };
                chunk.sort_heads(len);
                let key = |e: &Entry| (e.head, e.cursor, e.row);
                let got: Vec<_> = chunk.entries.iter().map(key).collect();
                let want: Vec<_> = want.iter().map(key).collect();
                assert!(got == want, "len {len}, seed {seed}");
            }
        }
    }
}
