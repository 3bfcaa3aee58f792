#!/usr/bin/env bash
# Prints a libFuzzer dictionary for a fuzz target: the words of its named seed files (JSON keys
# with their quotes, identifiers, option keys in `key=value` lines), and the option keys and
# type names the crate's sources declare. Without sanitizer interceptors libFuzzer does not see
# the string comparisons a parser makes (serde's field names, option keys, type names), so
# mutation alone takes millions of runs to spell one; a dictionary hands them over. Generated
# from the sources at each run (fuzz/run.sh), so it never goes stale.
#
#   bash fuzz/dict.sh json_metadata > target/fuzz-dict/json_metadata.dict
set -euo pipefail
cd "$(dirname "$0")/.."
t="$1"
{
  # Named seeds only: the kept inputs (named by SHA-1) are mutations of them.
  find "fuzz/corpus/$t" -maxdepth 1 -type f -regextype posix-extended ! -regex '.*/[0-9a-f]{40}' \
    -exec strings -n 3 {} + |
    grep -oE '"[^"\\]{1,40}"|[A-Za-z_][A-Za-z0-9_.#-]{2,40}' || true
  # Option keys ("merge-engine", "fields.#.aggregate-function", ...).
  grep -rhoE '"[a-z][a-z0-9_-]*(\.[a-z0-9_#-]+)+"' src/options src/maintenance src/table || true
  # Paimon's type names, as the schema parser spells them.
  grep -rhoE '"[A-Z][A-Z_]{2,}( NOT NULL)?"' src/table/schema* || true
} | sed -E 's/^"(.*)"$/\1/' | LC_ALL=C sort -u | head -2000 |
  # One entry per line, quoted; quotes and backslashes escaped as libFuzzer reads them.
  sed -E 's/\\/\\\\/g; s/"/\\"/g; s/^(.*)$/"\1"/'
