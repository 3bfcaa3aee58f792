//! Compiled components on disk: where a start finds native code instead of compiling the
//! component (seconds of Cranelift) again.
//!
//! A compiled component is native code that wasmtime maps and runs, so loading one from a
//! directory someone else can write would hand them this process. Every directory and file is
//! therefore checked before it is read ([`check_trusted`]): owned by this user (or by root, for
//! an install directory), writable by no one else. And every artifact has its SHA-256 beside it
//! (`<artifact>.sha256`), checked before the artifact is deserialized ([`verify_artifact`]), so
//! a truncated or damaged file is compiled over rather than loaded. wasmtime itself refuses an
//! artifact of another version or configuration. The artifact is wasmtime's own format, so it
//! is mapped from disk rather than copied (benches/README.md, "Cold start").
//!
//! Two places hold artifacts:
//! - **precompiled** directories, read only: an install ships the artifact that
//!   `paimon-compact precompile` wrote beside the executable and the component, so even the
//!   first start of a fresh machine or function is a load, not a compile;
//! - the user's **cache** directory, written after a compile for the next start.
//!
//! An artifact's name is keyed on the component's bytes and the engine's compatibility hash
//! ([`artifact_name`]), so a stale one is never even opened.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::Engine;

/// The checksum file beside an artifact: `<artifact>.sha256`, the digest in hex.
fn sum_path(artifact: &Path) -> PathBuf {
    let mut name = artifact.as_os_str().to_owned();
    name.push(".sha256");
    PathBuf::from(name)
}

/// Where a component was loaded from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// A precompiled artifact shipped with the install.
    Precompiled,
    /// The user's cache (written by an earlier start).
    Cache,
    /// Compiled now (a cold start).
    Compiled,
}

/// The artifact file name for `wasm` compiled by `engine`.
pub fn artifact_name(engine: &Engine, wasm: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(wasm);
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut hasher);
    h.update(std::hash::Hasher::finish(&hasher).to_le_bytes());
    let key: String = h
        .finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("paimon-compact-{key}.cwasm")
}

/// Finds `wasm`'s artifact in `precompiled` (in order), then in `cache`, or compiles it and
/// stores it in `cache` for the next start. Returns the component, where it came from, the
/// artifact's path (read, or written; writing may have failed) and what was refused on the
/// way (an untrusted directory or file, a damaged artifact), one line each.
pub fn load(
    engine: &Engine,
    wasm: &[u8],
    precompiled: &[PathBuf],
    cache: Option<&Path>,
) -> wasmtime::Result<(Component, Source, Option<PathBuf>, Vec<String>)> {
    let name = artifact_name(engine, wasm);
    let mut refused = Vec::new();
    let places = precompiled
        .iter()
        .map(|d| (d.as_path(), Source::Precompiled))
        .chain(cache.map(|d| (d, Source::Cache)));
    for (dir, source) in places {
        let file = dir.join(&name);
        if !file.exists() {
            continue;
        }
        match verify_artifact(&file) {
            // SAFETY: `deserialize_file` maps the file and runs it as native code. It is an
            // artifact that `check_trusted` found owned by this user (or root) and writable by
            // no one else, in a directory that passed the same check and whose every ancestor
            // no one else can rename entries in (`check_ancestors`), so nobody else can swap
            // it between the checksum and the mapping; whose SHA-256 matches the checksum
            // written beside it, and whose name is keyed on this component and
            // this engine's configuration; wasmtime still validates the header and refuses
            // another version or configuration.
            Ok(()) => match unsafe { Component::deserialize_file(engine, &file) } {
                Ok(c) => return Ok((c, source, Some(file), refused)),
                Err(e) => refused.push(format!("{}: {e}", file.display())),
            },
            Err(why) => refused.push(why),
        }
    }
    let component = Component::new(engine, wasm)?;
    let Some(dir) = cache else {
        return Ok((component, Source::Compiled, None, refused));
    };
    let file = dir.join(&name);
    // The cache is an optimisation: failing to write it must not fail the command.
    if let Err(e) = write_artifact(&component.serialize()?, dir, &file) {
        refused.push(format!("{}: not cached: {e}", dir.display()));
    }
    Ok((component, Source::Compiled, Some(file), refused))
}

/// Compiles `wasm` and writes its artifact into `dir` (created private if missing); returns
/// the artifact's path.
pub fn precompile(engine: &Engine, wasm: &[u8], dir: &Path) -> wasmtime::Result<PathBuf> {
    let body = engine.precompile_component(wasm)?;
    let file = dir.join(artifact_name(engine, wasm));
    write_artifact(&body, dir, &file).map_err(wasmtime::Error::msg)?;
    Ok(file)
}

/// Checks that the artifact at `file`, its checksum file and their directory are trusted and
/// that the artifact's SHA-256 is the one written beside it. The artifact is read in small
/// chunks: a load maps it afterwards, so it is never held in memory whole.
fn verify_artifact(file: &Path) -> Result<(), String> {
    use std::io::Read;
    let dir = file.parent().unwrap_or(Path::new("."));
    let sum_file = sum_path(file);
    check_ancestors(dir)?;
    check_trusted(dir)?;
    check_trusted(file)?;
    check_trusted(&sum_file)?;
    let damaged = || {
        format!(
            "{}: damaged artifact (checksum), compiled again",
            file.display()
        )
    };
    let expected = std::fs::read_to_string(&sum_file).map_err(|_| damaged())?;
    let mut f = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| format!("{}: {e}", file.display()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    if hex(&h.finalize()) != expected.trim() {
        return Err(damaged());
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes an artifact and then its checksum, each atomically (a temporary file renamed over).
/// A reader between the two sees a mismatch and compiles: never a wrong load.
fn write_artifact(body: &[u8], dir: &Path, file: &Path) -> Result<(), String> {
    create_private_dir(dir)?;
    check_ancestors(dir)?;
    check_trusted(dir)?;
    let put = |target: &Path, bytes: &[u8]| {
        let tmp = target.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, bytes).map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, target).map_err(|e| format!("{}: {e}", target.display()))
    };
    put(file, body)?;
    put(&sum_path(file), hex(&Sha256::digest(body)).as_bytes())
}

/// Creates `dir` (and its parents) if missing, the directory itself readable by this user
/// only.
fn create_private_dir(dir: &Path) -> Result<(), String> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    Ok(())
}

/// Whether native code may be read from `path` (a directory or a file): owned by this user or
/// by root, and writable by neither its group nor others. Symbolic links are judged by what
/// they point to, and so is the link's target directory through its own check.
#[cfg(unix)]
pub fn check_trusted(path: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    match untrusted_because(&meta, false) {
        Some(why) => Err(format!("{}: not used: {why}", path.display())),
        None => Ok(()),
    }
}

/// Why another user could change what `meta` describes, if they could: it is owned by
/// someone but this user or root, or its group or others may write it (`sticky_ok`: unless
/// it is sticky, for a directory above the cache, where then only an entry's owner may rename
/// or delete the entry). The one rule of [`check_trusted`] and [`check_ancestors`].
#[cfg(unix)]
fn untrusted_because(meta: &std::fs::Metadata, sticky_ok: bool) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let me = current_uid();
    if meta.uid() != me && meta.uid() != 0 {
        return Some(format!(
            "owned by uid {}, not by this user ({me}) or root",
            meta.uid()
        ));
    }
    let sticky = meta.mode() & 0o1000 != 0;
    if meta.mode() & 0o022 == 0 || (sticky_ok && sticky) {
        return None;
    }
    Some(if sticky_ok {
        format!(
            "writable by its group or by others and not sticky (mode {:o})",
            meta.mode() & 0o7777
        )
    } else {
        format!(
            "writable by its group or by others (mode {:o})",
            meta.mode() & 0o777
        )
    })
}

/// Without Unix permissions there is nothing to check against; the checksum still applies.
#[cfg(not(unix))]
pub fn check_trusted(_path: &Path) -> Result<(), String> {
    Ok(())
}

/// Whether the directories above `dir` keep its entries in place: each owned by this user or
/// by root, and writable by no one else unless sticky (as `/tmp` is: there only an entry's
/// owner may rename or delete it). Otherwise another user could move `dir` away and put a
/// directory of theirs in its place between the checks and the load (the checks of
/// [`check_trusted`] would pass on the old one). OpenSSH judges the paths to its keys alike.
#[cfg(unix)]
pub fn check_ancestors(dir: &Path) -> Result<(), String> {
    let real = std::fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for above in real.ancestors().skip(1) {
        let meta = std::fs::metadata(above).map_err(|e| format!("{}: {e}", above.display()))?;
        if let Some(why) = untrusted_because(&meta, true) {
            return Err(format!(
                "{}: not used: the directory {} above it is {why}",
                dir.display(),
                above.display(),
            ));
        }
    }
    Ok(())
}

#[cfg(not(unix))]
pub fn check_ancestors(_dir: &Path) -> Result<(), String> {
    Ok(())
}

#[cfg(unix)]
fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions, touches no memory of ours and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pc-trust-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        d
    }

    fn mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn files_and_directories_others_can_write_are_not_trusted() {
        let d = dir("modes");
        let f = d.join("a.cwasm");
        std::fs::write(&f, b"x").unwrap();
        mode(&f, 0o644);
        assert_eq!(check_trusted(&f), Ok(()));
        assert_eq!(check_trusted(&d), Ok(()));
        mode(&f, 0o666);
        let e = check_trusted(&f).unwrap_err();
        assert!(
            e.contains("writable by its group or by others (mode 666)"),
            "{e}"
        );
        mode(&f, 0o620);
        assert!(check_trusted(&f).is_err(), "group-writable");
        mode(&d, 0o777);
        assert!(check_trusted(&d).is_err());
        mode(&d, 0o755);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Root may hand a file to another user: one owned by someone else is refused. Only a
    /// test run as root can set that up.
    #[test]
    fn a_file_or_directory_owned_by_another_user_is_not_trusted() {
        if current_uid() != 0 {
            return;
        }
        let d = dir("owner");
        let f = d.join("a.cwasm");
        std::fs::write(&f, b"x").unwrap();
        std::os::unix::fs::chown(&f, Some(65534), None).unwrap();
        let e = check_trusted(&f).unwrap_err();
        assert!(e.contains("owned by uid 65534"), "{e}");
        let inner = d.join("inner");
        std::fs::create_dir(&inner).unwrap();
        std::os::unix::fs::chown(&d, Some(65534), None).unwrap();
        let e = check_ancestors(&inner).unwrap_err();
        assert!(e.contains("owned by uid 65534"), "{e}");
        std::os::unix::fs::chown(&d, Some(0), None).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_directory_above_that_others_can_rename_in_is_refused_unless_sticky() {
        let d = dir("above");
        let cache = d.join("cache");
        std::fs::create_dir(&cache).unwrap();
        mode(&cache, 0o700);
        assert_eq!(check_ancestors(&cache), Ok(()));
        mode(&d, 0o777);
        let e = check_ancestors(&cache).unwrap_err();
        assert!(e.contains("not sticky (mode 777)"), "{e}");
        mode(&d, 0o1777);
        assert_eq!(check_ancestors(&cache), Ok(()), "sticky, as /tmp");
        mode(&d, 0o755);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
