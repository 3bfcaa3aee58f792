//! The batches the merge reads, as slots of an arena: each decoded batch with its keys in
//! arrow's row format and their first 16 bytes as two words, so comparing two keys is almost
//! always a comparison of integers. Results of the merge are `(slot, row)` references into the
//! arena until they are assembled into an output batch.

use std::cmp::Ordering;

use arrow_array::RecordBatch;
use arrow_buffer::ScalarBuffer;
use arrow_row::Rows;

use super::kv_format::RowKind;
use super::merge_engine::{Origin, Record};
use crate::error::{Error, Result};

/// A decoded batch with its keys in row format.
pub(crate) struct Slot {
    pub(super) batch: RecordBatch,
    pub(super) keys: Rows,
    /// The first eight bytes of each key row (big-endian, zero-padded): most comparisons are
    /// decided here without touching the rows.
    pub(super) prefixes: Vec<u64>,
    /// Bytes 8..16 of each key row (zero-padded): with the prefix, the first 16 bytes. When
    /// every key row of the batch has the same length of at most 16 bytes (`short_len`; a
    /// BIGINT key is 9 bytes) the two words are the whole key and the rows are never touched.
    pub(super) tails: Vec<u64>,
    pub(super) short_len: Option<usize>,
    pub(super) user_seq: Option<Rows>,
    pub(super) seqs: ScalarBuffer<i64>,
    pub(super) kinds: Vec<RowKind>,
    /// Input index (or higher-level index for lookup batches).
    pub(super) file: usize,
    /// The level of that input (what each record carries), kept here so the merge loop does
    /// not follow the input's metadata for every record.
    pub(super) level: u32,
}

impl Slot {
    pub(crate) fn len(&self) -> usize {
        self.batch.num_rows()
    }
    pub(crate) fn seq(&self, row: usize) -> i64 {
        self.seqs[row]
    }
    pub(super) fn head(&self, row: usize) -> (u64, u64) {
        (self.prefixes[row], self.tails[row])
    }
    /// The key heads (prefixes, tails) of `rows`.
    pub(super) fn heads(&self, rows: std::ops::Range<usize>) -> (&[u64], &[u64]) {
        (&self.prefixes[rows.clone()], &self.tails[rows])
    }
    /// The length of every key row when all are that long and at most 16 bytes.
    pub(super) fn short_len(&self) -> Option<usize> {
        self.short_len
    }
}

/// The batches results may point into.
#[derive(Default)]
pub(crate) struct Arena {
    pub(crate) slots: Vec<Slot>,
}

impl Arena {
    pub(crate) fn push(&mut self, slot: Slot) -> usize {
        self.slots.push(slot);
        self.slots.len() - 1
    }

    /// The merge's record of the input row at `(slot, row)`.
    pub(super) fn record(&self, (s, row): (usize, usize)) -> Record {
        let slot = &self.slots[s];
        Record {
            slot: s,
            row,
            seq: slot.seq(row),
            kind: slot.kinds[row],
            level: slot.level,
            origin: Origin::Input {
                file: slot.file,
                pos: 0,
            },
        }
    }

    pub(super) fn key(&self, at: (usize, usize)) -> arrow_row::Row<'_> {
        self.slots[at.0].keys.row(at.1)
    }

    pub(crate) fn cmp_keys(&self, a: (usize, usize), b: (usize, usize)) -> Ordering {
        let (sa, sb) = (&self.slots[a.0], &self.slots[b.0]);
        match (sa.prefixes[a.1], sa.tails[a.1]).cmp(&(sb.prefixes[b.1], sb.tails[b.1])) {
            Ordering::Equal => self.cmp_after_head(a, b),
            o => o,
        }
    }

    /// The order of two keys whose first 16 bytes (zero-padded) are equal: equal when both
    /// rows are that short and equally long, else decided by the rows.
    #[inline]
    pub(super) fn cmp_after_head(&self, a: (usize, usize), b: (usize, usize)) -> Ordering {
        let (sa, sb) = (&self.slots[a.0], &self.slots[b.0]);
        match (sa.short_len, sb.short_len) {
            (Some(la), Some(lb)) if la == lb => Ordering::Equal,
            _ => self.key(a).cmp(&self.key(b)),
        }
    }
}

/// Keys of one batch must not decrease.
pub(super) fn check_order(slot: &Slot, path: &str) -> Result<()> {
    for i in 1..slot.len() {
        let (a, b) = (slot.head(i - 1), slot.head(i));
        let below = match b.cmp(&a) {
            Ordering::Less => true,
            Ordering::Greater => false,
            // Equal first 16 bytes: equal keys when that short, else the rows decide.
            Ordering::Equal => slot.short_len.is_none() && slot.keys.row(i) < slot.keys.row(i - 1),
        };
        if below {
            return Err(Error::corrupt(
                Some(path),
                format!(
                    "keys out of order: row {i} of a batch is below row {}",
                    i - 1
                ),
            ));
        }
    }
    Ok(())
}

/// Sequence order of two records: user sequence fields, then the sequence number. The user
/// fields' rows already carry `sequence.field.sort-order` (see `rewrite_merge_tree`); the
/// sequence number ascends whatever that order, as in Paimon's merge readers.
pub(super) fn seq_order(arena: &Arena, a: &Record, b: &Record) -> Ordering {
    let (sa, sb) = (&arena.slots[a.slot], &arena.slots[b.slot]);
    if let (Some(ua), Some(ub)) = (&sa.user_seq, &sb.user_seq) {
        match ua.row(a.row).cmp(&ub.row(b.row)) {
            Ordering::Equal => {}
            o => return o,
        }
    }
    a.seq.cmp(&b.seq)
}
