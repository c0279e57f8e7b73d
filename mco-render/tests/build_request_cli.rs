//! `mco-render build-request` over the layering corpus (`shared/conformance/layering`): each
//! case's inputs as one manifest `List`; the printed objects are upstream's by kind and name,
//! and a case upstream fails on exits 1 with upstream's message.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus() -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    ["../../shared", "../../../shared"]
        .iter()
        .map(|up| manifest.join(up).join("conformance").join("layering"))
        .find(|p| p.is_dir())
}

fn names(kind: &str, objects: &Value) -> Vec<(String, String)> {
    let list = objects.as_array().cloned().unwrap_or_default();
    list.iter()
        .map(|o| {
            (
                kind.to_string(),
                o["metadata"]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn build_request_cli_over_the_corpus() {
    let Some(dir) = corpus() else {
        eprintln!("SKIP: layering corpus (shared/conformance/layering) not present");
        return;
    };
    let tmp = std::env::temp_dir().join(format!("mco-build-request-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    let mut failures = Vec::new();
    for p in &paths {
        let case: Value = serde_json::from_slice(&std::fs::read(p).expect("case")).expect("json");
        let name = case["name"].as_str().unwrap_or("?");
        let input = &case["input"];
        let mut items = vec![
            input["machineOSConfig"].clone(),
            input["machineConfigPool"].clone(),
            input["renderedMachineConfig"].clone(),
            input["controllerConfig"].clone(),
        ];
        items.extend(input["kubeObjects"].as_array().cloned().unwrap_or_default());
        let file = tmp.join(format!("{name}.json"));
        let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
        std::fs::write(&file, list.to_string()).expect("write input");
        let out = Command::new(env!("CARGO_BIN_EXE_mco-render"))
            .args(["build-request", "-o", "json"])
            .arg(&file)
            .output()
            .expect("run mco-render");
        let expected = &case["expected"];
        if let Some(message) = expected["error"]["message"].as_str() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            if out.status.code() != Some(1) || !stderr.contains(message) {
                failures.push(format!(
                    "{name}: exit {:?}, stderr {stderr}",
                    out.status.code()
                ));
            }
            continue;
        }
        let Ok(printed) = serde_json::from_slice::<Value>(&out.stdout) else {
            failures.push(format!(
                "{name}: no JSON on stdout ({:?})",
                out.status.code()
            ));
            continue;
        };
        let got = names("", &printed["items"]);
        let got: Vec<(String, String)> = printed["items"]
            .as_array()
            .into_iter()
            .flatten()
            .zip(got)
            .map(|(o, (_, n))| (o["kind"].as_str().unwrap_or("").to_string(), n))
            .collect();
        let mut want = names("MachineOSBuild", &json!([expected["machineOSBuild"]]));
        want.extend(names("ConfigMap", &expected["configMaps"]));
        want.extend(names("Secret", &expected["secrets"]));
        want.extend(names("Job", &json!([expected["job"]])));
        if got != want {
            failures.push(format!("{name}: got {got:?}\n  want {want:?}"));
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!(
        "build-request CLI: {}/{} cases",
        paths.len() - failures.len(),
        paths.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[path = "support/run_cli.rs"]
mod run_cli;

/// A folder of sources (the pool names no rendered config) with what the installed cluster
/// holds: the pool is rendered as the controller renders it and the build previewed; the
/// MachineOSBuild is named from that render, the Job runs the images ConfigMap's image.
#[test]
fn the_layering_example_previews_its_build() {
    let (code, stdout, stderr) = run_cli::run(&[
        "build-request",
        "-o",
        "json",
        "examples/layering/cluster",
        "examples/layering/installed",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let list: Value = serde_json::from_str(&stdout).expect("json");
    let summary: Vec<String> = list["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|o| {
            format!(
                "{} {}",
                o["kind"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap_or("")
            )
        })
        .collect();
    let (_, rendered, _) = run_cli::run(&[
        "render",
        "--pool",
        "worker",
        "-o",
        "json",
        "examples/layering/cluster",
    ]);
    let rendered: Value = serde_json::from_str(&rendered).expect("rendered json");
    let name = rendered["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(name.starts_with("rendered-worker-"), "{name}");
    assert_eq!(
        rendered["metadata"]["annotations"]
            ["machineconfiguration.openshift.io/release-image-version"],
        "4.99.0",
        "the ControllerConfig's release version"
    );
    let mosb = &list["items"][0];
    assert_eq!(mosb["spec"]["machineConfig"]["name"], name.as_str());
    let job = list["items"]
        .as_array()
        .and_then(|i| i.iter().find(|o| o["kind"] == "Job"))
        .expect("a Job");
    assert!(job["spec"]["template"]["spec"]["containers"]
        .as_array()
        .is_some_and(|c| c.iter().all(|c| c["image"]
            .as_str()
            .is_some_and(|i| i.starts_with("registry.example.net/ocp/builder@")))));
    insta::assert_snapshot!(summary.join("\n"));
    // Without what the installed cluster holds, upstream's error, naming the MachineOSConfig.
    let (code, _, stderr) = run_cli::run(&["build-request", "examples/layering/cluster"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!("layering_example_alone", stderr);
}
