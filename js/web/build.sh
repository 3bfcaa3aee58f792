#!/usr/bin/env bash
# Builds the browser bundle into www/pkg: the planner + simulator compiled to
# wasm32-unknown-unknown with the `web` feature (no arrow/parquet), the wasm-bindgen JS glue
# (`--target web`), and the loader. Uses $CARGO_TARGET_DIR if set, else the default target dir.
# Needs: rustup target wasm32-unknown-unknown, wasm-bindgen-cli of the crate's exact version.
# wasm-opt runs only if WASM_OPT points at a binaryen new enough (npm binaryen@132; Debian's
# version 108 breaks wasm-bindgen output).
set -euo pipefail
cd "$(dirname "$0")/../.."
target_dir="${CARGO_TARGET_DIR:-target}"
cargo build --lib --target wasm32-unknown-unknown --no-default-features --features web --release
out=www/pkg
mkdir -p "$out"
wasm-bindgen --target web --no-typescript --out-dir "$out" \
  "$target_dir/wasm32-unknown-unknown/release/paimon_compact.wasm"
if [ -n "${WASM_OPT:-}" ]; then
  "$WASM_OPT" -O3 --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-reference-types --enable-multivalue \
    "$out/paimon_compact_bg.wasm" -o "$out/paimon_compact_bg.wasm"
fi
cp js/web/loader.js "$out/loader.js"
echo "web bundle: $(du -k "$out/paimon_compact_bg.wasm" | cut -f1) KiB wasm in $out"
