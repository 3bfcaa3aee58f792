//! `append-component-bench --engine wasm|native [--component FILE] [--no-native-codec] --out DIR INPUT...`
//!
//! Rewrites the inputs into `--out` (absolute or relative to the working directory; storage is
//! rooted at `/`) with Paimon's default options
//! and prints one JSON line: engine, seconds of the call, output files and bytes, the metrics.
//! Component start-up (compiling or loading the cached `.cwasm`) happens before the clock starts.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use paimon_compact_host::local_storage::LocalDirStorage;
use paimon_compact_host::{AppendInputFile, AppendRequest, Compactor, Limits, WasmRuntime};

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut engine, mut component, mut out) = (String::from("wasm"), None, None);
    let mut inputs = Vec::new();
    let mut options: Vec<(String, String)> = Vec::new();
    let mut native_codec = true;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--opt" => {
                let kv = args.next().expect("--opt KEY=VALUE");
                let (k, v) = kv.split_once('=').expect("--opt KEY=VALUE");
                options.push((k.to_string(), v.to_string()));
            }
            "--engine" => engine = args.next().expect("--engine wasm|native"),
            "--component" => component = args.next().map(PathBuf::from),
            "--out" => out = args.next(),
            // The component's own zstd instead of the host's (`codec` import).
            "--no-native-codec" => native_codec = false,
            _ => inputs.push(a),
        }
    }
    // The storage is rooted at `/`; its paths are relative, so drop the leading slash.
    let rel = |p: &str| {
        std::fs::canonicalize(p)
            .expect("path exists")
            .to_string_lossy()
            .trim_start_matches('/')
            .to_string()
    };
    let compactor = match engine.as_str() {
        "native" => Compactor::Native,
        _ => {
            let path = component.expect("--component FILE");
            let bytes = std::fs::read(&path).expect("read component");
            let cache = std::env::temp_dir().join("append-component-bench-cache");
            let limits = Limits {
                max_memory_bytes: 4 << 30,
                timeout: None,
            };
            let mut rt = WasmRuntime::new(&bytes, Some(&cache), limits).expect("load component");
            rt.set_native_codec(native_codec);
            Compactor::Wasm(Box::new(rt))
        }
    };
    let job = AppendRequest {
        inputs: inputs
            .iter()
            .enumerate()
            .map(|(i, p)| AppendInputFile {
                path: rel(p),
                row_count: 0,
                min_sequence_number: i as i64,
                max_sequence_number: i as i64,
                deleted_rows: None,
            })
            .collect(),
        output_dir: rel(&out.expect("--out DIR")),
        file_prefix: "data-bench-".into(),
        options,
        creation_time_ms: 0,
    };
    let storage = Arc::new(LocalDirStorage::new("/"));
    let start = Instant::now();
    let summary = compactor
        .compact_append(storage, &job, None)
        .expect("compact");
    let seconds = start.elapsed().as_secs_f64();
    let bytes: u64 = summary.outputs.iter().map(|o| o.size).sum();
    println!(
        "{}",
        serde_json::json!({
            "engine": engine,
            "seconds": seconds,
            "output_files": summary.outputs.len(),
            "output_bytes": bytes,
            "metrics": serde_json::from_str::<serde_json::Value>(&summary.metrics_json).unwrap_or_default(),
        })
    );
}
