//! Force-up-level-0 compaction (compaction.md §5): lookup tables (changelog `lookup`, deletion
//! vectors, `first-row`, `force-lookup`) and `compaction.force-up-level-0` keep level 0 empty,
//! because a reader can only look keys up in sorted levels.
//!
//! `radical` forces level 0 up whenever universal compaction finds nothing; `gentle` only every
//! `lookup-compact.max-interval` checks, trading lookup freshness for write amplification.

use super::{Pick, PlanContext, UniversalCompaction};
use crate::meta::RunStat;

/// Universal compaction plus the forced level-0 pick.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ForceUpLevel0Compaction {
    /// The universal compaction tried first on every pick.
    pub universal: UniversalCompaction,
    /// `None` = radical; `Some(n)` = gentle, force every `n` checks.
    pub max_interval: Option<usize>,
    /// Checks since the last forced pick (gentle only). Every check that reaches the gentle
    /// branch counts, including the polling of a writer waiting for level 0 to empty.
    pub counter: usize,
}

impl ForceUpLevel0Compaction {
    /// Wraps `universal`; `max_interval` as in [`Self::max_interval`]. The counter starts at 0.
    pub fn new(universal: UniversalCompaction, max_interval: Option<usize>) -> Self {
        ForceUpLevel0Compaction {
            universal,
            max_interval,
            counter: 0,
        }
    }

    /// The decision for `runs` (newest first, compaction.md §5): universal's pick if any (the
    /// counter untouched); else the forced level-0 pick, which under `gentle` is due only when
    /// the counter, ticked on every such call, reaches the interval. `None` when nothing is
    /// picked, including a due gentle pick with level 0 empty (its tick is spent anyway).
    pub fn pick(&mut self, num_levels: u32, runs: &[RunStat], ctx: &PlanContext) -> Option<Pick> {
        if let Some(pick) = self.universal.pick(num_levels, runs, ctx) {
            return Some(pick);
        }
        match self.max_interval {
            None => self.universal.force_pick_l0(num_levels, runs, ctx, None),
            Some(interval) => {
                self.counter += 1;
                if self.counter >= interval {
                    self.counter = 0;
                    self.universal
                        .force_pick_l0(num_levels, runs, ctx, Some(interval))
                } else {
                    None
                }
            }
        }
    }
}
