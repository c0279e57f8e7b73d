//! Pool status: machine counts and conditions, as the node controller computes them.

use crate::api::node::{Node, REASON};
use crate::api::{Condition, MachineConfigPool, MachineConfigPoolStatus};
use crate::gocompat::quote::go_quote;

/// Condition type: every node is on the pool's config.
pub const UPDATED: &str = "Updated";
/// Condition type: a rollout is in progress.
pub const UPDATING: &str = "Updating";
/// Condition type: some node reports degraded.
pub const NODE_DEGRADED: &str = "NodeDegraded";
/// Condition type: the pool failed to render.
pub const RENDER_DEGRADED: &str = "RenderDegraded";
/// Condition type: NodeDegraded or RenderDegraded.
pub const DEGRADED: &str = "Degraded";

/// A pool condition stamped `now`: `reason` and `message` are always written (upstream's
/// pool conditions carry both, empty or not).
pub fn pool_condition(
    type_: &str,
    status: bool,
    reason: String,
    message: String,
    now: &str,
) -> Condition {
    Condition {
        last_transition_time: Some(now.into()),
        reason: Some(reason),
        message: Some(message),
        ..Condition::of(type_, status)
    }
}

/// The pool's status computed from its nodes (non-layered pools). `now` stamps changed
/// conditions.
pub fn calculate_status(
    pool: &MachineConfigPool,
    nodes: &[&Node],
    now: &str,
) -> MachineConfigPoolStatus {
    let old = pool.status_or_default();
    let target = pool.spec.configuration.name.as_str();
    let total = nodes.len() as i32;
    let updated: Vec<&Node> = nodes
        .iter()
        .copied()
        .filter(|n| n.is_done_on(target))
        .collect();
    let ready = updated.iter().filter(|n| n.is_ready()).count() as i32;
    let unavailable = nodes.iter().filter(|n| n.is_unavailable()).count() as i32;
    let degraded: Vec<&Node> = nodes.iter().copied().filter(|n| n.is_degraded()).collect();
    let generation = pool.metadata.generation.unwrap_or(0);

    let mut status = MachineConfigPoolStatus {
        observed_generation: generation,
        configuration: old.configuration.clone(),
        machine_count: total,
        updated_machine_count: updated.len() as i32,
        ready_machine_count: ready,
        unavailable_machine_count: unavailable,
        degraded_machine_count: degraded.len() as i32,
        conditions: old.conditions.clone(),
        extra: old.extra.clone(),
    };
    let line = format!("MachineConfig {target}");
    let all_updated = updated.len() as i32 == total && ready == total && unavailable == 0;
    if all_updated {
        status.set_condition(pool_condition(
            UPDATED,
            true,
            String::new(),
            format!("All nodes are updated with {line}"),
            now,
        ));
        status.set_condition(pool_condition(
            UPDATING,
            false,
            String::new(),
            String::new(),
            now,
        ));
        if status.configuration != pool.spec.configuration {
            status.configuration = pool.spec.configuration.clone();
        }
    } else {
        status.set_condition(pool_condition(
            UPDATED,
            false,
            String::new(),
            String::new(),
            now,
        ));
        let (updating, msg) = if pool.spec.paused {
            (false, format!("Pool is paused; will not update to {line}"))
        } else {
            (true, format!("All nodes are updating to {line}"))
        };
        status.set_condition(pool_condition(UPDATING, updating, String::new(), msg, now));
    }

    let node_degraded = !degraded.is_empty();
    let mut node_degraded_msg = String::new();
    if node_degraded {
        let reasons: Vec<String> = degraded
            .iter()
            .filter_map(|n| {
                n.annotation(REASON)
                    .map(|r| format!("Node {} is reporting: {}", n.name(), go_quote(r)))
            })
            .collect();
        node_degraded_msg = reasons.join(", ");
        status.set_condition(pool_condition(
            NODE_DEGRADED,
            true,
            format!(
                "{} nodes are reporting degraded status on sync",
                degraded.len()
            ),
            node_degraded_msg.clone(),
            now,
        ));
    } else {
        status.set_condition(pool_condition(
            NODE_DEGRADED,
            false,
            String::new(),
            String::new(),
            now,
        ));
    }
    let render_degraded = old.is_true(RENDER_DEGRADED);
    if node_degraded || render_degraded {
        status.set_condition(pool_condition(
            DEGRADED,
            true,
            String::new(),
            node_degraded_msg,
            now,
        ));
    } else {
        status.set_condition(pool_condition(
            DEGRADED,
            false,
            String::new(),
            String::new(),
            now,
        ));
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::node::testing::{node, with_configs};
    use crate::api::node::*;

    fn pool(target: &str) -> MachineConfigPool {
        let mut p = MachineConfigPool::default();
        p.metadata.name = "worker".into();
        p.spec.configuration.name = target.into();
        p
    }

    #[test]
    fn all_updated() {
        let nodes = [
            with_configs(node("a", &[]), "r1", "r1", STATE_DONE),
            with_configs(node("b", &[]), "r1", "r1", STATE_DONE),
        ];
        let refs: Vec<&Node> = nodes.iter().collect();
        let s = calculate_status(&pool("r1"), &refs, "T1");
        assert_eq!(
            (
                s.machine_count,
                s.updated_machine_count,
                s.ready_machine_count
            ),
            (2, 2, 2)
        );
        assert_eq!(s.unavailable_machine_count, 0);
        assert_eq!(s.configuration.name, "r1");
        let u = s.condition(UPDATED).unwrap();
        assert!(u.is_true());
        assert_eq!(u.message(), "All nodes are updated with MachineConfig r1");
        assert!(!s.is_true(UPDATING) && !s.is_true(DEGRADED));
    }

    #[test]
    fn updating_paused_and_degraded() {
        let mut n = with_configs(node("b", &[]), "r1", "r2", STATE_DEGRADED);
        n.metadata
            .annotations
            .insert(REASON.into(), "boom \"x\"".into());
        let nodes = [with_configs(node("a", &[]), "r2", "r2", STATE_DONE), n];
        let refs: Vec<&Node> = nodes.iter().collect();
        let s = calculate_status(&pool("r2"), &refs, "T1");
        assert_eq!((s.updated_machine_count, s.degraded_machine_count), (1, 1));
        assert_eq!(
            s.condition(UPDATING).unwrap().message(),
            "All nodes are updating to MachineConfig r2"
        );
        let nd = s.condition(NODE_DEGRADED).unwrap();
        assert_eq!(nd.reason(), "1 nodes are reporting degraded status on sync");
        assert_eq!(nd.message(), "Node b is reporting: \"boom \\\"x\\\"\"");
        assert_eq!(s.condition(DEGRADED).unwrap().message, nd.message);
        let mut p = pool("r2");
        p.spec.paused = true;
        let s = calculate_status(&p, &refs, "T1");
        let up = s.condition(UPDATING).unwrap();
        assert!(!up.is_true());
        assert_eq!(
            up.message(),
            "Pool is paused; will not update to MachineConfig r2"
        );
    }

    #[test]
    fn render_degraded_makes_degraded_and_times_are_kept() {
        let mut p = pool("r1");
        let mut st = MachineConfigPoolStatus::default();
        st.set_condition(pool_condition(
            RENDER_DEGRADED,
            true,
            String::new(),
            "x".into(),
            "T0",
        ));
        st.set_condition(pool_condition(
            DEGRADED,
            true,
            String::new(),
            String::new(),
            "T0",
        ));
        p.status = Some(st);
        let s = calculate_status(&p, &[], "T1");
        let d = s.condition(DEGRADED).unwrap();
        assert!(d.is_true());
        assert_eq!(d.last_transition_time.as_deref(), Some("T0"));
        assert!(s.is_true(RENDER_DEGRADED));
    }
}
