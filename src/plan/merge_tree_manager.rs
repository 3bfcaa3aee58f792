//! The merge-tree compaction manager of one primary-key bucket (compaction.md §7): triggers the
//! strategy, filters pointless picks, decides whether deletes may be dropped, plans the task, and
//! tells the writer when to stall.

use std::sync::Arc;

use super::{
    pick_full_compaction, plan_file_rewrite_task, plan_merge_tree_task, CompactStrategy,
    CompactUnit, Idle, PlanContext, Reason, TaskPlan, TaskSettings, UpgradeRule,
};
use crate::error::{Error, Result};
use crate::meta::{CompactionFile, Level, Levels, RunStat};
use crate::options::{CoreOptions, Flavor};

/// A bucket's decision: the unit (if any), whether deletes are dropped, what the task does.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MergeTreeDecision {
    /// The files to compact and their output level; `None` when nothing is to be done.
    pub unit: Option<CompactUnit>,
    /// Whether the task's merges may drop retract records (`-U`, `-D`; compaction.md §7.2).
    /// Always false without a unit.
    pub drop_delete: bool,
    /// The actions that carry out the unit (compaction.md §7.3, §9); empty without a unit.
    pub task: TaskPlan,
    /// The rule that produced the unit, or why there is none ([`Reason::Idle`]).
    pub reason: Reason,
}

impl MergeTreeDecision {
    fn idle(idle: Idle) -> Self {
        MergeTreeDecision {
            unit: None,
            drop_delete: false,
            task: TaskPlan::default(),
            reason: Reason::Idle(idle),
        }
    }
}

/// Write-stall signals (compaction.md §7.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WriteStall {
    /// Sorted runs of the bucket (`Levels::number_of_sorted_runs`).
    pub sorted_runs: usize,
    /// Effective `num-sorted-run.stop-trigger` (at least the compaction trigger).
    pub stop_trigger: usize,
    /// A flush must wait for the running compaction.
    pub wait_for_latest_compaction: bool,
    /// Prepare-commit (checkpoint) must wait too.
    pub wait_for_preparing_checkpoint: bool,
}

/// `num-sorted-run.stop-trigger`: past it, writes block on compaction.
pub fn write_stall(sorted_runs: usize, stop_trigger: usize) -> WriteStall {
    WriteStall {
        sorted_runs,
        stop_trigger,
        wait_for_latest_compaction: sorted_runs > stop_trigger,
        wait_for_preparing_checkpoint: sorted_runs > stop_trigger.saturating_add(1),
    }
}

/// Lookup tables are not done compacting while level 0 holds files.
pub fn compact_not_completed(need_lookup: bool, level0_files: usize, task_running: bool) -> bool {
    task_running || (need_lookup && level0_files > 0)
}

/// Deletes may be dropped when nothing older can resurface: the output is at or above the
/// oldest data, or deletion vectors mean higher levels are read without merging.
pub fn drop_delete(
    output_level: Level,
    non_empty_highest_level: Option<Level>,
    dv_enabled: bool,
    force_keep_delete: bool,
) -> bool {
    !force_keep_delete
        && !output_level.is_zero()
        && (non_empty_highest_level.is_none_or(|h| output_level >= h) || dv_enabled)
}

/// A predicate telling whether a file holds records past `record-level.expire-time`.
pub type ExpiryCheck = Arc<dyn Fn(&CompactionFile) -> bool + Send + Sync>;

/// The planner state of one primary-key bucket.
#[derive(Clone)]
pub struct MergeTreeCompactManager {
    levels: Levels,
    strategy: CompactStrategy,
    compaction_file_size: u64,
    stop_trigger: usize,
    need_lookup: bool,
    dv_enabled: bool,
    force_rewrite_all: bool,
    force_keep_delete: bool,
    flavor: Flavor,
    task_running: bool,
    expiry: Option<ExpiryCheck>,
    /// The strategy of each upgrade the tasks plan.
    upgrade_rule: UpgradeRule,
}

impl MergeTreeCompactManager {
    /// Restores a bucket from its live files.
    pub fn new(options: &CoreOptions, files: Vec<Arc<CompactionFile>>) -> Result<Self> {
        let strategy = CompactStrategy::for_options(options, &files);
        let levels = Levels::new(options.num_levels, files)?;
        Ok(MergeTreeCompactManager {
            levels,
            strategy,
            compaction_file_size: options.compaction_file_size,
            stop_trigger: options.num_sorted_run_stop_trigger,
            need_lookup: options.need_lookup(),
            dv_enabled: options.deletion_vectors_enabled,
            force_rewrite_all: options.force_rewrite_all_files,
            force_keep_delete: false,
            flavor: options.flavor,
            task_running: false,
            expiry: None,
            upgrade_rule: UpgradeRule::new(options),
        })
    }

    /// Replaces the strategy (to restore its clock and counter from a previous decision).
    pub fn with_strategy(mut self, strategy: CompactStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Java's record-level expiry (ignored for the C++ flavor).
    pub fn with_expiry(mut self, expiry: ExpiryCheck) -> Self {
        self.expiry = Some(expiry);
        self
    }

    /// Chain tables keep deletes (Java only).
    pub fn with_force_keep_delete(mut self, keep: bool) -> Self {
        self.force_keep_delete = keep;
        self
    }

    /// The bucket's LSM tree as the manager currently sees it.
    pub fn levels(&self) -> &Levels {
        &self.levels
    }
    /// The strategy with its current state (early-full clock, gentle counter).
    pub fn strategy(&self) -> &CompactStrategy {
        &self.strategy
    }
    /// Records whether a task of this bucket is running. [`Self::trigger`] never sets it: the
    /// caller does when it starts the task and clears it once the result is applied.
    pub fn set_task_running(&mut self, running: bool) {
        self.task_running = running;
    }
    /// Whether a task is running, as last set by [`Self::set_task_running`].
    pub fn task_running(&self) -> bool {
        self.task_running
    }

    fn has_expired(&self, f: &CompactionFile) -> bool {
        self.flavor == Flavor::Java && self.expiry.as_ref().is_some_and(|e| e(f))
    }

    /// Asks for a compaction: the strategy's pick (`full = false`) or a forced full compaction.
    pub fn trigger(&mut self, full: bool, ctx: &PlanContext) -> Result<MergeTreeDecision> {
        if full {
            if self.task_running {
                return Err(Error::illegal_state(
                    "a full compaction was requested while a compaction task is still running",
                ));
            }
            let runs = self.levels.level_sorted_runs();
            let (unit, reason) = pick_full_compaction(
                self.levels.num_levels(),
                &runs,
                self.force_rewrite_all,
                &|f| self.has_expired(f),
            );
            return Ok(match unit {
                Some(unit) => self.submit(unit, reason),
                None => MergeTreeDecision {
                    reason,
                    ..MergeTreeDecision::idle(Idle::Empty)
                },
            });
        }
        if self.task_running {
            return Ok(MergeTreeDecision::idle(Idle::TaskRunning));
        }
        let runs = self.levels.level_sorted_runs();
        let stats: Vec<RunStat> = runs
            .iter()
            .map(|r| RunStat {
                level: r.level,
                size: r.size,
            })
            .collect();
        let Some(pick) = self.strategy.pick(self.levels.num_levels(), &stats, ctx) else {
            return Ok(MergeTreeDecision::idle(
                self.strategy.explain_idle(&stats, ctx),
            ));
        };
        let unit =
            CompactUnit::from_runs(pick.output_level, &runs[..pick.run_count.min(runs.len())]);
        match Self::filter_pointless(&unit) {
            Some(idle) => Ok(MergeTreeDecision::idle(idle)),
            None => Ok(self.submit(unit, pick.reason)),
        }
    }

    /// Picks that would change nothing: no files, or one file already at the output level.
    pub fn filter_pointless(unit: &CompactUnit) -> Option<Idle> {
        match unit.files.as_slice() {
            [] => Some(Idle::Empty),
            [only] if only.level == unit.output_level => Some(Idle::AlreadyAtOutputLevel {
                file: only.file_name.clone(),
                level: only.level,
            }),
            _ => None,
        }
    }

    /// Plans the task for a unit (no filtering): drop-delete and rewrite-vs-upgrade.
    pub fn submit(&self, unit: CompactUnit, reason: Reason) -> MergeTreeDecision {
        let drop = drop_delete(
            unit.output_level,
            self.levels.non_empty_highest_level(),
            self.dv_enabled,
            self.force_keep_delete,
        );
        let task = if unit.file_rewrite {
            plan_file_rewrite_task(&unit.files, unit.output_level)
        } else {
            plan_merge_tree_task(
                &unit.files,
                &TaskSettings {
                    output_level: unit.output_level,
                    max_level: self.levels.max_level(),
                    min_file_size: self.compaction_file_size,
                    force_rewrite_all: self.force_rewrite_all,
                    has_expired_records: &|f| self.has_expired(f),
                    upgrade_rule: &self.upgrade_rule,
                },
            )
        };
        MergeTreeDecision {
            unit: Some(unit),
            drop_delete: drop,
            task,
            reason,
        }
    }

    /// Applies a finished task's result to the levels.
    pub fn apply(
        &mut self,
        before: &[Arc<CompactionFile>],
        after: &[Arc<CompactionFile>],
    ) -> Result<()> {
        self.levels.update(before, after)
    }

    /// Adds a flushed level-0 file.
    pub fn add_new_file(&mut self, file: Arc<CompactionFile>) -> Result<()> {
        if !file.level.is_zero() {
            return Err(Error::corrupt(
                Some(&file.file_name),
                format!("a flushed file must be at level 0, not {}", file.level),
            ));
        }
        self.levels.add_level0_file(file)
    }

    /// The bucket's write-stall signals now ([`write_stall`], compaction.md §7.5).
    pub fn write_stall(&self) -> WriteStall {
        write_stall(self.levels.number_of_sorted_runs(), self.stop_trigger)
    }

    /// Whether a writer waiting for compaction must keep triggering: a task is running, or
    /// the table needs lookups and level 0 holds files ([`compact_not_completed`],
    /// compaction.md §7.5).
    pub fn compact_not_completed(&self) -> bool {
        compact_not_completed(
            self.need_lookup,
            self.levels.level0().len(),
            self.task_running,
        )
    }
}
