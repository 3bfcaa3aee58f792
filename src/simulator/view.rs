//! What the page draws at one position of the timeline, as plain serialisable data. The page
//! only renders this; every number and sentence comes from the simulation and the planner.

use super::config::SimTable;
use super::record::{DecisionRecord, EventKind};
use super::sim::{Sample, Series, Simulation};
use super::state::{Block, FileAction};
use crate::error::Result;

#[derive(Clone, Debug, serde::Serialize)]
pub struct View {
    pub position: u64,
    pub events: u64,
    pub finished: bool,
    pub t_ms: i64,
    /// Seconds since the start of the run.
    pub elapsed_s: f64,
    pub local_hour: u8,
    pub table: SimTable,
    pub event: Option<EventView>,
    pub lanes: Vec<LaneView>,
    pub metrics: MetricsView,
    /// Why this table is never compacted here (write-only...).
    pub not_compactable: Option<String>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct EventView {
    pub kind: EventKind,
    pub lane: u32,
    pub text: String,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct LaneView {
    pub name: String,
    pub runs: Vec<RunView>,
    pub sorted_runs: u32,
    pub stop_trigger: Option<u32>,
    pub compaction_trigger: Option<u32>,
    pub stalled: Option<Block>,
    pub stall_ms: i64,
    pub task: Option<TaskView>,
    /// The planner's last word on this lane: the running/last pick, or why it picked nothing.
    pub status: String,
    pub status_rule: String,
    pub bytes: u64,
    pub pending_bytes: u64,
    pub max_level: Option<u32>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct RunView {
    pub level: u32,
    pub bytes: u64,
    pub files: Vec<FileView>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct FileView {
    pub name: String,
    pub bytes: u64,
    pub rows: u64,
    pub age_s: f64,
    /// Part of the running task, and how.
    pub action: Option<FileAction>,
    /// Append tables: still a candidate of the planner's queue.
    pub queued: Option<bool>,
    pub compacted: bool,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct TaskView {
    pub decision: u32,
    pub text: String,
    pub rule: String,
    pub output_level: Option<u32>,
    pub upgrades: u32,
    pub rewrites: u32,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub duration_ms: i64,
    pub remaining_ms: i64,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct MetricsView {
    pub write_amp: f32,
    pub space_amp: f32,
    pub sorted_runs: u16,
    pub pending_bytes: f64,
    pub total_bytes: u64,
    pub live_bytes: f64,
    pub flushed_bytes: u64,
    pub compaction_written_bytes: u64,
    pub compaction_read_bytes: u64,
    pub flushes: u64,
    pub commits: u64,
    pub compactions: u64,
    pub upgrades: u64,
    pub rewrites: u64,
    pub stalls: u64,
    pub stall_ms: i64,
    /// Data written by the writers per second of virtual time.
    pub ingest_mb_per_s: f64,
}

/// A decision as the log lists it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DecisionView {
    pub id: u32,
    pub event: u64,
    /// Position to jump to: just after the event that made the decision.
    pub position: u64,
    pub t_ms: i64,
    pub lane: u32,
    pub rule: String,
    pub text: String,
    pub advice: bool,
    pub duration_ms: i64,
}

impl DecisionView {
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
        let start = self.env.config.workload.start_ms;
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
