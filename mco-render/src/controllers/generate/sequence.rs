//! Generating for every custom resource of a cluster description, one sync after another,
//! each seeing the writes of the ones before (as upstream's controllers would over time).

use serde_json::Value;

use super::{generate, FeatureGates, GenerateInput, GenerateOutcome};
use crate::api::{CustomResource, MachineConfig, MachineConfigPool};
use crate::controllers::Write;

/// The resources a cluster description holds.
#[derive(Debug, Clone, Default)]
pub struct ClusterInput {
    /// KubeletConfigs and ContainerRuntimeConfigs.
    pub resources: Vec<CustomResource>,
    /// MachineConfigs: the role templates and any generated ones already present.
    pub machine_configs: Vec<MachineConfig>,
    /// MachineConfigPools.
    pub pools: Vec<MachineConfigPool>,
    /// The resolved feature gates.
    pub feature_gates: FeatureGates,
    /// The APIServer `cluster`.
    pub api_server: Option<Value>,
    /// The Node `cluster`.
    pub node_config: Option<Value>,
    /// The controller version stamped on generated MachineConfigs.
    pub controller_version: String,
}

/// One resource's sync.
#[derive(Debug, Clone)]
pub struct ResourceOutcome {
    /// `KubeletConfig` or `ContainerRuntimeConfig`.
    pub kind: String,
    /// The resource's name.
    pub name: String,
    /// What the sync did.
    pub outcome: GenerateOutcome,
}

/// The resolved gates of a `config.openshift.io/v1` FeatureGate: the first version listed in
/// its status.
pub fn feature_gates_from_status(feature_gate: &Value) -> FeatureGates {
    let first = feature_gate
        .pointer("/status/featureGates/0")
        .cloned()
        .unwrap_or(Value::Null);
    let names = |k: &str| -> Vec<String> {
        first
            .get(k)
            .and_then(Value::as_array)
            .map(|a| {
                let mut v: Vec<String> = a
                    .iter()
                    .filter_map(|g| g.get("name").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect();
                v.sort();
                v
            })
            .unwrap_or_default()
    };
    FeatureGates {
        enabled: names("enabled"),
        disabled: names("disabled"),
    }
}

/// Syncs every KubeletConfig and ContainerRuntimeConfig, oldest first (by creation time,
/// then name). After each sync the resource's annotations and finalizers and the
/// MachineConfigs written or deleted are applied to the cluster the next sync sees.
pub fn generate_cluster(input: &ClusterInput) -> Vec<ResourceOutcome> {
    generate_cluster_state(input).0
}

/// As [`generate_cluster`], also returning the MachineConfigs the cluster holds afterwards:
/// `input.machine_configs` with every write and deletion applied, in that order (a rewritten
/// MachineConfig moves to the end).
pub fn generate_cluster_state(input: &ClusterInput) -> (Vec<ResourceOutcome>, Vec<MachineConfig>) {
    let mut resources: Vec<CustomResource> = input.resources.clone();
    resources.sort_by(|a, b| {
        let key = |r: &CustomResource| {
            (
                r.metadata().creation_timestamp.clone().unwrap_or_default(),
                r.name().to_string(),
            )
        };
        key(a).cmp(&key(b))
    });
    let mut mcs = input.machine_configs.clone();
    let mut out = Vec::new();
    for i in 0..resources.len() {
        let object = resources[i].clone();
        let kind = object.kind();
        let others: Vec<CustomResource> = resources
            .iter()
            .enumerate()
            .filter(|(j, r)| *j != i && r.kind() == kind)
            .map(|(_, r)| r.clone())
            .collect();
        let run = GenerateInput {
            object,
            other_objects: others,
            existing_machine_configs: mcs.clone(),
            pools: input.pools.clone(),
            base_machine_configs: input.machine_configs.clone(),
            feature_gates: input.feature_gates.clone(),
            api_server: input.api_server.clone(),
            node_config: input.node_config.clone(),
            controller_version: input.controller_version.clone(),
        };
        let outcome = generate(&run);
        // Apply the writes for the syncs that follow.
        for write in &outcome.writes {
            if let Write::DeleteMachineConfig(name) = write {
                mcs.retain(|m| m.name() != name);
            }
        }
        for mc in outcome.machine_configs() {
            mcs.retain(|m| m.name() != mc.name());
            mcs.push(mc.clone());
        }
        let md = resources[i].metadata_mut();
        md.annotations = outcome.object_after.annotations.clone();
        md.finalizers = outcome.object_after.finalizers.clone();
        out.push(ResourceOutcome {
            kind: kind.to_string(),
            name: resources[i].name().to_string(),
            outcome,
        });
    }
    (out, mcs)
}
