//! The Parquet rewriters (feature `rewrite`).
//!
//! * [`append`] — append-only compaction: streaming concatenation of the picked files into new
//!   files rolled at `target-file-size` (compaction.md §13), with optional fast copy of whole row
//!   groups and dictionary passthrough for STRING columns.
//! * [`merge`] — primary-key compaction: the k-way merge of sorted runs.
//! * [`input`] — [`RewriteInput`], the input file both take.
//! * `avro_data` — Avro data files read as Arrow batches (the postpone replay's inputs).
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
//! `parquet.read.enable-dictionary-passthrough`, `file-index.<type>.columns`): the engine's own
//! `paimon-compact.*` keys, declared and documented in [`crate::options::engine`] (fast copy,
//! the spill threshold, the merge's read-ahead, read windows, dictionary reads and sorted
//! chunks, and the arrow-rs writer choices kept for comparisons). Their keys are re-exported
//! here and in [`merge`].

pub mod append;
pub(crate) mod avro_data;
pub(crate) mod avro_output;
mod dictionary_passthrough;
mod fast_copy;
pub mod file_index;
pub(crate) mod foreign_data;
pub mod input;
pub mod merge;
pub mod metrics;
pub(crate) mod rolling;
pub mod schema_evolution;
pub mod stats;
pub(crate) mod writer_settings;

pub use crate::options::engine::{
    APPEND_READ_WINDOW_OPTION, FAST_COPY_OPTION, PASSTHROUGH_WRITER_OPTION,
    PRIMITIVE_DICTIONARY_OPTION, READ_AHEAD_OPTION, STRING_DICTIONARY_OPTION,
};
pub use append::{rewrite_append, AppendRewrite, AppendRewriteResult, RewrittenFile};
pub use input::RewriteInput;
pub use metrics::{
    FastCopyMetrics, FastCopyRefusal, FastCopyRefusalReason, NotForwarded, NotForwardedReason,
    PassthroughFile, PassthroughMetrics, PassthroughVeto, RewriteMetrics,
};
pub use stats::{ColumnStats, StatValue};

/// Every row of the ORC or Avro data file `path` (which its metadata says holds `rows` rows),
/// as batches of `schema` (columns matched by name): how the rewriters read these formats,
/// for callers that check what a compaction wrote. Parquet files are read with arrow-rs.
pub fn read_orc_or_avro_file(
    storage: &dyn crate::storage::Storage,
    path: &str,
    schema: &arrow_schema::SchemaRef,
    rows: u64,
) -> crate::error::Result<Vec<arrow_array::RecordBatch>> {
    let mut out = Vec::new();
    foreign_data::read_batches(storage, path, schema, rows, |b| {
        out.push(b);
        Ok(())
    })?;
    Ok(out)
}
