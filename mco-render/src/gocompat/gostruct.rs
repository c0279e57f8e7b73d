//! A small model of Go structs as upstream's controllers handle them.
//!
//! Upstream decodes user input into typed Go structs with `encoding/json`,
//! merges structs with `mergo.Merge(dst, src, WithOverride)` and writes them
//! back with `encoding/json`. The exact output depends on Go's rules: field
//! names matched without regard to case, unknown fields dropped, `omitempty`,
//! zero values, nil versus empty, and how each type is written. A [`Ty`]
//! describes a Go type; a [`GoVal`] holds a value of it.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::duration::{format_duration, parse_duration};
use super::quantity::Quantity;
use super::quote::go_quote;

/// A Go type.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ty {
    Bool,
    I32,
    I64,
    U32,
    F64,
    Str,
    /// `metav1.Duration`: a struct written as Go duration text.
    Duration,
    /// `resource.Quantity`.
    Quantity,
    /// component-base `TimeOrMetaDuration`: a duration written as text or nanoseconds.
    TimeOrMeta,
    /// `metav1.Time`, kept as its RFC 3339 text.
    Time,
    Ptr(&'static Ty),
    Slice(&'static Ty),
    Map(&'static Ty),
    Struct(&'static StructTy),
}

/// A Go struct type. Embedded (inline) structs are listed as their promoted fields.
#[derive(Debug)]
pub(crate) struct StructTy {
    /// The type name as Go's errors print it (`v1beta1.KubeletConfiguration`).
    pub name: &'static str,
    pub fields: &'static [Field],
}

/// A struct field.
#[derive(Debug)]
pub(crate) struct Field {
    /// The JSON name.
    pub json: &'static str,
    pub ty: Ty,
    pub omitempty: bool,
}

/// A Go value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum GoVal {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// Nanoseconds.
    Duration(i64),
    Quantity(Quantity),
    /// Nanoseconds, and whether it is written as text.
    TimeOrMeta(i64, bool),
    /// A nil pointer, slice or map.
    Nil,
    Ptr(Box<GoVal>),
    Slice(Vec<GoVal>),
    Map(BTreeMap<String, GoVal>),
    Struct(Vec<GoVal>),
}

impl Ty {
    /// Go's name for the type, as error messages print it.
    pub(crate) fn go_name(self) -> String {
        match self {
            Ty::Bool => "bool".into(),
            Ty::I32 => "int32".into(),
            Ty::I64 => "int64".into(),
            Ty::U32 => "uint32".into(),
            Ty::F64 => "float64".into(),
            Ty::Str => "string".into(),
            Ty::Duration => "v1.Duration".into(),
            Ty::Quantity => "resource.Quantity".into(),
            Ty::TimeOrMeta => "v1.TimeOrMetaDuration".into(),
            Ty::Time => "v1.Time".into(),
            Ty::Ptr(t) => t.go_name(),
            Ty::Slice(t) => format!("[]{}", t.go_name()),
            Ty::Map(t) => format!("map[string]{}", t.go_name()),
            Ty::Struct(st) => st.name.into(),
        }
    }

    /// The zero value.
    pub(crate) fn zero(self) -> GoVal {
        match self {
            Ty::Bool => GoVal::Bool(false),
            Ty::I32 | Ty::I64 | Ty::U32 => GoVal::Int(0),
            Ty::F64 => GoVal::Float(0.0),
            Ty::Str | Ty::Time => GoVal::Str(String::new()),
            Ty::Duration => GoVal::Duration(0),
            Ty::Quantity => GoVal::Quantity(Quantity::default()),
            Ty::TimeOrMeta => GoVal::TimeOrMeta(0, false),
            Ty::Ptr(_) | Ty::Slice(_) | Ty::Map(_) => GoVal::Nil,
            Ty::Struct(st) => GoVal::Struct(st.fields.iter().map(|f| f.ty.zero()).collect()),
        }
    }
}

impl StructTy {
    /// The index of the field with this JSON name.
    pub(crate) fn index(&self, json: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.json == json)
    }
}

/// A decoding failure, with Go's `encoding/json` message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecodeError(pub String);

/// State of one decode: the first type error (Go keeps decoding after it) and the field path.
struct Cx {
    saved: Option<String>,
    path: Vec<String>,
    structs: Vec<&'static str>,
}

impl Cx {
    fn type_error(&mut self, value: &str, ty: Ty) {
        if self.saved.is_some() {
            return;
        }
        let msg = match self.structs.last() {
            Some(st) if !self.path.is_empty() => format!(
                "json: cannot unmarshal {value} into Go struct field {}.{} of type {}",
                st.rsplit('.').next().unwrap_or(st),
                self.path.join("."),
                ty.go_name()
            ),
            _ => format!(
                "json: cannot unmarshal {value} into Go value of type {}",
                ty.go_name()
            ),
        };
        self.saved = Some(msg);
    }
}

/// How Go's decoder names a JSON value's kind in type errors.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Decodes JSON into a fresh value of `ty` as Go's `encoding/json` does.
pub(crate) fn decode(ty: Ty, json: &Value) -> Result<GoVal, DecodeError> {
    let mut v = ty.zero();
    let mut cx = Cx {
        saved: None,
        path: Vec::new(),
        structs: Vec::new(),
    };
    decode_into(&mut v, ty, json, &mut cx)?;
    match cx.saved {
        Some(msg) => Err(DecodeError(msg)),
        None => Ok(v),
    }
}

fn int_range(ty: Ty) -> (i128, i128) {
    match ty {
        Ty::I32 => (i128::from(i32::MIN), i128::from(i32::MAX)),
        Ty::U32 => (0, i128::from(u32::MAX)),
        _ => (i128::from(i64::MIN), i128::from(i64::MAX)),
    }
}

fn decode_into(v: &mut GoVal, ty: Ty, json: &Value, cx: &mut Cx) -> Result<(), DecodeError> {
    if json.is_null() {
        match ty {
            Ty::Ptr(_) | Ty::Slice(_) | Ty::Map(_) => *v = GoVal::Nil,
            Ty::Duration => {
                // The type's own decoder reads null as "" and fails to parse it.
                return parse_duration("")
                    .map(|_| ())
                    .map_err(|e| DecodeError(e.to_string()));
            }
            Ty::Quantity => *v = GoVal::Quantity(Quantity::default()),
            _ => {}
        }
        return Ok(());
    }
    match ty {
        Ty::Bool => match json {
            Value::Bool(b) => *v = GoVal::Bool(*b),
            other => cx.type_error(kind_of(other), ty),
        },
        Ty::I32 | Ty::I64 | Ty::U32 => match json {
            Value::Number(n) => {
                let (lo, hi) = int_range(ty);
                let as_int = n
                    .as_i64()
                    .map(i128::from)
                    .or_else(|| n.as_u64().map(i128::from));
                match as_int {
                    Some(i) if i >= lo && i <= hi => *v = GoVal::Int(i as i64),
                    _ => cx.type_error(&format!("number {n}"), ty),
                }
            }
            other => cx.type_error(kind_of(other), ty),
        },
        Ty::F64 => match json {
            Value::Number(n) => *v = GoVal::Float(n.as_f64().unwrap_or(0.0)),
            other => cx.type_error(kind_of(other), ty),
        },
        Ty::Str | Ty::Time => match json {
            Value::String(s) => *v = GoVal::Str(s.clone()),
            other => cx.type_error(kind_of(other), ty),
        },
        Ty::Duration => match json {
            Value::String(s) => {
                let d = parse_duration(s).map_err(|e| DecodeError(e.to_string()))?;
                *v = GoVal::Duration(d);
            }
            other => {
                return Err(DecodeError(format!(
                    "json: cannot unmarshal {} into Go value of type string",
                    kind_of(other)
                )))
            }
        },
        Ty::Quantity => {
            let text = match json {
                Value::String(s) => s.trim().to_string(),
                other => other.to_string(),
            };
            let q = Quantity::parse(&text).map_err(|e| DecodeError(e.to_string()))?;
            *v = GoVal::Quantity(q);
        }
        Ty::TimeOrMeta => match json {
            Value::String(s) => {
                let d = parse_duration(s).map_err(|e| DecodeError(e.to_string()))?;
                *v = GoVal::TimeOrMeta(d, true);
            }
            Value::Number(n) if n.as_i64().is_some() => {
                *v = GoVal::TimeOrMeta(n.as_i64().unwrap_or(0), false);
            }
            other => {
                return Err(DecodeError(format!(
                    "invalid duration {}: json: cannot unmarshal {} into Go value of type time.Duration",
                    go_quote(&other.to_string()),
                    kind_of(other)
                )))
            }
        },
        Ty::Ptr(inner) => {
            if !matches!(v, GoVal::Ptr(_)) {
                *v = GoVal::Ptr(Box::new(inner.zero()));
            }
            if let GoVal::Ptr(b) = v {
                decode_into(b, *inner, json, cx)?;
            }
        }
        Ty::Slice(inner) => match json {
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    let mut e = inner.zero();
                    decode_into(&mut e, *inner, item, cx)?;
                    out.push(e);
                }
                *v = GoVal::Slice(out);
            }
            other => cx.type_error(kind_of(other), ty),
        },
        Ty::Map(inner) => match json {
            Value::Object(obj) => {
                if !matches!(v, GoVal::Map(_)) {
                    *v = GoVal::Map(BTreeMap::new());
                }
                if let GoVal::Map(m) = v {
                    for (k, item) in obj {
                        // Map keys are not part of Go's error path.
                        let mut e = inner.zero();
                        decode_into(&mut e, *inner, item, cx)?;
                        m.insert(k.clone(), e);
                    }
                }
            }
            other => cx.type_error(kind_of(other), ty),
        },
        Ty::Struct(st) => match json {
            Value::Object(obj) => {
                if !matches!(v, GoVal::Struct(_)) {
                    *v = ty.zero();
                }
                if let GoVal::Struct(fields) = v {
                    for (k, item) in obj {
                        let idx = st
                            .index(k)
                            .or_else(|| st.fields.iter().position(|f| f.json.eq_ignore_ascii_case(k)));
                        let Some(i) = idx else { continue };
                        let f = &st.fields[i];
                        cx.path.push(f.json.to_string());
                        cx.structs.push(st.name);
                        let r = decode_into(&mut fields[i], f.ty, item, cx);
                        cx.structs.pop();
                        cx.path.pop();
                        r?;
                    }
                }
            }
            other => cx.type_error(kind_of(other), ty),
        },
    }
    Ok(())
}

/// Decodes scalars leniently, the way YAML input reaches a typed struct upstream: a YAML
/// number or boolean read into a string field becomes its text.
pub(crate) fn coerce_yaml_scalars(ty: Ty, v: &Value) -> Value {
    match (ty, v) {
        (Ty::Str | Ty::Duration | Ty::Time, Value::Number(n)) => Value::String(n.to_string()),
        (Ty::Str, Value::Bool(b)) => Value::String(b.to_string()),
        (Ty::Ptr(t), _) => coerce_yaml_scalars(*t, v),
        (Ty::Slice(t), Value::Array(items)) => {
            Value::Array(items.iter().map(|i| coerce_yaml_scalars(*t, i)).collect())
        }
        (Ty::Map(t), Value::Object(obj)) => Value::Object(
            obj.iter()
                .map(|(k, i)| (k.clone(), coerce_yaml_scalars(*t, i)))
                .collect(),
        ),
        (Ty::Struct(st), Value::Object(obj)) => Value::Object(
            obj.iter()
                .map(|(k, i)| {
                    let f = st
                        .fields
                        .iter()
                        .find(|f| f.json == k || f.json.eq_ignore_ascii_case(k));
                    let i = match f {
                        Some(f) => coerce_yaml_scalars(f.ty, i),
                        None => i.clone(),
                    };
                    (k.clone(), i)
                })
                .collect(),
        ),
        _ => v.clone(),
    }
}

/// Whether `encoding/json` leaves the value out under `omitempty`.
fn omitted(v: &GoVal) -> bool {
    match v {
        GoVal::Bool(b) => !b,
        GoVal::Int(i) => *i == 0,
        GoVal::Float(f) => *f == 0.0,
        GoVal::Str(s) => s.is_empty(),
        GoVal::Nil => true,
        GoVal::Slice(s) => s.is_empty(),
        GoVal::Map(m) => m.is_empty(),
        _ => false,
    }
}

/// A float as Go writes it; integral values become JSON integers (YAML reads them so).
fn float_value(f: f64) -> Value {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e18 {
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

/// Writes the value as Go's `encoding/json` does, as a JSON value.
pub(crate) fn marshal(v: &GoVal, ty: Ty) -> Value {
    match (v, ty) {
        (GoVal::Bool(b), _) => Value::Bool(*b),
        (GoVal::Int(i), _) => Value::from(*i),
        (GoVal::Float(f), _) => float_value(*f),
        (GoVal::Str(s), _) => Value::String(s.clone()),
        (GoVal::Duration(d), _) => Value::String(format_duration(*d)),
        (GoVal::Quantity(q), _) => Value::String(q.to_string()),
        (GoVal::TimeOrMeta(d, as_text), _) => {
            if *as_text {
                Value::String(format_duration(*d))
            } else {
                Value::from(*d)
            }
        }
        (GoVal::Nil, _) => Value::Null,
        (GoVal::Ptr(b), Ty::Ptr(inner)) => marshal(b, *inner),
        (GoVal::Slice(items), Ty::Slice(inner)) => {
            Value::Array(items.iter().map(|i| marshal(i, *inner)).collect())
        }
        (GoVal::Map(m), Ty::Map(inner)) => Value::Object(
            m.iter()
                .map(|(k, i)| (k.clone(), marshal(i, *inner)))
                .collect::<Map<_, _>>(),
        ),
        (GoVal::Struct(vals), Ty::Struct(st)) => {
            let mut obj = Map::new();
            for (f, val) in st.fields.iter().zip(vals) {
                if f.omitempty && omitted(val) {
                    continue;
                }
                obj.insert(f.json.to_string(), marshal(val, f.ty));
            }
            Value::Object(obj)
        }
        _ => Value::Null,
    }
}

/// Whether a scalar is Go's zero value (mergo's "empty").
fn is_empty_scalar(v: &GoVal) -> bool {
    match v {
        GoVal::Bool(b) => !b,
        GoVal::Int(i) => *i == 0,
        GoVal::Float(f) => *f == 0.0,
        GoVal::Str(s) => s.is_empty(),
        GoVal::Duration(d) => *d == 0,
        _ => false,
    }
}

/// `mergo.Merge(&dst, src, mergo.WithOverride)`: non-empty source values replace
/// destination values; structs and pointed-to values merge field by field; maps merge key by
/// key (every source key wins); non-empty slices replace.
pub(crate) fn merge(dst: &mut GoVal, src: &GoVal, ty: Ty) {
    match ty {
        Ty::Struct(st) => {
            if let (GoVal::Struct(d), GoVal::Struct(s)) = (&mut *dst, src) {
                for ((f, dv), sv) in st.fields.iter().zip(d.iter_mut()).zip(s) {
                    merge(dv, sv, f.ty);
                }
            }
        }
        Ty::Map(_) => {
            if let GoVal::Map(s) = src {
                if !matches!(dst, GoVal::Map(_)) {
                    *dst = GoVal::Map(BTreeMap::new());
                }
                if let GoVal::Map(d) = dst {
                    for (k, v) in s {
                        d.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        Ty::Slice(_) => {
            if let GoVal::Slice(s) = src {
                if !s.is_empty() {
                    *dst = src.clone();
                }
            }
        }
        Ty::Ptr(inner) => match (&mut *dst, src) {
            (_, GoVal::Nil) => {}
            (GoVal::Nil, _) => *dst = src.clone(),
            (GoVal::Ptr(d), GoVal::Ptr(s)) => merge(d, s, *inner),
            _ => {}
        },
        Ty::Quantity => {
            // Only the exported format field of a quantity is reachable by the merge.
        }
        Ty::TimeOrMeta => {
            if let (GoVal::TimeOrMeta(dn, dt), GoVal::TimeOrMeta(sn, st)) = (&mut *dst, src) {
                if *sn != 0 {
                    *dn = *sn;
                }
                if *st {
                    *dt = true;
                }
            }
        }
        Ty::Time => {
            *dst = src.clone();
        }
        _ => {
            if !is_empty_scalar(src) {
                *dst = src.clone();
            }
        }
    }
}

/// A field of a struct value, by JSON name.
pub(crate) fn field<'a>(v: &'a GoVal, st: &StructTy, json: &str) -> Option<&'a GoVal> {
    match v {
        GoVal::Struct(vals) => st.index(json).and_then(|i| vals.get(i)),
        _ => None,
    }
}

/// A mutable field of a struct value, by JSON name.
pub(crate) fn field_mut<'a>(v: &'a mut GoVal, st: &StructTy, json: &str) -> Option<&'a mut GoVal> {
    match v {
        GoVal::Struct(vals) => st.index(json).and_then(move |i| vals.get_mut(i)),
        _ => None,
    }
}

/// A string field's value ("" when unset).
pub(crate) fn str_field<'a>(v: &'a GoVal, st: &StructTy, json: &str) -> &'a str {
    match field(v, st, json) {
        Some(GoVal::Str(s)) => s,
        _ => "",
    }
}

/// The strings of a `[]string` field.
pub(crate) fn strings_field(v: &GoVal, st: &StructTy, json: &str) -> Vec<String> {
    match field(v, st, json) {
        Some(GoVal::Slice(items)) => items
            .iter()
            .filter_map(|i| match i {
                GoVal::Str(s) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Go's `%v` text of a value (`[a b]`, `map[k:v]`, `true`).
pub(crate) fn go_fmt(v: &GoVal) -> String {
    match v {
        GoVal::Bool(b) => b.to_string(),
        GoVal::Int(i) => i.to_string(),
        GoVal::Float(f) => f.to_string(),
        GoVal::Str(s) => s.clone(),
        GoVal::Duration(d) => format_duration(*d),
        GoVal::Quantity(q) => q.to_string(),
        GoVal::TimeOrMeta(d, _) => format_duration(*d),
        GoVal::Nil => "<nil>".into(),
        GoVal::Ptr(b) => go_fmt(b),
        GoVal::Slice(items) => format!(
            "[{}]",
            items.iter().map(go_fmt).collect::<Vec<_>>().join(" ")
        ),
        GoVal::Map(m) => format!(
            "map[{}]",
            m.iter()
                .map(|(k, v)| format!("{k}:{}", go_fmt(v)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        GoVal::Struct(vals) => format!(
            "{{{}}}",
            vals.iter().map(go_fmt).collect::<Vec<_>>().join(" ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controllers::generate::kubelet_types::{KUBELET_CONFIGURATION as KC, KUBELET_TY};
    use serde_json::json;

    fn kc(v: Value) -> GoVal {
        decode(KUBELET_TY, &v).expect("decodes")
    }

    #[test]
    fn decode_matches_names_without_case_and_drops_unknown_fields() {
        let v = kc(json!({"MaxPods": 5, "notAField": true}));
        assert_eq!(field(&v, &KC, "maxPods"), Some(&GoVal::Int(5)));
    }

    #[test]
    fn decode_errors_read_like_go() {
        let err = decode(KUBELET_TY, &json!({"maxPods": "x"})).map_err(|e| e.0);
        assert_eq!(
            err,
            Err("json: cannot unmarshal string into Go struct field KubeletConfiguration.maxPods of type int32".into())
        );
        let err = decode(KUBELET_TY, &json!({"shutdownGracePeriod": 30})).map_err(|e| e.0);
        assert_eq!(
            err,
            Err("json: cannot unmarshal number into Go value of type string".into())
        );
    }

    #[test]
    fn merge_overrides_only_with_non_zero_values() {
        let mut dst = kc(json!({
            "maxPods": 250, "kubeAPIQPS": 50, "clusterDNS": ["a"],
            "evictionHard": {"a": "1"}, "authentication": {"x509": {"clientCAFile": "ca"}}
        }));
        let src = kc(json!({
            "maxPods": 0, "kubeAPIQPS": 0, "cpuCFSQuota": false, "clusterDNS": [],
            "evictionHard": {"b": "2"}, "authentication": {"anonymous": {"enabled": false}}
        }));
        merge(&mut dst, &src, KUBELET_TY);
        let out = marshal(&dst, KUBELET_TY);
        assert_eq!(out["maxPods"], json!(250));
        assert_eq!(out["kubeAPIQPS"], json!(50));
        assert_eq!(out["cpuCFSQuota"], json!(false));
        assert_eq!(out["clusterDNS"], json!(["a"]));
        assert_eq!(out["evictionHard"], json!({"a": "1", "b": "2"}));
        assert_eq!(
            out["authentication"],
            json!({"x509": {"clientCAFile": "ca"}, "webhook": {"cacheTTL": "0s"}, "anonymous": {"enabled": false}})
        );
    }
}
