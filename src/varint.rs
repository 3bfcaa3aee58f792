//! Base-128 varints, the integer encoding that ORC streams and protobuf messages, Avro values
//! and Parquet's Thrift and RLE headers share: seven bits per byte, least significant group
//! first, the high bit set on every byte but the last; signed values zigzag-mapped first.
//! Readers return `None` on input that ends inside a varint or runs past the value's width;
//! each caller turns that into its own typed error, naming what it was reading.

/// Appends `v` as an unsigned varint (1 to 10 bytes).
pub(crate) fn write_u64(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads an unsigned varint of at most 10 bytes at `*pos`, advancing it past the varint.
pub(crate) fn read_u64(input: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for group in 0..10 {
        let byte = *input.get(*pos)?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << (7 * group);
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// Maps signed to unsigned so small magnitudes stay small: 0, -1, 1, -2 → 0, 1, 2, 3.
pub(crate) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`]; total over `u64`.
pub(crate) fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Appends `v` zigzag-mapped over 128 bits, as a varint of up to 19 bytes (ORC's decimals).
pub(crate) fn write_zigzag_i128(v: i128, out: &mut Vec<u8>) {
    let mut z = ((v << 1) ^ (v >> 127)) as u128;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// Reads a zigzag varint of up to 128 bits at `*pos`, advancing it past the varint.
pub(crate) fn read_zigzag_i128(input: &[u8], pos: &mut usize) -> Option<i128> {
    let mut v = 0u128;
    let mut shift = 0;
    loop {
        let b = *input.get(*pos)?;
        *pos += 1;
        if shift >= 128 {
            return None;
        }
        v |= u128::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            break;
        }
    }
    Some(((v >> 1) as i128) ^ -((v & 1) as i128))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_bad_input_is_none() {
        for v in [0u64, 1, 127, 128, 300, u64::MAX] {
            let mut b = Vec::new();
            write_u64(v, &mut b);
            let mut pos = 0;
            assert_eq!((read_u64(&b, &mut pos), pos), (Some(v), b.len()));
        }
        for v in [0i64, -1, 1, -2, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!((zigzag(-1), zigzag(1), zigzag(-2)), (1, 2, 3));
        for v in [0i128, -1, 12_345, i128::MIN, i128::MAX] {
            let mut b = Vec::new();
            write_zigzag_i128(v, &mut b);
            let mut pos = 0;
            assert_eq!((read_zigzag_i128(&b, &mut pos), pos), (Some(v), b.len()));
        }
        // Cut short, and eleven continuation bytes.
        assert_eq!(read_u64(&[0x80], &mut 0), None);
        assert_eq!(read_u64(&[0xff; 11], &mut 0), None);
        assert_eq!(read_zigzag_i128(&[0xff; 20], &mut 0), None);
    }
}
