//! Choosing a primary-key bucket's compaction strategy from the table options (compaction.md §3).

use super::{ForceUpLevel0Compaction, Idle, Pick, PlanContext, UniversalCompaction};
use crate::meta::{CompactionFile, RunStat};
use crate::options::{CoreOptions, Flavor, LookupCompactMode};

/// The strategy of one bucket, with its state (early-full clock, gentle counter).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "strategy", rename_all = "kebab-case")]
pub enum CompactStrategy {
    /// Plain universal compaction (compaction.md §4).
    Universal(UniversalCompaction),
    /// Universal plus the forced level-0 pick, for lookup tables and
    /// `compaction.force-up-level-0` (compaction.md §5).
    ForceUpLevel0(ForceUpLevel0Compaction),
}

impl CompactStrategy {
    /// Lookup tables force level 0 up (radical, or gentle with `lookup-compact.max-interval`);
    /// so does `compaction.force-up-level-0`; everything else is plain universal compaction.
    ///
    /// Java seeds the early-full clock with the newest creation time among restored files on
    /// the configured max level, so a restarted writer does not run a full compaction at once;
    /// C++ does not (compaction.md §4.2, §16 D3).
    pub fn for_options(options: &CoreOptions, restored: &[std::sync::Arc<CompactionFile>]) -> Self {
        let seed = match options.flavor {
            Flavor::Java => estimate_last_full_compaction(restored, options.num_levels),
            Flavor::Cpp => None,
        };
        let universal = UniversalCompaction::new(options, seed);
        if options.need_lookup() {
            let interval = match options.lookup_compact {
                LookupCompactMode::Gentle => Some(options.lookup_compact_max_interval),
                LookupCompactMode::Radical => None,
            };
            CompactStrategy::ForceUpLevel0(ForceUpLevel0Compaction::new(universal, interval))
        } else if options.force_up_level0 {
            CompactStrategy::ForceUpLevel0(ForceUpLevel0Compaction::new(universal, None))
        } else {
            CompactStrategy::Universal(universal)
        }
    }

    /// The strategy's pick over `runs` (newest first) with `num_levels` levels; `None` when no
    /// rule fires ([`Self::explain_idle`] says why). May advance the state: the early-full clock
    /// when a pick covers every run, the gentle counter on a forced-pick check.
    pub fn pick(&mut self, num_levels: u32, runs: &[RunStat], ctx: &PlanContext) -> Option<Pick> {
        match self {
            CompactStrategy::Universal(u) => u.pick(num_levels, runs, ctx),
            CompactStrategy::ForceUpLevel0(f) => f.pick(num_levels, runs, ctx),
        }
    }

    /// The universal compaction inside, whichever variant this is.
    pub fn universal(&self) -> &UniversalCompaction {
        match self {
            CompactStrategy::Universal(u) => u,
            CompactStrategy::ForceUpLevel0(f) => &f.universal,
        }
    }

    /// Mutable access to the universal compaction inside (to restore its early-full clock).
    pub fn universal_mut(&mut self) -> &mut UniversalCompaction {
        match self {
            CompactStrategy::Universal(u) => u,
            CompactStrategy::ForceUpLevel0(f) => &mut f.universal,
        }
    }

    /// Why the last `pick` returned nothing.
    pub fn explain_idle(&self, runs: &[RunStat], ctx: &PlanContext) -> Idle {
        if runs.is_empty() {
            return Idle::Empty;
        }
        if let CompactStrategy::ForceUpLevel0(f) = self {
            if let Some(interval) = f.max_interval {
                if runs.first().is_some_and(|r| r.level.is_zero()) {
                    return Idle::GentleWaiting {
                        calls: f.counter,
                        interval,
                    };
                }
            }
        }
        self.universal().explain_idle(runs, ctx)
    }
}

fn estimate_last_full_compaction(
    restored: &[std::sync::Arc<CompactionFile>],
    num_levels: u32,
) -> Option<i64> {
    let max_level = num_levels.checked_sub(1)?;
    restored
        .iter()
        .filter(|f| f.level.get() == max_level)
        .map(|f| f.creation_time_ms)
        .filter(|t| *t >= 0)
        .max()
}
