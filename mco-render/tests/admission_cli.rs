//! `mco-render validate --cluster-dir`: the webhook's findings offline, and the proof that the
//! command line and the webhook's AdmissionReview answers agree.

#[path = "support/run_cli.rs"]
mod run_cli;
use mco_render::admission::v1::handle;
use mco_render::admission::{ClusterView, ReviewOptions};
use mco_render::RenderOptions;
use run_cli::run;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const CLUSTER: &str = "examples/admission/cluster";

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

fn changes() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(repo("examples/admission/changes")) else {
        panic!("examples/admission/changes");
    };
    let mut files: Vec<String> = dir
        .filter_map(Result::ok)
        .map(|e| {
            format!(
                "examples/admission/changes/{}",
                e.file_name().to_string_lossy()
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn validate_against_a_cluster_dump() {
    let mut out = String::new();
    for f in changes() {
        let (code, stdout, stderr) = run(&["validate", "--cluster-dir", CLUSTER, &f]);
        out.push_str(&format!(
            "$ mco-render validate --cluster-dir {CLUSTER} {f}\n{stderr}{stdout}exit {code}\n\n"
        ));
    }
    insta::assert_snapshot!(out);
}

/// What the webhook answers for the object in `file`, as the CLI prints it: warnings, then
/// errors.
fn webhook_lines(cluster: &ClusterView, file: &str) -> Vec<String> {
    let Ok(m) = mco_render::load::read_manifests(&[repo(file)]) else {
        panic!("{file}");
    };
    let (object, kind, resource) = match (m.machine_configs.first(), m.pools.first()) {
        (Some((_, mc)), _) => (serde_json::to_value(mc), "MachineConfig", "machineconfigs"),
        (None, Some((_, p))) => (
            serde_json::to_value(p),
            "MachineConfigPool",
            "machineconfigpools",
        ),
        _ => panic!("{file}: no object"),
    };
    let Ok(object) = object else { panic!("{file}") };
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let old: Option<Value> = match kind {
        "MachineConfig" => cluster
            .manifests()
            .machine_configs
            .iter()
            .find(|(_, x)| x.name() == name)
            .and_then(|(_, x)| serde_json::to_value(x).ok()),
        _ => cluster
            .manifests()
            .pools
            .iter()
            .find(|(_, x)| x.name() == name)
            .and_then(|(_, x)| serde_json::to_value(x).ok()),
    };
    let body = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "7b0e1c9a",
            "kind": {"group": "machineconfiguration.openshift.io", "version": "v1", "kind": kind},
            "resource": {"group": "machineconfiguration.openshift.io", "version": "v1", "resource": resource},
            "name": name,
            "operation": if old.is_some() { "UPDATE" } else { "CREATE" },
            "object": object,
            "oldObject": old,
            "dryRun": false,
        }
    });
    let Ok(body) = serde_json::to_vec(&body) else {
        panic!()
    };
    let out = match handle(&body, cluster, &ReviewOptions::default()) {
        Ok(o) => o,
        Err(e) => panic!("{e}"),
    };
    let Ok(v) = serde_json::from_slice::<Value>(&out) else {
        panic!()
    };
    let r = &v["response"];
    assert_eq!(r["uid"], "7b0e1c9a");
    let mut lines: Vec<String> = r["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| format!("warning: {}", w.as_str().unwrap_or("")))
        .collect();
    if r["allowed"] == false {
        assert_eq!(r["status"]["code"], 422);
        assert_eq!(r["status"]["reason"], "Invalid");
        for l in r["status"]["message"].as_str().unwrap_or("").lines() {
            lines.push(format!("error: {l}"));
        }
    } else {
        assert!(r.get("status").is_none());
    }
    lines
}

#[test]
fn the_cli_and_the_webhook_agree() {
    let Ok(m) = mco_render::load::read_manifests(&[repo(CLUSTER)]) else {
        panic!("{CLUSTER}");
    };
    let cluster = ClusterView::new(m, RenderOptions::default());
    for f in changes() {
        let (code, _, stderr) = run(&["validate", "--cluster-dir", CLUSTER, &f]);
        let cli: Vec<String> = stderr
            .lines()
            .filter(|l| !l.ends_with(" warnings"))
            .map(str::to_string)
            .collect();
        let webhook = webhook_lines(&cluster, &f);
        assert_eq!(cli, webhook, "{f}");
        assert_eq!(
            code == 0,
            !webhook.iter().any(|l| l.starts_with("error:")),
            "{f}"
        );
        assert!(!webhook.is_empty(), "{f}: every example has a finding");
    }
}
