//! ORC's compression framing: a compressed stream (and the footer and stripe footers) is a
//! sequence of chunks, each behind a 3-byte little-endian header whose value is
//! `length * 2 + original` (`original`: the chunk is stored as it is because compressing it
//! did not help). A chunk decompresses to at most the postscript's block size.
//!
//! Codecs: ZLIB is raw deflate (no zlib header), SNAPPY, LZ4 and LZO are raw blocks, ZSTD is a
//! zstd frame. LZO is our own ([`super::lzo`]): its decoder reads any LZO1X block, its
//! encoder writes blocks Java's ORC reads (the Java peer's `orc_lzo` table).

use std::io::{Read, Write};

use super::proto::CompressionKind;
use crate::error::{Error, Result};

fn bad(why: impl std::fmt::Display) -> Error {
    Error::corrupt(None, format!("ORC compressed stream: {why}"))
}

/// The codec of a file and its block size, for reading and writing its streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Codec {
    pub kind: CompressionKind,
    pub block_size: usize,
}

impl Codec {
    /// Decompresses a whole stream. Each chunk is bounded by the block size, so the result
    /// is at most `block_size` per 3 input bytes of headers: hostile lengths cannot ask for
    /// more memory than that.
    pub(crate) fn decompress(self, input: &[u8]) -> Result<Vec<u8>> {
        if self.kind == CompressionKind::None {
            return Ok(input.to_vec());
        }
        let mut out = Vec::with_capacity(input.len().saturating_mul(2).min(1 << 24));
        let mut rest = input;
        while !rest.is_empty() {
            let (head, body) = rest
                .split_first_chunk::<3>()
                .ok_or_else(|| bad("a chunk header is truncated"))?;
            let h = u32::from(head[0]) | u32::from(head[1]) << 8 | u32::from(head[2]) << 16;
            let len = (h >> 1) as usize;
            if len > body.len() {
                return Err(bad("a chunk runs past its stream"));
            }
            let (chunk, next) = body.split_at(len);
            rest = next;
            if h & 1 == 1 {
                out.extend_from_slice(chunk);
            } else {
                self.decompress_chunk(chunk, &mut out)?;
            }
        }
        Ok(out)
    }

    fn decompress_chunk(self, chunk: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let limit = self.block_size;
        let start = out.len();
        match self.kind {
            CompressionKind::None => out.extend_from_slice(chunk),
            CompressionKind::Zlib => {
                let mut dec = flate2::read::DeflateDecoder::new(chunk).take(limit as u64 + 1);
                dec.read_to_end(out)
                    .map_err(|e| bad(format!("zlib: {e}")))?;
            }
            CompressionKind::Snappy => {
                let n =
                    snap::raw::decompress_len(chunk).map_err(|e| bad(format!("snappy: {e}")))?;
                if n > limit {
                    return Err(bad("a snappy chunk is larger than the block size"));
                }
                out.resize(start + n, 0);
                snap::raw::Decoder::new()
                    .decompress(chunk, &mut out[start..])
                    .map_err(|e| bad(format!("snappy: {e}")))?;
            }
            CompressionKind::Lz4 => {
                out.resize(start + limit, 0);
                let n = lz4_flex::block::decompress_into(chunk, &mut out[start..])
                    .map_err(|e| bad(format!("lz4: {e}")))?;
                out.truncate(start + n);
            }
            CompressionKind::Zstd => {
                let mut dec = zstd::stream::read::Decoder::new(chunk)
                    .map_err(|e| bad(format!("zstd: {e}")))?
                    .take(limit as u64 + 1);
                dec.read_to_end(out)
                    .map_err(|e| bad(format!("zstd: {e}")))?;
            }
            CompressionKind::Lzo => {
                super::lzo::decompress(chunk, out, limit).map_err(bad)?;
            }
        }
        if out.len() - start > limit {
            return Err(bad("a chunk decompresses past the block size"));
        }
        Ok(())
    }

    /// Compresses `input` into chunks of at most the block size, each behind its header;
    /// a chunk that does not shrink is stored as it is.
    pub(crate) fn compress(self, input: &[u8], out: &mut Vec<u8>) -> Result<()> {
        if self.kind == CompressionKind::None {
            out.extend_from_slice(input);
            return Ok(());
        }
        for chunk in input.chunks(self.block_size.max(1)) {
            let packed = self.compress_chunk(chunk)?;
            let (body, original) = match &packed {
                Some(p) if p.len() < chunk.len() => (p.as_slice(), 0),
                _ => (chunk, 1),
            };
            let h = (body.len() as u32) << 1 | original;
            out.extend_from_slice(&h.to_le_bytes()[..3]);
            out.extend_from_slice(body);
        }
        Ok(())
    }

    fn compress_chunk(self, chunk: &[u8]) -> Result<Option<Vec<u8>>> {
        let fail = |e: &dyn std::fmt::Display| Error::internal(format!("ORC compression: {e}"));
        Ok(Some(match self.kind {
            CompressionKind::None => return Ok(None),
            CompressionKind::Zlib => {
                let mut enc = flate2::write::DeflateEncoder::new(
                    Vec::with_capacity(chunk.len() / 2),
                    flate2::Compression::default(),
                );
                enc.write_all(chunk).map_err(|e| fail(&e))?;
                enc.finish().map_err(|e| fail(&e))?
            }
            CompressionKind::Snappy => snap::raw::Encoder::new()
                .compress_vec(chunk)
                .map_err(|e| fail(&e))?,
            CompressionKind::Lz4 => lz4_flex::block::compress(chunk),
            CompressionKind::Zstd => zstd::bulk::compress(chunk, 1).map_err(|e| fail(&e))?,
            CompressionKind::Lzo => super::lzo::compress(chunk),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_round_trips_across_chunks() {
        let data: Vec<u8> = (0..100_000u32)
            .map(|i| (i % 251) as u8 ^ (i / 977) as u8)
            .collect();
        for kind in [
            CompressionKind::None,
            CompressionKind::Zlib,
            CompressionKind::Snappy,
            CompressionKind::Lz4,
            CompressionKind::Zstd,
            CompressionKind::Lzo,
        ] {
            let codec = Codec {
                kind,
                block_size: 4096,
            };
            let mut packed = Vec::new();
            codec.compress(&data, &mut packed).unwrap();
            assert_eq!(codec.decompress(&packed).unwrap(), data, "{kind:?}");
            if kind != CompressionKind::None {
                // Compressed chunks, not stored ones: the data repeats with a period of 251.
                assert!(packed.len() * 2 < data.len(), "{kind:?}: {}", packed.len());
            }
            for cut in [1, 2, 3, 10, packed.len() / 2, packed.len() - 1] {
                let _ = codec.decompress(&packed[..cut]);
            }
        }
    }

    #[test]
    fn a_chunk_larger_than_the_block_is_corrupt() {
        let big = Codec {
            kind: CompressionKind::Zstd,
            block_size: 1 << 20,
        };
        let mut packed = Vec::new();
        big.compress(&vec![7u8; 100_000], &mut packed).unwrap();
        let small = Codec {
            kind: CompressionKind::Zstd,
            block_size: 1000,
        };
        assert!(small.decompress(&packed).is_err());
        let lzo = Codec {
            kind: CompressionKind::Lzo,
            block_size: 1000,
        };
        let mut packed = Vec::new();
        lzo.compress(&vec![7u8; 2500], &mut packed).unwrap();
        assert_eq!(lzo.decompress(&packed).unwrap(), vec![7u8; 2500]);
        let wide = Codec {
            kind: CompressionKind::Lzo,
            block_size: 3000,
        };
        assert!(wide.decompress(&packed).is_ok());
        let mut packed = Vec::new();
        wide.compress(&vec![7u8; 2500], &mut packed).unwrap();
        assert!(lzo.decompress(&packed).is_err());
    }
}
