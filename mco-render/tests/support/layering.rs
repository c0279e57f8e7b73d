// Shared by the layering tests (the library's `build_request` and `mco-render build-request`),
// included with `#[path]` next to `support/compare.rs`: a layering case's inputs and how an
// output is compared with upstream's (see `shared/conformance/layering/README.md`).
#![allow(dead_code)]

use super::compare::same;
use serde_json::{json, Value};

/// The case's inputs as one manifest `List`, as a user hands them to `build-request`.
pub fn input_list(case: &Value) -> Value {
    let input = &case["input"];
    let mut items = vec![
        input["machineOSConfig"].clone(),
        input["machineConfigPool"].clone(),
        input["renderedMachineConfig"].clone(),
        input["controllerConfig"].clone(),
    ];
    items.extend(input["kubeObjects"].as_array().cloned().unwrap_or_default());
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

/// What a build request produced, as JSON (`null` for a step not reached).
#[derive(Debug, Default)]
pub struct Produced {
    /// The MachineOSBuild.
    pub machine_os_build: Value,
    /// The ConfigMaps, in order, as upstream returns them (no `apiVersion`/`kind`).
    pub config_maps: Value,
    /// The two canonical Secrets, in order, as upstream returns them.
    pub secrets: Value,
    /// The builder Job.
    pub job: Value,
}

/// A Containerfile's or script's instructions: comment and blank lines dropped (the README:
/// upstream's comments are its own prose, ours differ).
pub fn instructions(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect()
}

/// The MachineOSBuild as the corpus records it: upstream's `status.buildStart` (the clock) is
/// removed there, leaving `{}`; ours carries no status or the same without the start.
fn machine_os_build(mut mosb: Value) -> Value {
    if let Some(o) = mosb.as_object_mut() {
        let mut status = o.remove("status").unwrap_or(Value::Null);
        if let Some(s) = status.as_object_mut() {
            s.remove("buildStart");
        }
        if status.is_null() {
            status = json!({});
        }
        o.insert("status".into(), status);
    }
    mosb
}

/// The Job with each container's script replaced by its instructions.
fn job_without_scripts(mut job: Value) -> Value {
    if job.is_null() {
        return job;
    }
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

/// `machineconfig.json.gz`: base64, gunzipped, JSON (`null` when any step fails).
pub fn decode_machine_config(encoded: &str) -> Value {
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

/// Every difference of `got` from the case's expected objects: the MachineOSBuild, the
/// ConfigMaps as values except the Containerfile (its instructions) and the gzipped
/// MachineConfig (its decoded JSON: the gzip bytes are Go's compressor's), the Secrets and the
/// Job (its scripts' instructions). Each entry names the JSON path.
pub fn compare_objects(got: &Produced, expected: &Value) -> Vec<String> {
    let mut diffs = Vec::new();
    let mut check = |what: &str, got: &Value, want: &Value| {
        if let Err(d) = same(what, got, want) {
            diffs.push(d);
        }
    };
    let mosb = if got.machine_os_build.is_null() {
        Value::Null
    } else {
        machine_os_build(got.machine_os_build.clone())
    };
    check("machineOSBuild", &mosb, &expected["machineOSBuild"]);
    match (
        got.config_maps.as_array(),
        expected["configMaps"].as_array(),
    ) {
        (Some(g), Some(w)) => {
            let (mut g, mut w) = (g.clone(), w.clone());
            if let (Some(g0), Some(w0)) = (g.first_mut(), w.first_mut()) {
                let (gt, wt) = (
                    g0["data"]["Containerfile"].take(),
                    w0["data"]["Containerfile"].take(),
                );
                check(
                    "Containerfile instructions",
                    &Value::from(instructions(gt.as_str().unwrap_or(""))),
                    &Value::from(instructions(wt.as_str().unwrap_or(""))),
                );
            }
            match g.get_mut(1) {
                Some(g1) => {
                    let encoded = g1["data"]["machineconfig.json.gz"].take();
                    check(
                        "machineConfigJSON",
                        &decode_machine_config(encoded.as_str().unwrap_or("")),
                        &expected["machineConfigJSON"],
                    );
                }
                None => check(
                    "machineConfigJSON",
                    &Value::Null,
                    &expected["machineConfigJSON"],
                ),
            }
            if let Some(w1) = w.get_mut(1) {
                w1["data"]["machineconfig.json.gz"].take();
            }
            check("configMaps", &Value::Array(g), &Value::Array(w));
        }
        _ => check("configMaps", &got.config_maps, &expected["configMaps"]),
    }
    check("secrets", &got.secrets, &expected["secrets"]);
    check(
        "job",
        &job_without_scripts(got.job.clone()),
        &job_without_scripts(expected["job"].clone()),
    );
    diffs
}
