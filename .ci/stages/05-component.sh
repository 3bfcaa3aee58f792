#!/usr/bin/env bash
# Builds the WASI 0.2 component once (size profile), for the host tests, the CLI and Node.
set -euo pipefail
rustup target add wasm32-wasip2 >/dev/null 2>&1
if ! command -v clang >/dev/null; then
  # zstd (Paimon's default codec) is C; Debian's clang compiles it for wasm.
  (apt-get update -qq && apt-get install -y -qq clang) >/dev/null
fi
export CFLAGS_wasm32_wasip2=-ffreestanding
cargo build --lib --profile component --target wasm32-wasip2 --features component
ls -l target/wasm32-wasip2/component/paimon_compact.wasm
