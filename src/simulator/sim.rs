//! The timeline: a simulation run once ahead ("head"), with every event, decision and metric
//! sample recorded, and checkpoints so any earlier position can be shown again.
//!
//! Scrubbing back restores the nearest checkpoint (a clone of the whole state) and steps
//! forward; since the run is deterministic, that reproduces exactly what the head saw.

use super::config::SimConfig;
use super::record::{DecisionRecord, EventRecord, PlannerCall};
use super::state::{check_replay_kind, SimEnv, SimState};
use crate::error::Result;

/// Metric samples, one per event, stored column-wise (a million events stay compact).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Series {
    /// Virtual time after each event, epoch milliseconds (as `f64`, for charting).
    pub t_ms: Vec<f64>,
    /// Sorted runs of the busiest lane (a read-amplification proxy).
    pub runs: Vec<u16>,
    /// Write amplification so far: (flushed + compaction-written bytes) / flushed bytes; 1 before
    /// the first flush.
    pub write_amp: Vec<f32>,
    /// Space amplification: bytes of all live files / logical live bytes
    /// ([`SimState::live_bytes`]); 1 while nothing is live.
    pub space_amp: Vec<f32>,
    /// Bytes still ahead of a compaction, summed over lanes (see
    /// [`Lane::pending`](crate::simulator::state::Lane::pending)).
    pub pending_bytes: Vec<f64>,
    /// Lanes whose writer is blocked after the event.
    pub stalled: Vec<u8>,
}

/// Figures after one event.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Sample {
    /// Virtual time after the event, epoch milliseconds.
    pub t_ms: f64,
    /// Sorted runs of the busiest lane.
    pub runs: u16,
    /// Write amplification so far (see [`Series::write_amp`]).
    pub write_amp: f32,
    /// Space amplification (see [`Series::space_amp`]).
    pub space_amp: f32,
    /// Bytes still ahead of a compaction, over all lanes.
    pub pending_bytes: f64,
    /// Lanes whose writer is blocked after the event.
    pub stalled: u8,
}

impl Series {
    fn push(&mut self, s: Sample) {
        self.t_ms.push(s.t_ms);
        self.runs.push(s.runs);
        self.write_amp.push(s.write_amp);
        self.space_amp.push(s.space_amp);
        self.pending_bytes.push(s.pending_bytes);
        self.stalled.push(s.stalled);
    }

    /// Number of samples: one per computed event.
    pub fn len(&self) -> usize {
        self.t_ms.len()
    }

    /// Whether no event has been sampled yet.
    pub fn is_empty(&self) -> bool {
        self.t_ms.is_empty()
    }

    /// At most `points` samples for a chart: each bucket of events keeps its last time and
    /// amplification, and its maximum runs and pending bytes (so peaks never vanish), and
    /// whether any writer stalled in it.
    pub fn downsample(&self, points: usize) -> Series {
        let n = self.len();
        if n <= points.max(1) {
            return self.clone();
        }
        let step = n.div_ceil(points.max(1));
        let mut out = Series::default();
        let mut i = 0;
        while i < n {
            let j = (i + step).min(n);
            out.t_ms.push(self.t_ms[j - 1]);
            out.runs.push(*self.runs[i..j].iter().max().unwrap_or(&0));
            out.write_amp.push(self.write_amp[j - 1]);
            out.space_amp.push(self.space_amp[j - 1]);
            out.pending_bytes
                .push(self.pending_bytes[i..j].iter().cloned().fold(0.0, f64::max));
            out.stalled
                .push(*self.stalled[i..j].iter().max().unwrap_or(&0));
            i = j;
        }
        out
    }
}

/// A deterministic simulation with its recorded timeline.
pub struct Simulation {
    /// The run's fixed part: config, parsed options, lane names.
    pub env: SimEnv,
    head: SimState,
    /// `(position, state after that many events)`, ascending.
    checkpoints: Vec<(u64, SimState)>,
    checkpoint_every: u64,
    /// Every event computed so far, in order; position `p` is the state after `events[..p]`.
    pub events: Vec<EventRecord>,
    /// Every decision, replay advice included, in order; a decision's id is its index here.
    pub decisions: Vec<DecisionRecord>,
    /// Metric samples, one per event (as long as `events`).
    pub series: Series,
    /// Every planner call, in order, when `record_trace` is on; empty otherwise.
    pub trace: Vec<PlannerCall>,
    /// The state shown (`None`: the head).
    view: Option<(u64, SimState)>,
}

/// Checkpoint spacing grows so that at most this many are kept.
const MAX_CHECKPOINTS: usize = 1024;

impl Simulation {
    /// Validates `config`, parses its options and builds the initial state; no event is computed
    /// yet. Fails on invalid options or workloads, and on a replay of a different table kind.
    pub fn new(config: SimConfig) -> Result<Self> {
        check_replay_kind(&config)?;
        let env = SimEnv::new(config)?;
        let head = SimState::new(&env)?;
        Ok(Simulation {
            checkpoints: vec![(0, head.clone())],
            checkpoint_every: 256,
            env,
            head,
            events: Vec::new(),
            decisions: Vec::new(),
            series: Series::default(),
            trace: Vec::new(),
            view: None,
        })
    }

    /// Events computed so far.
    pub fn len(&self) -> u64 {
        self.events.len() as u64
    }

    /// Whether no event has been computed yet.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Whether the run is over: the configured flushes are written and no compaction is left.
    pub fn finished(&self) -> bool {
        self.head.finished
    }

    /// Computes up to `max_events` more events; returns how many were computed.
    pub fn advance(&mut self, max_events: u64) -> Result<u64> {
        let mut n = 0;
        while n < max_events {
            let Some(out) = self.head.step(&self.env)? else {
                break;
            };
            self.decisions.extend(out.decisions);
            if self.env.config.record_trace {
                self.trace.extend(out.calls);
            }
            self.events.push(out.event);
            let s = sample(&self.env, &self.head);
            self.series.push(s);
            n += 1;
            let pos = self.len();
            if pos % self.checkpoint_every == 0 {
                self.checkpoints.push((pos, self.head.clone()));
                if self.checkpoints.len() > MAX_CHECKPOINTS {
                    self.checkpoint_every *= 2;
                    let every = self.checkpoint_every;
                    self.checkpoints.retain(|(p, _)| p % every == 0);
                }
            }
        }
        Ok(n)
    }

    /// Runs to the end (the configured number of flushes, then the remaining compactions).
    pub fn run(&mut self) -> Result<u64> {
        self.advance(u64::MAX)
    }

    /// The state after `position` events (clamped to what has been computed).
    pub fn state_at(&mut self, position: u64) -> Result<&SimState> {
        let position = position.min(self.len());
        if position == self.len() {
            return Ok(&self.head);
        }
        let reuse = matches!(&self.view, Some((p, _)) if *p <= position && position - *p < self.checkpoint_every);
        if !reuse {
            let idx = self.checkpoints.partition_point(|(p, _)| *p <= position) - 1;
            let (p, s) = &self.checkpoints[idx];
            self.view = Some((*p, s.clone()));
        }
        let (p, state) = self.view.as_mut().expect("view set above");
        while *p < position {
            if state.step(&self.env)?.is_none() {
                break;
            }
            *p += 1;
        }
        Ok(&self.view.as_ref().expect("view set above").1)
    }

    /// The last position whose event happened at or before `t_ms`.
    pub fn position_at_time(&self, t_ms: i64) -> u64 {
        self.events.partition_point(|e| e.t_ms <= t_ms) as u64
    }

    /// A fingerprint of every decision (rule, units, sizes, times): equal fingerprints mean the
    /// same decisions, which is how the browser's run is compared with the native one.
    pub fn digest(&self) -> String {
        let mut h = Fnv::default();
        for d in &self.decisions {
            h.write(&d.t_ms.to_le_bytes());
            h.write(&d.lane.to_le_bytes());
            h.write(d.reason.rule().as_bytes());
            h.write(d.reason.to_string().as_bytes());
            h.write(&d.output_level.unwrap_or(u32::MAX).to_le_bytes());
            h.write(&d.input_files.to_le_bytes());
            h.write(&d.upgrades.to_le_bytes());
            h.write(&d.rewrites.to_le_bytes());
            h.write(&d.bytes_out.to_le_bytes());
        }
        format!("{:016x}-{}", h.0, self.decisions.len())
    }

    /// The current metrics after `position` events.
    pub fn sample_at(&self, position: u64) -> Sample {
        if position == 0 || self.series.is_empty() {
            return Sample {
                t_ms: self.env.config.workload.start_ms as f64,
                write_amp: 1.0,
                space_amp: 1.0,
                ..Sample::default()
            };
        }
        let i = (position.min(self.len()) - 1) as usize;
        Sample {
            t_ms: self.series.t_ms[i],
            runs: self.series.runs[i],
            write_amp: self.series.write_amp[i],
            space_amp: self.series.space_amp[i],
            pending_bytes: self.series.pending_bytes[i],
            stalled: self.series.stalled[i],
        }
    }
}

fn sample(env: &SimEnv, s: &SimState) -> Sample {
    let t = &s.totals;
    let total: u64 = s.lanes.iter().map(|l| l.bytes).sum();
    let live = s.live_bytes(env);
    Sample {
        t_ms: s.now_ms as f64,
        runs: s
            .lanes
            .iter()
            .map(|l| l.runs)
            .max()
            .unwrap_or(0)
            .min(u16::MAX as u32) as u16,
        write_amp: if t.flushed_bytes == 0 {
            1.0
        } else {
            ((t.flushed_bytes + t.compaction_written_bytes) as f64 / t.flushed_bytes as f64) as f32
        },
        space_amp: if live <= 0.0 {
            1.0
        } else {
            (total as f64 / live) as f32
        },
        pending_bytes: s.lanes.iter().map(|l| l.pending as f64).sum(),
        stalled: s
            .lanes
            .iter()
            .filter(|l| l.blocked.is_some())
            .count()
            .min(255) as u8,
    }
}

/// FNV-1a, 64 bit: a stable hash with no dependency.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= *b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}
