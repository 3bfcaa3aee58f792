#!/usr/bin/env bash
# The passes of stage 52's suite, started by that stage in the background (with its
# environment: the venv on PATH, the CLI, the wheel installed) and reported by stage 90:
# the whole suite through the component, and the round trips natively beside it
# (.ci/pytest-pass.sh says why). Fan-out on the native engine is covered by tests/it/fanout.rs
# and the Node test's native CLI; here it would only repeat the component run's processes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/bg.sh start s3-native bash .ci/pytest-pass.sh s3 native -s tests/s3 \
  -k "primary_key_table or append_table or racing" \
  --ignore tests/s3/test_node.py --ignore tests/s3/test_ray.py --ignore tests/s3/test_fanout.py
code=0
bash .ci/pytest-pass.sh s3 wasm -s tests/s3 || code=$?
bash .ci/bg.sh wait s3-native --log || code=1
exit "$code"
