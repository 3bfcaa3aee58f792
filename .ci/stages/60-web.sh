#!/usr/bin/env bash
# The browser build and its tests: the planner + simulator compiled with wasm-bindgen (feature
# `web`, no arrow/parquet), and the simulator page driven in real headless Chromium (Debian's
# chromium through playwright-core). Installs what it needs on a clean machine; the bundle is
# built once, in the background from stage 26 on. Screenshots and the benchmark result stay
# in target/e2e/.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash .ci/bg.sh wait installs

bash .ci/apt-install.sh /usr/bin/chromium chromium
bash .ci/npm-ci.sh tests/e2e

# Started by stage 26; run alone, this stage builds the bundle here (a no-op once built).
bash .ci/bg.sh wait web-bundle
bash .ci/web-bundle.sh
# The native side of the browser-vs-native comparison: writes target/tmp/sim-digests.json.
# `--workspace`, as stage 10 built it: the same features, so nothing is compiled again.
cargo test --release --workspace --test it simulator::
(cd tests/e2e && npm test)
