//! The KubeletConfig and ContainerRuntimeConfig controllers in the cluster: each pass reads
//! the resources, pools, MachineConfigs and the `config.openshift.io` objects named
//! `cluster` from the watch caches ([`Caches`]), runs `mco_render::controllers::generate` for every resource (oldest first, each seeing the
//! writes of the ones before), and carries out what it decided: the generated MachineConfigs
//! (`99-<pool>-generated-kubelet[-N]`, `99-<pool>-generated-containerruntime[-N]`), the
//! resource's annotations and finalizers, and its status. A resource being deleted has the
//! MachineConfigs its finalizers name deleted, then its finalizers removed.
//!
//! Every write is skipped when the stored object already matches; a write that conflicts is
//! left to the next pass.

use super::generators::{Caches, ConfigKind};
use super::pool_sync::now_rfc3339;
use super::writes::{
    config_resource, ensure, is_absent, is_conflict, map_patch, WriteError, Written,
};
use crate::objects::{self, Model, Stored};
use kube::api::{ApiResource, Patch, PatchParams};
use kube::{Api, Client};
use mco_render::api::{
    Condition, ContainerRuntimeConfig, CustomResource, KubeletConfig, MachineConfig,
    MachineConfigPool,
};
use mco_render::controllers::generate::sequence::feature_gates_from_status;
use mco_render::controllers::generate::{generate, GenerateInput, ObjectAfter};
use mco_render::controllers::Write;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The name of the cluster-wide `config.openshift.io` objects the controllers read.
pub const CLUSTER: &str = "cluster";

/// The controllers' handle on the cluster.
pub struct Resources {
    kubelet: Api<Stored<KubeletConfig>>,
    runtime: Api<Stored<ContainerRuntimeConfig>>,
    mcs: Api<Stored<MachineConfig>>,
    controller_version: String,
    release: mco_render::release::Release,
}

/// What a pass left undone.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PassResult {
    /// Whether a write conflicted and the next pass should come soon.
    pub retry: bool,
}

/// The `config.openshift.io/v1` APIs the controllers read: FeatureGate, APIServer and Node.
pub fn config_resources() -> [ApiResource; 3] {
    [
        config_resource("FeatureGate", "featuregates"),
        config_resource("APIServer", "apiservers"),
        config_resource("Node", "nodes"),
    ]
}

/// The resource's annotations, finalizers and conditions (type, status, message) as stored.
fn stored_after(r: &CustomResource) -> ObjectAfter {
    let md = r.metadata();
    let conditions = r
        .status()
        .and_then(|s| s.conditions.as_ref())
        .map(|cs| {
            cs.iter()
                .map(|c| Condition {
                    type_: c.type_.clone(),
                    status: c.status.clone(),
                    message: Some(c.message().to_string()),
                    ..Condition::default()
                })
                .collect()
        })
        .unwrap_or_default();
    ObjectAfter {
        annotations: md.annotations.clone(),
        finalizers: md.finalizers.clone(),
        conditions,
    }
}

/// The status conditions to store for `after`: a condition already stored with the same
/// type, status and message keeps its time and reason; a new one is stamped `now`.
fn status_conditions(stored: &[Condition], after: &[Condition], now: &str) -> Vec<Condition> {
    let mut old: Vec<Option<&Condition>> = stored.iter().map(Some).collect();
    after
        .iter()
        .map(|c| {
            let found = old.iter_mut().find(|o| {
                o.is_some_and(|o| {
                    o.type_ == c.type_ && o.status == c.status && o.message() == c.message()
                })
            });
            match found.and_then(Option::take) {
                Some(o) => o.clone(),
                None => Condition {
                    type_: c.type_.clone(),
                    status: c.status.clone(),
                    last_transition_time: Some(now.to_string()),
                    reason: None,
                    message: Some(c.message().to_string()),
                },
            }
        })
        .collect()
}

impl Resources {
    /// A handle using `client`; generated MachineConfigs are stamped `controller_version`.
    pub fn new(client: Client, controller_version: &str) -> Self {
        Resources {
            kubelet: objects::api::<KubeletConfig>(&client),
            runtime: objects::api::<ContainerRuntimeConfig>(&client),
            mcs: objects::api::<MachineConfig>(&client),
            controller_version: controller_version.to_string(),
            release: mco_render::release::Release::NEWEST,
        }
    }

    /// The handle generating as `release`'s controllers do.
    pub fn with_release(mut self, release: mco_render::release::Release) -> Self {
        self.release = release;
        self
    }

    /// A merge patch of the resource (`status`: of its status subresource); the resource as
    /// stored afterwards.
    async fn patch(
        &self,
        r: &CustomResource,
        status: bool,
        patch: &Value,
    ) -> Result<CustomResource, kube::Error> {
        let (name, pp, patch) = (r.name(), PatchParams::default(), Patch::Merge(patch));
        Ok(match r {
            CustomResource::Kubelet(_) => {
                CustomResource::Kubelet(KubeletConfig::from_object(if status {
                    self.kubelet.patch_status(name, &pp, &patch).await?
                } else {
                    self.kubelet.patch(name, &pp, &patch).await?
                }))
            }
            CustomResource::ContainerRuntime(_) => {
                CustomResource::ContainerRuntime(ContainerRuntimeConfig::from_object(if status {
                    self.runtime.patch_status(name, &pp, &patch).await?
                } else {
                    self.runtime.patch(name, &pp, &patch).await?
                }))
            }
        })
    }

    /// One pass over every KubeletConfig and ContainerRuntimeConfig, read from `caches`;
    /// `mcs` holds the MachineConfigs by name as this pass's earlier writes left them, and
    /// takes this pass's writes.
    pub async fn sync_all(
        &self,
        caches: &Caches,
        mcs: &mut BTreeMap<String, MachineConfig>,
    ) -> Result<PassResult, WriteError> {
        let mut resources: Vec<CustomResource> = caches
            .kubelet_configs()
            .into_iter()
            .map(CustomResource::Kubelet)
            .collect();
        resources.extend(
            caches
                .runtime_configs()
                .into_iter()
                .map(CustomResource::ContainerRuntime),
        );
        if resources.is_empty() {
            return Ok(PassResult::default());
        }
        let initial: Vec<MachineConfig> = mcs.values().cloned().collect();
        let pools: Vec<MachineConfigPool> = caches.pools();
        let feature_gates = caches
            .config_object(ConfigKind::FeatureGate, CLUSTER)
            .map(|fg| feature_gates_from_status(&fg))
            .unwrap_or_default();
        let api_server = caches.config_object(ConfigKind::ApiServer, CLUSTER);
        let node_config = caches.config_object(ConfigKind::Node, CLUSTER);

        resources.sort_by(|a, b| {
            let key = |r: &CustomResource| {
                (
                    r.metadata().creation_timestamp.clone().unwrap_or_default(),
                    r.name().to_string(),
                )
            };
            key(a).cmp(&key(b))
        });
        let mut result = PassResult::default();
        for i in 0..resources.len() {
            let object = resources[i].clone();
            let kind = object.kind();
            if object.metadata().is_deleting() {
                if !self.finalize(&object, mcs).await? {
                    result.retry = true;
                }
                continue;
            }
            let input = GenerateInput {
                object: object.clone(),
                other_objects: resources
                    .iter()
                    .enumerate()
                    .filter(|(j, r)| *j != i && r.kind() == kind)
                    .map(|(_, r)| r.clone())
                    .collect(),
                existing_machine_configs: mcs.values().cloned().collect(),
                pools: pools.clone(),
                base_machine_configs: initial.clone(),
                feature_gates: feature_gates.clone(),
                api_server: api_server.clone(),
                node_config: node_config.clone(),
                controller_version: self.controller_version.clone(),
                release: self.release,
            };
            let outcome = generate(&input);
            let name = object.name().to_string();
            if let Some(e) = &outcome.error {
                tracing::warn!(kind, name = name.as_str(), "{e}");
            }
            if outcome.error.is_some() && outcome.object_after == ObjectAfter::default() {
                // The resource could not even be read: leave it as it is.
                continue;
            }
            // The MachineConfigs: the last version of each written one, then deletions.
            let wanted: BTreeMap<&str, &MachineConfig> = outcome
                .machine_configs()
                .into_iter()
                .map(|mc| (mc.name(), mc))
                .collect();
            let mut ok = true;
            for (mc_name, want) in &wanted {
                match ensure(&self.mcs, mcs.get(*mc_name), want).await? {
                    Written::Conflict => ok = false,
                    Written::Unchanged => {}
                    w => tracing::info!(
                        kind,
                        name = name.as_str(),
                        "{} {mc_name}",
                        if w == Written::Created {
                            "created"
                        } else {
                            "updated"
                        }
                    ),
                }
                mcs.insert(mc_name.to_string(), (*want).clone());
            }
            for write in &outcome.writes {
                let Write::DeleteMachineConfig(gone) = write else {
                    continue;
                };
                if wanted.contains_key(gone.as_str()) {
                    continue;
                }
                self.delete_mc(gone).await?;
                mcs.remove(gone);
            }
            if !ok {
                result.retry = true;
                continue;
            }
            match self.write_object(&object, &outcome.object_after).await? {
                Some(updated) => resources[i] = updated,
                None => result.retry = true,
            }
        }
        Ok(result)
    }

    async fn delete_mc(&self, name: &str) -> Result<(), WriteError> {
        super::writes::delete_machine_config(&self.mcs, name).await
    }

    /// A resource being deleted: deletes the MachineConfigs its finalizers name, then clears
    /// its finalizers. Returns false on a conflict.
    async fn finalize(
        &self,
        object: &CustomResource,
        mcs: &mut BTreeMap<String, MachineConfig>,
    ) -> Result<bool, WriteError> {
        let md = object.metadata();
        if md.finalizers.is_empty() {
            return Ok(true);
        }
        for f in &md.finalizers {
            // A finalizer names a MachineConfig, or (in older releases) its UID.
            let target = mcs
                .iter()
                .find(|(n, m)| *n == f || m.metadata.uid.as_deref() == Some(f.as_str()))
                .map(|(n, _)| n.clone());
            if let Some(n) = target {
                self.delete_mc(&n).await?;
                mcs.remove(&n);
            }
        }
        let patch = json!({"metadata": {
            "resourceVersion": md.resource_version,
            "finalizers": Value::Null,
        }});
        match self.patch(object, false, &patch).await {
            Ok(_) => {
                tracing::info!(name = object.name(), "removed finalizers");
                Ok(true)
            }
            Err(e) if is_absent(&e) => Ok(true),
            Err(e) if is_conflict(&e) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Stores the resource's annotations, finalizers and status as `after` says. Returns the
    /// resource as stored afterwards, or `None` on a conflict.
    async fn write_object(
        &self,
        object: &CustomResource,
        after: &ObjectAfter,
    ) -> Result<Option<CustomResource>, WriteError> {
        let stored = stored_after(object);
        let mut current = object.clone();
        if stored.annotations != after.annotations || stored.finalizers != after.finalizers {
            let mut md = serde_json::Map::new();
            md.insert(
                "resourceVersion".into(),
                json!(current.metadata().resource_version),
            );
            if stored.annotations != after.annotations {
                md.insert(
                    "annotations".into(),
                    map_patch(&stored.annotations, &after.annotations),
                );
            }
            if stored.finalizers != after.finalizers {
                md.insert("finalizers".into(), json!(after.finalizers));
            }
            let patch = json!({ "metadata": md });
            match self.patch(&current, false, &patch).await {
                Ok(o) => current = o,
                Err(e) if is_conflict(&e) || is_absent(&e) => return Ok(None),
                Err(e) => return Err(e.into()),
            }
        }
        let generation = current.metadata().generation.unwrap_or(0);
        let stored_conditions: Vec<Condition> = current
            .status()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        let conditions = status_conditions(&stored_conditions, &after.conditions, &now_rfc3339());
        let observed = current
            .status()
            .and_then(|s| s.observed_generation)
            .unwrap_or(0);
        if observed != generation || stored_conditions != conditions {
            let patch = json!({
                "metadata": {"resourceVersion": current.metadata().resource_version},
                "status": {"observedGeneration": generation, "conditions": conditions},
            });
            match self.patch(&current, true, &patch).await {
                Ok(o) => current = o,
                Err(e) if is_conflict(&e) || is_absent(&e) => return Ok(None),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Some(current))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(v: Value) -> CustomResource {
        CustomResource::from_json(v).unwrap().unwrap()
    }

    #[test]
    fn conditions_keep_their_time_when_unchanged() {
        let stored: Vec<Condition> = serde_json::from_value(json!([
            {"type": "Success", "status": "True", "message": "Success",
             "lastTransitionTime": "2020-01-01T00:00:00Z"}
        ]))
        .unwrap();
        let after = vec![
            Condition {
                type_: "Success".into(),
                status: "True".into(),
                message: Some("Success".into()),
                ..Condition::default()
            },
            Condition {
                type_: "Failure".into(),
                status: "True".into(),
                message: Some("Error: x".into()),
                ..Condition::default()
            },
        ];
        let got = status_conditions(&stored, &after, "2024-01-01T00:00:00Z");
        assert_eq!(got[0].last_transition_time(), "2020-01-01T00:00:00Z");
        assert_eq!(got[1].last_transition_time(), "2024-01-01T00:00:00Z");
        assert_eq!(got[1].type_, "Failure");
    }

    #[test]
    fn stored_after_reads_metadata_and_status() {
        let v = typed(json!({"kind": "KubeletConfig",
            "metadata": {"annotations": {"a": "b"}, "finalizers": ["f"]},
            "status": {"conditions": [{"type": "Success", "status": "True", "message": "m"}]}}));
        let a = stored_after(&v);
        assert_eq!(a.finalizers, vec!["f".to_string()]);
        assert_eq!(a.annotations.get("a").map(String::as_str), Some("b"));
        assert_eq!(a.conditions[0].message(), "m");
    }
}
