//! The component's `codec` import: zstd run natively for the guest.
//!
//! Inside wasmtime the component's own zstd runs as wasm, well behind native speed; taking
//! the page codec over is the largest single saving a host can give a rewrite (figures in
//! `benches/README.md`). Frames are ordinary zstd, so files are the same whoever compresses.

use std::io::Read;

/// zstd contexts reused across one call's pages (a context per page would allocate its
/// tables every time).
pub struct NativeZstd {
    compressor: Option<(i32, zstd::bulk::Compressor<'static>)>,
    decompressor: Option<zstd::bulk::Decompressor<'static>>,
    /// The most a decompression may produce. The result must fit in the guest's memory
    /// anyway, and the host allocates it outside the guest's limit: a frame that claims (or
    /// inflates to) more is refused instead of exhausting the host.
    max_output: usize,
}

impl NativeZstd {
    /// Decompressions produce at most `max_output` bytes (the guest's memory limit).
    pub fn new(max_output: usize) -> Self {
        NativeZstd {
            compressor: None,
            decompressor: None,
            max_output,
        }
    }

    /// One zstd frame of `data` at `level`; the compressor is kept for the next page and
    /// rebuilt only when the level changes. The error is a message for the guest.
    pub fn compress(&mut self, level: i32, data: &[u8]) -> Result<Vec<u8>, String> {
        if !matches!(&self.compressor, Some((l, _)) if *l == level) {
            let c = zstd::bulk::Compressor::new(level)
                .map_err(|e| format!("zstd level {level}: {e}"))?;
            self.compressor = Some((level, c));
        }
        match &mut self.compressor {
            Some((_, c)) => c.compress(data).map_err(|e| format!("zstd: {e}")),
            None => Err("zstd compressor missing".into()),
        }
    }

    /// The frame's recorded content size sizes the output; a frame without one (or several
    /// frames) goes through the streaming decoder.
    pub fn decompress(&mut self, data: &[u8], size_hint: u64) -> Result<Vec<u8>, String> {
        let size = match zstd::zstd_safe::get_frame_content_size(data) {
            Ok(Some(n)) => Some(n),
            Ok(None) => (size_hint > 0).then_some(size_hint),
            Err(_) => return Err("not a zstd frame".into()),
        };
        let too_large = |n: u64| format!("zstd frame of {n} bytes exceeds the guest's memory");
        if let Some(n) = size.filter(|&n| n > self.max_output as u64) {
            return Err(too_large(n));
        }
        if let Some(n) = size.and_then(|n| usize::try_from(n).ok()) {
            let d = match &mut self.decompressor {
                Some(d) => d,
                None => self
                    .decompressor
                    .insert(zstd::bulk::Decompressor::new().map_err(|e| format!("zstd: {e}"))?),
            };
            if let Ok(out) = d.decompress(data, n) {
                return Ok(out);
            }
        }
        let decoder = zstd::stream::read::Decoder::new(data).map_err(|e| format!("zstd: {e}"))?;
        let mut out = Vec::new();
        decoder
            .take(self.max_output as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|e| format!("zstd: {e}"))?;
        if out.len() > self.max_output {
            return Err(too_large(out.len() as u64));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_single_and_concatenated_frames() {
        let mut z = NativeZstd::new(1 << 30);
        let a: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let fa = z.compress(1, &a).unwrap();
        assert_eq!(z.decompress(&fa, 0).unwrap(), a);
        // A level change gets a new context; frames written at another level still decode.
        let fb = z.compress(3, b"second").unwrap();
        let mut both = fa.clone();
        both.extend_from_slice(&fb);
        let mut expected = a.clone();
        expected.extend_from_slice(b"second");
        assert_eq!(z.decompress(&both, 0).unwrap(), expected);
        assert!(z.decompress(b"not zstd at all", 0).is_err());
    }

    #[test]
    fn output_beyond_the_guests_memory_is_refused() {
        let zeros = vec![0u8; 1 << 20];
        let mut z = NativeZstd::new(1 << 30);
        let frame = z.compress(1, &zeros).unwrap();
        let mut small = NativeZstd::new(4096);
        // The frame records its size: refused before allocating.
        assert!(small.decompress(&frame, 0).unwrap_err().contains("exceeds"));
        // Frames without a recorded size are cut off while streaming.
        let mut streamed = Vec::new();
        let mut enc = zstd::stream::write::Encoder::new(&mut streamed, 1).unwrap();
        std::io::Write::write_all(&mut enc, &zeros).unwrap();
        enc.finish().unwrap();
        assert!(matches!(
            zstd::zstd_safe::get_frame_content_size(&streamed),
            Ok(None)
        ));
        assert!(small
            .decompress(&streamed, 0)
            .unwrap_err()
            .contains("exceeds"));
        assert_eq!(z.decompress(&streamed, 0).unwrap(), zeros);
    }
}
