//! What compaction knows about data files: metadata, keys, levels and sorted runs.

mod data_file;
mod key;
mod level;
mod levels;
mod sorted_run;

pub use data_file::{DataFileMeta, FileSource};
pub use key::Key;
pub use level::{Level, SequenceNumber};
pub use levels::{LevelSortedRun, Levels, RunStat};
pub use sorted_run::SortedRun;
