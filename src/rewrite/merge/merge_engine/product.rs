//! The arithmetic of the `product` aggregate function, as Paimon's `FieldProductAgg` (Java
//! HEAD) computes it: integers multiply exactly (an overflow fails the merge, where Paimon
//! throws `ArithmeticException`) and divide, on retraction, with Java's truncating division
//! (by zero fails); floating point is IEEE; DECIMAL(p, s) multiplies exactly and rounds the
//! product back to scale `s` half up (away from zero), a result wider than `p` digits being
//! null, and divides exactly (a quotient whose decimal expansion does not terminate fails, as
//! Java's `BigDecimal.divide` does) before the same rounding.

use arrow_schema::DataType;

use crate::value::Datum;

/// Why a product step cannot be computed: Paimon fails the merge there too.
pub(super) type Failure = String;

/// `a * b` (or `a / b` for a retraction) of two non-null values of type `t`.
pub(super) fn step(a: Datum, b: Datum, retract: bool, t: &DataType) -> Result<Datum, Failure> {
    macro_rules! int {
        ($v:ident, $x:expr, $y:expr, $name:literal) => {
            if retract {
                if $y == 0 {
                    return Err(format!("{} / 0: division by zero", $x));
                }
                Datum::$v($x.wrapping_div($y))
            } else {
                Datum::$v(
                    $x.checked_mul($y)
                        .ok_or_else(|| format!("{} overflow: {} * {}", $name, $x, $y))?,
                )
            }
        };
    }
    Ok(match (a, b) {
        (Datum::TinyInt(x), Datum::TinyInt(y)) => int!(TinyInt, x, y, "byte"),
        (Datum::SmallInt(x), Datum::SmallInt(y)) => int!(SmallInt, x, y, "short"),
        (Datum::Int(x), Datum::Int(y)) => int!(Int, x, y, "integer"),
        (Datum::BigInt(x), Datum::BigInt(y)) => int!(BigInt, x, y, "long"),
        (Datum::Float(x), Datum::Float(y)) => Datum::Float(if retract { x / y } else { x * y }),
        (Datum::Double(x), Datum::Double(y)) => Datum::Double(if retract { x / y } else { x * y }),
        (Datum::Decimal(x), Datum::Decimal(y)) => {
            let (precision, scale) = match t {
                DataType::Decimal128(p, s) => (u32::from(*p), u32::try_from(*s).unwrap_or(0)),
                _ => (38, 0),
            };
            let unscaled = if retract {
                divide(x, y, scale)?
            } else {
                multiply(x, y, scale)
            };
            match unscaled {
                Some(v) if v.unsigned_abs() < 10u128.pow(precision.min(38)) => Datum::Decimal(v),
                _ => Datum::Null,
            }
        }
        (a, _) => a,
    })
}

/// A 256-bit unsigned integer as four 64-bit limbs, least significant first: the exact
/// product of two 128-bit magnitudes.
type U256 = [u64; 4];

fn mul_u128(a: u128, b: u128) -> U256 {
    let (a, b) = ([a as u64, (a >> 64) as u64], [b as u64, (b >> 64) as u64]);
    let mut out = [0u64; 4];
    for (i, &x) in a.iter().enumerate() {
        let mut carry = 0u128;
        for (j, &y) in b.iter().enumerate() {
            let cur = u128::from(out[i + j]) + u128::from(x) * u128::from(y) + carry;
            out[i + j] = cur as u64;
            carry = cur >> 64;
        }
        let mut k = i + 2;
        while carry > 0 && k < 4 {
            let cur = u128::from(out[k]) + carry;
            out[k] = cur as u64;
            carry = cur >> 64;
            k += 1;
        }
    }
    out
}

/// `n / d` in place, returning the remainder.
fn div_small(n: &mut U256, d: u64) -> u64 {
    let mut rem = 0u128;
    for limb in n.iter_mut().rev() {
        let cur = (rem << 64) | u128::from(*limb);
        *limb = (cur / u128::from(d)) as u64;
        rem = cur % u128::from(d);
    }
    rem as u64
}

/// The magnitude as a `u128`, when it fits.
fn to_u128(n: &U256) -> Option<u128> {
    (n[2] == 0 && n[3] == 0).then(|| u128::from(n[0]) | (u128::from(n[1]) << 64))
}

/// Applies `negative` to a magnitude, when the result fits an `i128`.
fn signed(magnitude: u128, negative: bool) -> Option<i128> {
    if negative {
        0i128.checked_sub_unsigned(magnitude)
    } else {
        i128::try_from(magnitude).ok()
    }
}

/// The unscaled product of two unscaled values of scale `scale`, rounded back to that scale
/// half up; `None` when it exceeds 38 digits.
fn multiply(x: i128, y: i128, scale: u32) -> Option<i128> {
    let mut n = mul_u128(x.unsigned_abs(), y.unsigned_abs());
    // Dropping `scale` digits one at a time: the first digit dropped last decides the
    // rounding (half up: a dropped fraction of at least one half rounds away from zero).
    let mut last = 0;
    for _ in 0..scale {
        last = div_small(&mut n, 10);
    }
    let mut magnitude = to_u128(&n)?;
    if scale > 0 && last >= 5 {
        magnitude = magnitude.checked_add(1)?;
    }
    signed(magnitude, (x < 0) != (y < 0))
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The unscaled quotient of two unscaled values of one scale, at that scale, rounded half
/// up; an error where Java's exact division throws (division by zero, a non-terminating
/// expansion), `None` when the result exceeds 38 digits or the arithmetic 128 bits.
fn divide(x: i128, y: i128, scale: u32) -> Result<Option<i128>, Failure> {
    if y == 0 {
        return Err("decimal division by zero".to_string());
    }
    let (a, b) = (x.unsigned_abs(), y.unsigned_abs());
    // x/y terminates exactly when the reduced denominator has no prime factor but 2 and 5.
    let mut d = b / gcd(a, b);
    for p in [2, 5] {
        while d % p == 0 {
            d /= p;
        }
    }
    if d != 1 {
        return Err(format!(
            "non-terminating decimal expansion of a quotient (unscaled {x} / {y})"
        ));
    }
    let Some(n) = 10u128.checked_pow(scale).and_then(|p| a.checked_mul(p)) else {
        return Ok(None);
    };
    let (q, r) = (n / b, n % b);
    // Half up: a remainder of at least half the divisor rounds away from zero.
    let q = if r >= b - r {
        q.checked_add(1)
    } else {
        Some(q)
    };
    Ok(q.and_then(|q| signed(q, (x < 0) != (y < 0))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(p: u8, s: i8) -> DataType {
        DataType::Decimal128(p, s)
    }

    #[test]
    fn integers_multiply_exactly_and_divide_truncating() {
        let t = DataType::Int32;
        assert_eq!(
            step(Datum::Int(-7), Datum::Int(6), false, &t),
            Ok(Datum::Int(-42))
        );
        assert!(step(Datum::Int(i32::MAX), Datum::Int(2), false, &t).is_err());
        assert_eq!(
            step(Datum::Int(-7), Datum::Int(2), true, &t),
            Ok(Datum::Int(-3))
        );
        assert!(step(Datum::Int(1), Datum::Int(0), true, &t).is_err());
        // Java's MIN / -1 wraps to MIN.
        assert_eq!(
            step(
                Datum::BigInt(i64::MIN),
                Datum::BigInt(-1),
                true,
                &DataType::Int64
            ),
            Ok(Datum::BigInt(i64::MIN))
        );
    }

    #[test]
    fn decimals_round_half_up_to_their_scale() {
        let t = dec(10, 2);
        // 1.25 * 1.10 = 1.3750 -> 1.38; -1.25 * 1.10 = -1.38
        assert_eq!(
            step(Datum::Decimal(125), Datum::Decimal(110), false, &t),
            Ok(Datum::Decimal(138))
        );
        assert_eq!(
            step(Datum::Decimal(-125), Datum::Decimal(110), false, &t),
            Ok(Datum::Decimal(-138))
        );
        // 1.23 * 1.01 = 1.2423 -> 1.24
        assert_eq!(
            step(Datum::Decimal(123), Datum::Decimal(101), false, &t),
            Ok(Datum::Decimal(124))
        );
        // wider than the precision: null
        assert_eq!(
            step(
                Datum::Decimal(9_999_999_999),
                Datum::Decimal(1000),
                false,
                &t
            ),
            Ok(Datum::Null)
        );
        // 38 digits at scale 18: the exact product needs more than 128 bits
        let t = dec(38, 18);
        let thirteen = 13 * 10i128.pow(18);
        assert_eq!(
            step(
                Datum::Decimal(thirteen),
                Datum::Decimal(thirteen),
                false,
                &t
            ),
            Ok(Datum::Decimal(169 * 10i128.pow(18)))
        );
    }

    #[test]
    fn decimal_division_is_exact_or_fails() {
        let t = dec(10, 2);
        // 1.00 / 8.00 = 0.125 -> 0.13
        assert_eq!(
            step(Datum::Decimal(100), Datum::Decimal(800), true, &t),
            Ok(Datum::Decimal(13))
        );
        // 1.00 / 3.00 does not terminate
        assert!(step(Datum::Decimal(100), Datum::Decimal(300), true, &t).is_err());
        assert!(step(Datum::Decimal(100), Datum::Decimal(0), true, &t).is_err());
        // -6.00 / 4.00 = -1.5 -> -1.50
        assert_eq!(
            step(Datum::Decimal(-600), Datum::Decimal(400), true, &t),
            Ok(Datum::Decimal(-150))
        );
    }
}
