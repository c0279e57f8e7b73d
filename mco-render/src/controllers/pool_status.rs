//! Pool status: machine counts and conditions, as the node controller computes them.
//!
//! One addition to upstream: a node whose drain is blocked past the drain controller's
//! timeout (it carries a `drainFailure` report, see [`blocked_drain_report`]) makes the pool
//! NodeDegraded and Degraded, naming the node and the pods in the way, although its daemon
//! still says Working. Upstream says nothing in the pool until the daemon gives up (an hour)
//! and reports the node Degraded; until then a stuck upgrade reads as a long Updating. A
//! blocked drain is what the Degraded column promises to show ("progress is blocked on
//! updating one or more nodes"), and the drain timeout (`--drain-timeout-seconds`) sets when
//! it shows. degradedMachineCount still counts only nodes whose daemon reports Degraded, and a
//! node both degraded and blocked is named once, by its daemon's reason (which carries the
//! report).

use super::drain::blocked_drain_report;
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

/// What a layered pool's status depends on (see [`crate::controllers::layered`]).
#[derive(Debug, Clone, Default)]
pub struct PoolLayering {
    /// Whether the pool has a MachineOSConfig.
    pub layered: bool,
    /// The image its nodes are done on (the MachineOSConfig's current image).
    pub image: Option<String>,
    /// A build runs or failed: the pool is not Updated.
    pub building: bool,
    /// `ImageBuildDegraded` to set (status, reason, message); `None` leaves it.
    pub build_degraded: Option<(bool, String, String)>,
}

/// The pool's status computed from its nodes (non-layered pools). `now` stamps changed
/// conditions.
pub fn calculate_status(
    pool: &MachineConfigPool,
    nodes: &[&Node],
    now: &str,
) -> MachineConfigPoolStatus {
    calculate_status_with(pool, nodes, now, &PoolLayering::default())
}

/// [`calculate_status`] for a pool that may be layered: a layered node is updated when done
/// on the pool's config with its desired image the MachineOSConfig's image; the pool is not
/// Updated while a build runs or failed; the status lines name the image; a failed build
/// makes the pool `ImageBuildDegraded` and `Degraded` ("Custom OS image build failed").
pub fn calculate_status_with(
    pool: &MachineConfigPool,
    nodes: &[&Node],
    now: &str,
    layering: &PoolLayering,
) -> MachineConfigPoolStatus {
    let old = pool.status_or_default();
    let target = pool.spec.configuration.name.as_str();
    let total = nodes.len() as i32;
    let updated: Vec<&Node> = nodes
        .iter()
        .copied()
        .filter(|n| {
            if !layering.layered {
                return n.is_done_on(target);
            }
            n.is_node_done()
                && n.desired_config() == target
                && layering.image.is_some()
                && n.annotation(crate::api::node::DESIRED_IMAGE) == layering.image.as_deref()
        })
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
        cert_expirys: old.cert_expirys.clone(),
        extra: old.extra.clone(),
    };
    let line = match layering.image.as_deref().filter(|_| layering.layered) {
        Some(image) => format!("MachineConfig {target} / Image {image}"),
        None => format!("MachineConfig {target}"),
    };
    let all_updated =
        updated.len() as i32 == total && ready == total && unavailable == 0 && !layering.building;
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

    let blocked: Vec<(&Node, &str)> = nodes
        .iter()
        .copied()
        .filter(|n| !n.is_degraded())
        .filter_map(|n| blocked_drain_report(n).map(|r| (n, r)))
        .collect();
    let node_degraded = !degraded.is_empty() || !blocked.is_empty();
    let mut node_degraded_msg = String::new();
    if node_degraded {
        let reasons: Vec<String> = degraded
            .iter()
            .filter_map(|n| {
                n.annotation(REASON)
                    .map(|r| format!("Node {} is reporting: {}", n.name(), go_quote(r)))
            })
            .chain(
                blocked
                    .iter()
                    .map(|(n, r)| format!("Node {} cannot be drained: {}", n.name(), go_quote(r))),
            )
            .collect();
        node_degraded_msg = reasons.join(", ");
        let reason = if degraded.is_empty() {
            format!("{} nodes cannot be drained", blocked.len())
        } else {
            format!(
                "{} nodes are reporting degraded status on sync",
                degraded.len()
            )
        };
        status.set_condition(pool_condition(
            NODE_DEGRADED,
            true,
            reason,
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
    if let Some((on, reason, message)) = &layering.build_degraded {
        status.set_condition(pool_condition(
            crate::controllers::layered::IMAGE_BUILD_DEGRADED,
            *on,
            reason.clone(),
            message.clone(),
            now,
        ));
    }
    let build_degraded = status.is_true(crate::controllers::layered::IMAGE_BUILD_DEGRADED);
    if node_degraded || render_degraded || build_degraded {
        if !node_degraded && build_degraded {
            node_degraded_msg = "Custom OS image build failed".to_string();
        }
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
    fn a_drain_blocked_past_its_timeout_degrades_the_pool() {
        let report = "failed to drain node b: 1 pod(s) could not be evicted (disruption budget or timeout): apps/web-0";
        let mut b = with_configs(node("b", &[]), "r1", "r2", STATE_WORKING);
        b.metadata
            .annotations
            .insert(DESIRED_DRAIN.into(), "drain-r2".into());
        let nodes = [with_configs(node("a", &[]), "r2", "r2", STATE_DONE), b];
        let refs: Vec<&Node> = nodes.iter().collect();
        // Blocked within the timeout (no report yet): only Updating.
        let s = calculate_status(&pool("r2"), &refs, "T1");
        assert!(s.is_true(UPDATING) && !s.is_true(NODE_DEGRADED) && !s.is_true(DEGRADED));

        let mut nodes = nodes;
        nodes[1]
            .metadata
            .annotations
            .insert(DRAIN_FAILURE.into(), report.into());
        let refs: Vec<&Node> = nodes.iter().collect();
        let s = calculate_status(&pool("r2"), &refs, "T2");
        assert!(s.is_true(UPDATING));
        assert_eq!(s.degraded_machine_count, 0);
        let nd = s.condition(NODE_DEGRADED).unwrap();
        assert!(nd.is_true());
        assert_eq!(nd.reason.as_deref(), Some("1 nodes cannot be drained"));
        assert_eq!(
            nd.message.as_deref(),
            Some(format!("Node b cannot be drained: \"{report}\"").as_str())
        );
        let d = s.condition(DEGRADED).unwrap();
        assert!(d.is_true());
        assert_eq!(d.message, nd.message);

        // The daemon gives up and reports Degraded with the report: named once, by the daemon.
        let a = &mut nodes[1].metadata.annotations;
        a.insert(STATE.into(), STATE_DEGRADED.into());
        a.insert(
            REASON.into(),
            format!("failed to drain node: b after 1 hour: {report}"),
        );
        let refs: Vec<&Node> = nodes.iter().collect();
        let s = calculate_status(&pool("r2"), &refs, "T3");
        let nd = s.condition(NODE_DEGRADED).unwrap();
        assert_eq!(
            nd.reason.as_deref(),
            Some("1 nodes are reporting degraded status on sync")
        );
        assert_eq!(
            nd.message.as_deref(),
            Some(
                format!("Node b is reporting: \"failed to drain node: b after 1 hour: {report}\"")
                    .as_str()
            )
        );

        // The drain completes: the report no longer counts, even before it is cleared.
        let mut done = with_configs(node("b", &[]), "r2", "r2", STATE_DONE);
        let a = &mut done.metadata.annotations;
        a.insert(DESIRED_DRAIN.into(), "uncordon-r2".into());
        a.insert(LAST_APPLIED_DRAIN.into(), "uncordon-r2".into());
        a.insert(DRAIN_FAILURE.into(), report.into());
        nodes[1] = done;
        let refs: Vec<&Node> = nodes.iter().collect();
        let s = calculate_status(&pool("r2"), &refs, "T4");
        assert!(!s.is_true(NODE_DEGRADED) && !s.is_true(DEGRADED) && !s.is_true(UPDATING));
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
