// Differential check of our LZO encoder (src/orc_io/lzo/encode.rs) against the decoder Java's
// ORC reads LZO streams with (aircompressor, shaded in the Paimon 1.0 jar): every block our
// encoder made of an input must decompress, with Java's decoder, to exactly that input.
// Input: the file the ignored Rust test writes, records of (BE u32 length, original bytes,
// BE u32 length, our block). Prints "N equal, M differ" and exits 1 if any differ; also the
// size of our blocks beside the size of aircompressor's own blocks of the same inputs.
// CI (.ci/stages/55-java.sh):
//   LZO_BLOCKS_OUT=<file> cargo test --release -p paimon-compact --lib lzo -- --ignored
//   java -cp <jar>:<classes> LzoCheck <file>
import java.io.*;
import java.util.Arrays;
import org.apache.paimon.shade.io.airlift.compress.lzo.LzoCompressor;
import org.apache.paimon.shade.io.airlift.compress.lzo.LzoDecompressor;

public class LzoCheck {
  public static void main(String[] args) throws IOException {
    int equal = 0, differ = 0;
    long bytes = 0, ours = 0, theirs = 0;
    // The same over the inputs that compress (repetitive ones: text, runs, small alphabets).
    long packedIn = 0, packedOurs = 0, packedTheirs = 0;
    try (DataInputStream in = new DataInputStream(
        new BufferedInputStream(new FileInputStream(args[0])))) {
      while (in.available() > 0) {
        byte[] original = new byte[in.readInt()];
        in.readFully(original);
        byte[] block = new byte[in.readInt()];
        in.readFully(block);
        ours += block.length;
        LzoCompressor java = new LzoCompressor();
        byte[] packed = new byte[java.maxCompressedLength(original.length)];
        int theirLength = java.compress(original, 0, original.length, packed, 0, packed.length);
        theirs += theirLength;
        if (block.length * 10L < original.length * 9L) {
          packedIn += original.length;
          packedOurs += block.length;
          packedTheirs += theirLength;
        }
        // Room to spare: a decoder that wrote past the input's length must be seen.
        byte[] out = new byte[original.length + 64];
        int n;
        try {
          n = new LzoDecompressor().decompress(block, 0, block.length, out, 0, out.length);
        } catch (RuntimeException e) {
          n = -1;
        }
        if (n == original.length && Arrays.equals(Arrays.copyOf(out, n), original)) {
          equal++;
          bytes += n;
        } else {
          differ++;
          if (differ <= 10) {
            System.out.println("differs: input of " + original.length + " bytes, Java gave " + n);
          }
        }
      }
    }
    System.out.println(equal + " equal (" + bytes + " bytes), " + differ + " differ; our blocks "
        + ours + " bytes, aircompressor's " + theirs + "; of the " + packedIn
        + " bytes that compress by 10% or more: ours " + packedOurs + ", aircompressor's "
        + packedTheirs);
    if (differ > 0 || equal == 0) System.exit(1);
  }
}
