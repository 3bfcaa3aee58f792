#!/usr/bin/env bash
# The append rewriter inside the browser's wasm target. Native tests (every codec, rolling,
# passthrough, fast copy, failures) run in 10-rust.sh, and the component (wasm32-wasip2) is held
# byte for byte to the native build for every codec in host/tests/it/engines.rs; here the library,
# with C zstd, is built for wasm32-unknown-unknown and a smoke test rewrites every codec,
# passthrough off and on, and reads the result back inside it, as a bare module in Node.
# Debian's clang adds /usr/include for wasm triples unless told -ffreestanding (toolchain notes).
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v clang >/dev/null; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y clang
fi
rustup target add wasm32-unknown-unknown
bash benches/append/wasm-smoke.sh
