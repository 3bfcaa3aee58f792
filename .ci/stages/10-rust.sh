#!/usr/bin/env bash
# Format, lints, the paimon-compact CLI (with the component embedded), and every Rust test:
# unit, integration, property, conformance, and the real component in wasmtime. Everything is
# built once, in the release profile, so tests and the CLI share one build of wasmtime/arrow.
set -euo pipefail
rustup component add rustfmt clippy >/dev/null 2>&1 || true
export PAIMON_COMPACT_COMPONENT="$PWD/target/wasm32-wasip2/component/paimon_compact.wasm"
cargo fmt --all --check
cargo build --release -p paimon-compact-host
cargo clippy --release --workspace --all-targets -- -D warnings
cargo test --release --workspace
./target/release/paimon-compact conformance tests/vectors/compaction-vectors.json
./target/release/paimon-compact conformance --cpp tests/vectors/compaction-vectors.json
