#!/usr/bin/env bash
# Every test of the project, from a clean clone: installs what it needs, builds each artifact
# once, runs each stage in .ci/stages in order, and prints how long each took.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
start=$(date +%s)
# A full disk shows up as a linker or write error deep inside a stage; say up front what is free.
df -h . | sed 's/^/=== disk: /'
rustup component add rustfmt clippy >/dev/null 2>&1 || true
# The run's native build (the CLI and the test binaries; every stage that runs cargo shares it):
#  - opt-level 1 instead of 3 (less LLVM time; measured per crate in benches/README.md, "CI").
#    The tests exercise the component, whose own profile (`component`, opt-level 3, fat LTO) is
#    untouched, and the native engine on small inputs. Cranelift, which compiles the component
#    at a cold start, is at 1 too: that costs a few seconds per cold start (the run has a
#    handful; the cache serves the rest) and saves minutes of its build. Benchmarks and
#    releases build with `--release` and get opt-level 3.
#  - clippy as the compiler of the workspace's own crates, with warnings as errors: the lints
#    come with the builds instead of a `cargo clippy` pass that type-checks every dependency
#    again. Stage 10 checks that a warning does fail the build.
export CARGO_PROFILE_RELEASE_OPT_LEVEL=1
RUSTC_WORKSPACE_WRAPPER="$(command -v clippy-driver)"
export RUSTC_WORKSPACE_WRAPPER
export CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
# A failing stage ends the run, maybe with background jobs (stage 52's suite) still going or
# failed: their output would be lost with them, so say where each stands.
report_background() {
  local code=$?
  [ "$code" -eq 0 ] && return
  for started in target/bg/*.started; do
    [ -e "$started" ] || continue
    local name rc
    name=$(basename "$started" .started)
    rc=$(cat "target/bg/$name.rc" 2>/dev/null || echo "still running")
    [ "$rc" = 0 ] && continue
    echo "=== background job '$name': $rc; the end of its log:"
    tail -40 "target/bg/$name.log" 2>/dev/null || true
  done
  # The assertion of every failed pytest test, last: a stage's log may be too long to show.
  for log in target/tmp/pytest-*.log; do
    [ -e "$log" ] && grep -q '^FAILED ' "$log" || continue
    echo "=== failures of $(basename "$log" .log):"
    grep -E '^(FAILED |E  |_{3,} .* _{3,}$)' "$log" | cut -c1-400 | head -80 || true
  done
}
trap report_background EXIT
rm -f target/tmp/pytest-*.log
for stage in .ci/stages/*.sh; do
  t0=$(date +%s)
  echo "=== stage $(basename "$stage")"
  bash "$stage"
  echo "=== stage $(basename "$stage") took $(( $(date +%s) - t0 )) s, $(df -h --output=avail . | tail -1 | tr -d ' ') free"
done
# What the background jobs took (they overlap other stages, so no stage shows all of it).
grep -h '^=== ' target/bg/*.log 2>/dev/null || true
echo "=== all stages took $(( $(date +%s) - start )) s"
