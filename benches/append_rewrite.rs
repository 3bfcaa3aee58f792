//! Append rewrite benchmarks.
//!
//! Two modes in one binary (harness = false):
//! * `cargo bench --bench append_rewrite` — criterion, in memory, small inputs: rewrite
//!   throughput, dictionary passthrough off/on (identical and differing dictionaries) and fast
//!   copy vs rewrite. Quick relative numbers for development.
//! * `append_rewrite files --out DIR [--opt KEY=VALUE]... INPUT...` — one rewrite of real files
//!   on the local disk, printing one JSON line (wall time, sizes, metrics). This is what
//!   `benches/append/run.py` drives next to DuckDB and pyarrow on a ≥ 1 GB table. The local
//!   storage lives here, not in `src/`, which never touches a file system.

use std::fs::{self, File};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use criterion::{BenchmarkId, Criterion, Throughput};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use paimon_compact::meta::{CompactionFile, Key, Level};
use paimon_compact::options::{CoreOptions, Flavor, TableKind};
use paimon_compact::rewrite::{
    rewrite_append, AppendRewrite, RewriteInput, FAST_COPY_OPTION, PASSTHROUGH_WRITER_OPTION,
};
use paimon_compact::storage::{
    MemoryStorage, ObjectMeta, Storage, StorageError, StorageErrorKind, StorageResult,
    StorageWriter,
};

// ---- local-directory storage (bench only) ----------------------------------------------------

/// Files under a root directory; writes go to `<path>.tmp` and are renamed on finish.
#[derive(Clone)]
struct DirStorage {
    root: PathBuf,
}

fn io_err(path: &str, e: std::io::Error) -> StorageError {
    let kind = match e.kind() {
        std::io::ErrorKind::NotFound => StorageErrorKind::NotFound,
        std::io::ErrorKind::PermissionDenied => StorageErrorKind::Permission,
        std::io::ErrorKind::AlreadyExists => StorageErrorKind::AlreadyExists,
        _ => StorageErrorKind::Io,
    };
    StorageError::new(kind, path, e.to_string())
}

struct DirWriter {
    tmp: PathBuf,
    dest: PathBuf,
    path: String,
    out: BufWriter<File>,
}

impl StorageWriter for DirWriter {
    fn write(&mut self, chunk: &[u8]) -> StorageResult<()> {
        self.out.write_all(chunk).map_err(|e| io_err(&self.path, e))
    }
    fn finish(self: Box<Self>) -> StorageResult<u64> {
        let DirWriter {
            tmp,
            dest,
            path,
            out,
        } = *self;
        let file = out
            .into_inner()
            .map_err(|e| io_err(&path, e.into_error()))?;
        let size = file.metadata().map_err(|e| io_err(&path, e))?.len();
        drop(file);
        fs::rename(&tmp, &dest).map_err(|e| io_err(&path, e))?;
        Ok(size)
    }
    fn abort(self: Box<Self>) -> StorageResult<()> {
        let _ = fs::remove_file(&self.tmp);
        Ok(())
    }
}

impl Storage for DirStorage {
    fn size(&self, path: &str) -> StorageResult<u64> {
        Ok(fs::metadata(self.root.join(path))
            .map_err(|e| io_err(path, e))?
            .len())
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        let mut f = File::open(self.root.join(path)).map_err(|e| io_err(path, e))?;
        f.seek(SeekFrom::Start(offset))
            .map_err(|e| io_err(path, e))?;
        let mut buf = Vec::with_capacity(len as usize);
        f.take(len)
            .read_to_end(&mut buf)
            .map_err(|e| io_err(path, e))?;
        Ok(buf)
    }
    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        let mut out = Vec::new();
        let dir = self.root.join(prefix);
        let dir = if dir.is_dir() {
            dir
        } else {
            dir.parent().unwrap_or(&self.root).to_path_buf()
        };
        for e in fs::read_dir(&dir).map_err(|e| io_err(prefix, e))? {
            let e = e.map_err(|e| io_err(prefix, e))?;
            let rel = e
                .path()
                .strip_prefix(&self.root)
                .unwrap_or(&e.path())
                .to_string_lossy()
                .to_string();
            if rel.starts_with(prefix) {
                let size = e.metadata().map_err(|e| io_err(&rel, e))?.len();
                out.push(ObjectMeta {
                    path: rel,
                    size,
                    modified_ms: None,
                });
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }
    fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter>> {
        let dest = self.root.join(path);
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent).map_err(|e| io_err(path, e))?;
        }
        let tmp = dest.with_extension("tmp");
        let file = File::create(&tmp).map_err(|e| io_err(path, e))?;
        Ok(Box::new(DirWriter {
            tmp,
            dest,
            path: path.to_string(),
            out: BufWriter::with_capacity(1 << 20, file),
        }))
    }
    fn delete(&self, path: &str) -> StorageResult<()> {
        fs::remove_file(self.root.join(path)).map_err(|e| io_err(path, e))
    }
    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.root.join(path))
            .map_err(|e| io_err(path, e))?;
        f.write_all(bytes).map_err(|e| io_err(path, e))
    }
}

// ---- file mode -------------------------------------------------------------------------------

fn input(storage: &dyn Storage, path: &str, seq: i64) -> RewriteInput {
    let size = storage.size(path).expect("input size");
    let name = Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    RewriteInput {
        path: path.to_string(),
        // Row count 0: not checked (the bench does not read footers twice).
        meta: Arc::new(CompactionFile::new(
            name,
            Level::ZERO,
            size,
            Key::default(),
            Key::default(),
            seq,
            seq,
        )),
        deleted_rows: None,
        columns: None,
    }
}

fn files_mode(args: &[String]) {
    let mut out_dir = None;
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut inputs = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => out_dir = it.next().cloned(),
            "--opt" => {
                let kv = it.next().expect("--opt KEY=VALUE");
                let (k, v) = kv.split_once('=').expect("--opt KEY=VALUE");
                pairs.push((k.to_string(), v.to_string()));
            }
            other => inputs.push(other.to_string()),
        }
    }
    let out_dir = PathBuf::from(out_dir.expect("--out DIR"));
    fs::create_dir_all(&out_dir).expect("create --out");
    let storage = DirStorage {
        root: PathBuf::from("/"),
    };
    let options = CoreOptions::from_pairs(
        TableKind::Append,
        Flavor::Java,
        pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    )
    .expect("options");
    let abs = |p: &str| {
        fs::canonicalize(p)
            .expect("input path")
            .to_string_lossy()
            .trim_start_matches('/')
            .to_string()
    };
    let inputs: Vec<RewriteInput> = inputs
        .iter()
        .enumerate()
        .map(|(i, p)| input(&storage, &abs(p), i as i64))
        .collect();
    let out_rel = fs::canonicalize(&out_dir)
        .expect("out dir")
        .to_string_lossy()
        .trim_start_matches('/')
        .to_string();
    let req = AppendRewrite {
        inputs,
        table_schema: None,
        output_dir: out_rel,
        file_prefix: "data-bench-".to_string(),
        output_level: Level::ZERO,
        creation_time_ms: 0,
        collect_value_stats: false,
        column_types: Vec::new(),
    };
    let start = Instant::now();
    let result = rewrite_append(&storage, &req, &options).expect("rewrite");
    let seconds = start.elapsed().as_secs_f64();
    let line = serde_json::json!({
        "seconds": seconds,
        "input_bytes": result.metrics.input_bytes,
        "output_bytes": result.metrics.output_bytes,
        "output_files": result.metrics.output_files,
        "metrics": result.metrics,
    });
    println!("{line}");
}

// ---- criterion (in memory) -------------------------------------------------------------------

fn opts(pairs: &[(&str, &str)]) -> CoreOptions {
    CoreOptions::from_pairs(TableKind::Append, Flavor::Java, pairs.iter().copied())
        .expect("options")
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Mixed int/float/string rows.
fn mixed_batch(first: i64, rows: usize) -> RecordBatch {
    let ids: Vec<i64> = (first..first + rows as i64).collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("qty", DataType::Int32, true),
        Field::new("price", DataType::Float64, true),
        Field::new("category", DataType::Utf8, true),
        Field::new("comment", DataType::Utf8, true),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ids.clone())),
        Arc::new(
            ids.iter()
                .map(|&i| Some((mix(i as u64) % 1000) as i32))
                .collect::<Int32Array>(),
        ),
        Arc::new(
            ids.iter()
                .map(|&i| Some((mix(i as u64 + 1) % 100_000) as f64 / 100.0))
                .collect::<Float64Array>(),
        ),
        Arc::new(
            ids.iter()
                .map(|&i| Some(format!("category-{:02}", mix(i as u64 + 2) % 40)))
                .collect::<StringArray>(),
        ),
        Arc::new(
            ids.iter()
                .map(|&i| Some(format!("comment {:x} for row {i}", mix(i as u64 + 3))))
                .collect::<StringArray>(),
        ),
    ];
    RecordBatch::try_new(schema, columns).expect("batch")
}

/// Low-cardinality strings only; `shift` moves file `k` to another range of values.
fn low_card_batch(first: i64, rows: usize, shift: u64) -> RecordBatch {
    let schema = Arc::new(Schema::new(
        (0..4)
            .map(|c| Field::new(format!("s{c}"), DataType::Utf8, true))
            .collect::<Vec<_>>(),
    ));
    let columns: Vec<ArrayRef> = (0..4u64)
        .map(|c| {
            Arc::new(
                (first..first + rows as i64)
                    .map(|i| {
                        Some(format!(
                            "value-{c}-{:04}",
                            mix(i as u64 * 4 + c) % (50 << c) + shift
                        ))
                    })
                    .collect::<StringArray>(),
            ) as ArrayRef
        })
        .collect();
    RecordBatch::try_new(schema, columns).expect("batch")
}

fn put(storage: &MemoryStorage, name: &str, batch: &RecordBatch, seq: i64) -> RewriteInput {
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), Some(props)).expect("writer");
    w.write(batch).expect("write");
    w.close().expect("close");
    let path = format!("t/{name}");
    storage.put(&path, buf);
    input(storage, &path, seq)
}

fn request(inputs: &[RewriteInput]) -> AppendRewrite {
    AppendRewrite {
        inputs: inputs.to_vec(),
        table_schema: None,
        output_dir: "t".into(),
        file_prefix: "data-out-".into(),
        output_level: Level::ZERO,
        creation_time_ms: 0,
        collect_value_stats: false,
        column_types: Vec::new(),
    }
}

fn run_once(storage: &MemoryStorage, inputs: &[RewriteInput], options: &CoreOptions) -> u64 {
    let result = rewrite_append(storage, &request(inputs), options).expect("rewrite");
    let bytes = result.metrics.output_bytes;
    for o in &result.outputs {
        let _ = storage.delete(&o.path);
    }
    bytes
}

fn benches(c: &mut Criterion) {
    let storage = MemoryStorage::new();
    let mixed: Vec<RewriteInput> = (0..4)
        .map(|k| {
            put(
                &storage,
                &format!("mixed-{k}.parquet"),
                &mixed_batch(k * 100_000, 100_000),
                k,
            )
        })
        .collect();
    let mixed_bytes: u64 = mixed.iter().map(|i| i.meta.file_size).sum();

    let mut g = c.benchmark_group("append_rewrite");
    g.sample_size(10).throughput(Throughput::Bytes(mixed_bytes));
    g.bench_function("rewrite/zstd", |b| {
        b.iter(|| run_once(&storage, &mixed, &opts(&[])))
    });
    g.bench_function("fast_copy/zstd", |b| {
        b.iter(|| run_once(&storage, &mixed, &opts(&[(FAST_COPY_OPTION, "true")])))
    });
    g.finish();

    let mut g = c.benchmark_group("passthrough");
    g.sample_size(10);
    for (dicts, shift) in [("identical", 0u64), ("differing", 37)] {
        let inputs: Vec<RewriteInput> = (0..4)
            .map(|k| {
                let batch = low_card_batch(k * 100_000, 100_000, shift * k as u64);
                put(&storage, &format!("low-{dicts}-{k}.parquet"), &batch, k)
            })
            .collect();
        let bytes: u64 = inputs.iter().map(|i| i.meta.file_size).sum();
        g.throughput(Throughput::Bytes(bytes));
        for (on, writer) in [("false", "mapping"), ("true", "mapping"), ("true", "arrow")] {
            let options = opts(&[
                ("parquet.read.enable-dictionary-passthrough", on),
                (PASSTHROUGH_WRITER_OPTION, writer),
            ]);
            let size = run_once(&storage, &inputs, &options);
            eprintln!("passthrough {dicts} {on} {writer}: output {size} bytes");
            g.bench_with_input(
                BenchmarkId::new(dicts, format!("passthrough={on}/{writer}")),
                &options,
                |b, o| b.iter(|| run_once(&storage, &inputs, o)),
            );
        }
    }
    g.finish();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("files") {
        files_mode(&args[1..]);
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
}
