//! The id table both dictionary writers look values up in: open addressing with linear
//! probing over dictionary ids, slotted by a 64-bit hash of the value (a primitive's bits, a
//! string's [`super::strings`] hash), at most half full.
//!
//! It holds ids only, 4 bytes a slot; the values, and what a probe compares, stay with the
//! writer. arrow-rs's interner (ahash, a `hashbrown` probe, a `memcmp` call per row) is the
//! cost this replaces; in the component it took twice its native share.

/// An empty slot.
pub(crate) const EMPTY: u32 = u32::MAX;
const INITIAL_SLOTS: usize = 1024;

pub(crate) struct IdTable {
    slots: Vec<u32>,
    shift: u32,
}

impl IdTable {
    pub(crate) fn new() -> Self {
        IdTable {
            slots: vec![EMPTY; INITIAL_SLOTS],
            shift: 64 - INITIAL_SLOTS.trailing_zeros(),
        }
    }

    fn home(&self, hash: u64) -> usize {
        (hash.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The id in the first slot `hash` probes ([`EMPTY`] if none): what a batch of lookups
    /// loads up front, before any of them is settled.
    pub(crate) fn first(&self, hash: u64) -> u32 {
        self.slots[self.home(hash)]
    }

    /// The id `is` accepts among those `hash` probes, or the free slot where a new one goes.
    pub(crate) fn find(&self, hash: u64, mut is: impl FnMut(u32) -> bool) -> Result<u32, usize> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        loop {
            let id = self.slots[i];
            if id == EMPTY {
                return Err(i);
            }
            if is(id) {
                return Ok(id);
            }
            i = (i + 1) & mask;
        }
    }

    /// Puts `id`, the `len`-th entry, at `slot` (from [`Self::find`]). Past half full the
    /// table doubles and every id `0..len` is re-slotted by `hash_of`.
    pub(crate) fn insert(
        &mut self,
        slot: usize,
        id: u32,
        len: usize,
        hash_of: impl Fn(usize) -> u64,
    ) {
        self.slots[slot] = id;
        if len * 2 <= self.slots.len() {
            return;
        }
        let size = self.slots.len() * 2;
        self.slots = vec![EMPTY; size];
        self.shift -= 1;
        let mask = size - 1;
        for id in 0..len {
            let mut i = self.home(hash_of(id));
            while self.slots[i] != EMPTY {
                i = (i + 1) & mask;
            }
            self.slots[i] = id as u32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_found_through_collisions_and_growth() {
        // Hashes that collide in groups of four, through several doublings.
        let hash = |v: usize| (v / 4) as u64;
        let mut values: Vec<usize> = Vec::new();
        let mut t = IdTable::new();
        for v in (0..5000).chain(0..5000) {
            match t.find(hash(v), |id| values[id as usize] == v) {
                Ok(id) => assert_eq!(values[id as usize], v),
                Err(slot) => {
                    values.push(v);
                    let n = values.len();
                    t.insert(slot, (n - 1) as u32, n, |id| hash(values[id]));
                }
            }
        }
        assert_eq!(values, (0..5000).collect::<Vec<_>>());
        assert!(t.slots.len() >= 10_000);
    }
}
