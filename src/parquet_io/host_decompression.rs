//! Reading zstd pages with the host's codec ([`crate::host_codec`]).
//!
//! arrow-rs decompresses inside its page reader with a codec of its own choosing, and offers
//! no way to plug another one in. It does let a caller supply the page readers
//! ([`RowGroups`]), so here each column chunk's `SerializedPageReader` is told the chunk is
//! uncompressed (it then hands page bodies over as they are stored) and a wrapper
//! decompresses each body with the host's zstd before the column reader sees it. Chunks in
//! another codec keep arrow-rs's own reader.

use std::sync::Arc;

use bytes::Bytes;
use parquet::arrow::arrow_reader::RowGroups;
use parquet::basic::Compression;
use parquet::column::page::{Page, PageIterator, PageReader};
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};
use parquet::file::reader::ChunkReader;
use parquet::file::serialized_reader::SerializedPageReader;

use super::mapped_pages::MappedPages;
use crate::host_codec::CodecOffload;

/// Whether any column chunk of `metadata` is zstd (else offloading has nothing to do).
pub(crate) fn has_zstd(metadata: &ParquetMetaData) -> bool {
    metadata
        .row_groups()
        .iter()
        .flat_map(|rg| rg.columns())
        .any(|c| matches!(c.compression(), Compression::ZSTD(_)))
}

/// Every row group of a file through page readers of our own: its zstd column chunks
/// decompressed by the host's codec when `offload` is given, and the pages of repeated columns
/// checked ([`super::level_guard`]).
pub(crate) struct OffloadedRowGroups<R> {
    pub reader: Arc<R>,
    pub metadata: Arc<ParquetMetaData>,
    pub offload: Option<Arc<CodecOffload>>,
}

impl<R: ChunkReader + 'static> RowGroups for OffloadedRowGroups<R> {
    fn num_rows(&self) -> usize {
        self.metadata
            .row_groups()
            .iter()
            .map(|rg| rg.num_rows() as usize)
            .sum()
    }

    fn column_chunks(&self, column: usize) -> Result<Box<dyn PageIterator>> {
        Ok(Box::new(ChunkPageReaders {
            reader: self.reader.clone(),
            metadata: self.metadata.clone(),
            offload: self.offload.clone(),
            column,
            next_row_group: 0,
        }))
    }

    fn row_groups(&self) -> Box<dyn Iterator<Item = &RowGroupMetaData> + '_> {
        Box::new(self.metadata.row_groups().iter())
    }

    fn metadata(&self) -> &ParquetMetaData {
        &self.metadata
    }
}

/// The page readers of one column, a row group at a time.
struct ChunkPageReaders<R> {
    reader: Arc<R>,
    metadata: Arc<ParquetMetaData>,
    offload: Option<Arc<CodecOffload>>,
    column: usize,
    next_row_group: usize,
}

impl<R: ChunkReader + 'static> ChunkPageReaders<R> {
    fn page_reader(&self, rg: usize) -> Result<Box<dyn PageReader>> {
        let max_rep_level = self
            .metadata
            .file_metadata()
            .schema_descr()
            .column(self.column)
            .max_rep_level();
        Ok(super::level_guard::wrap(
            self.stored_pages(rg)?,
            max_rep_level,
        ))
    }

    fn stored_pages(&self, rg: usize) -> Result<Box<dyn PageReader>> {
        let row_group = self.metadata.row_group(rg);
        let chunk = row_group.column(self.column);
        let locations = self
            .metadata
            .page_index()
            .and_then(|index| index.page_locations(rg, self.column).cloned());
        let rows = row_group.num_rows() as usize;
        let offload = match &self.offload {
            Some(offload) if matches!(chunk.compression(), Compression::ZSTD(_)) => offload,
            _ => {
                return Ok(Box::new(SerializedPageReader::new(
                    self.reader.clone(),
                    chunk,
                    rows,
                    locations,
                )?))
            }
        };
        let stored = chunk
            .clone()
            .into_builder()
            .set_compression(Compression::UNCOMPRESSED)
            .build()?;
        let inner = SerializedPageReader::new(self.reader.clone(), &stored, rows, locations)?;
        let offload = Arc::clone(offload);
        Ok(Box::new(MappedPages::new(Box::new(inner), move |page| {
            decompress(&offload, page)
        })))
    }
}

impl<R: ChunkReader + 'static> Iterator for ChunkPageReaders<R> {
    type Item = Result<Box<dyn PageReader>>;

    fn next(&mut self) -> Option<Self::Item> {
        let rg = self.next_row_group;
        if rg >= self.metadata.num_row_groups() {
            return None;
        }
        self.next_row_group += 1;
        Some(self.page_reader(rg))
    }
}

impl<R: ChunkReader + 'static> PageIterator for ChunkPageReaders<R> {}

/// A page body as stored in a zstd column chunk, decompressed by the host.
fn body(offload: &CodecOffload, stored: &[u8]) -> Result<Bytes> {
    if stored.is_empty() {
        // A page without values may store no body at all.
        return Ok(Bytes::new());
    }
    offload
        .zstd_decompress(stored, None)
        .map(Bytes::from)
        .map_err(|e| ParquetError::General(format!("zstd page (host codec): {e}")))
}

/// A page of a zstd column chunk, read as stored, with its body decompressed by the host.
fn decompress(offload: &CodecOffload, mut page: Page) -> Result<Page> {
    match &mut page {
        Page::DictionaryPage { buf, .. } | Page::DataPage { buf, .. } => {
            *buf = body(offload, buf)?;
        }
        Page::DataPageV2 {
            buf,
            def_levels_byte_len,
            rep_levels_byte_len,
            is_compressed,
            ..
        } if *is_compressed => {
            // The levels are stored uncompressed before the compressed values; an empty
            // value section (a page of nulls) has nothing to decompress.
            let levels = *def_levels_byte_len as usize + *rep_levels_byte_len as usize;
            let values = buf.get(levels..).ok_or_else(|| {
                ParquetError::General(format!(
                    "V2 page of {} bytes with {levels} bytes of levels",
                    buf.len()
                ))
            })?;
            if !values.is_empty() {
                let values = body(offload, values)?;
                let mut joined = Vec::with_capacity(levels + values.len());
                joined.extend_from_slice(&buf[..levels]);
                joined.extend_from_slice(&values);
                *buf = Bytes::from(joined);
            }
            *is_compressed = false;
        }
        Page::DataPageV2 { .. } => {}
    }
    Ok(page)
}
