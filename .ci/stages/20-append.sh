#!/usr/bin/env bash
# The append rewriter inside the wasm targets. Native tests (every codec, rolling, passthrough,
# fast copy, failures) run in 10-rust.sh; here the library, with C zstd, is built for the
# component target (wasm32-wasip2) and the browser target (wasm32-unknown-unknown), and a smoke
# test rewrites every codec, passthrough off and on, and reads the result back inside each:
# under the wasmtime CLI (wasip2) and as a bare module in Node (unknown-unknown).
# Debian's clang adds /usr/include for wasm triples unless told -ffreestanding (toolchain notes).
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v clang >/dev/null; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y clang
fi
rustup target add wasm32-wasip2 wasm32-unknown-unknown
bash benches/append/wasm-smoke.sh
