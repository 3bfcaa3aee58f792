//! `exp` and `ln` from basic arithmetic only.
//!
//! The platform's `f64::exp`/`ln`/`powf` come from the system math library natively and from
//! a different implementation in WebAssembly; they may differ in the last bit. One bit is
//! enough to move a simulated file size by a byte and change a decision's digest, and the
//! browser run must equal the native one. Addition, multiplication, division and rounding are
//! exact IEEE operations everywhere, so these functions give identical results on every target.

const LN2: f64 = std::f64::consts::LN_2;
/// ln 2 = LN2_HI + LN2_LO, LN2_HI with trailing zero bits (fdlibm's split).
const LN2_HI: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000);
const LN2_LO: f64 = f64::from_bits(0x3DEA_39EF_3579_3C76);

/// `e^x`, relative error about 1e-15.
pub fn exp(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x > 709.0 {
        return f64::INFINITY;
    }
    if x < -745.0 {
        return 0.0;
    }
    // x = k·ln2 + r with |r| ≤ ln2/2, e^x = 2^k · e^r.
    let k = (x / LN2).round();
    // ln 2 split in two (Cody–Waite) so k·ln2 is subtracted without losing digits.
    let r = (x - k * LN2_HI) - k * LN2_LO;
    let (mut term, mut sum) = (1.0f64, 1.0f64);
    for i in 1..=20 {
        term *= r / i as f64;
        sum += term;
    }
    scale2(sum, k as i32)
}

/// `ln x` for `x > 0` (NaN otherwise), relative error about 1e-15.
pub fn ln(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_infinite() {
        return x;
    }
    // Normalise to m·2^e with m in [√½, √2), then ln m = 2·atanh((m−1)/(m+1)).
    let (mut m, mut e) = (x, 0i32);
    while m >= std::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    while m < std::f64::consts::FRAC_1_SQRT_2 {
        m *= 2.0;
        e -= 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let (mut term, mut sum) = (s, 0.0f64);
    for i in 0..24 {
        sum += term / (2 * i + 1) as f64;
        term *= s2;
    }
    2.0 * sum + e as f64 * LN2
}

/// `x^y` for `x > 0`.
pub fn powf(x: f64, y: f64) -> f64 {
    exp(y * ln(x))
}

fn scale2(v: f64, k: i32) -> f64 {
    // Multiplying by powers of two is exact (outside subnormals); split large exponents.
    let mut v = v;
    let mut k = k;
    while k > 1000 {
        v *= f64::from_bits(((1000 + 1023) as u64) << 52);
        k -= 1000;
    }
    while k < -1000 {
        v *= f64::from_bits(((-1000 + 1023) as u64) << 52);
        k += 1000;
    }
    v * f64::from_bits(((k + 1023) as u64) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_to_the_platform() {
        for x in [
            -700.0, -30.0, -1.5, -1e-9, 0.0, 1e-12, 0.3, 1.0, 2.5, 40.0, 700.0,
        ] {
            let (a, b) = (exp(x), x.exp());
            assert!(
                (a - b).abs() <= 1e-14 * b.abs().max(f64::MIN_POSITIVE),
                "exp({x}): {a} vs {b}"
            );
        }
        for x in [
            1e-300, 1e-9, 0.1, 0.5, 0.999999, 1.0, 1.5, 2.0, 10.0, 1e9, 1e300,
        ] {
            let (a, b) = (ln(x), x.ln());
            assert!(
                (a - b).abs() <= 1e-14 * b.abs().max(1e-300) + 1e-300,
                "ln({x}): {a} vs {b}"
            );
        }
        assert!((powf(1000.0, 0.25) - 1000f64.powf(0.25)).abs() < 1e-12);
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(exp(0.0), 1.0);
    }
}
