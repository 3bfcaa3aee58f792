//! paimon-compact: Apache Paimon's compaction as a pure Rust core.
//!
//! * [`plan`] — the planner: Paimon's exact compaction decisions, each with its reason.
//! * [`meta`] — data file metadata, sorted runs, levels.
//! * [`options`] — table options, parsed once into a typed struct.
//! * [`conformance`] — runs the shared conformance vectors through the planner.
//!
//! The core does no I/O and reads no clock: callers pass `now` and the local hour.

pub mod conformance;
pub mod error;
pub mod meta;
pub mod options;
pub mod plan;
pub mod storage;

pub use error::{Error, ErrorKind, Result};
