//! Paimon's `bloom-filter` file index (format.md §6, "File indexes"): `BloomFilter64` bit for
//! bit, sized from `.items` (default 1 000 000) and `.fpp` (default 0.1) and fed with 64-bit
//! hashes (XXH64 of the bytes of strings and binaries, Thomas Wang's integer hash of numbers,
//! dates, times, timestamps and float bits), so a reader that hashes a literal finds the bits
//! our writer set. Nulls are not indexed.

use super::keys::{Key, KeyType};

/// Whether Paimon's `FastHash` hashes columns of this family (booleans and decimals it
/// does not).
pub(super) fn indexes(t: KeyType) -> bool {
    !matches!(t, KeyType::Bool | KeyType::Decimal)
}

/// Paimon's `BloomFilter64`.
#[derive(Clone)]
pub(super) struct BloomFilter64 {
    pub(super) num_hash_functions: i32,
    pub(super) bits: Vec<u8>,
}

impl BloomFilter64 {
    pub(super) fn new(items: u64, fpp: f64) -> Self {
        let ln2 = std::f64::consts::LN_2;
        // Java: (int) (-items * Math.log(fpp) / (Math.log(2) * Math.log(2))), saturating.
        let nb = (-(items as f64) * fpp.ln() / (ln2 * ln2)) as i32;
        // Paimon rounds up to whole bytes, adding a byte when already whole.
        let num_bits = nb.saturating_add(8 - nb.rem_euclid(8)).max(8);
        let k = ((num_bits as f64 / items as f64 * ln2) + 0.5).floor() as i32;
        BloomFilter64 {
            num_hash_functions: k.max(1),
            bits: vec![0; (num_bits / 8) as usize],
        }
    }

    /// The bit positions of a hash: `hash1 + i * hash2` for `i` in `1..=k` (32-bit, wrapping),
    /// bits flipped when negative, modulo the number of bits.
    fn positions(&self, hash64: i64) -> impl Iterator<Item = usize> + use<> {
        let num_bits = (self.bits.len() * 8) as i32;
        let hash1 = hash64 as i32;
        let hash2 = ((hash64 as u64) >> 32) as i32;
        (1..=self.num_hash_functions).map(move |i| {
            let mut combined = hash1.wrapping_add(i.wrapping_mul(hash2));
            if combined < 0 {
                combined = !combined;
            }
            (combined % num_bits) as usize
        })
    }

    /// Records a non-null value.
    pub(super) fn add(&mut self, key: Key<'_>) {
        let hash = match key {
            Key::Bytes(b) => bytes_hash(b),
            Key::Int(v) => long_hash(v),
            // Java's floatToIntBits, widened as an int; doubleToLongBits.
            Key::Float(bits) => long_hash(bits as i32 as i64),
            Key::Double(bits) => long_hash(bits as i64),
            // Refused when the index is declared (`indexes`).
            Key::Bool(_) => return,
        };
        self.add_hash(hash);
    }

    fn add_hash(&mut self, hash64: i64) {
        for pos in self.positions(hash64) {
            self.bits[pos >> 3] |= 1 << (pos & 7);
        }
    }

    #[cfg(test)]
    pub(super) fn contains(&self, hash64: i64) -> bool {
        self.positions(hash64)
            .all(|pos| self.bits[pos >> 3] & (1 << (pos & 7)) != 0)
    }

    /// The number of hash functions (4 bytes, big endian), then the bit set.
    pub(super) fn serialize(&self) -> Vec<u8> {
        let mut out = self.num_hash_functions.to_be_bytes().to_vec();
        out.extend_from_slice(&self.bits);
        out
    }
}

/// Thomas Wang's 64-bit integer hash, as Paimon's `FastHash.getLongHash` computes it.
pub(super) fn long_hash(mut key: i64) -> i64 {
    key = (!key).wrapping_add(key << 21);
    key ^= key >> 24;
    key = key.wrapping_add(key << 3).wrapping_add(key << 8);
    key ^= key >> 14;
    key = key.wrapping_add(key << 2).wrapping_add(key << 4);
    key ^= key >> 28;
    key.wrapping_add(key << 31)
}

pub(super) fn bytes_hash(b: &[u8]) -> i64 {
    twox_hash::XxHash64::oneshot(0, b) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hashes_are_paimons() {
        // Computed by Paimon 1.0's FastHash (Java's long arithmetic) and its shaded
        // LongHashFunction.xx(), in jshell on the peer's jar.
        assert_eq!(long_hash(0), 0);
        assert_eq!(long_hash(1), 6_614_235_796_240_398_542);
        assert_eq!(long_hash(-7), -9_040_340_845_809_335_386);
        assert_eq!(long_hash(123_456_789), -1_864_789_099_685_094_664);
        assert_eq!(bytes_hash(b"abc"), 4_952_883_123_889_572_249);
    }

    #[test]
    fn the_filter_is_sized_as_paimons() {
        // 100 items at 10%: 479 bits rounded up to 480, 3 hash functions.
        let f = BloomFilter64::new(100, 0.1);
        assert_eq!(f.bits.len(), 60);
        assert_eq!(f.num_hash_functions, 3);
        // Already whole bytes still gain one.
        let f = BloomFilter64::new(1_000_000, 0.1);
        assert_eq!(f.bits.len() * 8, 4_792_536);
    }
}
