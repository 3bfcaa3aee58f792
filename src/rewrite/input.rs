//! [`RewriteInput`]: one data file a rewrite reads, the same for the append rewrite and the
//! primary-key merge.
//!
//! (The name is not `InputFile` because the Parquet reading code already calls an opened
//! Parquet file that, inside the crate.)

use std::sync::Arc;

use super::schema_evolution::ColumnSource;
use crate::meta::{CompactionFile, Key, Level};

/// One input data file of a rewrite.
#[derive(Clone, Debug)]
pub struct RewriteInput {
    /// Where the file is, relative to the storage root.
    pub path: String,
    /// Its metadata. The append rewrite takes the sequence numbers and the row count from it;
    /// the merge takes the level (which decides changelog and lookup roles) and the key range
    /// (which locates keys in higher levels), and re-derives row counts and keys from the data.
    pub meta: Arc<CompactionFile>,
    /// Row positions its deletion vector marks as deleted, ascending; `None` for no vector.
    pub deleted_rows: Option<Vec<u64>>,
    /// Schema evolution: a file written under an older schema version is read as the output
    /// schema through this map, one entry per output column: the file's column it comes from
    /// (by the file's own name, matched by Paimon field id by the caller, nested fields too;
    /// cast to the output type when that was widened), or `None` for a column added since,
    /// filled with nulls. `None` when the file has the output's columns (see
    /// [`crate::rewrite::schema_evolution`]).
    pub columns: Option<Vec<Option<ColumnSource>>>,
}

impl RewriteInput {
    /// An input known only by what a caller outside the table layer has: its path, row count
    /// (0 = unknown, not checked) and sequence range.
    pub fn from_parts(
        path: String,
        row_count: u64,
        min_sequence_number: i64,
        max_sequence_number: i64,
        deleted_rows: Option<Vec<u64>>,
    ) -> Self {
        let name = path.rsplit('/').next().unwrap_or(&path).to_string();
        let mut meta = CompactionFile::new(
            name,
            Level::ZERO,
            0,
            Key::default(),
            Key::default(),
            min_sequence_number,
            max_sequence_number,
        );
        meta.row_count = row_count;
        RewriteInput {
            path,
            meta: Arc::new(meta),
            deleted_rows,
            columns: None,
        }
    }
}
