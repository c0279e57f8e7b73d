//! Kubernetes `resource.Quantity`: parsing, canonical text and integer value.
//!
//! A quantity is kept as an exact decimal (`unscaled * 10^-scale`) with the
//! format its suffix implies (binary `Ki`..`Ei`, decimal `k`..`E`, `m`, `u`,
//! `n`, or an `eN` exponent). Text is written the way upstream's `String()`
//! does: the original text when upstream keeps it, otherwise the canonical
//! form (`1024Mi` → `1Gi`, `1.5Gi` → `1536Mi`, `1000` → `1k`).

use std::fmt;

/// The regular expression upstream cites when a quantity does not parse.
const FORMAT_MSG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// Why a quantity does not parse; `Display` is upstream's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The text does not have the quantity shape.
    #[error("{FORMAT_MSG}")]
    Format,
    /// The suffix is not a known one.
    #[error("unable to parse quantity's suffix")]
    Suffix,
    /// The number is out of the supported range.
    #[error("quantity is too large or too precise")]
    Numeric,
}

/// How a quantity is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantityFormat {
    /// `1e3`.
    DecimalExponent,
    /// `1Ki`.
    BinarySI,
    /// `1k`.
    DecimalSI,
}

/// A parsed quantity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantity {
    unscaled: i128,
    scale: i32,
    format: QuantityFormat,
    cached: Option<String>,
}

impl Default for Quantity {
    fn default() -> Self {
        Quantity {
            unscaled: 0,
            scale: 0,
            format: QuantityFormat::DecimalSI,
            cached: None,
        }
    }
}

struct Parts<'a> {
    positive: bool,
    value: &'a str,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

fn split(s: &str) -> Result<Parts<'_>, QuantityError> {
    let b = s.as_bytes();
    let end = b.len();
    let mut p = Parts {
        positive: true,
        value: "",
        num: "",
        denom: "",
        suffix: "",
    };
    let mut pos = 0;
    if let Some(&c) = b.first() {
        if c == b'-' {
            p.positive = false;
            pos += 1;
        } else if c == b'+' {
            pos += 1;
        }
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        p.num = "0";
        p.value = "0";
        return Ok(p);
    }
    let start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos >= end {
        p.num = &s[start..end];
        p.value = s;
        return Ok(p);
    }
    p.num = if pos == start { "0" } else { &s[start..pos] };
    if b[pos] == b'.' {
        pos += 1;
        let ds = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        p.denom = &s[ds..pos];
        if pos >= end {
            p.value = s;
            return Ok(p);
        }
    }
    p.value = &s[..pos];
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(QuantityError::Format);
    }
    p.suffix = &s[suffix_start..];
    Ok(p)
}

/// (base, exponent, format) of a suffix.
fn interpret(suffix: &str) -> Option<(u32, i32, QuantityFormat)> {
    use QuantityFormat::*;
    let dec = |e| Some((10, e, DecimalSI));
    let bin = |e| Some((2, e, BinarySI));
    match suffix {
        "" => dec(0),
        "n" => dec(-9),
        "u" => dec(-6),
        "m" => dec(-3),
        "k" => dec(3),
        "M" => dec(6),
        "G" => dec(9),
        "T" => dec(12),
        "P" => dec(15),
        "E" => dec(18),
        "Ki" => bin(10),
        "Mi" => bin(20),
        "Gi" => bin(30),
        "Ti" => bin(40),
        "Pi" => bin(50),
        "Ei" => bin(60),
        _ => {
            let rest = suffix.strip_prefix(['e', 'E'])?;
            let e: i32 = rest.parse().ok()?;
            Some((10, e, DecimalExponent))
        }
    }
}

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

impl Quantity {
    /// Parses a quantity as upstream's `resource.ParseQuantity` does.
    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        if s.is_empty() {
            return Err(QuantityError::Format);
        }
        let p = split(s)?;
        let (base, exponent, format) = interpret(p.suffix).ok_or(QuantityError::Suffix)?;
        // Upstream keeps the text when it is already canonical.
        let mut cached = None;
        let digits = p.num.len() + p.denom.len();
        let fast = match format {
            QuantityFormat::BinarySI => {
                exponent >= 0 && p.denom.is_empty() && {
                    let precision =
                        15 - p.num.len() as i32 - (exponent as f32 * 3.0 / 10.0) as i32 - 1;
                    precision >= 0
                }
            }
            _ => 18 - digits as i32 >= 0 && exponent - p.denom.len() as i32 >= -9,
        };
        if fast {
            let shifted = format!("{}{}", p.num, p.denom);
            if let Ok(value) = shifted.parse::<i64>() {
                let keep = match format {
                    QuantityFormat::BinarySI => exponent % 10 == 0 && (value & 0x07) != 0,
                    _ => {
                        let scale = exponent - p.denom.len() as i32;
                        scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0')
                    }
                };
                if keep {
                    cached = Some(s.to_string());
                }
            }
        }
        // Exact decimal of the number part.
        let unsigned = p.value.trim_start_matches(['+', '-']);
        let (int_part, frac_part) = match unsigned.split_once('.') {
            Some((a, b)) => (a, b),
            None => (unsigned, ""),
        };
        let all = format!("{int_part}{frac_part}");
        let mut unscaled: i128 = if all.is_empty() {
            0
        } else {
            all.parse().map_err(|_| QuantityError::Numeric)?
        };
        let mut scale = frac_part.len() as i32;
        if base == 10 {
            scale = scale.checked_sub(exponent).ok_or(QuantityError::Numeric)?;
            if !(-40..=400).contains(&scale) {
                return Err(QuantityError::Numeric);
            }
        } else {
            unscaled = unscaled
                .checked_mul(1i128 << exponent)
                .ok_or(QuantityError::Numeric)?;
        }
        // Round up (away from zero) to nano precision.
        if unscaled != 0 && scale > 9 {
            let div = pow10((scale - 9) as u32).ok_or(QuantityError::Numeric)?;
            let q = unscaled / div;
            unscaled = if unscaled % div != 0 { q + 1 } else { q };
            scale = 9;
        }
        let mut format = format;
        if format == QuantityFormat::BinarySI && unscaled > 0 {
            // Between 0 and 1 a binary quantity is written in decimal.
            let one = if scale >= 0 {
                pow10(scale as u32).ok_or(QuantityError::Numeric)?
            } else {
                0
            };
            if unscaled < one {
                format = QuantityFormat::DecimalSI;
            }
        }
        if !p.positive {
            unscaled = -unscaled;
        }
        Ok(Quantity {
            unscaled,
            scale,
            format,
            cached,
        })
    }

    /// Whether the quantity is zero.
    pub fn is_zero(&self) -> bool {
        self.unscaled == 0
    }

    /// The sign: -1, 0 or 1.
    pub fn signum(&self) -> i32 {
        self.unscaled.signum() as i32
    }

    /// The value rounded away from zero to an integer (upstream's `Value()`).
    pub fn value(&self) -> i64 {
        let v = if self.scale <= 0 {
            pow10((-self.scale) as u32)
                .and_then(|p| self.unscaled.checked_mul(p))
                .unwrap_or(i128::MAX)
        } else {
            match pow10(self.scale as u32) {
                Some(div) => {
                    let q = self.unscaled / div;
                    if self.unscaled % div != 0 {
                        q + self.unscaled.signum()
                    } else {
                        q
                    }
                }
                None => 0,
            }
        };
        v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// The integer value when the quantity has no fraction.
    fn exact_integer(&self) -> Option<i128> {
        if self.scale <= 0 {
            pow10((-self.scale) as u32).and_then(|p| self.unscaled.checked_mul(p))
        } else {
            let div = pow10(self.scale as u32)?;
            (self.unscaled % div == 0).then(|| self.unscaled / div)
        }
    }

    /// Whether `-n < self < n`.
    fn strictly_within(&self, n: i128) -> bool {
        if self.scale <= 0 {
            match pow10((-self.scale) as u32).and_then(|p| self.unscaled.checked_mul(p)) {
                Some(v) => v > -n && v < n,
                None => false,
            }
        } else {
            match pow10(self.scale as u32).and_then(|p| p.checked_mul(n)) {
                Some(lim) => self.unscaled > -lim && self.unscaled < lim,
                None => true,
            }
        }
    }

    /// Canonical text, ignoring any kept original text.
    fn canonical(&self) -> String {
        if self.unscaled == 0 {
            return "0".to_string();
        }
        if self.format == QuantityFormat::BinarySI && !self.strictly_within(1024) {
            if let Some(mut v) = self.exact_integer() {
                let mut exp = 0;
                while v != 0 && v % 1024 == 0 && exp < 60 {
                    v /= 1024;
                    exp += 10;
                }
                let suffix = match exp {
                    10 => "Ki",
                    20 => "Mi",
                    30 => "Gi",
                    40 => "Ti",
                    50 => "Pi",
                    60 => "Ei",
                    _ => "",
                };
                return format!("{v}{suffix}");
            }
        }
        // Decimal: strip factors of ten, then lower the exponent to a multiple of three.
        let mut m = self.unscaled;
        let mut exp = -self.scale;
        while m % 10 == 0 {
            m /= 10;
            exp += 1;
        }
        while exp.rem_euclid(3) != 0 {
            match m.checked_mul(10) {
                Some(v) => m = v,
                None => break,
            }
            exp -= 1;
        }
        let suffix = if self.format == QuantityFormat::DecimalExponent {
            if exp == 0 {
                String::new()
            } else {
                format!("e{exp}")
            }
        } else {
            match exp {
                -9 => "n",
                -6 => "u",
                -3 => "m",
                0 => "",
                3 => "k",
                6 => "M",
                9 => "G",
                12 => "T",
                15 => "P",
                18 => "E",
                _ => "",
            }
            .to_string()
        };
        format!("{m}{suffix}")
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cached {
            Some(s) => f.write_str(s),
            None => f.write_str(&self.canonical()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        Quantity::parse(s)
            .map(|q| q.to_string())
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn canonical_forms() {
        assert_eq!(canon("1.5Gi"), "1536Mi");
        assert_eq!(canon("1024Mi"), "1Gi");
        assert_eq!(canon("1e9"), "1e9");
        assert_eq!(canon("8Gi"), "8Gi");
        assert_eq!(canon("10G"), "10G");
        assert_eq!(canon("1000"), "1k");
        assert_eq!(canon("0"), "0");
        assert_eq!(canon("500m"), "500m");
        assert_eq!(canon("0.5"), "500m");
        assert_eq!(canon("1100Mi"), "1100Mi");
        assert_eq!(canon("-1G"), "-1G");
        assert_eq!(canon("abc"), FORMAT_MSG);
    }

    #[test]
    fn values() {
        assert_eq!(Quantity::parse("10Mi").map(|q| q.value()), Ok(10_485_760));
        assert_eq!(Quantity::parse("1e6").map(|q| q.value()), Ok(1_000_000));
        assert_eq!(Quantity::parse("-1").map(|q| q.value()), Ok(-1));
        assert_eq!(Quantity::parse("1.5").map(|q| q.value()), Ok(2));
    }

    proptest::proptest! {
        #[test]
        fn text_reparses_to_the_same_amount(
            int in 0u32..100_000,
            frac in proptest::option::of(0u32..1000),
            suffix in proptest::sample::select(vec!["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "e3", "e-2"]),
            neg in proptest::bool::ANY,
        ) {
            let text = match frac {
                Some(f) => format!("{}{int}.{f}{suffix}", if neg { "-" } else { "" }),
                None => format!("{}{int}{suffix}", if neg { "-" } else { "" }),
            };
            let q = Quantity::parse(&text).expect("parses");
            let again = Quantity::parse(&q.to_string()).expect("reparses");
            proptest::prop_assert_eq!(again.value(), q.value());
            proptest::prop_assert_eq!(again.to_string(), q.to_string());
        }
    }
}
