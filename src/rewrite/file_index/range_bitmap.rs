//! Paimon's `range-bitmap` file index (Paimon 1.3 and later; format.md §6, "Range bitmaps"):
//! the column's distinct non-null values sorted into a dictionary that numbers them (their
//! codes) and is cut into chunks, plus a bit-sliced index of each row's code. A reader finds a
//! literal's code (or where it would sort) in the dictionary and answers equality, range and
//! null predicates from the slices; the header's minimum and maximum settle most lookups
//! without reading either.
//!
//! The bytes are those Paimon's own writer produces for the same values in the same row
//! order: values in Paimon's order (integers signed, floats by `Float.compare`, strings by
//! unsigned bytes, `false` before `true`), chunks filled up to
//! `file-index.range-bitmap.<column>.chunk-size` bytes of keys, bitmaps run-optimized in
//! RoaringBitmap's portable layout.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::Array;
use arrow_schema::{DataType, TimeUnit};
use roaring::RoaringBitmap;

use super::bitmap::portable;
use super::keys::Key;
use crate::error::{Error, Result};

/// The layout version of the index, of its bit-sliced part, its dictionary and each chunk.
const VERSION: u8 = 1;
/// The default chunk size of most types (Paimon's `16kb`).
const DEFAULT_CHUNK: u64 = 16 * 1024;

/// How a column's values are kept and written: one per key serializer of Paimon's writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Encoding {
    /// BOOLEAN: one byte, 0 or 1.
    Bool,
    /// TINYINT: one byte.
    Byte,
    /// SMALLINT: two bytes.
    Short,
    /// INT, DATE (days), TIME (milliseconds): four bytes.
    Int,
    /// BIGINT, TIMESTAMP and TIMESTAMP_LTZ up to precision 6, DECIMAL up to precision 18
    /// (unscaled): eight bytes.
    Long,
    /// FLOAT: its four bytes of IEEE bits.
    Float,
    /// DOUBLE: its eight bytes of IEEE bits.
    Double,
    /// CHAR, VARCHAR, STRING: a four-byte length, then the UTF-8 bytes.
    Str,
}

impl Encoding {
    /// The encoding of a column of Arrow type `t`, `None` for a type Paimon's range bitmap
    /// refuses: binaries, nested types, DECIMAL above precision 18 and timestamps above
    /// precision 6 (which our files hold as nanoseconds).
    pub(super) fn of(t: &DataType) -> Option<Encoding> {
        Some(match t {
            DataType::Dictionary(_, v) => return Encoding::of(v),
            DataType::Boolean => Encoding::Bool,
            DataType::Int8 => Encoding::Byte,
            DataType::Int16 => Encoding::Short,
            DataType::Int32 | DataType::Date32 | DataType::Time32(TimeUnit::Millisecond) => {
                Encoding::Int
            }
            DataType::Int64
            | DataType::Timestamp(
                TimeUnit::Second | TimeUnit::Millisecond | TimeUnit::Microsecond,
                _,
            ) => Encoding::Long,
            DataType::Decimal128(p, _) if *p <= 18 => Encoding::Long,
            DataType::Float32 => Encoding::Float,
            DataType::Float64 => Encoding::Double,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Encoding::Str,
            _ => return None,
        })
    }

    /// Paimon's default chunk size for the type: none for the one- and two-byte types
    /// (every value is then a chunk of its own), 16 kb for the others.
    pub(super) fn default_chunk_size(self) -> u64 {
        match self {
            Encoding::Bool | Encoding::Byte | Encoding::Short => 0,
            _ => DEFAULT_CHUNK,
        }
    }

    /// The serialized size of every value, `None` for strings.
    fn fixed_width(self) -> Option<usize> {
        match self {
            Encoding::Bool | Encoding::Byte => Some(1),
            Encoding::Short => Some(2),
            Encoding::Int | Encoding::Float => Some(4),
            Encoding::Long | Encoding::Double => Some(8),
            Encoding::Str => None,
        }
    }
}

/// A chunk size option as Paimon's writer takes it: the parsed byte count narrowed to a Java
/// `int` (its low 32 bits); `None` when that is negative, which Paimon fails on.
pub(super) fn chunk_limit(bytes: u64) -> Option<usize> {
    usize::try_from(bytes as u32 as i32).ok()
}

/// The range bitmap of one column of one file being written.
#[derive(Clone)]
pub(super) struct RangeBitmapIndex {
    encoding: Encoding,
    /// The most bytes of keys a chunk holds beyond its first key.
    chunk_limit: usize,
    rows: u32,
    /// Fixed-width values by their rank (the integer itself; for floats `rank_float` or
    /// `rank_double`, in Java's order), with their rows.
    fixed: HashMap<i64, RoaringBitmap>,
    /// Strings by their bytes, with their rows.
    bytes: HashMap<Vec<u8>, RoaringBitmap>,
    /// The bits of the first NaN written, as the column holds them: the keys are canonical,
    /// but Paimon's dictionary keeps (and serializes) the first NaN it is given.
    first_nan: Option<u64>,
}

/// A FLOAT's bits (NaN canonical) as an integer in `Float.compare` order: -0.0 just below
/// +0.0, NaN above +∞. The mapping is its own inverse on negatives (`unrank_float`).
fn rank_float(bits: u32) -> i64 {
    let v = bits as i32;
    (if v < 0 { v ^ i32::MAX } else { v }) as i64
}

fn unrank_float(rank: i64) -> u32 {
    let v = rank as i32;
    (if v < 0 { v ^ i32::MAX } else { v }) as u32
}

fn rank_double(bits: u64) -> i64 {
    let v = bits as i64;
    if v < 0 {
        v ^ i64::MAX
    } else {
        v
    }
}

fn unrank_double(rank: i64) -> u64 {
    rank_double(rank as u64) as u64
}

impl RangeBitmapIndex {
    pub(super) fn new(encoding: Encoding, chunk_limit: usize) -> Self {
        RangeBitmapIndex {
            encoding,
            chunk_limit,
            rows: 0,
            fixed: HashMap::new(),
            bytes: HashMap::new(),
            first_nan: None,
        }
    }

    /// Notes the bits of the first NaN of `col` (a batch about to be added) while no NaN has
    /// been seen yet.
    pub(super) fn note_nans(&mut self, col: &dyn Array) -> Result<()> {
        if self.first_nan.is_some() {
            return Ok(());
        }
        match col.data_type() {
            DataType::Dictionary(_, v) => {
                let plain = arrow_cast::cast(col, v).map_err(|e| {
                    Error::internal(format!("range-bitmap index of a dictionary column: {e}"))
                })?;
                return self.note_nans(plain.as_ref());
            }
            DataType::Float32 => {
                let nan = col
                    .as_primitive::<Float32Type>()
                    .iter()
                    .flatten()
                    .find(|f| f.is_nan());
                self.first_nan = nan.map(|f| f.to_bits() as u64);
            }
            DataType::Float64 => {
                let nan = col
                    .as_primitive::<Float64Type>()
                    .iter()
                    .flatten()
                    .find(|f| f.is_nan());
                self.first_nan = nan.map(f64::to_bits);
            }
            _ => {}
        }
        Ok(())
    }

    /// Records the next row's value (a null only takes its row number).
    pub(super) fn add(&mut self, key: Option<Key<'_>>) -> Result<()> {
        let row = self.rows;
        if row == i32::MAX as u32 {
            return Err(Error::unsupported(
                "a range-bitmap file index over more than 2^31 - 1 rows (Paimon numbers rows \
                 with a Java int)"
                    .to_string(),
            ));
        }
        self.rows += 1;
        let rank = match (self.encoding, key) {
            (_, None) => return Ok(()),
            (Encoding::Str, Some(Key::Bytes(b))) => {
                match self.bytes.get_mut(b) {
                    Some(rows) => {
                        rows.insert(row);
                    }
                    None => {
                        self.bytes
                            .insert(b.to_vec(), RoaringBitmap::from_iter([row]));
                    }
                }
                return Ok(());
            }
            (Encoding::Bool, Some(Key::Bool(b))) => b as i64,
            (
                Encoding::Byte | Encoding::Short | Encoding::Int | Encoding::Long,
                Some(Key::Int(v)),
            ) => v,
            (Encoding::Float, Some(Key::Float(bits))) => rank_float(bits),
            (Encoding::Double, Some(Key::Double(bits))) => rank_double(bits),
            (e, Some(other)) => {
                return Err(Error::internal(format!(
                    "a range-bitmap index of {e:?} values fed {other:?}"
                )))
            }
        };
        self.fixed.entry(rank).or_default().insert(row);
        Ok(())
    }

    /// A value as Paimon's key serializer writes it.
    fn write_fixed(&self, out: &mut Vec<u8>, rank: i64) {
        match self.encoding {
            Encoding::Bool | Encoding::Byte => out.push(rank as u8),
            Encoding::Short => out.extend_from_slice(&(rank as i16).to_be_bytes()),
            Encoding::Int => out.extend_from_slice(&(rank as i32).to_be_bytes()),
            Encoding::Long => out.extend_from_slice(&rank.to_be_bytes()),
            Encoding::Float => {
                let bits = match (f32::from_bits(unrank_float(rank)).is_nan(), self.first_nan) {
                    (true, Some(raw)) => raw as u32,
                    _ => unrank_float(rank),
                };
                out.extend_from_slice(&bits.to_be_bytes())
            }
            Encoding::Double => {
                let bits = match (f64::from_bits(unrank_double(rank)).is_nan(), self.first_nan) {
                    (true, Some(raw)) => raw,
                    _ => unrank_double(rank),
                };
                out.extend_from_slice(&bits.to_be_bytes())
            }
            Encoding::Str => unreachable!("strings are not fixed-width"),
        }
    }

    /// The distinct values in Paimon's order, each serialized, with their rows.
    fn sorted(&self) -> Result<Vec<(Vec<u8>, &RoaringBitmap)>> {
        if self.encoding == Encoding::Str {
            let mut values: Vec<_> = self.bytes.iter().collect();
            values.sort_unstable_by(|a, b| a.0.cmp(b.0));
            return values
                .into_iter()
                .map(|(b, rows)| {
                    let mut key = Vec::with_capacity(4 + b.len());
                    key.extend_from_slice(&to_i32(b.len())?.to_be_bytes());
                    key.extend_from_slice(b);
                    Ok((key, rows))
                })
                .collect();
        }
        let mut values: Vec<_> = self.fixed.iter().collect();
        values.sort_unstable_by_key(|(rank, _)| **rank);
        Ok(values
            .into_iter()
            .map(|(rank, rows)| {
                let mut key = Vec::with_capacity(8);
                self.write_fixed(&mut key, *rank);
                (key, rows)
            })
            .collect())
    }

    /// The index body: a length-prefixed header (version, row count, number of distinct
    /// values, the smallest and largest value when there is one, the dictionary's length),
    /// the dictionary, then the bit-sliced index of the rows' codes.
    pub(super) fn serialize(&self) -> Result<Vec<u8>> {
        let values = self.sorted()?;
        let dictionary = self.dictionary(&values)?;
        let slices = bit_slices(&values)?;
        let mut header = vec![VERSION];
        header.extend_from_slice(&(self.rows as i32).to_be_bytes());
        header.extend_from_slice(&to_i32(values.len())?.to_be_bytes());
        if let (Some(first), Some(last)) = (values.first(), values.last()) {
            header.extend_from_slice(&first.0);
            header.extend_from_slice(&last.0);
        }
        header.extend_from_slice(&to_i32(dictionary.len())?.to_be_bytes());
        let mut out = Vec::with_capacity(4 + header.len() + dictionary.len() + slices.len());
        out.extend_from_slice(&to_i32(header.len())?.to_be_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(&dictionary);
        out.extend_from_slice(&slices);
        Ok(out)
    }

    /// The chunked dictionary. Values are taken in order; each chunk starts with a value
    /// kept in its header (its code is the chunk's code) and then takes following values
    /// while their bytes fit the chunk limit (for strings, also their 4-byte offsets). A
    /// length-prefixed header (version, chunk count, the lengths of the chunk offsets and of
    /// the chunk headers), the chunk headers' offsets, the chunk headers, then the chunks'
    /// keys.
    fn dictionary(&self, values: &[(Vec<u8>, &RoaringBitmap)]) -> Result<Vec<u8>> {
        let limit = self.chunk_limit;
        let mut offsets = Vec::new();
        let mut heads = Vec::new();
        let mut keys = Vec::new();
        let mut chunks = 0usize;
        let mut at = 0;
        while at < values.len() {
            let first = &values[at].0;
            let code = at;
            let keys_offset = keys.len();
            let mut next = at + 1;
            offsets.extend_from_slice(&to_i32(heads.len())?.to_be_bytes());
            heads.push(VERSION);
            heads.extend_from_slice(first);
            heads.extend_from_slice(&to_i32(code)?.to_be_bytes());
            heads.extend_from_slice(&to_i32(keys_offset)?.to_be_bytes());
            match self.encoding.fixed_width() {
                Some(width) => {
                    let mut used = 0;
                    while next < values.len() && used + width <= limit {
                        keys.extend_from_slice(&values[next].0);
                        used += width;
                        next += 1;
                    }
                    heads.extend_from_slice(&to_i32(next - at - 1)?.to_be_bytes());
                    heads.extend_from_slice(&to_i32(used)?.to_be_bytes());
                    heads.extend_from_slice(&to_i32(width)?.to_be_bytes());
                }
                None => {
                    let (mut used, mut count) = (0, 0);
                    while next < values.len()
                        && used + values[next].0.len() <= limit
                        && 4 * (count + 1) <= limit
                    {
                        used += values[next].0.len();
                        count += 1;
                        next += 1;
                    }
                    // The chunk's keys: each key's offset among them, then the keys.
                    let mut position = 0;
                    for (key, _) in &values[at + 1..next] {
                        keys.extend_from_slice(&to_i32(position)?.to_be_bytes());
                        position += key.len();
                    }
                    for (key, _) in &values[at + 1..next] {
                        keys.extend_from_slice(key);
                    }
                    heads.extend_from_slice(&to_i32(count)?.to_be_bytes());
                    heads.extend_from_slice(&to_i32(4 * count)?.to_be_bytes());
                    heads.extend_from_slice(&to_i32(used)?.to_be_bytes());
                }
            }
            chunks += 1;
            at = next;
        }
        let mut out = Vec::with_capacity(17 + offsets.len() + heads.len() + keys.len());
        out.extend_from_slice(&13i32.to_be_bytes());
        out.push(VERSION);
        out.extend_from_slice(&to_i32(chunks)?.to_be_bytes());
        out.extend_from_slice(&to_i32(offsets.len())?.to_be_bytes());
        out.extend_from_slice(&to_i32(heads.len())?.to_be_bytes());
        out.extend_from_slice(&offsets);
        out.extend_from_slice(&heads);
        out.extend_from_slice(&keys);
        Ok(out)
    }
}

/// The bit-sliced index of the rows' codes (a value's code is its position in the sorted
/// dictionary): a length-prefixed header (version, slice count, the length of the bitmap of
/// rows with a value, the length of the slice directory, then per slice its offset after
/// that bitmap and its length), the bitmap of rows with a value, then per bit of the codes
/// the bitmap of the rows whose code has it set. As many slices as the largest code has bits
/// (at least one); with no value at all, 64.
fn bit_slices(values: &[(Vec<u8>, &RoaringBitmap)]) -> Result<Vec<u8>> {
    let count = match values.len() {
        0 => 64,
        n => (usize::BITS - (n - 1).leading_zeros()).max(1) as usize,
    };
    let mut present = RoaringBitmap::new();
    let mut slices = vec![RoaringBitmap::new(); count];
    for (code, (_, value_rows)) in values.iter().enumerate() {
        present |= *value_rows;
        let mut bits = code;
        while bits != 0 {
            slices[bits.trailing_zeros() as usize] |= *value_rows;
            bits &= bits - 1;
        }
    }
    let present = portable(&present)?;
    let slices = slices.iter().map(portable).collect::<Result<Vec<_>>>()?;
    let header_len = 1 + 1 + 4 + 4 + 8 * count;
    let body: usize = present.len() + slices.iter().map(Vec::len).sum::<usize>();
    let mut out = Vec::with_capacity(4 + header_len + body);
    out.extend_from_slice(&to_i32(header_len)?.to_be_bytes());
    out.push(VERSION);
    out.push(count as u8);
    out.extend_from_slice(&to_i32(present.len())?.to_be_bytes());
    out.extend_from_slice(&to_i32(8 * count)?.to_be_bytes());
    let mut offset = 0;
    for slice in &slices {
        out.extend_from_slice(&to_i32(offset)?.to_be_bytes());
        out.extend_from_slice(&to_i32(slice.len())?.to_be_bytes());
        offset += slice.len();
    }
    out.extend_from_slice(&present);
    for slice in &slices {
        out.extend_from_slice(slice);
    }
    Ok(out)
}

fn to_i32(n: usize) -> Result<i32> {
    i32::try_from(n).map_err(|_| {
        Error::unsupported(format!("a range-bitmap file index of more than 2 GB ({n})"))
    })
}

#[cfg(test)]
pub(super) mod tests;
