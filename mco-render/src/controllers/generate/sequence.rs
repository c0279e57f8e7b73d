//! Generating for every custom resource of a cluster description, one sync after another,
//! each seeing the writes of the ones before (as upstream's controllers would over time).

use serde_json::Value;

use super::cluster_config::{self, ClusterConfigInput, ClusterConfigObjects, ObjectRef};
use super::{generate, FeatureGates, GenerateInput, Outcome};

/// The resources a cluster description holds.
#[derive(Debug, Clone, Default)]
pub struct ClusterInput {
    /// KubeletConfigs and ContainerRuntimeConfigs.
    pub resources: Vec<Value>,
    /// MachineConfigs: the role templates and any generated ones already present.
    pub machine_configs: Vec<Value>,
    /// MachineConfigPools.
    pub pools: Vec<Value>,
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
}

/// One resource's sync.
#[derive(Debug, Clone)]
pub struct ResourceOutcome {
    /// `KubeletConfig` or `ContainerRuntimeConfig`.
    pub kind: String,
    /// The resource's name.
    pub name: String,
    /// What the sync did.
    pub outcome: Outcome,
    /// The objects a failed sync blames, beyond the resource itself (for the
    /// cluster-config syncs: the mirror sets, the Image, the ClusterVersion).
    pub blamed: Vec<ObjectRef>,
}

fn name_of(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn kind_of(v: &Value) -> &str {
    v.get("kind").and_then(Value::as_str).unwrap_or("")
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
pub fn generate_cluster_state(input: &ClusterInput) -> (Vec<ResourceOutcome>, Vec<Value>) {
    let mut resources: Vec<Value> = input
        .resources
        .iter()
        .filter(|r| matches!(kind_of(r), "KubeletConfig" | "ContainerRuntimeConfig"))
        .cloned()
        .collect();
    resources.sort_by(|a, b| {
        let ts = |v: &Value| {
            v.pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        (ts(a), name_of(a).to_string()).cmp(&(ts(b), name_of(b).to_string()))
    });
    let mut mcs = input.machine_configs.clone();
    let mut out = Vec::new();
    run_cluster_config(input, &mut mcs, &mut out);
    for i in 0..resources.len() {
        let object = resources[i].clone();
        let kind = kind_of(&object).to_string();
        let others: Vec<Value> = resources
            .iter()
            .enumerate()
            .filter(|(j, r)| *j != i && kind_of(r) == kind)
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
        for action in &outcome.machine_config_actions {
            if let Some(name) = action.strip_prefix("delete ") {
                mcs.retain(|m| name_of(m) != name);
            }
        }
        for mc in &outcome.machine_configs {
            let name = name_of(mc).to_string();
            mcs.retain(|m| name_of(m) != name);
            mcs.push(mc.clone());
        }
        if let Some(md) = resources[i]
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
        {
            md.insert(
                "annotations".into(),
                serde_json::to_value(&outcome.object_after.annotations).unwrap_or_default(),
            );
            md.insert(
                "finalizers".into(),
                serde_json::to_value(&outcome.object_after.finalizers).unwrap_or_default(),
            );
        }
        out.push(ResourceOutcome {
            kind,
            name: name_of(&resources[i]).to_string(),
            outcome,
            blamed: Vec::new(),
        });
    }
    (out, mcs)
}

/// Runs the cluster-config syncs ([`cluster_config::sync_all`]) the description triggers,
/// applying their writes and deletions to `mcs` and reporting each as a resource outcome of
/// its object (`Node`, `FeatureGate` or `Image` `cluster`).
fn run_cluster_config(input: &ClusterInput, mcs: &mut Vec<Value>, out: &mut Vec<ResourceOutcome>) {
    let objects = &input.config_objects;
    if !objects.triggers_sync(input.node_config.is_some()) {
        return;
    }
    let cc = ClusterConfigInput {
        image: objects.image.clone(),
        cluster_version: objects.cluster_version.clone(),
        image_content_source_policies: objects.image_content_source_policies.clone(),
        image_digest_mirror_sets: objects.image_digest_mirror_sets.clone(),
        image_tag_mirror_sets: objects.image_tag_mirror_sets.clone(),
        feature_gates: input.feature_gates.clone(),
        api_server: input.api_server.clone(),
        node: input.node_config.clone(),
        pools: input.pools.clone(),
        existing_machine_configs: mcs.clone(),
        base_machine_configs: input.machine_configs.clone(),
        controller_version: input.controller_version.clone(),
        feature_gate_exists: objects.feature_gate_exists,
    };
    for (obj, o) in cluster_config::sync_all(&cc) {
        let after: std::collections::BTreeMap<&str, &Value> =
            o.cluster.iter().map(|m| (name_of(m), m)).collect();
        for action in &o.machine_config_actions {
            let (verb, name) = action.split_once(' ').unwrap_or(("", action));
            mcs.retain(|m| name_of(m) != name);
            if verb != "delete" {
                if let Some(m) = after.get(name) {
                    mcs.push((*m).clone());
                }
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
        out.push(ResourceOutcome {
            kind,
            name,
            outcome: Outcome {
                error,
                machine_configs: o.machine_configs,
                machine_config_actions: o.machine_config_actions,
                ..Outcome::default()
            },
            blamed: blamed.into_iter().skip(1).collect(),
        });
    }
}
