//! Rollouts an administrator can trust: a pool with a [`RolloutPolicy`] updates its canaries
//! first, lets a node free its `maxUnavailable` slot only once it passed the health gate,
//! starts nodes only inside maintenance windows, stops itself when a node fails, and can go
//! back to the last config every node was healthy on.
//!
//! [`decide`] is the whole decision for one pool at one instant: the pool, its nodes, what
//! the adapter knows about each node beyond the Node ([`NodeSignals`]), the policy and `now`
//! in; the nodes to target, the policy's next status, the pool's Events and the next instant
//! the decision may change without any object changing ([`Decision::wake_at`]) out. Nothing
//! here reads a clock. A pool without a policy rolls out exactly as upstream's
//! ([`super::rollout::plan_rollout`]).
//!
//! The rules:
//! - **Healthy** on a config: targeted at it, Done on it and Ready; with a health gate also
//!   its MachineConfigNode Updated on it and the gate's pods on the node Ready. A node that is
//!   not healthy counts as unavailable while it is targeted at the rollout's config.
//! - **Failed**: degraded on the config, or (with a health gate) not healthy when the gate's
//!   timeout has run out since the controller targeted it ([`TARGETED_AT`]). A failure that was
//!   not excused pauses the rollout: no node starts towards that config until the
//!   administrator resumes (`spec.resumedAt`) or a newer config arrives.
//! - **Canaries** update first; the others start once every canary is healthy and has been
//!   for the soak time.
//! - **Windows**: outside every maintenance window no node starts; updates under way finish.
//! - **Last known good**: the last config every node of the pool was healthy on at once.
//! - **Rollback** (requested by `spec.rollback`, or automatic on a failure with
//!   `autoRollback`): nodes return to the last known good config, `maxUnavailable` at a time
//!   (nodes already down first), without canaries and regardless of windows: it is the way
//!   out of a bad config. It lasts while the pool's newest config is the one rolled back
//!   from; a newer config rolls out normally, canaries first, and once it passes the rollback
//!   is over (a requested one stays recorded until `spec.rollback` is cleared, so it is not
//!   requested again).

pub mod schedule;
pub mod settings;
pub mod window;

pub use settings::{settings, PolicyError, Settings};

use super::rollout::{plan_rollout_in, rollout_order, MaxUnavailableError, RolloutPlan, Scope};
use crate::api::node::REASON;
use crate::api::rollout_policy::{
    CanaryStatus, Pause, Phase, Rollback, RolloutPolicy, RolloutPolicyStatus, TARGETED_AT,
};
use crate::api::{Condition, MachineConfigPool, MachineConfigPoolStatus, Node};
use jiff::Timestamp;
use settings::{Canary, CanaryCount, Gate};
use std::collections::{BTreeMap, BTreeSet};

/// Pause reason: a node's daemon reports the update failed.
pub const NODE_DEGRADED: &str = "NodeDegraded";
/// Pause reason: a node was not healthy within the health gate's timeout.
pub const HEALTH_GATE_FAILED: &str = "HealthGateFailed";
/// Event reason: the rollout stopped itself.
pub const ROLLOUT_PAUSED: &str = "RolloutPaused";
/// Event reason: the administrator resumed the rollout.
pub const ROLLOUT_RESUMED: &str = "RolloutResumed";
/// Event reason: every canary passed; the other nodes may start.
pub const CANARY_PASSED: &str = "CanaryPassed";
/// Event reason: a rollback to the last known good config began.
pub const ROLLBACK_STARTED: &str = "RollbackStarted";
/// Event reason: a rollback ended (cleared, or a newer config passed).
pub const ROLLBACK_ENDED: &str = "RollbackEnded";
/// Pool (and policy) condition type: the rollout is paused by a failure.
pub const COND_PAUSED: &str = "RolloutPaused";
/// Pool (and policy) condition type: the pool is held on its last known good config.
pub const COND_ROLLED_BACK: &str = "RolledBack";

/// What the adapter knows about a node beyond its Node object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeSignals {
    /// Whether its MachineConfigNode reports it Updated on the rollout's config (`None`: no
    /// MachineConfigNode).
    pub mcn_updated: Option<bool>,
    /// Whether the health gate's pods on it are Ready (`None`: not looked at).
    pub pods_ready: Option<bool>,
}

/// One pool's inputs at one instant.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The pool.
    pub pool: &'a MachineConfigPool,
    /// Its policy.
    pub policy: &'a RolloutPolicy,
    /// The pool's nodes.
    pub nodes: &'a [&'a Node],
    /// Signals by node name.
    pub signals: &'a BTreeMap<String, NodeSignals>,
    /// The instant decided for.
    pub now: Timestamp,
    /// A node to update last (see [`super::rollout::plan_rollout`]).
    pub defer: Option<&'a str>,
}

/// An Event to record on the pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolEvent {
    /// The reason.
    pub reason: &'static str,
    /// The note.
    pub note: String,
    /// A Warning (true) or Normal event.
    pub warning: bool,
}

/// What to do for one pool now.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The nodes to point at `plan.target` now; the adapter sets [`TARGETED_AT`] to `now` in
    /// the same write.
    pub plan: RolloutPlan,
    /// The policy's status from here on.
    pub status: RolloutPolicyStatus,
    /// Events to record on the pool.
    pub events: Vec<PoolEvent>,
    /// The next instant this decision may change with no object changing (a gate timeout,
    /// the end of a soak, a window opening).
    pub wake_at: Option<Timestamp>,
}

/// How one node stands against a config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Not targeted at the config.
    Elsewhere,
    /// Healthy on it.
    Healthy,
    /// On its way; `deadline` is when its gate times out.
    Pending {
        /// What it still lacks.
        lacks: String,
        /// When the gate's timeout runs out (`None`: no gate, or targeted by someone else).
        deadline: Option<Timestamp>,
    },
    /// It failed.
    Failed {
        /// [`NODE_DEGRADED`] or [`HEALTH_GATE_FAILED`].
        reason: &'static str,
        /// What is wrong, without the node's name.
        what: String,
    },
}

/// `t` as Kubernetes writes times: RFC 3339, UTC, seconds.
pub fn rfc3339(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn parse_time(s: &str) -> Option<Timestamp> {
    s.parse().ok()
}

fn plus(t: Timestamp, secs: i64) -> Timestamp {
    t.checked_add(jiff::SignedDuration::from_secs(secs))
        .unwrap_or(Timestamp::MAX)
}

/// Why a node is not Ready, in the kubelet's words where it gave them.
fn not_ready_detail(n: &Node) -> String {
    let ready = n.status.conditions.iter().find(|c| c.type_ == "Ready");
    match ready {
        Some(c) if c.status != "True" => {
            let msg = c.message.as_deref().or(c.reason.as_deref()).unwrap_or("");
            if msg.is_empty() {
                format!("Ready={}", c.status)
            } else {
                msg.to_string()
            }
        }
        None => "no Ready condition".into(),
        _ => n.not_ready_reason().unwrap_or_default(),
    }
}

/// How `n` stands against `config` under `gate`, at `now`.
pub fn health(
    n: &Node,
    config: &str,
    gate: Option<&Gate>,
    sig: NodeSignals,
    now: Timestamp,
) -> Health {
    if n.desired_config() != config {
        return Health::Elsewhere;
    }
    if n.is_degraded() {
        let why = n
            .annotation(REASON)
            .unwrap_or("its daemon reports Degraded");
        return Health::Failed {
            reason: NODE_DEGRADED,
            what: format!("degraded on {config}: {why}"),
        };
    }
    let lacks: Option<(String, String)> = if !n.is_done_on(config) {
        Some((
            "not Done".into(),
            format!(
                "state {}, on {}",
                n.annotation(crate::api::node::STATE).unwrap_or("unknown"),
                match n.current_config() {
                    "" => "no config",
                    c => c,
                }
            ),
        ))
    } else if !n.is_ready() {
        Some(("not Ready".into(), not_ready_detail(n)))
    } else if gate.is_some() && sig.mcn_updated != Some(true) {
        Some((
            "not Updated".into(),
            match sig.mcn_updated {
                None => "no MachineConfigNode reports on it".into(),
                Some(_) => "its MachineConfigNode does not report Updated".into(),
            },
        ))
    } else if gate.is_some_and(|g| g.pods.is_some()) && sig.pods_ready != Some(true) {
        let sel = gate
            .and_then(|g| g.pods.as_ref())
            .map(ToString::to_string)
            .unwrap_or_default();
        Some((
            "pods not Ready".into(),
            match sig.pods_ready {
                None => format!("pods matching {sel} not looked at yet"),
                Some(_) => format!("pods matching {sel} are not all Ready"),
            },
        ))
    } else {
        None
    };
    let Some((what, detail)) = lacks else {
        return Health::Healthy;
    };
    // Without a gate nothing times out; pods not looked at yet are no failure either.
    let unseen_pods = what == "pods not Ready" && sig.pods_ready.is_none();
    let Some(g) = gate.filter(|_| !unseen_pods) else {
        return Health::Pending {
            lacks: format!("{what}: {detail}"),
            deadline: None,
        };
    };
    let deadline = n
        .annotation(TARGETED_AT)
        .and_then(parse_time)
        .map(|t| plus(t, g.timeout_secs));
    match deadline {
        Some(d) if now >= d => Health::Failed {
            reason: HEALTH_GATE_FAILED,
            what: format!("{what} {} after {config}: {detail}", g.timeout_text),
        },
        _ => Health::Pending {
            lacks: format!("{what}: {detail}"),
            deadline,
        },
    }
}

/// The nodes whose pods [`decide`] needs to know about: with a gate on pods, nodes on the
/// rollout's config that pass every other check and whose `pods_ready` is unknown.
pub fn pods_to_check(input: &Input<'_>) -> Vec<String> {
    let Ok(s) = settings(input.policy) else {
        return Vec::new();
    };
    let Some(gate) = s.gate.as_ref().filter(|g| g.pods.is_some()) else {
        return Vec::new();
    };
    let target = effective_target(input.pool, input.policy);
    let status = input.policy.status.as_ref();
    if status.and_then(|s| s.last_known_good.as_deref()) == Some(target.as_str()) {
        // Every node passed on it already.
        return Vec::new();
    }
    input
        .nodes
        .iter()
        .filter(|n| {
            let sig = input.signals.get(n.name()).copied().unwrap_or_default();
            sig.pods_ready.is_none()
                && n.desired_config() == target
                && n.is_done_on(&target)
                && n.is_ready()
                && sig.mcn_updated == Some(true)
                && !n.is_degraded()
                && gate.pods.is_some()
        })
        .map(|n| n.name().to_string())
        .collect()
}

/// The config the pool's nodes are moved to: the rollback's target while a rollback of the
/// pool's newest config is recorded, else the pool's newest.
pub fn effective_target(pool: &MachineConfigPool, policy: &RolloutPolicy) -> String {
    let newest = &pool.spec.configuration.name;
    match policy.status.as_ref().and_then(|s| s.rollback.as_ref()) {
        Some(r) if &r.from == newest => r.to.clone(),
        _ => newest.clone(),
    }
}

/// The canaries of a rollout to `target`: the selector's nodes, or the first N in rollout
/// order, keeping those already chosen and preferring nodes already targeted at `target`.
fn canary_nodes(
    c: &Canary,
    nodes: &[&Node],
    target: &str,
    prev: Option<&CanaryStatus>,
) -> Vec<String> {
    let mut ordered: Vec<&Node> = nodes.to_vec();
    ordered.sort_by(|a, b| rollout_order(a, b));
    let n = match &c.count {
        CanaryCount::Selector(sel) => {
            return ordered
                .iter()
                .filter(|n| sel.matches(&n.metadata.labels))
                .map(|n| n.name().to_string())
                .collect()
        }
        _ => c.count_of(nodes.len()).unwrap_or(0),
    };
    let mut out: Vec<String> = Vec::with_capacity(n);
    let kept = prev
        .filter(|p| p.config == target)
        .map(|p| p.nodes.as_slice())
        .unwrap_or(&[]);
    let push = |name: &str, out: &mut Vec<String>| {
        if out.len() < n && !out.iter().any(|o| o == name) {
            out.push(name.to_string());
        }
    };
    for k in kept {
        if ordered.iter().any(|n| n.name() == k) {
            push(k, &mut out);
        }
    }
    for node in ordered.iter().filter(|n| n.desired_config() == target) {
        push(node.name(), &mut out);
    }
    for node in ordered.iter().filter(|n| n.is_ready()) {
        push(node.name(), &mut out);
    }
    for node in &ordered {
        push(node.name(), &mut out);
    }
    out
}

fn set_condition(
    conds: &mut Vec<Condition>,
    type_: &str,
    on: bool,
    reason: &str,
    message: &str,
    now: &str,
) {
    let mut c = Condition {
        last_transition_time: Some(now.into()),
        reason: Some(reason.into()),
        message: Some(message.into()),
        ..Condition::of(type_, on)
    };
    if let Some(cur) = conds.iter().find(|c| c.type_ == type_) {
        if cur.status == c.status && cur.reason() == reason && cur.message() == message {
            return;
        }
        if cur.status == c.status {
            c.last_transition_time = cur.last_transition_time.clone();
        }
    }
    conds.retain(|c| c.type_ != type_);
    conds.push(c);
}

/// Decides one pool's rollout step under its policy. An invalid policy (or an invalid
/// `maxUnavailable`) starts nothing and says why in the status.
pub fn decide(input: &Input<'_>) -> Decision {
    let now = input.now;
    let stamp = rfc3339(now);
    let old = input.policy.status_or_default();
    let mut st = old.clone();
    st.observed_generation = input.policy.metadata.generation;
    let mut events: Vec<PoolEvent> = Vec::new();
    let newest = input.pool.spec.configuration.name.clone();
    let mut out = Decision {
        plan: RolloutPlan {
            target: newest.clone(),
            ..RolloutPlan::default()
        },
        status: st.clone(),
        events: Vec::new(),
        wake_at: None,
    };
    let s = match settings(input.policy) {
        Ok(s) => s,
        Err(e) => {
            st.phase = Phase::Invalid;
            st.message = e.to_string();
            out.status = st;
            return out;
        }
    };
    if newest.is_empty() {
        st.phase = Phase::Idle;
        st.message = "the pool has no rendered config yet".into();
        out.status = st;
        return out;
    }
    let nodes = input.nodes;
    let sig = |n: &Node| input.signals.get(n.name()).copied().unwrap_or_default();
    let gate = s.gate.as_ref();

    // What belongs to an older config is over.
    if st.canary.as_ref().is_some_and(|c| c.config != newest) {
        st.canary = None;
    }
    if st.excused_config.as_deref().is_some_and(|c| c != newest) {
        st.excused_config = None;
        st.excused_nodes.clear();
    }
    if let Some(p) = st.pause.take() {
        if p.config == newest {
            st.pause = Some(p);
        } else {
            events.push(PoolEvent {
                reason: ROLLOUT_RESUMED,
                note: format!(
                    "{newest} supersedes {}, on which the rollout was paused",
                    p.config
                ),
                warning: false,
            });
        }
    }

    // Last known good: the config every node is healthy on.
    let all_healthy_on = |config: &str, full: bool| {
        !nodes.is_empty()
            && nodes.iter().all(|n| {
                if full {
                    health(n, config, gate, sig(n), now) == Health::Healthy
                } else {
                    n.is_done_on(config) && n.is_ready()
                }
            })
    };
    let mut good = None;
    if all_healthy_on(&newest, true) {
        good = Some(newest.clone());
    } else if let Some(first) = nodes.first() {
        let c = first.current_config().to_string();
        if !c.is_empty() && c != newest && all_healthy_on(&c, false) {
            good = Some(c);
        }
    }
    if let Some(g) = good.filter(|g| st.last_known_good.as_ref() != Some(g)) {
        st.previous_known_good = st.last_known_good.replace(g);
    }

    let passed = st.last_known_good.as_deref() == Some(newest.as_str());

    // Rollbacks: cleared, ended, requested.
    if let Some(r) = st.rollback.clone() {
        if !r.automatic && !s.rollback {
            st.rollback = None;
            events.push(PoolEvent {
                reason: ROLLBACK_ENDED,
                note: format!(
                    "rollback from {} to {} cleared; rolling out {newest}",
                    r.from, r.to
                ),
                warning: false,
            });
        } else if r.from != newest && st.last_known_good.as_deref() == Some(newest.as_str()) {
            // A newer config passed. An automatic rollback is over; a requested one stays
            // recorded (not in force) until `spec.rollback` is cleared.
            if old.last_known_good.as_deref() != Some(newest.as_str()) {
                events.push(PoolEvent {
                    reason: ROLLBACK_ENDED,
                    note: format!("{newest} passed; the rollback from {} is over", r.from),
                    warning: false,
                });
            }
            if r.automatic {
                st.rollback = None;
            }
        }
    }
    let start_rollback =
        |st: &mut RolloutPolicyStatus, automatic: bool, events: &mut Vec<PoolEvent>| -> bool {
            let back_to = match st.last_known_good.clone() {
                Some(lkg) if lkg == newest => st.previous_known_good.clone(),
                other => other,
            };
            match back_to {
                Some(lkg) if lkg != newest => {
                    events.push(PoolEvent {
                        reason: ROLLBACK_STARTED,
                        note: format!(
                            "rolling {} back from {newest} to its last known good config {lkg}",
                            input.pool.name()
                        ),
                        warning: true,
                    });
                    st.rollback = Some(Rollback {
                        from: newest.clone(),
                        to: lkg,
                        automatic,
                        since: stamp.clone(),
                        disruption: None,
                    });
                    true
                }
                _ => false,
            }
        };
    let mut rollback_note = String::new();
    if st.rollback.is_none() && s.rollback && !start_rollback(&mut st, false, &mut events) {
        rollback_note = format!(
            "; rollback requested but there is no last known good config other than {newest}"
        );
    }

    // Failures on the newest config pause the rollout.
    let canary_set: BTreeSet<String> = st
        .canary
        .as_ref()
        .map(|c| c.nodes.iter().cloned().collect())
        .unwrap_or_default();
    let excused: BTreeSet<&str> = st.excused_nodes.iter().map(String::as_str).collect();
    let mut wake: Vec<Timestamp> = Vec::new();
    let mut failures: Vec<(&Node, &'static str, String)> = Vec::new();
    let mut gating: Vec<String> = Vec::new();
    let mut ordered: Vec<&Node> = nodes.to_vec();
    ordered.sort_by(|a, b| rollout_order(a, b));
    for n in &ordered {
        // Once every node passed on the newest config its rollout is over: a node failing
        // later is the pool's NodeDegraded, as upstream reports it, not a reason to pause.
        let h = health(n, &newest, if passed { None } else { gate }, sig(n), now);
        match h {
            Health::Failed { .. } if passed => {}
            Health::Failed { reason, what } if !excused.contains(n.name()) => {
                failures.push((n, reason, what));
                gating.push(n.name().to_string());
            }
            Health::Failed { .. } => gating.push(n.name().to_string()),
            Health::Pending { deadline, .. } => {
                gating.push(n.name().to_string());
                wake.extend(deadline);
            }
            Health::Healthy | Health::Elsewhere => {}
        }
    }
    let role = |n: &str| {
        if canary_set.contains(n) {
            "canary"
        } else {
            "node"
        }
    };
    if let Some(p) = st.pause.as_mut().filter(|p| p.config == newest) {
        for (n, _, _) in &failures {
            if !p.nodes.iter().any(|x| x == n.name()) {
                p.nodes.push(n.name().to_string());
            }
        }
        if s.resumed_at
            .is_some_and(|r| parse_time(&p.since).is_some_and(|since| since <= r))
        {
            let p = st.pause.take().unwrap_or_default();
            st.excused_config = Some(newest.clone());
            for n in p
                .nodes
                .iter()
                .chain(failures.iter().map(|(n, _, _)| &n.metadata.name))
            {
                if !st.excused_nodes.contains(n) {
                    st.excused_nodes.push(n.clone());
                }
            }
            events.push(PoolEvent {
                reason: ROLLOUT_RESUMED,
                note: format!("rollout of {newest} resumed past {}", p.nodes.join(", ")),
                warning: false,
            });
            failures.clear();
        }
    }
    if st.pause.is_none()
        && !failures.is_empty()
        && st.rollback.as_ref().is_none_or(|r| r.from != newest)
    {
        let (n, reason, what) = &failures[0];
        let message = format!("{} {} {what}", role(n.name()), n.name());
        events.push(PoolEvent {
            reason: ROLLOUT_PAUSED,
            note: message.clone(),
            warning: true,
        });
        st.pause = Some(Pause {
            config: newest.clone(),
            node: n.name().to_string(),
            nodes: failures
                .iter()
                .map(|(n, _, _)| n.name().to_string())
                .collect(),
            reason: (*reason).to_string(),
            message,
            since: stamp.clone(),
        });
        if s.auto_rollback && st.rollback.is_none() {
            start_rollback(&mut st, true, &mut events);
        }
    }

    let max_err = |e: MaxUnavailableError, st: &mut RolloutPolicyStatus| {
        st.phase = Phase::Invalid;
        st.message = e.to_string();
    };

    // The pool's own pause stops everything.
    if input.pool.spec.paused {
        st.phase = Phase::Idle;
        st.message = "the pool is paused (spec.paused)".into();
        return finish(out, st, events, wake, &stamp);
    }

    // A rollback in force: back to the last known good config.
    if let Some(r) = st.rollback.clone().filter(|r| r.from == newest) {
        st.target = r.to.clone();
        let also: Vec<String> = Vec::new();
        let scope = Scope {
            target: &r.to,
            allow: None,
            also_unavailable: &also,
            image: None,
        };
        match plan_rollout_in(input.pool, nodes, input.defer, &scope) {
            Err(e) => max_err(e, &mut st),
            Ok(mut plan) => {
                // Nodes already down go back at once: they take no slot.
                for n in &ordered {
                    if !n.is_ready()
                        && n.desired_config() != r.to
                        && !plan.update.iter().any(|u| u == n.name())
                    {
                        plan.update.push(n.name().to_string());
                    }
                }
                let back = nodes.iter().all(|n| n.is_done_on(&r.to) && n.is_ready());
                st.phase = if back {
                    Phase::RolledBack
                } else {
                    Phase::RollingBack
                };
                st.message = format!(
                    "{} from {} to {} ({}){}",
                    if back { "rolled back" } else { "rolling back" },
                    r.from,
                    r.to,
                    if r.automatic {
                        "automatic"
                    } else {
                        "requested"
                    },
                    st.pause
                        .as_ref()
                        .map(|p| format!(": {}", p.message))
                        .unwrap_or_default()
                );
                out.plan = plan;
            }
        }
        return finish(out, st, events, wake, &stamp);
    }
    st.target = newest.clone();

    if let Some(p) = &st.pause {
        st.phase = Phase::Paused;
        st.message = format!("paused: {}; resume with spec.resumedAt", p.message);
        return finish(out, st, events, wake, &stamp);
    }

    // Canaries.
    let excused: BTreeSet<&str> = st.excused_nodes.iter().map(String::as_str).collect();
    let mut allow: Option<BTreeSet<String>> = None;
    let mut soaking = false;
    if let Some(c) = &s.canary {
        let passed = st
            .canary
            .as_ref()
            .is_some_and(|x| x.config == newest && x.passed);
        if !passed {
            let names = canary_nodes(c, nodes, &newest, st.canary.as_ref());
            let healthy = !names.is_empty()
                && names.iter().all(|name| {
                    excused.contains(name.as_str())
                        || nodes.iter().find(|n| n.name() == name).is_some_and(|n| {
                            health(n, &newest, gate, sig(n), now) == Health::Healthy
                        })
                });
            let mut cs = st
                .canary
                .take()
                .filter(|x| x.config == newest)
                .unwrap_or(CanaryStatus {
                    config: newest.clone(),
                    ..CanaryStatus::default()
                });
            cs.nodes = names.clone();
            let resumed_past = names.iter().any(|n| excused.contains(n.as_str()));
            if names.is_empty() || healthy && resumed_past {
                // No canary, or the administrator resumed past a failed one: go on.
                cs.passed = true;
            } else if healthy {
                let since = cs
                    .healthy_since
                    .as_deref()
                    .and_then(parse_time)
                    .unwrap_or(now);
                cs.healthy_since = Some(rfc3339(since));
                let end = plus(since, c.soak_secs);
                if now >= end {
                    cs.passed = true;
                    events.push(PoolEvent {
                        reason: CANARY_PASSED,
                        note: format!(
                            "canaries {} healthy on {newest}{}; rolling out to the rest of {}",
                            names.join(", "),
                            if c.soak_secs > 0 {
                                format!(" for {}", c.soak_text)
                            } else {
                                String::new()
                            },
                            input.pool.name()
                        ),
                        warning: false,
                    });
                } else {
                    soaking = true;
                    wake.push(end);
                }
            } else {
                cs.healthy_since = None;
                allow = Some(names.iter().cloned().collect());
            }
            st.canary = Some(cs);
        }
    }

    // Windows.
    let open = s.windows.is_open(now);
    st.next_window = if open {
        None
    } else {
        s.windows.next_open(now).map(rfc3339)
    };
    if let Some(t) = s.windows.next_open(now).filter(|_| !open) {
        wake.push(t);
    }

    let all_done = all_healthy_on(&newest, !passed);
    let scope = Scope {
        target: &newest,
        allow: allow.as_ref(),
        also_unavailable: &gating,
        image: None,
    };
    match plan_rollout_in(input.pool, nodes, input.defer, &scope) {
        Err(e) => max_err(e, &mut st),
        Ok(mut plan) => {
            let may_start = open && !soaking;
            if !may_start {
                plan.update.clear();
            }
            let canaries = st.canary.as_ref().filter(|c| !c.passed);
            (st.phase, st.message) = if all_done {
                (Phase::Done, format!("every node is healthy on {newest}"))
            } else if soaking {
                let c = st.canary.as_ref();
                (
                    Phase::Soaking,
                    format!(
                        "canaries {} healthy on {newest}; soaking until {}",
                        c.map(|c| c.nodes.join(", ")).unwrap_or_default(),
                        wake.iter().max().map(|t| rfc3339(*t)).unwrap_or_default()
                    ),
                )
            } else if !open {
                (
                    Phase::WaitingForWindow,
                    format!(
                        "outside every maintenance window; next opens {}",
                        st.next_window.clone().unwrap_or_default()
                    ),
                )
            } else if let Some(c) = canaries {
                (
                    Phase::Canary,
                    format!("canaries {} updating to {newest}", c.nodes.join(", ")),
                )
            } else {
                (Phase::Rolling, format!("rolling out {newest}"))
            };
            out.plan = plan;
        }
    }
    st.message.push_str(&rollback_note);
    finish(out, st, events, wake, &stamp)
}

fn finish(
    mut out: Decision,
    mut st: RolloutPolicyStatus,
    events: Vec<PoolEvent>,
    wake: Vec<Timestamp>,
    stamp: &str,
) -> Decision {
    let paused = st.pause.clone();
    set_condition(
        &mut st.conditions,
        COND_PAUSED,
        paused.is_some(),
        paused.as_ref().map_or("", |p| p.reason.as_str()),
        paused.as_ref().map_or("", |p| p.message.as_str()),
        stamp,
    );
    let rb = st
        .rollback
        .clone()
        .filter(|r| st.target == r.to && r.to != r.from);
    set_condition(
        &mut st.conditions,
        COND_ROLLED_BACK,
        rb.is_some(),
        if rb.as_ref().is_some_and(|r| r.automatic) {
            "Automatic"
        } else if rb.is_some() {
            "Requested"
        } else {
            ""
        },
        &rb.as_ref()
            .map(|r| format!("held on {} instead of {}", r.to, r.from))
            .unwrap_or_default(),
        stamp,
    );
    out.status = st;
    out.events = events;
    out.wake_at = wake.into_iter().min();
    out
}

/// Adds what the policy's status says to the pool's status, so `kubectl get mcp` shows it:
/// a paused rollout makes the pool Degraded (its message naming the node and why) and not
/// Updating; a rollback says so in Updating. Conditions `RolloutPaused` and `RolledBack` are
/// set either way.
pub fn overlay_pool_status(
    pool: &mut MachineConfigPoolStatus,
    policy: &RolloutPolicyStatus,
    now: &str,
) {
    use super::pool_status::{pool_condition, DEGRADED, UPDATING};
    for c in &policy.conditions {
        if c.type_ == COND_PAUSED || c.type_ == COND_ROLLED_BACK {
            pool.set_condition(pool_condition(
                &c.type_,
                c.is_true(),
                c.reason().into(),
                c.message().into(),
                now,
            ));
        }
    }
    if let Some(p) = &policy.pause {
        let degraded = pool
            .condition(DEGRADED)
            .map(|c| c.message().to_string())
            .unwrap_or_default();
        let message = if degraded.is_empty() || degraded.contains(&p.message) {
            format!("Rollout paused: {}", p.message)
        } else {
            format!("{degraded}, Rollout paused: {}", p.message)
        };
        pool.set_condition(pool_condition(DEGRADED, true, String::new(), message, now));
    }
    match policy.phase {
        Phase::Paused | Phase::WaitingForWindow | Phase::Soaking => {
            let updating = policy.phase == Phase::Soaking;
            pool.set_condition(pool_condition(
                UPDATING,
                updating,
                String::new(),
                policy.message.clone(),
                now,
            ));
        }
        Phase::RollingBack | Phase::RolledBack => {
            pool.set_condition(pool_condition(
                UPDATING,
                policy.phase == Phase::RollingBack,
                String::new(),
                policy.message.clone(),
                now,
            ));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
