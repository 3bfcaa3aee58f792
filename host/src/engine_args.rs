//! The engine flags every command takes (`--engine`, `--component`, the cache and the guest's
//! limits), and the compactor they choose: the component in wasmtime, loaded from a
//! precompiled artifact, the cache or compiled now; or the core compiled into this binary.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};
use paimon_compact::options::{parse_duration_ms, parse_memory_size};
use paimon_compact_host::{Compactor, HostError, Limits, WasmRuntime};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum EngineKind {
    /// The WebAssembly component in wasmtime (the product).
    Wasm,
    /// The same core compiled into this binary (for comparison).
    Native,
}

#[derive(Args)]
pub(crate) struct EngineArgs {
    #[arg(long, value_enum, default_value = "wasm", global = true)]
    pub(crate) engine: EngineKind,
    /// The component (`.wasm`); defaults to the embedded one, `$PAIMON_COMPACT_COMPONENT`, or
    /// the build output next to this executable.
    #[arg(long, global = true)]
    pub(crate) component: Option<PathBuf>,
    /// Where compiled components are cached (a second start skips compilation).
    #[arg(long, global = true)]
    pub(crate) cache_dir: Option<PathBuf>,
    /// Guest memory limit, e.g. `2 gb` (the default). The component's only: the native engine
    /// refuses it rather than run unbounded.
    #[arg(long, global = true)]
    pub(crate) max_memory: Option<String>,
    /// Guest time limit per call, e.g. `10 min`; `0` (the default) for none. The component's
    /// only: the native engine refuses it rather than run unbounded.
    #[arg(long, global = true)]
    pub(crate) timeout: Option<String>,
    /// A directory whose `file:` URIs (Paimon external data files) the table's storage may
    /// serve, besides those its schemas name in `data-file.external-paths`; repeatable.
    #[arg(long, global = true)]
    pub(crate) allow_external: Vec<PathBuf>,
    /// Keep zstd inside the component instead of running it natively for the guest (the
    /// `codec` import); for comparisons, or to rule the host's codec out.
    #[arg(long, global = true)]
    pub(crate) no_native_codec: bool,
}

pub(crate) fn component_bytes(explicit: Option<&Path>) -> Result<Vec<u8>, String> {
    if let Some(p) = explicit {
        return std::fs::read(p).map_err(|e| format!("cannot read component {}: {e}", p.display()));
    }
    if let Some(p) = std::env::var_os("PAIMON_COMPACT_COMPONENT") {
        return std::fs::read(&p)
            .map_err(|e| format!("cannot read component {}: {e}", Path::new(&p).display()));
    }
    #[cfg(embedded_component)]
    {
        Ok(include_bytes!(env!("PAIMON_COMPACT_EMBEDDED")).to_vec())
    }
    #[cfg(not(embedded_component))]
    {
        // Beside the executable (how packages such as the Python wheel ship it), else
        // target/<profile>/paimon-compact → target/wasm32-wasip2/{component,release}/…
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        if let Some(p) = exe
            .parent()
            .map(|d| d.join("paimon_compact.wasm"))
            .filter(|p| p.is_file())
        {
            return std::fs::read(&p)
                .map_err(|e| format!("cannot read component {}: {e}", p.display()));
        }
        let target = exe
            .parent()
            .and_then(Path::parent)
            .ok_or("cannot locate the build directory")?;
        for profile in ["component", "release", "debug"] {
            let p = target
                .join("wasm32-wasip2")
                .join(profile)
                .join("paimon_compact.wasm");
            if p.is_file() {
                return std::fs::read(&p)
                    .map_err(|e| format!("cannot read component {}: {e}", p.display()));
            }
        }
        Err(
            "no component found: build it (see README), pass --component, or use --engine native"
                .into(),
        )
    }
}

fn default_cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("paimon-compact")
}

pub(crate) fn limits(args: &EngineArgs) -> Result<Limits, String> {
    let max_memory_text = args.max_memory.as_deref().unwrap_or("2 gb");
    let max_memory = parse_memory_size(max_memory_text)
        .map_err(|e| format!("--max-memory '{max_memory_text}': {e}"))?;
    if max_memory == 0 {
        return Err(format!(
            "--max-memory '{max_memory_text}': must be greater than zero"
        ));
    }
    let timeout_text = args.timeout.as_deref().unwrap_or("0");
    let timeout_ms =
        parse_duration_ms(timeout_text).map_err(|e| format!("--timeout '{timeout_text}': {e}"))?;
    Ok(Limits {
        max_memory_bytes: usize::try_from(max_memory).map_err(|_| "--max-memory too large")?,
        timeout: (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms)),
    })
}

/// Where an install keeps precompiled components: the executable's directory (beside the
/// component, as the Python wheel ships them).
pub(crate) fn precompiled_dirs() -> Vec<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
        .into_iter()
        .collect()
}

/// The component runtime of these engine flags: a precompiled artifact beside the executable,
/// else the cache, else compiled now (and cached). Artifacts passed over are warned about.
pub(crate) fn runtime(
    args: &EngineArgs,
    bytes: &[u8],
) -> Result<WasmRuntime, Box<dyn std::error::Error>> {
    let cache = args.cache_dir.clone().unwrap_or_else(default_cache_dir);
    let mut rt =
        WasmRuntime::with_precompiled(bytes, &precompiled_dirs(), Some(&cache), limits(args)?)
            .map_err(HostError::from)?;
    for why in &rt.load.refused {
        eprintln!("warning: compiled component {why}");
    }
    rt.set_native_codec(!args.no_native_codec);
    Ok(rt)
}

pub(crate) fn compactor(args: &EngineArgs) -> Result<Compactor, Box<dyn std::error::Error>> {
    Ok(match args.engine {
        EngineKind::Native => {
            // The limits are the sandbox's: natively there is nothing to enforce them with,
            // and ignoring a limit the user asked for would be worse than refusing it.
            if args.max_memory.is_some() || args.timeout.is_some() {
                return Err(
                    "--max-memory and --timeout bound the component (--engine wasm); \
                     the native engine runs in this process without limits: drop them or use \
                     the component"
                        .into(),
                );
            }
            Compactor::Native
        }
        EngineKind::Wasm => {
            let bytes = component_bytes(args.component.as_deref())?;
            let rt = runtime(args, &bytes)?;
            Compactor::Wasm(Box::new(rt))
        }
    })
}
