//! `pick_full_compaction` (compaction.md §6): what a forced full compaction of a primary-key bucket
//! rewrites. Used by dedicated compaction jobs and `--full`, never by the automatic strategy.

use super::{CompactUnit, Idle, Reason};
use crate::meta::{CompactionFile, Level, LevelSortedRun};

/// The unit (if any) and why.
pub fn pick_full_compaction(
    num_levels: u32,
    runs: &[LevelSortedRun<'_>],
    force_rewrite_all: bool,
    has_expired_records: &dyn Fn(&CompactionFile) -> bool,
) -> (Option<CompactUnit>, Reason) {
    let max_level = Level::new(num_levels - 1);
    match runs {
        [] => (None, Reason::Idle(Idle::Empty)),
        // A single run on the max level is already fully compacted; only files that carry
        // something to purge (deletion vectors, expired records) or a forced rewrite go again,
        // each on its own.
        [only] if only.level == max_level => {
            let (mut with_dv, mut expired) = (0, 0);
            let files: Vec<_> = only
                .files
                .iter()
                .filter(|f| {
                    if force_rewrite_all {
                        true
                    } else if has_expired_records(f) {
                        expired += 1;
                        true
                    } else if f.has_deletion_vector {
                        with_dv += 1;
                        true
                    } else {
                        false
                    }
                })
                .cloned()
                .collect();
            if files.is_empty() {
                return (
                    None,
                    Reason::Idle(Idle::MaxLevelClean {
                        files: only.files.len(),
                    }),
                );
            }
            let reason = Reason::FullRewriteMaxLevel {
                files: files.len(),
                forced: force_rewrite_all,
                with_deletion_vector: with_dv,
                expired,
            };
            (
                Some(CompactUnit {
                    output_level: max_level,
                    files,
                    file_rewrite: true,
                }),
                reason,
            )
        }
        _ => {
            let unit = CompactUnit::from_runs(max_level, runs);
            let reason = Reason::FullCompaction {
                runs: runs.len(),
                files: unit.files.len(),
            };
            (Some(unit), reason)
        }
    }
}
