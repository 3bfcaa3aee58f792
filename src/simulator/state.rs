//! The simulated table: writers, buckets, planners and the event loop on a virtual clock.
//!
//! Everything that changes during a run lives in [`SimState`], which is `Clone`: the timeline
//! keeps clones as checkpoints and scrubbing back restores one and steps forward. The immutable
//! part (config, parsed options) lives in [`SimEnv`]. Decisions are never made here: every
//! pick comes from the planner (`MergeTreeCompactManager`, `BucketedAppendCompactManager`,
//! `AppendCompactCoordinator`); this module only feeds it flushes and applies the results
//! after the time the cost model says the work takes.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::sync::Arc;

use super::config::{SimConfig, SimTable};
use super::keys::{self, KeyDistribution, Segment};
use super::record::{DecisionRecord, EventKind, EventRecord, PlannerCall, TaskKind};
use super::rng::Rng;
use crate::error::{Error, Result};
use crate::meta::{DataFileMeta, FileSource, Key, Level, SequenceNumber};
use crate::options::{ChangelogProducer, CoreOptions};
use crate::plan::{
    route, upgrade_strategy_for, AppendCompactCoordinator, BucketedAppendCompactManager,
    CompactionMode, CoordinatorFile, MergeTreeCompactManager, MergeTreeDecision, PlanContext,
    Reason, Route, TaskAction, UpgradeStrategy,
};

const MIB: f64 = 1024.0 * 1024.0;

/// The parts of a simulation that never change during a run.
pub struct SimEnv {
    pub config: SimConfig,
    pub options: CoreOptions,
    /// Why the planner never runs for this table (write-only, ...), if so.
    pub not_compactable: Option<String>,
    pub lanes: Vec<String>,
}

impl SimEnv {
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
    pub meta: Arc<DataFileMeta>,
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
    pub decision: u32,
    pub start_ms: i64,
    pub end_ms: i64,
    pub before: Vec<Arc<DataFileMeta>>,
    pub after: Vec<SimFile>,
    /// Input files and what happens to them (for highlighting).
    pub actions: Vec<(String, FileAction)>,
    pub output_level: Option<Level>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileAction {
    Upgrade,
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

#[derive(Clone)]
pub struct Lane {
    planner: Planner,
    /// Every live file, by name (also the ones the planner no longer considers).
    pub files: BTreeMap<String, SimFile>,
    pub task: Option<Task>,
    pub blocked: Option<(Block, i64)>,
    /// The last thing the planner said about this lane.
    pub last_reason: Option<Reason>,
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
    pub stall_ms: i64,
    pub stalls: u64,
    // Cached per-lane figures, refreshed when the lane changes.
    pub runs: u32,
    pub bytes: u64,
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
    pub flushes: u64,
    pub commits: u64,
    pub flushed_bytes: u64,
    pub compaction_written_bytes: u64,
    pub compaction_read_bytes: u64,
    pub compactions: u64,
    pub upgrades: u64,
    pub rewrites: u64,
    pub stall_ms: i64,
    pub stalls: u64,
}

/// Everything that changes during a run.
#[derive(Clone)]
pub struct SimState {
    pub now_ms: i64,
    pub events: u64,
    rng: Rng,
    queue: BinaryHeap<Reverse<Ev>>,
    ev_seq: u64,
    pub lanes: Vec<Lane>,
    coordinator: Option<AppendCompactCoordinator>,
    /// Files written since the coordinator's last scan.
    coord_new: Vec<(u32, SimFile)>,
    coord_queue: VecDeque<Task>,
    pub coord_task: Option<Task>,
    file_counter: u64,
    decisions_made: u32,
    pub totals: Totals,
    pub finished: bool,
}

/// What one step produced, for the timeline.
pub struct StepOut {
    pub event: EventRecord,
    pub decisions: Vec<DecisionRecord>,
    pub calls: Vec<PlannerCall>,
}

impl SimState {
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
            s.now_ms = r.snapshots.iter().map(|x| x.time_ms).min().unwrap_or(last);
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

    fn writer_lane(&self, env: &SimEnv, w: u32) -> usize {
        if env.config.table == SimTable::AppendUnaware {
            0
        } else {
            (w as usize).min(self.lanes.len() - 1)
        }
    }

    // ---- writers -------------------------------------------------------------------------

    fn on_flush(&mut self, env: &SimEnv, w: u32, out: &mut StepOut) -> Result<()> {
        let li = self.writer_lane(env, w);
        out.event.lane = li as u32;
        let now = self.now_ms;
        // A blocked writer takes no writes: try again when the running work ends.
        if let Some(end) = self.blocking_end(li) {
            if self.lanes[li].blocked.is_some() {
                out.event.kind = EventKind::Stall;
                self.push(end, What::Flush(w, self.lanes[li].flush_gen));
                return Ok(());
            }
        }
        // Write stall (spec §7.5): checked before the flushed file is added.
        if let Planner::MergeTree(m) = &self.lanes[li].planner {
            if self.lanes[li].task.is_some() && m.write_stall().wait_for_latest_compaction {
                let end = self.lanes[li].task.as_ref().map_or(now, |t| t.end_ms);
                let lane = &mut self.lanes[li];
                lane.blocked = Some((Block::WriteStall, now));
                lane.stalls += 1;
                self.totals.stalls += 1;
                out.event.kind = EventKind::Stall;
                self.push(end, What::Flush(w, self.lanes[li].flush_gen));
                return Ok(());
            }
        }
        self.unblock(li, now);
        out.event.kind = EventKind::Flush;
        let interval = env.flush_interval_ms();
        let elapsed = (now - self.lanes[li].last_flush_ms) as f64;
        let fraction = if env.config.table == SimTable::AppendUnaware {
            1.0
        } else {
            (elapsed / interval).clamp(0.0, 1.0)
        };
        let fraction = if fraction <= 0.0 { 1.0 } else { fraction };
        self.flush_file(env, li, fraction, out)?;
        self.trigger(env, li, false, out)?;
        if env.config.table == SimTable::AppendUnaware
            && env.config.workload.commit_interval_s <= 0.0
        {
            // Without commits the coordinator scans after every flush.
            self.coordinator_scan(env, out)?;
        }
        // Next buffer.
        let lane = &mut self.lanes[li];
        lane.last_flush_ms = now;
        let next = now
            + (interval * self.rng.jitter(env.config.workload.jitter))
                .round()
                .max(1.0) as i64;
        let gen = self.lanes[li].flush_gen;
        self.push(next, What::Flush(w, gen));
        Ok(())
    }

    /// When the work blocking lane `li` ends (its own task, or the coordinator's).
    fn blocking_end(&self, li: usize) -> Option<i64> {
        self.lanes[li].task.as_ref().map(|t| t.end_ms)
    }

    fn unblock(&mut self, li: usize, now: i64) {
        if let Some((_, since)) = self.lanes[li].blocked.take() {
            let d = (now - since).max(0);
            self.lanes[li].stall_ms += d;
            self.totals.stall_ms += d;
        }
    }

    /// Writes one level-0 file of `fraction` of a write buffer.
    fn flush_file(
        &mut self,
        env: &SimEnv,
        li: usize,
        fraction: f64,
        out: &mut StepOut,
    ) -> Result<()> {
        let w = &env.config.workload;
        let input_rows =
            (w.flush_mb * MIB / w.row_bytes as f64 * fraction * self.rng.jitter(w.jitter)).max(1.0);
        let row_bytes = w.row_bytes as f64;
        let (segs, delete_fraction) = if env.config.table == SimTable::PrimaryKey {
            let lane = &mut self.lanes[li];
            let space = (w.key_space / env.lanes.len().max(1) as u64).max(1) as i64;
            let n_del = input_rows * w.delete_ratio;
            let n_upd = input_rows * w.update_ratio;
            let n_ins = input_rows - n_del - n_upd;
            let mut parts: Vec<Vec<Segment>> = Vec::new();
            let existing_hi = match w.distribution {
                KeyDistribution::Sequential => lane.next_key - 1,
                _ => space - 1,
            };
            match w.distribution {
                KeyDistribution::Sequential => {
                    let n = n_ins.round() as i64;
                    if n > 0 {
                        parts.push(vec![Segment {
                            lo: lane.next_key,
                            hi: lane.next_key + n - 1,
                            density: 1.0,
                        }]);
                        lane.next_key += n;
                    }
                }
                d => parts.push(keys::sample_segments(&d, 0, space - 1, n_ins)),
            }
            let touch = match w.distribution {
                KeyDistribution::Sequential => KeyDistribution::Uniform,
                d => d,
            };
            if existing_hi >= 0 {
                parts.push(keys::sample_segments(&touch, 0, existing_hi, n_upd + n_del));
            }
            let refs: Vec<&[Segment]> = parts.iter().map(|p| p.as_slice()).collect();
            let segs = keys::union(&refs);
            let logical = keys::union(&[&lane.logical, &segs]);
            lane.logical = Arc::from(logical);
            (
                segs,
                if input_rows > 0.0 {
                    n_del / input_rows
                } else {
                    0.0
                },
            )
        } else {
            (
                vec![Segment {
                    lo: 0,
                    hi: input_rows.round().max(1.0) as i64 - 1,
                    density: 1.0,
                }],
                0.0,
            )
        };
        let rows = keys::rows(&segs).round().max(1.0);
        if segs.is_empty() {
            return Ok(());
        }
        let size = (rows * row_bytes) as u64;
        let lane = &mut self.lanes[li];
        let seq = lane.next_seq;
        lane.next_seq += input_rows.round().max(1.0) as i64;
        self.file_counter += 1;
        let (min_key, max_key) = if env.config.table == SimTable::PrimaryKey {
            (
                Key::from_i64(segs[0].lo),
                Key::from_i64(segs[segs.len() - 1].hi),
            )
        } else {
            (Key::from_i64(0), Key::from_i64(0))
        };
        let meta = Arc::new(DataFileMeta {
            file_name: format!("data-{li}-{}", self.file_counter),
            file_size: size,
            row_count: rows as u64,
            min_key,
            max_key,
            min_sequence_number: SequenceNumber(seq),
            max_sequence_number: SequenceNumber(self.lanes[li].next_seq - 1),
            level: Level::ZERO,
            delete_row_count: Some((rows * delete_fraction).round() as u64),
            creation_time_ms: self.now_ms,
            file_source: FileSource::Append,
            has_deletion_vector: false,
        });
        let file = SimFile {
            meta: meta.clone(),
            segs: Arc::from(segs),
            delete_fraction,
        };
        self.totals.flushes += 1;
        self.totals.flushed_bytes += size;
        self.add_file(env, li, file, out)?;
        Ok(())
    }

    fn add_file(
        &mut self,
        env: &SimEnv,
        li: usize,
        file: SimFile,
        out: &mut StepOut,
    ) -> Result<()> {
        let meta = file.meta.clone();
        let record = env.config.record_trace;
        let lane = &mut self.lanes[li];
        lane.files.insert(meta.file_name.clone(), file.clone());
        match &mut lane.planner {
            Planner::MergeTree(m) => {
                m.add_new_file(meta.clone())?;
                if record {
                    out.calls.push(PlannerCall::Add {
                        lane: li as u32,
                        file: (*meta).clone(),
                    });
                }
            }
            Planner::Append(a) => {
                a.add_new_file(meta.clone());
                if record {
                    out.calls.push(PlannerCall::Add {
                        lane: li as u32,
                        file: (*meta).clone(),
                    });
                }
            }
            Planner::None => {}
        }
        if env.config.table == SimTable::AppendUnaware {
            self.coord_new.push((li as u32, file));
        }
        self.refresh(env, li);
        Ok(())
    }

    // ---- the planner ---------------------------------------------------------------------

    /// Asks the lane's planner for a decision; starts the task if it picked something.
    fn trigger(&mut self, env: &SimEnv, li: usize, full: bool, out: &mut StepOut) -> Result<bool> {
        if self.lanes[li].task.is_some() {
            return Ok(false);
        }
        let ctx = env.ctx(self.now_ms);
        let record = env.config.record_trace;
        let lane = &mut self.lanes[li];
        match &mut lane.planner {
            Planner::MergeTree(m) => {
                let decision = m.trigger(full, &ctx)?;
                if record {
                    out.calls.push(PlannerCall::Trigger {
                        lane: li as u32,
                        full,
                        ctx,
                        decision: Box::new(decision.clone()),
                    });
                }
                if decision.unit.is_none() {
                    lane.last_reason = Some(decision.reason);
                    return Ok(false);
                }
                m.set_task_running(true);
                self.start_merge_tree_task(env, li, decision, full, out);
                Ok(true)
            }
            Planner::Append(a) => {
                let decision = if full {
                    a.trigger_full()?
                } else {
                    a.pick_auto()
                };
                if record {
                    out.calls.push(PlannerCall::AppendPick {
                        lane: li as u32,
                        full,
                        decision: decision.clone(),
                    });
                }
                if decision.files.is_empty() {
                    lane.last_reason = Some(decision.reason);
                    return Ok(false);
                }
                a.set_task_running(true);
                let before = decision.files.clone();
                let kind = if full {
                    TaskKind::AppendFull
                } else {
                    TaskKind::AppendAuto
                };
                let task = self.append_task(env, li, before, decision.reason, kind, out);
                self.start_task(env, li, task);
                Ok(true)
            }
            // Not compactable here (the view shows why), or left to the coordinator.
            Planner::None => Ok(false),
        }
    }

    /// Decision ids are their index in the timeline's decision log.
    fn next_decision_id(&mut self) -> u32 {
        self.decisions_made += 1;
        self.decisions_made - 1
    }

    fn start_merge_tree_task(
        &mut self,
        env: &SimEnv,
        li: usize,
        d: MergeTreeDecision,
        full: bool,
        out: &mut StepOut,
    ) {
        let cost = &env.config.cost;
        let Some(unit) = d.unit.as_ref() else { return };
        let output_level = unit.output_level;
        let max_level = match &self.lanes[li].planner {
            Planner::MergeTree(m) => m.levels().max_level(),
            _ => output_level,
        };
        let mut ms = cost.task_overhead_ms;
        let mut before = Vec::new();
        let mut after = Vec::new();
        let mut actions = Vec::new();
        let (mut read, mut written, mut upgrades, mut rewrites) = (0u64, 0u64, 0u32, 0u32);
        for action in &d.task.actions {
            match action {
                TaskAction::Upgrade { file, to_level } => {
                    upgrades += 1;
                    let strategy = upgrade_strategy_for(
                        &env.options,
                        file.level,
                        file.delete_row_count,
                        *to_level,
                        max_level,
                    );
                    let sim = self.lanes[li].files.get(&file.file_name).cloned();
                    before.push(file.clone());
                    match strategy {
                        UpgradeStrategy::NoChangelogNoRewrite
                        | UpgradeStrategy::ChangelogNoRewrite => {
                            let lookup = strategy == UpgradeStrategy::ChangelogNoRewrite;
                            if lookup {
                                ms += file.file_size as f64 / MIB / cost.copy_mb_per_s * 1000.0;
                                read += file.file_size;
                            } else {
                                ms += cost.upgrade_ms;
                            }
                            actions.push((
                                file.file_name.clone(),
                                if lookup {
                                    FileAction::Lookup
                                } else {
                                    FileAction::Upgrade
                                },
                            ));
                            let meta = Arc::new(file.upgrade(*to_level));
                            let (segs, df) = sim.map_or_else(
                                || (segs_of(file), 0.0),
                                |s| (s.segs.clone(), s.delete_fraction),
                            );
                            after.push(SimFile {
                                meta,
                                segs,
                                delete_fraction: df,
                            });
                        }
                        UpgradeStrategy::ChangelogWithRewrite => {
                            ms += file.file_size as f64 / MIB / cost.rewrite_mb_per_s * 1000.0;
                            read += file.file_size;
                            actions.push((file.file_name.clone(), FileAction::Rewrite));
                            let inputs = [sim.unwrap_or_else(|| sim_of(file))];
                            let outs = self.rewrite_output(
                                env,
                                li,
                                &inputs,
                                *to_level,
                                env.options.deletion_vectors_enabled,
                            );
                            written += outs.iter().map(|f| f.meta.file_size).sum::<u64>();
                            after.extend(outs);
                        }
                    }
                }
                TaskAction::Rewrite { output_level, .. } => {
                    rewrites += 1;
                    let inputs: Vec<SimFile> = action
                        .inputs()
                        .iter()
                        .map(|f| {
                            self.lanes[li]
                                .files
                                .get(&f.file_name)
                                .cloned()
                                .unwrap_or_else(|| sim_of(f))
                        })
                        .collect();
                    let bytes: u64 = inputs.iter().map(|f| f.meta.file_size).sum();
                    read += bytes;
                    ms += bytes as f64 / MIB / cost.rewrite_mb_per_s * 1000.0;
                    for f in &inputs {
                        before.push(f.meta.clone());
                        actions.push((f.meta.file_name.clone(), FileAction::Rewrite));
                    }
                    let outs = self.rewrite_output(env, li, &inputs, *output_level, d.drop_delete);
                    written += outs.iter().map(|f| f.meta.file_size).sum::<u64>();
                    after.extend(outs);
                }
            }
        }
        let id = self.next_decision_id();
        let ms = ms.round() as i64;
        out.decisions.push(DecisionRecord {
            id,
            event: self.events,
            t_ms: self.now_ms,
            lane: li as u32,
            kind: if full { TaskKind::Full } else { TaskKind::Auto },
            reason: d.reason.clone(),
            output_level: Some(output_level.get()),
            input_files: unit.files.len() as u32,
            upgrades,
            rewrites,
            bytes_in: read,
            bytes_out: written,
            unit_bytes: unit.files.iter().map(|f| f.file_size).sum(),
            duration_ms: ms,
            drop_delete: d.drop_delete,
            advice: false,
        });
        self.totals.upgrades += upgrades as u64;
        self.totals.rewrites += rewrites as u64;
        self.totals.compaction_read_bytes += read;
        self.totals.compaction_written_bytes += written;
        let task = Task {
            decision: id,
            start_ms: self.now_ms,
            end_ms: self.now_ms + ms,
            before,
            after,
            actions,
            output_level: Some(output_level),
        };
        let lane = &mut self.lanes[li];
        lane.last_reason = Some(d.reason);
        lane.last_decision = Some(id);
        self.start_task(env, li, task);
    }

    fn start_task(&mut self, env: &SimEnv, li: usize, task: Task) {
        let _ = env;
        let end = task.end_ms;
        self.lanes[li].task = Some(task);
        self.push(end, What::TaskDone(li as u32));
    }

    /// Append compaction: the inputs concatenated and rolled at the target file size.
    fn append_task(
        &mut self,
        env: &SimEnv,
        li: usize,
        before: Vec<Arc<DataFileMeta>>,
        reason: Reason,
        kind: TaskKind,
        out: &mut StepOut,
    ) -> Task {
        let cost = &env.config.cost;
        let bytes: u64 = before.iter().map(|f| f.file_size).sum();
        let rows: u64 = before.iter().map(|f| f.row_count).sum();
        let target = env.options.target_file_size.max(1);
        let parts = bytes.div_ceil(target).max(1);
        let min_seq = before
            .iter()
            .map(|f| f.min_sequence_number)
            .min()
            .unwrap_or_default();
        let max_seq = before
            .iter()
            .map(|f| f.max_sequence_number)
            .max()
            .unwrap_or_default();
        let mut after = Vec::new();
        for p in 0..parts {
            let part_bytes = bytes / parts + if p == parts - 1 { bytes % parts } else { 0 };
            self.file_counter += 1;
            let meta = Arc::new(DataFileMeta {
                file_name: format!("data-{li}-{}", self.file_counter),
                file_size: part_bytes,
                row_count: rows / parts,
                min_key: Key::from_i64(0),
                max_key: Key::from_i64(0),
                min_sequence_number: min_seq,
                max_sequence_number: max_seq,
                level: Level::ZERO,
                delete_row_count: Some(0),
                creation_time_ms: self.now_ms,
                file_source: FileSource::Compact,
                has_deletion_vector: false,
            });
            after.push(SimFile {
                meta,
                segs: Arc::from(vec![Segment {
                    lo: 0,
                    hi: 0,
                    density: 1.0,
                }]),
                delete_fraction: 0.0,
            });
        }
        let ms = (cost.task_overhead_ms + bytes as f64 / MIB / cost.copy_mb_per_s * 1000.0).round()
            as i64;
        let id = self.next_decision_id();
        out.decisions.push(DecisionRecord {
            id,
            event: self.events,
            t_ms: self.now_ms,
            lane: li as u32,
            kind,
            reason: reason.clone(),
            output_level: None,
            input_files: before.len() as u32,
            upgrades: 0,
            rewrites: 1,
            bytes_in: bytes,
            bytes_out: bytes,
            unit_bytes: bytes,
            duration_ms: ms,
            drop_delete: false,
            advice: false,
        });
        self.totals.rewrites += 1;
        self.totals.compaction_read_bytes += bytes;
        self.totals.compaction_written_bytes += bytes;
        let lane = &mut self.lanes[li];
        lane.last_reason = Some(reason);
        lane.last_decision = Some(id);
        Task {
            decision: id,
            start_ms: self.now_ms,
            end_ms: self.now_ms + ms,
            actions: before
                .iter()
                .map(|f| (f.file_name.clone(), FileAction::Rewrite))
                .collect(),
            before,
            after,
            output_level: None,
        }
    }

    /// The files a merge rewrite of `inputs` writes at `level`: the union of their keys (newest
    /// wins, so duplicates collapse), deletes dropped when allowed, rolled at the target size.
    fn rewrite_output(
        &mut self,
        env: &SimEnv,
        li: usize,
        inputs: &[SimFile],
        level: Level,
        drop_delete: bool,
    ) -> Vec<SimFile> {
        let refs: Vec<&[Segment]> = inputs.iter().map(|f| &f.segs[..]).collect();
        let mut segs = keys::union(&refs);
        let in_rows: f64 = inputs
            .iter()
            .map(|f| f.meta.row_count as f64)
            .sum::<f64>()
            .max(1.0);
        let df = inputs
            .iter()
            .map(|f| f.delete_fraction * f.meta.row_count as f64)
            .sum::<f64>()
            / in_rows;
        let mut delete_fraction = df;
        if drop_delete && df > 0.0 {
            keys::scale(&mut segs, 1.0 - df);
            delete_fraction = 0.0;
        }
        let row_bytes = env.config.workload.row_bytes as f64;
        let rows = keys::rows(&segs);
        let bytes = rows * row_bytes;
        let target = env.options.target_file_size.max(1) as f64;
        let decodable = inputs
            .iter()
            .all(|f| f.meta.min_key.as_i64().is_some() && f.meta.max_key.as_i64().is_some());
        let parts = if decodable {
            (bytes / target).ceil().max(1.0) as usize
        } else {
            1
        };
        let min_seq = inputs
            .iter()
            .map(|f| f.meta.min_sequence_number)
            .min()
            .unwrap_or_default();
        let max_seq = inputs
            .iter()
            .map(|f| f.meta.max_sequence_number)
            .max()
            .unwrap_or_default();
        let mut out = Vec::new();
        for piece in keys::split(&segs, parts) {
            let (min_key, max_key) = if decodable && !piece.is_empty() {
                (
                    Key::from_i64(piece[0].lo),
                    Key::from_i64(piece[piece.len() - 1].hi),
                )
            } else {
                (
                    inputs
                        .iter()
                        .map(|f| f.meta.min_key.clone())
                        .min()
                        .unwrap_or_default(),
                    inputs
                        .iter()
                        .map(|f| f.meta.max_key.clone())
                        .max()
                        .unwrap_or_default(),
                )
            };
            let prows = keys::rows(&piece).round().max(1.0);
            self.file_counter += 1;
            let meta = Arc::new(DataFileMeta {
                file_name: format!("data-{li}-{}", self.file_counter),
                file_size: (prows * row_bytes) as u64,
                row_count: prows as u64,
                min_key,
                max_key,
                min_sequence_number: min_seq,
                max_sequence_number: max_seq,
                level,
                delete_row_count: Some((prows * delete_fraction).round() as u64),
                creation_time_ms: self.now_ms,
                file_source: FileSource::Compact,
                has_deletion_vector: false,
            });
            out.push(SimFile {
                meta,
                segs: Arc::from(piece),
                delete_fraction,
            });
        }
        out
    }

    fn on_task_done(&mut self, env: &SimEnv, li: usize, out: &mut StepOut) -> Result<()> {
        out.event.kind = EventKind::CompactionDone;
        out.event.lane = li as u32;
        let Some(task) = self.lanes[li].task.take() else {
            return Ok(());
        };
        out.event.decision = Some(task.decision);
        self.apply(env, li, &task, out)?;
        self.totals.compactions += 1;
        // A writer blocked on this task resumes; a commit waiting on it goes on.
        let now = self.now_ms;
        if let Some((Block::CommitWait, _)) = self.lanes[li].blocked {
            self.continue_commit(env, li, out)?;
        } else if self.lanes[li].blocked.is_some() {
            self.unblock(li, now);
        }
        Ok(())
    }

    fn apply(&mut self, env: &SimEnv, li: usize, task: &Task, out: &mut StepOut) -> Result<()> {
        let record = env.config.record_trace;
        let after_meta: Vec<Arc<DataFileMeta>> =
            task.after.iter().map(|f| f.meta.clone()).collect();
        let lane = &mut self.lanes[li];
        for f in &task.before {
            lane.files.remove(&f.file_name);
        }
        for f in &task.after {
            lane.files.insert(f.meta.file_name.clone(), f.clone());
        }
        match &mut lane.planner {
            Planner::MergeTree(m) => {
                m.apply(&task.before, &after_meta)?;
                m.set_task_running(false);
            }
            Planner::Append(a) => {
                a.set_task_running(false);
                a.on_result(&after_meta);
            }
            Planner::None => {}
        }
        if record {
            out.calls.push(PlannerCall::Apply {
                lane: li as u32,
                before: task.before.iter().map(|f| (**f).clone()).collect(),
                after: after_meta.iter().map(|f| (**f).clone()).collect(),
            });
        }
        self.refresh(env, li);
        Ok(())
    }

    // ---- commits -------------------------------------------------------------------------

    fn on_commit(&mut self, env: &SimEnv, out: &mut StepOut) -> Result<()> {
        out.event.kind = EventKind::Commit;
        self.totals.commits += 1;
        let now = self.now_ms;
        if env.config.table == SimTable::AppendUnaware {
            self.coordinator_scan(env, out)?;
        } else {
            for li in 0..self.lanes.len() {
                self.lanes[li].commits += 1;
                if self.lanes[li].blocked.is_some() {
                    self.lanes[li].commit_pending = true;
                    continue;
                }
                self.commit_lane(env, li, out)?;
            }
        }
        self.push(
            now + (env.config.workload.commit_interval_s * 1000.0) as i64,
            What::Commit,
        );
        Ok(())
    }

    /// A commit of one bucket: flush the partial buffer, then wait for compaction if the
    /// options say so (spec §7.5, §12).
    fn commit_lane(&mut self, env: &SimEnv, li: usize, out: &mut StepOut) -> Result<()> {
        let now = self.now_ms;
        let interval = env.flush_interval_ms();
        let elapsed = (now - self.lanes[li].last_flush_ms) as f64;
        if elapsed > 0.0 && self.totals.flushes < env.config.flushes {
            self.flush_file(env, li, (elapsed / interval).min(1.0), out)?;
            self.trigger(env, li, false, out)?;
            let lane = &mut self.lanes[li];
            lane.last_flush_ms = now;
            lane.flush_gen += 1;
            let gen = lane.flush_gen;
            let next = now
                + (interval * self.rng.jitter(env.config.workload.jitter))
                    .round()
                    .max(1.0) as i64;
            self.push(next, What::Flush(li as u32, gen));
        }
        let o = &env.options;
        let Planner::MergeTree(m) = &self.lanes[li].planner else {
            return Ok(());
        };
        let cadence = match (o.full_compaction_delta_commits, o.changelog_producer) {
            (Some(n), _) => Some(n.max(1) as u64),
            (None, ChangelogProducer::FullCompaction) => Some(1),
            _ => None,
        };
        let wait = o.prepare_commit_wait_compaction()
            || o.commit_force_compact
            || m.write_stall().wait_for_preparing_checkpoint;
        let lane = &mut self.lanes[li];
        lane.full_pending = cadence.is_some_and(|n| lane.commits % n == 0);
        lane.commit_polls = 0;
        if wait || lane.full_pending {
            lane.blocked = Some((Block::CommitWait, now));
            self.continue_commit(env, li, out)?;
        }
        Ok(())
    }

    /// Goes on with a commit that waits: for the running task, then (full compaction due) a
    /// forced full compaction, then (lookup tables) until level 0 is empty.
    fn continue_commit(&mut self, env: &SimEnv, li: usize, out: &mut StepOut) -> Result<()> {
        if self.lanes[li].task.is_some() {
            return Ok(()); // resumes from on_task_done
        }
        if self.lanes[li].full_pending {
            self.lanes[li].full_pending = false;
            if self.trigger(env, li, true, out)? && self.must_wait_commit(env, li) {
                return Ok(());
            }
        }
        let o = &env.options;
        let wait = o.prepare_commit_wait_compaction() || o.commit_force_compact;
        // Bounded: a gentle strategy may need up to `max-interval` polls to force level 0 up.
        while wait && self.lanes[li].commit_polls < 1000 {
            let Planner::MergeTree(m) = &self.lanes[li].planner else {
                break;
            };
            if !m.compact_not_completed() {
                break;
            }
            self.lanes[li].commit_polls += 1;
            if self.trigger(env, li, false, out)? {
                return Ok(());
            }
            if !o.need_lookup() {
                break;
            }
        }
        let now = self.now_ms;
        self.unblock(li, now);
        if std::mem::take(&mut self.lanes[li].commit_pending) {
            self.commit_lane(env, li, out)?;
        }
        Ok(())
    }

    fn must_wait_commit(&self, env: &SimEnv, _li: usize) -> bool {
        env.options.prepare_commit_wait_compaction() || env.options.commit_force_compact
    }

    // ---- the unaware-bucket coordinator --------------------------------------------------

    fn coordinator_scan(&mut self, env: &SimEnv, out: &mut StepOut) -> Result<()> {
        let Some(coord) = self.coordinator.as_mut() else {
            self.coord_new.clear();
            return Ok(());
        };
        let new = std::mem::take(&mut self.coord_new);
        if new.is_empty() {
            return Ok(());
        }
        let files: Vec<CoordinatorFile> = new
            .iter()
            .map(|(_, f)| CoordinatorFile {
                file: f.meta.clone(),
                deletion_file: None,
            })
            .collect();
        if env.config.record_trace {
            out.calls.push(PlannerCall::CoordinatorNotify {
                files: files.iter().map(|f| (*f.file).clone()).collect(),
            });
        }
        coord.notify("", files);
        let tasks = coord.plan();
        if env.config.record_trace {
            out.calls.push(PlannerCall::CoordinatorPlan {
                tasks: tasks
                    .iter()
                    .map(|t| t.files.iter().map(|f| f.file_name.clone()).collect())
                    .collect(),
            });
        }
        if tasks.is_empty() {
            if let Some((files, age)) = coord.partition_state("") {
                self.lanes[0].last_reason =
                    Some(Reason::Idle(crate::plan::Idle::CoordinatorWaiting {
                        files,
                        age,
                    }));
            }
        }
        for t in tasks {
            let task = self.append_task(env, 0, t.files, t.reason, TaskKind::Coordinator, out);
            self.coord_queue.push_back(task);
        }
        self.start_coordinator_task();
        Ok(())
    }

    fn start_coordinator_task(&mut self) {
        if self.coord_task.is_some() {
            return;
        }
        if let Some(mut t) = self.coord_queue.pop_front() {
            let dur = t.end_ms - t.start_ms;
            t.start_ms = self.now_ms;
            t.end_ms = self.now_ms + dur;
            let end = t.end_ms;
            self.coord_task = Some(t);
            self.push(end, What::CoordinatorDone);
        }
    }

    fn on_coordinator_done(&mut self, env: &SimEnv, out: &mut StepOut) -> Result<()> {
        out.event.kind = EventKind::CompactionDone;
        let Some(task) = self.coord_task.take() else {
            return Ok(());
        };
        out.event.decision = Some(task.decision);
        self.apply(env, 0, &task, out)?;
        self.totals.compactions += 1;
        // The compacted files are new files of the next scan too (they may still be small).
        for f in &task.after {
            self.coord_new.push((0, f.clone()));
        }
        if env.config.workload.commit_interval_s <= 0.0 {
            self.coordinator_scan(env, out)?;
        }
        self.start_coordinator_task();
        Ok(())
    }

    // ---- replay --------------------------------------------------------------------------

    fn on_replay(&mut self, env: &SimEnv, i: usize, out: &mut StepOut) -> Result<()> {
        out.event.kind = EventKind::Snapshot;
        let Some(replay) = env.config.replay.as_ref() else {
            return Ok(());
        };
        let snap = &replay.snapshots[i];
        let lanes = replay.lanes();
        let mut touched = Vec::new();
        for c in &snap.changes {
            let li = lanes
                .iter()
                .position(|(p, b)| *p == c.partition && *b == c.bucket)
                .unwrap_or(0);
            let lane = &mut self.lanes[li];
            for name in &c.deleted {
                lane.files.remove(name);
            }
            for f in &c.added {
                let sim = sim_of(&Arc::new(f.clone()));
                if f.file_source == FileSource::Append {
                    self.totals.flushed_bytes += f.file_size;
                } else {
                    self.totals.compaction_written_bytes += f.file_size;
                }
                lane.next_seq = lane.next_seq.max(f.max_sequence_number.0 + 1);
                let logical = keys::union(&[&lane.logical, &sim.segs]);
                lane.logical = Arc::from(logical);
                lane.files.insert(f.file_name.clone(), sim);
            }
            if !touched.contains(&li) {
                touched.push(li);
            }
        }
        out.event.lane = touched.first().copied().unwrap_or(0) as u32;
        // Restore each touched bucket as a writer would from this snapshot, and ask the planner
        // what it would do now (advice: the real table's own history is what happens next).
        for li in touched {
            let files: Vec<Arc<DataFileMeta>> = self.lanes[li]
                .files
                .values()
                .map(|f| f.meta.clone())
                .collect();
            self.lanes[li].planner = new_planner(env, files)?;
            let ctx = env.ctx(self.now_ms);
            let mut probe = self.lanes[li].planner.clone();
            let reason = match &mut probe {
                Planner::MergeTree(m) => Some(m.trigger(false, &ctx)?),
                _ => None,
            };
            if let Some(d) = reason {
                if d.unit.is_some() {
                    let id = self.next_decision_id();
                    out.decisions.push(DecisionRecord {
                        id,
                        event: self.events,
                        t_ms: self.now_ms,
                        lane: li as u32,
                        kind: TaskKind::Auto,
                        reason: d.reason.clone(),
                        output_level: d.unit.as_ref().map(|u| u.output_level.get()),
                        input_files: d.unit.as_ref().map_or(0, |u| u.files.len() as u32),
                        upgrades: d.task.upgrades() as u32,
                        rewrites: d.task.rewrites() as u32,
                        bytes_in: 0,
                        bytes_out: 0,
                        unit_bytes: d
                            .unit
                            .as_ref()
                            .map_or(0, |u| u.files.iter().map(|f| f.file_size).sum()),
                        duration_ms: 0,
                        drop_delete: d.drop_delete,
                        advice: true,
                    });
                    self.lanes[li].last_decision = Some(id);
                }
                self.lanes[li].last_reason = Some(d.reason);
            }
            self.refresh(env, li);
        }
        Ok(())
    }

    // ---- figures -------------------------------------------------------------------------

    fn refresh(&mut self, env: &SimEnv, li: usize) {
        let lane = &mut self.lanes[li];
        let bytes: u64 = lane.files.values().map(|f| f.meta.file_size).sum();
        let (runs, pending) = match &lane.planner {
            Planner::MergeTree(m) => {
                let levels = m.levels();
                let runs = levels.number_of_sorted_runs() as u32;
                // Everything not yet in the oldest run still has a compaction ahead of it.
                let oldest = levels.level_sorted_runs().last().map_or(0, |r| r.size);
                (runs, bytes - oldest.min(bytes))
            }
            _ if env.config.table == SimTable::PrimaryKey => {
                // Write-only: every level-0 file is its own run.
                let l0 = lane
                    .files
                    .values()
                    .filter(|f| f.meta.level.is_zero())
                    .count() as u32;
                let upper = {
                    let mut lv: Vec<u32> = lane
                        .files
                        .values()
                        .map(|f| f.meta.level.get())
                        .filter(|l| *l > 0)
                        .collect();
                    lv.sort_unstable();
                    lv.dedup();
                    lv.len() as u32
                };
                (l0 + upper, bytes)
            }
            _ => {
                let cfs = env.options.compaction_file_size;
                let small: u64 = lane
                    .files
                    .values()
                    .filter(|f| f.meta.file_size < cfs)
                    .map(|f| f.meta.file_size)
                    .sum();
                (lane.files.len() as u32, small)
            }
        };
        lane.runs = runs;
        lane.bytes = bytes;
        lane.pending = pending;
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

    pub fn unblock_reason(&self, li: usize) -> Option<Block> {
        self.lanes[li].blocked.map(|b| b.0)
    }
}

fn new_planner(env: &SimEnv, files: Vec<Arc<DataFileMeta>>) -> Result<Planner> {
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
fn sim_of(f: &Arc<DataFileMeta>) -> SimFile {
    let rows = f.row_count.max(1) as f64;
    let df = f.delete_row_count.map_or(0.0, |d| d as f64 / rows);
    SimFile {
        meta: f.clone(),
        segs: segs_of(f),
        delete_fraction: df.clamp(0.0, 1.0),
    }
}

fn segs_of(f: &DataFileMeta) -> Arc<[Segment]> {
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
