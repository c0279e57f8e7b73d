//! Conformance of the cluster-config MachineConfigs (registries, feature gates, node config)
//! against the cluster-config corpus.
//!
//! The corpus holds upstream template content and is not part of the repository: the test
//! reads it from the shared folder next to the workspace and skips when it is absent.

use std::io::Read;
use std::path::{Path, PathBuf};

use mco_render::controllers::generate::cluster_config::{ClusterConfigInput, ConfigOutcome};
use mco_render::controllers::generate::sequence::feature_gates_from_status;
use mco_render::controllers::generate::{feature_gates, node_config, registries};
use serde_json::{json, Map, Value};

/// The corpus folder: `shared/` beside the repository (CI), or beside the worktree folder.
fn corpus() -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    ["../../shared", "../../../shared"]
        .iter()
        .map(|up| manifest.join(up).join("conformance/cluster-config"))
        .find(|p| p.is_dir())
}

fn load(path: &Path) -> Value {
    let file = std::fs::File::open(path).expect("open case");
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .expect("gunzip case");
    serde_json::from_str(&text).expect("case JSON")
}

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
        pools: list("pools"),
        existing_machine_configs: list("existingMachineConfigs"),
        base_machine_configs: list("baseMachineConfigs"),
        controller_version: mco_render::CONTROLLER_VERSION.to_string(),
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

fn file_text(f: &Value) -> String {
    let src = f["contents"]["source"].as_str().unwrap_or("");
    mco_ignition::dataurl::decode_contents(src, None)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

fn describe(got: &Value, want: &Value) -> String {
    let files = |v: &Value| -> Vec<Value> {
        v.pointer("/spec/config/storage/files")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut out = format!("{} differs", want["metadata"]["name"]);
    let (gf, wf) = (files(got), files(want));
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
                if gl.get(i) != wl.get(i) {
                    out.push_str(&format!(
                        "\n    {} line {}: got {:?}, want {:?}",
                        w["path"],
                        i + 1,
                        gl.get(i),
                        wl.get(i)
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
        let actions = Value::from(out.machine_config_actions.clone());
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
                    diffs.push(describe(g, w));
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
    let Some(dir) = corpus() else {
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
