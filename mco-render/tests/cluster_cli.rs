//! `mco-render render` folds the MachineConfigs generated from KubeletConfigs and
//! ContainerRuntimeConfigs into the pools they select, and `mco-render templates` prints the
//! template controller's MachineConfigs.

use serde_json::Value;

#[path = "support/run_cli.rs"]
mod run_cli;
use run_cli::{only_item, run};

const FIXTURES: &str = "mco-render/tests/generate_fixtures/cluster";

#[test]
fn render_includes_generated_machine_configs() {
    let (code, out, err) = run(&["render", "--pool", "worker", "-o", "json", FIXTURES]);
    assert_eq!(code, 0, "{err}");
    let (v, out) = only_item(&out);
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

#[test]
fn templates_for_the_examples() {
    let (code, out, err) = run(&["templates", "--templates", "templates", "examples/cluster"]);
    assert_eq!(code, 0, "{err}");
    let docs: Vec<serde_json::Value> = serde_yaml_ng::Deserializer::from_str(&out)
        .filter_map(|d| serde::Deserialize::deserialize(d).ok())
        .collect();
    let names: Vec<&str> = docs
        .iter()
        .filter_map(|d| d.pointer("/metadata/name").and_then(Value::as_str))
        .collect();
    assert_eq!(
        names,
        [
            "00-master",
            "00-worker",
            "01-master-container-runtime",
            "01-master-kubelet",
            "01-worker-container-runtime",
            "01-worker-kubelet"
        ]
    );
    for d in &docs {
        assert_eq!(
            d.pointer("/metadata/ownerReferences/0/kind"),
            Some(&Value::from("ControllerConfig"))
        );
        assert_eq!(
            d.pointer("/metadata/annotations/machineconfiguration.openshift.io~1generated-by-controller-version"),
            Some(&Value::from(mco_render::CONTROLLER_VERSION))
        );
    }
    insta::assert_snapshot!(out);
}

#[test]
fn render_with_templates() {
    let (code, out, err) = run(&["render", "--templates", "templates", "examples/cluster"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!(out);
}

#[test]
fn templates_are_the_base_of_generated_kubelet_configs() {
    let (code, out, err) = run(&[
        "render",
        "--templates",
        "templates",
        "--pool",
        "worker",
        "-o",
        "json",
        "examples/cluster/01-controllerconfig.yaml",
        FIXTURES,
    ]);
    assert_eq!(code, 0, "{err}");
    let (v, _) = only_item(&out);
    let files = v
        .pointer("/spec/config/storage/files")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let kubelet = files
        .iter()
        .find(|f| f["path"] == "/etc/kubernetes/kubelet.conf")
        .and_then(|f| f["contents"]["source"].as_str())
        .and_then(|s| mco_ignition::dataurl::decode_contents(s, None).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    // From the template (clusterDNS) and from the KubeletConfig (TLS profile of the APIServer).
    assert!(
        kubelet.contains("clusterDNS:\n- 172.30.0.10\n"),
        "{kubelet}"
    );
    assert!(
        kubelet.contains("tlsMinVersion: VersionTLS13\n"),
        "{kubelet}"
    );
    assert!(v["metadata"]["name"]
        .as_str()
        .is_some_and(|n| n.starts_with("rendered-worker-")));
}

#[test]
fn templates_need_a_controller_config() {
    let (code, _out, err) = run(&[
        "templates",
        "--templates",
        "templates",
        "examples/cluster/00-pools.yaml",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("no ControllerConfig"), "{err}");
}
