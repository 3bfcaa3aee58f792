#!/usr/bin/env bash
# Starts the downloads and installs of the later stages (.ci/installs.sh) in the background:
# they overlap stage 10's build; stage 25, the first to need them, waits for them.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash .ci/bg.sh start installs bash .ci/installs.sh
