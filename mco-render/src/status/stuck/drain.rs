//! A drain that cannot finish: the PodDisruptionBudgets that allow no eviction of the node's
//! pods, pods stuck terminating past their grace period, the drain controller's report
//! (`drainFailure`, or a daemon degraded on its drain) and its `FailedToDrain` Events; for how
//! long, from the MachineConfigNode's Drained phase or the daemon's `Drain` Event.

use super::{at, Finding, Kind, PoolFacts, Severity};
use crate::api::machine_config_node::conditions::DRAINED;
use crate::api::node::REASON;
use crate::api::Node;
use crate::controllers::drain::{blocked_drain_report, drain_action, should_evict, DrainAction};
use crate::controllers::rollout_policy::rfc3339;
use crate::status::input::{DisruptionBudget, PodView};
use crate::status::short_duration;
use jiff::Timestamp;

/// A pod is stuck terminating once its grace period (its deletionTimestamp) is over.
fn stuck_terminating<'a>(pods: &[&'a PodView], now: Timestamp) -> Vec<(&'a PodView, Timestamp)> {
    pods.iter()
        .filter(|p| should_evict(&p.pod))
        .filter_map(|p| {
            let t = at(p.pod.metadata.deletion_timestamp.as_deref()?)?;
            (t < now).then_some((*p, t))
        })
        .collect()
}

fn budget_terms(b: &DisruptionBudget) -> String {
    let spec = match (&b.min_available, &b.max_unavailable) {
        (Some(m), _) => format!(", minAvailable {m}"),
        (None, Some(m)) => format!(", maxUnavailable {m}"),
        _ => String::new(),
    };
    format!(
        "{} of {} pods healthy, {} needed{spec}",
        b.current_healthy, b.expected_pods, b.desired_healthy
    )
}

/// The node's drain, when it is blocked.
pub(super) fn finding(f: &PoolFacts<'_>, n: &Node) -> Option<Finding> {
    if !matches!(drain_action(n), DrainAction::Drain { .. }) {
        return None;
    }
    let c = f.cluster;
    let pods: Vec<&PodView> = c.pods.iter().filter(|p| p.node == n.name()).collect();
    let evictable: Vec<&PodView> = pods
        .iter()
        .copied()
        .filter(|p| should_evict(&p.pod) && !p.pod.is_terminating())
        .collect();
    let blocks: Vec<(&DisruptionBudget, Vec<&PodView>)> = c
        .disruption_budgets
        .iter()
        .filter(|b| b.disruptions_allowed <= 0)
        .map(|b| {
            (
                b,
                evictable.iter().copied().filter(|p| b.covers(p)).collect(),
            )
        })
        .filter(|(_, v): &(_, Vec<&PodView>)| !v.is_empty())
        .collect();
    let terminating = stuck_terminating(&pods, f.now);
    let degraded_reason = n
        .annotation(REASON)
        .filter(|r| n.is_degraded() && r.contains("drain"));
    let report = blocked_drain_report(n).or(degraded_reason);
    let events = c.events_about("Node", n.name());
    let started = f
        .mcn(n.name())
        .and_then(|s| s.condition(DRAINED))
        .filter(|c| c.status == "Unknown")
        .and_then(|c| at(c.last_transition_time()))
        .or_else(|| {
            events
                .iter()
                .filter(|e| e.reason == "Drain")
                .filter_map(|e| e.last)
                .max()
        });
    let failed: Vec<_> = events
        .iter()
        .filter(|e| e.reason == "FailedToDrain")
        .filter(|e| match (started, e.last) {
            (Some(s), Some(l)) => l >= s,
            _ => true,
        })
        .collect();
    if blocks.is_empty() && terminating.is_empty() && report.is_none() && failed.is_empty() {
        return None;
    }
    let since = started.or_else(|| failed.iter().filter_map(|e| e.first).min());
    let mut parts = Vec::new();
    let mut actions = Vec::new();
    for (b, covered) in &blocks {
        let names: Vec<String> = covered.iter().map(|p| p.key()).collect();
        parts.push(format!(
            "PodDisruptionBudget {} allows {} disruptions ({}) and covers pod{} {}",
            b.key(),
            b.disruptions_allowed.max(0),
            budget_terms(b),
            if names.len() == 1 { "" } else { "s" },
            names.join(", ")
        ));
        let owners: Vec<String> = covered
            .iter()
            .filter_map(|p| p.owner().map(|o| format!("{}/{}", o.kind, o.name)))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let workload = if owners.is_empty() {
            "the workload".to_string()
        } else {
            owners.join(", ")
        };
        actions.push(if b.expected_pods > 0 && b.expected_pods <= b.desired_healthy {
            format!(
                "PodDisruptionBudget {} never allows an eviction ({} pods, {} must stay healthy): add a replica to {workload} or relax the budget",
                b.key(),
                b.expected_pods,
                b.desired_healthy
            )
        } else {
            format!(
                "let PodDisruptionBudget {} allow an eviction: bring {workload} back to full health or relax the budget",
                b.key()
            )
        });
    }
    for (p, t) in &terminating {
        parts.push(format!(
            "pod {} still terminating {} past its grace period",
            p.key(),
            short_duration(f.now.duration_since(*t))
        ));
        actions.push(format!(
            "find what holds pod {} (finalizers, a container that does not stop: oc get pod -n {} {} -o yaml)",
            p.key(),
            p.pod.metadata.namespace,
            p.pod.metadata.name
        ));
    }
    if parts.is_empty() {
        let words = report
            .map(str::to_string)
            .or_else(|| failed.last().map(|e| e.message.clone()))
            .unwrap_or_default();
        parts.push(words);
        actions.push(
            "find the PodDisruptionBudgets covering the pods named (oc get pdb -A) and relax them, or scale their workloads up".into(),
        );
    }
    let mut x = f.finding(Severity::Stuck, Kind::DrainBlocked, Some(n.name()));
    x.since = since.map(rfc3339);
    x.summary = match blocks.first() {
        Some((b, _)) => format!("drain blocked by PodDisruptionBudget {}", b.key()),
        None if !terminating.is_empty() => "drain blocked: a pod does not terminate".into(),
        None => "drain blocked".into(),
    };
    x.message = format!(
        "{}: drain blocked{}: {}",
        n.name(),
        f.for_(since),
        parts.join("; ")
    );
    x.action = format!("{}; the drain retries by itself", actions.join("; "));
    Some(x)
}
