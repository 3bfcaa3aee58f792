//! The simulated table: writers, buckets, planners and the event loop on a virtual clock.
//!
//! Everything that changes during a run lives in [`SimState`], which is `Clone`: the timeline
//! keeps clones as checkpoints and scrubbing back restores one and steps forward. The immutable
//! part (config, parsed options) lives in [`SimEnv`]. Decisions are never made here: every
//! pick comes from the planner (`MergeTreeCompactManager`, `BucketedAppendCompactManager`,
//! `AppendCompactCoordinator`); this module only feeds it flushes and applies the results
//! after the time the cost model says the work takes.
//!
//! * `writes` — writers: flushes, write stalls, commits, and replayed snapshots;
//! * `compaction` — the planner's picks run as tasks, and their results applied.

mod compaction;
mod writes;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::sync::Arc;

use super::config::{SimConfig, SimTable};
use super::keys::{self, Segment};
use super::record::{DecisionRecord, EventKind, EventRecord, PlannerCall};
use super::rng::Rng;
use crate::error::{Error, Result};
use crate::meta::{CompactionFile, Level};
use crate::options::CoreOptions;
use crate::plan::{
    route, AppendCompactCoordinator, BucketedAppendCompactManager, CompactionMode,
    MergeTreeCompactManager, PlanContext, Reason, Route,
};

const MIB: f64 = 1024.0 * 1024.0;

/// The parts of a simulation that never change during a run.
pub struct SimEnv {
    /// The configuration the run was built from (validated).
    pub config: SimConfig,
    /// The Paimon options the planners use, as [`SimConfig::core_options`] parses them (the
    /// replayed table's options filled in, `bucket` derived).
    pub options: CoreOptions,
    /// Why the planner never runs for this table (write-only, ...), if so.
    pub not_compactable: Option<String>,
    /// Display names of the lanes (`bucket 0`, `dt=… / bucket 1` when replaying, one lane for an
    /// unaware-bucket table); a lane index is a position here.
    pub lanes: Vec<String>,
}

impl SimEnv {
    /// Where the virtual clock starts: the workload's start, or, when replaying, the time of
    /// the first replayed snapshot. Elapsed times (the view's `elapsed_s` and the rates
    /// derived from it) count from here.
    pub fn clock_start_ms(&self) -> i64 {
        match &self.config.replay {
            Some(r) => r
                .snapshots
                .iter()
                .map(|x| x.time_ms)
                .min()
                .unwrap_or(self.config.workload.start_ms),
            None => self.config.workload.start_ms,
        }
    }

    /// Validates `config`, parses its options, and works out whether the planner runs at all and
    /// which lanes exist.
    pub fn new(config: SimConfig) -> Result<Self> {
        config.validate()?;
        let options = config.core_options()?;
        let not_compactable = match route(&options, false) {
            Route::Compact(_) => None,
            Route::NotCompactable(reason) => Some(reason.to_string()),
        };
        let lanes = match (&config.replay, config.table) {
            (Some(r), _) => r
                .lanes()
                .into_iter()
                .map(|(p, b)| {
                    if p.is_empty() {
                        format!("bucket {b}")
                    } else {
                        format!("{p} / bucket {b}")
                    }
                })
                .collect(),
            (None, SimTable::AppendUnaware) => vec!["bucket -1 (unaware)".to_string()],
            (None, _) => (0..config.buckets).map(|b| format!("bucket {b}")).collect(),
        };
        Ok(SimEnv {
            config,
            options,
            not_compactable,
            lanes,
        })
    }

    fn ctx(&self, now_ms: i64) -> PlanContext {
        let local = now_ms.div_euclid(1000) + self.config.workload.utc_offset_hours as i64 * 3600;
        PlanContext {
            now_ms,
            local_hour: (local.div_euclid(3600).rem_euclid(24)) as u8,
        }
    }

    fn flush_interval_ms(&self) -> f64 {
        self.config.workload.flush_mb / self.config.workload.write_mb_per_s * 1000.0
    }

    fn writers(&self) -> usize {
        match self.config.table {
            SimTable::AppendUnaware if self.config.replay.is_none() => self.config.buckets as usize,
            _ => self.lanes.len(),
        }
    }
}

/// A live data file with what the simulation knows beyond the planner's metadata.
#[derive(Clone, Debug)]
pub struct SimFile {
    /// The metadata the planner sees.
    pub meta: Arc<CompactionFile>,
    /// Where the file's keys are and how dense ([`keys`]): what overlaps and merge results are
    /// computed from. Append files carry a placeholder (their keys are not modelled).
    pub segs: Arc<[Segment]>,
    /// Fraction of the file's rows that are delete markers.
    pub delete_fraction: f64,
}

/// The compaction machinery of one lane.
#[derive(Clone)]
enum Planner {
    MergeTree(Box<MergeTreeCompactManager>),
    Append(BucketedAppendCompactManager),
    /// No per-bucket compaction: write-only, or files left to the unaware-bucket coordinator.
    None,
}

/// Compaction work in flight.
#[derive(Clone, Debug)]
pub struct Task {
    /// Id of the [`DecisionRecord`] that started the task.
    pub decision: u32,
    /// Virtual start time, epoch milliseconds (for a coordinator task, when it left the queue).
    pub start_ms: i64,
    /// When the task finishes and its result is applied: `start_ms` plus the cost model's duration.
    pub end_ms: i64,
    /// Files the task replaces (its inputs), removed from the lane when it finishes.
    pub before: Vec<Arc<CompactionFile>>,
    /// Files the task produces, added to the lane when it finishes.
    pub after: Vec<SimFile>,
    /// Input files and what happens to them (for highlighting).
    pub actions: Vec<(String, FileAction)>,
    /// Output level of a merge-tree task; `None` for append tasks.
    pub output_level: Option<Level>,
}

/// What a running task does with one of its input files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileAction {
    /// Moved to the output level as it is: only its metadata changes.
    Upgrade,
    /// Read and merged into new files (concatenated, for append tables).
    Rewrite,
    /// Upgraded, but read for changelog / deletion-vector lookups.
    Lookup,
}

/// Why a writer is blocked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Block {
    /// `num-sorted-run.stop-trigger` exceeded: the flush waits for the running compaction.
    WriteStall,
    /// The commit waits for compaction (lookup tables, `commit.force-compact`, too many runs,
    /// or a forced full compaction that must wait for the previous task).
    CommitWait,
}

/// One bucket (for an unaware-bucket table, the whole table): its files, its planner, the task in
/// flight and its writer's state.
#[derive(Clone)]
pub struct Lane {
    planner: Planner,
    /// Every live file, by name (also the ones the planner no longer considers).
    pub files: BTreeMap<String, SimFile>,
    /// The lane's compaction task in flight; at most one, as in Paimon. Unaware-bucket tables use
    /// [`SimState::coord_task`] instead.
    pub task: Option<Task>,
    /// Why the lane's writer is blocked, and since when (epoch milliseconds); `None` while it
    /// writes.
    pub blocked: Option<(Block, i64)>,
    /// The last thing the planner said about this lane.
    pub last_reason: Option<Reason>,
    /// Id of the lane's most recent decision (run, or replay advice).
    pub last_decision: Option<u32>,
    /// Deferred commit work (the writer was busy when the commit came).
    commit_pending: bool,
    full_pending: bool,
    commit_polls: u32,
    commits: u64,
    flush_gen: u64,
    last_flush_ms: i64,
    next_seq: i64,
    next_key: i64,
    /// Union of every key ever written (the logical table, before deletes).
    logical: Arc<[Segment]>,
    /// Total time the writer has been blocked, milliseconds (write stalls and commit waits).
    pub stall_ms: i64,
    /// Write stalls: flushes that had to wait for compaction (commit waits are not counted).
    pub stalls: u64,
    // Cached per-lane figures, refreshed when the lane changes.
    /// Sorted runs: for primary keys, level-0 files plus non-empty upper levels; for append tables,
    /// the number of files.
    pub runs: u32,
    /// Total size of the lane's live files, bytes.
    pub bytes: u64,
    /// Bytes still ahead of a compaction: for primary keys everything outside the oldest sorted run
    /// (everything, if the table is write-only); for append tables the files smaller than
    /// [`CoreOptions::compaction_file_size`].
    pub pending: u64,
}

/// Event queue entry; ties at one instant run results first, then commits, then flushes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Ev {
    t: i64,
    prio: u8,
    seq: u64,
    what: What,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum What {
    TaskDone(u32),
    CoordinatorDone,
    Replay(u32),
    Commit,
    Flush(u32, u64),
}

impl What {
    fn prio(self) -> u8 {
        match self {
            What::TaskDone(_) | What::CoordinatorDone => 0,
            What::Replay(_) => 1,
            What::Commit => 2,
            What::Flush(..) => 3,
        }
    }
}

/// Running totals (bytes are exact sums of the simulated file sizes).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Totals {
    /// Level-0 files the writers flushed (replayed snapshots not included).
    pub flushes: u64,
    /// Commit events (one per commit, not per bucket).
    pub commits: u64,
    /// Bytes the writers flushed, plus files replayed snapshots added with source `APPEND`.
    pub flushed_bytes: u64,
    /// Bytes compaction wrote, counted when a task is picked; plus compacted files replayed
    /// snapshots added.
    pub compaction_written_bytes: u64,
    /// Bytes compaction read (rewrite inputs, lookup reads), counted when a task is picked.
    pub compaction_read_bytes: u64,
    /// Compaction tasks finished and applied.
    pub compactions: u64,
    /// Upgrade actions picked (see [`DecisionRecord::upgrades`]).
    pub upgrades: u64,
    /// Rewrite actions picked; an append task counts as one.
    pub rewrites: u64,
    /// Time writers spent blocked, summed over lanes, milliseconds.
    pub stall_ms: i64,
    /// Write stalls over all lanes.
    pub stalls: u64,
}

/// Everything that changes during a run.
#[derive(Clone)]
pub struct SimState {
    /// The virtual clock, epoch milliseconds: the time of the last processed event; it never goes
    /// back.
    pub now_ms: i64,
    /// Events processed so far: this state's position on the timeline.
    pub events: u64,
    rng: Rng,
    queue: BinaryHeap<Reverse<Ev>>,
    ev_seq: u64,
    /// Per-lane state, indexed like [`SimEnv::lanes`].
    pub lanes: Vec<Lane>,
    coordinator: Option<AppendCompactCoordinator>,
    /// Files written since the coordinator's last scan.
    coord_new: Vec<(u32, SimFile)>,
    coord_queue: VecDeque<Task>,
    /// The unaware-bucket coordinator's task in flight; the coordinator runs one at a time and
    /// queues the rest.
    pub coord_task: Option<Task>,
    file_counter: u64,
    decisions_made: u32,
    /// Running totals over the whole run.
    pub totals: Totals,
    /// Set once the event queue is empty: every flush written and every compaction done.
    pub finished: bool,
}

/// What one step produced, for the timeline.
pub struct StepOut {
    /// The event processed; its `decision` is the last decision it made (advice counts only for
    /// snapshot events), else the one it finished.
    pub event: EventRecord,
    /// Decisions made during the event, in id order.
    pub decisions: Vec<DecisionRecord>,
    /// Planner calls made during the event (recorded only when `record_trace` is on).
    pub calls: Vec<PlannerCall>,
}
impl SimState {
    /// The state before the first event: empty lanes with fresh planners, the replayed snapshots
    /// and the writers' first flush and commit scheduled (writers start after the last snapshot).
    /// Fails when the options are rejected by a planner.
    pub fn new(env: &SimEnv) -> Result<Self> {
        let cfg = &env.config;
        let mut lanes = Vec::new();
        for _ in 0..env.lanes.len() {
            let planner = new_planner(env, Vec::new())?;
            lanes.push(Lane {
                planner,
                files: BTreeMap::new(),
                task: None,
                blocked: None,
                last_reason: None,
                last_decision: None,
                commit_pending: false,
                full_pending: false,
                commit_polls: 0,
                commits: 0,
                flush_gen: 0,
                last_flush_ms: cfg.workload.start_ms,
                next_seq: 0,
                next_key: 0,
                logical: Arc::from(Vec::new()),
                stall_ms: 0,
                stalls: 0,
                runs: 0,
                bytes: 0,
                pending: 0,
            });
        }
        let coordinator = if cfg.table == SimTable::AppendUnaware && env.not_compactable.is_none() {
            Some(AppendCompactCoordinator::new(&env.options)?)
        } else {
            None
        };
        let mut s = SimState {
            now_ms: cfg.workload.start_ms,
            events: 0,
            rng: Rng::new(cfg.seed),
            queue: BinaryHeap::new(),
            ev_seq: 0,
            lanes,
            coordinator,
            coord_new: Vec::new(),
            coord_queue: VecDeque::new(),
            coord_task: None,
            file_counter: 0,
            decisions_made: 0,
            totals: Totals::default(),
            finished: false,
        };
        if let Some(r) = &cfg.replay {
            for (i, snap) in r.snapshots.iter().enumerate() {
                s.push(snap.time_ms, What::Replay(i as u32));
            }
            let last = r
                .snapshots
                .iter()
                .map(|x| x.time_ms)
                .max()
                .unwrap_or(cfg.workload.start_ms);
            s.now_ms = env.clock_start_ms();
            s.schedule_writers(env, last + 1000);
        } else {
            s.schedule_writers(env, cfg.workload.start_ms);
        }
        Ok(s)
    }

    fn schedule_writers(&mut self, env: &SimEnv, from_ms: i64) {
        let interval = env.flush_interval_ms();
        let writers = env.writers();
        for w in 0..writers {
            let lane = w.min(self.lanes.len() - 1);
            self.lanes[lane].last_flush_ms = from_ms;
            let first = from_ms + (interval * (w as f64 + 1.0) / writers as f64).round() as i64;
            self.push(first, What::Flush(w as u32, 0));
        }
        if env.config.workload.commit_interval_s > 0.0 {
            self.push(
                from_ms + (env.config.workload.commit_interval_s * 1000.0) as i64,
                What::Commit,
            );
        }
    }

    fn push(&mut self, t: i64, what: What) {
        self.ev_seq += 1;
        self.queue.push(Reverse(Ev {
            t,
            prio: what.prio(),
            seq: self.ev_seq,
            what,
        }));
    }

    /// Processes the next event; `None` when the run is over.
    pub fn step(&mut self, env: &SimEnv) -> Result<Option<StepOut>> {
        loop {
            let Some(Reverse(ev)) = self.queue.pop() else {
                self.finished = true;
                return Ok(None);
            };
            let limit_reached = self.totals.flushes >= env.config.flushes;
            if limit_reached && matches!(ev.what, What::Flush(..) | What::Commit) {
                continue;
            }
            if let What::Flush(w, gen) = ev.what {
                let lane = self.writer_lane(env, w);
                if env.config.table != SimTable::AppendUnaware && gen != self.lanes[lane].flush_gen
                {
                    continue; // superseded by a commit's flush
                }
            }
            self.now_ms = self.now_ms.max(ev.t);
            let mut out = StepOut {
                event: EventRecord {
                    t_ms: self.now_ms,
                    kind: EventKind::Flush,
                    lane: 0,
                    decision: None,
                },
                decisions: Vec::new(),
                calls: Vec::new(),
            };
            match ev.what {
                What::Flush(w, _) => self.on_flush(env, w, &mut out)?,
                What::TaskDone(l) => self.on_task_done(env, l as usize, &mut out)?,
                What::CoordinatorDone => self.on_coordinator_done(env, &mut out)?,
                What::Commit => self.on_commit(env, &mut out)?,
                What::Replay(i) => self.on_replay(env, i as usize, &mut out)?,
            }
            self.events += 1;
            if let Some(d) = out
                .decisions
                .iter()
                .rev()
                .find(|d| !d.advice || out.event.kind == EventKind::Snapshot)
            {
                out.event.decision = Some(d.id);
            }
            return Ok(Some(out));
        }
    }

    /// Logical (live) bytes: for primary keys the distinct keys ever written minus deletes;
    /// append tables keep every row.
    pub fn live_bytes(&self, env: &SimEnv) -> f64 {
        if env.config.table == SimTable::PrimaryKey {
            let d = env.config.workload.delete_ratio;
            let rows: f64 = self.lanes.iter().map(|l| keys::rows(&l.logical)).sum();
            rows * (1.0 - d) * env.config.workload.row_bytes as f64
        } else {
            self.lanes.iter().map(|l| l.bytes as f64).sum()
        }
    }

    /// Stop triggers per lane (primary keys only).
    pub fn stop_trigger(&self, env: &SimEnv) -> Option<u32> {
        match env.config.table {
            SimTable::PrimaryKey if env.not_compactable.is_none() => {
                Some(env.options.num_sorted_run_stop_trigger as u32)
            }
            _ => None,
        }
    }

    /// The sorted runs of a primary-key lane, newest first: `(level, files)`.
    pub fn lane_runs(&self, li: usize) -> Vec<(u32, Vec<SimFile>)> {
        let lane = &self.lanes[li];
        match &lane.planner {
            Planner::MergeTree(m) => m
                .levels()
                .level_sorted_runs()
                .iter()
                .map(|r| {
                    (
                        r.level.get(),
                        r.files
                            .iter()
                            .map(|f| {
                                lane.files
                                    .get(&f.file_name)
                                    .cloned()
                                    .unwrap_or_else(|| sim_of(f))
                            })
                            .collect(),
                    )
                })
                .collect(),
            _ => {
                // Append tables (and write-only ones) are queues: oldest first, each file a "run".
                let mut files: Vec<SimFile> = lane.files.values().cloned().collect();
                files.sort_by(|a, b| {
                    (a.meta.min_sequence_number, &a.meta.file_name)
                        .cmp(&(b.meta.min_sequence_number, &b.meta.file_name))
                });
                files
                    .into_iter()
                    .map(|f| (f.meta.level.get(), vec![f]))
                    .collect()
            }
        }
    }

    /// Files the lane's planner still queues (append tables), for the view.
    pub fn queued(&self, li: usize) -> Option<Vec<String>> {
        match &self.lanes[li].planner {
            Planner::Append(a) => Some(a.queue().map(|f| f.file_name.clone()).collect()),
            _ => None,
        }
    }

    /// Why lane `li`'s writer is blocked now (what must happen to unblock it); `None` while it
    /// writes.
    pub fn unblock_reason(&self, li: usize) -> Option<Block> {
        self.lanes[li].blocked.map(|b| b.0)
    }
}

fn new_planner(env: &SimEnv, files: Vec<Arc<CompactionFile>>) -> Result<Planner> {
    if env.not_compactable.is_some() {
        return Ok(Planner::None);
    }
    Ok(match route(&env.options, false).into_result()? {
        CompactionMode::MergeTree => {
            Planner::MergeTree(Box::new(MergeTreeCompactManager::new(&env.options, files)?))
        }
        CompactionMode::BucketedAppend => {
            Planner::Append(BucketedAppendCompactManager::new(&env.options, files))
        }
        CompactionMode::UnawareBucketCoordinator => Planner::None,
    })
}

/// A file from outside the simulation (a replayed table): its keys mapped onto `i64`, its rows
/// spread evenly over its key range.
fn sim_of(f: &Arc<CompactionFile>) -> SimFile {
    let rows = f.row_count.max(1) as f64;
    let df = f.delete_row_count.map_or(0.0, |d| d as f64 / rows);
    SimFile {
        meta: f.clone(),
        segs: segs_of(f),
        delete_fraction: df.clamp(0.0, 1.0),
    }
}

fn segs_of(f: &CompactionFile) -> Arc<[Segment]> {
    let lo = keys::key_to_i64(&f.min_key);
    let hi = keys::key_to_i64(&f.max_key).max(lo);
    let len = (hi as f64 - lo as f64) + 1.0;
    Arc::from(vec![Segment {
        lo,
        hi,
        density: (f.row_count.max(1) as f64 / len).clamp(1e-12, 1.0),
    }])
}

/// Why a run cannot even start.
pub fn check_replay_kind(config: &SimConfig) -> Result<()> {
    if let Some(r) = &config.replay {
        if let Some(kind) = r.table_kind {
            if kind != config.table.kind() {
                return Err(Error::invalid_option(
                    "table",
                    &format!("{:?}", config.table),
                    format!("the replayed table is a {kind:?} table"),
                ));
            }
        }
    }
    Ok(())
}
