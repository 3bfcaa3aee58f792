//! The host side of paimon-compact: storage over a local directory, the component run in
//! wasmtime, and one API over the native and the WebAssembly engine.

pub mod cleanup;
pub mod clock;
pub mod codec;
pub mod component_cache;
pub mod engine;
pub mod error;
pub mod local_storage;
pub mod location;
pub mod object_storage;
pub mod panics;
pub mod parallel;
pub mod serve;
pub mod storage;
pub mod wasm;

pub use engine::{
    AppendInputFile, AppendRequest, AppendResult, Compactor, Decision, MaintenanceRequest, Now,
    OutputFile, TableJob,
};
pub use error::HostError;
pub use wasm::{Limits, LoadInfo, WasmRuntime};
