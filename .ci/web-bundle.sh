#!/usr/bin/env bash
# Builds the simulator's browser bundle (www/pkg): the planner compiled for wasm32-unknown-unknown
# and its wasm-bindgen glue. Installs the wasm-bindgen CLI at exactly the version Cargo.lock pins
# (the glue and the crate must match). Shared by the main command (.ci/demo.sh), so that
# `paimon-compact serve` works right after it, and by the browser test stage.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' Cargo.lock)
have=$(wasm-bindgen --version 2>/dev/null | awk '{ print $2 }' || true)
if [ "$have" != "$want" ]; then
  # Unoptimized: it compiles in about half the time, and it only rewrites one small module.
  cargo install -q --debug wasm-bindgen-cli --version "=$want"
fi
bash js/web/build.sh
