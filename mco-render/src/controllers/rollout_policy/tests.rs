use super::*;
use crate::api::node::testing::{node, with_configs};
use crate::api::node::{NodeCondition, STATE_DEGRADED, STATE_DONE, STATE_WORKING, ZONE_LABEL};
use crate::api::rollout_policy::{
    CanarySpec, HealthGateSpec, MaintenanceWindow, RolloutPolicySpec,
};
use crate::api::LabelSelector;
use proptest::prelude::*;
use serde_json::json;

const OLD: &str = "rendered-worker-old";
const NEW: &str = "rendered-worker-abc";
const T0: &str = "2026-12-01T10:00:00Z";

fn at(s: &str) -> Timestamp {
    s.parse().expect("test time")
}

fn after(secs: i64) -> Timestamp {
    plus(at(T0), secs)
}

fn pool(target: &str, max: Option<serde_json::Value>) -> MachineConfigPool {
    let mut p = MachineConfigPool::default();
    p.metadata.name = "worker".into();
    p.spec.configuration.name = target.into();
    p.spec.max_unavailable = max;
    p
}

fn policy(spec: RolloutPolicySpec) -> RolloutPolicy {
    let mut p = RolloutPolicy::default();
    p.metadata.name = "worker".into();
    p.spec = spec;
    p
}

/// `count` workers in zones a, b, c (worker-0 in a first), all Done on `OLD`.
fn workers(count: usize) -> Vec<Node> {
    (0..count)
        .map(|i| {
            let mut n = with_configs(node(&format!("worker-{i}"), &[]), OLD, OLD, STATE_DONE);
            n.metadata
                .labels
                .insert(ZONE_LABEL.into(), ["a", "b", "c"][i % 3].into());
            n.metadata.creation_timestamp = Some(format!("2026-01-01T00:00:{i:02}Z"));
            n
        })
        .collect()
}

/// Carries out a decision as the controller and a healthy agent would, at `now`: targeted
/// nodes get desiredConfig and TARGETED_AT; the status is stored.
fn target(nodes: &mut [Node], d: &Decision, now: Timestamp) {
    for n in nodes.iter_mut() {
        if d.plan.update.iter().any(|u| u == n.name()) {
            let a = &mut n.metadata.annotations;
            a.insert(
                crate::api::node::DESIRED_CONFIG.into(),
                d.plan.target.clone(),
            );
            a.insert(TARGETED_AT.into(), rfc3339(now));
            a.insert(crate::api::node::STATE.into(), STATE_WORKING.into());
        }
    }
}

/// The agent finishes every targeted node: Done on its desired config.
fn finish_all(nodes: &mut [Node]) {
    for n in nodes.iter_mut() {
        let d = n.desired_config().to_string();
        let a = &mut n.metadata.annotations;
        a.insert(crate::api::node::CURRENT_CONFIG.into(), d);
        a.insert(crate::api::node::STATE.into(), STATE_DONE.into());
    }
}

fn not_ready(n: &mut Node, message: &str) {
    n.status.conditions = vec![NodeCondition {
        type_: "Ready".into(),
        status: "Unknown".into(),
        reason: Some("NodeStatusUnknown".into()),
        message: Some(message.into()),
        last_transition_time: None,
    }];
}

struct World {
    pool: MachineConfigPool,
    policy: RolloutPolicy,
    nodes: Vec<Node>,
    signals: BTreeMap<String, NodeSignals>,
}

impl World {
    fn new(spec: RolloutPolicySpec, count: usize, max: Option<serde_json::Value>) -> Self {
        World {
            pool: pool(NEW, max),
            policy: policy(spec),
            nodes: workers(count),
            signals: BTreeMap::new(),
        }
    }

    fn decide(&self, now: Timestamp) -> Decision {
        let refs: Vec<&Node> = self.nodes.iter().collect();
        decide(&Input {
            pool: &self.pool,
            policy: &self.policy,
            nodes: &refs,
            signals: &self.signals,
            now,
            defer: None,
        })
    }

    /// Decides, carries the decision out and stores the status.
    fn step(&mut self, now: Timestamp) -> Decision {
        let d = self.decide(now);
        target(&mut self.nodes, &d, now);
        self.policy.status = Some(d.status.clone());
        d
    }

    fn all_signals(&mut self, mcn: bool, pods: bool) {
        for n in &self.nodes {
            let target = n.desired_config().to_string();
            self.signals.insert(
                n.name().to_string(),
                NodeSignals {
                    mcn_updated: Some(mcn && n.current_config() == target),
                    pods_ready: Some(pods),
                },
            );
        }
    }

    fn on(&self, config: &str) -> Vec<&str> {
        self.nodes
            .iter()
            .filter(|n| n.desired_config() == config)
            .map(|n| n.name())
            .collect()
    }
}

fn canary(nodes: serde_json::Value, soak: &str) -> Option<CanarySpec> {
    Some(CanarySpec {
        nodes: Some(nodes),
        selector: None,
        soak: Some(soak.into()),
    })
}

fn gate(timeout: &str) -> Option<HealthGateSpec> {
    Some(HealthGateSpec {
        timeout: Some(timeout.into()),
        pods: None,
    })
}

#[test]
fn canary_first_then_soak_then_the_rest() {
    let mut w = World::new(
        RolloutPolicySpec {
            canary: canary(json!(1), "30m"),
            ..Default::default()
        },
        6,
        Some(json!(3)),
    );
    // The policy finds every node on OLD: that is the last known good config.
    let d = w.step(at(T0));
    assert_eq!(
        d.plan.update,
        ["worker-0"],
        "only the canary, despite maxUnavailable 3"
    );
    assert_eq!(d.status.phase, Phase::Canary);
    assert_eq!(d.status.last_known_good.as_deref(), Some(OLD));
    assert_eq!(
        d.status.canary.as_ref().map(|c| c.nodes.clone()),
        Some(vec!["worker-0".to_string()])
    );
    // Nothing more starts while the canary updates.
    assert!(w.step(after(60)).plan.update.is_empty());
    finish_all(&mut w.nodes);
    // Healthy: the soak begins and the next instant that matters is its end.
    let d = w.step(after(120));
    assert_eq!(d.status.phase, Phase::Soaking);
    assert!(d.plan.update.is_empty());
    assert_eq!(d.wake_at, Some(after(120 + 1800)));
    assert!(w.step(after(1000)).plan.update.is_empty());
    let d = w.step(after(1920));
    assert_eq!(d.events[0].reason, CANARY_PASSED);
    assert_eq!(
        d.events[0].note,
        "canaries worker-0 healthy on rendered-worker-abc for 30m; rolling out to the rest of worker"
    );
    assert_eq!(d.status.phase, Phase::Rolling);
    assert_eq!(d.plan.update.len(), 3);
    finish_all(&mut w.nodes);
    let d = w.step(after(2000));
    assert_eq!(d.plan.update.len(), 2);
    finish_all(&mut w.nodes);
    let d = w.step(after(2100));
    assert_eq!(d.status.phase, Phase::Done);
    assert_eq!(d.status.last_known_good.as_deref(), Some(NEW));
    assert_eq!(w.on(NEW).len(), 6);
}

#[test]
fn canary_counts_and_selectors() {
    let c = |v: serde_json::Value| {
        settings(&policy(RolloutPolicySpec {
            canary: canary(v, "0s"),
            ..Default::default()
        }))
        .map(|s| s.canary.and_then(|c| c.count_of(10)))
    };
    assert_eq!(c(json!(3)), Ok(Some(3)));
    assert_eq!(c(json!(30)), Ok(Some(10)));
    assert_eq!(c(json!("25%")), Ok(Some(3)), "rounded up");
    assert_eq!(c(json!("1%")), Ok(Some(1)));
    assert_eq!(
        c(json!(0)).unwrap_err().to_string(),
        "RolloutPolicy worker: spec.canary.nodes: 0 is not a whole number of nodes of at least 1"
    );
    assert_eq!(
        c(json!("0%")).unwrap_err().to_string(),
        "RolloutPolicy worker: spec.canary.nodes: \"0%\" is not a percentage from 1% to 100%"
    );
    // A selector picks the labelled nodes, whatever the count.
    let mut w = World::new(
        RolloutPolicySpec {
            canary: Some(CanarySpec {
                selector: Some(LabelSelector {
                    match_labels: [("canary".to_string(), "true".to_string())].into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        },
        5,
        Some(json!(5)),
    );
    for i in [1, 3] {
        w.nodes[i]
            .metadata
            .labels
            .insert("canary".into(), "true".into());
    }
    let d = w.step(at(T0));
    assert_eq!(d.plan.update, ["worker-1", "worker-3"]);
}

#[test]
fn canaries_keep_their_choice() {
    // A canary already chosen stays one when a node earlier in rollout order appears.
    let mut w = World::new(
        RolloutPolicySpec {
            canary: canary(json!(1), "0s"),
            ..Default::default()
        },
        3,
        None,
    );
    w.step(at(T0));
    let mut early = with_configs(node("worker-early", &[]), OLD, OLD, STATE_DONE);
    early.metadata.labels.insert(ZONE_LABEL.into(), "a".into());
    early.metadata.creation_timestamp = Some("2025-01-01T00:00:00Z".into());
    w.nodes.push(early);
    let d = w.step(after(10));
    assert_eq!(
        d.status.canary.map(|c| c.nodes),
        Some(vec!["worker-0".to_string()])
    );
    assert!(d.plan.update.is_empty());
}

#[test]
fn a_canary_not_ready_after_the_timeout_pauses_the_rollout() {
    let mut w = World::new(
        RolloutPolicySpec {
            canary: canary(json!(1), "5m"),
            health_gate: gate("10m"),
            ..Default::default()
        },
        4,
        Some(json!(2)),
    );
    w.step(at(T0));
    assert_eq!(w.on(NEW), ["worker-0"]);
    // The canary reboots into the bad config and never comes back Ready.
    finish_all(&mut w.nodes);
    not_ready(&mut w.nodes[0], "Kubelet stopped posting node status.");
    w.all_signals(true, true);
    let d = w.step(after(300));
    assert_eq!(d.status.phase, Phase::Canary);
    assert_eq!(d.wake_at, Some(after(600)), "woken when the gate times out");
    let d = w.step(after(600));
    assert_eq!(d.status.phase, Phase::Paused);
    let pause = d.status.pause.clone().expect("paused");
    assert_eq!(
        pause.message,
        "canary worker-0 not Ready 10m after rendered-worker-abc: Kubelet stopped posting node status."
    );
    assert_eq!(pause.reason, HEALTH_GATE_FAILED);
    assert_eq!(
        d.events,
        [PoolEvent {
            reason: ROLLOUT_PAUSED,
            note: pause.message.clone(),
            warning: true
        }]
    );
    assert!(d.plan.update.is_empty());
    assert_eq!(w.on(OLD), ["worker-1", "worker-2", "worker-3"]);
    // The pool says so where `kubectl get mcp` looks.
    let mut ps = crate::controllers::pool_status::calculate_status(
        &w.pool,
        &w.nodes.iter().collect::<Vec<_>>(),
        T0,
    );
    overlay_pool_status(&mut ps, &d.status, T0);
    let degraded = ps.condition("Degraded").expect("Degraded");
    assert!(degraded.is_true());
    assert_eq!(
        degraded.message(),
        "Rollout paused: canary worker-0 not Ready 10m after rendered-worker-abc: Kubelet stopped posting node status."
    );
    assert!(!ps.condition("Updating").expect("Updating").is_true());
    assert!(ps.condition(COND_PAUSED).expect("RolloutPaused").is_true());
    // It stays paused, with no further event.
    let d = w.step(after(3600));
    assert_eq!(d.status.phase, Phase::Paused);
    assert!(d.events.is_empty());
    assert!(d.plan.update.is_empty());

    // Resuming: a time at or after the pause; the failed canary no longer stops it, and it
    // counts as passed. It still holds one of the two slots, as upstream counts it.
    w.policy.spec.resumed_at = Some(rfc3339(after(3700)));
    let d = w.step(after(3700));
    assert_eq!(d.events[0].reason, ROLLOUT_RESUMED);
    assert_eq!(d.status.excused_nodes, ["worker-0"]);
    assert_eq!(d.plan.update, ["worker-3"], "next in zone a");
    assert!(!d
        .status
        .conditions
        .iter()
        .any(|c| c.type_ == COND_PAUSED && c.is_true()));
    // A second failure pauses again.
    w.nodes[3]
        .metadata
        .annotations
        .insert(crate::api::node::STATE.into(), STATE_DEGRADED.into());
    w.nodes[3].metadata.annotations.insert(
        crate::api::node::REASON.into(),
        "failed to write /etc/x".into(),
    );
    let d = w.step(after(3800));
    assert_eq!(
        d.status.pause.map(|p| p.message),
        Some("node worker-3 degraded on rendered-worker-abc: failed to write /etc/x".to_string())
    );
}

#[test]
fn a_degraded_node_pauses_at_once_without_a_gate() {
    let mut w = World::new(RolloutPolicySpec::default(), 3, None);
    w.step(at(T0));
    let n = &mut w.nodes[0];
    n.metadata
        .annotations
        .insert(crate::api::node::STATE.into(), STATE_DEGRADED.into());
    let d = w.step(after(1));
    assert_eq!(d.status.phase, Phase::Paused);
    assert_eq!(
        d.status.pause.map(|p| p.reason),
        Some(NODE_DEGRADED.to_string())
    );
    assert!(d.plan.update.is_empty());
    // Without a gate a NotReady node only waits: no timeout.
    let mut w = World::new(RolloutPolicySpec::default(), 3, None);
    w.step(at(T0));
    finish_all(&mut w.nodes);
    not_ready(&mut w.nodes[0], "down");
    let d = w.step(after(100_000));
    assert_eq!(d.status.phase, Phase::Rolling);
    assert!(
        d.plan.update.is_empty(),
        "the NotReady node holds the only slot"
    );
}

#[test]
fn automatic_rollback_returns_the_canary() {
    let mut w = World::new(
        RolloutPolicySpec {
            canary: canary(json!(1), "0s"),
            health_gate: gate("10m"),
            auto_rollback: true,
            ..Default::default()
        },
        3,
        None,
    );
    w.step(at(T0));
    finish_all(&mut w.nodes);
    not_ready(&mut w.nodes[0], "Kubelet stopped posting node status.");
    w.all_signals(true, true);
    let d = w.step(after(600));
    let reasons: Vec<&str> = d.events.iter().map(|e| e.reason).collect();
    assert_eq!(reasons, [ROLLOUT_PAUSED, ROLLBACK_STARTED]);
    assert_eq!(d.status.phase, Phase::RollingBack);
    assert_eq!(d.status.target, OLD);
    let rb = d.status.rollback.clone().expect("rollback");
    assert_eq!(
        (rb.from.as_str(), rb.to.as_str(), rb.automatic),
        (NEW, OLD, true)
    );
    // The canary is down: it goes back at once.
    assert_eq!(d.plan.target, OLD);
    assert_eq!(d.plan.update, ["worker-0"]);
    assert_eq!(effective_target(&w.pool, &w.policy), OLD);
    // It comes back on OLD.
    finish_all(&mut w.nodes);
    w.nodes[0].status.conditions[0].status = "True".into();
    let d = w.step(after(900));
    assert_eq!(d.status.phase, Phase::RolledBack);
    assert!(d.plan.update.is_empty());
    assert_eq!(w.on(OLD).len(), 3);
    assert!(d
        .status
        .conditions
        .iter()
        .any(|c| c.type_ == COND_ROLLED_BACK && c.is_true()));
    // The newest render stays visible in the pool.
    assert_eq!(w.pool.spec.configuration.name, NEW);

    // A newer config rolls out canary first and, once it passed, ends the rollback.
    w.pool.spec.configuration.name = "rendered-worker-fix".into();
    let d = w.step(after(1000));
    assert_eq!(d.status.phase, Phase::Canary);
    assert!(
        d.status.pause.is_none(),
        "the newer config supersedes the pause"
    );
    assert_eq!(d.plan.update, ["worker-0"]);
    finish_all(&mut w.nodes);
    w.all_signals(true, true);
    let d = w.step(after(1100));
    assert_eq!(d.status.phase, Phase::Rolling);
    finish_all(&mut w.nodes);
    w.step(after(1200));
    finish_all(&mut w.nodes);
    w.all_signals(true, true);
    let d = w.step(after(1300));
    assert_eq!(d.status.phase, Phase::Done);
    assert_eq!(
        d.status.last_known_good.as_deref(),
        Some("rendered-worker-fix")
    );
    assert!(d.status.rollback.is_none());
}

#[test]
fn a_requested_rollback_ignores_windows_and_is_not_requested_twice() {
    let mut w = World::new(
        RolloutPolicySpec {
            maintenance_windows: vec![MaintenanceWindow {
                days: vec![],
                start: "10:00".into(),
                duration: "1h".into(),
                time_zone: None,
            }],
            ..Default::default()
        },
        2,
        Some(json!(2)),
    );
    w.step(at(T0));
    finish_all(&mut w.nodes);
    assert_eq!(w.step(after(60)).status.phase, Phase::Done);
    // Outside the window now; the admin asks for the way back.
    w.policy.spec.rollback = true;
    let d = w.step(after(7200));
    assert_eq!(d.events[0].reason, ROLLBACK_STARTED);
    assert_eq!(d.plan.update, ["worker-0", "worker-1"]);
    assert_eq!(d.plan.target, OLD);
    finish_all(&mut w.nodes);
    assert_eq!(w.step(after(7300)).status.phase, Phase::RolledBack);
    // Without a last known good config other than the newest, nothing to go back to.
    let mut fresh = World::new(
        RolloutPolicySpec {
            rollback: true,
            ..Default::default()
        },
        1,
        None,
    );
    fresh.nodes = vec![with_configs(node("n", &[]), NEW, NEW, STATE_DONE)];
    let d = fresh.step(at(T0));
    assert!(d.status.rollback.is_none());
    assert!(d.status.message.ends_with(
        "rollback requested but there is no last known good config other than rendered-worker-abc"
    ), "{}", d.status.message);
    // Clearing the request goes forward again.
    w.policy.spec.rollback = false;
    let d = w.step(at("2026-12-02T10:00:00Z"));
    assert_eq!(d.events[0].reason, ROLLBACK_ENDED);
    assert_eq!(d.plan.target, NEW);
    assert_eq!(d.plan.update.len(), 2);
}

#[test]
fn windows_hold_the_start_not_the_finish() {
    let mut w = World::new(
        RolloutPolicySpec {
            maintenance_windows: vec![MaintenanceWindow {
                days: vec!["Tue".into()],
                start: "23:00".into(),
                duration: "2h".into(),
                time_zone: Some("Europe/Berlin".into()),
            }],
            ..Default::default()
        },
        2,
        None,
    );
    // 2026-12-01 is a Tuesday; 23:00 in Berlin is 22:00Z.
    let d = w.step(at(T0));
    assert_eq!(d.status.phase, Phase::WaitingForWindow);
    assert_eq!(
        d.status.next_window.as_deref(),
        Some("2026-12-01T22:00:00Z")
    );
    assert_eq!(d.wake_at, Some(at("2026-12-01T22:00:00Z")));
    assert!(d.plan.update.is_empty());
    assert_eq!(
        d.status.message,
        "outside every maintenance window; next opens 2026-12-01T22:00:00Z"
    );
    let d = w.step(at("2026-12-01T22:00:00Z"));
    assert_eq!(d.plan.update, ["worker-0"]);
    assert!(d.status.next_window.is_none());
    // Past midnight, still inside; after it closes, the update under way goes on but no other
    // node starts.
    finish_all(&mut w.nodes);
    let d = w.step(at("2026-12-02T00:30:00Z"));
    assert!(d.plan.update.is_empty(), "closed at 00:00Z (01:00 Berlin)");
    assert_eq!(
        d.status.next_window.as_deref(),
        Some("2026-12-08T22:00:00Z")
    );
}

#[test]
fn pods_and_machine_config_nodes_gate_the_slot() {
    let spec = RolloutPolicySpec {
        health_gate: Some(HealthGateSpec {
            timeout: Some("10m".into()),
            pods: Some(LabelSelector {
                match_labels: [("app".to_string(), "ingress".to_string())].into(),
                ..Default::default()
            }),
        }),
        ..Default::default()
    };
    let mut w = World::new(spec, 3, None);
    w.step(at(T0));
    finish_all(&mut w.nodes);
    let refs: Vec<&Node> = w.nodes.iter().collect();
    let input = |signals| Input {
        pool: &w.pool,
        policy: &w.policy,
        nodes: &refs,
        signals,
        now: after(60),
        defer: None,
    };
    // Done and Ready, but no MachineConfigNode report yet: nothing to look at, the slot held.
    let none = BTreeMap::new();
    assert!(pods_to_check(&input(&none)).is_empty());
    assert!(decide(&input(&none)).plan.update.is_empty());
    let mcn: BTreeMap<String, NodeSignals> = [(
        "worker-0".to_string(),
        NodeSignals {
            mcn_updated: Some(true),
            pods_ready: None,
        },
    )]
    .into();
    assert_eq!(pods_to_check(&input(&mcn)), ["worker-0"]);
    let d = decide(&input(&mcn));
    assert!(d.plan.update.is_empty(), "pods not looked at: still gated");
    let not_ready: BTreeMap<String, NodeSignals> = [(
        "worker-0".to_string(),
        NodeSignals {
            mcn_updated: Some(true),
            pods_ready: Some(false),
        },
    )]
    .into();
    let late = Input {
        now: after(600),
        ..input(&not_ready)
    };
    assert_eq!(
        decide(&late).status.pause.map(|p| p.message),
        Some(
            "node worker-0 pods not Ready 10m after rendered-worker-abc: pods matching app=ingress are not all Ready"
                .to_string()
        )
    );
    let ready: BTreeMap<String, NodeSignals> = [(
        "worker-0".to_string(),
        NodeSignals {
            mcn_updated: Some(true),
            pods_ready: Some(true),
        },
    )]
    .into();
    assert_eq!(decide(&input(&ready)).plan.update, ["worker-1"]);
}

#[test]
fn invalid_policies_and_paused_pools_start_nothing() {
    let mut w = World::new(
        RolloutPolicySpec {
            health_gate: gate("ten minutes"),
            ..Default::default()
        },
        2,
        None,
    );
    let d = w.step(at(T0));
    assert_eq!(d.status.phase, Phase::Invalid);
    assert!(
        d.status
            .message
            .starts_with("RolloutPolicy worker: spec.healthGate.timeout: "),
        "{}",
        d.status.message
    );
    assert!(d.plan.update.is_empty());
    let mut w = World::new(RolloutPolicySpec::default(), 2, Some(json!("x")));
    assert_eq!(w.step(at(T0)).status.phase, Phase::Invalid);
    let mut w = World::new(RolloutPolicySpec::default(), 2, None);
    w.pool.spec.paused = true;
    let d = w.step(at(T0));
    assert_eq!(d.status.phase, Phase::Idle);
    assert!(d.plan.update.is_empty());
}

// ---- invariants -------------------------------------------------------------------------

fn arb_spec() -> impl Strategy<Value = RolloutPolicySpec> {
    (
        prop::option::of((1u64..4, 0i64..3)),
        prop::option::of(1i64..4),
        prop::option::of((0u8..24, 1u8..6)),
        any::<bool>(),
    )
        .prop_map(|(canary, gate_min, window, auto)| RolloutPolicySpec {
            canary: canary.map(|(n, soak)| CanarySpec {
                nodes: Some(json!(n)),
                selector: None,
                soak: Some(format!("{soak}m")),
            }),
            health_gate: gate_min.map(|m| HealthGateSpec {
                timeout: Some(format!("{m}m")),
                pods: None,
            }),
            maintenance_windows: window
                .map(|(h, len)| MaintenanceWindow {
                    days: vec![],
                    start: format!("{h:02}:00"),
                    duration: format!("{len}h"),
                    time_zone: Some("America/New_York".into()),
                })
                .into_iter()
                .collect(),
            auto_rollback: auto,
            ..Default::default()
        })
}

/// One simulated minute: the agent moves nodes on (a few of them fail), signals follow.
fn agent_minute(w: &mut World, bad: &BTreeSet<String>, seed: u64) {
    for (i, n) in w.nodes.iter_mut().enumerate() {
        let d = n.desired_config().to_string();
        if d == n.current_config() {
            continue;
        }
        if (seed >> (i % 60)) & 1 == 0 && !(seed as usize + i).is_multiple_of(4) {
            continue;
        }
        let a = &mut n.metadata.annotations;
        a.insert(crate::api::node::CURRENT_CONFIG.into(), d.clone());
        a.insert(crate::api::node::STATE.into(), STATE_DONE.into());
        if bad.contains(n.name()) && d == NEW {
            n.status.conditions[0].status = "False".into();
        } else {
            n.status.conditions[0].status = "True".into();
        }
    }
    w.all_signals(true, true);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Step by step through a rollout under any policy, with some nodes failing: never more
    /// than maxUnavailable unavailable (gated nodes included) after a step that starts nodes
    /// towards the newest config; no node starts outside a window, while paused, or (before
    /// the canaries passed) outside the canaries.
    #[test]
    fn guarded_rollouts_keep_their_promises(
        spec in arb_spec(),
        count in 1usize..12,
        max in 1i64..4,
        bad in prop::collection::btree_set(0usize..12, 0..3),
        seed in any::<u64>(),
        start in 0i64..86_400,
    ) {
        let mut w = World::new(spec, count, Some(json!(max)));
        let bad: BTreeSet<String> = bad.into_iter().map(|i| format!("worker-{i}")).collect();
        let s = settings(&w.policy).unwrap();
        let mut now = after(start);
        for minute in 0..180u64 {
            let before = w.policy.status_or_default();
            let d = w.decide(now);
            if !d.plan.update.is_empty() && d.plan.target == NEW {
                prop_assert!(s.windows.is_open(now), "started outside a window at {now}");
                prop_assert!(d.status.pause.is_none(), "started while paused");
                prop_assert!(before.pause.as_ref().is_none_or(|p| p.config != NEW || s.resumed_at.is_some()));
                if let Some(c) = d.status.canary.as_ref().filter(|c| !c.passed) {
                    for u in &d.plan.update {
                        prop_assert!(c.nodes.contains(u), "{u} started before the canaries passed");
                    }
                }
                let gated: Vec<String> = w.nodes.iter().filter(|n| n.desired_config() == NEW
                    && health(n, NEW, s.gate.as_ref(), w.signals.get(n.name()).copied().unwrap_or_default(), now) != Health::Healthy)
                    .map(|n| n.name().to_string()).collect();
                let mut after_step = w.nodes.clone();
                target(&mut after_step, &d, now);
                let unavailable = after_step.iter().filter(|n| n.is_unavailable()
                    || gated.iter().any(|g| g == n.name())).count() as i64;
                prop_assert!(unavailable <= max, "{unavailable} unavailable, max {max}");
            }
            if let Some(p) = d.status.pause.as_ref().filter(|_| before.pause.is_none()) {
                // A new pause names a node that failed on its config now.
                let n = w.nodes.iter().find(|n| n.name() == p.node);
                let failed = n.is_some_and(|n| matches!(
                    health(n, &p.config, s.gate.as_ref(), w.signals.get(n.name()).copied().unwrap_or_default(), now),
                    Health::Failed { .. }
                ));
                prop_assert!(failed, "{} paused the rollout without failing", p.node);
            }
            target(&mut w.nodes, &d, now);
            w.policy.status = Some(d.status.clone());
            agent_minute(&mut w, &bad, seed.rotate_left(minute as u32));
            now = plus(now, 60);
        }
        // Without failures, windows or a gate's timeout, everything lands; with a timeout a
        // slow node may have paused it.
        let st = w.policy.status_or_default();
        if bad.iter().all(|b| !w.nodes.iter().any(|n| n.name() == b)) && s.windows.is_empty() {
            if s.gate.is_none() {
                prop_assert_eq!(st.phase, Phase::Done, "{:?}", st);
            } else {
                prop_assert!(matches!(st.phase, Phase::Done | Phase::Paused | Phase::RollingBack | Phase::RolledBack), "{:?}", st);
            }
        }
    }
}

#[test]
fn a_passed_rollout_is_not_paused_by_later_trouble() {
    let mut w = World::new(
        RolloutPolicySpec {
            health_gate: Some(HealthGateSpec {
                timeout: Some("1m".into()),
                pods: Some(LabelSelector {
                    match_labels: [("app".to_string(), "ingress".to_string())].into(),
                    ..Default::default()
                }),
            }),
            ..Default::default()
        },
        2,
        Some(json!(2)),
    );
    w.step(at(T0));
    finish_all(&mut w.nodes);
    w.all_signals(true, true);
    assert_eq!(w.step(after(30)).status.phase, Phase::Done);
    // Pods are not looked at again (a restarted controller has forgotten them), and a node
    // that goes down later is the pool's NodeDegraded, not a paused rollout.
    w.signals.clear();
    let refs: Vec<&Node> = w.nodes.iter().collect();
    let input = Input {
        pool: &w.pool,
        policy: &w.policy,
        nodes: &refs,
        signals: &w.signals,
        now: after(3600),
        defer: None,
    };
    assert!(pods_to_check(&input).is_empty());
    not_ready(&mut w.nodes[1], "down");
    let d = w.step(after(3600));
    assert!(d.status.pause.is_none());
    assert!(d.events.is_empty());
    // Pods not looked at yet never fail a gate.
    let n = &w.nodes[0];
    let g = settings(&w.policy).unwrap().gate;
    let unseen = NodeSignals {
        mcn_updated: Some(true),
        pods_ready: None,
    };
    assert!(matches!(
        health(n, NEW, g.as_ref(), unseen, after(86_400)),
        Health::Pending { deadline: None, .. }
    ));
}
