//! Conformance of generated MachineConfigs against the custom-resource corpus.
//!
//! The corpus holds upstream template content and is not part of the repository: the test
//! reads it from the shared folder next to the workspace and skips when it is absent.

#[path = "support/corpus.rs"]
mod corpus;
use corpus::{corpus, load};

#[path = "support/generate_case.rs"]
mod generate_case;
use generate_case::input_of;

#[path = "support/mc_diff.rs"]
mod mc_diff;
use mc_diff::describe_mc_diff;

use mco_render::controllers::generate::generate;
use serde_json::Value;

/// Describes how the outcome differs from `expected`, or `None` when it matches.
fn compare(case: &Value) -> Option<String> {
    let expected = &case["expected"];
    let out = generate(&input_of(case));
    let mut diffs = Vec::new();
    let error = out.error.clone().map_or(Value::Null, Value::String);
    if error != expected["error"] {
        diffs.push(format!("error: got {error}, want {}", expected["error"]));
    }
    let mc = out.machine_configs_json().pop().unwrap_or(Value::Null);
    if mc != expected["machineConfig"] {
        diffs.push(describe_mc_diff(
            "machineConfig",
            &mc,
            &expected["machineConfig"],
        ));
    }
    let actions = Value::from(out.actions());
    if actions != expected["machineConfigActions"] {
        diffs.push(format!(
            "actions: got {actions}, want {}",
            expected["machineConfigActions"]
        ));
    }
    let after = out.object_after.to_json();
    if after != expected["objectAfter"] {
        diffs.push(format!(
            "objectAfter: got {after}, want {}",
            expected["objectAfter"]
        ));
    }
    (!diffs.is_empty()).then(|| diffs.join("\n  "))
}

#[test]
fn custom_resource_cases() {
    let Some(dir) = corpus("custom-resources") else {
        eprintln!("SKIP: ../shared/conformance/custom-resources is not present");
        return;
    };
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("read corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .collect();
    paths.sort();
    let mut failures = Vec::new();
    for p in &paths {
        let case = load(p);
        if let Some(d) = compare(&case) {
            failures.push(format!("{}:\n  {d}", case["name"].as_str().unwrap_or("?")));
        }
    }
    let passed = paths.len() - failures.len();
    eprintln!("generate conformance: {passed}/{} cases pass", paths.len());
    for f in &failures {
        eprintln!("{f}");
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ",
        failures.len(),
        paths.len()
    );
}
