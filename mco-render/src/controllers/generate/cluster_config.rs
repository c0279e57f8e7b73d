//! MachineConfigs generated from the cluster-wide config objects, as upstream's controllers
//! write them in one pass:
//!
//! - [`super::registries`]: `99-<pool>-generated-registries` from the Image `cluster`, the
//!   mirror sets and the ClusterVersion's release image (`syncImageConfig`);
//! - [`super::feature_gates`]: `98-<pool>-generated-kubelet` from the FeatureGate
//!   (`syncFeatureHandler`);
//! - [`super::node_config`]: `97-<pool>-generated-kubelet` from the Node `cluster`, then the 98
//!   MachineConfigs again (`syncNodeConfigHandler`).
//!
//! Each sync reads a [`ClusterConfigInput`] and reports a [`ConfigOutcome`].

use super::Action;
use crate::api::MachineConfigPool;
use crate::controllers::Write;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::{machine_config_spec, new_machine_config, FeatureGates, Pool, GENERATED_BY_ANNOTATION};

/// Everything the cluster-config syncs read.
#[derive(Debug, Clone, Default)]
pub struct ClusterConfigInput {
    /// The `config.openshift.io/v1` Image `cluster`, if any.
    pub image: Option<Value>,
    /// The ClusterVersion `version`, if any.
    pub cluster_version: Option<Value>,
    /// `operator.openshift.io/v1alpha1` ImageContentSourcePolicies.
    pub image_content_source_policies: Vec<Value>,
    /// `config.openshift.io/v1` ImageDigestMirrorSets.
    pub image_digest_mirror_sets: Vec<Value>,
    /// `config.openshift.io/v1` ImageTagMirrorSets.
    pub image_tag_mirror_sets: Vec<Value>,
    /// `config.openshift.io` ClusterImagePolicies.
    pub cluster_image_policies: Vec<Value>,
    /// `config.openshift.io` ImagePolicies (every namespace).
    pub image_policies: Vec<Value>,
    /// The gates of the FeatureGate `cluster`'s status.
    pub feature_gates: FeatureGates,
    /// The APIServer `cluster`, if any (its TLS profile is already in the base files).
    pub api_server: Option<Value>,
    /// The Node `cluster`, if any.
    pub node: Option<Value>,
    /// Every MachineConfigPool.
    pub pools: Vec<MachineConfigPool>,
    /// MachineConfigs already in the cluster.
    pub existing_machine_configs: Vec<Value>,
    /// The role templates' MachineConfigs (`01-<role>-container-runtime`, `01-<role>-kubelet`).
    pub base_machine_configs: Vec<Value>,
    /// The controller version stamped on generated MachineConfigs.
    pub controller_version: String,
    /// Whether the FeatureGate `cluster` exists (the node sync ends with the feature-gate
    /// sync only then).
    pub feature_gate_exists: bool,
    /// The release whose controllers generate (the newest by default).
    pub release: crate::release::Release,
}

/// The cluster-wide config objects of a cluster description, beyond what the custom-resource
/// syncs read.
#[derive(Debug, Clone, Default)]
pub struct ClusterConfigObjects {
    /// The Image `cluster`.
    pub image: Option<Value>,
    /// The ClusterVersion `version`.
    pub cluster_version: Option<Value>,
    /// ImageContentSourcePolicies.
    pub image_content_source_policies: Vec<Value>,
    /// ImageDigestMirrorSets.
    pub image_digest_mirror_sets: Vec<Value>,
    /// ImageTagMirrorSets.
    pub image_tag_mirror_sets: Vec<Value>,
    /// ClusterImagePolicies.
    pub cluster_image_policies: Vec<Value>,
    /// ImagePolicies.
    pub image_policies: Vec<Value>,
    /// Whether the FeatureGate `cluster` exists.
    pub feature_gate_exists: bool,
}

impl ClusterConfigObjects {
    /// Whether the description holds any cluster-config object (or a Node `cluster`).
    pub fn triggers_sync(&self, node: bool) -> bool {
        node || self.feature_gate_exists
            || self.image.is_some()
            || self.cluster_version.is_some()
            || !self.image_content_source_policies.is_empty()
            || !self.image_digest_mirror_sets.is_empty()
            || !self.image_tag_mirror_sets.is_empty()
            || !self.cluster_image_policies.is_empty()
            || !self.image_policies.is_empty()
    }
}

/// The syncs a cluster's objects trigger, as their controllers' handlers would run on a
/// cluster, in order, each seeing the MachineConfigs the one before left: the feature-gate
/// sync when the FeatureGate exists, the node sync when the Node `cluster` exists (it ends with
/// the feature-gate sync again), then the registries sync when the Image `cluster` exists.
/// Each outcome comes with the object whose sync it is.
pub fn sync_all(input: &ClusterConfigInput) -> Vec<(ObjectRef, ConfigOutcome)> {
    type SyncFn = fn(&ClusterConfigInput) -> ConfigOutcome;
    let mut steps: Vec<(ObjectRef, SyncFn)> = Vec::new();
    if input.feature_gate_exists {
        steps.push((
            ObjectRef::new("FeatureGate", "cluster"),
            super::feature_gates::sync,
        ));
    }
    if input.node.is_some() {
        steps.push((ObjectRef::new("Node", "cluster"), super::node_config::sync));
    }
    if input.image.is_some() {
        steps.push((ObjectRef::new("Image", "cluster"), super::registries::sync));
    }
    let mut cur = input.clone();
    let mut out = Vec::new();
    for (obj, f) in steps {
        let o = f(&cur);
        cur.existing_machine_configs = o.cluster.clone();
        out.push((obj, o));
    }
    out
}

/// An object an error is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectRef {
    /// Its kind, such as `Image` or `ImageDigestMirrorSet`.
    pub kind: String,
    /// Its name.
    pub name: String,
}

impl ObjectRef {
    /// A reference to `kind` `name`.
    pub fn new(kind: &str, name: &str) -> ObjectRef {
        ObjectRef {
            kind: kind.to_string(),
            name: name.to_string(),
        }
    }
}

/// A failed sync: upstream's error text and the objects at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The error the sync function returns, exactly.
    pub message: String,
    /// The objects whose content caused it (for messages naming them).
    pub objects: Vec<ObjectRef>,
}

/// What one sync did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigOutcome {
    /// The error, if the sync failed.
    pub error: Option<ConfigError>,
    /// The MachineConfigs the sync wrote (each in its last version) and the managed ones it
    /// found up to date, sorted by name.
    pub machine_configs: Vec<Value>,
    /// The writes, in order.
    pub writes: Vec<Write>,
    /// The managed MachineConfigs found up to date and not written.
    pub unchanged: Vec<String>,
    /// Every MachineConfig in the cluster afterwards, sorted by name.
    pub cluster: Vec<Value>,
}

impl ConfigOutcome {
    /// The writes as upstream's controllers name them: `create <name>`, `update <name>`,
    /// `delete <name>`.
    pub fn actions(&self) -> Vec<String> {
        self.writes.iter().map(Write::describe).collect()
    }
}

/// The cluster's MachineConfigs as a sync sees and changes them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Store {
    pub mcs: BTreeMap<String, Value>,
    pub actions: Vec<Action>,
    pub written: BTreeSet<String>,
    pub unchanged: BTreeSet<String>,
}

impl Store {
    pub(crate) fn new(existing: &[Value]) -> Store {
        let mut mcs = BTreeMap::new();
        for mc in existing {
            let name = name_of(mc).to_string();
            mcs.insert(name, mc.clone());
        }
        Store {
            mcs,
            ..Store::default()
        }
    }

    /// Creates or updates a MachineConfig.
    pub(crate) fn put(&mut self, mc: Value) {
        let name = name_of(&mc).to_string();
        let update = self.mcs.contains_key(&name);
        self.actions.push(Action::Write(update, mc.clone()));
        self.mcs.insert(name.clone(), mc);
        self.unchanged.remove(&name);
        self.written.insert(name);
    }

    /// Deletes a MachineConfig.
    pub(crate) fn delete(&mut self, name: &str) {
        if self.mcs.remove(name).is_some() {
            self.actions.push(Action::Delete(name.to_string()));
        }
        self.written.remove(name);
        self.unchanged.remove(name);
    }

    /// Upstream's `ctrlcommon.GetManagedKey`: `<prefix>-<pool>-generated-<suffix>`, after
    /// moving a MachineConfig with the deprecated name to it (create, then delete) when only
    /// the deprecated one exists.
    pub(crate) fn managed_key(
        &mut self,
        pool: &Pool,
        prefix: &str,
        suffix: &str,
        deprecated: &str,
    ) -> String {
        let key = format!("{prefix}-{}-generated-{suffix}", pool.name);
        if self.mcs.contains_key(&key) {
            return key;
        }
        if let Some(old) = self.mcs.get(deprecated).cloned() {
            let config = old.pointer("/spec/config").cloned().unwrap_or(Value::Null);
            self.put(new_machine_config(&pool.name, &key, config));
            self.delete(deprecated);
        }
        key
    }

    /// Upstream's `cleanUpDuplicatedMC(prefix)` of the kubelet controller: deletes every
    /// MachineConfig whose name starts with `prefix` and contains `generated-kubelet` and
    /// whose version annotation is not `version`.
    pub(crate) fn clean_up_kubelet(&mut self, prefix: &str, version: &str) {
        let stale: Vec<String> = self
            .mcs
            .iter()
            .filter(|(name, mc)| {
                name.contains("generated-kubelet")
                    && name.starts_with(prefix)
                    && version_of(mc) != version
            })
            .map(|(n, _)| n.clone())
            .collect();
        for name in stale {
            self.delete(&name);
        }
    }

    /// The outcome with `error`.
    pub(crate) fn finish(self, mut error: Option<ConfigError>) -> ConfigOutcome {
        let mut decode_error = None;
        let writes = Action::into_writes(self.actions, &mut decode_error);
        if let (None, Some(message)) = (&error, decode_error) {
            error = Some(ConfigError {
                message,
                objects: Vec::new(),
            });
        }
        let names: BTreeSet<&String> = self.written.iter().chain(&self.unchanged).collect();
        ConfigOutcome {
            error,
            machine_configs: names
                .into_iter()
                .filter_map(|n| self.mcs.get(n).map(go_decoded))
                .collect(),
            writes,
            unchanged: self.unchanged.into_iter().collect(),
            cluster: self.mcs.into_values().collect(),
        }
    }
}

/// A stored MachineConfig as Go decodes it: every spec field present.
fn go_decoded(mc: &Value) -> Value {
    let mut mc = mc.clone();
    let config = mc.pointer("/spec/config").cloned().unwrap_or(Value::Null);
    let spec = machine_config_spec(mc.get("spec"), config);
    mc["spec"] = spec;
    mc
}

pub(crate) fn name_of(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The controller version annotation of a MachineConfig.
pub(crate) fn version_of(mc: &Value) -> &str {
    mc.pointer("/metadata/annotations")
        .and_then(|a| a.get(GENERATED_BY_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The pools, sorted by name (as the harness's listers return them).
pub(crate) fn sorted_pools(pools: &[MachineConfigPool]) -> Vec<Pool> {
    let mut out: Vec<Pool> = pools.iter().map(Pool::of).collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The MachineConfig `name` with `config`: the stored one updated (its labels, owner
/// references and the rest of its spec kept) or a new one for `pool`; the annotations become
/// only the controller-version annotation.
pub(crate) fn with_config(
    existing: Option<&Value>,
    pool: &str,
    name: &str,
    config: Value,
    version: &str,
) -> Value {
    let mut mc = match existing {
        Some(old) => {
            let mut mc = old.clone();
            if mc.get("apiVersion").is_none() {
                mc["apiVersion"] = json!("machineconfiguration.openshift.io/v1");
            }
            if mc.get("kind").is_none() {
                mc["kind"] = json!("MachineConfig");
            }
            mc["spec"] = machine_config_spec(old.get("spec"), config);
            mc
        }
        None => new_machine_config(pool, name, config),
    };
    if !mc.get("metadata").is_some_and(Value::is_object) {
        mc["metadata"] = json!({ "name": name });
    }
    mc["metadata"]["annotations"] = json!({ GENERATED_BY_ANNOTATION: version });
    mc
}
