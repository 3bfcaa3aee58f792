//! What a strategy picks: a prefix of the sorted runs and the level its output goes to.

use std::sync::Arc;

use super::Reason;
use crate::meta::{CompactionFile, Level, LevelSortedRun};

/// A strategy's choice over `levelSortedRuns`: the first `run_count` runs, written to
/// `output_level`. Universal and force-up-level-0 only ever pick a newest-first prefix, which is
/// what keeps every older version of a key below the output.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Pick {
    pub output_level: Level,
    pub run_count: usize,
    pub reason: Reason,
}

/// The files to compact together and where the result goes (compaction.md §1.4).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CompactUnit {
    pub output_level: Level,
    pub files: Vec<Arc<CompactionFile>>,
    /// Rewrite each file on its own (a forced full compaction of a single max-level run) rather
    /// than merging them.
    pub file_rewrite: bool,
}

impl CompactUnit {
    /// The files of the first `run_count` runs, in run order.
    pub fn from_runs(output_level: Level, runs: &[LevelSortedRun<'_>]) -> Self {
        CompactUnit {
            output_level,
            files: runs.iter().flat_map(|r| r.files.iter().cloned()).collect(),
            file_rewrite: false,
        }
    }
}
