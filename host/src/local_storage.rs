//! Storage over a local directory: what the CLI gives the component.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use paimon_compact::storage::{
    ObjectMeta, Storage, StorageError, StorageErrorKind, StorageResult, StorageWriter,
};

/// A directory as object storage. Paths are relative, `/`-separated, and may not escape the
/// root (`..`, absolute paths and empty segments are refused). Paimon's external data files
/// are addressed by `file:` URIs (`file:/abs/path`, `file:///abs/path`); those are served only
/// under the external roots the host was given, and listed back as `file:/abs/path`.
#[derive(Debug)]
pub struct LocalDirStorage {
    root: PathBuf,
    external_roots: Vec<PathBuf>,
    temp_counter: AtomicU64,
}

fn io_error(e: std::io::Error, path: &str) -> StorageError {
    let kind = match e.kind() {
        ErrorKind::NotFound => StorageErrorKind::NotFound,
        ErrorKind::AlreadyExists => StorageErrorKind::AlreadyExists,
        ErrorKind::PermissionDenied => StorageErrorKind::Permission,
        _ => StorageErrorKind::Io,
    };
    StorageError::new(kind, path, e.to_string())
}

impl LocalDirStorage {
    /// Storage rooted at the directory `root`, without external roots. Nothing is checked
    /// or created until a call needs it.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        LocalDirStorage {
            root: root.into(),
            external_roots: Vec::new(),
            temp_counter: AtomicU64::new(0),
        }
    }

    /// Also serves `file:` URIs under these absolute directories (a table's
    /// `data-file.external-paths`).
    pub fn with_external_roots(mut self, roots: impl IntoIterator<Item = PathBuf>) -> Self {
        self.external_roots.extend(roots);
        self
    }

    /// The absolute local path of a `file:` URI (`file:/abs`, `file:///abs`,
    /// `file://localhost/abs`), if `path` is one.
    pub(crate) fn file_uri(path: &str) -> Option<&str> {
        let rest = path.strip_prefix("file:")?;
        let rest = match rest.strip_prefix("//") {
            Some(r) => r.strip_prefix("localhost").unwrap_or(r),
            None => rest,
        };
        Some(rest)
    }

    /// The directory relative paths resolve against, as given to [`LocalDirStorage::new`].
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn resolve(&self, path: &str) -> StorageResult<PathBuf> {
        if let Some(abs) = Self::file_uri(path) {
            let p = Path::new(abs);
            let clean = abs.starts_with('/')
                && p.components()
                    .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
            if clean && self.external_roots.iter().any(|r| p.starts_with(r)) {
                return Ok(p.to_path_buf());
            }
            return Err(StorageError::new(
                StorageErrorKind::Permission,
                path,
                "this file URI is outside the external directories the host serves (a table's \
                 data-file.external-paths, or --allow-external)",
            ));
        }
        if path.contains(':') && path.split('/').next().is_some_and(|s| s.ends_with(':')) {
            return Err(StorageError::new(
                StorageErrorKind::Permission,
                path,
                "this host serves local paths and file: URIs only",
            ));
        }
        let rel = Path::new(path);
        let ok = !path.is_empty()
            && rel.components().all(|c| matches!(c, Component::Normal(_)))
            && !path.split('/').any(str::is_empty);
        if !ok {
            return Err(StorageError::new(
                StorageErrorKind::Permission,
                path,
                "paths must be relative and stay inside the storage root",
            ));
        }
        Ok(self.root.join(rel))
    }

    /// Whether `real` (a canonical path) is inside the root or an external root, themselves
    /// canonicalized (a root that does not exist contains nothing yet).
    fn really_inside(&self, real: &Path) -> bool {
        std::iter::once(&self.root)
            .chain(&self.external_roots)
            .filter_map(|r| fs::canonicalize(r).ok())
            .any(|r| real.starts_with(r))
    }

    fn symlink_out(path: &str) -> StorageError {
        StorageError::new(
            StorageErrorKind::Permission,
            path,
            "a symbolic link out of the storage root (and of the external directories)",
        )
    }

    /// [`Self::resolve`], then where the path really leads: a symbolic link (of the file or
    /// of a directory on the way) to a place outside the root and the external roots is
    /// refused, so a table cannot make the job read, and copy into its output, a file it was
    /// never given. A path that does not exist is left for the read to report.
    fn resolve_for_reading(&self, path: &str) -> StorageResult<PathBuf> {
        let p = self.resolve(path)?;
        let Ok(real) = fs::canonicalize(&p) else {
            return Ok(p);
        };
        if self.really_inside(&real) {
            Ok(p)
        } else {
            Err(Self::symlink_out(path))
        }
    }

    /// [`Self::resolve`] for a call that creates, replaces or deletes `path` (or lists under
    /// it): the directories on the way must really be inside the root or an external root,
    /// so that a symbolic link to a directory elsewhere, planted in a table, cannot make
    /// orphan removal or expiry delete, or a writer create, a file outside it. The deepest
    /// directory of the path that exists is checked: the part below it is created by the call
    /// itself. The last component is not followed by any of these calls (a temporary file is
    /// created exclusively, then renamed or hard-linked onto the name; a delete removes a link,
    /// not what it points to).
    fn resolve_for_writing(&self, path: &str) -> StorageResult<PathBuf> {
        let p = self.resolve(path)?;
        let roots: Vec<&PathBuf> = std::iter::once(&self.root)
            .chain(&self.external_roots)
            .collect();
        let mut dir = p.parent();
        while let Some(d) = dir {
            // At or above a root: everything below it is still to be created.
            if roots.iter().any(|r| r.starts_with(d)) {
                return Ok(p);
            }
            match fs::canonicalize(d) {
                Ok(real) if self.really_inside(&real) => return Ok(p),
                Ok(_) => return Err(Self::symlink_out(path)),
                Err(e) if e.kind() == ErrorKind::NotFound => dir = d.parent(),
                Err(e) => return Err(io_error(e, path)),
            }
        }
        Ok(p)
    }

    fn temp_path(&self, target: &Path) -> PathBuf {
        let n = self.temp_counter.fetch_add(1, Ordering::Relaxed);
        let name = target
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        target.with_file_name(format!(".{name}.{}-{n}.tmp", std::process::id()))
    }
}

/// Writes to a temporary file next to the target, renamed into place on `finish`.
pub struct LocalWriter {
    file: Option<File>,
    temp: PathBuf,
    target: PathBuf,
    path: String,
}

impl StorageWriter for LocalWriter {
    fn write(&mut self, chunk: &[u8]) -> StorageResult<()> {
        match self.file.as_mut() {
            Some(f) => f.write_all(chunk).map_err(|e| io_error(e, &self.path)),
            None => Err(StorageError::new(
                StorageErrorKind::Io,
                &self.path,
                "writer closed",
            )),
        }
    }

    fn finish(mut self: Box<Self>) -> StorageResult<u64> {
        let file = self
            .file
            .take()
            .ok_or_else(|| StorageError::new(StorageErrorKind::Io, &self.path, "writer closed"))?;
        let size = file.metadata().map_err(|e| io_error(e, &self.path))?.len();
        file.sync_all().map_err(|e| io_error(e, &self.path))?;
        drop(file);
        fs::rename(&self.temp, &self.target).map_err(|e| io_error(e, &self.path))?;
        Ok(size)
    }

    fn abort(mut self: Box<Self>) -> StorageResult<()> {
        self.file.take();
        match fs::remove_file(&self.temp) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_error(e, &self.path)),
        }
    }
}

impl Drop for LocalWriter {
    /// A writer dropped without `finish` leaves nothing behind.
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = fs::remove_file(&self.temp);
        }
    }
}

/// Up to `len` bytes of `f` from `offset` (fewer at the end of the file). On Unix by
/// positioned reads, one `pread` per range where it fits: `read_to_end` starts at 8 KiB and
/// doubles, a system call per step (about six for a 256 KiB page window). The buffer grows
/// 64 MiB at a time, so a corrupt length asks for no more memory than the file can fill.
#[cfg(unix)]
fn read_file_range(f: &File, offset: u64, len: u64) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    const STEP: u64 = 64 << 20;
    // The first step is allocated zeroed (`calloc`: fresh pages need no clearing pass).
    let mut buf = vec![0u8; len.min(STEP) as usize];
    let mut filled = 0;
    while (filled as u64) < len {
        let want = (len - filled as u64).min(STEP) as usize;
        buf.resize(filled + want, 0);
        let mut got = 0;
        while got < want {
            match f.read_at(&mut buf[filled + got..], offset + (filled + got) as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        filled += got;
        if got < want {
            break;
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

#[cfg(not(unix))]
fn read_file_range(f: &File, offset: u64, len: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = f;
    f.seek(SeekFrom::Start(offset))?;
    let mut buf = Vec::with_capacity(len.min(64 << 20) as usize);
    f.take(len).read_to_end(&mut buf)?;
    Ok(buf)
}

impl Storage for LocalDirStorage {
    fn size(&self, path: &str) -> StorageResult<u64> {
        let p = self.resolve_for_reading(path)?;
        let m = fs::metadata(&p).map_err(|e| io_error(e, path))?;
        if !m.is_file() {
            return Err(StorageError::new(
                StorageErrorKind::NotFound,
                path,
                "not a file",
            ));
        }
        Ok(m.len())
    }

    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        let p = self.resolve_for_reading(path)?;
        let f = File::open(&p).map_err(|e| io_error(e, path))?;
        read_file_range(&f, offset, len).map_err(|e| io_error(e, path))
    }

    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        // Walk the deepest directory the prefix names, then filter by the full prefix. Keys
        // are relative to the root, or `file:/abs` URIs under an external root.
        let (base, key_prefix, prefix) = match Self::file_uri(prefix) {
            Some(abs) => (PathBuf::from("/"), "file:", format!("file:{abs}")),
            None => (self.root.clone(), "", prefix.to_string()),
        };
        let prefix = prefix.as_str();
        let dir_part = match prefix.rfind('/') {
            Some(i) => &prefix[..i],
            None => "",
        };
        let start = if dir_part.is_empty() {
            self.root.clone()
        } else {
            // Not through a symbolic link out of the root: what is listed may be deleted.
            let dir = self.resolve_for_writing(dir_part)?;
            match fs::canonicalize(&dir) {
                Ok(real) if !self.really_inside(&real) => {
                    return Err(Self::symlink_out(dir_part));
                }
                _ => dir,
            }
        };
        let mut out = Vec::new();
        let mut stack = vec![start];
        while let Some(dir) = stack.pop() {
            let entries = match fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(io_error(e, prefix)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| io_error(e, prefix))?;
                let path = entry.path();
                let ft = entry.file_type().map_err(|e| io_error(e, prefix))?;
                if ft.is_dir() {
                    stack.push(path);
                } else if ft.is_file() {
                    let rel = match key_prefix {
                        "" => path
                            .strip_prefix(&base)
                            .map(|r| r.to_string_lossy().replace('\\', "/"))
                            .unwrap_or_default(),
                        _ => format!("{key_prefix}{}", path.to_string_lossy()),
                    };
                    // This process's unfinished writes stay invisible (the writer contract);
                    // temporary files of other processes are listed, so that orphan removal
                    // sees what a killed writer left behind (its age threshold keeps a live
                    // writer's). The core lists no other prefix their dotted names match.
                    let own_temp = rel.rsplit('/').next().is_some_and(is_own_temp_name);
                    if rel.starts_with(prefix) && !own_temp {
                        let meta = entry.metadata().map_err(|e| io_error(e, prefix))?;
                        let modified_ms = meta
                            .modified()
                            .ok()
                            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                            .and_then(|d| i64::try_from(d.as_millis()).ok());
                        out.push(ObjectMeta {
                            path: rel,
                            size: meta.len(),
                            modified_ms,
                        });
                    }
                }
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// Writes a temporary file next to the target, renamed into place on `finish`.
    fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter>> {
        let target = self.resolve_for_writing(path)?;
        if let Some(dir) = target.parent() {
            fs::create_dir_all(dir).map_err(|e| io_error(e, path))?;
        }
        let temp = self.temp_path(&target);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| io_error(e, path))?;
        Ok(Box::new(LocalWriter {
            file: Some(file),
            temp,
            target,
            path: path.to_string(),
        }))
    }

    fn delete(&self, path: &str) -> StorageResult<()> {
        let p = self.resolve_for_writing(path)?;
        fs::remove_file(&p).map_err(|e| io_error(e, path))
    }

    /// Writes a temporary file, then hard-links it into place: the link fails if the target
    /// exists, and readers never see a partial file.
    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
        let target = self.resolve_for_writing(path)?;
        if let Some(dir) = target.parent() {
            fs::create_dir_all(dir).map_err(|e| io_error(e, path))?;
        }
        let temp = self.temp_path(&target);
        let result = (|| {
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temp)?;
            f.write_all(bytes)?;
            f.sync_all()?;
            fs::hard_link(&temp, &target)
        })();
        let _ = fs::remove_file(&temp);
        result.map_err(|e| io_error(e, path))
    }
}

/// Whether `name` is a temporary file of this process's writers (`.<name>.<pid>-<n>.tmp`).
fn is_own_temp_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".tmp").filter(|_| name.starts_with('.')) else {
        return false;
    };
    stem.rsplit('.')
        .next()
        .and_then(|tail| tail.split_once('-'))
        .is_some_and(|(pid, _)| pid == std::process::id().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp() -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("pc-local-{}-{}", std::process::id(), rand_suffix()));
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn rand_suffix() -> u128 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    }

    /// A data file that is a symbolic link out of the root is refused (a permission error
    /// naming it); a link that stays inside, or into an external root, is read.
    #[cfg(unix)]
    #[test]
    fn symbolic_links_out_of_the_root_are_refused() {
        let root = tmp();
        let outside = tmp();
        fs::write(outside.join("secret.parquet"), b"outside").unwrap();
        fs::create_dir_all(root.join("t/bucket-0")).unwrap();
        fs::write(root.join("t/bucket-0/real.parquet"), b"inside").unwrap();
        std::os::unix::fs::symlink(
            outside.join("secret.parquet"),
            root.join("t/bucket-0/data-0.parquet"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            root.join("t/bucket-0/real.parquet"),
            root.join("t/bucket-0/data-1.parquet"),
        )
        .unwrap();
        std::os::unix::fs::symlink(&outside, root.join("t/bucket-1")).unwrap();
        let s = LocalDirStorage::new(&root);
        for p in ["t/bucket-0/data-0.parquet", "t/bucket-1/secret.parquet"] {
            let e = s.read_range(p, 0, 7).unwrap_err();
            assert_eq!(e.kind, StorageErrorKind::Permission, "{p}: {e}");
            assert!(e.to_string().contains("symbolic link"), "{e}");
            assert_eq!(s.size(p).unwrap_err().kind, StorageErrorKind::Permission);
        }
        assert_eq!(
            s.read_range("t/bucket-0/data-1.parquet", 0, 6).unwrap(),
            b"inside"
        );
        let granted = LocalDirStorage::new(&root).with_external_roots(vec![outside.clone()]);
        assert_eq!(
            granted
                .read_range("t/bucket-0/data-0.parquet", 0, 7)
                .unwrap(),
            b"outside"
        );
    }

    /// A directory of the table that is a symbolic link out of the root is neither written,
    /// listed nor deleted through: orphan removal or expiry of a planted table cannot reach
    /// files elsewhere. New directories under the root are still created.
    #[cfg(unix)]
    #[test]
    fn writes_lists_and_deletes_do_not_follow_a_directory_link_out_of_the_root() {
        let root = tmp();
        let outside = tmp();
        fs::write(outside.join("victim.parquet"), b"keep me").unwrap();
        fs::create_dir_all(root.join("t")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("t/bucket-1")).unwrap();
        let s = LocalDirStorage::new(&root);
        let refused = |e: StorageError| {
            assert_eq!(e.kind, StorageErrorKind::Permission, "{e}");
            assert!(e.to_string().contains("symbolic link"), "{e}");
        };
        refused(s.delete("t/bucket-1/victim.parquet").unwrap_err());
        refused(s.create_writer("t/bucket-1/new.parquet").err().unwrap());
        refused(
            s.create_if_absent("t/bucket-1/new.parquet", b"x")
                .unwrap_err(),
        );
        refused(
            s.create_writer("t/bucket-1/deeper/new.parquet")
                .err()
                .unwrap(),
        );
        refused(s.list("t/bucket-1/").unwrap_err());
        assert_eq!(
            fs::read(outside.join("victim.parquet")).unwrap(),
            b"keep me"
        );
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 1);
        // Listing the table does not descend into the link either.
        assert!(s.list("t/").unwrap().is_empty());
        // Inside the root, new directories are created as before; a link inside is deleted
        // as a link.
        s.write_all("t/bucket-0/a/b/c.bin", b"ok").unwrap();
        std::os::unix::fs::symlink(outside.join("victim.parquet"), root.join("t/bucket-0/l"))
            .unwrap();
        s.delete("t/bucket-0/l").unwrap();
        assert_eq!(
            fs::read(outside.join("victim.parquet")).unwrap(),
            b"keep me"
        );
        let granted = LocalDirStorage::new(&root).with_external_roots(vec![outside.clone()]);
        granted
            .create_if_absent("t/bucket-1/new.parquet", b"x")
            .unwrap();
        assert_eq!(fs::read(outside.join("new.parquet")).unwrap(), b"x");
        fs::remove_dir_all(&root).unwrap();
        fs::remove_dir_all(&outside).unwrap();
    }

    #[test]
    fn ranges_are_read_whole_and_clipped_at_the_end_of_the_file() {
        let root = tmp();
        let s = LocalDirStorage::new(&root);
        // Larger than one positioned read of some kernels' page cache chunks, not a round size.
        let data: Vec<u8> = (0..300_007u32).map(|i| (i % 251) as u8).collect();
        s.write_all("r.bin", &data).unwrap();
        assert_eq!(s.read_range("r.bin", 0, 300_007).unwrap(), data);
        assert_eq!(
            s.read_range("r.bin", 12_345, 200_000).unwrap(),
            &data[12_345..212_345]
        );
        assert_eq!(
            s.read_range("r.bin", 299_000, 5_000).unwrap(),
            &data[299_000..]
        );
        assert!(s.read_range("r.bin", 300_007, 10).unwrap().is_empty());
        assert!(s.read_range("r.bin", 400_000, 10).unwrap().is_empty());
        assert!(s.read_range("r.bin", 5, 0).unwrap().is_empty());
        // A corrupt length asks for what the file holds, not for the length.
        assert_eq!(
            s.read_range("r.bin", 0, u64::MAX / 2).unwrap().len(),
            300_007
        );
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn contract() {
        let root = tmp();
        let s = LocalDirStorage::new(&root);
        assert_eq!(s.size("a/b").unwrap_err().kind, StorageErrorKind::NotFound);
        s.write_all("t/x/a.bin", b"hello world").unwrap();
        assert_eq!(s.read_range("t/x/a.bin", 6, 100).unwrap(), b"world");
        let mut w = s.create_writer("t/x/b.bin").unwrap();
        w.write(b"partial").unwrap();
        assert_eq!(
            s.list("t/").unwrap().len(),
            1,
            "unfinished writes are invisible"
        );
        w.abort().unwrap();
        // Another process's leftover temporary file (a killed writer's) is listed, so that
        // orphan removal can reclaim it.
        fs::write(root.join("t/x/.c.bin.1-0.tmp"), b"left").unwrap();
        assert_eq!(s.list("t/x/.c").unwrap().len(), 1);
        fs::remove_file(root.join("t/x/.c.bin.1-0.tmp")).unwrap();
        s.create_if_absent("t/snap-1", b"1").unwrap();
        assert_eq!(
            s.create_if_absent("t/snap-1", b"2").unwrap_err().kind,
            StorageErrorKind::AlreadyExists
        );
        assert_eq!(s.read_all("t/snap-1").unwrap(), b"1");
        let listed: Vec<_> = s.list("t/").unwrap().into_iter().map(|o| o.path).collect();
        assert_eq!(listed, vec!["t/snap-1", "t/x/a.bin"]);
        assert_eq!(
            s.size("../etc/passwd").unwrap_err().kind,
            StorageErrorKind::Permission
        );
        assert_eq!(
            s.size("/etc/passwd").unwrap_err().kind,
            StorageErrorKind::Permission
        );
        assert_eq!(
            s.size("file:/etc/passwd").unwrap_err().kind,
            StorageErrorKind::Permission
        );
        assert_eq!(
            s.size("s3://b/k").unwrap_err().kind,
            StorageErrorKind::Permission
        );
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn file_uris_are_served_under_external_roots_only() {
        let root = tmp();
        let ext = tmp();
        let s = LocalDirStorage::new(&root).with_external_roots([ext.clone()]);
        let uri = format!("file:{}/bucket-0/data-1.parquet", ext.display());
        s.write_all(&uri, b"abc").unwrap();
        assert_eq!(s.read_all(&uri).unwrap(), b"abc");
        let triple = format!("file://{}/bucket-0/data-1.parquet", ext.display());
        assert_eq!(s.size(&triple).unwrap(), 3);
        let listed: Vec<_> = s
            .list(&format!("file:{}/bucket-0/data-", ext.display()))
            .unwrap()
            .into_iter()
            .map(|o| o.path)
            .collect();
        assert_eq!(listed, vec![uri.clone()]);
        let escape = format!("file:{}/../x", ext.display());
        assert_eq!(
            s.size(&escape).unwrap_err().kind,
            StorageErrorKind::Permission
        );
        s.delete(&uri).unwrap();
        fs::remove_dir_all(root).unwrap();
        fs::remove_dir_all(ext).unwrap();
    }
}
