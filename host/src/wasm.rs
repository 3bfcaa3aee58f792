//! The component in wasmtime: compile once (cached on disk), instantiate per call, bound memory
//! and time, and serve the `storage` and `progress` imports from the host.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use paimon_compact::storage::{
    Storage, StorageError as CoreStorageError, StorageErrorKind, StorageWriter,
};
use sha2::{Digest, Sha256};
use wasmtime::component::{Component, HasSelf, Linker, Resource, ResourceTable};
use wasmtime::{Config, Engine, ProfilingStrategy, Store, Trap};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::error::HostError;
use crate::storage::ProgressFn;

wasmtime::component::bindgen!({
    path: "../wit",
    world: "compactor-component",
    with: {
        "paimon:compact/storage.writer": WriterSlot,
    },
});

pub use exports::paimon::compact::compactor as wit_compactor;
pub use exports::paimon::compact::planner as wit_planner;
pub use exports::paimon::compact::table_compactor as wit_table;
pub use exports::paimon::compact::table_maintenance as wit_maintenance;
use paimon::compact::codec as wit_codec;
use paimon::compact::progress as wit_progress;
use paimon::compact::storage as wit_storage;
pub use paimon::compact::types as wit_types;

/// A writer the guest holds a handle to.
pub struct WriterSlot(Option<Box<dyn StorageWriter>>);

/// Bounds on one guest call.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Linear memory (and tables) the guest may grow to.
    pub max_memory_bytes: usize,
    /// Wall-clock time one call may take; `None` for no limit. A limit compiles the component
    /// with epoch checks, which slow every loop of the guest (cost: benches/README.md, "Append
    /// rewrite", the epoch-check bullet); without one the
    /// guest runs unchecked (memory stays bounded either way).
    pub timeout: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_memory_bytes: 2 << 30,
            timeout: None,
        }
    }
}

/// How the component was loaded.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LoadInfo {
    /// Loaded from the on-disk cache (warm start) rather than compiled (cold start).
    pub cached: bool,
    pub load_ms: f64,
    pub cache_file: Option<PathBuf>,
}

/// Per-call store state.
pub struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    storage: Arc<dyn Storage>,
    progress: Option<ProgressFn>,
    max_memory: usize,
    memory_denied: bool,
    /// Offer native zstd through the `codec` import (`None`: offer nothing).
    zstd: Option<crate::codec::NativeZstd>,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl wasmtime::ResourceLimiter for HostState {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_memory {
            self.memory_denied = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}

/// The storage's own words only: the component knows the path it asked about and names it.
fn to_wit(e: CoreStorageError) -> wit_types::StorageError {
    let m = e.message;
    match e.kind {
        StorageErrorKind::NotFound => wit_types::StorageError::NotFound(m),
        StorageErrorKind::AlreadyExists => wit_types::StorageError::AlreadyExists(m),
        StorageErrorKind::Permission => wit_types::StorageError::Permission(m),
        StorageErrorKind::Io => wit_types::StorageError::Io(m),
    }
}

impl wit_types::Host for HostState {}

impl wit_storage::Host for HostState {
    fn size(&mut self, path: String) -> Result<u64, wit_types::StorageError> {
        self.storage.size(&path).map_err(to_wit)
    }

    fn read_range(
        &mut self,
        path: String,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, wit_types::StorageError> {
        self.storage.read_range(&path, offset, len).map_err(to_wit)
    }

    fn list_objects(
        &mut self,
        prefix: String,
    ) -> Result<Vec<wit_storage::ObjectMeta>, wit_types::StorageError> {
        self.storage
            .list(&prefix)
            .map(|v| {
                v.into_iter()
                    .map(|o| wit_storage::ObjectMeta {
                        path: o.path,
                        size: o.size,
                        modified_ms: o.modified_ms,
                    })
                    .collect()
            })
            .map_err(to_wit)
    }

    fn create_writer(
        &mut self,
        path: String,
    ) -> Result<Resource<WriterSlot>, wit_types::StorageError> {
        let w = self.storage.create_writer(&path).map_err(to_wit)?;
        self.table
            .push(WriterSlot(Some(w)))
            .map_err(|e| wit_types::StorageError::Io(format!("{path}: {e}")))
    }

    fn delete(&mut self, path: String) -> Result<(), wit_types::StorageError> {
        self.storage.delete(&path).map_err(to_wit)
    }

    fn create_if_absent(
        &mut self,
        path: String,
        bytes: Vec<u8>,
    ) -> Result<(), wit_types::StorageError> {
        self.storage.create_if_absent(&path, &bytes).map_err(to_wit)
    }
}

impl wit_storage::HostWriter for HostState {
    fn write(
        &mut self,
        this: Resource<WriterSlot>,
        chunk: Vec<u8>,
    ) -> Result<(), wit_types::StorageError> {
        let slot = self
            .table
            .get_mut(&this)
            .map_err(|e| wit_types::StorageError::Io(e.to_string()))?;
        match slot.0.as_mut() {
            Some(w) => w.write(&chunk).map_err(to_wit),
            None => Err(wit_types::StorageError::Io("writer closed".into())),
        }
    }

    fn finish(&mut self, this: Resource<WriterSlot>) -> Result<u64, wit_types::StorageError> {
        let mut slot = self
            .table
            .delete(this)
            .map_err(|e| wit_types::StorageError::Io(e.to_string()))?;
        match slot.0.take() {
            Some(w) => w.finish().map_err(to_wit),
            None => Err(wit_types::StorageError::Io("writer closed".into())),
        }
    }

    fn abort(&mut self, this: Resource<WriterSlot>) -> Result<(), wit_types::StorageError> {
        let mut slot = self
            .table
            .delete(this)
            .map_err(|e| wit_types::StorageError::Io(e.to_string()))?;
        match slot.0.take() {
            Some(w) => w.abort().map_err(to_wit),
            None => Ok(()),
        }
    }

    /// A writer dropped without `finish` is aborted: nothing half-written becomes visible.
    fn drop(&mut self, this: Resource<WriterSlot>) -> wasmtime::Result<()> {
        if let Ok(mut slot) = self.table.delete(this) {
            if let Some(w) = slot.0.take() {
                let _ = w.abort();
            }
        }
        Ok(())
    }
}

impl wit_codec::Host for HostState {
    fn offers(&mut self, algorithm: wit_codec::Algorithm) -> bool {
        match algorithm {
            wit_codec::Algorithm::Zstd => self.zstd.is_some(),
        }
    }

    fn compress(
        &mut self,
        algorithm: wit_codec::Algorithm,
        level: i32,
        data: Vec<u8>,
    ) -> Result<Vec<u8>, String> {
        match (algorithm, self.zstd.as_mut()) {
            (wit_codec::Algorithm::Zstd, Some(z)) => z.compress(level, &data),
            (wit_codec::Algorithm::Zstd, None) => Err("zstd is not offered".into()),
        }
    }

    fn decompress(
        &mut self,
        algorithm: wit_codec::Algorithm,
        data: Vec<u8>,
        size_hint: u64,
    ) -> Result<Vec<u8>, String> {
        match (algorithm, self.zstd.as_mut()) {
            (wit_codec::Algorithm::Zstd, Some(z)) => z.decompress(&data, size_hint),
            (wit_codec::Algorithm::Zstd, None) => Err("zstd is not offered".into()),
        }
    }
}

impl wit_progress::Host for HostState {
    fn report(&mut self, event: wit_progress::ProgressEvent) {
        if let Some(p) = self.progress.as_mut() {
            p(crate::storage::Progress {
                phase: event.phase,
                done: event.done,
                total: event.total,
                unit: event.unit,
                message: event.message,
            });
        }
    }
}

/// The compiled component and everything needed to instantiate it.
pub struct WasmRuntime {
    engine: Engine,
    pre: CompactorComponentPre<HostState>,
    limits: Limits,
    native_codec: bool,
    pub load: LoadInfo,
}

impl WasmRuntime {
    /// Compiles `wasm` (or loads the compiled form from `cache_dir`, keyed by the bytes and the
    /// engine's settings).
    pub fn new(wasm: &[u8], cache_dir: Option<&Path>, limits: Limits) -> wasmtime::Result<Self> {
        let mut config = Config::new();
        // Epoch checks (a load and a compare at every function entry and loop back-edge) are a
        // large share of the guest's CPU, whose hot code is tight loops (zstd, dictionary
        // interning, byte comparison): benches/README.md, "Append rewrite", the epoch-check
        // bullet. They exist only to enforce `timeout`, so code is compiled with them
        // only when a time limit is set. The engine settings key the on-disk cache, so the two
        // variants never share a compiled file.
        config.epoch_interruption(limits.timeout.is_some());
        config.wasm_component_model(true);
        config.profiler(profiler_from_env()?);
        let engine = Engine::new(&config)?;
        let t0 = Instant::now();
        let (component, cached, cache_file) = load_component(&engine, wasm, cache_dir)?;
        let load = LoadInfo {
            cached,
            load_ms: t0.elapsed().as_secs_f64() * 1000.0,
            cache_file,
        };
        let mut linker: Linker<HostState> = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        CompactorComponent::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;
        let pre = CompactorComponentPre::new(linker.instantiate_pre(&component)?)?;
        Ok(WasmRuntime {
            engine,
            pre,
            limits,
            native_codec: true,
            load,
        })
    }

    /// Whether the guest may hand its zstd work to the host (on by default; off runs the
    /// component's own zstd, to compare or to rule the host out).
    pub fn set_native_codec(&mut self, on: bool) {
        self.native_codec = on;
    }

    /// Instantiates the component for one call and runs `f` on it, under the limits.
    pub fn call<R>(
        &self,
        storage: Arc<dyn Storage>,
        progress: Option<ProgressFn>,
        f: impl FnOnce(&CompactorComponent, &mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R, HostError> {
        let wasi = WasiCtxBuilder::new().inherit_stderr().build();
        let state = HostState {
            wasi,
            table: ResourceTable::new(),
            storage,
            progress,
            max_memory: self.limits.max_memory_bytes,
            memory_denied: false,
            zstd: self
                .native_codec
                .then(|| crate::codec::NativeZstd::new(self.limits.max_memory_bytes)),
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| s);
        if self.limits.timeout.is_some() {
            store.set_epoch_deadline(1);
        }
        // A watchdog bumps the epoch when the deadline passes; the guest traps at its next
        // epoch check, and the host carries on.
        let (stop, stopped) = mpsc::channel::<()>();
        let watchdog = self.limits.timeout.map(|timeout| {
            let engine = self.engine.clone();
            std::thread::spawn(move || {
                if let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(timeout) {
                    engine.increment_epoch();
                }
            })
        });
        let result = self
            .pre
            .instantiate(&mut store)
            .and_then(|instance| f(&instance, &mut store));
        let _ = stop.send(());
        if let Some(w) = watchdog {
            let _ = w.join();
        }
        result.map_err(|e| self.classify(e, store.data().memory_denied))
    }

    fn classify(&self, e: wasmtime::Error, memory_denied: bool) -> HostError {
        if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
            return HostError::TimeLimit {
                seconds: self.limits.timeout.map_or(0.0, |t| t.as_secs_f64()),
            };
        }
        if memory_denied {
            return HostError::MemoryLimit {
                bytes: self.limits.max_memory_bytes,
            };
        }
        HostError::Trap(format!("{e:#}"))
    }
}

/// The environment variable that turns on a profiling agent for JIT-compiled guest code, so that
/// `perf record` / `perf report` can name the component's functions. Opt-in, for development:
///
/// - unset, empty or `none`: no agent (the default);
/// - `perfmap`: wasmtime appends every compiled function to `/tmp/perf-<pid>.map`, which `perf
///   report` reads on its own (`perf record -g -- paimon-compact ...`);
/// - `jitdump`: writes a `jit-<pid>.dump` for `perf inject --jit`; needs a host built with
///   wasmtime's `profiling` feature (not enabled by default), otherwise loading fails with
///   wasmtime's "jitdump support disabled at compile time".
///
/// Function names come from the component's `name` section: the shipped `component` profile
/// strips it, so profile a build with `CARGO_PROFILE_COMPONENT_STRIP=false`.
pub const PROFILER_ENV: &str = "PAIMON_COMPACT_WASM_PROFILER";

fn profiler_from_env() -> wasmtime::Result<ProfilingStrategy> {
    let value = std::env::var(PROFILER_ENV).unwrap_or_default();
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "none" => Ok(ProfilingStrategy::None),
        "perfmap" => Ok(ProfilingStrategy::PerfMap),
        "jitdump" => Ok(ProfilingStrategy::JitDump),
        other => Err(wasmtime::format_err!(
            "{PROFILER_ENV}={other}: expected perfmap, jitdump or none"
        )),
    }
}

/// Loads a precompiled component from the cache, or compiles and stores it. A corrupt or
/// incompatible cache file is recompiled over.
fn load_component(
    engine: &Engine,
    wasm: &[u8],
    cache_dir: Option<&Path>,
) -> wasmtime::Result<(Component, bool, Option<PathBuf>)> {
    let Some(dir) = cache_dir else {
        return Ok((Component::new(engine, wasm)?, false, None));
    };
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
    let file = dir.join(format!("paimon-compact-{key}.cwasm"));
    if file.exists() {
        // SAFETY: the file was written by `Component::serialize` of this same engine
        // configuration (its name is keyed on the engine's compatibility hash) into a cache
        // directory owned by this user; wasmtime still validates the header and refuses
        // files from another version or configuration.
        if let Ok(c) = unsafe { Component::deserialize_file(engine, &file) } {
            return Ok((c, true, Some(file)));
        }
    }
    let component = Component::new(engine, wasm)?;
    // The cache is an optimisation: failing to write it must not fail the command.
    let _ = store_in_cache(&component, dir, &file);
    Ok((component, false, Some(file)))
}

fn store_in_cache(component: &Component, dir: &Path, file: &Path) -> wasmtime::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, component.serialize()?)?;
    std::fs::rename(&tmp, file)?;
    Ok(())
}
