//! Paimon's `bsi` (bit-sliced) file index (format.md §6, "Bit-sliced indexes"): a numeric
//! column's values as slices of bits, one 32-bit RoaringBitmap per bit position naming the
//! rows whose value has that bit set, plus the bitmap of non-null rows. Readers answer
//! equality and range predicates from the slices (O'Neil's algorithm) and skip the file when
//! no row matches. Negative values are kept apart as their absolute values, so there are two
//! such structures, positive and negative.
//!
//! Paimon writes each structure with a minimum of 0 (its statistics start from zero, so the
//! minimum never rises above it) and as many slices as the maximum has bits; we write the
//! same, which needs no pass over the values before the slices are filled.

use roaring::RoaringBitmap;

use super::bitmap::portable;
use super::keys::{Key, KeyType};
use crate::error::{Error, Result};

/// Whether Paimon builds a bit-sliced index over columns of this family: integers, dates,
/// times, timestamps and decimals of up to 64 bits.
pub(super) fn indexes(t: KeyType) -> bool {
    matches!(
        t,
        KeyType::Byte | KeyType::Short | KeyType::Int | KeyType::Long | KeyType::Decimal
    )
}

/// Values of one sign, by bit.
#[derive(Clone, Default)]
struct Slices {
    max: u64,
    present: RoaringBitmap,
    /// `bits[i]`: rows whose value has bit `i` set; as many as `max` has bits.
    bits: Vec<RoaringBitmap>,
}

impl Slices {
    fn add(&mut self, row: u32, mut value: u64) {
        self.max = self.max.max(value);
        let width = 64 - value.leading_zeros() as usize;
        if self.bits.len() < width {
            self.bits.resize_with(width, RoaringBitmap::new);
        }
        while value != 0 {
            self.bits[value.trailing_zeros() as usize].insert(row);
            value &= value - 1;
        }
        self.present.insert(row);
    }

    /// Version byte, min (0) and max (8 bytes each), the non-null bitmap, the slice count
    /// and the slices.
    fn serialize(&self, out: &mut Vec<u8>) -> Result<()> {
        out.push(1);
        out.extend_from_slice(&0i64.to_be_bytes());
        out.extend_from_slice(&(self.max as i64).to_be_bytes());
        out.extend_from_slice(&portable(&self.present)?);
        out.extend_from_slice(&(self.bits.len() as i32).to_be_bytes());
        for slice in &self.bits {
            out.extend_from_slice(&portable(slice)?);
        }
        Ok(())
    }
}

/// The bit-sliced index of one file being written.
#[derive(Clone, Default)]
pub(super) struct BsiIndex {
    rows: u32,
    positive: Slices,
    negative: Slices,
}

impl BsiIndex {
    /// Records the next row's value (an integer key; nulls count as rows without a value).
    pub(super) fn add(&mut self, key: Option<Key<'_>>) -> Result<()> {
        let row = self.rows;
        self.rows = self.rows.checked_add(1).ok_or_else(|| {
            Error::unsupported("a bsi file index over more than 2^32 rows".to_string())
        })?;
        match key {
            None => {}
            Some(Key::Int(v)) if v >= 0 => self.positive.add(row, v as u64),
            // Paimon takes `Math.abs`, which has no positive form of the least long.
            Some(Key::Int(i64::MIN)) => {
                return Err(Error::unsupported(
                    "a bsi file index over the value -2^63 (Paimon's writer fails on it too)"
                        .to_string(),
                ))
            }
            Some(Key::Int(v)) => self.negative.add(row, v.unsigned_abs()),
            Some(other) => {
                return Err(Error::internal(format!(
                    "a bsi index fed a non-integer value {other:?}"
                )))
            }
        }
        Ok(())
    }

    /// Version byte, row count, then each sign's structure behind a presence flag.
    pub(super) fn serialize(&self) -> Result<Vec<u8>> {
        let mut out = vec![1u8];
        out.extend_from_slice(&self.rows.to_be_bytes());
        for side in [&self.positive, &self.negative] {
            let present = !side.present.is_empty();
            out.push(present as u8);
            if present {
                side.serialize(&mut out)?;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_become_slices_of_their_bits() {
        let mut ix = BsiIndex::default();
        // rows: 5, null, 3, -2
        for k in [Some(5), None, Some(3), Some(-2)] {
            ix.add(k.map(Key::Int)).unwrap();
        }
        let b = ix.serialize().unwrap();
        assert_eq!(b[0], 1);
        assert_eq!(u32::from_be_bytes(b[1..5].try_into().unwrap()), 4);
        assert_eq!(b[5], 1); // positive values present
        let p = &ix.positive;
        assert_eq!(p.max, 5);
        assert_eq!(p.bits.len(), 3);
        assert_eq!(p.bits[0].iter().collect::<Vec<_>>(), vec![0, 2]);
        assert_eq!(p.bits[1].iter().collect::<Vec<_>>(), vec![2]);
        assert_eq!(p.bits[2].iter().collect::<Vec<_>>(), vec![0]);
        assert_eq!(p.present.iter().collect::<Vec<_>>(), vec![0, 2]);
        let n = &ix.negative;
        assert_eq!((n.max, n.bits.len()), (2, 2));
        assert_eq!(n.bits[1].iter().collect::<Vec<_>>(), vec![3]);
        assert!(ix.add(Some(Key::Int(i64::MIN))).is_err());
    }

    #[test]
    fn only_zeros_make_no_slices() {
        let mut ix = BsiIndex::default();
        ix.add(Some(Key::Int(0))).unwrap();
        let b = ix.serialize().unwrap();
        // version, rows, positive flag, version, min, max = 0, present bitmap, 0 slices, no
        // negatives.
        assert_eq!(
            &b[6..23],
            &[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0][..]
        );
        assert_eq!(&b[b.len() - 5..], &[0, 0, 0, 0, 0]);
    }
}
