//! Unique names for the files a job writes, derived from the caller's job id.
//!
//! Paimon names files `<prefix><uuid>-<counter>`. The core draws no random numbers, so the
//! caller passes a 16-byte job id (random, in the host) and every UUID of the job is derived
//! from it by a counter through a bijective mixer: distinct jobs get distinct names, and a
//! replayed job writes the same names (useful in tests).

/// Generates the job's UUIDs and Avro sync markers.
#[derive(Clone, Debug)]
pub struct IdGen {
    seed: [u64; 2],
    counter: u64,
}

/// SplitMix64's finalizer: a bijection on u64 with good avalanche.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl IdGen {
    /// A generator seeded with the caller's 16-byte job id; the first value drawn is for
    /// counter 1.
    pub fn new(job_id: [u8; 16]) -> Self {
        let a = u64::from_le_bytes(job_id[..8].try_into().unwrap_or([0; 8]));
        let b = u64::from_le_bytes(job_id[8..].try_into().unwrap_or([0; 8]));
        IdGen {
            seed: [a, b],
            counter: 0,
        }
    }

    /// The next 16 bytes.
    pub fn next_bytes(&mut self) -> [u8; 16] {
        self.counter += 1;
        let hi = mix(self.seed[0] ^ mix(self.counter));
        let lo = mix(self.seed[1] ^ mix(self.counter ^ hi));
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&hi.to_be_bytes());
        out[8..].copy_from_slice(&lo.to_be_bytes());
        out
    }

    /// The next UUID in canonical text form (version 4 layout).
    pub fn next_uuid(&mut self) -> String {
        uuid_string(self.next_bytes())
    }
}

/// Formats 16 bytes as a version-4, RFC 4122 variant UUID.
pub fn uuid_string(mut b: [u8; 16]) -> String {
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_and_reproducible() {
        let mut a = IdGen::new([1; 16]);
        let mut b = IdGen::new([1; 16]);
        let mut c = IdGen::new([2; 16]);
        let xs: Vec<String> = (0..100).map(|_| a.next_uuid()).collect();
        let ys: Vec<String> = (0..100).map(|_| b.next_uuid()).collect();
        let zs: Vec<String> = (0..100).map(|_| c.next_uuid()).collect();
        assert_eq!(xs, ys);
        let set: std::collections::HashSet<_> = xs.iter().chain(&zs).collect();
        assert_eq!(set.len(), 200);
        assert_eq!(xs[0].len(), 36);
        assert_eq!(&xs[0][14..15], "4");
    }
}
