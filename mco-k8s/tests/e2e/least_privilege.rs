//! Least privilege in `manifests/`, read as a security reviewer would: no ClusterRole lets
//! anyone get, list or watch every Secret of the cluster, and the node agent's ServiceAccount,
//! which RBAC lets write Nodes and MachineConfigNodes, is held to its own node's by admission
//! policies that are shipped, bound and shaped to do so (the CEL itself runs on kube-apiserver
//! alone; what the agents write here is checked against it in `system_e2e`).

use crate::support::rbac::{grants_in, manifest_objects, NAMESPACE};
use crate::support::yaml_docs;
use serde_json::{json, Value};

/// The node agent's ServiceAccount.
const DAEMON: &str = "machine-config-daemon";
/// The extra a bound token's node is in.
const NODE_NAME_EXTRA: &str = "authentication.kubernetes.io/node-name";
/// The kinds an agent writes for its own node, each with its API group.
const NODE_KINDS: &[(&str, &str)] = &[
    ("", "nodes"),
    ("", "nodes/status"),
    ("machineconfiguration.openshift.io", "machineconfignodes"),
    (
        "machineconfiguration.openshift.io",
        "machineconfignodes/status",
    ),
];

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn has(list: &Value, item: &str) -> bool {
    strings(list).iter().any(|v| *v == item || *v == "*")
}

fn name(o: &Value) -> &str {
    o.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The ClusterRoles of `objects` with a rule granting get, list or watch of Secrets without
/// `resourceNames`: `ClusterRole NAME rules[i]`.
fn secret_readers(objects: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for role in objects.iter().filter(|o| o["kind"] == "ClusterRole") {
        for (i, rule) in role["rules"].as_array().into_iter().flatten().enumerate() {
            let reads = ["get", "list", "watch"]
                .iter()
                .any(|v| has(&rule["verbs"], v));
            let named = rule["resourceNames"]
                .as_array()
                .is_some_and(|n| !n.is_empty());
            if has(&rule["apiGroups"], "") && has(&rule["resources"], "secrets") && reads && !named
            {
                out.push(format!("ClusterRole {} rules[{i}]", name(role)));
            }
        }
    }
    out
}

/// The writes (create, update, patch) of the node kinds `objects` grant the agent's
/// ServiceAccount: `verb resource`.
fn daemon_node_writes(objects: &[Value]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (_, rule) in grants_in(objects, DAEMON) {
        for (group, resource) in NODE_KINDS {
            for verb in ["create", "update", "patch"] {
                if has(&rule["apiGroups"], group)
                    && has(&rule["resources"], resource)
                    && has(&rule["verbs"], verb)
                {
                    out.push((verb.to_string(), resource.to_string()));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The admission operation of an RBAC verb.
fn operation(verb: &str) -> &'static str {
    match verb {
        "create" => "CREATE",
        _ => "UPDATE",
    }
}

/// Whether `policy` matches `operation` on `group`/`resource`.
fn matches(policy: &Value, group: &str, resource: &str, operation: &str) -> bool {
    policy
        .pointer("/spec/matchConstraints/resourceRules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|r| {
            has(&r["apiGroups"], group)
                && has(&r["resources"], resource)
                && (has(&r["operations"], operation) || strings(&r["operations"]).is_empty())
                && !strings(&r["apiVersions"]).is_empty()
        })
}

/// What is wrong with `policy` as the guard of the agents' writes: it must fail closed, match
/// the agent's ServiceAccount (by its username in a matchCondition), and refuse unless the
/// object's name is the token's node; a MachineConfigNode's guard also compares
/// `spec.node.name`.
fn guard_faults(policy: &Value, resource: &str) -> Vec<String> {
    let mut faults = Vec::new();
    let username = format!("system:serviceaccount:{NAMESPACE}:{DAEMON}");
    if !matches!(
        policy
            .pointer("/spec/failurePolicy")
            .and_then(Value::as_str),
        None | Some("Fail")
    ) {
        faults.push("failurePolicy is not Fail".to_string());
    }
    let conditions = policy
        .pointer("/spec/matchConditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let for_daemon = conditions.iter().any(|c| {
        c["expression"]
            .as_str()
            .is_some_and(|e| e.contains("request.userInfo.username") && e.contains(&username))
    });
    if !for_daemon {
        faults.push(format!("no matchCondition on the username {username}"));
    }
    // The CEL, variables and validations together: what kube-apiserver evaluates.
    let cel: String = ["variables", "validations"]
        .iter()
        .flat_map(|k| {
            policy
                .pointer(&format!("/spec/{k}"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|v| v["expression"].as_str().map(str::to_string))
        .collect::<Vec<_>>()
        .join("\n");
    for needed in [
        NODE_NAME_EXTRA,
        "request.userInfo.extra",
        "object.metadata.name",
    ] {
        if !cel.contains(needed) {
            faults.push(format!("its CEL never reads {needed}"));
        }
    }
    if resource.starts_with("machineconfignodes") && !cel.contains("object.spec.node.name") {
        faults.push("its CEL never reads object.spec.node.name".to_string());
    }
    let validations = policy
        .pointer("/spec/validations")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if validations == 0 {
        faults.push("no validations".to_string());
    }
    faults
}

/// Each write `objects` grant the agent's ServiceAccount on Nodes or MachineConfigNodes that
/// no bound, denying, well-formed policy of `objects` guards, with why.
fn unguarded_daemon_writes(objects: &[Value]) -> Vec<String> {
    let policies: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "ValidatingAdmissionPolicy")
        .collect();
    let bound_denying = |policy: &str| {
        objects.iter().any(|b| {
            b["kind"] == "ValidatingAdmissionPolicyBinding"
                && b.pointer("/spec/policyName").and_then(Value::as_str) == Some(policy)
                && has(&b["spec"]["validationActions"], "Deny")
        })
    };
    let mut out = Vec::new();
    for (verb, resource) in daemon_node_writes(objects) {
        let group = NODE_KINDS
            .iter()
            .find(|(_, r)| *r == resource)
            .map_or("", |(g, _)| *g);
        let op = operation(&verb);
        let candidates: Vec<&&Value> = policies
            .iter()
            .filter(|p| matches(p, group, &resource, op))
            .collect();
        let why: Vec<String> = candidates
            .iter()
            .map(|p| {
                let mut faults = guard_faults(p, &resource);
                if !bound_denying(name(p)) {
                    faults.push("no ValidatingAdmissionPolicyBinding denies by it".to_string());
                }
                (name(p), faults)
            })
            .filter(|(_, faults)| !faults.is_empty())
            .map(|(n, faults)| format!("{n}: {}", faults.join(", ")))
            .collect();
        if candidates.len() == why.len() {
            out.push(format!(
                "{verb} {resource} ({op}): {}",
                match why.is_empty() {
                    true => "no ValidatingAdmissionPolicy matches it".to_string(),
                    false => why.join("; "),
                }
            ));
        }
    }
    out
}

fn manifests_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests")
}

#[test]
fn no_cluster_role_reads_every_secret() {
    let mut objects = manifest_objects();
    objects.extend(yaml_docs(
        &manifests_dir().join("optional/kubectl-mco-rbac.yaml"),
    ));
    assert!(
        objects.iter().any(|o| o["kind"] == "ClusterRole"),
        "no ClusterRole read from manifests/"
    );
    assert_eq!(secret_readers(&objects), Vec::<String>::new());
}

#[test]
fn a_cluster_role_reading_every_secret_is_caught() {
    let role =
        |rule: Value| json!({"kind": "ClusterRole", "metadata": {"name": "r"}, "rules": [rule]});
    for rule in [
        json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}),
        json!({"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["list"]}),
        json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}),
        json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["watch"], "resourceNames": []}),
    ] {
        assert_eq!(
            secret_readers(&[role(rule.clone())]),
            ["ClusterRole r rules[0]"],
            "{rule}"
        );
    }
    for rule in [
        json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"],
               "resourceNames": ["pull-secret"]}),
        json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}),
        json!({"apiGroups": ["apps"], "resources": ["secrets"], "verbs": ["get"]}),
    ] {
        assert!(secret_readers(&[role(rule.clone())]).is_empty(), "{rule}");
    }
    // A Role may: it grants in its namespace alone.
    let namespaced = json!({"kind": "Role", "metadata": {"name": "r", "namespace": "ns"},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]});
    assert!(secret_readers(&[namespaced]).is_empty());
}

/// No component's account lists or watches Secrets across the cluster, and each reads them
/// only in its own namespace or by name.
#[test]
fn no_component_lists_secrets_cluster_wide() {
    let objects = manifest_objects();
    for account in [
        "machine-config-controller",
        "machine-config-server",
        DAEMON,
        "machine-config-operator",
        "machine-os-builder",
    ] {
        for (scope, rule) in grants_in(&objects, account) {
            let secrets = has(&rule["apiGroups"], "") && has(&rule["resources"], "secrets");
            let named = rule["resourceNames"]
                .as_array()
                .is_some_and(|n| !n.is_empty());
            if secrets && !named {
                assert_eq!(
                    scope.as_deref(),
                    Some(NAMESPACE),
                    "{account}: Secrets granted beyond its namespace by {rule}"
                );
            }
        }
    }
}

#[test]
fn the_agents_writes_of_nodes_are_held_to_their_own_node() {
    let objects = manifest_objects();
    let writes = daemon_node_writes(&objects);
    // What the agent does write: its Node (patch, update) and its MachineConfigNode (create,
    // patch, update, its status).
    for (verb, resource) in [
        ("patch", "nodes"),
        ("create", "machineconfignodes"),
        ("patch", "machineconfignodes/status"),
    ] {
        assert!(
            writes.contains(&(verb.to_string(), resource.to_string())),
            "{writes:?}"
        );
    }
    assert_eq!(unguarded_daemon_writes(&objects), Vec::<String>::new());
}

#[test]
fn an_unguarded_or_misshapen_policy_is_caught() {
    let objects = manifest_objects();
    let without = |kind: &str| -> Vec<Value> {
        objects
            .iter()
            .filter(|o| o["kind"] != kind)
            .cloned()
            .collect()
    };
    // No policy at all, or no binding: every write the agent is granted is reported.
    let writes = daemon_node_writes(&objects).len();
    assert_eq!(
        unguarded_daemon_writes(&without("ValidatingAdmissionPolicy")).len(),
        writes
    );
    let unbound = unguarded_daemon_writes(&without("ValidatingAdmissionPolicyBinding"));
    assert_eq!(unbound.len(), writes, "{unbound:?}");
    assert!(
        unbound[0].contains("no ValidatingAdmissionPolicyBinding"),
        "{unbound:?}"
    );
    // A binding that only warns, a policy that fails open, one that never compares the
    // token's node, or one for another account.
    let edited = |f: &dyn Fn(&mut Value)| -> Vec<String> {
        let mut objects = objects.clone();
        objects.iter_mut().for_each(f);
        unguarded_daemon_writes(&objects)
    };
    let warn_only = edited(&|o| {
        if o["kind"] == "ValidatingAdmissionPolicyBinding" {
            o["spec"]["validationActions"] = json!(["Warn", "Audit"]);
        }
    });
    assert_eq!(warn_only.len(), writes, "{warn_only:?}");
    for (what, edit) in [
        (
            "failurePolicy",
            Box::new(|p: &mut Value| p["spec"]["failurePolicy"] = json!("Ignore"))
                as Box<dyn Fn(&mut Value)>,
        ),
        (
            NODE_NAME_EXTRA,
            Box::new(|p: &mut Value| {
                p["spec"]["variables"] = json!([]);
                p["spec"]["validations"] = json!([{"expression": "object.metadata.name != ''"}]);
            }),
        ),
        (
            "username",
            Box::new(|p: &mut Value| {
                p["spec"]["matchConditions"] = json!([{"name": "other",
                    "expression": "request.userInfo.username == 'system:serviceaccount:x:y'"}]);
            }),
        ),
    ] {
        let found = edited(&|o| {
            if o["kind"] == "ValidatingAdmissionPolicy" {
                edit(o);
            }
        });
        assert_eq!(found.len(), writes, "{what}: {found:?}");
        assert!(found.iter().all(|f| f.contains(what)), "{what}: {found:?}");
    }
}

/// The policies are shaped as kube-apiserver needs them: admissionregistration.k8s.io/v1,
/// writes (CREATE, UPDATE) of the kinds and their status, the agent's account alone, the
/// token's node read from the request's extra, bound to deny.
#[test]
fn the_policies_guard_what_the_issue_names() {
    let docs = yaml_docs(&manifests_dir().join("02-daemon-policy.yaml"));
    let kinds: Vec<(&str, &str)> = docs
        .iter()
        .map(|d| (d["kind"].as_str().unwrap_or(""), name(d)))
        .collect();
    assert_eq!(
        kinds,
        [
            (
                "ValidatingAdmissionPolicy",
                "machine-config-daemon-own-node"
            ),
            (
                "ValidatingAdmissionPolicyBinding",
                "machine-config-daemon-own-node"
            ),
            (
                "ValidatingAdmissionPolicy",
                "machine-config-daemon-own-machineconfignode"
            ),
            (
                "ValidatingAdmissionPolicyBinding",
                "machine-config-daemon-own-machineconfignode"
            ),
            (
                "ValidatingAdmissionPolicy",
                "machine-config-daemon-node-bound-token"
            ),
            (
                "ValidatingAdmissionPolicyBinding",
                "machine-config-daemon-node-bound-token"
            ),
        ]
    );
    for d in &docs {
        assert_eq!(d["apiVersion"], "admissionregistration.k8s.io/v1");
    }
    let policy = |n: &str| {
        docs.iter()
            .find(|d| d["kind"] == "ValidatingAdmissionPolicy" && name(d) == n)
            .cloned()
            .unwrap_or_default()
    };
    let node = policy("machine-config-daemon-own-node");
    let mcn = policy("machine-config-daemon-own-machineconfignode");
    for op in ["CREATE", "UPDATE"] {
        assert!(matches(&node, "", "nodes", op));
        assert!(matches(&node, "", "nodes/status", op));
        for r in ["machineconfignodes", "machineconfignodes/status"] {
            assert!(matches(&mcn, "machineconfiguration.openshift.io", r, op));
        }
    }
    assert!(!matches(&node, "", "pods", "UPDATE"));
    assert_eq!(guard_faults(&node, "nodes"), Vec::<String>::new());
    assert_eq!(
        guard_faults(&mcn, "machineconfignodes"),
        Vec::<String>::new()
    );
    for p in [&node, &mcn] {
        // Every validation refuses as Forbidden (as NodeRestriction refuses a kubelet), and
        // the variable reads the extra only when the request has it.
        for v in p["spec"]["validations"].as_array().into_iter().flatten() {
            assert_eq!(v["reason"], "Forbidden", "{v}");
        }
        let bound = p["spec"]["variables"][0]["expression"]
            .as_str()
            .unwrap_or("");
        assert!(
            bound.starts_with("has(request.userInfo.extra) && ")
                && bound.contains(&format!("'{NODE_NAME_EXTRA}' in request.userInfo.extra")),
            "{bound}"
        );
        // A token naming a node is held to it; one naming none is left to the third policy.
        assert!(p["spec"]["validations"][0]["expression"]
            .as_str()
            .is_some_and(|e| e.starts_with("variables.boundNode == '' || ")));
    }
    // Writes with a token naming no node: every kind the agent writes, warned and audited.
    let unbound = policy("machine-config-daemon-node-bound-token");
    for op in ["CREATE", "UPDATE"] {
        assert!(matches(&unbound, "", "nodes", op));
        assert!(matches(&unbound, "", "nodes/status", op));
        for r in ["machineconfignodes", "machineconfignodes/status"] {
            assert!(matches(
                &unbound,
                "machineconfiguration.openshift.io",
                r,
                op
            ));
        }
    }
    assert!(unbound["spec"]["validations"][0]["expression"]
        .as_str()
        .is_some_and(|e| e.contains(NODE_NAME_EXTRA)));
    for b in docs
        .iter()
        .filter(|d| d["kind"] == "ValidatingAdmissionPolicyBinding")
    {
        assert_eq!(b["spec"]["policyName"].as_str(), Some(name(b)));
        let actions = match name(b) {
            "machine-config-daemon-node-bound-token" => json!(["Warn", "Audit"]),
            _ => json!(["Deny"]),
        };
        assert_eq!(b["spec"]["validationActions"], actions);
        assert!(b["spec"].get("matchResources").is_none(), "{b}");
    }
}

/// The agent's token names its node: the DaemonSet mounts its Pod's projected token where
/// clients find the in-cluster one (not an unbound token from a Secret).
#[test]
fn the_agents_token_is_bound_to_its_pod() {
    let docs = yaml_docs(&manifests_dir().join("05-daemon.yaml"));
    let ds = docs
        .iter()
        .find(|d| d["kind"] == "DaemonSet" && name(d) == DAEMON)
        .cloned()
        .unwrap_or_default();
    let pod = &ds["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], DAEMON);
    const PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
    let mount = pod["containers"][0]["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["mountPath"] == PATH)
        .cloned()
        .unwrap_or_default();
    let volume = pod["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == mount["name"])
        .cloned()
        .unwrap_or_default();
    let sources = volume["projected"]["sources"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let token = sources
        .iter()
        .find_map(|s| s.get("serviceAccountToken"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(token["path"], "token", "{volume}");
    // The API server's own audience (none given), as the in-cluster token has.
    assert!(token.get("audience").is_none(), "{token}");
    let has_file = |path: &str| {
        sources.iter().any(|s| {
            ["configMap", "downwardAPI"].iter().any(|k| {
                s[k]["items"]
                    .as_array()
                    .is_some_and(|items| items.iter().any(|i| i["path"] == path))
            })
        })
    };
    assert!(has_file("ca.crt") && has_file("namespace"), "{volume}");
    assert_eq!(pod["automountServiceAccountToken"], false);
}

/// The after-the-fact check of the agents' writes finds what the policies refuse: another
/// node's Node or MachineConfigNode, by path or by a created object's name, or a
/// MachineConfigNode of its own name pointing at another node; reads and other clients pass.
#[test]
fn writes_to_another_nodes_objects_are_found() {
    use crate::support::apiserver::Logged;
    use crate::support::node_writes::elsewhere;
    let agent = "machine-config-daemon (worker-1)";
    let logged = |who: &str, what: &str, name: Option<&str>, body: Value| Logged {
        at: std::time::Instant::now(),
        agent: who.to_string(),
        what: what.to_string(),
        name: name.map(str::to_string),
        body: match body {
            Value::Null => String::new(),
            b => b.to_string(),
        },
    };
    let own = json!({"metadata": {"name": "worker-1"}, "spec": {"node": {"name": "worker-1"}}});
    let fine = [
        logged(agent, "PATCH nodes", Some("worker-1"), json!({})),
        logged(agent, "GET nodes", Some("worker-2"), Value::Null),
        logged(agent, "POST machineconfignodes", None, own.clone()),
        logged(
            agent,
            "PATCH machineconfignodes/status",
            Some("worker-1"),
            json!({}),
        ),
        logged(
            "machine-config-controller",
            "PATCH nodes",
            Some("worker-2"),
            json!({}),
        ),
    ];
    assert_eq!(elsewhere(&fine, agent, "worker-1"), Vec::<String>::new());
    let mut retargeted = own.clone();
    retargeted["spec"]["node"]["name"] = json!("worker-2");
    let foreign = [
        logged(agent, "PATCH nodes", Some("worker-2"), json!({})),
        logged(agent, "PUT nodes/status", Some("worker-2"), json!({})),
        logged(
            agent,
            "POST machineconfignodes",
            None,
            json!({"metadata": {"name": "worker-2"}}),
        ),
        logged(
            agent,
            "PUT machineconfignodes",
            Some("worker-1"),
            retargeted,
        ),
    ];
    assert_eq!(elsewhere(&foreign, agent, "worker-1").len(), foreign.len());
}
