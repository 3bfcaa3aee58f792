#!/usr/bin/env bash
# The append rewriter in the wasm targets. Native tests (every codec, rolling, passthrough, fast
# copy, failures) run in 10-rust.sh; here the library, with C zstd, must build for the component
# (wasm32-wasip2) and the browser (wasm32-unknown-unknown).
# Debian's clang adds /usr/include for wasm triples unless told -ffreestanding (toolchain notes).
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v clang >/dev/null; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y clang
fi
rustup target add wasm32-wasip2 wasm32-unknown-unknown
export CFLAGS_wasm32_wasip2=-ffreestanding
export CFLAGS_wasm32_unknown_unknown=-ffreestanding

cargo check --lib --target wasm32-unknown-unknown
cargo check --lib --target wasm32-wasip2
