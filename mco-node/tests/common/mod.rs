//! Helpers for tests on temporary host roots.
#![allow(dead_code)]

use std::path::PathBuf;

use mco_node::{DesiredConfig, HostRoot};
use serde_json::{json, Value};

/// A temporary root with `/etc/passwd` and `/etc/group` (core 1000, builder 4242, nobody).
pub fn temp_root() -> (tempfile::TempDir, HostRoot) {
    let dir = tempfile::tempdir().expect("tempdir");
    seed_users(dir.path());
    let root = HostRoot::new(dir.path()).expect("root");
    (dir, root)
}

pub fn seed_users(base: &std::path::Path) {
    std::fs::create_dir_all(base.join("etc")).unwrap();
    std::fs::write(
        base.join("etc/passwd"),
        "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000::/home/core:/bin/bash\nbuilder:x:4242:4243::/home/builder:/bin/bash\nnobody:x:65534:65534::/:/sbin/nologin\n",
    )
    .unwrap();
    std::fs::write(
        base.join("etc/group"),
        "root:x:0:\ncore:x:1000:\nbuilders:x:4243:builder\nnobody:x:65534:\n",
    )
    .unwrap();
}

/// A file entry with percent-encoded contents.
pub fn file(path: &str, contents: &str) -> Value {
    json!({"path": path, "contents": {"source": mco_ignition::dataurl::encode_percent(contents.as_bytes())}})
}

/// A rendered MachineConfig with these files and units (spec 3.4).
pub fn mc(name: &str, files: Vec<Value>, units: Vec<Value>) -> DesiredConfig {
    mc_with(
        name,
        json!({"storage": {"files": files}, "systemd": {"units": units}}),
    )
}

/// A rendered MachineConfig around an Ignition body (version added).
pub fn mc_with(name: &str, mut ign: Value) -> DesiredConfig {
    ign["ignition"] = json!({"version": "3.4.0"});
    let v = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": name},
        "spec": {"config": ign}
    });
    DesiredConfig::from_bytes(v.to_string().as_bytes(), name).expect("config")
}

pub fn host_path(root: &HostRoot, p: &str) -> PathBuf {
    root.base().join(p.trim_start_matches('/'))
}

pub fn read(root: &HostRoot, p: &str) -> Option<String> {
    std::fs::read_to_string(host_path(root, p)).ok()
}

pub fn write(root: &HostRoot, p: &str, s: &str) {
    let hp = host_path(root, p);
    std::fs::create_dir_all(hp.parent().unwrap()).unwrap();
    std::fs::write(hp, s).unwrap();
}
