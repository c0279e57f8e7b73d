//! RolloutPolicy: how one MachineConfigPool rolls a new rendered config out to its nodes:
//! canaries first, a health gate every updated node must pass, maintenance windows, automatic
//! pause and last-known-good rollback. This project's own kind (group
//! [`GROUP`]); upstream's MachineConfigPool is left as upstream defines it. A policy applies to
//! the pool of the same name.
//!
//! The spec is the administrator's; the controller writes only the status. The decisions are in
//! [`crate::controllers::rollout_policy`].

use super::condition::Condition;
use super::meta::ObjectMeta;
use super::schema::int_or_string;
use super::selector::LabelSelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API group of RolloutPolicy.
pub const GROUP: &str = "rollout.mco.dev";
/// The API version of RolloutPolicy.
pub const VERSION: &str = "v1alpha1";
/// The kind.
pub const KIND: &str = "RolloutPolicy";

/// The Node annotation the controller sets, next to `desiredConfig` and in the same write,
/// to the time it targeted the node (RFC 3339). The health gate's timeout runs from it.
pub const TARGETED_AT: &str = "rollout.mco.dev/targetedAt";

/// A RolloutPolicy object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct RolloutPolicy {
    /// `rollout.mco.dev/v1alpha1`.
    #[serde(default)]
    pub api_version: String,
    /// `RolloutPolicy`.
    #[serde(default)]
    pub kind: String,
    /// Metadata; the name is the pool's.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// What the administrator asks for.
    #[serde(default)]
    pub spec: RolloutPolicySpec,
    /// Where the pool's rollout stands (written by the controller).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RolloutPolicyStatus>,
}

/// How the pool of the same name rolls out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutPolicySpec {
    /// Nodes that update first; the others wait until every canary passed the health gate
    /// and the soak time is over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<CanarySpec>,
    /// What makes an updated node healthy, and how long it has to get there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_gate: Option<HealthGateSpec>,
    /// When nodes may start an update; none means at any time. An update under way finishes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Option<Vec<MaintenanceWindow>>")]
    pub maintenance_windows: Vec<MaintenanceWindow>,
    /// Roll the pool back to its last known good config when a node fails on a new one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schemars(with = "Option<bool>")]
    pub auto_rollback: bool,
    /// Roll the pool back to its last known good config now. Set it to false to go forward
    /// again; a newer config that passes ends the rollback too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schemars(with = "Option<bool>")]
    pub rollback: bool,
    /// Resume a paused rollout: a pause that began at or before this time (RFC 3339) ends,
    /// and the nodes it named no longer stop this rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_at: Option<String>,
}

/// The canary nodes of a pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CanarySpec {
    /// How many nodes, first in rollout order: an integer or a percentage of the pool (rounded
    /// up). Default 1 when no selector is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        schema_with = "int_or_string",
        description = "How many nodes update first: an integer or a percentage of the pool (rounded up)."
    )]
    pub nodes: Option<serde_json::Value>,
    /// The canaries are the pool's nodes matching this selector (instead of `nodes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// How long every canary must have been healthy before the others start (a Go duration:
    /// `30m`, `1h30m`). Default 0s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<String>,
}

/// What makes an updated node healthy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthGateSpec {
    /// How long after it was targeted a node has to become healthy (a Go duration). Default
    /// `30m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// Pods on the node matching this selector must be Ready again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<LabelSelector>,
}

/// A recurring maintenance window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceWindow {
    /// Days the window opens on (`Mon`..`Sun` or `Monday`..`Sunday`); none means every day.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Option<Vec<String>>")]
    pub days: Vec<String>,
    /// Local time the window opens, `HH:MM` or `HH:MM:SS`.
    pub start: String,
    /// How long it stays open (a Go duration, at most 7 days); a window may run past midnight.
    pub duration: String,
    /// IANA time zone of `days` and `start` (`Europe/Berlin`); default `UTC`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
}

/// Where a pool's rollout stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutPolicyStatus {
    /// The policy generation this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The config the pool's nodes are being moved to (the pool's newest, or the rollback
    /// target).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(with = "Option<String>")]
    pub target: String,
    /// What the rollout is doing.
    #[serde(default)]
    #[schemars(with = "Option<Phase>")]
    pub phase: Phase,
    /// One line for `kubectl get`: why the rollout is where it is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(with = "Option<String>")]
    pub message: String,
    /// The last rendered config every node of the pool reached healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_known_good: Option<String>,
    /// The last known good config before `lastKnownGood` (what a rollback requested after
    /// the newest config passed returns to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_known_good: Option<String>,
    /// The canaries of the current rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<CanaryStatus>,
    /// Why the rollout is stopped, until it is resumed or a newer config arrives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<Pause>,
    /// Failures an administrator resumed past (for `excusedConfig`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Option<Vec<String>>")]
    pub excused_nodes: Vec<String>,
    /// The config `excusedNodes` failed on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excused_config: Option<String>,
    /// A rollback in force (or ended, while `spec.rollback` still asks for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<Rollback>,
    /// When the next maintenance window opens (RFC 3339), while outside every window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_window: Option<String>,
    /// `Paused`, `RolledBack`: the same facts as conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Option<Vec<Condition>>")]
    pub conditions: Vec<Condition>,
}

/// What a pool's rollout is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
pub enum Phase {
    /// Every node is healthy on the target.
    #[default]
    Done,
    /// Canaries are updating or being checked.
    Canary,
    /// Every canary is healthy; the soak time is running.
    Soaking,
    /// The other nodes are updating, `maxUnavailable` at a time.
    Rolling,
    /// Outside every maintenance window: no node starts.
    WaitingForWindow,
    /// A node failed; nothing starts until the rollout is resumed.
    Paused,
    /// Nodes are returning to the last known good config.
    RollingBack,
    /// Every node is back on the last known good config.
    RolledBack,
    /// The pool itself is paused (`spec.paused`) or has no config yet.
    Idle,
    /// The policy cannot be used (the message says which field).
    Invalid,
}

/// The canaries of one rollout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CanaryStatus {
    /// The config they are checked on.
    pub config: String,
    /// The canary nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Option<Vec<String>>")]
    pub nodes: Vec<String>,
    /// When every canary was first healthy at once (RFC 3339): the soak runs from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy_since: Option<String>,
    /// Whether the canaries passed (healthy and soaked).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schemars(with = "Option<bool>")]
    pub passed: bool,
}

/// Why a rollout stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pause {
    /// The config the failure happened on.
    pub config: String,
    /// The first node that failed.
    pub node: String,
    /// Every node failing on `config` while paused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Option<Vec<String>>")]
    pub nodes: Vec<String>,
    /// `NodeDegraded` or `HealthGateFailed`.
    pub reason: String,
    /// `canary worker-3 not Ready 10m after rendered-worker-abc: ...`.
    pub message: String,
    /// When the rollout paused (RFC 3339).
    pub since: String,
}

/// A rollback to the last known good config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rollback {
    /// The config rolled back from (the pool's newest when it began).
    pub from: String,
    /// The last known good config the nodes return to.
    pub to: String,
    /// Started by `autoRollback` (true) or by `spec.rollback` (false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schemars(with = "Option<bool>")]
    pub automatic: bool,
    /// When it began (RFC 3339).
    pub since: String,
    /// What the nodes do on the way back (`reboot`, `none`, ...), from the disruption plan of
    /// `from` → `to`, when the adapter could compute it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disruption: Option<String>,
}

impl RolloutPolicy {
    /// The policy's name (the pool's).
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// The status, or an empty one.
    pub fn status_or_default(&self) -> RolloutPolicyStatus {
        self.status.clone().unwrap_or_default()
    }
}

impl Phase {
    /// The phase as written in the status.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Done => "Done",
            Phase::Canary => "Canary",
            Phase::Soaking => "Soaking",
            Phase::Rolling => "Rolling",
            Phase::WaitingForWindow => "WaitingForWindow",
            Phase::Paused => "Paused",
            Phase::RollingBack => "RollingBack",
            Phase::RolledBack => "RolledBack",
            Phase::Idle => "Idle",
            Phase::Invalid => "Invalid",
        }
    }
}
