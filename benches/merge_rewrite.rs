//! Primary-key merge benchmarks.
//!
//! Three modes in one binary (harness = false):
//! * `cargo bench --bench merge_rewrite` — criterion, in memory, small inputs: deduplicating
//!   full compaction of 10 sorted runs, and the same with partial-update.
//! * `merge_rewrite generate --dir DIR --rows N --runs R` — writes R primary-key Parquet files
//!   (zstd, `_KEY_k`, `_SEQUENCE_NUMBER`, `_VALUE_KIND`, then the table's columns) of N rows in
//!   total, oldest first: 65% inserts of new keys, 30% updates and 5% deletes of existing keys.
//! * `merge_rewrite files --out DIR [--opt KEY=VALUE]... INPUT...` — one full compaction of
//!   the inputs (the first is the max-level run, the others level-0 files, newest last) into
//!   the max level with deletes dropped, printing one JSON line. `benches/merge/run.py` drives
//!   this next to DuckDB on the same files. The local storage lives here, not in `src/`.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{
    ArrayRef, Float64Array, Int32Array, Int64Array, Int8Array, RecordBatch, StringArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use criterion::{Criterion, Throughput};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use paimon_compact::meta::{CompactionFile, Level};
use paimon_compact::options::{CoreOptions, Flavor, TableKind};
use paimon_compact::plan::interval_partition;
use paimon_compact::rewrite::merge::kv_format::planner_key;
use paimon_compact::rewrite::merge::{rewrite_merge_tree, MergeTreeRewrite};
use paimon_compact::rewrite::RewriteInput;
use paimon_compact::storage::{
    MemoryStorage, ObjectMeta, Storage, StorageError, StorageErrorKind, StorageResult,
    StorageWriter,
};
use paimon_compact::table::binary_row::Datum;

// ---- local-directory storage (bench only) ----------------------------------------------------

#[derive(Clone)]
struct DirStorage {
    root: PathBuf,
}

fn io_err(path: &str, e: std::io::Error) -> StorageError {
    let kind = match e.kind() {
        std::io::ErrorKind::NotFound => StorageErrorKind::NotFound,
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

/// `len` bytes of `f` from `offset` (fewer at the end of the file) by positioned reads: one
/// `pread` per range, where `read_to_end` starts at 8 KiB and doubles, a call per step.
fn read_at(f: &File, offset: u64, len: u64) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; len as usize];
    let mut filled = 0;
    while filled < buf.len() {
        match f.read_at(&mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

impl Storage for DirStorage {
    fn size(&self, path: &str) -> StorageResult<u64> {
        Ok(fs::metadata(self.root.join(path))
            .map_err(|e| io_err(path, e))?
            .len())
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        let f = File::open(self.root.join(path)).map_err(|e| io_err(path, e))?;
        read_at(&f, offset, len).map_err(|e| io_err(path, e))
    }
    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        let mut out = Vec::new();
        for e in fs::read_dir(&self.root).map_err(|e| io_err(prefix, e))? {
            let e = e.map_err(|e| io_err(prefix, e))?;
            let name = e.file_name().to_string_lossy().to_string();
            if name.starts_with(prefix) {
                let size = e.metadata().map_err(|e| io_err(&name, e))?.len();
                out.push(ObjectMeta {
                    path: name,
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
        let tmp = dest.with_extension("tmp");
        let out =
            BufWriter::with_capacity(1 << 20, File::create(&tmp).map_err(|e| io_err(path, e))?);
        Ok(Box::new(DirWriter {
            tmp,
            dest,
            path: path.to_string(),
            out,
        }))
    }
    fn delete(&self, path: &str) -> StorageResult<()> {
        fs::remove_file(self.root.join(path)).map_err(|e| io_err(path, e))
    }
    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
        let p = self.root.join(path);
        if p.exists() {
            return Err(StorageError::new(StorageErrorKind::AlreadyExists, path, ""));
        }
        fs::write(p, bytes).map_err(|e| io_err(path, e))
    }
}

// ---- data ------------------------------------------------------------------------------------

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("_KEY_k", DataType::Int64, false),
        Field::new("_SEQUENCE_NUMBER", DataType::Int64, false),
        Field::new("_VALUE_KIND", DataType::Int8, false),
        Field::new("k", DataType::Int64, false),
        Field::new("ts", DataType::Int64, true),
        Field::new("qty", DataType::Int32, true),
        Field::new("price", DataType::Float64, true),
        Field::new("category", DataType::Utf8, true),
        Field::new("comment", DataType::Utf8, true),
    ]))
}

/// One run's rows, sorted by key with one row per key: (key, seq, kind).
fn run_rows(
    run: usize,
    runs: usize,
    rows: usize,
    pool: &mut Vec<i64>,
    state: &mut u64,
) -> Vec<(i64, i64, i8)> {
    let mut out: Vec<(i64, i64, i8)> = Vec::with_capacity(rows);
    let base = (run as i64) * (rows as i64 + 1);
    let _ = runs;
    for i in 0..rows {
        *state = mix(*state);
        let roll = *state % 100;
        let seq = base + i as i64;
        if roll < 65 || pool.is_empty() {
            let key = (mix(*state ^ 0x5555) >> 1) as i64;
            pool.push(key);
            out.push((key, seq, 0));
        } else {
            let key = pool[(mix(*state ^ 0xaaaa) % pool.len() as u64) as usize];
            out.push((key, seq, if roll < 95 { 2 } else { 3 }));
        }
    }
    out.sort_by_key(|r| (r.0, r.1));
    out.dedup_by(|b, a| {
        if a.0 == b.0 {
            *a = *b;
            true
        } else {
            false
        }
    });
    out
}

fn batch(rows: &[(i64, i64, i8)]) -> RecordBatch {
    let keys: Int64Array = rows.iter().map(|r| r.0).collect();
    let cats: Vec<String> = (0..40).map(|i| format!("category-{i:02}")).collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(keys.clone()),
        Arc::new(rows.iter().map(|r| r.1).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|r| r.2).collect::<Int8Array>()),
        Arc::new(keys),
        Arc::new(
            rows.iter()
                .map(|r| Some(1_700_000_000_000 + r.1 * 17))
                .collect::<Int64Array>(),
        ),
        Arc::new(
            rows.iter()
                .map(|r| Some((mix(r.1 as u64) % 1000) as i32))
                .collect::<Int32Array>(),
        ),
        Arc::new(
            rows.iter()
                .map(|r| Some((mix(r.1 as u64 ^ 7) % 100_000) as f64 / 100.0))
                .collect::<Float64Array>(),
        ),
        Arc::new(
            rows.iter()
                .map(|r| Some(cats[(mix(r.0 as u64) % 40) as usize].as_str()))
                .collect::<StringArray>(),
        ),
        Arc::new(
            rows.iter()
                .map(|r| (r.1 % 9 != 0).then(|| format!("comment {:016x}", mix(r.1 as u64 ^ 99))))
                .collect::<StringArray>(),
        ),
    ];
    RecordBatch::try_new(schema(), columns).expect("batch")
}

fn write_parquet(rows: &[(i64, i64, i8)], out: &mut dyn Write) {
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).expect("level")))
        .set_max_row_group_row_count(Some(256 * 1024))
        .build();
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, schema(), Some(props)).expect("writer");
    for chunk in rows.chunks(64 * 1024) {
        w.write(&batch(chunk)).expect("write");
    }
    w.close().expect("close");
    out.write_all(&buf).expect("out");
}

fn meta_of(name: &str, level: u32, size: u64, rows: &[(i64, i64, i8)]) -> CompactionFile {
    let mut m = CompactionFile::new(
        name,
        Level::new(level),
        size,
        planner_key(&[Datum::BigInt(rows.first().map_or(0, |r| r.0))]),
        planner_key(&[Datum::BigInt(rows.last().map_or(0, |r| r.0))]),
        rows.iter().map(|r| r.1).min().unwrap_or(0),
        rows.iter().map(|r| r.1).max().unwrap_or(0),
    );
    m.row_count = rows.len() as u64;
    m.delete_row_count = None;
    m
}

/// The metadata a writer would record for a file (for `files` mode), from its footer: key
/// and sequence ranges from the column chunks' statistics, the row count. Reading the key
/// and sequence columns back instead would put a scan of every input into the measured time.
fn meta_from_file(st: &DirStorage, name: &str, level: u32) -> CompactionFile {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::file::statistics::Statistics;
    let f = File::open(st.root.join(name)).expect("open");
    let size = f.metadata().expect("meta").len();
    let reader = SerializedFileReader::new(f).expect("footer");
    let md = reader.metadata();
    // Column 0 is `_KEY_k`, column 1 `_SEQUENCE_NUMBER` (both BIGINT, with statistics).
    let range = |c: usize| {
        md.row_groups()
            .iter()
            .map(|rg| match rg.column(c).statistics() {
                Some(Statistics::Int64(s)) => (
                    *s.min_opt().expect("min statistic"),
                    *s.max_opt().expect("max statistic"),
                ),
                other => panic!("column {c} of {name} has no BIGINT statistics: {other:?}"),
            })
            .fold((i64::MAX, i64::MIN), |(lo, hi), (a, b)| {
                (lo.min(a), hi.max(b))
            })
    };
    let ((kmin, kmax), (smin, smax)) = (range(0), range(1));
    let mut m = CompactionFile::new(
        name,
        Level::new(level),
        size,
        planner_key(&[Datum::BigInt(kmin)]),
        planner_key(&[Datum::BigInt(kmax)]),
        smin,
        smax,
    );
    m.row_count = md.file_metadata().num_rows() as u64;
    m.delete_row_count = None;
    m
}

fn options(extra: &[(String, String)]) -> CoreOptions {
    let mut pairs: Vec<(&str, &str)> = vec![("bucket", "1")];
    pairs.extend(extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    CoreOptions::from_pairs(TableKind::PrimaryKey, Flavor::Java, pairs).expect("options")
}

/// A full compaction of `metas` (first = max level) into level 5, deletes dropped.
fn request(metas: Vec<Arc<CompactionFile>>, dir: &str, out: &str) -> MergeTreeRewrite {
    let sections = interval_partition(&metas)
        .into_iter()
        .map(|sec| {
            sec.iter()
                .map(|run| {
                    run.files()
                        .iter()
                        .map(|m| RewriteInput {
                            path: if dir.is_empty() {
                                m.file_name.clone()
                            } else {
                                format!("{dir}/{}", m.file_name)
                            },
                            meta: m.clone(),
                            deleted_rows: None,
                            columns: None,
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    MergeTreeRewrite {
        sections,
        higher_levels: Vec::new(),
        output_dir: out.to_string(),
        file_prefix: "data-merged-".into(),
        changelog_prefix: "changelog-merged-".into(),
        output_level: Level::new(5),
        max_level: Level::new(5),
        drop_delete: true,
        write_data: true,
        column_types: Vec::new(),
        creation_time_ms: 0,
        schema: None,
    }
}

fn generate(args: &[String]) {
    let mut dir = PathBuf::from("target/merge-bench/data");
    let (mut rows, mut runs) = (10_000_000usize, 10usize);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--dir" => dir = PathBuf::from(it.next().expect("--dir DIR")),
            "--rows" => rows = it.next().expect("--rows N").parse().expect("rows"),
            "--runs" => runs = it.next().expect("--runs R").parse().expect("runs"),
            other => panic!("unknown argument {other}"),
        }
    }
    fs::create_dir_all(&dir).expect("dir");
    let mut pool = Vec::new();
    let mut state = 42u64;
    let mut total_rows = 0;
    let mut total_bytes = 0;
    let mut names = Vec::new();
    for r in 0..runs {
        let rs = run_rows(r, runs, rows / runs, &mut pool, &mut state);
        let name = format!("run-{r:03}.parquet");
        let mut f = BufWriter::new(File::create(dir.join(&name)).expect("create"));
        write_parquet(&rs, &mut f);
        f.flush().expect("flush");
        total_rows += rs.len();
        total_bytes += fs::metadata(dir.join(&name)).expect("size").len();
        names.push(name);
    }
    println!(
        "{}",
        serde_json::json!({"dir": dir, "files": names, "rows": total_rows, "bytes": total_bytes})
    );
}

fn files(args: &[String]) {
    let mut out: Option<PathBuf> = None;
    let mut opts: Vec<(String, String)> = Vec::new();
    let mut inputs: Vec<PathBuf> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => out = Some(PathBuf::from(it.next().expect("--out DIR"))),
            "--opt" => {
                let kv = it.next().expect("--opt KEY=VALUE");
                let (k, v) = kv.split_once('=').expect("KEY=VALUE");
                opts.push((k.to_string(), v.to_string()));
            }
            other => inputs.push(PathBuf::from(other)),
        }
    }
    let out = out.expect("--out DIR");
    fs::create_dir_all(&out).expect("out dir");
    // Inputs are linked into the output directory's storage root under their names.
    let st = DirStorage { root: out.clone() };
    let mut metas = Vec::new();
    for (i, p) in inputs.iter().enumerate() {
        let name = p.file_name().expect("name").to_string_lossy().to_string();
        let target = out.join(&name);
        if !target.exists() {
            fs::hard_link(p, &target)
                .or_else(|_| fs::copy(p, &target).map(|_| ()))
                .expect("link input");
        }
        metas.push(Arc::new(meta_from_file(
            &st,
            &name,
            if i == 0 { 5 } else { 0 },
        )));
    }
    let req = request(metas, "", "");
    let t = Instant::now();
    let r = rewrite_merge_tree(&st, &req, &options(&opts)).expect("merge");
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{}",
        serde_json::json!({
            "wall_s": secs,
            "outputs": r.outputs.iter().map(|f| &f.path).collect::<Vec<_>>(),
            "metrics": r.metrics,
        })
    );
}

fn criterion_benches() {
    let mut c = Criterion::default().sample_size(10).configure_from_args();
    let st = MemoryStorage::new();
    let mut pool = Vec::new();
    let mut state = 7u64;
    let mut metas = Vec::new();
    let per_run = 20_000;
    for r in 0..10 {
        let rs = run_rows(r, 10, per_run, &mut pool, &mut state);
        let mut buf = Vec::new();
        write_parquet(&rs, &mut buf);
        let name = format!("run-{r}.parquet");
        metas.push(Arc::new(meta_of(
            &name,
            if r == 0 { 5 } else { 0 },
            buf.len() as u64,
            &rs,
        )));
        st.put(&name, buf);
    }
    let mut g = c.benchmark_group("merge_rewrite");
    g.throughput(Throughput::Elements(10 * per_run as u64));
    for (label, opts) in [
        ("deduplicate", vec![]),
        (
            "partial-update",
            vec![
                ("merge-engine".to_string(), "partial-update".to_string()),
                ("ignore-delete".to_string(), "true".to_string()),
            ],
        ),
    ] {
        let o = options(&opts);
        g.bench_function(label, |b| {
            b.iter(|| {
                let req = request(metas.clone(), "", "out");
                let r = rewrite_merge_tree(&st, &req, &o).expect("merge");
                for f in &r.outputs {
                    st.delete(&f.path).expect("delete");
                }
            })
        });
    }
    g.finish();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("generate") => generate(&args[1..]),
        Some("files") => files(&args[1..]),
        _ => criterion_benches(),
    }
    let _ = Path::new(".");
}
