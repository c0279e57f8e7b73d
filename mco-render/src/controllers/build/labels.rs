//! The labels and annotations upstream puts on a build and the objects made for it.

use crate::api::{MachineConfigPool, MachineOSBuild, MachineOSConfig};
use std::collections::BTreeMap;

const PREFIX: &str = "machineconfiguration.openshift.io/";

fn key(k: &str) -> String {
    format!("{PREFIX}{k}")
}

/// A MachineOSBuild's labels: its MachineOSConfig, pool and rendered config.
pub fn machine_os_build(
    mosc: &MachineOSConfig,
    pool: &MachineConfigPool,
) -> BTreeMap<String, String> {
    BTreeMap::from([
        (key("machine-os-config"), mosc.metadata.name.clone()),
        (
            key("rendered-machine-config"),
            pool.spec.configuration.name.clone(),
        ),
        (
            key("target-machine-config-pool"),
            pool.metadata.name.clone(),
        ),
    ])
}

/// The labels of the ConfigMaps, Secrets and Job made for a build.
pub fn build_object(mosb: &MachineOSBuild, mosc: &MachineOSConfig) -> BTreeMap<String, String> {
    let mut out = BTreeMap::from([
        (key("ephemeral-build-object"), String::new()),
        (key("machine-os-build"), mosb.metadata.name.clone()),
        (key("machine-os-config"), mosc.metadata.name.clone()),
        (key("on-cluster-layering"), String::new()),
    ]);
    let build_labels = &mosb.metadata.labels;
    for k in ["rendered-machine-config", "target-machine-config-pool"] {
        let k = key(k);
        let v = build_labels.get(&k).cloned().unwrap_or_default();
        out.insert(k, v);
    }
    out
}

/// The annotations of the objects made for a build.
pub fn build_object_annotations(
    mosb: &MachineOSBuild,
    mosc: &MachineOSConfig,
) -> BTreeMap<String, String> {
    BTreeMap::from([
        (key("machine-os-build"), mosb.metadata.name.clone()),
        (key("machine-os-config"), mosc.metadata.name.clone()),
    ])
}
