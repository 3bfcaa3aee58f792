//! The operations of the WIT world (`wit/compact.wit`) as plain Rust: one function per exported
//! WIT function, taking and returning plain structs shaped like the WIT records.
//!
//! Two engines run this crate: the WebAssembly component (`bindings/component.rs`, behind
//! wit-bindgen) and the host's native engine (`paimon-compact-host`'s `Compactor::Native`). Both
//! call these functions and only map types at their edge, so they cannot diverge: a WIT field is
//! one edit here plus one mapping line on each edge.
//!
//! This module is the only place that
//! * fills in what a request leaves out (an append rewrite's table schema, output level and
//!   value statistics, a bucket request's blob column, the primary-key merge rewriter);
//! * validates what the WIT types cannot (a job id is exactly 16 bytes);
//! * wires the services the core does not own: the commit back-off's sleep and the phase
//!   timings' clock (`std::thread::sleep` and `std::time::Instant` run natively and under
//!   WASI 0.2, whose monotonic clock the component imports), and progress reporting
//!   ([`Services`]);
//! * builds the table layer's requests ([`crate::table::PlanRequest`],
//!   [`crate::table::CompactOptions`]) and the maintenance settings.
//!
//! What stays outside: the wall clock, the local hour and the randomness of job ids, which a
//! host supplies in the request (the core reads no wall clock and draws no random numbers, so
//! the same request always plans the same way).
//!
//! | WIT function | here |
//! |---|---|
//! | `planner.plan-bucket` | [`plan_bucket`] |
//! | `planner.explain-options` | [`explain_options`] |
//! | `planner.run-conformance` | [`run_conformance`] |
//! | `compactor.compact-append-files` | `compact_append_files` (feature `rewrite`) |
//! | `table-compactor.compaction-job.plan` | `plan_table` (feature `rewrite`) |
//! | `table-compactor.compaction-job.run` | `compact_table` (feature `rewrite`) |
//! | `table-compactor.compaction-job.plan-tasks` | `plan_tasks` (feature `rewrite`) |
//! | `table-compactor.compaction-job.run-task` | `run_task` (feature `rewrite`) |
//! | `table-compactor.compaction-job.commit-tasks` | `commit_tasks` (feature `rewrite`) |
//! | `table-compactor.compaction-job.abort-tasks` | `abort_tasks` (feature `rewrite`) |
//! | `table-compactor.compaction-job.renew-leases` | `renew_leases` (feature `rewrite`) |
//! | `table-compactor.write-demo-tables` | `write_demo_tables` (feature `rewrite`) |
//! | `table-maintenance.run` | `run_maintenance` (feature `rewrite`) |

#[cfg(feature = "rewrite")]
mod append;
#[cfg(feature = "rewrite")]
mod maintenance;
mod planner;
#[cfg(feature = "rewrite")]
mod table;
#[cfg(feature = "rewrite")]
mod tasks;

#[cfg(feature = "rewrite")]
pub use append::{compact_append_files, AppendInputFile, AppendRequest, AppendResult, OutputFile};
#[cfg(feature = "rewrite")]
pub use maintenance::{run_maintenance, MaintenanceRequest};
pub use planner::{
    explain_options, plan_bucket, run_conformance, BucketRequest, Decision, Reason, RewriteAction,
    TaskAction,
};
#[cfg(feature = "rewrite")]
pub use table::{compact_table, plan_table, write_demo_tables, TableJob};
#[cfg(feature = "rewrite")]
pub use tasks::{
    abort_tasks, commit_tasks, plan_tasks, release_job_leases, renew_leases, run_task,
    CommitOptions,
};

use crate::{Error, ErrorKind, Result};

/// Table options as the WIT passes them: `(key, value)` pairs, by Paimon key. A key given
/// twice takes its last value.
pub type Options = Vec<(String, String)>;

/// One step of a long job, for a progress bar or a log (the WIT `progress-event`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProgressEvent {
    /// The phase: `rewrite`, `compact`, ...
    pub phase: String,
    /// Units done and in total in this phase, counted in `unit`.
    pub done: u64,
    /// Units the phase has in all, in `unit` (`done` reaches it when the phase ends).
    pub total: u64,
    /// `files`, `steps`, ...
    pub unit: String,
    /// A line for people.
    pub message: String,
}

/// What a host provides beside the storage: services that are not bytes at a path. Passed by
/// reference next to the storage, never stored in it.
#[derive(Clone, Default)]
pub struct Services<'a> {
    /// Receives progress events; must return quickly. `None` reports nothing.
    pub progress: Option<&'a (dyn Fn(ProgressEvent) + Sync)>,
    /// The host's native zstd, when it offers one ([`crate::host_codec`]); `None`: the
    /// rewriters compress and decompress by themselves.
    pub host_codec: Option<std::sync::Arc<dyn crate::host_codec::HostCodec>>,
}

impl Services<'_> {
    /// `storage` shared with the host services the rewriters take.
    #[cfg(feature = "rewrite")]
    pub(crate) fn io(&self, storage: std::sync::Arc<dyn crate::storage::Storage>) -> crate::io::Io {
        crate::io::Io::new(storage).with_host_codec(self.host_codec.clone())
    }
}

impl Services<'_> {
    /// No services: no progress reported.
    pub fn none() -> Self {
        Services::default()
    }

    /// Reports one event to the progress sink, if there is one.
    #[cfg(feature = "rewrite")]
    fn report(&self, phase: &str, done: u64, total: u64, unit: &str, message: String) {
        if let Some(progress) = self.progress {
            progress(ProgressEvent {
                phase: phase.to_string(),
                done,
                total,
                unit: unit.to_string(),
                message,
            });
        }
    }
}

/// A value as JSON, for the WIT fields that carry JSON. Serializing our own report types fails
/// only on a bug of ours (a map with non-string keys), so the error says so instead of handing
/// the host an empty string it would blame on the component.
pub fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| {
        // Our own types always serialize: a failure is our bug, not the caller's misuse.
        Error::internal(format!("cannot serialize the result as JSON: {e}")).with_source(e)
    })
}

/// A job id as the table layer takes it: exactly 16 bytes, which the host draws at random (the
/// core has no randomness); new file names and the commit derive from it.
pub fn job_id(bytes: &[u8]) -> Result<[u8; 16]> {
    random_16("job-id", bytes)
}

/// 16 random bytes the host supplies for `key` (`job-id`, a fan-out task's `attempt`);
/// anything else is an invalid option naming that key.
fn random_16(key: &str, bytes: &[u8]) -> Result<[u8; 16]> {
    bytes.try_into().map_err(|_| {
        Error::new(
            ErrorKind::InvalidOption {
                key: key.into(),
                value: format!("{} bytes", bytes.len()),
            },
            format!("{key} must be 16 random bytes"),
        )
    })
}

/// Milliseconds on a monotonic clock since `started`, for phase timings.
#[cfg(feature = "rewrite")]
fn elapsed_ms(started: std::time::Instant) -> i64 {
    i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX)
}

/// Waits `ms` milliseconds: the commit back-off. Natively a thread sleep; in the component a
/// WASI monotonic-clock wait served by the host.
#[cfg(feature = "rewrite")]
fn sleep_ms(ms: u64) {
    std::thread::sleep(std::time::Duration::from_millis(ms));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_id_is_exactly_16_bytes() {
        assert_eq!(job_id(&[7; 16]).unwrap(), [7; 16]);
        let e = job_id(&[1, 2, 3]).unwrap_err();
        assert_eq!(
            e.kind,
            ErrorKind::InvalidOption {
                key: "job-id".into(),
                value: "3 bytes".into()
            }
        );
        assert_eq!(e.message, "job-id must be 16 random bytes");
    }

    #[test]
    fn an_attempt_of_the_wrong_length_is_named_as_such() {
        let e = random_16("attempt", &[1]).unwrap_err();
        assert_eq!(
            e.kind,
            ErrorKind::InvalidOption {
                key: "attempt".into(),
                value: "1 bytes".into()
            }
        );
        assert_eq!(e.message, "attempt must be 16 random bytes");
    }

    #[test]
    #[cfg(feature = "rewrite")]
    fn progress_goes_to_the_sink_when_there_is_one() {
        let seen = std::sync::Mutex::new(Vec::new());
        let sink = |e: ProgressEvent| seen.lock().unwrap().push(e);
        Services {
            progress: Some(&sink),
            ..Services::default()
        }
        .report("p", 1, 2, "files", "m".into());
        Services::none().report("p", 1, 2, "files", "m".into());
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!((seen[0].done, seen[0].total), (1, 2));
    }
}
