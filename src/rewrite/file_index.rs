//! Paimon's file indexes on the files we write (format.md §6, "File indexes"): with
//! `file-index.bloom-filter.columns`, every new data file gets a bloom filter per named column
//! in Paimon's file-index format, embedded in its manifest entry when it is at most
//! `file-index.in-manifest-threshold` (default 500 bytes), else written beside the file as
//! `<file>.index` and listed in the entry's extra files. Paimon's readers then skip files that
//! cannot hold a looked-up value, after our compaction as before it.
//!
//! The filter is Paimon's `BloomFilter64` bit for bit: sized from `.items` (default 1 000 000)
//! and `.fpp` (default 0.1), fed with 64-bit hashes (XXH64 of the bytes of strings and
//! binaries, Thomas Wang's integer hash of numbers, dates, times and timestamps), so a reader
//! that hashes a literal finds the bits our writer set. The other index types (`bitmap`,
//! `bsi`, `range-bitmap`) are not written: their files are then read instead of skipped, which
//! is slower and never wrong.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    Time32MillisecondType, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Schema, TimeUnit};

use crate::error::{Error, Result};
use crate::options::parse_memory_size;
use crate::options::CoreOptions;
use crate::storage::Storage;

const COLUMNS_KEY: &str = "file-index.bloom-filter.columns";
const THRESHOLD_KEY: &str = "file-index.in-manifest-threshold";
const DEFAULT_THRESHOLD: u64 = 500;
const DEFAULT_ITEMS: u64 = 1_000_000;
const DEFAULT_FPP: f64 = 0.1;
/// The file-index format's magic number and version.
const MAGIC: i64 = 1_493_475_289_347_502;
const VERSION: i32 = 1;
const BLOOM_FILTER: &str = "bloom-filter";

/// The bloom filters a table asks for, from its options.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FileIndexSpec {
    /// Column name, expected items, false-positive probability.
    columns: Vec<(String, u64, f64)>,
    threshold: u64,
}

impl FileIndexSpec {
    /// `None` when the table names no bloom-filter column.
    pub(crate) fn from_options(options: &CoreOptions) -> Result<Option<Arc<Self>>> {
        let Some(list) = options.raw.get(COLUMNS_KEY) else {
            return Ok(None);
        };
        let mut columns = Vec::new();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let get = |option: &str| {
                options
                    .raw
                    .get(&format!("file-index.bloom-filter.{name}.{option}"))
            };
            let items = match get("items") {
                None => DEFAULT_ITEMS,
                Some(v) => v
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| {
                        Error::invalid_option(
                            &format!("file-index.bloom-filter.{name}.items"),
                            v,
                            "expected a positive number of items",
                        )
                    })?,
            };
            let fpp = match get("fpp") {
                None => DEFAULT_FPP,
                Some(v) => v
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|p| *p > 0.0 && *p < 1.0)
                    .ok_or_else(|| {
                        Error::invalid_option(
                            &format!("file-index.bloom-filter.{name}.fpp"),
                            v,
                            "expected a probability between 0 and 1",
                        )
                    })?,
            };
            columns.push((name.to_string(), items, fpp));
        }
        if columns.is_empty() {
            return Ok(None);
        }
        let threshold = match options.raw.get(THRESHOLD_KEY) {
            None => DEFAULT_THRESHOLD,
            Some(v) => {
                parse_memory_size(v).map_err(|e| Error::invalid_option(THRESHOLD_KEY, v, e))?
            }
        };
        Ok(Some(Arc::new(FileIndexSpec { columns, threshold })))
    }

    /// A builder for one file whose batches have `schema` (the indexed columns found by name).
    /// A column the file lacks, or of a type Paimon cannot index, is an error: Paimon's
    /// writers fail on both, so no such table was written by them.
    pub(crate) fn builder(&self, schema: &Schema) -> Result<FileIndexBuilder> {
        let mut columns = Vec::with_capacity(self.columns.len());
        for (name, items, fpp) in &self.columns {
            let (index, field) = schema.column_with_name(name).ok_or_else(|| {
                Error::invalid_option(
                    COLUMNS_KEY,
                    name,
                    format!("'{name}' is not a column of the table"),
                )
            })?;
            if !hashable(field.data_type()) {
                return Err(Error::unsupported(format!(
                    "a bloom-filter file index on '{name}' of type {} (Paimon indexes no such \
                     column either)",
                    field.data_type()
                )));
            }
            columns.push(Column {
                name: name.clone(),
                index,
                filter: BloomFilter64::new(*items, *fpp),
            });
        }
        Ok(FileIndexBuilder {
            columns,
            threshold: self.threshold,
        })
    }
}

#[derive(Clone)]
struct Column {
    name: String,
    index: usize,
    filter: BloomFilter64,
}

/// The file index of one file being written (a clone of an empty one starts the next file).
#[derive(Clone)]
pub(crate) struct FileIndexBuilder {
    columns: Vec<Column>,
    threshold: u64,
}

/// Where a file's index went.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FileIndex {
    /// In the manifest entry (`_EMBEDDED_FILE_INDEX`).
    Embedded(Vec<u8>),
    /// Beside the data file, named in the entry's extra files.
    File {
        /// The index file's name (`<data file>.index`).
        name: String,
        /// Its path relative to the storage root.
        path: String,
    },
}

impl FileIndex {
    /// The index file written beside the data file, if the index is not embedded: what a
    /// failed rewrite deletes with the data file.
    pub fn written_file(index: Option<&FileIndex>) -> Vec<&str> {
        match index {
            Some(FileIndex::File { path, .. }) => vec![path.as_str()],
            _ => Vec::new(),
        }
    }

    /// The manifest entry's `_EXTRA_FILES` and `_EMBEDDED_FILE_INDEX` for a file with
    /// `index`.
    pub fn manifest_fields(index: Option<&FileIndex>) -> (Vec<String>, Option<Vec<u8>>) {
        match index {
            None => (Vec::new(), None),
            Some(FileIndex::Embedded(bytes)) => (Vec::new(), Some(bytes.clone())),
            Some(FileIndex::File { name, .. }) => (vec![name.clone()], None),
        }
    }
}

impl FileIndexBuilder {
    /// Adds the values of a batch about to be written.
    pub(crate) fn add(&mut self, batch: &RecordBatch) -> Result<()> {
        for c in &mut self.columns {
            add_column(&mut c.filter, batch.column(c.index).as_ref())?;
        }
        Ok(())
    }

    /// Serializes the index and stores it for the data file at `data_path` (named
    /// `data_name`): embedded up to the threshold, else as `<data_path>.index`.
    pub(crate) fn finish(
        self,
        storage: &dyn Storage,
        data_path: &str,
        data_name: &str,
    ) -> Result<FileIndex> {
        let bytes = self.serialize();
        if bytes.len() as u64 <= self.threshold {
            return Ok(FileIndex::Embedded(bytes));
        }
        let path = format!("{data_path}.index");
        storage.write_all(&path, &bytes)?;
        Ok(FileIndex::File {
            name: format!("{data_name}.index"),
            path,
        })
    }

    /// Paimon's file-index format, version 1: magic, version, head length, then per column
    /// its name and per index type its name, body offset and length, a zero "redundant"
    /// length, and the bodies.
    fn serialize(&self) -> Vec<u8> {
        let bodies: Vec<Vec<u8>> = self.columns.iter().map(|c| c.filter.serialize()).collect();
        let names: usize = self
            .columns
            .iter()
            .map(|c| java_utf(&c.name).len() + java_utf(BLOOM_FILTER).len())
            .sum();
        let n = self.columns.len();
        let head = 8 + 4 + 4 + 4 + n * 8 + n * 4 + 4 + names;
        let mut out = Vec::with_capacity(head + bodies.iter().map(Vec::len).sum::<usize>());
        out.extend_from_slice(&MAGIC.to_be_bytes());
        out.extend_from_slice(&VERSION.to_be_bytes());
        out.extend_from_slice(&(head as i32).to_be_bytes());
        out.extend_from_slice(&(n as i32).to_be_bytes());
        let mut offset = head;
        for (c, body) in self.columns.iter().zip(&bodies) {
            out.extend_from_slice(&java_utf(&c.name));
            out.extend_from_slice(&1i32.to_be_bytes());
            out.extend_from_slice(&java_utf(BLOOM_FILTER));
            out.extend_from_slice(&(offset as i32).to_be_bytes());
            out.extend_from_slice(&(body.len() as i32).to_be_bytes());
            offset += body.len();
        }
        out.extend_from_slice(&0i32.to_be_bytes());
        for body in &bodies {
            out.extend_from_slice(body);
        }
        out
    }
}

/// Java's `DataOutput.writeUTF`: a 2-byte length, then modified UTF-8 (NUL as two bytes,
/// characters beyond the BMP as two 3-byte surrogates).
fn java_utf(s: &str) -> Vec<u8> {
    let mut body = Vec::with_capacity(s.len());
    for unit in s.encode_utf16() {
        match unit {
            0x0001..=0x007F => body.push(unit as u8),
            0x0000 | 0x0080..=0x07FF => {
                body.push(0xC0 | (unit >> 6) as u8);
                body.push(0x80 | (unit & 0x3F) as u8);
            }
            _ => {
                body.push(0xE0 | (unit >> 12) as u8);
                body.push(0x80 | ((unit >> 6) & 0x3F) as u8);
                body.push(0x80 | (unit & 0x3F) as u8);
            }
        }
    }
    let mut out = (body.len() as u16).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

/// Paimon's `BloomFilter64`.
#[derive(Clone)]
struct BloomFilter64 {
    num_hash_functions: i32,
    bits: Vec<u8>,
}

impl BloomFilter64 {
    fn new(items: u64, fpp: f64) -> Self {
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

    fn add_hash(&mut self, hash64: i64) {
        for pos in self.positions(hash64) {
            self.bits[pos >> 3] |= 1 << (pos & 7);
        }
    }

    #[cfg(test)]
    fn contains(&self, hash64: i64) -> bool {
        self.positions(hash64)
            .all(|pos| self.bits[pos >> 3] & (1 << (pos & 7)) != 0)
    }

    /// The number of hash functions (4 bytes, big endian), then the bit set.
    fn serialize(&self) -> Vec<u8> {
        let mut out = self.num_hash_functions.to_be_bytes().to_vec();
        out.extend_from_slice(&self.bits);
        out
    }
}

/// Thomas Wang's 64-bit integer hash, as Paimon's `FastHash.getLongHash` computes it.
fn long_hash(mut key: i64) -> i64 {
    key = (!key).wrapping_add(key << 21);
    key ^= key >> 24;
    key = key.wrapping_add(key << 3).wrapping_add(key << 8);
    key ^= key >> 14;
    key = key.wrapping_add(key << 2).wrapping_add(key << 4);
    key ^= key >> 28;
    key.wrapping_add(key << 31)
}

fn bytes_hash(b: &[u8]) -> i64 {
    twox_hash::XxHash64::oneshot(0, b) as i64
}

/// Whether Paimon's `FastHash` hashes this column type.
fn hashable(t: &DataType) -> bool {
    match t {
        DataType::Dictionary(_, v) => hashable(v),
        DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_)
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::Float32
        | DataType::Float64
        | DataType::Date32
        | DataType::Time32(TimeUnit::Millisecond)
        | DataType::Timestamp(_, _) => true,
        _ => false,
    }
}

/// Adds every non-null value of `col` (nulls are not indexed, as in Paimon).
fn add_column(filter: &mut BloomFilter64, col: &dyn Array) -> Result<()> {
    macro_rules! ints {
        ($t:ty, $f:expr) => {{
            let a = col.as_primitive::<$t>();
            for v in a.iter().flatten() {
                filter.add_hash(long_hash($f(v)));
            }
        }};
    }
    match col.data_type() {
        DataType::Dictionary(_, v) => {
            let plain = arrow_cast::cast(col, v)
                .map_err(|e| Error::internal(format!("file index of a dictionary column: {e}")))?;
            return add_column(filter, plain.as_ref());
        }
        DataType::Utf8 => col
            .as_string::<i32>()
            .iter()
            .flatten()
            .for_each(|s| filter.add_hash(bytes_hash(s.as_bytes()))),
        DataType::LargeUtf8 => col
            .as_string::<i64>()
            .iter()
            .flatten()
            .for_each(|s| filter.add_hash(bytes_hash(s.as_bytes()))),
        DataType::Utf8View => col
            .as_string_view()
            .iter()
            .flatten()
            .for_each(|s| filter.add_hash(bytes_hash(s.as_bytes()))),
        DataType::Binary => col
            .as_binary::<i32>()
            .iter()
            .flatten()
            .for_each(|b| filter.add_hash(bytes_hash(b))),
        DataType::LargeBinary => col
            .as_binary::<i64>()
            .iter()
            .flatten()
            .for_each(|b| filter.add_hash(bytes_hash(b))),
        DataType::BinaryView => col
            .as_binary_view()
            .iter()
            .flatten()
            .for_each(|b| filter.add_hash(bytes_hash(b))),
        DataType::FixedSizeBinary(_) => {
            let a = col.as_fixed_size_binary();
            for i in 0..a.len() {
                if a.is_valid(i) {
                    filter.add_hash(bytes_hash(a.value(i)));
                }
            }
        }
        DataType::Int8 => ints!(Int8Type, |v: i8| v as i64),
        DataType::Int16 => ints!(Int16Type, |v: i16| v as i64),
        DataType::Int32 => ints!(Int32Type, |v: i32| v as i64),
        DataType::Int64 => ints!(Int64Type, |v: i64| v),
        DataType::Date32 => ints!(Date32Type, |v: i32| v as i64),
        DataType::Time32(TimeUnit::Millisecond) => ints!(Time32MillisecondType, |v: i32| v as i64),
        // Java's floatToIntBits / doubleToLongBits: one canonical NaN.
        DataType::Float32 => ints!(Float32Type, |v: f32| {
            (if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() }) as i32 as i64
        }),
        DataType::Float64 => ints!(Float64Type, |v: f64| {
            (if v.is_nan() {
                0x7ff8_0000_0000_0000
            } else {
                v.to_bits()
            }) as i64
        }),
        // Precision up to 3: the millisecond; above: the microsecond (floored), as Paimon's
        // `Timestamp.getMillisecond` and `toMicros` give them.
        DataType::Timestamp(TimeUnit::Second, _) => {
            ints!(TimestampSecondType, |v: i64| v.wrapping_mul(1000))
        }
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            ints!(TimestampMillisecondType, |v: i64| v)
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            ints!(TimestampMicrosecondType, |v: i64| v)
        }
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            ints!(TimestampNanosecondType, |v: i64| v.div_euclid(1000))
        }
        other => {
            return Err(Error::unsupported(format!(
                "a bloom-filter file index over {other}"
            )))
        }
    }
    Ok(())
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

    #[test]
    fn java_utf_is_modified_utf8() {
        assert_eq!(java_utf("id"), vec![0, 2, b'i', b'd']);
        assert_eq!(java_utf("\0"), vec![0, 2, 0xC0, 0x80]);
        assert_eq!(java_utf("é"), vec![0, 2, 0xC3, 0xA9]);
        assert_eq!(java_utf("😀").len(), 2 + 6);
    }

    #[test]
    fn an_index_above_the_threshold_goes_beside_the_file_and_one_below_is_embedded() {
        use arrow_array::{Int64Array, StringArray};
        use arrow_schema::Field;
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("name", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])),
                Arc::new(StringArray::from(vec![Some("a"), Some("b"), None])),
            ],
        )
        .unwrap();
        let options = |pairs: &[(&str, &str)]| {
            CoreOptions::from_pairs(
                crate::options::TableKind::Append,
                crate::options::Flavor::Java,
                pairs.iter().copied(),
            )
            .unwrap()
        };
        let storage = crate::storage::MemoryStorage::new();
        // 100 items: 60 bytes of bits per column, embedded under the default 500 bytes.
        let small = options(&[
            (COLUMNS_KEY, "id,name"),
            ("file-index.bloom-filter.id.items", "100"),
            ("file-index.bloom-filter.name.items", "100"),
        ]);
        let spec = FileIndexSpec::from_options(&small).unwrap().unwrap();
        let mut b = spec.builder(&schema).unwrap();
        b.add(&batch).unwrap();
        let FileIndex::Embedded(bytes) = b
            .finish(&storage, "t/bucket-0/f.parquet", "f.parquet")
            .unwrap()
        else {
            panic!("expected an embedded index");
        };
        assert_eq!(&bytes[..8], &MAGIC.to_be_bytes());
        // Each value's bits are set: the reader's test of a written value passes.
        let filter_of = |b: &FileIndexBuilder, c: usize| b.columns[c].filter.clone();
        let mut probe = spec.builder(&schema).unwrap();
        probe.add(&batch).unwrap();
        let id = filter_of(&probe, 0);
        assert!(id.contains(long_hash(1)) && id.contains(long_hash(3)));
        let name = filter_of(&probe, 1);
        assert!(name.contains(bytes_hash(b"a")) && name.contains(bytes_hash(b"b")));
        // The default million items make a 599 KB filter: written beside the data file.
        let large = options(&[(COLUMNS_KEY, "id")]);
        let spec = FileIndexSpec::from_options(&large).unwrap().unwrap();
        let b = spec.builder(&schema).unwrap();
        let out = b
            .finish(&storage, "t/bucket-0/f.parquet", "f.parquet")
            .unwrap();
        assert_eq!(
            out,
            FileIndex::File {
                name: "f.parquet.index".into(),
                path: "t/bucket-0/f.parquet.index".into()
            }
        );
        assert!(storage.get("t/bucket-0/f.parquet.index").unwrap().len() > 500_000);
        // A column the table lacks, or of a type Paimon cannot index, is refused.
        let missing = options(&[(COLUMNS_KEY, "nope")]);
        let spec = FileIndexSpec::from_options(&missing).unwrap().unwrap();
        assert!(spec.builder(&schema).is_err());
    }
}
