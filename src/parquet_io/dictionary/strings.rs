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
//!   other STRING column is written by default ([`super::DictWriters`]): one probe of an
//!   open-addressing table with stored hashes per row, where arrow-rs's interner hashes with
//!   ahash, probes `hashbrown` and calls `memcmp` (a cost larger still in the
//!   component: benches/README.md, "Then: a dictionary writer for primitive columns and
//!   16-byte key heads").
//!
//! Pages follow parquet-rs's own choices (data page v1, PLAIN dictionary page, RLE_DICTIONARY
//! data pages, RLE definition levels, fallback to PLAIN once the dictionary page would exceed
//! `parquet.dictionary.page.size`), and are assembled with parquet-rs's public page writer, so the
//! headers, offsets and the column chunk metadata are written by parquet itself; only the value
//! encoding (RLE/bit-packing hybrid, PLAIN) and the codec calls live here.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayAccessor, ArrayRef, DictionaryArray, StringArray};
use arrow_schema::DataType;

use parquet::column::writer::ColumnCloseResult;
use parquet::data_type::ByteArray;
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::schema::types::ColumnDescPtr;

use super::ids::IdTable;
use super::{DictConfig, DictWriterCounters, PageBounds, PageBuffer};
use crate::error::{Error, Result};
use crate::parquet_io::codec::PageCompressor;
use crate::parquet_io::column_chunk::{
    assemble_chunk, ChunkPageStore, ChunkPages, ChunkParts, ChunkSource,
};
use crate::parquet_io::statistics_truncation;

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

/// Writes one column chunk (one row group) of a non-nested STRING column.
pub(crate) struct DictColumnWriter {
    descr: ColumnDescPtr,
    cfg: Arc<DictConfig>,
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
        cfg: Arc<DictConfig>,
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
                    let plain = arrow_cast::cast(array, &DataType::Utf8)
                        .map_err(|e| Error::internal(format!("decoding dictionary: {e}")))?;
                    return self.write_plain_array(plain.as_string::<i32>());
                }
                self.write_dictionary(dict)
            }
            DataType::Dictionary(_, _) => {
                let plain = arrow_cast::cast(array, &DataType::Utf8)
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
