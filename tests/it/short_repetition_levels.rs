//! A list column's data page that declares more values than its repetition levels hold: the
//! `parquet_merge` fuzz target's `timeout-short-repetition-levels` (`fuzz/README.md`). arrow-rs
//! 60.1 loops for ever skipping records over such a page, so every read path that leaves rows
//! out (a deletion vector, a row window) must refuse it first as corrupt input naming the
//! file: the append rewrite's push decoder, the merge's page-at-a-time reader and the merge's
//! row windows (`src/parquet_io/level_guard.rs`).

use crate::merge_support;

use std::sync::mpsc;
use std::time::Duration;

use paimon_compact::api::{compact_append_files, AppendInputFile, AppendRequest, Services};
use paimon_compact::options::{CoreOptions, Flavor, TableKind};
use paimon_compact::rewrite::merge::rewrite_merge_tree;
use paimon_compact::rewrite::RewriteInput;
use paimon_compact::storage::MemoryStorage;
use paimon_compact::{Error, ErrorKind};

const FILE: &str = "t/bucket-0/data-input.parquet";

/// The reproducer: a primary-key data file of 2 259 bytes whose list column's page declares 22
/// values and holds no repetition level.
fn reproducer() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fuzz/corpus/parquet_merge/timeout-short-repetition-levels"
    ))
    .expect("the committed reproducer")
}

/// The rows its footer declares.
fn declared_rows(bytes: &[u8]) -> u64 {
    let metadata = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&bytes::Bytes::from(bytes.to_vec()))
        .expect("a readable footer");
    metadata.file_metadata().num_rows() as u64
}

/// Every third row deleted, as a deletion vector marks them.
fn every_third_row(rows: u64) -> Vec<u64> {
    (0..rows).step_by(3).collect()
}

/// Runs `f` on a thread of its own and fails the test if it has not returned in a minute (the
/// loop this guards against does not end).
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what}: no answer in a minute"))
}

fn assert_refused(what: &str, e: Error) {
    assert_eq!(
        e.kind,
        ErrorKind::CorruptInput {
            file: Some(FILE.into())
        },
        "{what}: {e}"
    );
    assert!(
        e.to_string()
            .contains("declares 22 values but holds 0 repetition levels"),
        "{what}: {e}"
    );
    assert!(!e.to_string().contains('\n'), "{what}: one line: {e}");
}

#[test]
fn the_append_rewrite_refuses_a_page_short_of_repetition_levels() {
    let bytes = reproducer();
    let rows = declared_rows(&bytes);
    for fast_copy in ["true", "false"] {
        let storage = std::sync::Arc::new(MemoryStorage::new());
        storage.put(FILE, bytes.clone());
        let request = AppendRequest {
            inputs: vec![AppendInputFile {
                path: FILE.into(),
                row_count: rows,
                min_sequence_number: 0,
                max_sequence_number: rows as i64 - 1,
                deleted_rows: Some(every_third_row(rows)),
            }],
            output_dir: "t/bucket-0".into(),
            file_prefix: "data-out-".into(),
            options: vec![("paimon-compact.append.fast-copy".into(), fast_copy.into())],
            creation_time_ms: 0,
        };
        let before = storage.paths();
        let st = storage.clone();
        let e = bounded("append", move || {
            compact_append_files(st, &request, &Services::none())
        })
        .map(|_| ())
        .unwrap_err();
        assert_refused(&format!("append, fast copy {fast_copy}"), e);
        assert_eq!(storage.paths(), before, "nothing left behind");
    }
}

#[test]
fn the_merge_refuses_a_page_short_of_repetition_levels_on_both_read_paths() {
    let bytes = reproducer();
    let rows = declared_rows(&bytes);
    // The page-at-a-time reader (the default), and the push decoder in row windows.
    for window in [None, Some("7")] {
        let mut pairs = vec![
            ("merge-engine", "partial-update"),
            ("changelog-producer", "full-compaction"),
        ];
        if let Some(w) = window {
            pairs.push(("paimon-compact.merge.read-window-rows", w));
        }
        let options = CoreOptions::from_pairs(TableKind::PrimaryKey, Flavor::Java, pairs).unwrap();
        let storage = MemoryStorage::new();
        storage.put(FILE, bytes.clone());
        let mut input = RewriteInput::from_parts(FILE.into(), rows, 0, rows as i64 - 1, None);
        input.deleted_rows = Some(every_third_row(rows));
        let request = merge_support::full_merge_request(vec![vec![input]], None);
        let before = storage.paths();
        let st = storage.clone();
        let e = bounded("merge", move || {
            rewrite_merge_tree(&st, &request, &options).map(|_| ())
        })
        .unwrap_err();
        assert_refused(&format!("merge, window {window:?}"), e);
        assert_eq!(storage.paths(), before, "nothing left behind");
    }
}
