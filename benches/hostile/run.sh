#!/usr/bin/env bash
# Hostile sizes that are too big for CI (a real 4 GB data file on disk, written by pypaimon):
# see big_file.py. The sizes CI runs (10 000 files in a bucket, 100 000 files in a table,
# 1 000 columns) are tests in host/tests/it/huge_inputs.rs, and a virtual file past 4 GiB in
# host/tests/it/big_file.rs. Figures: benches/README.md, "Hostile sizes".
#   bash benches/hostile/run.sh [--gib 4]
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=target/pypaimon-venv
bash .ci/venv.sh "$VENV" "pypaimon==2.1.0"
[ -x target/release/paimon-compact ] || cargo build --release -p paimon-compact-host
[ -f target/wasm32-wasip2/component/paimon_compact.wasm ] || bash .ci/component.sh build
"$VENV/bin/python" benches/hostile/big_file.py "$@"
