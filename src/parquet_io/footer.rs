//! Reading a Parquet footer through storage: the one footer reader of the crate.
//!
//! One speculative tail read of [`FOOTER_PREFETCH`] bytes holds most footers; arrow-rs's
//! sans-I/O metadata decoder then asks for anything else it needs (a longer footer, the page
//! index), fetched with the same coalescing as every other read. What is decoded is the
//! caller's [`FooterPolicy`]: rewriting needs no page index, fast copy carries both indexes
//! over, page-by-page reads find pages through the offset index alone.

use std::sync::Arc;

use parquet::file::metadata::{
    PageIndexPolicy, ParquetMetaData, ParquetMetaDataOptions, ParquetMetaDataPushDecoder,
};
use parquet::DecodeResult;

use super::read::{corrupt, fetch, IoCounters};
use crate::error::Result;
use crate::storage::Storage;

/// The footer is read with one speculative tail read of this size (most footers fit).
const FOOTER_PREFETCH: u64 = 64 * 1024;

/// What a footer read decodes besides the file metadata.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FooterPolicy {
    /// The column index (page min/max).
    column_index: PageIndexPolicy,
    /// The offset index (page locations).
    offset_index: PageIndexPolicy,
    /// Page encoding statistics as the full list (passthrough eligibility and fast copy read
    /// them) rather than arrow-rs's default bitmask.
    full_encoding_stats: bool,
}

impl FooterPolicy {
    /// For decoding a file's rows, and for what the rewriters check in the footer: full
    /// encoding statistics, no page index.
    pub(crate) const ROWS: FooterPolicy = FooterPolicy {
        column_index: PageIndexPolicy::Skip,
        offset_index: PageIndexPolicy::Skip,
        full_encoding_stats: true,
    };

    /// For splicing row groups into another file: [`Self::ROWS`] plus both indexes when the
    /// file has them (the writer carries them over).
    pub(crate) const SPLICE: FooterPolicy = FooterPolicy {
        column_index: PageIndexPolicy::Optional,
        offset_index: PageIndexPolicy::Optional,
        full_encoding_stats: true,
    };

    /// For reading page by page ([`super::page_stream`]): the offset index when the writer
    /// wrote one (parquet-mr and arrow-rs do), so each page is fetched by its exact range.
    pub(crate) const PAGES: FooterPolicy = FooterPolicy {
        column_index: PageIndexPolicy::Skip,
        offset_index: PageIndexPolicy::Optional,
        full_encoding_stats: false,
    };

    /// For the column statistics only.
    pub(crate) const STATISTICS: FooterPolicy = FooterPolicy {
        column_index: PageIndexPolicy::Skip,
        offset_index: PageIndexPolicy::Skip,
        full_encoding_stats: false,
    };
}

/// An input data file: its path, size and decoded footer.
pub(crate) struct InputFile {
    pub path: String,
    pub size: u64,
    pub metadata: Arc<ParquetMetaData>,
}

/// Opens `path`: its size and its footer as `policy` asks; a file that is not Parquet is
/// corrupt input naming it.
pub(crate) fn read_footer(
    storage: &dyn Storage,
    path: &str,
    policy: FooterPolicy,
    io: &mut IoCounters,
) -> Result<InputFile> {
    let size = storage.size(path)?;
    if size < 12 {
        return Err(corrupt(
            path,
            format!("{size} bytes is too small for a Parquet file"),
        ));
    }
    let mut decoder = ParquetMetaDataPushDecoder::try_new(size)
        .map_err(|e| corrupt(path, e))?
        .with_column_index_policy(policy.column_index)
        .with_offset_index_policy(policy.offset_index);
    if policy.full_encoding_stats {
        let options = ParquetMetaDataOptions::new().with_encoding_stats_as_mask(false);
        decoder = decoder.with_metadata_options(Some(Arc::new(options)));
    }
    let tail = size - size.min(FOOTER_PREFETCH)..size;
    let (ranges, buffers) = fetch(storage, path, std::slice::from_ref(&tail), io)?;
    decoder
        .push_ranges(ranges, buffers)
        .map_err(|e| corrupt(path, e))?;
    loop {
        match decoder.try_decode().map_err(|e| corrupt(path, e))? {
            DecodeResult::NeedsData(ranges) => {
                let (ranges, buffers) = fetch(storage, path, &ranges, io)?;
                decoder
                    .push_ranges(ranges, buffers)
                    .map_err(|e| corrupt(path, e))?;
            }
            DecodeResult::Data(metadata) => {
                return Ok(InputFile {
                    path: path.to_string(),
                    size,
                    metadata: Arc::new(metadata),
                })
            }
            DecodeResult::Finished => return Err(corrupt(path, "no footer")),
        }
    }
}
