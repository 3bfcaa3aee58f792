#!/usr/bin/env bash
# The WASI 0.2 component (wasm32-wasip2, the `component` profile: fat LTO, one codegen unit),
# built once per run for the host tests, the CLI, Node and the wheel, at
# target/wasm32-wasip2/component/paimon_compact.wasm.
#
#   component.sh build   builds it now (the demo)
#   component.sh start   starts the build in the background and returns (CI stage 05): its long
#                        single-threaded end (LTO, one codegen unit) then overlaps stage 10's
#                        native build on the other core. Cargo locks each profile's directory,
#                        so the two builds share target/ without waiting for each other.
#   component.sh wait    waits for a started build (stage 10, before any test needs the
#                        component); fails with the end of its log if it failed
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/wasm32-wasip2/component/paimon_compact.wasm
log=target/component-build.log
rc=target/component-build.rc

prepare() {
  rustup target add wasm32-wasip2 >/dev/null 2>&1
  if ! command -v clang >/dev/null; then
    # zstd (Paimon's default codec) is C; Debian's clang compiles it for wasm.
    (apt-get update -qq && apt-get install -y -qq clang) >/dev/null
  fi
}

build() {
  CFLAGS_wasm32_wasip2=-ffreestanding \
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
    mkdir -p target
    rm -f "$rc"
    (
      set +e
      build >"$log" 2>&1
      echo $? >"$rc"
    ) </dev/null >/dev/null 2>&1 &
    echo "the component is building in the background (pid $!, log $log)"
    ;;
  wait)
    t0=$SECONDS
    # A build never takes an hour here; a vanished one (no result after that) is a failure.
    while [ ! -f "$rc" ] && [ $((SECONDS - t0)) -lt 3600 ]; do
      sleep 2
    done
    if [ "$(cat "$rc" 2>/dev/null)" != "0" ]; then
      echo "the component build failed (exit $(cat "$rc" 2>/dev/null || echo unknown)):" >&2
      tail -50 "$log" >&2 || true
      exit 1
    fi
    grep -E '^ *Finished' "$log" || true
    echo "waited $((SECONDS - t0)) s for the component"
    ls -l "$out"
    ;;
  *)
    echo "usage: $0 build|start|wait" >&2
    exit 2
    ;;
esac
