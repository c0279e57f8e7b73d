//! Cluster mode, decided purely: the node's annotations and the configs in, the agent's next
//! step out. [`kube_loop`] reads and writes the API server and carries the steps out.
//!
//! The flow follows upstream's daemon: mark the node Working, refuse unreconcilable updates,
//! ask the controller to drain (`desiredDrain: drain-<desired>`) and wait for
//! `lastAppliedDrain` to match when the plan drains, apply, reboot when the plan says so, then
//! ask for an uncordon (`desiredDrain: uncordon-<desired>`), wait for it, and finally write
//! `currentConfig`, `state: Done` and an empty `reason`. Every call re-reads the situation, so
//! the agent resumes correctly after a restart or a reboot at any step.
//!
//! On-cluster layering: the node's `desiredImage` is part of the target. The desired config
//! comes with the image embedded as its OS image ([`DesiredConfig::with_image`],
//! `mco_render::plan::layering`), so an image change is planned and applied as an OS update;
//! the node is on target when the config on disk has the desired name and image, and Done
//! writes `currentImage` (or deletes it when the node runs no layered image), as upstream's
//! `SetDone`.

pub mod cert_writer;
pub mod cluster;
pub mod drift_watch;
pub mod host_facts;
pub mod kube_loop;
pub mod kubelet_health;
pub mod metrics;
pub mod node_conditions;
pub mod os_check;
pub mod pinned_images;
pub mod unsent;
pub mod watches;

use std::collections::BTreeMap;

use mco_render::api::node::{
    CURRENT_CONFIG, CURRENT_IMAGE, DESIRED_DRAIN, DESIRED_IMAGE, LAST_APPLIED_DRAIN, REASON, STATE,
    STATE_DEGRADED, STATE_DONE, STATE_UNRECONCILABLE, STATE_WORKING,
};
use mco_render::api::Node;
use mco_render::plan::{self, ActionType, MachineConfiguration};
use serde_json::{json, Map, Value};

use crate::apply::ApplyOutcome;
use crate::desired_config::DesiredConfig;
use crate::state::{NodeState, MAX_REASON};

/// The annotation the agent sets while a reboot it started is under way.
pub const POST_CONFIG_ACTION: &str = "machineconfiguration.openshift.io/post-config-action";
/// [`POST_CONFIG_ACTION`]'s value during a reboot.
pub const STATE_REBOOTING: &str = "Rebooting";
/// Prefix of a drain request.
pub const DRAIN: &str = "drain";
/// Prefix of an uncordon request.
pub const UNCORDON: &str = "uncordon";

/// What the agent does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Nothing to do until the node or the configs change.
    Idle {
        /// Why.
        why: String,
    },
    /// The previous boot's reboot marker is still set: clear it.
    ClearRebooting,
    /// The node has no `currentConfig` and its first boot left the server's node annotations:
    /// set them (upstream's initial node annotations).
    LoadInitialAnnotations {
        /// The annotations, as the server wrote them.
        annotations: BTreeMap<String, String>,
    },
    /// The node carries its first boot's annotations: store the MachineConfig its
    /// `currentConfig` names as the config on disk and retire the annotations file.
    FinishBootstrap {
        /// The config the node joined on.
        config: String,
    },
    /// The files or units of the config the node is on no longer match the disk (an edit by
    /// hand while idle): degrade with what differs. Cleared when the disk matches again or
    /// the force file appears.
    ConfigDrift {
        /// Why (already capped): expected vs found, per path.
        reason: String,
    },
    /// The node carries no `currentConfig`: publish the config on disk.
    Initialize {
        /// The config on disk.
        current: String,
    },
    /// A drain or uncordon request is not applied yet: wait for the controller.
    Wait {
        /// The pending `desiredDrain` value.
        request: String,
    },
    /// Mark the node Working before updating.
    SetWorking,
    /// The update cannot be applied in place.
    Unreconcilable {
        /// Why (already capped).
        reason: String,
    },
    /// The update failed.
    Degraded {
        /// Why (already capped).
        reason: String,
    },
    /// Ask the controller to cordon and drain the node.
    RequestDrain {
        /// `drain-<desired>`.
        request: String,
    },
    /// Apply the desired config (the drain, if needed, is done).
    Apply {
        /// The config applied.
        desired: String,
        /// The plan drains the node.
        drain: bool,
        /// The plan reboots the node.
        reboot: bool,
    },
    /// The update is on disk and needs a reboot: mark the node Rebooting, then reboot.
    Reboot {
        /// The config the node reboots into.
        config: String,
    },
    /// Ask the controller to uncordon the node.
    RequestUncordon {
        /// `uncordon-<desired>`.
        request: String,
    },
    /// The node is on its desired config (and image): write `currentConfig`, `state: Done`,
    /// empty reason, and `currentImage` (deleted when the node runs no layered image).
    Done {
        /// The config on disk.
        current: String,
        /// The on-cluster layering image the config on disk carries (`""`: none).
        image: String,
    },
}

/// An Event the agent records on its Node for a step it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeEvent {
    /// A Warning rather than a Normal event.
    pub warning: bool,
    /// The machine-readable reason (upstream's where upstream records one).
    pub reason: &'static str,
    /// The note for people.
    pub note: String,
}

/// The Events a step records, as upstream's daemon records them: Cordon and Drain when it asks
/// for the drain, Reboot before rebooting, NodeDone when done, and Warnings for failures.
pub fn step_events(step: &Step, node: &str) -> Vec<NodeEvent> {
    let normal = |reason, note: String| NodeEvent {
        warning: false,
        reason,
        note,
    };
    match step {
        Step::RequestDrain { .. } => vec![
            normal("Cordon", "Cordoned node to apply update".into()),
            normal("Drain", "Draining node to update config.".into()),
        ],
        Step::Reboot { config } => vec![normal(
            "Reboot",
            format!("Node will reboot into config {config}"),
        )],
        Step::Done { current, .. } => vec![normal(
            "NodeDone",
            format!("Setting node {node}, currentConfig {current} to Done"),
        )],
        Step::Degraded { reason } | Step::Unreconcilable { reason } => vec![NodeEvent {
            warning: true,
            reason: "NodeDegraded",
            note: reason.clone(),
        }],
        Step::ConfigDrift { reason } => vec![NodeEvent {
            warning: true,
            reason: "ConfigDriftDetected",
            note: reason.clone(),
        }],
        _ => Vec::new(),
    }
}

/// The Events of an update's OS part, as upstream records them: `OSUpdateStarted` (the OS
/// changes, or the non-default kernel a node on realtime or 64k-pages keeps current) before it,
/// `OSUpdateStaged` after it. Empty when the update leaves the OS alone. On a host that is not
/// an rpm-ostree host (`rpm_ostree` false) the OS part is skipped: one `OSUpdateSkipped`
/// before the update says so.
pub fn os_update_events(
    old: &mco_render::plan::reconcile::RenderedInput,
    new: &mco_render::plan::reconcile::RenderedInput,
    rpm_ostree: bool,
) -> (Option<NodeEvent>, Option<NodeEvent>) {
    let d = plan::diff::MachineConfigDiff::new(old, new);
    let kernel = plan::diff::canonical_kernel_type(&new.kernel_type);
    let changes = d.os_changes();
    if changes.is_empty() && kernel == "default" {
        return (None, None);
    }
    let note = if changes.is_empty() {
        format!("Updating to a target config with {kernel} kernel")
    } else {
        changes.join("; ")
    };
    let normal = |reason, note| NodeEvent {
        warning: false,
        reason,
        note,
    };
    if !rpm_ostree {
        let note = crate::apply::os::skipped_note(&note);
        return (Some(normal("OSUpdateSkipped", note)), None);
    }
    (
        Some(normal("OSUpdateStarted", note)),
        Some(normal("OSUpdateStaged", "Changes to OS staged".into())),
    )
}

/// Caps a reason at upstream's limit (2000 characters).
pub fn cap_reason(reason: &str) -> String {
    reason.chars().take(MAX_REASON).collect()
}

fn request(kind: &str, config: &str) -> String {
    format!("{kind}-{config}")
}

/// The step a bootstrapping node takes before anything else, in one order whatever the
/// timing: while the first boot's node annotations file is there (`initial`), the bootstrap
/// is finished first (the config on disk, the file kept as `.bak`), with the config the node
/// names, else the one the file names; then a node still without `currentConfig` gets the
/// annotations the file held (`kept`, read from the `.bak`), so the Node reports Done only
/// once its disk is finished. `None` when the node is not bootstrapping.
pub fn bootstrap_step(
    node: &Node,
    initial: Option<&BTreeMap<String, String>>,
    kept: Option<&BTreeMap<String, String>>,
) -> Option<Step> {
    let current = node.current_config();
    if let Some(initial) = initial {
        let config = match current {
            "" => initial.get(CURRENT_CONFIG)?.as_str(),
            c => c,
        };
        return Some(Step::FinishBootstrap {
            config: config.to_string(),
        });
    }
    let kept = kept?;
    current.is_empty().then(|| Step::LoadInitialAnnotations {
        annotations: kept.clone(),
    })
}

/// The step when the disk drifted (`found`) from `current`, the config the node is on and
/// wants: [`Step::ConfigDrift`], unless the force file is there (`force`), the node is
/// between configs or waiting for the controller, or the node already says so. `None` leaves
/// the step to [`decide`], which returns a drift-degraded node to Done once the disk matches.
pub fn drift_step(
    node: &Node,
    current: &str,
    found: &[crate::drift::Drift],
    force: bool,
) -> Option<Step> {
    if force || found.is_empty() || current.is_empty() {
        return None;
    }
    if node.desired_config() != current || node.current_config() != current {
        return None;
    }
    if let Some(pending) = node.annotation(DESIRED_DRAIN) {
        if node.annotation(LAST_APPLIED_DRAIN) != Some(pending) {
            return None;
        }
    }
    let reason = cap_reason(&crate::drift::reason(current, found));
    let same = node.annotation(STATE) == Some(STATE_DEGRADED)
        && node.annotation(REASON) == Some(reason.as_str());
    Some(if same {
        idle(&format!("the disk drifted from {current}"))
    } else {
        Step::ConfigDrift { reason }
    })
}

/// The next step for `node`, whose host runs `current` (the config on disk, or the one its
/// `currentConfig` annotation names when the disk holds none). `desired` is the MachineConfig
/// the `desiredConfig` annotation names, when it could be fetched (it is not needed when that
/// name is `current`'s). `policies` is the cluster's `MachineConfiguration` (`None`: the
/// built-in node disruption policies).
pub fn decide(
    node: &Node,
    current: &DesiredConfig,
    desired: Option<&DesiredConfig>,
    policies: Option<&MachineConfiguration>,
) -> Step {
    if node.annotation(POST_CONFIG_ACTION) == Some(STATE_REBOOTING) {
        return Step::ClearRebooting;
    }
    let cur = current.name();
    if node.annotation(CURRENT_CONFIG).is_none() {
        if cur.is_empty() {
            return idle("no current config on disk or on the node");
        }
        return Step::Initialize {
            current: cur.to_string(),
        };
    }
    if let Some(pending) = node.annotation(DESIRED_DRAIN) {
        if node.annotation(LAST_APPLIED_DRAIN) != Some(pending) {
            return Step::Wait {
                request: pending.to_string(),
            };
        }
    }
    let want = node.desired_config();
    if want.is_empty() {
        return idle("no desired config");
    }
    let state = node.annotation(STATE).unwrap_or("");
    let reason = node.annotation(REASON).unwrap_or("");
    let want_image = desired_image(node);
    let cur_image = current.image();
    if cur == want && cur_image == want_image {
        let uncordon = request(UNCORDON, want);
        if node.annotation(DESIRED_DRAIN) != Some(uncordon.as_str()) {
            return Step::RequestUncordon { request: uncordon };
        }
        let image_reported =
            node.annotation(CURRENT_IMAGE) == Some(cur_image).filter(|i| !i.is_empty());
        if node.current_config() != cur
            || state != STATE_DONE
            || !reason.is_empty()
            || !image_reported
        {
            return Step::Done {
                current: cur.to_string(),
                image: cur_image.to_string(),
            };
        }
        return idle(&match cur_image {
            "" => format!("on desired config {want}"),
            image => format!("on desired config {want} and image {image}"),
        });
    }
    let Some(desired) = desired.filter(|d| d.name() == want && d.image() == want_image) else {
        return idle(&match want_image {
            "" => format!("desired config {want} is not available"),
            image => format!("desired config {want} with image {image} is not available"),
        });
    };
    if state != STATE_WORKING && state != STATE_DEGRADED && state != STATE_UNRECONCILABLE {
        return Step::SetWorking;
    }
    let p = plan::compute(&current.input, &desired.input, policies);
    if let Err(e) = &p.reconcilable {
        let why = cap_reason(&format!("can't reconcile config {cur} with {want}: {e}"));
        if state == STATE_UNRECONCILABLE && reason == why {
            return idle(&format!("{want} cannot be applied in place"));
        }
        return Step::Unreconcilable { reason: why };
    }
    let drain = match &p.drain {
        Ok(d) => *d,
        Err(e) => {
            let why = cap_reason(&e.to_string());
            if state == STATE_DEGRADED && reason == why {
                return idle(&format!("{want} cannot be planned"));
            }
            return Step::Degraded { reason: why };
        }
    };
    if drain {
        let drained = request(DRAIN, want);
        if node.annotation(LAST_APPLIED_DRAIN) != Some(drained.as_str()) {
            return Step::RequestDrain { request: drained };
        }
    }
    let reboot = p
        .node_disruption
        .actions
        .iter()
        .any(|a| a.kind == ActionType::Reboot);
    Step::Apply {
        desired: want.to_string(),
        drain,
        reboot,
    }
}

/// The image the node's `desiredImage` names (`""` when unset or empty: the node is not
/// layered, or opts out).
pub fn desired_image(node: &Node) -> &str {
    node.annotation(DESIRED_IMAGE).unwrap_or("")
}

fn idle(why: &str) -> Step {
    Step::Idle { why: why.into() }
}

/// The step after an apply (run without rebooting): report a failure, reboot, or `None` to
/// decide again from the new situation.
pub fn after_apply(out: &ApplyOutcome) -> Option<Step> {
    match out.status.state {
        NodeState::Degraded => Some(Step::Degraded {
            reason: cap_reason(&out.status.reason),
        }),
        NodeState::Unreconcilable => Some(Step::Unreconcilable {
            reason: cap_reason(&out.status.reason),
        }),
        NodeState::Done | NodeState::Working if out.reboot_pending => Some(Step::Reboot {
            config: out.status.desired_config.clone(),
        }),
        NodeState::Done | NodeState::Working => None,
    }
}

impl Step {
    /// The annotations the step writes (`None` values delete), or `None` when it writes none.
    pub fn annotations(&self) -> Option<BTreeMap<String, Option<String>>> {
        let set = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_string(), Some((*v).to_string())))
                .collect::<BTreeMap<_, _>>()
        };
        Some(match self {
            Step::Idle { .. }
            | Step::Wait { .. }
            | Step::Apply { .. }
            | Step::FinishBootstrap { .. } => return None,
            Step::LoadInitialAnnotations { annotations } => annotations
                .iter()
                .map(|(k, v)| (k.clone(), Some(v.clone())))
                .collect(),
            Step::ClearRebooting => set(&[(POST_CONFIG_ACTION, "")]),
            Step::Initialize { current } => set(&[(CURRENT_CONFIG, current)]),
            Step::SetWorking => set(&[(STATE, STATE_WORKING)]),
            Step::Unreconcilable { reason } => {
                set(&[(STATE, STATE_UNRECONCILABLE), (REASON, reason)])
            }
            Step::Degraded { reason } | Step::ConfigDrift { reason } => {
                set(&[(STATE, STATE_DEGRADED), (REASON, reason)])
            }
            Step::RequestDrain { request } | Step::RequestUncordon { request } => {
                set(&[(DESIRED_DRAIN, request)])
            }
            Step::Reboot { .. } => set(&[(POST_CONFIG_ACTION, STATE_REBOOTING)]),
            Step::Done { current, image } => {
                let mut m = set(&[(STATE, STATE_DONE), (CURRENT_CONFIG, current), (REASON, "")]);
                // As upstream's SetDone: the image the node runs, or no currentImage at all.
                let image = (!image.is_empty()).then(|| image.clone());
                m.insert(CURRENT_IMAGE.to_string(), image);
                m
            }
        })
    }

    /// The step's JSON merge patch of the Node, if it writes anything.
    pub fn patch(&self) -> Option<Value> {
        let annos = self.annotations()?;
        let map: Map<String, Value> = annos
            .into_iter()
            .map(|(k, v)| (k, v.map_or(Value::Null, Value::String)))
            .collect();
        Some(json!({"metadata": {"annotations": map}}))
    }

    /// Applies the step's annotations to a local copy of the node (what the API server will
    /// hold after the patch).
    pub fn apply_to(&self, node: &mut Node) {
        for (k, v) in self.annotations().unwrap_or_default() {
            match v {
                Some(v) => node.metadata.annotations.insert(k, v),
                None => node.metadata.annotations.remove(&k),
            };
        }
    }
}

/// The Degraded reason when the controller has not drained the node in time: upstream's
/// message, or, when the controller has reported which pods block the drain (the node's
/// `drainFailure` annotation), that report instead of a pointer to the controller's logs.
pub fn drain_timeout_reason(node: &str, failure: Option<&str>) -> String {
    match failure {
        Some(f) => format!("failed to drain node: {node} after 1 hour: {f}"),
        None => format!(
            "failed to drain node: {node} after 1 hour. Please see machine-config-controller logs for more information"
        ),
    }
}

/// Upstream's message when the controller has not uncordoned the node in time.
pub fn uncordon_timeout_reason(node: &str) -> String {
    format!(
        "failed to uncordon node: {node} after 10 minutes. Please see machine-config-controller logs for more information"
    )
}

#[cfg(test)]
mod tests;
