#!/usr/bin/env bash
# Format, lints and every native Rust test (unit, integration, property, conformance).
set -euo pipefail
rustup component add rustfmt clippy >/dev/null 2>&1 || true
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
cargo run -q -p paimon-compact-host -- conformance tests/vectors/compaction-vectors.json
cargo run -q -p paimon-compact-host -- conformance --cpp tests/vectors/compaction-vectors.json
