#!/usr/bin/env bash
# Maintenance on tables with many snapshots: peak RSS and wall time of expire-snapshots,
# remove-orphan-files and a compact with its maintenance, per table size and engine.
# See benches/README.md, "Maintenance on many snapshots".
#
#   benches/maintenance/run.sh                 # sizes 1000 10000, engines native wasm
#   SIZES="1000" ENGINES=native benches/maintenance/run.sh
#   SKIP_BUILD=1 ...                           # use the binaries already in target/release
#   REGENERATE=1 ...                           # rewrite the tables even if they exist
#   HEAPTRACK=1 ...                            # also the native peak heap (dry runs, heaptrack)
#
# Tables are generated once under target/maintenance/tables/s<N> (N commits plus a COMPACT
# snapshot every 50; about 12 s of CPU per 1000 commits) and copied (cp -a, modification times
# kept, then `sync`) to a fresh directory before every command, since expiry and compaction
# change them. Wall times are mostly the file system's (tens of thousands of unlinks); compare
# CPU and peak RSS.
# Each command runs under /usr/bin/time -v (Debian package `time`); logs, JSON reports and the
# summary (results.tsv) go to target/maintenance/.
set -euo pipefail
cd "$(dirname "$0")/../.."

SIZES=${SIZES:-"1000 10000"}
ENGINES=${ENGINES:-"native wasm"}
COMPACT_SIZES=${COMPACT_SIZES:-"10000"}
OUT=target/maintenance
TABLES=$OUT/tables
LOGS=$OUT/logs
WORK=$OUT/work
BIN=target/release/paimon-compact
GEN=target/release/examples/many_snapshots

if [ ! -x /usr/bin/time ]; then
  echo "needs GNU time: apt-get install time" >&2
  exit 2
fi
if [ -z "${SKIP_BUILD:-}" ]; then
  cargo build --release --example many_snapshots
  cargo build --release -p paimon-compact-host
fi
mkdir -p "$TABLES" "$LOGS"

# Pin the component for the whole run (another build may replace it meanwhile) and compile it
# into the cache once, so that no measured run pays for Cranelift.
COMPONENT_ARGS=()
if [[ " $ENGINES " == *" wasm "* ]]; then
  src=${COMPONENT:-}
  if [ -z "$src" ]; then
    for p in target/wasm32-wasip2/component/paimon_compact.wasm \
             target/wasm32-wasip2/release/paimon_compact.wasm; do
      if [ -f "$p" ]; then src=$p; break; fi
    done
  fi
  if [ -n "$src" ]; then
    cp "$src" "$OUT/paimon_compact.wasm"
    COMPONENT_ARGS=(--component "$OUT/paimon_compact.wasm")
  fi
  "$BIN" --engine wasm "${COMPONENT_ARGS[@]}" info >/dev/null
fi

for n in $SIZES; do
  dir=$TABLES/s$n
  if [ -n "${REGENERATE:-}" ] || [ ! -f "$dir/generated.json" ]; then
    rm -rf "$dir"
    echo "generating $n commits into $dir" >&2
    "$GEN" --dir "$dir" --commits "$n" > "$dir.json.tmp"
    mv "$dir.json.tmp" "$dir/generated.json"
  fi
done

seconds() { # m:ss.xx or h:mm:ss -> seconds
  awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }' <<<"$1"
}

RESULTS=$OUT/results.tsv
printf 'command\tsnapshots\tengine\tpeak_rss_mb\twall_s\tcpu_s\texit\tdetail\n' > "$RESULTS"

# measure LABEL SIZE ENGINE ARGS... : runs `paimon-compact --engine ENGINE ARGS... --json` on a
# fresh copy of table s<SIZE> (the word TABLE in ARGS is replaced by its path).
measure() {
  local label=$1 n=$2 engine=$3
  shift 3
  local work=$WORK/$label-$n-$engine
  rm -rf "$work"
  mkdir -p "$WORK"
  cp -a "$TABLES/s$n" "$work"
  # Write the copy back first: otherwise its writeback competes with the measured deletions
  # (one run of expire-snapshots on 10 000 snapshots took 128 s instead of 17 s that way).
  sync
  local table=$work/db.db/t snaps
  snaps=$(find "$table/snapshot" -name 'snapshot-*' | wc -l)
  local args=()
  for a in "$@"; do args+=("${a/TABLE/$table}"); done
  local log=$LOGS/$label-$n-$engine status=0
  /usr/bin/time -v -o "$log.time" "$BIN" --engine "$engine" "${COMPONENT_ARGS[@]}" \
    "${args[@]}" --json > "$log.json" 2> "$log.err" || status=$?
  local rss wall user sys detail
  rss=$(awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$log.time")
  wall=$(seconds "$(awk -F': ' '/Elapsed \(wall clock\)/ { print $2 }' "$log.time")")
  user=$(awk -F': ' '/User time/ { print $2 }' "$log.time")
  sys=$(awk -F': ' '/System time/ { print $2 }' "$log.time")
  detail=$(jq -r '
    def snaps: "expired \(.expired_snapshots | length) snapshots, deleted \(.deleted | length) files";
    if .error then "error: \(.error.message // .error.kind)"
    elif .orphans then .orphans | "referenced \(.referenced), candidates \(.candidates), deleted \(.deleted | length)"
    elif .totals then "\(.status), files \(.totals.files_removed)->\(.totals.files_added); "
      + (if .maintenance.snapshots then (.maintenance.snapshots | snaps) else "no snapshot expiry" end)
    elif .snapshots then .snapshots | snaps
    else "?" end' "$log.json" 2>/dev/null || echo "unparsable report")
  printf '%s\t%s\t%s\t%s\t%.2f\t%.2f\t%s\t%s\n' "$label" "$snaps" "$engine" "$rss" "$wall" \
    "$(awk "BEGIN { print $user + $sys }")" "$status" "$detail" | tee -a "$RESULTS" >&2
  rm -rf "$work"
}

for n in $SIZES; do
  for engine in $ENGINES; do
    measure expire-snapshots "$n" "$engine" expire-snapshots TABLE \
      --retain-max 10 --max-deletes 100000
    measure remove-orphan-files "$n" "$engine" remove-orphan-files TABLE --older-than 1ms
  done
done
for n in $COMPACT_SIZES; do
  for engine in $ENGINES; do
    measure compact "$n" "$engine" compact TABLE \
      --option snapshot.num-retained.max=10 --option snapshot.expire.limit=100000
  done
done

# Where the memory goes: the native engine's peak heap under heaptrack, in dry runs (the same
# reads and the same report, nothing deleted, so one copy serves both commands).
if [ -n "${HEAPTRACK:-}" ]; then
  command -v heaptrack > /dev/null || { echo "HEAPTRACK=1 needs heaptrack" >&2; exit 2; }
  : > "$OUT/heap.tsv"
  for n in $SIZES; do
    work=$WORK/heaptrack-$n
    rm -rf "$work"
    cp -a "$TABLES/s$n" "$work"
    for cmd in "expire-snapshots --retain-max 10 --max-deletes 100000" \
               "remove-orphan-files --older-than 1ms"; do
      set -- $cmd
      name=$1
      shift
      heaptrack -o "$LOGS/heaptrack-$name-$n" "$BIN" --engine native "$name" \
        "$work/db.db/t" "$@" --dry-run --json > /dev/null 2> /dev/null
      peak=$(heaptrack_print -f "$LOGS/heaptrack-$name-$n.zst" --print-peaks 0 \
        --print-allocators 0 --print-temporary 0 --print-leaks 0 2> /dev/null |
        awk -F': ' '/peak heap memory consumption/ { print $2 }')
      printf '%s\t%s\tnative\tpeak heap %s (heaptrack, dry run)\n' "$name" "$n" "$peak" |
        tee -a "$OUT/heap.tsv" >&2
    done
    rm -rf "$work"
  done
fi

echo
echo "commit $(git rev-parse --short HEAD 2> /dev/null || echo '?'), $(rustc --version)"
echo "machine: $(nproc) cores, $(awk '/model name/ { sub(/.*: /, ""); print; exit }' /proc/cpuinfo), \
$(awk '/MemTotal/ { printf "%.0f GB", $2 / 1048576 }' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
column -t -s $'\t' "$RESULTS"
if [ -n "${HEAPTRACK:-}" ]; then
  echo
  column -t -s $'\t' "$OUT/heap.tsv"
fi
