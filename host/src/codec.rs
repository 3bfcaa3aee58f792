//! The component's `codec` import: zstd run natively for the guest.
//!
//! Inside wasmtime the component's own zstd runs as wasm, well behind native speed; taking
//! the page codec over is the largest single saving a host can give a rewrite (figures in
//! `benches/README.md`). Frames are ordinary zstd, so files are the same whoever compresses.

/// zstd contexts reused across one call's pages (a context per page would allocate its
/// tables every time).
#[derive(Default)]
pub struct NativeZstd {
    compressor: Option<(i32, zstd::bulk::Compressor<'static>)>,
    decompressor: Option<zstd::bulk::Decompressor<'static>>,
}

impl NativeZstd {
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
        zstd::stream::decode_all(data).map_err(|e| format!("zstd: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_single_and_concatenated_frames() {
        let mut z = NativeZstd::default();
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
}
