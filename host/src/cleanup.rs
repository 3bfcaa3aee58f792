//! What the host cleans up after a job that stopped without cleaning up itself.
//!
//! The core releases its leases and deletes what it wrote on every error it returns. A
//! component stopped by the host (its time or memory limit) or by a panic (a trap) returns
//! nothing: whatever the call had taken stays, its leases until they expire (one TTL, during
//! which another job skips those partitions). So after a failed job the host itself releases
//! the leases that name the job, natively, not through a component instance that the same
//! limit would stop again. Files the job wrote are its commit's business: the job's abort
//! deletes them, and falls back to the native engine when the component cannot run it
//! ([`crate::parallel`]); what still remains is an orphan for `remove-orphan-files`.

use paimon_compact::api;
use paimon_compact::storage::Storage;

/// Releases the leases of `table_path` held by the job `job_id` (its 16 bytes); best effort:
/// returns why it could not, as a warning (the leases then expire after their TTL).
pub fn release_job_leases(
    storage: &dyn Storage,
    table_path: &str,
    job_id: &[u8],
) -> Option<String> {
    match api::release_job_leases(storage, table_path, job_id) {
        Ok(_) => None,
        Err(e) => Some(format!(
            "the job's leases could not be released (they expire after their TTL): {e}"
        )),
    }
}
