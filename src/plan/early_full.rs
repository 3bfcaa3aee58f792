//! Early full compaction (compaction.md §4.2): full compactions on a schedule or by size, before
//! the size-based rules would get there, so that readers of the max level see fresh data.

use super::{Pick, PlanContext, Reason};
use crate::meta::{Level, RunStat};
use crate::options::{CoreOptions, Flavor};

/// `compaction.optimization-interval`, `.total-size-threshold`, `.incremental-size-threshold`,
/// and the clock of the last full compaction (state that survives between decisions).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EarlyFullCompaction {
    /// `compaction.optimization-interval` in milliseconds; `None` when unset.
    pub interval_ms: Option<u64>,
    /// `compaction.total-size-threshold` in bytes; `None` when unset.
    pub total_size_threshold: Option<u64>,
    /// `compaction.incremental-size-threshold` in bytes; `None` when unset.
    pub incremental_size_threshold: Option<u64>,
    /// Epoch ms of the last full compaction this planner knows of.
    pub last_full_ms: Option<i64>,
    /// Decides what zero runs do: Java goes on, C++ returns nothing (compaction.md §16 D5).
    pub flavor: Flavor,
}

impl EarlyFullCompaction {
    /// `None` unless at least one trigger is configured.
    pub fn create(options: &CoreOptions, initial_last_full_ms: Option<i64>) -> Option<Self> {
        if options.optimization_interval_ms.is_none()
            && options.total_size_threshold.is_none()
            && options.incremental_size_threshold.is_none()
        {
            return None;
        }
        Some(EarlyFullCompaction {
            interval_ms: options.optimization_interval_ms,
            total_size_threshold: options.total_size_threshold,
            incremental_size_threshold: options.incremental_size_threshold,
            last_full_ms: initial_last_full_ms,
            flavor: options.flavor,
        })
    }

    /// Records that a full compaction was chosen now (by this rule or any other).
    pub fn mark_full(&mut self, ctx: &PlanContext) {
        self.last_full_ms = Some(ctx.now_ms);
    }

    /// Checks interval, then total size, then incremental size; the first that fires picks every
    /// run for the max level. A single run is already "fully compacted".
    pub fn try_full(
        &mut self,
        num_levels: u32,
        runs: &[RunStat],
        ctx: &PlanContext,
    ) -> Option<Pick> {
        if runs.len() == 1 {
            return None;
        }
        // Java goes on with zero runs (and resets its clock on an empty unit); C++ stops here.
        if runs.is_empty() && self.flavor == Flavor::Cpp {
            return None;
        }
        let max_level = Level::new(num_levels - 1);
        let all = runs.len();
        if let Some(interval_ms) = self.interval_ms {
            let due = match self.last_full_ms {
                None => true,
                Some(last) => ctx.now_ms.saturating_sub(last) > interval_ms as i64,
            };
            if due {
                let reason = Reason::EarlyFullInterval {
                    runs: all,
                    interval_ms,
                    last_full_ms: self.last_full_ms,
                    now_ms: ctx.now_ms,
                };
                self.mark_full(ctx);
                return Some(full(max_level, all, reason));
            }
        }
        if let Some(threshold) = self.total_size_threshold {
            let total: u64 = runs.iter().map(|r| r.size).sum();
            if total < threshold {
                self.mark_full(ctx);
                let reason = Reason::EarlyFullTotalSize {
                    runs: all,
                    total_bytes: total,
                    threshold_bytes: threshold,
                };
                return Some(full(max_level, all, reason));
            }
        }
        if let Some(threshold) = self.incremental_size_threshold {
            let incremental: u64 = runs
                .iter()
                .filter(|r| r.level != max_level)
                .map(|r| r.size)
                .sum();
            if incremental > threshold {
                self.mark_full(ctx);
                let reason = Reason::EarlyFullIncrementalSize {
                    runs: all,
                    incremental_bytes: incremental,
                    threshold_bytes: threshold,
                };
                return Some(full(max_level, all, reason));
            }
        }
        None
    }
}

fn full(output_level: Level, run_count: usize, reason: Reason) -> Pick {
    Pick {
        output_level,
        run_count,
        reason,
    }
}
