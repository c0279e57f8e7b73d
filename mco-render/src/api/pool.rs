//! MachineConfigPool: a group of nodes and the configs they get.

use super::meta::ObjectMeta;
use super::selector::LabelSelector;
use serde::{Deserialize, Serialize};

/// A MachineConfigPool object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigPool {
    /// `machineconfiguration.openshift.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `MachineConfigPool`.
    #[serde(default)]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The pool's spec.
    #[serde(default)]
    pub spec: PoolSpec,
    /// The pool's status, passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<serde_json::Value>,
}

/// A pool's spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct PoolSpec {
    /// Which MachineConfigs the pool renders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_config_selector: Option<LabelSelector>,
    /// Which nodes belong to the pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<LabelSelector>,
    /// Whether rollouts are paused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// How many nodes may update at once (integer or percent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<serde_json::Value>,
    /// The rendered config the pool targets.
    #[serde(default)]
    pub configuration: PoolConfiguration,
}

/// The rendered config a pool targets and the configs it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct PoolConfiguration {
    /// The rendered MachineConfig name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The source MachineConfigs, in merge order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source: Vec<ObjectReference>,
}

/// A reference to an object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// API version.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Name.
    pub name: String,
}

impl MachineConfigPool {
    /// The pool's name.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }
}
