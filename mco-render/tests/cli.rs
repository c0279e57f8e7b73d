//! Snapshots of the `mco-render` command line on the bundled examples.

#[path = "support/run_cli.rs"]
mod run_cli;
use run_cli::run;

#[test]
fn render_examples_yaml() {
    let (code, out, err) = run(&["render", "examples/cluster"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!(out);
}

#[test]
fn render_one_pool_json_is_the_object_itself() {
    let (code, out, err) = run(&[
        "render",
        "--pool",
        "worker",
        "-o",
        "json",
        "examples/cluster",
    ]);
    assert_eq!(code, 0, "{err}");
    // One object asked for by name prints alone, as `kubectl get mc NAME -o json` does
    // (`kubectl apply -f` reads it as it reads a `v1 List`).
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
    assert_eq!(v["kind"], "MachineConfig");
    assert!(v["metadata"]["name"]
        .as_str()
        .is_some_and(|n| n.starts_with("rendered-worker-")));
    insta::assert_snapshot!(out);
}

#[test]
fn render_reports_every_error_with_file_and_path() {
    let (code, out, err) = run(&[
        "render",
        "--pool",
        "worker",
        "examples/cluster",
        "examples/invalid",
    ]);
    assert_eq!(code, 1);
    assert!(out.is_empty());
    insta::assert_snapshot!(err);
}

#[test]
fn validate_invalid_example() {
    let (code, _out, err) = run(&["validate", "examples/invalid"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!(err);
}

#[test]
fn validate_clean_examples() {
    let (code, out, err) = run(&["validate", "examples/cluster"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!(out);
}

#[test]
fn ignition_spec_2_2() {
    let (code, out, err) = run(&[
        "ignition",
        "--spec-version",
        "2.2.0",
        "--pool",
        "infra",
        "examples/cluster",
    ]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!(out);
}

#[test]
fn ignition_refuses_unknown_version() {
    let (code, _out, err) = run(&[
        "ignition",
        "--spec-version",
        "3.9.0",
        "--pool",
        "infra",
        "examples/cluster",
    ]);
    assert_eq!(code, 2);
    insta::assert_snapshot!(err);
}

#[test]
fn diff_text_and_json() {
    let (code, out, err) = run(&[
        "diff",
        "--pool",
        "worker",
        "examples/cluster",
        "examples/cluster-next",
    ]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!("diff_worker_text", out);
    let (code, out, err) = run(&[
        "diff",
        "--pool",
        "infra",
        "-o",
        "json",
        "examples/cluster",
        "examples/cluster-next",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["reconcilable"], true);
    assert_eq!(v["drain"], true);
    assert!(v["actions"]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x["type"] == "Reboot")));
    insta::assert_snapshot!("diff_infra_json", out);
}

#[test]
fn missing_path_is_a_usage_error() {
    let (code, _out, err) = run(&["render", "does/not/exist"]);
    assert_eq!(code, 2);
    assert!(err.contains("does/not/exist"), "{err}");
}

#[test]
fn a_closed_output_pipe_ends_quietly() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    // A reader that takes one byte and goes away (`mco-render render | head -c 1`).
    let mut child = Command::new(env!("CARGO_BIN_EXE_mco-render"))
        .args([
            "render",
            "examples/cluster",
            "examples/cluster",
            "-o",
            "json",
        ])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mco-render");
    drop(child.stdout.take());
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let status = child.wait().expect("wait");
    assert!(!err.contains("panicked"), "{err}");
    assert!(status.code().is_some(), "killed by a signal: {status:?}");
}
