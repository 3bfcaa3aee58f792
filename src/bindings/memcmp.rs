//! A word-at-a-time `memcmp` for the component.
//!
//! wasi-libc's `memcmp` compares one byte per loop iteration, and slice comparisons call it
//! constantly: the Parquet dictionary interner checks every candidate value with it and the
//! primary-key merge compares keys with it. Defined in the component, this symbol is linked in
//! place of the libc archive's (whose member is then never pulled in); it exists only for speed
//! under wasmtime (measured: benches/README.md, "Append rewrite", the memcmp bullet).

/// `memcmp`'s result for two equally long byte strings: negative, zero or positive as `a` sorts
/// before, equal to or after `b` (unsigned bytes). Written without slice comparisons, which
/// would compile to a call to `memcmp` itself.
pub(crate) fn compare_bytes(a: &[u8], b: &[u8]) -> i32 {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let mut x = [0u8; 8];
        let mut y = [0u8; 8];
        x.copy_from_slice(&a[i..i + 8]);
        y.copy_from_slice(&b[i..i + 8]);
        let (x, y) = (u64::from_le_bytes(x), u64::from_le_bytes(y));
        if x != y {
            // Little-endian words: the first differing byte is the lowest differing one.
            let shift = (x ^ y).trailing_zeros() / 8 * 8;
            return i32::from((x >> shift) as u8) - i32::from((y >> shift) as u8);
        }
        i += 8;
    }
    while i < n {
        if a[i] != b[i] {
            return i32::from(a[i]) - i32::from(b[i]);
        }
        i += 1;
    }
    0
}

/// The C symbol, for the component build only.
///
/// # Safety
/// As C's `memcmp`: `a` and `b` each point to `n` readable bytes.
#[cfg(all(feature = "component", target_arch = "wasm32"))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    if n == 0 {
        return 0;
    }
    // SAFETY: the caller guarantees `n` readable bytes at each pointer (C's contract).
    let (a, b) = unsafe {
        (
            core::slice::from_raw_parts(a, n),
            core::slice::from_raw_parts(b, n),
        )
    };
    compare_bytes(a, b)
}

#[cfg(test)]
mod tests {
    use super::compare_bytes;

    #[test]
    fn agrees_with_slice_order_on_every_length_and_position() {
        let mut next = crate::test_rng::xorshift(0x2545_f491_4f6c_dd1du64);
        for len in 0..40usize {
            for _ in 0..200 {
                let a: Vec<u8> = (0..len).map(|_| (next() % 4) as u8 * 85).collect();
                let mut b = a.clone();
                if len > 0 && next() % 3 != 0 {
                    let at = (next() as usize) % len;
                    b[at] = (next() % 256) as u8;
                }
                let got = compare_bytes(&a, &b).signum();
                let want = a.cmp(&b) as i32;
                assert_eq!(got, want, "{a:?} vs {b:?}");
                if got != 0 {
                    let at = (0..len).find(|&i| a[i] != b[i]).unwrap_or(0);
                    assert_eq!(compare_bytes(&a, &b), i32::from(a[at]) - i32::from(b[at]));
                }
            }
        }
    }
}
