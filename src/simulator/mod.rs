//! A deterministic simulation of a Paimon table's writers and compaction, driven by the real
//! planner, for the browser page in `www/` (and for tests and benchmarks).
//!
//! * [`config`] — what to simulate (table, Paimon options, workload, cost model, seed).
//! * [`state`] — the event loop on a virtual clock: flushes, commits, stalls, tasks.
//! * [`sim`] — the recorded timeline with checkpoints for scrubbing back.
//! * [`view`] — what the page draws at one position.
//! * [`replay`] — the JSON format for replaying a real table's snapshots.
//! * [`keys`] — files as key segments with densities (so a million flushes stay cheap).
//!
//! The simulation is the single source of truth: the page renders [`view::View`] and never
//! decides anything, so "what the page shows equals what the planner decides" is a property of
//! this module that native tests check (see `tests/it/simulator.rs`). No I/O, no wall clock.

pub mod config;
pub mod detmath;
pub mod keys;
pub mod record;
pub mod replay;
pub mod rng;
pub mod sim;
pub mod state;
pub mod view;

pub use config::{CostModel, SimConfig, SimTable, Workload};
pub use keys::KeyDistribution;
pub use record::{DecisionRecord, EventKind, EventRecord, PlannerCall, TaskKind};
pub use replay::TableReplay;
pub use sim::{Sample, Series, Simulation};
pub use view::{DecisionView, View};
