//! Conformance of generated MachineConfigs against the custom-resource corpus.
//!
//! The corpus holds upstream template content and is not part of the repository: the test
//! reads it from the shared folder next to the workspace and skips when it is absent.

#[path = "support/corpus.rs"]
mod corpus;
use corpus::{corpus, load};

use mco_render::api::CustomResource;
use mco_render::controllers::generate::{generate, FeatureGates, GenerateInput};
use serde_json::Value;

fn strings(v: &Value) -> Vec<String> {
    mco_render::api::value_at::strings_at(v, "")
}

fn typed<T: serde::de::DeserializeOwned>(objects: Vec<Value>) -> Vec<T> {
    objects
        .into_iter()
        .map(|o| serde_json::from_value(o).expect("object of the case"))
        .collect()
}

fn resource(v: Value) -> CustomResource {
    CustomResource::from_json(v)
        .expect("a KubeletConfig or ContainerRuntimeConfig")
        .expect("resource of the case")
}

fn input_of(case: &Value) -> GenerateInput {
    let list = |k: &str| {
        case.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let opt = |k: &str| case.get(k).filter(|v| !v.is_null()).cloned();
    GenerateInput {
        object: resource(case["object"].clone()),
        other_objects: list("otherObjects").into_iter().map(resource).collect(),
        existing_machine_configs: typed(list("existingMachineConfigs")),
        pools: typed(vec![case["pool"].clone()]),
        base_machine_configs: typed(list("baseMachineConfigs")),
        feature_gates: FeatureGates {
            enabled: strings(&case["featureGates"]["enabled"]),
            disabled: strings(&case["featureGates"]["disabled"]),
        },
        api_server: opt("apiServer"),
        node_config: opt("nodeConfig"),
        controller_version: mco_render::CONTROLLER_VERSION.to_string(),
    }
}

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
        diffs.push(describe_mc_diff(&mc, &expected["machineConfig"]));
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

fn file_text(f: &Value) -> String {
    let src = f["contents"]["source"].as_str().unwrap_or("");
    mco_ignition::dataurl::decode_contents(src, None)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

fn describe_mc_diff(got: &Value, want: &Value) -> String {
    let files = |v: &Value| -> Vec<Value> {
        v.pointer("/spec/config/storage/files")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (gf, wf) = (files(got), files(want));
    let mut out = String::from("machineConfig differs");
    let paths = |fs: &[Value]| fs.iter().map(|f| f["path"].clone()).collect::<Vec<_>>();
    if paths(&gf) != paths(&wf) {
        out.push_str(&format!(
            " files: got {:?}, want {:?}",
            paths(&gf),
            paths(&wf)
        ));
    }
    for (g, w) in gf.iter().zip(&wf) {
        let (gt, wt) = (file_text(g), file_text(w));
        if gt != wt {
            let gl: Vec<&str> = gt.lines().collect();
            let wl: Vec<&str> = wt.lines().collect();
            for i in 0..gl.len().max(wl.len()) {
                let (a, b) = (gl.get(i), wl.get(i));
                if a != b {
                    out.push_str(&format!(
                        "\n    {} line {}: got {:?}, want {:?}",
                        w["path"],
                        i + 1,
                        a,
                        b
                    ));
                    break;
                }
            }
        }
    }
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(c) = v.pointer_mut("/spec/config") {
            *c = Value::Null;
        }
        v
    };
    if strip(got) != strip(want) {
        out.push_str(&format!(
            "\n    got {}\n    want {}",
            strip(got),
            strip(want)
        ));
    }
    out
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
