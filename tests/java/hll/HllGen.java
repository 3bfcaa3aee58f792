// Differential vectors for the hll_sketch union (src/rewrite/merge/merge_engine/hll_sketch.rs):
// random pairs of DataSketches HLL sketches (every lgK, type, mode and serialization, unions
// fed back in, some damaged) and what Paimon 1.0's own HllSketchUtil.union makes of them.
// Each line: accHex inputHex expected, where expected is the hex of
// org.apache.paimon.utils.HllSketchUtil.union(acc, input) or ERR when Java throws.
// An empty byte array is written as "-". Options: -Dn=<pairs> -Dseed=<long> -DmaxLg=<lgK>
// -Dbig=true (large cardinalities) -Dmut=true (damaged headers of full length)
// -Dintact=true (no damaged images).
// CI (.ci/stages/55-java.sh) compiles it against the peer's jar, writes vectors and runs
//   HLL_VECTORS=<file> cargo test --release -p paimon-compact --lib hll_sketch -- --ignored
import java.util.*;
import org.apache.paimon.shade.org.apache.datasketches.hll.*;
import org.apache.paimon.utils.HllSketchUtil;

public class HllGen {
  static final Random R = new Random(Long.getLong("seed", 20261205L));
  static final StringBuilder out = new StringBuilder();
  static int lines = 0, errs = 0;

  static String hex(byte[] b) {
    if (b.length == 0) return "-";
    StringBuilder sb = new StringBuilder(b.length * 2);
    for (byte x : b) { sb.append(Character.forDigit((x >> 4) & 15, 16)).append(Character.forDigit(x & 15, 16)); }
    return sb.toString();
  }

  static byte[] union(byte[] acc, byte[] in) {
    try { return HllSketchUtil.union(acc, in); } catch (Throwable t) { return null; }
  }

  static byte[] emit(byte[] acc, byte[] in) {
    byte[] r = union(acc, in);
    System.out.print(hex(acc)); System.out.print(' ');
    System.out.print(hex(in)); System.out.print(' ');
    System.out.println(r == null ? "ERR" : hex(r));
    lines++; if (r == null) errs++;
    return r;
  }

  static final TgtHllType[] TYPES = {TgtHllType.HLL_4, TgtHllType.HLL_6, TgtHllType.HLL_8};

  static int pickLgK(int maxLg) {
    int p = R.nextInt(100);
    if (p < 80) return 4 + R.nextInt(Math.min(9, maxLg - 3));       // 4..12
    return 4 + R.nextInt(maxLg - 3);                                   // 4..maxLg
  }

  // cardinalities around the interesting transitions for lgK
  static long pickN(int lgK, boolean allowHuge) {
    int k = 1 << lgK;
    long setMax = (lgK >= 8) ? (3L * (1 << (lgK - 3))) / 4 : 7;
    long[] cands = {0, 1, 2, 3, 5, 7, 8, 9, 23, 24, 25, 31, setMax - 1, setMax, setMax + 1, setMax + 2,
        k / 4, k / 2, k, 2L * k, 8L * k, 32L * k, 1000, 5000};
    long n;
    int p = R.nextInt(100);
    if (p < 70) n = cands[R.nextInt(cands.length)];
    else if (p < 90) n = R.nextInt(Math.max(2, 4 * k));
    else n = allowHuge ? (long) (k) * (64 + R.nextInt(2000)) : R.nextInt(Math.max(2, 4 * k));
    if (n < 0) n = 0;
    return n;
  }

  static HllSketch build(int lgK, TgtHllType t, long start, long n) {
    HllSketch s = new HllSketch(lgK, t);
    for (long i = 0; i < n; i++) s.update(start + i);
    return s;
  }

  static byte[] ser(HllSketch s) {
    return R.nextBoolean() ? s.toCompactByteArray() : s.toUpdatableByteArray();
  }

  static byte[] randomSketch(int maxLg) {
    int lgK = pickLgK(maxLg);
    TgtHllType t = TYPES[R.nextInt(3)];
    boolean huge = lgK <= 10;
    long n = pickN(lgK, huge);
    if (lgK > 14 && n > 4000) n = R.nextInt(4000);
    long start = R.nextInt(3) == 0 ? 0 : R.nextInt(1 << 20);
    HllSketch s = build(lgK, t, start, n);
    if (R.nextInt(8) == 0) {
      // a union's own result or gadget image
      Union u = new Union(lgK);
      u.update(s);
      u.update(build(pickLgK(maxLg), TYPES[R.nextInt(3)], R.nextInt(1000), pickN(lgK, false)));
      switch (R.nextInt(3)) {
        case 0: return u.toUpdatableByteArray();
        case 1: return u.toCompactByteArray();
        default: return ser(u.getResult(TYPES[R.nextInt(3)]));
      }
    }
    return ser(s);
  }

  // Sketch whose 4-bit registers need aux exceptions: few items but a high value in a slot,
  // by many items at small lgK.
  static byte[] auxSketch() {
    int lgK = 4 + R.nextInt(5);
    HllSketch s = new HllSketch(lgK, TYPES[R.nextInt(3)]);
    long n = (1L << lgK) * (50 + R.nextInt(5000));
    long start = R.nextInt(1 << 30);
    for (long i = 0; i < n; i++) s.update(start + i);
    return ser(s);
  }

  static byte[] mutate(byte[] b) {
    byte[] c = b.clone();
    switch (R.nextInt(4)) {
      case 0: return Arrays.copyOf(c, R.nextInt(c.length + 1));
      case 1: { int i = R.nextInt(Math.min(c.length, 48)); c[i] ^= (byte) (1 << R.nextInt(8)); return c; }
      case 2: { int i = R.nextInt(c.length); c[i] = (byte) R.nextInt(256); return c; }
      default: { int i = R.nextInt(Math.min(c.length, 8)); c[i] = (byte) R.nextInt(256); return c; }
    }
  }

  // A mutation that keeps the length (so Java never reads past the end).
  static byte[] mutateKeep(byte[] b) {
    byte[] c = b.clone();
    int i;
    switch (R.nextInt(5)) {
      case 0: i = R.nextInt(Math.min(c.length, 8)); break;
      case 1: i = R.nextInt(Math.min(c.length, 48)); break;
      case 2: i = 3 + R.nextInt(5); if (i >= c.length) i = 0; break;
      default: i = R.nextInt(c.length); break;
    }
    if (R.nextBoolean()) c[i] ^= (byte) (1 << R.nextInt(8)); else c[i] = (byte) R.nextInt(256);
    return c;
  }

  public static void main(String[] args) {
    int n = Integer.getInteger("n", 3000);
    if (Boolean.getBoolean("big")) {
      for (int i = 0; i < n; i++) {
        int lg1 = 13 + R.nextInt(9);
        long setMax = (3L * (1 << (lg1 - 3))) / 4;
        long n1 = R.nextInt(3) == 0 ? setMax + R.nextInt(3) - 1 : setMax + R.nextInt((int) Math.min(4L << lg1, 3000000));
        byte[] big = ser(build(lg1, TYPES[R.nextInt(3)], R.nextInt(1000), n1));
        byte[] other;
        switch (R.nextInt(4)) {
          case 0: other = randomSketch(8); break;
          case 1: other = ser(build(4 + R.nextInt(5), TYPES[R.nextInt(3)], R.nextInt(1000), 20000 + R.nextInt(100000))); break;
          case 2: { int lg2 = 13 + R.nextInt(9); other = ser(build(lg2, TYPES[R.nextInt(3)], R.nextInt(1000000), (3L * (1 << (lg2 - 3))) / 4 + R.nextInt(100000))); break; }
          default: other = ser(build(lg1, TYPES[R.nextInt(3)], R.nextInt(100), R.nextInt(50))); break;
        }
        if (R.nextBoolean()) emit(big, other); else emit(other, big);
      }
      System.err.println("lines=" + lines + " errs=" + errs);
      return;
    }
    if (Boolean.getBoolean("mut")) {
      for (int i = 0; i < n; i++) {
        byte[] a = randomSketch(10), b = randomSketch(10);
        int m = 1 + R.nextInt(3);
        for (int j = 0; j < m; j++) {
          if (R.nextBoolean()) a = mutateKeep(a); else b = mutateKeep(b);
        }
        emit(a, b);
      }
      System.err.println("lines=" + lines + " errs=" + errs);
      return;
    }
    int maxLg = Integer.getInteger("maxLg", 16);
    List<byte[]> pool = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      int kind = R.nextInt(20);
      byte[] a, b;
      if (kind < 10) { a = randomSketch(maxLg); b = randomSketch(maxLg); }
      else if (kind < 13) { a = auxSketch(); b = R.nextBoolean() ? auxSketch() : randomSketch(10); }
      else if (kind < 15 && pool.size() > 0) { a = pool.get(R.nextInt(pool.size())); b = randomSketch(maxLg); if (R.nextBoolean()) { byte[] t = a; a = b; b = t; } }
      else if (kind < 16 && pool.size() > 1) { a = pool.get(R.nextInt(pool.size())); b = pool.get(R.nextInt(pool.size())); }
      else if (kind < 17) {
        // same items, different lgK/type
        int lg1 = pickLgK(maxLg), lg2 = pickLgK(maxLg);
        long cnt = pickN(Math.min(lg1, lg2), true); long st = R.nextInt(1000);
        a = ser(build(lg1, TYPES[R.nextInt(3)], st, cnt)); b = ser(build(lg2, TYPES[R.nextInt(3)], st + cnt / 2, cnt));
      }
      else {
        a = randomSketch(12); b = randomSketch(12);
        // Damaged images: Java may read or write past their end (its bounds checks are
        // assertions), so -Dintact=true leaves them out where a run must be repeatable.
        if (!Boolean.getBoolean("intact")) { if (R.nextBoolean()) a = mutate(a); else b = mutate(b); }
      }
      byte[] r = emit(a, b);
      if (r != null && r.length < 20000 && pool.size() < 400) pool.add(r);
    }
    System.err.println("lines=" + lines + " errs=" + errs);
  }
}
