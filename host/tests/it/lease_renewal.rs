//! Leases that follow the job: while a job's tasks run, the host renews its partition leases
//! every third of their time to live ([`paimon_compact_host::parallel`]), so a job longer than
//! the TTL keeps its partitions without a gap another job could take them in; and a job whose
//! renewal fails, or finds a partition taken over, stops before its commit and leaves the table
//! as it was. Both engines (the renewal is the host's; the component stays clockless).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use paimon_compact::storage::{
    MemoryStorage, ObjectMeta, Storage, StorageError, StorageErrorKind, StorageResult,
    StorageWriter,
};
use paimon_compact::table::lease::LeaseRecord;
use paimon_compact::ErrorKind;
use paimon_compact_host::{Compactor, HostError, Limits};

use crate::engines::{demo_job, wasm};

/// The lease TTL of these jobs: renewed every 200 ms.
const TTL_MS: i64 = 600;
/// How long the first write of a chosen kind is held: several TTLs, and past the time limit
/// of the stopped jobs.
const HOLD: Duration = Duration::from_millis(1_800);
/// A task's first data file.
const DATA: &str = "/bucket-";

/// What the storage does when a job renews a lease (creates generation 1 or later).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum OnRenewal {
    /// Let it through.
    Grant,
    /// Fail the write, as a storage outage would.
    Fail,
    /// Another job takes the partition over first (its lease lapsed, say, in a pause of this
    /// process), so the renewal finds it held.
    TakeOver,
}

/// Memory storage that holds a job's first write of a path containing `hold_at` for
/// [`HOLD`], applies [`OnRenewal`], and logs every lease object created, with the wall-clock
/// time of its creation.
struct Renewals {
    inner: MemoryStorage,
    on_renewal: OnRenewal,
    hold_at: &'static str,
    hold_next_write: AtomicBool,
    created: Mutex<Vec<(String, LeaseRecord, i64)>>,
}

impl Renewals {
    fn hold(&self, path: &str) {
        if path.contains(self.hold_at) && self.hold_next_write.swap(false, Ordering::SeqCst) {
            std::thread::sleep(HOLD);
        }
    }
}

fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The lease name's key and generation (`.../compaction-lease/<key>-<generation>`).
fn lease_name(path: &str) -> Option<(String, u64)> {
    let name = path.split("/compaction-lease/").nth(1)?;
    let (key, generation) = name.rsplit_once('-')?;
    Some((key.to_string(), generation.parse().ok()?))
}

impl Storage for Renewals {
    fn size(&self, path: &str) -> StorageResult<u64> {
        self.inner.size(path)
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        self.inner.read_range(path, offset, len)
    }
    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        self.inner.list(prefix)
    }
    fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter>> {
        self.hold(path);
        self.inner.create_writer(path)
    }
    fn delete(&self, path: &str) -> StorageResult<()> {
        self.inner.delete(path)
    }
    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
        self.hold(path);
        if let Some((_, generation)) = lease_name(path) {
            if generation > 0 {
                match self.on_renewal {
                    OnRenewal::Grant => {}
                    OnRenewal::Fail => {
                        return Err(StorageError::new(
                            StorageErrorKind::Io,
                            path,
                            "the lease store is unreachable (test)",
                        ))
                    }
                    OnRenewal::TakeOver => {
                        let other = LeaseRecord {
                            owner: "other-host:1".into(),
                            job_id: "00000000-0000-0000-0000-00000000beef".into(),
                            acquired_ms: wall_ms(),
                            expires_ms: wall_ms() + 600_000,
                        };
                        let json = serde_json::to_vec(&other).unwrap();
                        // The other job's create wins the generation.
                        let _ = self.inner.create_if_absent(path, &json);
                    }
                }
            }
            let record: LeaseRecord = serde_json::from_slice(bytes).unwrap();
            let result = self.inner.create_if_absent(path, bytes);
            if result.is_ok() {
                self.created
                    .lock()
                    .unwrap()
                    .push((path.to_string(), record, wall_ms()));
            }
            return result;
        }
        self.inner.create_if_absent(path, bytes)
    }
}

/// A full compaction of the demo table by `engine`'s job of `TTL_MS` leases, on storage that
/// does `on_renewal` and holds the first write at `hold_at`; the storage (before and after),
/// and the outcome.
fn run(
    engine: &Compactor,
    on_renewal: OnRenewal,
    hold_at: &'static str,
) -> (
    Arc<Renewals>,
    Vec<String>,
    Result<paimon_compact::maintenance::maintain::JobReport, HostError>,
) {
    // Written natively: `engine` may be one whose limits stop the writing too.
    let (memory, table, mut job) = demo_job(&Compactor::Native, &[]);
    job.lease_ttl_ms = Some(TTL_MS);
    // The job's clock reading as the CLI takes it, just before the job (writing the tables
    // may have taken more than a TTL on a loaded machine, and the leases run from it).
    job.now_ms = wall_ms();
    let before = memory.paths();
    let storage = Arc::new(Renewals {
        inner: memory,
        on_renewal,
        hold_at,
        hold_next_write: AtomicBool::new(true),
        created: Mutex::new(Vec::new()),
    });
    let result = paimon_compact_host::parallel::compact_parallel(
        engine,
        storage.clone(),
        &table,
        &job,
        1,
        None,
    );
    (storage, before, result)
}

fn lease_paths(paths: &[String]) -> Vec<&String> {
    paths
        .iter()
        .filter(|p| p.contains("/compaction-lease/"))
        .collect()
}

fn snapshots(paths: &[String]) -> Vec<&String> {
    paths
        .iter()
        .filter(|p| p.contains("/snapshot/snapshot-"))
        .collect()
}

/// A job three TTLs long commits, having renewed each partition's lease before it lapsed:
/// every generation was created before the one it replaced expired. Its leases are released.
#[test]
fn a_job_longer_than_its_lease_ttl_renews_without_a_gap_and_commits() {
    for engine in [Compactor::Native, wasm(Limits::default())] {
        let (storage, before, result) = run(&engine, OnRenewal::Grant, DATA);
        let report = result.unwrap_or_else(|e| panic!("{}: {e}", engine.name()));
        assert!(
            report.compaction.snapshot_after.is_some(),
            "{}",
            engine.name()
        );
        let after = storage.inner.paths();
        assert_eq!(snapshots(&after).len(), snapshots(&before).len() + 1);
        assert!(lease_paths(&after).is_empty(), "released: {after:?}");
        let created = storage.created.lock().unwrap();
        let mut keys: Vec<String> = created
            .iter()
            .filter_map(|(p, _, _)| lease_name(p).map(|(k, _)| k))
            .collect();
        keys.sort();
        keys.dedup();
        assert!(!keys.is_empty(), "{}: the job took leases", engine.name());
        for key in keys {
            let chain: Vec<_> = created
                .iter()
                .filter(|(p, _, _)| lease_name(p).is_some_and(|(k, _)| k == key))
                .collect();
            let generations: Vec<u64> = chain
                .iter()
                .map(|(p, _, _)| lease_name(p).unwrap().1)
                .collect();
            assert_eq!(
                generations,
                (0..chain.len() as u64).collect::<Vec<_>>(),
                "{}: one generation after another",
                engine.name()
            );
            assert!(
                chain.len() >= 3,
                "{}: a job of {HOLD:?} renews a {TTL_MS} ms lease more than twice: {generations:?}",
                engine.name()
            );
            for pair in chain.windows(2) {
                let (_, held, _) = pair[0];
                let (path, _, renewed_at) = pair[1];
                assert!(
                    *renewed_at < held.expires_ms,
                    "{}: {path} created at {renewed_at}, after the lease it renews lapsed at {}",
                    engine.name(),
                    held.expires_ms
                );
            }
        }
    }
}

/// A renewal that fails stops the job before its commit: no snapshot, every file it wrote
/// deleted, its lease released; the table is exactly as before.
#[test]
fn a_job_whose_lease_renewal_fails_stops_before_its_commit() {
    for engine in [Compactor::Native, wasm(Limits::default())] {
        let (storage, before, result) = run(&engine, OnRenewal::Fail, DATA);
        let err = result.expect_err("the job must not commit");
        assert!(
            err.to_string().contains("unreachable"),
            "{}: the renewal's error: {err}",
            engine.name()
        );
        assert_eq!(storage.inner.paths(), before, "{}", engine.name());
    }
}

/// A partition taken over by another job while this one ran is a conflict: the job stops
/// before its commit, deletes what it wrote, and leaves the other job's lease alone.
#[test]
fn a_job_whose_partition_was_taken_over_stops_before_its_commit() {
    for engine in [Compactor::Native, wasm(Limits::default())] {
        let (storage, before, result) = run(&engine, OnRenewal::TakeOver, DATA);
        let err = result.expect_err("the job must not commit");
        let HostError::Core(core) = &err else {
            panic!("{}: not a core error: {err}", engine.name())
        };
        assert_eq!(core.kind, ErrorKind::Conflict, "{}: {err}", engine.name());
        assert!(core.message.contains("other-host:1"), "{err}");
        let after = storage.inner.paths();
        assert_eq!(snapshots(&after), snapshots(&before), "{}", engine.name());
        let others = lease_paths(&after);
        assert_eq!(
            others.len(),
            1,
            "{}: the other job's lease: {after:?}",
            engine.name()
        );
        let unleased: Vec<&String> = after
            .iter()
            .filter(|p| !p.contains("/compaction-lease/"))
            .collect();
        assert_eq!(
            unleased,
            before.iter().collect::<Vec<_>>(),
            "{}",
            engine.name()
        );
    }
}

/// A job the host stops at its time limit, wherever it is, leaves no lease for the next job
/// to wait out, and no file: while planning (after it took a lease), in a task, or in the
/// commit before its snapshot, the table is exactly as it was; stopped right after its
/// snapshot was written, the commit stands and only the leases go. The host releases and
/// aborts, natively, what the stopped component could not.
#[test]
fn a_job_stopped_at_its_time_limit_leaves_no_lease_and_no_file() {
    let engine = wasm(Limits {
        max_memory_bytes: 1 << 30,
        timeout: Some(Duration::from_millis(1_000)),
    });
    for (hold_at, committed) in [
        ("/compaction-lease/", false),
        (DATA, false),
        ("/manifest/", false),
        ("/snapshot/snapshot-", true),
    ] {
        let (storage, before, result) = run(&engine, OnRenewal::Grant, hold_at);
        let err = result.unwrap_err();
        assert!(
            matches!(err, HostError::TimeLimit { .. }),
            "{hold_at}: {err}"
        );
        let after = storage.inner.paths();
        assert!(lease_paths(&after).is_empty(), "{hold_at}: {after:?}");
        if committed {
            assert_eq!(snapshots(&after).len(), snapshots(&before).len() + 1);
        } else {
            assert_eq!(after, before, "stopped at the first write of {hold_at}");
        }
    }
    // The one-call job (the demo's, Node's): its leases are released; what it wrote before
    // it was stopped is left to remove-orphan-files (the host has no task set to abort).
    let (memory, table, job) = demo_job(&Compactor::Native, &[]);
    let storage = Arc::new(Renewals {
        inner: memory,
        on_renewal: OnRenewal::Grant,
        hold_at: DATA,
        hold_next_write: AtomicBool::new(true),
        created: Mutex::new(Vec::new()),
    });
    let before = storage.inner.paths();
    let err = engine
        .compact_table(storage.clone(), &table, &job, None)
        .unwrap_err();
    assert!(matches!(err, HostError::TimeLimit { .. }), "{err}");
    let after = storage.inner.paths();
    assert!(lease_paths(&after).is_empty(), "{after:?}");
    assert_eq!(snapshots(&after), snapshots(&before));
}

/// `release-leases` (WIT `compaction-job`), the call a host without a native core makes on a
/// fresh instance after a job's call trapped: it frees exactly that job's partitions (the
/// table's next job takes them at once) and leaves another job's leases, on another table of
/// the same storage, alone. Both engines, the same answer; a malformed job id is refused.
#[test]
fn release_leases_frees_exactly_the_job_s_partitions() {
    for engine in [Compactor::Native, wasm(Limits::default())] {
        let (memory, orders, job) = demo_job(&Compactor::Native, &[]);
        let storage: Arc<dyn Storage> = Arc::new(memory.clone());
        let events = orders.replace("/orders", "/events");
        let other = paimon_compact::api::TableJob {
            job_id: vec![0xab; 16],
            ..job.clone()
        };
        engine.plan_tasks(storage.clone(), &orders, &job).unwrap();
        engine.plan_tasks(storage.clone(), &events, &other).unwrap();
        let held = lease_paths(&memory.paths()).len();
        let ours: Vec<String> = memory
            .paths()
            .into_iter()
            .filter(|p| p.starts_with(&format!("{orders}/compaction-lease/")))
            .collect();
        assert!(!ours.is_empty() && held > ours.len(), "{}", engine.name());

        let mut released = engine
            .release_job_leases(storage.clone(), &orders, &job)
            .unwrap();
        released.sort();
        assert_eq!(released, ours, "{}", engine.name());
        let left = memory.paths();
        assert_eq!(
            lease_paths(&left).len(),
            held - ours.len(),
            "{}",
            engine.name()
        );
        assert!(
            lease_paths(&left).iter().all(|p| p.starts_with(&events)),
            "{}: {left:?}",
            engine.name()
        );
        // Released again: nothing left to release.
        let again = engine.release_job_leases(storage.clone(), &orders, &job);
        assert_eq!(again.unwrap(), Vec::<String>::new(), "{}", engine.name());
        // The table's next job plans every partition again (none is leased).
        let next = paimon_compact::api::TableJob {
            job_id: vec![0xcd; 16],
            ..job.clone()
        };
        let set = engine.plan_tasks(storage.clone(), &orders, &next).unwrap();
        assert!(!set.tasks.is_empty(), "{}", engine.name());

        let bad = paimon_compact::api::TableJob {
            job_id: vec![1; 3],
            ..job.clone()
        };
        let err = engine
            .release_job_leases(storage.clone(), &orders, &bad)
            .unwrap_err();
        let HostError::Core(core) = &err else {
            panic!("{}: not a core error: {err}", engine.name())
        };
        assert!(
            matches!(core.kind, ErrorKind::InvalidOption { .. }),
            "{}: {err}",
            engine.name()
        );
    }
}
