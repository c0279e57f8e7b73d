//! Runs every plan case of the conformance corpus and compares every expected field.

#[path = "support/common_input.rs"]
mod common_input;

use common_input::{corpus_dir, rendered_input};
use mco_render::plan::reconcile::{wrap_daemon, ReconcileError};
use mco_render::plan::{compute, MachineConfiguration};
use serde_json::{json, Value};

fn load_cases() -> Vec<(String, Value)> {
    let dir = corpus_dir().join("plan");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("plan corpus directory")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("read case");
            let v: Value = serde_json::from_str(&text).expect("case json");
            (p.file_stem().unwrap().to_string_lossy().into_owned(), v)
        })
        .collect()
}

fn result_pair<T: serde::Serialize, E: ToString>(r: &Result<T, E>) -> (Value, Value) {
    match r {
        Ok(v) => (json!(v), Value::Null),
        Err(e) => (Value::Null, json!(e.to_string())),
    }
}

#[test]
fn plan_corpus() {
    let cases = load_cases();
    assert_eq!(cases.len(), 150);
    let mut failures = Vec::new();
    let mut passed = 0;
    for (name, case) in &cases {
        let exp = &case["expected"];
        let side = |k: &str| {
            rendered_input(
                case[k]["metadata"]["name"].as_str().unwrap_or(""),
                &case[k]["spec"],
            )
        };
        let mc: Option<MachineConfiguration> = match &case["machineConfiguration"] {
            Value::Null => None,
            v => Some(serde_json::from_value(v.clone()).expect("MachineConfiguration decodes")),
        };
        if !exp["diffError"].is_null() {
            let got = match (side("old"), side("new")) {
                (Err(e), _) => Some(mco_render::plan::input::diff_error(false, &e)),
                (_, Err(e)) => Some(mco_render::plan::input::diff_error(true, &e)),
                _ => None,
            };
            let before = failures.len();
            if got.as_deref() != exp["diffError"].as_str() {
                failures.push(format!("{name}: diffError {got:?} != {}", exp["diffError"]));
            }
            let names = |k: &str| {
                case[k]["metadata"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            };
            let rec = match (side("old"), side("new")) {
                (Err(message), _) => Some(ReconcileError::ParseOld {
                    name: names("old"),
                    message,
                }),
                (_, Err(message)) => Some(ReconcileError::ParseNew {
                    name: names("new"),
                    message,
                }),
                _ => None,
            }
            .map(|e| wrap_daemon(&names("old"), &names("new"), e).to_string());
            if rec.as_deref() != exp["reconcilable"].as_str() {
                failures.push(format!(
                    "{name}: reconcilable {rec:?} != {}",
                    exp["reconcilable"]
                ));
            }
            let merged = mco_render::plan::policy::merge_cluster_policies(
                &mc.as_ref()
                    .map(|m| m.spec.node_disruption_policy.clone())
                    .unwrap_or_default(),
            );
            if json!(merged) != exp["clusterPolicies"] {
                failures.push(format!("{name}: clusterPolicies differ"));
            }
            if failures.len() == before {
                passed += 1;
            }
            continue;
        }
        let (old, new) = match (side("old"), side("new")) {
            (Ok(o), Ok(n)) => (o, n),
            (o, n) => {
                failures.push(format!(
                    "{name}: typed decode failed: {:?} {:?}",
                    o.err(),
                    n.err()
                ));
                continue;
            }
        };
        let plan = compute(&old, &new, mc.as_ref());
        let mut errs = Vec::new();
        let mut check = |field: &str, got: Value, want: &Value| {
            if &got != want {
                errs.push(format!("{field}: got {got} want {want}"));
            }
        };
        let rec = match &plan.reconcilable {
            Ok(()) => json!("ok"),
            Err(e) => json!(e.to_string()),
        };
        check("reconcilable", rec, &exp["reconcilable"]);
        check("diff", json!(plan.diff), &exp["diff"]);
        check("kargsArgs", json!(plan.kargs_args), &exp["kargsArgs"]);
        check(
            "legacyActions",
            json!([plan.legacy_action]),
            &exp["legacyActions"],
        );
        let (ld, lde) = result_pair(&plan.legacy_drain);
        check("legacyDrainRequired", ld, &exp["legacyDrainRequired"]);
        check("legacyDrainError", lde, &exp["legacyDrainError"]);
        check(
            "clusterPolicies",
            json!(plan.cluster_policies),
            &exp["clusterPolicies"],
        );
        check(
            "nodeDisruptionActions",
            json!(plan.node_disruption.actions),
            &exp["nodeDisruptionActions"],
        );
        let (d, de) = result_pair(&plan.drain);
        check("drainRequired", d, &exp["drainRequired"]);
        check("drainError", de, &exp["drainError"]);
        if errs.is_empty() {
            passed += 1;
        } else {
            failures.push(format!("{name}:\n  {}", errs.join("\n  ")));
        }
    }
    eprintln!("plan corpus: {passed} passed, {} failed", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
