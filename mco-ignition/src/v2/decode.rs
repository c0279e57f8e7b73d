//! Decoding a config into the 2.2 types with Go `encoding/json` semantics: keys match fields
//! case-insensitively (an exact match is one of them; the last matching key wins), unknown
//! keys are ignored, `null` leaves a field unset, and a JSON value of the wrong kind is a type
//! error.
//!
//! The result is a normalised 2.2 tree: canonical keys only; non-pointer fields holding Go's
//! zero value (`""`, `0`, `false`, empty lists, empty structs) are left out, pointer fields are
//! kept when set, even to a zero value.

use serde_json::{Map, Value};

use super::schema::{Struct, Ty};

/// A JSON value of the wrong kind for its field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeError {
    /// The JSON kind found (`string`, `number`, `bool`, `array`, `object`, or `number <lit>`).
    pub found: String,
    /// The Go type expected.
    pub expected: &'static str,
}

impl std::fmt::Display for TypeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "json: cannot unmarshal {} into Go value of type {}",
            self.found, self.expected
        )
    }
}

fn fold_char(c: char) -> char {
    match c {
        '\u{212A}' => 'k',
        '\u{17F}' => 's',
        c => c.to_lowercase().next().unwrap_or(c),
    }
}

/// Go's case-insensitive key match (Unicode simple folding, with the Kelvin sign and long s).
pub fn fold_eq(a: &str, b: &str) -> bool {
    a.chars().count() == b.chars().count()
        && a.chars()
            .zip(b.chars())
            .all(|(x, y)| fold_char(x) == fold_char(y))
}

fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) => format!("number {n}"),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

/// Decodes `raw` as the struct `st`; the first type error is reported (decoding goes on, as Go's
/// decoder does, but the result is then unusable).
pub fn decode_struct(st: &'static Struct, raw: &Value) -> Result<Value, TypeError> {
    let mut first = None;
    let v = decode_obj(st, raw, &mut first);
    match first {
        Some(e) => Err(e),
        None => Ok(v),
    }
}

fn decode_obj(st: &'static Struct, raw: &Value, err: &mut Option<TypeError>) -> Value {
    let mut out = Map::new();
    let Value::Object(m) = raw else {
        if !raw.is_null() {
            note(err, raw, st.name);
        }
        return Value::Object(out);
    };
    for (tag, _go, ty) in st.fields {
        // Later keys (bytewise order) overwrite earlier ones; an exact match is one of them.
        let mut chosen: Option<&Value> = None;
        for (k, v) in m {
            if k == tag || fold_eq(k, tag) {
                if v.is_null() {
                    if is_pointer(*ty) {
                        chosen = None;
                    }
                    continue;
                }
                chosen = Some(v);
            }
        }
        if let Some(v) = chosen {
            if let Some(d) = decode_field(*ty, v, err) {
                out.insert((*tag).to_string(), d);
            }
        }
    }
    Value::Object(out)
}

fn is_pointer(ty: Ty) -> bool {
    matches!(ty, Ty::PStr | Ty::PInt | Ty::PBool | Ty::PObj(_))
}

fn note(err: &mut Option<TypeError>, v: &Value, expected: &'static str) {
    if err.is_none() {
        *err = Some(TypeError {
            found: kind(v),
            expected,
        });
    }
}

fn decode_field(ty: Ty, v: &Value, err: &mut Option<TypeError>) -> Option<Value> {
    match ty {
        Ty::Str | Ty::PStr => match v {
            Value::String(s) if ty == Ty::PStr || !s.is_empty() => Some(v.clone()),
            Value::String(_) => None,
            _ => {
                note(err, v, "string");
                None
            }
        },
        Ty::Int | Ty::PInt => match v.as_i64() {
            Some(i) if v.is_i64() || v.is_u64() => {
                let keep = matches!(ty, Ty::PInt) || i != 0;
                keep.then(|| Value::from(i))
            }
            _ => {
                note(err, v, "int");
                None
            }
        },
        Ty::Bool | Ty::PBool => match v {
            Value::Bool(b) => (matches!(ty, Ty::PBool) || *b).then(|| v.clone()),
            _ => {
                note(err, v, "bool");
                None
            }
        },
        Ty::Obj(st) => {
            let d = decode_obj(st, v, err);
            d.as_object().is_some_and(|m| !m.is_empty()).then_some(d)
        }
        Ty::PObj(st) => Some(decode_obj(st, v, err)),
        Ty::StrList => match v {
            Value::Array(items) => {
                let mut out = Vec::new();
                for it in items {
                    match it {
                        Value::String(_) => out.push(it.clone()),
                        Value::Null => out.push(Value::String(String::new())),
                        _ => note(err, it, "string"),
                    }
                }
                (!out.is_empty()).then_some(Value::Array(out))
            }
            _ => {
                note(err, v, "[]string");
                None
            }
        },
        Ty::ObjList(st) => match v {
            Value::Array(items) => {
                let out: Vec<Value> = items.iter().map(|it| decode_obj(st, it, err)).collect();
                (!out.is_empty()).then_some(Value::Array(out))
            }
            _ => {
                note(err, v, "slice");
                None
            }
        },
    }
}

impl PartialEq for Ty {
    fn eq(&self, other: &Ty) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}
