#!/usr/bin/env bash
# Everything the test stages after stage 10 install from the registries (PyPI, npm, Debian),
# fetched in one go. Stage 06 runs this in the background (.ci/bg.sh) while stage 10 compiles,
# so the downloads overlap the build; each later stage waits for it (`bg.sh wait installs`)
# and then runs its own, now quick, installs, so a stage run alone still sets itself up.
# Sequential on purpose: apt and pip must not run twice at once on the same target.
set -euo pipefail
cd "$(dirname "$0")/.."
t() {
  local t0=$SECONDS
  "$@"
  echo "=== install '$*' took $((SECONDS - t0)) s" >&2
}
source .ci/pins.sh
venv=target/pypaimon-venv
# Stages 50, 52 and 55 (pypaimon, moto, Ray, pytest) and 25 (pyroaring).
t bash .ci/venv.sh "$venv" "${PYPAIMON_REQS[@]}" "${S3_REQS[@]}"
t "$venv/bin/pip" install -q --no-compile --disable-pip-version-check "$RUST_READER_REQ" || true
t bash .ci/venv.sh target/merge-venv "${MERGE_REQS[@]}"
# Stage 55: a JDK, the Paimon Java jar (from the PyPI wheel paimon-python-ali) and our driver.
t bash .ci/apt-install.sh javac openjdk-17-jdk-headless
t bash tests/java/setup.sh "$venv/bin/python" >/dev/null
# Stages 30 and 60: the Node packages, and the second Node.
t bash .ci/npm-ci.sh js
t bash .ci/npm-ci.sh tests/e2e
t bash .ci/node-zstd.sh >/dev/null
# Stage 60: Debian's chromium.
t bash .ci/apt-install.sh /usr/bin/chromium chromium
