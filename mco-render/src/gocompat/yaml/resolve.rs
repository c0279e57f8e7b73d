//! Implicit-type resolution of unquoted scalars, as upstream's YAML library
//! (gopkg.in/yaml.v2 v2.4.0) does it.
//!
//! The encoder writes a string without quotes only when reading it back
//! unquoted would give a string again. This module answers that question:
//! YAML 1.1 booleans and nulls (`yes`, `Off`, `~`, ...), integers in Go's
//! base-prefixed syntax (`0755`, `0x1F`, `1_000`), floats, `.inf`/`.nan`,
//! timestamps, and (for quoting only) sexagesimal numbers like `1:30`.

/// Words that resolve to a bool, null, float or merge key.
const SPECIAL_WORDS: &[&str] = &[
    "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "n", "N", "no", "No",
    "NO", "false", "False", "FALSE", "off", "Off", "OFF", "", "~", "null", "Null", "NULL", ".nan",
    ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
    "<<",
];

/// Whether the plain scalar `s` would be read back as something other than a
/// string.
pub(crate) fn resolves_to_non_string(s: &str) -> bool {
    let b = s.as_bytes();
    let hint = match b.first() {
        None => return true, // empty: null
        Some(c) => *c,
    };
    let kind = match hint {
        b'+' | b'-' => Hint::Number,
        b'0'..=b'9' => Hint::Number,
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => Hint::Word,
        b'.' => Hint::Dot,
        _ => return false,
    };
    // Every special word is at most six bytes long.
    if s.len() <= 6 && SPECIAL_WORDS.contains(&s) {
        return true;
    }
    match kind {
        Hint::Word => false,
        Hint::Dot => go_parse_float_ok(b),
        Hint::Number => number_like(b),
    }
}

#[derive(Clone, Copy)]
enum Hint {
    Number,
    Word,
    Dot,
}

/// Int, uint, float or timestamp, for scalars starting with a sign or digit.
fn number_like(b: &[u8]) -> bool {
    if is_timestamp(b) {
        return true;
    }
    let plain: Vec<u8> = b.iter().copied().filter(|&c| c != b'_').collect();
    if go_parse_int(&plain, 0).is_some() || go_parse_uint(&plain, 0).is_some() {
        return true;
    }
    if yaml_style_float(&plain) && finite_float(&plain) {
        return true;
    }
    if let Some(rest) = plain.strip_prefix(b"0b") {
        return go_parse_int(rest, 2).is_some() || go_parse_uint(rest, 2).is_some();
    }
    if let Some(rest) = plain.strip_prefix(b"-0b") {
        let mut neg = Vec::with_capacity(rest.len() + 1);
        neg.push(b'-');
        neg.extend_from_slice(rest);
        return go_parse_int(&neg, 2).is_some();
    }
    false
}

/// Go `strconv.ParseUint(s, base, 64)` for base 0 (prefix-detecting) or an
/// explicit base; underscores must already be removed.
pub(crate) fn go_parse_uint(s: &[u8], base: u32) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let (base, digits) = if base == 0 {
        if s[0] == b'0' {
            let second = s.get(1).map(u8::to_ascii_lowercase);
            match second {
                Some(b'b') if s.len() >= 3 => (2, &s[2..]),
                Some(b'o') if s.len() >= 3 => (8, &s[2..]),
                Some(b'x') if s.len() >= 3 => (16, &s[2..]),
                _ => (8, &s[1..]),
            }
        } else {
            (10, s)
        }
    } else {
        (base, s)
    };
    let mut n: u64 = 0;
    for &c in digits {
        let d = match c {
            b'0'..=b'9' => u32::from(c - b'0'),
            b'a'..=b'z' => u32::from(c - b'a') + 10,
            b'A'..=b'Z' => u32::from(c - b'A') + 10,
            _ => return None,
        };
        if d >= base {
            return None;
        }
        n = n.checked_mul(u64::from(base))?.checked_add(u64::from(d))?;
    }
    Some(n)
}

/// Go `strconv.ParseInt(s, base, 64)`: optional sign, then [`go_parse_uint`].
pub(crate) fn go_parse_int(s: &[u8], base: u32) -> Option<i64> {
    let (neg, rest) = match s.first() {
        None => return None,
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        Some(_) => (false, s),
    };
    let un = go_parse_uint(rest, base)?;
    const LIMIT: u64 = 1 << 63;
    if !neg && un >= LIMIT || neg && un > LIMIT {
        return None;
    }
    Some(if neg {
        (un as i64).wrapping_neg()
    } else {
        un as i64
    })
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`: the float form YAML's resolvers
/// take (yaml.v2's and yaml.v3's alike).
pub(crate) fn yaml_style_float(s: &[u8]) -> bool {
    let mut i = 0;
    if matches!(s.first(), Some(b'+' | b'-')) {
        i = 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < s.len() && s[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if s.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if s.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(s.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == s.len()
}

/// Whether a syntactically valid decimal float stays finite (Go reports an
/// overflow as an error; underflow to zero is fine).
pub(crate) fn finite_float(s: &[u8]) -> bool {
    std::str::from_utf8(s)
        .ok()
        .and_then(|t| t.parse::<f64>().ok())
        .is_some_and(f64::is_finite)
}

/// Go `strconv.ParseFloat(s, 64)` succeeds, for a scalar starting with `.`
/// (so neither a sign, a hex prefix nor `inf`/`nan` can occur). Underscores
/// are allowed between digits.
pub(crate) fn go_parse_float_ok(s: &[u8]) -> bool {
    // Shape: '.' digits [eE [sign] digits], with '_' anywhere in digit runs.
    let mut i = 0;
    if s.get(i) != Some(&b'.') {
        return false;
    }
    i += 1;
    let mut mantissa_digits = 0;
    while i < s.len() && (s[i].is_ascii_digit() || s[i] == b'_') {
        if s[i] != b'_' {
            mantissa_digits += 1;
        }
        i += 1;
    }
    if mantissa_digits == 0 {
        return false;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(s.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let mut exp_digits = 0;
        while i < s.len() && (s[i].is_ascii_digit() || s[i] == b'_') {
            if s[i] != b'_' {
                exp_digits += 1;
            }
            i += 1;
        }
        if exp_digits == 0 {
            return false;
        }
    }
    if i != s.len() || !underscores_ok(s) {
        return false;
    }
    let plain: Vec<u8> = s.iter().copied().filter(|&c| c != b'_').collect();
    finite_float(&plain)
}

/// Go's rule for underscores in numbers without a base prefix: each one must
/// sit between two digits.
fn underscores_ok(s: &[u8]) -> bool {
    #[derive(PartialEq)]
    enum Saw {
        Start,
        Digit,
        Underscore,
        Other,
    }
    let mut saw = Saw::Start;
    for &c in s {
        if c.is_ascii_digit() {
            saw = Saw::Digit;
        } else if c == b'_' {
            if saw != Saw::Digit {
                return false;
            }
            saw = Saw::Underscore;
        } else {
            if saw == Saw::Underscore {
                return false;
            }
            saw = Saw::Other;
        }
    }
    saw != Saw::Underscore
}

/// YAML 1.1 sexagesimal float (`190:20:30.15`), which upstream always quotes:
/// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`.
pub(crate) fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i = 1;
    }
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    i += 1;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        i += 1;
        match (b.get(i).copied(), b.get(i + 1).copied()) {
            (Some(d1 @ b'0'..=b'5'), Some(b'0'..=b'9')) if d1.is_ascii_digit() => i += 2,
            (Some(b'0'..=b'9'), _) => i += 1,
            _ => return false,
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// Upstream's timestamp test: `YYYY-M-D`, optionally followed by a time
/// (`T`/`t` with a `Z` or `±hh:mm` zone, or a space and no zone).
pub(crate) fn is_timestamp(b: &[u8]) -> bool {
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let year = b[..4]
        .iter()
        .fold(0u32, |acc, &c| acc * 10 + u32::from(c - b'0'));
    let mut i = 5;
    let Some(month) = getnum(b, &mut i) else {
        return false;
    };
    if !(1..=12).contains(&month) || b.get(i) != Some(&b'-') {
        return false;
    }
    i += 1;
    let Some(day) = getnum(b, &mut i) else {
        return false;
    };
    if day < 1 || day > days_in(month, year) {
        return false;
    }
    match b.get(i) {
        None => true,
        Some(b'T' | b't') => {
            i += 1;
            if !time_of_day(b, &mut i) {
                return false;
            }
            zone(&b[i..])
        }
        Some(b' ') => {
            // A layout space matches any run of spaces.
            while b.get(i) == Some(&b' ') {
                i += 1;
            }
            time_of_day(b, &mut i) && i == b.len()
        }
        Some(_) => false,
    }
}

/// Go's `getnum(s, false)`: one digit, or two when the second is a digit.
fn getnum(b: &[u8], i: &mut usize) -> Option<u32> {
    let d1 = *b.get(*i).filter(|c| c.is_ascii_digit())?;
    *i += 1;
    let mut n = u32::from(d1 - b'0');
    if let Some(&d2) = b.get(*i).filter(|c| c.is_ascii_digit()) {
        *i += 1;
        n = n * 10 + u32::from(d2 - b'0');
    }
    Some(n)
}

/// `15:4:5` with an optional `.digits` fraction.
fn time_of_day(b: &[u8], i: &mut usize) -> bool {
    let ok = |v: Option<u32>, max: u32| v.is_some_and(|v| v <= max);
    if !ok(getnum(b, i), 23) || b.get(*i) != Some(&b':') {
        return false;
    }
    *i += 1;
    if !ok(getnum(b, i), 59) || b.get(*i) != Some(&b':') {
        return false;
    }
    *i += 1;
    if !ok(getnum(b, i), 59) {
        return false;
    }
    if matches!(b.get(*i), Some(b'.' | b',')) && b.get(*i + 1).is_some_and(u8::is_ascii_digit) {
        *i += 1;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
    }
    true
}

/// `Z` or `±hh:mm` (hours up to 24, minutes up to 60), and nothing after.
fn zone(rest: &[u8]) -> bool {
    if rest == b"Z" {
        return true;
    }
    if rest.len() != 6 || rest[3] != b':' || !matches!(rest[0], b'+' | b'-') {
        return false;
    }
    let two = |s: &[u8]| -> Option<u32> {
        if s.iter().all(u8::is_ascii_digit) {
            Some(u32::from(s[0] - b'0') * 10 + u32::from(s[1] - b'0'))
        } else {
            None
        }
    };
    matches!((two(&rest[1..3]), two(&rest[4..6])), (Some(h), Some(m)) if h <= 24 && m <= 60)
}

fn is_leap(year: u32) -> bool {
    match (year % 4, year % 100, year % 400) {
        (_, _, 0) => true,
        (_, 0, _) => false,
        (0, _, _) => true,
        _ => false,
    }
}

fn days_in(month: u32, year: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_words_are_short() {
        // `resolves_to_non_string` only looks longer words up if this fails.
        assert!(SPECIAL_WORDS.iter().all(|w| w.len() <= 6));
    }

    #[test]
    fn words() {
        for s in [
            "", "~", "null", "Null", "true", "False", "yes", "NO", "on", "Off", "y", "N", ".inf",
            "-.Inf", ".NaN",
        ] {
            assert!(resolves_to_non_string(s), "{s:?}");
        }
        for s in [
            "nULL", "tRue", "yES", "<<x", "nope", "o", "inf", "nan", "Infinity",
        ] {
            assert!(!resolves_to_non_string(s), "{s:?}");
        }
    }

    #[test]
    fn numbers() {
        for s in [
            "0",
            "-1",
            "+1",
            "0755",
            "0x1F",
            "0o17",
            "0b101",
            "1_000",
            "1.5",
            "1e3",
            "1.",
            ".5",
            "-.5e-3",
            "0789",
            "99999999999999999999",
            "18446744073709551615",
            "-0b11",
            "0b-1",
            ".5_0",
        ] {
            assert!(resolves_to_non_string(s), "{s:?}");
        }
        for s in [
            "1e999",
            "-",
            "+",
            "0x",
            "1e",
            "1.2.3",
            "1-2",
            "._5",
            ".",
            "-0x8000000000000001",
            "1,000",
            "1 2",
            "v1",
        ] {
            assert!(!resolves_to_non_string(s), "{s:?}");
        }
    }

    #[test]
    fn timestamps() {
        for s in [
            "2001-12-14",
            "2001-1-2",
            "2001-12-14T21:59:43.10Z",
            "2001-12-14t21:59:43-05:00",
            "2001-12-14 21:59:43.10",
            "2000-02-29",
        ] {
            assert!(resolves_to_non_string(s), "{s:?}");
        }
        for s in [
            "2001-02-29",
            "2001-13-01",
            "2001-12-14 21:59:43.10 -5",
            "2001-12-14T21:59:43",
            "20011-12-14",
        ] {
            assert!(!resolves_to_non_string(s), "{s:?}");
        }
    }

    #[test]
    fn base60() {
        for s in ["1:20", "190:20:30.15", "-1:59", "1_0:5:9"] {
            assert!(is_base60_float(s), "{s:?}");
        }
        for s in ["1:60", "1:", ":1", "a:1", "1:2:", "1:234", "12:30 pm"] {
            assert!(!is_base60_float(s), "{s:?}");
        }
    }
}
