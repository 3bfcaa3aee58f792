//! The write side of dictionary passthrough: a column-chunk writer for one STRING column that
//! maps each *input dictionary* to output dictionary ids once, instead of hashing every row.
//!
//! arrow-rs's writer accepts a `DictionaryArray` but looks every row's value up again in its own
//! interner (one hash per row), so forwarding the reader's dictionaries saves the reader's
//! materialisation only. paimon-cpp's writer keeps the first dictionary of a row group and falls
//! back to plain when a second one arrives, which can grow the output. This writer does neither:
//!
//! * for every input dictionary it keeps a key → output-id table, filled lazily the first time a
//!   key is seen in the row group (one hash per *distinct value*), so each row costs one array
//!   lookup;
//! * ids are assigned in order of first appearance, exactly as a writer that materialised and
//!   re-hashed the values would, and every input dictionary merges into the one output dictionary
//!   of the row group, so the output has the same dictionary and the same pages as a plain
//!   rewrite (up to page boundaries) and does not grow;
//! * plain (materialised) string arrays are accepted too, hashed row by row, so an input file
//!   whose column fell back to plain mixes freely with encoded ones. That is also how every
//!   other STRING column is written by default ([`STRING_DICTIONARY_OPTION`]): one probe of an
//!   open-addressing table with stored hashes per row, where arrow-rs's interner hashes with
//!   ahash, probes `hashbrown` and calls `memcmp` (in the component, twice the native share).
//!
//! Pages follow parquet-rs's own choices (data page v1, PLAIN dictionary page, RLE_DICTIONARY
//! data pages, RLE definition levels, fallback to PLAIN once the dictionary page would exceed
//! `parquet.dictionary.page.size`), and are assembled with parquet-rs's public page writer, so the
//! headers, offsets and the column chunk metadata are written by parquet itself; only the value
//! encoding (RLE/bit-packing hybrid, PLAIN) and the codec calls live here.

use std::sync::Arc;

use super::column_chunk::ChunkPageStore;
use arrow::array::{Array, ArrayAccessor, ArrayRef, AsArray, DictionaryArray, StringArray};
use arrow::datatypes::{DataType, Int32Type};
use parquet::basic::{Compression, Encoding};
use parquet::column::writer::ColumnCloseResult;
use parquet::data_type::ByteArray;
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::schema::types::ColumnDescPtr;

use super::codec::PageCompressor;
pub(crate) use super::column_chunk::{
    assemble_chunk, ChunkPages, ChunkParts, ChunkSource, PageFacts,
};
use super::dictionary_ids::IdTable;
use super::statistics_truncation;
use crate::error::{Error, Result};

/// Marks a key of the current input dictionary that has no output id yet.
const UNMAPPED: u32 = u32::MAX;
/// A hash of a dictionary value: eight bytes at a time, a multiply and a rotate each. Not
/// keyed: the order of ids never depends on it (ids follow first appearance), and a value set
/// made to collide costs time, never a wrong id (every hit compares the bytes).
fn hash_bytes(v: &[u8]) -> u64 {
    const K: u64 = 0xA076_1D64_78BD_642F;
    let step = |h: u64, w: u64| (h ^ w).wrapping_mul(K).rotate_left(31);
    let mut h = (v.len() as u64).wrapping_mul(0xE703_7ED1_A0B4_28DB);
    let mut words = v.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        h = step(h, u64::from_le_bytes(b));
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        h = step(h, u64::from_le_bytes(b));
    }
    h ^ (h >> 29)
}

/// Page and dictionary limits, taken from the same `WriterProperties` the other columns use.
#[derive(Clone, Debug)]
pub(crate) struct DictWriterConfig {
    pub compression: Compression,
    /// The host's zstd, when it offers one: pages go there instead of the built-in codec.
    pub offload: Option<Arc<crate::host_codec::CodecOffload>>,
    pub data_page_size_limit: usize,
    pub data_page_row_count_limit: usize,
    pub dictionary_page_size_limit: usize,
    pub write_batch_size: usize,
    pub statistics: bool,
    /// Longest STRING min/max in the chunk statistics and in the column index (parquet-rs's
    /// `statistics_truncate_length` and `column_index_truncate_length`).
    pub statistics_truncate_length: Option<usize>,
    pub column_index_truncate_length: Option<usize>,
    /// INT32, INT64, FLOAT and DOUBLE columns go to [`super::primitive_dictionary_writer`].
    pub primitive: bool,
    /// STRING columns go to [`DictColumnWriter`] even when no dictionary is forwarded
    /// ([`STRING_DICTIONARY_OPTION`]).
    pub strings: bool,
}

/// Which writer dictionary-encodes STRING columns that arrive as plain strings:
/// `paimon-compact` (default: [`DictColumnWriter`], one probe of its own table per row and no
/// per-row statistics; the page min/max come from the dictionary entries a page uses) or
/// `arrow` (arrow-rs's writer: its interner, and a min/max comparison per row).
pub const STRING_DICTIONARY_OPTION: &str = "paimon-compact.write.string-dictionary-writer";

/// Whether the options ask for this writer on STRING columns (see [`STRING_DICTIONARY_OPTION`]).
pub(crate) fn strings_enabled(options: &crate::options::CoreOptions) -> Result<bool> {
    ours_or_arrow(options, STRING_DICTIONARY_OPTION)
}

/// A writer choice `key` = `paimon-compact` (the default: `true`) or `arrow` (`false`).
pub(crate) fn ours_or_arrow(options: &crate::options::CoreOptions, key: &str) -> Result<bool> {
    match options.raw.get(key).map(|v| v.trim()) {
        None | Some("paimon-compact") => Ok(true),
        Some("arrow") => Ok(false),
        Some(other) => Err(Error::invalid_option(
            key,
            other,
            "expected paimon-compact or arrow",
        )),
    }
}

/// Whether a column can go to [`DictColumnWriter`]: a non-nested UTF-8 column (byte order is
/// its statistics order). BINARY stays with arrow-rs, as in passthrough.
pub(crate) fn accepts_strings(data_type: &DataType, descr: &ColumnDescPtr) -> bool {
    descr.max_rep_level() == 0
        && descr.max_def_level() <= 1
        && descr.physical_type() == parquet::basic::Type::BYTE_ARRAY
        && descr.sort_order() == parquet::basic::SortOrder::UNSIGNED
        && matches!(
            descr.logical_type_ref(),
            Some(parquet::basic::LogicalType::String)
        )
        && matches!(
            data_type,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        )
}

impl DictWriterConfig {
    /// The limits of `props` (the properties every other column is written with) and the
    /// writer choices of `options`.
    pub(crate) fn new(
        compression: Compression,
        props: &parquet::file::properties::WriterProperties,
        options: &crate::options::CoreOptions,
    ) -> Result<Self> {
        Ok(DictWriterConfig {
            compression,
            offload: None,
            data_page_size_limit: props.data_page_size_limit(),
            data_page_row_count_limit: props.data_page_row_count_limit(),
            dictionary_page_size_limit: props.dictionary_page_size_limit(),
            write_batch_size: props.write_batch_size(),
            statistics: true,
            statistics_truncate_length: props.statistics_truncate_length(),
            column_index_truncate_length: props.column_index_truncate_length(),
            primitive: super::primitive_dictionary_writer::enabled(options)?,
            strings: strings_enabled(options)?,
        })
    }

    /// Pages compressed with zstd go to the host's codec.
    pub(crate) fn with_offload(
        mut self,
        offload: Option<Arc<crate::host_codec::CodecOffload>>,
    ) -> Self {
        self.offload = offload;
        self
    }
}

/// What the writer did, for the rewrite's metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct DictWriterCounters {
    /// Input dictionaries mapped (one per input column chunk, typically).
    pub dictionaries_mapped: u64,
    /// Rows written through a key → id table (no hashing).
    pub rows_mapped: u64,
    /// Rows that arrived materialised and were hashed one by one.
    pub rows_hashed: u64,
    /// Rows written PLAIN after the dictionary outgrew its page limit.
    pub rows_plain: u64,
    /// Column chunks that fell back to PLAIN.
    pub fallbacks: u64,
}

impl DictWriterCounters {
    pub(crate) fn add(&mut self, o: &DictWriterCounters) {
        self.dictionaries_mapped += o.dictionaries_mapped;
        self.rows_mapped += o.rows_mapped;
        self.rows_hashed += o.rows_hashed;
        self.rows_plain += o.rows_plain;
        self.fallbacks += o.fallbacks;
    }
}

/// Identity of an input dictionary: its buffers are immutable, so equal pointers mean equal
/// contents; the reader hands the same dictionary to every batch of a column chunk.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct DictIdentity {
    offsets: usize,
    values: usize,
    len: usize,
}

impl DictIdentity {
    fn of(values: &StringArray) -> Self {
        DictIdentity {
            offsets: values.offsets().inner().inner().as_ptr() as usize,
            values: values.values().as_ptr() as usize,
            len: values.len(),
        }
    }
}

/// The data page a dictionary writer is building: definition levels, and dictionary ids or
/// (after the fallback) PLAIN bytes. Both dictionary writers keep their page in one of these
/// and share its encoding, size estimate and page cuts; only values and statistics differ.
#[derive(Default)]
pub(crate) struct PageBuffer {
    pub ids: Vec<u32>,
    pub defs: Vec<u32>,
    pub plain: Vec<u8>,
    pub rows: usize,
    pub nulls: u64,
}

impl PageBuffer {
    /// A null row (the chunk's null count is the writer's).
    pub(crate) fn push_null(&mut self) {
        self.defs.push(0);
        self.rows += 1;
        self.nulls += 1;
    }

    /// Mini-batches stop at the page's row limit, like parquet-rs's column writer.
    pub(crate) fn mini_batch_end(&self, cfg: &DictWriterConfig, start: usize, n: usize) -> usize {
        let room = cfg
            .data_page_row_count_limit
            .saturating_sub(self.rows)
            .max(1);
        start + (n - start).min(cfg.write_batch_size.max(1)).min(room)
    }

    /// parquet-rs's estimate of the encoded page, for the same page-size decisions.
    pub(crate) fn estimated_size(&self, fallback: bool, dictionary_len: usize) -> usize {
        if fallback {
            self.plain.len()
        } else {
            1 + rle_max_buffer_size(dictionary_bit_width(dictionary_len), self.ids.len())
        }
    }

    /// The page body (RLE definition levels when `nullable`, then the values) and its encoding.
    pub(crate) fn encode(
        &self,
        nullable: bool,
        fallback: bool,
        dictionary_len: usize,
    ) -> (Vec<u8>, Encoding) {
        let mut buf = Vec::with_capacity(
            self.estimated_size(fallback, dictionary_len) + self.defs.len() / 8 + 16,
        );
        if nullable {
            let mut levels = Vec::with_capacity(self.defs.len() / 8 + 8);
            encode_hybrid(&self.defs, 1, &mut levels);
            buf.extend_from_slice(&(levels.len() as u32).to_le_bytes());
            buf.extend_from_slice(&levels);
        }
        let encoding = if fallback {
            buf.extend_from_slice(&self.plain);
            Encoding::PLAIN
        } else if self.ids.is_empty() && dictionary_len == 0 {
            // Only nulls so far and no dictionary: a PLAIN page with no values needs none.
            Encoding::PLAIN
        } else {
            let width = dictionary_bit_width(dictionary_len);
            buf.push(width);
            encode_hybrid(&self.ids, width, &mut buf);
            Encoding::RLE_DICTIONARY
        };
        (buf, encoding)
    }

    /// Each dictionary id the page uses, once, in id order (a bit per dictionary entry, not a
    /// comparison per row: the page's min/max come from these entries).
    pub(crate) fn distinct_ids(&self, dictionary_len: usize) -> Vec<usize> {
        let mut seen = vec![0u64; dictionary_len.div_ceil(64)];
        for &id in &self.ids {
            if let Some(w) = seen.get_mut(id as usize / 64) {
                *w |= 1 << (id % 64);
            }
        }
        let mut out = Vec::new();
        for (w, bits) in seen.iter().enumerate() {
            let mut bits = *bits;
            while bits != 0 {
                out.push(w * 64 + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
        }
        out
    }

    pub(crate) fn clear(&mut self) {
        self.ids.clear();
        self.defs.clear();
        self.plain.clear();
        self.rows = 0;
        self.nulls = 0;
    }

    /// Finishes the page: encoded, compressed and kept in `pages` with `bounds` for the
    /// column index, then cleared for the next one.
    pub(crate) fn finish(
        &mut self,
        nullable: bool,
        fallback: bool,
        dictionary_len: usize,
        compressor: &mut PageCompressor,
        pages: &mut ChunkPages,
        bounds: PageBounds,
    ) -> Result<()> {
        let (buf, encoding) = self.encode(nullable, fallback, dictionary_len);
        let uncompressed = buf.len();
        let body = compressor.compress(&buf)?.unwrap_or(buf);
        pages.push(
            body,
            uncompressed,
            PageFacts {
                num_values: self.rows as u32,
                rows: self.rows as u64,
                encoding,
                min: bounds.min,
                max: bounds.max,
                nulls: self.nulls,
                nans: bounds.nans,
            },
        )?;
        self.clear();
        Ok(())
    }
}

/// A finished page's smallest and largest value (PLAIN bytes, `None` for a page of nulls) and,
/// for floating-point columns, its NaN count.
pub(crate) struct PageBounds {
    pub min: Option<Vec<u8>>,
    pub max: Option<Vec<u8>>,
    pub nans: Option<u64>,
}

/// Bits per id of a dictionary of `len` entries.
pub(crate) fn dictionary_bit_width(len: usize) -> u8 {
    num_required_bits(len.saturating_sub(1) as u64)
}

/// Writes one column chunk (one row group) of a non-nested STRING column.
pub(crate) struct DictColumnWriter {
    descr: ColumnDescPtr,
    cfg: Arc<DictWriterConfig>,
    compressor: PageCompressor,
    nullable: bool,

    // The output dictionary: PLAIN-encoded page body, value spans in it with their hashes, and
    // the table of ids (a probe compares a stored hash before any bytes).
    ids: IdTable,
    dict_page: Vec<u8>,
    dict_spans: Vec<(u32, u32)>,
    dict_hashes: Vec<u64>,
    /// Set once the dictionary outgrew its page: the rest of the chunk is written PLAIN.
    fallback: bool,

    // The data page being built.
    page: PageBuffer,
    /// Min/max of the PLAIN values of the page (dictionary ids are resolved at flush).
    page_min: Option<Vec<u8>>,
    page_max: Option<Vec<u8>>,

    // Key → id table of the input dictionary seen last.
    cache_identity: Option<DictIdentity>,
    cache_values: Option<StringArray>,
    cache_map: Vec<u32>,

    pages: ChunkPages,
    rows: u64,
    nulls: u64,
    min: Option<Vec<u8>>,
    max: Option<Vec<u8>>,
    unencoded_bytes: i64,
    counters: DictWriterCounters,
}

impl DictColumnWriter {
    pub(crate) fn new(
        descr: ColumnDescPtr,
        cfg: Arc<DictWriterConfig>,
        store: Box<dyn ChunkPageStore>,
    ) -> Result<Self> {
        let compressor = PageCompressor::new(cfg.compression, cfg.offload.as_ref())?;
        let nullable = descr.max_def_level() > 0;
        if descr.max_rep_level() > 0 || descr.max_def_level() > 1 {
            return Err(Error::internal(format!(
                "dictionary passthrough writer given nested column '{}'",
                descr.path()
            )));
        }
        Ok(DictColumnWriter {
            descr,
            cfg,
            compressor,
            nullable,
            ids: IdTable::new(),
            dict_page: Vec::new(),
            dict_spans: Vec::new(),
            dict_hashes: Vec::new(),
            fallback: false,
            page: PageBuffer::default(),
            page_min: None,
            page_max: None,
            cache_identity: None,
            cache_values: None,
            cache_map: Vec::new(),
            pages: ChunkPages::new(store),
            rows: 0,
            nulls: 0,
            min: None,
            max: None,
            unencoded_bytes: 0,
            counters: DictWriterCounters::default(),
        })
    }

    pub(crate) fn counters(&self) -> DictWriterCounters {
        self.counters
    }

    /// Bytes this chunk will take, as parquet-rs estimates it for its own writers: finished
    /// pages as compressed, the open page and the dictionary as encoded.
    pub(crate) fn estimated_size(&self) -> usize {
        self.pages.compressed_len() + self.dict_page.len() + self.estimated_page_size()
    }

    /// Appends a column of a batch: a `Dictionary(Int32, Utf8)` array (the passthrough case) or
    /// any string array (materialised input).
    pub(crate) fn write(&mut self, array: &ArrayRef) -> Result<()> {
        match array.data_type() {
            DataType::Dictionary(k, v) if **k == DataType::Int32 && **v == DataType::Utf8 => {
                let dict = array.as_dictionary::<Int32Type>();
                if dict.values().null_count() > 0 {
                    // A dictionary with null entries is not what a Parquet reader produces;
                    // take the general path rather than reason about it.
                    let plain = arrow::compute::cast(array, &DataType::Utf8)
                        .map_err(|e| Error::internal(format!("decoding dictionary: {e}")))?;
                    return self.write_plain_array(plain.as_string::<i32>());
                }
                self.write_dictionary(dict)
            }
            DataType::Dictionary(_, _) => {
                let plain = arrow::compute::cast(array, &DataType::Utf8)
                    .map_err(|e| Error::internal(format!("decoding dictionary: {e}")))?;
                self.write_plain_array(plain.as_string::<i32>())
            }
            DataType::Utf8 => self.write_plain_array(array.as_string::<i32>()),
            DataType::LargeUtf8 => self.write_plain_array(array.as_string::<i64>()),
            DataType::Utf8View => self.write_plain_array(array.as_string_view()),
            other => Err(Error::internal(format!(
                "dictionary passthrough writer given {other} for '{}'",
                self.descr.path()
            ))),
        }
    }

    fn check_nulls(&self, array: &dyn Array) -> Result<()> {
        if !self.nullable && array.null_count() > 0 {
            return Err(Error::corrupt(
                None,
                format!("nulls in required column '{}'", self.descr.path()),
            ));
        }
        Ok(())
    }

    fn write_dictionary(&mut self, dict: &DictionaryArray<Int32Type>) -> Result<()> {
        self.check_nulls(dict)?;
        let values = dict.values().as_string::<i32>().clone();
        self.select_dictionary(&values);
        let keys = dict.keys();
        let key_values = keys.values();
        let nulls = keys.nulls().cloned();
        let n = keys.len();
        let mut start = 0;
        while start < n {
            let end = self.mini_batch_end(start, n);
            if self.fallback {
                for i in start..end {
                    if nulls.as_ref().is_some_and(|b| b.is_null(i)) {
                        self.push_null();
                    } else {
                        let k = key_index(key_values[i], values.len(), &self.descr)?;
                        self.push_plain(values.value(k).as_bytes());
                    }
                }
                self.counters.rows_plain += (end - start) as u64;
            } else {
                for i in start..end {
                    if nulls.as_ref().is_some_and(|b| b.is_null(i)) {
                        self.push_null();
                        continue;
                    }
                    let k = key_index(key_values[i], values.len(), &self.descr)?;
                    let mut id = self.cache_map[k];
                    if id == UNMAPPED {
                        id = self.intern(values.value(k).as_bytes());
                        self.cache_map[k] = id;
                    }
                    if self.nullable {
                        self.page.defs.push(1);
                    }
                    self.page.ids.push(id);
                    self.page.rows += 1;
                    self.unencoded_bytes += values.value_length(k) as i64;
                }
                self.counters.rows_mapped += (end - start) as u64;
            }
            self.rows += (end - start) as u64;
            self.after_mini_batch()?;
            start = end;
        }
        Ok(())
    }

    /// Makes `values` the current input dictionary, reusing its key → id table when it is the
    /// same dictionary as before (same buffers, or same contents).
    fn select_dictionary(&mut self, values: &StringArray) {
        let identity = DictIdentity::of(values);
        if self.cache_identity == Some(identity) {
            return;
        }
        let same_contents = self.cache_values.as_ref().is_some_and(|prev| {
            prev.len() == values.len()
                && prev.value_offsets() == values.value_offsets()
                && prev.value_data() == values.value_data()
        });
        if !same_contents {
            self.cache_map.clear();
            self.cache_map.resize(values.len(), UNMAPPED);
            self.counters.dictionaries_mapped += 1;
        }
        self.cache_identity = Some(identity);
        self.cache_values = Some(values.clone());
    }

    fn write_plain_array<'a, A>(&mut self, array: A) -> Result<()>
    where
        A: ArrayAccessor<Item = &'a str> + Array + Copy,
    {
        self.check_nulls(&array)?;
        let n = array.len();
        let nulls = array.nulls().cloned();
        let mut start = 0;
        while start < n {
            let end = self.mini_batch_end(start, n);
            for i in start..end {
                if nulls.as_ref().is_some_and(|b| b.is_null(i)) {
                    self.push_null();
                } else if self.fallback {
                    self.push_plain(array.value(i).as_bytes());
                } else {
                    let v = array.value(i).as_bytes();
                    let id = self.intern(v);
                    if self.nullable {
                        self.page.defs.push(1);
                    }
                    self.page.ids.push(id);
                    self.page.rows += 1;
                    self.unencoded_bytes += v.len() as i64;
                }
            }
            if self.fallback {
                self.counters.rows_plain += (end - start) as u64;
            } else {
                self.counters.rows_hashed += (end - start) as u64;
            }
            self.rows += (end - start) as u64;
            self.after_mini_batch()?;
            start = end;
        }
        Ok(())
    }

    fn mini_batch_end(&self, start: usize, n: usize) -> usize {
        self.page.mini_batch_end(&self.cfg, start, n)
    }

    fn push_null(&mut self) {
        self.page.push_null();
        self.nulls += 1;
    }

    fn push_plain(&mut self, v: &[u8]) {
        if self.nullable {
            self.page.defs.push(1);
        }
        self.page
            .plain
            .extend_from_slice(&(v.len() as u32).to_le_bytes());
        self.page.plain.extend_from_slice(v);
        self.page.rows += 1;
        self.unencoded_bytes += v.len() as i64;
        if self.cfg.statistics {
            // The chunk's min/max take the page's when it is flushed: two comparisons a row.
            update_min_max(&mut self.page_min, &mut self.page_max, v);
        }
    }

    /// The output id of `v`, adding it to the dictionary (and to the statistics) when new.
    fn intern(&mut self, v: &[u8]) -> u32 {
        let hash = hash_bytes(v);
        let (page, spans, hashes) = (&self.dict_page, &self.dict_spans, &self.dict_hashes);
        let found = self.ids.find(hash, |id| {
            let (s, l) = spans[id as usize];
            hashes[id as usize] == hash && &page[s as usize..(s + l) as usize] == v
        });
        let slot = match found {
            Ok(id) => return id,
            Err(slot) => slot,
        };
        let id = self.dict_spans.len() as u32;
        self.dict_page
            .extend_from_slice(&(v.len() as u32).to_le_bytes());
        let start = self.dict_page.len() as u32;
        self.dict_page.extend_from_slice(v);
        self.dict_spans.push((start, v.len() as u32));
        self.dict_hashes.push(hash);
        let hashes = &self.dict_hashes;
        self.ids.insert(slot, id, hashes.len(), |id| hashes[id]);
        if self.cfg.statistics {
            update_min_max(&mut self.min, &mut self.max, v);
        }
        id
    }

    fn estimated_page_size(&self) -> usize {
        self.page
            .estimated_size(self.fallback, self.dict_spans.len())
    }

    fn after_mini_batch(&mut self) -> Result<()> {
        if !self.fallback && self.dict_page.len() >= self.cfg.dictionary_page_size_limit {
            // Same rule as parquet-rs: finish the page in flight with the dictionary, then
            // write the rest of the chunk PLAIN.
            self.flush_page()?;
            self.fallback = true;
            self.counters.fallbacks += 1;
            return Ok(());
        }
        if self.page.rows >= self.cfg.data_page_row_count_limit
            || self.estimated_page_size() >= self.cfg.data_page_size_limit
        {
            self.flush_page()?;
        }
        Ok(())
    }

    fn flush_page(&mut self) -> Result<()> {
        if self.page.rows == 0 {
            return Ok(());
        }
        let (min, max) = if !self.cfg.statistics {
            (None, None)
        } else if self.fallback {
            let (min, max) = (self.page_min.take(), self.page_max.take());
            for v in min.iter().chain(&max) {
                update_min_max(&mut self.min, &mut self.max, v);
            }
            (min, max)
        } else {
            self.dictionary_page_min_max()
        };
        let limit = self.cfg.column_index_truncate_length;
        let min = min.map(|v| statistics_truncation::lower_bound(&v, limit).0);
        let max = max.map(|v| statistics_truncation::upper_bound(&v, limit).0);
        self.page.finish(
            self.nullable,
            self.fallback,
            self.dict_spans.len(),
            &mut self.compressor,
            &mut self.pages,
            PageBounds {
                min,
                max,
                nans: None,
            },
        )?;
        self.page_min = None;
        self.page_max = None;
        Ok(())
    }

    /// Min and max of the values a dictionary-encoded page refers to: each distinct id once
    /// (a bit per dictionary entry), not a comparison per row.
    fn dictionary_page_min_max(&self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let (mut min, mut max) = (None::<&[u8]>, None::<&[u8]>);
        for id in self.page.distinct_ids(self.dict_spans.len()) {
            let (start, len) = self.dict_spans[id];
            let v = &self.dict_page[start as usize..(start + len) as usize];
            if min.is_none_or(|m| v < m) {
                min = Some(v);
            }
            if max.is_none_or(|m| v > m) {
                max = Some(v);
            }
        }
        (min.map(<[u8]>::to_vec), max.map(<[u8]>::to_vec))
    }

    /// Finishes the chunk ([`assemble_chunk`]).
    pub(crate) fn close(mut self) -> Result<(ChunkSource, ColumnCloseResult)> {
        self.flush_page()?;
        let dictionary = self.pages.uses_dictionary().then(|| {
            (
                std::mem::take(&mut self.dict_page),
                self.dict_spans.len() as u32,
            )
        });
        let statistics = self.cfg.statistics.then(|| {
            let limit = self.cfg.statistics_truncate_length;
            let min = self
                .min
                .take()
                .map(|v| statistics_truncation::lower_bound(&v, limit));
            let max = self
                .max
                .take()
                .map(|v| statistics_truncation::upper_bound(&v, limit));
            let exact = |b: &Option<(Vec<u8>, bool)>| b.as_ref().is_none_or(|(_, e)| *e);
            let (min_exact, max_exact) = (exact(&min), exact(&max));
            Statistics::ByteArray(
                ValueStatistics::new(
                    min.map(|(v, _)| ByteArray::from(v)),
                    max.map(|(v, _)| ByteArray::from(v)),
                    None,
                    Some(self.nulls),
                    false,
                )
                .with_min_is_exact(min_exact)
                .with_max_is_exact(max_exact),
            )
        });
        let parts = ChunkParts {
            descr: self.descr.clone(),
            compression: self.cfg.compression,
            physical: parquet::basic::Type::BYTE_ARRAY,
            dictionary,
            pages: self.pages,
            rows: self.rows,
            statistics,
            column_index: self.cfg.statistics,
            unencoded_byte_array_bytes: Some(self.unencoded_bytes),
        };
        assemble_chunk(parts, &mut self.compressor)
    }
}

fn key_index(key: i32, len: usize, descr: &ColumnDescPtr) -> Result<usize> {
    usize::try_from(key)
        .ok()
        .filter(|k| *k < len)
        .ok_or_else(|| {
            Error::corrupt(
                None,
                format!("dictionary key {key} out of range in '{}'", descr.path()),
            )
        })
}

fn update_min_max(min: &mut Option<Vec<u8>>, max: &mut Option<Vec<u8>>, v: &[u8]) {
    // UTF-8 byte order is code point order, which is Parquet's order for STRING.
    if min.as_deref().is_none_or(|m| v < m) {
        *min = Some(v.to_vec());
    }
    if max.as_deref().is_none_or(|m| v > m) {
        *max = Some(v.to_vec());
    }
}

/// Bits needed to store `max`.
pub(crate) fn num_required_bits(max: u64) -> u8 {
    (64 - max.leading_zeros()) as u8
}

/// parquet-rs's bound for an RLE/bit-packed buffer, used for the same page-size decisions.
pub(crate) fn rle_max_buffer_size(bit_width: u8, num_values: usize) -> usize {
    let num_runs = num_values.div_ceil(8);
    let bit_packed = num_runs + num_runs * bit_width as usize;
    let min_rle_run = 1 + (bit_width as usize).div_ceil(8);
    bit_packed.max(num_runs * min_rle_run)
}

/// Appends `values` in Parquet's RLE/bit-packing hybrid encoding (without length prefix).
///
/// Runs of at least 8 equal values become RLE runs; everything else is bit-packed in groups of
/// 8 (the last group zero-padded, which readers ignore because the page says how many values
/// it holds).
pub(crate) fn encode_hybrid(values: &[u32], bit_width: u8, out: &mut Vec<u8>) {
    let n = values.len();
    let run_len = |i: usize, cap: usize| -> usize {
        let v = values[i];
        values[i..n.min(i.saturating_add(cap))]
            .iter()
            .take_while(|&&x| x == v)
            .count()
    };
    let value_bytes = (bit_width as usize).div_ceil(8);
    let mut i = 0;
    while i < n {
        let run = run_len(i, usize::MAX);
        if run >= 8 {
            put_uleb((run as u64) << 1, out);
            out.extend_from_slice(&values[i].to_le_bytes()[..value_bytes]);
            i += run;
            continue;
        }
        // A bit-packed run: groups of 8 until the next group starts a long repeat.
        let start = i;
        let mut groups = 0usize;
        loop {
            groups += 1;
            i += 8;
            if i >= n || run_len(i, 8) >= 8 {
                break;
            }
        }
        put_uleb(((groups as u64) << 1) | 1, out);
        bit_pack(
            &values[start..n.min(start + groups * 8)],
            groups * 8,
            bit_width,
            out,
        );
        i = i.min(n);
    }
}

/// Packs `values` LSB-first with `bit_width` bits each, padding with zeros to `count` values.
fn bit_pack(values: &[u32], count: usize, bit_width: u8, out: &mut Vec<u8>) {
    if bit_width == 0 {
        return;
    }
    let mut acc: u64 = 0;
    let mut bits: u32 = 0;
    let width = bit_width as u32;
    let mask = if width == 32 {
        u32::MAX as u64
    } else {
        (1u64 << width) - 1
    };
    for j in 0..count {
        let v = values.get(j).copied().unwrap_or(0) as u64 & mask;
        acc |= v << bits;
        bits += width;
        while bits >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
    }
    if bits > 0 {
        out.push(acc as u8);
    }
}

fn put_uleb(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reference decoder for the hybrid encoding, to check the encoder on its own.
    fn decode_hybrid(mut buf: &[u8], bit_width: u8, n: usize) -> Vec<u32> {
        let mut out = Vec::new();
        let value_bytes = (bit_width as usize).div_ceil(8);
        while out.len() < n {
            let mut header = 0u64;
            let mut shift = 0;
            loop {
                let b = buf[0];
                buf = &buf[1..];
                header |= ((b & 0x7f) as u64) << shift;
                shift += 7;
                if b & 0x80 == 0 {
                    break;
                }
            }
            if header & 1 == 1 {
                let count = (header >> 1) as usize * 8;
                let nbytes = count * bit_width as usize / 8;
                let (packed, rest) = buf.split_at(nbytes);
                buf = rest;
                let mut bitpos = 0usize;
                for _ in 0..count {
                    let mut v = 0u32;
                    for b in 0..bit_width as usize {
                        let bit = (packed[(bitpos + b) / 8] >> ((bitpos + b) % 8)) & 1;
                        v |= (bit as u32) << b;
                    }
                    bitpos += bit_width as usize;
                    out.push(v);
                }
            } else {
                let count = (header >> 1) as usize;
                let mut v = [0u8; 4];
                v[..value_bytes].copy_from_slice(&buf[..value_bytes]);
                buf = &buf[value_bytes..];
                out.extend(std::iter::repeat_n(u32::from_le_bytes(v), count));
            }
        }
        out.truncate(n);
        out
    }

    #[test]
    fn hybrid_round_trips_runs_and_noise() {
        let mut values = Vec::new();
        for i in 0..1000u32 {
            values.push(i % 7);
        }
        values.extend(std::iter::repeat_n(3, 100));
        values.extend([1, 2, 1, 2, 5]);
        values.extend(std::iter::repeat_n(6, 9));
        for width in [3u8, 8, 13] {
            let mut buf = Vec::new();
            encode_hybrid(&values, width, &mut buf);
            assert_eq!(
                decode_hybrid(&buf, width, values.len()),
                values,
                "width {width}"
            );
        }
        let mut buf = Vec::new();
        encode_hybrid(&[0; 20], 0, &mut buf);
        assert_eq!(buf, vec![40], "one RLE run of 20 zero-width values");
    }

    #[test]
    fn bit_widths() {
        assert_eq!(num_required_bits(0), 0);
        assert_eq!(num_required_bits(1), 1);
        assert_eq!(num_required_bits(255), 8);
        assert_eq!(num_required_bits(256), 9);
    }
}
