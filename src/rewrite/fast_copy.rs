//! Fast copy (`paimon-compact.append.fast-copy`, off by default): input row groups are spliced
//! into the output as they are, column chunk by column chunk, without decoding or re-encoding.
//!
//! A copied row group keeps its pages, encodings, codec and row-group size, so it is only taken
//! when the result is what a rewrite with the table's options would have been allowed to
//! produce: the same Parquet schema (names, ids, types, repetition), the table's codec, no
//! dictionary pages when dictionaries are disabled, and row groups no larger than
//! `parquet.block.size`. Files with deleted rows are always decoded. Otherwise the file is
//! rewritten and the metrics say why. The zstd level is not recorded in Parquet files, so files
//! compressed at another level are copied as they are.
//!
//! The trade-off, and why it is opt-in: small input files have small row groups, and copying
//! keeps them small (many row groups per output file) where a rewrite would merge them.

use std::ops::Range;

use bytes::{Buf, Bytes};
use parquet::basic::Compression;
use parquet::errors::ParquetError;
use parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};
use parquet::file::reader::{ChunkReader, Length};
use parquet::schema::types::SchemaDescriptor;

use super::metrics::FastCopyRefusalReason;

fn codec_name(c: Compression) -> String {
    match c {
        Compression::UNCOMPRESSED => "none".into(),
        Compression::SNAPPY => "snappy".into(),
        Compression::GZIP(_) => "gzip".into(),
        Compression::LZO => "lzo".into(),
        Compression::BROTLI(_) => "brotli".into(),
        Compression::LZ4 => "lz4".into(),
        Compression::ZSTD(_) => "zstd".into(),
        Compression::LZ4_RAW => "lz4_raw".into(),
    }
}

/// Whether `metadata` can be copied into an output with schema `output`, codec `codec`.
pub(crate) fn check(
    metadata: &ParquetMetaData,
    output: &SchemaDescriptor,
    codec: Compression,
    enable_dictionary: bool,
    block_size: u64,
    has_deletions: bool,
) -> Result<(), FastCopyRefusalReason> {
    if has_deletions {
        return Err(FastCopyRefusalReason::HasDeletions);
    }
    let schema = metadata.file_metadata().schema_descr();
    if schema.num_columns() != output.num_columns() {
        return Err(FastCopyRefusalReason::SchemaDiffers {
            column: format!(
                "{} columns instead of {}",
                schema.num_columns(),
                output.num_columns()
            ),
        });
    }
    for (mine, theirs) in schema.columns().iter().zip(output.columns()) {
        if mine != theirs {
            return Err(FastCopyRefusalReason::SchemaDiffers {
                column: mine.path().string(),
            });
        }
    }
    if metadata.num_row_groups() == 0 {
        return Err(FastCopyRefusalReason::Empty);
    }
    let wanted = std::mem::discriminant(&codec);
    for (i, rg) in metadata.row_groups().iter().enumerate() {
        for chunk in rg.columns() {
            if std::mem::discriminant(&chunk.compression()) != wanted {
                return Err(FastCopyRefusalReason::CodecDiffers {
                    column: chunk.column_path().string(),
                    file: codec_name(chunk.compression()),
                    table: codec_name(codec),
                });
            }
            if !enable_dictionary && chunk.dictionary_page_offset().is_some() {
                return Err(FastCopyRefusalReason::DictionaryDisabled {
                    column: chunk.column_path().string(),
                });
            }
        }
        let bytes = rg.compressed_size().max(0) as u64;
        if bytes > block_size {
            return Err(FastCopyRefusalReason::RowGroupTooLarge {
                row_group: i,
                bytes,
                block_size,
            });
        }
    }
    Ok(())
}

/// The byte range of the file holding all column chunks of `rg` (one storage read).
pub(crate) fn row_group_range(rg: &RowGroupMetaData) -> Range<u64> {
    let mut start = u64::MAX;
    let mut end = 0u64;
    for chunk in rg.columns() {
        let (s, len) = chunk.byte_range();
        start = start.min(s);
        end = end.max(s.saturating_add(len));
    }
    if start > end {
        0..0
    } else {
        start..end
    }
}

/// A window of an input file, addressed with the file's own offsets, for `append_column`.
pub(crate) struct FileWindow {
    pub base: u64,
    pub bytes: Bytes,
}

impl Length for FileWindow {
    fn len(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }
}

impl FileWindow {
    fn slice(&self, start: u64, len: Option<usize>) -> Result<Bytes, ParquetError> {
        let from = start
            .checked_sub(self.base)
            .map(|o| o as usize)
            .filter(|o| *o <= self.bytes.len())
            .ok_or_else(|| {
                ParquetError::General(format!("offset {start} outside the copied window"))
            })?;
        let to = match len {
            Some(l) => from
                .checked_add(l)
                .filter(|t| *t <= self.bytes.len())
                .ok_or_else(|| {
                    ParquetError::General(format!("range at {start} outside the copied window"))
                })?,
            None => self.bytes.len(),
        };
        Ok(self.bytes.slice(from..to))
    }
}

impl ChunkReader for FileWindow {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> Result<Self::T, ParquetError> {
        Ok(self.slice(start, None)?.reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes, ParquetError> {
        self.slice(start, Some(length))
    }
}
