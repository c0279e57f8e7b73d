use super::*;
use proptest::prelude::*;
use serde_json::json;

const V: &str = "4.99.0";

fn deployment(
    name: &str,
    version: &str,
    generation: i64,
    observed: i64,
    updated: i64,
    available: i64,
) -> Workload {
    Workload {
        kind: "Deployment".into(),
        name: name.into(),
        observed: Some(json!({
            "metadata": {"name": name, "generation": generation,
                         "annotations": {VERSION_ANNOTATION: version}},
            "spec": {"replicas": 1},
            "status": {"observedGeneration": observed, "updatedReplicas": updated,
                       "availableReplicas": available}
        })),
    }
}

fn daemonset(version: &str, desired: i64, updated: i64, available: i64) -> Workload {
    Workload {
        kind: "DaemonSet".into(),
        name: "machine-config-daemon".into(),
        observed: Some(json!({
            "metadata": {"name": "machine-config-daemon", "generation": 1,
                         "annotations": {VERSION_ANNOTATION: version}},
            "status": {"observedGeneration": 1, "desiredNumberScheduled": desired,
                       "updatedNumberScheduled": updated, "numberAvailable": available}
        })),
    }
}

fn rolled_out() -> Vec<Workload> {
    vec![
        deployment("machine-config-controller", V, 1, 1, 1, 1),
        deployment("machine-config-server", V, 1, 1, 1, 1),
        daemonset(V, 3, 3, 3),
    ]
}

fn pool(name: &str, degraded: bool, updating: bool) -> MachineConfigPool {
    serde_json::from_value(
        json!({"metadata": {"name": name}, "status": {"machineCount": 3, "readyMachineCount": 2,
        "updatedMachineCount": 2, "unavailableMachineCount": 1, "degradedMachineCount": 1,
        "conditions": [
            {"type": "Degraded", "status": if degraded {"True"} else {"False"},
             "message": "Node w-1 is reporting: boom"},
            {"type": "Updating", "status": if updating {"True"} else {"False"}}]}}),
    )
    .expect("pool fixture")
}

fn input<'a>(
    workloads: &'a [Workload],
    pools: &'a [MachineConfigPool],
    failure: Option<&'a SyncFailure>,
    previous: Option<&'a ClusterOperatorStatus>,
) -> StatusInput<'a> {
    StatusInput {
        version: V,
        namespace: "openshift-machine-config-operator",
        workloads,
        pools,
        failure,
        previous,
        now: "2026-01-01T00:00:00Z",
    }
}

fn get<'a>(s: &'a ClusterOperatorStatus, t: &str) -> &'a Condition {
    s.conditions
        .iter()
        .find(|c| c.type_ == t)
        .unwrap_or_else(|| panic!("no {t} condition"))
}

#[test]
fn rolled_out_reports_available_and_the_version() {
    let w = rolled_out();
    let s = compute_status(&input(&w, &[], None, None));
    assert_eq!(
        s.versions,
        [OperandVersion {
            name: "operator".into(),
            version: V.into()
        }]
    );
    let a = get(&s, "Available");
    assert_eq!((a.status.as_str(), a.reason()), ("True", "AsExpected"));
    assert_eq!(a.message(), "Cluster has deployed [{operator 4.99.0}]");
    let p = get(&s, "Progressing");
    assert_eq!(
        (p.status.as_str(), p.message()),
        ("False", "Cluster version is 4.99.0")
    );
    assert_eq!(get(&s, "Degraded").status, "False");
    assert_eq!(get(&s, "Upgradeable").status, "True");
    let types: Vec<&str> = s.conditions.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(
        types,
        ["Available", "Progressing", "Degraded", "Upgradeable"]
    );
    assert_eq!(s.related_objects[0].resource, "namespaces");
    assert_eq!(
        s.related_objects[0].name,
        "openshift-machine-config-operator"
    );
}

#[test]
fn rolling_out_reports_progressing_without_a_version() {
    let w = vec![
        deployment("machine-config-controller", V, 2, 1, 0, 0),
        deployment("machine-config-server", V, 1, 1, 1, 1),
        daemonset(V, 3, 3, 3),
    ];
    let s = compute_status(&input(&w, &[], None, None));
    assert!(s.versions.is_empty());
    let p = get(&s, "Progressing");
    assert_eq!(p.status, "True");
    assert!(
        p.message().starts_with("Working towards 4.99.0"),
        "{}",
        p.message()
    );
    let a = get(&s, "Available");
    assert_eq!(
        (a.status.as_str(), a.reason()),
        ("False", "MachineConfigControllerNotAvailable")
    );
    assert_eq!(get(&s, "Degraded").status, "False");
}

#[test]
fn every_rollout_rule_holds_back_completion() {
    let cases = [
        deployment("c", "4.0", 1, 1, 1, 1),
        deployment("c", V, 2, 1, 1, 1),
        deployment("c", V, 1, 1, 0, 1),
        deployment("c", V, 1, 1, 1, 0),
        daemonset(V, 3, 2, 3),
        daemonset(V, 3, 3, 2),
        Workload {
            kind: "Deployment".into(),
            name: "c".into(),
            observed: None,
        },
    ];
    for w in cases {
        assert!(rollout_pending(&w, V).is_some(), "{w:?}");
        let s = compute_status(&input(std::slice::from_ref(&w), &[], None, None));
        assert!(s.versions.is_empty());
        assert_eq!(get(&s, "Progressing").status, "True");
    }
    assert_eq!(rollout_pending(&daemonset(V, 0, 0, 0), V), None);
}

#[test]
fn new_version_keeps_the_old_one_while_working_towards_it() {
    let old = vec![OperandVersion {
        name: "operator".into(),
        version: "4.98.0".into(),
    }];
    let prev = ClusterOperatorStatus {
        versions: old.clone(),
        ..Default::default()
    };
    let w = vec![deployment("machine-config-controller", V, 2, 2, 1, 1)];
    let mut w2 = w.clone();
    if let Some(o) = w2[0].observed.as_mut() {
        o["status"]["updatedReplicas"] = json!(0);
    }
    let s = compute_status(&input(&w2, &[], None, Some(&prev)));
    assert_eq!(s.versions, old);
    assert_eq!(get(&s, "Progressing").status, "True");
    assert!(get(&s, "Progressing")
        .message()
        .starts_with("Working towards 4.99.0"));
    assert_eq!(
        get(&s, "Available").message(),
        "Cluster has deployed [{operator 4.98.0}]"
    );
    let done = compute_status(&input(&w, &[], None, Some(&prev)));
    assert_eq!(done.versions[0].version, V);
}

#[test]
fn degraded_pool_is_degraded_not_unavailable() {
    let w = rolled_out();
    let pools = [pool("master", false, false), pool("worker", true, false)];
    let s = compute_status(&input(&w, &pools, None, None));
    let d = get(&s, "Degraded");
    assert_eq!(
        (d.status.as_str(), d.reason()),
        ("True", "RequiredPoolsFailed")
    );
    assert!(
        d.message()
            .starts_with("Unable to apply 4.99.0: MachineConfigPool worker is degraded"),
        "{}",
        d.message()
    );
    assert!(d.message().contains("boom"));
    assert!(!d.message().contains("master"));
    assert_eq!(get(&s, "Available").status, "True");
    let u = get(&s, "Upgradeable");
    assert_eq!((u.status.as_str(), u.reason()), ("False", "DegradedPool"));
    assert!(s.versions.is_empty());
    let p = get(&s, "Progressing");
    assert_eq!(
        (p.status.as_str(), p.message()),
        ("True", "Unable to apply 4.99.0")
    );
}

#[test]
fn degraded_at_the_version_says_resync() {
    let w = rolled_out();
    let prev = compute_status(&input(&w, &[], None, None));
    let pools = [pool("worker", true, false)];
    let s = compute_status(&input(&w, &pools, None, Some(&prev)));
    assert!(get(&s, "Degraded")
        .message()
        .starts_with("Failed to resync 4.99.0 because: MachineConfigPool worker"));
    let p = get(&s, "Progressing");
    assert_eq!(
        (p.status.as_str(), p.message()),
        ("False", "Error while reconciling 4.99.0")
    );
    assert_eq!(s.versions, prev.versions);
}

#[test]
fn updating_pool_is_not_upgradeable() {
    let w = rolled_out();
    let pools = [pool("worker", false, true)];
    let s = compute_status(&input(&w, &pools, None, None));
    let u = get(&s, "Upgradeable");
    assert_eq!((u.status.as_str(), u.reason()), ("False", "PoolUpdating"));
    assert_eq!(get(&s, "Degraded").status, "False");
}

#[test]
fn failed_task_makes_unavailable_and_degraded() {
    let w = rolled_out();
    let f = SyncFailure {
        task: "MachineConfigServer".into(),
        message: "forbidden".into(),
    };
    let s = compute_status(&input(&w, &[], Some(&f), None));
    let a = get(&s, "Available");
    assert_eq!(
        (a.status.as_str(), a.reason()),
        ("False", "MachineConfigServerFailed")
    );
    assert_eq!(a.message(), "Cluster not available for []: forbidden");
    let d = get(&s, "Degraded");
    assert_eq!(d.reason(), "MachineConfigServerFailed");
    assert_eq!(d.message(), "Unable to apply 4.99.0: forbidden");
}

#[test]
fn transition_time_kept_when_status_unchanged() {
    let w = rolled_out();
    let first = compute_status(&input(&w, &[], None, None));
    let mut later = input(&w, &[], None, Some(&first));
    later.now = "2026-02-02T00:00:00Z";
    let pools = [pool("worker", true, false)];
    later.pools = &pools;
    let s = compute_status(&later);
    assert_eq!(
        get(&s, "Available").last_transition_time(),
        "2026-01-01T00:00:00Z"
    );
    assert_eq!(
        get(&s, "Degraded").last_transition_time(),
        "2026-02-02T00:00:00Z"
    );
    assert_eq!(
        get(&s, "Upgradeable").last_transition_time(),
        "2026-02-02T00:00:00Z"
    );
}

#[test]
fn foreign_conditions_and_extension_survive() {
    let prev = ClusterOperatorStatus {
        conditions: vec![Condition {
            type_: "EvaluationConditionsDetected".into(),
            status: "False".into(),
            ..Default::default()
        }],
        extension: Some(json!({"a": 1})),
        ..Default::default()
    };
    let s = compute_status(&input(&rolled_out(), &[], None, Some(&prev)));
    assert_eq!(s.conditions.len(), 5);
    assert_eq!(s.conditions[4].type_, "EvaluationConditionsDetected");
    assert_eq!(s.extension, prev.extension);
}

#[test]
fn task_names() {
    assert_eq!(task_name("machine-config-server"), "MachineConfigServer");
    assert_eq!(task_name(""), "");
}

fn arb_workload() -> impl Strategy<Value = Workload> {
    (
        any::<bool>(),
        0i64..3,
        0i64..3,
        0i64..3,
        0i64..3,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(ds, g, og, up, av, old, missing)| {
            let version = if old { "4.0" } else { V };
            let mut w = if ds {
                daemonset(version, g, up, av)
            } else {
                deployment("machine-config-controller", version, g, og, up, av)
            };
            if missing {
                w.observed = None;
            }
            w
        })
}

fn arb_previous() -> impl Strategy<Value = Option<ClusterOperatorStatus>> {
    proptest::option::of((any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        |(versioned, avail, old)| ClusterOperatorStatus {
            conditions: vec![Condition {
                type_: "Available".into(),
                status: if avail { "True" } else { "False" }.into(),
                last_transition_time: Some("2025-01-01T00:00:00Z".into()),
                ..Default::default()
            }],
            versions: if versioned {
                vec![OperandVersion {
                    name: "operator".into(),
                    version: if old { "4.0".into() } else { V.into() },
                }]
            } else {
                Vec::new()
            },
            ..Default::default()
        },
    ))
}

proptest! {
    #[test]
    fn status_is_deterministic_and_idempotent(
        workloads in proptest::collection::vec(arb_workload(), 0..4),
        pool_flags in proptest::collection::vec((any::<bool>(), any::<bool>()), 0..3),
        fail in any::<bool>(),
        previous in arb_previous(),
    ) {
        let pools: Vec<MachineConfigPool> = pool_flags.iter().enumerate()
            .map(|(i, (d, u))| pool(&format!("p{i}"), *d, *u)).collect();
        let failure = SyncFailure { task: "MachineConfigDaemon".into(), message: "x".into() };
        let inp = input(&workloads, &pools, fail.then_some(&failure), previous.as_ref());
        let first = compute_status(&inp);
        prop_assert_eq!(&first, &compute_status(&inp));
        let mut again = input(&workloads, &pools, fail.then_some(&failure), Some(&first));
        again.now = "2027-01-01T00:00:00Z";
        prop_assert_eq!(&compute_status(&again), &first);
        // The version is reported only when complete.
        let complete = !fail && workloads.iter().all(|w| rollout_pending(w, V).is_none())
            && degraded_pools(&pools).is_empty();
        if complete {
            prop_assert_eq!(&first.versions[0].version, V);
        } else {
            prop_assert_eq!(&first.versions, &previous.unwrap_or_default().versions);
        }
    }
}
