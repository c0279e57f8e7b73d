//! MachineConfigPool: a group of nodes and the configs they get.

use super::condition::Condition;
use super::meta::ObjectMeta;
use super::pinned_image_set::PinnedImageSetRef;
use super::schema::int_or_string;
use super::selector::LabelSelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    /// The pool's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<MachineConfigPoolStatus>,
}

/// A pool's spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, JsonSchema)]
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
    #[schemars(with = "Option<bool>")]
    pub paused: bool,
    /// How many nodes may update at once: an integer or a percentage. Kept as written
    /// (upstream's errors for other shapes come from [`crate::controllers::rollout`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        schema_with = "int_or_string",
        description = "How many nodes may update at once: an integer or a percentage."
    )]
    pub max_unavailable: Option<serde_json::Value>,
    /// The rendered config the pool targets.
    #[serde(default)]
    #[schemars(with = "Option<PoolConfiguration>")]
    pub configuration: PoolConfiguration,
    /// The PinnedImageSets whose images the pool's nodes pull and pin (at most 100).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Option<Vec<PinnedImageSetRef>>", length(max = 100))]
    pub pinned_image_sets: Vec<PinnedImageSetRef>,
}

/// A rendered config and the MachineConfigs it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PoolConfiguration {
    /// The rendered MachineConfig name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(with = "Option<String>")]
    pub name: String,
    /// The source MachineConfigs in merge order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Option<Vec<ObjectReference>>")]
    pub source: Vec<ObjectReference>,
}

/// A reference to an object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// API version.
    #[schemars(with = "Option<String>")]
    pub api_version: String,
    /// Kind.
    #[schemars(with = "Option<String>")]
    pub kind: String,
    /// Name.
    #[schemars(with = "Option<String>")]
    pub name: String,
}

/// A pool's observed state.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigPoolStatus {
    /// The generation observed.
    #[serde(default)]
    #[schemars(with = "Option<i64>")]
    pub observed_generation: i64,
    /// The config every node has reached.
    #[serde(default)]
    #[schemars(with = "Option<PoolConfiguration>")]
    pub configuration: PoolConfiguration,
    /// Nodes in the pool.
    #[serde(default)]
    #[schemars(with = "Option<i32>")]
    pub machine_count: i32,
    /// Nodes done on the pool's config.
    #[serde(default)]
    #[schemars(with = "Option<i32>")]
    pub updated_machine_count: i32,
    /// Updated nodes that are ready.
    #[serde(default)]
    #[schemars(with = "Option<i32>")]
    pub ready_machine_count: i32,
    /// Nodes counted against maxUnavailable.
    #[serde(default)]
    #[schemars(with = "Option<i32>")]
    pub unavailable_machine_count: i32,
    /// Nodes reporting degraded.
    #[serde(default)]
    #[schemars(with = "Option<i32>")]
    pub degraded_machine_count: i32,
    /// Conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Option<Vec<Condition>>")]
    pub conditions: Vec<Condition>,
    /// When the API server's serving CA certificates expire, as the ControllerConfig records
    /// them.
    #[serde(
        default,
        deserialize_with = "super::meta::nullable_vec",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(with = "Option<Vec<CertExpiry>>")]
    pub cert_expirys: Vec<CertExpiry>,
    /// Other fields, passed through.
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// One certificate's expiry in a pool's status (`status.certExpirys[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
pub struct CertExpiry {
    /// The bundle it came from.
    #[serde(default)]
    pub bundle: String,
    /// Its subject.
    #[serde(default)]
    pub subject: String,
    /// Not valid after (RFC 3339, UTC); null when unknown.
    #[serde(default)]
    pub expiry: Option<String>,
}

impl MachineConfigPoolStatus {
    /// The condition of a type.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    /// Whether a condition is present and true.
    pub fn is_true(&self, type_: &str) -> bool {
        self.condition(type_).is_some_and(Condition::is_true)
    }

    /// Sets a condition: no change when status, reason and message are the same; the
    /// transition time is kept when only reason or message change; a changed condition
    /// moves to the end.
    pub fn set_condition(&mut self, mut cond: Condition) {
        if let Some(cur) = self.condition(&cond.type_) {
            if cur.status == cond.status
                && cur.reason() == cond.reason()
                && cur.message() == cond.message()
            {
                return;
            }
            if cur.status == cond.status {
                cond.last_transition_time = cur.last_transition_time.clone();
            }
        }
        self.conditions.retain(|c| c.type_ != cond.type_);
        self.conditions.push(cond);
    }
}

impl MachineConfigPool {
    /// The pool's name.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// The pool's status (absent reads as empty).
    pub fn status_or_default(&self) -> MachineConfigPoolStatus {
        self.status.clone().unwrap_or_default()
    }
}
