//! The Parquet rewriters (feature `rewrite`).
//!
//! * [`append`] — append-only compaction: streaming concatenation of the picked files into new
//!   files rolled at `target-file-size` (spec §13), with optional fast copy of whole row groups
//!   and dictionary passthrough for STRING columns.
//!
//! Everything reads and writes through [`crate::storage::Storage`] by ranges, holds about one
//! row group of input and one of output in memory, and uses no threads, clocks or file system,
//! so the same code runs natively, in a WASI component and in the browser.

pub mod append;
mod codec;
mod dictionary_passthrough;
mod dictionary_writer;
mod fast_copy;
pub mod metrics;
mod parquet_io;
pub mod stats;
mod writer;

pub use append::{
    rewrite_append, AppendInput, AppendRewrite, AppendRewriteResult, RewrittenFile,
    PASSTHROUGH_WRITER_OPTION,
};
pub use fast_copy::FAST_COPY_OPTION;
pub use metrics::{
    FastCopyMetrics, FastCopyRefusal, FastCopyRefusalReason, NotForwarded, NotForwardedReason,
    PassthroughFile, PassthroughMetrics, PassthroughVeto, RewriteMetrics,
};
pub use stats::{ColumnStats, StatValue};
