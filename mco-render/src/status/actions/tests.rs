//! The actions' decisions on plain values: what each writes, and when it refuses.

use super::*;
use crate::api::node::testing::{node, with_configs};
use crate::api::node::{DESIRED_DRAIN, DRAIN_FAILURE, STATE_DEGRADED, STATE_DONE};
use crate::api::rollout_policy::{Pause, Rollback, RolloutPolicyStatus};
use crate::api::MachineConfigPool;

const OLD: &str = "rendered-worker-old";
const NEW: &str = "rendered-worker-new";

fn now() -> Timestamp {
    match "2026-03-07T12:00:00Z".parse() {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    }
}

fn pool(paused: bool) -> MachineConfigPool {
    let mut p = MachineConfigPool::default();
    p.metadata.name = "worker".into();
    p.spec.configuration.name = NEW.into();
    p.spec.paused = paused;
    p
}

fn policy(status: RolloutPolicyStatus) -> RolloutPolicy {
    let mut p = RolloutPolicy::default();
    p.metadata.name = "worker".into();
    p.status = Some(status);
    p
}

fn paused_status(since: &str) -> RolloutPolicyStatus {
    RolloutPolicyStatus {
        phase: Phase::Paused,
        target: NEW.into(),
        last_known_good: Some(OLD.into()),
        pause: Some(Pause {
            config: NEW.into(),
            node: "worker-1".into(),
            nodes: vec!["worker-1".into()],
            reason: "NodeDegraded".into(),
            message: "canary worker-1 degraded".into(),
            since: since.into(),
        }),
        ..RolloutPolicyStatus::default()
    }
}

fn cluster(pools: Vec<MachineConfigPool>, policies: Vec<RolloutPolicy>) -> Cluster {
    Cluster {
        pools,
        rollout_policies: policies,
        ..Cluster::default()
    }
}

fn err<T: std::fmt::Debug>(r: Result<T, ActionError>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

fn ok(r: Result<Decision, ActionError>) -> Decision {
    r.unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn resume_of_a_paused_pool_unpauses_it() {
    let c = cluster(vec![pool(true)], vec![]);
    let d = ok(resume(&c, "worker", now()));
    assert_eq!(d.writes.len(), 1);
    let w = &d.writes[0];
    assert_eq!((w.object, w.name.as_str()), (Object::Pool, "worker"));
    assert_eq!(w.change, Change::Paused(false));
    assert_eq!(
        w.kubectl(),
        r#"kubectl patch machineconfigpool/worker --type merge -p '{"spec":{"paused":false}}'"#
    );
}

#[test]
fn resume_of_a_pool_neither_paused_nor_held_says_so() {
    let c = cluster(vec![pool(false)], vec![]);
    assert_eq!(
        err(resume(&c, "worker", now())),
        "nothing to resume: pool worker is not paused (spec.paused)"
    );
    let c = cluster(
        vec![pool(false)],
        vec![policy(RolloutPolicyStatus {
            phase: Phase::Rolling,
            ..RolloutPolicyStatus::default()
        })],
    );
    let e = err(resume(&c, "worker", now()));
    assert!(
        e.contains("RolloutPolicy worker has not paused the rollout of rendered-worker-new (phase Rolling)"),
        "{e}"
    );
    assert_eq!(
        err(resume(&c, "infra", now())),
        "no MachineConfigPool named \"infra\""
    );
}

#[test]
fn resume_of_a_paused_rollout_sets_resumed_at_now() {
    let c = cluster(
        vec![pool(false)],
        vec![policy(paused_status("2026-03-07T11:00:00Z"))],
    );
    let d = ok(resume(&c, "worker", now()));
    assert_eq!(d.writes.len(), 1, "{d:?}");
    let w = &d.writes[0];
    assert_eq!(w.object, Object::RolloutPolicy);
    assert_eq!(w.change, Change::ResumedAt("2026-03-07T12:00:00Z".into()));
    assert_eq!(
        w.kubectl(),
        r#"kubectl patch rolloutpolicy/worker --type merge -p '{"spec":{"resumedAt":"2026-03-07T12:00:00Z"}}'"#
    );
    assert!(w.effect.contains("past worker-1"), "{}", w.effect);
}

#[test]
fn resume_never_asks_before_the_pause_began() {
    // The caller's clock is behind the controller's: the pause's own time is used, else the
    // controller would not take the resume.
    let c = cluster(
        vec![pool(false)],
        vec![policy(paused_status("2026-03-07T12:05:00Z"))],
    );
    let d = ok(resume(&c, "worker", now()));
    assert_eq!(
        d.writes[0].change,
        Change::ResumedAt("2026-03-07T12:05:00Z".into())
    );
}

#[test]
fn resume_requested_already_is_refused() {
    let mut p = policy(paused_status("2026-03-07T11:00:00Z"));
    p.spec.resumed_at = Some("2026-03-07T11:30:00Z".into());
    let c = cluster(vec![pool(false)], vec![p]);
    let e = err(resume(&c, "worker", now()));
    assert!(e.contains("requested already"), "{e}");
    // An older resume (before this pause) does not count.
    let mut p = policy(paused_status("2026-03-07T11:00:00Z"));
    p.spec.resumed_at = Some("2026-03-07T10:00:00Z".into());
    let c = cluster(vec![pool(false)], vec![p]);
    assert_eq!(ok(resume(&c, "worker", now())).writes.len(), 1);
}

#[test]
fn a_pause_on_an_older_config_is_over_already() {
    let mut st = paused_status("2026-03-07T11:00:00Z");
    if let Some(p) = st.pause.as_mut() {
        p.config = OLD.into();
    }
    let c = cluster(vec![pool(false)], vec![policy(st)]);
    assert!(err(resume(&c, "worker", now())).contains("has not paused"));
}

#[test]
fn resume_of_a_paused_pool_with_a_paused_rollout_writes_both() {
    let c = cluster(
        vec![pool(true)],
        vec![policy(paused_status("2026-03-07T11:00:00Z"))],
    );
    let d = ok(resume(&c, "worker", now()));
    let objects: Vec<Object> = d.writes.iter().map(|w| w.object).collect();
    assert_eq!(objects, vec![Object::RolloutPolicy, Object::Pool]);
}

#[test]
fn resume_ends_a_requested_rollback_but_not_an_automatic_one() {
    let rolled_back = |automatic: bool| {
        let mut p = policy(RolloutPolicyStatus {
            phase: Phase::RolledBack,
            rollback: Some(Rollback {
                from: NEW.into(),
                to: OLD.into(),
                automatic,
                since: "2026-03-07T11:00:00Z".into(),
                disruption: None,
            }),
            ..RolloutPolicyStatus::default()
        });
        p.spec.rollback = !automatic;
        p
    };
    let c = cluster(vec![pool(false)], vec![rolled_back(false)]);
    let d = ok(resume(&c, "worker", now()));
    assert_eq!(d.writes.len(), 1);
    assert_eq!(d.writes[0].change, Change::Rollback(false));
    assert!(d.writes[0].effect.contains("rendered-worker-new"));
    let c = cluster(vec![pool(false)], vec![rolled_back(true)]);
    let e = err(resume(&c, "worker", now()));
    assert!(e.contains("autoRollback"), "{e}");
}

#[test]
fn rollback_asks_the_policy_for_its_last_known_good() {
    let st = RolloutPolicyStatus {
        phase: Phase::Paused,
        last_known_good: Some(OLD.into()),
        ..RolloutPolicyStatus::default()
    };
    let c = cluster(vec![pool(false)], vec![policy(st)]);
    let d = ok(rollback(&c, "worker"));
    assert_eq!(d.writes.len(), 1);
    let w = &d.writes[0];
    assert_eq!(w.change, Change::Rollback(true));
    assert_eq!(
        w.kubectl(),
        r#"kubectl patch rolloutpolicy/worker --type merge -p '{"spec":{"rollback":true}}'"#
    );
    assert!(
        w.effect
            .contains("from rendered-worker-new to rendered-worker-old"),
        "{}",
        w.effect
    );
}

#[test]
fn rollback_after_the_newest_passed_returns_to_the_one_before() {
    let st = RolloutPolicyStatus {
        phase: Phase::Done,
        last_known_good: Some(NEW.into()),
        previous_known_good: Some(OLD.into()),
        ..RolloutPolicyStatus::default()
    };
    let c = cluster(vec![pool(false)], vec![policy(st)]);
    assert!(ok(rollback(&c, "worker")).writes[0]
        .effect
        .contains("to rendered-worker-old"));
}

#[test]
fn rollback_refusals() {
    let c = cluster(vec![pool(false)], vec![]);
    assert!(err(rollback(&c, "worker")).starts_with("pool worker has no RolloutPolicy"));
    // Nothing known good but the newest.
    let st = RolloutPolicyStatus {
        last_known_good: Some(NEW.into()),
        ..RolloutPolicyStatus::default()
    };
    let c = cluster(vec![pool(false)], vec![policy(st)]);
    assert!(err(rollback(&c, "worker")).contains("knows no good config"));
    // Requested already.
    let mut p = policy(RolloutPolicyStatus {
        last_known_good: Some(OLD.into()),
        ..RolloutPolicyStatus::default()
    });
    p.spec.rollback = true;
    let c = cluster(vec![pool(false)], vec![p]);
    assert!(err(rollback(&c, "worker")).contains("requests a rollback already"));
    // An automatic one in force.
    let p = policy(RolloutPolicyStatus {
        phase: Phase::RollingBack,
        last_known_good: Some(OLD.into()),
        rollback: Some(Rollback {
            from: NEW.into(),
            to: OLD.into(),
            automatic: true,
            since: "2026-03-07T11:00:00Z".into(),
            disruption: None,
        }),
        ..RolloutPolicyStatus::default()
    });
    let c = cluster(vec![pool(false)], vec![p]);
    assert!(err(rollback(&c, "worker")).contains("rolling back from"));
}

fn nodes_cluster(nodes: Vec<Node>) -> Cluster {
    Cluster {
        pools: vec![pool(false)],
        nodes,
        ..Cluster::default()
    }
}

fn degraded(name: &str, reason: &str) -> Node {
    let mut n = with_configs(node(name, &[]), OLD, NEW, STATE_DEGRADED);
    n.metadata.annotations.insert(REASON.into(), reason.into());
    n
}

#[test]
fn retry_writes_nothing_and_says_who_retries() {
    let c = nodes_cluster(vec![degraded(
        "worker-1",
        "error enabling units: x.service",
    )]);
    let d = ok(retry(&c, "worker-1"));
    assert!(d.writes.is_empty());
    assert!(d.notes[0].contains("daemon tries its update"), "{d:?}");
    // A drain pending: the drain controller retries.
    let mut n = with_configs(node("worker-2", &[]), OLD, NEW, "Working");
    n.metadata
        .annotations
        .insert(DESIRED_DRAIN.into(), format!("drain-{NEW}"));
    n.metadata
        .annotations
        .insert(DRAIN_FAILURE.into(), "failed to drain node worker-2".into());
    let c = nodes_cluster(vec![n]);
    let d = ok(retry(&c, "worker-2"));
    assert!(d.writes.is_empty());
    assert!(
        d.notes[0].contains("drain controller") && d.notes[0].contains("failed to drain"),
        "{d:?}"
    );
}

#[test]
fn retry_points_at_resume_when_the_rollout_paused_on_the_node() {
    let c = Cluster {
        rollout_policies: vec![policy(paused_status("2026-03-07T11:00:00Z"))],
        ..nodes_cluster(vec![degraded("worker-1", "error enabling units")])
    };
    let d = ok(retry(&c, "worker-1"));
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("kubectl mco resume worker")),
        "{d:?}"
    );
}

#[test]
fn retry_refusals() {
    let done = with_configs(node("worker-0", &[]), NEW, NEW, STATE_DONE);
    let drift = degraded("worker-1", "content mismatch for file \"/etc/x\"");
    let mut unrec = degraded("worker-2", "can't reconcile");
    unrec
        .metadata
        .annotations
        .insert(STATE.into(), STATE_UNRECONCILABLE.into());
    let c = nodes_cluster(vec![done, drift, unrec]);
    assert!(err(retry(&c, "worker-0")).contains("not degraded"));
    assert!(err(retry(&c, "worker-1")).contains("kubectl mco force worker-1"));
    assert!(err(retry(&c, "worker-2")).contains("revert that change"));
    assert_eq!(err(retry(&c, "worker-9")), "no Node named \"worker-9\"");
}

#[test]
fn force_annotates_a_degraded_node() {
    let c = nodes_cluster(vec![degraded(
        "worker-1",
        "content mismatch for file \"/etc/x\"",
    )]);
    let d = ok(force(&c, "worker-1", now()));
    assert_eq!(d.writes.len(), 1);
    let w = &d.writes[0];
    assert_eq!((w.object, w.name.as_str()), (Object::Node, "worker-1"));
    assert_eq!(
        w.change.merge_patch(),
        json!({"metadata": {"annotations": {FORCE: "2026-03-07T12:00:00Z"}}})
    );
    assert_eq!(
        w.kubectl(),
        r#"kubectl patch node/worker-1 --type merge -p '{"metadata":{"annotations":{"agent.mco.dev/force":"2026-03-07T12:00:00Z"}}}'"#
    );
    assert!(w.effect.contains("stops reporting"), "{}", w.effect);
}

#[test]
fn force_refusals() {
    let done = with_configs(node("worker-0", &[]), NEW, NEW, STATE_DONE);
    let mut asked = degraded("worker-1", "mismatch");
    asked
        .metadata
        .annotations
        .insert(FORCE.into(), "2026-03-07T11:00:00Z".into());
    let mut unrec = degraded("worker-2", "can't reconcile");
    unrec
        .metadata
        .annotations
        .insert(STATE.into(), STATE_UNRECONCILABLE.into());
    let c = nodes_cluster(vec![done, asked, unrec]);
    assert!(err(force(&c, "worker-0", now())).contains("not degraded"));
    assert!(err(force(&c, "worker-1", now())).contains("already"));
    assert!(err(force(&c, "worker-2", now())).contains("revert the change"));
}
