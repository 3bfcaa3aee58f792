//! The ORC layer: reading and writing ORC files as Arrow batches, for tables whose
//! `file.format` (or a level's `file.format.per.level`) is `orc`, the format Paimon wrote by
//! default before 0.8. It knows nothing of Paimon: callers hand it Arrow schemas and get
//! batches and column statistics back.
//!
//! * [`proto`] — the protobuf messages of the file's tail and stripe footers;
//! * [`compression`] — the chunked codec framing of streams;
//! * [`rle`] — byte, boolean and integer run-length encodings (RLE v1 and v2);
//! * [`read`] — a file as batches of a wanted schema, stripe by stripe;
//! * [`write`] — batches as a file, with stripe and file statistics.
//!
//! The format is ORC v1 as Apache ORC's specification describes it; what a Paimon table
//! needs of it, and what is refused, is in `docs/format.md` §8.1.

pub(crate) mod compression;
mod lzo;
pub(crate) mod proto;
pub(crate) mod read;
pub(crate) mod rle;
pub(crate) mod write;

#[cfg(test)]
mod tests;
