//! Reading an input page by page through storage, for the merge's sorted runs.
//!
//! A merge keeps one file of every sorted run open at once, so what it holds per file is what
//! bounds its memory. The push decoder of [`super::read::BatchStream`] fetches a row
//! group's column chunks before decoding them (one storage call, but a whole row group in
//! memory per run); cutting the row group into row windows bounds that, but every window
//! starts new column readers, so the pages straddling a window edge and every dictionary page
//! are fetched, decompressed and decoded again (what that cost: benches/README.md, "Since:
//! page-by-page reads and a cheaper heap"). Here arrow-rs's own page-at-a-time reader runs over storage instead: each column
//! fetches its next page when it reaches it (one storage call per page, exactly the page's
//! bytes when the file has an offset index), decodes it once, and holds only that page.
//!
//! One call per page suits a local disk or the component boundary, not an object store, where
//! every call pays a round trip. So each column reads ahead: a fetch for a page takes up to
//! the caller's read-ahead of bytes (256 KiB by default) of that column chunk, and the pages after it
//! are cut from that window without another call. Memory grows by at most one window per
//! column of each open file (a merge of 10 runs of 9 columns: 23 MB at the default).
//!
//! arrow-rs asks for a `'static + Send + Sync` chunk reader, so it owns a handle to the storage
//! (`Arc<dyn Storage>`). A storage failure is kept aside and reported as itself (a typed
//! storage error naming the file), not as the Parquet error the reader turns it into.

use std::fmt::Display;
use std::io::Read;
use std::sync::{Arc, Mutex, MutexGuard};

use arrow_array::RecordBatch;
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder, RowSelection,
};
use parquet::arrow::{parquet_to_arrow_field_levels, ProjectionMask};
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};

use super::footer::InputFile;
use super::host_decompression::{self, OffloadedRowGroups};
use super::page_guard::{self, Chunk, ChunkMap, PageCheck};
use super::read::{corrupt, IoCounters, BATCH_SIZE};
use crate::decoder_panics::contain;
use crate::error::{Error, Result};
use crate::host_codec::CodecOffload;
use crate::storage::{Storage, StorageError};

/// Bytes fetched at a time for a page header when the file has no offset index (the header's
/// length is only known once it is parsed; most are well under this).
const HEADER_FETCH: u64 = 4096;

/// The most bytes fetched to check one page header. A header holds its page's statistics,
/// which some writers do not truncate, so a long value makes a long header; past this the
/// rest of a header is left to arrow-rs unchecked, still bounded by its column chunk
/// ([`HeaderRead`]).
const MAX_HEADER: u64 = 16 << 20;

/// Bytes fetched ahead for one column: `data` starts at file offset `start`.
struct Window {
    start: u64,
    data: Bytes,
}

#[derive(Default)]
struct ChunkState {
    io: IoCounters,
    /// The first storage failure, reported instead of the reader's error.
    error: Option<StorageError>,
    /// The window of each column (leaf index), replaced as the column reads on.
    windows: Vec<Option<Window>>,
}

struct Inner {
    storage: Arc<dyn Storage>,
    path: String,
    size: u64,
    state: Mutex<ChunkState>,
    read_ahead: u64,
    /// The file's column chunks: each read's column (for its read-ahead window) and codec (for
    /// the page-header checks, [`super::page_guard`]).
    chunks: ChunkMap,
    /// Where pages start, sorted, when the file has an offset index: arrow-rs then reads each
    /// page (header and body) with one `get_bytes` at its start.
    page_starts: Option<Vec<u64>>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, ChunkState> {
        // Nothing panics while holding it; the counters of a poisoned lock are still fine.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `len` bytes at `offset` (fewer at the end of the file), from the column's window when
    /// it holds them, else through a fetch that becomes the column's new window.
    fn read(&self, offset: u64, len: u64) -> parquet::errors::Result<Bytes> {
        let len = len.min(self.size.saturating_sub(offset));
        let Some(&Chunk {
            end: chunk_end,
            leaf,
            ..
        }) = (self.read_ahead > 0)
            .then(|| self.chunks.at(offset))
            .flatten()
        else {
            return self.fetch(offset, len);
        };
        // The part of the request the column's window already holds (a page straddling the
        // window's end keeps its first part, so no byte is fetched twice).
        let held = {
            let st = self.lock();
            match st.windows.get(leaf) {
                Some(Some(w)) if offset >= w.start && offset < w.start + w.data.len() as u64 => {
                    let at = (offset - w.start) as usize;
                    let held = w.data.slice(at..);
                    if held.len() as u64 >= len {
                        return Ok(held.slice(..len as usize));
                    }
                    held
                }
                _ => Bytes::new(),
            }
        };
        // The request, and the rest of the column chunk up to the read-ahead.
        let want = len.max(self.read_ahead.min(chunk_end.saturating_sub(offset)));
        let want = want.min(self.size.saturating_sub(offset));
        let rest = self.fetch(offset + held.len() as u64, want - held.len() as u64)?;
        let data = if held.is_empty() {
            rest
        } else {
            let mut joined = Vec::with_capacity(want as usize);
            joined.extend_from_slice(&held);
            joined.extend_from_slice(&rest);
            Bytes::from(joined)
        };
        let piece = data.slice(..len as usize);
        let mut st = self.lock();
        if st.windows.len() <= leaf {
            st.windows.resize_with(leaf + 1, || None);
        }
        st.windows[leaf] = Some(Window {
            start: offset,
            data,
        });
        Ok(piece)
    }

    /// One storage call for exactly `len` bytes at `offset`.
    fn fetch(&self, offset: u64, len: u64) -> parquet::errors::Result<Bytes> {
        match self.storage.read_range(&self.path, offset, len) {
            Ok(bytes) => {
                let mut st = self.lock();
                st.io.reads += 1;
                st.io.bytes += bytes.len() as u64;
                if (bytes.len() as u64) < len {
                    return Err(ParquetError::EOF(format!(
                        "{} bytes at {offset} where {len} were expected (truncated?)",
                        bytes.len()
                    )));
                }
                Ok(Bytes::from(bytes))
            }
            Err(e) => {
                let msg = e.to_string();
                self.lock().error.get_or_insert(e);
                Err(ParquetError::External(msg.into()))
            }
        }
    }
}

/// The chunk reader arrow-rs reads pages through.
#[derive(Clone)]
struct Chunks(Arc<Inner>);

impl Length for Chunks {
    fn len(&self) -> u64 {
        self.0.size
    }
}

impl ChunkReader for Chunks {
    type T = HeaderRead;

    fn get_read(&self, start: u64) -> parquet::errors::Result<HeaderRead> {
        let end = match self.0.chunks.at(start) {
            Some(chunk) => chunk.end.min(self.0.size),
            None => self.0.size,
        };
        Ok(HeaderRead {
            inner: self.0.clone(),
            offset: start,
            end,
            buf: Bytes::new(),
            checked: false,
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let bytes = self.0.read(start, length as u64)?;
        // With an offset index, a read at a page's start is the whole page, header first.
        let at_page = self
            .0
            .page_starts
            .as_ref()
            .is_some_and(|s| s.binary_search(&start).is_ok());
        if let (true, Some(chunk)) = (at_page, self.0.chunks.at(start)) {
            page_guard::check_pages(&bytes, chunk.codec, |_, _| Ok(())).map_err(refused)?;
        }
        Ok(bytes)
    }
}

/// A page header [`page_guard`] refused, as the reader error arrow-rs passes on.
fn refused(why: String) -> ParquetError {
    ParquetError::General(why)
}

/// A `Read` from an offset of the file, fetching [`HEADER_FETCH`] bytes at a time (arrow-rs
/// parses page headers from it; page bodies come through `get_bytes`). arrow-rs also asks for
/// one where it will not read (at a page's body, when it peeked at the header before), so the
/// page header is checked ([`page_guard`]) at the first read, not when it is made.
///
/// It ends, with an error, at the end of its column chunk: a page header never goes past it,
/// and arrow-rs 60.1 takes a read of nothing as a skip done (a list of two billion doubles
/// skipped at the end of the bytes loops for minutes: `parquet_merge`'s
/// `timeout-header-past-chunk`, `fuzz/README.md`).
struct HeaderRead {
    inner: Arc<Inner>,
    offset: u64,
    /// Where its column chunk ends (the file's end for a read outside every chunk).
    end: u64,
    buf: Bytes,
    checked: bool,
}

impl HeaderRead {
    /// The first bytes at `offset`, where arrow-rs is about to parse a page header: fetched
    /// and checked, with more fetched while the header goes on past them (up to
    /// [`MAX_HEADER`]), so that arrow-rs reads a header the check walked whole.
    fn first_fetch(&mut self) -> std::io::Result<Bytes> {
        self.checked = true;
        let start = self.offset;
        let left = self.end.saturating_sub(start);
        let fetch = |len: u64| self.inner.read(start, len).map_err(std::io::Error::other);
        let Some(codec) = self.inner.chunks.at(start).map(|c| c.codec) else {
            return fetch(HEADER_FETCH.min(left));
        };
        let mut want = HEADER_FETCH.min(left);
        loop {
            let bytes = fetch(want)?;
            let checked = page_guard::check_page(&bytes, left, codec)
                .map_err(|why| std::io::Error::other(refused(why)))?;
            if checked != PageCheck::NeedsMore || want >= MAX_HEADER {
                return Ok(bytes);
            }
            want = want.saturating_mul(4).min(left).min(MAX_HEADER);
        }
    }
}

impl Read for HeaderRead {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.buf.is_empty() {
            if out.is_empty() {
                return Ok(0);
            }
            if self.offset >= self.end {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    refused("a page header runs past the end of its column chunk".into()),
                ));
            }
            self.buf = if self.checked {
                self.inner
                    .read(self.offset, HEADER_FETCH.min(self.end - self.offset))
                    .map_err(std::io::Error::other)?
            } else {
                self.first_fetch()?
            };
            if self.buf.is_empty() {
                // The file ended before its metadata said (a read returns what there is).
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    refused("a page header runs past the end of the file".into()),
                ));
            }
            self.offset += self.buf.len() as u64;
        }
        let n = out.len().min(self.buf.len());
        out[..n].copy_from_slice(&self.buf[..n]);
        self.buf = self.buf.slice(n..);
        Ok(n)
    }
}

/// Decoded batches of one input file, each column one page in memory at a time.
pub(crate) struct PageStream {
    reader: ParquetRecordBatchReader,
    inner: Arc<Inner>,
}

impl PageStream {
    /// Batches of `input` read as `metadata` says, skipping the rows `selection` leaves out.
    /// `read_ahead`: bytes of a column chunk fetched at a time (`0`: exactly the bytes asked
    /// for, one call per page).
    /// `offload`: the host's zstd, which then decompresses the file's zstd pages.
    pub(crate) fn new(
        storage: &Arc<dyn Storage>,
        input: &InputFile,
        metadata: ArrowReaderMetadata,
        selection: Option<RowSelection>,
        read_ahead: u64,
        offload: Option<&Arc<CodecOffload>>,
    ) -> Result<Self> {
        let meta = metadata.metadata();
        let chunks = ChunkMap::of(meta);
        let page_starts = meta
            .page_index()
            .filter(|index| index.has_offset_indexes())
            .map(|index| {
                let mut starts: Vec<u64> = chunks.chunks().iter().map(|c| c.start).collect();
                for (g, rg) in meta.row_groups().iter().enumerate() {
                    for c in 0..rg.num_columns() {
                        if let Some(offsets) = index.offset_index(g, c) {
                            starts.extend(
                                offsets
                                    .page_locations()
                                    .iter()
                                    .filter_map(|p| u64::try_from(p.offset).ok()),
                            );
                        }
                    }
                }
                starts.sort_unstable();
                starts.dedup();
                starts
            });
        let inner = Arc::new(Inner {
            read_ahead,
            chunks,
            page_starts,
            storage: storage.clone(),
            path: input.path.clone(),
            size: input.size,
            state: Mutex::new(ChunkState::default()),
        });
        let offload = offload.filter(|_| host_decompression::has_zstd(metadata.metadata()));
        // Page readers of our own where the host decompresses, or where a column repeats
        // (its levels are checked: `level_guard`).
        let repeats = meta
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .any(|c| c.max_rep_level() > 0);
        let reader = match (offload, repeats) {
            (None, false) => {
                let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(
                    Chunks(inner.clone()),
                    metadata,
                )
                .with_batch_size(BATCH_SIZE);
                if let Some(selection) = selection {
                    builder = builder.with_row_selection(selection);
                }
                builder.build()
            }
            (offload, _) => {
                // The same columns and Arrow types the builder below would decode, with page
                // readers of our own making (see `host_decompression`).
                let levels = parquet_to_arrow_field_levels(
                    metadata.metadata().file_metadata().schema_descr(),
                    ProjectionMask::all(),
                    Some(metadata.schema().fields()),
                )
                .map_err(|e| fail(&inner, e))?;
                let groups = OffloadedRowGroups {
                    reader: Arc::new(Chunks(inner.clone())),
                    metadata: metadata.metadata().clone(),
                    offload: offload.cloned(),
                };
                ParquetRecordBatchReader::try_new_with_row_groups(
                    &levels, &groups, BATCH_SIZE, selection,
                )
            }
        }
        .map_err(|e| fail(&inner, e))?;
        Ok(PageStream { reader, inner })
    }

    /// The next batch, or `None` at the end of the file.
    pub(crate) fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let (reader, inner) = (&mut self.reader, &self.inner);
        contain(&inner.path, "Parquet", || match reader.next() {
            None => Ok(None),
            Some(Ok(batch)) => Ok(Some(batch)),
            Some(Err(e)) => Err(fail(inner, e)),
        })
    }

    /// Storage traffic since the last call.
    pub(crate) fn take_io(&self) -> IoCounters {
        std::mem::take(&mut self.inner.lock().io)
    }
}

/// The storage failure behind a reader error if there was one, else the file is corrupt.
fn fail(inner: &Inner, e: impl Display) -> Error {
    match inner.lock().error.take() {
        Some(storage) => Error::from(storage),
        None => corrupt(&inner.path, e),
    }
}
