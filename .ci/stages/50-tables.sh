#!/usr/bin/env bash
# Real Paimon tables: pypaimon (from PyPI, installed here into a venv under target/) writes
# tables, the `paimon-compact` CLI built in stage 10 compacts them — through the component in
# wasmtime, then through the native engine — and pypaimon reads them back (and pypaimon-rust,
# where its wheel installs). pytest's exit code 5
# ("no tests collected") fails this stage.
set -euo pipefail
TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
VENV="$TARGET_DIR/pypaimon-venv"
bash .ci/bg.sh wait installs
source .ci/pins.sh
bash .ci/venv.sh "$VENV" "${PYPAIMON_REQS[@]}"
# A second independent reader: after every compaction it must read what pypaimon reads.
if "$VENV/bin/pip" install -q --no-compile --disable-pip-version-check "$RUST_READER_REQ"; then
  export PAIMON_COMPACT_REQUIRE_RUST_READER=1
else
  echo "pypaimon-rust does not install on this platform: its cross-checks are skipped"
fi
export PAIMON_COMPACT_CLI="$TARGET_DIR/release/paimon-compact"
[ -x "$PAIMON_COMPACT_CLI" ] || cargo build --release -p paimon-compact-host
# Every test through the component; natively, the rewrite and commit interoperability
# (test_compact.py): the dedicated job's flags, crashes and orphans are the same code in both
# engines (the API layer), and host/tests/it/engines.rs checks the engines agree. The native
# pass runs beside the component's (.ci/pytest-pass.sh says why).
bash .ci/bg.sh start tables-native bash .ci/pytest-pass.sh tables native tests/pypaimon/test_compact.py
code=0
bash .ci/pytest-pass.sh tables wasm tests/pypaimon || code=$?
bash .ci/bg.sh wait tables-native --log || code=1
exit "$code"
