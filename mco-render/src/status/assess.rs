//! Where each node and each pool stands, in the words of `oc adm upgrade status`'s worker
//! section: a node's assessment (Completed, Progressing, Outdated, Degraded, Unavailable,
//! Excluded), its phase (Pending, Draining, Updating, Rebooting, Paused, Updated), its estimate
//! and message; a pool's assessment, completion and node overview.
//!
//! `oc` measures nodes against the cluster version being installed; here a node is measured
//! against the config its pool moves it to (the pool's rendered config, or a RolloutPolicy's
//! rollback target), so any rollout is seen, not only a release upgrade. A node counts as
//! updated exactly as the pool's status counts it ([`calculate_status_with`]). Two additions:
//! a node whose drain is blocked past the drain controller's timeout (its `drainFailure`
//! report, [`blocked_drain_report`]) is Degraded, as it makes the pool NodeDegraded; and the
//! MachineConfigNode's phases, when there is one, tell draining and rebooting apart.

use crate::api::machine_config_node::conditions::{DRAINED, REBOOTED_NODE};
use crate::api::machine_config_node::MachineConfigNodeStatus;
use crate::api::node::{
    Node, DESIRED_IMAGE, REASON, STATE, STATE_DEGRADED, STATE_DONE, STATE_UNRECONCILABLE,
};
use crate::api::MachineConfigPool;
use crate::controllers::drain::{blocked_drain_report, drain_action, DrainAction};
use crate::controllers::pool_status::{calculate_status_with, PoolLayering};
use serde::Serialize;

/// A node's assessment, most urgent first (the order nodes are listed in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum NodeAssessment {
    /// Its daemon reports the update failed, or its drain is blocked past the timeout.
    Degraded,
    /// It cannot take workloads and is not updating.
    Unavailable,
    /// It is updating.
    Progressing,
    /// Its pool is paused.
    Excluded,
    /// It waits for its turn.
    Outdated,
    /// It is on its pool's config.
    Completed,
}

/// A node's phase, in the order nodes of one assessment are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum NodePhase {
    /// Its pods are being evicted.
    Draining,
    /// Its daemon writes the new config.
    Updating,
    /// It reboots into the new config.
    Rebooting,
    /// Its pool is paused.
    Paused,
    /// Not started.
    Pending,
    /// On its pool's config.
    Updated,
}

/// A pool's assessment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PoolAssessment {
    /// Every node is updated.
    Completed,
    /// Nodes are updating.
    Progressing,
    /// A node failed, or the rollout stopped on a failure (a RolloutPolicy's pause, a failed
    /// image build, a config that does not render).
    Degraded,
    /// No node has started.
    Pending,
    /// The pool is paused with nodes left to update.
    Excluded,
    /// The pool has no node.
    Empty,
}

impl NodeAssessment {
    /// The word printed.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeAssessment::Degraded => "Degraded",
            NodeAssessment::Unavailable => "Unavailable",
            NodeAssessment::Progressing => "Progressing",
            NodeAssessment::Excluded => "Excluded",
            NodeAssessment::Outdated => "Outdated",
            NodeAssessment::Completed => "Completed",
        }
    }
}

impl NodePhase {
    /// The word printed.
    pub fn as_str(self) -> &'static str {
        match self {
            NodePhase::Draining => "Draining",
            NodePhase::Updating => "Updating",
            NodePhase::Rebooting => "Rebooting",
            NodePhase::Paused => "Paused",
            NodePhase::Pending => "Pending",
            NodePhase::Updated => "Updated",
        }
    }
}

impl PoolAssessment {
    /// The word printed.
    pub fn as_str(self) -> &'static str {
        match self {
            PoolAssessment::Completed => "Completed",
            PoolAssessment::Progressing => "Progressing",
            PoolAssessment::Degraded => "Degraded",
            PoolAssessment::Pending => "Pending",
            PoolAssessment::Excluded => "Excluded",
            PoolAssessment::Empty => "Empty",
        }
    }
}

/// Why a node is unavailable, in `oc`'s words.
pub mod reasons {
    /// The daemon works on the node.
    pub const MCD_WORKING: &str = "Machine Config Daemon is processing the node";
    /// The node is cordoned.
    pub const UNSCHEDULABLE: &str = "Node is marked unschedulable";
    /// Ready is not True.
    pub const NOT_READY: &str = "Not ready";
    /// DiskPressure is not False.
    pub const DISK_PRESSURE: &str = "Disk pressure";
    /// NetworkUnavailable is not False.
    pub const NETWORK_UNAVAILABLE: &str = "Network unavailable";
}

/// One reason a node is unavailable, and since when (the condition's transition time).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unavailability {
    /// One of [`reasons`].
    pub reason: &'static str,
    /// The condition's message, if any.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// When the condition changed (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
}

/// Why a node is unavailable (empty when it is not, [`Node::is_unavailable`]): its bad
/// conditions and cordon, or, when it is ready, its daemon at work.
pub fn unavailable_reasons(node: &Node) -> Vec<Unavailability> {
    if !node.is_unavailable() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for c in &node.status.conditions {
        let reason = match c.type_.as_str() {
            "Ready" if c.status != "True" => reasons::NOT_READY,
            "DiskPressure" if c.status != "False" => reasons::DISK_PRESSURE,
            "NetworkUnavailable" if c.status != "False" => reasons::NETWORK_UNAVAILABLE,
            _ => continue,
        };
        out.push(Unavailability {
            reason,
            message: c.message.clone().unwrap_or_default(),
            since: c.last_transition_time.clone(),
        });
    }
    if node.spec.unschedulable {
        out.push(Unavailability {
            reason: reasons::UNSCHEDULABLE,
            message: String::new(),
            since: None,
        });
    }
    if out.is_empty() {
        out.push(Unavailability {
            reason: reasons::MCD_WORKING,
            message: String::new(),
            since: None,
        });
    }
    out
}

/// What a pool's nodes are measured against.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The pool, its `spec.configuration.name` the config its nodes move to.
    pub pool: &'a MachineConfigPool,
    /// The pool's layering, as its status is computed with it.
    pub layering: &'a PoolLayering,
    /// The release the cluster updates to ([`super::Cluster::release_target`]), if known.
    pub release: Option<&'a str>,
}

/// The release versions of a node's current and desired configs (`None`: the config, or its
/// `release-image-version` annotation, is not known).
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeVersions<'a> {
    /// Of its current config.
    pub current: Option<&'a str>,
    /// Of its desired config.
    pub desired: Option<&'a str>,
}

impl Target<'_> {
    /// The config the nodes move to.
    pub fn config(&self) -> &str {
        &self.pool.spec.configuration.name
    }
}

/// One node's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    /// The node.
    pub name: String,
    /// Its assessment.
    pub assessment: NodeAssessment,
    /// Its phase.
    pub phase: NodePhase,
    /// The release version of its current config (`None`: the config, or its
    /// `release-image-version`, is not in the dump).
    pub version: Option<String>,
    /// When it should be done: `+10m`, `?` (unknown), `-` (nothing to do).
    pub estimate: String,
    /// Why it is degraded or unavailable, or what holds it (its name shortened to `<node>`).
    pub message: String,
    /// `currentConfig`.
    pub current_config: String,
    /// `desiredConfig`.
    pub desired_config: String,
    /// The daemon's `state`.
    pub state: String,
    /// On its pool's config (phase Updated): done on it as the pool's status counts nodes
    /// updated, or degraded on it.
    pub updated: bool,
    /// Targeted at its pool's config and not there yet.
    pub updating: bool,
    /// Counted against `maxUnavailable`.
    pub unavailable: bool,
    /// Degraded (its daemon's state, or a drain blocked past the timeout).
    pub degraded: bool,
    /// Why it is unavailable.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unavailable_reasons: Vec<Unavailability>,
}

/// Whether the MachineConfigNode has a condition of `type_` with status Unknown (a phase under
/// way).
fn in_phase(mcn: Option<&MachineConfigNodeStatus>, type_: &str) -> bool {
    mcn.and_then(|s| s.condition(type_))
        .is_some_and(|c| c.status == "Unknown")
}

/// `oc`'s shortening of a message: the node's name (8 characters or more) becomes `<node>`.
pub fn ellipsize(message: &str, node: &str) -> String {
    if node.len() < 8 {
        message.to_string()
    } else {
        message.replace(node, "<node>")
    }
}

/// Whether the daemon has given up on its desired config (Degraded or Unreconcilable).
fn failed_state(node: &Node) -> bool {
    matches!(
        node.annotation(STATE),
        Some(STATE_DEGRADED | STATE_UNRECONCILABLE)
    )
}

/// Whether the node's Ready condition is there and not True (a node going down to reboot).
fn not_ready(node: &Node) -> bool {
    node.status
        .conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status != "True")
}

/// Assesses one node of the pool `t`: phase, assessment, `oc`'s estimate for the phase (a
/// Pending node's `?` is refined by the caller) and message. `now` stamps nothing visible.
/// While the cluster updates to a release (`t.release`), a node is updated only once its
/// config carries it, and targeted only at a config that does, as `oc` measures nodes.
pub fn assess_node(
    t: &Target<'_>,
    node: &Node,
    mcn: Option<&MachineConfigNodeStatus>,
    versions: NodeVersions<'_>,
    now: &str,
) -> NodeStatus {
    let target = t.config();
    let on_release = t.release.is_none_or(|r| versions.current == Some(r));
    let towards_release = t
        .release
        .is_none_or(|r| versions.current.is_some() && versions.desired == Some(r));
    let updated = on_release
        && calculate_status_with(t.pool, &[node], now, t.layering).updated_machine_count == 1;
    let (current, desired) = (node.current_config(), node.desired_config());
    let reached = current == target && desired == target;
    let state = node.annotation(STATE).unwrap_or("");
    // On its config, the daemon no longer at work: updated, or degraded on it (drift).
    let settled = updated || (reached && on_release && failed_state(node));
    // A layered pool's nodes are targeted at its image too: none before its first build.
    let image_targeted = !t.layering.layered
        || t.layering.image.is_some()
            && node.annotation(DESIRED_IMAGE) == t.layering.image.as_deref();
    let updating =
        !settled && desired == target && !target.is_empty() && image_targeted && towards_release;
    let drain_pending = matches!(drain_action(node), DrainAction::Drain { .. });
    let phase = if settled {
        NodePhase::Updated
    } else if updating {
        if drain_pending || in_phase(mcn, DRAINED) || (state == STATE_DONE && !reached) {
            // A daemon still Done on a node just targeted is about to drain it (as oc says).
            NodePhase::Draining
        } else if in_phase(mcn, REBOOTED_NODE)
            || state == "Rebooting"
            || (state == "Working" && current != desired && not_ready(node))
        {
            NodePhase::Rebooting
        } else {
            NodePhase::Updating
        }
    } else if t.pool.spec.paused {
        NodePhase::Paused
    } else {
        NodePhase::Pending
    };
    let (mut assessment, mut estimate) = match phase {
        NodePhase::Paused => (NodeAssessment::Excluded, "-"),
        NodePhase::Pending => (NodeAssessment::Outdated, "?"),
        NodePhase::Draining => (NodeAssessment::Progressing, "+10m"),
        NodePhase::Updating | NodePhase::Rebooting => (NodeAssessment::Progressing, "+5m"),
        NodePhase::Updated => (NodeAssessment::Completed, "-"),
    };
    let mut message = String::new();
    let unavailable = node.is_unavailable();
    let why = unavailable_reasons(node);
    if unavailable && !updating {
        assessment = NodeAssessment::Unavailable;
        message = why.iter().map(|u| u.reason).collect::<Vec<_>>().join(" | ");
        estimate = if settled { "-" } else { "?" };
    }
    let blocked = blocked_drain_report(node).filter(|_| !node.is_degraded());
    let degraded = node.is_degraded() || blocked.is_some();
    if degraded {
        assessment = NodeAssessment::Degraded;
        message = match blocked {
            Some(report) => report.to_string(),
            None => node.annotation(REASON).unwrap_or("").to_string(),
        };
        estimate = if settled { "-" } else { "?" };
    }
    NodeStatus {
        name: node.name().to_string(),
        assessment,
        phase,
        version: versions.current.map(str::to_string),
        estimate: estimate.to_string(),
        message: ellipsize(&message, node.name()),
        current_config: current.to_string(),
        desired_config: desired.to_string(),
        state: state.to_string(),
        updated: phase == NodePhase::Updated,
        updating,
        unavailable,
        degraded,
        unavailable_reasons: why,
    }
}

/// How a pool's nodes stand, counted as `oc`'s STATUS column counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Overview {
    /// Nodes.
    pub total: usize,
    /// Not unavailable.
    pub available: usize,
    /// Draining, updating or rebooting, and not degraded.
    pub progressing: usize,
    /// Not updated.
    pub outdated: usize,
    /// Draining.
    pub draining: usize,
    /// In a paused pool.
    pub excluded: usize,
    /// Degraded.
    pub degraded: usize,
    /// Updated.
    pub updated: usize,
}

/// The overview of a pool's node rows.
pub fn overview(nodes: &[NodeStatus]) -> Overview {
    let mut o = Overview {
        total: nodes.len(),
        ..Overview::default()
    };
    for n in nodes {
        o.available += usize::from(!n.unavailable);
        o.degraded += usize::from(n.degraded);
        match n.phase {
            NodePhase::Updated => o.updated += 1,
            NodePhase::Paused => {
                o.excluded += 1;
                o.outdated += 1;
            }
            NodePhase::Pending => o.outdated += 1,
            NodePhase::Draining | NodePhase::Updating | NodePhase::Rebooting => {
                o.outdated += 1;
                o.draining += usize::from(n.phase == NodePhase::Draining);
                o.progressing += usize::from(!n.degraded);
            }
        }
    }
    o
}

/// The pool's assessment from its overview, as `oc` decides it: Completed when every node is
/// updated, Pending when none has started, then Degraded, Excluded, Progressing. `stopped`
/// (the rollout stopped on a failure that is not a node's: a RolloutPolicy's pause, a failed
/// image build, a config that does not render) makes an unfinished pool Degraded.
pub fn assess_pool(o: &Overview, nodes: &[NodeStatus], stopped: bool) -> PoolAssessment {
    let pending = nodes
        .iter()
        .filter(|n| n.phase == NodePhase::Pending)
        .count();
    if o.total == 0 {
        PoolAssessment::Empty
    } else if o.updated == o.total {
        PoolAssessment::Completed
    } else if stopped {
        PoolAssessment::Degraded
    } else if pending == o.total {
        PoolAssessment::Pending
    } else if o.degraded > 0 {
        PoolAssessment::Degraded
    } else if o.excluded > 0 {
        PoolAssessment::Excluded
    } else {
        PoolAssessment::Progressing
    }
}

/// `37% (22/59)`: the share of updated nodes, rounded as Go's `%.0f` rounds.
pub fn completion(o: &Overview) -> String {
    let pct = if o.total == 0 {
        0.0
    } else {
        o.updated as f64 / o.total as f64 * 100.0
    };
    format!("{pct:.0}% ({}/{})", o.total - o.outdated, o.total)
}

/// `44 Available, 5 Progressing, 12 Draining, 7 Degraded`: `oc`'s STATUS column (Excluded and
/// Degraded only when there are any).
pub fn status_line(o: &Overview) -> String {
    let mut s = format!(
        "{} Available, {} Progressing, {} Draining",
        o.available, o.progressing, o.draining
    );
    for (n, what) in [(o.excluded, "Excluded"), (o.degraded, "Degraded")] {
        if n > 0 {
            s.push_str(&format!(", {n} {what}"));
        }
    }
    s
}

/// Nodes in `oc`'s order: by assessment, then phase, then name.
pub fn sort_nodes(nodes: &mut [NodeStatus]) {
    nodes.sort_by(|a, b| (a.assessment, a.phase, &a.name).cmp(&(b.assessment, b.phase, &b.name)));
}
