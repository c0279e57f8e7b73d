//! The MCO custom resources as Rust types, and the CustomResourceDefinitions generated from
//! them.
//!
//! The controller itself works on `mco_render`'s object model; these types exist to define
//! the API (schemas, printer columns, subresources) and to name the resources to kube-rs.

pub mod clusteroperator;
pub mod custom;
pub mod schema;
pub mod types;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

pub use clusteroperator::{clusteroperator_crd, clusteroperator_crd_yaml, ClusterOperator};
pub use custom::{ContainerRuntimeConfig, KubeletConfig};
pub use types::{ControllerConfig, MachineConfig, MachineConfigPool};

/// Every CRD this project installs, in install order.
pub fn crds() -> Vec<CustomResourceDefinition> {
    let mut cc = ControllerConfig::crd();
    // The ControllerConfig carries many cluster fields the controller passes through
    // untouched: keep whatever is written in spec and status.
    for v in &mut cc.spec.versions {
        let props = v
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
            .and_then(|s| s.properties.as_mut());
        if let Some(props) = props {
            for key in ["spec", "status"] {
                if let Some(p) = props.get_mut(key) {
                    p.x_kubernetes_preserve_unknown_fields = Some(true);
                }
            }
        }
    }
    vec![
        MachineConfig::crd(),
        MachineConfigPool::crd(),
        cc,
        KubeletConfig::crd(),
        ContainerRuntimeConfig::crd(),
    ]
}

/// The CRDs as one multi-document YAML stream.
pub fn crds_yaml() -> Result<String, serde_yaml_ng::Error> {
    let mut out = String::new();
    for crd in crds() {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(&crd)?);
    }
    Ok(out)
}
