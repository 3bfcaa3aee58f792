//! What the timeline records: one [`EventRecord`] per event, a [`DecisionRecord`] per
//! compaction the planner picked, and (optionally) every planner call, so a test can replay
//! them through the planner directly.

use crate::meta::CompactionFile;
use crate::plan::{AppendDecision, MergeTreeDecision, PlanContext, Reason};

/// What kind of event an [`EventRecord`] is; the page words and colours events by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// A write buffer became a level-0 file (and the planner was asked).
    Flush,
    /// The writer could not flush: it waits for the running compaction.
    Stall,
    /// A compaction task (a lane's, or the unaware-bucket coordinator's) finished and its result
    /// was applied to the lane; a commit that waited for it goes on in the same event.
    CompactionDone,
    /// A commit (every `commit_interval_s`): each bucket flushes its partial buffer and may wait
    /// for compaction; for an unaware-bucket table the coordinator scans the new files.
    Commit,
    /// A commit that waited for compaction went on.
    CommitWait,
    /// A snapshot of a replayed table.
    Snapshot,
}

/// One event of the timeline (kept for every event, so it is small).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EventRecord {
    /// Virtual time of the event, epoch milliseconds.
    pub t_ms: i64,
    /// What happened.
    pub kind: EventKind,
    /// Index of the lane the event happened in (into `SimEnv::lanes`); 0 for commits, which touch
    /// every lane, and for the unaware-bucket coordinator.
    pub lane: u32,
    /// The decision this event made or finished.
    pub decision: Option<u32>,
}

/// Which planner entry point picked a [`DecisionRecord`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskKind {
    /// The strategy's own pick.
    Auto,
    /// A forced full compaction (full-compaction changelog, `full-compaction.delta-commits`).
    Full,
    /// A fixed-bucket append table's automatic pick (`pick_auto`, compaction.md §13.1).
    AppendAuto,
    /// A fixed-bucket append table's full compaction (`trigger_full`, compaction.md §13.2).
    AppendFull,
    /// A task planned by the unaware-bucket coordinator (`bucket = -1`, compaction.md §14.1).
    Coordinator,
}

/// A compaction the planner picked, with what it cost.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DecisionRecord {
    /// Index of this record in the timeline's decision log
    /// ([`Simulation::decisions`](crate::simulator::Simulation::decisions)): ids are dense and
    /// ascending.
    pub id: u32,
    /// Index of the event that made it.
    pub event: u64,
    /// Virtual time of the pick, epoch milliseconds (a coordinator task may start later, behind the
    /// previous one).
    pub t_ms: i64,
    /// Lane the task compacts (0 for the unaware-bucket coordinator).
    pub lane: u32,
    /// Which planner entry point picked it.
    pub kind: TaskKind,
    /// The rule that fired, with its numbers, as the planner reported it.
    pub reason: Reason,
    /// Level the merge-tree unit is written to; `None` for append tasks, whose output stays at
    /// level 0.
    pub output_level: Option<u32>,
    /// Files in the compaction unit (for append tasks, the files concatenated).
    pub input_files: u32,
    /// Input files moved to the output level instead of being merged (metadata only, or with a
    /// lookup read or a changelog rewrite; compaction.md §9, §10.2).
    pub upgrades: u32,
    /// Rewrite actions: each merges one or more input files into new files (an append task counts
    /// as one).
    pub rewrites: u32,
    /// Bytes the task reads: rewrite inputs, and upgraded files that are read for a lookup or
    /// rewritten for a changelog; plain upgrades read nothing. 0 for replay advice.
    pub bytes_in: u64,
    /// Bytes the task writes: merged outputs and files rewritten for a changelog; 0 for plain
    /// upgrades and for replay advice.
    pub bytes_out: u64,
    /// Total size of the unit's files.
    pub unit_bytes: u64,
    /// How long the task runs on the virtual clock, milliseconds, from the cost model; 0 for replay
    /// advice.
    pub duration_ms: i64,
    /// Whether the rewrite drops delete markers (compaction.md §7.2), which shrinks its output.
    pub drop_delete: bool,
    /// Replay only: what the planner would pick at this snapshot (not executed).
    pub advice: bool,
}

impl DecisionRecord {
    /// One sentence: the rule with its numbers, where the output goes and how.
    pub fn text(&self) -> String {
        let mut s = String::new();
        if self.advice {
            s.push_str("the planner would pick: ");
        }
        if self.kind == TaskKind::Full {
            s.push_str("forced ");
        }
        s.push_str(&self.reason.to_string());
        if let Some(l) = self.output_level {
            s.push_str(&format!(" → output level {l}"));
            let mut parts = Vec::new();
            if self.upgrades > 0 {
                parts.push(format!(
                    "{} upgrade{}",
                    self.upgrades,
                    if self.upgrades == 1 { "" } else { "s" }
                ));
            }
            if self.rewrites > 0 {
                parts.push(format!(
                    "{} rewrite{}",
                    self.rewrites,
                    if self.rewrites == 1 { "" } else { "s" }
                ));
            }
            if !parts.is_empty() {
                s.push_str(&format!(" ({})", parts.join(", ")));
            }
        }
        s
    }
}

/// A call into the planner, with its answer (recorded when `record_trace` is on).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "call", rename_all = "kebab-case")]
pub enum PlannerCall {
    /// A new level-0 file handed to the lane's planner (`add_new_file`).
    Add {
        /// Lane whose planner got the file.
        lane: u32,
        /// The file's metadata as the planner got it.
        file: CompactionFile,
    },
    /// A merge-tree `trigger(full, ctx)` and its decision, also when it picked nothing.
    Trigger {
        /// Lane whose planner was asked.
        lane: u32,
        /// Whether a forced full compaction was asked for (compaction.md §6).
        full: bool,
        /// The virtual clock and local hour the planner saw.
        ctx: PlanContext,
        /// The planner's answer; without a unit it only carries the reason for idling.
        decision: Box<MergeTreeDecision>,
    },
    /// A fixed-bucket append pick: `pick_auto`, or `trigger_full` when `full`.
    AppendPick {
        /// Lane whose planner was asked.
        lane: u32,
        /// `trigger_full` rather than `pick_auto`.
        full: bool,
        /// The planner's answer; empty `files` means no pick.
        decision: AppendDecision,
    },
    /// A finished task's result handed to the lane's planner: `before` replaced by `after`.
    Apply {
        /// Lane whose planner applied the result.
        lane: u32,
        /// Files the task consumed, as the planner knew them (upgraded files at their old level).
        before: Vec<CompactionFile>,
        /// Files the task produced (upgraded files at their new level, rewritten outputs).
        after: Vec<CompactionFile>,
    },
    /// New files handed to the unaware-bucket coordinator (`notify`) at one scan.
    CoordinatorNotify {
        /// Files written or compacted since the coordinator's previous scan.
        files: Vec<CompactionFile>,
    },
    /// The coordinator's `plan()` right after a notify.
    CoordinatorPlan {
        /// The planned tasks in the coordinator's order, each as its input files' names.
        tasks: Vec<Vec<String>>,
    },
}
