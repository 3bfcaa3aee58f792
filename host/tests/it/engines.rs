//! The real component in wasmtime against the core compiled natively: same answers, typed
//! errors across the boundary, and limits that stop a guest without stopping the host.
//!
//! Needs the component built first (`.ci/stages/05-component.sh`, or set
//! `PAIMON_COMPACT_COMPONENT` to a `.wasm`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use paimon_compact::meta::{CompactionFile, Key, Level};
use paimon_compact::options::{Flavor, TableKind};
use paimon_compact::plan::{BucketPlanRequest, PlanContext};
use paimon_compact::storage::{MemoryStorage, Storage, StorageErrorKind};
use paimon_compact::ErrorKind;
use paimon_compact_host::storage::FaultyStorage;
use paimon_compact_host::{
    AppendInputFile, AppendRequest, Compactor, HostError, Limits, Now, TableJob, WasmRuntime,
};
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::ParquetMetaDataReader;

const VECTORS: &str = include_str!("../../../tests/vectors/compaction-vectors.json");

fn component_path() -> PathBuf {
    if let Some(p) = std::env::var_os("PAIMON_COMPACT_COMPONENT") {
        return PathBuf::from(p);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    for profile in ["component", "release"] {
        let p = root
            .join("target/wasm32-wasip2")
            .join(profile)
            .join("paimon_compact.wasm");
        if p.is_file() {
            return p;
        }
    }
    panic!("the component is not built: run .ci/stages/05-component.sh or set PAIMON_COMPACT_COMPONENT");
}

fn wasm_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| std::fs::read(component_path()).expect("read component"))
}

fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cwasm-cache")
}

/// The component loaded with `limits` through the tests' shared cache. Loads wait for each
/// other: on a cold cache the first one compiles (seconds of Cranelift) and stores the
/// artifact, and the tests queued behind it load that, instead of every test thread compiling
/// the same component at once.
pub(crate) fn runtime(limits: Limits) -> WasmRuntime {
    static LOADING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = LOADING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    WasmRuntime::new(wasm_bytes(), Some(&cache_dir()), limits).expect("load component")
}

pub(crate) fn wasm(limits: Limits) -> Compactor {
    Compactor::Wasm(Box::new(runtime(limits)))
}

#[test]
fn conformance_is_identical_natively_and_in_the_component() {
    let w = wasm(Limits::default());
    for flavor in [Flavor::Java, Flavor::Cpp] {
        let native = Compactor::Native.run_conformance(VECTORS, flavor).unwrap();
        let component = w.run_conformance(VECTORS, flavor).unwrap();
        assert!(native.ok(), "{native}");
        assert_eq!(native.to_string(), component.to_string());
        assert_eq!(native, component);
    }
}

fn file(name: &str, level: u32, size: u64, min: i64, max: i64, seq: i64) -> CompactionFile {
    CompactionFile::new(
        name,
        Level::new(level),
        size,
        Key::from_i64(min),
        Key::from_i64(max),
        seq,
        seq,
    )
}

fn pk_request(
    files: Vec<CompactionFile>,
    options: &[(&str, &str)],
    full: bool,
) -> BucketPlanRequest {
    BucketPlanRequest {
        table_kind: TableKind::PrimaryKey,
        flavor: Flavor::Java,
        options: options
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        files,
        full,
        context: PlanContext::at(1_000_000, 3),
        state: None,
        has_blob_column: false,
        role: Default::default(),
    }
}

#[test]
fn bucket_plans_are_identical_natively_and_in_the_component() {
    let w = wasm(Limits::default());
    let mut requests = Vec::new();
    // A growing level 0 over an existing level 2, under several option sets.
    for n in 1..12i64 {
        let mut files: Vec<_> = (0..n)
            .map(|i| {
                file(
                    &format!("l0-{i}"),
                    0,
                    100 + i as u64 * 10,
                    i * 3,
                    i * 3 + 20,
                    100 + i,
                )
            })
            .collect();
        files.push(file("l2-a", 2, 5000, 0, 40, 1));
        files.push(file("l2-b", 2, 50, 50, 60, 2));
        for opts in [
            vec![],
            vec![
                ("num-sorted-run.compaction-trigger", "3"),
                ("compaction.size-ratio", "20"),
            ],
            vec![
                ("changelog-producer", "lookup"),
                ("lookup-compact", "gentle"),
            ],
            vec![("deletion-vectors.enabled", "true")],
            vec![("compaction.optimization-interval", "1 s")],
        ] {
            requests.push(pk_request(files.clone(), &opts, false));
            requests.push(pk_request(files.clone(), &opts, true));
        }
    }
    let mut append = pk_request(
        (0..7)
            .map(|i| file(&format!("a{i}"), 0, 1000 * (i as u64 + 1), 0, 0, i))
            .collect(),
        &[("bucket", "2")],
        false,
    );
    append.table_kind = TableKind::Append;
    requests.push(append);
    for req in &requests {
        let native = Compactor::Native.plan_bucket(req).unwrap();
        let component = w.plan_bucket(req).unwrap();
        assert_eq!(native, component, "request {req:?}");
    }
    // And errors come back typed, with the same message.
    let bad = pk_request(vec![], &[("compaction.size-ratio", "lots")], false);
    let (HostError::Core(n), HostError::Core(c)) = (
        Compactor::Native.plan_bucket(&bad).unwrap_err(),
        w.plan_bucket(&bad).unwrap_err(),
    ) else {
        panic!("expected core errors");
    };
    assert_eq!(n, c);
    assert!(
        matches!(c.kind, ErrorKind::InvalidOption { ref key, .. } if key == "compaction.size-ratio")
    );
    // A writer of a write-only table skips compaction; the dedicated job (the default role)
    // plans it like any other, in both engines.
    let mut write_only = pk_request(vec![], &[("write-only", "true")], false);
    write_only.role = paimon_compact::plan::PlannerRole::Writer;
    let HostError::Core(e) = w.plan_bucket(&write_only).unwrap_err() else {
        panic!()
    };
    assert_eq!(
        e.kind,
        ErrorKind::NotCompactable {
            reason: paimon_compact::plan::NotCompactable::WriteOnly
        }
    );
    assert!(!e.message.contains("set it to false"), "{e}");
    write_only.role = paimon_compact::plan::PlannerRole::DedicatedJob;
    assert_eq!(
        w.plan_bucket(&write_only).unwrap(),
        Compactor::Native.plan_bucket(&write_only).unwrap()
    );
}

/// Two small zstd Parquet files (1000 rows each: id, name), the same bytes every time.
fn parquet_fixture(f: i64) -> Vec<u8> {
    parquet_fixture_with(f, parquet::basic::Compression::ZSTD(Default::default()))
}

/// The fixture written with `codec`.
fn parquet_fixture_with(f: i64, codec: parquet::basic::Compression) -> Vec<u8> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
    ]));
    let ids: Vec<i64> = (0..1000).map(|i| f * 1000 + i).collect();
    let names: Vec<String> = ids.iter().map(|i| format!("name-{}", i % 17)).collect();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(StringArray::from(names)),
        ],
    )
    .unwrap();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(codec)
        .build();
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    buf
}

fn parquet_inputs(storage: &MemoryStorage) -> Vec<AppendInputFile> {
    (0..2i64)
        .map(|f| {
            let path = format!("t/bucket-0/data-in-{f}.parquet");
            storage.put(&path, parquet_fixture(f));
            AppendInputFile {
                path,
                row_count: 1000,
                min_sequence_number: f * 1000,
                max_sequence_number: f * 1000 + 999,
                deleted_rows: None,
            }
        })
        .collect()
}

/// The Node tests use the same two files; they are committed under js/test/fixtures. This
/// keeps them current (`WRITE_JS_FIXTURES=1` rewrites them).
#[test]
fn js_fixtures_match_the_generator() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../js/test/fixtures");
    for f in 0..2i64 {
        let path = dir.join(format!("data-in-{f}.parquet"));
        let bytes = parquet_fixture(f);
        if std::env::var_os("WRITE_JS_FIXTURES").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        }
        assert_eq!(
            std::fs::read(&path).ok(),
            Some(bytes),
            "{} is stale: rerun with WRITE_JS_FIXTURES=1",
            path.display()
        );
    }
}

fn job(inputs: Vec<AppendInputFile>) -> AppendRequest {
    AppendRequest {
        inputs,
        output_dir: "t/bucket-0".into(),
        file_prefix: "data-out-".into(),
        options: vec![("file.compression".into(), "zstd".into())],
        creation_time_ms: 1,
    }
}

#[test]
fn append_rewrite_runs_in_the_component_like_natively() {
    let w = wasm(Limits::default());
    let (sn, sw) = (MemoryStorage::new(), MemoryStorage::new());
    let (jn, jw) = (job(parquet_inputs(&sn)), job(parquet_inputs(&sw)));
    let native = Compactor::Native
        .compact_append(Arc::new(sn.clone()), &jn, None)
        .unwrap();
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = events.clone();
    let progress: paimon_compact_host::storage::ProgressFn =
        Box::new(move |e| sink.lock().unwrap().push(e));
    let component = w
        .compact_append(Arc::new(sw.clone()), &jw, Some(progress))
        .unwrap();
    let events = events.lock().unwrap();
    assert_eq!(
        events.len(),
        2,
        "start and end of the rewrite are reported: {events:?}"
    );
    assert_eq!(
        (events[0].phase.as_str(), events[0].done, events[0].total),
        ("rewrite", 0, 2)
    );
    assert_eq!((events[1].done, events[1].total), (2, 2));
    assert_eq!(native.outputs, component.outputs);
    assert_eq!(
        native.outputs.iter().map(|o| o.row_count).sum::<u64>(),
        2000
    );
    // Byte-identical output files.
    for path in native.outputs.iter().map(|o| &o.path) {
        assert_eq!(sn.get(path), sw.get(path), "{path}");
    }
}

/// Every codec Paimon writes, with dictionary passthrough off and on, rewritten inside the
/// component exactly as natively (byte for byte): the component's own codecs (C zstd built
/// for wasm, the pure-Rust snappy, lz4 and gzip) agree with the native build's.
#[test]
fn every_codec_rewrites_in_the_component_like_natively() {
    use parquet::basic::{Compression, GzipLevel, ZstdLevel};
    let codecs = [
        ("zstd", Compression::ZSTD(ZstdLevel::default())),
        ("snappy", Compression::SNAPPY),
        ("lz4", Compression::LZ4),
        ("lz4_raw", Compression::LZ4_RAW),
        ("gzip", Compression::GZIP(GzipLevel::default())),
        ("none", Compression::UNCOMPRESSED),
    ];
    let w = wasm(Limits::default());
    for (name, codec) in codecs {
        for passthrough in ["false", "true"] {
            let inputs = |storage: &MemoryStorage| -> Vec<AppendInputFile> {
                (0..2i64)
                    .map(|f| {
                        let path = format!("t/bucket-0/data-in-{f}.parquet");
                        storage.put(&path, parquet_fixture_with(f, codec));
                        AppendInputFile {
                            path,
                            row_count: 1000,
                            min_sequence_number: f * 1000,
                            max_sequence_number: f * 1000 + 999,
                            deleted_rows: None,
                        }
                    })
                    .collect()
            };
            let job = |inputs| AppendRequest {
                options: vec![
                    ("file.compression".into(), name.into()),
                    (
                        "parquet.read.enable-dictionary-passthrough".into(),
                        passthrough.into(),
                    ),
                ],
                ..job(inputs)
            };
            let (sn, sw) = (MemoryStorage::new(), MemoryStorage::new());
            let native = Compactor::Native
                .compact_append(Arc::new(sn.clone()), &job(inputs(&sn)), None)
                .unwrap();
            let component = w
                .compact_append(Arc::new(sw.clone()), &job(inputs(&sw)), None)
                .unwrap();
            let case = format!("{name}, passthrough {passthrough}");
            assert_eq!(native.outputs, component.outputs, "{case}");
            assert_eq!(
                native.outputs.iter().map(|o| o.row_count).sum::<u64>(),
                2000,
                "{case}"
            );
            for path in native.outputs.iter().map(|o| &o.path) {
                assert!(sn.get(path).is_some(), "{case}: {path}");
                assert_eq!(sn.get(path), sw.get(path), "{case}: {path}");
            }
        }
    }
}

/// The host's native zstd (the `codec` import) takes every page of the rewrite and the files
/// are byte for byte those of the component's own zstd (and of the native engine).
#[test]
fn the_hosts_zstd_takes_the_pages_and_the_bytes_stay_the_same() {
    let codec = |metrics: &str| -> (bool, u64, u64) {
        let m: serde_json::Value = serde_json::from_str(metrics).unwrap();
        let h = &m["host_codec"];
        (
            h["offered"].as_bool().unwrap(),
            h["pages_compressed"].as_u64().unwrap(),
            h["pages_decompressed"].as_u64().unwrap(),
        )
    };
    // Also with a read window smaller than the column chunks, which both engines then read
    // in windows (the component's page readers hand their zstd pages to the host).
    let reads = |metrics: &str| -> u64 {
        let m: serde_json::Value = serde_json::from_str(metrics).unwrap();
        m["storage_reads"].as_u64().unwrap()
    };
    let mut native_reads = Vec::new();
    for window in [None, Some("1 kb")] {
        let windowed = |inputs| {
            let mut job = job(inputs);
            job.options.extend(window.map(|w| {
                (
                    paimon_compact::rewrite::APPEND_READ_WINDOW_OPTION.to_string(),
                    w.to_string(),
                )
            }));
            job
        };
        let sn = MemoryStorage::new();
        let native = Compactor::Native
            .compact_append(Arc::new(sn.clone()), &windowed(parquet_inputs(&sn)), None)
            .unwrap();
        assert_eq!(codec(&native.metrics_json), (false, 0, 0));
        native_reads.push(reads(&native.metrics_json));
        for on in [true, false] {
            let mut rt = runtime(Limits::default());
            rt.set_native_codec(on);
            let sw = MemoryStorage::new();
            let result = Compactor::Wasm(Box::new(rt))
                .compact_append(Arc::new(sw.clone()), &windowed(parquet_inputs(&sw)), None)
                .unwrap();
            let (offered, compressed, decompressed) = codec(&result.metrics_json);
            assert_eq!(offered, on);
            assert_eq!(
                compressed > 0,
                on,
                "pages compressed by the host: {compressed}"
            );
            assert_eq!(
                decompressed > 0,
                on,
                "pages decompressed by the host: {decompressed}"
            );
            assert_eq!(native.outputs, result.outputs);
            for path in native.outputs.iter().map(|o| &o.path) {
                assert_eq!(
                    sn.get(path),
                    sw.get(path),
                    "{path} (native codec {on}, window {window:?})"
                );
            }
        }
    }
    assert!(
        native_reads[1] > native_reads[0],
        "the window splits the reads: {native_reads:?}"
    );
}

/// A table job measures its phases in either engine: the clock is wired in the API, which the
/// component's `compaction-job.run` calls too (it used to report zeros).
#[test]
fn table_jobs_report_phase_times_in_both_engines() {
    let w = wasm(Limits::default());
    let job = TableJob {
        full: true,
        ..TableJob::now()
    };
    let run = |engine: &Compactor| {
        let storage = MemoryStorage::new();
        let tables = engine
            .write_demo_tables(Arc::new(storage.clone()), "wh", job.now_ms - 60_000, 42)
            .unwrap();
        tables
            .iter()
            .map(|t| {
                let r = engine
                    .compact_table(Arc::new(storage.clone()), t, &job, None)
                    .unwrap();
                assert!(
                    r.compaction.snapshot_after.is_some(),
                    "{}: {t}",
                    engine.name()
                );
                r.compaction.phases
            })
            .collect::<Vec<_>>()
    };
    let (native, component) = (run(&Compactor::Native), run(&w));
    assert_eq!(native.len(), component.len());
    for c in &component {
        assert!(c.total_ms > 0, "the component measures its phases: {c:?}");
        assert_eq!(
            c.scan_plan_ms + c.lease_ms + c.rewrite_ms + c.commit_ms,
            c.total_ms
        );
    }
    // A rewrite of a small table may take under a millisecond, so only one of them is sure to
    // show (a native one preempted for a millisecond proves nothing about the component's).
    assert!(
        component.iter().any(|c| c.rewrite_ms > 0),
        "the component measures its rewrites: {component:?}"
    );
}

#[test]
fn every_storage_error_kind_surfaces_typed_in_the_host() {
    let w = wasm(Limits::default());
    for kind in [
        StorageErrorKind::NotFound,
        StorageErrorKind::AlreadyExists,
        StorageErrorKind::Permission,
        StorageErrorKind::Io,
    ] {
        for (marker, what) in [("data-in-1", "read"), ("data-out-", "write")] {
            for engine in [&Compactor::Native, &w] {
                let base = MemoryStorage::new();
                let inputs = parquet_inputs(&base);
                let before = base.paths();
                let storage = Arc::new(FaultyStorage::new(base.clone()).fail_path(marker, kind));
                let err = engine
                    .compact_append(storage, &job(inputs), None)
                    .unwrap_err();
                let HostError::Core(e) = err else {
                    panic!("{} {what}: expected a core error, got {err}", engine.name())
                };
                match &e.kind {
                    ErrorKind::Io { storage, path } => {
                        assert_eq!(*storage, kind, "{} {what}: {e}", engine.name());
                        assert!(
                            path.contains(marker),
                            "{} {what}: error names '{path}'",
                            engine.name()
                        );
                    }
                    other => panic!(
                        "{} {what}: expected an io error, got {other:?}: {e}",
                        engine.name()
                    ),
                }
                assert_eq!(
                    base.paths(),
                    before,
                    "{} {what}: a failed rewrite leaves storage as it was",
                    engine.name()
                );
            }
        }
    }
}

#[test]
fn a_missing_file_reads_the_same_in_both_engines_and_names_its_path_once() {
    let w = wasm(Limits::default());
    let mut messages = Vec::new();
    for engine in [&Compactor::Native, &w] {
        let base = MemoryStorage::new();
        let inputs = parquet_inputs(&base);
        base.delete(&inputs[1].path).unwrap();
        let err = engine
            .compact_append(Arc::new(base.clone()), &job(inputs.clone()), None)
            .unwrap_err();
        let HostError::Core(e) = err else {
            panic!("{}: expected a core error, got {err}", engine.name())
        };
        assert!(
            matches!(&e.kind, ErrorKind::Io { storage: StorageErrorKind::NotFound, path } if *path == inputs[1].path),
            "{}: {e}",
            engine.name()
        );
        assert_eq!(
            e.message.matches(&inputs[1].path).count(),
            1,
            "{}: {e}",
            engine.name()
        );
        messages.push(e.message);
    }
    assert_eq!(messages[0], messages[1]);
}

#[test]
fn a_guest_over_its_memory_limit_is_stopped_and_the_host_carries_on() {
    let rt = runtime(Limits {
        max_memory_bytes: 48 << 20,
        timeout: None,
    });
    let w = Compactor::Wasm(Box::new(rt));
    // ~400k files: the request alone needs more guest memory than the limit.
    let files: Vec<_> = (0..400_000i64)
        .map(|i| file(&format!("data-{i:08}.parquet"), 0, 1000, i, i + 10, i))
        .collect();
    let err = w.plan_bucket(&pk_request(files, &[], false)).unwrap_err();
    assert!(matches!(err, HostError::MemoryLimit { .. }), "{err}");
    assert!(err.to_string().contains("memory limit of 48 MiB"), "{err}");
    // The same host and runtime go on working.
    let ok = w
        .plan_bucket(&pk_request(vec![file("a", 0, 1, 0, 1, 1)], &[], false))
        .unwrap();
    assert_eq!(ok.reason.rule, "nothing-to-do");
}

#[test]
fn a_guest_over_its_time_limit_is_stopped_and_the_host_carries_on() {
    let rt = runtime(Limits {
        max_memory_bytes: 1 << 30,
        timeout: Some(Duration::from_millis(300)),
    });
    let w = Compactor::Wasm(Box::new(rt));
    // Many copies of the vectors: far more than 300 ms of work.
    let doc: serde_json::Value = serde_json::from_str(VECTORS).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    let many: Vec<_> = (0..400).flat_map(|_| cases.iter().cloned()).collect();
    let big =
        serde_json::json!({"format": "paimon-compaction-vectors", "version": 1, "cases": many})
            .to_string();
    let started = std::time::Instant::now();
    let err = w.run_conformance(&big, Flavor::Java).unwrap_err();
    assert!(matches!(err, HostError::TimeLimit { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(err.to_string().contains("time limit"), "{err}");
    let ok = w.run_conformance(VECTORS, Flavor::Java).unwrap();
    assert!(ok.ok());
}

/// The cache's contract on an empty component: a cold start compiles and stores the artifact,
/// the next start loads it, and an artifact replaced by garbage is compiled over, not loaded.
/// (The empty component keeps this to milliseconds: compiling the real one twice costs about a
/// minute of CPU. The real one goes through the same `load` cold, from the cache and from a
/// precompiled directory in the other tests of this file, which share `cache_dir()`.)
#[test]
fn the_compiled_component_is_cached_for_a_warm_start() {
    use paimon_compact_host::component_cache::{load, Source};
    // The component preamble alone: magic, version 0x0d, layer 1.
    const EMPTY: &[u8] = b"\0asm\x0d\x00\x01\x00";
    let engine = wasmtime::Engine::new(wasmtime::Config::new().wasm_component_model(true)).unwrap();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (_, cold, file, refused) = load(&engine, EMPTY, &[], Some(&dir)).unwrap();
    assert_eq!(cold, Source::Compiled);
    assert!(refused.is_empty(), "{refused:?}");
    let file = file.unwrap();
    assert!(file.is_file(), "the cold start stored its artifact");
    let (_, warm, warm_file, _) = load(&engine, EMPTY, &[], Some(&dir)).unwrap();
    assert_eq!(
        warm,
        Source::Cache,
        "second start loads the cached compilation"
    );
    assert_eq!(warm_file.as_ref(), Some(&file));
    // A corrupt cache file is recompiled over, not trusted. (Replaced, not overwritten in
    // place: a loaded component maps the file, as any cache writer must respect.)
    let tmp = file.with_extension("corrupt");
    std::fs::write(&tmp, b"not a compiled component").unwrap();
    std::fs::rename(&tmp, &file).unwrap();
    let (_, again, _, refused) = load(&engine, EMPTY, &[], Some(&dir)).unwrap();
    assert_eq!(again, Source::Compiled);
    assert!(
        refused.iter().any(|r| r.contains("damaged artifact")),
        "{refused:?}"
    );
    let (_, after, _, _) = load(&engine, EMPTY, &[], Some(&dir)).unwrap();
    assert_eq!(
        after,
        Source::Cache,
        "the recompiled artifact was stored again"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A demo table in memory and a full-compaction job of it carrying `options` in its scope.
pub(crate) fn demo_job(
    engine: &Compactor,
    options: &[(&str, &str)],
) -> (MemoryStorage, String, TableJob) {
    demo_job_of(engine, "/orders", options)
}

/// The demo table whose path ends with `name`, and a full-compaction job of it.
fn demo_job_of(
    engine: &Compactor,
    name: &str,
    options: &[(&str, &str)],
) -> (MemoryStorage, String, TableJob) {
    let mut job = TableJob {
        full: true,
        ..TableJob::now()
    };
    job.scope.options = options
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let storage = MemoryStorage::new();
    let tables = engine
        .write_demo_tables(Arc::new(storage.clone()), "wh", job.now_ms - 60_000, 42)
        .unwrap();
    let table = tables.into_iter().find(|t| t.ends_with(name)).unwrap();
    (storage, table, job)
}

/// Compacts `table` with `engine`, asserting that it fails as corrupt input naming `file`;
/// returns the error and its core error.
fn corrupt_input_of_compacting(
    engine: &Compactor,
    storage: &MemoryStorage,
    table: &str,
    job: &TableJob,
    file: &str,
) -> (HostError, paimon_compact::Error) {
    let err = engine
        .compact_table(Arc::new(storage.clone()), table, job, None)
        .unwrap_err();
    corrupt_input_of(engine, err, file)
}

/// `err`, asserted to be corrupt input of `file`, one line; with its core error.
fn corrupt_input_of(
    engine: &Compactor,
    err: HostError,
    file: &str,
) -> (HostError, paimon_compact::Error) {
    let HostError::Core(core) = &err else {
        panic!("{}: not a core error: {err}", engine.name())
    };
    let core = core.clone();
    assert_eq!(
        core.kind,
        ErrorKind::CorruptInput {
            file: Some(file.to_string())
        },
        "{}: {err}",
        engine.name()
    );
    assert!(!core.message.contains('\n'), "one line: {err}");
    (err, core)
}

/// Compacts `table` (whose `file` was damaged) with `engine`, asserting that the job fails as
/// corrupt input of `file` with a message that `says` what the test expects, quickly enough to
/// print, and leaves every file of the storage as it was.
fn refused_leaving_the_table_as_it_was(
    engine: &Compactor,
    (storage, table, job): (&MemoryStorage, &str, &TableJob),
    file: &str,
    case: &str,
    says: impl Fn(&str) -> bool,
) {
    let before = storage.paths();
    let t0 = std::time::Instant::now();
    let (err, core) = corrupt_input_of_compacting(engine, storage, table, job, file);
    assert!(says(&core.message), "{}, {case}: {err}", engine.name());
    eprintln!("{}, {case}: refused in {:?}", engine.name(), t0.elapsed());
    assert_eq!(
        storage.paths(),
        before,
        "{}, {case}: the table as it was",
        engine.name()
    );
}

/// Asserts that `engine` still compacts a demo table after a failed call (the component on a
/// new instance).
fn goes_on_working(engine: &Compactor) {
    let (storage, table, job) = demo_job(engine, &[]);
    let ok = engine
        .compact_table(Arc::new(storage), &table, &job, None)
        .unwrap();
    assert!(ok.compaction.snapshot_after.is_some(), "{}", engine.name());
}

/// A bug in either engine (here the `paimon-compact.fault.panic` fault injection) reaches the
/// host as the `internal` error carrying the panic's message and location, never as a trap's
/// text or an unwinding panic; the job's tasks are aborted, so the table is as it was.
#[test]
fn a_panic_in_either_engine_is_an_internal_error_carrying_its_message() {
    for engine in [Compactor::Native, wasm(Limits::default())] {
        let (storage, table, job) = demo_job(&engine, &[("paimon-compact.fault.panic", "true")]);
        let before = storage.paths();
        let err = paimon_compact_host::parallel::compact_parallel(
            &engine,
            Arc::new(storage.clone()),
            &table,
            &job,
            1,
            None,
        )
        .unwrap_err();
        let HostError::Core(core) = &err else {
            panic!("{}: not a core error: {err}", engine.name())
        };
        assert_eq!(core.kind, ErrorKind::Internal, "{}: {err}", engine.name());
        assert!(
            core.message.contains("panicked") && core.message.contains("fault injection"),
            "{}: {err}",
            engine.name()
        );
        if let Compactor::Wasm(_) = engine {
            // The component's hook sends the location too (natively, the CLI's hook adds it).
            assert!(
                core.message.contains("writer_settings.rs"),
                "the location: {err}"
            );
        }
        assert!(!core.message.contains('\n'), "one line: {err}");
        assert_eq!(
            storage.paths(),
            before,
            "{}: the table is as it was",
            engine.name()
        );
        goes_on_working(&engine);
    }
}

/// A manifest of `table` (not a manifest list, not an index manifest).
fn first_manifest(storage: &MemoryStorage, table: &str) -> String {
    storage
        .paths()
        .into_iter()
        .filter(|p| p.starts_with(&format!("{table}/manifest/manifest-")))
        .find(|p| !p.contains("manifest-list-") && !p.contains("index-manifest-"))
        .unwrap()
}

/// A third-party decoder that panics on a file's bytes (apache-avro's `unwrap` on a record
/// name that is not an Avro name, found by the `avro_metadata` fuzz target) is corrupt input
/// of that file in both engines: caught natively, and in the component (where nothing can
/// catch it) named by the panic hook and reported by the host. The table is as it was.
#[test]
fn a_decoder_panic_is_corrupt_input_of_the_file_in_both_engines() {
    for engine in [Compactor::Native, wasm(Limits::default())] {
        let (storage, table, job) = demo_job(&engine, &[]);
        let manifest = first_manifest(&storage, &table);
        let mut bytes = storage.get(&manifest).unwrap().to_vec();
        let at = bytes
            .windows(15)
            .position(|w| w == b"FILE__KEY_STATS")
            .expect("the manifest schema names its key statistics record");
        bytes[at + 9] = b'-';
        storage.put(&manifest, bytes);
        let before = storage.paths();
        let (err, core) = corrupt_input_of_compacting(&engine, &storage, &table, &job, &manifest);
        assert!(
            core.message.starts_with(&format!(
                "corrupt input '{manifest}': the Avro decoder failed on it: "
            )),
            "{}: {err}",
            engine.name()
        );
        assert_eq!(
            storage.paths(),
            before,
            "{}: nothing written",
            engine.name()
        );
        goes_on_working(&engine);
    }
}

/// An Avro container file of `schema` (no codec) holding one block of `count` records in
/// `block`.
fn avro_container(schema: &str, count: i64, block: &[u8]) -> Vec<u8> {
    fn long(v: i64, out: &mut Vec<u8>) {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        while z >= 0x80 {
            out.push(z as u8 | 0x80);
            z >>= 7;
        }
        out.push(z as u8);
    }
    fn bytes(b: &[u8], out: &mut Vec<u8>) {
        long(b.len() as i64, out);
        out.extend_from_slice(b);
    }
    let mut out = b"Obj\x01".to_vec();
    long(2, &mut out);
    bytes(b"avro.schema", &mut out);
    bytes(schema.as_bytes(), &mut out);
    bytes(b"avro.codec", &mut out);
    bytes(b"null", &mut out);
    long(0, &mut out);
    let sync = [7u8; 16];
    out.extend_from_slice(&sync);
    long(count, &mut out);
    bytes(block, &mut out);
    out.extend_from_slice(&sync);
    out
}

/// A manifest whose writer schema is a record that contains itself (through a union, so each
/// level of a value takes one byte) is corrupt input naming it in both engines. apache-avro 0.21
/// decoded such a value by recursion until the stack overflowed: the native process aborted
/// and the component trapped (the `avro_metadata` fuzz target's `crash-recursive-schema-*`,
/// `fuzz/README.md`).
#[test]
fn a_recursive_avro_schema_is_corrupt_input_in_both_engines() {
    let schema = r#"{"type":"record","name":"A","fields":[{"name":"x","type":["null","A"]}]}"#;
    let mut block = vec![2u8; 200_000];
    block.push(0);
    for engine in [Compactor::Native, wasm(Limits::default())] {
        let (storage, table, job) = demo_job(&engine, &[]);
        let manifest = first_manifest(&storage, &table);
        storage.put(&manifest, avro_container(schema, 1, &block));
        refused_leaving_the_table_as_it_was(
            &engine,
            (&storage, &table, &job),
            &manifest,
            "a recursive manifest schema",
            |m| m.contains("its Avro schema's record A contains itself"),
        );
        goes_on_working(&engine);
    }
}

/// A data file whose footer nests 20 000 groups (160 kB; arrow-rs 60.1 builds the schema tree
/// by recursion and overflowed the stack: a process abort natively, a trap in the component) is
/// refused before arrow-rs reads it, in both engines, as a schema this reader does not take;
/// the table is as it was and the engine goes on working.
#[test]
fn a_schema_nesting_twenty_thousand_groups_is_refused_in_both_engines() {
    let deep = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fuzz/corpus/parquet_append/crash-schema-nesting-20000"
    ))
    .unwrap();
    for engine in [Compactor::Native, wasm(Limits::default())] {
        let (storage, table, job) = demo_job(&engine, &[]);
        let file = storage
            .paths()
            .into_iter()
            .find(|p| p.starts_with(&format!("{table}/bucket-")) && p.ends_with(".parquet"))
            .expect("a demo data file");
        storage.put(&file, deep.clone());
        let before = storage.paths();
        let err = engine
            .compact_table(Arc::new(storage.clone()), &table, &job, None)
            .unwrap_err();
        let HostError::Core(core) = &err else {
            panic!("{}: not a core error: {err}", engine.name())
        };
        assert_eq!(
            core.kind,
            ErrorKind::Unsupported,
            "{}: {err}",
            engine.name()
        );
        assert!(
            core.message.contains(&file)
                && core
                    .message
                    .contains("its Parquet schema nests groups 20001 deep"),
            "{}: {err}",
            engine.name()
        );
        assert_eq!(
            storage.paths(),
            before,
            "{}: the table as it was",
            engine.name()
        );
        goes_on_working(&engine);
    }
}

/// A data file whose offset index has an unknown field declaring 2^31 - 1 booleans in its few
/// bytes (arrow-rs skipped such a list element by element for seconds) is refused in both
/// engines as corrupt input naming the file and the chunk, and the failed job leaves the table
/// as it was.
#[test]
fn an_impossible_page_index_is_corrupt_input_of_the_file_in_both_engines() {
    for engine in [Compactor::Native, wasm(Limits::default())] {
        let (storage, table, job) = demo_job(&engine, &[]);
        let (file, index) = storage
            .paths()
            .into_iter()
            .filter(|p| p.starts_with(&format!("{table}/bucket-")) && p.ends_with(".parquet"))
            .find_map(|p| {
                let bytes = bytes::Bytes::from(storage.get(&p)?.to_vec());
                let footer = ParquetMetaDataReader::new().parse_and_finish(&bytes).ok()?;
                let index = footer.row_group(0).column(0).offset_index_range()?;
                Some((p, index))
            })
            .expect("a demo data file with an offset index");
        let mut bytes = storage.get(&file).unwrap().to_vec();
        let hostile = [0xf9, 0xf1, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00];
        let at = index.start as usize;
        bytes[at..at + hostile.len()].copy_from_slice(&hostile);
        storage.put(&file, bytes);
        refused_leaving_the_table_as_it_was(
            &engine,
            (&storage, &table, &job),
            &file,
            "an offset index",
            |m| {
                m.contains("the offset index of row group 0, column 0: a Thrift container")
                    && m.contains("holds 2147483647 booleans")
            },
        );
    }
}

/// A data file whose first data page header holds an unknown field declaring 2^31 - 1
/// booleans (arrow-rs skips such a list element by element, for seconds, and a list of such
/// lists for ever) is refused before arrow-rs parses the header, in both engines and on both
/// read paths (the merge's page-at-a-time reader, the append rewrite's push decoder), as
/// corrupt input naming the file; the failed job leaves the table as it was.
#[test]
fn a_hostile_page_header_is_corrupt_input_of_the_file_in_both_engines() {
    for engine in [Compactor::Native, wasm(Limits::default())] {
        for name in ["/orders", "/metrics"] {
            let (storage, table, job) = demo_job_of(&engine, name, &[]);
            let (file, at) = storage
                .paths()
                .into_iter()
                .filter(|p| p.starts_with(&format!("{table}/bucket-")) && p.ends_with(".parquet"))
                .find_map(|p| {
                    let bytes = storage.get(&p)?;
                    let footer = ParquetMetaDataReader::new()
                        .parse_and_finish(&bytes::Bytes::from(bytes.to_vec()))
                        .ok()?;
                    let page = footer.row_group(0).column(0).data_page_offset() as usize;
                    Some((p, data_page_header_at(&bytes, page)))
                })
                .expect("a demo data file");
            let mut bytes = storage.get(&file).unwrap().to_vec();
            // Field 20 (long form), a list of 2^31 - 1 booleans, over the data page header's
            // first fields.
            let hostile = [0x09, 0x28, 0xf1, 0xff, 0xff, 0xff, 0xff, 0x07];
            bytes[at..at + hostile.len()].copy_from_slice(&hostile);
            storage.put(&file, bytes);
            refused_leaving_the_table_as_it_was(
                &engine,
                (&storage, &table, &job),
                &file,
                name,
                |m| m.contains("holds 2147483647 booleans"),
            );
        }
    }
}

/// A page header whose last field runs to the end of its column chunk, so that the header
/// goes on past it, is refused as corrupt input before arrow-rs parses it, in both engines and
/// on both read paths. (The demo files have offset indexes, so the push decoder reads the
/// dictionary page as a range of its own and refuses the binary as longer than that range;
/// `page_guard`'s unit tests and the fuzz reproducer cover the header cut by its chunk.) arrow-rs 60.1 reading such a header from a stream read on into the next
/// chunk; there, a list of two billion doubles (written at the next chunk's start here) was
/// skipped at the end of the file one empty read at a time, for minutes (the `parquet_merge`
/// fuzz target's `timeout-header-past-chunk`, `fuzz/README.md`).
#[test]
fn a_page_header_running_past_its_column_chunk_is_corrupt_input_in_both_engines() {
    for engine in [Compactor::Native, wasm(Limits::default())] {
        for name in ["/orders", "/metrics"] {
            let (storage, table, job) = demo_job_of(&engine, name, &[]);
            let (file, page, end) = storage
                .paths()
                .into_iter()
                .filter(|p| p.starts_with(&format!("{table}/bucket-")) && p.ends_with(".parquet"))
                .find_map(|p| {
                    let bytes = storage.get(&p)?;
                    let footer = ParquetMetaDataReader::new()
                        .parse_and_finish(&bytes::Bytes::from(bytes.to_vec()))
                        .ok()?;
                    // The chunk's first page header (a dictionary page's or a data page's),
                    // and a next chunk right after it.
                    let (start, len) = footer.row_group(0).column(0).byte_range();
                    let (next, _) = footer.row_group(0).columns().get(1)?.byte_range();
                    (next == start + len).then_some((p, start as usize, (start + len) as usize))
                })
                .expect("a demo data file");
            let mut bytes = storage.get(&file).unwrap().to_vec();
            // At the header's start: field 20 (long form), a binary that fills the rest of the
            // chunk, so the header's next field would be the next chunk's first byte.
            let mut head = vec![0x08, 0x28];
            let mut len = end - page - head.len() - 2;
            let varint = [(len & 0x7f) as u8 | 0x80, (len >> 7) as u8];
            assert!(len < 1 << 14, "a two-byte varint");
            head.extend_from_slice(&varint);
            len = end - page - head.len();
            assert_eq!(
                len as u64,
                u64::from(varint[0] & 0x7f) | u64::from(varint[1]) << 7
            );
            bytes[page..page + head.len()].copy_from_slice(&head);
            // The next chunk's first bytes: field 21, a list of 2^31 - 1 doubles.
            let doubles = [0x09, 0x2a, 0xf7, 0xff, 0xff, 0xff, 0xff, 0x07];
            bytes[end..end + doubles.len()].copy_from_slice(&doubles);
            storage.put(&file, bytes);
            // The page-at-a-time reader sees the header run past its chunk; the push decoder,
            // which reads a dictionary page and the data pages an offset index locates as
            // ranges of their own, sees the binary run past the range it was given.
            refused_leaving_the_table_as_it_was(
                &engine,
                (&storage, &table, &job),
                &file,
                name,
                |m| {
                    m.contains("runs past the end of its column chunk")
                        || m.contains("bytes of the column chunk follow")
                },
            );
        }
    }
}

/// A list column's data page that declares 22 values and holds no repetition level (the
/// `parquet_merge` fuzz target's `timeout-short-repetition-levels`, `fuzz/README.md`), in an
/// append rewrite that deletes rows: arrow-rs 60.1 would loop for ever skipping them; both
/// engines refuse the page first as corrupt input naming the file, and leave nothing behind.
#[test]
fn a_page_short_of_repetition_levels_is_corrupt_input_in_both_engines() {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fuzz/corpus/parquet_merge/timeout-short-repetition-levels"
    ))
    .unwrap();
    let rows = ParquetMetaDataReader::new()
        .parse_and_finish(&bytes::Bytes::from(bytes.clone()))
        .unwrap()
        .file_metadata()
        .num_rows() as u64;
    let file = "t/bucket-0/data-short-levels.parquet";
    for engine in [Compactor::Native, wasm(Limits::default())] {
        let storage = MemoryStorage::new();
        storage.put(file, bytes.clone());
        let request = AppendRequest {
            inputs: vec![AppendInputFile {
                path: file.into(),
                row_count: rows,
                min_sequence_number: 0,
                max_sequence_number: rows as i64 - 1,
                deleted_rows: Some((0..rows).step_by(3).collect()),
            }],
            ..job(Vec::new())
        };
        let before = storage.paths();
        let err = engine
            .compact_append(Arc::new(storage.clone()), &request, None)
            .unwrap_err();
        let (err, core) = corrupt_input_of(&engine, err, file);
        assert!(
            core.message
                .contains("declares 22 values but holds 0 repetition levels"),
            "{}: {err}",
            engine.name()
        );
        assert_eq!(storage.paths(), before, "{}: nothing left", engine.name());
    }
}

/// Where the `DataPageHeader` struct of the page header at `page` starts: past the page
/// header's type and sizes (and checksum), at its field 5.
fn data_page_header_at(bytes: &[u8], page: usize) -> usize {
    let mut at = page;
    let varint = |at: &mut usize| {
        while bytes[*at] & 0x80 != 0 {
            *at += 1;
        }
        *at += 1;
    };
    // Fields 1 to 3 (or 4), each an i32: header byte 0x15 and a varint.
    while bytes[at] == 0x15 {
        at += 1;
        varint(&mut at);
    }
    assert!(
        matches!(bytes[at], 0x2c | 0x1c),
        "field 5, a struct, follows: {:#x}",
        bytes[at]
    );
    at + 1
}

/// A table job (a method on the `compaction-job` resource) over its time limit reports the
/// time limit, not the resource-table error that dropping the trapped job used to raise.
#[test]
fn a_table_job_over_its_time_limit_reports_the_time_limit() {
    let w = wasm(Limits {
        max_memory_bytes: 1 << 30,
        timeout: Some(Duration::from_millis(1)),
    });
    let (storage, table, job) = demo_job(&Compactor::Native, &[]);
    let err = w
        .compact_table(Arc::new(storage), &table, &job, None)
        .unwrap_err();
    assert!(matches!(err, HostError::TimeLimit { .. }), "{err}");
    assert!(err.to_string().contains("time limit"), "{err}");
}

/// Compiled components are native code: one in a directory another user can write, or one
/// whose checksum does not match, is passed over (and said so) for the next place (the cache,
/// else a compile); a trusted precompiled artifact is loaded without compiling.
#[cfg(unix)]
#[test]
fn compiled_components_load_only_from_trusted_places_and_intact() {
    use std::os::unix::fs::PermissionsExt;
    let warm = runtime(Limits::default());
    let artifact = warm.load.cache_file.clone().unwrap();
    let name = artifact.file_name().unwrap().to_owned();
    let root =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("trust-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let place = |dir: &str, mode: u32, damage: bool| {
        let d = root.join(dir);
        std::fs::create_dir_all(&d).unwrap();
        let mut bytes = std::fs::read(&artifact).unwrap();
        if damage {
            let n = bytes.len();
            bytes[n / 2] ^= 0x40;
        }
        std::fs::write(d.join(&name), bytes).unwrap();
        let sum = format!("{}.sha256", name.to_string_lossy());
        std::fs::copy(artifact.with_file_name(&sum), d.join(&sum)).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
        d
    };
    let shipped = place("shipped", 0o755, false);
    let rt =
        WasmRuntime::with_precompiled(wasm_bytes(), &[shipped], None, Limits::default()).unwrap();
    assert_eq!(
        rt.load.source,
        paimon_compact_host::component_cache::Source::Precompiled
    );
    assert!(rt.load.refused.is_empty(), "{:?}", rt.load.refused);
    let open = place("open", 0o777, false);
    let damaged = place("damaged", 0o755, true);
    // Both passed over, and the cache (trusted, intact) serves the start: no compile needed.
    let rt = WasmRuntime::with_precompiled(
        wasm_bytes(),
        &[open, damaged],
        Some(&cache_dir()),
        Limits::default(),
    )
    .unwrap();
    assert_eq!(
        rt.load.source,
        paimon_compact_host::component_cache::Source::Cache
    );
    let refused = rt.load.refused.join("\n");
    assert!(
        refused.contains("writable by its group or by others"),
        "{refused}"
    );
    assert!(refused.contains("damaged artifact"), "{refused}");
    assert!(rt_ok(rt));
}

fn rt_ok(rt: WasmRuntime) -> bool {
    Compactor::Wasm(Box::new(rt))
        .run_conformance(VECTORS, Flavor::Java)
        .unwrap()
        .ok()
}

/// A postpone-bucket table with `bucket-function.type = hive`: the component replays its
/// rows into the same buckets as the native engine (whose buckets `tests/it/postpone.rs`
/// checks key by key against Hive's hash), file for file.
#[test]
fn a_hive_bucketed_postpone_table_compacts_alike_in_both_engines() {
    use paimon_compact::table::binary_row::Datum;
    use paimon_compact::table::demo::{create_table, field, new_schema, RowKind, TableWriter};
    use paimon_compact::table::scan::scan;

    let now = 1_750_000_000_000;
    let table = MemoryStorage::new();
    let schema = new_schema(
        vec![
            field(0, "k", "INT NOT NULL").unwrap(),
            field(1, "name", "STRING NOT NULL").unwrap(),
            field(2, "v", "STRING").unwrap(),
        ],
        &[],
        &["k", "name"],
        &[
            ("bucket", "-2"),
            ("bucket-function.type", "hive"),
            ("postpone.default-bucket-num", "3"),
        ],
        now,
    );
    create_table(&table, "wh/t", &schema).unwrap();
    let mut w = TableWriter::new(&table, "wh/t", [9; 16]);
    for c in 0..3 {
        let rows: Vec<_> = (0..30)
            .map(|i| {
                let k = (i * (c + 2)) % 41;
                let v = Datum::String(format!("c{c}"));
                let key = vec![Datum::Int(k), Datum::String(format!("n{}", k % 4)), v];
                (RowKind::Insert, key)
            })
            .collect();
        w.commit(&rows, now + i64::from(c)).unwrap();
    }
    let job = TableJob {
        full: true,
        ..TableJob::now()
    };
    let layout = |engine: &Compactor| {
        // A copy of the table for each engine (a clone would share its files).
        let storage = MemoryStorage::new();
        for p in table.paths() {
            storage.put(&p, table.get(&p).unwrap().as_ref().clone());
        }
        let r = engine
            .compact_table(Arc::new(storage.clone()), "wh/t", &job, None)
            .unwrap();
        assert!(r.compaction.snapshot_after.is_some(), "{}", engine.name());
        let state = scan(&storage, "wh/t").unwrap();
        let mut files: Vec<(i32, i64)> = state
            .buckets
            .values()
            .flat_map(|b| b.files.iter().map(|l| (b.bucket, l.entry.file.row_count)))
            .collect();
        files.sort();
        files
    };
    let native = layout(&Compactor::Native);
    assert!(
        native.len() > 1 && native.iter().all(|(b, _)| (0..3).contains(b)),
        "{native:?}"
    );
    assert_eq!(layout(&wasm(Limits::default())), native);
}
