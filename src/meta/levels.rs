//! `Levels`: the LSM tree of one bucket (compaction.md §1.3).

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use super::{CompactionFile, Level, SequenceNumber, SortedRun};
use crate::error::{Error, Result};

/// The level-0 order, newest first: larger max sequence, then smaller min sequence, then older
/// creation time, then file name. Two files equal under this order are the same file.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Level0Order {
    max_seq: Reverse<SequenceNumber>,
    min_seq: SequenceNumber,
    creation_ms: i64,
    name: String,
}

impl Level0Order {
    fn of(f: &CompactionFile) -> Self {
        Level0Order {
            max_seq: Reverse(f.max_sequence_number),
            min_seq: f.min_sequence_number,
            creation_ms: f.creation_time_ms,
            name: f.file_name.clone(),
        }
    }
}

/// One entry of [`Levels::level_sorted_runs`]: a level-0 file or a whole level ≥ 1.
#[derive(Clone, Copy, Debug)]
pub struct LevelSortedRun<'a> {
    /// Level of the run: 0 for a single level-0 file, else the level it makes up.
    pub level: Level,
    /// The run's files in key order (one file at level 0).
    pub files: &'a [Arc<CompactionFile>],
    /// Sum of the files' sizes in bytes.
    pub size: u64,
}

/// What the compaction strategies look at: a run's level and its size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunStat {
    /// Level of the run (0 for each level-0 file).
    pub level: Level,
    /// Total size of the run's files in bytes.
    pub size: u64,
}

/// The files of one bucket arranged by level.
#[derive(Clone, Debug)]
pub struct Levels {
    level0: BTreeMap<Level0Order, Arc<CompactionFile>>,
    /// `upper[i]` is level `i + 1`.
    upper: Vec<SortedRun>,
}

impl Levels {
    /// Restores a bucket. The effective number of levels is the configured one, raised to fit the
    /// highest level a restored file sits on, as Paimon does; it must be at least 2.
    pub fn new(configured_num_levels: u32, files: Vec<Arc<CompactionFile>>) -> Result<Self> {
        let restored_max = files.iter().map(|f| f.level.get()).max().unwrap_or(0);
        let num_levels = configured_num_levels.max(restored_max.saturating_add(1));
        if num_levels < 2 {
            return Err(Error::invalid_option(
                "num-levels",
                &configured_num_levels.to_string(),
                "an LSM tree needs at least 2 levels",
            ));
        }
        if num_levels > Level::LIMIT {
            return Err(Error::corrupt(
                files
                    .iter()
                    .find(|f| f.level.get() >= Level::LIMIT)
                    .map(|f| f.file_name.as_str()),
                format!(
                    "{num_levels} levels is beyond the supported range (at most {})",
                    Level::LIMIT
                ),
            ));
        }
        let mut by_level: Vec<Vec<Arc<CompactionFile>>> = vec![Vec::new(); num_levels as usize];
        let mut level0 = BTreeMap::new();
        for f in files {
            if f.level.is_zero() {
                level0.insert(Level0Order::of(&f), f);
            } else {
                by_level[f.level.index()].push(f);
            }
        }
        let upper = by_level
            .into_iter()
            .skip(1)
            .map(SortedRun::from_unsorted)
            .collect::<Result<Vec<_>>>()?;
        Ok(Levels { level0, upper })
    }

    /// Number of levels including level 0: the configured `num-levels`, raised to fit the
    /// restored files (always at least 2).
    pub fn num_levels(&self) -> u32 {
        self.upper.len() as u32 + 1
    }

    /// The highest level, `num_levels() - 1`: where full compaction writes and retracts may
    /// be dropped.
    pub fn max_level(&self) -> Level {
        Level::new(self.upper.len() as u32)
    }

    /// Level-0 files, newest first.
    pub fn level0(&self) -> impl ExactSizeIterator<Item = &Arc<CompactionFile>> {
        self.level0.values()
    }

    /// The run at a level ≥ 1.
    pub fn run_of_level(&self, level: Level) -> Option<&SortedRun> {
        level.index().checked_sub(1).and_then(|i| self.upper.get(i))
    }

    /// Every level-0 file as its own run (newest first), then each non-empty level ascending.
    /// This list is what every strategy decides on; index 0 is the newest run.
    pub fn level_sorted_runs(&self) -> Vec<LevelSortedRun<'_>> {
        let mut runs = Vec::with_capacity(self.level0.len() + self.upper.len());
        for f in self.level0.values() {
            runs.push(LevelSortedRun {
                level: Level::ZERO,
                files: std::slice::from_ref(f),
                size: f.file_size,
            });
        }
        for (i, run) in self.upper.iter().enumerate() {
            if !run.is_empty() {
                runs.push(LevelSortedRun {
                    level: Level::new(i as u32 + 1),
                    files: run.files(),
                    size: run.total_size(),
                });
            }
        }
        runs
    }

    /// The `(level, size)` view of [`Levels::level_sorted_runs`].
    pub fn run_stats(&self) -> Vec<RunStat> {
        self.level_sorted_runs()
            .iter()
            .map(|r| RunStat {
                level: r.level,
                size: r.size,
            })
            .collect()
    }

    /// Number of sorted runs: each level-0 file, plus each non-empty level ≥ 1 (the length of
    /// [`Levels::level_sorted_runs`]).
    pub fn number_of_sorted_runs(&self) -> usize {
        self.level0.len() + self.upper.iter().filter(|r| !r.is_empty()).count()
    }

    /// The highest non-empty level ≥ 1; level 0 if only level 0 has files; `None` if empty.
    pub fn non_empty_highest_level(&self) -> Option<Level> {
        if let Some(i) = self.upper.iter().rposition(|r| !r.is_empty()) {
            Some(Level::new(i as u32 + 1))
        } else if !self.level0.is_empty() {
            Some(Level::ZERO)
        } else {
            None
        }
    }

    /// Every file of the bucket: level 0 newest first, then each level ascending in key
    /// order.
    pub fn all_files(&self) -> Vec<Arc<CompactionFile>> {
        let mut all: Vec<_> = self.level0.values().cloned().collect();
        for run in &self.upper {
            all.extend(run.files().iter().cloned());
        }
        all
    }

    /// Size of every file of the bucket, in bytes.
    pub fn total_size(&self) -> u64 {
        self.level0.values().map(|f| f.file_size).sum::<u64>()
            + self.upper.iter().map(SortedRun::total_size).sum::<u64>()
    }

    /// Adds a freshly flushed file.
    pub fn add_level0_file(&mut self, file: Arc<CompactionFile>) -> Result<()> {
        self.update(&[], &[file])
    }

    /// Replaces `before` with `after`, level by level. All or nothing: on error (a level beyond
    /// the range, or an `after` that breaks a level's sorted run) the levels are unchanged.
    pub fn update(
        &mut self,
        before: &[Arc<CompactionFile>],
        after: &[Arc<CompactionFile>],
    ) -> Result<()> {
        let max = self.max_level();
        if let Some(f) = before.iter().chain(after).find(|f| f.level > max) {
            return Err(Error::corrupt(
                Some(&f.file_name),
                format!(
                    "level {} is beyond the configured range (max level {max})",
                    f.level
                ),
            ));
        }
        let mut touched: Vec<bool> = vec![false; self.upper.len()];
        let mut removed: HashSet<&str> = HashSet::new();
        for f in before {
            if !f.level.is_zero() {
                touched[f.level.index() - 1] = true;
                removed.insert(f.file_name.as_str());
            }
        }
        for f in after {
            if !f.level.is_zero() {
                touched[f.level.index() - 1] = true;
            }
        }
        let mut new_upper: Vec<(usize, SortedRun)> = Vec::new();
        for (i, &t) in touched.iter().enumerate() {
            if !t {
                continue;
            }
            let level = Level::new(i as u32 + 1);
            let mut files: Vec<Arc<CompactionFile>> = self.upper[i]
                .files()
                .iter()
                .filter(|f| !removed.contains(f.file_name.as_str()))
                .cloned()
                .collect();
            files.extend(after.iter().filter(|f| f.level == level).cloned());
            new_upper.push((i, SortedRun::from_unsorted(files)?));
        }
        for f in before.iter().filter(|f| f.level.is_zero()) {
            self.level0.remove(&Level0Order::of(f));
        }
        for f in after.iter().filter(|f| f.level.is_zero()) {
            self.level0.insert(Level0Order::of(f), f.clone());
        }
        for (i, run) in new_upper {
            self.upper[i] = run;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::Key;

    fn f(name: &str, level: u32, min: i64, max: i64, seq: i64) -> Arc<CompactionFile> {
        Arc::new(CompactionFile::new(
            name,
            Level::new(level),
            (max - min + 1) as u64,
            Key::from_i64(min),
            Key::from_i64(max),
            seq,
            seq,
        ))
    }

    #[test]
    fn restored_levels_extend_the_configured_count() {
        let l = Levels::new(3, vec![f("a", 5, 1, 2, 1)]).unwrap();
        assert_eq!(l.num_levels(), 6);
        assert_eq!(l.max_level(), Level::new(5));
    }

    #[test]
    fn fewer_than_two_levels_is_an_error() {
        let e = Levels::new(1, vec![]).unwrap_err();
        assert!(matches!(e.kind, crate::ErrorKind::InvalidOption { .. }));
    }

    #[test]
    fn overlapping_files_in_one_level_are_corrupt() {
        let e = Levels::new(3, vec![f("a", 1, 1, 5, 1), f("b", 1, 5, 9, 2)]).unwrap_err();
        assert!(
            matches!(e.kind, crate::ErrorKind::CorruptInput { .. }),
            "{e}"
        );
        assert!(e.message.contains("overlap"));
    }

    #[test]
    fn level_beyond_range_is_an_error_and_leaves_levels_unchanged() {
        let mut l = Levels::new(3, vec![f("a", 0, 1, 5, 1)]).unwrap();
        let before = l.run_stats();
        let e = l.update(&[], &[f("z", 3, 1, 2, 9)]).unwrap_err();
        assert!(e.message.contains("beyond the configured range"), "{e}");
        assert_eq!(l.run_stats(), before);
        let e = l
            .update(
                &[f("a", 0, 1, 5, 1)],
                &[f("x", 2, 1, 5, 1), f("y", 2, 3, 8, 2)],
            )
            .unwrap_err();
        assert!(matches!(e.kind, crate::ErrorKind::CorruptInput { .. }));
        assert_eq!(l.run_stats(), before);
    }

    #[test]
    fn update_moves_files_between_levels() {
        let a = f("a", 0, 1, 5, 2);
        let b = f("b", 0, 3, 9, 1);
        let mut l = Levels::new(3, vec![a.clone(), b.clone()]).unwrap();
        assert_eq!(l.number_of_sorted_runs(), 2);
        assert_eq!(l.non_empty_highest_level(), Some(Level::ZERO));
        l.update(&[a, b], &[f("c", 2, 1, 9, 2)]).unwrap();
        assert_eq!(l.number_of_sorted_runs(), 1);
        assert_eq!(l.non_empty_highest_level(), Some(Level::new(2)));
    }
}
