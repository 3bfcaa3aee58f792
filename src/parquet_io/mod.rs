//! The Parquet layer: reading and writing Parquet files through [`crate::storage::Storage`],
//! with what arrow-rs's `parquet` crate does not offer. It knows nothing of Paimon; the
//! compaction code in [`crate::rewrite`] configures it with typed settings
//! ([`writer::FileSpec`], [`dictionary::DictConfig`], a spill budget, a read-ahead) and never
//! hands it table options.
//!
//! Named `parquet_io` rather than `parquet` so that `parquet::…` in this crate always means the
//! arrow-rs crate.
//!
//! Reading:
//! * [`footer`] — the one footer reader, with a policy for what of the page index to load;
//! * [`read`] — coalesced range reads, row groups decoded by arrow-rs's push decoder, deletion
//!   vectors as row selections;
//! * [`page_stream`] — page-by-page reads with read-ahead, for readers that keep many files
//!   open;
//! * [`host_decompression`] — page readers that hand zstd pages to the host's codec;
//! * [`mapped_pages`] — the page-reader wrapper it and the level check act through;
//! * [`thrift_guard`] and [`page_guard`] — footers, page indexes and page headers checked for
//!   what arrow-rs would loop on or over-allocate for, before it reads them.
//!
//! Writing (a stream of files of about a target size is [`crate::rewrite::rolling`]):
//! * [`writer`] — one file, row group by row group (arrow-rs's `ArrowWriter` loop, with this
//!   layer's column writers, mirrored columns and spliced row groups), and [`sink`], where its
//!   bytes wait for storage;
//! * [`dictionary`] — dictionary-encoding column writers for STRING and primitive columns;
//! * [`column_chunk`] — page stores and the assembly of a column chunk from finished pages;
//! * [`page_spill`] — a page store that spills to storage beyond a memory budget;
//! * [`codec`] — the block codecs of the pages this layer encodes itself;
//! * [`statistics_truncation`] — truncated min/max bounds, as parquet-rs writes them.

pub(crate) mod codec;
pub(crate) mod column_chunk;
pub(crate) mod dictionary;
pub(crate) mod footer;
pub(crate) mod host_decompression;
mod level_guard;
mod mapped_pages;
pub(crate) mod page_guard;
pub(crate) mod page_spill;
pub(crate) mod page_stream;
pub(crate) mod read;
pub(crate) mod sink;
pub(crate) mod statistics_truncation;
pub(crate) mod thrift_guard;
pub(crate) mod writer;
