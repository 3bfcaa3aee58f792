//! A small command-line driver of the table layer over a local directory, used by the pypaimon
//! tests (`tests/pypaimon/`) until the `paimon-compact` CLI exposes the same commands.
//!
//! ```text
//! table_tool plan    <root> <table> [--full]          # TablePlan as JSON
//! table_tool compact <root> <table> [--full] [--no-lease]  # CompactReport as JSON
//! table_tool demo    <root>                            # writes the demo tables
//! ```
//! `<table>` is relative to `<root>`, e.g. `db.db/t`. Errors print `{"error": ...}` and exit 1.

use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use paimon_compact::plan::PlanContext;
use paimon_compact::storage::{
    ObjectMeta, Storage, StorageError, StorageErrorKind, StorageResult, StorageWriter,
};
use paimon_compact::table::{compact_table, demo, plan_table, CompactOptions, PlanRequest};

/// Storage over a local directory: writes go to a temp file renamed on finish; create-if-absent
/// uses a hard link, which fails if the target exists (atomic on POSIX file systems).
struct LocalStorage {
    root: PathBuf,
}

fn err(kind_of: &std::io::Error, path: &str) -> StorageError {
    let kind = match kind_of.kind() {
        std::io::ErrorKind::NotFound => StorageErrorKind::NotFound,
        std::io::ErrorKind::AlreadyExists => StorageErrorKind::AlreadyExists,
        std::io::ErrorKind::PermissionDenied => StorageErrorKind::Permission,
        _ => StorageErrorKind::Io,
    };
    StorageError::new(kind, path, kind_of.to_string())
}

impl LocalStorage {
    fn abs(&self, path: &str) -> PathBuf {
        self.root.join(path)
    }
    fn tmp(&self, path: &str) -> PathBuf {
        let p = self.abs(path);
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let n: u64 = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        p.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()))
    }
}

struct LocalWriter {
    tmp: PathBuf,
    target: PathBuf,
    file: fs::File,
    path: String,
}

impl StorageWriter for LocalWriter {
    fn write(&mut self, chunk: &[u8]) -> StorageResult<()> {
        self.file.write_all(chunk).map_err(|e| err(&e, &self.path))
    }
    fn finish(self: Box<Self>) -> StorageResult<u64> {
        let n = self.file.metadata().map_err(|e| err(&e, &self.path))?.len();
        drop(self.file);
        fs::rename(&self.tmp, &self.target).map_err(|e| err(&e, &self.path))?;
        Ok(n)
    }
    fn abort(self: Box<Self>) -> StorageResult<()> {
        drop(self.file);
        let _ = fs::remove_file(&self.tmp);
        Ok(())
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

impl Storage for LocalStorage {
    fn size(&self, path: &str) -> StorageResult<u64> {
        fs::metadata(self.abs(path))
            .map(|m| m.len())
            .map_err(|e| err(&e, path))
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        let mut f = fs::File::open(self.abs(path)).map_err(|e| err(&e, path))?;
        f.seek(SeekFrom::Start(offset)).map_err(|e| err(&e, path))?;
        let mut buf = Vec::new();
        f.take(len)
            .read_to_end(&mut buf)
            .map_err(|e| err(&e, path))?;
        Ok(buf)
    }
    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        let dir = match prefix.rfind('/') {
            Some(i) => &prefix[..i],
            None => "",
        };
        let mut files = Vec::new();
        walk(&self.abs(dir), &mut files);
        let mut out: Vec<ObjectMeta> = files
            .into_iter()
            .filter_map(|p| {
                let rel = p
                    .strip_prefix(&self.root)
                    .ok()?
                    .to_string_lossy()
                    .replace('\\', "/");
                let name = p.file_name()?.to_string_lossy().into_owned();
                if name.starts_with('.') || !rel.starts_with(prefix) {
                    return None;
                }
                let size = fs::metadata(&p).ok()?.len();
                Some(ObjectMeta { path: rel, size })
            })
            .collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }
    fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter + '_>> {
        let target = self.abs(path);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(|e| err(&e, path))?;
        }
        let tmp = self.tmp(path);
        let file = fs::File::create(&tmp).map_err(|e| err(&e, path))?;
        Ok(Box::new(LocalWriter {
            tmp,
            target,
            file,
            path: path.to_string(),
        }))
    }
    fn delete(&self, path: &str) -> StorageResult<()> {
        fs::remove_file(self.abs(path)).map_err(|e| err(&e, path))
    }
    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
        let target = self.abs(path);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(|e| err(&e, path))?;
        }
        let tmp = self.tmp(path);
        fs::write(&tmp, bytes).map_err(|e| err(&e, path))?;
        let linked = fs::hard_link(&tmp, &target);
        let _ = fs::remove_file(&tmp);
        linked.map_err(|e| err(&e, path))
    }
}

fn job_id() -> [u8; 16] {
    let mut id = [0u8; 16];
    if let Ok(mut f) = fs::File::open("/dev/urandom") {
        let _ = f.read_exact(&mut id);
    }
    let n = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    for (i, b) in n.to_le_bytes().iter().enumerate() {
        id[i] ^= b;
    }
    id
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    let pos: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let now = now_ms();
    let ctx = PlanContext::at(now, ((now / 3_600_000) % 24) as u8);
    let result: Result<serde_json::Value, paimon_compact::Error> = match pos.as_slice() {
        [cmd, root, table] if cmd.as_str() == "plan" => {
            let st = LocalStorage {
                root: PathBuf::from(root),
            };
            plan_table(
                &st,
                table,
                &PlanRequest {
                    full: flag("--full"),
                    context: ctx,
                    merge_rewriter: false,
                },
            )
            .map(|p| serde_json::to_value(p).unwrap_or_default())
        }
        [cmd, root, table] if cmd.as_str() == "compact" => {
            let st = LocalStorage {
                root: PathBuf::from(root),
            };
            let start = std::time::Instant::now();
            let clock = move || start.elapsed().as_millis() as i64;
            let mut o = CompactOptions::new(ctx, job_id());
            o.full = flag("--full");
            o.owner = format!("table_tool:{}", std::process::id());
            if flag("--no-lease") {
                o.lease_ttl_ms = None;
            }
            o.clock = Some(&clock);
            compact_table(&st, table, &o).map(|r| serde_json::to_value(r).unwrap_or_default())
        }
        [cmd, root] if cmd.as_str() == "demo" => {
            let st = LocalStorage {
                root: PathBuf::from(root),
            };
            demo::write_demo(&st, "", now, job_id()).map(|t| serde_json::json!({ "tables": t }))
        }
        _ => {
            eprintln!(
                "usage: table_tool plan|compact <root> <table> [--full] [--no-lease] | demo <root>"
            );
            std::process::exit(2);
        }
    };
    match result {
        Ok(v) => println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default()),
        Err(e) => {
            println!("{}", serde_json::json!({ "error": e }));
            std::process::exit(1);
        }
    }
}
