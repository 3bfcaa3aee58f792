#!/usr/bin/env bash
# Keeps what long runs found: minimizes each named target's committed corpus together with its
# work corpus (target/fuzz-work/<target>/, written by run.sh) into the smallest set libFuzzer's
# merge finds that reaches every coverage edge of both, and commits that set back to
# fuzz/corpus/<target>/. The next long run, on any machine, starts where this one stopped, and
# the CI smoke run replays (and mutates) every kept input.
#
# Edges, not libFuzzer's finer features (hit-count buckets): a kept input must reach code no
# other kept input reaches, which keeps the corpora small (README.md here, "Kept corpora").
# Named files (seeds, crash and hostile reproducers) are always kept; the inputs the merge
# keeps are named by their SHA-1, as libFuzzer names them, and replace the previous ones.
#
#   bash fuzz/keep.sh parquet_append table_job
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: fuzz/keep.sh <target>..." >&2; exit 2; }
cargo +nightly fuzz build --sanitizer none
bin_dir="fuzz/target/x86_64-unknown-linux-gnu/release"
hashed='.*/[0-9a-f]{40}'
for t in "$@"; do
  corpus="fuzz/corpus/$t"
  work="target/fuzz-work/$t"
  [ -d "$corpus" ] || { echo "$t: no committed corpus $corpus" >&2; exit 1; }
  fresh=$(mktemp -d)
  before=$(find "$corpus" -type f | wc -l)
  # The named files first: the merge keeps what is in its first directory and adds to it.
  find "$corpus" -regextype posix-extended -maxdepth 1 -type f ! -regex "$hashed" -exec cp {} "$fresh/" \;
  sources=("$corpus")
  [ -d "$work" ] && sources+=("$work")
  "$bin_dir/$t" -merge=1 -use_counters=0 -rss_limit_mb=2048 -timeout=10 \
    "$fresh" "${sources[@]}" >"target/fuzz-keep-$t.log" 2>&1 ||
    { echo "$t: the merge failed, see target/fuzz-keep-$t.log" >&2; rm -rf "$fresh"; exit 1; }
  find "$corpus" -regextype posix-extended -maxdepth 1 -type f -regex "$hashed" -delete
  find "$fresh" -regextype posix-extended -maxdepth 1 -type f -regex "$hashed" -exec cp {} "$corpus/" \;
  rm -rf "$fresh"
  edges=$(grep -oE '[0-9]+ new coverage edges' "target/fuzz-keep-$t.log" | tail -1 || true)
  echo "$t: $before -> $(find "$corpus" -type f | wc -l) files, $(du -sh --apparent-size "$corpus" | cut -f1), the kept inputs reach ${edges:-? edges} beyond the named files"
done
