//! Conformance of the cluster-config MachineConfigs (registries, feature gates, node config)
//! against the cluster-config corpus.
//!
//! The corpus holds upstream template content and is not part of the repository: the test
//! reads it from the shared folder next to the workspace and skips when it is absent.

#[path = "support/corpus.rs"]
mod corpus;
use corpus::{corpus, load};
#[path = "support/mc_diff.rs"]
mod mc_diff;
use mc_diff::describe_mc_diff;
use std::path::{Path, PathBuf};

use mco_render::controllers::generate::cluster_config::{ClusterConfigInput, ConfigOutcome};
use mco_render::controllers::generate::sequence::feature_gates_from_status;
use mco_render::controllers::generate::{feature_gates, node_config, registries};
use serde_json::{json, Map, Value};

fn input_of(case: &Value) -> ClusterConfigInput {
    let list = |k: &str| {
        case.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let opt = |k: &str| case.get(k).filter(|v| !v.is_null()).cloned();
    ClusterConfigInput {
        image: opt("image"),
        cluster_version: opt("clusterVersion"),
        image_content_source_policies: list("imageContentSourcePolicies"),
        image_digest_mirror_sets: list("imageDigestMirrorSets"),
        image_tag_mirror_sets: list("imageTagMirrorSets"),
        feature_gates: opt("featureGate")
            .map(|fg| feature_gates_from_status(&fg))
            .unwrap_or_default(),
        api_server: opt("apiServer"),
        node: opt("node"),
        pools: list("pools")
            .into_iter()
            .filter_map(|p| serde_json::from_value(p).ok())
            .collect(),
        existing_machine_configs: list("existingMachineConfigs"),
        base_machine_configs: list("baseMachineConfigs"),
        controller_version: mco_render::CONTROLLER_VERSION.to_string(),
        feature_gate_exists: opt("featureGate").is_some(),
        ..ClusterConfigInput::default()
    }
}

fn run(case: &Value) -> ConfigOutcome {
    let input = input_of(case);
    match case["kind"].as_str() {
        Some("registries") => registries::sync(&input),
        Some("feature-gate") => feature_gates::sync(&input),
        _ => node_config::sync(&input),
    }
}

/// A MachineConfig reduced to what the corpus records.
fn reduce(mc: &Value) -> Value {
    let mut md = Map::new();
    for k in ["name", "labels", "annotations", "ownerReferences"] {
        if let Some(v) = mc.pointer(&format!("/metadata/{k}")) {
            md.insert(k.into(), v.clone());
        }
    }
    json!({
        "apiVersion": mc["apiVersion"],
        "kind": mc["kind"],
        "metadata": md,
        "spec": mc["spec"],
    })
}

/// How the outcome differs from `expected`, or `None` when it matches.
fn compare(case: &Value) -> Option<String> {
    let expected = &case["expected"];
    let out = run(case);
    let mut diffs = Vec::new();
    let error = out
        .error
        .as_ref()
        .map_or(Value::Null, |e| Value::String(e.message.clone()));
    if error != expected["error"] {
        diffs.push(format!("error: got {error}, want {}", expected["error"]));
    }
    if expected["error"].is_null() {
        let actions = Value::from(out.actions());
        if actions != expected["machineConfigActions"] {
            diffs.push(format!(
                "actions: got {actions}, want {}",
                expected["machineConfigActions"]
            ));
        }
        let unchanged = Value::from(out.unchanged.clone());
        if unchanged != expected["unchanged"] {
            diffs.push(format!(
                "unchanged: got {unchanged}, want {}",
                expected["unchanged"]
            ));
        }
        let got: Vec<Value> = out.machine_configs.iter().map(reduce).collect();
        let want = expected["machineConfigs"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let names = |l: &[Value]| {
            l.iter()
                .map(|m| m["metadata"]["name"].as_str().unwrap_or("").to_string())
                .collect::<Vec<_>>()
        };
        if names(&got) != names(&want) {
            diffs.push(format!(
                "machineConfigs: got {:?}, want {:?}",
                names(&got),
                names(&want)
            ));
        } else {
            for (g, w) in got.iter().zip(&want) {
                if g != w {
                    diffs.push(describe_mc_diff(&w["metadata"]["name"].to_string(), g, w));
                }
            }
        }
    }
    (!diffs.is_empty()).then(|| diffs.join("\n  "))
}

fn case_paths(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("read corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .collect();
    paths.sort();
    paths
}

#[test]
fn cluster_config_cases() {
    let Some(dir) = corpus("cluster-config") else {
        eprintln!("SKIP: cluster-config corpus (shared/conformance/cluster-config) not present");
        return;
    };
    let paths = case_paths(&dir);
    let mut failures = Vec::new();
    let mut by_kind: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    for p in &paths {
        let case = load(p);
        let kind = case["kind"].as_str().unwrap_or("?").to_string();
        let entry = by_kind.entry(kind).or_default();
        entry.1 += 1;
        match compare(&case) {
            Some(d) => failures.push(format!("{}:\n  {d}", case["name"].as_str().unwrap_or("?"))),
            None => entry.0 += 1,
        }
    }
    let passed = paths.len() - failures.len();
    eprintln!(
        "cluster-config conformance: {passed}/{} cases pass",
        paths.len()
    );
    for (k, (p, n)) in &by_kind {
        eprintln!("  {k}: {p}/{n}");
    }
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

/// Writes the case as a folder of manifests, one object per JSON file.
fn write_manifests(case: &Value, dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut objects: Vec<Value> = Vec::new();
    for k in [
        "pools",
        "baseMachineConfigs",
        "existingMachineConfigs",
        "imageContentSourcePolicies",
        "imageDigestMirrorSets",
        "imageTagMirrorSets",
    ] {
        objects.extend(case[k].as_array().cloned().unwrap_or_default());
    }
    for k in [
        "image",
        "clusterVersion",
        "featureGate",
        "apiServer",
        "node",
    ] {
        if !case[k].is_null() {
            objects.push(case[k].clone());
        }
    }
    for (i, o) in objects.iter().enumerate() {
        std::fs::write(dir.join(format!("{i:03}.json")), o.to_string()).expect("write");
    }
}

/// The objects a failing case's stderr may name, by the checker's rules.
fn blamable(case: &Value) -> Vec<String> {
    let err = case["expected"]["error"].as_str().unwrap_or("");
    let mut out = Vec::new();
    if case["kind"] == "node-config" {
        out.push("Node \"cluster\"".to_string());
    }
    if err.contains("release image") {
        out.push("ClusterVersion \"version\"".to_string());
    }
    if err.contains("invalid entry for")
        || err.contains("only one of")
        || err.contains("wildcard scope")
    {
        out.push("Image \"cluster\"".to_string());
    }
    let quoted: Vec<&str> = err.split('"').skip(1).step_by(2).collect();
    for (k, kind, list) in [
        (
            "imageContentSourcePolicies",
            "ImageContentSourcePolicy",
            "repositoryDigestMirrors",
        ),
        (
            "imageDigestMirrorSets",
            "ImageDigestMirrorSet",
            "imageDigestMirrors",
        ),
        ("imageTagMirrorSets", "ImageTagMirrorSet", "imageTagMirrors"),
    ] {
        for o in case[k].as_array().into_iter().flatten() {
            let uses = o["spec"][list].as_array().into_iter().flatten().any(|r| {
                quoted.iter().any(|q| {
                    r["source"] == *q
                        || r["mirrors"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .any(|m| m == q)
                })
            });
            if uses {
                out.push(format!(
                    "{kind} {:?}",
                    o["metadata"]["name"].as_str().unwrap_or("")
                ));
            }
        }
    }
    out
}

fn managed_name(kind: &str, name: &str) -> bool {
    let generated = |prefix: &str, suffix: &str| {
        name.starts_with(prefix) && name.ends_with(suffix) && name.contains("-generated-")
    };
    match kind {
        "registries" => generated("99-", "-generated-registries"),
        "feature-gate" => generated("98-", "-generated-kubelet"),
        _ => generated("98-", "-generated-kubelet") || generated("97-", "-generated-kubelet"),
    }
}

/// How the CLI's result differs from the checker's expectations, or `None`.
fn compare_cli(case: &Value, dir: &Path) -> Option<String> {
    write_manifests(case, dir);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mco-render"))
        .args(["generate", "-o", "json", "--controller-version"])
        .arg(mco_render::CONTROLLER_VERSION)
        .arg(dir)
        .output()
        .expect("run mco-render");
    let _ = std::fs::remove_dir_all(dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = &case["expected"];
    if !expected["error"].is_null() {
        if out.status.success() {
            return Some("exit 0 for an expected error".into());
        }
        let names = blamable(case);
        if !names.iter().any(|n| stderr.contains(n.as_str())) {
            return Some(format!("stderr names none of {names:?}: {stderr}"));
        }
        // An `error:` line ending in upstream's message.
        let error = expected["error"].as_str().unwrap_or("");
        if !stderr
            .lines()
            .any(|l| l.starts_with("error: ") && l.ends_with(&format!(": {error}")))
        {
            return Some(format!(
                "no error line ends in upstream's {error:?}: {stderr}"
            ));
        }
        return None;
    }
    // Other syncs the manifests trigger may fail (a Node with an unknown profile in a
    // feature-gate case: its own handler fails on a cluster too); the MachineConfigs of the
    // case's sync must still print.
    let got: Vec<Value> = match serde_json::from_str::<Value>(&stdout) {
        Ok(Value::Object(mut list)) if list.get("kind") == Some(&"List".into()) => {
            match list.remove("items") {
                Some(Value::Array(items)) => items,
                _ => return Some("stdout is a List without items".into()),
            }
        }
        Ok(_) => return Some("stdout is not a List".into()),
        Err(e) => return Some(format!("stdout is not JSON: {e}")),
    };
    let name = |m: &Value| m["metadata"]["name"].as_str().unwrap_or("").to_string();
    let kind = case["kind"].as_str().unwrap_or("");
    let want = expected["machineConfigs"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut diffs = Vec::new();
    for w in &want {
        match got.iter().find(|g| name(g) == name(w)) {
            None => diffs.push(format!("{} missing", name(w))),
            Some(g) => {
                for k in ["labels", "annotations", "ownerReferences"] {
                    if g["metadata"][k] != w["metadata"][k] {
                        diffs.push(format!(
                            "{} {k}: got {}, want {}",
                            name(w),
                            g["metadata"][k],
                            w["metadata"][k]
                        ));
                    }
                }
                if g["spec"] != w["spec"] {
                    diffs.push(describe_mc_diff(
                        &w["metadata"]["name"].to_string(),
                        &reduce(g),
                        w,
                    ));
                }
            }
        }
    }
    for g in &got {
        if managed_name(kind, &name(g)) && !want.iter().any(|w| name(w) == name(g)) {
            diffs.push(format!("unexpected {}", name(g)));
        }
    }
    (!diffs.is_empty()).then(|| diffs.join("\n  "))
}

/// Cases the CLI cannot reproduce: without a Node manifest no node sync is triggered (as on a
/// cluster, where the handler runs on Node events), so upstream's "missing node" error of a
/// direct `syncNodeConfigHandler` call never appears; the manifests are those of a
/// feature-gate case.
const CLI_UNREACHABLE: &[&str] = &["n011-aws-node-missing+infra+storage"];

#[test]
fn cluster_config_cases_through_the_cli() {
    let Some(dir) = corpus("cluster-config") else {
        eprintln!("SKIP: cluster-config corpus (shared/conformance/cluster-config) not present");
        return;
    };
    let paths = case_paths(&dir);
    let tmp = std::env::temp_dir().join(format!("mco-cluster-config-{}", std::process::id()));
    let mut failures = Vec::new();
    let mut skipped = 0;
    for p in &paths {
        let case = load(p);
        let name = case["name"].as_str().unwrap_or("?");
        if CLI_UNREACHABLE.contains(&name) {
            skipped += 1;
            continue;
        }
        if let Some(d) = compare_cli(&case, &tmp) {
            failures.push(format!("{name}:\n  {d}"));
        }
    }
    let ran = paths.len() - skipped;
    eprintln!(
        "cluster-config through the CLI: {}/{ran} cases pass ({skipped} not reachable through manifests)",
        ran - failures.len()
    );
    for f in &failures {
        eprintln!("{f}");
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} cases differ",
        failures.len()
    );
}
