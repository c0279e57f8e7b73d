//! Why a pool does not move, one finding each, with what to do: a drain blocked (the
//! PodDisruptionBudget and pods in its way, pods stuck terminating, the drain controller's
//! report and `FailedToDrain` Events), a node NotReady (since its reboot), a degraded node and
//! the file or unit it failed on, a paused pool, a RolloutPolicy's pause, rollback, closed
//! maintenance window, canaries or soak, a layered pool waiting for its image build, a
//! PinnedImageSet not pulled, a config that does not render or cannot be applied in place.
//!
//! A finding is [`Severity::Stuck`] when the rollout will not go on without someone acting,
//! and [`Severity::Waiting`] when it will by itself (a window opens, a soak or a build ends).

mod drain;
mod layered;
mod node;
mod policy;

pub use node::{culprit, Culprit};

use super::assess::{NodeStatus, Overview};
use super::input::Cluster;
use super::short_duration;
use crate::api::machine_config_node::MachineConfigNodeStatus;
use crate::api::rollout_policy::RolloutPolicy;
use crate::api::{MachineConfigPool, Node};
use crate::controllers::layered::Layering;
use crate::controllers::pool_status::RENDER_DEGRADED;
use crate::controllers::rollout_policy::rfc3339;
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

/// How long a node may be NotReady before it is reported (`oc`'s threshold for a node that
/// is seriously unavailable).
pub const NOT_READY_GRACE: SignedDuration = SignedDuration::from_secs(5 * 60);

/// Whether a finding needs someone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Severity {
    /// The rollout will not go on until someone acts.
    Stuck,
    /// The rollout goes on by itself later.
    Waiting,
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Kind {
    /// A drain cannot finish: a PodDisruptionBudget, a pod stuck terminating, or the drain
    /// controller's report.
    DrainBlocked,
    /// A node is NotReady.
    NodeNotReady,
    /// A node's daemon reports the update failed.
    NodeDegraded,
    /// The pool is paused.
    PoolPaused,
    /// The pool's config does not render.
    RenderDegraded,
    /// The pool's change cannot be applied in place.
    NotReconcilable,
    /// The RolloutPolicy cannot be used.
    PolicyInvalid,
    /// The RolloutPolicy paused the rollout on a failure.
    RolloutPaused,
    /// The RolloutPolicy is rolling back, or holds the pool on its last known good config.
    RolledBack,
    /// Outside every maintenance window.
    MaintenanceWindow,
    /// Canaries update first.
    Canaries,
    /// The canaries soak.
    Soaking,
    /// A layered pool waits for its image build.
    BuildRunning,
    /// A layered pool's image build failed or was interrupted.
    BuildFailed,
    /// A PinnedImageSet's images are not pulled.
    PinnedImages,
}

/// One reason a pool does not move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// Stuck or waiting.
    pub severity: Severity,
    /// What it is about.
    pub kind: Kind,
    /// The pool.
    pub pool: String,
    /// The node, for a node's finding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Since when (RFC 3339), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// A few words for the node's MESSAGE column.
    pub summary: String,
    /// The whole reason, on one line.
    pub message: String,
    /// What to do.
    pub action: String,
}

/// What the findings of one pool are drawn from.
#[derive(Debug, Clone, Copy)]
pub struct PoolFacts<'a> {
    /// The cluster.
    pub cluster: &'a Cluster,
    /// The pool as stored.
    pub pool: &'a MachineConfigPool,
    /// The config its nodes move to.
    pub target: &'a str,
    /// Its nodes.
    pub nodes: &'a [&'a Node],
    /// Its nodes' rows.
    pub rows: &'a [NodeStatus],
    /// Its node overview.
    pub overview: &'a Overview,
    /// Its layering.
    pub layering: &'a Layering,
    /// Its RolloutPolicy.
    pub policy: Option<&'a RolloutPolicy>,
    /// Why its change cannot be applied in place, when it cannot.
    pub not_reconcilable: Option<&'a str>,
    /// The instant looked at.
    pub now: Timestamp,
}

/// An RFC 3339 time.
fn at(s: &str) -> Option<Timestamp> {
    s.parse().ok()
}

impl PoolFacts<'_> {
    /// The node's MachineConfigNode status.
    fn mcn(&self, node: &str) -> Option<&MachineConfigNodeStatus> {
        self.cluster
            .machine_config_node(node)
            .and_then(|m| m.status.as_ref())
    }

    /// ` for 1h12m` since `t`, or nothing.
    fn for_(&self, t: Option<Timestamp>) -> String {
        t.map(
            |t| match short_duration(self.now.duration_since(t)).as_str() {
                "now" => " just now".to_string(),
                d => format!(" for {d}"),
            },
        )
        .unwrap_or_default()
    }

    /// An empty finding of this pool.
    fn finding(&self, severity: Severity, kind: Kind, node: Option<&str>) -> Finding {
        Finding {
            severity,
            kind,
            pool: self.pool.name().to_string(),
            node: node.map(str::to_string),
            since: None,
            summary: String::new(),
            message: String::new(),
            action: String::new(),
        }
    }
}

/// Every finding of one pool: the pool's own first, then its nodes', by name.
pub fn findings(f: &PoolFacts<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(render_degraded(f));
    out.extend(not_reconcilable(f));
    out.extend(paused_pool(f));
    out.extend(policy::findings(f));
    out.extend(layered::finding(f));
    let mut nodes: Vec<&Node> = f.nodes.to_vec();
    nodes.sort_by(|a, b| a.name().cmp(b.name()));
    for n in nodes {
        let drain = drain::finding(f, n);
        let drain_found = drain.is_some();
        out.extend(drain);
        out.extend(node::not_ready(f, n));
        if !drain_found {
            out.extend(node::degraded(f, n));
        }
        out.extend(node::pinned_images(f, n));
    }
    for x in &mut out {
        x.message = one_line(&x.message);
        x.summary = one_line(&x.summary);
    }
    out
}

/// The longest message a finding prints (a daemon's reason may hold a command's whole output).
pub const MAX_MESSAGE: usize = 400;

/// `text` on one line (runs of blanks and line breaks as one space), cut at [`MAX_MESSAGE`]
/// characters with `...`.
pub fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= MAX_MESSAGE {
        return joined;
    }
    let cut: String = joined.chars().take(MAX_MESSAGE).collect();
    format!("{}...", cut.trim_end())
}

fn render_degraded(f: &PoolFacts<'_>) -> Option<Finding> {
    let c = f
        .pool
        .status
        .as_ref()
        .and_then(|s| s.condition(RENDER_DEGRADED))
        .filter(|c| c.is_true())?;
    let mut x = f.finding(Severity::Stuck, Kind::RenderDegraded, None);
    let since = at(c.last_transition_time());
    x.since = since.map(rfc3339);
    x.summary = "config does not render".into();
    x.message = format!(
        "pool {} cannot render its config{}: {}",
        f.pool.name(),
        f.for_(since),
        c.message()
    );
    x.action = "fix the MachineConfig the message names; the pool renders again by itself".into();
    Some(x)
}

fn not_reconcilable(f: &PoolFacts<'_>) -> Option<Finding> {
    let why = f.not_reconcilable?;
    let from = f
        .pool
        .status
        .as_ref()
        .map(|s| s.configuration.name.as_str())
        .unwrap_or("");
    let mut x = f.finding(Severity::Stuck, Kind::NotReconcilable, None);
    x.summary = "change cannot be applied in place".into();
    x.message = format!(
        "pool {}: {from} -> {} cannot be applied in place: {why}",
        f.pool.name(),
        f.target
    );
    x.action =
        "revert that change in its MachineConfig; nodes moving to it go Unreconcilable".into();
    Some(x)
}

fn paused_pool(f: &PoolFacts<'_>) -> Option<Finding> {
    if !f.pool.spec.paused || f.overview.outdated == 0 {
        return None;
    }
    let mut x = f.finding(Severity::Stuck, Kind::PoolPaused, None);
    x.summary = "pool paused".into();
    x.message = format!(
        "Outdated nodes in a paused pool '{}' will not be updated ({} of {})",
        f.pool.name(),
        f.overview.outdated,
        f.overview.total
    );
    x.action = format!(
        "unpause it when the update may go on: kubectl mco resume {0} (oc patch mcp/{0} --type merge -p '{{\"spec\":{{\"paused\":false}}}}')",
        f.pool.name()
    );
    Some(x)
}
