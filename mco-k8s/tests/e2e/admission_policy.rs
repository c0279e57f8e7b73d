//! `manifests/02-admission-policy.yaml`: upstream's ValidatingAdmissionPolicies (a custom pool
//! selects the worker MachineConfigs; one MachineConfiguration, `cluster`), each bound with
//! Deny, built into the operator, and every pool this repository ships passing the pool rule.
//! The in-process API server does not evaluate CEL; the rules' verdicts were checked on
//! kube-apiserver 1.36 (docs/src/access.md lists them), and [`selects_worker`] states the pool
//! rule for the examples here.

use crate::support::cluster::repo;
use crate::support::yaml_docs;
use serde_json::Value;

const ROLE: &str = "machineconfiguration.openshift.io/role";

fn docs() -> Vec<Value> {
    yaml_docs(&repo("manifests/02-admission-policy.yaml"))
}

fn named<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("{kind} {name}"))
}

#[test]
fn each_policy_is_bound_with_deny_and_matches_its_kind() {
    let docs = docs();
    for (policy, group, resource) in [
        (
            "custom-machine-config-pool-selector",
            "machineconfiguration.openshift.io",
            "machineconfigpools",
        ),
        (
            "machine-configuration-guards",
            "operator.openshift.io",
            "machineconfigurations",
        ),
    ] {
        let p = named(&docs, "ValidatingAdmissionPolicy", policy);
        assert_eq!(p["apiVersion"], "admissionregistration.k8s.io/v1");
        assert_eq!(p["spec"]["failurePolicy"], "Fail");
        let rule = &p["spec"]["matchConstraints"]["resourceRules"][0];
        assert_eq!(rule["apiGroups"][0], group);
        assert_eq!(rule["resources"][0], resource);
        assert_eq!(rule["operations"], serde_json::json!(["CREATE", "UPDATE"]));
        let b = named(
            &docs,
            "ValidatingAdmissionPolicyBinding",
            &format!("{policy}-binding"),
        );
        assert_eq!(b["spec"]["policyName"], policy);
        assert_eq!(b["spec"]["validationActions"], serde_json::json!(["Deny"]));
    }
    assert_eq!(docs.len(), 4);
}

#[test]
fn the_operator_applies_them() {
    assert!(mco_k8s::operator::embedded::MANIFESTS
        .iter()
        .any(|(n, text)| *n == "02-admission-policy.yaml"
            && text.contains("custom-machine-config-pool-selector")));
}

/// The pool rule of `custom-machine-config-pool-selector`.
fn selects_worker(pool: &Value) -> bool {
    let sel = &pool["spec"]["machineConfigSelector"];
    let by_label = sel["matchLabels"][ROLE]
        .as_str()
        .is_some_and(|r| ["master", "worker", "arbiter"].contains(&r));
    let by_expression = sel["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|e| {
            let values: Vec<&str> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            e["key"] == ROLE
                && e["values"].is_array()
                && match e["operator"].as_str() {
                    Some("In") => values.contains(&"worker"),
                    Some("NotIn") => !values.contains(&"worker"),
                    _ => false,
                }
        });
    by_label || by_expression
}

/// (Those of `examples/admission/changes`, mistakes shown being refused, aside.)
#[test]
fn every_pool_the_repository_ships_passes_the_pool_rule() {
    let mut checked = 0;
    let mut stack = vec![repo("examples"), repo("manifests")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            // examples/admission/changes holds the mistakes admission exists to refuse.
            if p.ends_with("examples/admission/changes") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if !p.to_string_lossy().ends_with(".yaml") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            if !text.contains("kind: MachineConfigPool") {
                continue;
            }
            for d in yaml_docs(&p) {
                if d["kind"] == "MachineConfigPool" && !d["spec"]["machineConfigSelector"].is_null()
                {
                    assert!(
                        selects_worker(&d),
                        "{}: {}",
                        p.display(),
                        d["metadata"]["name"]
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 10, "{checked}");
}
