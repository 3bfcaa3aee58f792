//! Panics of third-party decoders on corrupt input, reported as corrupt input.
//!
//! arrow-rs's Parquet reader and apache-avro check most of what they read, not all of it: some
//! damaged pages, page headers and embedded Avro schemas make them panic (a slice out of
//! bounds, an `unwrap` on a name that is not an Avro name) instead of returning an error. The
//! fuzz targets (`fuzz/README.md`) find such inputs within seconds; `fuzz/corpus/` keeps them.
//! A panic there says something about the input file, not about our code, so every call that
//! hands outside bytes to one of those decoders runs inside [`contain`]:
//! * natively (panic = unwind) the panic is caught and becomes `CorruptInput` naming the file,
//!   with the decoder's message: the job fails like for any other corrupt file;
//! * in the component (panic = abort) nothing can catch it. [`decoding`] tells the component's
//!   panic hook which file was being decoded and gives it the same message, so the host
//!   reports `corrupt-input` of that file too (WIT `progress.panicked`, README "Failure
//!   model").
//!
//! What our own code can check before a decoder sees the bytes it checks (footer layout,
//! deletion vectors, row counts); this is the net under what it cannot.

use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::{Error, Result};

/// A file being decoded: its path and the decoder reading it.
struct Decoding {
    file: String,
    decoder: &'static str,
}

thread_local! {
    /// The file a decoder is reading on this thread, inside [`contain`].
    static DECODING: RefCell<Option<Decoding>> = const { RefCell::new(None) };
}

/// Runs `f`, which hands `file`'s bytes to the `decoder` (e.g. "Parquet", "Avro"); a panic in
/// it is returned as `CorruptInput` of `file` (natively) or reported with the file's name (in
/// the component, see the module documentation). `f`'s state must not be used after it
/// panicked: callers return the error and drop the decoder.
pub fn contain<T>(file: &str, decoder: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let previous = DECODING.with(|d| {
        d.replace(Some(Decoding {
            file: file.to_string(),
            decoder,
        }))
    });
    let outcome = catch_unwind(AssertUnwindSafe(f));
    DECODING.with(|d| *d.borrow_mut() = previous);
    outcome.unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        Err(Error::corrupt(Some(file), failed(decoder, &message)))
    })
}

/// The message of a decoder's panic on a file, the same in both engines.
fn failed(decoder: &str, panic: &str) -> String {
    format!("the {decoder} decoder failed on it: {panic}")
}

/// Whether a decoder is reading a file on this thread, inside [`contain`] (whose
/// `catch_unwind` will take a panic there).
pub fn is_decoding() -> bool {
    DECODING.with(|d| d.borrow().is_some())
}

/// For a panic hook that cannot let [`contain`] catch the panic: the file a decoder is reading
/// on this thread, if any, and the corrupt-input message for `panic` (the panic's text).
pub fn decoding(panic: &str) -> Option<(String, String)> {
    DECODING.with(|d| {
        d.borrow()
            .as_ref()
            .map(|d| (d.file.clone(), failed(d.decoder, panic)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn a_decoder_panic_is_corrupt_input_of_the_file_and_the_context_is_restored() {
        let e = contain("t/data.parquet", "Parquet", || -> Result<()> {
            assert_eq!(
                decoding("boom"),
                Some((
                    "t/data.parquet".into(),
                    "the Parquet decoder failed on it: boom".into()
                ))
            );
            panic!("offset + len out of bounds")
        })
        .unwrap_err();
        assert_eq!(
            e.kind,
            ErrorKind::CorruptInput {
                file: Some("t/data.parquet".into())
            }
        );
        assert!(e
            .message
            .contains("Parquet decoder failed on it: offset + len out of bounds"));
        assert_eq!(decoding("boom"), None);
        assert_eq!(contain("f", "Avro", || Ok(3)).unwrap(), 3);
    }
}
