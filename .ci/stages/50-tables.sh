#!/usr/bin/env bash
# Real Paimon tables: pypaimon (from PyPI, installed here into a venv under target/) writes
# tables, our table layer compacts them (through the table_tool example, release build), and
# pypaimon reads them back. pytest's exit code 5 ("no tests collected") fails this stage.
set -euo pipefail
# CI uses the default target dir (release artifacts of the earlier stages are reused).
TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
VENV="$TARGET_DIR/pypaimon-venv"
if [ ! -x "$VENV/bin/python" ]; then
  if ! python3 -m venv "$VENV" 2>/dev/null; then
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$VENV"
  fi
fi
"$VENV/bin/pip" install -q --disable-pip-version-check "pypaimon==2.1.0" "pytest>=7"
cargo build --release --example table_tool
export PAIMON_TABLE_TOOL="$TARGET_DIR/release/examples/table_tool"
set +e
"$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/pypaimon
code=$?
set -e
if [ "$code" -eq 5 ]; then
  echo "pytest collected no tests: failing the stage" >&2
  exit 1
fi
exit "$code"
