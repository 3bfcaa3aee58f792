//! The WASI component bindings (wit-bindgen): thin adapters over the core.
