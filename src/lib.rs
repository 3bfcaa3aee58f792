//! paimon-compact: Apache Paimon's compaction as a pure Rust core.
//!
//! * [`api`] — the operations of the WIT world as plain Rust, called by both the component
//!   and the host's native engine: start here.
//! * [`plan`] — the planner: Paimon's exact compaction decisions, each with its reason (and
//!   [`plan::conformance`], which runs the shared conformance vectors through it).
//! * [`meta`] — data file metadata, sorted runs, levels.
//! * [`options`] — table options, parsed once into a typed struct.
//! * [`storage`] — the one trait through which the core reads and writes bytes.
//! * [`host_codec`] — zstd run by the host for the component, when the host offers it.
//! * [`io`] — the storage shared by an operation, with the host's services beside it.
//! * `parquet_io` — the Parquet layer: reading and writing Parquet through storage, knowing
//!   nothing of Paimon (feature `rewrite`, crate-internal).
//! * `rewrite` — the Paimon rewriters over it (feature `rewrite`).
//! * `table` — real Paimon tables: scan, plan, compact, commit (feature `rewrite`).
//! * `types`, `value` and `deletion_vectors` — Paimon's data types (and their Arrow form),
//!   typed values and deletion-vector files, shared by `rewrite` and `table` (feature
//!   `rewrite`).
//! * `maintenance` — expiry of snapshots, changelogs, partitions, tags and consumers, and
//!   orphan-file removal (feature `rewrite`).
//! * [`simulator`] — a deterministic LSM simulation driven by the planner.
//! * [`decoder_panics`] — a third-party decoder's panic on outside bytes as corrupt input.
//! * `fuzz_targets` — every parser of outside data behind a bytes-in function, for the fuzzers
//!   and their CI smoke run (feature `rewrite`, native only).
//!
//! The core does no I/O of its own and reads no clock: callers pass `now` and the local hour,
//! and bytes move only through [`storage::Storage`].

pub mod api;
#[cfg(feature = "rewrite")]
pub mod avro_file;
pub mod bindings;
pub mod decoder_panics;
#[cfg(feature = "rewrite")]
pub mod deletion_vectors;
pub mod error;
#[cfg(all(feature = "rewrite", not(target_family = "wasm")))]
pub mod fuzz_targets;
pub mod host_codec;
pub mod io;
#[cfg(feature = "rewrite")]
pub mod maintenance;
pub mod meta;
pub mod options;
#[cfg(feature = "rewrite")]
pub(crate) mod orc_io;
#[cfg(feature = "rewrite")]
pub(crate) mod parquet_io;
pub mod plan;
#[cfg(feature = "rewrite")]
pub mod rewrite;
pub mod simulator;
pub mod storage;
#[cfg(feature = "rewrite")]
pub mod table;
#[cfg(test)]
mod test_rng;
#[cfg(feature = "rewrite")]
pub mod types;
#[cfg(feature = "rewrite")]
pub mod value;
#[cfg(feature = "rewrite")]
pub(crate) mod varint;

pub use error::{Error, ErrorKind, NotCompactable, Result};
