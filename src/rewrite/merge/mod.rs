//! The primary-key compaction rewrite (compaction.md §9–§11, format.md §8–§10).
//!
//! [`rewrite_merge_tree`] executes one `Rewrite` action of a merge-tree task: the sections of
//! the interval partition (key-disjoint, in key order), each a set of sorted runs, are merged
//! with a streaming k-way merge on the key and the table's merge engine, and written as new
//! Parquet files at the output level, rolled at `target-file-size`. Everything about the
//! result is recomputed from the rows written (min/max key, sequence range, row and retract
//! counts): inputs' metadata is never copied, since some writers record 0 retracts for files
//! that hold them.
//!
//! * `merge_tree` — [`rewrite_merge_tree`] itself, phase by phase, over `reader` (inputs as
//!   arena slots, see `arena`), `run_cursor` (a cursor per sorted run), `heap` (the heap
//!   and sorted chunks that order the runs' rows), `pending` (results assembled into batches)
//!   and `output` (the rolling data and changelog files);
//! * [`merge_engine`] — deduplicate, first-row, partial-update, aggregation;
//! * [`changelog`] — `full-compaction` and `lookup` changelog production;
//! * [`kv_format`] — the `_KEY_*`, `_SEQUENCE_NUMBER`, `_VALUE_KIND` file layout;
//! * [`dictionary_reads`] — dictionary-encoded STRING columns merged as dictionary arrays;
//! * [`sorted_chunk`] — the rows of all runs ordered a chunk at a time, not a heap step a row;
//!
//! * `redistribute` — unsorted files replayed into sorted runs of several buckets (the
//!   postpone-bucket compaction's first half);
//! * `run_spill` — groups of level-0 runs merged into temporary runs first when a section
//!   has more runs than one merge reads side by side;
//!
//! Memory is bounded by the number of runs, not the input size: each run holds a decoded batch
//! and the compressed pages of one read window (64 Ki rows when the file has an offset index,
//! as parquet-mr and arrow-rs write it; otherwise one row group), the results waiting to be
//! written are at most a batch, and the output holds one row group (`parquet.block.size`).
//! Looking keys up in higher levels holds one row group per level. The number of runs is
//! bounded in turn by `paimon-compact.merge.max-runs` (`run_spill`).
//! Like the rest of the core, nothing here touches a file system, a clock or a thread; on any
//! error every file written so far is aborted or deleted through storage.

mod arena;
pub mod changelog;
mod dictionary_reads;
mod heap;
pub mod kv_format;
mod lookup;
pub(crate) mod merge_engine;
mod merge_tree;
mod output;
mod pending;
mod reader;
mod record_expiry;
pub(crate) mod redistribute;
mod run_cursor;
mod run_spill;
mod sorted_chunk;

use std::collections::BTreeMap;

use crate::meta::{CompactionFile, Level};
use crate::rewrite::RewriteInput;
use crate::value::Datum;

pub use crate::deletion_vectors::{DeletionVectorIndexFile, DeletionVectorMaintainer};
pub use crate::options::engine::{
    READ_DICTIONARIES_OPTION, READ_WINDOW_OPTION, SORTED_CHUNKS_OPTION,
};
pub use changelog::ChangelogMode;
pub use kv_format::RowKind;
pub use merge_tree::rewrite_merge_tree;

/// Length of the `_KEY_` prefix of key column names.
const KEY_PREFIX_LEN: usize = kv_format::KEY_PREFIX.len();

/// What to merge and where.
#[derive(Clone, Debug)]
pub struct MergeTreeRewrite {
    /// Sections in key order, each a list of sorted runs, each run a list of files in key order.
    pub sections: Vec<Vec<Vec<RewriteInput>>>,
    /// The data-file schema (`_KEY_*`, `_SEQUENCE_NUMBER`, `_VALUE_KIND`, values) to merge
    /// and write in; `None` takes the first input's, which every input must then have.
    pub schema: Option<arrow_schema::SchemaRef>,
    /// The bucket's files at levels above the output level (lookup changelog and deletion
    /// vector marks look older versions up there); may be empty otherwise.
    pub higher_levels: Vec<RewriteInput>,
    /// Directory of the bucket (no trailing `/`).
    pub output_dir: String,
    /// New data files are `<file_prefix><n>.parquet` (the caller makes the prefix unique).
    pub file_prefix: String,
    /// New changelog files are `<changelog_prefix><n>.parquet`.
    pub changelog_prefix: String,
    /// Level of the new data files (the unit's output level, compaction.md §4.5); with the
    /// inputs' levels it decides the changelog mode (compaction.md §10.3, §10.4).
    pub output_level: Level,
    /// The table's highest level (`num-levels - 1`): full-compaction changelog is produced
    /// only by merges into it, against each key's record read from it (compaction.md §10.3).
    pub max_level: Level,
    /// Retract records (`-U`, `-D`) are dropped from the output.
    pub drop_delete: bool,
    /// `false` for an upgrade that only produces changelog and deletion-vector marks (the
    /// changelog rewriters' `CHANGELOG_NO_REWRITE`): no data file is written.
    pub write_data: bool,
    /// Paimon's type of each column of the written files, by position, when the caller knows
    /// them (empty otherwise): formats whose types say more than Arrow's declare them (ORC's
    /// `CHAR(n)` and `VARCHAR(n)`).
    pub column_types: Vec<crate::types::DataType>,
    /// The job's clock, in epoch milliseconds (the core reads none): stamped into each
    /// output's metadata, and the "now" of record-level expiry.
    pub creation_time_ms: i64,
}

impl MergeTreeRewrite {
    /// The request with no sections: the settings a derived request starts from.
    pub(crate) fn clone_without_sections(&self) -> Self {
        MergeTreeRewrite {
            sections: Vec::new(),
            schema: self.schema.clone(),
            higher_levels: self.higher_levels.clone(),
            output_dir: self.output_dir.clone(),
            file_prefix: self.file_prefix.clone(),
            changelog_prefix: self.changelog_prefix.clone(),
            output_level: self.output_level,
            max_level: self.max_level,
            drop_delete: self.drop_delete,
            write_data: self.write_data,
            column_types: self.column_types.clone(),
            creation_time_ms: self.creation_time_ms,
        }
    }
}

/// Per-column statistics of a key column of an output file.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KeyColumnStats {
    /// Smallest non-null value (`Null` when the column is all null).
    pub min: Datum,
    /// Largest non-null value, in the key's sort order (`Null` when the column is all null).
    pub max: Datum,
    /// Null values of the column in the file.
    pub null_count: u64,
}

/// One file written by the merge.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MergeOutputFile {
    /// Path relative to the storage root.
    pub path: String,
    /// Exact metadata: the output level, `FileSource::Compact`, min/max key (the planner's
    /// order-preserving bytes), sequence range, row count and retract count of the rows written.
    pub meta: CompactionFile,
    /// The first key of the file as typed values, one per primary-key column (for the
    /// manifest's `_MIN_KEY` BinaryRow, format.md §6).
    pub min_key: Vec<Datum>,
    /// The last key of the file, likewise (`_MAX_KEY`).
    pub max_key: Vec<Datum>,
    /// Per key column min/max/null count (the manifest's key statistics).
    pub key_stats: Vec<KeyColumnStats>,
    /// Per top-level column of the file, the Parquet statistics of its chunks (the table layer
    /// turns the value columns' into the manifest's value statistics).
    #[serde(default)]
    pub column_stats: Vec<crate::rewrite::stats::ColumnStats>,
    /// Its file index (`file-index.*`), embedded or in a file beside it.
    #[serde(default)]
    pub file_index: Option<crate::rewrite::file_index::FileIndex>,
}

/// Counters of one merge.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MergeMetrics {
    /// Input files of the sections opened by the merge (higher-level files opened by lookups
    /// are not counted).
    pub input_files: u64,
    /// Sum of those files' sizes in bytes, as storage reports them.
    pub input_bytes: u64,
    /// Rows decoded from the inputs (after their deletion vectors and record-level expiry).
    pub input_rows: u64,
    /// Input rows skipped because their deletion vector marked them.
    pub deleted_rows: u64,
    /// Input rows dropped because their time field had expired (`record-level.expire-time`);
    /// not counted in `input_rows`.
    #[serde(default)]
    pub expired_rows: u64,
    /// Distinct keys merged.
    pub keys: u64,
    /// New data files written (none with `write_data = false`).
    pub output_files: u64,
    /// Sum of the new data files' sizes in bytes.
    pub output_bytes: u64,
    /// Rows in the new data files, retracts included.
    pub output_rows: u64,
    /// Retract results dropped (`drop_delete`).
    pub retracts_dropped: u64,
    /// New changelog files written.
    pub changelog_files: u64,
    /// Rows in the new changelog files.
    pub changelog_rows: u64,
    /// Keys looked up in higher levels (compaction.md §10.4).
    pub lookups: u64,
    /// Lookups that found the key in a higher level.
    pub lookup_hits: u64,
    /// Positions added to deletion vectors of higher-level files.
    pub deletion_vector_marks: u64,
    /// Storage read calls, for the inputs and for higher-level files opened by lookups.
    pub storage_reads: u64,
    /// Bytes those reads returned.
    pub storage_read_bytes: u64,
    /// Write calls on the data and changelog files' storage writers.
    pub storage_writes: u64,
    /// Encoded page bytes that went through spill objects.
    #[serde(default)]
    pub spilled_bytes: u64,
    /// STRING columns merged as dictionary arrays (`paimon-compact.merge.read-dictionaries`).
    #[serde(default)]
    pub dictionary_columns: u64,
    /// Input rows put in order by sorted chunks (`paimon-compact.merge.sorted-chunks`); the
    /// rest went through the heap one at a time.
    #[serde(default)]
    pub sorted_chunk_rows: u64,
    /// Pages the host's zstd compressed and decompressed ([`crate::host_codec`]).
    #[serde(default)]
    pub host_codec: crate::host_codec::HostCodecMetrics,
    /// Column chunks of a primary-key column's value copy (`k` of `_KEY_k`) written as its
    /// key column's pages instead of being encoded and compressed again.
    #[serde(default)]
    pub mirrored_key_chunks: u64,
    /// Level-0 runs first merged into temporary runs, because a section had more runs than
    /// one merge reads side by side (`paimon-compact.merge.max-runs`).
    #[serde(default)]
    pub spilled_runs: u64,
    /// Temporary run files written (and deleted) for that.
    #[serde(default)]
    pub spill_files: u64,
}

/// What a merge produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MergeTreeRewriteResult {
    /// New data files in key order.
    pub outputs: Vec<MergeOutputFile>,
    /// New changelog files.
    pub changelog: Vec<MergeOutputFile>,
    /// Row positions to add to the deletion vectors of higher-level files, by file name.
    pub deletion_vector_marks: BTreeMap<String, Vec<u64>>,
    /// How changelog was produced (or why not).
    pub changelog_mode: ChangelogMode,
    /// Counters of the merge, for logs and the job report.
    pub metrics: MergeMetrics,
}
