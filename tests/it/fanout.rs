//! Fan-out end to end on primary-key tables with deletion vectors and a lookup changelog:
//! tasks serialized to JSON and run in any order and any number of times, one commit that
//! takes one result per task, aborts, refusals that change nothing, leases held and renewed
//! for the job's lifetime, and a storage failure injected at every call of a task's run.
#![cfg(feature = "rewrite")]

use crate::table_support;

use std::collections::BTreeSet;

use paimon_compact::plan::PlanContext;
use paimon_compact::storage::{MemoryStorage, Storage};
use paimon_compact::table::binary_row::Datum;
use paimon_compact::table::demo::{create_table, field, new_schema, RowKind, TableWriter};
use paimon_compact::table::fanout::{
    abort_tasks, attempt_for, commit_tasks, plan_tasks, renew_leases, run_task, CommitTasksOptions,
    RunTaskOptions, Task, TaskResult, TaskSet,
};
use paimon_compact::table::ids::job_tag;
use paimon_compact::table::snapshot::latest_snapshot_id;
use paimon_compact::table::{compact_table, CompactOptions};
use paimon_compact::ErrorKind;
use table_support::{clone_of, read_rows, FaultyStorage};

const NOW: i64 = 1_760_000_000_000;
const JOB: u8 = 0x5e;

/// A primary-key table over two partitions and three buckets, with deletion vectors and a
/// lookup changelog, after a first compaction and more rounds of overlapping writes: every
/// bucket has work, with lookups that mark rows in older files.
fn table() -> MemoryStorage {
    let st = MemoryStorage::new();
    let schema = new_schema(
        vec![
            field(0, "k", "BIGINT NOT NULL").unwrap(),
            field(1, "dt", "STRING NOT NULL").unwrap(),
            field(2, "v", "STRING").unwrap(),
        ],
        &["dt"],
        &["k", "dt"],
        &[
            ("bucket", "3"),
            ("deletion-vectors.enabled", "true"),
            ("changelog-producer", "lookup"),
        ],
        NOW,
    );
    create_table(&st, "t", &schema).unwrap();
    for round in 0..3i64 {
        let mut w = TableWriter::new(&st, "t", [round as u8 + 1; 16]);
        for c in 0..3i64 {
            let rows: Vec<(RowKind, Vec<Datum>)> = (0..80)
                .map(|i| {
                    let k = (i * 7 + c * 13 + round * 5) % 150;
                    let kind = if (i + c) % 9 == 0 {
                        RowKind::Delete
                    } else {
                        RowKind::Insert
                    };
                    (
                        kind,
                        vec![
                            Datum::BigInt(k),
                            Datum::String(format!("2025-01-0{}", k % 2 + 1)),
                            Datum::String(format!("r{round}-c{c}-{i}")),
                        ],
                    )
                })
                .collect();
            w.commit(&rows, NOW + round * 10 + c).unwrap();
        }
        if round == 0 {
            let mut o = opts(0x11);
            o.full = true;
            compact_table(&st, "t", &o).unwrap();
        }
    }
    st
}

fn opts(job: u8) -> CompactOptions<'static> {
    CompactOptions::new(PlanContext::at(NOW + 1000, 3), [job; 16])
}

fn paths(st: &MemoryStorage) -> BTreeSet<String> {
    st.paths().into_iter().collect()
}

/// A task set, or a task, or a result, after a trip through its JSON (as between processes).
fn via_json_set(set: &TaskSet) -> TaskSet {
    let json = serde_json::to_string(set).unwrap();
    let back = TaskSet::from_json(&json).unwrap();
    assert_eq!(&back, set);
    back
}

fn via_json_task(t: &Task) -> Task {
    Task::from_json(&serde_json::to_string(t).unwrap()).unwrap()
}

fn via_json_result(r: &TaskResult) -> TaskResult {
    TaskResult::from_json(&serde_json::to_string(r).unwrap()).unwrap()
}

fn run<S: Storage + Clone + 'static>(st: &S, t: &Task, attempt: [u8; 16]) -> TaskResult {
    let r = run_task(
        st,
        &via_json_task(t),
        &RunTaskOptions {
            attempt,
            clock: None,
        },
    )
    .unwrap();
    via_json_result(&r)
}

fn commit(
    st: &dyn Storage,
    set: &TaskSet,
    results: &[TaskResult],
) -> paimon_compact::Result<paimon_compact::table::CompactReport> {
    commit_tasks(
        st,
        set,
        results,
        &CommitTasksOptions {
            external_results: true,
            keep_on_failure: true,
            ..Default::default()
        },
    )
}

/// Paths that carry the job's tag, outside `manifest/` (data, changelog, index files).
fn tagged_files(st: &MemoryStorage, job: u8) -> BTreeSet<String> {
    let tag = job_tag([job; 16]);
    paths(st)
        .into_iter()
        .filter(|p| p.contains(&tag) && !p.contains("/manifest/"))
        .collect()
}

#[test]
fn tasks_run_in_any_order_after_a_trip_through_json_commit_what_the_job_commits() {
    let one = table();
    let fanned = clone_of(&one);
    let expected = read_rows(&one, "t");
    let job = compact_table(&one, "t", &opts(JOB)).unwrap();
    assert!(job.snapshot_after.is_some());

    let set = via_json_set(&plan_tasks(&fanned, "t", &opts(JOB)).unwrap());
    assert!(set.tasks.len() >= 4, "{} tasks", set.tasks.len());
    assert_eq!(set.leases.len(), 2, "one lease per partition with work");
    let mut results: Vec<TaskResult> = set
        .tasks
        .iter()
        .rev()
        .map(|t| run(&fanned, t, attempt_for([JOB; 16], t.index)))
        .collect();
    results.reverse();
    let report = commit(&fanned, &set, &results).unwrap();
    assert_eq!(report.snapshot_after, job.snapshot_after);
    assert_eq!(report.totals, job.totals);
    assert_eq!(read_rows(&fanned, "t"), expected);
    // The same names and the same bytes, leases released in both.
    assert_eq!(paths(&fanned), paths(&one));
    // Data and index files byte for byte (Avro headers order their metadata as a hash map
    // does, so manifests are compared by what they hold: the rows above).
    for p in paths(&one) {
        if !p.contains("/snapshot/") && !p.contains("/manifest/") {
            assert_eq!(fanned.get(&p), one.get(&p), "{p}");
        }
    }
    assert!(!paths(&fanned)
        .iter()
        .any(|p| p.contains("compaction-lease")));
}

#[test]
fn a_task_run_twice_is_committed_once_and_the_other_attempts_files_go() {
    let st = table();
    let expected = read_rows(&st, "t");
    let before = latest_snapshot_id(&st, &paimon_compact::table::path::TablePaths::new("t"))
        .unwrap()
        .unwrap();
    let set = plan_tasks(&st, "t", &opts(JOB)).unwrap();
    let mut results = Vec::new();
    // Task 0: three attempts; the last dies without handing in its result.
    results.push(run(&st, &set.tasks[0], [1; 16]));
    results.push(run(&st, &set.tasks[0], [2; 16]));
    let lost = run(&st, &set.tasks[0], [3; 16]);
    for t in &set.tasks[1..] {
        results.push(run(&st, t, [4; 16]));
    }
    // The same result given twice counts once.
    results.push(results[1].clone());
    let report = commit(&st, &set, &results).unwrap();
    assert_eq!(report.snapshot_after, Some(before + 1));
    assert_eq!(read_rows(&st, "t"), expected);
    let chosen: BTreeSet<String> = results
        .iter()
        .filter(|r| r.task != 0 || r.attempt == results[0].attempt)
        .flat_map(|r| r.written_paths("t"))
        .collect();
    assert_eq!(
        tagged_files(&st, JOB),
        chosen,
        "only the chosen attempts' files stay"
    );
    for p in results[1]
        .written_paths("t")
        .iter()
        .chain(&lost.written_paths("t"))
    {
        assert!(st.get(p).is_none(), "{p} of an unused attempt is gone");
    }
}

#[test]
fn a_failing_attempt_deletes_what_it_wrote_and_a_retry_commits() {
    let base = table();
    let expected = read_rows(&base, "t");
    // How many storage calls a clean run of task 0 makes.
    let probe = FaultyStorage::new(clone_of(&base), None);
    let set = plan_tasks(&probe, "t", &opts(JOB)).unwrap();
    let start = probe.calls.load(std::sync::atomic::Ordering::SeqCst);
    run(&probe, &set.tasks[0], [1; 16]);
    let calls = probe.calls.load(std::sync::atomic::Ordering::SeqCst) - start;
    assert!(calls > 10, "{calls} calls");
    let mut failed = 0;
    for k in (0..calls).step_by((calls / 25).max(1)) {
        let st = clone_of(&base);
        let set = plan_tasks(&st, "t", &opts(JOB)).unwrap();
        let before = paths(&st);
        let faulty = FaultyStorage::new(st.clone(), None);
        let faulty = FaultyStorage {
            fail_at: Some(faulty.calls.load(std::sync::atomic::Ordering::SeqCst) + k),
            ..faulty
        };
        let e = run_task(
            &faulty,
            &set.tasks[0],
            &RunTaskOptions {
                attempt: [1; 16],
                clock: None,
            },
        );
        if e.is_err() {
            failed += 1;
            assert_eq!(
                paths(&st),
                before,
                "call {k}: a failed attempt leaves nothing"
            );
        }
        let results: Vec<TaskResult> = set.tasks.iter().map(|t| run(&st, t, [2; 16])).collect();
        commit(&st, &set, &results).unwrap();
        assert_eq!(read_rows(&st, "t"), expected, "call {k}");
        assert_eq!(
            tagged_files(&st, JOB),
            results.iter().flat_map(|r| r.written_paths("t")).collect(),
            "call {k}"
        );
    }
    assert!(failed > 10, "{failed} injected failures reached the run");
}

#[test]
fn an_aborted_job_leaves_the_table_as_it_was() {
    let st = table();
    let before = paths(&st);
    let set = plan_tasks(&st, "t", &opts(JOB)).unwrap();
    assert!(paths(&st).iter().any(|p| p.contains("compaction-lease")));
    let results: Vec<TaskResult> = set.tasks[..2]
        .iter()
        .map(|t| run(&st, t, [1; 16]))
        .collect();
    // An attempt that died without a result, and one whose result the driver never saw.
    run(&st, &set.tasks[2], [2; 16]);
    let report = abort_tasks(&st, &set, &results).unwrap();
    assert!(report.failed.is_empty(), "{report:?}");
    assert!(report.deleted.len() > 2, "{report:?}");
    assert_eq!(report.leases_released, 2);
    assert_eq!(paths(&st), before);
}

#[test]
fn a_committed_job_is_neither_committed_again_nor_aborted() {
    let st = table();
    let set = plan_tasks(&st, "t", &opts(JOB)).unwrap();
    let results: Vec<TaskResult> = set.tasks.iter().map(|t| run(&st, t, [1; 16])).collect();
    let first = commit(&st, &set, &results).unwrap();
    let rows = read_rows(&st, "t");
    let after = paths(&st);
    let e = commit(&st, &set, &results).unwrap_err();
    assert_eq!(e.kind, ErrorKind::IllegalState, "{e}");
    assert!(
        e.message
            .contains(&format!("snapshot {}", first.snapshot_after.unwrap())),
        "{e}"
    );
    let e = abort_tasks(&st, &set, &results).unwrap_err();
    assert_eq!(e.kind, ErrorKind::IllegalState, "{e}");
    assert_eq!(paths(&st), after, "neither touched a file");
    assert_eq!(read_rows(&st, "t"), rows);
}

#[test]
fn missing_or_foreign_results_are_refused_and_nothing_changes() {
    let st = table();
    let set = plan_tasks(&st, "t", &opts(JOB)).unwrap();
    let results: Vec<TaskResult> = set.tasks.iter().map(|t| run(&st, t, [1; 16])).collect();
    let before = paths(&st);
    let e = commit(&st, &set, &results[1..]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::IllegalState, "{e}");
    assert!(e.message.contains("task 0 of job"), "{e}");
    let mut foreign = results.clone();
    foreign[0].job_id = "00".repeat(16);
    let e = commit(&st, &set, &foreign).unwrap_err();
    assert_eq!(e.kind, ErrorKind::IllegalState, "{e}");
    let mut future = results.clone();
    future[0].format_version = 99;
    let e = commit(&st, &set, &future).unwrap_err();
    assert_eq!(e.kind, ErrorKind::IllegalState, "{e}");
    assert_eq!(paths(&st), before);
    // The real results still commit.
    commit(&st, &set, &results).unwrap();
}

#[test]
fn the_job_holds_its_leases_until_the_commit_and_renewals_replace_them() {
    let st = table();
    let set = plan_tasks(&st, "t", &opts(JOB)).unwrap();
    // Another job meanwhile finds every partition leased and does nothing.
    let other = compact_table(&st, "t", &opts(0x77)).unwrap();
    assert_eq!(other.leases_held_elsewhere.len(), 2);
    assert!(other.snapshot_after.is_none());
    let renewed = renew_leases(&st, &set, NOW + 2000, 60_000).unwrap();
    assert_ne!(renewed.leases, set.leases);
    assert!(renewed
        .leases
        .iter()
        .all(|l| l.record.expires_ms == NOW + 62_000));
    let lease_files = |st: &MemoryStorage| {
        paths(st)
            .into_iter()
            .filter(|p| p.contains("compaction-lease"))
            .collect::<Vec<_>>()
    };
    assert_eq!(lease_files(&st).len(), 2, "old generations are gone");
    let results: Vec<TaskResult> = renewed.tasks.iter().map(|t| run(&st, t, [1; 16])).collect();
    commit(&st, &renewed, &results).unwrap();
    assert!(
        lease_files(&st).is_empty(),
        "the commit released the renewed leases"
    );
}

#[test]
fn a_task_planned_on_another_schema_is_refused() {
    let st = table();
    let set = plan_tasks(&st, "t", &opts(JOB)).unwrap();
    let mut task = set.tasks[0].clone();
    task.schema_id += 1;
    let e = run_task(
        &st,
        &task,
        &RunTaskOptions {
            attempt: [1; 16],
            clock: None,
        },
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Conflict, "{e}");
    assert!(e.message.contains("plan the job again"), "{e}");
}
