//! ControllerConfig: the cluster-wide defaults the controller renders with.

use super::meta::{nullable_string, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A ControllerConfig object (only the fields rendering reads are typed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ControllerConfig {
    /// API version.
    #[serde(default)]
    pub api_version: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The spec.
    #[serde(default)]
    pub spec: ControllerConfigSpec,
    /// The status, kept as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ControllerConfigStatus>,
}

/// The parts of a ControllerConfig spec that rendering uses; the rest passes through.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControllerConfigSpec {
    /// The default OS image.
    #[serde(
        rename = "baseOSContainerImage",
        default,
        deserialize_with = "nullable_string"
    )]
    #[schemars(with = "Option<String>")]
    pub base_os_container_image: String,
    /// The default OS extensions image.
    #[serde(
        rename = "baseOSExtensionsContainerImage",
        default,
        deserialize_with = "nullable_string"
    )]
    #[schemars(with = "Option<String>")]
    pub base_os_extensions_container_image: String,
    /// Everything else.
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// A ControllerConfig's status, kept as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControllerConfigStatus {
    /// The generation observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Everything else.
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: BTreeMap<String, serde_json::Value>,
}
