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
fn instructions(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect()
}

/// Where two values differ, by JSON path (at most a few paths).
fn first_differences(got: &Value, want: &Value, path: &str, out: &mut Vec<String>) {
    if out.len() >= 5 || got == want {
        return;
    }
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for k in g.keys().chain(w.keys().filter(|k| !g.contains_key(*k))) {
                let (a, b) = (
                    g.get(k).unwrap_or(&Value::Null),
                    w.get(k).unwrap_or(&Value::Null),
                );
                first_differences(a, b, &format!("{path}/{k}"), out);
            }
        }
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => {
            for (i, (a, b)) in g.iter().zip(w).enumerate() {
                first_differences(a, b, &format!("{path}/{i}"), out);
            }
        }
        _ => {
            let short = |v: &Value| v.to_string().chars().take(300).collect::<String>();
            out.push(format!("{path}: got {} want {}", short(got), short(want)));
        }
    }
}

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
        rendered_source: Some(&rendered_json),
        controller_config: &cc,
        objects: &objects,
    });
    let mut diffs = Vec::new();
    let mut check = |what: &str, got: Value, want: &Value| {
        if &got != want {
            let mut at = Vec::new();
            first_differences(&got, want, what, &mut at);
            diffs.push(at.join("\n  "));
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
    compare_config_maps(out.config_maps.as_deref(), expected, &mut check);
    check(
        "job",
        job_without_scripts(out.job.clone()),
        &job_without_scripts(Some(expected["job"].clone())),
    );
    check("error", err.unwrap_or(Value::Null), &expected["error"]);
    diffs
}

/// The ConfigMaps compared as values, except the Containerfile (its instructions) and the
/// gzipped MachineConfig (its decoded JSON; the gzip bytes are Go's compressor's).
fn compare_config_maps(
    got: Option<&[Value]>,
    expected: &Value,
    check: &mut dyn FnMut(&str, Value, &Value),
) {
    let (Some(got), Some(want)) = (got, expected["configMaps"].as_array()) else {
        check(
            "configMaps",
            got.map(|g| Value::Array(g.to_vec())).unwrap_or(Value::Null),
            &expected["configMaps"],
        );
        return;
    };
    let mut got = got.to_vec();
    let mut want = want.clone();
    if let (Some(g), Some(w)) = (got.first_mut(), want.first_mut()) {
        let text = |v: &mut Value| v["data"]["Containerfile"].take();
        let (gt, wt) = (text(g), text(w));
        let (gt, wt) = (gt.as_str().unwrap_or(""), wt.as_str().unwrap_or(""));
        check(
            "Containerfile instructions",
            Value::from(instructions(gt)),
            &Value::from(instructions(wt)),
        );
    }
    if let Some(g) = got.get_mut(1) {
        let encoded = g["data"]["machineconfig.json.gz"].take();
        let decoded = decode_mc(encoded.as_str().unwrap_or(""));
        check("machineConfigJSON", decoded, &expected["machineConfigJSON"]);
    }
    if let Some(w) = want.get_mut(1) {
        w["data"]["machineconfig.json.gz"].take();
    }
    check("configMaps", Value::Array(got), &Value::Array(want));
}

/// The Job with each container's script replaced by its instructions (comment and blank
/// lines dropped: the scripts' comments are upstream's prose, ours differ).
fn job_without_scripts(job: Option<Value>) -> Value {
    let Some(mut job) = job.filter(|j| !j.is_null()) else {
        return Value::Null;
    };
    for list in ["initContainers", "containers"] {
        let containers = job["spec"]["template"]["spec"][list].as_array_mut();
        for c in containers.into_iter().flatten() {
            if let Some(script) = c["command"].get_mut(2) {
                let lines = instructions(script.as_str().unwrap_or(""));
                *script = Value::from(lines);
            }
        }
    }
    job
}

fn decode_mc(encoded: &str) -> Value {
    use base64::Engine as _;
    use std::io::Read as _;
    let Ok(gz) = base64::engine::general_purpose::STANDARD.decode(encoded) else {
        return Value::Null;
    };
    let mut text = String::new();
    if flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut text)
        .is_err()
    {
        return Value::Null;
    }
    serde_json::from_str(&text).unwrap_or(Value::Null)
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
    for p in &paths {
        let case: Value =
            serde_json::from_slice(&std::fs::read(p).expect("read case")).expect("case json");
        let name = case["name"].as_str().unwrap_or("?").to_string();
        let diffs = compare(&case);
        if !diffs.is_empty() {
            failures.push(format!("{name}:\n  {}", diffs.join("\n  ")));
        }
    }
    eprintln!(
        "layering: {}/{} cases match",
        paths.len() - failures.len(),
        paths.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
