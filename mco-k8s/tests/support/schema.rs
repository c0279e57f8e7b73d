//! Custom resources checked against their CRDs' schemas, as the API server validates them:
//! the CRDs of `manifests/` (`00-crds.yaml`, `00-clusteroperator-crd.yaml`,
//! `optional/config-crds.yaml`), the served version's `openAPIV3Schema`.
//!
//! Checked: `type`, `required`, `enum`, `minLength`/`maxLength`, `minItems`/`maxItems`, the
//! keys of `x-kubernetes-list-type: map` lists being unique, and `x-kubernetes-validations`
//! rules of the shapes the CRDs use (CEL's `self.matches('re')`, `self.split('@')[i]` and
//! `.size() == n` joined by `&&` and `||`, `!format.dns1123Subdomain().validate(self).hasValue()`).
//! Errors read as the API server's (`spec.x: Required value`, `spec.x: Invalid value:
//! "string": <message>`), all of them in one 422 Invalid.
//!
//! Before the check, the schemas' `default`s fill absent fields ([`apply_defaults`]), as the
//! API server defaults a custom resource on write.
//!
//! Simplified: a `null` passes where the schema has no `nullable` (the real server prunes it),
//! unknown fields are kept (not pruned), and a rule of another shape is not evaluated.

use super::apiserver::ResourceDef;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// The served schemas by `<plural>.<group>/<version>`.
fn schemas() -> &'static BTreeMap<String, Value> {
    static SCHEMAS: OnceLock<BTreeMap<String, Value>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../manifests");
        let mut out = BTreeMap::new();
        for file in [
            "00-crds.yaml",
            "00-clusteroperator-crd.yaml",
            "optional/config-crds.yaml",
        ] {
            let text = std::fs::read_to_string(format!("{dir}/{file}"))
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            for doc in serde_yaml_ng::Deserializer::from_str(&text) {
                let Ok(crd) = <Value as serde::Deserialize>::deserialize(doc) else {
                    continue;
                };
                let name = crd["metadata"]["name"].as_str().unwrap_or("").to_string();
                for v in crd["spec"]["versions"].as_array().into_iter().flatten() {
                    let version = v["name"].as_str().unwrap_or("");
                    out.insert(
                        format!("{name}/{version}"),
                        v["schema"]["openAPIV3Schema"].clone(),
                    );
                }
            }
        }
        out
    })
}

/// Fills the fields of `obj` (of `def`) its CRD's schema gives a `default` where they are
/// absent, in objects present and in every list item.
pub fn apply_defaults(def: &ResourceDef, obj: &mut Value) {
    let key = format!("{}.{}/{}", def.plural, def.group, def.version);
    if let Some(schema) = schemas().get(&key) {
        fill(schema, obj);
    }
}

fn fill(schema: &Value, v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (field, sub) in schema["properties"].as_object().into_iter().flatten() {
                match m.get_mut(field) {
                    Some(fv) => fill(sub, fv),
                    None => {
                        if let Some(d) = sub.get("default") {
                            m.insert(field.clone(), d.clone());
                        }
                    }
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| fill(&schema["items"], i)),
        _ => {}
    }
}

/// The causes `obj` (of `def`) fails its CRD's schema for, empty when it passes or `def` has
/// no CRD.
pub fn violations(def: &ResourceDef, obj: &Value) -> Vec<String> {
    let key = format!("{}.{}/{}", def.plural, def.group, def.version);
    let Some(schema) = schemas().get(&key) else {
        return Vec::new();
    };
    let mut errs = Vec::new();
    for (field, sub) in schema["properties"].as_object().into_iter().flatten() {
        if matches!(field.as_str(), "metadata" | "apiVersion" | "kind") {
            continue;
        }
        match obj.get(field) {
            Some(v) => check(sub, v, field, &mut errs),
            None if required(schema).contains(field.as_str()) => {
                errs.push(format!("{field}: Required value"))
            }
            None => {}
        }
    }
    errs
}

fn required(schema: &Value) -> BTreeSet<&str> {
    schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn check(schema: &Value, v: &Value, path: &str, errs: &mut Vec<String>) {
    if v.is_null() {
        return;
    }
    let actual = type_of(v);
    if let Some(want) = schema["type"].as_str() {
        let ok = want == actual || (want == "number" && actual == "integer");
        if !ok {
            errs.push(format!(
                "{path}: Invalid value: \"{actual}\": {path} in body must be of type {want}: \"{actual}\""
            ));
            return;
        }
    }
    if let Some(allowed) = schema["enum"].as_array() {
        if !allowed.contains(v) {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            errs.push(format!(
                "{path}: Unsupported value: {v}: supported values: {}",
                list.join(", ")
            ));
        }
    }
    match v {
        Value::String(s) => {
            if let Some(max) = schema["maxLength"].as_u64() {
                if s.chars().count() as u64 > max {
                    errs.push(format!(
                        "{path}: Too long: may not be more than {max} bytes"
                    ));
                }
            }
            if let Some(min) = schema["minLength"].as_u64() {
                if (s.chars().count() as u64) < min {
                    errs.push(format!(
                        "{path}: Invalid value: {v}: {path} in body should be at least {min} chars long"
                    ));
                }
            }
        }
        Value::Array(items) => {
            let n = items.len() as u64;
            if let Some(max) = schema["maxItems"].as_u64() {
                if n > max {
                    errs.push(format!(
                        "{path}: Too many: {n}: must have at most {max} items"
                    ));
                }
            }
            if let Some(min) = schema["minItems"].as_u64() {
                if n < min {
                    errs.push(format!(
                        "{path}: Invalid value: {n}: {path} in body should have at least {min} items"
                    ));
                }
            }
            if schema["x-kubernetes-list-type"] == "map" {
                let keys: Vec<&str> = schema["x-kubernetes-list-map-keys"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                let mut seen = BTreeSet::new();
                for (i, item) in items.iter().enumerate() {
                    let key: Vec<String> = keys.iter().map(|k| item[*k].to_string()).collect();
                    if !seen.insert(key.clone()) {
                        errs.push(format!(
                            "{path}[{i}]: Duplicate value: {{{}}}",
                            keys.iter()
                                .zip(&key)
                                .map(|(k, v)| format!("\"{k}\":{v}"))
                                .collect::<Vec<_>>()
                                .join(",")
                        ));
                    }
                }
            }
            for (i, item) in items.iter().enumerate() {
                check(&schema["items"], item, &format!("{path}[{i}]"), errs);
            }
        }
        Value::Object(m) => {
            for field in required(schema) {
                if m.get(field).is_none_or(Value::is_null) {
                    errs.push(format!("{path}.{field}: Required value"));
                }
            }
            for (field, sub) in schema["properties"].as_object().into_iter().flatten() {
                if let Some(fv) = m.get(field) {
                    check(sub, fv, &format!("{path}.{field}"), errs);
                }
            }
        }
        _ => {}
    }
    for rule in schema["x-kubernetes-validations"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let (Some(text), Value::String(s)) = (rule["rule"].as_str(), v) else {
            continue;
        };
        if eval(text, s) == Some(false) {
            let message = rule["message"].as_str().unwrap_or(text);
            errs.push(format!("{path}: Invalid value: \"string\": {message}"));
        }
    }
}

/// A CEL rule of the shapes the CRDs use, over the string `s`; `None` for another shape.
pub fn eval(rule: &str, s: &str) -> Option<bool> {
    let rule = rule.trim();
    let rule = match rule.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        Some(inner) if balanced(inner) => inner.trim(),
        _ => rule,
    };
    if rule.contains("||") {
        let parts: Option<Vec<bool>> = rule.split("||").map(|p| eval(p, s)).collect();
        return parts.map(|p| p.into_iter().any(|b| b));
    }
    if rule.contains("&&") {
        let parts: Option<Vec<bool>> = rule.split("&&").map(|p| eval(p, s)).collect();
        return parts.map(|p| p.into_iter().all(|b| b));
    }
    if rule == "!format.dns1123Subdomain().validate(self).hasValue()" {
        return Some(is_dns1123_subdomain(s));
    }
    if let Some(re) = rule
        .strip_prefix("self.matches('")
        .and_then(|r| r.strip_suffix("')"))
    {
        return matches(re, s);
    }
    if let Some(n) = rule.strip_prefix("self.split('@').size() == ") {
        return n
            .trim()
            .parse::<usize>()
            .ok()
            .map(|n| s.split('@').count() == n);
    }
    if let Some(rest) = rule.strip_prefix("self.split('@')[") {
        let (index, rest) = rest.split_once("].matches('")?;
        let re = rest.strip_suffix("')")?;
        let index: usize = index.parse().ok()?;
        // An index past the end is a CEL error: the rule fails.
        return Some(
            s.split('@')
                .nth(index)
                .is_some_and(|part| matches(re, part) == Some(true)),
        );
    }
    None
}

fn balanced(s: &str) -> bool {
    let mut depth = 0i32;
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0
}

/// CEL's `matches` (RE2, unanchored) of a CEL single-quoted literal's body.
fn matches(literal: &str, s: &str) -> Option<bool> {
    let pattern = literal.replace("\\\\", "\\");
    regex::Regex::new(&pattern).ok().map(|re| re.is_match(s))
}

/// Kubernetes' `IsDNS1123Subdomain`.
fn is_dns1123_subdomain(s: &str) -> bool {
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    !s.is_empty() && s.len() <= 253 && s.split('.').all(label_ok)
}
