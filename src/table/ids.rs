//! Unique names for the files a job writes, derived from the caller's job id.
//!
//! Paimon names files `<prefix><uuid>-<counter>`. The core draws no random numbers, so the
//! caller passes a 16-byte job id (random, in the host) and every UUID of the job is derived
//! from it: distinct jobs get distinct names, and a replayed job writes the same names (useful
//! in tests).
//!
//! Every UUID a job writes starts with the job's **tag**, the first six bytes of its id
//! (`xxxxxxxx-xxxx`, [`job_tag`]). That is what lets a fan-out job find everything its tasks
//! wrote, even the files of an attempt that died without a result: list `data-<tag>` in the
//! bucket's directories ([`crate::table::fanout`]). The other 74 bits come from a bijective
//! mixer over a counter and a stream: the job itself (manifests, snapshots) or one attempt of
//! one task ([`IdGen::for_task`]), so attempts never collide with each other or with the
//! commit.

/// Generates the job's UUIDs and Avro sync markers.
#[derive(Clone, Debug)]
pub struct IdGen {
    /// The job's tag: the first six bytes of every UUID.
    tag: [u8; 6],
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
        let mut tag = [0u8; 6];
        tag.copy_from_slice(&job_id[..6]);
        IdGen {
            tag,
            seed: [a, b],
            counter: 0,
        }
    }

    /// The generator of one attempt of fan-out task `task`: the job's tag, then a stream of
    /// its own, seeded by the task index and the attempt's 16 bytes (random in a host that
    /// may run a task twice, derived from the job id where it runs once).
    pub fn for_task(job_id: [u8; 16], task: usize, attempt: [u8; 16]) -> Self {
        let mut g = IdGen::new(job_id);
        let a = u64::from_le_bytes(attempt[..8].try_into().unwrap_or([0; 8]));
        let b = u64::from_le_bytes(attempt[8..].try_into().unwrap_or([0; 8]));
        g.seed[0] = mix(g.seed[0] ^ mix(task as u64 + 1) ^ a);
        g.seed[1] = mix(g.seed[1] ^ mix(b ^ 0x5bd1_e995));
        g
    }

    /// The next 16 bytes: the job's tag, then 80 mixed bits.
    pub fn next_bytes(&mut self) -> [u8; 16] {
        self.counter += 1;
        let hi = mix(self.seed[0] ^ mix(self.counter));
        let lo = mix(self.seed[1] ^ mix(self.counter ^ hi));
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&hi.to_be_bytes());
        out[8..].copy_from_slice(&lo.to_be_bytes());
        out[..6].copy_from_slice(&self.tag);
        // Two of the ten mixed bytes lost to the tag come back folded into the last ones.
        out[14] ^= (hi >> 8) as u8;
        out[15] ^= hi as u8;
        out
    }

    /// The next UUID in canonical text form (version 4 layout).
    pub fn next_uuid(&mut self) -> String {
        uuid_string(self.next_bytes())
    }
}

/// The tag every UUID of the job starts with: the first 13 characters of its UUIDs,
/// `xxxxxxxx-xxxx` (see the module documentation).
pub fn job_tag(job_id: [u8; 16]) -> String {
    uuid_string(job_id)[..13].to_string()
}

/// Lower-case hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of a hex string (either case); `None` when it is not an even number of hex
/// digits.
pub fn from_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
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

    #[test]
    fn every_uuid_of_a_job_and_its_tasks_starts_with_the_job_tag() {
        let job = [0xab; 16];
        let tag = job_tag(job);
        assert_eq!(tag, "abababab-abab");
        let mut names = std::collections::HashSet::new();
        let mut gens = vec![IdGen::new(job)];
        for task in 0..4 {
            gens.push(IdGen::for_task(job, task, [1; 16]));
            gens.push(IdGen::for_task(job, task, [2; 16]));
        }
        for g in &mut gens {
            for _ in 0..50 {
                let u = g.next_uuid();
                assert!(u.starts_with(&tag), "{u}");
                assert!(names.insert(u));
            }
        }
        assert_eq!(names.len(), 9 * 50);
    }

    #[test]
    fn hex_round_trips_and_rejects_what_is_not_hex() {
        assert_eq!(from_hex(&to_hex(&[0, 1, 0xfe])).unwrap(), vec![0, 1, 0xfe]);
        assert_eq!(from_hex("0A").unwrap(), vec![10]);
        assert!(from_hex("abc").is_none());
        assert!(from_hex("zz").is_none());
    }
}
