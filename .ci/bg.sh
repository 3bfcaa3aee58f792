#!/usr/bin/env bash
# Background jobs of a CI run: started by one stage, waited for by a later one, so work that
# needs no CPU of its own (downloads, installs) or that leaves a core idle (the component's
# single-threaded LTO) overlaps stage 10's build.
#
#   bg.sh start NAME CMD...   runs CMD in the background and returns; its output goes to
#                             target/bg/NAME.log, its exit code to target/bg/NAME.rc
#   bg.sh wait NAME [--log]   waits for NAME; fails with the end of its log if it failed.
#                             --log prints the whole log (a test pass's results) either way.
#                             A job that was never started here counts as done (each stage
#                             still installs what it needs itself, so a stage run alone works).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=target/bg
mkdir -p "$dir"
cmd=${1:-}
name=${2:-}
[ -n "$name" ] || { echo "usage: $0 start NAME CMD... | wait NAME" >&2; exit 2; }
log="$dir/$name.log"
rc="$dir/$name.rc"
started="$dir/$name.started"

case "$cmd" in
  start)
    shift 2
    rm -f "$rc"
    touch "$started"
    (
      set +e
      t0=$SECONDS
      "$@" >"$log" 2>&1
      code=$?
      echo "=== background job '$name' took $((SECONDS - t0)) s" >>"$log"
      echo "$code" >"$rc"
    ) </dev/null >/dev/null 2>&1 &
    echo "background job '$name' started (pid $!, log $log)"
    ;;
  wait)
    [ -f "$started" ] || exit 0
    t0=$SECONDS
    # No job takes an hour here; one with no result after that has vanished: a failure.
    while [ ! -f "$rc" ] && [ $((SECONDS - t0)) -lt 3600 ]; do
      sleep 2
    done
    code=$(cat "$rc" 2>/dev/null || echo unknown)
    if [ "${3:-}" = --log ]; then
      cat "$log" 2>/dev/null || true
    else
      tail -1 "$log" 2>/dev/null || true
    fi
    echo "waited $((SECONDS - t0)) s for background job '$name'"
    if [ "$code" != "0" ]; then
      echo "background job '$name' failed (exit $code):" >&2
      [ "${3:-}" = --log ] || tail -50 "$log" >&2 || true
      exit 1
    fi
    ;;
  *)
    echo "usage: $0 start NAME CMD... | wait NAME" >&2
    exit 2
    ;;
esac
