//! Drains the daemon asks for through the desiredDrain annotation: which pods a drain evicts,
//! when it is done, how it is retried and what it reports.
//!
//! A drain is done only when every pod it evicted is gone, as `kubectl drain` waits for it:
//! an accepted eviction only starts the pod's graceful termination, and the pod keeps running
//! (so the node must not reboot yet) until its containers exit or its grace period ends. A pod
//! counts as gone when no pod of its namespace and name is left, or when the one left has
//! another UID (a new pod reusing the name).

use super::backoff::Backoff;
use crate::api::node::{Node, DESIRED_DRAIN, DRAIN_FAILURE, LAST_APPLIED_DRAIN};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

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

/// The node's pending drain request, unless it is `recorded`: the request this controller
/// last recorded as applied on the node (its `lastAppliedDrain` patch answered). A Node read
/// before that write's echo (its watch cut, or re-listing) still shows the request pending;
/// carrying it out again would cordon and evict a second time for the same config.
pub fn drain_action_unless_recorded(node: &Node, recorded: Option<&str>) -> DrainAction {
    match drain_action(node) {
        DrainAction::Drain { request } | DrainAction::Uncordon { request }
            if recorded == Some(request.as_str()) =>
        {
            DrainAction::None
        }
        action => action,
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
    /// UID: tells this pod from a later one of the same name.
    #[serde(default)]
    pub uid: String,
    /// When the pod's grace period ends; set once its deletion has begun (it is terminating).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
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

impl Pod {
    /// Whether the pod's deletion has begun (it has a deletionTimestamp).
    pub fn is_terminating(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }
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

/// One pod: namespace, name and UID. Displays as `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
}

impl PodRef {
    /// The reference to `pod`.
    pub fn of(pod: &Pod) -> Self {
        PodRef {
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
        }
    }
}

impl fmt::Display for PodRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Where a drain stands, and what it does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DrainStep {
    /// Nothing left to evict or wait for: record the request as applied.
    Done,
    /// Evict these pods (first attempt, or a retry of an earlier refusal).
    Evict(Vec<PodRef>),
    /// Every eviction was accepted; these pods are still terminating.
    Waiting(Vec<PodRef>),
    /// The API server refused to evict `refused` (a PodDisruptionBudget, or the attempt
    /// timed out) in this attempt; `terminating` are evicted and not gone yet.
    Blocked {
        /// Pods whose eviction was refused.
        refused: Vec<PodRef>,
        /// Pods still terminating.
        terminating: Vec<PodRef>,
    },
}

/// The next step of a node's drain.
///
/// `pods` are the pods bound to the node now; `evicted` the pods whose eviction the API
/// server accepted during this drain (any pod of the node may be among them, with the UID it
/// had); `refused` the pods whose eviction it refused in the attempt just made (empty before
/// an attempt).
///
/// A pod this drain evicted is waited for while a pod of its name and UID exists, whatever
/// its phase or owner. Any other pod the drain evicts ([`should_evict`]) is waited for when it
/// is already terminating (someone else deleted it, or a previous controller evicted it),
/// counts as refused when it is in `refused`, and is to be evicted otherwise. New evictions
/// come first, then refusals, then waiting.
pub fn drain_step(
    pods: &[Pod],
    evicted: &BTreeSet<PodRef>,
    refused: &BTreeSet<PodRef>,
) -> DrainStep {
    let mut evict = Vec::new();
    let mut blocked = Vec::new();
    let mut terminating = Vec::new();
    for pod in pods {
        let r = PodRef::of(pod);
        if evicted.contains(&r) || (should_evict(pod) && pod.is_terminating()) {
            terminating.push(r);
        } else if !should_evict(pod) {
            continue;
        } else if refused.contains(&r) {
            blocked.push(r);
        } else {
            evict.push(r);
        }
    }
    if !evict.is_empty() {
        DrainStep::Evict(evict)
    } else if !blocked.is_empty() {
        DrainStep::Blocked {
            refused: blocked,
            terminating,
        }
    } else if !terminating.is_empty() {
        DrainStep::Waiting(terminating)
    } else {
        DrainStep::Done
    }
}

/// How a drain that is not done is looked at again, on its own clock rather than the
/// controller's resync: terminating pods are polled every `first` (kubectl polls each
/// second), refused evictions are retried after `first`, doubling with every consecutive
/// refusal up to `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrainRetry {
    /// The poll interval while evicted pods terminate, and the first retry of a refusal.
    pub first: Duration,
    /// The longest wait between retries of refused evictions.
    pub max: Duration,
}

impl Default for DrainRetry {
    fn default() -> Self {
        let b = Backoff::DRAIN;
        DrainRetry {
            first: b.initial,
            max: b.max,
        }
    }
}

impl DrainRetry {
    /// How long to wait before the next attempt at a drain left at `step`, `refusals` being
    /// how many attempts in a row have ended [`DrainStep::Blocked`] (this one included);
    /// `None` for a drain that is done.
    pub fn delay(&self, step: &DrainStep, refusals: u32) -> Option<Duration> {
        match step {
            DrainStep::Done => None,
            DrainStep::Evict(_) | DrainStep::Waiting(_) => Some(self.first),
            DrainStep::Blocked { .. } => {
                let backoff = Backoff {
                    initial: self.first,
                    max: self.max.max(self.first),
                };
                Some(backoff.delay(refusals.saturating_sub(1)))
            }
        }
    }
}

/// The reason recorded when a drain times out, naming the pods still in its way: those
/// whose eviction is refused, then those still terminating.
pub fn drain_failure_reason(node: &str, refused: &[PodRef], terminating: &[PodRef]) -> String {
    let names = |pods: &[PodRef]| {
        pods.iter()
            .map(PodRef::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = Vec::new();
    if !refused.is_empty() {
        parts.push(format!(
            "{} pod(s) could not be evicted (disruption budget or timeout): {}",
            refused.len(),
            names(refused)
        ));
    }
    if !terminating.is_empty() {
        parts.push(format!(
            "{} pod(s) still terminating: {}",
            terminating.len(),
            names(terminating)
        ));
    }
    format!("failed to drain node {node}: {}", parts.join("; "))
}

/// The value the node's [`DRAIN_FAILURE`] annotation should take after an attempt that left
/// the drain at `step`: nothing once the drain is done, the reason naming the pods in its way
/// once it has gone on past its timeout, and otherwise whatever it holds now (a drain still
/// within its time keeps an earlier report until it succeeds).
pub fn drain_failure_annotation(node: &Node, step: &DrainStep, timed_out: bool) -> Option<String> {
    let (refused, terminating): (&[PodRef], &[PodRef]) = match step {
        DrainStep::Done => return None,
        DrainStep::Blocked {
            refused,
            terminating,
        } => (refused, terminating),
        DrainStep::Waiting(t) => (&[], t),
        // New pods to evict showed up: nothing new to report on them yet.
        DrainStep::Evict(_) => return node.annotation(DRAIN_FAILURE).map(str::to_string),
    };
    if timed_out {
        Some(drain_failure_reason(node.name(), refused, terminating))
    } else {
        node.annotation(DRAIN_FAILURE).map(str::to_string)
    }
}

/// The report of a drain blocked past its timeout, while that drain is still pending: the
/// node's [`DRAIN_FAILURE`] annotation, ignored once the drain it was about is applied.
pub fn blocked_drain_report(node: &Node) -> Option<&str> {
    match drain_action(node) {
        DrainAction::Drain { .. } => node.annotation(DRAIN_FAILURE),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::node::testing::node;

    #[test]
    fn a_request_recorded_as_applied_is_not_carried_out_again_from_a_stale_node() {
        let mut n = node("a", &[]);
        n.metadata
            .annotations
            .insert(DESIRED_DRAIN.into(), "drain-r2".into());
        // The store has not seen the lastAppliedDrain write yet.
        assert_eq!(
            drain_action_unless_recorded(&n, Some("drain-r2")),
            DrainAction::None
        );
        // An older record does not hide the new request.
        assert_eq!(
            drain_action_unless_recorded(&n, Some("uncordon-r1")),
            DrainAction::Drain {
                request: "drain-r2".into()
            }
        );
        n.metadata
            .annotations
            .insert(DESIRED_DRAIN.into(), "uncordon-r2".into());
        assert_eq!(
            drain_action_unless_recorded(&n, Some("drain-r2")),
            DrainAction::Uncordon {
                request: "uncordon-r2".into()
            }
        );
        assert_eq!(
            drain_action_unless_recorded(&n, Some("uncordon-r2")),
            DrainAction::None
        );
    }

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

    fn pod(name: &str, uid: &str) -> Pod {
        let mut p = Pod::default();
        p.metadata.namespace = "apps".into();
        p.metadata.name = name.into();
        p.metadata.uid = uid.into();
        p.status.phase = "Running".into();
        p
    }

    fn terminating(mut p: Pod) -> Pod {
        p.metadata.deletion_timestamp = Some("2025-01-01T00:00:30Z".into());
        p
    }

    fn daemonset(mut p: Pod) -> Pod {
        p.metadata
            .owner_references
            .push(crate::api::OwnerReference {
                kind: "DaemonSet".into(),
                ..Default::default()
            });
        p
    }

    fn refs(pods: &[&Pod]) -> Vec<PodRef> {
        pods.iter().map(|p| PodRef::of(p)).collect()
    }

    fn set(pods: &[&Pod]) -> BTreeSet<PodRef> {
        refs(pods).into_iter().collect()
    }

    #[test]
    fn eviction_filter_and_reason() {
        let p = pod("web", "u1");
        assert!(should_evict(&p));
        assert!(!should_evict(&daemonset(p.clone())));
        let mut done = p.clone();
        done.status.phase = "Succeeded".into();
        assert!(!should_evict(&done));
        let mut mirror = p;
        mirror
            .metadata
            .annotations
            .insert(MIRROR_ANNOTATION.into(), "x".into());
        assert!(!should_evict(&mirror));
        let db = PodRef::of(&pod("db-0", "u2"));
        let web = PodRef::of(&pod("web-1", "u3"));
        assert_eq!(
            drain_failure_reason("w1", std::slice::from_ref(&db), &[]),
            "failed to drain node w1: 1 pod(s) could not be evicted (disruption budget or timeout): apps/db-0"
        );
        assert_eq!(
            drain_failure_reason("w1", std::slice::from_ref(&db), std::slice::from_ref(&web)),
            "failed to drain node w1: 1 pod(s) could not be evicted (disruption budget or timeout): apps/db-0; 1 pod(s) still terminating: apps/web-1"
        );
        assert_eq!(
            drain_failure_reason("w1", &[], &[db, web]),
            "failed to drain node w1: 2 pod(s) still terminating: apps/db-0, apps/web-1"
        );
    }

    #[test]
    fn a_drain_evicts_then_waits_until_its_pods_are_gone() {
        let web = pod("web", "u1");
        let db = pod("db", "u2");
        let ds = daemonset(pod("ds", "u3"));
        let none = BTreeSet::new();
        // Nothing evicted yet: evict what should go, not the DaemonSet's pod.
        let step = drain_step(&[web.clone(), db.clone(), ds.clone()], &none, &none);
        assert_eq!(step, DrainStep::Evict(refs(&[&web, &db])));
        // Both accepted, read before the API server marked them: still waiting for them.
        let evicted = set(&[&web, &db]);
        let step = drain_step(&[web.clone(), db.clone(), ds.clone()], &evicted, &none);
        assert_eq!(step, DrainStep::Waiting(refs(&[&web, &db])));
        // Terminating, then one gone: waiting for the other.
        let (tweb, tdb) = (terminating(web.clone()), terminating(db.clone()));
        let step = drain_step(&[tweb.clone(), tdb.clone(), ds.clone()], &evicted, &none);
        assert_eq!(step, DrainStep::Waiting(refs(&[&web, &db])));
        let step = drain_step(&[tdb.clone(), ds.clone()], &evicted, &none);
        assert_eq!(step, DrainStep::Waiting(refs(&[&db])));
        // A terminating pod that finished (phase Failed) is still waited for until it is gone.
        let mut finished = tdb.clone();
        finished.status.phase = "Failed".into();
        let step = drain_step(&[finished, ds.clone()], &evicted, &none);
        assert_eq!(step, DrainStep::Waiting(refs(&[&db])));
        // All gone: done, though the DaemonSet's pod stays.
        assert_eq!(drain_step(&[ds], &evicted, &none), DrainStep::Done);
        assert_eq!(drain_step(&[], &none, &none), DrainStep::Done);
    }

    #[test]
    fn a_new_pod_of_the_same_name_is_not_the_evicted_one() {
        let old = pod("db-0", "u1");
        let new = pod("db-0", "u9");
        let evicted = set(&[&old]);
        let none = BTreeSet::new();
        // The evicted pod is gone; a new one with its name is there (and must go too).
        assert_eq!(
            drain_step(std::slice::from_ref(&new), &evicted, &none),
            DrainStep::Evict(refs(&[&new]))
        );
        // One the drain does not evict does not hold it up.
        let new_ds = daemonset(new);
        assert_eq!(drain_step(&[new_ds], &evicted, &none), DrainStep::Done);
    }

    #[test]
    fn pods_terminating_before_the_drain_are_waited_for_and_refusals_block() {
        let none = BTreeSet::new();
        // Deleted by someone else (or evicted before a controller restart): wait, do not evict.
        let t = terminating(pod("web", "u1"));
        assert_eq!(
            drain_step(std::slice::from_ref(&t), &none, &none),
            DrainStep::Waiting(refs(&[&t]))
        );
        // A refused eviction blocks; the pods terminating meanwhile are named with it.
        let db = pod("db", "u2");
        let step = drain_step(&[t.clone(), db.clone()], &none, &set(&[&db]));
        assert_eq!(
            step,
            DrainStep::Blocked {
                refused: refs(&[&db]),
                terminating: refs(&[&t]),
            }
        );
        // A pod that appeared after the attempt is evicted first.
        let late = pod("late", "u3");
        let step = drain_step(&[db.clone(), late.clone()], &none, &set(&[&db]));
        assert_eq!(step, DrainStep::Evict(refs(&[&late])));
        // The next attempt starts with no refusals: the refused pod is evicted again.
        assert_eq!(
            drain_step(std::slice::from_ref(&db), &none, &none),
            DrainStep::Evict(refs(&[&db]))
        );
    }

    #[test]
    fn retries_poll_terminating_pods_and_back_off_on_refusals() {
        let r = DrainRetry::default();
        let blocked = DrainStep::Blocked {
            refused: vec![],
            terminating: vec![],
        };
        let secs = |n: u32| r.delay(&blocked, n).map(|d| d.as_secs());
        assert_eq!(
            (1..=7).map(secs).collect::<Vec<_>>(),
            [1, 2, 4, 8, 16, 30, 30].map(Some)
        );
        assert_eq!(secs(u32::MAX), Some(30));
        assert_eq!(r.delay(&DrainStep::Waiting(vec![]), 9), Some(r.first));
        assert_eq!(r.delay(&DrainStep::Evict(vec![]), 0), Some(r.first));
        assert_eq!(r.delay(&DrainStep::Done, 3), None);
        // A first delay above the cap is not shortened.
        let slow = DrainRetry {
            first: Duration::from_secs(60),
            max: Duration::from_secs(30),
        };
        assert_eq!(slow.delay(&blocked, 4), Some(Duration::from_secs(60)));
    }

    #[test]
    fn failure_annotation_follows_the_pods_in_the_way() {
        let mut n = node("w1", &[]);
        let web = PodRef::of(&pod("web-1", "u1"));
        let blocked = DrainStep::Blocked {
            refused: vec![web.clone()],
            terminating: vec![],
        };
        // Blocked, but within the timeout: nothing reported yet.
        assert_eq!(drain_failure_annotation(&n, &blocked, false), None);
        let reason = drain_failure_annotation(&n, &blocked, true);
        assert_eq!(
            reason.as_deref(),
            Some("failed to drain node w1: 1 pod(s) could not be evicted (disruption budget or timeout): apps/web-1")
        );
        n.metadata
            .annotations
            .insert(DRAIN_FAILURE.into(), reason.clone().unwrap_or_default());
        // A report stays while the drain goes on within its time, and follows the pods past it.
        assert_eq!(drain_failure_annotation(&n, &blocked, false), reason);
        let waiting = DrainStep::Waiting(vec![web.clone()]);
        assert_eq!(drain_failure_annotation(&n, &waiting, false), reason);
        assert_eq!(
            drain_failure_annotation(&n, &waiting, true).as_deref(),
            Some("failed to drain node w1: 1 pod(s) still terminating: apps/web-1")
        );
        assert_eq!(
            drain_failure_annotation(&n, &DrainStep::Evict(vec![web]), true),
            reason
        );
        // It goes once the drain is done.
        assert_eq!(drain_failure_annotation(&n, &DrainStep::Done, true), None);
    }

    #[test]
    fn a_report_counts_only_while_its_drain_is_pending() {
        let mut n = node("w1", &[]);
        let a = &mut n.metadata.annotations;
        a.insert(DRAIN_FAILURE.into(), "failed to drain node w1: x".into());
        a.insert(DESIRED_DRAIN.into(), "drain-r2".into());
        assert_eq!(blocked_drain_report(&n), Some("failed to drain node w1: x"));
        n.metadata
            .annotations
            .insert(LAST_APPLIED_DRAIN.into(), "drain-r2".into());
        assert_eq!(blocked_drain_report(&n), None);
        n.metadata
            .annotations
            .insert(DESIRED_DRAIN.into(), "uncordon-r2".into());
        assert_eq!(blocked_drain_report(&n), None);
    }
}
