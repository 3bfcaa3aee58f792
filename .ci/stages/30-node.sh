#!/usr/bin/env bash
# The component in Node: transpiled with jco, driven through JavaScript storage, compared with
# the native engine of the CLI built in stage 10.
set -euo pipefail
cd js
npm ci --no-audit --no-fund
export PAIMON_COMPACT_COMPONENT="$PWD/../target/wasm32-wasip2/component/paimon_compact.wasm"
export PAIMON_COMPACT_CLI="$PWD/../target/release/paimon-compact"
node build.mjs
npm test
