//! The core's objects (`mco_render::api`) through kube-rs: each MCO kind is a
//! `kube::core::Object` of the core's spec and status types, and converts to and from the
//! core's object with typed metadata conversions. No JSON goes in between.

use crate::crd::{self, Kind};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    ObjectMeta as KubeMeta, OwnerReference as KubeOwner, Time,
};
use kube::api::{Api, TypeMeta};
use kube::core::{NotUsed, Object};
use kube::Client;
use mco_render::api::rollout_policy::{RolloutPolicy, RolloutPolicySpec, RolloutPolicyStatus};
use mco_render::api::{
    ContainerRuntimeConfig, ContainerRuntimeConfigSpec, ControllerConfig, ControllerConfigSpec,
    ControllerConfigStatus, CustomResourceStatus, KubeletConfig, KubeletConfigSpec, MachineConfig,
    MachineConfigNode, MachineConfigNodeSpec, MachineConfigNodeStatus, MachineConfigPool,
    MachineConfigPoolStatus, MachineConfigSpec, MachineOSBuild, MachineOSBuildSpec,
    MachineOSBuildStatus, MachineOSConfig, MachineOSConfigSpec, MachineOSConfigStatus, ObjectMeta,
    OwnerReference, PinnedImageSet, PinnedImageSetSpec, PinnedImageSetStatus, PoolSpec,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;

/// Metadata keys without a typed field in the core's `ObjectMeta`, kept in its `extra`.
const GENERATE_NAME: &str = "generateName";
const GRACE_PERIOD: &str = "deletionGracePeriodSeconds";

/// A core object kind stored as a custom resource.
pub trait Model: Sized {
    /// The spec type.
    type Spec: Clone + Debug + Default + Serialize + DeserializeOwned + Send + Sync + 'static;
    /// The status type (`NotUsed` for kinds without one).
    type Status: Clone + Debug + Default + Serialize + DeserializeOwned + Send + Sync + 'static;
    /// The kind as the API server knows it.
    const KIND: Kind;
    /// The core object of a stored one.
    fn from_object(o: Object<Self::Spec, Self::Status>) -> Self;
    /// The stored form of the core object, with `apiVersion` and `kind` set.
    fn into_object(self) -> Object<Self::Spec, Self::Status>;
}

/// The stored form of a core object of kind `M`.
pub type Stored<M> = Object<<M as Model>::Spec, <M as Model>::Status>;

/// The cluster-wide API of a kind.
pub fn api<M: Model>(client: &Client) -> Api<Stored<M>> {
    Api::all_with(client.clone(), &M::KIND.api_resource())
}

fn types(kind: &Kind) -> Option<TypeMeta> {
    Some(TypeMeta {
        api_version: kind.api_version(),
        kind: kind.kind.into(),
    })
}

fn time_string(t: &Time) -> Option<String> {
    k8s_openapi::jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%SZ", t.0).ok()
}

fn time_of(s: &str) -> Option<Time> {
    s.parse().ok().map(Time)
}

/// The core's metadata of a stored object. Server bookkeeping the controllers never write
/// (managedFields, selfLink) is dropped.
pub fn meta_from_kube(m: KubeMeta) -> ObjectMeta {
    let mut extra = std::collections::BTreeMap::new();
    if let Some(g) = m.generate_name {
        extra.insert(GENERATE_NAME.to_string(), g.into());
    }
    if let Some(s) = m.deletion_grace_period_seconds {
        extra.insert(GRACE_PERIOD.to_string(), s.into());
    }
    ObjectMeta {
        name: m.name.unwrap_or_default(),
        labels: m.labels.unwrap_or_default(),
        annotations: m.annotations.unwrap_or_default(),
        owner_references: m
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .map(|o| OwnerReference {
                api_version: o.api_version,
                kind: o.kind,
                name: o.name,
                uid: o.uid,
                controller: o.controller,
                block_owner_deletion: o.block_owner_deletion,
            })
            .collect(),
        namespace: m.namespace,
        uid: m.uid,
        resource_version: m.resource_version,
        generation: m.generation,
        creation_timestamp: m.creation_timestamp.as_ref().and_then(time_string),
        deletion_timestamp: m.deletion_timestamp.as_ref().and_then(time_string),
        finalizers: m.finalizers.unwrap_or_default(),
        extra,
    }
}

/// The stored metadata of the core's. Empty maps and lists are left out.
pub fn meta_to_kube(m: ObjectMeta) -> KubeMeta {
    let non_empty_map =
        |m: std::collections::BTreeMap<String, String>| (!m.is_empty()).then_some(m);
    KubeMeta {
        name: Some(m.name).filter(|n| !n.is_empty()),
        generate_name: m
            .extra
            .get(GENERATE_NAME)
            .and_then(|v| v.as_str())
            .map(str::to_string),
        deletion_grace_period_seconds: m.extra.get(GRACE_PERIOD).and_then(|v| v.as_i64()),
        labels: non_empty_map(m.labels),
        annotations: non_empty_map(m.annotations),
        owner_references: (!m.owner_references.is_empty()).then(|| {
            m.owner_references
                .into_iter()
                .map(|o| KubeOwner {
                    api_version: o.api_version,
                    kind: o.kind,
                    name: o.name,
                    uid: o.uid,
                    controller: o.controller,
                    block_owner_deletion: o.block_owner_deletion,
                })
                .collect()
        }),
        namespace: m.namespace,
        uid: m.uid,
        resource_version: m.resource_version,
        generation: m.generation,
        creation_timestamp: m.creation_timestamp.as_deref().and_then(time_of),
        deletion_timestamp: m.deletion_timestamp.as_deref().and_then(time_of),
        finalizers: (!m.finalizers.is_empty()).then_some(m.finalizers),
        ..KubeMeta::default()
    }
}

fn api_version_kind(o: &Option<TypeMeta>, kind: &Kind) -> (String, String) {
    match o {
        Some(t) => (t.api_version.clone(), t.kind.clone()),
        // Lists may leave the type out.
        None => (kind.api_version(), kind.kind.to_string()),
    }
}

/// `Model` for a kind with a status: the object's four parts map one to one.
macro_rules! model_with_status {
    ($($ty:ident: $spec:ty, $status:ty, $kind:expr;)*) => {$(
        impl Model for $ty {
            type Spec = $spec;
            type Status = $status;
            const KIND: Kind = $kind;

            fn from_object(o: Stored<Self>) -> Self {
                let (api_version, kind) = api_version_kind(&o.types, &Self::KIND);
                $ty {
                    api_version,
                    kind,
                    metadata: meta_from_kube(o.metadata),
                    spec: o.spec,
                    status: o.status,
                }
            }

            fn into_object(self) -> Stored<Self> {
                Object {
                    types: types(&Self::KIND),
                    metadata: meta_to_kube(self.metadata),
                    spec: self.spec,
                    status: self.status,
                }
            }
        }
    )*};
}

model_with_status! {
    MachineConfigPool: PoolSpec, MachineConfigPoolStatus, crd::MACHINE_CONFIG_POOL;
    ControllerConfig: ControllerConfigSpec, ControllerConfigStatus, crd::CONTROLLER_CONFIG;
    KubeletConfig: KubeletConfigSpec, CustomResourceStatus, crd::KUBELET_CONFIG;
    ContainerRuntimeConfig: ContainerRuntimeConfigSpec, CustomResourceStatus, crd::CONTAINER_RUNTIME_CONFIG;
    MachineConfigNode: MachineConfigNodeSpec, MachineConfigNodeStatus, crd::MACHINE_CONFIG_NODE;
    RolloutPolicy: RolloutPolicySpec, RolloutPolicyStatus, crd::ROLLOUT_POLICY;
    MachineOSConfig: MachineOSConfigSpec, MachineOSConfigStatus, crd::MACHINE_OS_CONFIG;
    MachineOSBuild: MachineOSBuildSpec, MachineOSBuildStatus, crd::MACHINE_OS_BUILD;
    PinnedImageSet: PinnedImageSetSpec, PinnedImageSetStatus, crd::PINNED_IMAGE_SET;
}

impl Model for MachineConfig {
    type Spec = MachineConfigSpec;
    type Status = NotUsed;
    const KIND: Kind = crd::MACHINE_CONFIG;

    fn from_object(o: Stored<Self>) -> Self {
        let (api_version, kind) = api_version_kind(&o.types, &Self::KIND);
        MachineConfig {
            api_version,
            kind,
            metadata: meta_from_kube(o.metadata),
            spec: o.spec,
        }
    }

    fn into_object(self) -> Stored<Self> {
        Object {
            types: types(&Self::KIND),
            metadata: meta_to_kube(self.metadata),
            spec: self.spec,
            status: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_round_trips() {
        let mut m = ObjectMeta {
            name: "a".into(),
            uid: Some("u".into()),
            resource_version: Some("7".into()),
            generation: Some(3),
            creation_timestamp: Some("2024-01-02T03:04:05Z".into()),
            finalizers: vec!["f".into()],
            ..ObjectMeta::default()
        };
        m.labels.insert("l".into(), "v".into());
        m.owner_references.push(OwnerReference {
            api_version: "v1".into(),
            kind: "K".into(),
            name: "o".into(),
            uid: "ou".into(),
            controller: Some(true),
            block_owner_deletion: None,
        });
        assert_eq!(meta_from_kube(meta_to_kube(m.clone())), m);
    }
}
