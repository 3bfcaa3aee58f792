#!/usr/bin/env bash
# Usage: bash .ci/pytest-pass.sh <suite> <engine> <pytest argument>...
# One pytest pass of a test stage (<suite>: a name for its messages and directory) with
# PAIMON_COMPACT_ENGINE=<engine>, in the pypaimon venv, with its own temporary directory
# (target/tmp/pytest-<suite>-<engine>), so that two passes of one stage can run at once: the
# native pass runs in the background (.ci/bg.sh) beside the component's, on the core a pytest
# run of processes and JVMs leaves idle. Prints the pass's time. pytest's exit code 5 ("no
# tests collected") fails it. The pass's output is also kept in
# target/tmp/pytest-<suite>-<engine>.log, from which a failed run's last lines quote every
# failure's assertion (.ci/test-all.sh): CI shows only the end of a long run's output.
set -euo pipefail
cd "$(dirname "$0")/.."
suite=$1
engine=$2
shift 2
TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
VENV="$TARGET_DIR/pypaimon-venv"
t0=$SECONDS
echo "--- ${suite}, engine: $engine"
mkdir -p "$TARGET_DIR/tmp"
set +e
PAIMON_COMPACT_ENGINE=$engine "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
  --basetemp "$TARGET_DIR/tmp/pytest-$suite-$engine" "$@" 2>&1 |
  tee "$TARGET_DIR/tmp/pytest-$suite-$engine.log"
code=${PIPESTATUS[0]}
set -e
echo "--- ${suite}, engine $engine took $((SECONDS - t0)) s"
if [ "$code" -eq 5 ]; then
  echo "pytest collected no tests: failing the pass" >&2
  exit 1
fi
exit "$code"
