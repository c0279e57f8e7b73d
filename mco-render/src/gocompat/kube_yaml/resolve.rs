//! A scalar's value as gopkg.in/yaml.v2 resolves it into a Go `interface{}` (YAML 1.1 as that
//! library reads it): the words `yes`/`no`/`on`/`off`/`y`/`n` and `true`/`false` in three
//! casings, `~`/`null`, `.inf`/`.nan`, integers through Go's `strconv.ParseInt` with base
//! prefixes (`0644`, `0o644`, `0x1F`, `0b101`) after removing every `_`, then `ParseUint`, then
//! floats of YAML's form, timestamps kept as their text; explicit tags (`!!str`, `!!int`,
//! `!!float`, `!!bool`, `!!null`, `!!timestamp`) checked against what the text resolves to.

use crate::gocompat::yaml::resolve::{
    finite_float, go_parse_float_ok, go_parse_int, go_parse_uint, is_timestamp, yaml_style_float,
};

/// The YAML 1.1 tag URI prefix (`!!` in short form).
const LONG_PREFIX: &str = "tag:yaml.org,2002:";
pub(crate) const STR_TAG: &str = "tag:yaml.org,2002:str";
pub(crate) const BINARY_TAG: &str = "tag:yaml.org,2002:binary";
pub(crate) const MERGE_TAG: &str = "tag:yaml.org,2002:merge";
const NULL_TAG: &str = "tag:yaml.org,2002:null";
const BOOL_TAG: &str = "tag:yaml.org,2002:bool";
const INT_TAG: &str = "tag:yaml.org,2002:int";
const FLOAT_TAG: &str = "tag:yaml.org,2002:float";
const TIMESTAMP_TAG: &str = "tag:yaml.org,2002:timestamp";

/// A resolved scalar.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    /// A string (also a timestamp, kept as written, and the merge key `<<` as a value).
    Str(String),
}

/// `!!int` for `tag:yaml.org,2002:int`, other tags as they are.
fn short_tag(tag: &str) -> String {
    match tag.strip_prefix(LONG_PREFIX) {
        Some(rest) => format!("!!{rest}"),
        None => tag.to_string(),
    }
}

fn resolvable(tag: &str) -> bool {
    matches!(
        tag,
        "" | STR_TAG | BOOL_TAG | INT_TAG | FLOAT_TAG | NULL_TAG | TIMESTAMP_TAG
    )
}

/// The words with a fixed meaning.
fn word(s: &str) -> Option<(&'static str, Scalar)> {
    Some(match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            (BOOL_TAG, Scalar::Bool(true))
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            (BOOL_TAG, Scalar::Bool(false))
        }
        "" | "~" | "null" | "Null" | "NULL" => (NULL_TAG, Scalar::Null),
        ".nan" | ".NaN" | ".NAN" => (FLOAT_TAG, Scalar::Float(f64::NAN)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            (FLOAT_TAG, Scalar::Float(f64::INFINITY))
        }
        "-.inf" | "-.Inf" | "-.INF" => (FLOAT_TAG, Scalar::Float(f64::NEG_INFINITY)),
        "<<" => (MERGE_TAG, Scalar::Str("<<".into())),
        _ => return None,
    })
}

fn parse_f64(s: &[u8]) -> Option<f64> {
    std::str::from_utf8(s).ok()?.parse::<f64>().ok()
}

/// An integer of Go's `int` (64 bits) or `uint64`.
fn int_of(s: &[u8], base: u32) -> Option<Scalar> {
    go_parse_int(s, base)
        .map(Scalar::Int)
        .or_else(|| go_parse_uint(s, base).map(Scalar::Uint))
}

/// The implicit resolution: the tag it resolves to and the value.
fn implicit(tag: &str, s: &str) -> (&'static str, Scalar) {
    let b = s.as_bytes();
    let hint = match b.first() {
        None => b'N',
        Some(b'+' | b'-') => b'S',
        Some(b'0'..=b'9') => b'D',
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => b'M',
        Some(b'.') => b'.',
        Some(_) => 0,
    };
    if hint == 0 || tag == STR_TAG {
        return (STR_TAG, Scalar::Str(s.to_string()));
    }
    if let Some(w) = word(s) {
        return w;
    }
    match hint {
        b'.' if go_parse_float_ok(b) => {
            let plain: Vec<u8> = b.iter().copied().filter(|&c| c != b'_').collect();
            if let Some(f) = parse_f64(&plain) {
                return (FLOAT_TAG, Scalar::Float(f));
            }
        }
        b'D' | b'S' => {
            if (tag.is_empty() || tag == TIMESTAMP_TAG) && is_timestamp(b) {
                return (TIMESTAMP_TAG, Scalar::Str(s.to_string()));
            }
            let plain: Vec<u8> = b.iter().copied().filter(|&c| c != b'_').collect();
            if let Some(v) = int_of(&plain, 0) {
                return (INT_TAG, v);
            }
            if yaml_style_float(&plain) && finite_float(&plain) {
                if let Some(f) = parse_f64(&plain) {
                    return (FLOAT_TAG, Scalar::Float(f));
                }
            }
            if let Some(rest) = plain.strip_prefix(b"0b") {
                if let Some(v) = int_of(rest, 2) {
                    return (INT_TAG, v);
                }
            } else if let Some(rest) = plain.strip_prefix(b"-0b") {
                let mut neg = vec![b'-'];
                neg.extend_from_slice(rest);
                if let Some(v) = go_parse_int(&neg, 2) {
                    return (INT_TAG, Scalar::Int(v));
                }
            }
        }
        _ => {}
    }
    (STR_TAG, Scalar::Str(s.to_string()))
}

/// What a scalar with `tag` (empty for none) and text `s` decodes to, or the library's error.
/// A tag outside YAML's own (`!foo`, `!!map`, `!!binary`) leaves the text as it is.
pub(crate) fn resolve(tag: &str, s: &str) -> Result<Scalar, String> {
    if !resolvable(tag) {
        return Ok(Scalar::Str(s.to_string()));
    }
    let (rtag, value) = implicit(tag, s);
    if tag.is_empty() || tag == rtag || tag == STR_TAG {
        return Ok(value);
    }
    if tag == FLOAT_TAG && rtag == INT_TAG {
        if let Scalar::Int(i) = value {
            return Ok(Scalar::Float(i as f64));
        }
    }
    Err(format!(
        "cannot decode {} `{s}` as a {}",
        short_tag(rtag),
        short_tag(tag)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_1_1_scalars() {
        let r = |s| resolve("", s);
        assert_eq!(r("0644"), Ok(Scalar::Int(420)));
        assert_eq!(r("0o755"), Ok(Scalar::Int(493)));
        assert_eq!(r("0x1F"), Ok(Scalar::Int(31)));
        assert_eq!(r("1_000"), Ok(Scalar::Int(1000)));
        assert_eq!(r("0b101"), Ok(Scalar::Int(5)));
        assert_eq!(r("08"), Ok(Scalar::Float(8.0)));
        assert_eq!(r("1e3"), Ok(Scalar::Float(1000.0)));
        assert_eq!(r("18446744073709551615"), Ok(Scalar::Uint(u64::MAX)));
        assert_eq!(r("yes"), Ok(Scalar::Bool(true)));
        assert_eq!(r("Off"), Ok(Scalar::Bool(false)));
        assert_eq!(r("~"), Ok(Scalar::Null));
        assert_eq!(r("2001-12-14"), Ok(Scalar::Str("2001-12-14".into())));
        assert_eq!(r("1e400"), Ok(Scalar::Str("1e400".into())));
        assert_eq!(r("yEs"), Ok(Scalar::Str("yEs".into())));
    }

    #[test]
    fn explicit_tags() {
        assert_eq!(resolve(STR_TAG, "0644"), Ok(Scalar::Str("0644".into())));
        assert_eq!(resolve(FLOAT_TAG, "1"), Ok(Scalar::Float(1.0)));
        assert_eq!(
            resolve(INT_TAG, "1.5"),
            Err("cannot decode !!float `1.5` as a !!int".into())
        );
        assert_eq!(resolve("!foo", "12"), Ok(Scalar::Str("12".into())));
    }
}
