//! The config.openshift.io/v1 ClusterOperator, for clusters that lack OpenShift's CRD: the
//! operator reports its state in the `machine-config` one.

// Several printer columns share a `type_`; clippy reads the derive's arguments as repeated
// attributes.
#![allow(clippy::duplicated_attributes)]

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{CustomResource, CustomResourceExt};
pub use mco_render::controllers::operator::ClusterOperatorStatus;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A ClusterOperator: an operator's reported state. The spec is empty.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "config.openshift.io",
    version = "v1",
    kind = "ClusterOperator",
    plural = "clusteroperators",
    shortname = "co",
    status = "ClusterOperatorStatus",
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".status.versions[?(@.name==\"operator\")].version",
        description = "The version the operator is at."
    ),
    printcolumn(
        name = "Available",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Available\")].status",
        description = "Whether the operator's operands are available."
    ),
    printcolumn(
        name = "Progressing",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Progressing\")].status",
        description = "Whether the operator is rolling out a change."
    ),
    printcolumn(
        name = "Degraded",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Degraded\")].status",
        description = "Whether the operator failed to reach its desired state."
    ),
    printcolumn(
        name = "Since",
        type_ = "date",
        json_path = ".status.conditions[?(@.type==\"Available\")].lastTransitionTime",
        description = "When Available last changed."
    )
)]
pub struct ClusterOperatorSpec {}

/// The ClusterOperator CRD. Its spec keeps whatever is written, as OpenShift's does.
pub fn clusteroperator_crd() -> CustomResourceDefinition {
    let mut crd = ClusterOperator::crd();
    for v in &mut crd.spec.versions {
        let spec = v
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
            .and_then(|s| s.properties.as_mut())
            .and_then(|p| p.get_mut("spec"));
        if let Some(spec) = spec {
            spec.properties = None;
            spec.x_kubernetes_preserve_unknown_fields = Some(true);
        }
    }
    crd
}

/// The ClusterOperator CRD as a YAML document (the content of
/// `manifests/00-clusteroperator-crd.yaml`).
pub fn clusteroperator_crd_yaml() -> Result<String, serde_yaml_ng::Error> {
    Ok(format!(
        "---\n{}",
        serde_yaml_ng::to_string(&clusteroperator_crd())?
    ))
}
