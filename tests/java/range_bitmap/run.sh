#!/bin/bash
# Checks the range-bitmap writer (src/rewrite/file_index/range_bitmap.rs) against Paimon Java
# HEAD's own: a developer's tool, not run by CI (the Rust tests keep its golden vectors).
#   bash tests/java/range_bitmap/run.sh <a git clone of apache/paimon> [work dir]
# Needs the Java peer's jar (bash tests/java/setup.sh). Steps:
# 1. HEAD's rangebitmap package (+ HEAD's RoaringBitmap32 on the 1.0 jar's shaded roaring),
#    trimmed of what the 1.0 jar lacks (the FileIndexer wrapper, topK/bottomK, toNavigable64),
#    compiled against the 1.0 jar.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
JAR="$REPO/target/java-peer/paimon-1.0-bundle.jar"
MIRROR="$1"
WORK="${2:-$(mktemp -d)}"
SRC=$WORK/src; OUT=$WORK/classes-head; GEN=$WORK/oracle
rm -rf $SRC $OUT; mkdir -p $SRC/org/apache/paimon/utils $OUT $GEN/classes
P=paimon-common/src/main/java/org/apache/paimon/fileindex/rangebitmap
for f in $(git -C $MIRROR ls-tree -r --name-only HEAD $P); do
  rel=${f#paimon-common/src/main/java/}; mkdir -p $SRC/$(dirname $rel)
  git -C $MIRROR show HEAD:$f > $SRC/$rel
done
rm $SRC/org/apache/paimon/fileindex/rangebitmap/RangeBitmapFileIndex.java
cat > $SRC/org/apache/paimon/fileindex/rangebitmap/RangeBitmapFileIndexFactory.java <<'J'
package org.apache.paimon.fileindex.rangebitmap;
/** Trimmed for the oracle: only the identifier. */
public class RangeBitmapFileIndexFactory {
    public static final String RANGE_BITMAP = "range-bitmap";
}
J
git -C $MIRROR show HEAD:paimon-common/src/main/java/org/apache/paimon/utils/RoaringBitmap32.java \
  | sed 's/import org\.roaringbitmap\./import org.apache.paimon.shade.org.roaringbitmap./' \
  > $SRC/org/apache/paimon/utils/RoaringBitmap32.java
SRC=$SRC python3 - <<'PY'
import os
src=os.environ['SRC']
p=src+'/org/apache/paimon/utils/RoaringBitmap32.java'
s=open(p).read(); i=s.index('    public RoaringNavigableMap64 toNavigable64()'); j=s.index('\n    }\n',i)+7
open(p,'w').write(s[:i]+s[j:])
p=src+'/org/apache/paimon/fileindex/rangebitmap/RangeBitmap.java'
L=open(p).read().split('\n')
a=[i for i,l in enumerate(L) if 'public RoaringBitmap32 topK(' in l][0]
b=[i for i,l in enumerate(L) if 'A Builder for {@link RangeBitmap}' in l][0]
L=[l for l in L[:a]+L[b:] if 'SortValue' not in l]
open(p,'w').write('\n'.join(L))
PY
javac -nowarn -cp $JAR -d $OUT $(find $SRC -name '*.java')
# 2. The oracle program.
javac -nowarn -cp $OUT:$JAR -d $GEN/classes "$REPO/tests/java/range_bitmap/RangeBitmapOracle.java"
# 3. Our bytes for every vector (golden, generated, randomized battery), then HEAD's verdict.
(cd "$REPO" && RANGE_BITMAP_ORACLE_DUMP=$GEN/vectors.txt \
  cargo test --release -p paimon-compact --lib range_bitmap::tests::dump)
java -cp $GEN/classes:$OUT:$JAR RangeBitmapOracle $GEN/vectors.txt > $GEN/java.out 2> >(grep -v SLF4J >&2)
tail -1 $GEN/java.out
# 4. (To refresh the goldens in the Rust test from HEAD's output:
#     python3 tests/java/range_bitmap/fill_golden.py \
#       src/rewrite/file_index/range_bitmap/tests.rs $GEN/java.out
#     fills empty hex fields and the generated vectors' length and XXH64.)
