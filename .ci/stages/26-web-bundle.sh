#!/usr/bin/env bash
# Starts the simulator's browser bundle (.ci/web-bundle.sh: wasm-bindgen-cli from crates.io,
# the planner for wasm32-unknown-unknown) in the background at a lower CPU priority. It then
# compiles on the core that the test stages 30–55 leave idle (their pytest runs of processes
# and JVMs keep about one of the two busy), instead of on both cores in a stage of its own.
# It comes after stage 25 because its cargo build locks the artifact directory that stage 25's
# `cargo test` needs (no stage from 30 to 55 runs cargo). Stage 60 waits for it before the
# browser tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash .ci/bg.sh start web-bundle nice -n 10 bash .ci/web-bundle.sh
