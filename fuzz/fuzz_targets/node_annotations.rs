//! Arbitrary bytes as Nodes (a JSON list, or one Node) with the daemon's annotations, read as
//! the controllers read them: the node predicates, the drain controller's pending request, the
//! pool each node belongs to, the pool status and the next rollout step over the pools of
//! `examples/cluster`. The answers stay consistent with each other whatever the annotations
//! say: a node done on the target is done, a done and ready node is available, the status
//! counts no more machines than there are, a rollout step starts no more nodes than its capacity
//! and only nodes it may start.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mco_render::api::node::{Node, DESIRED_DRAIN, LAST_APPLIED_DRAIN};
use mco_render::api::MachineConfigPool;
use mco_render::controllers::drain::{drain_action, DrainAction};
use mco_render::controllers::node_pool::pools_for_node;
use mco_render::controllers::pool_status::calculate_status;
use mco_render::controllers::rollout::plan_rollout;
use mco_render::manifests::Manifests;
use std::sync::OnceLock;

fn pools() -> &'static [MachineConfigPool] {
    static POOLS: OnceLock<Vec<MachineConfigPool>> = OnceLock::new();
    POOLS.get_or_init(|| {
        let mut m = Manifests::default();
        m.add_file(
            "00-pools.yaml",
            include_str!("../../examples/cluster/00-pools.yaml"),
        )
        .expect("the example pools read");
        m.pools
            .into_iter()
            .map(|(_, mut p)| {
                p.spec.configuration.name = format!("rendered-{}-target", p.metadata.name);
                p
            })
            .collect()
    })
}

fn check_node(n: &Node) {
    if n.is_done_on(n.desired_config()) {
        assert!(n.is_node_done());
    }
    if n.is_node_done() && n.is_ready() {
        assert!(!n.is_unavailable(), "a done, ready node is available");
    }
    if n.is_mcd_failing() {
        assert_ne!(n.current_config(), n.desired_config());
    }
    match drain_action(n) {
        DrainAction::None => {}
        DrainAction::Drain { request } | DrainAction::Uncordon { request } => {
            assert_eq!(n.annotation(DESIRED_DRAIN), Some(request.as_str()));
            assert_ne!(n.annotation(LAST_APPLIED_DRAIN), Some(request.as_str()));
        }
    }
    if let Ok(ps) = pools_for_node(n, pools()) {
        assert!(ps.len() <= pools().len());
    }
}

fuzz_target!(|data: &[u8]| {
    let nodes: Vec<Node> = match serde_json::from_slice::<Vec<Node>>(data) {
        Ok(list) => list,
        Err(_) => match serde_json::from_slice::<Node>(data) {
            Ok(n) => vec![n],
            Err(_) => return,
        },
    };
    for n in &nodes {
        check_node(n);
    }
    let refs: Vec<&Node> = nodes.iter().collect();
    for pool in pools() {
        let status = calculate_status(pool, &refs, "2026-01-01T00:00:00Z");
        let total = refs.len() as i32;
        assert_eq!(status.machine_count, total);
        for (what, count) in [
            ("updated", status.updated_machine_count),
            ("ready", status.ready_machine_count),
            ("unavailable", status.unavailable_machine_count),
            ("degraded", status.degraded_machine_count),
        ] {
            assert!((0..=total).contains(&count), "{what} {count} of {total}");
        }
        if let Ok(plan) = plan_rollout(pool, &refs, None) {
            assert!(plan.update.len() <= plan.capacity, "{plan:?}");
            for u in &plan.update {
                assert!(plan.candidates.contains(u), "{u} started but no candidate");
                assert!(nodes.iter().any(|n| n.name() == u));
            }
        }
    }
});
