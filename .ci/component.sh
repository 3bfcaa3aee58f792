#!/usr/bin/env bash
# The WASI 0.2 component (wasm32-wasip2, the `component` profile: fat LTO, one codegen unit),
# built once per run for the host tests, the CLI, Node and the wheel, at
# target/wasm32-wasip2/component/paimon_compact.wasm.
#
#   component.sh build   builds it now (the demo)
#   component.sh start   starts the build in the background (.ci/bg.sh, log
#                        target/bg/component.log) and returns (CI stage 05): its long
#                        single-threaded end (LTO, one codegen unit) then overlaps stage 10's
#                        native build on the other core. Cargo locks each profile's directory,
#                        so the two builds share target/ without waiting for each other.
#   component.sh wait    waits for a started build (stage 10, before any test needs the
#                        component); fails with the end of its log if it failed
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/wasm32-wasip2/component/paimon_compact.wasm

prepare() {
  rustup target add wasm32-wasip2 >/dev/null 2>&1
  # zstd (Paimon's default codec) is C; Debian's clang compiles it for wasm.
  bash .ci/apt-install.sh clang clang
}

# Built as shipped, also in CI: without the run's clippy wrapper (.ci/test-all.sh), which turns
# off rustc's MIR optimizations and so changes the component's code and size.
build() {
  env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS CFLAGS_wasm32_wasip2=-ffreestanding \
    cargo build --lib --profile component --target wasm32-wasip2 --features component
}

case "${1:-build}" in
  build)
    prepare
    build
    ls -l "$out"
    ;;
  start)
    prepare
    bash .ci/bg.sh start component bash .ci/component.sh build
    ;;
  wait)
    bash .ci/bg.sh wait component
    ls -l "$out"
    ;;
  *)
    echo "usage: $0 build|start|wait" >&2
    exit 2
    ;;
esac
