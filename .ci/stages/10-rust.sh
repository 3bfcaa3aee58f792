#!/usr/bin/env bash
# Format, lints, the paimon-compact CLI, and every Rust test: unit, integration, property,
# conformance, fuzz smoke, and the real component in wasmtime. Everything is built once, in the
# release profile, so tests and the CLI share one build of wasmtime/arrow (the host's
# dependencies pin the features the tests' dev-dependencies would otherwise change). The CLI
# is built without the component embedded: it finds it in the build directory, where stage
# 05's background build leaves it.
#
# One cargo build makes the CLI, the test binaries, the benches and the examples: cargo then
# schedules the tests' own compiles (the core's unit tests, the integration tests) beside the
# CLI's last crates instead of after them. The tests run side by side (.ci/rust-tests.sh).
#
# Lints: clippy is the compiler of the workspace's own crates in every build of the run
# (.ci/test-all.sh sets RUSTC_WORKSPACE_WRAPPER), so `cargo clippy` needs no pass of its own:
# the build below covers what `cargo clippy --workspace --all-targets -- -D warnings` covers.
set -euo pipefail
# Each step's time is printed, so a slow CI run says where its time went.
step() {
  local t0=$SECONDS
  "$@"
  echo "=== step '$*' took $((SECONDS - t0)) s"
}
# The wrapper must fail a build on a clippy warning: a toolchain whose clippy-driver took its
# arguments differently would otherwise pass every lint silently.
lints_fail_the_build() {
  local dir=target/clippy-selftest
  mkdir -p "$dir"
  printf 'pub fn empty(v: &[u8]) -> bool {\n    v.len() == 0\n}\n' >"$dir/lint.rs"
  if "$RUSTC_WORKSPACE_WRAPPER" rustc --edition=2021 --crate-type=lib --emit=metadata \
    --out-dir "$dir" "$dir/lint.rs" >"$dir/out.txt" 2>&1; then
    echo "clippy-driver with CLIPPY_ARGS=$CLIPPY_ARGS did not fail on a warning" >&2
    exit 1
  fi
}
step lints_fail_the_build
step cargo fmt --all --check
step cargo build --release --workspace --all-targets
step bash .ci/component.sh wait
step bash .ci/rust-tests.sh
step ./target/release/paimon-compact conformance tests/vectors/compaction-vectors.json
step ./target/release/paimon-compact conformance --cpp tests/vectors/compaction-vectors.json
