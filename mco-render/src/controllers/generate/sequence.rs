//! Generating for every custom resource of a cluster description, one sync after another,
//! each seeing the writes of the ones before (as upstream's controllers would over time).

use serde_json::Value;

use super::cluster_config::{self, ClusterConfigInput, ClusterConfigObjects, ObjectRef};
use super::{generate, upstream_json, FeatureGates, GenerateInput, GenerateOutcome};
use crate::api::{CustomResource, MachineConfig, MachineConfigPool};
use crate::controllers::Write;
use crate::release::Release;

/// The pools as the syncs see them once the render controller has rendered each (a release
/// until 4.19 fails a KubeletConfig's sync on a pool not rendered yet, and syncs it again
/// later): a pool without a rendered configuration gets a stand-in name.
fn rendered_pools(pools: &[MachineConfigPool]) -> Vec<MachineConfigPool> {
    pools
        .iter()
        .cloned()
        .map(|mut p| {
            if p.spec.configuration.name.is_empty() {
                p.spec.configuration.name = format!("rendered-{}", p.metadata.name);
            }
            p
        })
        .collect()
}

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
    /// The Image, ClusterVersion, mirror sets and FeatureGate presence that drive the
    /// registries, feature-gate and node-config syncs.
    pub config_objects: ClusterConfigObjects,
    /// The release whose controllers generate (the newest by default).
    pub release: Release,
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
    /// The objects a failed sync blames, beyond the resource itself (for the
    /// cluster-config syncs: the mirror sets, the Image, the ClusterVersion).
    pub blamed: Vec<ObjectRef>,
    /// The managed MachineConfigs a cluster-config sync found up to date and left as they
    /// are (they are still what the sync generates).
    pub up_to_date: Vec<MachineConfig>,
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
    run_cluster_config(input, &mut mcs, &mut out);
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
            pools: rendered_pools(&input.pools),
            base_machine_configs: input.machine_configs.clone(),
            feature_gates: input.feature_gates.clone(),
            api_server: input.api_server.clone(),
            node_config: input.node_config.clone(),
            controller_version: input.controller_version.clone(),
            release: input.release,
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
            blamed: Vec::new(),
            up_to_date: Vec::new(),
        });
    }
    (out, mcs)
}

/// Runs the cluster-config syncs ([`cluster_config::sync_all`]) the description triggers,
/// applying their writes and deletions to `mcs` and reporting each as a resource outcome of
/// its object (`Node`, `FeatureGate` or `Image` `cluster`).
fn run_cluster_config(
    input: &ClusterInput,
    mcs: &mut Vec<MachineConfig>,
    out: &mut Vec<ResourceOutcome>,
) {
    let objects = &input.config_objects;
    if !objects.triggers_sync(input.node_config.is_some()) {
        return;
    }
    // The cluster-config engine reads objects as upstream's controllers marshal them.
    let cc = ClusterConfigInput {
        image: objects.image.clone(),
        cluster_version: objects.cluster_version.clone(),
        image_content_source_policies: objects.image_content_source_policies.clone(),
        image_digest_mirror_sets: objects.image_digest_mirror_sets.clone(),
        image_tag_mirror_sets: objects.image_tag_mirror_sets.clone(),
        cluster_image_policies: objects.cluster_image_policies.clone(),
        image_policies: objects.image_policies.clone(),
        feature_gates: input.feature_gates.clone(),
        api_server: input.api_server.clone(),
        node: input.node_config.clone(),
        pools: input.pools.clone(),
        existing_machine_configs: mcs.iter().map(upstream_json).collect(),
        base_machine_configs: input.machine_configs.iter().map(upstream_json).collect(),
        controller_version: input.controller_version.clone(),
        feature_gate_exists: objects.feature_gate_exists,
        release: input.release,
    };
    for (obj, o) in cluster_config::sync_all(&cc) {
        for write in &o.writes {
            match write {
                Write::DeleteMachineConfig(name) => mcs.retain(|m| m.name() != name),
                Write::CreateMachineConfig(mc) | Write::UpdateMachineConfig(mc) => {
                    mcs.retain(|m| m.name() != mc.name());
                    mcs.push(mc.clone());
                }
                _ => {}
            }
        }
        let (error, blamed) = match o.error {
            Some(e) => (Some(e.message), e.objects),
            None => (None, Vec::new()),
        };
        let (kind, name) = match blamed.first() {
            Some(b) => (b.kind.clone(), b.name.clone()),
            None => (obj.kind.clone(), obj.name.clone()),
        };
        let up_to_date = o
            .unchanged
            .iter()
            .filter_map(|n| mcs.iter().find(|m| m.name() == n).cloned())
            .collect();
        out.push(ResourceOutcome {
            kind,
            name,
            up_to_date,
            outcome: GenerateOutcome {
                error,
                writes: o.writes,
                ..GenerateOutcome::default()
            },
            blamed: blamed.into_iter().skip(1).collect(),
        });
    }
}
