//! Universal compaction (compaction.md §4): Paimon's default strategy for primary-key tables.
//!
//! One function per rule, tried in order by [`UniversalCompaction::pick`]: early full
//! compaction, size amplification, size ratio, then the file-number trigger. Each returns the
//! prefix of runs it picks together with the numbers that made it fire.

use super::{EarlyFullCompaction, OffPeakHours, Pick, PlanContext, RatioStop, RatioWalk, Reason};
use crate::meta::{Level, RunStat};
use crate::options::{CoreOptions, Flavor};

/// Universal compaction's settings and its (optional) early-full clock.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UniversalCompaction {
    /// `compaction.max-size-amplification-percent`.
    pub max_size_amp: u64,
    /// `compaction.size-ratio` (percent).
    pub size_ratio: u32,
    /// `num-sorted-run.compaction-trigger`.
    pub trigger: usize,
    /// Early full compaction (compaction.md §4.2); `None` unless one of its options is set.
    pub early_full: Option<EarlyFullCompaction>,
    /// Off-peak hours and their extra size ratio (compaction.md §4.7); `None` when off.
    pub off_peak: Option<OffPeakHours>,
    /// Java HEAD's size-ratio loop or paimon-cpp's (compaction.md §4.4, §16 D1).
    pub flavor: Flavor,
}

/// The size-ratio walk before `create_unit` turns it into a unit.
struct Walk {
    count: usize,
    triggered: bool,
    info: RatioWalk,
}

impl UniversalCompaction {
    /// Built from the parsed options; `initial_last_full_ms` seeds the early-full clock (epoch
    /// ms, `None` = unset) and is ignored when early full compaction is not configured.
    pub fn new(options: &CoreOptions, initial_last_full_ms: Option<i64>) -> Self {
        UniversalCompaction {
            max_size_amp: options.max_size_amplification_percent,
            size_ratio: options.size_ratio,
            trigger: options.num_sorted_run_compaction_trigger,
            early_full: EarlyFullCompaction::create(options, initial_last_full_ms),
            off_peak: options.off_peak,
            flavor: options.flavor,
        }
    }

    /// The strategy's decision for `runs` (newest first); `None` when no rule fires.
    pub fn pick(&mut self, num_levels: u32, runs: &[RunStat], ctx: &PlanContext) -> Option<Pick> {
        let max_level = Level::new(num_levels - 1);
        if let Some(early) = self.early_full.as_mut() {
            if let Some(pick) = early.try_full(num_levels, runs, ctx) {
                return Some(pick);
            }
        }
        if let Some(pick) = self.pick_for_size_amp(max_level, runs, ctx) {
            return Some(pick);
        }
        if let Some(pick) = self.pick_for_size_ratio(max_level, runs, ctx) {
            return Some(pick);
        }
        self.pick_for_file_num(max_level, runs, ctx)
    }

    /// Size amplification: everything newer than the oldest run, compared with the oldest run.
    /// When the newer data outweighs `max_size_amp` percent of it, compact everything.
    pub fn pick_for_size_amp(
        &mut self,
        max_level: Level,
        runs: &[RunStat],
        ctx: &PlanContext,
    ) -> Option<Pick> {
        if runs.len() < self.trigger || runs.is_empty() {
            return None;
        }
        let (earliest, newer) = runs.split_last()?;
        let candidate: u64 = newer.iter().map(|r| r.size).sum();
        if candidate as u128 * 100 > self.max_size_amp as u128 * earliest.size as u128 {
            if let Some(early) = self.early_full.as_mut() {
                early.mark_full(ctx);
            }
            return Some(Pick {
                output_level: max_level,
                run_count: runs.len(),
                reason: Reason::SizeAmplification {
                    runs: runs.len(),
                    candidate_bytes: candidate,
                    earliest_bytes: earliest.size,
                    max_size_amp_pct: self.max_size_amp,
                },
            });
        }
        None
    }

    /// The gated size-ratio rule: only once there are at least `trigger` runs.
    pub fn pick_for_size_ratio(
        &mut self,
        max_level: Level,
        runs: &[RunStat],
        ctx: &PlanContext,
    ) -> Option<Pick> {
        if runs.len() < self.trigger {
            return None;
        }
        let walk = self.walk(runs, 1, false, ctx);
        self.finish(runs, max_level, walk, ctx, |walk| Reason::SizeRatio {
            walk,
        })
    }

    /// More runs than the trigger: compact at least enough of the newest runs to get back to it.
    pub fn pick_for_file_num(
        &mut self,
        max_level: Level,
        runs: &[RunStat],
        ctx: &PlanContext,
    ) -> Option<Pick> {
        if runs.len() <= self.trigger {
            return None;
        }
        let walk = self.walk(runs, runs.len() - self.trigger + 1, false, ctx);
        let (sorted_runs, trigger) = (runs.len(), self.trigger);
        self.finish(runs, max_level, walk, ctx, |walk| Reason::FileNum {
            sorted_runs,
            trigger,
            walk,
        })
    }

    /// Lookup tables: push every level-0 run up, plus whatever the size ratio lets join.
    pub fn force_pick_l0(
        &mut self,
        num_levels: u32,
        runs: &[RunStat],
        ctx: &PlanContext,
        gentle_interval: Option<usize>,
    ) -> Option<Pick> {
        let level0_runs = runs.iter().take_while(|r| r.level.is_zero()).count();
        if level0_runs == 0 {
            return None;
        }
        let walk = self.walk(runs, level0_runs, true, ctx);
        self.finish(runs, Level::new(num_levels - 1), walk, ctx, |walk| {
            Reason::ForceUpLevel0 {
                level0_runs,
                gentle_interval,
                walk,
            }
        })
    }

    /// Why nothing fired (for the decision's reason).
    pub fn explain_idle(&self, runs: &[RunStat], ctx: &PlanContext) -> super::Idle {
        if runs.len() < self.trigger {
            return super::Idle::BelowTrigger {
                sorted_runs: runs.len(),
                trigger: self.trigger,
            };
        }
        let (earliest, newer) = runs.split_last().map_or((0, &[][..]), |(e, n)| (e.size, n));
        super::Idle::NoRuleFired {
            sorted_runs: runs.len(),
            trigger: self.trigger,
            candidate_bytes: newer.iter().map(|r| r.size).sum(),
            earliest_bytes: earliest,
            max_size_amp_pct: self.max_size_amp,
            walk: self.walk(runs, 1, false, ctx).info,
        }
    }

    fn finish(
        &mut self,
        runs: &[RunStat],
        max_level: Level,
        walk: Walk,
        ctx: &PlanContext,
        reason: impl FnOnce(RatioWalk) -> Reason,
    ) -> Option<Pick> {
        if !walk.triggered {
            return None;
        }
        let (output_level, run_count) = self.create_unit(runs, max_level, walk.count, ctx);
        Some(Pick {
            output_level,
            run_count,
            reason: reason(walk.info),
        })
    }

    /// The size-ratio loop from `count` runs (compaction.md §4.4). A run joins while the candidate,
    /// grown by the ratio, is at least its size. Java HEAD keeps absorbing level-0 and level-1
    /// runs once compaction is triggered (they would otherwise block the output level); C++
    /// stops at the first run that fails.
    fn walk(&self, runs: &[RunStat], mut count: usize, force: bool, ctx: &PlanContext) -> Walk {
        let mut candidate: u64 = runs[..count.min(runs.len())].iter().map(|r| r.size).sum();
        let mut triggered = force || count > 1;
        let mut ratio_pct = self.size_ratio;
        let mut stopped_at = None;
        for next in &runs[count.min(runs.len())..] {
            ratio_pct = self
                .size_ratio
                .saturating_add(self.off_peak.map_or(0, |o| o.current_ratio(ctx.local_hour)));
            // Evaluated exactly as Paimon does: (candidate × (100 + r)) / 100 in f64.
            let fails = (candidate as f64) * (100.0 + ratio_pct as f64) / 100.0 < next.size as f64;
            let stop = match self.flavor {
                Flavor::Java => fails && (!triggered || next.level.get() > 1),
                Flavor::Cpp => fails,
            };
            if stop {
                stopped_at = Some(RatioStop {
                    next_bytes: next.size,
                    level: next.level,
                });
                break;
            }
            candidate += next.size;
            count += 1;
            triggered = true;
        }
        if self.flavor == Flavor::Cpp {
            triggered = force || count > 1;
        }
        Walk {
            count,
            triggered,
            info: RatioWalk {
                runs: count,
                candidate_bytes: candidate,
                ratio_pct,
                stopped_at,
            },
        }
    }

    /// The output level for the first `count` runs (compaction.md §4.5): one below the next run's
    /// level, never level 0 (a level-0 output would swallow up to the next non-level-0 run), and
    /// the max level when every run is picked.
    pub fn create_unit(
        &mut self,
        runs: &[RunStat],
        max_level: Level,
        mut count: usize,
        ctx: &PlanContext,
    ) -> (Level, usize) {
        let mut out = if count == runs.len() {
            max_level
        } else {
            Level::new(runs[count].level.get().saturating_sub(1))
        };
        if out.is_zero() {
            for run in &runs[count..] {
                count += 1;
                if !run.level.is_zero() {
                    out = run.level;
                    break;
                }
            }
        }
        if count == runs.len() {
            out = max_level;
            if let Some(early) = self.early_full.as_mut() {
                early.mark_full(ctx);
            }
        }
        (out, count)
    }
}
