//! `--release` through the shipped binary: `render` names and writes configs as that
//! release's controller does (the same as the library for that release), a dump's release is
//! read from its ControllerConfig when not given, `ignition` serves only what the release
//! serves, and an unknown release is an error naming the known ones.

#[path = "support/run_cli.rs"]
mod run_cli;

use mco_render::api::{ControllerConfigSpec, MachineConfig, MachineConfigPool};
use mco_render::release::Release;
use mco_render::{render_pool, RenderOptions};
use run_cli::run;
use serde_json::Value;

fn rendered(args: &[&str]) -> Value {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    run_cli::only_item(&out).0
}

/// The JSON `mco-render ARGS` prints (exit 0).
fn printed(args: &[&str]) -> Value {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// `examples/cluster` with its configs written as spec 3.4.0 (which 4.14 to 4.18 read; they
/// refuse 3.5.0 as those releases do), its ControllerConfig naming `release` when given.
fn cluster_34(release: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cluster");
    for entry in std::fs::read_dir(examples).expect("examples") {
        let p = entry.expect("entry").path();
        let mut text = std::fs::read_to_string(&p)
            .expect("read")
            .replace("version: 3.5.0", "version: 3.4.0")
            .replace("\"version\": \"3.5.0\"", "\"version\": \"3.4.0\"");
        if let (Some(v), true) = (release, text.contains("kind: ControllerConfig")) {
            text = text.replacen(
                "metadata:\n",
                &format!("metadata:\n  annotations:\n    machineconfiguration.openshift.io/release-image-version: {v}\n"),
                1,
            );
        }
        std::fs::write(dir.path().join(p.file_name().expect("name")), text).expect("write");
    }
    dir
}

/// The worker pool of `dir` rendered by the library as `release`.
fn library(dir: &std::path::Path, release: Release) -> String {
    let m = mco_render::load::read_manifests(&[dir]).expect("manifests");
    let pool: &MachineConfigPool = m
        .pools
        .iter()
        .map(|(_, p)| p)
        .find(|p| p.name() == "worker")
        .expect("worker");
    let mcs: Vec<MachineConfig> = m.configs();
    let cc: ControllerConfigSpec = m
        .controller_config
        .as_ref()
        .map(|(_, c)| c.spec.clone())
        .unwrap_or_default();
    let opts = m.render_options(&RenderOptions {
        release,
        ..RenderOptions::default()
    });
    render_pool(pool, &mcs, &cc, &opts)
        .expect("renders")
        .machine_config
        .metadata
        .name
}

#[test]
fn render_names_configs_as_the_release_asked_for() {
    let dir = cluster_34(None);
    let d = dir.path().to_str().expect("utf-8");
    let newest = rendered(&["render", d, "--pool", "worker", "-o", "json"]);
    let old = rendered(&[
        "render",
        d,
        "--pool",
        "worker",
        "-o",
        "json",
        "--release",
        "4.16",
    ]);
    assert_eq!(old["spec"]["config"]["ignition"]["version"], "3.4.0");
    assert_eq!(newest["spec"]["config"]["ignition"]["version"], "3.5.0");
    assert_ne!(old["metadata"]["name"], newest["metadata"]["name"]);
    let r416 = Release::parse("4.16").expect("known");
    assert_eq!(old["metadata"]["name"], library(dir.path(), r416).as_str());
    assert_eq!(
        newest["metadata"]["name"],
        library(dir.path(), Release::NEWEST).as_str()
    );
    // And a 4.16 cluster refuses the 3.5.0 configs of the examples, as 4.16 does.
    let (code, _, err) = run(&["render", "examples/cluster", "--release", "4.16"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("unknown version. Supported spec versions: 2.2, 3.0, 3.1, 3.2, 3.3, 3.4"),
        "{err}"
    );
}

#[test]
fn a_dump_says_its_release_and_an_explicit_one_wins() {
    let dir = cluster_34(Some("4.16.0-0.nightly-2024-08-01-082745"));
    let d = dir.path().to_str().expect("utf-8");
    let from_dump = rendered(&["render", d, "--pool", "worker", "-o", "json"]);
    assert_eq!(from_dump["spec"]["config"]["ignition"]["version"], "3.4.0");
    let explicit = rendered(&[
        "render",
        d,
        "--pool",
        "worker",
        "-o",
        "json",
        "--release",
        "4.22",
    ]);
    assert_eq!(explicit["spec"]["config"]["ignition"]["version"], "3.5.0");
}

#[test]
fn report_on_a_dump_names_the_config_the_cluster_then_creates() {
    let base = cluster_34(Some("4.16.0-0.nightly-2024-08-01-082745"));
    let head = cluster_34(Some("4.16.0-0.nightly-2024-08-01-082745"));
    std::fs::write(
        head.path().join("90-worker-motd.yaml"),
        "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 90-worker-motd\n  labels:\n    machineconfiguration.openshift.io/role: worker\nspec:\n  config:\n    ignition:\n      version: 3.4.0\n    storage:\n      files:\n        - path: /etc/motd\n          mode: 420\n          contents:\n            source: data:,hello\n",
    )
    .expect("write");
    let (b, h) = (
        base.path().to_str().expect("utf-8"),
        head.path().to_str().expect("utf-8"),
    );
    let report = printed(&["report", b, h, "--pool", "worker", "-o", "json"]);
    let worker = &report["pools"][0];
    assert_eq!(worker["pool"], "worker");
    let r416 = Release::parse("4.16").expect("known");
    assert_eq!(worker["from"], library(base.path(), r416).as_str());
    assert_eq!(worker["to"], library(head.path(), r416).as_str());
    assert_ne!(worker["to"], library(head.path(), Release::NEWEST).as_str());
}

#[test]
fn ignition_serves_what_the_release_serves() {
    let dir = cluster_34(None);
    let d = dir.path().to_str().expect("utf-8");
    let args = |v: &'static str| {
        vec![
            "ignition",
            d,
            "--pool",
            "worker",
            "--spec-version",
            v,
            "--release",
            "4.18",
        ]
    };
    let (code, _, err) = run(&args("3.5.0"));
    assert_eq!(code, 2);
    insta::assert_snapshot!(err);
    let served = printed(&args("3.4.0"));
    assert_eq!(served["ignition"]["version"], "3.4.0");
}

#[test]
fn an_unknown_release_names_the_known_ones() {
    let (code, _, err) = run(&["render", "examples/cluster", "--release", "4.13"]);
    assert_eq!(code, 2);
    insta::assert_snapshot!(err);
}
