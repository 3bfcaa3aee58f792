//! Paimon's `bitmap` file index (format.md §6, "Bitmap indexes"): for every distinct value of
//! a column, the 32-bit RoaringBitmap of the rows that hold it, plus one for nulls. A reader
//! looks a literal up and skips the file when its bitmap is empty; Paimon's append reader
//! also keeps only the rows the bitmap names, so row numbers are positions in the data file.
//!
//! Two layouts: version 1 (every Paimon release that has the index reads it, and it is what
//! we write unless `file-index.bitmap.<column>.version` asks for 2) lists the whole
//! dictionary in the head; version 2 (Paimon 1.1 and later) sorts it into blocks of at most
//! `index-block-size` bytes (default 16 kb) behind a block directory, so a lookup reads one
//! block. Paimon 1.0 fails on a version-2 index, which is why it is not our default.
//!
//! The bytes are those Paimon's own writer produces for the same rows, down to the order of
//! the values and their bitmaps: the iteration order of the Java `HashMap` it collects them
//! in (`java_order`; checked against Paimon Java HEAD by `super::golden`).

use std::collections::HashMap;

use roaring::RoaringBitmap;

use super::keys::{Key, KeyType};
use crate::error::{Error, Result};

mod java_order;

/// The layout a bitmap index is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BitmapVersion {
    V1,
    /// Sorted dictionary blocks of at most this many bytes.
    V2 {
        block_size: u64,
    },
}

/// Whether a bitmap index of this version can be written for a column of this family.
/// Binaries and decimals Paimon does not index. Version 1 has no boolean form that Paimon
/// 1.0 reads back (it writes none and would look a literal up under another type, missing
/// every row), so booleans need version 2.
pub(super) fn indexes(t: KeyType, version: BitmapVersion) -> bool {
    match t {
        KeyType::Bin | KeyType::Decimal => false,
        KeyType::Bool => matches!(version, BitmapVersion::V2 { .. }),
        _ => true,
    }
}

/// A dictionary key: one column holds one family, so fixed-width values share one encoding.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Owned {
    /// Booleans as 0/1, integers as their two's complement, floats as their bits.
    Fixed(u64),
    Bytes(Vec<u8>),
}

/// The bitmap index of one file being written.
#[derive(Clone)]
pub(super) struct BitmapIndex {
    key_type: KeyType,
    version: BitmapVersion,
    rows: u32,
    nulls: RoaringBitmap,
    fixed: HashMap<u64, usize>,
    bytes: HashMap<Vec<u8>, usize>,
    /// Distinct values in first-seen order, with their rows.
    values: Vec<(Owned, RoaringBitmap)>,
    /// Whether a non-null row repeating a value came after the last new value.
    repeat_after_last_new: bool,
}

impl BitmapIndex {
    pub(super) fn new(key_type: KeyType, version: BitmapVersion) -> Self {
        BitmapIndex {
            key_type,
            version,
            rows: 0,
            nulls: RoaringBitmap::new(),
            fixed: HashMap::new(),
            bytes: HashMap::new(),
            values: Vec::new(),
            repeat_after_last_new: false,
        }
    }

    /// Records the next row's value.
    pub(super) fn add(&mut self, key: Option<Key<'_>>) -> Result<()> {
        let row = self.rows;
        self.rows = self.rows.checked_add(1).ok_or_else(|| {
            Error::unsupported("a bitmap file index over more than 2^32 rows".to_string())
        })?;
        let fixed = match key {
            None => {
                self.nulls.insert(row);
                return Ok(());
            }
            Some(Key::Bytes(b)) => {
                let known = self.bytes.get(b).copied();
                self.repeat_after_last_new = known.is_some();
                let slot = match known {
                    Some(i) => i,
                    None => {
                        self.bytes.insert(b.to_vec(), self.values.len());
                        self.values
                            .push((Owned::Bytes(b.to_vec()), RoaringBitmap::new()));
                        self.values.len() - 1
                    }
                };
                self.values[slot].1.insert(row);
                return Ok(());
            }
            Some(Key::Bool(b)) => b as u64,
            Some(Key::Int(v)) => v as u64,
            Some(Key::Float(bits)) => bits as u64,
            Some(Key::Double(bits)) => bits,
        };
        let known = self.fixed.get(&fixed).copied();
        self.repeat_after_last_new = known.is_some();
        let slot = match known {
            Some(i) => i,
            None => {
                self.fixed.insert(fixed, self.values.len());
                self.values
                    .push((Owned::Fixed(fixed), RoaringBitmap::new()));
                self.values.len() - 1
            }
        };
        self.values[slot].1.insert(row);
        Ok(())
    }

    /// The index body: version byte, meta, then the null bitmap (when it names more than one
    /// row) and every value's bitmap naming more than one row, run-optimized and in
    /// RoaringBitmap's portable layout. A bitmap of one row is stored in the meta as
    /// `-1 - row` instead of an offset.
    pub(super) fn serialize(&self) -> Result<Vec<u8>> {
        let null_bytes = portable(&self.nulls)?;
        let mut body: Vec<u8> = Vec::new();
        if self.nulls.len() > 1 {
            body.extend_from_slice(&null_bytes);
        }
        // (value, offset or -1 - row, serialized length or -1), in Paimon's order
        let mut entries: Vec<(&Owned, i32, i32)> = Vec::with_capacity(self.values.len());
        for i in self.java_order() {
            let (value, rows) = &self.values[i];
            if rows.len() == 1 {
                entries.push((value, single(rows), -1));
            } else {
                let bytes = portable(rows)?;
                entries.push((value, to_i32(body.len())?, to_i32(bytes.len())?));
                body.extend_from_slice(&bytes);
            }
        }
        let null_offset = if self.nulls.len() == 1 {
            single(&self.nulls)
        } else {
            0
        };
        let has_nulls = !self.nulls.is_empty();
        let mut out = Vec::with_capacity(64 + body.len());
        out.push(match self.version {
            BitmapVersion::V1 => 1,
            BitmapVersion::V2 { .. } => 2,
        });
        out.extend_from_slice(&self.rows.to_be_bytes());
        out.extend_from_slice(&to_i32(self.values.len())?.to_be_bytes());
        out.push(has_nulls as u8);
        match self.version {
            BitmapVersion::V1 => {
                if has_nulls {
                    out.extend_from_slice(&null_offset.to_be_bytes());
                }
                for (value, offset, _) in &entries {
                    self.write_key(&mut out, value)?;
                    out.extend_from_slice(&offset.to_be_bytes());
                }
            }
            BitmapVersion::V2 { block_size } => {
                if has_nulls {
                    out.extend_from_slice(&null_offset.to_be_bytes());
                    out.extend_from_slice(&to_i32(null_bytes.len())?.to_be_bytes());
                }
                entries.sort_by(|a, b| self.compare(a.0, b.0));
                self.write_blocks(&mut out, &entries, block_size)?;
            }
        }
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// The order Paimon's writer lists the values in (the dictionary of version 1 and the
    /// bitmaps of both versions): its values are the keys of a Java `HashMap` filled in row
    /// order, listed as that map iterates them (`java_order`). Were Java's own order to rest
    /// on identity hash codes (distinct values with equal hashes that also compare equal,
    /// which none of the indexed types has), the values would keep their first-seen order:
    /// a valid index, just not Paimon's bytes.
    fn java_order(&self) -> Vec<usize> {
        let hashes: Vec<i32> = self.values.iter().map(|(v, _)| self.java_hash(v)).collect();
        java_order::iteration_order(
            &hashes,
            |a, b| self.compare(&self.values[a].0, &self.values[b].0),
            self.repeat_after_last_new,
        )
        .unwrap_or_else(|| (0..self.values.len()).collect())
    }

    /// Java's `hashCode` of a value as Paimon's writer keys it: `Byte`, `Short`, `Integer`
    /// their value; `Long` and `Double` (its canonical bits) the two halves xor-ed; `Float`
    /// its canonical bits; `Boolean` 1231 or 1237; a `BinaryString` Paimon's Murmur3 of its
    /// bytes.
    fn java_hash(&self, value: &Owned) -> i32 {
        match value {
            Owned::Bytes(b) => murmur_bytes(b),
            Owned::Fixed(v) => match self.key_type {
                KeyType::Bool => {
                    if *v != 0 {
                        1231
                    } else {
                        1237
                    }
                }
                KeyType::Long | KeyType::Double => (*v ^ (*v >> 32)) as i32,
                _ => *v as i32,
            },
        }
    }

    /// Version 2's dictionary: blocks filled in value order while their size (an entry count,
    /// then per entry its value, offset and length) stays within `block_size` (a value too
    /// large for any block gets one of its own); the directory of each block's first value
    /// and offset; the directory's end; the blocks.
    fn write_blocks(
        &self,
        out: &mut Vec<u8>,
        entries: &[(&Owned, i32, i32)],
        block_size: u64,
    ) -> Result<()> {
        let mut blocks: Vec<(usize, usize, u64)> = Vec::new(); // (first, end, bytes)
        for (i, (value, _, _)) in entries.iter().enumerate() {
            let entry = 8 + self.key_size(value) as u64;
            match blocks.last_mut() {
                Some((_, end, bytes)) if *bytes + entry <= block_size => {
                    *end = i + 1;
                    *bytes += entry;
                }
                _ => blocks.push((i, i + 1, 4 + entry)),
            }
        }
        out.extend_from_slice(&to_i32(blocks.len())?.to_be_bytes());
        let mut offset = 0u64;
        for (first, _, bytes) in &blocks {
            self.write_key(out, entries[*first].0)?;
            out.extend_from_slice(&to_i32(offset as usize)?.to_be_bytes());
            offset += bytes;
        }
        out.extend_from_slice(&to_i32(offset as usize)?.to_be_bytes());
        for (first, end, _) in &blocks {
            out.extend_from_slice(&to_i32(end - first)?.to_be_bytes());
            for (value, offset, length) in &entries[*first..*end] {
                self.write_key(out, value)?;
                out.extend_from_slice(&offset.to_be_bytes());
                out.extend_from_slice(&length.to_be_bytes());
            }
        }
        Ok(())
    }

    /// A value as Java's `DataOutput` writes the column's type.
    fn write_key(&self, out: &mut Vec<u8>, value: &Owned) -> Result<()> {
        match (self.key_type, value) {
            (KeyType::Str, Owned::Bytes(b)) => {
                out.extend_from_slice(&to_i32(b.len())?.to_be_bytes());
                out.extend_from_slice(b);
            }
            (KeyType::Bool | KeyType::Byte, Owned::Fixed(v)) => out.push(*v as u8),
            (KeyType::Short, Owned::Fixed(v)) => out.extend_from_slice(&(*v as u16).to_be_bytes()),
            (KeyType::Int | KeyType::Float, Owned::Fixed(v)) => {
                out.extend_from_slice(&(*v as u32).to_be_bytes())
            }
            (KeyType::Long | KeyType::Double, Owned::Fixed(v)) => {
                out.extend_from_slice(&v.to_be_bytes())
            }
            (t, _) => {
                return Err(Error::internal(format!(
                    "a bitmap index value does not match its column family {t:?}"
                )))
            }
        }
        Ok(())
    }

    fn key_size(&self, value: &Owned) -> usize {
        match value {
            Owned::Bytes(b) => 4 + b.len(),
            Owned::Fixed(_) => match self.key_type {
                KeyType::Bool | KeyType::Byte => 1,
                KeyType::Short => 2,
                KeyType::Int | KeyType::Float => 4,
                _ => 8,
            },
        }
    }

    /// Paimon's order of the column's values: strings by unsigned bytes, integers signed,
    /// floats by `Float.compare` (the total order, NaN canonical), `false` before `true`.
    fn compare(&self, a: &Owned, b: &Owned) -> std::cmp::Ordering {
        match (a, b) {
            (Owned::Fixed(x), Owned::Fixed(y)) => match self.key_type {
                KeyType::Float => f32::from_bits(*x as u32).total_cmp(&f32::from_bits(*y as u32)),
                KeyType::Double => f64::from_bits(*x).total_cmp(&f64::from_bits(*y)),
                KeyType::Bool => x.cmp(y),
                _ => (*x as i64).cmp(&(*y as i64)),
            },
            _ => a.cmp(b),
        }
    }
}

/// Paimon's `MurmurHashUtils.hashBytes` with seed 42 (a `BinaryString`'s hash code): the
/// 4-byte words little endian (the JVM's native order on the platforms Paimon runs on), then
/// each remaining byte, sign-extended, mixed alone.
fn murmur_bytes(b: &[u8]) -> i32 {
    fn mix_k1(k: u32) -> u32 {
        k.wrapping_mul(0xcc9e_2d51)
            .rotate_left(15)
            .wrapping_mul(0x1b87_3593)
    }
    fn mix_h1(h: u32, k: u32) -> u32 {
        (h ^ k)
            .rotate_left(13)
            .wrapping_mul(5)
            .wrapping_add(0xe654_6b64)
    }
    let mut h = 42u32;
    let words = b.chunks_exact(4);
    let tail = words.remainder();
    for w in words {
        h = mix_h1(h, mix_k1(u32::from_le_bytes(w.try_into().unwrap())));
    }
    for &x in tail {
        h = mix_h1(h, mix_k1(x as i8 as i32 as u32));
    }
    h ^= b.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h as i32
}

/// `-1 - row` of a bitmap holding exactly one row.
fn single(rows: &RoaringBitmap) -> i32 {
    -1 - rows.min().unwrap_or(0) as i32
}

fn to_i32(n: usize) -> Result<i32> {
    i32::try_from(n)
        .map_err(|_| Error::unsupported(format!("a bitmap file index of more than 2 GB ({n})")))
}

/// A bitmap run-optimized and serialized as Paimon's `RoaringBitmap32.serialize` does.
pub(super) fn portable(rows: &RoaringBitmap) -> Result<Vec<u8>> {
    let mut rows = rows.clone();
    rows.optimize();
    let mut out = Vec::with_capacity(rows.serialized_size());
    rows.serialize_into(&mut out)
        .map_err(|e| Error::internal(format!("serializing a bitmap: {e}")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_i32(b: &[u8], at: usize) -> i32 {
        i32::from_be_bytes(b[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn version_1_lists_values_with_offsets_or_single_rows() {
        let mut ix = BitmapIndex::new(KeyType::Int, BitmapVersion::V1);
        // rows: 7, null, 7, 9, null
        for k in [Some(7), None, Some(7), Some(9), None] {
            ix.add(k.map(Key::Int)).unwrap();
        }
        let b = ix.serialize().unwrap();
        assert_eq!(b[0], 1);
        assert_eq!(read_i32(&b, 1), 5); // rows
        assert_eq!(read_i32(&b, 5), 2); // distinct non-null values
        assert_eq!(b[9], 1); // has nulls
        assert_eq!(read_i32(&b, 10), 0); // the null bitmap comes first in the body
        let nulls = portable(&[1u32, 4].into_iter().collect()).unwrap();
        // 7's bitmap follows the null bitmap in the body; 9 is row 3 alone.
        assert_eq!(
            (read_i32(&b, 14), read_i32(&b, 18)),
            (7, nulls.len() as i32)
        );
        assert_eq!((read_i32(&b, 22), read_i32(&b, 26)), (9, -1 - 3));
        let body = &b[30..];
        assert_eq!(&body[..nulls.len()], &nulls[..]);
        let sevens = RoaringBitmap::deserialize_from(&body[nulls.len()..]).unwrap();
        assert_eq!(sevens.iter().collect::<Vec<_>>(), vec![0, 2]);
    }

    #[test]
    fn version_2_sorts_values_into_blocks() {
        let mut ix = BitmapIndex::new(KeyType::Str, BitmapVersion::V2 { block_size: 30 });
        for s in ["b", "a", "c", "b", "a"] {
            ix.add(Some(Key::Bytes(s.as_bytes()))).unwrap();
        }
        let b = ix.serialize().unwrap();
        assert_eq!(b[0], 2);
        assert_eq!(b[9], 0); // no nulls
                             // Entries are 8 + 4 + 1 = 13 bytes; a block holds 4 + 13 + 13 = 30: two blocks.
        assert_eq!(read_i32(&b, 10), 2);
        // Directory: "a" at 0, "c" at 30; then the end of the blocks.
        assert_eq!(&b[14..19], &[0, 0, 0, 1, b'a']);
        assert_eq!(read_i32(&b, 19), 0);
        assert_eq!(&b[23..28], &[0, 0, 0, 1, b'c']);
        assert_eq!(read_i32(&b, 28), 30);
        assert_eq!(read_i32(&b, 32), 30 + 17);
        // First block: two entries, "a" then "b", with their offsets and lengths.
        assert_eq!(read_i32(&b, 36), 2);
        assert_eq!(&b[40..45], &[0, 0, 0, 1, b'a']);
        // Bodies in Java's HashMap order, here "a" (rows 1 and 4) at 0, then "b" (0 and 3).
        let a_len = read_i32(&b, 49);
        assert_eq!(read_i32(&b, 45), 0);
        assert_eq!((read_i32(&b, 58), read_i32(&b, 62)), (a_len, a_len));
        // Second block: "c", row 2 alone.
        assert_eq!(read_i32(&b, 66), 1);
        assert_eq!((read_i32(&b, 75), read_i32(&b, 79)), (-1 - 2, -1));
    }

    #[test]
    fn booleans_need_version_2() {
        assert!(!indexes(KeyType::Bool, BitmapVersion::V1));
        assert!(indexes(KeyType::Bool, BitmapVersion::V2 { block_size: 16 }));
        assert!(!indexes(KeyType::Bin, BitmapVersion::V1));
        assert!(!indexes(KeyType::Decimal, BitmapVersion::V1));
    }
}
