//! `mco-render decode`: manifests as kubectl reads them (YAML 1.1 through sigs.k8s.io/yaml),
//! printed as the `v1` `List` kubectl would send; and `render` reading a MachineConfig written
//! the way administrators write them (`mode: 0644`, `enabled: yes`).

#[path = "support/run_cli.rs"]
mod run_cli;
use run_cli::run_in;
use std::path::Path;

const MC: &str = "# modes in octal, YAML 1.1 booleans, an anchor and a merge key
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 50-worker-chrony
  labels: &role
    machineconfiguration.openshift.io/role: worker
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
      - path: /etc/chrony.conf
        mode: 0644
        overwrite: yes
        contents:
          source: data:,pool%20example.com
    systemd:
      units:
      - name: chronyd.service
        enabled: on
---
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: worker
spec:
  machineConfigSelector:
    matchLabels:
      <<: {machineconfiguration.openshift.io/role: worker}
  nodeSelector:
    matchLabels:
      node-role.kubernetes.io/worker: \"\"
  maxUnavailable: 1.0
";

fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
    let Ok(tmp) = tempfile::tempdir() else {
        panic!("temp dir");
    };
    for (name, text) in files {
        if let Err(e) = std::fs::write(tmp.path().join(name), text) {
            panic!("{e}");
        }
    }
    tmp
}

#[test]
fn decode_prints_what_kubectl_sends() {
    let tmp = folder(&[("mcs.yaml", MC)]);
    let (code, stdout, stderr) = run_in(tmp.path(), &["decode", "-o", "json", "mcs.yaml"]);
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!("decode_json", stdout);
    let (code, stdout, stderr) = run_in(tmp.path(), &["decode", "."]);
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!("decode_yaml", stdout);
}

#[test]
fn decode_errors_name_the_file_document_and_line() {
    let bad = "kind: A\n---\nkind: B\nspec:\n  a: 1\n b: 2\n";
    let tmp = folder(&[
        ("bad.yaml", bad),
        ("sep.yaml", "a: 1\n--- {b: 2}\n"),
        ("inf.yaml", "a: .inf\n"),
    ]);
    let (code, stdout, stderr) = run_in(tmp.path(), &["decode", "-o", "json", "."]);
    assert_eq!(code, 1);
    assert!(stdout.is_empty(), "{stdout}");
    insta::assert_snapshot!("decode_errors", stderr);
}

#[test]
fn render_reads_octal_modes_and_yaml_1_1_booleans() {
    let tmp = folder(&[("mcs.yaml", MC)]);
    let (code, stdout, stderr) = run_in(tmp.path(), &["render", "-o", "json", "mcs.yaml"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("\"mode\": 420"), "{stdout}");
    assert!(stdout.contains("\"enabled\": true"), "{stdout}");
}

#[test]
fn decode_reads_the_repository_examples() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let (code, _, stderr) = run_in(&root, &["decode", "-o", "json", "examples/cluster"]);
    assert_eq!(code, 0, "{stderr}");
}
