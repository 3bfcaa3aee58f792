#!/usr/bin/env bash
# Usage: bash .ci/apt-install.sh <command> <debian package>
# Installs the Debian package unless <command> is already on the PATH (or is an existing path).
set -euo pipefail
if command -v "$1" >/dev/null || [ -x "$1" ]; then
  exit 0
fi
(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2") >/dev/null
