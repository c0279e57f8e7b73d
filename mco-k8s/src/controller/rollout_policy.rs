//! Guarded rollouts, the adapter side: what [`mco_render::controllers::rollout_policy::decide`]
//! needs beyond the caches (the health gate's pods, listed per node only while a node waits
//! on them), the policy's status written back, and when the pool wants its next look.
//!
//! An idle pool costs nothing: a node whose pods passed the gate on a config is remembered
//! and not listed again; the status is written only when it changed.

use crate::objects::{self, Model, Stored};
use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Client};
use mco_render::api::rollout_policy::{RolloutPolicy, RolloutPolicyStatus};
use mco_render::api::{MachineConfig, MachineConfigNode, MachineConfigPool, Node};
use mco_render::controllers::rollout_policy::{
    decide, effective_target, pods_to_check, settings, Decision, Input, NodeSignals,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// How soon a pool whose gate waits on pods looks at them again: the controller does not
/// watch pods (a cluster-wide pod watch would cost more than a LIST per waiting node).
pub const POD_POLL: Duration = Duration::from_secs(1);

/// How many of the gate's pod LISTs run at once.
const POD_LISTS_AT_ONCE: usize = 16;

/// What the guarded rollouts keep between syncs.
pub struct Guard {
    pods: Api<Pod>,
    policies: Api<Stored<RolloutPolicy>>,
    /// `(node, config)`: the gate's pods on the node were Ready once it ran the config.
    pods_passed: BTreeSet<(String, String)>,
    /// When each pool's decision may next change with no object changing.
    wakes: BTreeMap<String, Timestamp>,
    /// Per policy, the resourceVersion its last status write was computed from: while the
    /// cache still holds that version, it does not hold the write ([`Guard::cache_is_behind`]).
    written_from: BTreeMap<String, String>,
}

/// What [`Guard::write_status`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusWrite {
    /// The policy already held the status.
    Unchanged,
    /// The status was written.
    Written,
    /// The server holds a newer policy than the one the status was decided from (409): the
    /// decision is void.
    Stale,
}

/// How soon a pool whose policy's cache is behind the controller's own write looks again
/// (the watch event of the write wakes it first).
const BEHIND_RETRY: Duration = Duration::from_millis(100);

/// The inputs of one pool's decision that come from the caches.
pub struct PoolInputs<'a> {
    /// The pool.
    pub pool: &'a MachineConfigPool,
    /// Its policy.
    pub policy: &'a RolloutPolicy,
    /// Its nodes.
    pub nodes: &'a [&'a Node],
    /// Every MachineConfigNode.
    pub mcns: &'a [MachineConfigNode],
    /// Every MachineConfig (for the rollback's disruption summary).
    pub mcs: &'a [MachineConfig],
    /// A node to update last.
    pub defer: Option<&'a str>,
}

impl Guard {
    /// A guard using `client`.
    pub fn new(client: &Client) -> Self {
        Guard {
            pods: Api::all(client.clone()),
            policies: objects::api::<RolloutPolicy>(client),
            pods_passed: BTreeSet::new(),
            wakes: BTreeMap::new(),
            written_from: BTreeMap::new(),
        }
    }

    /// Whether the cache's `policy` is a version this controller already wrote a newer status
    /// over: a decision from it would start from a status that is no longer the policy's (a
    /// canary chosen again, a pass forgotten). The pool is looked at again shortly.
    pub fn cache_is_behind(&mut self, policy: &RolloutPolicy) -> bool {
        let name = policy.name();
        let behind = policy.metadata.resource_version.is_some()
            && self.written_from.get(name) == policy.metadata.resource_version.as_ref();
        if behind {
            self.wake_soon(name);
        } else {
            self.written_from.remove(name);
        }
        behind
    }

    /// Asks for another look at the pool `name` after [`BEHIND_RETRY`].
    fn wake_soon(&mut self, name: &str) {
        let now = Timestamp::now();
        let soon = jiff::SignedDuration::try_from(BEHIND_RETRY)
            .ok()
            .and_then(|d| now.checked_add(d).ok());
        if let Some(t) = soon {
            // A wake already past is spent: keeping it would bring the pool back at once, and
            // again, for as long as the cache trails.
            let at = self
                .wakes
                .get(name)
                .filter(|w| **w > now)
                .map_or(t, |w| (*w).min(t));
            self.wakes.insert(name.to_string(), at);
        }
    }

    /// The decision for one pool at `now`: signals from the MachineConfigNodes, the gate's
    /// pods listed for the nodes that wait on them, the rollback's disruption filled in.
    /// Remembers when the pool wants its next look ([`Guard::next_wake`]).
    pub async fn decide(
        &mut self,
        inp: &PoolInputs<'_>,
        now: Timestamp,
    ) -> Result<Decision, kube::Error> {
        let target = effective_target(inp.pool, inp.policy);
        let by_node: BTreeMap<&str, &MachineConfigNode> =
            inp.mcns.iter().map(|m| (mcn_node(m), m)).collect();
        let mut signals: BTreeMap<String, NodeSignals> = inp
            .nodes
            .iter()
            .map(|n| {
                let name = n.name().to_string();
                let mcn_updated = by_node
                    .get(name.as_str())
                    .map(|m| m.status.as_ref().is_some_and(|s| s.is_updated_on(&target)));
                let pods_ready = self
                    .pods_passed
                    .contains(&(name.clone(), target.clone()))
                    .then_some(true);
                (
                    name,
                    NodeSignals {
                        mcn_updated,
                        pods_ready,
                    },
                )
            })
            .collect();
        let check = pods_to_check(&input(inp, &signals, now));
        let mut waiting = false;
        if !check.is_empty() {
            let selector = settings(inp.policy)
                .ok()
                .and_then(|s| s.gate)
                .and_then(|g| g.pods)
                .map(|s| s.to_string())
                .unwrap_or_default();
            // A batch of nodes finishing together is looked at a few LISTs at a time.
            let this = &*self;
            let looked: Vec<(String, Result<bool, kube::Error>)> = futures::stream::iter(check)
                .map(|node| {
                    let selector = selector.as_str();
                    async move {
                        let ready = this.pods_ready(&node, selector).await;
                        (node, ready)
                    }
                })
                .buffer_unordered(POD_LISTS_AT_ONCE)
                .collect()
                .await;
            for (node, ready) in looked {
                let ready = ready?;
                if ready {
                    self.pods_passed.insert((node.clone(), target.clone()));
                } else {
                    waiting = true;
                }
                if let Some(s) = signals.get_mut(&node) {
                    s.pods_ready = Some(ready);
                }
            }
        }
        let mut d = decide(&input(inp, &signals, now));
        if let Some(r) = d
            .status
            .rollback
            .as_mut()
            .filter(|r| r.disruption.is_none())
        {
            r.disruption = disruption(inp.mcs, &r.from, &r.to);
        }
        // Configs no node of the pool runs towards are over: forget their passes.
        let members: BTreeSet<&str> = inp.nodes.iter().map(|n| n.name()).collect();
        self.pods_passed
            .retain(|(n, c)| !members.contains(n.as_str()) || *c == target);
        let poll = waiting
            .then(|| {
                now.checked_add(jiff::SignedDuration::try_from(POD_POLL).ok()?)
                    .ok()
            })
            .flatten();
        match d.wake_at.into_iter().chain(poll).min() {
            Some(t) => self.wakes.insert(inp.pool.name().to_string(), t),
            None => self.wakes.remove(inp.pool.name()),
        };
        if d.status.observed_generation.is_none() {
            d.status.observed_generation = inp.policy.metadata.generation;
        }
        Ok(d)
    }

    /// Forgets the wake-up of a pool that no longer has a policy.
    pub fn forget(&mut self, pool: &str) {
        self.wakes.remove(pool);
    }

    /// How long until the pool `name` wants another look (`None`: only on a change).
    pub fn next_wake(&self, name: &str) -> Option<Duration> {
        let at = self.wakes.get(name)?;
        let left = at.duration_since(Timestamp::now());
        Some(Duration::try_from(left).unwrap_or(Duration::ZERO))
    }

    /// Whether the gate's pods on `node` (matching the Kubernetes label selector `selector`)
    /// are all Ready. A node with no matching pods passes: the gate asks that the pods that
    /// run there come back, not that any run there.
    async fn pods_ready(&self, node: &str, selector: &str) -> Result<bool, kube::Error> {
        let mut lp = ListParams::default().fields(&format!("spec.nodeName={node}"));
        if !selector.is_empty() {
            lp = lp.labels(selector);
        }
        let pods = self.pods.list(&lp).await?;
        Ok(pods.items.iter().all(pod_is_ready))
    }

    /// Writes `status` as the policy's, unless it is what the policy holds. The merge patch is
    /// computed against the cached policy and carries its resourceVersion, so the server
    /// refuses it (409) when the cache was behind: a patch computed from an older status
    /// would leave fields of the newer one standing.
    pub async fn write_status(
        &mut self,
        policy: &RolloutPolicy,
        status: &RolloutPolicyStatus,
    ) -> Result<StatusWrite, kube::Error> {
        if policy.status.as_ref() == Some(status) {
            return Ok(StatusWrite::Unchanged);
        }
        // Against what is stored: a policy without a status has none of the defaults.
        let old = match &policy.status {
            Some(s) => serde_json::to_value(s),
            None => Ok(Value::Object(serde_json::Map::new())),
        };
        let (Ok(old), Ok(new)) = (old, serde_json::to_value(status)) else {
            return Ok(StatusWrite::Unchanged);
        };
        let mut patch = serde_json::json!({ "status": merge_diff(&old, &new) });
        if let Some(rv) = &policy.metadata.resource_version {
            patch["metadata"] = serde_json::json!({ "resourceVersion": rv });
        }
        let written = self
            .policies
            .patch_status(
                policy.name(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await;
        match written {
            Ok(stored) => {
                // A write the server took as no change keeps the version: nothing to wait for.
                match &policy.metadata.resource_version {
                    Some(rv) if stored.metadata.resource_version.as_ref() != Some(rv) => {
                        self.written_from
                            .insert(policy.name().to_string(), rv.clone());
                    }
                    _ => {}
                }
                Ok(StatusWrite::Written)
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                self.wake_soon(policy.name());
                Ok(StatusWrite::Stale)
            }
            Err(e) => Err(e),
        }
    }
}

/// The core's input of a pool's decision.
fn input<'a>(
    inp: &'a PoolInputs<'a>,
    signals: &'a BTreeMap<String, NodeSignals>,
    now: Timestamp,
) -> Input<'a> {
    Input {
        pool: inp.pool,
        policy: inp.policy,
        nodes: inp.nodes,
        signals,
        now,
        defer: inp.defer,
    }
}

/// The node a MachineConfigNode reports on (its spec's, else its own name).
fn mcn_node(m: &MachineConfigNode) -> &str {
    match m.spec.node.name.as_str() {
        "" => m.metadata.name.as_str(),
        n => n,
    }
}

/// Whether a pod's `Ready` condition is True.
fn pod_is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// What a node does going from the rendered config `from` to `to`, in one line (`2 files
/// change; no drain, reboot`), when both are known and readable.
pub fn disruption(mcs: &[MachineConfig], from: &str, to: &str) -> Option<String> {
    use mco_render::plan;
    let input = |name: &str| {
        let mc = mcs.iter().find(|m| m.name() == name)?;
        plan::input::rendered_input(mc.name(), &mc.spec).ok()
    };
    let (old, new) = (input(from)?, input(to)?);
    let p = plan::compute(&old, &new, None);
    Some(plan::report::PlanReport::new(&p, &old, &new).human())
}

/// The JSON merge patch (RFC 7386) turning `old` into `new`: changed members set, members
/// `new` lacks set to null (the status types leave empty fields out, which a merge patch of
/// `new` alone would keep).
pub fn merge_diff(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut out = serde_json::Map::new();
            for (k, v) in n {
                match o.get(k) {
                    Some(ov) if ov == v => {}
                    Some(ov) => {
                        out.insert(k.clone(), merge_diff(ov, v));
                    }
                    None => {
                        out.insert(k.clone(), v.clone());
                    }
                }
            }
            for k in o.keys().filter(|k| !n.contains_key(*k)) {
                out.insert(k.clone(), Value::Null);
            }
            Value::Object(out)
        }
        _ => new.clone(),
    }
}

/// The policy of a stored object.
pub fn from_stored(o: &Stored<RolloutPolicy>) -> RolloutPolicy {
    RolloutPolicy::from_object(o.clone())
}

#[cfg(test)]
mod tests {
    use super::merge_diff;
    use serde_json::json;

    #[test]
    fn merge_diff_removes_what_is_gone() {
        let old = json!({"a": 1, "pause": {"x": 1}, "canary": {"nodes": ["n"], "since": "t"}});
        let new = json!({"a": 2, "canary": {"nodes": ["n"]}});
        let d = merge_diff(&old, &new);
        assert_eq!(d, json!({"a": 2, "pause": null, "canary": {"since": null}}));
        let mut patched = old.clone();
        apply(&mut patched, &d);
        assert_eq!(patched, new);
    }

    /// The gate's selector goes to the API server as its `labelSelector` syntax.
    #[test]
    fn gate_selector_prints_as_a_label_selector() {
        let sel: mco_render::api::selector::LabelSelector = serde_json::from_value(json!({
            "matchLabels": {"app": "probe"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["b", "a"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "NotIn", "values": ["x"]},
                {"key": "team", "operator": "Exists"}
            ]
        }))
        .unwrap();
        assert_eq!(
            sel.compile().unwrap().to_string(),
            "app=probe,!canary,team,tier in (a,b),zone notin (x)"
        );
    }

    /// RFC 7386, to check the diff against.
    pub(super) fn apply(target: &mut serde_json::Value, patch: &serde_json::Value) {
        match (target.as_object_mut(), patch.as_object()) {
            (Some(t), Some(p)) => {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(k);
                    } else {
                        apply(t.entry(k.clone()).or_insert(serde_json::Value::Null), v);
                    }
                }
            }
            _ => *target = patch.clone(),
        }
    }
}
