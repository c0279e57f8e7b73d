//! `mco-render validate --format github|json`: each finding at the file and line where its
//! MachineConfig's document starts.

#[path = "support/run_cli.rs"]
mod run_cli;
use run_cli::{run, run_in};
use std::path::Path;

const GOOD: &str = "# a valid MachineConfig first\napiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 10-worker-motd\n  labels:\n    machineconfiguration.openshift.io/role: worker\nspec:\n  config:\n    ignition:\n      version: 3.5.0\n";

/// A folder with `mcs.yaml`: the valid MachineConfig, then examples/invalid's broken one.
fn fixture() -> tempfile::TempDir {
    let Ok(tmp) = tempfile::tempdir() else {
        panic!("temp dir");
    };
    let bad = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/invalid/bad.yaml");
    let Ok(bad) = std::fs::read_to_string(&bad) else {
        panic!("{}", bad.display());
    };
    let text = format!("{GOOD}---\n{bad}");
    if let Err(e) = std::fs::write(tmp.path().join("mcs.yaml"), text) {
        panic!("{e}");
    }
    tmp
}

#[test]
fn github_annotations_point_at_the_document() {
    let tmp = fixture();
    let (code, stdout, stderr) =
        run_in(tmp.path(), &["validate", "--format", "github", "mcs.yaml"]);
    assert_eq!((code, stderr.as_str()), (1, ""));
    insta::assert_snapshot!(stdout);
}

#[test]
fn json_report() {
    let tmp = fixture();
    let (code, stdout, stderr) = run_in(tmp.path(), &["validate", "--format", "json", "mcs.yaml"]);
    assert_eq!((code, stderr.as_str()), (1, ""));
    let v: serde_json::Value = match serde_json::from_str(&stdout) {
        Ok(v) => v,
        Err(e) => panic!("{e}: {stdout}"),
    };
    insta::assert_json_snapshot!(v);
}

#[test]
fn clean_manifests_pass_in_every_format() {
    for format in ["text", "github", "json"] {
        let (code, stdout, stderr) = run(&["validate", "--format", format, "examples/cluster"]);
        assert_eq!((code, stderr.as_str()), (0, ""), "{format}");
        assert!(!stdout.contains("::error"), "{stdout}");
    }
}

#[test]
fn review_against_a_cluster_dump_as_annotations() {
    let (code, stdout, stderr) = run(&[
        "validate",
        "--format",
        "github",
        "--cluster-dir",
        "examples/admission/cluster",
        "examples/admission/changes",
    ]);
    assert_eq!((code, stderr.as_str()), (1, ""));
    insta::assert_snapshot!(stdout);
}
