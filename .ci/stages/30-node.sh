#!/usr/bin/env bash
# The component in Node: transpiled with jco (a synchronous build and a JSPI build), driven
# through JavaScript storage, compared with the native engine of the CLI built in stage 10.
# The machine's Node (20) has no JSPI, so `paimon-compact/async` takes the worker bridge there;
# the second run, on Node 24, takes the JSPI bridge (js/test/async.test.mjs asserts which).
set -euo pipefail
bash .ci/bg.sh wait installs
cd js
bash ../.ci/npm-ci.sh .
export PAIMON_COMPACT_COMPONENT="$PWD/../target/wasm32-wasip2/component/paimon_compact.wasm"
export PAIMON_COMPACT_CLI="$PWD/../target/release/paimon-compact"
node build.mjs
npm test

# Again under a Node whose zlib has zstd (22.15+) and whose WebAssembly has JSPI (24+), so the
# `codec` import runs on Node's own zstd rather than the component's and the async API on the
# JSPI build (the run above, on the machine's Node, covers the other side of both). The binary
# comes from the npm registry, pinned; stage 52 runs the S3 handler with it too.
node_bin=$(bash ../.ci/node-zstd.sh)
if [ -n "$node_bin" ]; then
  PATH="$node_bin:$PATH" node -e \
    "if (typeof require('zlib').zstdCompressSync !== 'function') process.exit(1)"
  PATH="$node_bin:$PATH" npm test
fi
