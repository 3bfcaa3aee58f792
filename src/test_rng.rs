//! A deterministic pseudo-random source for tests that sweep inputs (xorshift64): the same
//! sequence on every run and platform, so a failure replays.

/// The draws of xorshift64 from `seed` (which must not be 0).
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}
