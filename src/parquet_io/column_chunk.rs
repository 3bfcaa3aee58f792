//! A column chunk written by this project's own column writers (the dictionary writers for
//! STRING and primitive columns): its finished pages, kept in a page store, and their
//! assembly into the chunk that the row group splices in.
//!
//! Each data page is serialized (parquet-rs's page writer: header, then body) when it is
//! finished and goes to the page store as one blob, in memory or spilled with the file's other
//! pages. The dictionary page, which must come first, is known only when the chunk closes. The
//! chunk is then handed to the row group as a [`ChunkSource`]: a reader that yields the
//! dictionary page and then takes each data page out of the store as the row group copies it.
//! So a chunk is never held whole in memory: however large, it costs no more than its largest
//! page, as with arrow-rs's own writers (the peak this removed: benches/README.md, "Then:
//! STRING columns through the dictionary writer, grouped probes, read-ahead").

use std::collections::VecDeque;
use std::io::Read;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use parquet::arrow::arrow_writer::{PageKey, PageStore};
use parquet::basic::{Compression, Encoding, PageType};
use parquet::column::page::{CompressedPage, Page, PageWriteSpec, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::ColumnIndexBuilder;
use parquet::file::metadata::{ColumnChunkMetaData, PageEncodingStats};
use parquet::file::page_index::offset_index::{OffsetIndexMetaData, PageLocation};
use parquet::file::reader::{ChunkReader, Length};
use parquet::file::statistics::Statistics;
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use super::codec::PageCompressor;
use crate::error::{Error, Result};

fn parquet_err(e: parquet::errors::ParquetError) -> Error {
    Error::internal(format!("writing pages: {e}")).with_source(e)
}

/// Where this project's column writers keep finished pages: a [`PageStore`] that can also
/// hand a page out without releasing it, so a chunk can be copied into the row group twice
/// (a mirrored column, see [`ChunkSource::twice`]) without holding it whole in memory.
pub(crate) trait ChunkPageStore: PageStore {
    /// Stores a page whose allocation is already its size (as [`PageStore::put`], which
    /// copies what arrow-rs hands it into a tight buffer first).
    fn put_tight(&mut self, value: Bytes) -> parquet::errors::Result<PageKey>;

    /// The page stored under `key`, which stays stored (a later `take` still returns it).
    fn get(&self, key: PageKey) -> parquet::errors::Result<Bytes>;
}

/// Keeps each finished page in an allocation of exactly its size.
///
/// arrow-rs compresses a page into a buffer reserved at the codec's worst-case bound and stores
/// it as is, so a buffered row group of well-compressed pages takes about its *uncompressed*
/// size in memory. Copying each page once into a tight buffer (a memcpy of compressed bytes)
/// keeps a row group in progress close to `parquet.block.size`.
#[derive(Debug, Default)]
pub(crate) struct TightPageStore {
    pages: Vec<Bytes>,
    resident: usize,
}

impl PageStore for TightPageStore {
    fn put(&mut self, value: Bytes) -> parquet::errors::Result<PageKey> {
        self.put_tight(Bytes::from(value.to_vec()))
    }

    fn take(&mut self, key: PageKey) -> parquet::errors::Result<Bytes> {
        let page = usize::try_from(key.get())
            .ok()
            .and_then(|i| self.pages.get_mut(i))
            .map(std::mem::take)
            .ok_or_else(|| {
                parquet::errors::ParquetError::General(format!("invalid page key {}", key.get()))
            })?;
        self.resident -= page.len();
        Ok(page)
    }

    fn memory_size(&self) -> usize {
        self.resident
    }
}

impl ChunkPageStore for TightPageStore {
    fn put_tight(&mut self, value: Bytes) -> parquet::errors::Result<PageKey> {
        let key = PageKey::new(self.pages.len() as u64);
        self.resident += value.len();
        self.pages.push(value);
        Ok(key)
    }

    fn get(&self, key: PageKey) -> parquet::errors::Result<Bytes> {
        usize::try_from(key.get())
            .ok()
            .and_then(|i| self.pages.get(i))
            .filter(|p| !p.is_empty())
            .cloned()
            .ok_or_else(|| {
                parquet::errors::ParquetError::General(format!("invalid page key {}", key.get()))
            })
    }
}

/// A chunk's page store, shared by the streams that copy the chunk out.
type SharedStore = Arc<Mutex<Box<dyn ChunkPageStore>>>;

/// A finished data page, serialized into the chunk's page store, and what the chunk's
/// metadata and column index need of it.
pub(crate) struct PendingPage {
    key: PageKey,
    /// Serialized length (header and compressed body) and the same with the body
    /// uncompressed, as parquet-rs counts them.
    len: usize,
    uncompressed: usize,
    rows: u64,
    encoding: Encoding,
    /// The page's smallest and largest value as PLAIN bytes (`None` for a page of nulls), its
    /// null count and, for floating-point columns, its NaN count, for the column index.
    min: Option<Vec<u8>>,
    max: Option<Vec<u8>>,
    nulls: u64,
    nans: Option<u64>,
}

/// The finished data pages of a column chunk, kept in a page store (in memory, or spilled
/// with the file's other pages beyond `paimon-compact.write.spill-threshold`).
pub(crate) struct ChunkPages {
    store: Box<dyn ChunkPageStore>,
    pages: Vec<PendingPage>,
}

/// What a finished data page holds besides its body.
pub(crate) struct PageFacts {
    pub num_values: u32,
    pub rows: u64,
    pub encoding: Encoding,
    pub min: Option<Vec<u8>>,
    pub max: Option<Vec<u8>>,
    pub nulls: u64,
    pub nans: Option<u64>,
}

/// One page through parquet-rs's page writer: header and body as one blob, and the sizes the
/// writer reports (both including the header).
fn serialize_page(page: CompressedPage) -> Result<(Bytes, PageWriteSpec)> {
    let mut sink = TrackedWrite::new(Vec::with_capacity(page.compressed_size() + 64));
    let spec = {
        let mut writer = SerializedPageWriter::new(&mut sink);
        let spec = writer.write_page(page).map_err(parquet_err)?;
        writer.close().map_err(parquet_err)?;
        spec
    };
    Ok((Bytes::from(sink.into_inner().map_err(parquet_err)?), spec))
}

impl ChunkPages {
    pub(crate) fn new(store: Box<dyn ChunkPageStore>) -> Self {
        ChunkPages {
            store,
            pages: Vec::new(),
        }
    }

    /// Serializes a data page with its compressed `body` and stores it.
    pub(crate) fn push(&mut self, body: Vec<u8>, uncompressed: usize, f: PageFacts) -> Result<()> {
        let page = Page::DataPage {
            buf: Bytes::from(body),
            num_values: f.num_values,
            encoding: f.encoding,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        let (bytes, spec) = serialize_page(CompressedPage::new(page, uncompressed))?;
        let key = self
            .store
            .put_tight(bytes)
            .map_err(|e| Error::internal(format!("keeping a page: {e}")))?;
        self.pages.push(PendingPage {
            key,
            len: spec.compressed_size,
            uncompressed: spec.uncompressed_size,
            rows: f.rows,
            encoding: f.encoding,
            min: f.min,
            max: f.max,
            nulls: f.nulls,
            nans: f.nans,
        });
        Ok(())
    }

    /// Serialized bytes of the finished pages.
    pub(crate) fn compressed_len(&self) -> usize {
        self.pages.iter().map(|p| p.len).sum()
    }

    pub(crate) fn uses_dictionary(&self) -> bool {
        self.pages
            .iter()
            .any(|p| p.encoding == Encoding::RLE_DICTIONARY)
    }
}

/// A column chunk's parts, for [`assemble_chunk`].
pub(crate) struct ChunkParts {
    pub descr: ColumnDescPtr,
    pub compression: Compression,
    pub physical: parquet::basic::Type,
    /// The PLAIN dictionary page body (uncompressed) and its number of entries, when any page
    /// is dictionary-encoded.
    pub dictionary: Option<(Vec<u8>, u32)>,
    pub pages: ChunkPages,
    pub rows: u64,
    /// Chunk statistics, and whether to write a column index from the pages' min/max.
    pub statistics: Option<Statistics>,
    pub column_index: bool,
    pub unencoded_byte_array_bytes: Option<i64>,
}

/// Finishes a chunk: the dictionary page first, then the data pages, with the column chunk
/// metadata, column index and offset index for them. Offsets are from the chunk's start; the
/// row group moves them to where it splices the chunk in.
pub(crate) fn assemble_chunk(
    mut parts: ChunkParts,
    compressor: &mut PageCompressor,
) -> Result<(ChunkSource, ColumnCloseResult)> {
    let mut segments = VecDeque::with_capacity(parts.pages.pages.len() + 1);
    let mut stats: Vec<PageEncodingStats> = Vec::new();
    let mut encodings = vec![Encoding::RLE];
    let mut locations = Vec::with_capacity(parts.pages.pages.len());
    let mut column_index = parts
        .column_index
        .then(|| ColumnIndexBuilder::new(parts.physical));
    let (mut compressed, mut uncompressed) = (0i64, 0i64);
    let mut dictionary_offset = None;
    let mut data_offset = None;
    let mut offset = 0usize;
    if let Some((raw, entries)) = parts.dictionary.take() {
        let uncompressed_len = raw.len();
        let body = compressor.compress(&raw)?.unwrap_or(raw);
        let page = Page::DictionaryPage {
            buf: Bytes::from(body),
            num_values: entries,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        };
        let (bytes, spec) = serialize_page(CompressedPage::new(page, uncompressed_len))?;
        dictionary_offset = Some(offset as i64);
        compressed += spec.compressed_size as i64;
        uncompressed += spec.uncompressed_size as i64;
        offset += bytes.len();
        segments.push_back(Segment::Held(bytes));
        stats.push(PageEncodingStats {
            page_type: PageType::DICTIONARY_PAGE,
            encoding: Encoding::PLAIN,
            count: 1,
        });
        encodings.push(Encoding::PLAIN);
    }
    let mut first_row = 0i64;
    let ChunkPages { store, pages } = parts.pages;
    for p in pages {
        if let Some(ci) = column_index.as_mut() {
            let null_page = p.min.is_none();
            ci.append(
                null_page,
                p.min.unwrap_or_default(),
                p.max.unwrap_or_default(),
                p.nulls as i64,
                p.nans.map(|n| n as i64),
            );
        }
        data_offset.get_or_insert(offset as i64);
        compressed += p.len as i64;
        uncompressed += p.uncompressed as i64;
        locations.push(PageLocation {
            offset: offset as i64,
            compressed_page_size: p.len as i32,
            first_row_index: first_row,
        });
        offset += p.len;
        first_row += p.rows as i64;
        segments.push_back(Segment::Stored(p.key));
        match stats
            .iter_mut()
            .find(|s| s.page_type == PageType::DATA_PAGE && s.encoding == p.encoding)
        {
            Some(s) => s.count += 1,
            None => stats.push(PageEncodingStats {
                page_type: PageType::DATA_PAGE,
                encoding: p.encoding,
                count: 1,
            }),
        }
        if !encodings.contains(&p.encoding) {
            encodings.push(p.encoding);
        }
    }
    let mut builder = ColumnChunkMetaData::builder(parts.descr.clone())
        .set_compression(parts.compression)
        .set_encodings(encodings)
        .set_total_compressed_size(compressed)
        .set_total_uncompressed_size(uncompressed)
        .set_num_values(parts.rows as i64)
        .set_data_page_offset(data_offset.unwrap_or(0))
        .set_dictionary_page_offset(dictionary_offset)
        .set_page_encoding_stats(stats)
        .set_unencoded_byte_array_data_bytes(parts.unencoded_byte_array_bytes);
    if let Some(statistics) = parts.statistics {
        builder = builder.set_statistics(statistics);
    }
    let metadata = builder.build().map_err(parquet_err)?;
    let close = ColumnCloseResult {
        bytes_written: offset as u64,
        rows_written: parts.rows,
        metadata,
        bloom_filter: None,
        column_index: column_index
            .map(|ci| ci.build())
            .transpose()
            .map_err(parquet_err)?,
        offset_index: Some(OffsetIndexMetaData {
            page_locations: locations,
            unencoded_byte_array_data_bytes: None,
        }),
    };
    let source = ChunkSource {
        len: offset as u64,
        stream: Mutex::new(Some(ChunkStream {
            store: Arc::new(Mutex::new(store)),
            segments,
            current: Bytes::new(),
            release: true,
        })),
    };
    Ok((source, close))
}

/// `close` for a column chunk of `descr` holding the same pages: what a mirrored column (one
/// whose values are another's, as a primary-key file's `k` is its `_KEY_k`) records for the
/// bytes it copies from its source. Every field is carried over (the list arrow-rs's row group
/// carries when it splices a chunk in) except the column the chunk belongs to.
pub(crate) fn close_as(
    close: &ColumnCloseResult,
    descr: ColumnDescPtr,
) -> Result<ColumnCloseResult> {
    let m = &close.metadata;
    let mut builder = ColumnChunkMetaData::builder(descr)
        .set_compression_codec(m.compression_codec())
        .set_encodings_mask(*m.encodings_mask())
        .set_total_compressed_size(m.compressed_size())
        .set_total_uncompressed_size(m.uncompressed_size())
        .set_num_values(m.num_values())
        .set_data_page_offset(m.data_page_offset())
        .set_dictionary_page_offset(m.dictionary_page_offset())
        .set_unencoded_byte_array_data_bytes(m.unencoded_byte_array_data_bytes())
        .set_repetition_level_histogram(m.repetition_level_histogram().cloned())
        .set_definition_level_histogram(m.definition_level_histogram().cloned());
    if let Some(statistics) = m.statistics() {
        builder = builder.set_statistics(statistics.clone());
    }
    if let Some(stats) = m.page_encoding_stats() {
        builder = builder.set_page_encoding_stats(stats.clone());
    }
    Ok(ColumnCloseResult {
        metadata: builder.build().map_err(parquet_err)?,
        ..close.clone()
    })
}

/// A part of an assembled chunk: held here, or a page still in the store.
#[derive(Clone)]
enum Segment {
    Held(Bytes),
    Stored(PageKey),
}

/// An assembled chunk, read once from its start by the row group that splices it in.
pub(crate) struct ChunkSource {
    len: u64,
    stream: Mutex<Option<ChunkStream>>,
}

impl ChunkSource {
    /// The chunk as two sources to be read one after the other: the first leaves every page
    /// in the store, the second takes them out. For a column whose chunk is another's bytes
    /// under its own metadata ([`close_as`]); spilled pages are read back twice rather than
    /// held, so the copy costs no memory.
    pub(crate) fn twice(self) -> Result<(ChunkSource, ChunkSource)> {
        let stream = self
            .stream
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .ok_or_else(|| Error::internal("an assembled chunk is read once"))?;
        let first = ChunkStream {
            store: stream.store.clone(),
            segments: stream.segments.clone(),
            current: stream.current.clone(),
            release: false,
        };
        let source = |s| ChunkSource {
            len: self.len,
            stream: Mutex::new(Some(s)),
        };
        Ok((source(first), source(stream)))
    }
}

/// The chunk's bytes in order, each stored page taken out of the store when reached (or read
/// and left there, when the chunk is copied again later).
pub(crate) struct ChunkStream {
    store: SharedStore,
    segments: VecDeque<Segment>,
    current: Bytes,
    release: bool,
}

impl Read for ChunkStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            self.current = match self.segments.pop_front() {
                None => return Ok(0),
                Some(Segment::Held(bytes)) => bytes,
                Some(Segment::Stored(key)) => {
                    let mut store = self.store.lock().unwrap_or_else(|p| p.into_inner());
                    match self.release {
                        true => store.take(key),
                        false => store.get(key),
                    }
                    .map_err(std::io::Error::other)?
                }
            };
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

impl Length for ChunkSource {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for ChunkSource {
    type T = ChunkStream;

    fn get_read(&self, start: u64) -> parquet::errors::Result<ChunkStream> {
        let unsupported = |what: &str| parquet::errors::ParquetError::General(what.to_string());
        if start != 0 {
            return Err(unsupported("an assembled chunk is read from its start"));
        }
        // A poisoned lock still holds a stream that nothing has read from.
        let mut stream = self.stream.lock().unwrap_or_else(|p| p.into_inner());
        stream
            .take()
            .ok_or_else(|| unsupported("an assembled chunk is read once"))
    }

    fn get_bytes(&self, _start: u64, _length: usize) -> parquet::errors::Result<Bytes> {
        Err(parquet::errors::ParquetError::General(
            "an assembled chunk is only read as a stream".to_string(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk of a held dictionary and two stored pages, and its store (to watch it).
    fn chunk() -> (ChunkSource, SharedStore) {
        let mut store = TightPageStore::default();
        let a = store.put(Bytes::from_static(b"page one;")).unwrap();
        let b = store.put_tight(Bytes::from_static(b"page two")).unwrap();
        let store: SharedStore = Arc::new(Mutex::new(Box::new(store)));
        let source = ChunkSource {
            len: 22,
            stream: Mutex::new(Some(ChunkStream {
                store: store.clone(),
                segments: VecDeque::from([
                    Segment::Held(Bytes::from_static(b"dict;")),
                    Segment::Stored(a),
                    Segment::Held(Bytes::new()),
                    Segment::Stored(b),
                ]),
                current: Bytes::new(),
                release: true,
            })),
        };
        (source, store)
    }

    fn read_all(source: &ChunkSource) -> Vec<u8> {
        let mut out = Vec::new();
        // Small reads cross segment boundaries.
        let mut r = source.get_read(0).unwrap();
        let mut buf = [0u8; 4];
        loop {
            let n = r.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        out
    }

    fn resident(store: &SharedStore) -> usize {
        store.lock().unwrap().memory_size()
    }

    #[test]
    fn the_stream_yields_held_and_stored_bytes_in_order_once() {
        let (source, store) = chunk();
        assert!(source.get_read(3).is_err());
        assert_eq!(read_all(&source), b"dict;page one;page two");
        assert_eq!(resident(&store), 0, "pages are released as they are read");
        assert!(source.get_read(0).is_err());
        assert!(source.get_bytes(0, 1).is_err());
    }

    /// Read twice, a chunk gives the same bytes both times: the first read leaves the pages
    /// stored, the second releases them.
    #[test]
    fn a_chunk_read_twice_keeps_its_pages_until_the_second_read() {
        let (source, store) = chunk();
        let (first, second) = source.twice().unwrap();
        assert_eq!(read_all(&first), b"dict;page one;page two");
        assert_eq!(resident(&store), 17);
        assert_eq!(read_all(&second), b"dict;page one;page two");
        assert_eq!(resident(&store), 0);
        assert!(second.get_read(0).is_err());
        // A chunk already read cannot be read twice.
        let (used, _) = chunk();
        read_all(&used);
        assert!(used.twice().is_err());
    }
}
