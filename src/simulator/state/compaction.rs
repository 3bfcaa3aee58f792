//! The compaction side of the simulation: the planner triggered per lane, its picks run as
//! tasks whose duration the cost model gives, and their results applied to the lane.

use std::sync::Arc;

use super::super::config::SimTable;
use super::super::keys::{self, Segment};
use super::super::record::{DecisionRecord, EventKind, PlannerCall, TaskKind};
use super::{
    segs_of, sim_of, Block, FileAction, Planner, SimEnv, SimFile, SimState, StepOut, Task, What,
    MIB,
};
use crate::error::Result;
use crate::meta::{CompactionFile, FileSource, Key, Level};
use crate::plan::{CoordinatorFile, MergeTreeDecision, Reason, TaskAction, UpgradeStrategy};

impl SimState {
    /// Asks the lane's planner for a decision; starts the task if it picked something.
    pub(super) fn trigger(
        &mut self,
        env: &SimEnv,
        li: usize,
        full: bool,
        out: &mut StepOut,
    ) -> Result<bool> {
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
    pub(super) fn next_decision_id(&mut self) -> u32 {
        self.decisions_made += 1;
        self.decisions_made - 1
    }

    pub(super) fn start_merge_tree_task(
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
        let mut ms = cost.task_overhead_ms;
        let mut before = Vec::new();
        let mut after = Vec::new();
        let mut actions = Vec::new();
        let (mut read, mut written, mut upgrades, mut rewrites) = (0u64, 0u64, 0u32, 0u32);
        for action in &d.task.actions {
            match action {
                TaskAction::Upgrade {
                    file,
                    to_level,
                    strategy,
                } => {
                    upgrades += 1;
                    let strategy = *strategy;
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

    pub(super) fn start_task(&mut self, env: &SimEnv, li: usize, task: Task) {
        let _ = env;
        let end = task.end_ms;
        self.lanes[li].task = Some(task);
        self.push(end, What::TaskDone(li as u32));
    }

    /// Append compaction: the inputs concatenated and rolled at the target file size.
    pub(super) fn append_task(
        &mut self,
        env: &SimEnv,
        li: usize,
        before: Vec<Arc<CompactionFile>>,
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
            let meta = Arc::new(CompactionFile {
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
    pub(super) fn rewrite_output(
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
            let meta = Arc::new(CompactionFile {
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

    pub(super) fn on_task_done(
        &mut self,
        env: &SimEnv,
        li: usize,
        out: &mut StepOut,
    ) -> Result<()> {
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

    pub(super) fn apply(
        &mut self,
        env: &SimEnv,
        li: usize,
        task: &Task,
        out: &mut StepOut,
    ) -> Result<()> {
        let record = env.config.record_trace;
        let after_meta: Vec<Arc<CompactionFile>> =
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

    pub(super) fn coordinator_scan(&mut self, env: &SimEnv, out: &mut StepOut) -> Result<()> {
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

    pub(super) fn start_coordinator_task(&mut self) {
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

    pub(super) fn on_coordinator_done(&mut self, env: &SimEnv, out: &mut StepOut) -> Result<()> {
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

    pub(super) fn refresh(&mut self, env: &SimEnv, li: usize) {
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
}
