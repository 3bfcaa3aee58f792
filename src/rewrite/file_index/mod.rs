//! Paimon's file indexes on the files we write (format.md §6, "File indexes"): with
//! `file-index.bloom-filter.columns`, `file-index.bitmap.columns`, `file-index.bsi.columns` or
//! `file-index.range-bitmap.columns`, every new data file gets the named indexes of its
//! columns in Paimon's file-index format, embedded in its manifest entry when they total at
//! most `file-index.in-manifest-threshold` (default 500 bytes), else written beside the file
//! as `<file>.index` and listed in the entry's extra files. Paimon's readers then skip files
//! (and, for bitmaps, rows) that cannot hold a looked-up value, after our compaction as
//! before it.
//!
//! This module reads the options and assembles the format; each index type is its own module
//! (`bloom`, `bitmap`, `bsi`, `range_bitmap`) fed the values `keys` extracts. The
//! `range-bitmap` index (Paimon 1.3 and later) is written byte for byte as Paimon's writer
//! writes it, with its `chunk-size` option.

mod bitmap;
mod bloom;
mod bsi;
#[cfg(test)]
mod golden;
mod keys;
mod range_bitmap;

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::Schema;

use crate::error::{Error, Result};
use crate::options::parse_memory_size;
use crate::options::CoreOptions;
use crate::storage::Storage;

use bitmap::{BitmapIndex, BitmapVersion};
use bloom::BloomFilter64;
use bsi::BsiIndex;
use keys::{for_each_key, key_type, Key};
use range_bitmap::{chunk_limit, Encoding, RangeBitmapIndex};

const THRESHOLD_KEY: &str = "file-index.in-manifest-threshold";
const DEFAULT_THRESHOLD: u64 = 500;
const DEFAULT_ITEMS: u64 = 1_000_000;
const DEFAULT_FPP: f64 = 0.1;
const DEFAULT_BITMAP_BLOCK: u64 = 16 * 1024;
/// The file-index format's magic number and version.
const MAGIC: i64 = 1_493_475_289_347_502;
const VERSION: i32 = 1;

/// The index types we write, by their names in options and in the format.
const BLOOM_FILTER: &str = "bloom-filter";
const BITMAP: &str = "bitmap";
const BSI: &str = "bsi";
const RANGE_BITMAP: &str = "range-bitmap";

/// One index a table asks for, with its settings (a range bitmap's is its `chunk-size` in
/// bytes, `None` for the column type's default).
#[derive(Clone, Debug, PartialEq)]
enum IndexKind {
    BloomFilter { items: u64, fpp: f64 },
    Bitmap(BitmapVersion),
    Bsi,
    RangeBitmap(Option<u64>),
}

impl IndexKind {
    fn name(&self) -> &'static str {
        match self {
            IndexKind::BloomFilter { .. } => BLOOM_FILTER,
            IndexKind::Bitmap(_) => BITMAP,
            IndexKind::Bsi => BSI,
            IndexKind::RangeBitmap(_) => RANGE_BITMAP,
        }
    }
}

/// The file indexes a table asks for, from its options.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FileIndexSpec {
    /// Column name and index, in the order the options list them (bloom filters first).
    indexes: Vec<(String, IndexKind)>,
    threshold: u64,
}

impl FileIndexSpec {
    /// `None` when the table names no indexed column.
    pub(crate) fn from_options(options: &CoreOptions) -> Result<Option<Arc<Self>>> {
        let mut indexes = Vec::new();
        for kind in [BLOOM_FILTER, BITMAP, BSI, RANGE_BITMAP] {
            let Some(list) = options.raw.get(&format!("file-index.{kind}.columns")) else {
                continue;
            };
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let index = match kind {
                    BLOOM_FILTER => IndexKind::BloomFilter {
                        items: column_option(
                            options,
                            kind,
                            name,
                            "items",
                            DEFAULT_ITEMS,
                            |v| v.parse::<u64>().ok().filter(|&n| n > 0),
                            "expected a positive number of items",
                        )?,
                        fpp: column_option(
                            options,
                            kind,
                            name,
                            "fpp",
                            DEFAULT_FPP,
                            |v| v.parse::<f64>().ok().filter(|p| *p > 0.0 && *p < 1.0),
                            "expected a probability between 0 and 1",
                        )?,
                    },
                    BITMAP => {
                        let version = column_option(
                            options,
                            kind,
                            name,
                            "version",
                            1,
                            |v| v.parse::<u8>().ok().filter(|v| matches!(v, 1 | 2)),
                            "expected 1 or 2",
                        )?;
                        let block_size = column_option(
                            options,
                            kind,
                            name,
                            "index-block-size",
                            DEFAULT_BITMAP_BLOCK,
                            |v| parse_memory_size(v).ok().filter(|&n| n > 0),
                            "expected a positive memory size",
                        )?;
                        IndexKind::Bitmap(if version == 1 {
                            BitmapVersion::V1
                        } else {
                            BitmapVersion::V2 { block_size }
                        })
                    }
                    RANGE_BITMAP => IndexKind::RangeBitmap(column_option(
                        options,
                        kind,
                        name,
                        "chunk-size",
                        None,
                        |v| {
                            parse_memory_size(v)
                                .ok()
                                .filter(|&n| chunk_limit(n).is_some())
                                .map(Some)
                        },
                        "expected a memory size below 2 GB",
                    )?),
                    _ => IndexKind::Bsi,
                };
                indexes.push((name.to_string(), index));
            }
        }
        if indexes.is_empty() {
            return Ok(None);
        }
        let threshold = match options.raw.get(THRESHOLD_KEY) {
            None => DEFAULT_THRESHOLD,
            Some(v) => {
                parse_memory_size(v).map_err(|e| Error::invalid_option(THRESHOLD_KEY, v, e))?
            }
        };
        Ok(Some(Arc::new(FileIndexSpec { indexes, threshold })))
    }

    /// A builder for one file whose batches have `schema` (the indexed columns found by name).
    /// A column the file lacks, or of a type Paimon cannot index this way, is an error:
    /// Paimon's writers fail on both, so no such table was written by them. The one
    /// exception is a version-1 bitmap of a BOOLEAN column, which is left out (see
    /// `bitmap::indexes`): a missing index only makes readers read the file. `None` when no
    /// index is left.
    pub(crate) fn builder(&self, schema: &Schema) -> Result<Option<FileIndexBuilder>> {
        let mut columns = Vec::with_capacity(self.indexes.len());
        for (name, kind) in &self.indexes {
            let option = format!("file-index.{}.columns", kind.name());
            let (index, field) = schema.column_with_name(name).ok_or_else(|| {
                Error::invalid_option(
                    &option,
                    name,
                    format!("'{name}' is not a column of the table"),
                )
            })?;
            let refused = || {
                Error::unsupported(format!(
                    "a {} file index on '{name}' of type {} (Paimon indexes no such column \
                     either)",
                    kind.name(),
                    field.data_type()
                ))
            };
            let family = key_type(field.data_type()).ok_or_else(refused)?;
            let state = match kind {
                IndexKind::BloomFilter { items, fpp } => {
                    if !bloom::indexes(family) {
                        return Err(refused());
                    }
                    IndexState::Bloom(BloomFilter64::new(*items, *fpp))
                }
                IndexKind::Bitmap(version) => {
                    if family == keys::KeyType::Bool && *version == BitmapVersion::V1 {
                        continue;
                    }
                    if !bitmap::indexes(family, *version) {
                        return Err(refused());
                    }
                    IndexState::Bitmap(BitmapIndex::new(family, *version))
                }
                IndexKind::Bsi => {
                    if !bsi::indexes(family) {
                        return Err(refused());
                    }
                    IndexState::Bsi(BsiIndex::default())
                }
                IndexKind::RangeBitmap(chunk_size) => {
                    let encoding = Encoding::of(field.data_type()).ok_or_else(refused)?;
                    let bytes = chunk_size.unwrap_or_else(|| encoding.default_chunk_size());
                    let limit = chunk_limit(bytes).ok_or_else(|| {
                        Error::internal(format!("range-bitmap chunk size {bytes} unchecked"))
                    })?;
                    IndexState::RangeBitmap(RangeBitmapIndex::new(encoding, limit))
                }
            };
            columns.push(Column {
                name: name.clone(),
                index,
                kind: kind.name(),
                state,
            });
        }
        if columns.is_empty() {
            return Ok(None);
        }
        Ok(Some(FileIndexBuilder {
            columns,
            threshold: self.threshold,
        }))
    }
}

/// `file-index.<kind>.<column>.<option>`, parsed by `parse` (trimmed), else `default`.
fn column_option<T>(
    options: &CoreOptions,
    kind: &str,
    column: &str,
    option: &str,
    default: T,
    parse: impl Fn(&str) -> Option<T>,
    expected: &str,
) -> Result<T> {
    let key = format!("file-index.{kind}.{column}.{option}");
    match options.raw.get(&key) {
        None => Ok(default),
        Some(v) => parse(v.trim()).ok_or_else(|| Error::invalid_option(&key, v, expected)),
    }
}

/// An index's type name and serialized body.
type IndexBody = (&'static str, Vec<u8>);

/// One index of one column, being filled.
#[derive(Clone)]
enum IndexState {
    Bloom(BloomFilter64),
    Bitmap(BitmapIndex),
    Bsi(BsiIndex),
    RangeBitmap(RangeBitmapIndex),
}

impl IndexState {
    /// Records the next row's value (bloom filters skip nulls).
    fn add(&mut self, key: Option<Key<'_>>) -> Result<()> {
        match self {
            IndexState::Bloom(f) => {
                if let Some(k) = key {
                    f.add(k);
                }
                Ok(())
            }
            IndexState::Bitmap(b) => b.add(key),
            IndexState::Bsi(b) => b.add(key),
            IndexState::RangeBitmap(r) => r.add(key),
        }
    }

    fn serialize(&self) -> Result<Vec<u8>> {
        match self {
            IndexState::Bloom(f) => Ok(f.serialize()),
            IndexState::Bitmap(b) => b.serialize(),
            IndexState::Bsi(b) => b.serialize(),
            IndexState::RangeBitmap(r) => r.serialize(),
        }
    }
}

#[derive(Clone)]
struct Column {
    name: String,
    index: usize,
    /// The index type's name in the format (`IndexKind::name`).
    kind: &'static str,
    state: IndexState,
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
    /// Adds the values of a batch about to be written (rows numbered on from the last batch).
    pub(crate) fn add(&mut self, batch: &RecordBatch) -> Result<()> {
        for c in &mut self.columns {
            let state = &mut c.state;
            if let IndexState::RangeBitmap(r) = state {
                r.note_nans(batch.column(c.index).as_ref())?;
            }
            let mut failed = None;
            for_each_key(batch.column(c.index).as_ref(), &mut |k| {
                if failed.is_none() {
                    failed = state.add(k).err();
                }
            })?;
            if let Some(e) = failed {
                return Err(e);
            }
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
        let bytes = self.serialize()?;
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

    /// Paimon's file-index format, version 1: magic, version, head length, the number of
    /// columns, then per column its name, its number of indexes and per index its type name,
    /// body offset (from the start) and length; a zero "redundant" length; the bodies.
    fn serialize(&self) -> Result<Vec<u8>> {
        // Columns in first-listed order, each with its indexes.
        let mut grouped: Vec<(&str, Vec<IndexBody>)> = Vec::new();
        for c in &self.columns {
            let body = (c.kind, c.state.serialize()?);
            match grouped.iter_mut().find(|(n, _)| *n == c.name) {
                Some((_, v)) => v.push(body),
                None => grouped.push((&c.name, vec![body])),
            }
        }
        let mut head = 8 + 4 + 4 + 4 + 4;
        for (name, bodies) in &grouped {
            head += java_utf(name).len() + 4;
            head += bodies
                .iter()
                .map(|(t, _)| java_utf(t).len() + 8)
                .sum::<usize>();
        }
        let total = head
            + grouped
                .iter()
                .flat_map(|(_, b)| b)
                .map(|(_, b)| b.len())
                .sum::<usize>();
        let to_i32 = |n: usize| {
            i32::try_from(n).map_err(|_| {
                Error::unsupported(format!("a file index of more than 2 GB ({n} bytes)"))
            })
        };
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&MAGIC.to_be_bytes());
        out.extend_from_slice(&VERSION.to_be_bytes());
        out.extend_from_slice(&to_i32(head)?.to_be_bytes());
        out.extend_from_slice(&to_i32(grouped.len())?.to_be_bytes());
        let mut offset = head;
        for (name, bodies) in &grouped {
            out.extend_from_slice(&java_utf(name));
            out.extend_from_slice(&to_i32(bodies.len())?.to_be_bytes());
            for (kind, body) in bodies {
                out.extend_from_slice(&java_utf(kind));
                out.extend_from_slice(&to_i32(offset)?.to_be_bytes());
                out.extend_from_slice(&to_i32(body.len())?.to_be_bytes());
                offset += body.len();
            }
        }
        out.extend_from_slice(&0i32.to_be_bytes());
        for (_, bodies) in &grouped {
            for (_, body) in bodies {
                out.extend_from_slice(body);
            }
        }
        to_i32(out.len())?;
        Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::DataType;
    use bloom::{bytes_hash, long_hash};

    const COLUMNS_KEY: &str = "file-index.bloom-filter.columns";

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
        let mut b = spec.builder(&schema).unwrap().unwrap();
        b.add(&batch).unwrap();
        let FileIndex::Embedded(bytes) = b
            .finish(&storage, "t/bucket-0/f.parquet", "f.parquet")
            .unwrap()
        else {
            panic!("expected an embedded index");
        };
        assert_eq!(&bytes[..8], &MAGIC.to_be_bytes());
        // Each value's bits are set: the reader's test of a written value passes.
        let filter_of = |b: &FileIndexBuilder, c: usize| match &b.columns[c].state {
            IndexState::Bloom(f) => f.clone(),
            _ => panic!("expected a bloom filter"),
        };
        let mut probe = spec.builder(&schema).unwrap().unwrap();
        probe.add(&batch).unwrap();
        let id = filter_of(&probe, 0);
        assert!(id.contains(long_hash(1)) && id.contains(long_hash(3)));
        let name = filter_of(&probe, 1);
        assert!(name.contains(bytes_hash(b"a")) && name.contains(bytes_hash(b"b")));
        // The default million items make a 599 KB filter: written beside the data file.
        let large = options(&[(COLUMNS_KEY, "id")]);
        let spec = FileIndexSpec::from_options(&large).unwrap().unwrap();
        let b = spec.builder(&schema).unwrap().unwrap();
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

    fn options_of(pairs: &[(&str, &str)]) -> CoreOptions {
        CoreOptions::from_pairs(
            crate::options::TableKind::Append,
            crate::options::Flavor::Java,
            pairs.iter().copied(),
        )
        .unwrap()
    }

    #[test]
    fn bitmap_and_bsi_options_are_read_per_column_and_checked() {
        use arrow_schema::Field;
        let spec = FileIndexSpec::from_options(&options_of(&[
            ("file-index.bitmap.columns", "s, b"),
            ("file-index.bitmap.b.version", "2"),
            ("file-index.bitmap.b.index-block-size", "1 kb"),
            ("file-index.bsi.columns", "n"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            spec.indexes,
            vec![
                ("s".into(), IndexKind::Bitmap(BitmapVersion::V1)),
                (
                    "b".into(),
                    IndexKind::Bitmap(BitmapVersion::V2 { block_size: 1024 })
                ),
                ("n".into(), IndexKind::Bsi),
            ]
        );
        for (key, value) in [
            ("file-index.bitmap.s.version", "3"),
            ("file-index.bitmap.s.index-block-size", "lots"),
            ("file-index.bloom-filter.s.fpp", "1.5"),
        ] {
            let column = key.split('.').nth(1).unwrap();
            let err = FileIndexSpec::from_options(&options_of(&[
                (&format!("file-index.{column}.columns") as &str, "s"),
                (key, value),
            ]))
            .unwrap_err();
            assert!(
                matches!(&err.kind, crate::ErrorKind::InvalidOption { key: k, .. } if k == key),
                "{err}"
            );
            assert!(err.to_string().contains(key), "{err}");
        }
        let schema = Schema::new(vec![
            Field::new("s", DataType::Utf8, true),
            Field::new("b", DataType::Boolean, true),
            Field::new("f", DataType::Float64, true),
            Field::new("raw", DataType::Binary, true),
        ]);
        let refused = |pairs: &[(&str, &str)]| {
            let spec = FileIndexSpec::from_options(&options_of(pairs))
                .unwrap()
                .unwrap();
            spec.builder(&schema).err().map(|e| e.kind)
        };
        // Paimon indexes neither binaries in bitmaps nor strings, floats or booleans in bsi.
        let unsupported = Some(crate::ErrorKind::Unsupported);
        assert_eq!(
            refused(&[("file-index.bitmap.columns", "raw")]),
            unsupported
        );
        assert_eq!(refused(&[("file-index.bsi.columns", "s")]), unsupported);
        assert_eq!(refused(&[("file-index.bsi.columns", "f")]), unsupported);
        assert_eq!(
            refused(&[("file-index.bloom-filter.columns", "b")]),
            unsupported
        );
        // A version-1 bitmap of a boolean is left out; alone, no index is built at all.
        let spec = FileIndexSpec::from_options(&options_of(&[("file-index.bitmap.columns", "b")]))
            .unwrap()
            .unwrap();
        assert!(spec.builder(&schema).unwrap().is_none());
    }

    #[test]
    fn several_indexes_of_one_column_share_its_entry_in_the_head() {
        use arrow_array::Int64Array;
        use arrow_schema::Field;
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, true)]));
        let spec = FileIndexSpec::from_options(&options_of(&[
            ("file-index.bloom-filter.columns", "n"),
            ("file-index.bloom-filter.n.items", "10"),
            ("file-index.bitmap.columns", "n"),
            ("file-index.bsi.columns", "n"),
        ]))
        .unwrap()
        .unwrap();
        let mut b = spec.builder(&schema).unwrap().unwrap();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from(vec![Some(4), None, Some(-4)]))],
        )
        .unwrap();
        b.add(&batch).unwrap();
        let bytes = b.serialize().unwrap();
        // One column, three indexes, each body where the head says.
        assert_eq!(i32::from_be_bytes(bytes[16..20].try_into().unwrap()), 1);
        assert_eq!(&bytes[20..23], &[0, 1, b'n']);
        assert_eq!(i32::from_be_bytes(bytes[23..27].try_into().unwrap()), 3);
        let mut at = 27;
        let mut names = Vec::new();
        for state in &b.columns {
            let len = u16::from_be_bytes(bytes[at..at + 2].try_into().unwrap()) as usize;
            names.push(String::from_utf8(bytes[at + 2..at + 2 + len].to_vec()).unwrap());
            at += 2 + len;
            let start = i32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
            let length = i32::from_be_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
            at += 8;
            assert_eq!(
                &bytes[start..start + length],
                &state.state.serialize().unwrap()[..]
            );
        }
        assert_eq!(names, vec!["bloom-filter", "bitmap", "bsi"]);
        let head = i32::from_be_bytes(bytes[12..16].try_into().unwrap()) as usize;
        assert_eq!(at + 4, head);
    }
    #[test]
    fn range_bitmaps_are_written_as_paimons_with_their_chunk_size() {
        use arrow_array::{ArrayRef, BooleanArray, Int32Array};
        use arrow_schema::{Field, TimeUnit};
        // Options: `chunk-size` per column, checked; the type's default otherwise.
        let spec = FileIndexSpec::from_options(&options_of(&[
            ("file-index.range-bitmap.columns", "n, b"),
            ("file-index.range-bitmap.n.chunk-size", "8b"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            spec.indexes,
            vec![
                ("n".into(), IndexKind::RangeBitmap(Some(8))),
                ("b".into(), IndexKind::RangeBitmap(None)),
            ]
        );
        for value in ["lots", "3 gb", "-1"] {
            let key = "file-index.range-bitmap.n.chunk-size";
            let err = FileIndexSpec::from_options(&options_of(&[
                ("file-index.range-bitmap.columns", "n"),
                (key, value),
            ]))
            .unwrap_err();
            assert!(
                matches!(&err.kind, crate::ErrorKind::InvalidOption { key: k, .. } if k == key),
                "{err}"
            );
        }
        // Types Paimon's range bitmap refuses: binaries, decimals above precision 18,
        // timestamps above precision 6 (nanoseconds), nested columns.
        let schema = Schema::new(vec![
            Field::new("raw", DataType::Binary, true),
            Field::new("wide", DataType::Decimal128(19, 0), true),
            Field::new(
                "nanos",
                DataType::Timestamp(TimeUnit::Nanosecond, None),
                true,
            ),
            Field::new(
                "list",
                DataType::List(Arc::new(Field::new("e", DataType::Int32, true))),
                true,
            ),
            Field::new("narrow", DataType::Decimal128(18, 3), true),
        ]);
        for column in ["raw", "wide", "nanos", "list"] {
            let spec = FileIndexSpec::from_options(&options_of(&[(
                "file-index.range-bitmap.columns",
                column,
            )]))
            .unwrap()
            .unwrap();
            let err = spec.builder(&schema).err().map(|e| e.kind);
            assert_eq!(err, Some(crate::ErrorKind::Unsupported), "{column}");
        }
        let spec = FileIndexSpec::from_options(&options_of(&[(
            "file-index.range-bitmap.columns",
            "narrow",
        )]))
        .unwrap()
        .unwrap();
        assert!(spec.builder(&schema).unwrap().is_some());

        // A file of two batches: its index holds the column's range bitmap, the bytes Paimon
        // Java HEAD writes for the same rows (a golden vector of `range_bitmap`), and a
        // boolean's (never left out, unlike a version-1 bitmap).
        let golden = |name: &str| {
            let (_, _, _, values, hex) = range_bitmap::tests::GOLDEN
                .iter()
                .find(|g| g.0 == name)
                .unwrap();
            let values: Vec<Option<i64>> = values
                .split_whitespace()
                .map(|v| (v != "N").then(|| v.parse().unwrap()))
                .collect();
            let bytes: Vec<u8> = (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
                .collect();
            (values, bytes)
        };
        let (ints, int_index) = golden("int_nulls_dups_chunks");
        let (mut bools, bool_index) = golden("boolean_default");
        let schema = Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int32, true),
            Field::new("b", DataType::Boolean, true),
        ]));
        bools.resize(ints.len(), None);
        let batch = |from: usize, to: usize| {
            let n: ArrayRef = Arc::new(Int32Array::from(
                ints[from..to]
                    .iter()
                    .map(|v| v.map(|v| v as i32))
                    .collect::<Vec<_>>(),
            ));
            let b: ArrayRef = Arc::new(BooleanArray::from(
                bools[from..to]
                    .iter()
                    .map(|v| v.map(|v| v == 1))
                    .collect::<Vec<_>>(),
            ));
            RecordBatch::try_new(schema.clone(), vec![n, b]).unwrap()
        };
        let storage = crate::storage::MemoryStorage::new();
        let written = |threshold: &str| {
            let spec = FileIndexSpec::from_options(&options_of(&[
                ("file-index.range-bitmap.columns", "n"),
                ("file-index.range-bitmap.n.chunk-size", "8b"),
                ("file-index.in-manifest-threshold", threshold),
            ]))
            .unwrap()
            .unwrap();
            let mut b = spec.builder(&schema).unwrap().unwrap();
            b.add(&batch(0, 7)).unwrap();
            b.add(&batch(7, ints.len())).unwrap();
            b.finish(&storage, "t/bucket-0/f.parquet", "f.parquet")
                .unwrap()
        };
        // Head: magic, version, head length, one column "n" with one "range-bitmap" index.
        let mut head = Vec::new();
        head.extend_from_slice(&MAGIC.to_be_bytes());
        head.extend_from_slice(&1i32.to_be_bytes());
        let head_len: i32 = 8 + 4 + 4 + 4 + 3 + 4 + 14 + 8 + 4;
        head.extend_from_slice(&head_len.to_be_bytes());
        head.extend_from_slice(&1i32.to_be_bytes());
        head.extend_from_slice(&java_utf("n"));
        head.extend_from_slice(&1i32.to_be_bytes());
        head.extend_from_slice(&java_utf("range-bitmap"));
        head.extend_from_slice(&head_len.to_be_bytes());
        head.extend_from_slice(&(int_index.len() as i32).to_be_bytes());
        head.extend_from_slice(&0i32.to_be_bytes());
        let mut expected = head;
        expected.extend_from_slice(&int_index);
        assert_eq!(written("500 b"), FileIndex::Embedded(expected.clone()));
        assert!(expected.len() > 400);
        assert_eq!(
            written("400 b"),
            FileIndex::File {
                name: "f.parquet.index".into(),
                path: "t/bucket-0/f.parquet.index".into()
            }
        );
        assert_eq!(
            *storage.get("t/bucket-0/f.parquet.index").unwrap(),
            expected
        );

        // The boolean alone, at its default chunk size of 0 bytes (a chunk per value).
        let spec =
            FileIndexSpec::from_options(&options_of(&[("file-index.range-bitmap.columns", "b")]))
                .unwrap()
                .unwrap();
        let mut b = spec.builder(&schema).unwrap().unwrap();
        b.add(&batch(0, 6)).unwrap();
        let bytes = b.serialize().unwrap();
        assert_eq!(&bytes[bytes.len() - bool_index.len()..], &bool_index[..]);
    }
}
