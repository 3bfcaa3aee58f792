#!/usr/bin/env bash
# Runs the append rewrite inside the browser's wasm target (see wasm-smoke/src/lib.rs):
# wasm32-unknown-unknown, no WASI, as a bare module instantiated by Node. (wasm32-wasip2 is the
# component itself: host/tests/it/engines.rs runs every codec through it, byte for byte against the
# native build, so it needs no second build here.) Needs clang (C zstd) and the rustup target.
set -euo pipefail
cd "$(dirname "$0")/wasm-smoke"
target_dir=${CARGO_TARGET_DIR:-$(cd ../../.. && pwd)/target}
export CARGO_TARGET_DIR="$target_dir"
export CFLAGS_wasm32_unknown_unknown=-ffreestanding
# A one-off build: incremental state would only cost time.
export CARGO_INCREMENTAL=0

cargo build --target wasm32-unknown-unknown --lib
node -e '
const fs = require("fs");
const bytes = fs.readFileSync(process.argv[1]);
WebAssembly.instantiate(bytes, {}).then(({ instance }) => {
  const n = instance.exports.smoke();
  console.log(`wasm32-unknown-unknown: ${n} cases passed`);
  process.exit(n === 12 ? 0 : 1);
});
' "$target_dir/wasm32-unknown-unknown/debug/append_wasm_smoke.wasm"
