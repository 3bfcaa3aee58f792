//! Typed errors of the merge rewrite, and what it leaves behind when it fails: keys out of
//! order, missing system columns, unsupported options and combinations, refused retractions,
//! and a storage that fails its k-th call for every k (no output may survive).
#![cfg(feature = "rewrite")]

use crate::merge_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use merge_support::*;
use paimon_compact::options::CoreOptions;
use paimon_compact::rewrite::merge::{
    rewrite_merge_tree, MergeTreeRewrite, MergeTreeRewriteResult, RowKind,
};
use paimon_compact::rewrite::RewriteInput;
use paimon_compact::storage::{
    MemoryStorage, ObjectMeta, Storage, StorageError, StorageErrorKind, StorageResult,
    StorageWriter,
};
use paimon_compact::{Error, ErrorKind};

fn rec(key: i64, seq: i64, kind: RowKind, n: Option<i64>) -> Rec {
    Rec {
        key,
        seq,
        kind,
        v: Some(format!("v{seq}")),
        n,
        b: Some(seq % 2 == 0),
    }
}

/// Two overlapping level-0 files and a level-1 file.
fn bucket(st: &MemoryStorage) -> Vec<Vec<Vec<RewriteInput>>> {
    let l1: Vec<Rec> = (0..50)
        .map(|k| rec(k, k, RowKind::Insert, Some(1)))
        .collect();
    let a: Vec<Rec> = (0..50)
        .step_by(2)
        .map(|k| rec(k, 100 + k, RowKind::UpdateAfter, Some(2)))
        .collect();
    let b: Vec<Rec> = (0..50)
        .step_by(3)
        .map(|k| rec(k, 200 + k, RowKind::Insert, Some(3)))
        .collect();
    vec![vec![
        vec![put_file(st, "data-l1.parquet", 1, &l1, 7)],
        vec![put_file(st, "data-a.parquet", 0, &a, 7)],
        vec![put_file(st, "data-b.parquet", 0, &b, 7)],
    ]]
}

fn run(
    st: &dyn paimon_compact::io::ToIo,
    req: &MergeTreeRewrite,
    o: &CoreOptions,
) -> Result<MergeTreeRewriteResult, Error> {
    rewrite_merge_tree(st, req, o)
}

#[test]
fn keys_out_of_order_name_the_file_and_leave_nothing() {
    let st = MemoryStorage::new();
    let mut sections = bucket(&st);
    let mut bad: Vec<Rec> = (0..30)
        .map(|k| rec(k, 300 + k, RowKind::Insert, None))
        .collect();
    bad.swap(20, 21);
    sections[0].push(vec![put_file(&st, "data-bad.parquet", 0, &bad, 7)]);
    let before = files_in(&st);
    let e = run(&st, &merge_request(sections, 1, false), &opts(&[])).unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::CorruptInput {
            file: Some(format!("{DIR}/data-bad.parquet"))
        },
        "{e}"
    );
    assert!(e.message.contains("out of order"), "{e}");
    assert_eq!(files_in(&st), before, "no output survives");
}

#[test]
fn overlapping_files_of_one_run_are_corrupt() {
    let st = MemoryStorage::new();
    let x: Vec<Rec> = (0..10).map(|k| rec(k, k, RowKind::Insert, None)).collect();
    let y: Vec<Rec> = (9..20)
        .map(|k| rec(k, 20 + k, RowKind::Insert, None))
        .collect();
    let run_files = vec![
        put_file(&st, "data-x.parquet", 1, &x, 100),
        put_file(&st, "data-y.parquet", 1, &y, 100),
    ];
    let e = run(
        &st,
        &merge_request(vec![vec![run_files]], 2, false),
        &opts(&[]),
    )
    .unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::CorruptInput {
            file: Some(format!("{DIR}/data-y.parquet"))
        }
    );
}

#[test]
fn a_missing_system_column_is_corrupt_input() {
    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    let st = MemoryStorage::new();
    let schema = Arc::new(Schema::new(vec![
        Field::new("_KEY_k", DataType::Int64, false),
        Field::new("_SEQUENCE_NUMBER", DataType::Int64, false),
        Field::new("k", DataType::Int64, false),
    ]));
    let col = Arc::new(Int64Array::from(vec![1, 2, 3]));
    let batch = RecordBatch::try_new(schema.clone(), vec![col.clone(), col.clone(), col]).unwrap();
    let mut buf = Vec::new();
    let mut w = parquet::arrow::ArrowWriter::try_new(&mut buf, schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let good: Vec<Rec> = (0..3).map(|k| rec(k, k, RowKind::Insert, None)).collect();
    let mut input = put_file(&st, "data-nokind.parquet", 0, &good, 10);
    st.put(&input.path, buf);
    input.deleted_rows = None;
    let e = run(
        &st,
        &merge_request(vec![vec![vec![input]]], 1, false),
        &opts(&[]),
    )
    .unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::CorruptInput {
            file: Some(format!("{DIR}/data-nokind.parquet"))
        }
    );
    assert!(e.message.contains("_VALUE_KIND"), "{e}");
}

/// Paimon writes each key twice (`_KEY_k` and `k`); a file where they disagree is refused
/// naming the file and the column, before anything is written (merging it would order rows by
/// one value and write the other).
#[test]
fn a_key_column_that_disagrees_with_its_value_column_is_corrupt() {
    use arrow_array::{Array, Int64Array, RecordBatch};
    let st = MemoryStorage::new();
    let mut sections = bucket(&st);
    let rows: Vec<Rec> = (0..30)
        .map(|k| rec(k, 300 + k, RowKind::Insert, None))
        .collect();
    let good = batch(&rows);
    let mut values: Vec<i64> = (0..30).collect();
    values[17] = 1_000;
    let mut columns = good.columns().to_vec();
    columns[3] = Arc::new(Int64Array::from(values));
    assert_eq!(columns[3].len(), 30);
    let tampered = RecordBatch::try_new(schema(), columns).unwrap();
    let mut buf = Vec::new();
    let mut w = parquet::arrow::ArrowWriter::try_new(&mut buf, schema(), None).unwrap();
    w.write(&tampered).unwrap();
    w.close().unwrap();
    let input = put_file(&st, "data-keys.parquet", 0, &rows, 7);
    st.put(&input.path, buf);
    sections[0].push(vec![input]);
    let before = files_in(&st);
    let e = run(&st, &merge_request(sections, 1, false), &opts(&[])).unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::CorruptInput {
            file: Some(format!("{DIR}/data-keys.parquet"))
        },
        "{e}"
    );
    assert!(e.message.contains("_KEY_k and the column 'k'"), "{e}");
    assert_eq!(files_in(&st), before, "no output survives");
}

/// A file holding another number of rows than its metadata records is not the file the table
/// lists (deletion vectors address rows by position): refused naming the file.
#[test]
fn a_row_count_that_differs_from_the_metadata_is_corrupt() {
    let st = MemoryStorage::new();
    let mut sections = bucket(&st);
    let mut input = sections[0][1][0].clone();
    let mut meta = (*input.meta).clone();
    meta.row_count += 1;
    input.meta = Arc::new(meta);
    sections[0][1][0] = input;
    let e = run(&st, &merge_request(sections, 1, false), &opts(&[])).unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::CorruptInput {
            file: Some(format!("{DIR}/data-a.parquet"))
        },
        "{e}"
    );
    assert!(
        e.message
            .contains("holds 25 rows where its metadata records 26"),
        "{e}"
    );
}

#[test]
fn unsupported_combinations_are_refused_before_anything_is_written() {
    let st = MemoryStorage::new();
    let sections = bucket(&st);
    let before = files_in(&st);
    for pairs in [
        vec![
            ("merge-engine", "first-row"),
            ("deletion-vectors.enabled", "true"),
        ],
        vec![
            ("merge-engine", "aggregation"),
            ("fields.n.aggregate-function", "theta_sketch"),
        ],
        vec![
            ("merge-engine", "aggregation"),
            ("fields.v.aggregate-function", "sum"),
        ],
        vec![
            ("merge-engine", "partial-update"),
            ("fields.n.sequence-group", "b"),
            ("fields.b.aggregate-function", "rbm64"),
        ],
        vec![("file.format.per.level", "1:lance")],
    ] {
        let e = run(
            &st,
            &merge_request(sections.clone(), 1, false),
            &opts(&pairs),
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unsupported, "{pairs:?}: {e}");
        assert_eq!(files_in(&st), before, "{pairs:?}");
    }
    // This project's own knobs are checked as strictly.
    for (key, value) in [
        ("paimon-compact.merge.read-ahead", "lots"),
        ("paimon-compact.merge.read-window-rows", "-1"),
        ("paimon-compact.write.string-dictionary-writer", "fastest"),
    ] {
        let e = run(
            &st,
            &merge_request(sections.clone(), 1, false),
            &opts(&[(key, value)]),
        )
        .unwrap_err();
        assert!(
            matches!(e.kind, ErrorKind::InvalidOption { key: ref k, .. } if k == key),
            "{key}: {e}"
        );
        assert_eq!(files_in(&st), before, "{key}");
    }
}

#[test]
fn refused_retractions_name_the_file() {
    let st = MemoryStorage::new();
    let base: Vec<Rec> = (0..5)
        .map(|k| rec(k, k, RowKind::Insert, Some(1)))
        .collect();
    let del = vec![rec(2, 10, RowKind::Delete, Some(1))];
    let sections = vec![vec![
        vec![put_file(&st, "data-base.parquet", 1, &base, 10)],
        vec![put_file(&st, "data-del.parquet", 0, &del, 10)],
    ]];
    let before = files_in(&st);
    for pairs in [
        vec![("merge-engine", "partial-update")],
        vec![("merge-engine", "first-row")],
        vec![
            ("merge-engine", "aggregation"),
            ("fields.n.aggregate-function", "max"),
        ],
    ] {
        let e = run(
            &st,
            &merge_request(sections.clone(), 2, false),
            &opts(&pairs),
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unsupported, "{pairs:?}: {e}");
        assert!(e.message.contains("data-del.parquet"), "{e}");
        assert_eq!(files_in(&st), before);
    }
    // The options that say what to do with them make the same input fine.
    for pairs in [
        vec![
            ("merge-engine", "partial-update"),
            ("ignore-delete", "true"),
        ],
        vec![
            ("merge-engine", "partial-update"),
            ("partial-update.remove-record-on-delete", "true"),
        ],
        vec![("merge-engine", "first-row"), ("ignore-delete", "true")],
        vec![
            ("merge-engine", "aggregation"),
            ("fields.n.aggregate-function", "max"),
            ("fields.n.ignore-retract", "true"),
        ],
    ] {
        let r = run(
            &st,
            &merge_request(sections.clone(), 2, false),
            &opts(&pairs),
        )
        .unwrap();
        for f in &r.outputs {
            st.delete(&f.path).unwrap();
        }
    }
}

#[test]
fn full_compaction_changelog_into_the_max_level_must_drop_deletes() {
    let st = MemoryStorage::new();
    let e = run(
        &st,
        &merge_request(bucket(&st), 4, false),
        &opts(&[("changelog-producer", "full-compaction")]),
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::IllegalState, "{e}");
}

#[test]
fn aggregate_functions_follow_paimon() {
    let st = MemoryStorage::new();
    let mk = |k: i64, seq: i64, v: Option<&str>, n: Option<i64>, b: Option<bool>| Rec {
        key: k,
        seq,
        kind: RowKind::Insert,
        v: v.map(str::to_string),
        n,
        b,
    };
    let old = vec![
        mk(1, 1, Some("a"), Some(5), Some(true)),
        mk(2, 2, None, Some(9), None),
    ];
    let new = vec![
        mk(1, 3, Some(" "), None, Some(false)),
        mk(2, 4, Some("x"), Some(4), Some(false)),
    ];
    let newer = vec![mk(1, 5, Some("c"), Some(7), Some(true))];
    let sections = vec![vec![
        vec![put_file(&st, "data-old.parquet", 1, &old, 10)],
        vec![put_file(&st, "data-new.parquet", 0, &new, 10)],
        vec![put_file(&st, "data-newer.parquet", 0, &newer, 10)],
    ]];
    let o = opts(&[
        ("merge-engine", "aggregation"),
        ("fields.v.aggregate-function", "listagg"),
        ("fields.v.list-agg-delimiter", "|"),
        ("fields.n.aggregate-function", "sum"),
        ("fields.b.aggregate-function", "bool_and"),
    ]);
    let r = run(&st, &merge_request(sections.clone(), 2, true), &o).unwrap();
    let rows = read_rows(&st, &r.outputs[0].path);
    // listagg skips blank input; sum and bool_and ignore nulls.
    assert_eq!(
        rows,
        vec![
            Rec {
                key: 1,
                seq: 5,
                kind: RowKind::Insert,
                v: Some("a|c".into()),
                n: Some(12),
                b: Some(false)
            },
            Rec {
                key: 2,
                seq: 4,
                kind: RowKind::Insert,
                v: Some("x".into()),
                n: Some(13),
                b: Some(false)
            },
        ]
    );
    let o = opts(&[
        ("merge-engine", "aggregation"),
        ("fields.v.aggregate-function", "max"),
        ("fields.n.aggregate-function", "min"),
        ("fields.b.aggregate-function", "first_non_null_value"),
    ]);
    let r = run(&st, &merge_request(sections.clone(), 2, true), &o).unwrap();
    let rows = read_rows(&st, &r.outputs[0].path);
    assert_eq!(rows[0].v.as_deref(), Some("c"));
    assert_eq!(rows[0].n, Some(5));
    assert_eq!(rows[0].b, Some(true));
    assert_eq!(rows[1].v.as_deref(), Some("x"));
    assert_eq!(rows[1].n, Some(4));
    assert_eq!(rows[1].b, Some(false));
    let o = opts(&[
        ("merge-engine", "aggregation"),
        ("fields.default-aggregate-function", "first_value"),
    ]);
    let r = run(&st, &merge_request(sections, 2, true), &o).unwrap();
    let rows = read_rows(&st, &r.outputs[0].path);
    assert_eq!((rows[0].v.as_deref(), rows[0].n), (Some("a"), Some(5)));
    assert_eq!((rows[1].v.as_deref(), rows[1].n), (None, Some(9)));
}

/// Paimon removed `count` in 0.9 and rejects a partial-update or aggregation table naming an
/// aggregate function it does not have (`SchemaValidation` at creation, the
/// `FieldAggregatorFactory` lookup at write), whichever column names it: the merge refuses
/// such a table as an invalid option naming the key and value, before anything is written.
#[test]
fn unknown_aggregate_functions_are_invalid_options() {
    let st = MemoryStorage::new();
    let sections = bucket(&st);
    let before = files_in(&st);
    for engine in ["aggregation", "partial-update"] {
        for (key, value) in [
            ("fields.n.aggregate-function", "count"),
            ("fields.default-aggregate-function", "count"),
            // a primary-key column is checked too, as by Paimon's SchemaValidation
            ("fields.k.aggregate-function", "count"),
            // names match exactly, as Paimon's factory lookup does
            ("fields.n.aggregate-function", "SUM"),
            ("fields.n.aggregate-function", " sum"),
            ("fields.b.aggregate-function", "bool_xor"),
        ] {
            let e = run(
                &st,
                &merge_request(sections.clone(), 1, false),
                &opts(&[("merge-engine", engine), (key, value)]),
            )
            .unwrap_err();
            assert_eq!(
                e.kind,
                ErrorKind::InvalidOption {
                    key: key.into(),
                    value: value.into()
                },
                "{engine} {key}={value}: {e}"
            );
            assert_eq!(files_in(&st), before, "{engine} {key}={value}");
        }
    }
    let e = run(
        &st,
        &merge_request(sections.clone(), 1, false),
        &opts(&[
            ("merge-engine", "aggregation"),
            ("fields.n.aggregate-function", "count"),
        ]),
    )
    .unwrap_err();
    assert!(e.message.contains("removed in Paimon 0.9"), "{e}");
    // A field's own function overrides a bad default only where it is set: `v` and `b` still
    // take the default.
    let e = run(
        &st,
        &merge_request(sections.clone(), 1, false),
        &opts(&[
            ("merge-engine", "aggregation"),
            ("fields.default-aggregate-function", "count"),
            ("fields.n.aggregate-function", "sum"),
        ]),
    )
    .unwrap_err();
    assert!(
        matches!(e.kind, ErrorKind::InvalidOption { ref key, .. } if key == "fields.default-aggregate-function"),
        "{e}"
    );
    // Deduplicate and first-row tables never build field aggregators (Paimon skips the check).
    let r = run(
        &st,
        &merge_request(sections, 1, false),
        &opts(&[("fields.n.aggregate-function", "count")]),
    );
    assert!(r.is_ok(), "{:?}", r.err());
}

#[test]
fn an_upgrade_without_rewrite_produces_only_changelog() {
    let st = MemoryStorage::new();
    let high: Vec<Rec> = (0..10)
        .map(|k| rec(k, k, RowKind::Insert, Some(1)))
        .collect();
    let l0: Vec<Rec> = (5..15)
        .map(|k| rec(k, 100 + k, RowKind::Insert, Some(2)))
        .collect();
    let mut req = merge_request(
        vec![vec![vec![put_file(&st, "data-l0.parquet", 0, &l0, 4)]]],
        1,
        false,
    );
    req.higher_levels = vec![put_file(&st, "data-l4.parquet", 4, &high, 4)];
    req.write_data = false;
    let r = run(&st, &req, &opts(&[("changelog-producer", "lookup")])).unwrap();
    assert!(r.outputs.is_empty());
    let cl = read_rows(&st, &r.changelog[0].path);
    // keys 5..9 existed: -U/+U; keys 10..14 are new: +I.
    assert_eq!(cl.len(), 5 * 2 + 5);
    assert_eq!(cl[0].kind, RowKind::UpdateBefore);
    assert_eq!(cl[1].kind, RowKind::UpdateAfter);
    assert_eq!(cl[10].kind, RowKind::Insert);
    assert_eq!(r.metrics.lookups, 10);
    assert_eq!(r.metrics.lookup_hits, 5);
}

// ---- fault injection -----------------------------------------------------------------------

/// Fails the k-th storage call (reads, writer creation, writes, finishes). Clones share the
/// count (the rewriter works on a clone).
#[derive(Clone)]
struct Failing {
    inner: MemoryStorage,
    fail_at: usize,
    calls: Arc<AtomicUsize>,
}

impl Failing {
    fn tick(&self, path: &str) -> StorageResult<()> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.fail_at {
            Err(StorageError::new(StorageErrorKind::Io, path, "injected"))
        } else {
            Ok(())
        }
    }
}

struct FailingWriter {
    st: Failing,
    inner: Box<dyn StorageWriter>,
    path: String,
}

impl StorageWriter for FailingWriter {
    fn write(&mut self, chunk: &[u8]) -> StorageResult<()> {
        self.st.tick(&self.path)?;
        self.inner.write(chunk)
    }
    fn finish(self: Box<Self>) -> StorageResult<u64> {
        self.st.tick(&self.path)?;
        self.inner.finish()
    }
    fn abort(self: Box<Self>) -> StorageResult<()> {
        self.inner.abort()
    }
}

impl Storage for Failing {
    fn size(&self, path: &str) -> StorageResult<u64> {
        self.tick(path)?;
        self.inner.size(path)
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        self.tick(path)?;
        self.inner.read_range(path, offset, len)
    }
    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        self.inner.list(prefix)
    }
    fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter>> {
        self.tick(path)?;
        Ok(Box::new(FailingWriter {
            st: self.clone(),
            inner: self.inner.create_writer(path)?,
            path: path.to_string(),
        }))
    }
    fn delete(&self, path: &str) -> StorageResult<()> {
        self.inner.delete(path)
    }
    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
        self.inner.create_if_absent(path, bytes)
    }
}

#[test]
fn a_failing_storage_call_at_any_point_leaves_no_output() {
    // Page-by-page reads of files with and without an offset index, spilled output pages,
    // and the windowed reader.
    // Page reads go through the read-ahead windows by default; "0" reads each page exactly.
    for (offset_index, spill, window, read_ahead) in [
        (true, "0", None, None),
        (true, "1b", None, None),
        (false, "1b", None, None),
        (true, "1b", None, Some("0")),
        (false, "0", None, Some("0")),
        (true, "0", Some("16"), None),
    ] {
        fail_every_call(offset_index, spill, window, read_ahead);
    }
}

fn fail_every_call(
    offset_index: bool,
    spill: &str,
    window: Option<&str>,
    read_ahead: Option<&str>,
) {
    let st = MemoryStorage::new();
    let l1: Vec<Rec> = (0..400)
        .map(|k| rec(k, k, RowKind::Insert, Some(1)))
        .collect();
    let a: Vec<Rec> = (0..700)
        .step_by(2)
        .map(|k| rec(k, 1000 + k, RowKind::UpdateAfter, Some(2)))
        .collect();
    let sections = vec![vec![
        vec![put_file_with(
            &st,
            "data-l1.parquet",
            1,
            &l1,
            64,
            offset_index,
        )],
        vec![put_file_with(
            &st,
            "data-a.parquet",
            0,
            &a,
            64,
            offset_index,
        )],
    ]];
    let high: Vec<Rec> = (0..800)
        .map(|k| rec(k, k - 1000, RowKind::Insert, Some(1)))
        .collect();
    let mut req = merge_request(sections, 1, true);
    req.higher_levels = vec![put_file(&st, "data-l3.parquet", 3, &high, 16)];
    {
        let mut pairs = vec![
            ("changelog-producer", "lookup"),
            ("deletion-vectors.enabled", "true"),
            ("target-file-size", "3kb"),
            ("paimon-compact.write.spill-threshold", spill),
        ];
        if let Some(w) = window {
            pairs.push(("paimon-compact.merge.read-window-rows", w));
        }
        if let Some(r) = read_ahead {
            pairs.push(("paimon-compact.merge.read-ahead", r));
        }
        let o = opts(&pairs);
        let before = files_in(&st);
        let mut k = 1;
        loop {
            let failing = Failing {
                inner: st.clone(),
                fail_at: k,
                calls: Arc::new(AtomicUsize::new(0)),
            };
            match rewrite_merge_tree(&failing, &req, &o) {
                Ok(r) => {
                    assert!(r.outputs.len() > 1, "rolled into several files");
                    assert!(!r.changelog.is_empty());
                    assert!(!r.deletion_vector_marks.is_empty());
                    assert_eq!(r.metrics.spilled_bytes > 0, spill != "0", "{:?}", r.metrics);
                    break;
                }
                Err(e) => {
                    assert!(
                        matches!(e.kind, ErrorKind::Io { .. }),
                        "call {k} ({offset_index}, {spill}, {window:?}): {e}"
                    );
                    assert_eq!(files_in(&st), before, "call {k} left files behind");
                }
            }
            k += 1;
            assert!(k < 10_000);
        }
        assert!(k > 20, "the rewrite made {k} storage calls");
        for out in files_in(&st).iter().filter(|f| !before.contains(f)) {
            st.delete(out).unwrap();
        }
    }
}
