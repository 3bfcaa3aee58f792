//! What the page draws at one position of the timeline, as plain serialisable data. The page
//! only renders this; every number and sentence comes from the simulation and the planner.

use super::config::SimTable;
use super::record::{DecisionRecord, EventKind};
use super::sim::{Sample, Series, Simulation};
use super::state::{Block, FileAction};
use crate::error::Result;

/// Everything the page draws for one timeline position (see [`Simulation::view`]).
#[derive(Clone, Debug, serde::Serialize)]
pub struct View {
    /// The position shown: the number of events applied, clamped to those computed.
    pub position: u64,
    /// Events computed so far (the timeline's length).
    pub events: u64,
    /// The run is over and this is its last position.
    pub finished: bool,
    /// Virtual time at this position, epoch milliseconds.
    pub t_ms: i64,
    /// Seconds since the start of the run.
    pub elapsed_s: f64,
    /// Local hour of day at `t_ms`, 0–23, with the workload's UTC offset (what off-peak hours
    /// compare against).
    pub local_hour: u8,
    /// The simulated table's shape.
    pub table: SimTable,
    /// The event that led to this position; `None` at position 0.
    pub event: Option<EventView>,
    /// One entry per lane, in lane order.
    pub lanes: Vec<LaneView>,
    /// Whole-table figures at this position.
    pub metrics: MetricsView,
    /// Why this table is never compacted here (write-only...).
    pub not_compactable: Option<String>,
}

/// The last event, worded for the page.
#[derive(Clone, Debug, serde::Serialize)]
pub struct EventView {
    /// What happened.
    pub kind: EventKind,
    /// Lane of the event (an index into [`View::lanes`]).
    pub lane: u32,
    /// One sentence: the lane's name, what happened, and the decision the event made or finished.
    pub text: String,
}

/// One lane (bucket) as drawn: its sorted runs, its writer and its compaction.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LaneView {
    /// Display name (`bucket 0`, `dt=… / bucket 1`).
    pub name: String,
    /// Sorted runs, newest first, when a merge-tree planner runs; otherwise (append tables,
    /// write-only primary-key tables) each file is its own run, oldest first.
    pub runs: Vec<RunView>,
    /// Number of sorted runs, the figure the compaction and stop triggers compare against (see
    /// [`Lane::runs`](crate::simulator::state::Lane::runs)).
    pub sorted_runs: u32,
    /// Effective `num-sorted-run.stop-trigger`; `None` unless the table is a compacting primary-key
    /// table.
    pub stop_trigger: Option<u32>,
    /// `num-sorted-run.compaction-trigger`; `None` unless the table is a compacting primary-key
    /// table.
    pub compaction_trigger: Option<u32>,
    /// Why the writer is blocked now; `None` while it writes.
    pub stalled: Option<Block>,
    /// Total time the writer has been blocked so far, milliseconds.
    pub stall_ms: i64,
    /// The compaction running for this lane (for an unaware-bucket table, the coordinator's task).
    pub task: Option<TaskView>,
    /// The planner's last word on this lane: the running/last pick, or why it picked nothing.
    pub status: String,
    /// Short name of the rule behind `status` ([`Reason::rule`](crate::plan::Reason::rule)), or
    /// `not-compactable` / `none`; the page colours by it.
    pub status_rule: String,
    /// Total size of the lane's live files, bytes.
    pub bytes: u64,
    /// Bytes still ahead of a compaction (see
    /// [`Lane::pending`](crate::simulator::state::Lane::pending)).
    pub pending_bytes: u64,
    /// Highest level of the LSM tree (`num-levels` − 1); `None` for append tables.
    pub max_level: Option<u32>,
}

/// One sorted run as drawn.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunView {
    /// Level of the run; every level-0 file is a run of its own.
    pub level: u32,
    /// Total size of the run's files, bytes.
    pub bytes: u64,
    /// The run's files (in key order within a level above 0).
    pub files: Vec<FileView>,
}

/// One data file as drawn.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FileView {
    /// File name, as the simulation made it (`data-<lane>-<n>`) or as the replayed table has it.
    pub name: String,
    /// File size, bytes.
    pub bytes: u64,
    /// Row count, delete markers included.
    pub rows: u64,
    /// Seconds since the file was written (its `creation_time_ms`), at this position.
    pub age_s: f64,
    /// Part of the running task, and how.
    pub action: Option<FileAction>,
    /// Append tables: still a candidate of the planner's queue.
    pub queued: Option<bool>,
    /// Written by compaction (file source `COMPACT`) rather than by a flush.
    pub compacted: bool,
}

/// A running compaction task as drawn.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TaskView {
    /// Id of the decision that started it (an index into the decision log).
    pub decision: u32,
    /// The decision in one sentence ([`DecisionRecord::text`]).
    pub text: String,
    /// Short name of the rule that picked it ([`Reason::rule`](crate::plan::Reason::rule)).
    pub rule: String,
    /// Output level; `None` for append tasks.
    pub output_level: Option<u32>,
    /// Files moved up without a merge (see [`DecisionRecord::upgrades`]).
    pub upgrades: u32,
    /// Rewrite actions (see [`DecisionRecord::rewrites`]).
    pub rewrites: u32,
    /// Bytes the task reads.
    pub bytes_in: u64,
    /// Bytes the task writes.
    pub bytes_out: u64,
    /// Whole duration on the virtual clock, milliseconds.
    pub duration_ms: i64,
    /// Time left at this position, milliseconds (never negative).
    pub remaining_ms: i64,
}

/// Whole-table figures at one position; byte counts are exact sums of simulated file sizes.
#[derive(Clone, Debug, serde::Serialize)]
pub struct MetricsView {
    /// Write amplification: (flushed + compaction-written bytes) / flushed bytes.
    pub write_amp: f32,
    /// Space amplification: `total_bytes` / `live_bytes`.
    pub space_amp: f32,
    /// Sorted runs of the busiest lane (a read-amplification proxy).
    pub sorted_runs: u16,
    /// Bytes still ahead of a compaction, over all lanes.
    pub pending_bytes: f64,
    /// Size of all live files, bytes.
    pub total_bytes: u64,
    /// Logical data size, bytes: for primary keys the distinct keys written minus deletes (times
    /// the row size); for append tables every row.
    pub live_bytes: f64,
    /// Bytes the writers flushed (plus files replayed snapshots appended).
    pub flushed_bytes: u64,
    /// Bytes compaction wrote (counted when a task is picked).
    pub compaction_written_bytes: u64,
    /// Bytes compaction read (counted when a task is picked).
    pub compaction_read_bytes: u64,
    /// Level-0 files flushed.
    pub flushes: u64,
    /// Commits so far.
    pub commits: u64,
    /// Compaction tasks finished.
    pub compactions: u64,
    /// Upgrade actions picked.
    pub upgrades: u64,
    /// Rewrite actions picked.
    pub rewrites: u64,
    /// Write stalls over all lanes.
    pub stalls: u64,
    /// Time writers spent blocked, summed over lanes, milliseconds.
    pub stall_ms: i64,
    /// Data written by the writers per second of virtual time.
    pub ingest_mb_per_s: f64,
}

/// A decision as the log lists it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DecisionView {
    /// Decision id (its index in the decision log).
    pub id: u32,
    /// Index of the event that made it.
    pub event: u64,
    /// Position to jump to: just after the event that made the decision.
    pub position: u64,
    /// Virtual time of the pick, epoch milliseconds.
    pub t_ms: i64,
    /// Lane it compacts.
    pub lane: u32,
    /// Short name of the rule ([`Reason::rule`](crate::plan::Reason::rule)).
    pub rule: String,
    /// The decision in one sentence ([`DecisionRecord::text`]).
    pub text: String,
    /// Replay advice: what the planner would pick at a replayed snapshot; never run.
    pub advice: bool,
    /// Task duration on the virtual clock, milliseconds; 0 for advice.
    pub duration_ms: i64,
}

impl DecisionView {
    /// The log entry for a recorded decision.
    pub fn of(d: &DecisionRecord) -> Self {
        DecisionView {
            id: d.id,
            event: d.event,
            position: d.event + 1,
            t_ms: d.t_ms,
            lane: d.lane,
            rule: d.reason.rule().to_string(),
            text: d.text(),
            advice: d.advice,
            duration_ms: d.duration_ms,
        }
    }
}

impl Simulation {
    /// The page's picture after `position` events.
    pub fn view(&mut self, position: u64) -> Result<View> {
        let position = position.min(self.len());
        let sample: Sample = self.sample_at(position);
        let event = position
            .checked_sub(1)
            .and_then(|i| self.events.get(i as usize).copied())
            .map(|e| EventView {
                kind: e.kind,
                lane: e.lane,
                text: event_text(
                    e.kind,
                    &self.env.lanes[e.lane as usize % self.env.lanes.len()],
                    e.decision.and_then(|d| self.decisions.get(d as usize)),
                ),
            });
        let lanes_names = self.env.lanes.clone();
        let not_compactable = self.env.not_compactable.clone();
        let table = self.env.config.table;
        let start = self.env.clock_start_ms();
        let utc = self.env.config.workload.utc_offset_hours as i64;
        let trigger = (table == SimTable::PrimaryKey && not_compactable.is_none())
            .then_some(self.env.options.num_sorted_run_compaction_trigger as u32);
        let events = self.len();
        let finished = self.finished() && position == events;
        // Borrow dance: the state borrows self mutably; copy what is needed first.
        let state = self.state_at(position)?.clone();
        let env = &self.env;
        let now = state.now_ms;
        let mut lanes = Vec::new();
        for (li, name) in lanes_names.iter().enumerate() {
            let lane = &state.lanes[li];
            let task = if table == SimTable::AppendUnaware {
                state.coord_task.as_ref()
            } else {
                lane.task.as_ref()
            };
            let queued = state.queued(li);
            let runs = state
                .lane_runs(li)
                .into_iter()
                .map(|(level, files)| RunView {
                    level,
                    bytes: files.iter().map(|f| f.meta.file_size).sum(),
                    files: files
                        .iter()
                        .map(|f| FileView {
                            name: f.meta.file_name.clone(),
                            bytes: f.meta.file_size,
                            rows: f.meta.row_count,
                            age_s: (now - f.meta.creation_time_ms).max(0) as f64 / 1000.0,
                            action: task.and_then(|t| {
                                t.actions
                                    .iter()
                                    .find(|(n, _)| *n == f.meta.file_name)
                                    .map(|(_, a)| *a)
                            }),
                            queued: queued.as_ref().map(|q| q.contains(&f.meta.file_name)),
                            compacted: f.meta.file_source == crate::meta::FileSource::Compact,
                        })
                        .collect(),
                })
                .collect();
            let task_view = task.map(|t| {
                let d = self.decisions.get(t.decision as usize);
                TaskView {
                    decision: t.decision,
                    text: d.map(DecisionRecord::text).unwrap_or_default(),
                    rule: d.map(|d| d.reason.rule().to_string()).unwrap_or_default(),
                    output_level: t.output_level.map(|l| l.get()),
                    upgrades: d.map_or(0, |d| d.upgrades),
                    rewrites: d.map_or(0, |d| d.rewrites),
                    bytes_in: d.map_or(0, |d| d.bytes_in),
                    bytes_out: d.map_or(0, |d| d.bytes_out),
                    duration_ms: t.end_ms - t.start_ms,
                    remaining_ms: (t.end_ms - now).max(0),
                }
            });
            let (status, status_rule) = if let Some(why) = &not_compactable {
                (
                    format!("not compacted: {why}"),
                    "not-compactable".to_string(),
                )
            } else if let Some(t) = &task_view {
                (format!("compacting: {}", t.text), t.rule.clone())
            } else if let Some(r) = &lane.last_reason {
                // The planner's last answer: a pick whose task has finished, or why it idles.
                let text = if r.is_idle() {
                    r.to_string()
                } else {
                    let d = lane
                        .last_decision
                        .and_then(|d| self.decisions.get(d as usize));
                    match d {
                        // Replay advice was never run: say so, not "done".
                        Some(d) if d.advice => d.text(),
                        Some(d) => format!("last pick (done): {}", d.text()),
                        None => format!("last pick (done): {r}"),
                    }
                };
                (text, r.rule().to_string())
            } else {
                ("no decision yet".to_string(), "none".to_string())
            };
            lanes.push(LaneView {
                name: name.clone(),
                runs,
                sorted_runs: lane.runs,
                stop_trigger: state.stop_trigger(env),
                compaction_trigger: trigger,
                stalled: state.unblock_reason(li),
                stall_ms: lane.stall_ms,
                task: task_view,
                status,
                status_rule,
                bytes: lane.bytes,
                pending_bytes: lane.pending,
                max_level: (table == SimTable::PrimaryKey)
                    .then(|| env.options.num_levels.saturating_sub(1)),
            });
        }
        let t = &state.totals;
        let elapsed_s = (now - start).max(0) as f64 / 1000.0;
        let local = now.div_euclid(1000) + utc * 3600;
        Ok(View {
            position,
            events,
            finished,
            t_ms: now,
            elapsed_s,
            local_hour: local.div_euclid(3600).rem_euclid(24) as u8,
            table,
            event,
            lanes,
            metrics: MetricsView {
                write_amp: sample.write_amp,
                space_amp: sample.space_amp,
                sorted_runs: sample.runs,
                pending_bytes: sample.pending_bytes,
                total_bytes: state.lanes.iter().map(|l| l.bytes).sum(),
                live_bytes: state.live_bytes(env),
                flushed_bytes: t.flushed_bytes,
                compaction_written_bytes: t.compaction_written_bytes,
                compaction_read_bytes: t.compaction_read_bytes,
                flushes: t.flushes,
                commits: t.commits,
                compactions: t.compactions,
                upgrades: t.upgrades,
                rewrites: t.rewrites,
                stalls: t.stalls,
                stall_ms: t.stall_ms,
                ingest_mb_per_s: if elapsed_s > 0.0 {
                    t.flushed_bytes as f64 / 1048576.0 / elapsed_s
                } else {
                    0.0
                },
            },
            not_compactable,
        })
    }

    /// Up to `limit` decisions made before `position`, newest first.
    pub fn decisions_before(&self, position: u64, limit: usize) -> Vec<DecisionView> {
        let end = self.decisions.partition_point(|d| d.event < position);
        self.decisions[..end]
            .iter()
            .rev()
            .take(limit)
            .map(DecisionView::of)
            .collect()
    }

    /// Chart data: at most `points` samples.
    pub fn chart(&self, points: usize) -> Series {
        self.series.downsample(points)
    }
}

fn event_text(kind: EventKind, lane: &str, d: Option<&DecisionRecord>) -> String {
    let what = match kind {
        EventKind::Flush => "flush: a write buffer became a level-0 file",
        EventKind::Stall => "write stall: the writer waits for the running compaction",
        EventKind::CompactionDone => "compaction finished",
        EventKind::Commit => "commit",
        EventKind::CommitWait => "commit went on after waiting for compaction",
        EventKind::Snapshot => "snapshot replayed",
    };
    match d {
        Some(d) if kind == EventKind::CompactionDone => format!("{lane}: {what}: {}", d.text()),
        Some(d) => format!("{lane}: {what}; picked: {}", d.text()),
        None => format!("{lane}: {what}"),
    }
}
