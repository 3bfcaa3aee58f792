//! LZO1X blocks, for ORC files whose streams are LZO-compressed (ORC's `LZO` kind: each chunk
//! a raw LZO1X block, no header; Java's ORC writes and reads them with aircompressor). This
//! module decompresses; [`encode`] compresses with a subset of the same instructions.
//!
//! A block is a sequence of instructions, each a copy of earlier output (a "match") followed
//! by 0 to 3 literal bytes, or a run of literals. The first byte may open with literals: 18 to
//! 21 copy 1 to 4 literals, 22 and above copy `byte - 17`. Then each instruction byte `b`:
//!
//! - `b >= 64` (M2): copy `(b >> 5) + 1` bytes from distance `(next << 3) + ((b >> 2) & 7) + 1`.
//! - `32..=63` (M3): length `(b & 31) + 2`; a zero there means a long length, `33` plus 255
//!   per zero byte that follows plus the first non-zero byte. Then a little-endian 16-bit `d`:
//!   distance `(d >> 2) + 1`.
//! - `16..=31` (M4): length `(b & 7) + 2`, long as for M3 with `9` as the base; then `d`:
//!   distance `16384 + ((b & 8) << 11) + (d >> 2)`. A distance of exactly 16384 ends the block.
//! - `0..=15` depends on what the previous instruction left: after a match with no trailing
//!   literals, a literal run of `b + 3` bytes (long as above with `18` as the base); after one
//!   with 1 to 3 trailing literals, a 2-byte match at distance `(b >> 2) + (next << 2) + 1`;
//!   after a literal run of 4 or more, a 3-byte match at distance `(b >> 2) + (next << 2) +
//!   2049`.
//!
//! The low two bits of a match's last distance byte (`b` itself for the short forms) are the
//! number of literals that follow it. Every count is checked against what is left of the
//! input, every distance against what was written, and the output against the caller's limit
//! (ORC's block size), so a damaged block is an error, never a panic or an allocation past the
//! limit.

mod encode;

pub(crate) use encode::compress;

/// What the previous instruction left, which decides how a byte below 16 reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum After {
    /// A match with no literals after it (or the start of the block).
    Match,
    /// A match followed by 1 to 3 literals.
    FewLiterals,
    /// A run of 4 or more literals.
    LongRun,
}

struct Input<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Input<'_> {
    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .bytes
            .get(self.at)
            .ok_or("an LZO block ends inside an instruction")?;
        self.at += 1;
        Ok(b)
    }

    fn le16(&mut self) -> Result<usize, String> {
        let lo = usize::from(self.byte()?);
        Ok(lo | usize::from(self.byte()?) << 8)
    }

    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or("an LZO literal run goes past the end of its block")?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    /// A long length: `base` plus 255 per zero byte plus the first non-zero byte.
    fn long_length(&mut self, base: usize) -> Result<usize, String> {
        let mut n = base;
        loop {
            match self.byte()? {
                0 => n += 255,
                b => return Ok(n + usize::from(b)),
            }
        }
    }
}

/// Decompresses one LZO1X block, appending to `out` at most `limit` bytes.
pub(crate) fn decompress(block: &[u8], out: &mut Vec<u8>, limit: usize) -> Result<(), String> {
    let start = out.len();
    let mut input = Input {
        bytes: block,
        at: 0,
    };
    let literals = |out: &mut Vec<u8>, input: &mut Input<'_>, n: usize| {
        if out.len() - start + n > limit {
            return Err("an LZO block decompresses past the block size".to_string());
        }
        out.extend_from_slice(input.take(n)?);
        Ok(())
    };
    let mut after = After::Match;
    match block.first().copied() {
        Some(b @ 18..) => {
            input.at = 1;
            let n = usize::from(b) - 17;
            literals(out, &mut input, n)?;
            after = if n >= 4 {
                After::LongRun
            } else {
                After::FewLiterals
            };
        }
        Some(_) => {}
        // Nothing decompresses from nothing (aircompressor's reading, and our encoder's).
        None => return Ok(()),
    }
    loop {
        let b = input.byte()?;
        let (length, distance, trailing) = if b >= 64 {
            let distance = (usize::from(input.byte()?) << 3) + usize::from((b >> 2) & 7) + 1;
            (usize::from(b >> 5) + 1, distance, usize::from(b & 3))
        } else if b >= 32 {
            let length = match b & 31 {
                0 => input.long_length(33)?,
                n => usize::from(n) + 2,
            };
            let d = input.le16()?;
            (length, (d >> 2) + 1, d & 3)
        } else if b >= 16 {
            let length = match b & 7 {
                0 => input.long_length(9)?,
                n => usize::from(n) + 2,
            };
            let d = input.le16()?;
            let far = (usize::from(b & 8) << 11) + (d >> 2);
            if far == 0 {
                // The end marker.
                return if input.at == block.len() {
                    Ok(())
                } else {
                    Err("bytes after the end of an LZO block".to_string())
                };
            }
            (length, far + 16384, d & 3)
        } else {
            match after {
                After::Match => {
                    let n = match b {
                        0 => input.long_length(18)?,
                        n => usize::from(n) + 3,
                    };
                    literals(out, &mut input, n)?;
                    after = After::LongRun;
                    continue;
                }
                After::FewLiterals => {
                    let distance = usize::from(b >> 2) + (usize::from(input.byte()?) << 2) + 1;
                    (2, distance, usize::from(b & 3))
                }
                After::LongRun => {
                    let distance = usize::from(b >> 2) + (usize::from(input.byte()?) << 2) + 2049;
                    (3, distance, usize::from(b & 3))
                }
            }
        };
        let written = out.len() - start;
        if distance > written {
            return Err(format!(
                "an LZO match reaches {distance} bytes back, before the block's start"
            ));
        }
        if written + length > limit {
            return Err("an LZO block decompresses past the block size".to_string());
        }
        let from = out.len() - distance;
        // Byte by byte: a match may overlap what it writes.
        for i in 0..length {
            let v = out[from + i];
            out.push(v);
        }
        literals(out, &mut input, trailing)?;
        after = if trailing == 0 {
            After::Match
        } else {
            After::FewLiterals
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(block: &[u8], limit: usize) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        decompress(block, &mut out, limit).map(|()| out)
    }

    /// Blocks written by hand to the format above: literals only, each match form with and
    /// without trailing literals, overlapping copies, long lengths.
    #[test]
    fn every_instruction_decodes() {
        // 5 literals (first byte 22), then the end marker.
        assert_eq!(run(b"\x16hello\x11\x00\x00", 64).unwrap(), b"hello");
        // 3 literals (first byte 20): a 2-byte match at distance 3 with one trailing literal
        // (b = 0b0000_1001: distance bits 2, trailing 1 => distance 2 + 0 + 1 = 3), end.
        assert_eq!(run(b"\x14abc\x09\x00!\x11\x00\x00", 64).unwrap(), b"abcab!");
        // 4 literals, then M2: b = 0b011_000_00 copies 3 + ... (b >> 5) + 1 = 4 bytes from
        // distance (0 << 3) + 0 + 1 = 1: a run of the last byte, overlapping.
        assert_eq!(
            run(b"\x15abcd\x60\x00\x11\x00\x00", 64).unwrap(),
            b"abcddddd"
        );
        // M3 with a long length: 33 + 255 + 2 = 290 bytes from distance 1.
        let mut long = b"\x15abcd\x20\x00\x02\x00\x00\x11\x00\x00".to_vec();
        let got = run(&long, 1000).unwrap();
        assert_eq!(got.len(), 4 + 290);
        assert!(got[4..].iter().all(|&c| c == b'd'));
        // The same past a limit fails instead of growing.
        assert!(run(&long, 100).unwrap_err().contains("block size"));
        // A literal run after a match without trailing literals (b = 1: 4 literals).
        long = b"\x15abcd\x60\x00\x01wxyz\x11\x00\x00".to_vec();
        assert_eq!(run(&long, 64).unwrap(), b"abcdddddwxyz");
    }

    #[test]
    fn damaged_blocks_are_errors() {
        assert_eq!(run(b"", 0).unwrap(), b"");
        for bad in [
            &b"\x16hel"[..],             // literals past the end
            b"\x15abcd\x60\x09\x11\x00", // a match reaching before the start; no end
            b"\x15abcd\x20",             // an M3 cut short
            b"\x16hello\x11\x00\x00x",   // bytes after the end marker
            b"\x16hello",                // no end marker
        ] {
            assert!(run(bad, 1 << 20).is_err(), "{bad:?}");
        }
    }

    /// Arbitrary bytes end in an error or a bounded output, never a panic (a cheap stand-in
    /// for the `orc_data` fuzz target, which reaches this decoder through a file's codec).
    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut next = crate::test_rng::xorshift(0x9e37_79b9_7f4a_7c15u64);
        for _ in 0..20_000 {
            let len = (next() % 64) as usize;
            let mut block: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if next() % 2 == 0 {
                block.extend_from_slice(b"\x11\x00\x00");
            }
            if let Ok(out) = run(&block, 4096) {
                assert!(out.len() <= 4096);
            }
        }
    }
}
