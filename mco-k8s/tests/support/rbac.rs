//! Checks that the roles in manifests/ grant every request a component made to the
//! in-process API server, so a real server enforcing RBAC would not refuse it: the
//! ClusterRoles a ClusterRoleBinding gives a ServiceAccount everywhere, the Roles (or
//! ClusterRoles) a RoleBinding gives it in its namespace alone.

use super::apiserver::{resource, Named};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The rules of the ClusterRole `name` in manifests/02-rbac.yaml.
pub fn cluster_role_rules(name: &str) -> Vec<Value> {
    cluster_role_rules_in("02-rbac.yaml", name)
}

/// The rules of the ClusterRole `name` in `file` under manifests/.
pub fn cluster_role_rules_in(file: &str, name: &str) -> Vec<Value> {
    let role = documents(file)
        .into_iter()
        .find(|v| v["kind"] == "ClusterRole" && v["metadata"]["name"] == name);
    role.and_then(|v| v["rules"].as_array().cloned())
        .unwrap_or_default()
}

/// The namespace the components' ServiceAccounts live in.
pub const NAMESPACE: &str = "openshift-machine-config-operator";

/// The documents of `file` under manifests/ (none when it cannot be read).
fn documents(file: &str) -> Vec<Value> {
    let path = format!("{}/../manifests/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    serde_yaml_ng::Deserializer::from_str(&text)
        .filter_map(|d| <Value as serde::Deserialize>::deserialize(d).ok())
        .filter(|v| v.is_object())
        .collect()
}

/// Every object of the manifest files kubectl applies (`manifests/*.yaml`, not `optional/`).
pub fn manifest_objects() -> Vec<Value> {
    let dir = format!("{}/../manifests", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".yaml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
        .iter()
        .flat_map(|f| super::yaml_docs(&std::path::Path::new(&dir).join(f)))
        .collect()
}

fn str_of<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Whether `binding` (a ClusterRoleBinding or RoleBinding) names the ServiceAccount
/// `account` of [`NAMESPACE`] among its subjects.
fn binds(binding: &Value, account: &str) -> bool {
    binding["subjects"].as_array().is_some_and(|subjects| {
        subjects.iter().any(|s| {
            s["kind"] == "ServiceAccount" && s["name"] == account && s["namespace"] == NAMESPACE
        })
    })
}

/// The rules `objects` grant the ServiceAccount `account` (of [`NAMESPACE`]), each with
/// where it applies: `None` everywhere (a ClusterRoleBinding's ClusterRole), `Some(ns)` in
/// that namespace alone (a RoleBinding's Role of its namespace, or ClusterRole).
pub fn grants_in(objects: &[Value], account: &str) -> Vec<(Option<String>, Value)> {
    let rules_of = |kind: &str, namespace: Option<&str>, name: &str| -> Vec<Value> {
        objects
            .iter()
            .find(|o| {
                o["kind"] == kind
                    && str_of(o, "/metadata/name") == name
                    && namespace.is_none_or(|ns| str_of(o, "/metadata/namespace") == ns)
            })
            .and_then(|o| o["rules"].as_array().cloned())
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for b in objects.iter().filter(|o| binds(o, account)) {
        let (role_kind, role) = (str_of(b, "/roleRef/kind"), str_of(b, "/roleRef/name"));
        match str_of(b, "/kind") {
            "ClusterRoleBinding" if role_kind == "ClusterRole" => out.extend(
                rules_of("ClusterRole", None, role)
                    .into_iter()
                    .map(|r| (None, r)),
            ),
            "RoleBinding" => {
                let ns = str_of(b, "/metadata/namespace");
                let rules = match role_kind {
                    "Role" => rules_of("Role", Some(ns), role),
                    "ClusterRole" => rules_of("ClusterRole", None, role),
                    _ => Vec::new(),
                };
                out.extend(rules.into_iter().map(|r| (Some(ns.to_string()), r)));
            }
            _ => {}
        }
    }
    out
}

/// The rules manifests/ grants the ServiceAccount `account`, with where each applies (see
/// [`grants_in`]).
pub fn grants(account: &str) -> Vec<(Option<String>, Value)> {
    grants_in(&manifest_objects(), account)
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
    let scoped: BTreeMap<String, BTreeSet<Named>> = requests
        .iter()
        .map(|(k, names)| (k.clone(), names.iter().map(|n| (None, n.clone())).collect()))
        .collect();
    let everywhere: Vec<(Option<String>, Value)> =
        rules.iter().map(|r| (None, r.clone())).collect();
    ungranted_by(&scoped, &everywhere)
}

/// The requests (keyed as [`super::apiserver::Store::requests_scoped`] keys them, with the
/// namespace and object name each named) that nothing manifests/ binds to the ServiceAccount
/// `account` allows: a Role's rule only in its RoleBinding's namespace.
pub fn ungranted_to(requests: &BTreeMap<String, BTreeSet<Named>>, account: &str) -> Vec<String> {
    ungranted_by(requests, &grants(account))
}

/// Whether a rule granted in `scope` applies in `namespace`: a cluster-wide grant everywhere,
/// a namespaced one only to a request in its namespace (never to a cluster-scoped kind nor to
/// a list across namespaces).
fn scope_allows(scope: &Option<String>, namespace: &Option<String>) -> bool {
    scope.is_none() || scope == namespace
}

/// The requests (see [`ungranted_to`]) that no rule of `grants` (each with where it applies,
/// as [`grants_in`] gives them) allows.
pub fn ungranted_by(
    requests: &BTreeMap<String, BTreeSet<Named>>,
    grants: &[(Option<String>, Value)],
) -> Vec<String> {
    let mut missing = Vec::new();
    let said = |verb: &str, what: &str, (ns, name): &Named, group: &str| match ns {
        None => format!("{verb} {what} {name:?} (group {group:?})"),
        Some(ns) => format!("{verb} {what} {name:?} in {ns:?} (group {group:?})"),
    };
    for (key, targets) in requests {
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
            let (path_ns, tail) = match tail {
                ["namespaces", ns, rest @ ..] => (Some(ns.to_string()), rest),
                t => (None, t),
            };
            let plural = tail.first().copied().unwrap_or("");
            let verb = match (method, tail.len()) {
                ("GET", 1) => "list",
                _ => verb_of(method),
            };
            for (_, name) in targets {
                let target = (path_ns.clone(), name.clone());
                let allowed = grants.iter().any(|(scope, r)| {
                    scope_allows(scope, &target.0)
                        && has(&r["apiGroups"], group)
                        && has(&r["resources"], plural)
                        && has(&r["verbs"], verb)
                        && names_allow(r, name)
                });
                if !allowed {
                    missing.push(said(verb, plural, &target, group));
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
        for target in targets {
            let allowed = grants.iter().any(|(scope, r)| {
                scope_allows(scope, &target.0)
                    && has(&r["apiGroups"], group)
                    && has(&r["resources"], what)
                    && has(&r["verbs"], verb)
                    && names_allow(r, &target.1)
            });
            if !allowed {
                missing.push(said(verb, what, target, group));
            }
        }
    }
    missing
}
