//! Reading a Parquet footer through storage: the one footer reader of the crate.
//!
//! One speculative tail read of [`FOOTER_PREFETCH`] bytes holds most footers; arrow-rs's
//! sans-I/O metadata decoder then asks for anything else it needs (a longer footer), and the
//! page index is located from the decoded chunks and fetched as one range, with the same
//! coalescing as every other read. Every Thrift struct is walked by the guard
//! ([`super::thrift_guard`]) before arrow-rs decodes it. What is decoded is the
//! caller's [`FooterPolicy`]: rewriting needs no page index, fast copy carries both indexes
//! over, page-by-page reads find pages through the offset index alone.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use parquet::file::metadata::{
    PageIndexPolicy, ParquetMetaData, ParquetMetaDataOptions, ParquetMetaDataPushDecoder,
};
use parquet::DecodeResult;

use super::read::{corrupt, fetch, IoCounters};
use super::thrift_guard;
use crate::decoder_panics::contain;
use crate::error::{Error, Result};
use crate::storage::Storage;

/// The footer is read with one speculative tail read of this size (most footers fit).
const FOOTER_PREFETCH: u64 = 64 * 1024;

/// The deepest nesting of groups a file's schema may have: arrow-rs builds and converts the
/// schema tree by recursion, a few stack frames per level, and a hostile footer nests 20 000
/// levels in 160 kB ([`thrift_guard::check_footer`]). Paimon's types take at most two groups
/// per level of SQL nesting (a list, a map), so this is about 32 nested collections; the Avro
/// reader's bound is the same ([`crate::avro_file::MAX_AVRO_NESTING`]).
pub(crate) const MAX_SCHEMA_DEPTH: usize = 64;

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
///
/// The footer is decoded first without the page index; the page index, when `policy` wants
/// it, is located from the decoded column chunks and decoded second (arrow-rs's
/// `try_new_with_metadata`). That order lets every Thrift struct arrow-rs is about to decode be
/// walked by [`super::thrift_guard`] over exactly its own bytes first, the footer and each
/// chunk's column index and offset index alike, and it costs no extra request: the bytes
/// already fetched are handed to the second step.
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
        .with_page_index_policy(PageIndexPolicy::Skip);
    if policy.full_encoding_stats {
        let options = ParquetMetaDataOptions::new().with_encoding_stats_as_mask(false);
        decoder = decoder.with_metadata_options(Some(Arc::new(options)));
    }
    let tail = size - size.min(FOOTER_PREFETCH)..size;
    let mut held = Fetched::default();
    held.add(fetch(storage, path, std::slice::from_ref(&tail), io)?);
    let footer = metadata_range(&held, size);
    if let Some(footer) = &footer {
        let bytes = match held.slice(footer) {
            Some(bytes) => Some(bytes),
            None => {
                held.add(fetch(storage, path, std::slice::from_ref(footer), io)?);
                held.slice(footer)
            }
        };
        if let Some(bytes) = bytes {
            let walked = thrift_guard::check_footer(&bytes)
                .map_err(|why| corrupt(path, format!("the footer: {why}")))?;
            if walked.schema_depth > MAX_SCHEMA_DEPTH {
                return Err(Error::unsupported(format!(
                    "{path}: its Parquet schema nests groups {} deep, more than the {} this \
                     reader takes",
                    walked.schema_depth, MAX_SCHEMA_DEPTH
                )));
            }
        }
    }
    decoder
        .push_ranges(held.ranges.clone(), held.buffers.clone())
        .map_err(|e| corrupt(path, e))?;
    let metadata = loop {
        let decoded = contain(path, "Parquet footer", || {
            decoder.try_decode().map_err(|e| corrupt(path, e))
        })?;
        match decoded {
            DecodeResult::NeedsData(ranges) => {
                let fetched = fetch(storage, path, &ranges, io)?;
                decoder
                    .push_ranges(fetched.0.clone(), fetched.1.clone())
                    .map_err(|e| corrupt(path, e))?;
                held.add(fetched);
            }
            DecodeResult::Data(metadata) => break metadata,
            DecodeResult::Finished => return Err(corrupt(path, "no footer")),
        }
    };
    check_chunks(&metadata, size).map_err(|why| corrupt(path, why))?;
    let index_end = footer.map_or(size, |f| f.start);
    let file = FileAt {
        storage,
        path,
        size,
    };
    let metadata = read_page_index(&file, metadata, policy, index_end, held, io)?;
    check_page_locations(&metadata, size).map_err(|why| corrupt(path, why))?;
    Ok(InputFile {
        path: path.to_string(),
        size,
        metadata: Arc::new(metadata),
    })
}

/// The file a footer is read from.
struct FileAt<'a> {
    storage: &'a dyn Storage,
    path: &'a str,
    size: u64,
}

/// Byte ranges fetched while reading one footer, kept so that a later step reuses them.
#[derive(Default)]
struct Fetched {
    ranges: Vec<Range<u64>>,
    buffers: Vec<Bytes>,
}

impl Fetched {
    fn add(&mut self, (ranges, buffers): (Vec<Range<u64>>, Vec<Bytes>)) {
        self.ranges.extend(ranges);
        self.buffers.extend(buffers);
    }

    /// The bytes of `wanted` if one fetched range holds all of them.
    fn slice(&self, wanted: &Range<u64>) -> Option<Bytes> {
        self.ranges.iter().zip(&self.buffers).find_map(|(r, b)| {
            (r.start <= wanted.start && wanted.end <= r.end).then(|| {
                let from = (wanted.start - r.start) as usize;
                b.slice(from..from + (wanted.end - wanted.start) as usize)
            })
        })
    }
}

/// Where the file metadata is, from the length before the closing magic in the tail read
/// (`None` when the tail does not end with the magic or the length points before the file:
/// arrow-rs reports those).
fn metadata_range(held: &Fetched, size: u64) -> Option<Range<u64>> {
    let (_, buffer) = held
        .ranges
        .iter()
        .zip(&held.buffers)
        .find(|(r, _)| r.end == size)?;
    let n = buffer.len();
    if buffer.get(n.checked_sub(4)?..)? != b"PAR1" {
        return None;
    }
    let len = u32::from_le_bytes(buffer.get(n - 8..n - 4)?.try_into().ok()?);
    let end = size.checked_sub(8)?;
    let start = end.checked_sub(u64::from(len))?;
    Some(start..end)
}

/// Refuses a Thrift struct (`what` of `path`, the format's `def`) that arrow-rs would loop on
/// or read apart from its bytes ([`super::thrift_guard`]).
fn guard(
    path: &str,
    what: impl std::fmt::Display,
    bytes: &[u8],
    def: &'static thrift_guard::Def,
) -> Result<()> {
    thrift_guard::check_struct(bytes, def).map_err(|why| corrupt(path, format!("{what}: {why}")))
}

/// One column chunk's column index or offset index: where it is, and which it is (named only
/// when an error needs it, so a footer read formats nothing).
struct IndexAt {
    offsets: bool,
    group: usize,
    column: usize,
    range: Range<u64>,
}

impl std::fmt::Display for IndexAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let which = if self.offsets { "offset" } else { "column" };
        write!(
            f,
            "the {which} index of row group {}, column {}",
            self.group, self.column
        )
    }
}

/// The column index and offset index ranges `policy` asks for.
fn index_ranges(metadata: &ParquetMetaData, policy: FooterPolicy) -> Vec<IndexAt> {
    let mut wanted = Vec::new();
    for (group, chunks) in metadata.row_groups().iter().enumerate() {
        for (column, chunk) in chunks.columns().iter().enumerate() {
            let indexes = [
                (false, policy.column_index, chunk.column_index_range()),
                (true, policy.offset_index, chunk.offset_index_range()),
            ];
            for (offsets, wants, range) in indexes {
                if let (true, Some(range)) = (wants != PageIndexPolicy::Skip, range) {
                    wanted.push(IndexAt {
                        offsets,
                        group,
                        column,
                        range,
                    });
                }
            }
        }
    }
    wanted
}

/// Adds the page index `policy` asks for to `metadata`. Every chunk's index must lie before
/// the footer (`index_end`), where writers put it; a range elsewhere is corrupt input rather
/// than a read of whatever it points at. Each index is walked by the Thrift guard before
/// arrow-rs decodes it.
fn read_page_index(
    file: &FileAt<'_>,
    metadata: ParquetMetaData,
    policy: FooterPolicy,
    index_end: u64,
    mut held: Fetched,
    io: &mut IoCounters,
) -> Result<ParquetMetaData> {
    let FileAt {
        storage,
        path,
        size,
    } = *file;
    let wanted = index_ranges(&metadata, policy);
    let Some(union) = wanted
        .iter()
        .map(|index| index.range.clone())
        .reduce(|a, b| a.start.min(b.start)..a.end.max(b.end))
    else {
        return Ok(metadata);
    };
    if let Some(index) = wanted.iter().find(|index| index.range.end > index_end) {
        return Err(corrupt(
            path,
            format!(
                "{index} at bytes {}..{} lies outside the {index_end} bytes before the footer",
                index.range.start, index.range.end
            ),
        ));
    }
    if held.slice(&union).is_none() {
        held.add(fetch(storage, path, std::slice::from_ref(&union), io)?);
    }
    for index in &wanted {
        if let Some(bytes) = held.slice(&index.range) {
            let def = if index.offsets {
                &thrift_guard::OFFSET_INDEX
            } else {
                &thrift_guard::COLUMN_INDEX
            };
            guard(path, index, &bytes, def)?;
        }
    }
    let mut decoder = ParquetMetaDataPushDecoder::try_new_with_metadata(size, metadata)
        .map_err(|e| corrupt(path, e))?
        .with_column_index_policy(policy.column_index)
        .with_offset_index_policy(policy.offset_index);
    decoder
        .push_ranges(held.ranges, held.buffers)
        .map_err(|e| corrupt(path, e))?;
    loop {
        let decoded = contain(path, "Parquet page index", || {
            decoder
                .try_decode_page_index()
                .map_err(|e| corrupt(path, e))
        })?;
        match decoded {
            DecodeResult::NeedsData(ranges) => {
                // Not expected: the union above is the range arrow-rs asks for.
                let (ranges, buffers) = fetch(storage, path, &ranges, io)?;
                decoder
                    .push_ranges(ranges, buffers)
                    .map_err(|e| corrupt(path, e))?;
            }
            DecodeResult::Data((metadata, None)) => return Ok(metadata),
            DecodeResult::Data((metadata, Some(index))) => {
                return Ok(metadata
                    .into_builder()
                    .set_page_index(Some(Arc::new(index)))
                    .build())
            }
            DecodeResult::Finished => return Err(corrupt(path, "no page index")),
        }
    }
}

/// `Ok` when `len` bytes at `start` lie inside a file of `file_size` bytes.
fn within(what: &str, start: i64, len: i64, file_size: u64) -> std::result::Result<(), String> {
    match start.checked_add(len) {
        Some(end) if start >= 0 && len >= 0 && (end as u64) <= file_size => Ok(()),
        _ => Err(format!(
            "{what} at offset {start} with length {len} lies outside the file of {file_size} bytes"
        )),
    }
}

/// Checks what arrow-rs's accessors assume of a footer before anything calls them: every
/// column chunk's byte range (which `ColumnChunkMetaData::byte_range` asserts is not
/// negative) inside the file, and the row counts adding up. A footer that breaks one of them
/// (a flipped bit, a truncated file) is corrupt input naming the file rather than a panic in
/// the decoder.
fn check_chunks(metadata: &ParquetMetaData, file_size: u64) -> std::result::Result<(), String> {
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
            within(&what, start, column.compressed_size(), file_size)?;
        }
    }
    if rows != metadata.file_metadata().num_rows() {
        return Err(format!(
            "the row groups hold {rows} rows, the footer says {}",
            metadata.file_metadata().num_rows()
        ));
    }
    Ok(())
}

/// Checks every page location of the offset index (when one was read) inside the file, as
/// [`check_chunks`] does for the chunks.
fn check_page_locations(
    metadata: &ParquetMetaData,
    file_size: u64,
) -> std::result::Result<(), String> {
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
                        file_size,
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use parquet::arrow::ArrowWriter;
    use parquet::file::metadata::ParquetMetaDataReader;

    use super::*;
    use crate::error::ErrorKind;
    use crate::storage::MemoryStorage;

    /// A small file whose writer put a column index and an offset index before the footer.
    fn file_with_page_index() -> Vec<u8> {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]));
        let values = Int64Array::from_iter_values(0..1000);
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(values)]).unwrap();
        let mut bytes = Vec::new();
        let mut w = ArrowWriter::try_new(&mut bytes, schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        bytes
    }

    #[test]
    fn the_page_index_is_read_in_the_footers_one_request() {
        let storage = MemoryStorage::new();
        storage.put("f.parquet", file_with_page_index());
        let mut io = IoCounters::default();
        let file = read_footer(&storage, "f.parquet", FooterPolicy::SPLICE, &mut io).unwrap();
        let index = file.metadata.page_index().expect("the page index");
        assert!(index.offset_index(0, 0).is_some() && index.column_index(0, 0).is_some());
        assert_eq!(io.reads, 1, "the tail read holds footer and page index");
    }

    /// An offset index whose unknown field 15 declares a list of 2^31 - 1 booleans in its few
    /// bytes (what made arrow-rs skip element by element for seconds in a footer) is refused
    /// before arrow-rs decodes it, naming the chunk; the same file read without the page index
    /// is unaffected.
    #[test]
    fn an_impossible_offset_index_is_corrupt_input_naming_the_chunk() {
        let mut bytes = file_with_page_index();
        let metadata = ParquetMetaDataReader::new()
            .parse_and_finish(&bytes::Bytes::from(bytes.clone()))
            .unwrap();
        let range = metadata
            .row_group(0)
            .column(0)
            .offset_index_range()
            .unwrap();
        let hostile = [0xf9, 0xf1, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00];
        let at = range.start as usize;
        assert!(range.end - range.start >= hostile.len() as u64);
        bytes[at..at + hostile.len()].copy_from_slice(&hostile);
        let storage = MemoryStorage::new();
        storage.put("f.parquet", bytes);
        let mut io = IoCounters::default();
        let e = read_footer(&storage, "f.parquet", FooterPolicy::PAGES, &mut io)
            .err()
            .expect("refused");
        assert!(
            matches!(&e.kind, ErrorKind::CorruptInput { file: Some(f) } if f == "f.parquet"),
            "{e:?}"
        );
        let message = e.to_string();
        assert!(
            message.contains("the offset index of row group 0, column 0")
                && message.contains("holds 2147483647 booleans"),
            "{message}"
        );
        read_footer(&storage, "f.parquet", FooterPolicy::ROWS, &mut io).unwrap();
    }
}
