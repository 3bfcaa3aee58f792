// Prints the small Java-computed cases embedded in the unit tests of
// src/rewrite/merge/merge_engine/hll_sketch.rs (JAVA_CASES), run against the peer's jar.
import org.apache.paimon.shade.org.apache.datasketches.hll.*;
import org.apache.paimon.utils.HllSketchUtil;

public class HllCases {
  static String hex(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (byte x : b) sb.append(String.format("%02x", x & 0xff));
    return sb.toString();
  }
  static HllSketch sk(int lgK, TgtHllType t, long from, long n) {
    HllSketch s = new HllSketch(lgK, t);
    for (long i = 0; i < n; i++) s.update(from + i);
    return s;
  }
  static int total = 0;
  static void emit(String name, byte[] acc, byte[] in) {
    String r;
    try { r = hex(HllSketchUtil.union(acc, in)); } catch (Throwable t) { r = "ERR"; }
    total += 2 * (acc.length + in.length) + r.length();
    System.out.println("    (\n        \"" + name + "\",\n        \"" + hex(acc) + "\",\n        \"" + hex(in) + "\",\n        \"" + r + "\",\n    ),");
  }
  public static void main(String[] a) {
    TgtHllType H4 = TgtHllType.HLL_4, H6 = TgtHllType.HLL_6, H8 = TgtHllType.HLL_8;
    emit("list+list", sk(8, H4, 1, 3).toCompactByteArray(), sk(8, H8, 3, 2).toUpdatableByteArray());
    emit("list+set", sk(8, H4, 100, 5).toCompactByteArray(), sk(8, H6, 200, 12).toCompactByteArray());
    emit("set+list (updatable set)", sk(8, H8, 200, 12).toUpdatableByteArray(), sk(8, H4, 100, 5).toCompactByteArray());
    emit("set+set to hll", sk(8, H4, 1000, 20).toCompactByteArray(), sk(8, H4, 2000, 20).toUpdatableByteArray());
    emit("list+list to hll (lgK 5)", sk(5, H4, 1, 5).toCompactByteArray(), sk(5, H8, 10, 5).toCompactByteArray());
    emit("hll4 with exceptions + hll8", sk(4, H4, 80900000, 40).toCompactByteArray(), sk(4, H8, 9, 30).toCompactByteArray());
    emit("hll8 lgK 4 + hll4 lgK 5 updatable with exceptions", sk(4, H8, 9, 30).toUpdatableByteArray(), sk(5, H4, 91800000, 60).toUpdatableByteArray());
    emit("hll6 updatable + hll8", sk(6, H6, 1, 500).toUpdatableByteArray(), sk(6, H8, 300, 300).toCompactByteArray());
    emit("lgK 7 acc + lgK 5 input", sk(7, H4, 1, 1000).toCompactByteArray(), sk(5, H8, 500, 200).toCompactByteArray());
    emit("lgK 5 acc + lgK 7 input", sk(5, H6, 1, 200).toCompactByteArray(), sk(7, H4, 100, 1000).toCompactByteArray());
    emit("list lgK 8 + hll lgK 6", sk(8, H4, 1, 4).toCompactByteArray(), sk(6, H4, 50, 400).toCompactByteArray());
    emit("hll lgK 6 + set lgK 8", sk(6, H8, 50, 400).toCompactByteArray(), sk(8, H8, 1, 15).toCompactByteArray());
    emit("empty + empty", sk(6, H4, 0, 0).toCompactByteArray(), sk(6, H8, 0, 0).toUpdatableByteArray());
    emit("empty + list", sk(10, H4, 0, 0).toCompactByteArray(), sk(6, H6, 5, 3).toCompactByteArray());
    emit("hll4 with exceptions, lgK 5 + lgK 4", sk(5, H4, 101400000, 60).toCompactByteArray(), sk(4, H4, 80900000, 40).toCompactByteArray());
    emit("hll4 with exceptions + empty", sk(4, H4, 80900000, 40).toCompactByteArray(), sk(4, H4, 0, 0).toCompactByteArray());
    emit("list + hll4 with exceptions", sk(5, H8, 3, 4).toCompactByteArray(), sk(5, H4, 91800000, 60).toUpdatableByteArray());
    byte[] u = HllSketchUtil.union(sk(5, H4, 1, 300).toCompactByteArray(), sk(5, H8, 1000, 300).toCompactByteArray());
    emit("union result + hll (out of order)", u, sk(5, H6, 5000, 80).toCompactByteArray());
    Union un = new Union(6); un.update(sk(6, H4, 1, 600)); un.update(sk(6, H8, 900, 600));
    emit("union gadget image + list", sk(6, H4, 9, 3).toCompactByteArray(), un.toUpdatableByteArray());
    System.err.println("total hex chars " + total);
  }
}
