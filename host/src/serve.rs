//! `paimon-compact serve`: a tiny static file server for the simulator page (`www/`).
//!
//! The page is plain files, but browsers refuse to load WebAssembly modules from `file://`, so
//! something must serve them over HTTP. This is the smallest such server (std only, one thread
//! per connection, GET and HEAD, loopback by default): enough for a person on their own machine
//! and for the browser tests, and nothing to configure.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};

/// The files the page cannot run without: the wasm-bindgen bundle that `js/web/build.sh`
/// writes into `pkg/` (not tracked; built by the README's main command).
const BUNDLE: [&str; 2] = ["pkg/loader.js", "pkg/paimon_compact_bg.wasm"];

/// Serves `dir` on `127.0.0.1:port` until the process ends (port 0 picks a free port; the
/// chosen address is printed).
///
/// Refuses to start, saying how to build it, when the simulator page's bundle is missing: a
/// page served without it would open and silently do nothing.
pub fn serve(dir: &Path, port: u16) -> std::io::Result<()> {
    let root = dir.canonicalize()?;
    check_bundle(&root)?;
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    println!(
        "serving {} on http://{}/",
        root.display(),
        listener.local_addr()?
    );
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let root = root.clone();
        std::thread::spawn(move || {
            let _ = handle(stream, &root);
        });
    }
    Ok(())
}

/// `Err(NotFound)` naming the missing file and the command that builds it.
fn check_bundle(root: &Path) -> std::io::Result<()> {
    match BUNDLE.iter().find(|f| !root.join(f).is_file()) {
        None => Ok(()),
        Some(missing) => Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "the simulator bundle is not built ({} is missing): run `bash .ci/web-bundle.sh` \
                 (or the README's main command, `bash .ci/demo.sh`) first",
                root.join(missing).display()
            ),
        )),
    }
}

fn handle(mut stream: TcpStream, root: &Path) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    // Drain the headers; nothing in them matters here.
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        line.clear();
    }
    let mut parts = request.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
    if method != "GET" && method != "HEAD" {
        return respond(
            &mut stream,
            "405 Method Not Allowed",
            "text/plain",
            b"only GET and HEAD\n",
            true,
        );
    }
    let Some(path) = resolve(root, target) else {
        return respond(
            &mut stream,
            "404 Not Found",
            "text/plain",
            b"not found\n",
            method == "GET",
        );
    };
    match std::fs::read(&path) {
        Ok(body) => respond(
            &mut stream,
            "200 OK",
            content_type(&path),
            &body,
            method == "GET",
        ),
        Err(_) => respond(
            &mut stream,
            "404 Not Found",
            "text/plain",
            b"not found\n",
            method == "GET",
        ),
    }
}

/// Maps a request target to a file under `root`, refusing anything that would leave it.
fn resolve(root: &Path, target: &str) -> Option<PathBuf> {
    let path = target.split(['?', '#']).next().unwrap_or("/");
    let decoded = percent_decode(path)?;
    let mut out = root.to_path_buf();
    for c in Path::new(decoded.trim_start_matches('/')).components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            _ => return None,
        }
    }
    if out.is_dir() {
        out.push("index.html");
    }
    let canonical = out.canonicalize().ok()?;
    canonical.starts_with(root).then_some(canonical)
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `application/wasm` matters: streaming compilation requires it.
fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "wasm" => "application/wasm",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        _ => "application/octet-stream",
    }
}

fn respond(
    stream: &mut TcpStream,
    status: &str,
    ctype: &str,
    body: &[u8],
    with_body: bool,
) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    if with_body {
        stream.write_all(body)?;
    }
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_stays_inside_the_root() {
        let root = std::env::temp_dir().join(format!("pc-serve-{}", std::process::id()));
        std::fs::create_dir_all(root.join("pkg")).unwrap();
        std::fs::write(root.join("index.html"), "x").unwrap();
        std::fs::write(root.join("pkg/a b.js"), "x").unwrap();
        let root = root.canonicalize().unwrap();
        assert_eq!(resolve(&root, "/"), Some(root.join("index.html")));
        assert_eq!(
            resolve(&root, "/pkg/a%20b.js?v=1"),
            Some(root.join("pkg/a b.js"))
        );
        assert_eq!(resolve(&root, "/../etc/passwd"), None);
        assert_eq!(resolve(&root, "/%2e%2e/x"), None);
        assert_eq!(resolve(&root, "/missing"), None);
        assert_eq!(content_type(Path::new("x.wasm")), "application/wasm");
    }

    #[test]
    fn a_missing_bundle_is_refused_with_the_command_that_builds_it() {
        let root = std::env::temp_dir().join(format!("pc-serve-bundle-{}", std::process::id()));
        std::fs::create_dir_all(root.join("pkg")).unwrap();
        std::fs::write(root.join("index.html"), "x").unwrap();
        let e = check_bundle(&root).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        assert!(e.to_string().contains("bash .ci/web-bundle.sh"), "{e}");
        assert!(e.to_string().contains("loader.js"), "{e}");
        for f in BUNDLE {
            std::fs::write(root.join(f), "x").unwrap();
        }
        check_bundle(&root).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
    }
}
