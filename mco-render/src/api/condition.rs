//! The status condition every MCO object reports: pools, KubeletConfigs,
//! ContainerRuntimeConfigs and the ClusterOperator.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A status condition, as pools, KubeletConfigs, ContainerRuntimeConfigs and the
/// ClusterOperator report them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// Condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// True, False or Unknown.
    pub status: String,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Condition {
    /// A condition with `type_` and `status` (`True` or `False`) and nothing else set.
    pub fn of(type_: &str, status: bool) -> Self {
        Condition {
            type_: type_.into(),
            status: if status { "True" } else { "False" }.into(),
            ..Condition::default()
        }
    }

    /// Whether the status is "True".
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }

    /// The reason ("" when absent).
    pub fn reason(&self) -> &str {
        self.reason.as_deref().unwrap_or("")
    }

    /// The message ("" when absent).
    pub fn message(&self) -> &str {
        self.message.as_deref().unwrap_or("")
    }

    /// The last transition time ("" when absent).
    pub fn last_transition_time(&self) -> &str {
        self.last_transition_time.as_deref().unwrap_or("")
    }
}
