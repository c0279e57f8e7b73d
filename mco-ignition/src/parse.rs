//! Parsing spec 3.x configs the way upstream's Go decoder does.
//!
//! Keys match struct fields exactly or, failing that, case-insensitively; unknown keys are
//! ignored here and reported as warnings by validation; `null` means unset; a value of the wrong
//! JSON type (a float for an integer included) is an error. The result is a [`Config`] normalised
//! for its version, then translated up to 3.5 when asked.

use crate::config::Config;
use crate::emit;
use crate::error::ParseError;
use crate::path::JsonPath;
use crate::report::{Position, Report, ReportEntry, Severity};
use crate::schema::{self, Field, Kind, Obj, Presence};
use crate::small_map::{key_eq, SmallGet};
use crate::validate;
use crate::version::SpecVersion;
use serde_json::{Map, Value};

/// A successfully parsed config and the warnings found on the way.
#[derive(Debug, Clone)]
pub struct Parsed {
    /// The config, in the version it was written in.
    pub config: Config,
    /// Warnings (never errors).
    pub report: Report,
}

/// What `ignition.version` says, as upstream's version probe reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DetectedVersion {
    /// A modelled version.
    Known(SpecVersion),
    /// A semantic version that is not modelled (`3.9.0`, `1.0.0`, `3.5.0-experimental`).
    Unknown(semver::Version),
}

/// Reads `ignition.version` (keys matched case-insensitively).
pub fn detect_version(raw: &Value) -> Result<DetectedVersion, ParseError> {
    let obj = raw
        .as_object()
        .ok_or_else(|| type_error_report(raw, "object"))?;
    let version = lookup(obj, "ignition")
        .and_then(Value::as_object)
        .and_then(|ign| lookup(ign, "version"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let v = semver::Version::parse(version).map_err(|_| ParseError::InvalidVersion)?;
    match SpecVersion::parse(version) {
        Some(sv) => Ok(DetectedVersion::Known(sv)),
        None => Ok(DetectedVersion::Unknown(v)),
    }
}

fn type_error_report(_raw: &Value, want: &str) -> ParseError {
    let mut r = Report::default();
    r.entries.push(ReportEntry {
        severity: Severity::Error,
        path: None,
        position: Some(Position { line: 1, column: 1 }),
        message: format!("json: cannot unmarshal non-object into Go value of type {want}"),
    });
    ParseError::Invalid(r)
}

/// Parses JSON bytes holding a spec 3.x config.
pub fn parse_bytes(bytes: &[u8]) -> Result<Parsed, ParseError> {
    if bytes.is_empty() {
        return Err(ParseError::Empty);
    }
    let raw: Value = serde_json::from_slice(bytes).map_err(|e| {
        let mut r = Report::default();
        r.entries.push(ReportEntry {
            severity: Severity::Error,
            path: None,
            position: Some(Position {
                line: e.line(),
                column: e.column(),
            }),
            message: e.to_string(),
        });
        ParseError::Syntax(r)
    })?;
    parse_value(&raw)
}

/// Parses a spec 3.x config from a JSON value: version, decoding, then validation with positions
/// in the value's Go-style serialisation. Errors make the parse fail; warnings come back in
/// [`Parsed::report`].
pub fn parse_value(raw: &Value) -> Result<Parsed, ParseError> {
    parse_value_in(raw, emit::Layout::Sorted)
}

/// [`parse_value`] for a config whose report positions refer to a given serialisation layout.
pub fn parse_value_in(raw: &Value, layout: emit::Layout) -> Result<Parsed, ParseError> {
    let version = match detect_version(raw)? {
        DetectedVersion::Known(v) if v.is_v3() => v,
        _ => return Err(ParseError::UnknownVersion),
    };
    let config = decode(raw, version)?;
    let mut report = validate::validate(&config);
    report.merge(validate::duplicates(&config));
    report.merge(validate::unused_keys(raw, version.minor()));
    validate::correlate_in(&mut report, raw, layout);
    if report.is_fatal() {
        return Err(ParseError::Invalid(report));
    }
    Ok(Parsed { config, report })
}

/// [`parse_value`] taking the value, for callers that no longer need it.
pub fn parse_owned(raw: Value) -> Result<Parsed, ParseError> {
    parse_owned_in(raw, emit::Layout::Sorted)
}

/// [`parse_value_in`] taking the value: the same result, the same errors and warnings.
///
/// A config already in the normalised form (canonical keys in any order, no `null`, no
/// unknown keys, no empty objects or lists, no omitted required field, no zero value where
/// upstream omits zeros) becomes the [`Config`] as it is, without a copy; any other is decoded
/// as [`parse_value_in`] decodes it.
pub fn parse_owned_in(raw: Value, layout: emit::Layout) -> Result<Parsed, ParseError> {
    let version = match detect_version(&raw)? {
        DetectedVersion::Known(v) if v.is_v3() => v,
        _ => return Err(ParseError::UnknownVersion),
    };
    let root = match raw {
        Value::Object(root)
            if is_normalised(&root, &schema::CONFIG, version.minor())
                && has_exact_version(&root, version) =>
        {
            into_schema_order(root, &schema::CONFIG, version.minor())
        }
        other => return parse_value_in(&other, layout),
    };
    // The tree is its own normalised form up to key order, which report positions do not
    // depend on (both layouts order keys themselves), so it also stands for the raw input;
    // and it has no key the schema does not know.
    let mut config = Config::from_normalised(version, root);
    let mut report = validate::validate(&config);
    report.merge(validate::duplicates(&config));
    if !report.entries.is_empty() {
        let raw = Value::Object(config.take_root());
        validate::correlate_in(&mut report, &raw, layout);
        if let Value::Object(root) = raw {
            config = Config::from_normalised(version, root);
        }
    }
    if report.is_fatal() {
        return Err(ParseError::Invalid(report));
    }
    Ok(Parsed { config, report })
}

fn has_exact_version(root: &Map<String, Value>, version: SpecVersion) -> bool {
    root.small_get("ignition")
        .and_then(|i| i.small_get("version"))
        .and_then(Value::as_str)
        == Some(version.as_str())
}

/// Whether decoding `obj` as `schema` would give `obj` back with the same keys and values, in
/// schema order. Conservative: `false` may also mean "not sure".
fn is_normalised(obj: &Map<String, Value>, schema: &'static Obj, minor: u64) -> bool {
    let mut required = 0;
    for (k, v) in obj {
        let Some(field) = schema.field(k, minor) else {
            return false;
        };
        if !is_normalised_value(field, v, minor) {
            return false;
        }
        required += usize::from(field.presence == Presence::Required);
    }
    required
        == schema
            .fields_for(minor)
            .filter(|f| f.presence == Presence::Required)
            .count()
}

/// Puts the keys of a tree [`is_normalised`] accepted in schema order, moving the values.
fn into_schema_order(
    mut obj: Map<String, Value>,
    schema: &'static Obj,
    minor: u64,
) -> Map<String, Value> {
    let mut fields = schema.fields_for(minor);
    let ordered = obj.keys().all(|k| fields.any(|f| key_eq(f.name, k)));
    if ordered {
        for (k, v) in obj.iter_mut() {
            if let Some(field) = schema.field(k, minor) {
                order_children(field, v, minor);
            }
        }
        return obj;
    }
    // Reorder in place: every key that is not yet where schema order puts it moves there, so
    // the map keeps its allocations and no key is hashed unless it moves.
    let mut pos = 0;
    for field in schema.fields_for(minor) {
        let Some(at) = obj.keys().position(|k| key_eq(k, field.name)) else {
            continue;
        };
        if at == pos {
            if let Some(v) = obj.get_mut(field.name) {
                order_children(field, v, minor);
            }
        } else if let Some((k, mut v)) = obj.shift_remove_entry(field.name) {
            order_children(field, &mut v, minor);
            // Keys before `pos` are placed and this one came from after them, so `pos` is
            // within the map; the check only keeps a mistake from panicking.
            if pos <= obj.len() {
                obj.shift_insert(pos, k, v);
            } else {
                obj.insert(k, v);
            }
        }
        pos += 1;
    }
    obj
}

fn order_children(field: &'static Field, v: &mut Value, minor: u64) {
    match (&field.kind, v) {
        (Kind::Obj(s), Value::Object(m)) => *m = into_schema_order(std::mem::take(m), s, minor),
        (Kind::ObjList(s), Value::Array(items)) => {
            for item in items {
                if let Value::Object(m) = item {
                    *m = into_schema_order(std::mem::take(m), s, minor);
                }
            }
        }
        _ => {}
    }
}

fn is_normalised_value(field: &'static Field, v: &Value, minor: u64) -> bool {
    let omit_zero = field.presence == Presence::OmitZero;
    match (&field.kind, v) {
        (Kind::Str, Value::String(s)) => !(omit_zero && s.is_empty()),
        (Kind::Bool, Value::Bool(b)) => !omit_zero || *b,
        (Kind::Int, Value::Number(n)) if n.is_i64() || n.is_u64() => {
            !(omit_zero && n.as_i64() == Some(0))
        }
        (Kind::Obj(s), Value::Object(m)) => !m.is_empty() && is_normalised(m, s, minor),
        (Kind::ObjList(s), Value::Array(items)) => {
            !items.is_empty()
                && items.iter().all(|item| match item {
                    Value::Object(m) => is_normalised(m, s, minor),
                    _ => false,
                })
        }
        (Kind::StrList(_), Value::Array(items)) => {
            !items.is_empty() && items.iter().all(Value::is_string)
        }
        _ => false,
    }
}

/// Decodes a JSON value into a normalised config of a given 3.x version, without validation.
pub fn decode(raw: &Value, version: SpecVersion) -> Result<Config, ParseError> {
    let minor = version.minor();
    let obj = raw
        .as_object()
        .ok_or_else(|| type_error_report(raw, "types.Config"))?;
    let mut errors = Vec::new();
    let root = normalise_obj(obj, &schema::CONFIG, minor, &mut Vec::new(), &mut errors);
    if let Some((path, message)) = errors.into_iter().next() {
        let mut r = Report::default();
        let offset = emit::go_offsets(raw, std::slice::from_ref(&path))[0];
        r.entries.push(ReportEntry {
            severity: Severity::Error,
            path: None,
            position: offset.map(|o| Position {
                line: 1,
                column: o + 1,
            }),
            message,
        });
        return Err(ParseError::Invalid(r));
    }
    Ok(Config::from_normalised(version, root))
}

/// Finds a key the way Go's decoder matches struct fields: exact, else case-insensitive.
pub(crate) fn lookup<'a>(obj: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    obj.get(name).or_else(|| {
        obj.iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
            .next_back()
    })
}

/// The key and value a struct field decodes from: the exact key, else the last key equal to it
/// ignoring ASCII case.
fn raw_entry<'a>(obj: &'a Map<String, Value>, name: &'static str) -> Option<(&'a str, &'a Value)> {
    if let Some(v) = obj.small_get(name) {
        return Some((name, v));
    }
    obj.iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(k, v)| (k.as_str(), v))
        .next_back()
}

type DecodeErrors = Vec<(JsonPath, String)>;

fn go_type(kind: &Kind) -> &'static str {
    match kind {
        Kind::Str => "string",
        Kind::Int => "int",
        Kind::Bool => "bool",
        Kind::Obj(o) => o.name,
        Kind::ObjList(_) | Kind::StrList(_) => "slice",
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_err(
    errors: &mut DecodeErrors,
    path: &[crate::path::Step],
    owner: &Obj,
    field: &Field,
    v: &Value,
) {
    let dotted: Vec<&str> = path
        .iter()
        .filter_map(|s| match s {
            crate::path::Step::Key(k) => Some(k.as_ref()),
            crate::path::Step::Index(_) => None,
        })
        .collect();
    let shown = match v {
        Value::Number(n) => format!("number {n}"),
        other => json_type(other).to_string(),
    };
    errors.push((
        JsonPath(path.to_vec()),
        format!(
            "json: cannot unmarshal {shown} into Go struct field {}.{} of type {}",
            owner.name,
            dotted.join("."),
            go_type(&field.kind)
        ),
    ));
}

fn normalise_obj(
    obj: &Map<String, Value>,
    schema: &'static Obj,
    minor: u64,
    path: &mut Vec<crate::path::Step>,
    errors: &mut DecodeErrors,
) -> Map<String, Value> {
    let mut out = Map::new();
    for field in schema.fields_for(minor) {
        let entry = raw_entry(obj, field.name).filter(|(_, v)| !v.is_null());
        let value = entry.and_then(|(key, v)| {
            path.push(crate::path::Step::Key(key.to_string().into()));
            let n = normalise_field(v, schema, field, minor, path, errors);
            path.pop();
            n
        });
        match value {
            Some(v) => {
                if field.presence == Presence::OmitZero && is_zero(&v) {
                    continue;
                }
                out.insert(field.name.to_string(), v);
            }
            None if field.presence == Presence::Required => {
                out.insert(field.name.to_string(), zero(&field.kind));
            }
            None => {}
        }
    }
    out
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_i64() == Some(0),
        Value::Bool(b) => !b,
        _ => false,
    }
}

fn zero(kind: &Kind) -> Value {
    match kind {
        Kind::Str => Value::String(String::new()),
        Kind::Int => Value::from(0),
        Kind::Bool => Value::Bool(false),
        Kind::Obj(_) => Value::Object(Map::new()),
        Kind::ObjList(_) | Kind::StrList(_) => Value::Array(Vec::new()),
    }
}

fn normalise_field(
    v: &Value,
    owner: &'static Obj,
    field: &'static Field,
    minor: u64,
    path: &mut Vec<crate::path::Step>,
    errors: &mut DecodeErrors,
) -> Option<Value> {
    match (&field.kind, v) {
        (Kind::Str, Value::String(_)) | (Kind::Bool, Value::Bool(_)) => Some(v.clone()),
        (Kind::Int, Value::Number(n)) if n.is_i64() || n.is_u64() => Some(v.clone()),
        (Kind::Obj(schema), Value::Object(m)) => {
            let o = normalise_obj(m, schema, minor, path, errors);
            (!o.is_empty()).then_some(Value::Object(o))
        }
        (Kind::ObjList(schema), Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                path.push(crate::path::Step::Index(i));
                match item {
                    Value::Object(m) => {
                        out.push(Value::Object(normalise_obj(m, schema, minor, path, errors)))
                    }
                    Value::Null => out.push(Value::Object(normalise_obj(
                        &Map::new(),
                        schema,
                        minor,
                        path,
                        errors,
                    ))),
                    other => type_err(errors, path, owner, field, other),
                }
                path.pop();
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        (Kind::StrList(_), Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(_) => out.push(item.clone()),
                    Value::Null => out.push(Value::String(String::new())),
                    other => {
                        path.push(crate::path::Step::Index(i));
                        type_err(errors, path, owner, field, other);
                        path.pop();
                    }
                }
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        (_, other) => {
            type_err(errors, path, owner, field, other);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_normalised_tree_is_recognised() {
        let raw = json!({
            "ignition": {"version": "3.2.0"},
            "storage": {"files": [{"path": "/etc/a", "contents": {"source": "data:,x"}, "mode": 420}]},
            "systemd": {"units": [{"name": "a.service", "enabled": true}]}
        });
        let config = parse_value(&raw).map(|p| p.config.into_value());
        let Ok(Value::Object(tree)) = config else {
            panic!("parse failed")
        };
        assert!(is_normalised(&tree, &schema::CONFIG, 2));
        let Value::Object(mut raw) = raw else {
            panic!()
        };
        // Written in another key order only.
        assert!(is_normalised(&raw, &schema::CONFIG, 2));
        raw.insert("passwd".into(), Value::Null);
        assert!(!is_normalised(&raw, &schema::CONFIG, 2));
        let reordered: Map<String, Value> = tree.clone().into_iter().rev().collect();
        assert!(is_normalised(&reordered, &schema::CONFIG, 2));
        let back = into_schema_order(reordered, &schema::CONFIG, 2);
        assert_eq!(
            serde_json::to_string(&back).ok(),
            serde_json::to_string(&tree).ok()
        );
    }
}
