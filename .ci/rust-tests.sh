#!/usr/bin/env bash
# Runs every Rust test of the workspace, as `cargo test --release --workspace` does, but with
# the test binaries side by side instead of one after the other.
#
# Why: `cargo test` runs one binary at a time, and each binary's run ends in a tail of a few
# long tests on one thread (the core's largest merge property test, the host's table of
# 100 000 files) while the other core waits for the next binary. Side by side, each binary's
# tail overlaps the other's work. (Figures: benches/README.md, "CI".)
#
# Each binary runs in its package's directory, as cargo runs it, with its output kept in a log
# that is printed whole when it ends; the script fails if any binary failed. The doc tests run
# afterwards through cargo, which builds and runs them itself.
set -euo pipefail
cd "$(dirname "$0")/.."
logs=target/rust-tests
rm -rf "$logs"
mkdir -p "$logs"
# The test binaries of the run's build (built already by stage 10: this only lists them).
cargo test --release --workspace --no-run --message-format=json >"$logs/build.json"
python3 - "$logs/build.json" >"$logs/binaries.txt" <<'EOF'
import json, os, sys
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        continue
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and m.get("executable"):
        print(os.path.dirname(m["manifest_path"]) + "\t" + m["executable"])
EOF
# An empty list would pass without running a test: a changed message format must fail instead.
if [ "$(wc -l <"$logs/binaries.txt")" -lt 2 ]; then
  echo "found no test binaries in cargo's build messages ($logs/build.json)" >&2
  exit 1
fi
pids=()
names=()
i=0
while IFS=$'\t' read -r dir exe; do
  name="$i-$(basename "$exe")"
  (cd "$dir" && exec "$exe") >"$logs/$name.log" 2>&1 &
  pids+=("$!")
  names+=("$name")
  i=$((i + 1))
done <"$logs/binaries.txt"
failed=0
for k in "${!pids[@]}"; do
  rc=0
  wait "${pids[$k]}" || rc=$?
  echo "=== test binary ${names[$k]} (exit $rc)"
  cat "$logs/${names[$k]}.log"
  [ "$rc" -eq 0 ] || failed=1
done
if [ "$failed" -ne 0 ]; then
  echo "some test binaries failed (above)" >&2
  exit 1
fi
cargo test --release --workspace --doc
