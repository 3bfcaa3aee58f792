#!/usr/bin/env bash
# Usage: bash .ci/venv.sh <dir> <pip requirement>...
# Creates (once) a Python venv at <dir> and installs the requirements from PyPI into it;
# installs Debian's python3-venv first on a machine that lacks it.
set -euo pipefail
venv=$1
shift
if [ ! -x "$venv/bin/python" ]; then
  if ! python3 -m venv "$venv" 2>/dev/null; then
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$venv"
  fi
fi
# --no-compile: pip would byte-compile every module of every package (Ray's thousands among
# them) while stage 10's builds hold the cores; Python compiles what a test imports, once.
"$venv/bin/pip" install -q --no-compile --disable-pip-version-check "$@"
