//! LZO1X compression: the blocks of an ORC file we write with `LZO`, in the instruction set
//! the decoder above reads (its module documentation), so that an LZO table we compact stays
//! as small as LZO makes it.
//!
//! A greedy single pass, in the manner of LZO's fastest level: a hash of the next four bytes
//! finds the last position that began with them; a match (4 bytes or more, at most
//! [`MAX_DISTANCE`] back) is taken and extended as far as it goes, otherwise the byte becomes a
//! literal. Only the instruction forms every LZO1X decoder reads are written: the first
//! literals as the block's opening byte, M2 for short near matches, M3 and M4 for the rest, 1
//! to 3 literals after a match in that match's low distance bits, longer runs as their own
//! instruction, and the end marker. Never the 2- and 3-byte forms below 16 that depend on what
//! came before: they save a byte where they apply and cost a second reading of the state rules.
//!
//! The output may be longer than the input (incompressible data); the caller stores such a
//! chunk as it is, as ORC's framing provides.

/// The farthest an M4 match reaches: 16 384 plus 15 bits of distance, less the one value
/// (16 384 exactly) that is the end marker.
const MAX_DISTANCE: usize = 0xBFFF;

/// The shortest match taken: the hash covers four bytes.
const MIN_MATCH: usize = 4;

const HASH_BITS: u32 = 14;

fn hash(four: [u8; 4]) -> usize {
    (u32::from_le_bytes(four).wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize
}

/// Appends a long length: `rest` (at least 1) as 255 per zero byte plus a last non-zero byte.
fn long_length(out: &mut Vec<u8>, mut rest: usize) {
    debug_assert!(rest >= 1);
    while rest > 255 {
        out.push(0);
        rest -= 255;
    }
    out.push(rest as u8);
}

struct Block {
    out: Vec<u8>,
    /// The byte whose low two bits count the literals after the last match (the match's
    /// opening byte for M2, the first distance byte for M3 and M4); `None` before any match.
    count_at: Option<usize>,
}

impl Block {
    fn literals(&mut self, run: &[u8]) {
        let n = run.len();
        if n == 0 {
            return;
        }
        match self.count_at {
            // At the start: the opening byte `17 + n` takes up to 238 literals.
            None if n <= 238 => self.out.push(17 + n as u8),
            Some(at) if n <= 3 => self.out[at] |= n as u8,
            // A run of its own (after a match with no trailing literals, or at the start).
            _ if n <= 18 => self.out.push((n - 3) as u8),
            _ => {
                self.out.push(0);
                long_length(&mut self.out, n - 18);
            }
        }
        self.out.extend_from_slice(run);
    }

    fn copy(&mut self, length: usize, distance: usize) {
        debug_assert!(length >= MIN_MATCH && (1..=MAX_DISTANCE).contains(&distance));
        if length <= 8 && distance <= 2048 {
            // M2: length - 1 in the top three bits, distance - 1 split over both bytes.
            let d = distance - 1;
            self.count_at = Some(self.out.len());
            self.out
                .extend_from_slice(&[((length - 1) << 5 | (d & 7) << 2) as u8, (d >> 3) as u8]);
            return;
        }
        let d = if distance <= 16384 {
            // M3: length - 2 in five bits, or zero and a long length past 33.
            if length <= 33 {
                self.out.push(32 | (length - 2) as u8);
            } else {
                self.out.push(32);
                long_length(&mut self.out, length - 33);
            }
            distance - 1
        } else {
            // M4: the distance past 16 384, its 15th bit in the opening byte.
            let far = distance - 16384;
            let high = ((far >> 14) & 1) as u8;
            if length <= 9 {
                self.out.push(16 | high << 3 | (length - 2) as u8);
            } else {
                self.out.push(16 | high << 3);
                long_length(&mut self.out, length - 9);
            }
            far & 0x3FFF
        };
        self.count_at = Some(self.out.len());
        self.out.extend_from_slice(&((d << 2) as u16).to_le_bytes());
    }
}

/// Compresses `input` into one LZO1X block, end marker included; nothing into nothing, as
/// aircompressor reads an empty block (it refuses a lone end marker).
pub(crate) fn compress(input: &[u8]) -> Vec<u8> {
    if input.is_empty() {
        return Vec::new();
    }
    let mut block = Block {
        out: Vec::with_capacity(input.len() / 2 + 16),
        count_at: None,
    };
    // Position + 1 of the last four bytes with each hash; 0 for none.
    let mut last = vec![0usize; 1 << HASH_BITS];
    let (mut at, mut literals_from) = (0, 0);
    while let Some(four) = input.get(at..at + MIN_MATCH) {
        let four: [u8; 4] = [four[0], four[1], four[2], four[3]];
        let slot = &mut last[hash(four)];
        let candidate = slot.checked_sub(1);
        *slot = at + 1;
        let found =
            candidate.filter(|&c| at - c <= MAX_DISTANCE && input[c..c + MIN_MATCH] == four);
        let Some(from) = found else {
            at += 1;
            continue;
        };
        let length = MIN_MATCH
            + input[at + MIN_MATCH..]
                .iter()
                .zip(&input[from + MIN_MATCH..])
                .take_while(|(a, b)| a == b)
                .count();
        block.literals(&input[literals_from..at]);
        block.copy(length, at - from);
        at += length;
        literals_from = at;
    }
    block.literals(&input[literals_from..]);
    // The end marker: an M4 of length 3 at distance exactly 16 384.
    block.out.extend_from_slice(&[0x11, 0, 0]);
    block.out
}

#[cfg(test)]
mod tests {
    use super::super::decompress;
    use super::*;

    fn round_trip(input: &[u8]) -> Vec<u8> {
        let block = compress(input);
        let mut out = Vec::new();
        decompress(&block, &mut out, input.len().max(1))
            .unwrap_or_else(|e| panic!("{e} (input of {} bytes)", input.len()));
        assert_eq!(out, input, "input of {} bytes", input.len());
        block
    }

    fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut next = crate::test_rng::xorshift(seed);
        (0..n).map(|_| next() as u8).collect()
    }

    /// Inputs that reach each instruction form and each length boundary: literals at the start
    /// up to the opening byte's 238 and past it, 1 to 3 literals after a match, runs of 4 to 18
    /// and longer; matches at every length edge (8/9 between M2 and M3 or M4's short lengths,
    /// 33 and 34 for M3's long length) and distance edge (2 048, 16 384, the far end); then
    /// text, runs and data of every alphabet size.
    fn inputs() -> Vec<Vec<u8>> {
        let mut all: Vec<Vec<u8>> = (0..300)
            .map(|n| (0..n).map(|i| (i * 7 + i / 3) as u8).collect())
            .collect();
        for distance in [
            4, 5, 2047, 2048, 2049, 16383, 16384, 16385, 30000, 49150, 49151,
        ] {
            for length in [4, 5, 8, 9, 10, 33, 34, 35, 290, 1000] {
                for gap in [0, 1, 2, 3, 4, 18, 19, 300] {
                    let mut input = noise(distance, distance as u64);
                    input.extend(noise(gap, 99));
                    let back = input.len() - distance;
                    for i in 0..length {
                        let v = input[back + i];
                        input.push(v);
                    }
                    input.extend(noise(gap, 7));
                    all.push(input);
                }
            }
        }
        // Beyond the window: found again only as literals.
        let far = noise(60_000, 3);
        all.push([far.clone(), far].concat());
        all.push(
            (0..50_000)
                .flat_map(|i: u32| format!("orc_lzo-{}-{} ", i % 97, i % 13).into_bytes())
                .collect(),
        );
        all.push(vec![0u8; 256 * 1024]);
        let mut next = crate::test_rng::xorshift(0x5EED);
        for _ in 0..300 {
            let len = (next() % 5000) as usize;
            let alphabet = 1 + next() % 256;
            all.push((0..len).map(|_| (next() % alphabet) as u8).collect());
        }
        all
    }

    #[test]
    fn every_form_round_trips() {
        for input in inputs() {
            let block = round_trip(&input);
            // Literal runs cost one byte per 255 of them, plus the run's opening and the end.
            assert!(block.len() <= input.len() + input.len() / 255 + 8);
        }
    }

    /// Repetitive data shrinks: what ORC streams mostly are.
    #[test]
    fn it_compresses_what_repeats() {
        let text: Vec<u8> = (0..50_000)
            .flat_map(|i: u32| format!("orc_lzo-{}-{} ", i % 97, i % 13).into_bytes())
            .collect();
        let block = round_trip(&text);
        assert!(
            block.len() * 4 < text.len(),
            "{} of {}",
            block.len(),
            text.len()
        );
        assert!(round_trip(&vec![0u8; 256 * 1024]).len() < 2000);
    }

    /// Writes every input of [`inputs`] and its block for Java's decoder to check
    /// (`tests/java/lzo/LzoCheck.java`, run by CI's stage 55):
    /// `LZO_BLOCKS_OUT=<file> cargo test --release --lib lzo -- --ignored`.
    #[test]
    #[ignore = "writes blocks for the Java check"]
    fn write_blocks_for_java() {
        let Ok(path) = std::env::var("LZO_BLOCKS_OUT") else {
            return;
        };
        let mut file = Vec::new();
        for input in inputs() {
            let block = round_trip(&input);
            for bytes in [&input, &block] {
                file.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
                file.extend_from_slice(bytes);
            }
        }
        std::fs::write(&path, file).expect("write the blocks");
    }
}
