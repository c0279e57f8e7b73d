//! The status view on plain values: node and pool assessments as `oc` words them, the
//! findings and their actions, the estimates, the reading of a dump.

use super::assess::{self, Target};
use super::input::{Cluster, DisruptionBudget, EventView, PodView};
use super::*;
use crate::api::machine_config_node::conditions as mcn;
use crate::api::machine_config_node::MachineConfigNodeStatus;
use crate::api::node::testing::{node, with_configs};
use crate::api::node::{
    NodeCondition, DESIRED_DRAIN, DRAIN_FAILURE, LAST_APPLIED_DRAIN, REASON, STATE_DEGRADED,
    STATE_DONE, STATE_WORKING,
};
use crate::api::rollout_policy::{
    CanarySpec, MaintenanceWindow, Pause, Phase, RolloutPolicy, RolloutPolicyStatus,
};
use crate::api::{Condition, LabelSelector, MachineConfigNode, MachineConfigPool, Node};
use crate::controllers::pool_status::PoolLayering;
use crate::manifests::Manifests;
use serde_json::json;

const OLD: &str = "rendered-worker-old";
const NEW: &str = "rendered-worker-new";
const NOW: &str = "2026-03-07T12:00:00Z";
const ROLE: &str = "node-role.kubernetes.io/worker";

fn now() -> Timestamp {
    NOW.parse().expect("test time")
}

fn pool(target: &str) -> MachineConfigPool {
    let mut p = MachineConfigPool::default();
    p.metadata.name = "worker".into();
    p.spec.configuration.name = target.into();
    let mut sel = LabelSelector::default();
    sel.match_labels.insert(ROLE.into(), String::new());
    p.spec.node_selector = Some(sel);
    p.status = Some(crate::api::MachineConfigPoolStatus {
        configuration: crate::api::pool::PoolConfiguration {
            name: OLD.into(),
            source: Vec::new(),
        },
        ..Default::default()
    });
    p
}

fn worker(name: &str, current: &str, desired: &str, state: &str) -> Node {
    let mut n = with_configs(node(name, &[(ROLE, "")]), current, desired, state);
    n.metadata.creation_timestamp = Some(format!("2026-01-01T00:00:0{}Z", name.len() % 10));
    n
}

fn annotate(mut n: Node, key: &str, value: &str) -> Node {
    n.metadata.annotations.insert(key.into(), value.into());
    n
}

fn not_ready(mut n: Node, since: &str) -> Node {
    n.status.conditions = vec![NodeCondition {
        type_: "Ready".into(),
        status: "Unknown".into(),
        reason: Some("NodeStatusUnknown".into()),
        message: Some("Kubelet stopped posting node status.".into()),
        last_transition_time: Some(since.into()),
    }];
    n
}

fn row(p: &MachineConfigPool, n: &Node, mcn: Option<&MachineConfigNodeStatus>) -> NodeStatus {
    let l = PoolLayering::default();
    assess::assess_node(
        &Target {
            pool: p,
            layering: &l,
            release: None,
        },
        n,
        mcn,
        Default::default(),
        NOW,
    )
}

fn opts() -> Options {
    Options {
        now: now(),
        per_node: Duration::from_secs(15 * 60),
        pool: None,
    }
}

fn cluster(p: MachineConfigPool, nodes: Vec<Node>) -> Cluster {
    Cluster {
        pools: vec![p],
        nodes,
        ..Cluster::default()
    }
}

fn cond(type_: &str, status: &str, since: &str, message: &str) -> Condition {
    Condition {
        type_: type_.into(),
        status: status.into(),
        last_transition_time: Some(since.into()),
        reason: Some(type_.into()),
        message: Some(message.into()),
    }
}

fn mcn_with(node: &str, conditions: Vec<Condition>) -> MachineConfigNode {
    let mut m = MachineConfigNode::default();
    m.metadata.name = node.into();
    m.spec.node.name = node.into();
    m.status = Some(MachineConfigNodeStatus {
        conditions,
        ..Default::default()
    });
    m
}

#[test]
fn nodes_are_assessed_in_oc_words() {
    let p = pool(NEW);
    let done = row(&p, &worker("worker-a", NEW, NEW, STATE_DONE), None);
    assert_eq!(
        (done.assessment, done.phase, done.estimate.as_str()),
        (NodeAssessment::Completed, NodePhase::Updated, "-")
    );
    let waiting = row(&p, &worker("worker-b", OLD, OLD, STATE_DONE), None);
    assert_eq!(
        (waiting.assessment, waiting.phase, waiting.estimate.as_str()),
        (NodeAssessment::Outdated, NodePhase::Pending, "?")
    );
    let draining = annotate(
        worker("worker-c", OLD, NEW, STATE_WORKING),
        DESIRED_DRAIN,
        "drain-rendered-worker-new",
    );
    let r = row(&p, &draining, None);
    assert_eq!(
        (r.assessment, r.phase, r.estimate.as_str(), r.updating),
        (
            NodeAssessment::Progressing,
            NodePhase::Draining,
            "+10m",
            true
        )
    );
    // Done on its old config but targeted: the daemon is about to drain it.
    let targeted = row(&p, &worker("worker-d", OLD, NEW, STATE_DONE), None);
    assert_eq!(targeted.phase, NodePhase::Draining);
    let updating = row(&p, &worker("worker-e", OLD, NEW, STATE_WORKING), None);
    assert_eq!(
        (updating.phase, updating.estimate.as_str()),
        (NodePhase::Updating, "+5m")
    );
    // Down while working on its update: rebooting; the MachineConfigNode says so too.
    let down = not_ready(worker("worker-f", OLD, NEW, STATE_WORKING), NOW);
    assert_eq!(row(&p, &down, None).phase, NodePhase::Rebooting);
    let m = mcn_with(
        "worker-e",
        vec![cond(mcn::REBOOTED_NODE, "Unknown", NOW, "")],
    );
    let via_mcn = row(
        &p,
        &worker("worker-e", OLD, NEW, STATE_WORKING),
        m.status.as_ref(),
    );
    assert_eq!(via_mcn.phase, NodePhase::Rebooting);
    // A paused pool excludes the nodes it has not targeted.
    let mut paused = pool(NEW);
    paused.spec.paused = true;
    let r = row(&paused, &worker("worker-b", OLD, OLD, STATE_DONE), None);
    assert_eq!(
        (r.assessment, r.phase, r.estimate.as_str()),
        (NodeAssessment::Excluded, NodePhase::Paused, "-")
    );
}

#[test]
fn degraded_and_unavailable_nodes_say_why() {
    let p = pool(NEW);
    let failed = annotate(
        worker("worker-long-name", OLD, NEW, STATE_DEGRADED),
        REASON,
        "failed to drain node: worker-long-name after 1 hour",
    );
    let r = row(&p, &failed, None);
    assert_eq!(
        (r.assessment, r.phase, r.estimate.as_str()),
        (NodeAssessment::Degraded, NodePhase::Updating, "?")
    );
    // oc shortens the node's own name.
    assert_eq!(r.message, "failed to drain node: <node> after 1 hour");
    // Degraded on its own config (drift): updated, and "-".
    let drift = annotate(
        worker("w9", NEW, NEW, STATE_DEGRADED),
        REASON,
        "content mismatch for file \"/etc/motd\"",
    );
    let r = row(&p, &drift, None);
    assert_eq!(
        (r.assessment, r.phase, r.estimate.as_str()),
        (NodeAssessment::Degraded, NodePhase::Updated, "-")
    );
    // A drain blocked past its timeout is Degraded though the daemon still works.
    let blocked = annotate(
        annotate(
            worker("w3", OLD, NEW, STATE_WORKING),
            DESIRED_DRAIN,
            "drain-rendered-worker-new",
        ),
        DRAIN_FAILURE,
        "failed to drain node w3: 1 pod(s) could not be evicted (disruption budget or timeout): apps/db-0",
    );
    let r = row(&p, &blocked, None);
    assert_eq!(
        (r.assessment, r.phase),
        (NodeAssessment::Degraded, NodePhase::Draining)
    );
    assert!(r.message.contains("apps/db-0"), "{}", r.message);
    // Cordoned on the old config, not targeted: unavailable, in oc's words.
    let mut cordoned = worker("w4", OLD, OLD, STATE_DONE);
    cordoned.spec.unschedulable = true;
    let r = row(&p, &cordoned, None);
    assert_eq!(
        (
            r.assessment,
            r.phase,
            r.message.as_str(),
            r.estimate.as_str()
        ),
        (
            NodeAssessment::Unavailable,
            NodePhase::Pending,
            "Node is marked unschedulable",
            "?"
        )
    );
    let down = not_ready(worker("w5", NEW, NEW, STATE_DONE), NOW);
    let r = row(&p, &down, None);
    assert_eq!(
        (
            r.assessment,
            r.phase,
            r.message.as_str(),
            r.estimate.as_str()
        ),
        (
            NodeAssessment::Unavailable,
            NodePhase::Updated,
            "Not ready",
            "-"
        )
    );
}

#[test]
fn pools_are_assessed_and_counted_as_oc_counts_them() {
    let rows_of = |phases: &[(NodePhase, bool)]| -> Vec<NodeStatus> {
        let p = pool(NEW);
        phases
            .iter()
            .enumerate()
            .map(|(i, (ph, degraded))| {
                let mut r = row(&p, &worker(&format!("w{i}"), NEW, NEW, STATE_DONE), None);
                r.phase = *ph;
                r.degraded = *degraded;
                r
            })
            .collect()
    };
    let rows = rows_of(&[
        (NodePhase::Updated, false),
        (NodePhase::Draining, false),
        (NodePhase::Draining, true),
        (NodePhase::Pending, false),
    ]);
    let o = assess::overview(&rows);
    assert_eq!(assess::completion(&o), "25% (1/4)");
    assert_eq!(
        assess::status_line(&o),
        "4 Available, 1 Progressing, 2 Draining, 1 Degraded"
    );
    assert_eq!(
        assess::assess_pool(&o, &rows, false),
        PoolAssessment::Degraded
    );
    // Go's %.0f rounds half to even: 1/8 is 12%, 3/8 is 38%.
    let mut eighth = assess::Overview {
        total: 8,
        updated: 1,
        outdated: 7,
        ..Default::default()
    };
    assert_eq!(assess::completion(&eighth), "12% (1/8)");
    eighth.updated = 3;
    eighth.outdated = 5;
    assert_eq!(assess::completion(&eighth), "38% (3/8)");
    let pending = rows_of(&[(NodePhase::Pending, false), (NodePhase::Pending, false)]);
    let o = assess::overview(&pending);
    assert_eq!(
        assess::assess_pool(&o, &pending, false),
        PoolAssessment::Pending
    );
    // A rollout stopped by a failure that is no node's is Degraded.
    assert_eq!(
        assess::assess_pool(&o, &pending, true),
        PoolAssessment::Degraded
    );
    let paused = rows_of(&[(NodePhase::Paused, false), (NodePhase::Updated, false)]);
    let o = assess::overview(&paused);
    assert_eq!(
        assess::assess_pool(&o, &paused, false),
        PoolAssessment::Excluded
    );
    assert_eq!(
        assess::status_line(&o),
        "2 Available, 0 Progressing, 0 Draining, 1 Excluded"
    );
    let done = rows_of(&[(NodePhase::Updated, false)]);
    let o = assess::overview(&done);
    assert_eq!(
        assess::assess_pool(&o, &done, true),
        PoolAssessment::Completed
    );
    assert_eq!(
        assess::assess_pool(&assess::overview(&[]), &[], false),
        PoolAssessment::Empty
    );
}

#[test]
fn durations_read_as_oc_prints_them() {
    let d = |s: i64| short_duration(SignedDuration::from_secs(s));
    assert_eq!(d(0), "now");
    assert_eq!(d(-5), "now");
    assert_eq!(d(60), "1m");
    assert_eq!(d(3600), "1h");
    assert_eq!(d(1364), "22m44s");
    assert_eq!(d(3 * 3600 + 31 * 60), "3h31m");
    assert_eq!(d(3661), "1h1m1s");
    assert_eq!(d(86_400), "1d");
    assert_eq!(d(3 * 86_400 + 11 * 3600 + 30 * 60), "3d11h30m");
}

#[test]
fn a_degraded_reason_names_its_file_or_unit() {
    use super::stuck::{culprit, Culprit};
    let file = |p: &str| Some(Culprit::File(p.into()));
    assert_eq!(
        culprit("unexpected on-disk state: content mismatch for file \"/etc/chrony.conf\""),
        file("/etc/chrony.conf")
    );
    assert_eq!(
        culprit("open /etc/foo/bar.conf: permission denied"),
        file("/etc/foo/bar.conf")
    );
    assert_eq!(
        culprit("error enabling units: Unit file usbguard.service does not exist."),
        Some(Culprit::Unit("usbguard.service".into()))
    );
    // A command's argument is not what failed.
    assert_eq!(
        culprit("running podman pull --authfile /var/lib/kubelet/config.json quay.io/x failed"),
        None
    );
}

/// A pool of three workers: one draining, blocked by a budget; one not started; one done.
fn drain_cluster(allowed: i64) -> Cluster {
    let drained = annotate(
        annotate(
            worker("worker-1", OLD, NEW, STATE_WORKING),
            DESIRED_DRAIN,
            "drain-rendered-worker-new",
        ),
        LAST_APPLIED_DRAIN,
        "uncordon-rendered-worker-old",
    );
    let mut c = cluster(
        pool(NEW),
        vec![
            drained,
            worker("worker-2", OLD, OLD, STATE_DONE),
            worker("worker-3", NEW, NEW, STATE_DONE),
        ],
    );
    let pod = |name: &str, node: &str| {
        PodView::from_json(&json!({
            "metadata": {"name": name, "namespace": "shop", "uid": name,
                         "labels": {"app": "db"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet",
                                              "name": "db", "uid": "s1", "controller": true}]},
            "spec": {"nodeName": node},
            "status": {"phase": "Running"}
        }))
        .expect("pod")
    };
    c.pods = vec![pod("db-0", "worker-1"), pod("db-1", "worker-2")];
    c.disruption_budgets = vec![DisruptionBudget::from_json(&json!({
        "metadata": {"name": "db", "namespace": "shop"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}},
        "status": {"disruptionsAllowed": allowed, "currentHealthy": 2, "desiredHealthy": 2,
                   "expectedPods": 2}
    }))
    .expect("pdb")];
    c.machine_config_nodes = vec![mcn_with(
        "worker-1",
        vec![cond(
            mcn::DRAINED,
            "Unknown",
            "2026-03-07T10:48:00Z",
            "Draining node",
        )],
    )];
    c
}

#[test]
fn a_drain_blocked_by_a_budget_names_the_budget_the_pods_and_how_long() {
    let s = status(&drain_cluster(0), &opts());
    assert!(s.stuck);
    let f = &s.findings[0];
    assert_eq!(
        (f.severity, f.kind, f.node.as_deref()),
        (Severity::Stuck, Kind::DrainBlocked, Some("worker-1"))
    );
    assert_eq!(
        f.message,
        "worker-1: drain blocked for 1h12m: PodDisruptionBudget shop/db allows 0 disruptions \
         (2 of 2 pods healthy, 2 needed, minAvailable 2) and covers pod shop/db-0"
    );
    assert!(
        f.action.contains("never allows an eviction") && f.action.contains("StatefulSet/db"),
        "{}",
        f.action
    );
    assert_eq!(f.since.as_deref(), Some("2026-03-07T10:48:00Z"));
    let p = &s.pools[0];
    let w1 = p.nodes.iter().find(|n| n.name == "worker-1").expect("row");
    assert_eq!(w1.message, "drain blocked by PodDisruptionBudget shop/db");
    // Something stuck holds a slot: no estimate for the nodes waiting behind it.
    let w2 = p.nodes.iter().find(|n| n.name == "worker-2").expect("row");
    assert_eq!(w2.estimate, "?");
    // A budget that allows the eviction blocks nothing.
    let s = status(&drain_cluster(1), &opts());
    assert!(!s.stuck, "{:?}", s.findings);
    assert!(s.findings.is_empty());
}

#[test]
fn the_drain_controllers_report_and_events_are_used_without_pods() {
    let mut c = drain_cluster(0);
    c.pods.clear();
    c.disruption_budgets.clear();
    c.machine_config_nodes.clear();
    c.nodes[0] = annotate(
        c.nodes[0].clone(),
        DRAIN_FAILURE,
        "failed to drain node worker-1: 1 pod(s) could not be evicted (disruption budget or timeout): shop/db-0",
    );
    c.events = vec![EventView::from_json(&json!({
        "apiVersion": "v1", "kind": "Event", "type": "Warning", "reason": "FailedToDrain",
        "involvedObject": {"kind": "Node", "name": "worker-1"},
        "message": "failed to drain node worker-1: ...",
        "firstTimestamp": "2026-03-07T11:30:00Z", "lastTimestamp": "2026-03-07T11:59:00Z",
        "count": 12
    }))];
    let s = status(&c, &opts());
    let f = &s.findings[0];
    assert_eq!(f.kind, Kind::DrainBlocked);
    assert_eq!(
        f.message,
        "worker-1: drain blocked for 30m: failed to drain node worker-1: 1 pod(s) could not be \
         evicted (disruption budget or timeout): shop/db-0"
    );
    // Without a report nor a budget in the way, a drain is just progress.
    c.nodes[0].metadata.annotations.remove(DRAIN_FAILURE);
    c.events.clear();
    assert!(status(&c, &opts()).findings.is_empty());
}

#[test]
fn a_node_not_ready_past_five_minutes_is_stuck_since_its_reboot() {
    let rebooting = |since: &str| {
        let mut c = cluster(
            pool(NEW),
            vec![not_ready(
                worker("worker-1", OLD, NEW, STATE_WORKING),
                since,
            )],
        );
        c.machine_config_nodes = vec![mcn_with(
            "worker-1",
            vec![cond(
                mcn::REBOOTED_NODE,
                "Unknown",
                since,
                "Upgrade requires a reboot.",
            )],
        )];
        status(&c, &opts())
    };
    let early = rebooting("2026-03-07T11:58:00Z");
    assert!(!early.stuck && early.findings.is_empty());
    assert_eq!(early.pools[0].nodes[0].phase, NodePhase::Rebooting);
    let late = rebooting("2026-03-07T11:35:00Z");
    assert!(late.stuck);
    assert_eq!(
        late.findings[0].message,
        "worker-1: NotReady for 25m since its reboot into rendered-worker-new \
         (NodeStatusUnknown: Kubelet stopped posting node status.)"
    );
    assert!(late.findings[0].action.contains("console"));
}

#[test]
fn a_degraded_node_names_the_machine_config_that_writes_the_file() {
    let mut p = pool(NEW);
    p.spec.configuration.source = vec![crate::api::pool::ObjectReference {
        name: "99-worker-chrony".into(),
        ..Default::default()
    }];
    let n = annotate(
        worker("worker-1", OLD, NEW, STATE_DEGRADED),
        REASON,
        "failed to write file \"/etc/chrony.conf\": read-only file system",
    );
    let mut c = cluster(p, vec![n]);
    let mut mc = crate::api::MachineConfig::default();
    mc.metadata.name = "99-worker-chrony".into();
    mc.spec.config = Some(json!({"ignition": {"version": "3.5.0"},
        "storage": {"files": [{"path": "/etc/chrony.conf"}]}}));
    c.machine_configs = vec![mc];
    let s = status(&c, &opts());
    let f = &s.findings[0];
    assert_eq!(f.kind, Kind::NodeDegraded);
    assert!(
        f.message
            .ends_with("(file /etc/chrony.conf, from MachineConfig 99-worker-chrony)"),
        "{}",
        f.message
    );
    assert!(
        f.action.contains("MachineConfig 99-worker-chrony"),
        "{}",
        f.action
    );
    assert_eq!(s.pools[0].assessment, PoolAssessment::Degraded);
}

#[test]
fn a_paused_pool_is_stuck_only_with_nodes_left() {
    let mut p = pool(NEW);
    p.spec.paused = true;
    let s = status(
        &cluster(p.clone(), vec![worker("w1", OLD, OLD, STATE_DONE)]),
        &opts(),
    );
    assert!(s.stuck);
    assert_eq!(s.pools[0].assessment, PoolAssessment::Excluded);
    assert_eq!(
        s.findings[0].message,
        "Outdated nodes in a paused pool 'worker' will not be updated (1 of 1)"
    );
    let s = status(
        &cluster(p, vec![worker("w1", NEW, NEW, STATE_DONE)]),
        &opts(),
    );
    assert!(!s.stuck && s.findings.is_empty());
}

fn policy(status: RolloutPolicyStatus) -> RolloutPolicy {
    let mut p = RolloutPolicy::default();
    p.metadata.name = "worker".into();
    p.spec.canary = Some(CanarySpec {
        nodes: Some(json!(1)),
        selector: None,
        soak: Some("30m".into()),
    });
    p.status = Some(status);
    p
}

#[test]
fn a_rollout_policy_pause_stops_the_pool_until_resumed() {
    let mut c = cluster(
        pool(NEW),
        vec![
            annotate(
                worker("worker-1", OLD, NEW, STATE_DEGRADED),
                REASON,
                "unit kubelet.service failed",
            ),
            worker("worker-2", OLD, OLD, STATE_DONE),
        ],
    );
    c.rollout_policies = vec![policy(RolloutPolicyStatus {
        target: NEW.into(),
        phase: Phase::Paused,
        pause: Some(Pause {
            config: NEW.into(),
            node: "worker-1".into(),
            nodes: vec!["worker-1".into()],
            reason: "NodeDegraded".into(),
            message: "canary worker-1 degraded on rendered-worker-new: unit kubelet.service failed"
                .into(),
            since: "2026-03-07T11:00:00Z".into(),
        }),
        ..Default::default()
    })];
    let s = status(&c, &opts());
    assert!(s.stuck);
    assert_eq!(s.pools[0].assessment, PoolAssessment::Degraded);
    let f = s
        .findings
        .iter()
        .find(|f| f.kind == Kind::RolloutPaused)
        .expect("pause");
    assert_eq!(
        f.message,
        "RolloutPolicy worker paused the rollout of rendered-worker-new for 1h (NodeDegraded): \
         canary worker-1 degraded on rendered-worker-new: unit kubelet.service failed"
    );
    assert!(
        f.action.contains("\"resumedAt\":\"2026-03-07T12:00:00Z\""),
        "{}",
        f.action
    );
    // A pause recorded for an older config is over.
    c.pools[0].spec.configuration.name = "rendered-worker-newer".into();
    let s = status(&c, &opts());
    assert!(!s.findings.iter().any(|f| f.kind == Kind::RolloutPaused));
}

#[test]
fn a_closed_window_is_waiting_and_names_the_next_opening() {
    let mut c = cluster(
        pool(NEW),
        vec![
            worker("worker-1", NEW, NEW, STATE_DONE),
            worker("worker-2", OLD, OLD, STATE_DONE),
        ],
    );
    let mut p = policy(RolloutPolicyStatus {
        target: NEW.into(),
        phase: Phase::WaitingForWindow,
        canary: Some(crate::api::rollout_policy::CanaryStatus {
            config: NEW.into(),
            nodes: vec!["worker-1".into()],
            healthy_since: Some("2026-03-06T20:00:00Z".into()),
            passed: true,
        }),
        ..Default::default()
    });
    // Saturdays 22:00 in Berlin; 2026-03-07 is a Saturday, 12:00 UTC is 13:00 there.
    p.spec.maintenance_windows = vec![MaintenanceWindow {
        days: vec!["Sat".into()],
        start: "22:00".into(),
        duration: "2h".into(),
        time_zone: Some("Europe/Berlin".into()),
    }];
    c.rollout_policies = vec![p];
    let s = status(&c, &opts());
    assert!(!s.stuck, "{:?}", s.findings);
    let f = &s.findings[0];
    assert_eq!(
        (f.severity, f.kind),
        (Severity::Waiting, Kind::MaintenanceWindow)
    );
    assert_eq!(
        f.message,
        "outside every maintenance window of RolloutPolicy worker (Sat 22:00 Europe/Berlin); \
         the next opens 2026-03-07T21:00:00Z (in 9h)"
    );
    // The waiting node's estimate counts the wait: the window opens in 9h, it takes 15m.
    let w2 = s.pools[0]
        .nodes
        .iter()
        .find(|n| n.name == "worker-2")
        .expect("row");
    assert_eq!(w2.estimate, "+9h15m");
    assert_eq!(s.pools[0].finish.as_deref(), Some("2026-03-07T21:15:00Z"));
}

#[test]
fn estimates_put_the_nodes_already_targeted_first() {
    let mut p = pool(NEW);
    p.spec.max_unavailable = Some(json!(1));
    let mut nodes = vec![
        worker("w-a", OLD, OLD, STATE_DONE),
        worker("w-bb", OLD, OLD, STATE_DONE),
        worker("w-ccc", OLD, NEW, STATE_WORKING),
    ];
    // The targeted node is the youngest: the schedule would otherwise put it last.
    nodes[2].metadata.creation_timestamp = Some("2026-02-01T00:00:00Z".into());
    let s = status(&cluster(p, nodes), &opts());
    let est: Vec<(&str, &str)> = s.pools[0]
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.estimate.as_str()))
        .collect();
    assert_eq!(est, [("w-ccc", "+5m"), ("w-a", "+30m"), ("w-bb", "+45m")]);
    assert_eq!(s.pools[0].finish.as_deref(), Some("2026-03-07T12:45:00Z"));
}

#[test]
fn a_layered_pool_waits_for_its_build_and_is_stuck_when_it_failed() {
    use crate::api::machine_os::{MachineOSBuildStatus, NameRef};
    use crate::controllers::build::progress::{conditions, Progress};
    let mut c = cluster(pool(NEW), vec![worker("worker-1", OLD, OLD, STATE_DONE)]);
    let mut mosc = crate::api::MachineOSConfig::default();
    mosc.metadata.name = "layered".into();
    mosc.spec.machine_config_pool = NameRef {
        name: "worker".into(),
    };
    c.machine_os_configs = vec![mosc];
    let build = |p: Progress| {
        let mut b = crate::api::MachineOSBuild::default();
        b.metadata.name = "layered-abc".into();
        for (k, v) in [
            ("target-machine-config-pool", "worker"),
            ("machine-os-config", "layered"),
        ] {
            b.metadata
                .labels
                .insert(format!("machineconfiguration.openshift.io/{k}"), v.into());
        }
        b.spec.machine_config.name = NEW.into();
        b.spec.machine_os_config.name = "layered".into();
        b.status = Some(MachineOSBuildStatus {
            conditions: conditions(p, "2026-03-07T11:40:00Z"),
            build_start: Some("2026-03-07T11:40:00Z".into()),
            ..Default::default()
        });
        b
    };
    c.machine_os_builds = vec![build(Progress::Building)];
    c.jobs = vec![crate::api::JobView::from_json(&json!({
        "metadata": {"name": "build-layered-abc"}, "status": {"active": 1}
    }))];
    let s = status(&c, &opts());
    assert!(!s.stuck, "{:?}", s.findings);
    let f = &s.findings[0];
    assert_eq!(
        (f.severity, f.kind),
        (Severity::Waiting, Kind::BuildRunning)
    );
    assert_eq!(
        f.message,
        "pool worker waits for its image: MachineOSBuild layered-abc building for 20m \
         (Job build-layered-abc: 1 active, 0 failed)"
    );
    assert_eq!(s.pools[0].nodes[0].estimate, "?");
    c.machine_os_builds = vec![build(Progress::Failed)];
    let s = status(&c, &opts());
    assert!(s.stuck);
    assert_eq!(s.findings[0].kind, Kind::BuildFailed);
    assert!(s.findings[0]
        .action
        .contains("machineconfiguration.openshift.io/rebuild"));
    assert_eq!(s.pools[0].assessment, PoolAssessment::Degraded);
}

#[test]
fn pinned_images_not_pulled_are_stuck() {
    use crate::api::machine_config_node::PinnedImageSetGenerations;
    let mut c = cluster(pool(NEW), vec![worker("worker-1", NEW, NEW, STATE_DONE)]);
    let mut m = mcn_with(
        "worker-1",
        vec![cond(
            mcn::PINNED_IMAGE_SETS_DEGRADED,
            "True",
            "2026-03-07T11:00:00Z",
            "failed to pull",
        )],
    );
    if let Some(s) = m.status.as_mut() {
        s.pinned_image_sets = vec![PinnedImageSetGenerations {
            name: "release-images".into(),
            desired_generation: Some(2),
            last_failed_generation: Some(2),
            last_failed_generation_error: Some("manifest unknown".into()),
            ..Default::default()
        }];
    }
    c.machine_config_nodes = vec![m];
    let s = status(&c, &opts());
    assert!(s.stuck);
    assert_eq!(
        s.findings[0].message,
        "worker-1: pinned images not pulled for 1h: release-images: manifest unknown"
    );
    // The node is on its config; its message tells what is wrong.
    assert_eq!(s.pools[0].nodes[0].message, "pinned images not pulled");
}

#[test]
fn events_of_both_apis_are_read() {
    let v1 = EventView::from_json(&json!({
        "apiVersion": "v1", "kind": "Event", "type": "Warning", "reason": "FailedToDrain",
        "involvedObject": {"kind": "Node", "name": "w1"}, "message": "m",
        "firstTimestamp": "2026-03-07T11:00:00Z", "lastTimestamp": "2026-03-07T11:30:00Z",
        "count": 3
    }));
    assert_eq!(
        (
            v1.kind.as_str(),
            v1.name.as_str(),
            v1.message.as_str(),
            v1.count,
            v1.warning
        ),
        ("Node", "w1", "m", 3, true)
    );
    assert_eq!(v1.last, "2026-03-07T11:30:00Z".parse().ok());
    let v2 = EventView::from_json(&json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "type": "Normal", "reason": "Drain",
        "regarding": {"kind": "Node", "name": "w2"}, "note": "Draining node to update config.",
        "eventTime": "2026-03-07T11:00:00.123456Z",
        "series": {"count": 4, "lastObservedTime": "2026-03-07T11:20:00.000000Z"}
    }));
    assert_eq!(
        (v2.name.as_str(), v2.message.as_str(), v2.count, v2.warning),
        ("w2", "Draining node to update config.", 4, false)
    );
    assert_eq!(v2.first, "2026-03-07T11:00:00.123456Z".parse().ok());
    assert_eq!(v2.last, "2026-03-07T11:20:00Z".parse().ok());
}

#[test]
fn a_dump_unpacks_lists_of_any_kind_and_leaves_out_what_does_not_decode() {
    let mut m = Manifests::default();
    let pods = json!({"apiVersion": "v1", "kind": "PodList", "items": [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "n"},
         "spec": {"nodeName": "w1"}, "status": {"phase": "Running"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b", "namespace": "n",
         "annotations": "not a map"}}
    ]});
    m.add_file("pods.json", &pods.to_string()).expect("pods");
    let pdb = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: p\n  namespace: n\nspec:\n  selector: {matchLabels: {app: x}}\n";
    m.add_file("pdb.yaml", pdb).expect("pdb");
    let c = Cluster::from_manifests(m);
    assert_eq!(c.pods.len(), 1);
    assert_eq!(c.pods[0].node, "w1");
    assert_eq!(c.disruption_budgets.len(), 1);
    assert_eq!(c.skipped.len(), 1);
    assert!(
        c.skipped[0].starts_with("pods.json: Pod \"b\": "),
        "{}",
        c.skipped[0]
    );
}

#[test]
fn the_table_aligns_as_tabwriter_does() {
    let t = render::table(&[
        vec!["NAME".into(), "EST".into(), "MESSAGE".into()],
        vec!["worker-1".into(), "+10m".into(), String::new()],
        vec!["w".into(), "?".into(), "Not ready".into()],
    ]);
    assert_eq!(
        t,
        "NAME       EST    MESSAGE\nworker-1   +10m\nw          ?      Not ready\n"
    );
}

/// The objects of an example dump, each with the kind [`Source`] it is listed as.
fn example_objects(name: &str) -> (Manifests, Vec<(Source, Vec<serde_json::Value>)>) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/status")
        .join(name);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("example folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    let mut m = Manifests::default();
    let mut by_source: Vec<(Source, Vec<serde_json::Value>)> =
        Source::ALL.iter().map(|s| (*s, Vec::new())).collect();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("example file");
        m.add_file(&f.display().to_string(), &text)
            .expect("example");
        for doc in crate::manifests::documents(&text).expect("documents") {
            let items = match doc.get("items").and_then(serde_json::Value::as_array) {
                Some(items) => items.clone(),
                None => vec![doc],
            };
            for v in items {
                let kind = v["kind"].as_str().unwrap_or("");
                if let Some((_, list)) = by_source.iter_mut().find(|(s, _)| s.served().kind == kind)
                {
                    list.push(v);
                }
            }
        }
    }
    (m, by_source)
}

#[test]
fn a_cluster_listed_kind_by_kind_reads_as_its_dump() {
    for name in [
        "healthy-rollout",
        "drain-blocked",
        "canary-paused",
        "closed-window",
        "build-running",
        "degraded-node",
    ] {
        let (m, sources) = example_objects(name);
        let dumped = status(&Cluster::from_manifests(m), &opts());
        let listed = status(&Cluster::from_sources(sources), &opts());
        assert_eq!(listed, dumped, "{name}");
        assert!(!listed.pools.is_empty(), "{name}");
    }
}

#[test]
fn listed_objects_that_do_not_decode_are_named_and_unread_kinds_noted() {
    let mut c = Cluster::from_sources([
        (
            Source::Nodes,
            vec![json!({"apiVersion": "v1", "kind": "Node",
                        "metadata": {"name": "w1", "labels": "not a map"}})],
        ),
        (
            Source::MachineConfigurations,
            vec![
                json!({"kind": "MachineConfiguration", "metadata": {"name": "other"},
                       "spec": {"nodeDisruptionPolicy": {}}}),
                json!({"kind": "MachineConfiguration", "metadata": {"name": "cluster"}}),
            ],
        ),
    ]);
    assert!(c.nodes.is_empty());
    assert_eq!(c.skipped.len(), 1);
    assert!(
        c.skipped[0].starts_with("nodes: Node \"w1\": "),
        "{:?}",
        c.skipped
    );
    assert!(c.machine_configuration.is_some());
    c.pools.push(pool(NEW));
    c.mark_unread(Source::Pods, &Unread::Forbidden);
    c.mark_unread(Source::Jobs, &Unread::Forbidden);
    let s = status(&c, &opts());
    assert_eq!(
        s.notes[..2],
        [
            "Pods (pods) listing them is forbidden: blocked drains are explained without the budgets and pods in their way".to_string(),
            "Jobs (jobs.batch) listing them in namespace openshift-machine-config-operator is forbidden: failed image builds are not explained".to_string(),
        ]
    );
}

#[test]
fn progress_bars_fill_with_the_updated_nodes() {
    assert_eq!(frame::bar(0, 4), format!("[{}]", ".".repeat(30)));
    assert_eq!(
        frame::bar(1, 4),
        format!("[{}{}]", "#".repeat(7), ".".repeat(23))
    );
    assert_eq!(frame::bar(4, 4), format!("[{}]", "#".repeat(30)));
    assert_eq!(frame::bar(9, 4), frame::bar(4, 4));
    assert_eq!(frame::bar(0, 0), frame::bar(4, 4));
}

#[test]
fn a_frame_shows_each_pools_bar_and_finish_then_the_view() {
    let c = cluster(
        pool(NEW),
        vec![
            worker("worker-0", NEW, NEW, STATE_DONE),
            worker("worker-1", OLD, OLD, STATE_DONE),
        ],
    );
    let f = frame::frame(&c, &opts(), &Default::default());
    let lines: Vec<&str> = f.text.lines().collect();
    assert_eq!(
        lines[0],
        "Every change: kubectl mco status --watch   2026-03-07T12:00:00Z"
    );
    assert_eq!(
        lines[2],
        format!(
            "worker   [{}{}]   50% (1/2)   Progressing   finish 2026-03-07T12:15:00Z (in 15m)",
            "#".repeat(15),
            ".".repeat(15)
        )
    );
    // Then the view status prints.
    assert!(f.text.ends_with(&render::text(&f.status)), "{}", f.text);
    assert!(!f.done());

    // Paused: no estimate, and said why.
    let mut p = pool(NEW);
    p.spec.paused = true;
    let f = frame::frame(&cluster(p, c.nodes.clone()), &opts(), &Default::default());
    assert!(
        f.text
            .lines()
            .nth(2)
            .is_some_and(|l| l.ends_with("no estimate: paused")),
        "{}",
        f.text
    );

    // Every node done: done.
    let c = cluster(pool(NEW), vec![worker("worker-0", NEW, NEW, STATE_DONE)]);
    let f = frame::frame(&c, &opts(), &Default::default());
    assert!(f.done(), "{}", f.text);
    assert!(f
        .text
        .lines()
        .nth(2)
        .is_some_and(|l| l.ends_with("Completed   done")));
}

#[test]
fn past_ten_nodes_only_those_in_trouble_are_listed_and_the_rest_counted() {
    // Twelve degraded nodes sort first and are all listed, past the tenth too; of the three
    // updated ones after them none is.
    let mut nodes: Vec<Node> = (0..12)
        .map(|i| {
            annotate(
                worker(&format!("d{i:02}"), OLD, NEW, STATE_DEGRADED),
                REASON,
                "boom",
            )
        })
        .collect();
    nodes.extend((0..3).map(|i| worker(&format!("u{i}"), NEW, NEW, STATE_DONE)));
    let c = cluster(pool(NEW), nodes);
    let s = status(&c, &opts());
    // The table's rows: a node's name, then its columns (findings' lines have a colon).
    let rows = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| {
                l.starts_with(['d', 'u']) && !l.split(' ').next().unwrap_or("").ends_with(':')
            })
            .map(|l| l.split(' ').next().unwrap_or("").to_string())
            .collect()
    };
    let short = render::text(&s);
    let listed = rows(&short);
    assert_eq!(listed.len(), 12, "{short}");
    assert!(listed.iter().all(|n| n.starts_with('d')), "{short}");
    assert!(
        short.contains("...\nOmitted additional 3 Total, 3 Completed, 3 Available, 0 Progressing, 0 Outdated, 0 Draining, 0 Excluded, and 0 Degraded nodes.\nPass along --details=nodes to see all information.\n"),
        "{short}"
    );
    let all = render::text_with(&s, &render::TextOptions { all_nodes: true });
    assert_eq!(rows(&all).len(), 15, "{all}");
    assert!(!all.contains("Omitted"));
    assert_eq!("nodes".parse(), Ok(render::Details::Nodes));
    assert!("every".parse::<render::Details>().is_err());
}

#[test]
fn during_a_release_update_a_node_is_updated_only_on_the_new_release() {
    let versioned = |name: &str, version: &str| {
        let mut mc = crate::api::MachineConfig::default();
        mc.metadata.name = name.into();
        mc.metadata
            .annotations
            .insert(RELEASE_IMAGE_VERSION_ANNOTATION.into(), version.into());
        mc
    };
    // Both nodes are on the pool's config, which still carries the old release: the MCO has
    // not rendered the new one yet.
    let nodes = vec![
        worker("a", NEW, NEW, STATE_DONE),
        worker("b", NEW, NEW, STATE_DONE),
    ];
    let mut c = cluster(pool(NEW), nodes);
    c.machine_configs = vec![versioned(NEW, "4.16.1")];
    let rows = |c: &Cluster| status(c, &opts()).pools[0].nodes.clone();
    // Without a ClusterVersion: measured by config, done.
    assert!(rows(&c)
        .iter()
        .all(|r| r.assessment == NodeAssessment::Completed));
    // Updating to 4.17.0: outdated and pending, as oc says.
    c.add_cluster_version(&json!({
        "kind": "ClusterVersion", "metadata": {"name": "version"},
        "status": {"history": [{"version": "4.17.0"}, {"version": "4.16.1"}]}
    }));
    assert_eq!(c.release_target.as_deref(), Some("4.17.0"));
    for r in rows(&c) {
        assert_eq!(
            (r.assessment, r.phase, r.version.as_deref()),
            (NodeAssessment::Outdated, NodePhase::Pending, Some("4.16.1")),
            "{}",
            r.name
        );
    }
    // Once the pool's config carries the new release, the nodes are updated on it.
    c.machine_configs = vec![versioned(NEW, "4.17.0")];
    assert!(rows(&c)
        .iter()
        .all(|r| r.assessment == NodeAssessment::Completed));
}

#[test]
fn every_example_is_a_dump_taken_at_its_newest_heartbeat_and_a_tree_is_not() {
    let taken: Timestamp = "2026-03-04T10:00:00Z".parse().expect("test time");
    for name in [
        "healthy-rollout",
        "drain-blocked",
        "canary-paused",
        "closed-window",
        "build-running",
        "degraded-node",
    ] {
        let (m, _) = example_objects(name);
        assert_eq!(m.newest_time, Some(taken), "{name}");
        assert_eq!(check_dump(&Cluster::from_manifests(m)), Ok(()), "{name}");
    }
    // A pool as a GitOps tree writes it: no status, and no Node.
    let mut p = pool(NEW);
    p.status = None;
    assert_eq!(
        check_dump(&cluster(p.clone(), Vec::new())).map_err(|e| e.to_string()),
        Err("not a cluster dump: its MachineConfigPool has no status and it holds no Node".into())
    );
    assert_eq!(
        check_dump(&Cluster::default()).map_err(|e| e.what),
        Err("it holds no MachineConfigPool and no Node".into())
    );
    // A Node is enough to be a dump, and so is a pool's status.
    assert_eq!(
        check_dump(&cluster(p, vec![worker("worker-0", OLD, OLD, STATE_DONE)])),
        Ok(())
    );
    assert_eq!(check_dump(&cluster(pool(NEW), Vec::new())), Ok(()));
}

#[test]
fn a_dumps_view_says_its_instant_and_where_it_comes_from() {
    let c = cluster(pool(NEW), vec![worker("worker-0", OLD, OLD, STATE_DONE)]);
    let mut s = status(&c, &opts());
    // The live view, at the clock, says nothing of it.
    assert!(
        render::text(&s).starts_with("POOL "),
        "{}",
        render::text(&s)
    );
    s.now_from = Some(NowFrom::Dump);
    let t = render::text(&s);
    assert!(
        t.starts_with(&format!(
            "As of {NOW} (the newest time in the dump)\n\nPOOL "
        )),
        "{t}"
    );
    let json = serde_json::to_value(&s).expect("json");
    assert_eq!(json["nowFrom"], "dump");
}
