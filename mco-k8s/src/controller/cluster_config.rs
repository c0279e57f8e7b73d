//! The cluster-config controllers in the cluster: each pass reads the Image `cluster`, the
//! ClusterVersion `version`, the ImageContentSourcePolicies, ImageDigestMirrorSets and
//! ImageTagMirrorSets, the FeatureGate, APIServer and Node `cluster`, the pools and the
//! MachineConfigs, runs `mco_render::controllers::generate::cluster_config::sync_all`, and
//! carries out its writes: `99-<pool>-generated-registries`, `98-<pool>-generated-kubelet`
//! and `97-<pool>-generated-kubelet`. The generated MachineConfigs carry the owner references
//! the pure function gives them; when the Image `cluster` is gone, the registries
//! MachineConfigs it owned are deleted (as the garbage collector would).
//!
//! An absent kind or API reads as none. A MachineConfig already equal to what is wanted is
//! not written; a write that conflicts is left to the next pass.

use super::resources::{PassResult, CLUSTER};
use super::writes::{
    config_resource, ensure, get_optional, is_absent, to_json, WriteError, Written,
};
use crate::objects::{self, Model, Stored};
use kube::api::{ApiResource, DynamicObject, ListParams};
use kube::{Api, Client};
use mco_render::api::{MachineConfig, MachineConfigPool};
use mco_render::controllers::generate::cluster_config::{sync_all, ClusterConfigInput};
use mco_render::controllers::generate::sequence::feature_gates_from_status;
use mco_render::controllers::generate::{upstream_json, FeatureGates};
use mco_render::controllers::Write;
use serde_json::Value;
use std::collections::BTreeMap;

/// The name of the ClusterVersion the registries controller reads.
pub const CLUSTER_VERSION: &str = "version";

/// The `operator.openshift.io/v1alpha1` ImageContentSourcePolicy resource.
pub fn image_content_source_policies() -> ApiResource {
    ApiResource {
        group: "operator.openshift.io".into(),
        version: "v1alpha1".into(),
        api_version: "operator.openshift.io/v1alpha1".into(),
        kind: "ImageContentSourcePolicy".into(),
        plural: "imagecontentsourcepolicies".into(),
    }
}

/// The image-related APIs the registries controller reads: Image, ClusterVersion,
/// ImageDigestMirrorSet, ImageTagMirrorSet (`config.openshift.io/v1`) and
/// ImageContentSourcePolicy (`operator.openshift.io/v1alpha1`).
pub fn image_resources() -> [ApiResource; 5] {
    [
        config_resource("Image", "images"),
        config_resource("ClusterVersion", "clusterversions"),
        config_resource("ImageDigestMirrorSet", "imagedigestmirrorsets"),
        config_resource("ImageTagMirrorSet", "imagetagmirrorsets"),
        image_content_source_policies(),
    ]
}

/// The controllers' handle on the cluster.
pub struct ClusterConfigs {
    mcs: Api<Stored<MachineConfig>>,
    pools: Api<Stored<MachineConfigPool>>,
    images: Api<DynamicObject>,
    cluster_versions: Api<DynamicObject>,
    digest_mirror_sets: Api<DynamicObject>,
    tag_mirror_sets: Api<DynamicObject>,
    content_source_policies: Api<DynamicObject>,
    feature_gates: Api<DynamicObject>,
    api_servers: Api<DynamicObject>,
    node_configs: Api<DynamicObject>,
    controller_version: String,
}

/// Every object of a dynamic kind as JSON; an API that is not installed holds none.
async fn list_json(api: &Api<DynamicObject>) -> Result<Vec<Value>, WriteError> {
    match api.list(&ListParams::default()).await {
        Ok(l) => l.items.iter().map(to_json).collect(),
        Err(e) if is_absent(&e) => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// A list of a typed kind; an API that is not installed holds none.
async fn list_typed<M: Model>(api: &Api<Stored<M>>) -> Result<Vec<M>, WriteError> {
    match api.list(&ListParams::default()).await {
        Ok(l) => Ok(l.into_iter().map(M::from_object).collect()),
        Err(e) if is_absent(&e) => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// The MachineConfigs an Image owned that outlive it: `99-*-generated-registries` with an
/// owner reference to a `config.openshift.io` Image. Called when the Image `cluster` is gone.
pub fn orphaned_registries(mcs: &[MachineConfig]) -> Vec<String> {
    mcs.iter()
        .filter(|mc| {
            let name = mc.name();
            name.starts_with("99-")
                && name.ends_with("-generated-registries")
                && upstream_json(mc)
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .is_some_and(|refs| {
                        refs.iter().any(|r| {
                            r["kind"] == "Image"
                                && r["apiVersion"]
                                    .as_str()
                                    .is_some_and(|a| a.starts_with("config.openshift.io/"))
                        })
                    })
        })
        .map(|mc| mc.name().to_string())
        .collect()
}

impl ClusterConfigs {
    /// A handle using `client`; generated MachineConfigs are stamped `controller_version`.
    pub fn new(client: Client, controller_version: &str) -> Self {
        let [images, cvs, idms, itms, icsps] = image_resources();
        let [fg, apis, nodes] = super::resources::config_resources();
        let dynamic = |ar: &ApiResource| Api::<DynamicObject>::all_with(client.clone(), ar);
        ClusterConfigs {
            mcs: objects::api::<MachineConfig>(&client),
            pools: objects::api::<MachineConfigPool>(&client),
            images: dynamic(&images),
            cluster_versions: dynamic(&cvs),
            digest_mirror_sets: dynamic(&idms),
            tag_mirror_sets: dynamic(&itms),
            content_source_policies: dynamic(&icsps),
            feature_gates: dynamic(&fg),
            api_servers: dynamic(&apis),
            node_configs: dynamic(&nodes),
            controller_version: controller_version.to_string(),
        }
    }

    /// The syncs' input as the cluster holds it now, and the MachineConfigs by name.
    async fn read(
        &self,
    ) -> Result<(ClusterConfigInput, BTreeMap<String, MachineConfig>), WriteError> {
        let fg = get_optional(&self.feature_gates, CLUSTER).await?;
        let mcs: Vec<MachineConfig> = list_typed(&self.mcs).await?;
        let as_json: Vec<Value> = mcs.iter().map(upstream_json).collect();
        let input = ClusterConfigInput {
            image: get_optional(&self.images, CLUSTER).await?,
            cluster_version: get_optional(&self.cluster_versions, CLUSTER_VERSION).await?,
            image_content_source_policies: list_json(&self.content_source_policies).await?,
            image_digest_mirror_sets: list_json(&self.digest_mirror_sets).await?,
            image_tag_mirror_sets: list_json(&self.tag_mirror_sets).await?,
            feature_gates: fg
                .as_ref()
                .map(feature_gates_from_status)
                .unwrap_or_else(FeatureGates::default),
            feature_gate_exists: fg.is_some(),
            api_server: get_optional(&self.api_servers, CLUSTER).await?,
            node: get_optional(&self.node_configs, CLUSTER).await?,
            pools: list_typed(&self.pools).await?,
            existing_machine_configs: as_json.clone(),
            base_machine_configs: as_json,
            controller_version: self.controller_version.clone(),
        };
        let by_name = mcs.into_iter().map(|m| (m.name().to_string(), m)).collect();
        Ok((input, by_name))
    }

    /// One pass: the MachineConfigs made equal to the syncs' output.
    pub async fn sync(&self) -> Result<PassResult, WriteError> {
        let (input, mut mcs) = self.read().await?;
        let mut result = PassResult::default();
        if input.image.is_none() {
            let stored: Vec<MachineConfig> = mcs.values().cloned().collect();
            for name in orphaned_registries(&stored) {
                self.delete_mc(&name).await?;
                mcs.remove(&name);
            }
        }
        for (object, outcome) in sync_all(&input) {
            if let Some(e) = &outcome.error {
                tracing::warn!(
                    kind = object.kind.as_str(),
                    name = object.name.as_str(),
                    "{}",
                    e.message
                );
            }
            for write in &outcome.writes {
                match write {
                    Write::CreateMachineConfig(want) | Write::UpdateMachineConfig(want) => {
                        let name = want.name().to_string();
                        match ensure(&self.mcs, mcs.get(&name), want).await? {
                            Written::Conflict => result.retry = true,
                            Written::Unchanged => {}
                            w => tracing::info!(
                                kind = object.kind.as_str(),
                                "{} {name}",
                                if w == Written::Created {
                                    "created"
                                } else {
                                    "updated"
                                }
                            ),
                        }
                        mcs.insert(name, want.clone());
                    }
                    Write::DeleteMachineConfig(name) => {
                        self.delete_mc(name).await?;
                        mcs.remove(name);
                    }
                    Write::SetPoolConfiguration { .. } | Write::PatchPoolStatus { .. } => {}
                }
            }
        }
        Ok(result)
    }

    async fn delete_mc(&self, name: &str) -> Result<(), WriteError> {
        super::writes::delete_machine_config(&self.mcs, name).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mc(v: Value) -> MachineConfig {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn only_image_owned_registries_configs_are_orphans() {
        let owned = json!([{"apiVersion": "config.openshift.io/v1", "kind": "Image",
            "name": "cluster", "uid": "u"}]);
        let mcs = vec![
            mc(
                json!({"metadata": {"name": "99-worker-generated-registries",
                "ownerReferences": owned}}),
            ),
            mc(json!({"metadata": {"name": "99-master-generated-registries"}})),
            mc(json!({"metadata": {"name": "99-worker-generated-kubelet",
                "ownerReferences": owned}})),
        ];
        assert_eq!(
            orphaned_registries(&mcs),
            vec!["99-worker-generated-registries".to_string()]
        );
    }
}
