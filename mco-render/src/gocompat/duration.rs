//! Go `time.Duration`: parsing (`time.ParseDuration`) and text (`Duration.String`).

use super::quote::time_quote;

/// Why a duration string does not parse; `Display` is Go's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not a duration at all (or out of range).
    #[error("time: invalid duration {}", time_quote(.0))]
    Invalid(String),
    /// A number without a unit.
    #[error("time: missing unit in duration {}", time_quote(.0))]
    MissingUnit(String),
    /// A unit Go does not know.
    #[error("time: unknown unit {} in duration {}", time_quote(.0), time_quote(.1))]
    UnknownUnit(String, String),
}

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1000 * NANOSECOND;
const MILLISECOND: u64 = 1000 * MICROSECOND;
const SECOND: u64 = 1000 * MILLISECOND;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

fn unit_of(u: &str) -> Option<u64> {
    Some(match u {
        "ns" => NANOSECOND,
        "us" | "\u{b5}s" | "\u{3bc}s" => MICROSECOND,
        "ms" => MILLISECOND,
        "s" => SECOND,
        "m" => MINUTE,
        "h" => HOUR,
        _ => return None,
    })
}

/// Parses a duration as Go's `time.ParseDuration` does, in nanoseconds.
pub fn parse_duration(orig: &str) -> Result<i64, DurationError> {
    let invalid = || DurationError::Invalid(orig.to_string());
    let mut s = orig.as_bytes();
    let mut neg = false;
    if let Some((&c, rest)) = s.split_first() {
        if c == b'-' || c == b'+' {
            neg = c == b'-';
            s = rest;
        }
    }
    if s == b"0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !(s[0] == b'.' || s[0].is_ascii_digit()) {
            return Err(invalid());
        }
        // Integer part.
        let start = s.len();
        let mut v: u64 = 0;
        let mut i = 0;
        while i < s.len() && s[i].is_ascii_digit() {
            if v > (1 << 63) / 10 {
                return Err(invalid());
            }
            v = v * 10 + u64::from(s[i] - b'0');
            if v > 1 << 63 {
                return Err(invalid());
            }
            i += 1;
        }
        let pre = i != 0;
        s = &s[i..];
        // Fraction.
        let mut f: u64 = 0;
        let mut scale: f64 = 1.0;
        let mut post = false;
        if let Some((&b'.', rest)) = s.split_first() {
            s = rest;
            let mut j = 0;
            let mut overflow = false;
            while j < s.len() && s[j].is_ascii_digit() {
                if !overflow {
                    if f > (1 << 63) / 10 {
                        overflow = true;
                    } else {
                        let y = f * 10 + u64::from(s[j] - b'0');
                        if y > 1 << 63 {
                            overflow = true;
                        } else {
                            f = y;
                            scale *= 10.0;
                        }
                    }
                }
                j += 1;
            }
            post = j != 0;
            s = &s[j..];
        }
        let _ = start;
        if !pre && !post {
            return Err(invalid());
        }
        // Unit.
        let mut k = 0;
        while k < s.len() && s[k] != b'.' && !s[k].is_ascii_digit() {
            k += 1;
        }
        if k == 0 {
            return Err(DurationError::MissingUnit(orig.to_string()));
        }
        let u = String::from_utf8_lossy(&s[..k]).into_owned();
        s = &s[k..];
        let unit = unit_of(&u).ok_or_else(|| DurationError::UnknownUnit(u, orig.to_string()))?;
        if v > (1 << 63) / unit {
            return Err(invalid());
        }
        v *= unit;
        if f > 0 {
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > 1 << 63 {
                return Err(invalid());
            }
        }
        total += v;
        if total > 1 << 63 {
            return Err(invalid());
        }
    }
    if neg {
        return Ok((total as i64).wrapping_neg());
    }
    if total > (1 << 63) - 1 {
        return Err(invalid());
    }
    Ok(total as i64)
}

/// Writes `v` with `prec` fractional digits, dropping trailing zeros (and the dot).
fn fmt_frac(buf: &mut Vec<u8>, mut v: u64, prec: usize) -> u64 {
    let mut digits = Vec::new();
    let mut print = false;
    for _ in 0..prec {
        let d = v % 10;
        print = print || d != 0;
        if print {
            digits.push(b'0' + d as u8);
        }
        v /= 10;
    }
    if print {
        digits.reverse();
        buf.push(b'.');
        buf.extend_from_slice(&digits);
    }
    v
}

/// Go's `Duration.String()`: `72h3m0.5s`, `1.5ms`, `0s`.
pub fn format_duration(d: i64) -> String {
    let neg = d < 0;
    let mut u = d.unsigned_abs();
    let mut out: Vec<u8> = Vec::new();
    if u < SECOND {
        if u == 0 {
            return "0s".to_string();
        }
        let (prec, unit): (usize, &str) = if u < MICROSECOND {
            (0, "ns")
        } else if u < MILLISECOND {
            (3, "\u{b5}s")
        } else {
            (6, "ms")
        };
        let mut frac = Vec::new();
        let int = fmt_frac(&mut frac, u, prec);
        out.extend_from_slice(int.to_string().as_bytes());
        out.extend_from_slice(&frac);
        out.extend_from_slice(unit.as_bytes());
    } else {
        let mut frac = Vec::new();
        u = fmt_frac(&mut frac, u, 9);
        let secs = u % 60;
        u /= 60;
        let mut s = String::new();
        if u > 0 {
            let mins = u % 60;
            u /= 60;
            if u > 0 {
                s.push_str(&format!("{u}h"));
            }
            s.push_str(&format!("{mins}m"));
        }
        s.push_str(&secs.to_string());
        out.extend_from_slice(s.as_bytes());
        out.extend_from_slice(&frac);
        out.push(b's');
    }
    let text = String::from_utf8_lossy(&out).into_owned();
    if neg {
        format!("-{text}")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_formats_like_go() {
        assert_eq!(parse_duration("5m").map(format_duration), Ok("5m0s".into()));
        assert_eq!(
            parse_duration("1m30s").map(format_duration),
            Ok("1m30s".into())
        );
        assert_eq!(
            parse_duration("4h0m0s").map(format_duration),
            Ok("4h0m0s".into())
        );
        assert_eq!(
            parse_duration("50ms").map(format_duration),
            Ok("50ms".into())
        );
        assert_eq!(
            parse_duration("1.5s").map(format_duration),
            Ok("1.5s".into())
        );
        assert_eq!(parse_duration("0").map(format_duration), Ok("0s".into()));
        assert_eq!(
            parse_duration("2d").map_err(|e| e.to_string()),
            Err("time: unknown unit \"d\" in duration \"2d\"".into())
        );
        assert_eq!(
            parse_duration("30").map_err(|e| e.to_string()),
            Err("time: missing unit in duration \"30\"".into())
        );
        assert_eq!(
            parse_duration("").map_err(|e| e.to_string()),
            Err("time: invalid duration \"\"".into())
        );
        // The time package's own quoting: non-ASCII bytes in hex, unlike %q.
        assert_eq!(
            parse_duration("1µm").map_err(|e| e.to_string()),
            Err(r#"time: unknown unit "\xc2\xb5m" in duration "1\xc2\xb5m""#.into())
        );
    }

    proptest::proptest! {
        #[test]
        fn formatted_durations_parse_back(ns in -(1i64 << 62)..(1i64 << 62)) {
            proptest::prop_assert_eq!(parse_duration(&format_duration(ns)), Ok(ns));
        }
    }
}
