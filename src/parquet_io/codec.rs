//! Page compression for the pages this crate encodes itself (the passthrough column writer).
//!
//! parquet-rs keeps its codecs private unless its `experimental` feature is on (which also pulls
//! in the variant crates), so the handful of block codecs Paimon writes are called here directly,
//! through the same crates and versions parquet links, producing the exact framing parquet-rs
//! itself writes (LZ4 "hadoop" is the 8-byte big-endian size prefix before an LZ4 block).
//! When the host offers its own zstd ([`crate::host_codec`]), zstd pages go to it instead.

use std::io::Write;
use std::sync::Arc;

use parquet::basic::Compression;

use crate::error::{Error, Result};
use crate::host_codec::CodecOffload;

/// A stateful compressor for one column chunk (zstd keeps its context between pages).
pub(crate) enum PageCompressor {
    None,
    Snappy(Box<snap::raw::Encoder>),
    Gzip(u32),
    Lz4Hadoop,
    Lz4Raw,
    Zstd(Box<zstd::bulk::Compressor<'static>>),
    /// zstd run by the host.
    HostZstd(Arc<CodecOffload>, i32),
}

impl PageCompressor {
    /// The compressor for `codec`; `Unsupported` for codecs this build cannot write. zstd goes
    /// to `offload` when there is one.
    pub(crate) fn new(codec: Compression, offload: Option<&Arc<CodecOffload>>) -> Result<Self> {
        if let (Compression::ZSTD(level), Some(host)) = (codec, offload) {
            return Ok(PageCompressor::HostZstd(
                Arc::clone(host),
                level.compression_level(),
            ));
        }
        Ok(match codec {
            Compression::UNCOMPRESSED => PageCompressor::None,
            Compression::SNAPPY => PageCompressor::Snappy(Box::new(snap::raw::Encoder::new())),
            Compression::GZIP(level) => PageCompressor::Gzip(level.compression_level()),
            Compression::LZ4 => PageCompressor::Lz4Hadoop,
            Compression::LZ4_RAW => PageCompressor::Lz4Raw,
            Compression::ZSTD(level) => PageCompressor::Zstd(Box::new(
                zstd::bulk::Compressor::new(level.compression_level())
                    .map_err(|e| Error::unsupported(format!("zstd compressor: {e}")))?,
            )),
            other => {
                return Err(Error::unsupported(format!(
                    "page compression {other:?} is not built in"
                )))
            }
        })
    }

    /// Compresses one page body. `None` means "store as is" (no codec). The result may carry
    /// the codec's worst-case capacity: callers copy it behind the page header at once, so
    /// shrinking it would only be a reallocation and a copy per page.
    pub(crate) fn compress(&mut self, input: &[u8]) -> Result<Option<Vec<u8>>> {
        let fail =
            |e: &dyn std::fmt::Display| Error::unsupported(format!("compressing a page: {e}"));
        Ok(Some(match self {
            PageCompressor::None => return Ok(None),
            PageCompressor::Snappy(enc) => enc.compress_vec(input).map_err(|e| fail(&e))?,
            PageCompressor::Gzip(level) => {
                let mut enc = flate2::write::GzEncoder::new(
                    Vec::with_capacity(input.len() / 2 + 64),
                    flate2::Compression::new(*level),
                );
                enc.write_all(input).map_err(|e| fail(&e))?;
                enc.finish().map_err(|e| fail(&e))?
            }
            PageCompressor::Lz4Raw => lz4_flex::block::compress(input),
            PageCompressor::Lz4Hadoop => {
                let block = lz4_flex::block::compress(input);
                let mut out = Vec::with_capacity(block.len() + 8);
                out.extend_from_slice(&(input.len() as u32).to_be_bytes());
                out.extend_from_slice(&(block.len() as u32).to_be_bytes());
                out.extend_from_slice(&block);
                out
            }
            PageCompressor::Zstd(c) => c.compress(input).map_err(|e| fail(&e))?,
            PageCompressor::HostZstd(host, level) => host
                .zstd_compress(*level, input)
                .map_err(|e| fail(&format!("host codec: {e}")))?,
        }))
    }
}
