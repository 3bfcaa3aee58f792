//! What compaction knows about data files: metadata, keys, levels and sorted runs.

mod compaction_file;
mod key;
mod level;
mod levels;
mod sorted_run;

pub use compaction_file::{CompactionFile, FileSource};
pub use key::Key;
pub use level::{Level, SequenceNumber};
pub use levels::{LevelSortedRun, Levels, RunStat};
pub use sorted_run::SortedRun;
