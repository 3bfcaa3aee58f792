//! Block compression that the host runs on the component's behalf.
//!
//! Inside a wasm runtime zstd runs as wasm code, and on a rewrite that is the largest part of
//! what separates the component from native code (see `benches/README.md`). A host that links
//! zstd natively can offer it through the WIT `codec` import, and the rewriter then hands it
//! the page bodies it would otherwise compress and decompress itself. The bytes are the same
//! zstd frames whoever makes them, so a file does not depend on the host that compressed it.
//!
//! A host that offers nothing (the browser, Node without zstd) loses nothing: the component
//! falls back to its own codec. Native builds have no reason to offer one (their zstd is
//! native already); tests offer one to exercise the path and its failures.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Codecs a host may run. Only zstd (Paimon's default, and the one whose cost matters) today.
pub trait HostCodec: Send + Sync {
    /// One zstd frame of `input` at `level`.
    fn zstd_compress(&self, level: i32, input: &[u8]) -> Result<Vec<u8>, String>;
    /// The content of the zstd frame(s) in `input`. `size_hint`: the decompressed size when the
    /// caller knows it (a capacity, not a promise: the frame's own header is authoritative).
    fn zstd_decompress(&self, input: &[u8], size_hint: Option<usize>) -> Result<Vec<u8>, String>;
}

/// What a rewrite handed to the host's codec, for its metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HostCodecMetrics {
    /// The storage offered a host codec (in the component: the host answered `offers(zstd)`).
    pub offered: bool,
    /// Pages (bodies) the host compressed.
    pub pages_compressed: u64,
    /// Pages (bodies) the host decompressed.
    pub pages_decompressed: u64,
}

/// A host codec shared by one rewrite's readers and writers, counting what it is given.
pub struct CodecOffload {
    host: Arc<dyn HostCodec>,
    compressed: AtomicU64,
    decompressed: AtomicU64,
}

impl std::fmt::Debug for CodecOffload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CodecOffload")
            .field(&self.metrics())
            .finish()
    }
}

impl CodecOffload {
    /// Wraps `host` with zeroed counters, shared (`Arc`) so every reader and writer of one
    /// rewrite adds to the same metrics.
    pub fn new(host: Arc<dyn HostCodec>) -> Arc<Self> {
        Arc::new(CodecOffload {
            host,
            compressed: AtomicU64::new(0),
            decompressed: AtomicU64::new(0),
        })
    }

    /// [`HostCodec::zstd_compress`], counted as one compressed page (a failed call counts
    /// too: it was handed over).
    pub fn zstd_compress(&self, level: i32, input: &[u8]) -> Result<Vec<u8>, String> {
        self.compressed.fetch_add(1, Ordering::Relaxed);
        self.host.zstd_compress(level, input)
    }

    /// [`HostCodec::zstd_decompress`], counted as one decompressed page (a failed call counts
    /// too).
    pub fn zstd_decompress(
        &self,
        input: &[u8],
        size_hint: Option<usize>,
    ) -> Result<Vec<u8>, String> {
        self.decompressed.fetch_add(1, Ordering::Relaxed);
        self.host.zstd_decompress(input, size_hint)
    }

    /// The counts so far.
    pub fn metrics(&self) -> HostCodecMetrics {
        HostCodecMetrics {
            offered: true,
            pages_compressed: self.compressed.load(Ordering::Relaxed),
            pages_decompressed: self.decompressed.load(Ordering::Relaxed),
        }
    }
}

/// The metrics of an optional offload.
pub fn metrics_of(offload: Option<&Arc<CodecOffload>>) -> HostCodecMetrics {
    offload.map(|o| o.metrics()).unwrap_or_default()
}
