//! Reading Parquet through the [`Storage`] trait by explicit ranges: coalesced fetches, whole
//! row groups decoded with arrow-rs's push decoder, deletion vectors as row selections.
//!
//! Reading uses arrow-rs's sans-I/O push decoders (`ParquetPushDecoder`, and
//! `ParquetMetaDataPushDecoder` in [`super::footer`]): they answer "I need these byte ranges"
//! and this module fetches them. The ranges a row group needs are coalesced into one storage
//! call, so over a host boundary a row group costs one call, never one per page header
//! (parquet's sync reader would issue one `read` per page). Only the row group being decoded is
//! held in memory.

use std::ops::Range;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, RowSelection, RowSelector,
};
use parquet::arrow::push_decoder::{ParquetPushDecoder, ParquetPushDecoderBuilder};
use parquet::DecodeResult;

use super::footer::InputFile;
use super::level_guard;
use super::page_guard::{self, Chunk, ChunkMap};
use crate::decoder_panics::contain;
use crate::error::{Error, Result};
use crate::storage::Storage;

/// Rows per decoded batch: large enough to amortise per-batch work, small enough that a batch
/// of wide rows stays a few MB.
pub(crate) const BATCH_SIZE: usize = 8192;

/// Ranges closer than this are fetched in one call (the gap is read and dropped).
const COALESCE_GAP: u64 = 64 * 1024;

/// Storage traffic, for the metrics.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct IoCounters {
    pub reads: u64,
    pub bytes: u64,
}

/// Wraps a parquet error as corrupt input of `path`.
pub(crate) fn corrupt(path: &str, e: impl std::fmt::Display) -> Error {
    Error::corrupt(Some(path), e)
}

/// [`corrupt`], keeping `e` as the error's cause for native callers.
pub(crate) fn corrupt_from(path: &str, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    corrupt(path, &e).with_source(e)
}

/// Reads `ranges` of `path`, coalescing neighbours into one storage call each, and returns one
/// buffer per coalesced range together with that range.
pub(crate) fn fetch(
    storage: &dyn Storage,
    path: &str,
    ranges: &[Range<u64>],
    io: &mut IoCounters,
) -> Result<(Vec<Range<u64>>, Vec<Bytes>)> {
    let mut sorted: Vec<Range<u64>> = ranges.iter().filter(|r| r.end > r.start).cloned().collect();
    sorted.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(sorted.len());
    for r in sorted {
        match merged.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(COALESCE_GAP) => {
                last.end = last.end.max(r.end)
            }
            _ => merged.push(r),
        }
    }
    let mut buffers = Vec::with_capacity(merged.len());
    for r in &merged {
        let want = r.end - r.start;
        let bytes = storage.read_range(path, r.start, want)?;
        io.reads += 1;
        io.bytes += bytes.len() as u64;
        if bytes.len() as u64 != want {
            return Err(corrupt(
                path,
                format!(
                    "truncated: wanted {want} bytes at offset {}, storage returned {}",
                    r.start,
                    bytes.len()
                ),
            ));
        }
        buffers.push(Bytes::from(bytes));
    }
    Ok((merged, buffers))
}

/// Arrow metadata for reading `input` as `schema` (the output schema, with dictionary types on
/// the columns forwarded from this file). Fails when the file cannot be read as that schema.
pub(crate) fn reader_metadata(input: &InputFile, schema: SchemaRef) -> Result<ArrowReaderMetadata> {
    let options = ArrowReaderOptions::new().with_schema(schema);
    ArrowReaderMetadata::try_new(input.metadata.clone(), options)
        .map_err(|e| corrupt(&input.path, format!("schema does not match the table: {e}")))
}

/// Decoded batches of one input file, one row group's bytes in memory at a time.
pub(crate) struct BatchStream {
    decoder: ParquetPushDecoder,
    /// The column chunks' codecs, for the page-header checks ([`super::page_guard`]).
    codecs: ChunkMap,
    /// Whether the pages of repeated columns have their repetition levels checked
    /// ([`super::level_guard`]): when a selection may leave rows out.
    check_levels: bool,
}

impl BatchStream {
    pub(crate) fn new(
        input: &InputFile,
        metadata: ArrowReaderMetadata,
        selection: Option<RowSelection>,
    ) -> Result<Self> {
        let codecs = ChunkMap::of(metadata.metadata());
        let check_levels = selection
            .as_ref()
            .is_some_and(|s| s.skipped_row_count() > 0);
        let mut builder =
            ParquetPushDecoderBuilder::new_with_metadata(metadata).with_batch_size(BATCH_SIZE);
        if let Some(selection) = selection {
            builder = builder.with_row_selection(selection);
        }
        let decoder = builder.build().map_err(|e| corrupt_from(&input.path, e))?;
        Ok(BatchStream {
            decoder,
            codecs,
            check_levels,
        })
    }

    /// The next batch, fetching the ranges the decoder asks for.
    pub(crate) fn next(
        &mut self,
        storage: &dyn Storage,
        path: &str,
        io: &mut IoCounters,
    ) -> Result<Option<RecordBatch>> {
        loop {
            let decoded = contain(path, "Parquet", || {
                self.decoder.try_decode().map_err(|e| corrupt_from(path, e))
            })?;
            match decoded {
                DecodeResult::NeedsData(ranges) => {
                    let (merged, buffers) = fetch(storage, path, &ranges, io)?;
                    // Contained: counting levels runs arrow-rs's RLE decoder, which asserts on
                    // a run header longer than ten bytes (`parquet_append`'s
                    // `crash-long-level-run-header`, fuzz/README.md).
                    let (codecs, levels) = (&self.codecs, self.check_levels);
                    contain(path, "Parquet", || {
                        check_page_headers(codecs, levels, &ranges, &merged, &buffers)
                            .map_err(|why| corrupt(path, why))
                    })?;
                    let ranges = merged;
                    contain(path, "Parquet", || {
                        self.decoder
                            .push_ranges(ranges, buffers)
                            .map_err(|e| corrupt_from(path, e))
                    })?;
                }
                DecodeResult::Data(batch) => return Ok(Some(batch)),
                DecodeResult::Finished => return Ok(None),
            }
        }
    }
}

/// Checks the page headers of every range the push decoder asked for (a column chunk, or the
/// pages an offset index locates: whole pages, each starting with its header) in the bytes
/// fetched for it, before the decoder reads them ([`super::page_guard`]), and with
/// `check_levels` the repetition levels of repeated columns' data pages
/// ([`super::level_guard`]).
fn check_page_headers(
    codecs: &ChunkMap,
    check_levels: bool,
    asked: &[Range<u64>],
    merged: &[Range<u64>],
    buffers: &[Bytes],
) -> std::result::Result<(), String> {
    for r in asked.iter().filter(|r| r.end > r.start) {
        let Some(&Chunk {
            codec,
            max_rep_level,
            ..
        }) = codecs.at(r.start)
        else {
            continue;
        };
        let max_rep_level = if check_levels { max_rep_level } else { 0 };
        let i = merged.partition_point(|m| m.start <= r.start);
        let Some((m, bytes)) = i.checked_sub(1).map(|i| (&merged[i], &buffers[i])) else {
            continue;
        };
        let (from, to) = ((r.start - m.start) as usize, (r.end - m.start) as usize);
        if let Some(pages) = bytes.get(from..to) {
            page_guard::check_pages(pages, codec, |sizes, body| {
                level_guard::check_stored_page(sizes, body, codec, max_rep_level)
            })
            .map(|_| ())
            .map_err(|why| format!("{why}, in the column chunk at byte {}", r.start))?;
        }
    }
    Ok(())
}

/// Checks a file's deletion vector: strictly ascending positions, each below its `rows` rows.
pub(crate) fn check_deletion_vector(path: &str, deleted: &[u64], rows: u64) -> Result<()> {
    let mut next = 0u64;
    for &d in deleted {
        if d >= rows || d < next {
            return Err(corrupt(
                path,
                format!("deletion vector position {d} is out of order or beyond {rows} rows"),
            ));
        }
        next = d + 1;
    }
    Ok(())
}

/// The selection of the rows `window` of a file of `rows` rows without the `deleted` positions
/// (a deletion vector that passed [`check_deletion_vector`]).
pub(crate) fn deletion_selection(deleted: &[u64], rows: u64, window: Range<u64>) -> RowSelection {
    let (start, end) = (window.start, window.end);
    let mut selectors = Vec::new();
    if start > 0 {
        selectors.push(RowSelector::skip(start as usize));
    }
    let from = deleted.partition_point(|&d| d < start);
    let mut next = start;
    for &d in deleted[from..].iter().take_while(|&&d| d < end) {
        if d > next {
            selectors.push(RowSelector::select((d - next) as usize));
        }
        selectors.push(RowSelector::skip(1));
        next = d + 1;
    }
    if next < end {
        selectors.push(RowSelector::select((end - next) as usize));
    }
    if end < rows {
        selectors.push(RowSelector::skip((rows - end) as usize));
    }
    RowSelection::from(selectors)
}
