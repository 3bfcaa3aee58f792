#!/usr/bin/env bash
# Usage: bash .ci/npm-ci.sh <dir>
# `npm ci` in <dir>, unless its node_modules was installed from the current package-lock.json
# already (npm ci always deletes node_modules first, which would repeat stage 06's install).
set -euo pipefail
cd "$1"
if [ -f node_modules/.package-lock.json ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
  exit 0
fi
npm ci --no-audit --no-fund
