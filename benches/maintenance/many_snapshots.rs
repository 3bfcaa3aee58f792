//! Writes a table with many snapshots for the maintenance measurements
//! (`benches/maintenance/run.sh`, `benches/README.md`, "Maintenance on many snapshots").
//!
//! ```text
//! cargo run --release --example many_snapshots -- --dir DIR [--commits 10000]
//!     [--partitions 10] [--rows 3] [--compact-every 50]
//! ```
//!
//! `DIR/db.db/t` becomes an append table (`bucket = -1`) partitioned by `dt` with
//! `--partitions` partitions. Each commit writes `--rows` rows to as many consecutive
//! partitions (one small Parquet file each) as one APPEND snapshot. After every
//! `--compact-every` commits but the last (the last ones are left for the measured `compact`),
//! `compact_table` commits a COMPACT snapshot: its DELETE entries make the replaced small files
//! deletable by snapshot expiration, and its manifest merge keeps the base manifest list short.
//! That merge is what keeps generation linear: every APPEND commit of the demo writer re-scans
//! the table and never merges manifests, so without compaction each commit reads one more
//! manifest than the last (1000 commits: 87 s of CPU without compaction, 9 s with one every 50
//! commits). Snapshot times start 30 days ago, one minute apart. Prints one JSON line. The
//! local-directory storage lives here, not in `src/`.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use paimon_compact::plan::PlanContext;
use paimon_compact::storage::{
    ObjectMeta, Storage, StorageError, StorageErrorKind, StorageResult, StorageWriter,
};
use paimon_compact::table::binary_row::Datum;
use paimon_compact::table::demo::{create_table, field, new_schema, RowKind, TableWriter};
use paimon_compact::table::{compact_table, CompactOptions};

// ---- local-directory storage (generator only) ------------------------------------------------

#[derive(Clone)]
struct DirStorage {
    root: PathBuf,
}

fn io_err(path: &str, e: std::io::Error) -> StorageError {
    let kind = match e.kind() {
        ErrorKind::NotFound => StorageErrorKind::NotFound,
        ErrorKind::AlreadyExists => StorageErrorKind::AlreadyExists,
        ErrorKind::PermissionDenied => StorageErrorKind::Permission,
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

impl DirStorage {
    /// The local path of a storage path, with its parent directories created.
    fn prepare(&self, path: &str) -> StorageResult<PathBuf> {
        let p = self.root.join(path);
        if let Some(dir) = p.parent() {
            fs::create_dir_all(dir).map_err(|e| io_err(path, e))?;
        }
        Ok(p)
    }
}

impl Storage for DirStorage {
    fn size(&self, path: &str) -> StorageResult<u64> {
        Ok(fs::metadata(self.root.join(path))
            .map_err(|e| io_err(path, e))?
            .len())
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let f = File::open(self.root.join(path)).map_err(|e| io_err(path, e))?;
        let mut buf = vec![0u8; len as usize];
        let mut filled = 0;
        while filled < buf.len() {
            match f.read_at(&mut buf[filled..], offset + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(io_err(path, e)),
            }
        }
        buf.truncate(filled);
        Ok(buf)
    }
    /// Files under the deepest directory `prefix` names whose path starts with `prefix`.
    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        let dir = prefix.rfind('/').map_or("", |i| &prefix[..i]);
        let mut out = Vec::new();
        let mut stack = vec![self.root.join(dir)];
        while let Some(d) = stack.pop() {
            let entries = match fs::read_dir(&d) {
                Ok(e) => e,
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(io_err(prefix, e)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| io_err(prefix, e))?;
                let ft = entry.file_type().map_err(|e| io_err(prefix, e))?;
                if ft.is_dir() {
                    stack.push(entry.path());
                    continue;
                }
                let p = entry.path();
                let rel = p
                    .strip_prefix(&self.root)
                    .map(|r| r.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if rel.starts_with(prefix) && !rel.ends_with(".tmp") {
                    let meta = entry.metadata().map_err(|e| io_err(&rel, e))?;
                    let modified_ms = meta
                        .modified()
                        .ok()
                        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                        .map(|d| d.as_millis() as i64);
                    out.push(ObjectMeta {
                        path: rel,
                        size: meta.len(),
                        modified_ms,
                    });
                }
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }
    fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter>> {
        let dest = self.prepare(path)?;
        let mut tmp = dest.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let out = BufWriter::new(File::create(&tmp).map_err(|e| io_err(path, e))?);
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
    /// Write-then-hard-link: fails if the target exists, never shows a partial file.
    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
        let dest = self.prepare(path)?;
        let mut tmp = dest.clone().into_os_string();
        tmp.push(".cia.tmp");
        let tmp = PathBuf::from(tmp);
        let result = (|| {
            let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
            f.write_all(bytes)?;
            drop(f);
            fs::hard_link(&tmp, &dest)
        })();
        let _ = fs::remove_file(&tmp);
        result.map_err(|e| io_err(path, e))
    }
}

// ---- generator -------------------------------------------------------------------------------

struct Args {
    dir: PathBuf,
    commits: i64,
    partitions: i64,
    rows: i64,
    compact_every: i64,
}

fn parse_args() -> Args {
    let mut a = Args {
        dir: PathBuf::new(),
        commits: 10_000,
        partitions: 10,
        rows: 3,
        compact_every: 50,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        let num = || {
            value
                .parse::<i64>()
                .unwrap_or_else(|e| panic!("{flag}: {e}"))
        };
        match flag.as_str() {
            "--dir" => a.dir = PathBuf::from(&value),
            "--commits" => a.commits = num(),
            "--partitions" => a.partitions = num().max(1),
            "--rows" => a.rows = num().max(1),
            "--compact-every" => a.compact_every = num(),
            other => panic!("unknown flag {other}"),
        }
    }
    assert!(!a.dir.as_os_str().is_empty(), "--dir DIR is required");
    a
}

fn count_files(dir: &Path) -> (u64, u64) {
    let (mut n, mut bytes) = (0, 0);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(_) => {
                    n += 1;
                    bytes += e.metadata().map_or(0, |m| m.len());
                }
                Err(_) => {}
            }
        }
    }
    (n, bytes)
}

fn main() {
    let args = parse_args();
    fs::create_dir_all(&args.dir).expect("create --dir");
    let storage = DirStorage {
        root: args.dir.clone(),
    };
    let table = "db.db/t";
    let wall_now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let start_ms = wall_now - 30 * 86_400_000;
    let schema = new_schema(
        vec![
            field(0, "id", "BIGINT NOT NULL").unwrap(),
            field(1, "dt", "STRING").unwrap(),
            field(2, "v", "STRING").unwrap(),
        ],
        &["dt"],
        &[],
        &[("bucket", "-1")],
        start_ms,
    );
    create_table(&storage, table, &schema).expect("create table (is --dir empty?)");

    let t0 = Instant::now();
    let mut writer = TableWriter::new(&storage, table, [7; 16]);
    let (mut compactions, mut files_removed) = (0u64, 0usize);
    let mut last = 0i64;
    for c in 0..args.commits {
        let now_ms = start_ms + c * 60_000;
        let rows: Vec<_> = (0..args.rows)
            .map(|i| {
                let id = c * args.rows + i;
                (
                    RowKind::Insert,
                    vec![
                        Datum::BigInt(id),
                        Datum::String(format!("p{:03}", id % args.partitions)),
                        Datum::String(format!("value-{c}-{i}")),
                    ],
                )
            })
            .collect();
        last = writer.commit(&rows, now_ms).expect("append commit");
        if args.compact_every > 0 && (c + 1) % args.compact_every == 0 && c + 1 < args.commits {
            let mut seed = [0u8; 16];
            seed[..8].copy_from_slice(&(c as u64).to_le_bytes());
            seed[8] = 0xc0;
            let mut opts = CompactOptions::new(PlanContext::at(now_ms + 1_000, 12), seed);
            opts.lease_ttl_ms = None;
            let report = compact_table(&storage, table, &opts).expect("compaction");
            if let Some(id) = report.snapshot_after {
                last = id;
                compactions += 1;
                files_removed += report.totals.files_removed;
            }
        }
        if (c + 1) % 1000 == 0 {
            eprintln!(
                "{} commits, snapshot {last}, {:.1} s",
                c + 1,
                t0.elapsed().as_secs_f64()
            );
        }
    }
    let (files, bytes) = count_files(&args.dir.join(table));
    println!(
        "{{\"table\":\"{}\",\"commits\":{},\"compactions\":{compactions},\
         \"files_compacted_away\":{files_removed},\"latest_snapshot\":{last},\"files\":{files},\
         \"bytes\":{bytes},\"seconds\":{:.1}}}",
        args.dir.join(table).display(),
        args.commits,
        t0.elapsed().as_secs_f64()
    );
}
