//! The on-cluster layering build request against upstream's outputs
//! (`shared/conformance/layering`, see its README): every case's MachineOSBuild, ConfigMaps,
//! Secrets, Job and error compared as JSON values (`support/layering.rs`, shared with
//! `build_request_cli.rs`, which runs the binary).

#[path = "support/compare.rs"]
mod compare;
#[path = "support/corpus.rs"]
mod corpus;
#[path = "support/layering.rs"]
mod layering;

use layering::{compare_objects, Produced};
use mco_render::controllers::build::{build_request, RequestInputs};
use serde_json::{json, Value};

fn compare(case: &Value) -> Vec<String> {
    let input = &case["input"];
    let de = |v: &Value, what: &str| -> Value {
        assert!(!v.is_null(), "{what} missing");
        v.clone()
    };
    let mosc = serde_json::from_value(de(&input["machineOSConfig"], "mosc")).expect("mosc");
    let pool = serde_json::from_value(de(&input["machineConfigPool"], "pool")).expect("pool");
    let rendered_json = de(&input["renderedMachineConfig"], "mc");
    let rendered = serde_json::from_value(rendered_json.clone()).expect("mc");
    let cc = serde_json::from_value(de(&input["controllerConfig"], "cc")).expect("cc");
    let objects: Vec<Value> = input["kubeObjects"].as_array().cloned().unwrap_or_default();
    let out = build_request(&RequestInputs {
        mosc: &mosc,
        pool: &pool,
        rendered: &rendered,
        rendered_source: Some(&rendered_json),
        controller_config: &cc,
        objects: &objects,
    });
    let list = |v: Option<Vec<Value>>| v.map(Value::Array).unwrap_or(Value::Null);
    let produced = Produced {
        machine_os_build: out
            .machine_os_build
            .as_ref()
            .map(|m| serde_json::to_value(m).expect("mosb json"))
            .unwrap_or(Value::Null),
        config_maps: list(out.config_maps.clone()),
        secrets: list(out.secrets.clone()),
        job: out.job.clone().unwrap_or(Value::Null),
    };
    // The library keeps the outputs of the steps before a failure, as upstream's do.
    let mut diffs = compare_objects(&produced, &case["expected"]);
    let err = out
        .error
        .as_ref()
        .map(|e| json!({"stage": e.stage().upstream_name(), "message": e.to_string()}))
        .unwrap_or(Value::Null);
    if let Err(d) = compare::same("error", &err, &case["expected"]["error"]) {
        diffs.push(d);
    }
    diffs
}

#[test]
fn layering_cases() {
    let Some(dir) = corpus::corpus("layering") else {
        eprintln!("SKIP: layering corpus (shared/conformance/layering) not present");
        return;
    };
    let paths = corpus::case_files(&dir, |_| true);
    let mut failures = Vec::new();
    for p in &paths {
        let case = corpus::read(p);
        let diffs = compare(&case);
        if !diffs.is_empty() {
            let name = case["name"].as_str().unwrap_or("?");
            failures.push(format!("{name}:\n  {}", diffs.join("\n  ")));
        }
    }
    eprintln!(
        "layering: {}/{} cases match",
        paths.len() - failures.len(),
        paths.len()
    );
    assert!(
        paths.len() >= 30,
        "the corpus holds 30 cases, {} found",
        paths.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
