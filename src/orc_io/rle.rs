//! The run-length encodings of ORC data streams (ORCv1 specification): byte RLE, boolean
//! streams, integer RLE version 1 and integer RLE version 2, plus the varint helpers they share.
//!
//! Every stream arrives decompressed as one contiguous slice, and the caller knows how many
//! values it needs, so the decoders take `(input, count)` and ignore any bytes after the run
//! that holds the last wanted value. Input is untrusted:
//! * nothing here panics or overflows on any input; value arithmetic wraps like Java's `long`,
//!   because that is what the reference reader does;
//! * a decoder reserves at most `count` values, and fewer when the input is too short to hold
//!   that many, so a corrupt row count cannot make it allocate memory the data does not back;
//! * on error a decoder returns [`Error::corrupt`] and leaves `out` at its original length.
//!
//! Unsigned integer streams (lengths, dictionary ids, nanoseconds) may carry values up to
//! 2^64-1; they are returned and accepted as `i64` bit patterns (`v as u64` recovers them).

use crate::error::{Error, Result};

/// Longest run of an RLE v2 DIRECT, PATCHED_BASE or DELTA group (9-bit length field + 1).
const V2_MAX_RUN: usize = 512;
/// Shortest run any of the encodings writes as a repetition.
const MIN_REPEAT: usize = 3;
/// Longest RLE v2 SHORT_REPEAT run (3-bit length field + 3).
const SHORT_REPEAT_MAX: usize = 10;
/// Longest byte RLE / RLE v1 repetition (7-bit header + 3).
const V1_MAX_RUN: usize = 130;
/// Longest byte RLE / RLE v1 literal group.
const V1_MAX_LITERALS: usize = 128;

/// The bit widths RLE v2 can express, indexed by their 5-bit code.
const WIDTHS: [u32; 32] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 26, 28,
    30, 32, 40, 48, 56, 64,
];

const BYTE_RLE: &str = "byte RLE";
const INT_V1: &str = "integer RLE v1";
const INT_V2: &str = "integer RLE v2";

fn corrupt(encoding: &str, why: impl std::fmt::Display) -> Error {
    Error::corrupt(None, format!("ORC {encoding}: {why}"))
}

/// The error for a stream that ends before the caller's `count` values were decoded.
fn ended_early(encoding: &str, done: usize, count: usize) -> Error {
    corrupt(
        encoding,
        format!("stream ends after {done} of {count} values"),
    )
}

/// Reserves room for `count` values, but no more than `per_byte` values per input byte (the
/// encoding's best compression ratio), so an absurd `count` over a short stream costs nothing.
fn reserve_bounded<T>(out: &mut Vec<T>, count: usize, input_len: usize, per_byte: usize) {
    out.reserve(count.min(input_len.saturating_mul(per_byte)));
}

/// Runs a decoder and restores `out` to its original length if it fails.
fn all_or_nothing<T, R>(
    out: &mut Vec<T>,
    decode: impl FnOnce(&mut Vec<T>) -> Result<R>,
) -> Result<R> {
    let start = out.len();
    let result = decode(out);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn next_byte(input: &[u8], pos: &mut usize, encoding: &str) -> Result<u8> {
    let byte = *input
        .get(*pos)
        .ok_or_else(|| corrupt(encoding, "stream truncated inside a run"))?;
    *pos += 1;
    Ok(byte)
}

fn next_bytes<'a>(input: &'a [u8], pos: &mut usize, n: usize, encoding: &str) -> Result<&'a [u8]> {
    let bytes = input
        .get(*pos..)
        .and_then(|rest| rest.get(..n))
        .ok_or_else(|| corrupt(encoding, "stream truncated inside a run"))?;
    *pos += n;
    Ok(bytes)
}

/// Reads an unsigned base-128 varint (little-endian 7-bit groups, high bit = more follow).
/// At most 10 bytes are read; bits past the 64th in the tenth byte are dropped, as the Java
/// reader does.
pub(crate) fn read_uvarint(input: &[u8], pos: &mut usize) -> Result<u64> {
    crate::varint::read_u64(input, pos).ok_or_else(|| {
        corrupt(
            "varint",
            "stream ends inside a varint, or it is longer than 10 bytes",
        )
    })
}

pub(crate) use crate::varint::{unzigzag, write_u64 as write_uvarint, zigzag};

/// Decodes byte RLE: a header `h` in 0..=127 is a run of `h + 3` copies of the next byte; a
/// negative header (as `i8`) announces `-h` literal bytes. Appends exactly `count` bytes and
/// returns how many input bytes the runs it used occupy (a run may be used only in part).
pub(crate) fn decode_bytes(input: &[u8], count: usize, out: &mut Vec<u8>) -> Result<usize> {
    all_or_nothing(out, |out| {
        reserve_bounded(out, count, input.len(), V1_MAX_RUN / 2);
        let mut pos = 0;
        let mut left = count;
        while left > 0 {
            let header = *input
                .get(pos)
                .ok_or_else(|| ended_early(BYTE_RLE, count - left, count))?;
            pos += 1;
            if header < 0x80 {
                let run = usize::from(header) + MIN_REPEAT;
                let value = next_byte(input, &mut pos, BYTE_RLE)?;
                let take = run.min(left);
                out.resize(out.len() + take, value);
                left -= take;
            } else {
                let literals = next_bytes(input, &mut pos, 256 - usize::from(header), BYTE_RLE)?;
                let take = literals.len().min(left);
                out.extend_from_slice(&literals[..take]);
                left -= take;
            }
        }
        Ok(pos)
    })
}

/// Decodes a boolean stream: bits, most significant first, packed into bytes that are then
/// byte-RLE encoded. Appends exactly `count` values.
pub(crate) fn decode_bools(input: &[u8], count: usize, out: &mut Vec<bool>) -> Result<()> {
    let mut bytes = Vec::new();
    decode_bytes(input, count.div_ceil(8), &mut bytes)?;
    // `bytes` now proves the input backs `count` bits, so reserving all of them is safe.
    out.reserve(count);
    let bits = bytes
        .iter()
        .flat_map(|&byte| (0..8).map(move |k| (byte >> (7 - k)) & 1 == 1));
    out.extend(bits.take(count));
    Ok(())
}

/// Encodes `values` with byte RLE: repetitions of 3 or more become runs, the rest literals.
pub(crate) fn encode_bytes(values: &[u8], out: &mut Vec<u8>) {
    let mut literal_start = 0;
    let mut i = 0;
    while let Some(&value) = values.get(i) {
        let run = values[i..]
            .iter()
            .take(V1_MAX_RUN)
            .take_while(|&&b| b == value)
            .count();
        if run >= MIN_REPEAT {
            write_byte_literals(&values[literal_start..i], out);
            out.push((run - MIN_REPEAT) as u8);
            out.push(value);
            literal_start = i + run;
        }
        i += run;
    }
    write_byte_literals(&values[literal_start..], out);
}

fn write_byte_literals(literals: &[u8], out: &mut Vec<u8>) {
    for chunk in literals.chunks(V1_MAX_LITERALS) {
        // The header is -len as i8: 1..=128 → 0xff..=0x80.
        out.push((chunk.len() as u8).wrapping_neg());
        out.extend_from_slice(chunk);
    }
}

/// Encodes a boolean stream (see [`decode_bools`]); the last byte is padded with zero bits.
pub(crate) fn encode_bools(values: &[bool], out: &mut Vec<u8>) {
    let packed: Vec<u8> = values
        .chunks(8)
        .map(|bits| {
            bits.iter()
                .enumerate()
                .fold(0u8, |byte, (k, &bit)| byte | (u8::from(bit) << (7 - k)))
        })
        .collect();
    encode_bytes(&packed, out);
}

/// Reads one varint integer: zigzag-decoded when `signed`, else the raw `u64` bit pattern.
fn read_int(input: &[u8], pos: &mut usize, signed: bool) -> Result<i64> {
    let raw = read_uvarint(input, pos)?;
    Ok(if signed { unzigzag(raw) } else { raw as i64 })
}

/// Decodes integer RLE version 1 (encodings DIRECT and DICTIONARY): a header in 0..=127 is a
/// run of `h + 3` values starting at a varint base and stepping by a signed delta byte; a
/// negative header announces `-h` literal varints. Appends exactly `count` values.
pub(crate) fn decode_int_v1(
    input: &[u8],
    signed: bool,
    count: usize,
    out: &mut Vec<i64>,
) -> Result<()> {
    all_or_nothing(out, |out| {
        reserve_bounded(out, count, input.len(), V1_MAX_RUN / 3);
        let mut pos = 0;
        let mut left = count;
        while left > 0 {
            let header = *input
                .get(pos)
                .ok_or_else(|| ended_early(INT_V1, count - left, count))?;
            pos += 1;
            if header < 0x80 {
                let run = usize::from(header) + MIN_REPEAT;
                let delta = i64::from(next_byte(input, &mut pos, INT_V1)? as i8);
                let mut value = read_int(input, &mut pos, signed)?;
                for _ in 0..run.min(left) {
                    out.push(value);
                    value = value.wrapping_add(delta);
                }
                left -= run.min(left);
            } else {
                for _ in 0..256 - usize::from(header) {
                    let value = read_int(input, &mut pos, signed)?;
                    if left > 0 {
                        out.push(value);
                        left -= 1;
                    }
                }
            }
        }
        Ok(())
    })
}

/// Decodes integer RLE version 2 (encodings DIRECT_V2 and DICTIONARY_V2), all four
/// sub-encodings. Appends exactly `count` values; unsigned streams come back as `u64` bit
/// patterns in `i64`.
pub(crate) fn decode_int_v2(
    input: &[u8],
    signed: bool,
    count: usize,
    out: &mut Vec<i64>,
) -> Result<()> {
    all_or_nothing(out, |out| {
        // A fixed-delta group yields 512 values from 4 bytes.
        reserve_bounded(out, count, input.len(), V2_MAX_RUN / 4);
        let mut run = Vec::with_capacity(V2_MAX_RUN);
        let mut pos = 0;
        let mut left = count;
        while left > 0 {
            if pos >= input.len() {
                return Err(ended_early(INT_V2, count - left, count));
            }
            run.clear();
            decode_v2_group(input, &mut pos, signed, &mut run)?;
            let take = run.len().min(left);
            out.extend_from_slice(&run[..take]);
            left -= take;
        }
        Ok(())
    })
}

/// Decodes one RLE v2 group starting at `*pos` into `run` (1 to 512 values).
fn decode_v2_group(input: &[u8], pos: &mut usize, signed: bool, run: &mut Vec<i64>) -> Result<()> {
    let first = next_byte(input, pos, INT_V2)?;
    if first >> 6 == 0 {
        // SHORT_REPEAT: 3-bit byte width - 1, 3-bit run length - 3, then the big-endian value.
        let width = usize::from((first >> 3) & 7) + 1;
        let raw = next_bytes(input, pos, width, INT_V2)?
            .iter()
            .fold(0u64, |v, &b| (v << 8) | u64::from(b));
        let value = if signed { unzigzag(raw) } else { raw as i64 };
        run.resize(usize::from(first & 7) + MIN_REPEAT, value);
        return Ok(());
    }
    // The other three share a 5-bit width code and a 9-bit length - 1.
    let code = usize::from((first >> 1) & 0x1f);
    let len = ((usize::from(first & 1) << 8) | usize::from(next_byte(input, pos, INT_V2)?)) + 1;
    match first >> 6 {
        1 => {
            // DIRECT: `len` bit-packed values, zigzagged when signed.
            unpack(input, pos, WIDTHS[code], len, run)?;
            if signed {
                run.iter_mut().for_each(|v| *v = unzigzag(*v as u64));
            }
            Ok(())
        }
        2 => decode_patched_base(input, pos, WIDTHS[code], len, run),
        _ => {
            // DELTA: width code 0 means every delta equals the delta base.
            let width = if code == 0 { 0 } else { WIDTHS[code] };
            decode_delta(input, pos, signed, width, len, run)
        }
    }
}

/// PATCHED_BASE: base width/patch width byte, patch gap width/patch list length byte, a
/// sign-magnitude big-endian base, `len` offsets of `width` bits, then the patch list whose
/// entries put the high bits back into the outlying offsets.
fn decode_patched_base(
    input: &[u8],
    pos: &mut usize,
    width: u32,
    len: usize,
    run: &mut Vec<i64>,
) -> Result<()> {
    let third = next_byte(input, pos, INT_V2)?;
    let fourth = next_byte(input, pos, INT_V2)?;
    let base_bytes = usize::from(third >> 5) + 1;
    let patch_width = WIDTHS[usize::from(third & 0x1f)];
    let gap_width = u32::from(fourth >> 5) + 1;
    let patch_count = usize::from(fourth & 0x1f);
    if patch_width + gap_width > 64 {
        return Err(corrupt(
            INT_V2,
            format!("patched base patch width {patch_width} + gap width {gap_width} exceeds 64"),
        ));
    }
    let raw = next_bytes(input, pos, base_bytes, INT_V2)?
        .iter()
        .fold(0u64, |v, &b| (v << 8) | u64::from(b));
    let sign = 1u64 << (base_bytes * 8 - 1);
    let base = if raw & sign != 0 {
        ((raw & !sign) as i64).wrapping_neg()
    } else {
        raw as i64
    };
    unpack(input, pos, width, len, run)?;
    let mut patches = Vec::with_capacity(patch_count);
    unpack(
        input,
        pos,
        closest_width(patch_width + gap_width),
        patch_count,
        &mut patches,
    )?;
    let patch_mask = (1u64 << patch_width) - 1; // patch_width <= 63 here
    let mut index = 0usize;
    for entry in patches {
        let gap = (entry as u64) >> patch_width;
        let patch = entry as u64 & patch_mask;
        index += gap as usize;
        if gap == 255 && patch == 0 {
            // A filler entry: the gap to the next patch is longer than the gap field.
            continue;
        }
        let slot = run.get_mut(index).ok_or_else(|| {
            corrupt(
                INT_V2,
                format!("patch at index {index} of a {len}-value run"),
            )
        })?;
        // Java shifts modulo 64 and drops the bits shifted out; so does wrapping_shl.
        *slot = ((*slot as u64) | patch.wrapping_shl(width)) as i64;
    }
    run.iter_mut().for_each(|v| *v = base.wrapping_add(*v));
    Ok(())
}

/// DELTA: first value (zigzag varint if signed), delta base (always zigzag), then for `width`
/// > 0 the remaining `len - 2` delta magnitudes, applied in the direction of the delta base.
fn decode_delta(
    input: &[u8],
    pos: &mut usize,
    signed: bool,
    width: u32,
    len: usize,
    run: &mut Vec<i64>,
) -> Result<()> {
    let first = read_int(input, pos, signed)?;
    let delta_base = unzigzag(read_uvarint(input, pos)?);
    run.push(first);
    if width == 0 {
        let mut value = first;
        for _ in 1..len {
            value = value.wrapping_add(delta_base);
            run.push(value);
        }
        return Ok(());
    }
    if len < 2 {
        return Err(corrupt(INT_V2, "delta run with packed deltas has length 1"));
    }
    let mut value = first.wrapping_add(delta_base);
    run.push(value);
    unpack(input, pos, width, len - 2, run)?;
    for slot in &mut run[2..] {
        value = if delta_base < 0 {
            value.wrapping_sub(*slot)
        } else {
            value.wrapping_add(*slot)
        };
        *slot = value;
    }
    Ok(())
}

/// Appends `n` big-endian bit-packed values of `width` (1..=64) bits starting at byte `*pos`,
/// and moves `*pos` past the byte holding the last bit.
fn unpack(input: &[u8], pos: &mut usize, width: u32, n: usize, out: &mut Vec<i64>) -> Result<()> {
    // n <= 512 and width <= 64, so this cannot overflow.
    let data = next_bytes(input, pos, (n * width as usize).div_ceil(8), INT_V2)?;
    let mut bit = 0usize;
    for _ in 0..n {
        let mut value = 0u64;
        let mut need = width;
        while need > 0 {
            // In bounds: `bit` stays below n * width, which `data` covers.
            let byte = u64::from(data[bit / 8]);
            let avail = 8 - (bit % 8) as u32;
            let take = avail.min(need);
            value = (value << take) | ((byte >> (avail - take)) & ((1 << take) - 1));
            need -= take;
            bit += take as usize;
        }
        out.push(value as i64);
    }
    Ok(())
}

/// The smallest RLE v2 width that holds `bits` bits (0 and 1 both give 1).
fn closest_width(bits: u32) -> u32 {
    WIDTHS.iter().copied().find(|&w| w >= bits).unwrap_or(64)
}

/// The 5-bit code of a width from [`WIDTHS`].
fn width_code(width: u32) -> u8 {
    WIDTHS.iter().position(|&w| w == width).unwrap_or(31) as u8
}

/// Writes big-endian bit-packed values, padding the last byte with zeros.
struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    current: u8,
    used: u32,
}

impl BitWriter<'_> {
    fn write(&mut self, value: u64, width: u32) {
        let mut left = width;
        while left > 0 {
            let space = 8 - self.used;
            let take = space.min(left);
            let bits = ((value >> (left - take)) & ((1 << take) - 1)) as u8;
            self.current |= bits << (space - take);
            self.used += take;
            left -= take;
            if self.used == 8 {
                self.out.push(self.current);
                self.current = 0;
                self.used = 0;
            }
        }
    }

    fn finish(self) {
        if self.used > 0 {
            self.out.push(self.current);
        }
    }
}

/// The unsigned form RLE v2 stores for SHORT_REPEAT, DIRECT and DELTA first values.
fn stored(value: i64, signed: bool) -> u64 {
    if signed {
        zigzag(value)
    } else {
        value as u64
    }
}

/// The step `b - a` a fixed-delta group may store, if any. DELTA stores it as a signed varint
/// and readers rebuild the values in `i64` arithmetic (the C++ reader without wrapping), so
/// the step must be exact in `i64`; for unsigned streams it must also be exact in `u64`, which
/// rules out pairs on either side of 2^63.
fn step(a: i64, b: i64, signed: bool) -> Option<i64> {
    if !signed && (a < 0) != (b < 0) {
        return None;
    }
    b.checked_sub(a)
}

/// The length (capped at 512) of the equal-step run at the start of `values`, and its step.
/// Lengths below 3 do not count as runs; their step is meaningless.
fn fixed_step_run(values: &[i64], signed: bool) -> (usize, i64) {
    let (Some(&a), Some(&b)) = (values.first(), values.get(1)) else {
        return (values.len(), 0);
    };
    let Some(delta) = step(a, b, signed) else {
        return (1, 0);
    };
    let mut len = 2;
    while len < values.len().min(V2_MAX_RUN)
        && step(values[len - 1], values[len], signed) == Some(delta)
    {
        len += 1;
    }
    (len, delta)
}

/// Encodes `values` with integer RLE v2 in a form the Java and C++ ORC readers accept:
/// SHORT_REPEAT for 3..=10 equal values, fixed-step DELTA for longer repetitions and for runs of
/// 3..=512 values with one step, DELTA with bit-packed steps for monotonic runs where that is
/// smaller, DIRECT for everything else. `signed` selects zigzag; unsigned
/// values are taken as `u64` bit patterns.
pub(crate) fn encode_int_v2(values: &[i64], signed: bool, out: &mut Vec<u8>) {
    let mut rest = values;
    while let Some(&first) = rest.first() {
        let (run, delta) = fixed_step_run(rest, signed);
        let used = if run >= MIN_REPEAT {
            if delta == 0 && run <= SHORT_REPEAT_MAX {
                let value = stored(first, signed);
                let bytes = (64 - value.leading_zeros()).div_ceil(8).max(1) as usize;
                out.push((((bytes - 1) << 3) | (run - MIN_REPEAT)) as u8);
                out.extend_from_slice(&value.to_be_bytes()[8 - bytes..]);
            } else {
                write_v2_header(out, 3, 0, run);
                write_uvarint(stored(first, signed), out);
                write_uvarint(zigzag(delta), out);
            }
            run
        } else if let Some(used) = write_monotonic(rest, signed, out) {
            used
        } else {
            // Literals up to the next run of 3 (or 512 values).
            let mut end = 1;
            while end < rest.len().min(V2_MAX_RUN) {
                let probe = &rest[end..rest.len().min(end + MIN_REPEAT)];
                if fixed_step_run(probe, signed).0 >= MIN_REPEAT {
                    break;
                }
                end += 1;
            }
            write_direct(&rest[..end], signed, out);
            end
        };
        rest = &rest[used..];
    }
}

/// The shortest monotonic run worth a variable-step DELTA group.
const MIN_MONOTONIC: usize = 8;

/// Writes the monotonic run at the start of `values` (up to 512 values moving in one
/// direction with varying steps: sorted keys, sequence numbers, timestamps) as a DELTA group
/// with bit-packed step sizes, when that is smaller than writing them DIRECT; returns the
/// values written, `None` when there is no such run or DIRECT is as small.
fn write_monotonic(values: &[i64], signed: bool, out: &mut Vec<u8>) -> Option<usize> {
    let first_step = step(*values.first()?, *values.get(1)?, signed)?;
    let rising = first_step >= 0;
    let mut len = 2;
    let mut widest = 0u64;
    while len < values.len().min(V2_MAX_RUN) {
        match step(values[len - 1], values[len], signed) {
            Some(d) if (d >= 0) == rising || d == 0 => widest |= d.unsigned_abs(),
            _ => break,
        }
        len += 1;
    }
    if len < MIN_MONOTONIC {
        return None;
    }
    // A width code of 0 means "one fixed step" in a DELTA group: one-bit steps take two.
    let width = closest_width((64 - widest.leading_zeros()).max(2));
    let run = &values[..len];
    let all_bits = run.iter().fold(0u64, |acc, &v| acc | stored(v, signed));
    let direct_bits = u64::from(closest_width(64 - all_bits.leading_zeros())) * len as u64;
    let delta_bits = 8 * 20 + u64::from(width) * (len as u64 - 2);
    if delta_bits >= direct_bits {
        return None;
    }
    write_v2_header(out, 3, width_code(width), len);
    write_uvarint(stored(run[0], signed), out);
    write_uvarint(zigzag(first_step), out);
    let mut writer = BitWriter {
        out,
        current: 0,
        used: 0,
    };
    for w in run[1..].windows(2) {
        let d = step(w[0], w[1], signed).unwrap_or(0);
        writer.write(d.unsigned_abs(), width);
    }
    writer.finish();
    Some(len)
}

/// Writes the two header bytes of a DIRECT (1), PATCHED_BASE (2) or DELTA (3) group.
fn write_v2_header(out: &mut Vec<u8>, kind: u8, code: u8, len: usize) {
    let stored_len = len - 1;
    out.push((kind << 6) | (code << 1) | (stored_len >> 8) as u8);
    out.push(stored_len as u8);
}

fn write_direct(values: &[i64], signed: bool, out: &mut Vec<u8>) {
    // OR-ing has the same highest set bit as the maximum.
    let all_bits = values.iter().fold(0u64, |acc, &v| acc | stored(v, signed));
    let width = closest_width(64 - all_bits.leading_zeros());
    write_v2_header(out, 1, width_code(width), values.len());
    let mut writer = BitWriter {
        out,
        current: 0,
        used: 0,
    };
    for &v in values {
        writer.write(stored(v, signed), width);
    }
    writer.finish();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic xorshift64 so the "random" cases are the same on every run.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn v2_round_trip(values: &[i64], signed: bool) -> Vec<u8> {
        let mut encoded = Vec::new();
        encode_int_v2(values, signed, &mut encoded);
        let mut decoded = vec![42];
        decode_int_v2(&encoded, signed, values.len(), &mut decoded).unwrap();
        assert_eq!(
            &decoded[1..],
            values,
            "signed={signed} bytes={encoded:02x?}"
        );
        encoded
    }

    fn v2_decode(input: &[u8], signed: bool, count: usize) -> Vec<i64> {
        let mut out = Vec::new();
        decode_int_v2(input, signed, count, &mut out).unwrap();
        out
    }

    fn v1_decode(input: &[u8], signed: bool, count: usize) -> Vec<i64> {
        let mut out = Vec::new();
        decode_int_v1(input, signed, count, &mut out).unwrap();
        out
    }

    #[test]
    fn varints_and_zigzag() {
        for v in [0, 1, -1, 63, -64, 64, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!([zigzag(0), zigzag(-1), zigzag(1), zigzag(-2)], [0, 1, 2, 3]);
        for v in [0, 127, 128, 300, u64::MAX >> 1, u64::MAX] {
            let mut buf = Vec::new();
            write_uvarint(v, &mut buf);
            let mut pos = 0;
            assert_eq!(read_uvarint(&buf, &mut pos).unwrap(), v);
            assert_eq!(pos, buf.len());
            for cut in 0..buf.len() {
                assert!(read_uvarint(&buf[..cut], &mut 0).is_err());
            }
        }
        assert!(read_uvarint(&[0xff; 11], &mut 0).is_err());
    }

    #[test]
    fn spec_byte_rle_and_bools() {
        let mut out = Vec::new();
        encode_bytes(&[0; 100], &mut out);
        assert_eq!(out, [0x61, 0x00]);
        out.clear();
        encode_bytes(&[0x44, 0x45], &mut out);
        assert_eq!(out, [0xfe, 0x44, 0x45]);
        let mut bytes = Vec::new();
        assert_eq!(
            decode_bytes(&[0x61, 0x00, 0xfe, 0x44, 0x45, 9], 102, &mut bytes).unwrap(),
            5
        );
        assert_eq!(bytes.len(), 102);
        assert_eq!(&bytes[99..], [0, 0x44, 0x45]);
        // Part of a run is enough; the count consumed covers the whole run.
        bytes.clear();
        assert_eq!(decode_bytes(&[0x61, 0x07], 5, &mut bytes).unwrap(), 2);
        assert_eq!(bytes, [7; 5]);

        out.clear();
        encode_bools(
            &[true, false, false, false, false, false, false, false, true],
            &mut out,
        );
        assert_eq!(out, [0xfe, 0x80, 0x80]);
        let mut bools = Vec::new();
        decode_bools(&out, 9, &mut bools).unwrap();
        assert_eq!(
            bools,
            [true, false, false, false, false, false, false, false, true]
        );
    }

    #[test]
    fn byte_and_bool_round_trips() {
        let mut rng = Rng(7);
        for len in 0..700 {
            let values: Vec<u8> = (0..len)
                .map(|_| match rng.below(3) {
                    0 => 5,
                    _ => rng.below(4) as u8,
                })
                .collect();
            let mut encoded = Vec::new();
            encode_bytes(&values, &mut encoded);
            let mut decoded = Vec::new();
            assert_eq!(
                decode_bytes(&encoded, len, &mut decoded).unwrap(),
                encoded.len()
            );
            assert_eq!(decoded, values);
            if len < 100 {
                for cut in 0..encoded.len() {
                    assert!(decode_bytes(&encoded[..cut], len, &mut decoded).is_err());
                }
            }

            let bools: Vec<bool> = values.iter().map(|&v| v > 1).collect();
            encoded.clear();
            encode_bools(&bools, &mut encoded);
            let mut decoded = Vec::new();
            decode_bools(&encoded, len, &mut decoded).unwrap();
            assert_eq!(decoded, bools);
        }
    }

    #[test]
    fn spec_int_v1() {
        assert_eq!(v1_decode(&[0x61, 0x00, 0x07], false, 100), [7; 100]);
        let down: Vec<i64> = (1..=100).rev().collect();
        assert_eq!(v1_decode(&[0x61, 0xff, 0x64], false, 100), down);
        let literals = [0xfb, 0x02, 0x03, 0x04, 0x07, 0x0b];
        assert_eq!(v1_decode(&literals, false, 5), [2, 3, 4, 7, 11]);
        assert_eq!(v1_decode(&literals, true, 5), [1, -2, 2, -4, -6]);
        assert!(decode_int_v1(&literals, false, 6, &mut Vec::new()).is_err());
    }

    #[test]
    fn spec_int_v2_known_answers() {
        let mut out = Vec::new();
        encode_int_v2(&[10000; 5], false, &mut out);
        assert_eq!(out, [0x0a, 0x27, 0x10]);
        assert_eq!(v2_decode(&out, false, 5), [10000; 5]);

        let direct = [0x5e, 0x03, 0x5c, 0xa1, 0xab, 0x1e, 0xde, 0xad, 0xbe, 0xef];
        let values = [23713, 43806, 57005, 48879];
        out.clear();
        encode_int_v2(&values, false, &mut out);
        assert_eq!(out, direct);
        assert_eq!(v2_decode(&direct, false, 4), values);

        let patched = [
            0x8e, 0x13, 0x2b, 0x21, 0x07, 0xd0, 0x1e, 0x00, 0x14, 0x70, 0x28, 0x32, 0x3c, 0x46,
            0x50, 0x5a, 0x64, 0x6e, 0x78, 0x82, 0x8c, 0x96, 0xa0, 0xaa, 0xb4, 0xbe, 0xfc, 0xe8,
        ];
        let values = [
            2030, 2000, 2020, 1000000, 2040, 2050, 2060, 2070, 2080, 2090, 2100, 2110, 2120, 2130,
            2140, 2150, 2160, 2170, 2180, 2190,
        ];
        assert_eq!(v2_decode(&patched, false, 20), values);
        v2_round_trip(&values, false);

        let delta = [0xc6, 0x09, 0x02, 0x02, 0x22, 0x42, 0x42, 0x46];
        let primes = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29];
        assert_eq!(v2_decode(&delta, false, 10), primes);
        assert_eq!(v2_decode(&delta, false, 4), [2, 3, 5, 7]);

        // Equal runs longer than 10 become a fixed delta of 0.
        out.clear();
        encode_int_v2(&[7; 100], false, &mut out);
        assert_eq!(out, [0xc0, 0x63, 0x07, 0x00]);
    }

    #[test]
    fn hand_built_v2_groups() {
        // DELTA with a negative delta base and packed magnitudes 3, 4.
        assert_eq!(
            v2_decode(&[0xc6, 0x03, 0x0a, 0x03, 0x34], false, 4),
            [10, 8, 5, 1]
        );
        // PATCHED_BASE with a negative sign-magnitude base and no patches.
        let negative_base = [0x8e, 0x02, 0x00, 0x00, 0x85, 0x00, 0x02, 0x69];
        assert_eq!(v2_decode(&negative_base, true, 3), [-5, -3, 100]);
        // PATCHED_BASE whose patch lies past 255 and needs a filler entry.
        let mut filler = vec![0x81, 0x2b, 0x00, 0xe2, 0x00];
        filler.extend_from_slice(&[0; 38]);
        filler.extend_from_slice(&[0xff, 0x02, 0xc0]);
        let mut expected = vec![0; 300];
        expected[260] = 2;
        assert_eq!(v2_decode(&filler, false, 300), expected);
        // The same patch list with the filler removed points past the run.
        let mut outside = filler.clone();
        outside[1] = 0x03; // 4 values
        outside.truncate(5);
        outside.push(0);
        outside.extend_from_slice(&[0x05, 0x80]);
        outside[3] = 0xe1;
        assert!(decode_int_v2(&outside, false, 4, &mut Vec::new()).is_err());
    }

    #[test]
    fn v2_round_trips_constant_runs() {
        for value in [0, 1, -1, 12345, i64::MIN, i64::MAX] {
            let mut all = Vec::new();
            for len in 0..=600 {
                let values = vec![value; len];
                v2_round_trip(&values, true);
                v2_round_trip(&values, false);
                all.extend_from_slice(&values);
                all.push(len as i64);
            }
            v2_round_trip(&all, true);
            v2_round_trip(&all, false);
        }
    }

    #[test]
    fn v2_round_trips_sequences() {
        let steps = [1, -1, 3, -1000, 1 << 40, -(1 << 62), i64::MAX, i64::MIN];
        let starts = [0, -5, 1000, i64::MIN, i64::MAX, i64::MIN / 2];
        for &start in &starts {
            for &stride in &steps {
                for len in [1, 2, 3, 4, 11, 512, 513, 1100] {
                    let values: Vec<i64> = (0..len)
                        .map(|k| start.wrapping_add(stride.wrapping_mul(k)))
                        .collect();
                    v2_round_trip(&values, true);
                    v2_round_trip(&values, false);
                }
            }
        }
        let extremes = [
            i64::MIN,
            i64::MAX,
            i64::MIN,
            -1,
            0,
            i64::MAX,
            i64::MAX,
            i64::MAX,
        ];
        v2_round_trip(&extremes, true);
        v2_round_trip(&extremes, false);
        // u64::MAX as unsigned, and steps that overflow in one domain but not the other.
        v2_round_trip(&[-1, -1, -1, 0, -1, i64::MIN, i64::MAX, 0, -1], false);
        v2_round_trip(&[0, i64::MAX, -2, -3, -4, -5], false);
        // Unsigned runs across 2^63 are exact in neither i64 nor u64 steps: no DELTA for them.
        let straddle = v2_round_trip(&[i64::MAX - 1, i64::MAX, i64::MIN, i64::MIN + 1], false);
        assert_eq!(straddle[0] >> 6, 1, "DIRECT, not DELTA: {straddle:02x?}");
    }

    #[test]
    fn v2_round_trips_random_widths() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..400 {
            let len = rng.below(1500) as usize;
            let mut values = Vec::with_capacity(len);
            while values.len() < len {
                let bits = rng.below(65) as u32;
                let raw = if bits == 64 {
                    rng.next()
                } else {
                    rng.next() & ((1u64 << bits) - 1)
                };
                let value = raw as i64;
                match rng.below(6) {
                    0 => values.extend(std::iter::repeat_n(value, rng.below(20) as usize)),
                    1 => {
                        let stride = (rng.next() as i64) >> rng.below(64);
                        let n = rng.below(40) as i64;
                        values.extend((0..n).map(|k| value.wrapping_add(stride.wrapping_mul(k))));
                    }
                    2 => values.push(-value),
                    _ => values.push(value),
                }
            }
            values.truncate(len);
            let encoded = v2_round_trip(&values, case % 2 == 0);
            // Every strict prefix of the stream is missing data.
            if case % 20 == 0 {
                for cut in 0..encoded.len() {
                    let mut out = vec![1, 2];
                    assert!(decode_int_v2(&encoded[..cut], case % 2 == 0, len, &mut out).is_err());
                    assert_eq!(out, [1, 2], "out is restored on error");
                }
            }
        }
    }

    #[test]
    fn truncated_and_garbage_inputs_never_panic() {
        let mut encoded = Vec::new();
        encode_int_v2(
            &[1, 2, 3, 4, 99, -7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8],
            true,
            &mut encoded,
        );
        for cut in 0..encoded.len() {
            assert!(decode_int_v2(&encoded[..cut], true, 18, &mut Vec::new()).is_err());
        }
        let spec_streams: [&[u8]; 3] = [
            &[0x61, 0x00, 0x07],
            &[0xfb, 0x02, 0x03, 0x04, 0x07, 0x0b],
            &[0xc6, 0x09, 0x02, 0x02, 0x22, 0x42, 0x42, 0x46],
        ];
        for stream in spec_streams {
            for cut in 0..stream.len() {
                assert!(decode_int_v1(&stream[..cut], false, 5, &mut Vec::new()).is_err());
                assert!(decode_int_v2(&stream[..cut], false, 10, &mut Vec::new()).is_err());
            }
        }
        // A huge count over a tiny stream fails without reserving for it.
        assert!(decode_int_v2(&[0x00, 0x01], false, usize::MAX, &mut Vec::new()).is_err());
        assert!(decode_int_v1(&[0x00, 0x01], false, usize::MAX, &mut Vec::new()).is_err());
        assert!(decode_bools(&[0x00, 0x01], usize::MAX, &mut Vec::new()).is_err());

        let mut rng = Rng(12345);
        for _ in 0..4000 {
            let len = rng.below(80) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let count = rng.below(2000) as usize;
            let signed = rng.below(2) == 0;
            let _ = decode_int_v2(&bytes, signed, count, &mut Vec::new());
            let _ = decode_int_v1(&bytes, signed, count, &mut Vec::new());
            let _ = decode_bytes(&bytes, count, &mut Vec::new());
            let _ = decode_bools(&bytes, count, &mut Vec::new());
            let _ = read_uvarint(&bytes, &mut 0);
        }
    }

    #[test]
    fn monotonic_runs_with_varying_steps_are_packed_deltas() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        for signed in [true, false] {
            for len in [8usize, 9, 100, 511, 512, 513, 3000] {
                let mut v = 1_000_000i64;
                let rising: Vec<i64> = (0..len)
                    .map(|_| {
                        v += rng.below(40) as i64; // steps of 0..40, equal neighbours too
                        v
                    })
                    .collect();
                let bytes = v2_round_trip(&rising, signed);
                // About 6 bits a value instead of 20 or more.
                assert!(bytes.len() < len * 2 + 16, "{len}: {} bytes", bytes.len());
                let falling: Vec<i64> = rising.iter().rev().copied().collect();
                v2_round_trip(&falling, signed);
                if signed {
                    let negative: Vec<i64> = rising.iter().map(|x| -x).collect();
                    v2_round_trip(&negative, signed);
                }
            }
        }
        // One-bit steps take the two-bit width (code 0 means a fixed step).
        let ones: Vec<i64> = (0..100).map(|i| i + i / 3).collect();
        v2_round_trip(&ones, true);
        // Steps that change direction end the run.
        let zigzag: Vec<i64> = (0..600)
            .map(|i| if i % 50 < 25 { i } else { 600 - i })
            .collect();
        v2_round_trip(&zigzag, true);
    }
}
