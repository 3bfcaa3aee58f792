//! The writers' side of the simulation: flushes (and the write stalls that block them),
//! commits, and the snapshots of a replayed table.

use std::sync::Arc;

use super::super::config::SimTable;
use super::super::keys::{self, KeyDistribution, Segment};
use super::super::record::{DecisionRecord, EventKind, PlannerCall, TaskKind};
use super::{new_planner, sim_of, Block, Planner, SimEnv, SimFile, SimState, StepOut, What, MIB};
use crate::error::Result;
use crate::meta::{CompactionFile, FileSource, Key, Level, SequenceNumber};
use crate::options::ChangelogProducer;

impl SimState {
    pub(super) fn writer_lane(&self, env: &SimEnv, w: u32) -> usize {
        if env.config.table == SimTable::AppendUnaware {
            0
        } else {
            (w as usize).min(self.lanes.len() - 1)
        }
    }

    // ---- writers -------------------------------------------------------------------------

    pub(super) fn on_flush(&mut self, env: &SimEnv, w: u32, out: &mut StepOut) -> Result<()> {
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
        // Write stall (compaction.md §7.5): checked before the flushed file is added.
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
    pub(super) fn blocking_end(&self, li: usize) -> Option<i64> {
        self.lanes[li].task.as_ref().map(|t| t.end_ms)
    }

    pub(super) fn unblock(&mut self, li: usize, now: i64) {
        if let Some((_, since)) = self.lanes[li].blocked.take() {
            let d = (now - since).max(0);
            self.lanes[li].stall_ms += d;
            self.totals.stall_ms += d;
        }
    }

    /// Writes one level-0 file of `fraction` of a write buffer.
    pub(super) fn flush_file(
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
        let meta = Arc::new(CompactionFile {
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

    pub(super) fn add_file(
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

    pub(super) fn on_commit(&mut self, env: &SimEnv, out: &mut StepOut) -> Result<()> {
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
    /// options say so (compaction.md §7.5, §12).
    pub(super) fn commit_lane(&mut self, env: &SimEnv, li: usize, out: &mut StepOut) -> Result<()> {
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
    pub(super) fn continue_commit(
        &mut self,
        env: &SimEnv,
        li: usize,
        out: &mut StepOut,
    ) -> Result<()> {
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

    pub(super) fn must_wait_commit(&self, env: &SimEnv, _li: usize) -> bool {
        env.options.prepare_commit_wait_compaction() || env.options.commit_force_compact
    }

    // ---- the unaware-bucket coordinator --------------------------------------------------

    pub(super) fn on_replay(&mut self, env: &SimEnv, i: usize, out: &mut StepOut) -> Result<()> {
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
            let files: Vec<Arc<CompactionFile>> = self.lanes[li]
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
}
