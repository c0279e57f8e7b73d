//! Optional CRDs for the OpenShift config kinds machine-config-controller reads, for clusters
//! without OpenShift's config API: Image, ClusterVersion, ImageDigestMirrorSet,
//! ImageTagMirrorSet, ClusterImagePolicy, ImagePolicy (namespaced), FeatureGate, APIServer and
//! Node (`config.openshift.io/v1`), ImageContentSourcePolicy (`operator.openshift.io/v1alpha1`)
//! and the MachineConfiguration `cluster` (`operator.openshift.io/v1`). Their spec and status keep
//! whatever is written (OpenShift's own CRDs validate them; the controllers read them as
//! JSON). They are written to `manifests/optional/config-crds.yaml`, which the operator does
//! not apply: on OpenShift these CRDs already exist.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The status of an optional config kind: whatever is written.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
pub struct OpenStatus {}

macro_rules! config_kind {
    ($(#[$doc:meta])* $spec:ident, $group:literal, $version:literal, $kind:literal, $plural:literal) => {
        $(#[$doc])*
        #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
        #[kube(
            group = $group,
            version = $version,
            kind = $kind,
            plural = $plural,
            status = "OpenStatus"
        )]
        pub struct $spec {}
    };
}

config_kind!(
    /// The Image `cluster`: registry sources for the cluster's images.
    ImageSpec, "config.openshift.io", "v1", "Image", "images"
);
config_kind!(
    /// The ClusterVersion `version`: the release the cluster runs.
    ClusterVersionSpec, "config.openshift.io", "v1", "ClusterVersion", "clusterversions"
);
config_kind!(
    /// Mirrors for pulls by digest.
    ImageDigestMirrorSetSpec, "config.openshift.io", "v1", "ImageDigestMirrorSet",
    "imagedigestmirrorsets"
);
config_kind!(
    /// Mirrors for pulls by tag.
    ImageTagMirrorSetSpec, "config.openshift.io", "v1", "ImageTagMirrorSet",
    "imagetagmirrorsets"
);
config_kind!(
    /// The FeatureGate `cluster`: the enabled and disabled feature gates.
    FeatureGateSpec, "config.openshift.io", "v1", "FeatureGate", "featuregates"
);
config_kind!(
    /// The APIServer `cluster`: among others, the TLS security profile.
    APIServerSpec, "config.openshift.io", "v1", "APIServer", "apiservers"
);
config_kind!(
    /// The Node `cluster`: the cgroup mode and the workers' latency profile.
    NodeSpec, "config.openshift.io", "v1", "Node", "nodes"
);
config_kind!(
    /// Mirrors for pulls by digest, the older API.
    ImageContentSourcePolicySpec, "operator.openshift.io", "v1alpha1",
    "ImageContentSourcePolicy", "imagecontentsourcepolicies"
);
config_kind!(
    /// The MachineConfiguration `cluster`: node disruption policies,
    /// irreconcilableValidationOverrides, log levels.
    MachineConfigurationSpec, "operator.openshift.io", "v1", "MachineConfiguration",
    "machineconfigurations"
);

config_kind!(
    /// Sigstore signature policies for images of some scopes, cluster-wide.
    ClusterImagePolicySpec, "config.openshift.io", "v1", "ClusterImagePolicy",
    "clusterimagepolicies"
);

/// Sigstore signature policies for the images of one namespace's pods.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "config.openshift.io",
    version = "v1",
    kind = "ImagePolicy",
    plural = "imagepolicies",
    namespaced,
    status = "OpenStatus"
)]
pub struct ImagePolicySpec {}

/// `crd` with its spec and status keeping unknown fields, neither required (a ClusterVersion
/// or FeatureGate may have none).
fn open(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    for v in &mut crd.spec.versions {
        let Some(root) = v
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        else {
            continue;
        };
        root.required = None;
        for p in root.properties.iter_mut().flat_map(|p| p.values_mut()) {
            p.properties = None;
            p.x_kubernetes_preserve_unknown_fields = Some(true);
        }
    }
    crd
}

/// The optional config CRDs, in the order of the file.
pub fn config_crds() -> Vec<CustomResourceDefinition> {
    [
        APIServer::crd(),
        ClusterImagePolicy::crd(),
        ClusterVersion::crd(),
        FeatureGate::crd(),
        Image::crd(),
        ImageContentSourcePolicy::crd(),
        ImageDigestMirrorSet::crd(),
        ImagePolicy::crd(),
        ImageTagMirrorSet::crd(),
        MachineConfiguration::crd(),
        Node::crd(),
    ]
    .into_iter()
    .map(open)
    .collect()
}

/// The optional config CRDs as YAML documents (the content of
/// `manifests/optional/config-crds.yaml`).
pub fn config_crds_yaml() -> Result<String, serde_yaml_ng::Error> {
    let mut out = String::new();
    for crd in config_crds() {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(&crd)?);
    }
    Ok(out)
}
