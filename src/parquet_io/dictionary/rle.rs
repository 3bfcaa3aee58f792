//! Parquet's RLE/bit-packing hybrid encoding (dictionary ids and definition levels), written by
//! hand because parquet-rs keeps its encoder private.

/// Bits per id of a dictionary of `len` entries.
pub(crate) fn dictionary_bit_width(len: usize) -> u8 {
    num_required_bits(len.saturating_sub(1) as u64)
}

/// Bits needed to store `max`.
pub(crate) fn num_required_bits(max: u64) -> u8 {
    (64 - max.leading_zeros()) as u8
}

/// parquet-rs's bound for an RLE/bit-packed buffer, used for the same page-size decisions.
pub(crate) fn rle_max_buffer_size(bit_width: u8, num_values: usize) -> usize {
    let num_runs = num_values.div_ceil(8);
    let bit_packed = num_runs + num_runs * bit_width as usize;
    let min_rle_run = 1 + (bit_width as usize).div_ceil(8);
    bit_packed.max(num_runs * min_rle_run)
}

/// Appends `values` in Parquet's RLE/bit-packing hybrid encoding (without length prefix).
///
/// Runs of at least 8 equal values become RLE runs; everything else is bit-packed in groups of
/// 8 (the last group zero-padded, which readers ignore because the page says how many values
/// it holds).
pub(crate) fn encode_hybrid(values: &[u32], bit_width: u8, out: &mut Vec<u8>) {
    let n = values.len();
    let run_len = |i: usize, cap: usize| -> usize {
        let v = values[i];
        values[i..n.min(i.saturating_add(cap))]
            .iter()
            .take_while(|&&x| x == v)
            .count()
    };
    let value_bytes = (bit_width as usize).div_ceil(8);
    let mut i = 0;
    while i < n {
        let run = run_len(i, usize::MAX);
        if run >= 8 {
            crate::varint::write_u64((run as u64) << 1, out);
            out.extend_from_slice(&values[i].to_le_bytes()[..value_bytes]);
            i += run;
            continue;
        }
        // A bit-packed run: groups of 8 until the next group starts a long repeat.
        let start = i;
        let mut groups = 0usize;
        loop {
            groups += 1;
            i += 8;
            if i >= n || run_len(i, 8) >= 8 {
                break;
            }
        }
        crate::varint::write_u64(((groups as u64) << 1) | 1, out);
        bit_pack(
            &values[start..n.min(start + groups * 8)],
            groups * 8,
            bit_width,
            out,
        );
        i = i.min(n);
    }
}

/// Packs `values` LSB-first with `bit_width` bits each, padding with zeros to `count` values.
fn bit_pack(values: &[u32], count: usize, bit_width: u8, out: &mut Vec<u8>) {
    if bit_width == 0 {
        return;
    }
    let mut acc: u64 = 0;
    let mut bits: u32 = 0;
    let width = bit_width as u32;
    let mask = if width == 32 {
        u32::MAX as u64
    } else {
        (1u64 << width) - 1
    };
    for j in 0..count {
        let v = values.get(j).copied().unwrap_or(0) as u64 & mask;
        acc |= v << bits;
        bits += width;
        while bits >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
    }
    if bits > 0 {
        out.push(acc as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reference decoder for the hybrid encoding, to check the encoder on its own.
    fn decode_hybrid(mut buf: &[u8], bit_width: u8, n: usize) -> Vec<u32> {
        let mut out = Vec::new();
        let value_bytes = (bit_width as usize).div_ceil(8);
        while out.len() < n {
            let mut header = 0u64;
            let mut shift = 0;
            loop {
                let b = buf[0];
                buf = &buf[1..];
                header |= ((b & 0x7f) as u64) << shift;
                shift += 7;
                if b & 0x80 == 0 {
                    break;
                }
            }
            if header & 1 == 1 {
                let count = (header >> 1) as usize * 8;
                let nbytes = count * bit_width as usize / 8;
                let (packed, rest) = buf.split_at(nbytes);
                buf = rest;
                let mut bitpos = 0usize;
                for _ in 0..count {
                    let mut v = 0u32;
                    for b in 0..bit_width as usize {
                        let bit = (packed[(bitpos + b) / 8] >> ((bitpos + b) % 8)) & 1;
                        v |= (bit as u32) << b;
                    }
                    bitpos += bit_width as usize;
                    out.push(v);
                }
            } else {
                let count = (header >> 1) as usize;
                let mut v = [0u8; 4];
                v[..value_bytes].copy_from_slice(&buf[..value_bytes]);
                buf = &buf[value_bytes..];
                out.extend(std::iter::repeat_n(u32::from_le_bytes(v), count));
            }
        }
        out.truncate(n);
        out
    }

    #[test]
    fn hybrid_round_trips_runs_and_noise() {
        let mut values = Vec::new();
        for i in 0..1000u32 {
            values.push(i % 7);
        }
        values.extend(std::iter::repeat_n(3, 100));
        values.extend([1, 2, 1, 2, 5]);
        values.extend(std::iter::repeat_n(6, 9));
        for width in [3u8, 8, 13] {
            let mut buf = Vec::new();
            encode_hybrid(&values, width, &mut buf);
            assert_eq!(
                decode_hybrid(&buf, width, values.len()),
                values,
                "width {width}"
            );
        }
        let mut buf = Vec::new();
        encode_hybrid(&[0; 20], 0, &mut buf);
        assert_eq!(buf, vec![40], "one RLE run of 20 zero-width values");
    }

    #[test]
    fn bit_widths() {
        assert_eq!(num_required_bits(0), 0);
        assert_eq!(num_required_bits(1), 1);
        assert_eq!(num_required_bits(255), 8);
        assert_eq!(num_required_bits(256), 9);
    }
}
