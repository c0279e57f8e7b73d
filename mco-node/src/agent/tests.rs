use super::*;
use crate::state::AgentStatus;
use mco_render::api::node::DESIRED_CONFIG;

fn mc(name: &str, ign: Value) -> DesiredConfig {
    let mut ign = ign;
    ign["ignition"] = json!({"version": "3.4.0"});
    let v = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": name},
        "spec": {"config": ign}
    });
    match DesiredConfig::from_bytes(v.to_string().as_bytes(), name) {
        Ok(c) => c,
        Err(e) => panic!("test config: {e}"),
    }
}

fn file(path: &str, data: &str) -> Value {
    json!({"path": path, "contents": {"source": format!("data:,{data}")}})
}

fn with_files(name: &str, files: Vec<Value>) -> DesiredConfig {
    mc(name, json!({"storage": {"files": files}}))
}

/// r1: a plain file; r2 changes a file only reloads/none cover; r3 changes a file that reboots.
fn configs() -> (DesiredConfig, DesiredConfig, DesiredConfig) {
    let base = vec![
        file("/var/lib/kubelet/config.json", "a"),
        file("/etc/foo", "1"),
    ];
    let none = vec![
        file("/var/lib/kubelet/config.json", "b"),
        file("/etc/foo", "1"),
    ];
    let reboot = vec![
        file("/var/lib/kubelet/config.json", "a"),
        file("/etc/foo", "2"),
    ];
    (
        with_files("r1", base),
        with_files("r2", none),
        with_files("r3", reboot),
    )
}

fn node(annos: &[(&str, &str)]) -> Node {
    let mut n = Node::default();
    n.metadata.name = "w1".into();
    for (k, v) in annos {
        n.metadata.annotations.insert((*k).into(), (*v).into());
    }
    n
}

fn on(current: &str, desired: &str, state: &str) -> Node {
    node(&[
        (CURRENT_CONFIG, current),
        (DESIRED_CONFIG, desired),
        (STATE, state),
    ])
}

fn set(n: &mut Node, k: &str, v: &str) {
    n.metadata.annotations.insert(k.into(), v.into());
}

#[test]
fn idle_when_done_on_desired() {
    let (r1, _, _) = configs();
    let mut n = on("r1", "r1", STATE_DONE);
    set(&mut n, DESIRED_DRAIN, "uncordon-r1");
    set(&mut n, LAST_APPLIED_DRAIN, "uncordon-r1");
    assert!(matches!(decide(&n, &r1, None, None), Step::Idle { .. }));
}

#[test]
fn reboot_marker_is_cleared_first() {
    let (r1, _, _) = configs();
    let mut n = on("r1", "r1", STATE_DONE);
    set(&mut n, POST_CONFIG_ACTION, STATE_REBOOTING);
    assert_eq!(decide(&n, &r1, None, None), Step::ClearRebooting);
    let patch = Step::ClearRebooting.patch();
    assert_eq!(
        patch,
        Some(json!({"metadata": {"annotations": {POST_CONFIG_ACTION: ""}}}))
    );
}

#[test]
fn missing_current_annotation_is_initialized_from_disk() {
    let (r1, _, _) = configs();
    let n = node(&[(DESIRED_CONFIG, "r1")]);
    assert_eq!(
        decide(&n, &r1, None, None),
        Step::Initialize {
            current: "r1".into()
        }
    );
    let empty = DesiredConfig::empty();
    assert!(matches!(decide(&n, &empty, None, None), Step::Idle { .. }));
}

#[test]
fn no_desired_config_is_idle() {
    let (r1, _, _) = configs();
    let n = node(&[(CURRENT_CONFIG, "r1"), (STATE, STATE_DONE)]);
    assert!(matches!(decide(&n, &r1, None, None), Step::Idle { .. }));
}

#[test]
fn pending_drain_request_waits() {
    let (r1, _, r3) = configs();
    let mut n = on("r1", "r3", STATE_WORKING);
    set(&mut n, DESIRED_DRAIN, "drain-r3");
    assert_eq!(
        decide(&n, &r1, Some(&r3), None),
        Step::Wait {
            request: "drain-r3".into()
        }
    );
    set(&mut n, LAST_APPLIED_DRAIN, "uncordon-r1");
    assert!(matches!(
        decide(&n, &r1, Some(&r3), None),
        Step::Wait { .. }
    ));
}

#[test]
fn rebootless_update_walks_to_done() {
    let (r1, r2, _) = configs();
    let mut n = on("r1", "r2", STATE_DONE);
    let mut current = r1;
    let mut seen = Vec::new();
    for _ in 0..10 {
        let step = decide(&n, &current, Some(&r2), None);
        seen.push(step.clone());
        match &step {
            Step::Apply { drain, reboot, .. } => {
                assert!(!drain && !reboot);
                current = r2.clone();
            }
            Step::Idle { .. } => break,
            Step::Wait { request } => {
                let r = request.clone();
                set(&mut n, LAST_APPLIED_DRAIN, &r);
            }
            s => s.apply_to(&mut n),
        }
    }
    assert_eq!(
        seen,
        vec![
            Step::SetWorking,
            Step::Apply {
                desired: "r2".into(),
                drain: false,
                reboot: false
            },
            Step::RequestUncordon {
                request: "uncordon-r2".into()
            },
            Step::Wait {
                request: "uncordon-r2".into()
            },
            Step::Done {
                current: "r2".into(),
                image: String::new(),
            },
            Step::Idle {
                why: "on desired config r2".into()
            },
        ]
    );
    assert_eq!(n.current_config(), "r2");
    assert_eq!(n.annotation(STATE), Some(STATE_DONE));
}

#[test]
fn rebooting_update_drains_first_and_uncordons_after() {
    let (r1, _, r3) = configs();
    let mut n = on("r1", "r3", STATE_DONE);
    let mut current = r1;
    let mut seen = Vec::new();
    for _ in 0..12 {
        let step = decide(&n, &current, Some(&r3), None);
        seen.push(step.clone());
        match &step {
            Step::Apply { drain, reboot, .. } => {
                assert!(*drain && *reboot);
                current = r3.clone();
                // The apply reports the reboot; the agent marks the node and reboots.
                Step::Reboot {
                    config: "r3".into(),
                }
                .apply_to(&mut n);
            }
            Step::Idle { .. } => break,
            Step::Wait { request } => {
                let r = request.clone();
                set(&mut n, LAST_APPLIED_DRAIN, &r);
            }
            s => s.apply_to(&mut n),
        }
    }
    assert_eq!(
        seen,
        vec![
            Step::SetWorking,
            Step::RequestDrain {
                request: "drain-r3".into()
            },
            Step::Wait {
                request: "drain-r3".into()
            },
            Step::Apply {
                desired: "r3".into(),
                drain: true,
                reboot: true
            },
            Step::ClearRebooting,
            Step::RequestUncordon {
                request: "uncordon-r3".into()
            },
            Step::Wait {
                request: "uncordon-r3".into()
            },
            Step::Done {
                current: "r3".into(),
                image: String::new(),
            },
            Step::Idle {
                why: "on desired config r3".into()
            },
        ]
    );
}

#[test]
fn drain_already_applied_is_not_requested_again() {
    let (r1, _, r3) = configs();
    let mut n = on("r1", "r3", STATE_WORKING);
    set(&mut n, DESIRED_DRAIN, "drain-r3");
    set(&mut n, LAST_APPLIED_DRAIN, "drain-r3");
    assert!(matches!(
        decide(&n, &r1, Some(&r3), None),
        Step::Apply { drain: true, .. }
    ));
}

#[test]
fn degraded_node_retries_without_going_working() {
    let (r1, r2, _) = configs();
    let mut n = on("r1", "r2", STATE_DEGRADED);
    set(&mut n, REASON, "boom");
    assert!(matches!(
        decide(&n, &r1, Some(&r2), None),
        Step::Apply { .. }
    ));
}

#[test]
fn unreconcilable_is_reported_once() {
    let (r1, _, _) = configs();
    let bad = mc("r9", json!({"passwd": {"groups": [{"name": "g"}]}}));
    let mut n = on("r1", "r9", STATE_WORKING);
    let step = decide(&n, &r1, Some(&bad), None);
    let Step::Unreconcilable { reason } = &step else {
        panic!("expected unreconcilable, got {step:?}");
    };
    assert!(
        reason.starts_with("can't reconcile config r1 with r9: "),
        "{reason}"
    );
    step.apply_to(&mut n);
    assert!(matches!(
        decide(&n, &r1, Some(&bad), None),
        Step::Idle { .. }
    ));
}

#[test]
fn desired_not_fetched_is_idle() {
    let (r1, _, r3) = configs();
    let n = on("r1", "r3", STATE_DONE);
    assert!(matches!(decide(&n, &r1, None, None), Step::Idle { .. }));
    // A config under another name is not the desired one.
    let (_, r2, _) = configs();
    assert!(matches!(
        decide(&n, &r1, Some(&r2), None),
        Step::Idle { .. }
    ));
    assert_eq!(decide(&n, &r1, Some(&r3), None), Step::SetWorking);
}

#[test]
fn disk_wins_over_the_current_annotation() {
    // The node says r1 but the disk holds r2, the desired config: finish, do not re-apply.
    let (_, r2, _) = configs();
    let mut n = on("r1", "r2", STATE_WORKING);
    set(&mut n, DESIRED_DRAIN, "uncordon-r2");
    set(&mut n, LAST_APPLIED_DRAIN, "uncordon-r2");
    assert_eq!(
        decide(&n, &r2, None, None),
        Step::Done {
            current: "r2".into(),
            image: String::new(),
        }
    );
}

#[test]
fn done_patch_clears_reason_and_current_image() {
    let p = Step::Done {
        current: "r2".into(),
        image: String::new(),
    }
    .patch();
    assert_eq!(
        p,
        Some(json!({"metadata": {"annotations": {
            CURRENT_CONFIG: "r2",
            CURRENT_IMAGE: null,
            REASON: "",
            STATE: "Done",
        }}}))
    );
    assert_eq!(
        Step::Wait {
            request: "x".into()
        }
        .patch(),
        None
    );
}

#[test]
fn after_apply_maps_outcomes() {
    let out = |state, reason: &str, reboot| ApplyOutcome {
        status: AgentStatus::new(state, reason, "r1", "r3"),
        log: Vec::new(),
        drift: Vec::new(),
        rollback: None,
        reboot_pending: reboot,
        pivot: None,
    };
    assert_eq!(after_apply(&out(NodeState::Done, "", false)), None);
    assert_eq!(
        after_apply(&out(NodeState::Done, "", true)),
        Some(Step::Reboot {
            config: "r3".into()
        })
    );
    let long = "x".repeat(MAX_REASON + 50);
    match after_apply(&out(NodeState::Degraded, &long, false)) {
        Some(Step::Degraded { reason }) => assert_eq!(reason.chars().count(), MAX_REASON),
        other => panic!("expected degraded, got {other:?}"),
    }
    assert!(matches!(
        after_apply(&out(NodeState::Unreconcilable, "no", false)),
        Some(Step::Unreconcilable { .. })
    ));
}

#[test]
fn reason_cap_counts_characters() {
    let s = "é".repeat(MAX_REASON + 1);
    assert_eq!(cap_reason(&s).chars().count(), MAX_REASON);
    assert_eq!(cap_reason("short"), "short");
}

#[test]
fn cluster_policies_decide_drain_and_reboot() {
    let (r1, _, r3) = configs();
    let n = on("r1", "r3", STATE_WORKING);
    // Built in: a change to /etc/foo reboots, after a drain.
    assert!(matches!(
        decide(&n, &r1, Some(&r3), None),
        Step::RequestDrain { .. }
    ));
    // The cluster says /etc/foo needs nothing: applied in place, no drain, no reboot.
    let policies: MachineConfiguration = serde_json::from_value(json!({
        "apiVersion": "operator.openshift.io/v1", "kind": "MachineConfiguration",
        "metadata": {"name": "cluster"},
        "spec": {"nodeDisruptionPolicy": {"files": [
            {"path": "/etc/foo", "actions": [{"type": "None"}]}
        ]}}
    }))
    .unwrap_or_default();
    assert_eq!(
        decide(&n, &r1, Some(&r3), Some(&policies)),
        Step::Apply {
            desired: "r3".into(),
            drain: false,
            reboot: false
        }
    );
}

fn initial() -> BTreeMap<String, String> {
    [
        (CURRENT_CONFIG, "rendered-worker-1"),
        (DESIRED_CONFIG, "rendered-worker-1"),
        (STATE, STATE_DONE),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

#[test]
fn a_joining_node_finishes_its_disk_then_gets_the_initial_annotations() {
    let annos = initial();
    let fresh = node(&[]);
    // The file is there: the disk first, with the config the file names.
    assert_eq!(
        bootstrap_step(&fresh, Some(&annos), None),
        Some(Step::FinishBootstrap {
            config: "rendered-worker-1".into()
        })
    );
    // Kept as .bak: now the Node gets the annotations, Done among them.
    let step = bootstrap_step(&fresh, None, Some(&annos));
    let Some(step @ Step::LoadInitialAnnotations { .. }) = step else {
        panic!("{step:?}");
    };
    let mut n = fresh.clone();
    step.apply_to(&mut n);
    assert_eq!(n.current_config(), "rendered-worker-1");
    assert_eq!(n.desired_config(), "rendered-worker-1");
    assert_eq!(n.annotation(STATE), Some(STATE_DONE));
    // Then nothing more: a node with its annotations ignores the .bak.
    assert_eq!(bootstrap_step(&n, None, Some(&annos)), None);
    assert_eq!(bootstrap_step(&n, None, None), None);
    // The node's own currentConfig wins over the file's (an annotation set before).
    let other = on("rendered-worker-0", "rendered-worker-1", STATE_DONE);
    assert_eq!(
        bootstrap_step(&other, Some(&annos), None),
        Some(Step::FinishBootstrap {
            config: "rendered-worker-0".into()
        })
    );
    // A file without currentConfig on a node without one: nothing to finish with.
    assert_eq!(bootstrap_step(&fresh, Some(&BTreeMap::new()), None), None);
}

fn drifted() -> Vec<crate::drift::Drift> {
    vec![crate::drift::Drift {
        path: "/etc/foo".into(),
        kind: crate::drift::DriftKind::Content {
            line: 1,
            expected: "1".into(),
            actual: "edited".into(),
        },
    }]
}

#[test]
fn drift_on_an_idle_node_degrades_it_with_expected_and_found() {
    let n = on("r1", "r1", STATE_DONE);
    let Some(Step::ConfigDrift { reason }) = drift_step(&n, "r1", &drifted(), false) else {
        panic!("no drift step");
    };
    assert_eq!(
        reason,
        "unexpected on-disk state validating against r1: content mismatch for file /etc/foo: \
         line 1: expected \"1\", found \"edited\""
    );
    let step = Step::ConfigDrift {
        reason: reason.clone(),
    };
    let events = step_events(&step, "w1");
    assert_eq!(events.len(), 1);
    assert!(events[0].warning);
    assert_eq!(events[0].reason, "ConfigDriftDetected");
    let mut degraded = n.clone();
    step.apply_to(&mut degraded);
    assert_eq!(degraded.annotation(STATE), Some(STATE_DEGRADED));
    // Reported once: the same drift again is idle.
    assert!(matches!(
        drift_step(&degraded, "r1", &drifted(), false),
        Some(Step::Idle { .. })
    ));
    // Restored (no drift) or forced: decide takes over and brings the node back to Done.
    assert_eq!(drift_step(&degraded, "r1", &[], false), None);
    assert_eq!(drift_step(&degraded, "r1", &drifted(), true), None);
    let mut uncordoned = degraded.clone();
    set(&mut uncordoned, DESIRED_DRAIN, "uncordon-r1");
    set(&mut uncordoned, LAST_APPLIED_DRAIN, "uncordon-r1");
    let (r1, _, _) = configs();
    assert_eq!(
        decide(&uncordoned, &r1, None, None),
        Step::Done {
            current: "r1".into(),
            image: String::new(),
        }
    );
}

#[test]
fn drift_is_not_reported_between_configs_or_while_waiting() {
    // An update is due: the update's own drift check reports it.
    let updating = on("r1", "r2", STATE_WORKING);
    assert_eq!(drift_step(&updating, "r1", &drifted(), false), None);
    // The controller has not answered a drain or uncordon request yet.
    let mut waiting = on("r1", "r1", STATE_DONE);
    set(&mut waiting, DESIRED_DRAIN, "uncordon-r1");
    assert_eq!(drift_step(&waiting, "r1", &drifted(), false), None);
    // No config on disk.
    assert_eq!(drift_step(&on("", "", ""), "", &drifted(), false), None);
}

#[test]
fn os_update_events_name_the_os_changes_as_upstream() {
    let (r1, r2, _) = configs();
    assert_eq!(os_update_events(&r1.input, &r2.input, true), (None, None));
    let mut new = r2.input.clone();
    new.os_image_url = "quay.io/os@sha256:2".into();
    new.kernel_arguments = vec!["nosmt".into()];
    let (started, staged) = os_update_events(&r1.input, &new, true);
    let started = started.unwrap_or_else(|| panic!("no OSUpdateStarted"));
    assert_eq!(started.reason, "OSUpdateStarted");
    assert_eq!(started.note, "Upgrading OS; Changing kernel arguments");
    let staged = staged.unwrap_or_else(|| panic!("no OSUpdateStaged"));
    assert_eq!(
        (staged.reason, staged.note.as_str(), staged.warning),
        ("OSUpdateStaged", "Changes to OS staged", false)
    );
    // A realtime node keeps its kernel current on every update.
    let mut old_rt = r1.input.clone();
    old_rt.kernel_type = "realtime".into();
    let mut new_rt = r2.input.clone();
    new_rt.kernel_type = "realtime".into();
    let (started, _) = os_update_events(&old_rt, &new_rt, true);
    assert_eq!(
        started.map(|e| e.note),
        Some("Updating to a target config with realtime kernel".to_string())
    );
    // Not an rpm-ostree host: one Event says the OS part is skipped, none says it is staged.
    let (skipped, staged) = os_update_events(&r1.input, &new, false);
    let skipped = skipped.unwrap_or_else(|| panic!("no OSUpdateSkipped"));
    assert_eq!(
        (skipped.reason, skipped.note.as_str(), skipped.warning),
        (
            "OSUpdateSkipped",
            "not an rpm-ostree host (no /run/ostree-booted): the OS part of the update is skipped (Upgrading OS; Changing kernel arguments)",
            false
        )
    );
    assert_eq!(staged, None);
    assert_eq!(os_update_events(&r1.input, &r2.input, false), (None, None));
}

const BUILT: &str = "registry.example.com/os/worker@sha256:2222";
const REBUILT: &str = "registry.example.com/os/worker@sha256:3333";

/// r1 with `osImageURL` set (the base image the pool renders).
fn r1_with_base() -> DesiredConfig {
    let (r1, _, _) = configs();
    let mut mc = r1.machine_config.clone();
    mc.spec.os_image_url = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:1111".into();
    match DesiredConfig::from_bytes(&serde_json::to_vec(&mc).unwrap_or_default(), "r1") {
        Ok(c) => c,
        Err(e) => panic!("test config: {e}"),
    }
}

/// A node idle on r1 (drained and uncordoned before), optionally on an image.
fn idle_on_r1(current_image: Option<&str>, desired_image: Option<&str>) -> Node {
    let mut n = on("r1", "r1", STATE_DONE);
    set(&mut n, DESIRED_DRAIN, "uncordon-r1");
    set(&mut n, LAST_APPLIED_DRAIN, "uncordon-r1");
    if let Some(i) = current_image {
        set(&mut n, CURRENT_IMAGE, i);
    }
    if let Some(i) = desired_image {
        set(&mut n, DESIRED_IMAGE, i);
    }
    n
}

#[test]
fn a_desired_image_on_the_same_config_drains_and_reboots_into_it() {
    let r1 = r1_with_base();
    let layered = r1.with_image(BUILT);
    let mut n = idle_on_r1(None, Some(BUILT));
    // Without the layered config at hand the agent waits for it; the plain r1 is not it.
    assert!(
        matches!(decide(&n, &r1, Some(&r1), None), Step::Idle { ref why } if why.contains(BUILT))
    );
    assert_eq!(decide(&n, &r1, Some(&layered), None), Step::SetWorking);
    set(&mut n, STATE, STATE_WORKING);
    // An image change is an OS update: drain, as upstream's disruption rules say.
    assert_eq!(
        decide(&n, &r1, Some(&layered), None),
        Step::RequestDrain {
            request: "drain-r1".into()
        }
    );
    set(&mut n, DESIRED_DRAIN, "drain-r1");
    set(&mut n, LAST_APPLIED_DRAIN, "drain-r1");
    assert_eq!(
        decide(&n, &r1, Some(&layered), None),
        Step::Apply {
            desired: "r1".into(),
            drain: true,
            reboot: true,
        }
    );
    // Back from the reboot, the layered r1 on disk: uncordon, then Done with currentImage.
    assert_eq!(
        decide(&n, &layered, None, None),
        Step::RequestUncordon {
            request: "uncordon-r1".into()
        }
    );
    set(&mut n, DESIRED_DRAIN, "uncordon-r1");
    set(&mut n, LAST_APPLIED_DRAIN, "uncordon-r1");
    let done = decide(&n, &layered, None, None);
    assert_eq!(
        done,
        Step::Done {
            current: "r1".into(),
            image: BUILT.into(),
        }
    );
    assert_eq!(
        done.annotations()
            .and_then(|a| a.get(CURRENT_IMAGE).cloned()),
        Some(Some(BUILT.to_string()))
    );
    done.apply_to(&mut n);
    assert!(matches!(
        decide(&n, &layered, None, None),
        Step::Idle { .. }
    ));
    assert!(n.is_node_done());
}

#[test]
fn a_node_already_on_its_desired_image_just_reports_done() {
    // A restart after the reboot: the disk holds the layered config, the node says nothing yet.
    let layered = r1_with_base().with_image(BUILT);
    let n = idle_on_r1(None, Some(BUILT));
    assert_eq!(
        decide(&n, &layered, None, None),
        Step::Done {
            current: "r1".into(),
            image: BUILT.into(),
        }
    );
    // A stale currentImage is corrected the same way.
    let n = idle_on_r1(Some(REBUILT), Some(BUILT));
    assert!(matches!(
        decide(&n, &layered, None, None),
        Step::Done { .. }
    ));
}

#[test]
fn a_new_image_moves_a_layered_node_and_an_opt_out_reverts_it() {
    let r1 = r1_with_base();
    let on_built = r1.with_image(BUILT);
    let mut n = idle_on_r1(Some(BUILT), Some(REBUILT));
    set(&mut n, STATE, STATE_WORKING);
    assert_eq!(
        decide(&n, &on_built, Some(&r1.with_image(REBUILT)), None),
        Step::RequestDrain {
            request: "drain-r1".into()
        }
    );
    // desiredImage removed: back to the plain r1 (its own osImageURL), currentImage cleared.
    let mut n = idle_on_r1(Some(BUILT), None);
    set(&mut n, STATE, STATE_WORKING);
    set(&mut n, DESIRED_DRAIN, "drain-r1");
    set(&mut n, LAST_APPLIED_DRAIN, "drain-r1");
    assert_eq!(
        decide(&n, &on_built, Some(&r1), None),
        Step::Apply {
            desired: "r1".into(),
            drain: true,
            reboot: true,
        }
    );
    let mut n = idle_on_r1(Some(BUILT), None);
    let done = decide(&n, &r1, None, None);
    assert_eq!(
        done,
        Step::Done {
            current: "r1".into(),
            image: String::new(),
        }
    );
    assert_eq!(
        done.annotations()
            .and_then(|a| a.get(CURRENT_IMAGE).cloned()),
        Some(None)
    );
    done.apply_to(&mut n);
    assert!(matches!(decide(&n, &r1, None, None), Step::Idle { .. }));
}

#[test]
fn a_file_change_on_a_layered_node_keeps_its_image_and_needs_no_reboot() {
    // Upstream writes the config's files on a layered node too; a change the image does not
    // carry (no rebuild) is planned as any other: here a reload-free file, no drain, no reboot.
    let (r1, r2, _) = configs();
    let (r1, r2) = (r1.with_image(BUILT), r2.with_image(BUILT));
    let mut n = on("r1", "r2", STATE_WORKING);
    set(&mut n, CURRENT_IMAGE, BUILT);
    set(&mut n, DESIRED_IMAGE, BUILT);
    assert_eq!(
        decide(&n, &r1, Some(&r2), None),
        Step::Apply {
            desired: "r2".into(),
            drain: false,
            reboot: false,
        }
    );
}
