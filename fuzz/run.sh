#!/usr/bin/env bash
# Runs every fuzz target (or those named) under libFuzzer for SECONDS each (default 300) and
# prints one line of figures per target: executions, coverage (libFuzzer's `cov` and `ft`),
# corpus size, peak memory. Needs the nightly toolchain; installs cargo-fuzz from crates.io if
# it is missing. New inputs go to target/fuzz-work/<target>/ (the committed corpus in
# fuzz/corpus/ is read, never written); crashes to target/fuzz-artifacts/<target>/.
#
#   bash fuzz/run.sh                # every target, 300 s each
#   SECONDS_PER_TARGET=60 bash fuzz/run.sh parquet_merge table_job
#   FUZZ_NO_BUILD=1 bash fuzz/run.sh options   # the binaries already built, left as they are
#
# FUZZ_NO_BUILD runs the built binaries directly (cargo fuzz run rebuilds before each target,
# so a long lane beside work on the sources would otherwise fuzz half-edited code or stop on a
# build error).
set -euo pipefail
cd "$(dirname "$0")/.."
per_target="${SECONDS_PER_TARGET:-300}"
command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^paimon-compact-fuzz$')
fi
work="$PWD/target/fuzz-work"
artifacts="$PWD/target/fuzz-artifacts"
# Without a sanitizer: the crate has no unsafe code on these paths and libFuzzer's own
# checks (panics, timeouts, memory) are what the targets' contract is about; debug assertions
# stay on (cargo-fuzz's default), so overflow checks fire.
bin_dir="fuzz/target/x86_64-unknown-linux-gnu/release"
[ -n "${FUZZ_NO_BUILD:-}" ] || cargo +nightly fuzz build --sanitizer none
for t in "${targets[@]}"; do
  mkdir -p "$work/$t" "$artifacts/$t" target/fuzz-dict
  log="$work/$t.log"
  # The target's words (fuzz/dict.sh): keys, option names, type names.
  dict="target/fuzz-dict/$t.dict"
  bash fuzz/dict.sh "$t" >"$dict"
  set +e
  # The work corpus first: libFuzzer writes new inputs to the first directory.
  if [ -n "${FUZZ_NO_BUILD:-}" ]; then
    run=("$bin_dir/$t" "$work/$t" "fuzz/corpus/$t")
  else
    run=(cargo +nightly fuzz run --sanitizer none "$t" "$work/$t" "fuzz/corpus/$t" --)
  fi
  "${run[@]}" \
    -max_total_time="$per_target" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -dict="$dict" \
    -artifact_prefix="$artifacts/$t/" >"$log" 2>&1
  code=$?
  set -e
  # The last status line (DONE, or the last one before a crash or a timeout) and the
  # execution at which the last new coverage appeared, to tell a plateau from a climb.
  last=$(grep -E '^#[0-9]+[[:space:]]' "$log" | tail -1 || true)
  last_new=$(grep -E '^#[0-9]+[[:space:]]+NEW' "$log" | tail -1 | grep -oE '^#[0-9]+' || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log")
  # Coverage when half the executions had run: a plateau gains (almost) nothing after it.
  half=$(awk -v n="${execs:-0}" '/^#[0-9]+[[:space:]]/ { e = substr($1, 2) + 0;
      for (i = 1; i < NF; i++) if ($i == "cov:") c = $(i + 1);
      if (e <= n / 2) h = c } END { print h }' "$log")
  cov=$(echo "$last" | grep -oE 'cov: [0-9]+' | grep -oE '[0-9]+' || true)
  # The plateau rule of fuzz/README.md ("Plateau"): the second half of the executions added
  # less than 1% to the coverage.
  verdict=$(awk -v c="${cov:-0}" -v h="${half:-0}" 'BEGIN { if (h <= 0) { print "?"; exit }
      g = (c - h) * 100 / h; printf "%.2f%% in the second half, %s", g, (g < 1 ? "plateau" : "climbing") }')
  echo "$t: exit $code, ${per_target} s, ${execs:-?} executions (${rate:-?}/s), $(echo "$last" | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9a-zA-Z]+' || true), cov at half the executions ${half:-?} (${verdict}), last new coverage at ${last_new:-?}, peak ${rss:-?} MB"
  [ "$code" -eq 0 ] || { echo "  crash or limit: see $log and $artifacts/$t/"; }
  # Killed by a signal no handler saw: without a sanitizer there is no alternate signal
  # stack, so a stack overflow ends the process before libFuzzer can save the input
  # (fuzz/README.md, "a recursive Avro schema").
  [ "$code" -ne 139 ] || echo "  no report: likely a stack overflow; look for unbounded recursion on the input"
done
