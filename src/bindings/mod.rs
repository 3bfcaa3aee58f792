//! Thin adapters from the WebAssembly bindings onto the core (plus the component's `memcmp`
//! shim). No compaction logic lives here.

#[cfg(all(feature = "component", target_arch = "wasm32"))]
mod component;
#[cfg(any(test, all(feature = "component", target_arch = "wasm32")))]
mod memcmp;
#[cfg(all(feature = "web", target_arch = "wasm32"))]
mod web;
