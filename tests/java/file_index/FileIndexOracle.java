// Oracle for paimon-compact's `bsi` and `bitmap` file-index writers: builds each vector's index
// with Paimon Java HEAD's own writers (BitSliceIndexBitmapFileIndex and BitmapFileIndex, through
// their FileIndexWriter), prints it as hex, compares it with the hex the Rust side wrote (a
// trailing "=<hex>" field), and checks HEAD's readers on those bytes against brute force.
//
// Input, one vector per line, tab separated:
//   kind  name  TYPE  option  value...  [=rust-hex]
// kind: bsi | bitmap. option: for bitmap "v1" (version 1), "-" (version 2, default block size)
//       or an index-block-size such as "64b" (version 2); for bsi always "-".
// TYPE: BOOLEAN TINYINT SMALLINT INT DATE TIME BIGINT FLOAT DOUBLE DECIMAL(p,s) TIMESTAMP(p)
//       TIMESTAMP_LTZ(p) CHAR(n) VARCHAR(n) STRING
// value: N (null); integers and unscaled decimals in decimal; timestamps as epoch millis
//        (p <= 3) or micros (p > 3); FLOAT/DOUBLE as hex IEEE bits; booleans 0/1; strings as
//        x<hex of UTF-8>.
// Output: per vector "name<TAB>OK|MISMATCH|JAVA<TAB>length<TAB>hex"; then a summary.

import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.fileindex.FileIndexReader;
import org.apache.paimon.fileindex.FileIndexResult;
import org.apache.paimon.fileindex.FileIndexWriter;
import org.apache.paimon.fileindex.FileIndexer;
import org.apache.paimon.fileindex.bitmap.BitmapFileIndex;
import org.apache.paimon.fileindex.bitmap.BitmapIndexResult;
import org.apache.paimon.fileindex.bsi.BitSliceIndexBitmapFileIndex;
import org.apache.paimon.fs.ByteArraySeekableStream;
import org.apache.paimon.options.Options;
import org.apache.paimon.predicate.FieldRef;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.LocalZonedTimestampType;
import org.apache.paimon.types.TimestampType;
import org.apache.paimon.utils.RoaringBitmap32;

import java.io.BufferedReader;
import java.io.FileReader;
import java.util.*;

public class FileIndexOracle {
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

    /** A value as Paimon's InternalRow hands it to an index writer. */
    static Object value(DataType dt, String v) {
        if (v.equals("N")) return null;
        switch (dt.getTypeRoot().name()) {
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

    /** The integer a bsi index keeps for a value (for brute force only). */
    static long bsiLong(DataType dt, String v) {
        switch (dt.getTypeRoot().name()) {
            case "DECIMAL": case "TINYINT": case "SMALLINT": case "INTEGER": case "DATE":
            case "TIME_WITHOUT_TIME_ZONE": case "BIGINT":
            case "TIMESTAMP_WITHOUT_TIME_ZONE": case "TIMESTAMP_WITH_LOCAL_TIME_ZONE":
                return Long.parseLong(v);
            default: throw new IllegalArgumentException(dt.toString());
        }
    }

    /** A literal of the column's type holding the integer x (bsi probes). */
    static Object bsiLiteral(DataType dt, long x) {
        switch (dt.getTypeRoot().name()) {
            case "TINYINT": return (byte) x;
            case "SMALLINT": return (short) x;
            case "INTEGER": case "DATE": case "TIME_WITHOUT_TIME_ZONE": return (int) x;
            default: return value(dt, Long.toString(x));
        }
    }

    static boolean fits(DataType dt, long x) {
        switch (dt.getTypeRoot().name()) {
            case "TINYINT": return x == (byte) x;
            case "SMALLINT": return x == (short) x;
            case "INTEGER": case "DATE": case "TIME_WITHOUT_TIME_ZONE": return x == (int) x;
            default: return x != Long.MIN_VALUE;
        }
    }

    static int failures = 0;

    static void check(String name, String what, FileIndexResult r, Set<Integer> want) {
        RoaringBitmap32 got = ((BitmapIndexResult) r).get();
        Set<Integer> g = new TreeSet<>();
        Iterator<Integer> it = got.iterator();
        while (it.hasNext()) g.add(it.next());
        if (!g.equals(new TreeSet<>(want))) {
            failures++;
            System.err.println(name + ": reader " + what + " gave " + g + " want " + new TreeSet<>(want));
        }
    }

    public static void main(String[] args) throws Exception {
        int ok = 0, mismatched = 0, javaOnly = 0, lines = 0;
        try (BufferedReader r = new BufferedReader(new FileReader(args[0]))) {
            String line;
            while ((line = r.readLine()) != null) {
                if (line.isEmpty() || line.startsWith("#")) continue;
                lines++;
                String[] f = line.split("\t", -1);
                String kind = f[0], name = f[1], opt = f[3];
                DataType dt = type(f[2]);
                String rustHex = null;
                int end = f.length;
                if (end > 4 && f[end - 1].startsWith("=")) {
                    rustHex = f[end - 1].substring(1);
                    end--;
                }
                List<String> raw = new ArrayList<>(Arrays.asList(f).subList(4, end));
                FileIndexer indexer;
                if (kind.equals("bsi")) {
                    indexer = new BitSliceIndexBitmapFileIndex(dt);
                } else {
                    Options o = new Options();
                    if (opt.equals("v1")) {
                        o.setString(BitmapFileIndex.VERSION, "1");
                    } else {
                        o.setString(BitmapFileIndex.VERSION, "2");
                        if (!opt.equals("-")) o.setString(BitmapFileIndex.INDEX_BLOCK_SIZE, opt);
                    }
                    indexer = new BitmapFileIndex(dt, o);
                }
                FileIndexWriter w = indexer.createWriter();
                for (String v : raw) w.write(value(dt, v));
                byte[] bytes = w.serializedBytes();
                String javaHex = hex(bytes);
                String verdict = rustHex == null ? "JAVA" : rustHex.equals(javaHex) ? "OK" : "MISMATCH";
                if (rustHex == null) javaOnly++; else if (verdict.equals("OK")) ok++; else mismatched++;
                System.out.println(name + "\t" + verdict + "\t" + bytes.length + "\t" + javaHex);
                if (verdict.equals("MISMATCH")) System.out.println(name + "\tRUST\t" + rustHex.length() / 2 + "\t" + rustHex);

                // HEAD's reader on HEAD's bytes, against brute force.
                FieldRef ref = new FieldRef(0, "c", dt);
                FileIndexReader reader =
                        indexer.createReader(new ByteArraySeekableStream(bytes), 0, bytes.length);
                Set<Integer> nulls = new HashSet<>(), notNulls = new HashSet<>();
                for (int i = 0; i < raw.size(); i++) (raw.get(i).equals("N") ? nulls : notNulls).add(i);
                check(name, "isNull", reader.visitIsNull(ref), nulls);
                check(name, "isNotNull", reader.visitIsNotNull(ref), notNulls);
                if (kind.equals("bsi")) {
                    TreeSet<Long> probes = new TreeSet<>();
                    for (String v : raw) {
                        if (v.equals("N")) continue;
                        long x = bsiLong(dt, v);
                        probes.add(x);
                        if (x != Long.MAX_VALUE) probes.add(x + 1);
                        if (x != Long.MIN_VALUE + 1) probes.add(x - 1);
                    }
                    probes.add(0L);
                    List<Long> ps = new ArrayList<>(probes);
                    int step = Math.max(1, ps.size() / 60);
                    for (int pi = 0; pi < ps.size(); pi += step) {
                        long p = ps.get(pi);
                        if (!fits(dt, p)) continue;
                        Object lit = bsiLiteral(dt, p);
                        Set<Integer> eq = new HashSet<>(), lt = new HashSet<>(), gte = new HashSet<>();
                        for (int i = 0; i < raw.size(); i++) {
                            if (raw.get(i).equals("N")) continue;
                            long x = bsiLong(dt, raw.get(i));
                            if (x == p) eq.add(i);
                            if (x < p) lt.add(i); else gte.add(i);
                        }
                        check(name, "eq " + p, reader.visitEqual(ref, lit), eq);
                        check(name, "lt " + p, reader.visitLessThan(ref, lit), lt);
                        check(name, "gte " + p, reader.visitGreaterOrEqual(ref, lit), gte);
                    }
                } else {
                    // Every distinct value (canonical: the writer's value mapping decides).
                    Map<String, Set<Integer>> rows = new LinkedHashMap<>();
                    for (int i = 0; i < raw.size(); i++) {
                        if (raw.get(i).equals("N")) continue;
                        rows.computeIfAbsent(canonical(dt, raw.get(i)), k -> new HashSet<>()).add(i);
                    }
                    for (Map.Entry<String, Set<Integer>> e : rows.entrySet()) {
                        Object lit = value(dt, e.getKey());
                        Set<Integer> want = new HashSet<>();
                        for (int i = 0; i < raw.size(); i++) {
                            if (!raw.get(i).equals("N") && canonical(dt, raw.get(i)).equals(e.getKey())) want.add(i);
                        }
                        check(name, "eq " + e.getKey(), reader.visitEqual(ref, lit), want);
                    }
                }
            }
        }
        System.out.println("# vectors " + lines + ": " + ok + " match, " + mismatched + " differ, " + javaOnly + " java only; reader failures " + failures);
        if (mismatched > 0 || failures > 0) System.exit(1);
    }

    /** A value's notation with every NaN as one (the bitmap writer's Float/Double keys). */
    static String canonical(DataType dt, String v) {
        switch (dt.getTypeRoot().name()) {
            case "FLOAT": {
                float x = Float.intBitsToFloat((int) Long.parseLong(v, 16));
                return String.format("%08x", Float.floatToIntBits(x));
            }
            case "DOUBLE": {
                double x = Double.longBitsToDouble(Long.parseUnsignedLong(v, 16));
                return String.format("%016x", Double.doubleToLongBits(x));
            }
            default: return v;
        }
    }
}
