//! A storage borrow with its lifetime erased, for the two places where arrow-rs asks for
//! `'static` (and `Send`) objects that must reach storage: the page store of the writer
//! ([`super::page_spill`]) and the chunk reader of the page-by-page reader
//! ([`super::page_stream`]). Each keeps the erased borrow inside a value typed with the
//! original lifetime (`PageSpill<'s>`, `PageStream<'s>`), so the borrow checker still ties it
//! to the storage; the erasure itself is the one `unsafe` step, here.

use crate::storage::Storage;

/// See the module documentation.
#[derive(Clone, Copy)]
pub(crate) struct StorageRef(*const (dyn Storage + 'static));

impl StorageRef {
    /// Erases the lifetime of `storage`.
    ///
    /// # Safety
    /// The caller keeps every copy inside values that are dropped before `'s` ends.
    pub(crate) unsafe fn erase<'s>(storage: &'s dyn Storage) -> Self {
        let erased: *const (dyn Storage + 's) = storage;
        // SAFETY: only the lifetime changes (same pointer, same vtable).
        StorageRef(unsafe {
            std::mem::transmute::<*const (dyn Storage + 's), *const (dyn Storage + 'static)>(erased)
        })
    }

    pub(crate) fn get(self) -> &'static dyn Storage {
        // SAFETY: `erase`'s contract: the storage outlives every copy.
        unsafe { &*self.0 }
    }
}
