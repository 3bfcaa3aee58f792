//! A small seeded random number generator (SplitMix64).
//!
//! The simulation must give the same run for the same seed on every platform (native tests and
//! the browser compare their results), so it carries its own generator instead of depending on
//! a crate whose stream might change between versions.

/// SplitMix64: tiny, fast, and good enough for workload jitter.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Rng(u64);

impl Rng {
    /// A generator whose stream depends only on `seed`: the same seed gives the same stream on
    /// every platform.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }

    /// The next 64 uniformly distributed bits (one SplitMix64 step).
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `1 ± jitter` (uniform), never below 0.05: how much one flush or interval deviates from
    /// the configured mean.
    pub fn jitter(&mut self, jitter: f64) -> f64 {
        (1.0 + jitter * (2.0 * self.next_f64() - 1.0)).max(0.05)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let x = Rng::new(8).next_f64();
        assert!((0.0..1.0).contains(&x));
    }
}
