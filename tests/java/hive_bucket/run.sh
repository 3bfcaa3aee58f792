#!/bin/bash
# Writes golden vectors for the `hive` bucket function (src/table/bucket_function.rs) with
# Paimon Java HEAD's own HiveBucketFunction: a developer's tool, not run by CI (the Rust tests
# keep the vectors it printed).
#   bash tests/java/hive_bucket/run.sh <a git clone of apache/paimon> [keys] [seed]
# Needs the Java peer's jar (bash tests/java/setup.sh). HEAD's HiveHasher and
# HiveBucketFunction are compiled against the 1.0 jar (which has neither) with a one-method
# BucketFunction interface; the oracle prints `types|values|buckets` lines (see its header).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
JAR="$REPO/target/java-peer/paimon-1.0-bundle.jar"
PAIMON="$1"
WORK="$(mktemp -d)"
mkdir -p "$WORK/src/org/apache/paimon/bucket" "$WORK/classes"
for f in HiveBucketFunction HiveHasher; do
  git -C "$PAIMON" show HEAD:paimon-core/src/main/java/org/apache/paimon/bucket/$f.java \
    >"$WORK/src/org/apache/paimon/bucket/$f.java"
done
cat >"$WORK/src/org/apache/paimon/bucket/BucketFunction.java" <<'J'
package org.apache.paimon.bucket;
import org.apache.paimon.data.BinaryRow;
/** Trimmed for the oracle: the one method. */
public interface BucketFunction extends java.io.Serializable {
    int bucket(BinaryRow row, int numBuckets);
}
J
javac -nowarn -cp "$JAR" -d "$WORK/classes" $(find "$WORK/src" -name '*.java')
javac -nowarn -cp "$JAR:$WORK/classes" -d "$WORK/classes" \
  "$REPO/tests/java/hive_bucket/HiveBucketOracle.java"
java -cp "$JAR:$WORK/classes" -Dn="${2:-80}" -Dseed="${3:-20261205}" HiveBucketOracle
