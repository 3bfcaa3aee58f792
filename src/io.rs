//! What an operation that writes data reaches outside the core through: [`Io`], the storage
//! shared, and beside it the host's services that are not storage.
//!
//! The rewriters must *own* their storage: arrow-rs asks for `'static` page stores (which spill
//! to storage) and chunk readers (which read pages from it). So the storage travels as an
//! `Arc<dyn Storage>`, the shape of iceberg-rust's `FileIO` and delta-rs's object store
//! handles. The host's codec travels with it as a separate field, so the [`Storage`] trait
//! stays about bytes only. (The clock, sleep and progress of a table job are passed where
//! they are used, in its options.)
//!
//! Entry points take `&dyn ToIo`, so a caller passes whatever it holds: a cloneable storage
//! such as [`crate::storage::MemoryStorage`] (`&storage`), an `Arc<dyn Storage>`, or an [`Io`]
//! with host services.

use std::sync::Arc;

use crate::host_codec::HostCodec;
use crate::storage::Storage;

/// A shared storage and the host services beside it.
#[derive(Clone)]
pub struct Io {
    /// Where every byte is read and written.
    pub storage: Arc<dyn Storage>,
    /// The host's native zstd, when it offers one (see [`crate::host_codec`]); `None`: the
    /// rewriters compress and decompress by themselves.
    pub host_codec: Option<Arc<dyn HostCodec>>,
}

impl Io {
    /// `storage` with no host services.
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        Io {
            storage,
            host_codec: None,
        }
    }

    /// The same, with the host's codec.
    pub fn with_host_codec(mut self, codec: Option<Arc<dyn HostCodec>>) -> Self {
        self.host_codec = codec;
        self
    }
}

impl std::fmt::Debug for Io {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Io")
            .field("host_codec", &self.host_codec.is_some())
            .finish_non_exhaustive()
    }
}

/// What an entry point accepts as its [`Io`].
///
/// Implemented for [`Io`], for `Arc<dyn Storage>`, and for every `Clone + 'static` storage.
/// The contract of the last: a clone is a second handle to the *same* files (as
/// [`crate::storage::MemoryStorage`]'s clones are), because the operation works on the clone.
pub trait ToIo {
    /// The operation's handle.
    fn to_io(&self) -> Io;
}

impl ToIo for Io {
    fn to_io(&self) -> Io {
        self.clone()
    }
}

impl ToIo for Arc<dyn Storage> {
    fn to_io(&self) -> Io {
        Io::new(self.clone())
    }
}

impl<S: Storage + Clone + 'static> ToIo for S {
    fn to_io(&self) -> Io {
        Io::new(Arc::new(self.clone()))
    }
}
