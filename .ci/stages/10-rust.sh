#!/usr/bin/env bash
# Format, lints, the paimon-compact CLI, and every Rust test: unit, integration, property,
# conformance, fuzz smoke, and the real component in wasmtime. Everything is built once, in the
# release profile, so tests and the CLI share one build of wasmtime/arrow (the host's
# dependencies pin the features the tests' dev-dependencies would otherwise change). The CLI
# is built without the component embedded: it finds it in the build directory, where stage
# 05's background build leaves it.
set -euo pipefail
rustup component add rustfmt clippy >/dev/null 2>&1 || true
# Each step's time is printed, so a slow CI run says where its time went.
step() {
  local t0=$SECONDS
  "$@"
  echo "=== step '$*' took $((SECONDS - t0)) s"
}
step cargo fmt --all --check
step cargo build --release -p paimon-compact-host
step cargo clippy --release --workspace --all-targets -- -D warnings
step bash .ci/component.sh wait
step cargo test --release --workspace
step ./target/release/paimon-compact conformance tests/vectors/compaction-vectors.json
step ./target/release/paimon-compact conformance --cpp tests/vectors/compaction-vectors.json
