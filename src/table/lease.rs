//! One compaction job per partition: leases as lock objects created with `create_if_absent`.
//!
//! A lease of partition P is a small JSON object `compaction-lease/<P>-<generation>` naming
//! its owner and expiry. The holder is the highest generation. A free partition (no lease
//! object) is taken by creating generation 0; an expired lease is taken over by creating the
//! next generation, so two jobs that both see it expired race on one `create_if_absent` and
//! exactly one wins (deleting and re-creating the same name would let both win). Releasing
//! deletes the lease. Correctness never depends on leases alone: the commit's conflict check
//! still rejects a job whose inputs were compacted by someone else.

use crate::error::{Error, Result};
use crate::storage::{Storage, StorageErrorKind};

use super::path::TablePaths;

/// The content of a lease object.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LeaseRecord {
    /// Who runs the job, e.g. `host:pid` ([`crate::table::CompactOptions::owner`]);
    /// `unknown` when another job's lease object could not be read.
    pub owner: String,
    /// The holding job's id in UUID form; a job that finds its own id in a live lease may
    /// take the lease again.
    pub job_id: String,
    /// When the lease was taken, epoch milliseconds (the job's `now`).
    pub acquired_ms: i64,
    /// When the lease lapses, epoch milliseconds; from then on another job may take it
    /// over by creating the next generation.
    pub expires_ms: i64,
}

/// A held lease.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Lease {
    /// The partition's path (`k=v/...`), for messages and the report.
    pub partition: String,
    /// The lease object, `<table>/compaction-lease/<key>-<generation>`; releasing deletes it.
    pub path: String,
    /// What the lease object holds.
    pub record: LeaseRecord,
}

/// Why a lease was not granted.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LeaseHeld {
    /// The partition's path (`k=v/...`).
    pub partition: String,
    /// The current holder's lease record.
    pub holder: LeaseRecord,
}

/// The partition's key in lease names: hex of its serialized row (names stay plain whatever
/// the partition values contain).
pub fn lease_key(partition_bytes: &[u8]) -> String {
    partition_bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn generations(storage: &dyn Storage, paths: &TablePaths, key: &str) -> Result<Vec<(u64, String)>> {
    let prefix = format!("{}/{key}-", paths.lease_dir());
    let mut gens: Vec<(u64, String)> = storage
        .list(&prefix)?
        .into_iter()
        .filter_map(|o| {
            let g = o.path.strip_prefix(&prefix)?.parse::<u64>().ok()?;
            Some((g, o.path))
        })
        .collect();
    gens.sort();
    Ok(gens)
}

/// Tries to take the lease of a partition until `now_ms + ttl_ms`. `Ok(Err(held))` when
/// another live job holds it.
pub fn acquire(
    storage: &dyn Storage,
    paths: &TablePaths,
    partition_key: &str,
    partition_label: &str,
    record: LeaseRecord,
    now_ms: i64,
) -> Result<std::result::Result<Lease, LeaseHeld>> {
    let gens = generations(storage, paths, partition_key)?;
    let next = match gens.last() {
        None => 0,
        Some((g, path)) => {
            let current = match storage.read_all(path) {
                Ok(b) => serde_json::from_slice::<LeaseRecord>(&b)
                    .map_err(|e| Error::corrupt(Some(path), format!("not a lease record: {e}")))?,
                // Released between list and read: try the next generation.
                Err(e) if e.kind == StorageErrorKind::NotFound => {
                    return acquire_at(
                        storage,
                        paths,
                        partition_key,
                        partition_label,
                        record,
                        g + 1,
                    )
                }
                Err(e) => return Err(e.into()),
            };
            if current.expires_ms > now_ms && current.job_id != record.job_id {
                return Ok(Err(LeaseHeld {
                    partition: partition_label.to_string(),
                    holder: current,
                }));
            }
            g + 1
        }
    };
    acquire_at(storage, paths, partition_key, partition_label, record, next)
}

fn acquire_at(
    storage: &dyn Storage,
    paths: &TablePaths,
    partition_key: &str,
    partition_label: &str,
    record: LeaseRecord,
    generation: u64,
) -> Result<std::result::Result<Lease, LeaseHeld>> {
    let path = format!("{}/{partition_key}-{generation}", paths.lease_dir());
    let bytes = serde_json::to_vec(&record)
        .map_err(|e| Error::internal(format!("lease record: {e}")).with_source(e))?;
    match storage.create_if_absent(&path, &bytes) {
        Ok(()) => {
            // Older generations are dead now; removing them is housekeeping only.
            if let Ok(gens) = generations(storage, paths, partition_key) {
                for (g, p) in gens {
                    if g < generation {
                        let _ = storage.delete(&p);
                    }
                }
            }
            Ok(Ok(Lease {
                partition: partition_label.to_string(),
                path,
                record,
            }))
        }
        Err(e) if e.kind == StorageErrorKind::AlreadyExists => {
            let holder = storage
                .read_all(&path)
                .ok()
                .and_then(|b| serde_json::from_slice::<LeaseRecord>(&b).ok())
                .unwrap_or(LeaseRecord {
                    owner: "unknown".into(),
                    job_id: String::new(),
                    acquired_ms: 0,
                    expires_ms: 0,
                });
            Ok(Err(LeaseHeld {
                partition: partition_label.to_string(),
                holder,
            }))
        }
        Err(e) => Err(e.into()),
    }
}

/// Releases a lease (a lease that is already gone is fine).
pub fn release(storage: &dyn Storage, lease: &Lease) -> Result<()> {
    delete_lease_object(storage, &lease.path).map(|_| ())
}

/// Deletes one lease object; `false` when it was already gone (expired and taken over, or
/// released by someone cleaning up after the job), which is as good as deleted.
fn delete_lease_object(storage: &dyn Storage, path: &str) -> Result<bool> {
    match storage.delete(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind == StorageErrorKind::NotFound => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Releases every lease of the table held by the job `job_id` (UUID form) and returns the
/// lease objects deleted. For a host whose job stopped without releasing its own (the
/// component stopped at its time or memory limit, or by a panic, in the middle of planning or
/// committing): its partitions are free at once instead of after one TTL. Safe whatever the
/// job did: a job id is unique, so no other job's lease is touched, and a lease only guards
/// planning (the commit's conflict check is what keeps two jobs' commits apart). A lease
/// object that cannot be read is left alone.
pub fn release_job(storage: &dyn Storage, paths: &TablePaths, job_id: &str) -> Result<Vec<String>> {
    let prefix = format!("{}/", paths.lease_dir());
    let mut released = Vec::new();
    for object in storage.list(&prefix)? {
        let ours = storage
            .read_all(&object.path)
            .ok()
            .and_then(|b| serde_json::from_slice::<LeaseRecord>(&b).ok())
            .is_some_and(|r| r.job_id == job_id);
        if ours && delete_lease_object(storage, &object.path)? {
            released.push(object.path);
        }
    }
    Ok(released)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;

    fn rec(job: &str, expires: i64) -> LeaseRecord {
        LeaseRecord {
            owner: format!("host-{job}"),
            job_id: job.into(),
            acquired_ms: 0,
            expires_ms: expires,
        }
    }

    #[test]
    fn release_job_deletes_that_job_s_leases_only() {
        let s = MemoryStorage::new();
        let paths = TablePaths::new("t");
        let take = |key: &str, job: &str| {
            acquire(&s, &paths, key, key, rec(job, 1_000), 0)
                .unwrap()
                .unwrap()
        };
        take("aa", "job-1");
        take("bb", "job-1");
        let other = take("cc", "job-2");
        s.write_all("t/compaction-lease/dd-0", b"not json").unwrap();
        let released = release_job(&s, &paths, "job-1").unwrap();
        assert_eq!(
            released,
            ["t/compaction-lease/aa-0", "t/compaction-lease/bb-0"]
        );
        let left: Vec<String> = s
            .list("t/compaction-lease/")
            .unwrap()
            .into_iter()
            .map(|o| o.path)
            .collect();
        assert_eq!(left, [other.path.as_str(), "t/compaction-lease/dd-0"]);
        assert!(release_job(&s, &paths, "job-1").unwrap().is_empty());
    }

    #[test]
    fn one_holder_then_takeover_after_expiry() {
        let s = MemoryStorage::new();
        let p = TablePaths::new("t");
        let a = acquire(&s, &p, "00", "dt=1", rec("a", 100), 0)
            .unwrap()
            .unwrap();
        let held = acquire(&s, &p, "00", "dt=1", rec("b", 200), 50)
            .unwrap()
            .unwrap_err();
        assert_eq!(held.holder.job_id, "a");
        let b = acquire(&s, &p, "00", "dt=1", rec("b", 300), 150)
            .unwrap()
            .unwrap();
        assert!(b.path.ends_with("-1"));
        // The old generation is gone; a's late release does not free b's lease.
        release(&s, &a).unwrap();
        assert!(acquire(&s, &p, "00", "dt=1", rec("c", 400), 160)
            .unwrap()
            .is_err());
        release(&s, &b).unwrap();
        assert!(acquire(&s, &p, "00", "dt=1", rec("c", 400), 160)
            .unwrap()
            .is_ok());
    }
}
