//! Tables at the sizes that break compactors: a bucket of 10 000 files, 100 000 live files in
//! one table, a schema of 1 000 columns. Each is compacted by both engines, the component
//! inside a memory limit, so "bounded memory" is a limit the job ran inside rather than a
//! figure measured once. A job holds every live file's manifest entry (the scan, the plan,
//! the commit's delta and the manifest merge each keep their own), so its memory grows with
//! the table's live files, not with their bytes: 100 000 files need more than 128 MiB and fit
//! in 256 MiB. How long each takes is in
//! `benches/README.md` ("Hostile sizes"), not asserted here.

use std::sync::Arc;

use paimon_compact::storage::MemoryStorage;
use paimon_compact::table::binary_row::Datum;
use paimon_compact::table::demo::{create_table, field, new_schema, RowKind, TableWriter};
use paimon_compact::table::scan::scan;
use paimon_compact_host::{Compactor, HostError, Limits, Now, TableJob};
use parquet::file::reader::{FileReader, SerializedFileReader};

use crate::engines::wasm;

pub(crate) const NOW: i64 = 1_750_000_000_000;

/// The memory limit the component runs these jobs in.
pub(crate) const COMPONENT_MEMORY: usize = 256 << 20;

/// A limit the table of 100 000 files does not fit in.
const TOO_LITTLE: usize = 64 << 20;

/// Both engines; the component with `memory` bytes.
pub(crate) fn engines(memory: usize) -> [Compactor; 2] {
    [
        Compactor::Native,
        wasm(Limits {
            max_memory_bytes: memory,
            timeout: None,
        }),
    ]
}

pub(crate) fn full_job() -> TableJob {
    TableJob {
        full: true,
        now_ms: NOW + 60_000,
        skip_maintenance: true,
        ..TableJob::now()
    }
}

/// Live files and the sum of their row counts, per bucket, at the latest snapshot.
fn layout(storage: &MemoryStorage, table: &str) -> Vec<(String, i32, usize, i64)> {
    let state = scan(storage, table).unwrap();
    state
        .buckets
        .values()
        .map(|b| {
            (
                b.partition_path.clone(),
                b.bucket,
                b.files.len(),
                b.files.iter().map(|f| f.entry.file.row_count).sum(),
            )
        })
        .collect()
}

/// A table at `path` with `columns` (name, type), written in one commit of `rows`, rolled
/// every `rows_per_file` rows.
pub(crate) fn table(
    path: &str,
    columns: &[(String, &str)],
    partition_keys: &[&str],
    primary_keys: &[&str],
    options: &[(&str, &str)],
    rows: &[(RowKind, Vec<Datum>)],
    rows_per_file: usize,
) -> MemoryStorage {
    let storage = MemoryStorage::new();
    let fields = columns
        .iter()
        .enumerate()
        .map(|(i, (name, t))| field(i as i32, name, t).unwrap())
        .collect();
    let schema = new_schema(fields, partition_keys, primary_keys, options, NOW);
    create_table(&storage, path, &schema).unwrap();
    TableWriter::new(&storage, path, [4; 16])
        .commit_rolled(rows, NOW, rows_per_file)
        .unwrap();
    storage
}

/// An independent copy of `storage`.
pub(crate) fn copy_of(storage: &MemoryStorage) -> MemoryStorage {
    let copy = MemoryStorage::new();
    for p in storage.paths() {
        copy.put(&p, storage.get(&p).unwrap().to_vec());
    }
    copy
}

/// Compacts a copy of `storage` fully with `engine` and returns the copy.
fn compact(engine: &Compactor, storage: &MemoryStorage, path: &str) -> MemoryStorage {
    let copy = copy_of(storage);
    let t0 = std::time::Instant::now();
    let report = engine
        .compact_table(Arc::new(copy.clone()), path, &full_job(), None)
        .unwrap_or_else(|e| panic!("{}: {e}", engine.name()));
    // For benches/README.md ("Hostile sizes"); `--nocapture` shows it.
    eprintln!(
        "{path}, {}: {:.1} s ({:?})",
        engine.name(),
        t0.elapsed().as_secs_f64(),
        report.compaction.phases
    );
    assert!(
        report.compaction.snapshot_after.is_some(),
        "{}: committed: {report:?}",
        engine.name()
    );
    copy
}

fn kv_columns() -> Vec<(String, &'static str)> {
    vec![
        ("k".into(), "BIGINT NOT NULL"),
        ("v".into(), "STRING"),
        ("n".into(), "BIGINT"),
    ]
}

fn kv_rows(n: i64) -> Vec<(RowKind, Vec<Datum>)> {
    (0..n)
        .map(|i| {
            (
                RowKind::Insert,
                vec![
                    Datum::BigInt(i),
                    Datum::String(format!("value of {i}")),
                    Datum::BigInt(i * 7),
                ],
            )
        })
        .collect()
}

/// One bucket of 10 000 one-row files, an append table and a primary-key table: a full
/// compaction of each reads every file and writes one, in both engines.
#[test]
fn a_bucket_of_10_000_files_compacts_into_one() {
    let rows = kv_rows(10_000);
    for (path, keys, options) in [
        (
            "w/db.db/append",
            &[][..],
            &[("bucket", "1"), ("bucket-key", "k")][..],
        ),
        ("w/db.db/pk", &["k"][..], &[("bucket", "1")][..]),
    ] {
        let storage = table(path, &kv_columns(), &[], keys, options, &rows, 1);
        assert_eq!(
            layout(&storage, path),
            vec![(String::new(), 0, 10_000, 10_000)]
        );
        for engine in engines(COMPONENT_MEMORY) {
            let after = compact(&engine, &storage, path);
            assert_eq!(
                layout(&after, path),
                vec![(String::new(), 0, 1, 10_000)],
                "{path}, {}",
                engine.name()
            );
        }
    }
}

/// 100 000 live files over 100 partitions of one bucket each (a manifest of 100 000 entries
/// for every reader of the table): planned and fully compacted, 1 000 files per bucket into
/// one, in both engines.
#[test]
fn a_table_of_100_000_files_compacts_every_bucket() {
    let columns = vec![
        ("dt".to_string(), "INT NOT NULL"),
        ("k".to_string(), "BIGINT NOT NULL"),
    ];
    let rows: Vec<_> = (0..100_000i64)
        .map(|i| {
            (
                RowKind::Insert,
                vec![Datum::Int((i % 100) as i32), Datum::BigInt(i)],
            )
        })
        .collect();
    let path = "w/db.db/wide_manifest";
    let storage = table(
        path,
        &columns,
        &["dt"],
        &[],
        &[("bucket", "1"), ("bucket-key", "k")],
        &rows,
        1,
    );
    let before = layout(&storage, path);
    assert_eq!(before.len(), 100);
    assert!(before
        .iter()
        .all(|(_, _, files, rows)| *files == 1_000 && *rows == 1_000));
    // Under a small limit the component runs out: the memory limit, typed, and nothing changed.
    // (zstd inside the component reports the refused allocation as a failed decompression,
    // which the job reported as a corrupt manifest before the host learned to tell.)
    let small = wasm(Limits {
        max_memory_bytes: TOO_LITTLE,
        timeout: None,
    });
    let copy = copy_of(&storage);
    let Err(err) = small.compact_table(Arc::new(copy.clone()), path, &full_job(), None) else {
        panic!("the job fitted in {} MiB", TOO_LITTLE >> 20)
    };
    assert!(matches!(err, HostError::MemoryLimit { .. }), "{err}");
    assert_eq!(
        copy.paths(),
        storage.paths(),
        "the refused job left no file"
    );
    for engine in engines(COMPONENT_MEMORY) {
        let after = compact(&engine, &storage, path);
        let after = layout(&after, path);
        assert_eq!(after.len(), 100, "{}", engine.name());
        assert!(
            after
                .iter()
                .all(|(_, _, files, rows)| *files == 1 && *rows == 1_000),
            "{}: {after:?}",
            engine.name()
        );
    }
}

/// A schema of 1 000 columns (strings and longs), append and primary-key: every column
/// carried through the rewrite and the merge, in both engines.
#[test]
fn a_schema_of_1_000_columns_compacts() {
    let mut columns = vec![("k".to_string(), "BIGINT NOT NULL")];
    for c in 1..1_000 {
        columns.push((
            format!("c{c}"),
            if c % 2 == 0 { "BIGINT" } else { "STRING" },
        ));
    }
    let row = |k: i64| -> Vec<Datum> {
        let mut r = vec![Datum::BigInt(k)];
        for c in 1..1_000i64 {
            r.push(if c % 2 == 0 {
                Datum::BigInt(k * c)
            } else {
                Datum::String(format!("{k}-{c}"))
            });
        }
        r
    };
    let rows: Vec<_> = (0..600).map(|k| (RowKind::Insert, row(k))).collect();
    for (path, keys, options) in [
        (
            "w/db.db/wide_append",
            &[][..],
            &[("bucket", "1"), ("bucket-key", "k")][..],
        ),
        ("w/db.db/wide_pk", &["k"][..], &[("bucket", "1")][..]),
    ] {
        let storage = table(path, &columns, &[], keys, options, &rows, 200);
        assert_eq!(layout(&storage, path), vec![(String::new(), 0, 3, 600)]);
        for engine in engines(COMPONENT_MEMORY) {
            let after = compact(&engine, &storage, path);
            assert_eq!(
                layout(&after, path),
                vec![(String::new(), 0, 1, 600)],
                "{path}, {}",
                engine.name()
            );
            let file = scan(&after, path)
                .unwrap()
                .buckets
                .values()
                .next()
                .unwrap()
                .files[0]
                .entry
                .file
                .file_name
                .clone();
            let bytes = after
                .paths()
                .into_iter()
                .find(|p| p.ends_with(&file))
                .and_then(|p| after.get(&p))
                .unwrap();
            let footer = SerializedFileReader::new(bytes::Bytes::from(bytes.to_vec())).unwrap();
            let n_cols = footer
                .metadata()
                .file_metadata()
                .schema_descr()
                .num_columns();
            let expected = if keys.is_empty() { 1_000 } else { 1_003 };
            assert_eq!(n_cols, expected, "{path}, {}: every column", engine.name());
        }
    }
}

/// A `write-only` backlog: 500 overlapping level-0 runs of 2 000 rows in one bucket (500
/// commits). Read side by side they need about twice the component's 256 MiB; merged in
/// groups of `paimon-compact.merge.max-runs` (32) into temporary runs first, the job fits,
/// and its table reads as the native engine's. With the bound lifted, the same job exceeds
/// the limit: the bound is what keeps it inside.
#[test]
fn a_backlog_of_500_level0_runs_merges_within_256_mib() {
    let path = "w/db.db/backlog";
    let storage = MemoryStorage::new();
    let fields = kv_columns()
        .iter()
        .enumerate()
        .map(|(i, (name, t))| field(i as i32, name, t).unwrap())
        .collect();
    let schema = new_schema(
        fields,
        &[],
        &["k"],
        &[("bucket", "1"), ("write-only", "true")],
        NOW,
    );
    create_table(&storage, path, &schema).unwrap();
    let mut writer = TableWriter::new(&storage, path, [5; 16]);
    for run in 0..500i64 {
        let mut keys: Vec<i64> = (0..2_000i64)
            .map(|i| (run * 7_919 + i * 104_729) % 100_000)
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let rows: Vec<(RowKind, Vec<Datum>)> = keys
            .into_iter()
            .map(|k| {
                (
                    RowKind::Insert,
                    vec![
                        Datum::BigInt(k),
                        Datum::String(format!("run {run} wrote this value for key {k}")),
                        Datum::BigInt(run),
                    ],
                )
            })
            .collect();
        writer.commit(&rows, NOW + run).unwrap();
    }
    let before = layout(&storage, path);
    assert_eq!(before.len(), 1);
    assert_eq!(before[0].2, 500);
    let native = compact(&Compactor::Native, &storage, path);
    let component = compact(&engines(COMPONENT_MEMORY)[1], &storage, path);
    let after = layout(&component, path);
    assert_eq!(after, layout(&native, path));
    assert_eq!(after[0].2, 1);
    let read = |s: &MemoryStorage| {
        let state = scan(s, path).unwrap();
        let f = &state.buckets.values().next().unwrap().files[0];
        let bytes = s
            .get(&format!("{path}/bucket-0/{}", f.entry.file.file_name))
            .unwrap();
        bytes.to_vec()
    };
    assert_eq!(
        read(&component),
        read(&native),
        "the same file, byte for byte"
    );
    // Without the bound the merge holds all 500 runs at once and the limit stops it.
    let unbounded = TableJob {
        scope: paimon_compact::table::scope::JobScope {
            options: vec![("paimon-compact.merge.max-runs".into(), "1000".into())],
            ..Default::default()
        },
        ..full_job()
    };
    let e = engines(COMPONENT_MEMORY)[1]
        .compact_table(Arc::new(copy_of(&storage)), path, &unbounded, None)
        .unwrap_err();
    assert!(e.to_string().contains("memory limit"), "{e}");
}

/// Whether the live files of the table at `path` all end with `ext` (`.avro`).
fn all_live_files_end_with(storage: &MemoryStorage, path: &str, ext: &str) -> bool {
    let state = scan(storage, path).unwrap();
    state
        .buckets
        .values()
        .flat_map(|b| b.files.iter())
        .all(|f| f.entry.file.file_name.ends_with(ext))
}

/// Avro and ORC data files larger than the component's whole memory (Paimon's `file.format =
/// avro | orc`), in primary-key and append tables: an Avro file is read front to back in
/// windows, an ORC file a stripe at a time, and both are copied to Parquet through storage as
/// they are decoded, so each compacts inside the limit. Held whole, as reading them once did,
/// the file alone would not fit. (ORC's memory follows its stripes, written here at
/// `orc.stripe.size = 4 mb`; Java's default is 64 MB.)
#[test]
fn avro_and_orc_files_larger_than_the_components_memory_compact() {
    const LIMIT: usize = 64 << 20;
    // 800 000 rows of a 96-character hex string: about 90 MB of uncompressed Avro.
    let rows: Vec<(RowKind, Vec<Datum>)> = (0..800_000i64)
        .map(|i| {
            let h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            (
                RowKind::Insert,
                vec![
                    Datum::BigInt(i),
                    Datum::String(format!(
                        "{h:032x}{:032x}{:032x}",
                        h.rotate_left(17) ^ 0x5555,
                        h.rotate_left(41)
                    )),
                    Datum::BigInt(i * 7),
                ],
            )
        })
        .collect();
    for (path, keys, options) in [
        (
            "w/db.db/avro_pk",
            &["k"][..],
            &[("bucket", "1"), ("file.format", "avro")][..],
        ),
        (
            "w/db.db/avro_append",
            &[][..],
            &[
                ("bucket", "1"),
                ("bucket-key", "k"),
                ("file.format", "avro"),
            ][..],
        ),
        (
            "w/db.db/orc_pk",
            &["k"][..],
            &[
                ("bucket", "1"),
                ("file.format", "orc"),
                ("orc.stripe.size", "4 mb"),
            ][..],
        ),
    ] {
        let mut options = options.to_vec();
        options.extend([("file.compression", "none"), ("target-file-size", "1 gb")]);
        let storage = table(path, &kv_columns(), &[], keys, &options, &rows, 200_000);
        // The native engine makes one Avro (ORC) file of the four Parquet files the writer left.
        let foreign = compact(&Compactor::Native, &storage, path);
        let ext = if path.contains("orc") {
            ".orc"
        } else {
            ".avro"
        };
        assert!(all_live_files_end_with(&foreign, path, ext));
        let largest = foreign
            .paths()
            .iter()
            .filter(|p| p.contains("/bucket-0/data-"))
            .map(|p| foreign.get(p).unwrap().len())
            .max()
            .unwrap();
        assert!(
            largest > LIMIT,
            "{path}: the file ({largest} bytes) exceeds the limit"
        );
        // Two more files on top, so the next full compaction merges the large file with them
        // (an append table's needs three files).
        let mut writer = TableWriter::new(&foreign, path, [6; 16]);
        writer.commit(&kv_rows(1_000), NOW + 10).unwrap();
        writer.commit(&kv_rows(500), NOW + 11).unwrap();
        let component = wasm(Limits {
            max_memory_bytes: LIMIT,
            timeout: None,
        });
        let after = compact(&component, &foreign, path);
        let native = compact(&Compactor::Native, &foreign, path);
        assert_eq!(layout(&after, path), layout(&native, path), "{path}");
        let expected_rows = if keys.is_empty() { 801_500 } else { 800_000 };
        assert_eq!(
            layout(&after, path),
            vec![(String::new(), 0, 1, expected_rows)],
            "{path}"
        );
    }
}

/// A manifest list of over 100 000 entries: the same ten files added, deleted and added again
/// 50 001 times (two manifests, listed alternately), as a table whose manifests were never
/// merged could list them. Both engines plan and compact it (the component inside
/// [`COMPONENT_MEMORY`]), and the files live at the end are the ten, compacted into one.
#[test]
fn a_manifest_list_of_100_000_entries_compacts() {
    use paimon_compact::table::manifest::{
        decode_manifest, decode_manifest_list, encode_manifest, encode_manifest_list, FileKind,
    };
    use paimon_compact::table::path::TablePaths;
    use paimon_compact::table::snapshot::{latest_snapshot_id, read_snapshot};

    let columns = vec![("k".to_string(), "BIGINT NOT NULL")];
    let rows: Vec<_> = (0..10i64)
        .map(|i| (RowKind::Insert, vec![Datum::BigInt(i)]))
        .collect();
    let path = "w/db.db/long_manifest_list";
    let storage = table(path, &columns, &[], &[], &[("bucket", "-1")], &rows, 1);
    let paths = TablePaths::new(path);
    let id = latest_snapshot_id(&storage, &paths).unwrap().unwrap();
    let snapshot = read_snapshot(&storage, &paths, id).unwrap();
    let manifest_dir = format!("{path}/manifest");
    let list = |name: &str| {
        let file = format!("{manifest_dir}/{name}");
        decode_manifest_list(&storage.get(&file).unwrap(), &file).unwrap()
    };
    let metas: Vec<_> = list(&snapshot.base_manifest_list)
        .into_iter()
        .chain(list(&snapshot.delta_manifest_list))
        .collect();
    assert_eq!(metas.len(), 1, "one commit, one manifest");
    let added = metas[0].clone();
    let added_file = format!("{manifest_dir}/{}", added.file_name);
    let mut entries = decode_manifest(&storage.get(&added_file).unwrap(), &added_file).unwrap();
    assert_eq!(entries.len(), 10);
    for e in &mut entries {
        e.kind = FileKind::Delete;
    }
    let deleted_name = "manifest-0000000000000000000000000000dead-0".to_string();
    let deleted_bytes = encode_manifest(&entries, apache_avro::Codec::Null, [6; 16]).unwrap();
    let mut deleted = added.clone();
    deleted.file_name = deleted_name.clone();
    deleted.file_size = deleted_bytes.len() as i64;
    deleted.num_added_files = 0;
    deleted.num_deleted_files = 10;
    storage.put(&format!("{manifest_dir}/{deleted_name}"), deleted_bytes);
    let long: Vec<_> = (0..100_001)
        .map(|i| {
            if i % 2 == 0 {
                added.clone()
            } else {
                deleted.clone()
            }
        })
        .collect();
    let put_list = |name: &str, metas: &[_]| {
        let bytes = encode_manifest_list(metas, apache_avro::Codec::Null, [7; 16]).unwrap();
        let size = bytes.len() as i64;
        storage.put(&format!("{manifest_dir}/{name}"), bytes);
        size
    };
    let mut doc: serde_json::Value = serde_json::from_slice(
        &storage
            .get(&format!("{path}/snapshot/snapshot-{id}"))
            .unwrap(),
    )
    .unwrap();
    let base = "manifest-list-0000000000000000000000000000beef-0";
    let delta = "manifest-list-0000000000000000000000000000beef-1";
    doc["baseManifestList"] = base.into();
    doc["baseManifestListSize"] = put_list(base, &long).into();
    doc["deltaManifestList"] = delta.into();
    doc["deltaManifestListSize"] = put_list(delta, &[]).into();
    storage.put(
        &format!("{path}/snapshot/snapshot-{id}"),
        serde_json::to_vec(&doc).unwrap(),
    );
    let before = layout(&storage, path);
    assert_eq!(before.len(), 1);
    assert_eq!(
        (before[0].2, before[0].3),
        (10, 10),
        "ten live files of a row each"
    );
    for engine in engines(COMPONENT_MEMORY) {
        let after = layout(&compact(&engine, &storage, path), path);
        assert_eq!(after.len(), 1, "{}", engine.name());
        assert_eq!((after[0].2, after[0].3), (1, 10), "{}", engine.name());
    }
}
