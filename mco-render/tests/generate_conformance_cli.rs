//! The custom-resource corpus through `mco-render generate`: each case written as a folder of
//! manifests, the generated MachineConfig compared strictly (labels, annotations, owner
//! references and spec as JSON values: `null` is not `[]`); a case upstream fails on exits 1
//! with an `error:` line naming the resource (`KubeletConfig "name"`) and ending in upstream's
//! message.
//!
//! The corpus holds upstream template content and is not part of the repository: the test
//! reads it from the shared folder next to the workspace and skips when it is absent.

#[path = "support/corpus.rs"]
mod corpus;
use corpus::{case_files, corpus, load};
use std::path::Path;

use serde_json::{json, Value};

fn write_manifests(case: &Value, dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut objects: Vec<Value> = vec![case["object"].clone(), case["pool"].clone()];
    for k in [
        "otherObjects",
        "existingMachineConfigs",
        "baseMachineConfigs",
    ] {
        objects.extend(case[k].as_array().cloned().unwrap_or_default());
    }
    let gates = |k: &str| -> Vec<Value> {
        case["featureGates"][k]
            .as_array()
            .into_iter()
            .flatten()
            .map(|g| json!({ "name": g }))
            .collect()
    };
    objects.push(json!({
        "apiVersion": "config.openshift.io/v1",
        "kind": "FeatureGate",
        "metadata": {"name": "cluster"},
        "status": {"featureGates": [{"version": "", "enabled": gates("enabled"), "disabled": gates("disabled")}]},
    }));
    for k in ["apiServer", "nodeConfig"] {
        if !case[k].is_null() {
            objects.push(case[k].clone());
        }
    }
    for (i, o) in objects.iter().enumerate() {
        std::fs::write(dir.join(format!("{i:03}.json")), o.to_string()).expect("write");
    }
}

fn compare(case: &Value, dir: &Path) -> Option<String> {
    let want = &case["expected"]["machineConfig"];
    write_manifests(case, dir);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mco-render"))
        .args(["generate", "-o", "json", "--controller-version"])
        .arg(mco_render::CONTROLLER_VERSION)
        .arg(dir)
        .output()
        .expect("run mco-render");
    let _ = std::fs::remove_dir_all(dir);
    if let Some(error) = case["expected"]["error"].as_str() {
        // Exit 1, the resource named and upstream's message.
        let stderr = String::from_utf8_lossy(&out.stderr);
        let object = format!(
            "{} {:?}",
            case["kind"].as_str().unwrap_or(""),
            case["object"]["metadata"]["name"].as_str().unwrap_or("")
        );
        let line = stderr
            .lines()
            .find(|l| l.starts_with("error: ") && l.contains(&format!("{object}: ")));
        return match line {
            Some(l) if out.status.code() == Some(1) && l.ends_with(&format!(": {error}")) => None,
            _ => Some(format!(
                "exit {:?}, stderr {stderr:?}; want {object} named with {error:?}",
                out.status.code()
            )),
        };
    }
    let got: Vec<Value> = match serde_json::from_slice::<Value>(&out.stdout) {
        Ok(Value::Object(mut list)) if list.get("kind") == Some(&"List".into()) => {
            match list.remove("items") {
                Some(Value::Array(items)) => items,
                _ => return Some("stdout is a List without items".into()),
            }
        }
        Ok(_) => return Some("stdout is not a List".into()),
        Err(e) => {
            return Some(format!(
                "stdout is not JSON ({e}): {}",
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    };
    let name = &want["metadata"]["name"];
    let Some(g) = got.iter().find(|m| m["metadata"]["name"] == *name) else {
        return Some(format!("{name} missing"));
    };
    let mut diffs = Vec::new();
    for k in ["labels", "annotations", "ownerReferences"] {
        if g["metadata"][k] != want["metadata"][k] {
            diffs.push(format!(
                "{k}: got {}, want {}",
                g["metadata"][k], want["metadata"][k]
            ));
        }
    }
    let strip = |v: &Value| {
        let mut v = v.clone();
        v["config"] = Value::Null;
        v
    };
    if g["spec"]["config"] != want["spec"]["config"] {
        diffs.push("spec.config differs".into());
    }
    if strip(&g["spec"]) != strip(&want["spec"]) {
        diffs.push(format!(
            "spec: got {}, want {}",
            strip(&g["spec"]),
            strip(&want["spec"])
        ));
    }
    (!diffs.is_empty()).then(|| diffs.join("\n  "))
}

#[test]
fn custom_resource_cases_through_the_cli() {
    let Some(dir) = corpus("custom-resources") else {
        eprintln!(
            "SKIP: custom-resources corpus (shared/conformance/custom-resources) not present"
        );
        return;
    };
    let started = std::time::Instant::now();
    let paths = case_files(&dir, |_| true);
    let tmp = std::env::temp_dir().join(format!("mco-custom-resources-{}", std::process::id()));
    let mut failures = Vec::new();
    for p in &paths {
        let case = load(p);
        if let Some(d) = compare(&case, &tmp) {
            failures.push(format!("{}:\n  {d}", case["name"].as_str().unwrap_or("?")));
        }
    }
    eprintln!(
        "custom resources through the binary: {}/{} cases (generated MachineConfigs identical, errors upstream's) ({:.1} s)",
        paths.len() - failures.len(),
        paths.len(),
        started.elapsed().as_secs_f64()
    );
    for f in &failures {
        eprintln!("{f}");
    }
    assert!(paths.len() >= 100, "{} custom-resource cases", paths.len());
    assert!(
        failures.is_empty(),
        "{} of {} cases differ",
        failures.len(),
        paths.len()
    );
}
