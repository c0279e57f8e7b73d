//! The KubeletConfig and ContainerRuntimeConfig controllers in the cluster: each pass reads
//! the resources, pools, MachineConfigs and the `config.openshift.io` objects named
//! `cluster`, runs `mco_render::controllers::generate` for every resource (oldest first, each seeing the
//! writes of the ones before), and carries out what it decided: the generated MachineConfigs
//! (`99-<pool>-generated-kubelet[-N]`, `99-<pool>-generated-containerruntime[-N]`), the
//! resource's annotations and finalizers, and its status. A resource being deleted has the
//! MachineConfigs its finalizers name deleted, then its finalizers removed.
//!
//! Every write is skipped when the stored object already matches; a write that conflicts is
//! left to the next pass.

use super::cluster::now_rfc3339;
use super::writes::{
    config_resource, ensure, get_optional, is_absent, is_conflict, list_json, map_patch, name_of,
    WriteError, Written,
};
use crate::crd;
use crate::objects::{self, Model, Stored};
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Api, Client};
use mco_render::api::value_at::{str_at, strings_at};
use mco_render::api::{Condition, MachineConfig, MachineConfigPool};
use mco_render::controllers::generate::sequence::feature_gates_from_status;
use mco_render::controllers::generate::{generate, FeatureGates, GenerateInput, ObjectAfter};
use mco_render::controllers::Write;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The name of the cluster-wide `config.openshift.io` objects the controllers read.
pub const CLUSTER: &str = "cluster";

/// The controllers' handle on the cluster.
pub struct Resources {
    kubelet: (Api<DynamicObject>, ApiResource),
    runtime: (Api<DynamicObject>, ApiResource),
    mcs: Api<Stored<MachineConfig>>,
    pools: Api<Stored<MachineConfigPool>>,
    feature_gates: Api<DynamicObject>,
    api_servers: Api<DynamicObject>,
    node_configs: Api<DynamicObject>,
    controller_version: String,
}

/// What a pass left undone.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PassResult {
    /// Whether a write conflicted and the next pass should come soon.
    pub retry: bool,
}

fn api(client: &Client, ar: ApiResource) -> (Api<DynamicObject>, ApiResource) {
    (Api::all_with(client.clone(), &ar), ar)
}

/// The `config.openshift.io/v1` APIs the controllers read: FeatureGate, APIServer and Node.
pub fn config_resources() -> [ApiResource; 3] {
    [
        config_resource("FeatureGate", "featuregates"),
        config_resource("APIServer", "apiservers"),
        config_resource("Node", "nodes"),
    ]
}

/// The resource's annotations, finalizers and conditions as stored.
fn stored_after(v: &Value) -> ObjectAfter {
    let annotations = v
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default();
    let finalizers = strings_at(v, "/metadata/finalizers");
    let conditions = v
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|c| Condition {
                    type_: str_at(c, "/type").to_string(),
                    status: str_at(c, "/status").to_string(),
                    message: Some(str_at(c, "/message").to_string()),
                    ..Condition::default()
                })
                .collect()
        })
        .unwrap_or_default();
    ObjectAfter {
        annotations,
        finalizers,
        conditions,
    }
}

/// The status conditions to store for `after`: a condition already stored with the same
/// type, status and message keeps its time and reason; a new one is stamped `now`.
fn status_conditions(stored: &Value, after: &[Condition], now: &str) -> Vec<Value> {
    let mut old: Vec<Option<&Value>> = stored
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(Some).collect())
        .unwrap_or_default();
    after
        .iter()
        .map(|c| {
            let found = old.iter_mut().find(|o| {
                o.is_some_and(|o| {
                    str_at(o, "/type") == c.type_
                        && str_at(o, "/status") == c.status
                        && str_at(o, "/message") == c.message()
                })
            });
            match found.and_then(Option::take) {
                Some(o) => o.clone(),
                None => json!({
                    "type": c.type_,
                    "status": c.status,
                    "lastTransitionTime": now,
                    "message": c.message(),
                }),
            }
        })
        .collect()
}

impl Resources {
    /// A handle using `client`; generated MachineConfigs are stamped `controller_version`.
    pub fn new(client: Client, controller_version: &str) -> Self {
        let [fg, apis, nodes] = config_resources();
        Resources {
            kubelet: api(&client, crd::KUBELET_CONFIG.api_resource()),
            runtime: api(&client, crd::CONTAINER_RUNTIME_CONFIG.api_resource()),
            mcs: objects::api::<MachineConfig>(&client),
            pools: objects::api::<MachineConfigPool>(&client),
            feature_gates: Api::all_with(client.clone(), &fg),
            api_servers: Api::all_with(client.clone(), &apis),
            node_configs: Api::all_with(client, &nodes),
            controller_version: controller_version.to_string(),
        }
    }

    /// Lists a kind of custom resource; an API that is not installed holds none.
    async fn list_resources(
        &self,
        (api, ar): &(Api<DynamicObject>, ApiResource),
    ) -> Result<Vec<Value>, WriteError> {
        match list_json(api, ar).await {
            Err(WriteError::Kube(e)) if is_absent(&e) => Ok(Vec::new()),
            other => other,
        }
    }

    /// One pass over every KubeletConfig and ContainerRuntimeConfig.
    pub async fn sync_all(&self) -> Result<PassResult, WriteError> {
        let mut resources = self.list_resources(&self.kubelet).await?;
        resources.extend(self.list_resources(&self.runtime).await?);
        if resources.is_empty() {
            return Ok(PassResult::default());
        }
        let lp = ListParams::default();
        let initial: Vec<MachineConfig> = self
            .mcs
            .list(&lp)
            .await?
            .into_iter()
            .map(MachineConfig::from_object)
            .collect();
        let pools: Vec<MachineConfigPool> = self
            .pools
            .list(&lp)
            .await?
            .into_iter()
            .map(MachineConfigPool::from_object)
            .collect();
        let feature_gates = get_optional(&self.feature_gates, CLUSTER)
            .await?
            .map(|fg| feature_gates_from_status(&fg))
            .unwrap_or_else(FeatureGates::default);
        let api_server = get_optional(&self.api_servers, CLUSTER).await?;
        let node_config = get_optional(&self.node_configs, CLUSTER).await?;

        resources.sort_by(|a, b| {
            let key = |v: &Value| {
                (
                    str_at(v, "/metadata/creationTimestamp").to_string(),
                    name_of(v).to_string(),
                )
            };
            key(a).cmp(&key(b))
        });
        let mut mcs: BTreeMap<String, MachineConfig> = initial
            .iter()
            .map(|m| (m.name().to_string(), m.clone()))
            .collect();
        let mut result = PassResult::default();
        for i in 0..resources.len() {
            let object = resources[i].clone();
            let kind = str_at(&object, "/kind").to_string();
            let (api, _) = if kind == "KubeletConfig" {
                &self.kubelet
            } else {
                &self.runtime
            };
            if object
                .pointer("/metadata/deletionTimestamp")
                .is_some_and(|t| !t.is_null())
            {
                if !self.finalize(api, &object, &mut mcs).await? {
                    result.retry = true;
                }
                continue;
            }
            let input = GenerateInput {
                object: object.clone(),
                other_objects: resources
                    .iter()
                    .enumerate()
                    .filter(|(j, r)| *j != i && str_at(r, "/kind") == kind)
                    .map(|(_, r)| r.clone())
                    .collect(),
                existing_machine_configs: mcs.values().cloned().collect(),
                pools: pools.clone(),
                base_machine_configs: initial.clone(),
                feature_gates: feature_gates.clone(),
                api_server: api_server.clone(),
                node_config: node_config.clone(),
                controller_version: self.controller_version.clone(),
            };
            let outcome = generate(&input);
            let name = name_of(&object).to_string();
            if let Some(e) = &outcome.error {
                tracing::warn!(kind = kind.as_str(), name = name.as_str(), "{e}");
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
                        kind = kind.as_str(),
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
            match self
                .write_object(api, &object, &outcome.object_after)
                .await?
            {
                Some(updated) => resources[i] = updated,
                None => result.retry = true,
            }
        }
        Ok(result)
    }

    async fn delete_mc(&self, name: &str) -> Result<(), WriteError> {
        match self.mcs.delete(name, &DeleteParams::default()).await {
            Ok(_) => {
                tracing::info!("deleted {name}");
                Ok(())
            }
            Err(e) if is_absent(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// A resource being deleted: deletes the MachineConfigs its finalizers name, then clears
    /// its finalizers. Returns false on a conflict.
    async fn finalize(
        &self,
        api: &Api<DynamicObject>,
        object: &Value,
        mcs: &mut BTreeMap<String, MachineConfig>,
    ) -> Result<bool, WriteError> {
        let after = stored_after(object);
        if after.finalizers.is_empty() {
            return Ok(true);
        }
        for f in &after.finalizers {
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
            "resourceVersion": str_at(object, "/metadata/resourceVersion"),
            "finalizers": Value::Null,
        }});
        match api
            .patch(
                name_of(object),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            Ok(_) => {
                tracing::info!(name = name_of(object), "removed finalizers");
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
        api: &Api<DynamicObject>,
        object: &Value,
        after: &ObjectAfter,
    ) -> Result<Option<Value>, WriteError> {
        let name = name_of(object).to_string();
        let stored = stored_after(object);
        let mut current = object.clone();
        let pp = PatchParams::default();
        if stored.annotations != after.annotations || stored.finalizers != after.finalizers {
            let mut md = serde_json::Map::new();
            md.insert(
                "resourceVersion".into(),
                json!(str_at(&current, "/metadata/resourceVersion")),
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
            match api.patch(&name, &pp, &Patch::Merge(&patch)).await {
                Ok(o) => current = super::writes::to_json(&o)?,
                Err(e) if is_conflict(&e) || is_absent(&e) => return Ok(None),
                Err(e) => return Err(e.into()),
            }
        }
        let generation = current
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let conditions = status_conditions(&current, &after.conditions, &now_rfc3339());
        let observed = current
            .pointer("/status/observedGeneration")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let stored_conditions = current
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if observed != generation || stored_conditions != conditions {
            let patch = json!({
                "metadata": {"resourceVersion": str_at(&current, "/metadata/resourceVersion")},
                "status": {"observedGeneration": generation, "conditions": conditions},
            });
            match api.patch_status(&name, &pp, &Patch::Merge(&patch)).await {
                Ok(o) => current = super::writes::to_json(&o)?,
                Err(e) if is_conflict(&e) || is_absent(&e) => return Ok(None),
                Err(e) => return Err(e.into()),
            }
        }
        // Lists may leave these out; later syncs read the kind.
        current["kind"] = object["kind"].clone();
        current["apiVersion"] = object["apiVersion"].clone();
        Ok(Some(current))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_keep_their_time_when_unchanged() {
        let stored = json!({"status": {"conditions": [
            {"type": "Success", "status": "True", "message": "Success",
             "lastTransitionTime": "2020-01-01T00:00:00Z"}
        ]}});
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
        assert_eq!(got[0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
        assert_eq!(got[1]["lastTransitionTime"], "2024-01-01T00:00:00Z");
        assert_eq!(got[1]["type"], "Failure");
    }

    #[test]
    fn stored_after_reads_metadata_and_status() {
        let v = json!({"metadata": {"annotations": {"a": "b"}, "finalizers": ["f"]},
            "status": {"conditions": [{"type": "Success", "status": "True", "message": "m"}]}});
        let a = stored_after(&v);
        assert_eq!(a.finalizers, vec!["f".to_string()]);
        assert_eq!(a.annotations.get("a").map(String::as_str), Some("b"));
        assert_eq!(a.conditions[0].message(), "m");
    }
}
