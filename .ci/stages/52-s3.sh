#!/usr/bin/env bash
# Tables in an object store: a real S3-protocol server (moto, from PyPI) on loopback, started by
# the tests; pypaimon writes, the CLI compacts by s3:// URI, pypaimon reads back. The whole
# suite (races, throttling, injected server errors and connection resets) runs on the
# component; the native engine runs the round trips (storage is the host's in both engines).
# Fan-out: tasks in separate processes, retried, failed, aborted; `--parallelism`; the Python
# package (a wheel carrying the CLI) and Ray from PyPI on a local cluster bound to loopback.
# This stage prepares and starts the suite; stage 90 reports it.
set -euo pipefail
cd "$(dirname "$0")/../.."
TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
VENV="$TARGET_DIR/pypaimon-venv"
bash .ci/bg.sh wait installs
source .ci/pins.sh
bash .ci/venv.sh "$VENV" "${PYPAIMON_REQS[@]}" "${S3_REQS[@]}"
export PATH="$VENV/bin:$PATH"
# The Node handler test needs js/ built, which stage 30 did: its absence is a failure here.
export PAIMON_COMPACT_REQUIRE_NODE=1
export PAIMON_COMPACT_CLI="$TARGET_DIR/release/paimon-compact"
[ -x "$PAIMON_COMPACT_CLI" ] || cargo build --release -p paimon-compact-host
# The Python package as users get it: a wheel carrying the CLI built above (no second build).
rm -rf "$TARGET_DIR/wheels"
# The component precompiled for this machine ships in the wheel: no Ray task compiles it.
rm -rf "$TARGET_DIR/precompiled"
"$PAIMON_COMPACT_CLI" --component "$TARGET_DIR/wasm32-wasip2/component/paimon_compact.wasm" \
  precompile --out "$TARGET_DIR/precompiled"
"$VENV/bin/python" python/build_wheel.py --binary "$PAIMON_COMPACT_CLI" \
  --component "$TARGET_DIR/wasm32-wasip2/component/paimon_compact.wasm" \
  --precompiled "$TARGET_DIR"/precompiled/*.cwasm --out "$TARGET_DIR/wheels"
"$VENV/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps "$TARGET_DIR"/wheels/*.whl
export PAIMON_COMPACT_REQUIRE_RAY=1
# The suite waits more than it computes (a loopback server, retries, process starts: 0.6 of a
# core on average), so it runs in the background beside stages 55 and 60, which keep about one
# core busy; stage 90 waits for it and prints its output (.ci/s3-passes.sh).
bash .ci/bg.sh start s3 bash .ci/s3-passes.sh
