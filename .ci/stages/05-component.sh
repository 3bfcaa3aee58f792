#!/usr/bin/env bash
# Starts the WASI 0.2 component's build in the background (.ci/component.sh): it runs beside
# stage 10's native build, which waits for it before the first test. The component's build
# time shows in the log it leaves (target/bg/component.log) and as stage 10's wait.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash .ci/component.sh start
