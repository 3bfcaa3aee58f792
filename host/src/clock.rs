//! The host's clock and randomness: the core has neither, so the host passes them in.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{SystemTime, UNIX_EPOCH};

/// Epoch milliseconds and the local hour of day (UTC where the zone is unknown: the standard
/// library has no time zones; set `TZ_OFFSET_HOURS` to shift).
pub fn now() -> (i64, u8) {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let offset: i64 = std::env::var("TZ_OFFSET_HOURS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let hour = ((ms / 3_600_000 + offset).rem_euclid(24)) as u8;
    (ms, hour)
}

/// The local zone's offset from UTC in milliseconds (`TZ_OFFSET_HOURS`, else 0: the standard
/// library has no time zones), for what Paimon compares as local wall-clock time.
pub fn utc_offset_ms() -> i64 {
    std::env::var("TZ_OFFSET_HOURS")
        .ok()
        .and_then(|v| v.parse::<i64>().ok())
        .unwrap_or(0)
        .saturating_mul(3_600_000)
}

/// 16 random bytes (from the process's hash seeds and the clock), for job ids.
pub fn random_id() -> [u8; 16] {
    let mut out = [0u8; 16];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let mut h = RandomState::new().build_hasher();
        h.write_u128(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        h.write_usize(i);
        h.write_u32(std::process::id());
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    out
}
