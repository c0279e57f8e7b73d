//! The `mco-render generate` command on small synthetic manifests.

use serde_json::Value;

#[path = "support/run_cli.rs"]
mod run_cli;

/// Runs `mco-render` from the generate fixtures folder.
fn run(args: &[&str]) -> (i32, String, String) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/generate_fixtures");
    run_cli::run_in(&dir, args)
}

fn file_text(mc: &Value, path: &str) -> Option<String> {
    let files = mc.pointer("/spec/config/storage/files")?.as_array()?;
    let f = files.iter().find(|f| f["path"] == path)?;
    let src = f["contents"]["source"].as_str()?;
    let bytes = mco_ignition::dataurl::decode_contents(src, None).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[test]
fn json_output_is_one_list_of_generated_configs() {
    let (code, out, err) = run(&["generate", "-o", "json", "cluster"]);
    assert_eq!(code, 0, "{err}");
    let mcs = &run_cli::list_items(&out);
    let names: Vec<&str> = mcs
        .iter()
        .filter_map(|m| m.pointer("/metadata/name").and_then(Value::as_str))
        .collect();
    assert_eq!(
        names,
        [
            "98-worker-generated-kubelet",
            "99-worker-generated-containerruntime",
            "99-worker-generated-kubelet"
        ]
    );
    // The FeatureGate's MachineConfig: the template's kubelet.conf with every gate.
    let gates = file_text(&mcs[0], "/etc/kubernetes/kubelet.conf").expect("98 kubelet.conf");
    assert!(gates.contains("featureGates:\n  AdditionalStorageConfig: true\n  ExampleGateA: false\n  ExampleGateB: true\n"), "{gates}");
    let mcs = &mcs[1..];
    let kubelet = file_text(&mcs[1], "/etc/kubernetes/kubelet.conf").expect("kubelet.conf");
    assert!(kubelet.contains("\nmaxPods: 250\n"), "{kubelet}");
    assert!(kubelet.contains("featureGates:\n  AdditionalStorageConfig: true\n  ExampleGateA: false\n  ExampleGateB: true\n"), "{kubelet}");
    assert!(
        kubelet.contains("tlsMinVersion: VersionTLS13\n"),
        "{kubelet}"
    );
    let log = file_text(
        &mcs[1],
        "/etc/systemd/system/kubelet.service.d/20-logging.conf",
    );
    assert_eq!(
        log.as_deref(),
        Some("[Service]\nEnvironment=\"KUBELET_LOG_LEVEL=3\"\n")
    );
    let storage = file_text(&mcs[0], "/etc/containers/storage.conf").expect("storage.conf");
    assert!(storage.contains("    size = \"1536Mi\"\n"), "{storage}");
    let pids = file_text(&mcs[0], "/etc/crio/crio.conf.d/01-ctrcfg-pidsLimit");
    assert_eq!(
        pids.as_deref(),
        Some("[crio]\n  [crio.runtime]\n    pids_limit = 4096\n")
    );
}

#[test]
fn yaml_output_separates_documents() {
    let (code, out, err) = run(&["generate", "cluster"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("\n---\n").count(), 2);
    assert!(out.contains("name: 99-worker-generated-kubelet\n"));
}

#[test]
fn errors_are_listed_and_exit_non_zero() {
    let (code, out, err) = run(&["generate", "-o", "json", "cluster", "invalid"]);
    assert_eq!(code, 1);
    assert!(err.contains(
        "error: invalid/bad-kubelet.yaml: KubeletConfig \"bad\": KubeletConfiguration: clusterDomain is not allowed to be set, but contains: example.com"
    ), "{err}");
    // The resources without errors are still generated.
    assert_eq!(run_cli::list_items(&out).len(), 3);
}

#[test]
fn no_resources_is_an_input_error() {
    let (code, _, err) = run(&["generate", "invalid/../cluster/00-pools.yaml"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("no KubeletConfig, ContainerRuntimeConfig, Image, FeatureGate or Node"),
        "{err}"
    );
}

#[test]
fn generate_snapshot_yaml() {
    let (code, out, err) = run(&["generate", "cluster"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!("generate_cluster_yaml", out);
}

#[test]
fn generate_snapshot_errors() {
    let (code, _out, err) = run(&["generate", "cluster", "invalid"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!("generate_invalid_stderr", err);
}
