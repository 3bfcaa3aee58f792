//! The plug for the primary-key merge rewriter (issue 5).
//!
//! The table layer plans merge-tree tasks and executes their metadata-only upgrades itself; a
//! task that must merge files (a `Rewrite` action) is handed to a [`MergeTreeRewriter`] with
//! everything it needs to read its inputs and name its outputs, and so is an upgrade that must
//! produce changelog or deletion-vector marks. Without one, such buckets are reported as
//! blocked and left untouched.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::manifest::DataFile;
use super::scan::Table;
use crate::error::Result;
use crate::meta::{DataFileMeta, Level};

/// One input file of a merge.
#[derive(Clone, Debug)]
pub struct MergeRewriteInput {
    /// Path relative to the storage root.
    pub path: String,
    /// The planner's view (order-preserving keys, verified delete count).
    pub meta: Arc<DataFileMeta>,
    /// The manifest record.
    pub file: DataFile,
    /// Row positions removed by the file's deletion vector, ascending.
    pub deleted_rows: Option<Vec<u64>>,
}

/// One `Rewrite` action of a merge-tree task.
#[derive(Clone, Debug)]
pub struct MergeRewriteRequest<'a> {
    pub table: &'a Table,
    /// The bucket directory new files go to.
    pub output_dir: String,
    /// Data files are named `<file_prefix><n>.<format>`; unique per request.
    pub file_prefix: String,
    /// Changelog files are named `<changelog_prefix><n>.<format>`.
    pub changelog_prefix: String,
    pub output_level: Level,
    pub max_level: Level,
    pub drop_delete: bool,
    /// `false` for an upgrade that only produces changelog and deletion-vector marks (the
    /// changelog rewriters' `CHANGELOG_NO_REWRITE`): the file moves up and no data is written.
    pub write_data: bool,
    /// Sections in key order; each a list of sorted runs; each run a list of files.
    pub sections: Vec<Vec<Vec<MergeRewriteInput>>>,
    /// Files of the bucket at levels above the output (for lookup changelog and DV marks).
    pub higher_levels: Vec<MergeRewriteInput>,
    pub creation_time_ms: i64,
}

/// What a merge produced.
#[derive(Clone, Debug, Default)]
pub struct MergeRewriteResult {
    /// New data files with complete manifest metadata (level = output level, file source 1,
    /// exact min/max key, sequence range, row and delete counts).
    pub outputs: Vec<DataFile>,
    /// New changelog files.
    pub changelog: Vec<DataFile>,
    /// Every path written (deleted again if the job fails later).
    pub written: Vec<String>,
    /// Row positions to add to the deletion vectors of files outside the task (lookup in
    /// deletion-vector mode), by data file name.
    pub deletion_vector_marks: BTreeMap<String, Vec<u64>>,
    pub rows_read: u64,
    pub rows_written: u64,
    /// Pages the host's zstd compressed and decompressed.
    pub host_codec: crate::host_codec::HostCodecMetrics,
}

/// Merges the sections of a merge-tree task into new files (issue 5 implements this).
pub trait MergeTreeRewriter {
    fn rewrite(
        &self,
        io: &crate::io::Io,
        request: &MergeRewriteRequest<'_>,
    ) -> Result<MergeRewriteResult>;
}
