//! Dev-only check that upstream's own templates folder renders exactly as upstream's template
//! controller renders it.
//!
//! Runs only when `MCO_UPSTREAM_TEMPLATES` (upstream's `templates/` folder),
//! `MCO_UPSTREAM_TEST_DATA` (upstream's `pkg/controller/template/test_data/`) are set and the
//! real-content corpus (`../shared/conformance/real`) exists; otherwise it prints why and
//! passes. Nothing upstream wrote is kept in this repository: the test reads it all from
//! those folders.
//!
//! Each real case names its platform; the case's `00-<role>` and `01-<role>-*` MachineConfigs
//! are upstream's template controller output for that platform's test ControllerConfig. The
//! test renders the same ControllerConfig through the manifests path the CLI uses (a
//! ControllerConfig naming a pull secret, the `Secret` manifest holding it, and an APIServer
//! with the TLS profile the corpus used) and compares every template MachineConfig.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use mco_render::api::MachineConfig;
use mco_render::controllers::templates::{generate_template_machine_configs, TemplateTree};
use mco_render::manifests::expand::template_options;
use mco_render::manifests::Manifests;
use serde_json::{json, Value};

/// The pull secret the corpus was rendered with.
const PULL_SECRET: &str = r#"{"auths":{"example.com":{"auth":"MCC-PULL-SECRET"}}}"#;

fn real_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/real")
}

fn inputs() -> Option<(PathBuf, PathBuf, PathBuf)> {
    let templates = std::env::var_os("MCO_UPSTREAM_TEMPLATES").map(PathBuf::from);
    let test_data = std::env::var_os("MCO_UPSTREAM_TEST_DATA").map(PathBuf::from);
    let real = real_dir();
    match (templates, test_data) {
        (Some(t), Some(d)) if real.is_dir() => Some((t, d, real)),
        _ => None,
    }
}

fn read_tree(base: &Path, dir: &Path, tree: &mut TemplateTree) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        panic!("cannot read {}", dir.display());
    };
    for entry in entries.filter_map(Result::ok) {
        let p = entry.path();
        if p.is_dir() {
            read_tree(base, &p, tree);
        } else if let (Ok(bytes), Ok(rel)) = (std::fs::read(&p), p.strip_prefix(base)) {
            let parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            tree.insert(&parts.join("/"), bytes);
        }
    }
}

/// The platform of a case name (`real-<platform>-<pool>...`), as the corpus spells it.
fn platform_of(case: &str) -> String {
    let rest = case.trim_start_matches("real-");
    for multi in [
        "gcp-custom-dns",
        "baremetal-arbiter",
        "baremetal-tnf",
        "none-sno",
    ] {
        if rest.starts_with(multi) {
            return multi.to_string();
        }
    }
    rest.split('-').next().unwrap_or("").to_string()
}

/// The manifests for a platform: its test ControllerConfig (with the corpus's changes),
/// the pull secret and the APIServer. `None` when upstream has no test ControllerConfig.
fn manifests_for(test_data: &Path, platform: &str) -> Option<Manifests> {
    let file = match platform {
        "azure" => "aws",
        "none-sno" => "none",
        other => other,
    }
    .replace('-', "_");
    let text =
        std::fs::read_to_string(test_data.join(format!("controller_config_{file}.yaml"))).ok()?;
    let mut cc: Value = serde_yaml_ng::from_str(&text).ok()?;
    cc["metadata"] = json!({"name": "machine-config-controller"});
    cc["spec"]["pullSecret"] = json!({"namespace": "openshift-config", "name": "pull-secret"});
    let status = &mut cc["spec"]["infra"]["status"];
    match platform {
        "azure" => status["platformStatus"]["type"] = json!("Azure"),
        "none-sno" => {
            status["controlPlaneTopology"] = json!("SingleReplica");
            status["infrastructureTopology"] = json!("SingleReplica");
        }
        _ => {}
    }
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"namespace": "openshift-config", "name": "pull-secret"},
        "stringData": {".dockerconfigjson": PULL_SECRET},
    });
    let mut m = Manifests::default();
    m.add_file("cc.json", &cc.to_string()).ok()?;
    m.add_file("secret.json", &secret.to_string()).ok()?;
    let profile = match platform {
        "gcp" => Some("Modern"),
        "openstack" => Some("Old"),
        _ => None,
    };
    if let Some(p) = profile {
        let key = format!("{}{}", p[..1].to_lowercase(), &p[1..]);
        let api = json!({
            "apiVersion": "config.openshift.io/v1",
            "kind": "APIServer",
            "metadata": {"name": "cluster"},
            "spec": {"tlsSecurityProfile": {"type": p, key: {}}},
        });
        m.add_file("apiserver.json", &api.to_string()).ok()?;
    }
    Some(m)
}

/// What must match between an expected and a rendered template MachineConfig.
fn comparable(mc: &Value) -> Value {
    let spec = &mc["spec"];
    let or_empty = |v: &Value| if v.is_null() { json!([]) } else { v.clone() };
    let owners: Vec<Value> = mc["metadata"]["ownerReferences"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|o| {
                    json!([
                        o["apiVersion"],
                        o["kind"],
                        o["name"],
                        o["controller"],
                        o["blockOwnerDeletion"]
                    ])
                })
                .collect()
        })
        .unwrap_or_default();
    json!({
        "labels": mc["metadata"]["labels"],
        "ownerReferences": owners,
        "config": spec["config"],
        "extensions": or_empty(&spec["extensions"]),
        "kernelArguments": or_empty(&spec["kernelArguments"]),
        "kernelType": spec["kernelType"].as_str().unwrap_or(""),
        "fips": spec["fips"].as_bool().unwrap_or(false),
        "osImageURL": spec["osImageURL"].as_str().unwrap_or(""),
    })
}

/// The keys (file paths, unit names, fields) where two comparable values differ.
fn differences(expected: &Value, got: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for key in [
        "labels",
        "ownerReferences",
        "extensions",
        "kernelArguments",
        "kernelType",
        "fips",
        "osImageURL",
    ] {
        if expected[key] != got[key] {
            out.push(key.to_string());
        }
    }
    let by = |v: &Value, list: &str, id: &str| -> BTreeMap<String, Value> {
        v.pointer(list)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|e| (e[id].as_str().unwrap_or("").to_string(), e.clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    for (list, id) in [
        ("/config/storage/files", "path"),
        ("/config/systemd/units", "name"),
    ] {
        let (e, g) = (by(expected, list, id), by(got, list, id));
        for k in e.keys().chain(g.keys()) {
            if e.get(k) != g.get(k) && !out.contains(k) {
                out.push(k.clone());
            }
        }
    }
    if out.is_empty() && expected != got {
        out.push("config (order or other fields)".into());
    }
    out
}

fn read_case(path: &Path) -> Value {
    let mut text = String::new();
    let Ok(file) = std::fs::File::open(path) else {
        panic!("cannot open {}", path.display());
    };
    if let Err(e) = flate2::read::GzDecoder::new(file).read_to_string(&mut text) {
        panic!("{}: {e}", path.display());
    }
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn upstream_templates_render_as_upstream() {
    let Some((templates, test_data, real)) = inputs() else {
        eprintln!(
            "skipped: set MCO_UPSTREAM_TEMPLATES and MCO_UPSTREAM_TEST_DATA, and provide {}",
            real_dir().display()
        );
        return;
    };
    let mut tree = TemplateTree::new();
    read_tree(&templates, &templates, &mut tree);
    assert!(
        !tree.is_empty(),
        "no templates under {}",
        templates.display()
    );

    let mut cases: Vec<PathBuf> = std::fs::read_dir(&real)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    cases.sort();
    let mut rendered: BTreeMap<String, Option<BTreeMap<String, Value>>> = BTreeMap::new();
    let (mut compared, mut failures) = (0usize, Vec::new());
    for path in cases
        .iter()
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
    {
        let case = read_case(path);
        let name = case["name"].as_str().unwrap_or("").to_string();
        let platform = platform_of(&name);
        let mcs = rendered.entry(platform.clone()).or_insert_with(|| {
            let m = manifests_for(&test_data, &platform)?;
            let cc = m.controller_config.as_ref().map(|(_, cc)| cc.clone())?;
            let opts = template_options(&m, mco_render::CONTROLLER_VERSION)
                .unwrap_or_else(|e| panic!("{platform}: {e}"));
            let mcs: Vec<MachineConfig> = generate_template_machine_configs(&tree, &cc, &opts)
                .unwrap_or_else(|e| panic!("{platform}: {e}"));
            Some(
                mcs.iter()
                    .map(|mc| {
                        let v = serde_json::to_value(mc).unwrap_or(Value::Null);
                        (mc.name().to_string(), comparable(&v))
                    })
                    .collect(),
            )
        });
        let Some(mcs) = mcs else {
            eprintln!("{name}: no test ControllerConfig for {platform}, not compared");
            continue;
        };
        for expected in case["machineConfigs"].as_array().into_iter().flatten() {
            let mc_name = expected["metadata"]["name"].as_str().unwrap_or("");
            let template_made =
                expected["metadata"]["ownerReferences"][0]["kind"] == "ControllerConfig";
            if !template_made {
                continue;
            }
            compared += 1;
            match mcs.get(mc_name) {
                None => failures.push(format!("{name}: {mc_name} not rendered")),
                Some(got) => {
                    let diff = differences(&comparable(expected), got);
                    if !diff.is_empty() {
                        failures.push(format!("{name}: {mc_name}: {}", diff.join(", ")));
                    }
                }
            }
        }
    }
    eprintln!(
        "{compared} template MachineConfigs compared, {} differ",
        failures.len()
    );
    assert!(
        compared > 0,
        "no template MachineConfig found in {}",
        real.display()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
