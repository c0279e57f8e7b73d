//! MachineConfigs generated from custom resources, as upstream's controllers write them.
//!
//! A `KubeletConfig` becomes `99-<pool>-generated-kubelet[-N]` holding the merged
//! `/etc/kubernetes/kubelet.conf` (plus the node-sizing and log-level files it asks for); a
//! `ContainerRuntimeConfig` becomes `99-<pool>-generated-containerruntime[-N]` holding
//! `storage.conf` and CRI-O drop-ins. [`generate`] runs one sync of the matching controller
//! against a described cluster and reports what it wrote: the MachineConfigs, the writes in
//! order, the resource's annotations, finalizers and status conditions afterwards, or the
//! error it returns.

pub mod cluster_config;
pub mod crio;
pub mod feature_gates;
pub mod kubelet;
pub(crate) mod kubelet_types;
pub mod names;
pub mod node_config;
pub mod registries;
pub mod sequence;
pub mod sigstore;
pub mod tls_profile;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_cluster_config;
#[cfg(test)]
mod tests_crio;
#[cfg(test)]
mod tests_release;

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::{json, Map, Value};

use super::Write;
use crate::api::value_at::strings_at;
use crate::api::{Condition, CustomResource, LabelSelector, MachineConfig, MachineConfigPool};
use crate::release::{Profile, Release};

/// The role label every generated MachineConfig carries.
const ROLE_LABEL: &str = "machineconfiguration.openshift.io/role";
/// The annotation naming the controller version that wrote a MachineConfig.
pub const GENERATED_BY_ANNOTATION: &str =
    "machineconfiguration.openshift.io/generated-by-controller-version";

/// The cluster's feature gates, resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeatureGates {
    /// Enabled gates.
    pub enabled: Vec<String>,
    /// Disabled gates.
    pub disabled: Vec<String>,
}

impl FeatureGates {
    /// Whether a gate is enabled.
    pub fn is_enabled(&self, gate: &str) -> bool {
        self.enabled.iter().any(|g| g == gate)
    }
}

/// Everything one sync reads.
#[derive(Debug, Clone, Default)]
pub struct GenerateInput {
    /// The KubeletConfig or ContainerRuntimeConfig to sync.
    pub object: CustomResource,
    /// Other resources of the same kind in the cluster.
    pub other_objects: Vec<CustomResource>,
    /// MachineConfigs already in the cluster.
    pub existing_machine_configs: Vec<MachineConfig>,
    /// The MachineConfigPools.
    pub pools: Vec<MachineConfigPool>,
    /// The role's template MachineConfigs the base files come from (`00-<role>`,
    /// `01-<role>-container-runtime`, `01-<role>-kubelet`).
    pub base_machine_configs: Vec<MachineConfig>,
    /// The cluster's feature gates.
    pub feature_gates: FeatureGates,
    /// The `config.openshift.io/v1` APIServer `cluster`, if any. Upstream renders the role's
    /// templates again with its TLS profile; here the base files are read from
    /// `base_machine_configs`, which were rendered with it, so it is not read.
    pub api_server: Option<Value>,
    /// The `config.openshift.io/v1` Node `cluster`, if any.
    pub node_config: Option<Value>,
    /// The controller version stamped on generated MachineConfigs.
    pub controller_version: String,
    /// The release whose controllers generate (the newest by default).
    pub release: Release,
}

/// A condition of the resource as the controllers write it: type, status and message (the
/// adapters stamp the transition time).
pub(crate) fn resource_condition(type_: &str, status: &str, message: String) -> Condition {
    Condition {
        type_: type_.to_string(),
        status: status.to_string(),
        message: Some(message),
        ..Condition::default()
    }
}

/// The resource as stored after the sync.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectAfter {
    /// Its annotations.
    pub annotations: BTreeMap<String, String>,
    /// Its finalizers.
    pub finalizers: Vec<String>,
    /// Its status conditions (type, status and message).
    pub conditions: Vec<Condition>,
}

impl ObjectAfter {
    /// As JSON: `{"annotations", "finalizers", "conditions": [{"type","status","message"}]}`.
    pub fn to_json(&self) -> Value {
        json!({
            "annotations": self.annotations,
            "finalizers": self.finalizers,
            "conditions": self.conditions.iter().map(|c| json!({
                "type": c.type_, "status": c.status, "message": c.message(),
            })).collect::<Vec<_>>(),
        })
    }
}

/// What a failed sync waited for: objects that may simply not have been created yet, so
/// the same sync succeeds once they are (admission warns about these instead of refusing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unmet {
    /// No MachineConfigPool matches the resource's `machineConfigPoolSelector`.
    Pool,
    /// The pool's base (template) MachineConfig the sync reads is absent.
    BaseConfig,
}

/// What one sync did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GenerateOutcome {
    /// The error the sync returned, if any.
    pub error: Option<String>,
    /// When the error is for want of objects not yet created, which.
    pub unmet: Option<Unmet>,
    /// The writes to MachineConfigs, in order (creates, updates and deletions).
    pub writes: Vec<Write>,
    /// The resource afterwards.
    pub object_after: ObjectAfter,
}

impl GenerateOutcome {
    /// The MachineConfigs the sync leaves written: for each name created or updated, its last
    /// version, in the order the names were first written.
    pub fn machine_configs(&self) -> Vec<&MachineConfig> {
        let mut out: Vec<&MachineConfig> = Vec::new();
        for mc in self.writes.iter().filter_map(Write::machine_config) {
            match out.iter_mut().find(|m| m.name() == mc.name()) {
                Some(m) => *m = mc,
                None => out.push(mc),
            }
        }
        out
    }

    /// The MachineConfigs created or updated, in order, as upstream's controllers write
    /// them ([`upstream_json`]).
    pub fn machine_configs_json(&self) -> Vec<Value> {
        self.machine_configs()
            .into_iter()
            .map(upstream_json)
            .collect()
    }

    /// The writes as upstream's controllers name them: `create <name>`, `update <name>`,
    /// `delete <name>`.
    pub fn actions(&self) -> Vec<String> {
        self.writes.iter().map(Write::describe).collect()
    }
}

/// A generated MachineConfig as upstream's controllers marshal it: `kind` first, every
/// spec field written, empty kernel arguments and extensions as `null` (Go's nil slices).
pub fn upstream_json(mc: &MachineConfig) -> Value {
    let list = |v: &Vec<String>| {
        if v.is_empty() {
            Value::Null
        } else {
            Value::from(v.clone())
        }
    };
    let s = &mc.spec;
    json!({
        "kind": mc.kind,
        "apiVersion": mc.api_version,
        "metadata": serde_json::to_value(&mc.metadata).unwrap_or(Value::Null),
        "spec": {
            "osImageURL": s.os_image_url,
            "baseOSExtensionsContainerImage": s.base_os_extensions_container_image,
            "config": s.config,
            "kernelArguments": list(&s.kernel_arguments),
            "extensions": list(&s.extensions),
            "fips": s.fips,
            "kernelType": s.kernel_type,
        },
    })
}

/// The MachineConfigs as the engine reads them: JSON, empty lists as upstream reads nil ones.
pub(crate) fn machine_config_values(mcs: &[MachineConfig]) -> Vec<Value> {
    mcs.iter().map(upstream_json).collect()
}

/// An error of a sync step; the text is upstream's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GenError {
    /// An error reported as is.
    #[error("{0}")]
    Plain(String),
    /// No pool matches the resource's selector (the text is upstream's).
    #[error("{0}")]
    NoPool(String),
}

impl GenError {
    /// What the error waits for, when objects not created yet may resolve it.
    pub(crate) fn unmet(&self) -> Option<Unmet> {
        matches!(self, GenError::NoPool(_)).then_some(Unmet::Pool)
    }
}

/// A resource of the synced kind, as the name rule reads it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Resource {
    pub name: String,
    pub uid: String,
    pub annotations: BTreeMap<String, String>,
    pub finalizers: Vec<String>,
    pub selector: Option<LabelSelector>,
    pub creation_timestamp: String,
    pub generation: i64,
    pub observed_generation: i64,
    pub conditions: Vec<Condition>,
    /// Whether `metadata.deletionTimestamp` is set (the resource is being deleted).
    pub deleting: bool,
}

impl Resource {
    fn from_json(v: &Value) -> Result<Resource, GenError> {
        let md = v.get("metadata").cloned().unwrap_or(Value::Null);
        let strmap = |v: Option<&Value>| -> BTreeMap<String, String> {
            v.and_then(Value::as_object)
                .map(|o| {
                    o.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                        .collect()
                })
                .unwrap_or_default()
        };
        let selector =
            match v.pointer("/spec/machineConfigPoolSelector") {
                None | Some(Value::Null) => None,
                Some(s) => Some(serde_json::from_value::<LabelSelector>(s.clone()).map_err(
                    |e| GenError::Plain(format!("invalid machineConfigPoolSelector: {e}")),
                )?),
            };
        let conditions = v
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|c| {
                        resource_condition(
                            &str_at(c, "type"),
                            &str_at(c, "status"),
                            str_at(c, "message"),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(Resource {
            name: str_at(&md, "name"),
            uid: str_at(&md, "uid"),
            annotations: strmap(md.get("annotations")),
            finalizers: strings_at(&md, "/finalizers"),
            selector,
            creation_timestamp: str_at(&md, "creationTimestamp"),
            generation: md.get("generation").and_then(Value::as_i64).unwrap_or(0),
            observed_generation: v
                .pointer("/status/observedGeneration")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            conditions,
            deleting: md
                .get("deletionTimestamp")
                .is_some_and(|t| !t.is_null() && t.as_str() != Some("")),
        })
    }
}

/// A MachineConfigPool, as the controllers read it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pool {
    pub name: String,
    pub uid: String,
    pub labels: BTreeMap<String, String>,
    pub node_selector: Option<LabelSelector>,
    /// Whether the pool has a rendered configuration (`spec.configuration.name`).
    pub configured: bool,
}

impl Pool {
    pub(crate) fn of(p: &MachineConfigPool) -> Pool {
        Pool {
            name: p.metadata.name.clone(),
            uid: p.metadata.uid.clone().unwrap_or_default(),
            labels: p.metadata.labels.clone(),
            node_selector: p.spec.node_selector.clone(),
            configured: !p.spec.configuration.name.is_empty(),
        }
    }
}

/// A write the engine made to the cluster's MachineConfigs, the MachineConfig as JSON.
#[derive(Debug, Clone)]
pub(crate) enum Action {
    /// Created (`false`) or updated (`true`).
    Write(bool, Value),
    /// Deleted, by name.
    Delete(String),
}

impl Action {
    /// The actions as typed writes; a written MachineConfig that does not decode into the
    /// model is reported in `error` (the first such) and left out.
    pub(crate) fn into_writes(actions: Vec<Action>, error: &mut Option<String>) -> Vec<Write> {
        let mut writes = Vec::with_capacity(actions.len());
        for action in actions {
            match action {
                Action::Delete(name) => writes.push(Write::DeleteMachineConfig(name)),
                Action::Write(update, mc) => match serde_json::from_value::<MachineConfig>(mc) {
                    Ok(mc) if update => writes.push(Write::UpdateMachineConfig(mc)),
                    Ok(mc) => writes.push(Write::CreateMachineConfig(mc)),
                    Err(e) => {
                        error.get_or_insert_with(|| format!("generated MachineConfig: {e}"));
                    }
                },
            }
        }
        writes
    }
}

/// The cluster's MachineConfigs and the writes made to them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cluster {
    pub machine_configs: BTreeMap<String, Value>,
    pub actions: Vec<Action>,
}

fn str_at(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

/// Whether a resource's pool selector picks a pool with these labels. An absent or empty
/// selector picks nothing.
pub(crate) fn matches_pool(
    selector: Option<&LabelSelector>,
    labels: &BTreeMap<String, String>,
) -> Result<bool, GenError> {
    let compiled = LabelSelector::compile_optional(selector)
        .map_err(|e| GenError::Plain(format!("invalid label selector: {e}")))?;
    Ok(!compiled.is_everything() && compiled.matches(labels))
}

/// The pools a resource selects, by name. The selector is checked before any pool is looked
/// at, so an invalid selector fails even when the cluster has no pool.
fn pools_for(
    selector: Option<&LabelSelector>,
    pools: &[Pool],
    none_error: &str,
) -> Result<Vec<Pool>, GenError> {
    let compiled = LabelSelector::compile_optional(selector)
        .map_err(|e| GenError::Plain(format!("invalid label selector: {e}")))?;
    let out: Vec<Pool> = pools
        .iter()
        .filter(|p| !compiled.is_everything() && compiled.matches(&p.labels))
        .cloned()
        .collect();
    if out.is_empty() {
        return Err(GenError::NoPool(none_error.to_string()));
    }
    Ok(out)
}

/// An Ignition file entry as upstream writes generated files.
pub(crate) fn ign_file(path: &str, contents: &[u8]) -> Value {
    json!({
        "overwrite": true,
        "path": path,
        "contents": {
            "compression": "",
            "source": format!(
                "data:text/plain;charset=utf-8;base64,{}",
                base64::engine::general_purpose::STANDARD.encode(contents)
            ),
        },
        "mode": 420,
    })
}

/// An Ignition config holding `files`, as upstream marshals it (no empty parts), in the
/// spec version the release generates ([`Profile::rendered_ignition`]).
pub(crate) fn ign_config(files: Vec<Value>, release: &Profile) -> Value {
    let mut cfg = json!({"ignition": {"version": release.rendered_ignition.as_str()}});
    if !files.is_empty() {
        cfg["storage"] = json!({ "files": files });
    }
    cfg
}

/// A new MachineConfig for `role` with `config`, as `MachineConfigFromRawIgnConfig` makes it.
pub(crate) fn new_machine_config(role: &str, name: &str, config: Value) -> Value {
    json!({
        "kind": "MachineConfig",
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "metadata": {
            "name": name,
            "labels": { ROLE_LABEL: role },
        },
        "spec": machine_config_spec(None, config),
    })
}

/// A MachineConfig spec with every field upstream writes, taking the values of `existing`.
fn machine_config_spec(existing: Option<&Value>, config: Value) -> Value {
    let get = |k: &str, default: Value| -> Value {
        existing.and_then(|s| s.get(k)).cloned().unwrap_or(default)
    };
    json!({
        "osImageURL": get("osImageURL", json!("")),
        "baseOSExtensionsContainerImage": get("baseOSExtensionsContainerImage", json!("")),
        "config": config,
        "kernelArguments": get("kernelArguments", Value::Null),
        "extensions": get("extensions", Value::Null),
        "fips": get("fips", json!(false)),
        "kernelType": get("kernelType", json!("")),
    })
}

/// The generated MachineConfig: the existing one (if any) or a new one, with `config`, the
/// controller-version annotation and a controller reference to the resource.
fn finish_machine_config(
    existing: Option<&Value>,
    role: &str,
    name: &str,
    config: Value,
    owner_kind: &str,
    owner: &Resource,
    version: &str,
) -> Value {
    let mut mc = match existing {
        Some(old) => {
            let mut mc = json!({
                "kind": "MachineConfig",
                "apiVersion": "machineconfiguration.openshift.io/v1",
            });
            let mut md: Map<String, Value> = old
                .get("metadata")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            md.remove("uid");
            if md.get("creationTimestamp").is_some_and(Value::is_null) {
                md.remove("creationTimestamp");
            }
            mc["metadata"] = Value::Object(md);
            mc["spec"] = machine_config_spec(old.get("spec"), config);
            mc
        }
        None => new_machine_config(role, name, config),
    };
    mc["metadata"]["annotations"] = json!({ GENERATED_BY_ANNOTATION: version });
    mc["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": owner_kind,
        "name": owner.name,
        "uid": owner.uid,
        "controller": true,
        "blockOwnerDeletion": true,
    }]);
    mc
}

/// Runs one sync of the controller for the input's kind.
pub fn generate(input: &GenerateInput) -> GenerateOutcome {
    match input.object {
        CustomResource::ContainerRuntime(_) => crio::sync(input),
        CustomResource::Kubelet(_) => kubelet::sync(input),
    }
}

/// State shared by both controllers' syncs.
pub(crate) struct Sync {
    pub cfg: Resource,
    pub all: Vec<Resource>,
    pub pools: Vec<Pool>,
    pub cluster: Cluster,
    pub after: ObjectAfter,
    /// Set before failing for want of objects not created yet.
    pub unmet: Option<Unmet>,
}

impl Sync {
    /// Reads the cluster. Fails only on malformed resources.
    pub(crate) fn new(input: &GenerateInput) -> Result<Sync, GenError> {
        let cfg = Resource::from_json(&input.object.to_json())?;
        let mut all = vec![cfg.clone()];
        for o in &input.other_objects {
            all.push(Resource::from_json(&o.to_json())?);
        }
        // The API server lists resources by name; the name rule reads them in that order.
        all.sort_by(|a, b| a.name.cmp(&b.name));
        let mut pools: Vec<Pool> = input.pools.iter().map(Pool::of).collect();
        pools.sort_by(|a, b| a.name.cmp(&b.name));
        let mut cluster = Cluster::default();
        for mc in machine_config_values(&input.existing_machine_configs) {
            let name = mc
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            cluster.machine_configs.insert(name, mc);
        }
        let after = ObjectAfter {
            annotations: cfg.annotations.clone(),
            finalizers: cfg.finalizers.clone(),
            conditions: cfg.conditions.clone(),
        };
        Ok(Sync {
            cfg,
            all,
            pools,
            cluster,
            after,
            unmet: None,
        })
    }

    /// Records the suffix annotation when the resource has none yet.
    /// The stored resource then carries it, so a later pool of the same sync reads it back
    /// through the name rule (while the resource as first read keeps its old annotations).
    pub(crate) fn record_suffix(&mut self, managed_key: &str) {
        if let Some(a) = names::annotations_after(managed_key, &self.cfg.annotations) {
            for r in self.all.iter_mut().filter(|r| r.name == self.cfg.name) {
                r.annotations = a.clone();
            }
            self.after.annotations = a;
        }
    }

    /// Handles a resource being deleted: deletes the MachineConfig its first finalizer names
    /// (`by_uid`: also one whose UID equals it) and drops that finalizer.
    pub(crate) fn cascade_delete(&mut self, by_uid: bool) {
        let Some(first) = self.after.finalizers.first().cloned() else {
            return;
        };
        let target = self
            .cluster
            .machine_configs
            .iter()
            .find(|(name, mc)| {
                **name == first
                    || (by_uid
                        && mc.pointer("/metadata/uid").and_then(Value::as_str)
                            == Some(first.as_str()))
            })
            .map(|(name, _)| name.clone());
        if let Some(name) = target {
            self.cluster.machine_configs.remove(&name);
            self.cluster.actions.push(Action::Delete(name));
        }
        self.after.finalizers.remove(0);
    }

    /// Creates or updates the MachineConfig.
    pub(crate) fn write_machine_config(
        &mut self,
        pool: &Pool,
        name: &str,
        config: Value,
        owner_kind: &str,
        version: &str,
    ) {
        let existing = self.cluster.machine_configs.get(name).cloned();
        let mc = finish_machine_config(
            existing.as_ref(),
            &pool.name,
            name,
            config,
            owner_kind,
            &self.cfg,
            version,
        );
        self.cluster
            .actions
            .push(Action::Write(existing.is_some(), mc.clone()));
        self.cluster.machine_configs.insert(name.to_string(), mc);
    }

    /// Deletes generated MachineConfigs of another controller version whose names contain
    /// `marker` and start with `prefix`.
    pub(crate) fn clean_up_duplicates(&mut self, marker: &str, prefix: &str, version: &str) {
        let stale: Vec<String> = self
            .cluster
            .machine_configs
            .iter()
            .filter(|(name, mc)| {
                name.contains(marker)
                    && name.starts_with(prefix)
                    && mc
                        .pointer("/metadata/annotations")
                        .and_then(|a| a.get(GENERATED_BY_ANNOTATION))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        != version
            })
            .map(|(n, _)| n.clone())
            .collect();
        for name in stale {
            self.cluster.machine_configs.remove(&name);
            self.cluster.actions.push(Action::Delete(name));
        }
    }

    /// The outcome with `error`: the actions as typed writes.
    pub(crate) fn finish(self, mut error: Option<String>) -> GenerateOutcome {
        let writes = Action::into_writes(self.cluster.actions, &mut error);
        let unmet = error.as_ref().and(self.unmet);
        GenerateOutcome {
            error,
            unmet,
            writes,
            object_after: self.after,
        }
    }
}

/// The file at `path` in the first of `configs` (tried in order) that has it, decoded.
pub(crate) fn find_file(configs: &[&Value], path: &str) -> Option<Vec<u8>> {
    for mc in configs {
        let files = mc
            .pointer("/spec/config/storage/files")
            .and_then(Value::as_array);
        for f in files.into_iter().flatten() {
            if f.get("path").and_then(Value::as_str) == Some(path) {
                let source = f.pointer("/contents/source").and_then(Value::as_str)?;
                let compression = f.pointer("/contents/compression").and_then(Value::as_str);
                return mco_ignition::dataurl::decode_contents(source, compression).ok();
            }
        }
    }
    None
}

/// The template MachineConfig with this name.
pub(crate) fn base_config<'a>(base: &'a [Value], name: &str) -> Option<&'a Value> {
    base.iter()
        .find(|mc| mc.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
}

/// The template role of a pool: `master` for the master pool, otherwise `worker`.
pub(crate) fn template_role(pool: &str) -> &'static str {
    if pool == "master" {
        "master"
    } else {
        "worker"
    }
}
