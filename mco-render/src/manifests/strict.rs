//! What `kubectl apply` and the API server would refuse in a manifest that this crate reads
//! anyway: a document that is no object, an object without `apiVersion` or `kind`, a kind the
//! API server does not serve in its group and version ("no matches for kind"), a field the
//! kind's schema does not have (the API server's strict field validation, kubectl's default:
//! "strict decoding error: unknown field"), a value of the wrong type, and an object read twice
//! (the later file wins, as it does when `kubectl apply -f DIR` applies the files in order).
//!
//! Each is a [`Notice`]: the binary prints it as a warning, or as an error under `--strict`.
//! Pure: the checks look at decoded documents only.

use super::kinds::{self, KindCheck};
use serde_json::Value;
use std::fmt::Write as _;

/// What a [`Notice`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// A document that is a string, a number, a list...
    NotAnObject,
    /// An object without `apiVersion` or `kind`.
    NoKind,
    /// A kind its group does not serve in that version.
    UnknownKind,
    /// A field the kind's schema does not have.
    UnknownField,
    /// A value of another type than the schema's.
    WrongType,
    /// An object of the same kind and name read again: the later replaced the earlier.
    Replaced,
}

impl Rule {
    /// The rule's id (`unknown-field`, ...).
    pub fn id(self) -> &'static str {
        match self {
            Rule::NotAnObject => "not-an-object",
            Rule::NoKind => "no-kind",
            Rule::UnknownKind => "unknown-kind",
            Rule::UnknownField => "unknown-field",
            Rule::WrongType => "wrong-type",
            Rule::Replaced => "replaced",
        }
    }
}

/// Something kubectl or the API server would refuse or do otherwise, where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// What it is about.
    pub rule: Rule,
    /// The file.
    pub file: String,
    /// The 1-based line of the object's document (see [`super::Manifests::notice_line`] for
    /// the field's own line).
    pub line: usize,
    /// The object's kind (empty when it has none).
    pub kind: String,
    /// Its `metadata.name` (empty when it has none).
    pub name: String,
    /// The JSON pointer of the field concerned (empty for the whole document).
    pub pointer: String,
    /// What is wrong, with the field's path when there is one.
    pub message: String,
}

/// A finding of [`check_document`]: the rule, the field's JSON pointer and the message.
pub type Problem = (Rule, String, String);

/// One step of a path into a document.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// The path as the API server writes it (`spec.items[0].name`).
fn dotted(path: &[Step]) -> String {
    let mut out = String::new();
    for s in path {
        match s {
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Step::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
        }
    }
    out
}

/// The path as a JSON pointer (`/spec/items/0/name`).
fn pointer(path: &[Step]) -> String {
    let mut out = String::new();
    for s in path {
        out.push('/');
        match s {
            Step::Key(k) => out.push_str(&k.replace('~', "~0").replace('/', "~1")),
            Step::Index(i) => {
                let _ = write!(out, "{i}");
            }
        }
    }
    out
}

/// `a string`, `a list`...: how a JSON value's type is named in messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn schema_type_name(t: &str) -> &'static str {
    match t {
        "object" => "an object",
        "array" => "a list",
        "string" => "a string",
        "integer" => "an integer",
        "number" => "a number",
        "boolean" => "a boolean",
        _ => "another type",
    }
}

/// Whether `v` is of the schema type `t`.
fn is_of(v: &Value, t: &str) -> bool {
    match (t, v) {
        ("object", Value::Object(_))
        | ("array", Value::Array(_))
        | ("string", Value::String(_))
        | ("boolean", Value::Bool(_))
        | ("number", Value::Number(_))
        | ("null", Value::Null) => true,
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// The alternatives a schema is made of (`anyOf`, `oneOf`, `allOf`), itself included.
fn parts(schema: &Value) -> Vec<&Value> {
    let mut out = vec![schema];
    for key in ["anyOf", "oneOf", "allOf"] {
        for s in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.extend(parts(s));
        }
    }
    out
}

/// The types a schema allows (`None`: any).
fn types(schema: &Value) -> Option<Vec<&str>> {
    let mut out = Vec::new();
    for p in parts(schema) {
        match p.get("type") {
            Some(Value::String(t)) => out.push(t.as_str()),
            Some(Value::Array(ts)) => out.extend(ts.iter().filter_map(Value::as_str)),
            _ => {}
        }
    }
    let alternatives = ["anyOf", "oneOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .flatten()
        .any(|s| s.get("type").is_none());
    (!out.is_empty() && !alternatives).then_some(out)
}

fn flag(schema: &Value, key: &str) -> bool {
    parts(schema)
        .iter()
        .any(|p| p.get(key).and_then(Value::as_bool) == Some(true))
}

/// The schema's problems with `v`, at `path`.
fn walk(schema: &Value, v: &Value, path: &mut Vec<Step>, out: &mut Vec<Problem>) {
    if schema.as_bool() == Some(true) || v.is_null() {
        return;
    }
    if flag(schema, "x-kubernetes-int-or-string") {
        if !(is_of(v, "integer") || v.is_string()) {
            out.push(wrong_type(path, "an integer or a string", v));
        }
        return;
    }
    if let Some(ts) = types(schema) {
        if !ts.iter().any(|t| is_of(v, t)) {
            let expected = ts
                .iter()
                .filter(|t| **t != "null")
                .map(|t| schema_type_name(t))
                .collect::<Vec<_>>()
                .join(" or ");
            out.push(wrong_type(path, &expected, v));
            return;
        }
    }
    if flag(schema, "x-kubernetes-preserve-unknown-fields") {
        return;
    }
    match v {
        Value::Object(map) => {
            let all = parts(schema);
            let properties: Vec<&serde_json::Map<String, Value>> = all
                .iter()
                .filter_map(|p| p.get("properties").and_then(Value::as_object))
                .collect();
            let additional = all.iter().find_map(|p| p.get("additionalProperties"));
            for (key, value) in map {
                path.push(Step::Key(key.clone()));
                match properties.iter().find_map(|p| p.get(key)) {
                    Some(sub) => walk(sub, value, path, out),
                    None => match additional {
                        Some(Value::Bool(false)) => out.push(unknown(path)),
                        Some(sub @ Value::Object(_)) => walk(sub, value, path, out),
                        // Without `properties` the object's fields are not known here.
                        _ if !properties.is_empty() => out.push(unknown(path)),
                        _ => {}
                    },
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            if let Some(sub) = parts(schema).iter().find_map(|p| p.get("items")) {
                for (i, item) in items.iter().enumerate() {
                    path.push(Step::Index(i));
                    walk(sub, item, path, out);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

fn unknown(path: &[Step]) -> Problem {
    (
        Rule::UnknownField,
        pointer(path),
        format!("strict decoding error: unknown field {:?}", dotted(path)),
    )
}

fn wrong_type(path: &[Step], expected: &str, v: &Value) -> Problem {
    (
        Rule::WrongType,
        pointer(path),
        format!(
            "{}: expected {expected}, got {}",
            dotted(path),
            type_name(v)
        ),
    )
}

/// The schema's problems with `v` (an object of one of this project's kinds), `status` included.
pub fn check_schema(schema: &Value, v: &Value) -> Vec<Problem> {
    let mut out = Vec::new();
    walk(schema, v, &mut Vec::new(), &mut out);
    out
}

/// The schema's problems with an object's fields but its `status`: what controllers write, and
/// what a dump of a cluster running a newer release may hold fields of that this project does
/// not know.
fn check_authored(schema: &Value, map: &serde_json::Map<String, Value>) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut path = Vec::new();
    for (key, value) in map.iter().filter(|(k, _)| *k != "status") {
        path.push(Step::Key(key.clone()));
        match schema.pointer(&format!("/properties/{key}")) {
            Some(sub) => walk(sub, value, &mut path, &mut out),
            None => out.push(unknown(&path)),
        }
        path.pop();
    }
    out
}

/// The edit distance between two kinds, for suggestions.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(row[j]).min(row[j + 1])
            };
            prev = here;
        }
    }
    row[b.len()]
}

/// Why kubectl finds no `kind` in `api_version`, with a hint.
fn no_match(api_version: &str, kind: &str) -> Problem {
    let mut message = format!("no matches for kind {kind:?} in version {api_version:?}");
    let versions = kinds::versions_serving(api_version, kind);
    let (group, _) = kinds::group_version(api_version);
    let pointer = if versions.is_empty() {
        let near = kinds::kinds_of_group(api_version)
            .into_iter()
            .map(|k| {
                (
                    distance(&k.to_ascii_lowercase(), &kind.to_ascii_lowercase()),
                    k,
                )
            })
            .filter(|(d, _)| *d <= 2)
            .min();
        if let Some((_, k)) = near {
            let _ = write!(message, " (did you mean {k}?)");
        }
        "/kind"
    } else {
        let served: Vec<String> = versions
            .iter()
            .map(|v| {
                if group.is_empty() {
                    v.to_string()
                } else {
                    format!("{group}/{v}")
                }
            })
            .collect();
        let _ = write!(message, " (served in {})", served.join(", "));
        "/apiVersion"
    };
    message.push_str(": kubectl apply refuses it (ensure CRDs are installed first)");
    (Rule::UnknownKind, pointer.to_string(), message)
}

/// What kubectl and the API server would refuse in one decoded document (the `doc`th of its
/// file): not an object, no `apiVersion` or `kind`, a kind not served, unknown fields and
/// values of the wrong type (for this project's kinds, against their CRDs' schemas; a
/// MachineConfig's `spec.config` is Ignition's, checked on its own).
pub fn check_document(v: &Value, doc: usize) -> Vec<Problem> {
    let Value::Object(map) = v else {
        return vec![(
            Rule::NotAnObject,
            String::new(),
            format!(
                "document {doc} is {}, not an object: kubectl apply refuses it",
                type_name(v)
            ),
        )];
    };
    let text = |k: &str| map.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let (Some(api_version), Some(kind)) = (api_version, kind) else {
        let missing: Vec<&str> = [("apiVersion", api_version), ("kind", kind)]
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| *k)
            .collect();
        let said = missing
            .iter()
            .map(|k| format!("{k} not set"))
            .collect::<Vec<_>>()
            .join(", ");
        return vec![(
            Rule::NoKind,
            String::new(),
            format!("{said}: kubectl apply refuses the document"),
        )];
    };
    match kinds::check_kind(api_version, kind) {
        KindCheck::NoMatch => vec![no_match(api_version, kind)],
        KindCheck::OtherGroup => Vec::new(),
        KindCheck::Known => match kinds::schema(api_version, kind) {
            Some(schema) => check_authored(schema, map),
            None => Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(v: &Value) -> Vec<String> {
        check_document(v, 1)
            .into_iter()
            .map(|(_, _, m)| m)
            .collect()
    }

    #[test]
    fn typos_are_named() {
        let mc = |extra: Value| {
            let mut v = json!({
                "apiVersion": "machineconfiguration.openshift.io/v1",
                "kind": "MachineConfig",
                "metadata": {"name": "99-x", "labels": {"a": "b"}},
                "spec": {"config": {"ignition": {"version": "3.5.0"}, "anything": 1}},
            });
            if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
                o.extend(e);
            }
            v
        };
        assert!(messages(&mc(json!({}))).is_empty());
        assert_eq!(
            messages(&mc(json!({"kind": "MachineConfg"}))),
            ["no matches for kind \"MachineConfg\" in version \"machineconfiguration.openshift.io/v1\" (did you mean MachineConfig?): kubectl apply refuses it (ensure CRDs are installed first)"]
        );
        assert_eq!(
            messages(&mc(json!({"apiVersion": "machineconfiguration.openshift.io/v2"}))),
            ["no matches for kind \"MachineConfig\" in version \"machineconfiguration.openshift.io/v2\" (served in machineconfiguration.openshift.io/v1): kubectl apply refuses it (ensure CRDs are installed first)"]
        );
        let v = mc(
            json!({"spec": {"kernelArgs": ["a"], "kernelArguments": "nosmt"}, "metadata": {"name": "x", "label": {}}}),
        );
        let found = check_document(&v, 1);
        assert_eq!(
            found,
            [
                (
                    Rule::UnknownField,
                    "/metadata/label".to_string(),
                    "strict decoding error: unknown field \"metadata.label\"".to_string()
                ),
                (
                    Rule::UnknownField,
                    "/spec/kernelArgs".to_string(),
                    "strict decoding error: unknown field \"spec.kernelArgs\"".to_string()
                ),
                (
                    Rule::WrongType,
                    "/spec/kernelArguments".to_string(),
                    "spec.kernelArguments: expected a list, got a string".to_string()
                ),
            ]
        );
        assert_eq!(
            messages(&json!("hello")),
            ["document 1 is a string, not an object: kubectl apply refuses it"]
        );
        assert_eq!(
            messages(&json!({"metadata": {"name": "x"}})),
            ["apiVersion not set, kind not set: kubectl apply refuses the document"]
        );
        assert!(
            messages(&json!({"apiVersion": "apps/v1", "kind": "Deployment", "x": 1})).is_empty()
        );
    }

    #[test]
    fn nested_lists_and_maps_are_walked() {
        let pool = json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfigPool",
            "metadata": {"name": "worker"},
            "spec": {
                "machineConfigSelector": {"matchLabels": {"a": "b"}, "matchExpresions": []},
                "maxUnavailable": "10%",
                "paused": "yes",
            },
        });
        let found: Vec<String> = check_document(&pool, 1)
            .into_iter()
            .map(|(_, p, _)| p)
            .collect();
        assert_eq!(
            found,
            [
                "/spec/machineConfigSelector/matchExpresions",
                "/spec/paused"
            ]
        );
    }
}
