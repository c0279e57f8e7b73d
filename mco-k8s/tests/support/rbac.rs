//! Checks that a ClusterRole in manifests/ grants every request a component made to the
//! in-process API server, so a real server enforcing RBAC would not refuse it.

use super::apiserver::resource;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The rules of the ClusterRole `name` in manifests/02-rbac.yaml.
pub fn cluster_role_rules(name: &str) -> Vec<Value> {
    cluster_role_rules_in("02-rbac.yaml", name)
}

/// The rules of the ClusterRole `name` in `file` under manifests/.
pub fn cluster_role_rules_in(file: &str, name: &str) -> Vec<Value> {
    let path = format!("{}/../manifests/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let role = serde_yaml_ng::Deserializer::from_str(&text)
        .filter_map(|d| <Value as serde::Deserialize>::deserialize(d).ok())
        .find(|v| v["kind"] == "ClusterRole" && v["metadata"]["name"] == name);
    role.and_then(|v| v["rules"].as_array().cloned())
        .unwrap_or_default()
}

fn verb_of(method: &str) -> &'static str {
    match method {
        "LIST" => "list",
        "WATCH" => "watch",
        "GET" => "get",
        "POST" => "create",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" => "delete",
        _ => "?",
    }
}

fn has(list: &Value, item: &str) -> bool {
    list.as_array()
        .is_some_and(|a| a.iter().any(|v| v == item || v == "*"))
}

/// Whether `rule`'s `resourceNames`, if it lists any, hold `name`: as the API server
/// authorizes, a rule restricted to names never grants a request that names no object (a
/// create, a list or watch without a `metadata.name` field selector).
fn names_allow(rule: &Value, name: &Option<String>) -> bool {
    match rule["resourceNames"].as_array() {
        Some(names) if !names.is_empty() => name
            .as_deref()
            .is_some_and(|n| names.iter().any(|v| v == n)),
        _ => true,
    }
}

/// The requests (as the server keys them, `METHOD plural[/subresource]`, with the object
/// names they named: [`super::apiserver::Store::requests_named`]) that no rule of `rules`
/// allows.
pub fn ungranted(
    requests: &BTreeMap<String, BTreeSet<Option<String>>>,
    rules: &[Value],
) -> Vec<String> {
    let mut missing = Vec::new();
    for (key, names) in requests {
        let Some((method, what)) = key.split_once(' ') else {
            continue;
        };
        // A resource the server does not serve is keyed by its path:
        // `/apis/<group>/<version>/[namespaces/<ns>/]<plural>[/<name>]` (a GET of the
        // collection is a list).
        if let Some(rest) = what.strip_prefix("/apis/") {
            let parts: Vec<&str> = rest.split('?').next().unwrap_or(rest).split('/').collect();
            let (group, tail) = (
                parts.first().copied().unwrap_or(""),
                &parts[2.min(parts.len())..],
            );
            let tail = match tail {
                ["namespaces", _, rest @ ..] => rest,
                t => t,
            };
            let plural = tail.first().copied().unwrap_or("");
            let verb = match (method, tail.len()) {
                ("GET", 1) => "list",
                _ => verb_of(method),
            };
            for name in names {
                let allowed = rules.iter().any(|r| {
                    has(&r["apiGroups"], group)
                        && has(&r["resources"], plural)
                        && has(&r["verbs"], verb)
                        && names_allow(r, name)
                });
                if !allowed {
                    missing.push(format!("{verb} {plural} {name:?} (group {group:?})"));
                }
            }
            continue;
        }
        let plural = what.split('/').next().unwrap_or(what);
        let group = match (plural, what) {
            ("pods", "pods/eviction") => "",
            _ => resource(plural).map_or("?", |d| d.group),
        };
        let verb = verb_of(method);
        for name in names {
            let allowed = rules.iter().any(|r| {
                has(&r["apiGroups"], group)
                    && has(&r["resources"], what)
                    && has(&r["verbs"], verb)
                    && names_allow(r, name)
            });
            if !allowed {
                missing.push(format!("{verb} {what} {name:?} (group {group:?})"));
            }
        }
    }
    missing
}
