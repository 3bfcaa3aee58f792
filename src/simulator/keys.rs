//! How much data a file holds and where its keys are, without tracking individual keys.
//!
//! A million flushes of a million rows each cannot be simulated row by row, yet what compaction
//! does depends on which files overlap (rewrite or upgrade) and on how much merging shrinks data
//! (duplicates and deletes). So a file is described by key [`Segment`]s: a key range and the
//! fraction of its keys present. Merging files combines densities as independent coverages,
//! `1 − Π(1 − dᵢ)`, which is exact for uniformly random keys and a fair approximation for
//! skewed ones (a zipf workload is cut into log-spaced segments, each close to uniform).

use super::detmath;
use crate::meta::Key;

/// At most this many segments per file; more are coalesced (keeps merges cheap over millions
/// of flushes).
pub const MAX_SEGMENTS: usize = 12;

/// A key range `[lo, hi]` (inclusive) in which a fraction `density` of the keys is present.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Segment {
    /// First key of the range (inclusive).
    pub lo: i64,
    /// Last key of the range (inclusive); a segment with `hi < lo` is empty and ignored.
    pub hi: i64,
    /// Fraction of the range's keys present, in `[0, 1]`; `1.0` means every key of the range.
    pub density: f64,
}

impl Segment {
    /// Number of keys in the range, `hi − lo + 1`, computed in `f64` so the full `i64` range does
    /// not overflow.
    pub fn len(&self) -> f64 {
        (self.hi as f64 - self.lo as f64) + 1.0
    }
    /// Expected number of rows: [`len`](Self::len) × `density`.
    pub fn rows(&self) -> f64 {
        self.len() * self.density
    }
}

/// Total rows of a segment list.
pub fn rows(segs: &[Segment]) -> f64 {
    segs.iter().map(Segment::rows).sum()
}

/// The union of several files' keys: densities combine as independent coverages.
pub fn union(inputs: &[&[Segment]]) -> Vec<Segment> {
    // Sweep over segment boundaries; keep Σ ln(1 − d) and a count of fully dense segments so
    // leaving a segment is a subtraction, not a division by zero.
    let mut edges: Vec<(i64, bool, f64)> = Vec::new();
    for segs in inputs {
        for s in segs.iter() {
            if s.density <= 0.0 || s.hi < s.lo {
                continue;
            }
            edges.push((s.lo, true, s.density));
            if s.hi < i64::MAX {
                edges.push((s.hi + 1, false, s.density));
            }
        }
    }
    edges.sort_by_key(|e| e.0);
    let mut out: Vec<Segment> = Vec::new();
    let (mut log_miss, mut full, mut open) = (0.0f64, 0usize, 0usize);
    let mut i = 0;
    while i < edges.len() {
        let at = edges[i].0;
        while i < edges.len() && edges[i].0 == at {
            let (_, enter, d) = edges[i];
            let sign = if enter { 1.0 } else { -1.0 };
            if d >= 1.0 {
                if enter {
                    full += 1
                } else {
                    full -= 1
                }
            } else {
                log_miss += sign * detmath::ln(1.0 - d);
            }
            if enter {
                open += 1
            } else {
                open -= 1
            }
            i += 1;
        }
        if open == 0 || i >= edges.len() {
            continue;
        }
        let next = edges[i].0;
        let density = if full > 0 {
            1.0
        } else {
            (1.0 - detmath::exp(log_miss)).clamp(0.0, 1.0)
        };
        if density > 0.0 {
            out.push(Segment {
                lo: at,
                hi: next - 1,
                density,
            });
        }
    }
    coalesce(out)
}

/// Joins adjacent segments of similar density, then the closest pairs, until at most
/// [`MAX_SEGMENTS`] remain. Row totals are preserved.
pub fn coalesce(segs: Vec<Segment>) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::with_capacity(segs.len());
    for s in segs {
        if let Some(last) = out.last_mut() {
            let touching = last.hi.checked_add(1) == Some(s.lo);
            if touching && (last.density - s.density).abs() <= 0.02 * last.density.max(s.density) {
                *last = join(last, &s);
                continue;
            }
        }
        out.push(s);
    }
    while out.len() > MAX_SEGMENTS {
        // Join the adjacent pair whose merge distorts the least (smallest joined extent).
        let i = (0..out.len() - 1)
            .min_by(|&a, &b| {
                let ea = out[a + 1].hi as f64 - out[a].lo as f64;
                let eb = out[b + 1].hi as f64 - out[b].lo as f64;
                ea.total_cmp(&eb)
            })
            .unwrap_or(0);
        let joined = join(&out[i], &out[i + 1]);
        out[i] = joined;
        out.remove(i + 1);
    }
    out
}

fn join(a: &Segment, b: &Segment) -> Segment {
    let lo = a.lo.min(b.lo);
    let hi = a.hi.max(b.hi);
    let len = (hi as f64 - lo as f64) + 1.0;
    Segment {
        lo,
        hi,
        density: ((a.rows() + b.rows()) / len).clamp(0.0, 1.0),
    }
}

/// Scales every density (deletes dropped by a compaction remove rows everywhere alike).
pub fn scale(segs: &mut [Segment], factor: f64) {
    for s in segs {
        s.density = (s.density * factor).clamp(0.0, 1.0);
    }
}

/// Cuts a segment list into `parts` pieces of about equal rows, in key order: the files a
/// rolling writer produces when one output exceeds the target file size.
pub fn split(segs: &[Segment], parts: usize) -> Vec<Vec<Segment>> {
    let total = rows(segs);
    if parts <= 1 || total <= 0.0 {
        return vec![segs.to_vec()];
    }
    let per = total / parts as f64;
    let mut out: Vec<Vec<Segment>> = vec![Vec::new()];
    let mut acc = 0.0;
    for s in segs {
        let mut cur = *s;
        loop {
            let room = per - acc;
            if out.len() == parts || cur.rows() <= room + 1e-9 {
                acc += cur.rows();
                out.last_mut().expect("non-empty").push(cur);
                break;
            }
            // Keys needed to fill the current piece.
            let keys = (room / cur.density).floor().max(1.0) as i64;
            let cut = cur.lo.saturating_add(keys - 1);
            if cut >= cur.hi {
                acc += cur.rows();
                out.last_mut().expect("non-empty").push(cur);
                break;
            }
            out.last_mut().expect("non-empty").push(Segment {
                lo: cur.lo,
                hi: cut,
                density: cur.density,
            });
            out.push(Vec::new());
            acc = 0.0;
            cur = Segment {
                lo: cut + 1,
                hi: cur.hi,
                density: cur.density,
            };
        }
    }
    out.retain(|p| !p.is_empty());
    out
}

/// An order-preserving (not strictly) map of any key onto `i64`: keys made by
/// [`Key::from_i64`] decode exactly; other keys use their first 8 bytes.
pub fn key_to_i64(key: &Key) -> i64 {
    if let Some(v) = key.as_i64() {
        return v;
    }
    let mut b = [0u8; 8];
    for (d, s) in b.iter_mut().zip(key.as_bytes()) {
        *d = *s;
    }
    (u64::from_be_bytes(b) ^ (1 << 63)) as i64
}

/// Where the keys of one flush land.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum KeyDistribution {
    /// Every key of the key space equally likely.
    Uniform,
    /// Rank `r` (0-based, hot keys first) has weight `1 / (r + 1)^s`.
    Zipf {
        /// Exponent of the power law, `0..=4` (checked by
        /// [`SimConfig::validate`](crate::simulator::SimConfig::validate)): 0 is uniform, larger
        /// values concentrate the writes on fewer hot keys.
        s: f64,
    },
    /// New keys are ever increasing (an id or a timestamp): flushes do not overlap.
    Sequential,
}

/// Key-space buckets a distribution is cut into, with the probability mass of each. Uniform is
/// one bucket; zipf uses log-spaced buckets so each is nearly uniform inside.
pub fn mass_buckets(dist: &KeyDistribution, lo: i64, hi: i64) -> Vec<(i64, i64, f64)> {
    let n = (hi - lo + 1).max(1) as f64;
    match dist {
        KeyDistribution::Uniform | KeyDistribution::Sequential => vec![(lo, hi, 1.0)],
        KeyDistribution::Zipf { s } => {
            let s = s.max(0.0);
            // Integral approximation of Σ_{r=a}^{b} (r+1)^-s.
            let cum = |x: f64| -> f64 {
                if (s - 1.0).abs() < 1e-9 {
                    detmath::ln(x + 1.0)
                } else {
                    (detmath::powf(x + 1.0, 1.0 - s) - 1.0) / (1.0 - s)
                }
            };
            let mut out = Vec::new();
            let mut a = 0f64;
            let mut width = 1f64;
            while a < n {
                let b = (a + width).min(n);
                let m = cum(b) - cum(a);
                out.push((lo + a as i64, lo + b as i64 - 1, m.max(0.0)));
                a = b;
                width *= 4.0;
            }
            let total: f64 = out.iter().map(|x| x.2).sum();
            for x in &mut out {
                x.2 /= total.max(f64::MIN_POSITIVE);
            }
            out
        }
    }
}

/// The distinct keys hit by `samples` draws from the distribution over `[lo, hi]`, as segments:
/// a bucket of `len` keys and mass `m` is covered with density `1 − e^(−samples·m/len)`.
pub fn sample_segments(dist: &KeyDistribution, lo: i64, hi: i64, samples: f64) -> Vec<Segment> {
    if samples <= 0.0 || hi < lo {
        return Vec::new();
    }
    mass_buckets(dist, lo, hi)
        .into_iter()
        .filter(|b| b.2 > 0.0)
        .map(|(a, b, m)| {
            let len = (b as f64 - a as f64) + 1.0;
            Segment {
                lo: a,
                hi: b,
                density: 1.0 - detmath::exp(-samples * m / len),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disjoint_union_adds_rows() {
        let a = [Segment {
            lo: 0,
            hi: 99,
            density: 1.0,
        }];
        let b = [Segment {
            lo: 100,
            hi: 199,
            density: 0.5,
        }];
        let u = union(&[&a, &b]);
        assert!((rows(&u) - 150.0).abs() < 1e-6, "{u:?}");
    }

    #[test]
    fn overlapping_union_combines_coverage() {
        let a = [Segment {
            lo: 0,
            hi: 999,
            density: 0.5,
        }];
        let u = union(&[&a, &a]);
        assert!((rows(&u) - 750.0).abs() < 1e-6);
        let full = [Segment {
            lo: 0,
            hi: 999,
            density: 1.0,
        }];
        assert!((rows(&union(&[&a, &full])) - 1000.0).abs() < 1e-6);
    }

    #[test]
    fn split_keeps_rows_and_order() {
        let s = [Segment {
            lo: 0,
            hi: 999,
            density: 0.8,
        }];
        let parts = split(&s, 4);
        assert_eq!(parts.len(), 4);
        let total: f64 = parts.iter().map(|p| rows(p)).sum();
        assert!((total - 800.0).abs() < 1.0);
        for w in parts.windows(2) {
            assert!(w[0].last().unwrap().hi < w[1][0].lo);
        }
    }

    #[test]
    fn zipf_mass_sums_to_one_and_is_skewed() {
        let b = mass_buckets(&KeyDistribution::Zipf { s: 1.0 }, 0, 1_000_000);
        let total: f64 = b.iter().map(|x| x.2).sum();
        assert!((total - 1.0).abs() < 1e-9);
        assert!(b[0].2 > b.last().unwrap().2 / (b.last().unwrap().1 - b.last().unwrap().0) as f64);
        assert_eq!(b.last().unwrap().1, 1_000_000);
    }

    #[test]
    fn coalesce_caps_segments() {
        let segs: Vec<Segment> = (0..40)
            .map(|i| Segment {
                lo: i * 10,
                hi: i * 10 + 9,
                density: 0.1 + (i % 3) as f64 * 0.3,
            })
            .collect();
        let before = rows(&segs);
        let c = coalesce(segs);
        assert!(c.len() <= MAX_SEGMENTS);
        assert!((rows(&c) - before).abs() < 1e-6);
    }

    #[test]
    fn key_mapping_preserves_order() {
        assert_eq!(key_to_i64(&Key::from_i64(-3)), -3);
        let a = key_to_i64(&Key::from_bytes(vec![1u8, 2, 3]));
        let b = key_to_i64(&Key::from_bytes(vec![1u8, 2, 4, 9, 9, 9, 9, 9, 9]));
        assert!(a < b);
    }
}
