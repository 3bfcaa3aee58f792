#!/usr/bin/env bash
# Waits for stage 52's suite, which ran in the background beside stages 55 and 60, and prints
# its output; fails if it failed. Its own time is in its log (the last line printed here).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash .ci/bg.sh wait s3 --log
