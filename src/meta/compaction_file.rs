//! Data file metadata: what a manifest entry tells compaction about one file.

use super::{Key, Level, SequenceNumber};

/// Whether a file was written by a writer's flush or by compaction.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileSource {
    /// Written by a writer's flush (`_FILE_SOURCE` 0); the default when a request omits it.
    #[default]
    Append,
    /// Written by compaction (`_FILE_SOURCE` 1), as every output of this crate is.
    Compact,
}

/// One data file as compaction sees it (compaction.md §1.1).
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub struct CompactionFile {
    /// File name within the bucket directory, as in the manifest's `_FILE_NAME`; plans and
    /// task actions name files by it.
    pub file_name: String,
    /// Size in bytes (`_FILE_SIZE`): what size ratios, size amplification and the small-file
    /// thresholds are computed from.
    pub file_size: u64,
    /// Physical rows, retract rows included (`_ROW_COUNT`).
    pub row_count: u64,
    /// Smallest primary key of the file, order-preserving (format.md §7); empty for append
    /// tables.
    pub min_key: Key,
    /// Largest primary key of the file (inclusive), in the same encoding as `min_key`.
    pub max_key: Key,
    /// Smallest sequence number of the file's records.
    pub min_sequence_number: SequenceNumber,
    /// Largest sequence number of the file's records; level 0 is ordered newest first by it
    /// (compaction.md §1.3).
    pub max_sequence_number: SequenceNumber,
    /// LSM level the manifest records the file at (0 for flushed files and append tables).
    pub level: Level,
    /// `None` when the writer did not record it: such a file may contain deletes.
    #[serde(default)]
    pub delete_row_count: Option<u64>,
    /// Epoch milliseconds; only breaks ties in the level-0 order.
    #[serde(default)]
    pub creation_time_ms: i64,
    /// Who wrote the file (`_FILE_SOURCE`); the planner does not read it.
    #[serde(default)]
    pub file_source: FileSource,
    /// The bucket's deletion-vector index has a vector for this file.
    #[serde(default)]
    pub has_deletion_vector: bool,
}

impl CompactionFile {
    /// A file with only the fields the planner's tests care about; the rest take neutral values.
    pub fn new(
        name: impl Into<String>,
        level: Level,
        size: u64,
        min_key: Key,
        max_key: Key,
        min_seq: i64,
        max_seq: i64,
    ) -> Self {
        CompactionFile {
            file_name: name.into(),
            file_size: size,
            row_count: 0,
            min_key,
            max_key,
            min_sequence_number: SequenceNumber(min_seq),
            max_sequence_number: SequenceNumber(max_seq),
            level,
            delete_row_count: Some(0),
            creation_time_ms: 0,
            file_source: FileSource::Append,
            has_deletion_vector: false,
        }
    }

    /// The same file, recorded at another level (an "upgrade": no I/O).
    pub fn upgrade(&self, level: Level) -> Self {
        CompactionFile {
            level,
            ..self.clone()
        }
    }

    /// Unknown delete counts count as "may contain deletes" (compaction.md §17 A6).
    pub fn may_contain_deletes(&self) -> bool {
        self.delete_row_count.is_none_or(|n| n > 0)
    }
}
