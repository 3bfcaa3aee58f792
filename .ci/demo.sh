#!/usr/bin/env bash
# The main job on a fresh machine: builds the component and the CLI (with the component
# embedded), then writes the demo tables, plans and compacts them through the component in
# wasmtime, and walks through the planner. Extra arguments go to `paimon-compact demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/component.sh build >/dev/null
export PAIMON_COMPACT_COMPONENT="$PWD/target/wasm32-wasip2/component/paimon_compact.wasm"
cargo build --release -q -p paimon-compact-host
# The simulator's browser bundle, so `./target/release/paimon-compact serve` works right after.
bash .ci/web-bundle.sh >/dev/null
./target/release/paimon-compact demo "$@"
echo >&2
echo "The simulator is ready: ./target/release/paimon-compact serve  (then open http://127.0.0.1:8080/)" >&2
