//! The MachineConfigNode conditions each [`Step`] records, decided purely: upstream's
//! sequence (its daemon's and drain controller's calls into the upgrade monitor), mapped onto
//! this agent's steps. The agent also reports what upstream's drain controller reports
//! (Cordoned, Drained, Uncordoned), since here the agent is the one that sees those phases
//! complete.
//!
//! One update runs: `Updated` False (needs an update) → `UpdatePrepared` True → `UpdateExecuted`
//! with `Cordoned` and `Drained` (or `Drained` False when no drain is needed) →
//! `AppliedFilesAndOS` → `UpdatePostActionComplete` (no reboot) or `RebootedNode` Unknown, then
//! True after the reboot, with `Resumed` → `UpdateComplete` with `Uncordoned` → `NodeDegraded`
//! False → `Updated` True, which resets every other condition to False, its message kept as
//! `Action during update to <config>: ...`. Failures set `NodeDegraded` True.

use mco_render::api::machine_config_node::conditions::*;
use mco_render::api::node::LAST_APPLIED_DRAIN;
use mco_render::api::{Condition, Node};

use super::Step;

/// The label prefix naming a node's roles.
pub const ROLE_LABEL_PREFIX: &str = "node-role.kubernetes.io/";

/// One phase as upstream's upgrade monitor records it: a parent condition and, for phases that
/// have one, a child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phase {
    /// The parent condition.
    pub parent: Condition,
    /// The child condition.
    pub child: Option<Condition>,
}

fn cond(type_: &str, status: &str, reason: &str, message: String) -> Condition {
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message),
        last_transition_time: None,
    }
}

fn parent(type_: &str, status: &str, reason: &str, message: String) -> Phase {
    Phase {
        parent: cond(type_, status, reason, message),
        child: None,
    }
}

/// A phase of `UpdateExecuted` or `UpdateComplete` with a child whose reason is upstream's
/// `<parent><child>`.
fn with_child(
    parent_type: &str,
    parent_status: &str,
    parent_message: &str,
    child_type: &str,
    child_status: &str,
    child_message: String,
) -> Phase {
    Phase {
        parent: cond(
            parent_type,
            parent_status,
            child_type,
            parent_message.to_string(),
        ),
        child: Some(cond(
            child_type,
            child_status,
            &format!("{parent_type}{child_type}"),
            child_message,
        )),
    }
}

fn prepared(drain: bool) -> Phase {
    parent(
        UPDATE_PREPARED,
        "True",
        UPDATE_PREPARED,
        format!("Update Compatible. Drain Required: {drain}"),
    )
}

/// The phases `step` records on `node`'s MachineConfigNode, in order (none for steps that do
/// not move the update on: idle, wait, initialize). `Apply` is reported once the apply
/// succeeded.
pub fn step_phases(step: &Step, node: &Node) -> Vec<Phase> {
    let name = node.name();
    match step {
        Step::Idle { .. }
        | Step::Wait { .. }
        | Step::Initialize { .. }
        | Step::LoadInitialAnnotations { .. }
        | Step::FinishBootstrap { .. } => Vec::new(),
        Step::SetWorking => vec![parent(
            UPDATED,
            "False",
            UPDATED,
            format!("Node {name} needs an update"),
        )],
        Step::Unreconcilable { reason } => vec![
            parent(
                UPDATE_PREPARED,
                "Unknown",
                UPDATE_PREPARED,
                format!("Update Failed compatibility validation. {reason}"),
            ),
            degraded(name, reason),
        ],
        Step::Degraded { reason } | Step::ConfigDrift { reason } => {
            vec![degraded(name, reason)]
        }
        Step::RequestDrain { request } => vec![
            prepared(true),
            with_child(
                UPDATE_EXECUTED,
                "Unknown",
                "Cordoned Node as part of update executed phase",
                CORDONED,
                "True",
                "Cordoned node. The node is reporting Unschedulable = true".into(),
            ),
            with_child(
                UPDATE_EXECUTED,
                "Unknown",
                "Draining Node as part of update executed phase",
                DRAINED,
                "Unknown",
                format!(
                    "Draining node. The drain will not be complete until desired drainer {request} matches current drainer {}",
                    node.annotation(LAST_APPLIED_DRAIN).unwrap_or("")
                ),
            ),
        ],
        Step::Apply {
            drain,
            reboot,
            desired: _,
        } => {
            let mut out = Vec::new();
            if *drain {
                out.push(with_child(
                    UPDATE_EXECUTED,
                    "Unknown",
                    "Drained Node as part of update executed phase",
                    DRAINED,
                    "True",
                    format!(
                        "Drained node. The drain is complete as the desired drainer matches current drainer: {}",
                        node.annotation(LAST_APPLIED_DRAIN).unwrap_or("")
                    ),
                ));
            } else {
                out.push(prepared(false));
                out.push(with_child(
                    UPDATE_EXECUTED,
                    "Unknown",
                    "Node Drain Not required for this update.",
                    DRAINED,
                    "False",
                    "Node Drain Not required for this update.".into(),
                ));
            }
            out.push(with_child(
                UPDATE_EXECUTED,
                "True",
                "Updated the Files and OS on disk as a part of the in progress phase",
                APPLIED_FILES_AND_OS,
                "True",
                "Applied files and new OS config to node.".into(),
            ));
            if !*reboot {
                out.push(parent(
                    UPDATE_POST_ACTION_COMPLETE,
                    "True",
                    "None",
                    "Changes do not require a reboot".into(),
                ));
            }
            out
        }
        Step::Reboot { .. } => vec![parent(
            REBOOTED_NODE,
            "Unknown",
            REBOOTED_NODE,
            "Upgrade requires a reboot.".into(),
        )],
        Step::ClearRebooting => vec![
            parent(REBOOTED_NODE, "True", REBOOTED_NODE, "Node has rebooted".into()),
            parent(
                RESUMED,
                "True",
                RESUMED,
                format!(
                    "In desired config {}. Resumed normal operations.",
                    node.desired_config()
                ),
            ),
        ],
        Step::RequestUncordon { .. } => Vec::new(),
        Step::Done { .. } => vec![
            with_child(
                UPDATE_COMPLETE,
                "True",
                "Uncordoned Node as part of completing upgrade phase",
                UNCORDONED,
                "True",
                "UnCordoned node. The node is reporting Unschedulable = false".into(),
            ),
            parent(
                NODE_DEGRADED,
                "False",
                NODE_DEGRADED,
                format!("Node {name} upgrade succeeded"),
            ),
            parent(UPDATED, "True", UPDATED, format!("Node {name} Updated")),
        ],
    }
}

/// The phases the agent records when it starts: `Updated` True (upstream's idle-sync
/// record) on a node Done on its desired config, none otherwise (the steps of the update or
/// bootstrap under way record theirs). The MachineConfigNode is written either way.
pub fn start_phases(node: &Node) -> Vec<Phase> {
    let desired = node.desired_config();
    if desired.is_empty() || node.current_config() != desired || !node.is_done_on(desired) {
        return Vec::new();
    }
    vec![parent(
        UPDATED,
        "True",
        UPDATED,
        format!("Node {} Updated", node.name()),
    )]
}

fn degraded(name: &str, reason: &str) -> Phase {
    parent(
        NODE_DEGRADED,
        "True",
        NODE_DEGRADED,
        format!("Node {name} upgrade failure. {reason}"),
    )
}

/// The node's pool for its MachineConfigNode, from its `node-role.kubernetes.io/<role>`
/// labels: `master` wins, then any custom role (the first by name) over `worker`, as a node in
/// a custom pool also carries the worker role; "" without a role label. (Upstream asks the
/// pools' node selectors; the roles name the pools in the default layout.)
pub fn pool_of(node: &Node) -> String {
    let roles: Vec<&str> = node
        .metadata
        .labels
        .keys()
        .filter_map(|k| k.strip_prefix(ROLE_LABEL_PREFIX))
        .filter(|r| !r.is_empty())
        .collect();
    if roles.contains(&"master") {
        return "master".into();
    }
    roles
        .iter()
        .find(|r| **r != "worker")
        .or(roles.first())
        .map_or_else(String::new, |r| r.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mco_render::api::MachineConfigNodeStatus;

    fn node(labels: &[&str]) -> Node {
        let mut n = Node::default();
        n.metadata.name = "n1".into();
        for l in labels {
            n.metadata
                .labels
                .insert(format!("{ROLE_LABEL_PREFIX}{l}"), String::new());
        }
        n
    }

    #[test]
    fn an_idle_node_starts_updated_and_a_busy_one_with_no_phase() {
        use mco_render::api::node::{CURRENT_CONFIG, DESIRED_CONFIG, STATE};
        let mut n = node(&["master"]);
        for (k, v) in [
            (CURRENT_CONFIG, "r1"),
            (DESIRED_CONFIG, "r1"),
            (STATE, "Done"),
        ] {
            n.metadata.annotations.insert(k.into(), v.into());
        }
        let phases = start_phases(&n);
        assert_eq!(phases.len(), 1);
        assert_eq!(phases[0].parent.type_, UPDATED);
        assert!(phases[0].parent.is_true());
        assert_eq!(phases[0].parent.message(), "Node n1 Updated");
        n.metadata
            .annotations
            .insert(DESIRED_CONFIG.into(), "r2".into());
        assert!(start_phases(&n).is_empty());
        assert!(start_phases(&node(&["worker"])).is_empty());
    }

    #[test]
    fn pool_from_roles() {
        assert_eq!(pool_of(&node(&["worker", "master"])), "master");
        assert_eq!(pool_of(&node(&["worker", "infra"])), "infra");
        assert_eq!(pool_of(&node(&["worker"])), "worker");
        assert_eq!(pool_of(&node(&[])), "");
    }

    #[test]
    fn an_update_records_upstreams_sequence() {
        let n = node(&["worker"]);
        let steps = [
            Step::SetWorking,
            Step::RequestDrain {
                request: "drain-r2".into(),
            },
            Step::Apply {
                desired: "r2".into(),
                drain: true,
                reboot: true,
            },
            Step::Reboot {
                config: "r2".into(),
            },
            Step::ClearRebooting,
            Step::RequestUncordon {
                request: "uncordon-r2".into(),
            },
            Step::Done {
                current: "r2".into(),
                image: String::new(),
            },
        ];
        let mut s = MachineConfigNodeStatus::default();
        let mut seen = Vec::new();
        for (i, step) in steps.iter().enumerate() {
            for p in step_phases(step, &n) {
                seen.push(p.parent.type_.clone());
                seen.extend(p.child.iter().map(|c| c.type_.clone()));
                s.record(&p.parent, p.child.as_ref(), "r2", &format!("t{i}"));
            }
        }
        let mut want = vec![
            UPDATED,
            UPDATE_PREPARED,
            UPDATE_EXECUTED,
            CORDONED,
            DRAINED,
            APPLIED_FILES_AND_OS,
            REBOOTED_NODE,
            RESUMED,
            UPDATE_COMPLETE,
            UNCORDONED,
            NODE_DEGRADED,
        ];
        let mut got: Vec<&str> = seen.iter().map(String::as_str).collect();
        got.dedup();
        assert_eq!(got[0], UPDATED);
        got.sort();
        got.dedup();
        want.sort();
        assert_eq!(got, want);
        assert!(s.condition(UPDATED).unwrap().is_true());
        for t in [
            CORDONED,
            DRAINED,
            APPLIED_FILES_AND_OS,
            REBOOTED_NODE,
            UNCORDONED,
        ] {
            let c = s.condition(t).unwrap();
            assert_eq!(c.status, "False", "{t}");
            assert!(
                c.message().starts_with("Action during update to r2: "),
                "{t}: {}",
                c.message()
            );
        }
        assert_eq!(
            s.condition(UPDATE_POST_ACTION_COMPLETE).unwrap().reason(),
            "NotYetOccurred"
        );
    }
}
