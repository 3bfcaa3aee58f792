#!/usr/bin/env bash
# Paimon Java 1.0, the reference implementation, as a real peer: tests/java/setup.sh takes its
# jar from the PyPI wheel paimon-python-ali (once, cached under target/java-peer/) and compiles
# our driver (tests/java/PaimonDriver.java); Java writes tables of every kind (merge engines,
# deletion vectors, changelog producers, partitions, nested and decimal/timestamp/bytes
# columns, append tables, schema evolution) with write-only commits, our CLI compacts them —
# through the component in wasmtime, then through the native engine — and Java must read what
# its own full compaction reads; then Java writes on top of our snapshot and we compact again.
# pypaimon (the venv of 50-tables.sh) writes the dynamic-bucket table Java cannot write, and
# reads our results too. pytest's exit code 5 ("no tests collected") fails this stage.
set -euo pipefail
cd "$(dirname "$0")/../.."
TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
VENV="$TARGET_DIR/pypaimon-venv"
bash .ci/bg.sh wait installs
bash .ci/apt-install.sh javac openjdk-17-jdk-headless
source .ci/pins.sh
bash .ci/venv.sh "$VENV" "${PYPAIMON_REQS[@]}"
PAIMON_JAVA_CLASSPATH="$(bash tests/java/setup.sh "$VENV/bin/python" | tail -1)"
export PAIMON_JAVA_CLASSPATH
export PAIMON_COMPACT_CLI="$TARGET_DIR/release/paimon-compact"
[ -x "$PAIMON_COMPACT_CLI" ] || cargo build --release -p paimon-compact-host
# The hll_sketch union against Paimon 1.0's own on generated sketches of every lgK, type, mode
# and serialization (tests/java/hll/HllGen.java; the unit test binary is stage 10's).
hll="$TARGET_DIR/java-peer/hll"
javac -cp "$PAIMON_JAVA_CLASSPATH" -d "$hll" tests/java/hll/HllGen.java
java -cp "$PAIMON_JAVA_CLASSPATH:$hll" -Dn=3000 -Dseed=20261205 -Dintact=true HllGen >"$hll/vectors.txt"
HLL_VECTORS="$hll/vectors.txt" cargo test --release --workspace --lib hll_sketch -- \
  --ignored --nocapture
# Our LZO encoder's blocks (every instruction form and length edge) decompressed by Java's
# own LZO decoder, the one its ORC reader uses (tests/java/lzo/LzoCheck.java).
lzo="$TARGET_DIR/java-peer/lzo"
javac -cp "$PAIMON_JAVA_CLASSPATH" -d "$lzo" tests/java/lzo/LzoCheck.java
LZO_BLOCKS_OUT="$lzo/blocks.bin" cargo test --release --workspace --lib write_blocks_for_java -- \
  --ignored
java -cp "$PAIMON_JAVA_CLASSPATH:$lzo" LzoCheck "$lzo/blocks.bin"
# Every test through the component (the races print their counted outcomes: -s); natively,
# Java's reads of our compactions (test_java_peer.py) and the kills of compaction and of every
# maintenance command (test_maintenance_crash.py: a killed process is the engine's business,
# how far its writes got). Maintenance comparisons and races are the same code in both engines
# (the API layer), and host/tests/it/engines.rs checks they agree. The native pass runs beside
# the component's (.ci/pytest-pass.sh says why).
bash .ci/bg.sh start java-native \
  bash .ci/pytest-pass.sh java native -s tests/java_interop/test_java_peer.py \
  tests/java_interop/test_maintenance_crash.py
code=0
bash .ci/pytest-pass.sh java wasm -s tests/java_interop || code=$?
bash .ci/bg.sh wait java-native --log || code=1
exit "$code"
