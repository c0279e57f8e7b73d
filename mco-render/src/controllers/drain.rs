//! Drains the daemon asks for through the desiredDrain annotation, and which pods a drain
//! evicts.

use crate::api::node::{Node, DESIRED_DRAIN, DRAIN_FAILURE, LAST_APPLIED_DRAIN};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the drain controller does for a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DrainAction {
    /// Nothing asked, or the last request is already applied.
    None,
    /// Cordon, evict the pods, then record `request` as applied.
    Drain {
        /// The desiredDrain value to copy to lastAppliedDrain when done.
        request: String,
    },
    /// Uncordon, then record `request` as applied.
    Uncordon {
        /// The desiredDrain value to copy to lastAppliedDrain when done.
        request: String,
    },
}

/// The node's pending drain request.
pub fn drain_action(node: &Node) -> DrainAction {
    let Some(desired) = node.annotation(DESIRED_DRAIN) else {
        return DrainAction::None;
    };
    if node.annotation(LAST_APPLIED_DRAIN) == Some(desired) {
        return DrainAction::None;
    }
    let request = desired.to_string();
    if desired.starts_with("drain") {
        DrainAction::Drain { request }
    } else if desired.starts_with("uncordon") {
        DrainAction::Uncordon { request }
    } else {
        DrainAction::None
    }
}

/// A pod, reduced to what a drain needs.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Pod {
    /// Metadata.
    #[serde(default)]
    pub metadata: PodMeta,
    /// Status.
    #[serde(default)]
    pub status: PodStatus,
}

/// Pod metadata.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodMeta {
    /// Name.
    #[serde(default)]
    pub name: String,
    /// Namespace.
    #[serde(default)]
    pub namespace: String,
    /// Annotations.
    #[serde(default, deserialize_with = "crate::api::meta::nullable_map")]
    pub annotations: BTreeMap<String, String>,
    /// Owners.
    #[serde(default, deserialize_with = "crate::api::meta::nullable_vec")]
    pub owner_references: Vec<crate::api::OwnerReference>,
}

/// Pod status.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PodStatus {
    /// Pending, Running, Succeeded, Failed, Unknown.
    #[serde(default)]
    pub phase: String,
}

/// The mirror-pod annotation (static pods; the API server cannot evict them).
pub const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// Whether a drain evicts this pod: not a mirror pod, not owned by a DaemonSet, not finished.
pub fn should_evict(pod: &Pod) -> bool {
    !pod.metadata.annotations.contains_key(MIRROR_ANNOTATION)
        && !pod
            .metadata
            .owner_references
            .iter()
            .any(|o| o.kind == "DaemonSet")
        && !matches!(pod.status.phase.as_str(), "Succeeded" | "Failed")
}

/// The reason recorded when a drain times out with pods still blocking it, naming them.
pub fn drain_failure_reason(node: &str, blocking: &[(String, String)]) -> String {
    let pods: Vec<String> = blocking
        .iter()
        .map(|(ns, name)| format!("{ns}/{name}"))
        .collect();
    format!(
        "failed to drain node {node}: {} pod(s) could not be evicted (disruption budget or timeout): {}",
        pods.len(),
        pods.join(", ")
    )
}

/// The value the node's [`DRAIN_FAILURE`] annotation should take after an eviction pass:
/// the reason naming the blocking pods once the drain has been blocked past its timeout,
/// nothing once no pod blocks, and otherwise whatever it holds now (a drain still within its
/// time keeps an earlier report until it succeeds).
pub fn drain_failure_annotation(
    node: &Node,
    blocking: &[(String, String)],
    timed_out: bool,
) -> Option<String> {
    if blocking.is_empty() {
        None
    } else if timed_out {
        Some(drain_failure_reason(node.name(), blocking))
    } else {
        node.annotation(DRAIN_FAILURE).map(str::to_string)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::node::testing::node;

    #[test]
    fn requests() {
        let mut n = node("a", &[]);
        assert_eq!(drain_action(&n), DrainAction::None);
        n.metadata
            .annotations
            .insert(DESIRED_DRAIN.into(), "drain-r2".into());
        assert_eq!(
            drain_action(&n),
            DrainAction::Drain {
                request: "drain-r2".into()
            }
        );
        n.metadata
            .annotations
            .insert(LAST_APPLIED_DRAIN.into(), "drain-r2".into());
        assert_eq!(drain_action(&n), DrainAction::None);
        n.metadata
            .annotations
            .insert(DESIRED_DRAIN.into(), "uncordon-r2".into());
        assert_eq!(
            drain_action(&n),
            DrainAction::Uncordon {
                request: "uncordon-r2".into()
            }
        );
    }

    #[test]
    fn eviction_filter_and_reason() {
        let mut p = Pod::default();
        p.status.phase = "Running".into();
        assert!(should_evict(&p));
        p.metadata
            .owner_references
            .push(crate::api::OwnerReference {
                kind: "DaemonSet".into(),
                ..Default::default()
            });
        assert!(!should_evict(&p));
        assert_eq!(
            drain_failure_reason("w1", &[("ns".into(), "db-0".into())]),
            "failed to drain node w1: 1 pod(s) could not be evicted (disruption budget or timeout): ns/db-0"
        );
    }

    #[test]
    fn failure_annotation_follows_the_blocking_pods() {
        let mut n = node("w1", &[]);
        let blocking = vec![("apps".to_string(), "web-1".to_string())];
        // Blocked, but within the timeout: nothing reported yet.
        assert_eq!(drain_failure_annotation(&n, &blocking, false), None);
        let reason = drain_failure_annotation(&n, &blocking, true);
        assert_eq!(
            reason.as_deref(),
            Some("failed to drain node w1: 1 pod(s) could not be evicted (disruption budget or timeout): apps/web-1")
        );
        n.metadata
            .annotations
            .insert(DRAIN_FAILURE.into(), reason.clone().unwrap_or_default());
        // A report stays while the drain is still blocked, and goes once it succeeds.
        assert_eq!(drain_failure_annotation(&n, &blocking, false), reason);
        assert_eq!(drain_failure_annotation(&n, &[], true), None);
    }
}
