//! The cluster-config controllers in the cluster: each pass reads the Image `cluster`, the
//! ClusterVersion `version`, the ImageContentSourcePolicies, ImageDigestMirrorSets and
//! ImageTagMirrorSets, the ClusterImagePolicies and ImagePolicies, the FeatureGate, APIServer and Node `cluster`, the pools and the
//! MachineConfigs from the watch caches ([`Caches`]), runs `mco_render::controllers::generate::cluster_config::sync_all`, and
//! carries out its writes: `99-<pool>-generated-registries`, `98-<pool>-generated-kubelet`
//! and `97-<pool>-generated-kubelet`. The generated MachineConfigs carry the owner references
//! the pure function gives them; when the Image `cluster` is gone, the registries
//! MachineConfigs it owned are deleted (as the garbage collector would).
//!
//! An absent kind or API reads as none. A MachineConfig already equal to what is wanted is
//! not written; a write that conflicts is left to the next pass.

use super::generators::{Caches, ConfigKind};
use super::resources::{PassResult, CLUSTER};
use super::writes::{config_resource, ensure, WriteError, Written};
use crate::objects::{self, Stored};
use kube::api::ApiResource;
use kube::{Api, Client};
use mco_render::api::MachineConfig;
use mco_render::controllers::generate::cluster_config::{sync_all, ClusterConfigInput};
use mco_render::controllers::generate::sequence::feature_gates_from_status;
use mco_render::controllers::generate::upstream_json;
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
/// ImageDigestMirrorSet, ImageTagMirrorSet (`config.openshift.io/v1`),
/// ImageContentSourcePolicy (`operator.openshift.io/v1alpha1`), and the image signature
/// policies ClusterImagePolicy and ImagePolicy (`config.openshift.io/v1`, every namespace).
pub fn image_resources() -> [ApiResource; 7] {
    [
        config_resource("Image", "images"),
        config_resource("ClusterVersion", "clusterversions"),
        config_resource("ImageDigestMirrorSet", "imagedigestmirrorsets"),
        config_resource("ImageTagMirrorSet", "imagetagmirrorsets"),
        image_content_source_policies(),
        config_resource("ClusterImagePolicy", "clusterimagepolicies"),
        config_resource("ImagePolicy", "imagepolicies"),
    ]
}

/// The controllers' handle on the cluster.
pub struct ClusterConfigs {
    mcs: Api<Stored<MachineConfig>>,
    controller_version: String,
    release: mco_render::release::Release,
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
        ClusterConfigs {
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

    /// The syncs' input as `caches` hold the cluster now, with `mcs` for the MachineConfigs.
    fn read(&self, caches: &Caches, mcs: &BTreeMap<String, MachineConfig>) -> ClusterConfigInput {
        let fg = caches.config_object(ConfigKind::FeatureGate, CLUSTER);
        let as_json: Vec<Value> = mcs.values().map(upstream_json).collect();
        ClusterConfigInput {
            image: caches.config_object(ConfigKind::Image, CLUSTER),
            cluster_version: caches.config_object(ConfigKind::ClusterVersion, CLUSTER_VERSION),
            image_content_source_policies: caches
                .config_objects(ConfigKind::ImageContentSourcePolicy),
            image_digest_mirror_sets: caches.config_objects(ConfigKind::ImageDigestMirrorSet),
            image_tag_mirror_sets: caches.config_objects(ConfigKind::ImageTagMirrorSet),
            cluster_image_policies: caches.config_objects(ConfigKind::ClusterImagePolicy),
            image_policies: caches.config_objects(ConfigKind::ImagePolicy),
            feature_gates: fg
                .as_ref()
                .map(feature_gates_from_status)
                .unwrap_or_default(),
            feature_gate_exists: fg.is_some(),
            api_server: caches.config_object(ConfigKind::ApiServer, CLUSTER),
            node: caches.config_object(ConfigKind::Node, CLUSTER),
            pools: caches.pools(),
            existing_machine_configs: as_json.clone(),
            base_machine_configs: as_json,
            controller_version: self.controller_version.clone(),
            release: self.release,
        }
    }

    /// One pass, read from `caches`: the MachineConfigs made equal to the syncs' output.
    /// `mcs` holds the MachineConfigs by name as this pass's earlier writes left them, and
    /// takes this pass's writes.
    pub async fn sync(
        &self,
        caches: &Caches,
        mcs: &mut BTreeMap<String, MachineConfig>,
    ) -> Result<PassResult, WriteError> {
        let input = self.read(caches, mcs);
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
