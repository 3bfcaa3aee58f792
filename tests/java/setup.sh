#!/usr/bin/env bash
# Prepares the Paimon Java 1.0 peer of the interoperability tests (tests/java_interop):
#  1. downloads the PyPI wheel paimon-python-ali==0.1.1 (once) into
#     ${CARGO_TARGET_DIR:-target}/java-peer/wheel/,
#  2. extracts the bundled Paimon 1.0 jar (paimon-bundle with Hadoop, Parquet and ORC),
#  3. compiles tests/java/PaimonDriver.java against it (again whenever the source changes).
# Prints the Java classpath on its last stdout line and writes it to
# ${CARGO_TARGET_DIR:-target}/java-peer/classpath. Idempotent; any failure exits non-zero.
# Usage: bash tests/java/setup.sh [python-with-pip]   (default: python3)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$repo/target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
peer="$target/java-peer"
python="${1:-python3}"
wheel_version="0.1.1"
jar_member="paimon_python_java/java_dependencies/paimon-python-java-bridge.jar"

die() { echo "tests/java/setup.sh: $*" >&2; exit 1; }
command -v javac >/dev/null || die "javac not found (a JDK 11+ is required)"
command -v java >/dev/null || die "java not found"
mkdir -p "$peer/wheel" "$peer/classes"

wheel=$(ls "$peer"/wheel/paimon_python_ali-"$wheel_version"-*.whl 2>/dev/null | head -1 || true)
if [ -z "$wheel" ]; then
  echo "downloading paimon-python-ali==$wheel_version from PyPI (about 87 MB)" >&2
  "$python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    -d "$peer/wheel" "paimon-python-ali==$wheel_version" >&2 \
    || die "pip download of paimon-python-ali==$wheel_version failed"
  wheel=$(ls "$peer"/wheel/paimon_python_ali-"$wheel_version"-*.whl 2>/dev/null | head -1 || true)
  [ -n "$wheel" ] || die "no paimon_python_ali wheel in $peer/wheel after pip download"
fi

jar="$peer/paimon-1.0-bundle.jar"
if [ ! -s "$jar" ]; then
  tmp="$peer/jar.tmp"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  "$python" - "$wheel" "$jar_member" "$tmp/bundle.jar" <<'PY' || die "cannot extract the jar from $wheel"
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  mv "$tmp/bundle.jar" "$jar"
  rm -rf "$tmp"
fi

src="$here/PaimonDriver.java"
[ -f "$src" ] || die "missing $src"
stamp="$peer/classes/.source.sha256"
sum=$(sha256sum "$src" "$jar" | sha256sum | cut -d' ' -f1)
if [ ! -f "$peer/classes/PaimonDriver.class" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]; then
  echo "compiling PaimonDriver.java" >&2
  rm -rf "$peer/classes"
  mkdir -p "$peer/classes"
  javac -nowarn -encoding UTF-8 -cp "$jar" -d "$peer/classes" "$src" >&2 \
    || die "javac of $src failed"
  echo "$sum" >"$stamp"
fi
cp_line="$jar:$peer/classes"
echo "$cp_line" >"$peer/classpath"
echo "$cp_line"
