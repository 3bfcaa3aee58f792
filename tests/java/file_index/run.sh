#!/bin/bash
# Checks the `bsi` and `bitmap` writers (src/rewrite/file_index/bsi.rs, bitmap.rs) against
# Paimon Java HEAD's own: a developer's tool, not run by CI (the Rust tests keep its golden
# vectors, in src/rewrite/file_index/golden.rs).
#   bash tests/java/file_index/run.sh <a git clone of apache/paimon> [work dir]
# Needs the Java peer's jar (bash tests/java/setup.sh). The 1.0 jar has the bitmap index in
# version 1 only and no bsi index, so:
# 1. HEAD's bsi and bitmap packages, BitSliceIndexRoaringBitmap and RoaringBitmap32 (on the
#    1.0 jar's shaded roaring), trimmed of what the 1.0 jar lacks (the record-reader helpers,
#    the factories' validation, the vector/variant/blob types, toNavigable64, visitBetween's
#    override), compiled against the 1.0 jar.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
JAR="$REPO/target/java-peer/paimon-1.0-bundle.jar"
MIRROR="$1"
WORK="${2:-$(mktemp -d)}"
SRC=$WORK/src; OUT=$WORK/classes-head; GEN=$WORK/oracle
rm -rf $SRC $OUT; mkdir -p $SRC $OUT $GEN/classes
J=paimon-common/src/main/java
for f in $(git -C $MIRROR ls-tree -r --name-only HEAD $J/org/apache/paimon/fileindex/bsi \
             $J/org/apache/paimon/fileindex/bitmap) \
         $J/org/apache/paimon/utils/BitSliceIndexRoaringBitmap.java \
         $J/org/apache/paimon/utils/RoaringBitmap32.java; do
  rel=${f#$J/}; mkdir -p $SRC/$(dirname $rel)
  git -C $MIRROR show HEAD:$f > $SRC/$rel
done
rm $SRC/org/apache/paimon/fileindex/bitmap/ApplyBitmapIndex*.java \
   $SRC/org/apache/paimon/fileindex/bitmap/BitmapFileIndexFactory.java \
   $SRC/org/apache/paimon/fileindex/bsi/BitSliceIndexBitmapFileIndexFactory.java
sed -i 's/import org\.roaringbitmap\./import org.apache.paimon.shade.org.roaringbitmap./' \
  $SRC/org/apache/paimon/utils/RoaringBitmap32.java
SRC=$SRC python3 - <<'PY'
import os, re
src = os.environ['SRC'] + '/org/apache/paimon/'
p = src + 'utils/RoaringBitmap32.java'
s = open(p).read(); i = s.index('    public RoaringNavigableMap64 toNavigable64()')
j = s.index('\n    }\n', i) + 7
open(p, 'w').write(s[:i] + s[j:])
p = src + 'fileindex/bitmap/BitmapTypeVisitor.java'
s = open(p).read()
for t in ('BlobType', 'VariantType', 'VectorType'):
    s = s.replace('import org.apache.paimon.types.%s;\n' % t, '')
    s = re.sub(r'    @Override\n    public final R visit\(%s [a-zA-Z]+\) \{\n[^}]*\}\n\n?' % t, '', s)
open(p, 'w').write(s)
p = src + 'fileindex/bsi/BitSliceIndexBitmapFileIndex.java'
s = open(p).read()
s = s.replace('        @Override\n        public FileIndexResult visitBetween',
              '        public FileIndexResult visitBetween')
open(p, 'w').write(s)
PY
javac -nowarn -cp $JAR -d $OUT $(find $SRC -name '*.java')
# 2. The oracle program.
javac -nowarn -cp $OUT:$JAR -d $GEN/classes "$REPO/tests/java/file_index/FileIndexOracle.java"
# 3. Our bytes for every vector (golden and generated), then HEAD's verdict.
(cd "$REPO" && FILE_INDEX_ORACLE_DUMP=$GEN/vectors.txt \
  cargo test --release -p paimon-compact --lib file_index::golden::dump)
java -cp $GEN/classes:$OUT:$JAR FileIndexOracle $GEN/vectors.txt > $GEN/java.out 2> >(grep -v SLF4J >&2)
tail -1 $GEN/java.out
# 4. (To refresh the goldens in the Rust test from HEAD's output:
#     python3 tests/java/range_bitmap/fill_golden.py src/rewrite/file_index/golden.rs \
#       $GEN/java.out
#     fills empty hex fields and the generated vectors' length and XXH64.)
