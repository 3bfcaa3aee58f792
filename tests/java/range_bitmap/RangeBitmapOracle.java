// Oracle for paimon-compact's range-bitmap writer: builds each vector's index with Paimon Java
// HEAD's RangeBitmap writer (the logic of RangeBitmapFileIndex.Writer), prints it as hex,
// compares it with the hex the Rust side wrote (a trailing "=<hex>" field), and checks HEAD's
// reader against brute force.
//
// Input, one vector per line, tab separated:
//   name  TYPE  chunk-size|-  value...  [=rust-hex]
// TYPE: BOOLEAN TINYINT SMALLINT INT DATE TIME BIGINT FLOAT DOUBLE DECIMAL(p,s) TIMESTAMP(p)
//       TIMESTAMP_LTZ(p) CHAR(n) VARCHAR(n) STRING
// value: N (null); integers and unscaled decimals in decimal; timestamps as epoch millis
//        (p <= 3) or micros (p > 3); FLOAT/DOUBLE as hex IEEE bits; booleans 0/1; strings as
//        x<hex of UTF-8>.
// Output: per vector "name<TAB>OK|MISMATCH|JAVA<TAB>length<TAB>hex"; then a summary.

import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.fileindex.rangebitmap.RangeBitmap;
import org.apache.paimon.fileindex.rangebitmap.dictionary.chunked.KeyFactory;
import org.apache.paimon.fs.ByteArraySeekableStream;
import org.apache.paimon.options.MemorySize;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.TimestampType;
import org.apache.paimon.types.LocalZonedTimestampType;
import org.apache.paimon.utils.RoaringBitmap32;

import java.io.BufferedReader;
import java.io.FileReader;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.function.Function;

public class RangeBitmapOracle {
    static DataType type(String t) {
        int p = -1, s = -1;
        String base = t;
        if (t.contains("(")) {
            base = t.substring(0, t.indexOf('('));
            String[] a = t.substring(t.indexOf('(') + 1, t.length() - 1).split(",");
            p = Integer.parseInt(a[0].trim());
            if (a.length > 1) s = Integer.parseInt(a[1].trim());
        }
        switch (base) {
            case "BOOLEAN": return DataTypes.BOOLEAN();
            case "TINYINT": return DataTypes.TINYINT();
            case "SMALLINT": return DataTypes.SMALLINT();
            case "INT": return DataTypes.INT();
            case "DATE": return DataTypes.DATE();
            case "TIME": return DataTypes.TIME();
            case "BIGINT": return DataTypes.BIGINT();
            case "FLOAT": return DataTypes.FLOAT();
            case "DOUBLE": return DataTypes.DOUBLE();
            case "DECIMAL": return DataTypes.DECIMAL(p, s);
            case "TIMESTAMP": return DataTypes.TIMESTAMP(p);
            case "TIMESTAMP_LTZ": return DataTypes.TIMESTAMP_WITH_LOCAL_TIME_ZONE(p);
            case "CHAR": return DataTypes.CHAR(p);
            case "VARCHAR": return DataTypes.VARCHAR(p);
            case "STRING": return DataTypes.STRING();
            default: throw new IllegalArgumentException(t);
        }
    }

    static byte[] unhex(String h) {
        byte[] b = new byte[h.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
        return b;
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x));
        return sb.toString();
    }

    /** A value as Paimon's InternalRow hands it to the index writer. */
    static Object value(DataType dt, String v) {
        if (v.equals("N")) return null;
        String base = dt.getTypeRoot().name();
        switch (base) {
            case "BOOLEAN": return v.equals("1");
            case "TINYINT": return Byte.parseByte(v);
            case "SMALLINT": return Short.parseShort(v);
            case "INTEGER": case "DATE": case "TIME_WITHOUT_TIME_ZONE": return Integer.parseInt(v);
            case "BIGINT": return Long.parseLong(v);
            case "FLOAT": return Float.intBitsToFloat((int) Long.parseLong(v, 16));
            case "DOUBLE": return Double.longBitsToDouble(Long.parseUnsignedLong(v, 16));
            case "DECIMAL": {
                DecimalType d = (DecimalType) dt;
                return Decimal.fromUnscaledLong(Long.parseLong(v), d.getPrecision(), d.getScale());
            }
            case "TIMESTAMP_WITHOUT_TIME_ZONE":
            case "TIMESTAMP_WITH_LOCAL_TIME_ZONE": {
                int p = dt instanceof TimestampType ? ((TimestampType) dt).getPrecision()
                        : ((LocalZonedTimestampType) dt).getPrecision();
                long x = Long.parseLong(v);
                return p <= 3 ? Timestamp.fromEpochMillis(x) : Timestamp.fromMicros(x);
            }
            default: return BinaryString.fromBytes(unhex(v.substring(1)));
        }
    }

    static int failures = 0;

    static void check(String name, String what, RoaringBitmap32 got, Set<Integer> want) {
        Set<Integer> g = new TreeSet<>();
        Iterator<Integer> it = got.iterator();
        while (it.hasNext()) g.add(it.next());
        if (!g.equals(new TreeSet<>(want))) {
            failures++;
            System.err.println(name + ": reader " + what + " gave " + g + " want " + new TreeSet<>(want));
        }
    }

    /** Probe literals around the distinct values. */
    static List<Object> probes(DataType dt, List<Object> distinct) {
        List<Object> out = new ArrayList<>(distinct);
        String base = dt.getTypeRoot().name();
        for (Object o : distinct) {
            switch (base) {
                case "TINYINT": out.add((byte) ((Byte) o + 1)); out.add((byte) ((Byte) o - 1)); break;
                case "SMALLINT": out.add((short) ((Short) o + 1)); out.add((short) ((Short) o - 1)); break;
                case "INTEGER": case "DATE": case "TIME_WITHOUT_TIME_ZONE": out.add((Integer) o + 1); out.add((Integer) o - 1); break;
                case "BIGINT": out.add((Long) o + 1); out.add((Long) o - 1); break;
                case "FLOAT": out.add(Math.nextUp((Float) o)); out.add(Math.nextDown((Float) o)); break;
                case "DOUBLE": out.add(Math.nextUp((Double) o)); out.add(Math.nextDown((Double) o)); break;
                case "CHAR": case "VARCHAR": {
                    BinaryString b = (BinaryString) o;
                    out.add(BinaryString.fromString(b.toString() + "\u0000"));
                    out.add(BinaryString.fromString(b.toString() + "zz"));
                    if (b.getSizeInBytes() > 0) out.add(BinaryString.fromBytes(Arrays.copyOf(b.toBytes(), b.getSizeInBytes() - 1)));
                    break;
                }
                default: break;
            }
        }
        switch (base) {
            case "BOOLEAN": out.add(true); out.add(false); break;
            case "FLOAT": out.add(Float.NaN); out.add(-0.0f); out.add(0.0f); out.add(Float.NEGATIVE_INFINITY); out.add(Float.POSITIVE_INFINITY); break;
            case "DOUBLE": out.add(Double.NaN); out.add(-0.0); out.add(0.0); out.add(Double.NEGATIVE_INFINITY); out.add(Double.POSITIVE_INFINITY); break;
            case "INTEGER": case "DATE": case "TIME_WITHOUT_TIME_ZONE": out.add(Integer.MIN_VALUE); out.add(Integer.MAX_VALUE); break;
            case "BIGINT": out.add(Long.MIN_VALUE); out.add(Long.MAX_VALUE); break;
            case "CHAR": case "VARCHAR": out.add(BinaryString.fromString("")); out.add(BinaryString.fromString("\uffff")); break;
            default: break;
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        int ok = 0, mismatched = 0, javaOnly = 0, lines = 0;
        try (BufferedReader r = new BufferedReader(new FileReader(args[0]))) {
            String line;
            while ((line = r.readLine()) != null) {
                if (line.isEmpty() || line.startsWith("#")) continue;
                lines++;
                String[] f = line.split("\t", -1);
                String name = f[0];
                DataType dt = type(f[1]);
                String chunkOpt = f[2].equals("-") ? null : f[2];
                String rustHex = null;
                int end = f.length;
                if (end > 3 && f[end - 1].startsWith("=")) {
                    rustHex = f[end - 1].substring(1);
                    end--;
                }
                // As RangeBitmapFileIndex.Writer (HEAD) does.
                KeyFactory factory = KeyFactory.create(dt);
                String chunkSize = chunkOpt != null ? chunkOpt : factory.defaultChunkSize();
                Function<Object, Object> converter = factory.createConverter();
                RangeBitmap.Appender appender =
                        new RangeBitmap.Appender(factory, (int) MemorySize.parse(chunkSize).getBytes());
                List<Object> keys = new ArrayList<>();
                for (int i = 3; i < end; i++) {
                    Object k = converter.apply(value(dt, f[i]));
                    keys.add(k);
                    appender.append(k);
                }
                byte[] bytes = appender.serialize();
                String javaHex = hex(bytes);
                String verdict = rustHex == null ? "JAVA" : rustHex.equals(javaHex) ? "OK" : "MISMATCH";
                if (rustHex == null) javaOnly++; else if (verdict.equals("OK")) ok++; else mismatched++;
                System.out.println(name + "\t" + verdict + "\t" + bytes.length + "\t" + javaHex);
                if (verdict.equals("MISMATCH")) System.out.println(name + "\tRUST\t" + rustHex.length() / 2 + "\t" + rustHex);

                // HEAD's reader against brute force.
                Comparator<Object> cmp = factory.createComparator();
                TreeSet<Object> distinctSet = new TreeSet<>(cmp);
                for (Object k : keys) if (k != null) distinctSet.add(k);
                List<Object> distinct = new ArrayList<>(distinctSet);
                Set<Integer> nulls = new HashSet<>(), notNulls = new HashSet<>();
                for (int i = 0; i < keys.size(); i++) (keys.get(i) == null ? nulls : notNulls).add(i);
                RangeBitmap rb = new RangeBitmap(new ByteArraySeekableStream(bytes), 0, factory);
                check(name, "isNull", rb.isNull(), nulls);
                check(name, "isNotNull", rb.isNotNull(), notNulls);
                // (HEAD's RangeBitmap.get(int) is not checked: its dictionary lookup passes a boxed
                // Integer and so resolves to find(Object), a reader-side bug.)
                List<Object> all = probes(dt, distinct);
                // At most ~80 probes per vector (evenly spaced, plus the last few specials).
                List<Object> ps = new ArrayList<>();
                int step = Math.max(1, all.size() / 80);
                for (int i = 0; i < all.size(); i += step) ps.add(all.get(i));
                for (int i = Math.max(0, all.size() - 5); i < all.size(); i++) ps.add(all.get(i));
                for (int pi = 0; pi < ps.size() && !keys.isEmpty(); pi++) {
                    Object p = ps.get(pi);
                    Set<Integer> eq = new HashSet<>(), lt = new HashSet<>(), lte = new HashSet<>(), gt = new HashSet<>(), gte = new HashSet<>();
                    for (int i = 0; i < keys.size(); i++) {
                        Object k = keys.get(i);
                        if (k == null) continue;
                        int c = cmp.compare(k, p);
                        if (c == 0) eq.add(i);
                        if (c < 0) lt.add(i);
                        if (c <= 0) lte.add(i);
                        if (c > 0) gt.add(i);
                        if (c >= 0) gte.add(i);
                    }
                    check(name, "eq " + p, rb.eq(p), eq);
                    check(name, "lt " + p, rb.lt(p), lt);
                    check(name, "lte " + p, rb.lte(p), lte);
                    check(name, "gt " + p, rb.gt(p), gt);
                    check(name, "gte " + p, rb.gte(p), gte);
                    Set<Integer> neq = new HashSet<>(notNulls);
                    neq.removeAll(eq);
                    check(name, "neq " + p, rb.neq(p), neq);
                    Object q = ps.get((pi * 7 + 3) % ps.size());
                    Set<Integer> in = new HashSet<>(eq);
                    for (int i = 0; i < keys.size(); i++) if (keys.get(i) != null && cmp.compare(keys.get(i), q) == 0) in.add(i);
                    check(name, "in " + p + "," + q, rb.in(Arrays.asList(p, q)), in);
                }
            }
        }
        System.out.println("# vectors " + lines + ": " + ok + " match, " + mismatched + " differ, " + javaOnly + " java only; reader failures " + failures);
        if (mismatched > 0 || failures > 0) System.exit(1);
    }
}
