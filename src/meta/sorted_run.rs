//! A sorted run: files whose key ranges are strictly increasing and disjoint.

use std::sync::Arc;

use super::CompactionFile;
use crate::error::{Error, Result};

/// Files ordered by key with no two ranges touching (compaction.md §1.2). The invariant is checked
/// when a run is built, so every `SortedRun` in the program holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SortedRun {
    files: Vec<Arc<CompactionFile>>,
    total_size: u64,
}

impl SortedRun {
    /// A run without files (an empty level).
    pub fn empty() -> Self {
        SortedRun::default()
    }

    /// Sorts by `min_key` and validates. Overlapping files are corrupt input: Paimon treats a
    /// level whose files overlap as a broken table.
    pub fn from_unsorted(mut files: Vec<Arc<CompactionFile>>) -> Result<Self> {
        files.sort_by(|a, b| a.min_key.cmp(&b.min_key));
        Self::from_sorted(files)
    }

    /// Validates files already in key order.
    pub fn from_sorted(files: Vec<Arc<CompactionFile>>) -> Result<Self> {
        for w in files.windows(2) {
            if w[1].min_key <= w[0].max_key {
                return Err(Error::corrupt(
                    Some(&w[1].file_name),
                    format!(
                        "files '{}' and '{}' claim to be one sorted run but their key ranges overlap",
                        w[0].file_name, w[1].file_name
                    ),
                ));
            }
        }
        for f in &files {
            if f.min_key > f.max_key {
                return Err(Error::corrupt(
                    Some(&f.file_name),
                    "min key is greater than max key",
                ));
            }
        }
        let total_size = files.iter().map(|f| f.file_size).sum();
        Ok(SortedRun { files, total_size })
    }

    /// For runs built by an algorithm that guarantees the invariant (interval partition,
    /// rolling writers); checked in debug builds.
    pub(crate) fn from_sorted_trusted(files: Vec<Arc<CompactionFile>>) -> Self {
        debug_assert!(files.windows(2).all(|w| w[1].min_key > w[0].max_key));
        let total_size = files.iter().map(|f| f.file_size).sum();
        SortedRun { files, total_size }
    }

    /// A run of one file (always valid).
    pub fn single(file: Arc<CompactionFile>) -> Self {
        SortedRun {
            total_size: file.file_size,
            files: vec![file],
        }
    }

    /// The files in ascending key order, with disjoint key ranges.
    pub fn files(&self) -> &[Arc<CompactionFile>] {
        &self.files
    }
    /// Sum of the files' sizes in bytes, computed when the run was built.
    pub fn total_size(&self) -> u64 {
        self.total_size
    }
    /// Whether the run has no files.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}
