//! The Parquet rewriters (feature `rewrite`).
//!
//! * [`append`] — append-only compaction: streaming concatenation of the picked files into new
//!   files rolled at `target-file-size` (compaction.md §13), with optional fast copy of whole row
//!   groups and dictionary passthrough for STRING columns.
//! * [`merge`] — primary-key compaction: the k-way merge of sorted runs.
//! * [`input`] — [`RewriteInput`], the input file both take.
//!
//! The Parquet machinery they share (file and column writers, rolling files, footers, page
//! reads and spills) is the Parquet layer below them (`crate::parquet_io`), which knows
//! nothing of Paimon; this module decides what to write, and with which settings.
//!
//! Everything reads and writes through [`crate::storage::Storage`] by ranges, holds about one
//! row group of input and one of output in memory, and uses no threads, clocks or file system,
//! so the same code runs natively, in a WASI component and in the browser.
//!
//! Options read besides Paimon's (`target-file-size`, `file.compression`,
//! `file.compression.zstd-level`, `parquet.block.size`, `parquet.page.size`,
//! `parquet.dictionary.page.size`, `parquet.enable.dictionary`,
//! `parquet.read.enable-dictionary-passthrough`, `file-index.<type>.columns`):
//! * [`FAST_COPY_OPTION`] (`paimon-compact.append.fast-copy`, default `false`): splice input
//!   row groups that already match the table's schema and codec instead of re-encoding them;
//! * [`PASSTHROUGH_WRITER_OPTION`] (`paimon-compact.append.passthrough-writer`, default
//!   `mapping`): `arrow` hands forwarded dictionaries to arrow-rs's writer instead, only to
//!   measure what the mapping writer saves;
//! * `paimon-compact.write.spill-threshold` (a memory size, default `48 mb`; `0` never spills):
//!   encoded pages of an output row group beyond it go to a temporary object next to the output
//!   (the Parquet layer's page spill), bounding memory whatever `parquet.block.size` is;
//! * [`PRIMITIVE_DICTIONARY_OPTION`] and [`STRING_DICTIONARY_OPTION`] (default
//!   `paimon-compact`): which writer dictionary-encodes primitive and STRING columns, this
//!   project's (the Parquet layer's dictionary writers) or `arrow`;
//! * [`READ_AHEAD_OPTION`] (`paimon-compact.merge.read-ahead`, default `256 kb`) and
//!   `paimon-compact.merge.read-window-rows`: how the primary-key merge reads its inputs
//!   (page by page, with read-ahead);
//! * [`merge::READ_DICTIONARIES_OPTION`] (`paimon-compact.merge.read-dictionaries`, default
//!   `true`): dictionary-encoded STRING value columns merged as dictionary arrays;
//! * [`merge::SORTED_CHUNKS_OPTION`] (`paimon-compact.merge.sorted-chunks`, default `true`):
//!   rows ordered a sorted chunk at a time instead of one heap step per row.
//!
//! All live in a `paimon-compact.` namespace so they never collide with Paimon's own keys, and
//! `CoreOptions` keeps them in `raw` (a `compaction.` key would be rejected as a typo).

pub mod append;
mod dictionary_passthrough;
mod engine_settings;
mod fast_copy;
pub mod input;
pub mod merge;
pub mod metrics;
pub mod schema_evolution;
pub mod stats;
mod writer_settings;

pub use append::{
    rewrite_append, AppendRewrite, AppendRewriteResult, RewrittenFile, PASSTHROUGH_WRITER_OPTION,
};
pub use engine_settings::{
    PRIMITIVE_DICTIONARY_OPTION, READ_AHEAD_OPTION, STRING_DICTIONARY_OPTION,
};
pub use fast_copy::FAST_COPY_OPTION;
pub use input::RewriteInput;
pub use metrics::{
    FastCopyMetrics, FastCopyRefusal, FastCopyRefusalReason, NotForwarded, NotForwardedReason,
    PassthroughFile, PassthroughMetrics, PassthroughVeto, RewriteMetrics,
};
pub use stats::{ColumnStats, StatValue};
