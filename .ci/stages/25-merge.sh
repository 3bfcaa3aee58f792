#!/usr/bin/env bash
# The primary-key merge rewriter's deletion vectors, read back by an independent reader:
# the Rust test merge_dv_export (built in stage 10) writes an index file and the positions it
# must hold; pyroaring (from PyPI, in a venv under target/) reads it back.
set -euo pipefail
cd "$(dirname "$0")/../.."
TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
VENV="$TARGET/merge-venv"
bash .ci/bg.sh wait installs
source .ci/pins.sh
bash .ci/venv.sh "$VENV" "${MERGE_REQS[@]}"
export PAIMON_MERGE_DV_OUT="$TARGET/merge-dv"
rm -rf "$PAIMON_MERGE_DV_OUT"
# `--workspace`, as stage 10 built it: the same features, so nothing is compiled again.
cargo test --release --workspace --test it merge_dv_export::
set +e
"$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/merge_py
code=$?
set -e
if [ "$code" -eq 5 ]; then
  echo "pytest collected no tests: failing the stage" >&2
  exit 1
fi
exit "$code"
