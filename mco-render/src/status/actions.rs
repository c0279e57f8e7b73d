//! What `kubectl mco`'s one-step actions write, decided from the [`Cluster`] as it stands: the
//! object, the change (a merge patch, the one the README gives as the kubectl command) and why,
//! or why the action does not apply (`pool worker is not paused`). The plugin prints the
//! decision, asks, and sends the patches; nothing here touches the cluster.
//!
//! - **resume POOL**: a RolloutPolicy paused on a failure resumes through `spec.resumedAt`
//!   (a pause that began at or before it ends; its nodes are excused); a rollback requested
//!   through `spec.rollback` ends with `spec.rollback: false`; a paused pool is unpaused with
//!   `spec.paused: false`. Each that applies is written.
//! - **rollback POOL**: `spec.rollback: true` on the pool's RolloutPolicy, when it knows a last
//!   known good config to return to.
//! - **retry NODE**: nothing to write. The node's daemon tries a failed update again by itself
//!   (every `retry_after`, 30 s, once the agent resyncs) and the drain controller a blocked
//!   drain (at most 30 s apart); what a retry cannot fix (a change that cannot be applied in
//!   place, files changed on the node) is an error naming what to do instead.
//! - **force NODE**: the [`FORCE`] annotation on the Node, which the daemon treats as it treats
//!   `/run/machine-config-daemon-force`: its on-disk check is skipped until its next update,
//!   which clears the annotation with the file.

use super::Cluster;
use crate::api::node::{Node, REASON, STATE, STATE_UNRECONCILABLE};
use crate::api::rollout_policy::{Phase, RolloutPolicy};
use crate::api::MachineConfigPool;
use crate::controllers::drain::{blocked_drain_report, drain_action, DrainAction};
use crate::controllers::rollout_policy::rfc3339;
use jiff::Timestamp;
use serde_json::{json, Value};
use std::fmt;

pub use crate::api::node::FORCE;

/// The kind of object an action writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Object {
    /// A MachineConfigPool.
    Pool,
    /// A RolloutPolicy.
    RolloutPolicy,
    /// A Node.
    Node,
}

impl Object {
    /// The kind.
    pub fn kind(self) -> &'static str {
        match self {
            Object::Pool => "MachineConfigPool",
            Object::RolloutPolicy => "RolloutPolicy",
            Object::Node => "Node",
        }
    }

    /// What kubectl calls its resource.
    pub fn resource(self) -> &'static str {
        match self {
            Object::Pool => "machineconfigpool",
            Object::RolloutPolicy => "rolloutpolicy",
            Object::Node => "node",
        }
    }
}

/// A change to one field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A MachineConfigPool's `spec.paused`.
    Paused(bool),
    /// A RolloutPolicy's `spec.resumedAt` (RFC 3339).
    ResumedAt(String),
    /// A RolloutPolicy's `spec.rollback`.
    Rollback(bool),
    /// One annotation (`None` removes it).
    Annotation {
        /// The key.
        key: String,
        /// The value.
        value: Option<String>,
    },
}

impl Change {
    /// The JSON merge patch.
    pub fn merge_patch(&self) -> Value {
        match self {
            Change::Paused(b) => json!({"spec": {"paused": b}}),
            Change::ResumedAt(t) => json!({"spec": {"resumedAt": t}}),
            Change::Rollback(b) => json!({"spec": {"rollback": b}}),
            Change::Annotation { key, value } => {
                json!({"metadata": {"annotations": {key.as_str(): value}}})
            }
        }
    }
}

/// One write: the object, the change, and what it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// The kind of object.
    pub object: Object,
    /// Its name.
    pub name: String,
    /// The change.
    pub change: Change,
    /// What it makes happen, in one line.
    pub effect: String,
}

impl Write {
    /// The same write with kubectl.
    pub fn kubectl(&self) -> String {
        format!(
            "kubectl patch {}/{} --type merge -p '{}'",
            self.object.resource(),
            self.name,
            self.change.merge_patch()
        )
    }
}

/// What an action does: its writes (none when nothing needs writing) and what to know.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Decision {
    /// The writes, in order.
    pub writes: Vec<Write>,
    /// Lines for the person asking (what happens next, what else to do).
    pub notes: Vec<String>,
}

/// Why an action does not apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActionError {
    /// No pool of that name.
    NoPool(String),
    /// No node of that name.
    NoNode(String),
    /// The action does not apply, and why (with what to do instead when there is something).
    NotApplicable(String),
}

impl fmt::Display for ActionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ActionError::NoPool(p) => write!(f, "no MachineConfigPool named {p:?}"),
            ActionError::NoNode(n) => write!(f, "no Node named {n:?}"),
            ActionError::NotApplicable(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for ActionError {}

fn pool<'a>(c: &'a Cluster, name: &str) -> Result<&'a MachineConfigPool, ActionError> {
    c.pools
        .iter()
        .find(|p| p.name() == name)
        .ok_or_else(|| ActionError::NoPool(name.to_string()))
}

fn node<'a>(c: &'a Cluster, name: &str) -> Result<&'a Node, ActionError> {
    c.nodes
        .iter()
        .find(|n| n.name() == name)
        .ok_or_else(|| ActionError::NoNode(name.to_string()))
}

fn at(s: &str) -> Option<Timestamp> {
    s.parse().ok()
}

/// The rollback in force on the pool's newest config, if any.
fn rollback_in_force<'a>(
    p: &MachineConfigPool,
    policy: &'a RolloutPolicy,
) -> Option<&'a crate::api::rollout_policy::Rollback> {
    policy
        .status
        .as_ref()
        .and_then(|s| s.rollback.as_ref())
        .filter(|r| r.from == p.spec.configuration.name)
}

/// `resume POOL` at `now`: end a RolloutPolicy's pause on the pool's newest config, a
/// requested rollback, and the pool's own pause, whichever are there.
pub fn resume(c: &Cluster, pool_name: &str, now: Timestamp) -> Result<Decision, ActionError> {
    let p = pool(c, pool_name)?;
    let newest = p.spec.configuration.name.as_str();
    let mut d = Decision::default();
    let mut refused = Vec::new();
    if let Some(policy) = c.rollout_policy(pool_name) {
        let st = policy.status_or_default();
        let name = policy.name();
        let pause = st.pause.as_ref().filter(|x| x.config == newest);
        let requested = policy
            .spec
            .resumed_at
            .as_deref()
            .and_then(at)
            .zip(pause.and_then(|x| at(&x.since)))
            .is_some_and(|(r, since)| since <= r);
        let rollback = rollback_in_force(p, policy);
        match (pause, rollback) {
            (_, Some(r)) if r.automatic => refused.push(format!(
                "RolloutPolicy {name} rolled pool {pool_name} back from {} to {} by itself (autoRollback); resuming does not end that: roll out a fixed config (it starts with the canaries)",
                r.from, r.to
            )),
            (Some(x), _) if requested => refused.push(format!(
                "RolloutPolicy {name}: resuming past the pause of {} is requested already (spec.resumedAt {}); the controller has not acted on it yet",
                x.config,
                policy.spec.resumed_at.as_deref().unwrap_or("")
            )),
            (Some(x), _) => {
                // A pause ends when it began at or before resumedAt: a clock behind the
                // controller's would ask too early.
                let since = at(&x.since).unwrap_or(now);
                let when = rfc3339(now.max(since));
                let nodes = if x.nodes.is_empty() {
                    x.node.clone()
                } else {
                    x.nodes.join(", ")
                };
                d.writes.push(Write {
                    object: Object::RolloutPolicy,
                    name: name.to_string(),
                    change: Change::ResumedAt(when),
                    effect: format!(
                        "the rollout of {} goes on past {nodes} ({}: {})",
                        x.config, x.reason, x.message
                    ),
                });
                d.notes.push(format!(
                    "{nodes} no longer stop the rollout of {}; fix them too, or they stay degraded",
                    x.config
                ));
            }
            (None, _) => {}
        }
        if policy.spec.rollback && !rollback.is_some_and(|r| r.automatic) {
            let effect = match (rollback, st.phase) {
                (Some(r), _) => format!(
                    "the rollback from {} to {} ends; the pool's nodes move to {newest} again (canaries first)",
                    r.from, r.to
                ),
                (None, Phase::RollingBack | Phase::RolledBack) => {
                    format!("the rollback ends; the pool's nodes move to {newest} again")
                }
                (None, _) => "the rollback request (not in force) is cleared".to_string(),
            };
            d.writes.push(Write {
                object: Object::RolloutPolicy,
                name: name.to_string(),
                change: Change::Rollback(false),
                effect,
            });
        }
        if d.writes.is_empty() && refused.is_empty() {
            refused.push(format!(
                "RolloutPolicy {name} has not paused the rollout of {newest} (phase {})",
                st.phase.as_str()
            ));
        }
    }
    if p.spec.paused {
        d.writes.push(Write {
            object: Object::Pool,
            name: pool_name.to_string(),
            change: Change::Paused(false),
            effect: format!(
                "pool {pool_name} is unpaused: its nodes move to {newest}, maxUnavailable at a time"
            ),
        });
    } else {
        refused.push(format!("pool {pool_name} is not paused (spec.paused)"));
    }
    if d.writes.is_empty() {
        return Err(ActionError::NotApplicable(format!(
            "nothing to resume: {}",
            refused.join("; ")
        )));
    }
    Ok(d)
}

/// `rollback POOL`: ask the pool's RolloutPolicy to return the nodes to its last known good
/// config.
pub fn rollback(c: &Cluster, pool_name: &str) -> Result<Decision, ActionError> {
    let p = pool(c, pool_name)?;
    let newest = p.spec.configuration.name.as_str();
    let Some(policy) = c.rollout_policy(pool_name) else {
        return Err(ActionError::NotApplicable(format!(
            "pool {pool_name} has no RolloutPolicy: only a RolloutPolicy knows a last known good config to roll back to (create one named {pool_name}; it learns the config every node is healthy on)"
        )));
    };
    let name = policy.name();
    let st = policy.status_or_default();
    if policy.spec.rollback {
        return Err(ActionError::NotApplicable(format!(
            "RolloutPolicy {name} requests a rollback already (phase {}); `kubectl mco resume {pool_name}` goes forward again",
            st.phase.as_str()
        )));
    }
    if let Some(r) = rollback_in_force(p, policy) {
        return Err(ActionError::NotApplicable(format!(
            "pool {pool_name} is rolling back from {} to {} already (phase {})",
            r.from,
            r.to,
            st.phase.as_str()
        )));
    }
    let back_to = match st.last_known_good.clone() {
        Some(lkg) if lkg == newest => st.previous_known_good.clone(),
        other => other,
    };
    let Some(to) = back_to.filter(|t| t != newest) else {
        return Err(ActionError::NotApplicable(format!(
            "RolloutPolicy {name} knows no good config to return to other than {newest} (lastKnownGood {}, previousKnownGood {})",
            st.last_known_good.as_deref().unwrap_or("none"),
            st.previous_known_good.as_deref().unwrap_or("none")
        )));
    };
    let mut d = Decision::default();
    d.writes.push(Write {
        object: Object::RolloutPolicy,
        name: name.to_string(),
        change: Change::Rollback(true),
        effect: format!(
            "pool {pool_name}'s nodes return from {newest} to {to}, maxUnavailable at a time (nodes already down first), without canaries and outside maintenance windows too"
        ),
    });
    if p.spec.paused {
        d.notes.push(format!(
            "pool {pool_name} is paused: no node moves until it is unpaused (kubectl mco resume {pool_name})"
        ));
    }
    d.notes.push(format!(
        "`kubectl mco resume {pool_name}` goes forward again; a newer config that passes ends the rollback too"
    ));
    Ok(d)
}

/// Whether a daemon's degraded reason is about files changed on the node.
fn is_drift(reason: &str) -> bool {
    let r = reason.to_lowercase();
    ["mismatch", "on-disk", "drift"]
        .iter()
        .any(|w| r.contains(w))
}

/// The pool whose RolloutPolicy paused its rollout on `node`, if any.
fn paused_on<'a>(c: &'a Cluster, node: &str) -> Option<&'a RolloutPolicy> {
    c.rollout_policies.iter().find(|p| {
        let st = p.status_or_default();
        st.pause
            .as_ref()
            .is_some_and(|x| x.node == node || x.nodes.iter().any(|n| n == node))
            && c.pools.iter().any(|pool| {
                pool.name() == p.name()
                    && st
                        .pause
                        .as_ref()
                        .is_some_and(|x| x.config == pool.spec.configuration.name)
            })
    })
}

/// `retry NODE`: what makes a failed drain or update on the node go again. Nothing is
/// written: both are retried by themselves; the decision says when, and what else is needed.
pub fn retry(c: &Cluster, node_name: &str) -> Result<Decision, ActionError> {
    let n = node(c, node_name)?;
    let reason = n.annotation(REASON).unwrap_or("");
    if n.annotation(STATE) == Some(STATE_UNRECONCILABLE) {
        return Err(ActionError::NotApplicable(format!(
            "node {node_name} cannot apply {} in place ({reason}); a retry fails the same way: revert that change in its MachineConfig",
            n.desired_config()
        )));
    }
    let mut d = Decision::default();
    if matches!(drain_action(n), DrainAction::Drain { .. }) {
        let report = blocked_drain_report(n)
            .map(|r| format!(" (last report: {r})"))
            .unwrap_or_default();
        d.notes.push(format!(
            "nothing to write: the drain controller tries node {node_name}'s drain again by itself, at most 30 s after the last refused eviction{report}; once the PodDisruptionBudget in its way allows an eviction (or the stuck pod is gone) the drain finishes and the update goes on"
        ));
    } else if n.is_degraded() {
        if is_drift(reason) {
            return Err(ActionError::NotApplicable(format!(
                "node {node_name} is degraded on files changed on the node ({reason}); a retry finds the same: restore them, or `kubectl mco force {node_name}`"
            )));
        }
        d.notes.push(format!(
            "nothing to write: node {node_name}'s daemon tries its update to {} again by itself (30 s after a failure, within about a minute); once the cause is fixed the next attempt goes through (the reason now: {reason})",
            n.desired_config()
        ));
    } else {
        return Err(ActionError::NotApplicable(format!(
            "node {node_name} is not degraded and has no drain pending: nothing to retry"
        )));
    }
    if let Some(p) = paused_on(c, node_name) {
        d.notes.push(format!(
            "RolloutPolicy {0} paused pool {0}'s rollout on {node_name}: once it recovers, `kubectl mco resume {0}`",
            p.name()
        ));
    }
    Ok(d)
}

/// `force NODE` at `now`: the [`FORCE`] annotation, the API's `/run/machine-config-daemon-force`.
pub fn force(c: &Cluster, node_name: &str, now: Timestamp) -> Result<Decision, ActionError> {
    let n = node(c, node_name)?;
    let reason = n.annotation(REASON).unwrap_or("");
    if let Some(t) = n.annotation(FORCE) {
        return Err(ActionError::NotApplicable(format!(
            "node {node_name} carries a force request already ({FORCE}={t}); its daemon clears it with its next update"
        )));
    }
    if n.annotation(STATE) == Some(STATE_UNRECONCILABLE) {
        return Err(ActionError::NotApplicable(format!(
            "node {node_name} cannot apply {} in place ({reason}); forcing skips the on-disk check only and does not change that: revert the change",
            n.desired_config()
        )));
    }
    if !n.is_degraded() {
        return Err(ActionError::NotApplicable(format!(
            "node {node_name} is not degraded: nothing to force"
        )));
    }
    let what = if is_drift(reason) {
        "stops reporting the files changed on the node and goes on (to Done, or with its update)"
    } else {
        "applies its update without comparing the files on disk with its current config"
    };
    let mut d = Decision::default();
    d.writes.push(Write {
        object: Object::Node,
        name: node_name.to_string(),
        change: Change::Annotation {
            key: FORCE.to_string(),
            value: Some(rfc3339(now)),
        },
        effect: format!(
            "node {node_name}'s daemon skips its on-disk check, as with /run/machine-config-daemon-force, and {what}"
        ),
    });
    d.notes.push(format!(
        "until its next update the daemon does not check node {node_name}'s files; that update clears the request"
    ));
    if let Some(p) = paused_on(c, node_name) {
        d.notes.push(format!(
            "RolloutPolicy {0} paused pool {0}'s rollout on {node_name}: once it recovers, `kubectl mco resume {0}`",
            p.name()
        ));
    }
    Ok(d)
}

#[cfg(test)]
mod tests;
