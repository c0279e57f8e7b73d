//! When the nodes still to update should be done: the rollout's schedule
//! ([`crate::controllers::rollout_policy::schedule`]) from now, over the pool's nodes not yet
//! on its config, under its RolloutPolicy (canaries already passed or soaking are not
//! scheduled again; a soak under way delays the rest until it ends). The nodes already
//! targeted come first, as they hold their `maxUnavailable` slots until they are done; the
//! others follow in the controller's order.

use crate::api::node::ZONE_LABEL;
use crate::api::rollout_policy::{Phase, RolloutPolicy};
use crate::api::{MachineConfigPool, Node};
use crate::controllers::rollout_policy::schedule::{
    describe_duration, schedule, Members, PoolNodes, ScheduleError, ScheduleInput,
};
use crate::controllers::rollout_policy::settings;
use jiff::{SignedDuration, Timestamp};
use std::collections::BTreeMap;
use std::time::Duration;

/// The schedule's answer for one pool.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Estimates {
    /// When each scheduled node should be done.
    pub nodes: BTreeMap<String, Timestamp>,
    /// When the last one should be.
    pub finish: Option<Timestamp>,
}

/// The schedule of the pool's remaining nodes towards `pool.spec.configuration.name`, from
/// `now`, each node taking `per_node`.
pub fn estimate(
    pool: &MachineConfigPool,
    policy: Option<&RolloutPolicy>,
    nodes: &[&Node],
    now: Timestamp,
    per_node: Duration,
) -> Result<Estimates, ScheduleError> {
    let target = pool.spec.configuration.name.as_str();
    let mut start = now;
    let policy = policy.map(|p| {
        let st = p.status_or_default();
        let canary = st.canary.as_ref().filter(|c| c.config == target);
        let passed = canary.is_some_and(|c| c.passed)
            || matches!(st.phase, Phase::Rolling | Phase::Done) && st.target == target;
        let soaking = st.phase == Phase::Soaking && canary.is_some();
        let mut p = p.clone();
        if soaking {
            let soak = settings(&p)
                .ok()
                .and_then(|s| s.canary.map(|c| c.soak_secs))
                .unwrap_or(0);
            let since = canary
                .and_then(|c| c.healthy_since.as_deref())
                .and_then(|t| t.parse::<Timestamp>().ok());
            if let Some(end) =
                since.and_then(|t| t.checked_add(SignedDuration::from_secs(soak)).ok())
            {
                start = start.max(end);
            }
        }
        if passed || soaking {
            p.spec.canary = None;
        }
        p
    });
    // Targeted nodes sort first in the schedule's (the controller's) order: zone "" and no
    // age come before every zone and age.
    let ordered: Vec<Node> = nodes
        .iter()
        .map(|n| {
            let mut n = (*n).clone();
            if n.desired_config() == target {
                n.metadata.labels.insert(ZONE_LABEL.into(), String::new());
                n.metadata.creation_timestamp = None;
            }
            n
        })
        .collect();
    let ordered: Vec<&Node> = ordered.iter().collect();
    let s = schedule(&ScheduleInput {
        pool,
        policy: policy.as_ref(),
        nodes: PoolNodes::Known(&ordered),
        target,
        now: start,
        per_node,
        windows: true,
    })?;
    let mut out = Estimates {
        finish: (s.nodes > 0).then_some(s.finish),
        ..Estimates::default()
    };
    for step in &s.steps {
        if let Members::Named(names) = &step.nodes {
            for n in names {
                out.nodes.insert(n.clone(), step.end);
            }
        }
    }
    Ok(out)
}

/// `+25m`: how long from `now` until `t`, `oc`'s way (`+` and minutes at least).
pub fn plus(now: Timestamp, t: Timestamp) -> String {
    format!("+{}", describe_duration(t.duration_since(now)))
}
