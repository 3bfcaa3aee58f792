//! Thin adapters from the WebAssembly bindings onto the core. No logic lives here.

#[cfg(all(feature = "component", target_arch = "wasm32"))]
mod component;
#[cfg(all(feature = "web", target_arch = "wasm32"))]
mod web;
