//! Go's decoded values made JSON as sigs.k8s.io/yaml makes them (`convertToJSONableObject`,
//! then `encoding/json`'s `Marshal`), and read back as the JSON text they become: keys made
//! strings (ints in decimal, floats as Go's `FormatFloat(f, 'g', -1, 32)`, bools as
//! `true`/`false`; a null or uint64 key is an error), and floats that are whole numbers become
//! the integers Go's JSON text shows (`1.0` and `1e3` are `1` and `1000`). Infinities and NaN
//! are an error, as `json.Marshal` refuses them. Each value's position is recorded by JSON
//! pointer.

use super::decode::{go_syntax, At, GoValue};
use super::resolve::Scalar;
use crate::manifests::{Position, Positions};
use serde_json::{Map, Number, Value};

/// Where the document's text starts in its file, to make positions the file's.
#[derive(Clone, Copy)]
pub(crate) struct Origin {
    /// The 1-based file line of the document's line 0.
    pub first_line: usize,
}

impl Origin {
    fn position(self, at: At) -> Position {
        Position {
            line: self.first_line + at.0,
            column: at.1 + 1,
        }
    }
}

/// A converted document, or sigs.k8s.io/yaml's error for it.
pub(crate) fn to_json(
    v: &GoValue,
    at: At,
    origin: Origin,
    positions: &mut Positions,
) -> Result<Value, String> {
    let mut bad_floats: Vec<(Vec<PathPart>, String)> = Vec::new();
    let mut path = Vec::new();
    positions.insert(String::new(), origin.position(at));
    let value = convert(
        v,
        origin,
        &mut String::new(),
        &mut path,
        positions,
        &mut bad_floats,
    )?;
    // `json.Marshal` writes keys in sorted order and stops at the first value it cannot write.
    if let Some((_, e)) = bad_floats.into_iter().min_by(|a, b| a.0.cmp(&b.0)) {
        return Err(e);
    }
    Ok(value)
}

/// A step of a path, ordered as `json.Marshal` visits values.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum PathPart {
    Key(String),
    Index(usize),
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn convert(
    v: &GoValue,
    origin: Origin,
    pointer: &mut String,
    path: &mut Vec<PathPart>,
    positions: &mut Positions,
    bad: &mut Vec<(Vec<PathPart>, String)>,
) -> Result<Value, String> {
    Ok(match v {
        GoValue::Scalar(s) => match s {
            Scalar::Null => Value::Null,
            Scalar::Bool(b) => Value::Bool(*b),
            Scalar::Int(i) => Value::from(*i),
            Scalar::Uint(u) => Value::from(*u),
            Scalar::Float(f) => match json_number(*f) {
                Some(n) => Value::Number(n),
                None => {
                    let text = if f.is_nan() {
                        "NaN"
                    } else if *f > 0.0 {
                        "+Inf"
                    } else {
                        "-Inf"
                    };
                    bad.push((path.clone(), format!("json: unsupported value: {text}")));
                    Value::Null
                }
            },
            Scalar::Str(s) => Value::String(s.clone()),
        },
        GoValue::Bytes(b) => Value::String(go_utf8(b)),
        GoValue::Seq(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, (item, at)) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                positions.insert(pointer.clone(), origin.position(*at));
                path.push(PathPart::Index(i));
                out.push(convert(item, origin, pointer, path, positions, bad)?);
                path.pop();
                pointer.truncate(len);
            }
            Value::Array(out)
        }
        GoValue::Map(entries) => {
            let mut out = Map::with_capacity(entries.len());
            for (k, item, at) in entries {
                let key = key_string(k, item)?;
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&escape(&key));
                positions.insert(pointer.clone(), origin.position(*at));
                path.push(PathPart::Key(key.clone()));
                let converted = convert(item, origin, pointer, path, positions, bad)?;
                path.pop();
                pointer.truncate(len);
                out.insert(key, converted);
            }
            Value::Object(out)
        }
    })
}

/// The string a map key becomes.
fn key_string(k: &GoValue, value: &GoValue) -> Result<String, String> {
    Ok(match k {
        GoValue::Scalar(Scalar::Str(s)) => s.clone(),
        GoValue::Bytes(b) => go_utf8(b),
        GoValue::Scalar(Scalar::Int(i)) => i.to_string(),
        GoValue::Scalar(Scalar::Bool(b)) => b.to_string(),
        GoValue::Scalar(Scalar::Float(f)) => float32_key(*f),
        GoValue::Scalar(Scalar::Uint(u)) => {
            return Err(format!(
                "unsupported map key of type: uint64, key: 0x{u:x}, value: {}",
                go_value_syntax(value)
            ))
        }
        GoValue::Scalar(Scalar::Null) => {
            return Err(format!(
                "unsupported map key of type: %!s(<nil>), key: <nil>, value: {}",
                go_value_syntax(value)
            ))
        }
        GoValue::Seq(_) | GoValue::Map(_) => {
            return Err(format!(
                "unsupported map key of type: {}, key: {}",
                "interface {}",
                go_syntax(k)
            ))
        }
    })
}

/// `%+#v` of a map value inside an `interface{}`: a nil one prints `<nil>`.
fn go_value_syntax(v: &GoValue) -> String {
    match v {
        GoValue::Scalar(Scalar::Null) => "<nil>".into(),
        other => go_syntax(other),
    }
}

/// The JSON number Go writes for `f`, as read back: whole numbers below 1e21 are written
/// without a fraction and so read back as integers. `None` for infinities and NaN.
pub(crate) fn json_number(f: f64) -> Option<Number> {
    if !f.is_finite() {
        return None;
    }
    if f.fract() == 0.0 && f.abs() < 1e21 {
        // Go writes the shortest digits, padded with zeros (`-9223372036854776000`, `-0`).
        let sci = format!("{:e}", f.abs());
        let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
        let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
        let exp: usize = exp.parse().unwrap_or(0);
        let sign = if f.is_sign_negative() { "-" } else { "" };
        let zeros = (exp + 1).saturating_sub(digits.len());
        let text = format!("{sign}{digits}{}", "0".repeat(zeros));
        if let Ok(n) = serde_json::from_str::<Number>(&text) {
            return Some(n);
        }
    }
    Number::from_f64(f)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)` (with `.inf`, `-.inf`, `.nan` for the
/// specials, as the converter spells them).
pub(crate) fn float32_key(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let f32v = f as f32;
    if f32v.is_infinite() {
        return if f32v > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    if f32v == 0.0 {
        return if f32v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{:e}", f32v.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if f32v < 0.0 { "-" } else { "" };
    let nd = digits.len() as i32;
    // Shortest digits: the exponent form below 1e-4 and from 1e6 on.
    if !(-4..6).contains(&exp) {
        let mut s = format!("{sign}{}", &digits[..1]);
        if nd > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        s.push('e');
        s.push(if exp < 0 { '-' } else { '+' });
        s.push_str(&format!("{:02}", exp.abs()));
        return s;
    }
    if exp < 0 {
        format!("{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize))
    } else if nd > exp + 1 {
        format!(
            "{sign}{}.{}",
            &digits[..(exp + 1) as usize],
            &digits[(exp + 1) as usize..]
        )
    } else {
        format!("{sign}{digits}{}", "0".repeat((exp + 1 - nd) as usize))
    }
}

/// Go's `encoding/json` text of bytes that may not be UTF-8: each byte that does not start a
/// valid sequence becomes U+FFFD.
fn go_utf8(b: &[u8]) -> String {
    if let Ok(s) = std::str::from_utf8(b) {
        return s.to_string();
    }
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let len = (1..=4.min(b.len() - i))
            .find(|&n| std::str::from_utf8(&b[i..i + n]).is_ok())
            .unwrap_or(0);
        if len == 0 {
            out.push('\u{FFFD}');
            i += 1;
        } else {
            out.push_str(std::str::from_utf8(&b[i..i + len]).unwrap_or("\u{FFFD}"));
            i += len;
        }
    }
    out
}
