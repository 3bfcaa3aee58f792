#!/usr/bin/env bash
# The main job on a fresh machine: builds the component and the CLI (with the component
# embedded), then writes the demo tables, plans and compacts them through the component in
# wasmtime, and walks through the planner. Extra arguments go to `paimon-compact demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/stages/05-component.sh >/dev/null
export PAIMON_COMPACT_COMPONENT="$PWD/target/wasm32-wasip2/component/paimon_compact.wasm"
cargo build --release -q -p paimon-compact-host
exec ./target/release/paimon-compact demo "$@"
