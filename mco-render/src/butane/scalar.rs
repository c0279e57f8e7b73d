//! Scalars as Butane's YAML decoder (gopkg.in/yaml.v3 v3.0.1, decoding into typed structs)
//! reads them: the implicit type of a plain scalar, and what a `bool`, `int` or `string`
//! field takes from each.
//!
//! - A string field takes the scalar's text as written (`0x10`, `True`, `1.50` stay as they
//!   are), whatever its implicit type; a null leaves the field unset.
//! - A bool field takes `true`/`false` in YAML 1.2 spellings (`true`, `True`, `TRUE`, ...) and,
//!   from strings (quoted or not), the YAML 1.1 words `y Y yes Yes YES on On ON` and
//!   `n N no No NO off Off OFF`. Anything else is a type error.
//! - An int field takes integers (Go's `strconv.ParseInt` with base 0 after dropping `_`:
//!   `0644` and `0o644` are octal, `0x1A4` hex, `0b...` binary) and floats, truncated toward
//!   zero. Quoted scalars are strings, hence type errors.

/// How a scalar was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Unquoted: its type follows from its text.
    Plain,
    /// Single- or double-quoted, or a block scalar (`|`, `>`): always a string.
    Quoted,
}

/// A scalar's text (as the decoder holds it: quotes removed, escapes applied) and style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawScalar {
    /// How it was written.
    pub style: Style,
    /// The text.
    pub text: String,
    /// Its explicit tag (`!!str`, `!!int`, `!local`), if any.
    pub tag: Option<String>,
}

/// The tags yaml.v3 resolves a scalar against.
fn resolvable(tag: &str) -> bool {
    matches!(
        tag,
        "!!str" | "!!bool" | "!!int" | "!!float" | "!!null" | "!!timestamp"
    )
}

/// The field's type cannot take the scalar (yaml.v3's `cannot unmarshal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeError;

/// The implicit type of a scalar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Resolved {
    /// `~`, `null`, empty.
    Null,
    /// `true`, `False`, ...
    Bool(bool),
    /// An integer that fits in 64 bits (signed or unsigned).
    Int(i128),
    /// A float.
    Float(f64),
    /// A timestamp (`2001-12-14`).
    Timestamp,
    /// Anything else.
    Str,
}

impl Resolved {
    /// The short tag yaml.v3 names the type by in its errors.
    pub fn tag(self) -> &'static str {
        match self {
            Resolved::Null => "!!null",
            Resolved::Bool(_) => "!!bool",
            Resolved::Int(_) => "!!int",
            Resolved::Float(_) => "!!float",
            Resolved::Timestamp => "!!timestamp",
            Resolved::Str => "!!str",
        }
    }
}

impl RawScalar {
    /// The scalar's type: a string when quoted or tagged `!!str` (or with a tag yaml.v3 does
    /// not resolve), else its implicit type, as its tag demands (see [`RawScalar::check_tag`]).
    pub fn resolve(&self) -> Resolved {
        match self.tag.as_deref().filter(|t| *t != "!") {
            Some("!!str") => Resolved::Str,
            Some(t) if resolvable(t) => {
                let r = resolve_tagged(&self.text, t == "!!timestamp");
                match (t, r) {
                    ("!!float", Resolved::Int(i)) => Resolved::Float(i as f64),
                    _ => r,
                }
            }
            Some(_) => Resolved::Str,
            None => match self.style {
                Style::Quoted => Resolved::Str,
                Style::Plain => resolve_plain(&self.text),
            },
        }
    }

    /// yaml.v3 refuses a scalar whose text does not resolve to its explicit tag (`!!bool
    /// yes`): the whole decoding then fails with this message.
    pub fn check_tag(&self) -> Result<(), String> {
        let Some(t) = self
            .tag
            .as_deref()
            .filter(|t| resolvable(t) && *t != "!!str")
        else {
            return Ok(());
        };
        let r = self.resolve();
        if r.tag() == t {
            return Ok(());
        }
        Err(format!(
            "cannot decode {} `{}` as a {t}",
            r.tag(),
            self.text
        ))
    }

    /// What a bool field takes.
    pub fn to_bool(&self) -> Result<Option<bool>, TypeError> {
        match self.resolve() {
            Resolved::Null => Ok(None),
            Resolved::Bool(b) => Ok(Some(b)),
            Resolved::Str => match self.text.as_str() {
                "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Ok(Some(true)),
                "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => Ok(Some(false)),
                _ => Err(TypeError),
            },
            _ => Err(TypeError),
        }
    }

    /// What an int field takes.
    pub fn to_int(&self) -> Result<Option<i64>, TypeError> {
        match self.resolve() {
            Resolved::Null => Ok(None),
            Resolved::Int(i) => i64::try_from(i).map(Some).map_err(|_| TypeError),
            Resolved::Float(f) => float_to_int(f).map(Some).ok_or(TypeError),
            _ => Err(TypeError),
        }
    }

    /// What a string field takes: the text, or nothing for a null.
    pub fn to_str(&self) -> Option<String> {
        match self.resolve() {
            Resolved::Null => None,
            _ => Some(self.text.clone()),
        }
    }

    /// yaml.v3's `cannot unmarshal <this> into <type>`: the tag and the text, cut after seven
    /// bytes when longer than ten.
    pub fn describe(&self) -> String {
        let text = if self.text.len() > 10 {
            let head = String::from_utf8_lossy(&self.text.as_bytes()[..7]);
            format!("{head}...")
        } else {
            self.text.clone()
        };
        let tag = match self.tag.as_deref() {
            Some(t) if t != "!" && !resolvable(t) => t,
            _ => self.resolve().tag(),
        };
        format!("{tag} `{text}`")
    }
}

/// Go's `int64(f)` for the floats yaml.v3 lets through (`f <= MaxInt64`): truncation toward
/// zero, and the amd64 "integer indefinite" (`MinInt64`) when out of range.
fn float_to_int(f: f64) -> Option<i64> {
    // float64(math.MaxInt64) is 2^63.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() || f > TWO_63 {
        return None;
    }
    if !(-TWO_63..TWO_63).contains(&f) {
        return Some(i64::MIN);
    }
    Some(f.trunc() as i64)
}

/// The implicit type of a plain scalar, as yaml.v3's `resolve` gives it.
pub fn resolve_plain(s: &str) -> Resolved {
    resolve_tagged(s, true)
}

/// yaml.v3's `resolve`; timestamps only when untagged or tagged `!!timestamp`.
fn resolve_tagged(s: &str, timestamps: bool) -> Resolved {
    match s {
        "true" | "True" | "TRUE" => return Resolved::Bool(true),
        "false" | "False" | "FALSE" => return Resolved::Bool(false),
        "" | "~" | "null" | "Null" | "NULL" => return Resolved::Null,
        ".nan" | ".NaN" | ".NAN" => return Resolved::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Resolved::Float(f64::INFINITY)
        }
        "-.inf" | "-.Inf" | "-.INF" => return Resolved::Float(f64::NEG_INFINITY),
        _ => {}
    }
    match s.as_bytes()[0] {
        b'.' => {
            if crate::gocompat::yaml::resolve::yaml_style_float(s.as_bytes()) {
                if let Ok(f) = s.parse::<f64>() {
                    return Resolved::Float(f);
                }
            }
            Resolved::Str
        }
        b'0'..=b'9' | b'+' | b'-' => {
            if timestamps && is_timestamp(s) {
                return Resolved::Timestamp;
            }
            let plain = s.replace('_', "");
            if let Some(i) = go_parse_int(&plain) {
                return Resolved::Int(i);
            }
            if crate::gocompat::yaml::resolve::yaml_style_float(plain.as_bytes()) {
                if let Ok(f) = plain.parse::<f64>() {
                    return Resolved::Float(f);
                }
            }
            Resolved::Str
        }
        _ => Resolved::Str,
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)`, falling back to `ParseUint(s, 0, 64)`: the values
/// either accepts.
fn go_parse_int(s: &str) -> Option<i128> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = if let Some(d) = body.strip_prefix("0x").or(body.strip_prefix("0X")) {
        (16, d)
    } else if let Some(d) = body.strip_prefix("0o").or(body.strip_prefix("0O")) {
        (8, d)
    } else if let Some(d) = body.strip_prefix("0b").or(body.strip_prefix("0B")) {
        (2, d)
    } else if body.len() > 1 && body.starts_with('0') {
        (8, &body[1..])
    } else {
        (10, body)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let v = u64::from_str_radix(digits, radix).ok()?;
    let v = i128::from(v);
    if neg {
        // ParseInt only: down to MinInt64.
        (v <= 1i128 << 63).then_some(-v)
    } else if s.starts_with('+') {
        // ParseUint refuses a sign: ParseInt's range.
        (v < 1i128 << 63).then_some(v)
    } else {
        Some(v)
    }
}

/// Whether Go's `time.Parse` takes `s` in one of yaml.v3's timestamp layouts (date only, date
/// and time with `T`, `t` or a space).
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let num = |i: &mut usize, min: usize, max: usize| -> Option<u32> {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() && *i - start < max {
            *i += 1;
        }
        if *i - start < min {
            return None;
        }
        s[start..*i].parse().ok()
    };
    let mut i = 5;
    let date = (|| {
        let year: u32 = s[..4].parse().ok()?;
        let month = num(&mut i, 1, 2)?;
        (b.get(i) == Some(&b'-')).then_some(())?;
        i += 1;
        let day = num(&mut i, 1, 2)?;
        let leap =
            year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
        let days = match month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return None,
        };
        (day >= 1 && day <= days).then_some(())
    })();
    if date.is_none() {
        return false;
    }
    if i == b.len() {
        return true;
    }
    let sep = b[i];
    if !matches!(sep, b'T' | b't' | b' ') {
        return false;
    }
    i += 1;
    let time = (|| {
        let h = num(&mut i, 1, 2)?;
        (b.get(i) == Some(&b':')).then_some(())?;
        i += 1;
        let m = num(&mut i, 1, 2)?;
        (b.get(i) == Some(&b':')).then_some(())?;
        i += 1;
        let sec = num(&mut i, 1, 2)?;
        (h < 24 && m < 60 && sec < 60).then_some(())?;
        if b.get(i) == Some(&b'.') {
            i += 1;
            num(&mut i, 1, 9)?;
        }
        Some(())
    })();
    if time.is_none() {
        return false;
    }
    let rest = &s[i..];
    if sep == b' ' {
        // "2006-1-2 15:4:5.999999999": no zone.
        return rest.is_empty();
    }
    // Z07:00: `Z` or ±hh:mm.
    if rest == "Z" {
        return true;
    }
    let r = rest.as_bytes();
    r.len() == 6
        && matches!(r[0], b'+' | b'-')
        && r[1..3].iter().all(u8::is_ascii_digit)
        && r[3] == b':'
        && r[4..6].iter().all(u8::is_ascii_digit)
}

/// The explicit tag starting at byte `column` of `line` (`!!int`, `!local`), and where the
/// node after it starts.
pub fn tag_at(line: &str, column: usize) -> Option<(String, usize)> {
    let rest = line.get(column..)?;
    if !rest.starts_with('!') {
        return None;
    }
    let len = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
    let after = &rest[len..];
    let skip = after.len() - after.trim_start_matches([' ', '\t']).len();
    Some((rest[..len].to_string(), column + len + skip))
}

/// The scalar starting at byte `column` (0-based) of `line` when it is written on that line
/// alone: quoted (`"..."`, `'...'`) or a block scalar header (`|`, `>`) give only the style
/// (the text is the parsed value's); a plain scalar gives its text, up to a comment or the end
/// of the line, or up to `,`/`]` inside a flow sequence. `None` for anything else (tags,
/// anchors, aliases, flow collections).
pub fn token_at(line: &str, column: usize, in_flow: bool) -> Option<(Style, Option<String>)> {
    let rest = line.get(column..)?;
    match rest.as_bytes().first()? {
        b'"' | b'\'' | b'|' | b'>' => Some((Style::Quoted, None)),
        b'!' | b'&' | b'*' | b'[' | b'{' | b'%' | b'@' | b'`' | b'#' => None,
        _ => {
            let b = rest.as_bytes();
            let mut end = b.len();
            for i in 0..b.len() {
                let c = b[i];
                if c == b'#' && i > 0 && matches!(b[i - 1], b' ' | b'\t') {
                    end = i;
                    break;
                }
                if in_flow && matches!(c, b',' | b']' | b'}') {
                    end = i;
                    break;
                }
            }
            Some((Style::Plain, Some(rest[..end].trim_end().to_string())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(s: &str) -> RawScalar {
        RawScalar {
            style: Style::Plain,
            text: s.into(),
            tag: None,
        }
    }
    fn quoted(s: &str) -> RawScalar {
        RawScalar {
            style: Style::Quoted,
            text: s.into(),
            tag: None,
        }
    }

    #[test]
    fn bool_fields_take_yaml_1_1_words_quoted_or_not() {
        for w in [
            "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE",
        ] {
            assert_eq!(plain(w).to_bool(), Ok(Some(true)), "{w}");
        }
        for w in [
            "n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False",
        ] {
            assert_eq!(plain(w).to_bool(), Ok(Some(false)), "{w}");
        }
        assert_eq!(quoted("yes").to_bool(), Ok(Some(true)));
        assert_eq!(quoted("true").to_bool(), Err(TypeError));
        for w in ["yEs", "oN", "1", "0", "t", "1.0", "0x1"] {
            assert_eq!(plain(w).to_bool(), Err(TypeError), "{w}");
        }
        assert_eq!(plain("~").to_bool(), Ok(None));
    }

    #[test]
    fn int_fields_take_go_integers_and_truncated_floats() {
        let cases = [
            ("0644", Some(420)),
            ("0o644", Some(420)),
            ("0x1A4", Some(420)),
            ("0b110100100", Some(420)),
            ("4_20", Some(420)),
            ("+0644", Some(420)),
            ("644.0", Some(644)),
            ("6.44e2", Some(644)),
            ("08", Some(8)),
            ("1.9", Some(1)),
            ("-1.9", Some(-1)),
            ("-.inf", Some(i64::MIN)),
            ("9223372036854775807", Some(i64::MAX)),
        ];
        for (s, want) in cases {
            assert_eq!(plain(s).to_int(), Ok(want), "{s}");
        }
        for s in [
            "yes",
            "true",
            "0x",
            ".inf",
            ".nan",
            "12345678901234567890",
            "2001-01-01",
        ] {
            assert_eq!(plain(s).to_int(), Err(TypeError), "{s}");
        }
        assert_eq!(quoted("0644").to_int(), Err(TypeError));
    }

    #[test]
    fn errors_show_the_tag_and_the_text_cut_after_seven_bytes() {
        assert_eq!(plain("0x1").describe(), "!!int `0x1`");
        assert_eq!(plain("2001-12-14").describe(), "!!timestamp `2001-12-14`");
        assert_eq!(quoted("abcdefghijkl").describe(), "!!str `abcdefg...`");
        assert_eq!(plain("1.0").describe(), "!!float `1.0`");
    }

    #[test]
    fn explicit_tags_decide_or_refuse() {
        let tagged = |t: &str, s: &str| RawScalar {
            style: Style::Plain,
            text: s.into(),
            tag: Some(t.into()),
        };
        assert_eq!(tagged("!!int", "0644").to_int(), Ok(Some(420)));
        assert_eq!(tagged("!!str", "0x10").to_str(), Some("0x10".into()));
        assert_eq!(tagged("!!float", "420").to_int(), Ok(Some(420)));
        assert_eq!(
            tagged("!!bool", "yes").check_tag(),
            Err("cannot decode !!str `yes` as a !!bool".into())
        );
        assert_eq!(tagged("!x", "on").describe(), "!x `on`");
        assert_eq!(tag_at("  k: !!int 0644", 5), Some(("!!int".into(), 11)));
    }

    #[test]
    fn tokens_end_at_comments_and_flow_separators() {
        assert_eq!(
            token_at("  mode: 0644 # octal", 8, false),
            Some((Style::Plain, Some("0644".into())))
        );
        assert_eq!(
            token_at("  k: [a, 0x10]", 9, true),
            Some((Style::Plain, Some("0x10".into())))
        );
        assert_eq!(
            token_at("  k: \"a\"", 5, false),
            Some((Style::Quoted, None))
        );
        assert_eq!(token_at("  k: !!str a", 5, false), None);
    }
}
