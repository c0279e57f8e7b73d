//! `mco-render render` on a tree whose pool already runs a rendered config (a dump): a
//! `storage.disks` change is refused as the render controller refuses it (RenderDegraded),
//! unless the MachineConfiguration `cluster`'s `irreconcilableValidationOverrides` exempts
//! disks (the FeatureGate's part is the unit tests' of `controllers::validation_overrides`: a
//! FeatureGate in a tree also needs the base configs its kubelet config is generated from).

#[path = "support/run_cli.rs"]
mod run_cli;
use run_cli::{only_item, run_in};
use std::path::Path;

const POOL: &str = "apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: worker
spec:
  machineConfigSelector:
    matchLabels:
      machineconfiguration.openshift.io/role: worker
";

const BASE: &str = "apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 00-worker
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  config:
    ignition:
      version: 3.5.0
";

const DISK: &str = "apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-worker-disk
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  config:
    ignition:
      version: 3.5.0
    storage:
      disks:
      - device: /dev/vdb
        wipeTable: true
";

fn machine_configuration(storage: &str) -> String {
    format!(
        "apiVersion: operator.openshift.io/v1
kind: MachineConfiguration
metadata:
  name: cluster
spec:
  irreconcilableValidationOverrides:
    storage: [{storage}]
"
    )
}

fn write(dir: &Path, name: &str, text: &str) {
    if let Err(e) = std::fs::write(dir.join(name), text) {
        panic!("{name}: {e}");
    }
}

fn render(dir: &Path) -> (i32, String, String) {
    run_in(dir, &["render", "--pool", "worker", "-o", "json", "."])
}

/// A tree as a dump holds it: the pool on its rendered config, the rendered config stored.
fn dump() -> (tempfile::TempDir, String) {
    let Ok(tmp) = tempfile::tempdir() else {
        panic!("temp dir");
    };
    write(tmp.path(), "00-base.yaml", BASE);
    write(tmp.path(), "pool.yaml", POOL);
    let (code, stdout, stderr) = render(tmp.path());
    assert_eq!((code, stderr.as_str()), (0, ""));
    let (rendered, _) = only_item(&stdout);
    let name = rendered["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    write(tmp.path(), "rendered.json", &rendered.to_string());
    let pool = format!("{POOL}  configuration:\n    name: {name}\n");
    write(tmp.path(), "pool.yaml", &pool);
    (tmp, name)
}

#[test]
fn a_disk_change_is_refused_as_the_controller_refuses_it() {
    let (tmp, current) = dump();
    // Nothing changed: the pool's own config renders again.
    let (code, stdout, _) = render(tmp.path());
    assert_eq!(code, 0);
    assert_eq!(only_item(&stdout).0["metadata"]["name"], current.as_str());
    write(tmp.path(), "99-disk.yaml", DISK);
    let (code, stdout, stderr) = render(tmp.path());
    assert_eq!((code, stdout.as_str()), (1, ""));
    insta::assert_snapshot!(stderr.replace(&current, "rendered-worker-CURRENT"));
}

#[test]
fn an_override_for_disks_lets_it_render() {
    let (tmp, current) = dump();
    write(tmp.path(), "99-disk.yaml", DISK);
    write(
        tmp.path(),
        "mc.yaml",
        &machine_configuration("Raid, FileSystems"),
    );
    let (code, _, stderr) = render(tmp.path());
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("ignition disks section contains changes"),
        "{stderr}"
    );
    write(tmp.path(), "mc.yaml", &machine_configuration("Disks"));
    let (code, stdout, stderr) = render(tmp.path());
    assert_eq!((code, stderr.as_str()), (0, ""));
    let (rendered, _) = only_item(&stdout);
    assert_ne!(rendered["metadata"]["name"], current.as_str());
    assert_eq!(
        rendered["spec"]["config"]["storage"]["disks"][0]["device"],
        "/dev/vdb"
    );
}
