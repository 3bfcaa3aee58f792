//! The `theta_sketch` aggregate: the union of two Apache DataSketches theta sketches in
//! their serialized form, byte for byte as Paimon computes it (a fresh DataSketches `Union`
//! of the default 4 096 nominal entries and seed 9001 fed both sketches, then its ordered
//! compact result). The union only moves hashes, so no hash function is needed here.
//!
//! The union keeps a "gadget" of hashes below its theta; at 7 681 hashes (the 15/16 load of
//! its largest table) it rebuilds: theta becomes the 4 097th smallest hash and only the
//! smaller ones stay. The result keeps the 4 096 smallest hashes under the smallest theta
//! seen (inputs', gadget's, or the 4 097th smallest hash). We follow that process step by
//! step, early stops of ordered inputs included, so inputs that break a sketch's invariants
//! give Java's result too. The byte layouts are in format.md §9 ("Theta sketches").

use std::collections::HashSet;

/// `log2` of the union's nominal entries (Paimon uses the default 4 096).
const LG_NOMINAL: u32 = 12;
const NOMINAL: usize = 1 << LG_NOMINAL;
/// The gadget rebuilds above 15/16 of its largest table (2 × nominal slots).
const REBUILD_ABOVE: usize = (2 * NOMINAL) * 15 / 16;
/// The 16-bit hash of the default update seed 9001, stored in every sketch.
const SEED_HASH: u16 = 0x93CC;
const MAX_THETA: i64 = i64::MAX;

const FLAG_READ_ONLY: u8 = 2;
const FLAG_EMPTY: u8 = 4;
const FLAG_COMPACT: u8 = 8;
const FLAG_ORDERED: u8 = 16;
const FLAG_SINGLE_ITEM: u8 = 32;
const FAMILY_COMPACT: u8 = 3;
const SERIAL_VERSION: u8 = 3;

/// The union of two serialized sketches, serialized as Paimon's `ThetaSketch.union` returns
/// it; `Err` says why an input is not a sketch Java's union accepts.
pub(crate) fn union(a: &[u8], b: &[u8]) -> Result<Vec<u8>, String> {
    let mut u = Union::new();
    u.add(a)?;
    u.add(b)?;
    Ok(u.result())
}

/// The union's hash table, reduced to what decides its result.
struct Gadget {
    theta: i64,
    hashes: HashSet<i64>,
    empty: bool,
}

impl Gadget {
    fn update(&mut self, hash: i64) -> Result<(), String> {
        if hash < 0 {
            return Err(format!("a theta sketch holds the negative hash {hash}"));
        }
        self.empty = false;
        if hash == 0 || hash >= self.theta {
            return Ok(());
        }
        if self.hashes.insert(hash) && self.hashes.len() > REBUILD_ABOVE {
            self.theta = kth_smallest(&self.hashes, NOMINAL + 1);
            let theta = self.theta;
            self.hashes.retain(|&h| h < theta);
        }
        Ok(())
    }
}

/// The `k`th smallest (1-based) of `hashes`, which holds at least `k`.
fn kth_smallest(hashes: &HashSet<i64>, k: usize) -> i64 {
    let mut v: Vec<i64> = hashes.iter().copied().collect();
    let (_, kth, _) = v.select_nth_unstable(k - 1);
    *kth
}

struct Union {
    gadget: Gadget,
    theta: i64,
    empty: bool,
}

impl Union {
    fn new() -> Self {
        Union {
            gadget: Gadget {
                theta: MAX_THETA,
                hashes: HashSet::new(),
                empty: true,
            },
            theta: MAX_THETA,
            empty: true,
        }
    }

    /// Adds one serialized sketch, as DataSketches' `Union.union(Memory)` reads it.
    fn add(&mut self, mem: &[u8]) -> Result<(), String> {
        // Fewer than 16 bytes: an empty sketch (or nothing Java would read).
        if mem.len() < 16 {
            return Ok(());
        }
        let (pre_longs, ser_ver, family, flags) = (mem[0] & 0x3F, mem[1], mem[2], mem[5]);
        match ser_ver {
            3 => {}
            4 => {
                return Err(
                    "a compressed theta sketch (serial version 4), which this build \
                            does not decode"
                        .into(),
                )
            }
            1 | 2 => {
                return Err(format!(
                    "a theta sketch of the legacy serial version {ser_ver}, which this build \
                     does not convert"
                ))
            }
            v => return Err(format!("a theta sketch of the unknown serial version {v}")),
        }
        if !(1..=3).contains(&family) {
            return Err(format!(
                "a sketch of family {family}, not a theta sketch (alpha, quick-select or compact)"
            ));
        }
        let long_at = |i: usize| -> Result<i64, String> {
            i.checked_mul(8)
                .and_then(|at| mem.get(at..at.checked_add(8)?))
                .and_then(|b| b.try_into().ok())
                .map(i64::from_le_bytes)
                .ok_or_else(|| format!("a theta sketch cut short at {} bytes", mem.len()))
        };
        if pre_longs == 1 {
            // A single item (flags as Java checks them), else an empty sketch.
            if flags & 0x1F == 0x1A && family == FAMILY_COMPACT || flags & FLAG_SINGLE_ITEM != 0 {
                self.gadget.update(long_at(1)?)?;
            }
            return Ok(());
        }
        let seed_hash = u16::from_le_bytes([mem[6], mem[7]]);
        if seed_hash != SEED_HASH {
            return Err(format!(
                "a theta sketch of seed hash {seed_hash:#06x}, not the default seed's \
                 {SEED_HASH:#06x}"
            ));
        }
        let count = i32::from_le_bytes([mem[8], mem[9], mem[10], mem[11]]);
        let theta_in = if pre_longs == 2 {
            if count == 0 {
                return Ok(());
            }
            MAX_THETA
        } else {
            long_at(2)?
        };
        let count = usize::try_from(count)
            .map_err(|_| format!("a theta sketch claiming {count} entries"))?;
        self.theta = self.theta.min(theta_in).min(self.gadget.theta);
        self.empty = false;
        if flags & FLAG_ORDERED != 0 {
            for i in 0..count {
                let hash = long_at(pre_longs as usize + i)?;
                if hash >= self.theta {
                    break;
                }
                self.gadget.update(hash)?;
            }
        } else {
            let slots = if flags & FLAG_COMPACT != 0 {
                count
            } else {
                1usize.checked_shl(u32::from(mem[4])).unwrap_or(usize::MAX)
            };
            for i in 0..slots {
                let hash = long_at(pre_longs as usize + i)?;
                if hash <= 0 || hash >= self.theta {
                    continue;
                }
                self.gadget.update(hash)?;
            }
        }
        self.theta = self.theta.min(self.gadget.theta);
        Ok(())
    }

    /// The ordered compact result: the gadget pulled back to the nominal entries under the
    /// smallest theta, in DataSketches' serial version 3.
    fn result(&self) -> Vec<u8> {
        let g = &self.gadget;
        let pulled_back = if g.hashes.len() > NOMINAL {
            kth_smallest(&g.hashes, NOMINAL + 1)
        } else {
            g.theta
        };
        let theta = g.theta.min(pulled_back).min(self.theta);
        let mut hashes: Vec<i64> = g.hashes.iter().copied().filter(|&h| h < theta).collect();
        hashes.sort_unstable();
        let empty = (g.empty && self.empty) || (hashes.is_empty() && theta == MAX_THETA);
        if empty {
            return vec![
                1,
                SERIAL_VERSION,
                FAMILY_COMPACT,
                0,
                0,
                FLAG_READ_ONLY | FLAG_EMPTY | FLAG_COMPACT | FLAG_ORDERED,
                0,
                0,
            ];
        }
        let single = hashes.len() == 1 && theta == MAX_THETA;
        let (pre_longs, flags) = if single {
            (
                1u8,
                FLAG_READ_ONLY | FLAG_COMPACT | FLAG_ORDERED | FLAG_SINGLE_ITEM,
            )
        } else if theta < MAX_THETA {
            (3, FLAG_READ_ONLY | FLAG_COMPACT | FLAG_ORDERED)
        } else {
            (2, FLAG_READ_ONLY | FLAG_COMPACT | FLAG_ORDERED)
        };
        let mut out = Vec::with_capacity((pre_longs as usize + hashes.len()) * 8);
        out.extend_from_slice(&[pre_longs, SERIAL_VERSION, FAMILY_COMPACT, 0, 0, flags]);
        out.extend_from_slice(&SEED_HASH.to_le_bytes());
        if pre_longs > 1 {
            out.extend_from_slice(&(hashes.len() as i32).to_le_bytes());
            out.extend_from_slice(&1.0f32.to_le_bytes());
        }
        if pre_longs > 2 {
            out.extend_from_slice(&theta.to_le_bytes());
        }
        for h in hashes {
            out.extend_from_slice(&h.to_le_bytes());
        }
        out
    }
}

/// Sketches Paimon 1.0's `ThetaSketch.sketchOf` wrote (jshell on the peer's jar, DataSketches
/// 4.2.0): 1, 2, 3; 3, 4; 7 (a single item); none (empty). Unit tests and fuzz seeds (the
/// fuzz targets are not built for wasm).
#[cfg(any(test, not(target_family = "wasm")))]
pub(crate) const JAVA_SKETCHES: [&str; 4] = [
    "02030300001acc93030000000000803f15f97dcbbd86a105c397fc1281709d1eba40b3c1da06695d",
    "02030300001acc93020000000000803f40de2ee1c9db3d08ba40b3c1da06695d",
    "01030300003acc93e0f48bea9983c37c",
    "01030300001e0000",
];

/// Decodes lower-case hex (of the constants above).
#[cfg(any(test, not(target_family = "wasm")))]
pub(crate) fn from_hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .filter_map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        from_hex(s)
    }

    // Paimon 1.0's `ThetaSketch.sketchOf` and `ThetaSketch.union`, run in jshell on the
    // peer's jar (DataSketches 4.2.0).
    const OF_123: &str = JAVA_SKETCHES[0];
    const OF_34: &str = JAVA_SKETCHES[1];
    const OF_7: &str = JAVA_SKETCHES[2];
    const OF_5: &str = "01030300003acc93bd3273724691cc14";
    const EMPTY: &str = JAVA_SKETCHES[3];

    #[test]
    fn unions_are_javas_byte_for_byte() {
        let u = |a: &str, b: &str| union(&hex(a), &hex(b)).unwrap();
        assert_eq!(
            u(OF_123, OF_34),
            hex(
                "02030300001acc93040000000000803f15f97dcbbd86a10540de2ee1c9db3d08c397fc\
                 1281709d1eba40b3c1da06695d"
            )
        );
        assert_eq!(
            u(OF_123, OF_7),
            hex(
                "02030300001acc93040000000000803f15f97dcbbd86a105c397fc1281709d1eba40b3\
                 c1da06695de0f48bea9983c37c"
            )
        );
        assert_eq!(u(EMPTY, EMPTY), hex(EMPTY));
        assert_eq!(u(EMPTY, OF_5), hex(OF_5));
        assert_eq!(u(OF_123, OF_123), hex(OF_123));
    }

    /// An exact-mode sketch of the given hashes (ordered compact).
    fn exact(hashes: &[i64]) -> Vec<u8> {
        let mut u = Union::new();
        for &h in hashes {
            u.gadget.update(h).unwrap();
        }
        u.result()
    }

    #[test]
    fn a_union_beyond_the_nominal_entries_keeps_the_smallest_under_the_next() {
        // 6 000 + 6 000 hashes, 3 000 shared: 9 000 distinct, past the rebuild at 7 681.
        let a: Vec<i64> = (1..=6000).map(|i| i * 1_000_003).collect();
        let b: Vec<i64> = (3001..=9000).map(|i| i * 1_000_003).collect();
        let out = union(&exact(&a), &exact(&b)).unwrap();
        assert_eq!(out[0], 3);
        assert_eq!(i32::from_le_bytes(out[8..12].try_into().unwrap()), 4096);
        let theta = i64::from_le_bytes(out[16..24].try_into().unwrap());
        assert_eq!(theta, 4097 * 1_000_003);
        let first = i64::from_le_bytes(out[24..32].try_into().unwrap());
        let last = i64::from_le_bytes(out[out.len() - 8..].try_into().unwrap());
        assert_eq!((first, last), (1_000_003, 4096 * 1_000_003));
    }

    #[test]
    fn hostile_sketches_are_refused_with_the_reason() {
        let mut cut = hex(OF_123);
        cut.truncate(30);
        assert!(union(&cut, &hex(OF_34)).unwrap_err().contains("cut short"));
        let mut seed = hex(OF_123);
        seed[6] = 0;
        assert!(union(&seed, &hex(OF_34)).unwrap_err().contains("seed hash"));
        let mut negative = hex(OF_34);
        negative[31] = 0x80;
        assert!(union(&negative, &hex(EMPTY))
            .unwrap_err()
            .contains("negative"));
        let mut huge = hex(OF_34);
        huge[8..12].copy_from_slice(&i32::MAX.to_le_bytes());
        assert!(union(&huge, &hex(EMPTY)).is_err());
        let mut v4 = hex(OF_34);
        v4[1] = 4;
        assert!(union(&v4, &hex(EMPTY)).unwrap_err().contains("compressed"));
    }
}
