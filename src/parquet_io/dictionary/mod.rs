//! This layer's dictionary-encoding column writers, and what they share.
//!
//! * [`strings`] — STRING columns, including forwarded input dictionaries (passthrough);
//! * [`primitives`] — INT32, INT64, FLOAT and DOUBLE columns;
//! * [`ids`] — the open-addressing id table both intern values in;
//! * [`rle`] — the RLE/bit-packing hybrid encoder of ids and definition levels.
//!
//! Both writers build their data pages in a [`PageBuffer`] and finish them the same way, so the
//! page cuts, encodings and size estimates are parquet-rs's for both; they differ only in how
//! values are interned and how page statistics are kept. The two writer modules import this one
//! and never each other.

pub(crate) mod ids;
pub(crate) mod primitives;
pub(crate) mod rle;
pub(crate) mod strings;

use std::sync::Arc;

use parquet::basic::{Compression, Encoding};

use super::codec::PageCompressor;
use super::column_chunk::{ChunkPages, PageFacts};
use crate::error::Result;
use crate::host_codec::CodecOffload;
use rle::{dictionary_bit_width, encode_hybrid, rle_max_buffer_size};

/// Page and dictionary limits, taken from the same `WriterProperties` the other columns use.
#[derive(Clone, Debug)]
pub(crate) struct DictConfig {
    pub compression: Compression,
    /// The host's zstd, when it offers one: pages go there instead of the built-in codec.
    pub offload: Option<Arc<CodecOffload>>,
    pub data_page_size_limit: usize,
    pub data_page_row_count_limit: usize,
    pub dictionary_page_size_limit: usize,
    pub write_batch_size: usize,
    pub statistics: bool,
    /// Longest STRING min/max in the chunk statistics and in the column index (parquet-rs's
    /// `statistics_truncate_length` and `column_index_truncate_length`).
    pub statistics_truncate_length: Option<usize>,
    pub column_index_truncate_length: Option<usize>,
    /// Which columns these writers take (the rest go to arrow-rs's writer).
    pub writers: DictWriters,
}

/// Which columns this layer's dictionary writers take; arrow-rs's writer takes the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DictWriters {
    /// STRING columns go to [`strings::DictColumnWriter`] even when no dictionary is forwarded.
    pub strings: bool,
    /// INT32, INT64, FLOAT and DOUBLE columns go to [`primitives`].
    pub primitives: bool,
}

impl Default for DictWriters {
    /// Both: what every rewrite uses (arrow-rs's writers remain for comparisons).
    fn default() -> Self {
        DictWriters {
            strings: true,
            primitives: true,
        }
    }
}

impl DictConfig {
    /// The limits of `props` (the properties every other column is written with), the
    /// columns `writers` take.
    pub(crate) fn new(
        compression: Compression,
        props: &parquet::file::properties::WriterProperties,
        writers: DictWriters,
    ) -> Self {
        DictConfig {
            compression,
            offload: None,
            data_page_size_limit: props.data_page_size_limit(),
            data_page_row_count_limit: props.data_page_row_count_limit(),
            dictionary_page_size_limit: props.dictionary_page_size_limit(),
            write_batch_size: props.write_batch_size(),
            statistics: true,
            statistics_truncate_length: props.statistics_truncate_length(),
            column_index_truncate_length: props.column_index_truncate_length(),
            writers,
        }
    }

    /// Pages compressed with zstd go to the host's codec.
    pub(crate) fn with_offload(mut self, offload: Option<Arc<CodecOffload>>) -> Self {
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
    pub(crate) fn mini_batch_end(&self, cfg: &DictConfig, start: usize, n: usize) -> usize {
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
