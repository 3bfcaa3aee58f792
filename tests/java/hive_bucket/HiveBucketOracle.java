// Golden vectors for the `hive` bucket function (src/table/bucket_function.rs): random
// bucket keys of every type Hive's hash takes, written as BinaryRows and bucketed by Paimon
// Java HEAD's own HiveBucketFunction (built by run.sh from a Paimon clone).
// Output, one key per line:  TYPES|VALUES|BUCKETS
//   TYPES   Paimon types separated by ';';
//   VALUES  separated by ';': N (null); integers, days, millis and unscaled decimals in
//           decimal; FLOAT/DOUBLE as hex IEEE bits; booleans 0/1; strings and binaries as
//           x<hex>;
//   BUCKETS space-separated buckets for 1 2 3 7 16 100 1024 buckets.
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.paimon.bucket.HiveBucketFunction;
import org.apache.paimon.data.*;
import org.apache.paimon.data.serializer.InternalRowSerializer;
import org.apache.paimon.types.*;

public class HiveBucketOracle {
  static final Random R = new Random(Long.getLong("seed", 20261205L));
  static final int[] NS = {1, 2, 3, 7, 16, 100, 1024};
  static final String[] TYPES = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT",
      "DOUBLE", "STRING", "BYTES", "DATE", "TIME", "DECIMAL(10,2)", "DECIMAL(18,0)",
      "DECIMAL(38,10)", "DECIMAL(5,5)"};

  static String hex(byte[] b) {
    StringBuilder sb = new StringBuilder("x");
    for (byte x : b) sb.append(String.format("%02x", x & 0xff));
    return sb.toString();
  }

  static DataType type(String t) {
    switch (t) {
      case "BOOLEAN": return DataTypes.BOOLEAN();
      case "TINYINT": return DataTypes.TINYINT();
      case "SMALLINT": return DataTypes.SMALLINT();
      case "INT": return DataTypes.INT();
      case "BIGINT": return DataTypes.BIGINT();
      case "FLOAT": return DataTypes.FLOAT();
      case "DOUBLE": return DataTypes.DOUBLE();
      case "STRING": return DataTypes.STRING();
      case "BYTES": return DataTypes.BYTES();
      case "DATE": return DataTypes.DATE();
      case "TIME": return DataTypes.TIME();
      default: {
        String[] ps = t.substring(8, t.length() - 1).split(",");
        return DataTypes.DECIMAL(Integer.parseInt(ps[0]), Integer.parseInt(ps[1]));
      }
    }
  }

  static long pickLong() {
    long[] edges = {0, 1, -1, Long.MAX_VALUE, Long.MIN_VALUE, Integer.MAX_VALUE,
        Integer.MIN_VALUE, 1L << 32, -(1L << 32)};
    return R.nextInt(4) == 0 ? edges[R.nextInt(edges.length)] : R.nextLong() >> R.nextInt(63);
  }

  /** A random value of type t and its text. */
  static Object[] value(String t) {
    if (R.nextInt(10) == 0) return new Object[] {null, "N"};
    switch (t) {
      case "BOOLEAN": { boolean b = R.nextBoolean(); return new Object[] {b, b ? "1" : "0"}; }
      case "TINYINT": { byte v = (byte) pickLong(); return new Object[] {v, "" + v}; }
      case "SMALLINT": { short v = (short) pickLong(); return new Object[] {v, "" + v}; }
      case "INT": case "DATE": case "TIME": {
        int v = (int) pickLong();
        if (t.equals("TIME")) v = Math.floorMod(v, 86_400_000);
        return new Object[] {v, "" + v};
      }
      case "BIGINT": { long v = pickLong(); return new Object[] {v, "" + v}; }
      case "FLOAT": {
        float[] edges = {0.0f, -0.0f, Float.NaN, Float.POSITIVE_INFINITY, -1.5f, Float.MIN_VALUE};
        float v = R.nextInt(3) == 0 ? edges[R.nextInt(edges.length)]
            : Float.intBitsToFloat(R.nextInt());
        return new Object[] {v, Integer.toHexString(Float.floatToRawIntBits(v))};
      }
      case "DOUBLE": {
        double[] edges = {0.0, -0.0, Double.NaN, Double.NEGATIVE_INFINITY, 2.5, Double.MIN_VALUE};
        double v = R.nextInt(3) == 0 ? edges[R.nextInt(edges.length)]
            : Double.longBitsToDouble(R.nextLong());
        return new Object[] {v, Long.toHexString(Double.doubleToRawLongBits(v))};
      }
      case "STRING": {
        String[] pool = {"", "a", "paimon", "é中文🙂", "key-" + R.nextInt(1000), "\u0000x"};
        String s = pool[R.nextInt(pool.length)];
        return new Object[] {BinaryString.fromString(s),
            hex(s.getBytes(StandardCharsets.UTF_8))};
      }
      case "BYTES": {
        byte[] b = new byte[R.nextInt(9)];
        R.nextBytes(b);
        return new Object[] {b, hex(b)};
      }
      default: {
        DecimalType d = (DecimalType) type(t);
        int digits = 1 + R.nextInt(d.getPrecision());
        BigInteger unscaled = new BigInteger(digits * 3 + 1, R);
        if (unscaled.toString().length() > d.getPrecision())
          unscaled = unscaled.mod(BigInteger.TEN.pow(d.getPrecision()));
        if (R.nextInt(4) == 0) unscaled = unscaled.divide(BigInteger.TEN.pow(Math.min(3, digits))).multiply(BigInteger.TEN.pow(Math.min(3, digits)));
        if (R.nextBoolean()) unscaled = unscaled.negate();
        if (R.nextInt(8) == 0) unscaled = BigInteger.ZERO;
        Decimal v = Decimal.fromBigDecimal(new BigDecimal(unscaled, d.getScale()),
            d.getPrecision(), d.getScale());
        return new Object[] {v, unscaled.toString()};
      }
    }
  }

  public static void main(String[] args) {
    int n = Integer.getInteger("n", 200);
    for (int i = 0; i < n; i++) {
      int fields = 1 + R.nextInt(3);
      List<DataType> types = new ArrayList<>();
      List<String> names = new ArrayList<>(), texts = new ArrayList<>();
      Object[] values = new Object[fields];
      for (int f = 0; f < fields; f++) {
        String t = TYPES[R.nextInt(TYPES.length)];
        Object[] v = value(t);
        names.add(t); types.add(type(t)); values[f] = v[0]; texts.add((String) v[1]);
      }
      RowType rowType = RowType.of(types.toArray(new DataType[0]));
      BinaryRow row = new InternalRowSerializer(rowType).toBinaryRow(GenericRow.of(values)).copy();
      HiveBucketFunction fn = new HiveBucketFunction(rowType);
      StringBuilder b = new StringBuilder();
      for (int k : NS) b.append(b.length() == 0 ? "" : " ").append(fn.bucket(row, k));
      System.out.println(String.join(";", names) + "|" + String.join(";", texts) + "|" + b);
    }
  }
}
