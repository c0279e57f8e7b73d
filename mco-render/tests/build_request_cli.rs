//! `mco-render build-request` over the layering corpus (`shared/conformance/layering`): each
//! case's inputs as one manifest `List` through the binary; the printed MachineOSBuild,
//! ConfigMaps (the Containerfile's instructions, the decoded `machineconfig.json.gz`), Secrets
//! and Job compared with upstream's as `layering_conformance.rs` compares the library's
//! (`support/layering.rs`); a case upstream fails on exits 1 with upstream's stage and message.

#[path = "support/compare.rs"]
mod compare;
#[path = "support/corpus.rs"]
mod corpus;
#[path = "support/layering.rs"]
mod layering;

use layering::{compare_objects, input_list, Produced};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// The printed `List` split by kind. ConfigMaps and Secrets, which upstream returns untyped,
/// are printed typed (`v1`) so `kubectl apply` takes them: that is checked, then dropped.
fn produced(list: &Value) -> Result<Produced, String> {
    let items = list["items"].as_array().cloned().unwrap_or_default();
    let of = |kind: &str| -> Vec<Value> {
        items
            .iter()
            .filter(|o| o["kind"] == kind)
            .cloned()
            .collect()
    };
    let untyped = |kind: &str| -> Result<Value, String> {
        let mut out = Vec::new();
        for mut o in of(kind) {
            let obj = o.as_object_mut().ok_or("an item is not an object")?;
            let api = obj.remove("apiVersion");
            if api != Some(json!("v1")) {
                return Err(format!("{kind} with apiVersion {api:?}"));
            }
            obj.remove("kind");
            out.push(o);
        }
        Ok(Value::Array(out))
    };
    let one = |kind: &str| -> Result<Value, String> {
        match of(kind).as_slice() {
            [o] => Ok(o.clone()),
            l => Err(format!("{} {kind} items printed", l.len())),
        }
    };
    let kinds: Vec<&str> = items.iter().filter_map(|o| o["kind"].as_str()).collect();
    let mut order = kinds.clone();
    order.dedup();
    if order != ["MachineOSBuild", "ConfigMap", "Secret", "Job"] {
        return Err(format!("items printed in the order {kinds:?}"));
    }
    Ok(Produced {
        machine_os_build: one("MachineOSBuild")?,
        config_maps: untyped("ConfigMap")?,
        secrets: untyped("Secret")?,
        job: one("Job")?,
    })
}

/// `error: MachineOSConfig "<name>" (<stage>): <message>` read back as upstream's
/// `{stage, message}`.
fn printed_error(stderr: &str, mosc: &str) -> Value {
    let prefix = format!("error: MachineOSConfig {mosc:?} (");
    let Some(rest) = stderr.trim_end_matches('\n').strip_prefix(&prefix) else {
        return json!(stderr);
    };
    match rest.split_once("): ") {
        Some((stage, message)) => json!({"stage": stage, "message": message}),
        None => json!(stderr),
    }
}

/// How the binary's result for one case differs from upstream's.
fn compare_case(case: &Value, tmp: &Path) -> Vec<String> {
    let name = case["name"].as_str().unwrap_or("case");
    let file = tmp.join(format!("{name}.json"));
    std::fs::write(&file, input_list(case).to_string()).expect("write input");
    let out = Command::new(env!("CARGO_BIN_EXE_mco-render"))
        .args(["build-request", "-o", "json"])
        .arg(&file)
        .output()
        .expect("run mco-render");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = &case["expected"];
    if !expected["error"].is_null() {
        // Nothing is printed on a failure: the error alone is compared.
        let mosc = case["input"]["machineOSConfig"]["metadata"]["name"]
            .as_str()
            .unwrap_or("");
        let mut diffs = Vec::new();
        if out.status.code() != Some(1) {
            diffs.push(format!("exit {:?}, want 1", out.status.code()));
        }
        if !out.stdout.is_empty() {
            diffs.push("output printed on a failure".into());
        }
        if let Err(d) = compare::same("error", &printed_error(&stderr, mosc), &expected["error"]) {
            diffs.push(d);
        }
        return diffs;
    }
    if !out.status.success() {
        return vec![format!("exit {:?}: {stderr}", out.status.code())];
    }
    let list: Value = match serde_json::from_slice(&out.stdout) {
        Ok(v) => v,
        Err(e) => return vec![format!("stdout is not JSON: {e}")],
    };
    match produced(&list) {
        Ok(p) => compare_objects(&p, expected),
        Err(e) => vec![e],
    }
}

#[test]
fn layering_corpus_through_the_binary() {
    let Some(dir) = corpus::corpus("layering") else {
        eprintln!("SKIP: layering corpus (shared/conformance/layering) not present");
        return;
    };
    let started = std::time::Instant::now();
    let tmp = std::env::temp_dir().join(format!("mco-build-request-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    let paths = corpus::case_files(&dir, |_| true);
    let mut failures = Vec::new();
    for p in &paths {
        let case = corpus::read(p);
        let diffs = compare_case(&case, &tmp);
        if !diffs.is_empty() {
            let name = case["name"].as_str().unwrap_or("?");
            failures.push(format!("{name}:\n  {}", diffs.join("\n  ")));
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!(
        "layering through the binary: {}/{} cases match ({:.1} s)",
        paths.len() - failures.len(),
        paths.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        paths.len() >= 30,
        "the corpus holds 30 cases, {} found",
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
    let (rendered, _) = run_cli::only_item(&rendered);
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
    // The build's MachineConfig is the rendered config `render` prints, as the build controller
    // reads it back from the API server: its empty lists `[]` (upstream's merge leaves them
    // so), not Go's `null`.
    let mc_map = list["items"]
        .as_array()
        .and_then(|i| {
            i.iter().find(|o| {
                o["metadata"]["name"]
                    == format!("mc-{}", mosb["metadata"]["name"].as_str().unwrap_or(""))
            })
        })
        .expect("the MachineConfig ConfigMap");
    let built = layering::decode_machine_config(
        mc_map["data"]["machineconfig.json.gz"]
            .as_str()
            .unwrap_or(""),
    );
    assert_eq!(built["spec"]["kernelArguments"], json!([]));
    compare::same("machineconfig.json.gz", &built, &rendered)
        .unwrap_or_else(|d| panic!("the build's MachineConfig is not the rendered one:\n  {d}"));
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
