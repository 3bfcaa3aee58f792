//! What the timeline records: one [`EventRecord`] per event, a [`DecisionRecord`] per
//! compaction the planner picked, and (optionally) every planner call, so a test can replay
//! them through the planner directly.

use crate::meta::CompactionFile;
use crate::plan::{AppendDecision, MergeTreeDecision, PlanContext, Reason};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// A write buffer became a level-0 file (and the planner was asked).
    Flush,
    /// The writer could not flush: it waits for the running compaction.
    Stall,
    CompactionDone,
    Commit,
    /// A commit that waited for compaction went on.
    CommitWait,
    /// A snapshot of a replayed table.
    Snapshot,
}

/// One event of the timeline (kept for every event, so it is small).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EventRecord {
    pub t_ms: i64,
    pub kind: EventKind,
    pub lane: u32,
    /// The decision this event made or finished.
    pub decision: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskKind {
    /// The strategy's own pick.
    Auto,
    /// A forced full compaction (full-compaction changelog, `full-compaction.delta-commits`).
    Full,
    AppendAuto,
    AppendFull,
    Coordinator,
}

/// A compaction the planner picked, with what it cost.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DecisionRecord {
    pub id: u32,
    /// Index of the event that made it.
    pub event: u64,
    pub t_ms: i64,
    pub lane: u32,
    pub kind: TaskKind,
    pub reason: Reason,
    pub output_level: Option<u32>,
    pub input_files: u32,
    pub upgrades: u32,
    pub rewrites: u32,
    /// Bytes read and written by the task (upgrades read nothing unless they look keys up).
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Total size of the unit's files.
    pub unit_bytes: u64,
    pub duration_ms: i64,
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
    Add {
        lane: u32,
        file: CompactionFile,
    },
    Trigger {
        lane: u32,
        full: bool,
        ctx: PlanContext,
        decision: Box<MergeTreeDecision>,
    },
    AppendPick {
        lane: u32,
        full: bool,
        decision: AppendDecision,
    },
    Apply {
        lane: u32,
        before: Vec<CompactionFile>,
        after: Vec<CompactionFile>,
    },
    CoordinatorNotify {
        files: Vec<CompactionFile>,
    },
    CoordinatorPlan {
        tasks: Vec<Vec<String>>,
    },
}
