//! `mco-render render` folds the MachineConfigs generated from KubeletConfigs and
//! ContainerRuntimeConfigs into the pools they select, and `mco-render templates` prints the
//! template controller's MachineConfigs.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn run(args: &[&str]) -> (i32, String, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(env!("CARGO_BIN_EXE_mco-render"))
        .args(args)
        .current_dir(root)
        .output()
        .expect("run mco-render");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const FIXTURES: &str = "mco-render/tests/generate_fixtures/cluster";

#[test]
fn render_includes_generated_machine_configs() {
    let (code, out, err) = run(&["render", "--pool", "worker", "-o", "json", FIXTURES]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("JSON");
    let files: Vec<&str> = v
        .pointer("/spec/config/storage/files")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|f| f["path"].as_str()).collect())
        .unwrap_or_default();
    assert!(files.contains(&"/etc/kubernetes/kubelet.conf"), "{files:?}");
    assert!(
        files.contains(&"/etc/crio/crio.conf.d/01-ctrcfg-pidsLimit"),
        "{files:?}"
    );
    insta::assert_snapshot!(out);
}

#[test]
fn render_fails_on_a_resource_that_does_not_generate() {
    let (code, out, err) = run(&[
        "render",
        FIXTURES,
        "mco-render/tests/generate_fixtures/invalid",
    ]);
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains("bad-kubelet.yaml"), "{err}");
}
