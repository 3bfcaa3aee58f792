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
use crate::decoder_panics::contain;
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
    let metadata = metadata_range(&ranges, &buffers, size);
    check_thrift(storage, path, &ranges, &buffers, metadata, io, &mut decoder)?;
    decoder
        .push_ranges(ranges, buffers)
        .map_err(|e| corrupt(path, e))?;
    loop {
        let decoded = contain(path, "Parquet footer", || {
            decoder.try_decode().map_err(|e| corrupt(path, e))
        })?;
        match decoded {
            DecodeResult::NeedsData(ranges) => {
                let (ranges, buffers) = fetch(storage, path, &ranges, io)?;
                decoder
                    .push_ranges(ranges, buffers)
                    .map_err(|e| corrupt(path, e))?;
            }
            DecodeResult::Data(metadata) => {
                check_layout(&metadata, size).map_err(|why| corrupt(path, why))?;
                return Ok(InputFile {
                    path: path.to_string(),
                    size,
                    metadata: Arc::new(metadata),
                });
            }
            DecodeResult::Finished => return Err(corrupt(path, "no footer")),
        }
    }
}

/// Where the file metadata is, from the length before the closing magic in the tail read
/// (`None` when the tail does not end with the magic or the length points before the file:
/// arrow-rs reports those).
fn metadata_range(
    ranges: &[std::ops::Range<u64>],
    buffers: &[bytes::Bytes],
    size: u64,
) -> Option<std::ops::Range<u64>> {
    let (_, buffer) = ranges.iter().zip(buffers).find(|(r, _)| r.end == size)?;
    let n = buffer.len();
    if buffer.get(n.checked_sub(4)?..)? != b"PAR1" {
        return None;
    }
    let len = u32::from_le_bytes(buffer.get(n - 8..n - 4)?.try_into().ok()?);
    let end = size.checked_sub(8)?;
    let start = end.checked_sub(u64::from(len))?;
    Some(start..end)
}

/// The bytes of `wanted` if one of the fetched `ranges` holds all of them.
fn slice_of(
    ranges: &[std::ops::Range<u64>],
    buffers: &[bytes::Bytes],
    wanted: &std::ops::Range<u64>,
) -> Option<bytes::Bytes> {
    ranges.iter().zip(buffers).find_map(|(r, b)| {
        (r.start <= wanted.start && wanted.end <= r.end).then(|| {
            let from = (wanted.start - r.start) as usize;
            b.slice(from..from + (wanted.end - wanted.start) as usize)
        })
    })
}

/// Refuses a footer whose Thrift structure declares containers its bytes cannot hold, which
/// arrow-rs would spend seconds skipping (`thrift_guard`). A footer longer than the tail read
/// is fetched whole here and handed to the decoder, so it is not read twice.
fn check_thrift(
    storage: &dyn Storage,
    path: &str,
    ranges: &[std::ops::Range<u64>],
    buffers: &[bytes::Bytes],
    metadata: Option<std::ops::Range<u64>>,
    io: &mut IoCounters,
    decoder: &mut ParquetMetaDataPushDecoder,
) -> Result<()> {
    let Some(metadata) = metadata else {
        return Ok(());
    };
    let bytes = match slice_of(ranges, buffers, &metadata) {
        Some(b) => b,
        None => {
            let (fetched_ranges, fetched) =
                fetch(storage, path, std::slice::from_ref(&metadata), io)?;
            let whole = slice_of(&fetched_ranges, &fetched, &metadata);
            decoder
                .push_ranges(fetched_ranges, fetched)
                .map_err(|e| corrupt(path, e))?;
            match whole {
                Some(b) => b,
                None => return Ok(()),
            }
        }
    };
    super::thrift_guard::check_struct(&bytes).map_err(|why| corrupt(path, why))
}

/// Checks what arrow-rs's accessors assume of a footer before anything calls them: every
/// column chunk's byte range (which `ColumnChunkMetaData::byte_range` asserts is not
/// negative), every page location of the offset index, and the row counts, all inside the
/// file. A footer that breaks one of them (a flipped bit, a truncated file) is corrupt input
/// naming the file rather than a panic in the decoder.
pub(crate) fn check_layout(
    metadata: &ParquetMetaData,
    file_size: u64,
) -> std::result::Result<(), String> {
    let within = |what: &str, start: i64, len: i64| -> std::result::Result<(), String> {
        let end = start.checked_add(len);
        match end {
            Some(end) if start >= 0 && len >= 0 && (end as u64) <= file_size => Ok(()),
            _ => Err(format!(
                "{what} at offset {start} with length {len} lies outside the file of {file_size} bytes"
            )),
        }
    };
    let schema_columns = metadata.file_metadata().schema_descr().num_columns();
    let mut rows: i64 = 0;
    for (g, group) in metadata.row_groups().iter().enumerate() {
        if group.num_rows() < 0 {
            return Err(format!("row group {g} has {} rows", group.num_rows()));
        }
        rows = rows
            .checked_add(group.num_rows())
            .ok_or_else(|| format!("row group {g}: the row count overflows"))?;
        if group.num_columns() != schema_columns {
            return Err(format!(
                "row group {g} has {} column chunks for {schema_columns} columns",
                group.num_columns()
            ));
        }
        for (c, column) in group.columns().iter().enumerate() {
            let what = format!("row group {g}, column {c}");
            if column.num_values() < 0 {
                return Err(format!("{what}: {} values", column.num_values()));
            }
            let data = column.data_page_offset();
            if data < 0 || data as u64 >= file_size {
                return Err(format!("{what}: data pages at offset {data}"));
            }
            if let Some(d) = column.dictionary_page_offset() {
                if d < 0 || d as u64 >= file_size {
                    return Err(format!("{what}: dictionary page at offset {d}"));
                }
            }
            let start = column.dictionary_page_offset().unwrap_or(data);
            within(&what, start, column.compressed_size())?;
        }
    }
    if rows != metadata.file_metadata().num_rows() {
        return Err(format!(
            "the row groups hold {rows} rows, the footer says {}",
            metadata.file_metadata().num_rows()
        ));
    }
    if let Some(index) = metadata.page_index() {
        for (g, group) in metadata.row_groups().iter().enumerate() {
            for c in 0..group.num_columns() {
                let Some(offsets) = index.offset_index(g, c) else {
                    continue;
                };
                for (p, page) in offsets.page_locations().iter().enumerate() {
                    within(
                        &format!("row group {g}, column {c}, page {p}"),
                        page.offset,
                        i64::from(page.compressed_page_size),
                    )?;
                    if page.first_row_index < 0 {
                        return Err(format!(
                            "row group {g}, column {c}, page {p}: first row {}",
                            page.first_row_index
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}
