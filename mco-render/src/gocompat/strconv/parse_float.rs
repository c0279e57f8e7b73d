//! Go's `strconv.ParseFloat(s, 32)`, reduced to "value or error".
//!
//! Accepted: `[+-]inf`, `[+-]infinity`, `nan` (any case, the whole string); decimal
//! `[+-]digits[.digits][e[+-]digits]` with at least one digit; hexadecimal
//! `[+-]0x hexdigits[.hexdigits] p[+-]digits` (the `p` exponent is required). Underscores may
//! separate digits (and follow a `0x` prefix). A finite input whose value overflows `f32` is a
//! range error; underflow rounds to zero or a subnormal without error.

/// Parses like Go; `None` on a syntax or range error.
pub(crate) fn parse_f32(s: &str) -> Option<f32> {
    if let Some(v) = special(s) {
        return Some(v);
    }
    let num = read(s)?;
    let v = if num.hex {
        hex_value(&num)?
    } else {
        let cleaned: String = s.chars().filter(|&c| c != '_').collect();
        let v: f32 = cleaned.parse().ok()?;
        if v.is_infinite() {
            return None;
        }
        v
    };
    Some(if num.neg { -v.abs() } else { v })
}

/// `inf`, `infinity` (optionally signed) and `nan`, case-insensitive, as the whole input.
fn special(s: &str) -> Option<f32> {
    let lower = s.to_ascii_lowercase();
    let (neg, body) = match lower.as_bytes().first() {
        Some(b'+') => (false, &lower[1..]),
        Some(b'-') => (true, &lower[1..]),
        _ => {
            if lower == "nan" {
                return Some(f32::NAN);
            }
            (false, lower.as_str())
        }
    };
    if body == "inf" || body == "infinity" {
        Some(if neg {
            f32::NEG_INFINITY
        } else {
            f32::INFINITY
        })
    } else {
        None
    }
}

/// The pieces of a syntactically valid number.
struct Number {
    neg: bool,
    hex: bool,
    /// Hex only: up to 16 significant digits.
    mantissa: u64,
    /// Hex only: the value is `mantissa * 2^exp2` (plus a little when `trunc`).
    exp2: i64,
    /// Hex only: nonzero digits were dropped after the first 16.
    trunc: bool,
}

fn hex_digit(c: u8) -> Option<u64> {
    (c as char).to_digit(16).map(u64::from)
}

/// Checks the grammar; the whole input must be consumed.
fn read(s: &str) -> Option<Number> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut neg = false;
    if let Some(&c) = b.first() {
        if c == b'+' || c == b'-' {
            neg = c == b'-';
            i = 1;
        }
    }
    let hex = i + 2 < b.len() && b[i] == b'0' && (b[i + 1] | 0x20) == b'x';
    if hex {
        i += 2;
    }
    let mut underscores = false;
    let mut saw_dot = false;
    let mut saw_digits = false;
    // Significant digits seen, digits kept in the mantissa, and the digit count before the point
    // (leading zeros lower it: they only move the point).
    let (mut nd, mut nd_mant, mut dp) = (0i64, 0i64, 0i64);
    let mut mantissa = 0u64;
    let mut trunc = false;
    while i < b.len() {
        let c = b[i];
        if c == b'_' {
            underscores = true;
        } else if c == b'.' {
            if saw_dot {
                break;
            }
            saw_dot = true;
            dp = nd;
        } else if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw_digits = true;
            if c == b'0' && nd == 0 {
                dp -= 1;
            } else {
                nd += 1;
                if hex && nd_mant < 16 {
                    mantissa = mantissa * 16 + hex_digit(c).unwrap_or(0);
                    nd_mant += 1;
                } else if c != b'0' {
                    trunc = true;
                }
            }
        } else {
            break;
        }
        i += 1;
    }
    if !saw_digits {
        return None;
    }
    if !saw_dot {
        dp = nd;
    }
    let exp_char = if hex { b'p' } else { b'e' };
    let mut e = 0i64;
    if i < b.len() && (b[i] | 0x20) == exp_char {
        i += 1;
        let mut esign = 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            esign = if b[i] == b'-' { -1 } else { 1 };
            i += 1;
        }
        if i >= b.len() || !b[i].is_ascii_digit() {
            return None;
        }
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            if b[i] == b'_' {
                underscores = true;
            } else if e < 10000 {
                e = e * 10 + i64::from(b[i] - b'0');
            }
            i += 1;
        }
        e *= esign;
    } else if hex {
        return None;
    }
    if underscores && !underscores_ok(&s[..i]) {
        return None;
    }
    if i != b.len() {
        return None;
    }
    Some(Number {
        neg,
        hex,
        mantissa,
        exp2: (dp - nd_mant) * 4 + e,
        trunc,
    })
}

/// Underscores must sit between digits, or between a base prefix and a digit.
fn underscores_ok(s: &str) -> bool {
    let b = s.strip_prefix(['+', '-']).unwrap_or(s).as_bytes();
    // Last class seen: b'^' start, b'0' digit or prefix, b'_' underscore, b'!' other.
    let mut saw = b'^';
    let mut i = 0;
    let mut hex = false;
    if b.len() >= 2 && b[0] == b'0' && matches!(b[1] | 0x20, b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = (b[1] | 0x20) == b'x';
    }
    for &c in &b[i..] {
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
    }
    saw != b'_'
}

/// Rounds `mantissa * 2^exp2` (with `trunc` as a sticky bit) to the nearest `f32`, ties to even.
/// `None` when it overflows.
fn hex_value(num: &Number) -> Option<f32> {
    let m = num.mantissa;
    if m == 0 {
        return Some(0.0);
    }
    let len = i64::from(64 - m.leading_zeros());
    // Binary exponent of the leading bit.
    let top = num.exp2.saturating_add(len - 1);
    if top > 127 {
        return None;
    }
    // Significant bits an f32 keeps at this magnitude (fewer for subnormals).
    let keep = if top >= -126 { 24 } else { top + 150 };
    if keep < 0 {
        return Some(0.0);
    }
    let shift = len - keep;
    let (sig, scale) = if shift <= 0 {
        (m, num.exp2)
    } else {
        let shift_u = u32::try_from(shift).ok()?;
        let sig = m >> shift_u;
        let rem = m & ((1u64 << shift_u) - 1);
        let half = 1u64 << (shift_u - 1);
        let up = rem > half || (rem == half && (num.trunc || sig & 1 == 1));
        (sig + u64::from(up), num.exp2 + shift)
    };
    // sig < 2^25 and the scale is small, so this is exact in f64.
    let v = sig as f64 * 2f64.powi(i32::try_from(scale).ok()?);
    if v > f64::from(f32::MAX) {
        return None;
    }
    Some(v as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_forms() {
        assert_eq!(parse_f32("0.5"), Some(0.5));
        assert_eq!(parse_f32(".5"), Some(0.5));
        assert_eq!(parse_f32("5."), Some(5.0));
        assert_eq!(parse_f32("+0.5"), Some(0.5));
        assert_eq!(parse_f32("-1"), Some(-1.0));
        assert_eq!(parse_f32("1e-1"), Some(0.1));
        assert_eq!(parse_f32("1E+2"), Some(100.0));
        assert_eq!(parse_f32("1_0"), Some(10.0));
        assert_eq!(parse_f32("1e-50"), Some(0.0));
        for bad in [
            "", ".", "e1", "1e", "1e+", "abc", "1_", "_1", "1__0", "1._5", "0x", "1p1", "1e400",
            "3.4e39", " 1", "1 ", "+nan", "infx", "in", "1.2.3",
        ] {
            assert_eq!(parse_f32(bad), None, "{bad}");
        }
    }

    #[test]
    fn specials() {
        assert_eq!(parse_f32("Inf"), Some(f32::INFINITY));
        assert_eq!(parse_f32("-infinity"), Some(f32::NEG_INFINITY));
        assert!(parse_f32("NaN").is_some_and(f32::is_nan));
    }

    #[test]
    fn hexadecimal_forms() {
        assert_eq!(parse_f32("0x1p-2"), Some(0.25));
        assert_eq!(parse_f32("0X1.8P1"), Some(3.0));
        assert_eq!(parse_f32("0x_1p0"), Some(1.0));
        assert_eq!(parse_f32("-0x10p0"), Some(-16.0));
        assert_eq!(parse_f32("0x1p-149"), Some(f32::from_bits(1)));
        assert_eq!(parse_f32("0x1p-150"), Some(0.0));
        assert_eq!(parse_f32("0x1.8p-150"), Some(f32::from_bits(1)));
        assert_eq!(parse_f32("0x1.fffffe8p127"), Some(f32::MAX));
        assert_eq!(parse_f32("0x1p128"), None);
        // Ties go to even; a dropped nonzero digit breaks the tie upwards.
        assert_eq!(parse_f32("0x1.000001p0"), Some(1.0));
        assert_eq!(
            parse_f32("0x1.0000010000000001p0"),
            Some(1.0 + f32::EPSILON)
        );
        for bad in ["0x1", "0x1.8", "0xp1", "0x1p", "0x1_p1"] {
            assert_eq!(parse_f32(bad), None, "{bad}");
        }
    }
}
