//! A minimal Kubernetes Node: the fields the controllers read, and the daemon's annotations.

use crate::api::meta::{nullable_map, nullable_vec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The config the daemon has applied.
pub const CURRENT_CONFIG: &str = "machineconfiguration.openshift.io/currentConfig";
/// The config the controller wants the node on.
pub const DESIRED_CONFIG: &str = "machineconfiguration.openshift.io/desiredConfig";
/// The daemon's state: Done, Working, Degraded or Unreconcilable.
pub const STATE: &str = "machineconfiguration.openshift.io/state";
/// Why the daemon is degraded.
pub const REASON: &str = "machineconfiguration.openshift.io/reason";
/// The image the controller wants the node on (layered pools).
pub const DESIRED_IMAGE: &str = "machineconfiguration.openshift.io/desiredImage";
/// The image the daemon has applied (layered pools).
pub const CURRENT_IMAGE: &str = "machineconfiguration.openshift.io/currentImage";
/// The drain or uncordon the daemon asks for (`drain-<config>`, `uncordon-<config>`).
pub const DESIRED_DRAIN: &str = "machineconfiguration.openshift.io/desiredDrain";
/// The last drain request the controller completed.
pub const LAST_APPLIED_DRAIN: &str = "machineconfiguration.openshift.io/lastAppliedDrain";
/// Why the pending drain is failing, naming the pods in its way (refused evictions, pods
/// still terminating). Written by the drain controller once a drain has gone on past its
/// timeout and removed when the drain completes; while it is there the pool is NodeDegraded,
/// and the daemon puts it in its Degraded reason. (Upstream only logs the pods.)
pub const DRAIN_FAILURE: &str = "machineconfiguration.openshift.io/drainFailure";
/// The API's `/run/machine-config-daemon-force` (this project's addition): while the Node
/// carries it, its daemon skips the on-disk check as it does for that file, and its next
/// update removes both. `kubectl mco force NODE` writes it (the time asked, RFC 3339).
pub const FORCE: &str = "agent.mco.dev/force";
/// The zone label rollouts are ordered by.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
/// The OS label; Windows nodes are not managed.
pub const OS_LABEL: &str = "kubernetes.io/os";

/// Daemon state: the node is on its desired config.
pub const STATE_DONE: &str = "Done";
/// Daemon state: an update is in progress.
pub const STATE_WORKING: &str = "Working";
/// Daemon state: the update failed.
pub const STATE_DEGRADED: &str = "Degraded";
/// Daemon state: the update cannot be applied in place.
pub const STATE_UNRECONCILABLE: &str = "Unreconcilable";

/// A Node object, reduced to what the controllers use.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Node {
    /// Metadata.
    #[serde(default)]
    pub metadata: NodeMeta,
    /// Spec.
    #[serde(default)]
    pub spec: NodeSpec,
    /// Status.
    #[serde(default)]
    pub status: NodeStatus,
}

/// Node metadata.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeMeta {
    /// Name.
    #[serde(default)]
    pub name: String,
    /// Labels.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable_map"
    )]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable_map"
    )]
    pub annotations: BTreeMap<String, String>,
    /// RFC 3339 creation time (Kubernetes writes `YYYY-MM-DDTHH:MM:SSZ`, which sorts as text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    /// The API server's id of the object (what owner references name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}

/// Node spec.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NodeSpec {
    /// Cordoned.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unschedulable: bool,
}

/// Node status.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NodeStatus {
    /// Conditions (Ready, DiskPressure, NetworkUnavailable...).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable_vec"
    )]
    pub conditions: Vec<NodeCondition>,
    /// The node's lifecycle phase (`Pending`, `Running`, `Terminated`; deprecated, mostly unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Resources available to pods, as quantities (`ephemeral-storage`: the disk the pinned
    /// images' room is checked against).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocatable: BTreeMap<String, String>,
    /// What the kubelet reports of the machine.
    #[serde(default, rename = "nodeInfo", skip_serializing_if = "Option::is_none")]
    pub node_info: Option<NodeSystemInfo>,
}

/// The machine as the kubelet reports it (the fields read here).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NodeSystemInfo {
    /// The OS image, as `PRETTY_NAME` of os-release (`Red Hat Enterprise Linux CoreOS 9.6`).
    #[serde(default, rename = "osImage", skip_serializing_if = "String::is_empty")]
    pub os_image: String,
}

/// One node condition.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NodeCondition {
    /// Condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// "True", "False" or "Unknown".
    pub status: String,
    /// Machine-readable reason (`KubeletNotReady`, `NodeStatusUnknown`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message (`Kubelet stopped posting node status.`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the status last changed (RFC 3339).
    #[serde(
        default,
        rename = "lastTransitionTime",
        skip_serializing_if = "Option::is_none"
    )]
    pub last_transition_time: Option<String>,
}

impl Node {
    /// The node's name.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// An annotation, absent and empty alike as `None`.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.metadata
            .annotations
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// The daemon's desired config annotation ("" when absent).
    pub fn desired_config(&self) -> &str {
        self.annotation(DESIRED_CONFIG).unwrap_or("")
    }

    /// The daemon's current config annotation ("" when absent).
    pub fn current_config(&self) -> &str {
        self.annotation(CURRENT_CONFIG).unwrap_or("")
    }

    fn state_is(&self, state: &str) -> bool {
        self.annotation(STATE) == Some(state)
    }

    /// Why the node cannot take workloads, in upstream's words; `None` when it can.
    pub fn not_ready_reason(&self) -> Option<String> {
        for c in &self.status.conditions {
            match c.type_.as_str() {
                "Ready" if c.status != "True" => {
                    return Some(format!(
                        "node {} is reporting NotReady={}",
                        self.name(),
                        c.status
                    ))
                }
                "DiskPressure" if c.status != "False" => {
                    return Some(format!(
                        "node {} is reporting OutOfDisk={}",
                        self.name(),
                        c.status
                    ))
                }
                "NetworkUnavailable" if c.status != "False" => {
                    return Some(format!(
                        "node {} is reporting NetworkUnavailable={}",
                        self.name(),
                        c.status
                    ))
                }
                _ => {}
            }
        }
        if self.spec.unschedulable {
            return Some(format!("node {} is reporting Unschedulable", self.name()));
        }
        None
    }

    /// Schedulable and reporting no bad condition.
    pub fn is_ready(&self) -> bool {
        self.not_ready_reason().is_none()
    }

    fn image_done(&self) -> bool {
        let a = &self.metadata.annotations;
        match (a.get(DESIRED_IMAGE), a.get(CURRENT_IMAGE)) {
            (None, None) => true,
            (Some(d), Some(c)) => !d.is_empty() && !c.is_empty() && d == c,
            _ => false,
        }
    }

    /// current == desired (both set), image done, and the daemon says Done.
    pub fn is_node_done(&self) -> bool {
        let (c, d) = (self.current_config(), self.desired_config());
        !c.is_empty() && !d.is_empty() && c == d && self.image_done() && self.state_is(STATE_DONE)
    }

    /// Done on `target`, with no desired image (non-layered pools).
    pub fn is_done_on(&self, target: &str) -> bool {
        self.is_node_done()
            && self.desired_config() == target
            && !self.metadata.annotations.contains_key(DESIRED_IMAGE)
    }

    /// The daemon failed to reach its desired config (Degraded or Unreconcilable, current != desired).
    pub fn is_mcd_failing(&self) -> bool {
        if self.current_config() == self.desired_config() {
            return false;
        }
        self.state_is(STATE_DEGRADED) || self.state_is(STATE_UNRECONCILABLE)
    }

    /// Counts against maxUnavailable: not ready, or working towards a config and not failing.
    pub fn is_unavailable(&self) -> bool {
        if !self.is_ready() {
            return true;
        }
        if self.is_node_done() {
            return false;
        }
        !self.is_mcd_failing()
    }

    /// Reported degraded: a desired config is set and the daemon is Degraded or Unreconcilable.
    pub fn is_degraded(&self) -> bool {
        self.annotation(DESIRED_CONFIG).is_some()
            && (self.state_is(STATE_DEGRADED) || self.state_is(STATE_UNRECONCILABLE))
    }

    /// Whether the node runs Windows (never managed).
    pub fn is_windows(&self) -> bool {
        self.metadata.labels.get(OS_LABEL).map(String::as_str) == Some("windows")
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A ready node with the given labels and config annotations.
    pub fn node(name: &str, labels: &[(&str, &str)]) -> Node {
        let mut n = Node::default();
        n.metadata.name = name.into();
        for (k, v) in labels {
            n.metadata.labels.insert((*k).into(), (*v).into());
        }
        n.status.conditions.push(NodeCondition {
            type_: "Ready".into(),
            status: "True".into(),
            ..NodeCondition::default()
        });
        n
    }

    /// Sets current, desired and state.
    pub fn with_configs(mut n: Node, current: &str, desired: &str, state: &str) -> Node {
        let a = &mut n.metadata.annotations;
        a.insert(CURRENT_CONFIG.into(), current.into());
        a.insert(DESIRED_CONFIG.into(), desired.into());
        a.insert(STATE.into(), state.into());
        n
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;

    #[test]
    fn readiness_messages() {
        let mut n = node("a", &[]);
        assert!(n.is_ready());
        n.spec.unschedulable = true;
        assert_eq!(
            n.not_ready_reason().as_deref(),
            Some("node a is reporting Unschedulable")
        );
        n.status.conditions[0].status = "Unknown".into();
        assert_eq!(
            n.not_ready_reason().as_deref(),
            Some("node a is reporting NotReady=Unknown")
        );
    }

    #[test]
    fn done_failing_unavailable() {
        let n = with_configs(node("a", &[]), "r1", "r1", STATE_DONE);
        assert!(n.is_node_done() && n.is_done_on("r1") && !n.is_unavailable());
        assert!(!n.is_done_on("r2"));
        let w = with_configs(node("a", &[]), "r1", "r2", STATE_WORKING);
        assert!(w.is_unavailable() && !w.is_mcd_failing());
        let f = with_configs(node("a", &[]), "r1", "r2", STATE_DEGRADED);
        assert!(f.is_mcd_failing() && !f.is_unavailable() && f.is_degraded());
        // Degraded on its own config is degraded but not "failing".
        let d = with_configs(node("a", &[]), "r1", "r1", STATE_DEGRADED);
        assert!(!d.is_mcd_failing() && d.is_unavailable() && d.is_degraded());
    }

    #[test]
    fn decodes_kubernetes_json() {
        let n: Node = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "w1", "labels": null, "creationTimestamp": "2024-01-01T00:00:00Z",
                          "annotations": {"machineconfiguration.openshift.io/state": "Done"}},
            "spec": {"unschedulable": true, "taints": []},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}
        }))
        .unwrap();
        assert_eq!(n.name(), "w1");
        assert!(n.spec.unschedulable);
        assert_eq!(n.annotation(STATE), Some("Done"));
    }
}
