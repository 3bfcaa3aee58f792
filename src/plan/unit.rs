//! What a strategy picks: a prefix of the sorted runs and the level its output goes to.

use std::sync::Arc;

use super::Reason;
use crate::meta::{CompactionFile, Level, LevelSortedRun};

/// A strategy's choice over `levelSortedRuns`: the first `run_count` runs, written to
/// `output_level`. Universal and force-up-level-0 only ever pick a newest-first prefix, which is
/// what keeps every older version of a key below the output.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Pick {
    /// Level the merged output goes to: the max level when every run is picked, never level 0
    /// (compaction.md §4.5).
    pub output_level: Level,
    /// How many of the newest runs are picked, at least 1 for the universal rules. Zero only
    /// from the Java flavor's early full compaction of an empty bucket (compaction.md §4.2).
    pub run_count: usize,
    /// The rule that fired, with its numbers.
    pub reason: Reason,
}

/// The files to compact together and where the result goes (compaction.md §1.4).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CompactUnit {
    /// Level every output file (or upgraded file) is recorded at.
    pub output_level: Level,
    /// The input files, in run order (newest run first, each run in key order).
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
