#!/usr/bin/env bash
# Every test of the project, from a clean clone: installs what it needs, builds each artifact
# once, runs each stage in .ci/stages in order, and prints how long each took.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
start=$(date +%s)
# A full disk shows up as a linker or write error deep inside a stage; say up front what is free.
df -h . | sed 's/^/=== disk: /'
for stage in .ci/stages/*.sh; do
  t0=$(date +%s)
  echo "=== stage $(basename "$stage")"
  bash "$stage"
  echo "=== stage $(basename "$stage") took $(( $(date +%s) - t0 )) s, $(df -h --output=avail . | tail -1 | tr -d ' ') free"
done
echo "=== all stages took $(( $(date +%s) - start )) s"
