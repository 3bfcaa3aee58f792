//! Postpone-bucket tables (`bucket = -2`) written by our demo writer into the postpone bucket,
//! compacted natively: every row reaches the real bucket Paimon's hash gives its key, with one
//! COMPACT snapshot that removes the postpone files; a partition keeps its bucket count; and
//! a failure at any storage call leaves the table as it was, with nothing written left
//! behind. (pypaimon-written tables, through the component too: `tests/pypaimon/test_postpone.py`.)

use crate::table_support;

use std::collections::BTreeSet;

use arrow_array::{Array, Int32Array, RecordBatch, StringArray};
use paimon_compact::plan::PlanContext;
use paimon_compact::storage::{MemoryStorage, Storage};
use paimon_compact::table::binary_row::{BinaryRow, Datum};
use paimon_compact::table::bucket_function::{bucket_of, hive_bucket};
use paimon_compact::table::demo::{create_table, field, new_schema, RowKind, TableWriter};
use paimon_compact::table::fanout::{
    abort_tasks, attempt_for, commit_tasks, plan_tasks, run_task, CommitTasksOptions,
    RunTaskOptions, Task, TaskResult, TaskSet,
};
use paimon_compact::table::scan::scan;
use paimon_compact::table::schema::DataType;
use paimon_compact::table::snapshot::{latest_snapshot_id, read_snapshot, CommitKind};
use paimon_compact::table::{compact_table, plan_table, CompactOptions, PlanRequest};
use table_support::{clone_of, fail_each_storage_call, open_live_file, read_rows};

const NOW: i64 = 1_750_000_000_000;

fn opts(seed: u8) -> CompactOptions<'static> {
    CompactOptions::new(PlanContext::at(NOW + 100, 3), [seed; 16])
}

/// A postpone table of `commits` commits over overlapping keys (k INT, name STRING), with
/// deletes, in the postpone bucket.
fn postpone_table(st: &dyn Storage, extra: &[(&str, &str)], commits: i32) {
    let mut options = vec![("bucket", "-2")];
    options.extend_from_slice(extra);
    create_table(
        st,
        "t",
        &new_schema(
            vec![
                field(0, "k", "INT NOT NULL").unwrap(),
                field(1, "name", "STRING NOT NULL").unwrap(),
                field(2, "v", "STRING").unwrap(),
            ],
            &[],
            &["k", "name"],
            &options,
            NOW,
        ),
    )
    .unwrap();
    append_commits(st, 0, commits);
}

/// The rows of commit `c`: 40 distinct keys, every eleventh a delete.
fn commit_rows(c: i32) -> Vec<(RowKind, i32, String, String)> {
    (0..40)
        .map(|i| {
            let k = (i * (c + 1)) % 53;
            let kind = if i % 11 == 10 {
                RowKind::Delete
            } else {
                RowKind::Insert
            };
            (kind, k, format!("a-long-name-{}", k % 5), format!("c{c}"))
        })
        .collect()
}

fn append_commits(st: &dyn Storage, from: i32, commits: i32) {
    let mut w = TableWriter::new(st, "t", [from as u8 + 3; 16]);
    for c in from..from + commits {
        let rows: Vec<_> = commit_rows(c)
            .into_iter()
            .map(|(kind, k, name, v)| {
                (
                    kind,
                    vec![Datum::Int(k), Datum::String(name), Datum::String(v)],
                )
            })
            .collect();
        w.commit(&rows, NOW + i64::from(c)).unwrap();
    }
}

/// What a reader must see after commits `0..commits`, in `read_rows`'s form: the newest
/// record of each key, deleted keys gone. (`read_rows` itself orders a key's records by
/// sequence number across buckets, which before a postpone compaction compares numbers of
/// different writers: it is only an oracle for an unchanged table.)
fn model(commits: i32) -> Vec<String> {
    let mut rows = std::collections::BTreeMap::new();
    for c in 0..commits {
        for (kind, k, name, v) in commit_rows(c) {
            if kind == RowKind::Delete {
                rows.remove(&k);
            } else {
                rows.insert(k, format!("{k}|{name}|{v}"));
            }
        }
    }
    let mut out: Vec<String> = rows.into_values().collect();
    out.sort();
    out
}

/// Panics unless every key in every live real-bucket file hashes to that bucket under the
/// default bucket function; returns the buckets holding files and the count their entries
/// record.
fn check_buckets(st: &dyn Storage) -> (BTreeSet<i32>, BTreeSet<i32>) {
    check_buckets_by(st, |key, types, n| {
        bucket_of(&BinaryRow::encode(key, types).unwrap(), n)
    })
}

/// [`check_buckets`] under the bucket function `bucket_of_key` (key, its types, the count).
fn check_buckets_by(
    st: &dyn Storage,
    bucket_of_key: impl Fn(&[Datum], &[DataType], i32) -> i32,
) -> (BTreeSet<i32>, BTreeSet<i32>) {
    let state = scan(st, "t").unwrap();
    let types = [
        DataType::parse("INT NOT NULL", "t").unwrap(),
        DataType::parse("STRING NOT NULL", "t").unwrap(),
    ];
    let (mut buckets, mut totals) = (BTreeSet::new(), BTreeSet::new());
    for b in state.buckets.values() {
        assert!(
            b.bucket >= 0 || b.files.is_empty(),
            "postpone files left: {:?}",
            b.files.len()
        );
        for l in &b.files {
            buckets.insert(b.bucket);
            totals.insert(l.entry.total_buckets);
            let (reader, _) = open_live_file(st, &state.table, b, l);
            for batch in reader {
                let batch: RecordBatch = batch.unwrap();
                let k = batch
                    .column(0)
                    .as_any()
                    .downcast_ref::<Int32Array>()
                    .unwrap();
                let name = batch
                    .column(1)
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .unwrap();
                for r in 0..batch.num_rows() {
                    let key = [
                        Datum::Int(k.value(r)),
                        Datum::String(name.value(r).to_string()),
                    ];
                    assert_eq!(
                        bucket_of_key(&key, &types, l.entry.total_buckets),
                        b.bucket,
                        "key {key:?}"
                    );
                }
                assert!(k.null_count() == 0);
            }
        }
    }
    (buckets, totals)
}

#[test]
fn postpone_rows_reach_the_bucket_of_their_key_in_one_compact_snapshot() {
    let st = MemoryStorage::new();
    let trigger = ("num-sorted-run.compaction-trigger", "2");
    postpone_table(&st, &[("postpone.default-bucket-num", "3"), trigger], 4);
    let rows = model(4);
    assert_eq!(read_rows(&st, "t"), rows);
    let plan = plan_table(&st, "t", &PlanRequest::default()).unwrap();
    assert_eq!(plan.summary.buckets_with_work, 1, "{plan:?}");
    assert_eq!(plan.buckets[0].reason.rule(), "postpone-replay");
    let before = latest_snapshot_id(&st, &scan(&st, "t").unwrap().table.paths).unwrap();
    let report = compact_table(&st, "t", &opts(1)).unwrap();
    let after = report.snapshot_after.unwrap();
    assert_eq!(after, before.unwrap() + 1);
    let paths = scan(&st, "t").unwrap().table.paths;
    assert_eq!(
        read_snapshot(&st, &paths, after).unwrap().commit_kind,
        CommitKind::Compact
    );
    assert_eq!(read_rows(&st, "t"), rows);
    let (buckets, totals) = check_buckets(&st);
    assert_eq!(buckets, BTreeSet::from([0, 1, 2]));
    assert_eq!(totals, BTreeSet::from([3]));
    // No replay run or consumed level-0 file is left on storage outside the snapshot.
    assert!(
        st.paths().iter().all(|p| !p.contains("-replay-")),
        "{:?}",
        st.paths()
    );

    // More postpone rows, and an option that would choose another count for a new partition:
    // the partition keeps its 3 buckets.
    append_commits(&st, 4, 2);
    let rows = model(6);
    let mut o = opts(2);
    o.full = true;
    o.scope.options = vec![("postpone.default-bucket-num".into(), "7".into())];
    let report = compact_table(&st, "t", &o).unwrap();
    assert_eq!(read_rows(&st, "t"), rows);
    assert_eq!(check_buckets(&st).1, BTreeSet::from([3]));
    // Forced full: each bucket's new level-0 file is merged with the file before it at once,
    // never reaching a snapshot or staying on storage.
    assert!(report.totals.rewrites >= 3, "{:?}", report.totals);
    let live: BTreeSet<String> = scan(&st, "t")
        .unwrap()
        .buckets
        .values()
        .flat_map(|b| b.files.iter().map(|l| l.entry.file.file_name.clone()))
        .collect();
    assert!(live.iter().all(|f| !f.contains("-replay-")));
    assert_eq!(live.len(), 3, "{live:?}");
}

#[test]
fn a_table_writing_level_0_as_avro_gets_its_replayed_buckets_in_avro() {
    // `file.format.per.level = '0:avro'`, Java's setting for faster writes: the replay writes
    // its level-0 files as Avro (the bucket's compaction may then upgrade them as they are),
    // and a full compaction writes the top level as Parquet.
    let st = MemoryStorage::new();
    let options = [
        ("postpone.default-bucket-num", "2"),
        ("file.format.per.level", "0:avro"),
    ];
    postpone_table(&st, &options, 3);
    let report = compact_table(&st, "t", &opts(5)).unwrap();
    assert!(report.snapshot_after.is_some(), "{report:?}");
    assert_eq!(read_rows(&st, "t"), model(3));
    let state = scan(&st, "t").unwrap();
    let replayed: Vec<String> = state
        .buckets
        .values()
        .filter(|b| b.bucket >= 0)
        .flat_map(|b| b.files.iter())
        .map(|l| l.entry.file.file_name.clone())
        .collect();
    assert!(
        !replayed.is_empty() && replayed.iter().all(|f| f.ends_with(".avro")),
        "{replayed:?}"
    );
    let mut full = opts(6);
    full.full = true;
    compact_table(&st, "t", &full).unwrap();
    assert_eq!(read_rows(&st, "t"), model(3));
    let state = scan(&st, "t").unwrap();
    assert!(state
        .buckets
        .values()
        .flat_map(|b| b.files.iter())
        .all(|l| l.entry.file.level > 0 && l.entry.file.file_name.ends_with(".parquet")));
}

#[test]
fn a_failure_at_any_storage_call_of_a_postpone_compaction_leaves_the_table_unchanged() {
    let base = MemoryStorage::new();
    // A replay buffer of 1 KB: every batch read becomes a run of each bucket, so the flush
    // merges several temporary runs per bucket, under fault injection too.
    let options = [
        ("postpone.default-bucket-num", "2"),
        ("num-sorted-run.compaction-trigger", "2"),
        ("paimon-compact.postpone.replay-buffer", "1 kb"),
    ];
    postpone_table(&base, &options, 3);
    // The second replay into existing buckets also compacts them.
    compact_table(&base, "t", &opts(7)).unwrap();
    append_commits(&base, 3, 2);
    let after = model(5);
    let mut full = opts(1);
    full.full = true;
    let report = fail_each_storage_call(&base, "t", 40, &after, |st| compact_table(st, "t", &full));
    assert!(report.totals.rewrites >= 2, "{:?}", report.totals);
}

#[test]
fn postpone_bucket_counts_and_bucket_functions() {
    // A new partition's count from its rows.
    let st = MemoryStorage::new();
    postpone_table(&st, &[("postpone.target-row-num-per-bucket", "25")], 2);
    let plan = plan_table(&st, "t", &PlanRequest::default()).unwrap();
    let n = plan.buckets[0].reason_text.clone();
    assert!(n.contains("into 4 buckets"), "{n}");
    // `hive`: every key lands in the bucket of Hive's hash (checked against Java HEAD's
    // function in `bucket_function`'s tests), and reads as before.
    let st = MemoryStorage::new();
    postpone_table(
        &st,
        &[
            ("bucket-function.type", "hive"),
            ("postpone.default-bucket-num", "5"),
        ],
        3,
    );
    let report = compact_table(&st, "t", &opts(1)).unwrap();
    assert!(report.snapshot_after.is_some(), "{report:?}");
    assert_eq!(read_rows(&st, "t"), model(3));
    let (buckets, _) = check_buckets_by(&st, |key, types, n| hive_bucket(key, types, n).unwrap());
    assert!(buckets.len() > 1, "{buckets:?}");
    // And not where the default function puts them (the check above would notice).
    let mismatched = (0..53).filter(|&k| {
        let key = [
            Datum::Int(k),
            Datum::String(format!("a-long-name-{}", k % 5)),
        ];
        let types = [
            DataType::parse("INT NOT NULL", "t").unwrap(),
            DataType::parse("STRING NOT NULL", "t").unwrap(),
        ];
        hive_bucket(&key, &types, 5).unwrap()
            != bucket_of(&BinaryRow::encode(&key, &types).unwrap(), 5)
    });
    assert!(mismatched.count() > 10);
}

/// A task, or a result, after a trip through its JSON (as between processes).
fn via_json<T: serde::Serialize + serde::de::DeserializeOwned>(v: &T) -> T {
    serde_json::from_str(&serde_json::to_string(v).unwrap()).unwrap()
}

#[test]
fn a_postpone_task_runs_anywhere_and_commits_what_the_job_commits() {
    let one = MemoryStorage::new();
    postpone_table(&one, &[("postpone.default-bucket-num", "3")], 3);
    let fanned = clone_of(&one);
    let aborted = clone_of(&one);
    let expected = model(3);
    let job = compact_table(&one, "t", &opts(9)).unwrap();

    let set: TaskSet = via_json(&plan_tasks(&fanned, "t", &opts(9)).unwrap());
    assert_eq!(set.tasks.len(), 1);
    assert_eq!(set.tasks[0].bucket, -2);
    let task: Task = via_json(&set.tasks[0]);
    let run = RunTaskOptions {
        attempt: attempt_for([9; 16], 0),
        clock: None,
    };
    let result: TaskResult = via_json(&run_task(&fanned, &task, &run).unwrap());
    let report = commit_tasks(&fanned, &set, &[result], &CommitTasksOptions::default()).unwrap();
    assert_eq!(report.snapshot_after, job.snapshot_after);
    assert_eq!(read_rows(&fanned, "t"), expected);
    for p in one.paths() {
        if !p.contains("/snapshot/") && !p.contains("/manifest/") {
            assert_eq!(fanned.get(&p), one.get(&p), "{p}");
        }
    }

    // An aborted postpone job deletes what its attempt wrote in every real bucket.
    let before: BTreeSet<String> = aborted.paths().into_iter().collect();
    let set = plan_tasks(&aborted, "t", &opts(9)).unwrap();
    let run = RunTaskOptions {
        attempt: [5; 16],
        clock: None,
    };
    run_task(&aborted, &set.tasks[0], &run).unwrap();
    let report = abort_tasks(&aborted, &set, &[]).unwrap();
    assert!(report.failed.is_empty(), "{report:?}");
    assert!(report.deleted.len() >= 3, "{report:?}");
    let now: BTreeSet<String> = aborted.paths().into_iter().collect();
    assert_eq!(now, before);
}
