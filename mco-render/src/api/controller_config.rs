//! ControllerConfig: the cluster-wide defaults the controller renders with.

use super::meta::{nullable_string, ObjectMeta};
use serde::{Deserialize, Serialize};

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
}

/// The parts of a ControllerConfig spec that rendering uses; the rest passes through.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ControllerConfigSpec {
    /// The default OS image.
    #[serde(
        rename = "baseOSContainerImage",
        default,
        deserialize_with = "nullable_string"
    )]
    pub base_os_container_image: String,
    /// The default OS extensions image.
    #[serde(
        rename = "baseOSExtensionsContainerImage",
        default,
        deserialize_with = "nullable_string"
    )]
    pub base_os_extensions_container_image: String,
    /// Everything else.
    #[serde(flatten)]
    pub extra: std::collections::BTreeMap<String, serde_json::Value>,
}
