//! Why a pool does not move, one finding each, with what to do: a drain blocked (the
//! PodDisruptionBudget and pods in its way, pods stuck terminating, the drain controller's
//! report and `FailedToDrain` Events), a node NotReady (since its reboot), a degraded node and
//! the file or unit it failed on, a paused pool, a RolloutPolicy's pause, rollback, closed
//! maintenance window, canaries or soak, a layered pool waiting for its image build, a
//! PinnedImageSet not pulled, a config that does not render or cannot be applied in place.
//!
//! A finding is [`Severity::Stuck`] when the rollout will not go on without someone acting,
//! and [`Severity::Waiting`] when it will by itself (a window opens, a soak or a build ends).

use super::assess::{NodePhase, NodeStatus, Overview};
use super::input::{Cluster, DisruptionBudget, PodView};
use super::short_duration;
use crate::api::machine_config_node::conditions::{
    DRAINED, NODE_DEGRADED, PINNED_IMAGE_SETS_DEGRADED, PINNED_IMAGE_SETS_PROGRESSING,
    REBOOTED_NODE,
};
use crate::api::machine_config_node::MachineConfigNodeStatus;
use crate::api::node::{REASON, STATE, STATE_UNRECONCILABLE};
use crate::api::rollout_policy::{Phase, RolloutPolicy};
use crate::api::{MachineConfigPool, Node};
use crate::controllers::build::lifecycle::{config_for_pool, job_of, REBUILD_ANNOTATION};
use crate::controllers::build::progress::{progress_of, Progress};
use crate::controllers::drain::{blocked_drain_report, drain_action, should_evict, DrainAction};
use crate::controllers::layered::{image_build_degraded, Layering};
use crate::controllers::pool_status::RENDER_DEGRADED;
use crate::controllers::rollout_policy::{rfc3339, settings};
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

fn at(s: &str) -> Option<Timestamp> {
    s.parse().ok()
}

impl PoolFacts<'_> {
    fn mcn(&self, node: &str) -> Option<&MachineConfigNodeStatus> {
        self.cluster
            .machine_config_node(node)
            .and_then(|m| m.status.as_ref())
    }

    /// ` for 1h12m` since `t`, or nothing.
    fn for_(&self, t: Option<Timestamp>) -> String {
        t.map(|t| format!(" for {}", short_duration(self.now.duration_since(t))))
            .unwrap_or_default()
    }

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
    out.extend(policy(f));
    out.extend(layered(f));
    let mut nodes: Vec<&Node> = f.nodes.to_vec();
    nodes.sort_by(|a, b| a.name().cmp(b.name()));
    for n in nodes {
        let drain = drain(f, n);
        let drain_found = drain.is_some();
        out.extend(drain);
        out.extend(not_ready(f, n));
        if !drain_found {
            out.extend(degraded(f, n));
        }
        out.extend(pinned_images(f, n));
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
        "unpause it when the update may go on: oc patch mcp/{} --type merge -p '{{\"spec\":{{\"paused\":false}}}}'",
        f.pool.name()
    );
    Some(x)
}

fn policy(f: &PoolFacts<'_>) -> Vec<Finding> {
    let Some(p) = f.policy else {
        return Vec::new();
    };
    let name = p.name();
    let s = match settings(p) {
        Ok(s) => s,
        Err(e) => {
            let mut x = f.finding(Severity::Stuck, Kind::PolicyInvalid, None);
            x.summary = "RolloutPolicy invalid".into();
            x.message = e.to_string();
            x.action = format!("fix that field of RolloutPolicy {name}");
            return vec![x];
        }
    };
    let st = p.status_or_default();
    let mut out = Vec::new();
    let patch = |spec: &str| {
        format!("oc patch rolloutpolicy/{name} --type merge -p '{{\"spec\":{{{spec}}}}}'")
    };
    let rollback = st
        .rollback
        .as_ref()
        .filter(|_| matches!(st.phase, Phase::RollingBack | Phase::RolledBack));
    // A pause recorded for an older config is over (a newer config ends it).
    let pause = st.pause.as_ref().filter(|p| p.config == f.target);
    if let Some(r) = rollback {
        let since = at(&r.since);
        let back = st.phase == Phase::RolledBack;
        let how = if r.automatic {
            "automatic"
        } else {
            "requested"
        };
        let why = st
            .pause
            .as_ref()
            .map(|p| format!(": {}", p.message))
            .unwrap_or_default();
        let mut x = f.finding(Severity::Stuck, Kind::RolledBack, None);
        x.since = since.map(rfc3339);
        x.summary = if back { "rolled back" } else { "rolling back" }.into();
        x.message = if back {
            format!(
                "RolloutPolicy {name} holds the pool on {} instead of {}{} ({how}){why}",
                r.to,
                r.from,
                f.for_(since)
            )
        } else {
            format!(
                "RolloutPolicy {name} is rolling back from {} to {}{} ({how}){why}",
                r.from,
                r.to,
                f.for_(since)
            )
        };
        x.action = if s.rollback {
            format!(
                "fix the config and roll out a newer one, or go forward again: {}",
                patch("\"rollback\":false")
            )
        } else {
            "fix the config and roll out a newer one (it starts with the canaries)".into()
        };
        out.push(x);
    } else if st.phase == Phase::Invalid {
        let mut x = f.finding(Severity::Stuck, Kind::PolicyInvalid, None);
        x.summary = "RolloutPolicy invalid".into();
        x.message = format!("RolloutPolicy {name}: {}", st.message);
        x.action = format!("fix RolloutPolicy {name} or the pool's maxUnavailable");
        out.push(x);
    } else if let Some(pause) = pause {
        let since = at(&pause.since);
        let nodes = if pause.nodes.is_empty() {
            pause.node.clone()
        } else {
            pause.nodes.join(", ")
        };
        let mut x = f.finding(Severity::Stuck, Kind::RolloutPaused, None);
        x.since = since.map(rfc3339);
        x.summary = "rollout paused".into();
        x.message = format!(
            "RolloutPolicy {name} paused the rollout of {}{} ({}): {}",
            pause.config,
            f.for_(since),
            pause.reason,
            pause.message
        );
        x.action = format!(
            "fix {nodes} (or the config), then resume: {}; or roll back: {}",
            patch(&format!("\"resumedAt\":\"{}\"", rfc3339(f.now))),
            patch("\"rollback\":true")
        );
        out.push(x);
    }
    if !out.is_empty() || f.pool.spec.paused || f.overview.outdated == 0 {
        return out;
    }
    // Moving on: the window, the canaries, the soak.
    if !s.windows.is_open(f.now) {
        if let Some(next) = s.windows.next_open(f.now) {
            let mut x = f.finding(Severity::Waiting, Kind::MaintenanceWindow, None);
            x.summary = "waiting for a maintenance window".into();
            let windows: Vec<String> = p
                .spec
                .maintenance_windows
                .iter()
                .map(crate::controllers::rollout_policy::schedule::describe_window)
                .collect();
            x.message = format!(
                "outside every maintenance window of RolloutPolicy {name} ({}); the next opens {} (in {})",
                windows.join(" or "),
                rfc3339(next),
                short_duration(next.duration_since(f.now))
            );
            x.action =
                "nothing: nodes start when it opens (updates under way finish meanwhile)".into();
            out.push(x);
        }
    }
    let canary = st
        .canary
        .as_ref()
        .filter(|c| c.config == f.target && !c.passed);
    if let (Some(c), Some(cs)) = (canary, s.canary.as_ref()) {
        let healthy = c.healthy_since.as_deref().and_then(at);
        match healthy {
            Some(h) if st.phase == Phase::Soaking || cs.soak_secs > 0 => {
                let end = h
                    .checked_add(SignedDuration::from_secs(cs.soak_secs))
                    .unwrap_or(Timestamp::MAX);
                let mut x = f.finding(Severity::Waiting, Kind::Soaking, None);
                x.since = Some(rfc3339(h));
                x.summary = "canaries soaking".into();
                x.message = format!(
                    "canaries {} healthy on {}; soaking {} until {} (in {})",
                    c.nodes.join(", "),
                    f.target,
                    cs.soak_text,
                    rfc3339(end),
                    short_duration(end.duration_since(f.now).max(SignedDuration::ZERO))
                );
                x.action = "nothing: the other nodes start when the soak ends".into();
                out.push(x);
            }
            Some(_) => {}
            None => {
                let mut x = f.finding(Severity::Waiting, Kind::Canaries, None);
                x.summary = "waiting for the canaries".into();
                x.message = format!(
                    "canaries {} update to {} first; the other nodes wait until they are healthy{}",
                    c.nodes.join(", "),
                    f.target,
                    if cs.soak_secs > 0 {
                        format!(" for {}", cs.soak_text)
                    } else {
                        String::new()
                    }
                );
                x.action = "nothing, unless a canary fails: then the rollout pauses".into();
                out.push(x);
            }
        }
    }
    out
}

fn layered(f: &PoolFacts<'_>) -> Option<Finding> {
    let Layering::Waiting { reason, build, .. } = f.layering else {
        return None;
    };
    let c = f.cluster;
    let pool = f.pool.name();
    let mosc = config_for_pool(pool, &c.machine_os_configs);
    let mosc_name = mosc.map(|m| m.metadata.name.as_str()).unwrap_or(pool);
    let b = build
        .as_deref()
        .and_then(|name| c.machine_os_builds.iter().find(|b| b.metadata.name == name));
    let progress = b.and_then(|b| progress_of(b.status.as_ref()));
    let rebuild = format!("oc annotate machineosconfig/{mosc_name} {REBUILD_ANNOTATION}=''");
    let status_time = |t: Option<&String>| t.and_then(|t| at(t));
    match (b, progress) {
        (Some(b), Some(Progress::Failed)) => {
            let mut x = f.finding(Severity::Stuck, Kind::BuildFailed, None);
            let since = status_time(b.status.as_ref().and_then(|s| s.build_end.as_ref()));
            x.since = since.map(rfc3339);
            x.summary = "image build failed".into();
            let why =
                image_build_degraded(f.pool, &c.machine_os_configs, &c.machine_os_builds, &c.jobs)
                    .filter(|(on, _, _)| *on)
                    .map(|(_, _, m)| m)
                    .unwrap_or_else(|| format!("MachineOSBuild {} failed", b.metadata.name));
            x.message = format!("pool {pool} waits for its image{}: {why}", f.for_(since));
            x.action = format!(
                "read the build's log (oc logs -n openshift-machine-config-operator job/build-{}), fix the cause, then rebuild: {rebuild}",
                b.metadata.name
            );
            Some(x)
        }
        (Some(b), Some(Progress::Interrupted)) => {
            let mut x = f.finding(Severity::Stuck, Kind::BuildFailed, None);
            x.summary = "image build interrupted".into();
            x.message = format!(
                "pool {pool} waits for its image: MachineOSBuild {} was interrupted (its Job was deleted)",
                b.metadata.name
            );
            x.action = format!("rebuild: {rebuild}");
            Some(x)
        }
        (Some(b), Some(p)) if p.is_transient() => {
            let mut x = f.finding(Severity::Waiting, Kind::BuildRunning, None);
            let since = status_time(b.status.as_ref().and_then(|s| s.build_start.as_ref()))
                .or_else(|| b.metadata.creation_timestamp.as_deref().and_then(at));
            x.since = since.map(rfc3339);
            x.summary = "waiting for the image build".into();
            let job = job_of(b, &c.jobs)
                .map(|j| {
                    format!(
                        " (Job {}: {} active, {} failed)",
                        j.name, j.active, j.failed
                    )
                })
                .unwrap_or_default();
            let what = if p == Progress::Prepared {
                "pending"
            } else {
                "building"
            };
            x.message = format!(
                "pool {pool} waits for its image: MachineOSBuild {} {what}{}{job}",
                b.metadata.name,
                f.for_(since)
            );
            x.action = "nothing: nodes move to the image once the build succeeds".into();
            Some(x)
        }
        _ => {
            let mut x = f.finding(Severity::Waiting, Kind::BuildRunning, None);
            x.summary = "waiting for the image".into();
            x.message = format!("pool {pool} waits for its image: {reason}");
            x.action = format!(
                "nothing while the build controller makes it; if it does not, check MachineOSConfig {mosc_name} and the machine-config-controller's log"
            );
            Some(x)
        }
    }
}

/// A pod is stuck terminating once its grace period (its deletionTimestamp) is over.
fn stuck_terminating<'a>(pods: &[&'a PodView], now: Timestamp) -> Vec<(&'a PodView, Timestamp)> {
    pods.iter()
        .filter(|p| should_evict(&p.pod))
        .filter_map(|p| {
            let t = at(p.pod.metadata.deletion_timestamp.as_deref()?)?;
            (t < now).then_some((*p, t))
        })
        .collect()
}

fn budget_terms(b: &DisruptionBudget) -> String {
    let spec = match (&b.min_available, &b.max_unavailable) {
        (Some(m), _) => format!(", minAvailable {m}"),
        (None, Some(m)) => format!(", maxUnavailable {m}"),
        _ => String::new(),
    };
    format!(
        "{} of {} pods healthy, {} needed{spec}",
        b.current_healthy, b.expected_pods, b.desired_healthy
    )
}

fn drain(f: &PoolFacts<'_>, n: &Node) -> Option<Finding> {
    if !matches!(drain_action(n), DrainAction::Drain { .. }) {
        return None;
    }
    let c = f.cluster;
    let pods: Vec<&PodView> = c.pods.iter().filter(|p| p.node == n.name()).collect();
    let evictable: Vec<&PodView> = pods
        .iter()
        .copied()
        .filter(|p| should_evict(&p.pod) && !p.pod.is_terminating())
        .collect();
    let blocks: Vec<(&DisruptionBudget, Vec<&PodView>)> = c
        .disruption_budgets
        .iter()
        .filter(|b| b.disruptions_allowed <= 0)
        .map(|b| {
            (
                b,
                evictable.iter().copied().filter(|p| b.covers(p)).collect(),
            )
        })
        .filter(|(_, v): &(_, Vec<&PodView>)| !v.is_empty())
        .collect();
    let terminating = stuck_terminating(&pods, f.now);
    let degraded_reason = n
        .annotation(REASON)
        .filter(|r| n.is_degraded() && r.contains("drain"));
    let report = blocked_drain_report(n).or(degraded_reason);
    let events = c.events_about("Node", n.name());
    let started = f
        .mcn(n.name())
        .and_then(|s| s.condition(DRAINED))
        .filter(|c| c.status == "Unknown")
        .and_then(|c| at(c.last_transition_time()))
        .or_else(|| {
            events
                .iter()
                .filter(|e| e.reason == "Drain")
                .filter_map(|e| e.last)
                .max()
        });
    let failed: Vec<_> = events
        .iter()
        .filter(|e| e.reason == "FailedToDrain")
        .filter(|e| match (started, e.last) {
            (Some(s), Some(l)) => l >= s,
            _ => true,
        })
        .collect();
    if blocks.is_empty() && terminating.is_empty() && report.is_none() && failed.is_empty() {
        return None;
    }
    let since = started.or_else(|| failed.iter().filter_map(|e| e.first).min());
    let mut parts = Vec::new();
    let mut actions = Vec::new();
    for (b, covered) in &blocks {
        let names: Vec<String> = covered.iter().map(|p| p.key()).collect();
        parts.push(format!(
            "PodDisruptionBudget {} allows {} disruptions ({}) and covers pod{} {}",
            b.key(),
            b.disruptions_allowed.max(0),
            budget_terms(b),
            if names.len() == 1 { "" } else { "s" },
            names.join(", ")
        ));
        let owners: Vec<String> = covered
            .iter()
            .filter_map(|p| p.owner().map(|o| format!("{}/{}", o.kind, o.name)))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let workload = if owners.is_empty() {
            "the workload".to_string()
        } else {
            owners.join(", ")
        };
        actions.push(if b.expected_pods > 0 && b.expected_pods <= b.desired_healthy {
            format!(
                "PodDisruptionBudget {} never allows an eviction ({} pods, {} must stay healthy): add a replica to {workload} or relax the budget",
                b.key(),
                b.expected_pods,
                b.desired_healthy
            )
        } else {
            format!(
                "let PodDisruptionBudget {} allow an eviction: bring {workload} back to full health or relax the budget",
                b.key()
            )
        });
    }
    for (p, t) in &terminating {
        parts.push(format!(
            "pod {} still terminating {} past its grace period",
            p.key(),
            short_duration(f.now.duration_since(*t))
        ));
        actions.push(format!(
            "find what holds pod {} (finalizers, a container that does not stop: oc get pod -n {} {} -o yaml)",
            p.key(),
            p.pod.metadata.namespace,
            p.pod.metadata.name
        ));
    }
    if parts.is_empty() {
        let words = report
            .map(str::to_string)
            .or_else(|| failed.last().map(|e| e.message.clone()))
            .unwrap_or_default();
        parts.push(words);
        actions.push(
            "find the PodDisruptionBudgets covering the pods named (oc get pdb -A) and relax them, or scale their workloads up".into(),
        );
    }
    let mut x = f.finding(Severity::Stuck, Kind::DrainBlocked, Some(n.name()));
    x.since = since.map(rfc3339);
    x.summary = match blocks.first() {
        Some((b, _)) => format!("drain blocked by PodDisruptionBudget {}", b.key()),
        None if !terminating.is_empty() => "drain blocked: a pod does not terminate".into(),
        None => "drain blocked".into(),
    };
    x.message = format!(
        "{}: drain blocked{}: {}",
        n.name(),
        f.for_(since),
        parts.join("; ")
    );
    x.action = format!("{}; the drain retries by itself", actions.join("; "));
    Some(x)
}

fn not_ready(f: &PoolFacts<'_>, n: &Node) -> Option<Finding> {
    let c = n
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready" && c.status != "True")?;
    let since = c.last_transition_time.as_deref().and_then(at);
    if since.is_some_and(|s| f.now.duration_since(s) < NOT_READY_GRACE) {
        return None;
    }
    let row = f.rows.iter().find(|r| r.name == n.name());
    let rebooting = row.is_some_and(|r| r.updating)
        && (row.is_some_and(|r| r.phase == NodePhase::Rebooting)
            || f.mcn(n.name())
                .and_then(|s| s.condition(REBOOTED_NODE))
                .is_some_and(|c| c.status == "Unknown"));
    let kubelet = match (c.reason.as_deref(), c.message.as_deref()) {
        (Some(r), Some(m)) if !m.is_empty() => format!(" ({r}: {m})"),
        (Some(r), _) if !r.is_empty() => format!(" ({r})"),
        (None, Some(m)) if !m.is_empty() => format!(" ({m})"),
        _ => String::new(),
    };
    let mut x = f.finding(Severity::Stuck, Kind::NodeNotReady, Some(n.name()));
    x.since = since.map(rfc3339);
    let age = f.for_(since);
    x.summary = format!("NotReady{age}");
    if rebooting {
        x.message = format!(
            "{}: NotReady{age} since its reboot into {}{kubelet}",
            n.name(),
            n.desired_config()
        );
        x.action = "it did not come back from its reboot: look at its console (cloud console or BMC) for boot and Ignition errors; the update goes on once its kubelet reports Ready".into();
    } else {
        x.message = format!("{}: NotReady{age}{kubelet}", n.name());
        x.action = format!(
            "bring its kubelet back (oc adm node-logs {} -u kubelet, or the machine's console); meanwhile it counts against maxUnavailable",
            n.name()
        );
    }
    Some(x)
}

/// What a degraded node's reason names: a file (an absolute path) or a systemd unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Culprit {
    /// A file's path.
    File(String),
    /// A unit's name.
    Unit(String),
}

const UNIT_SUFFIXES: [&str; 8] = [
    ".service", ".socket", ".timer", ".target", ".mount", ".path", ".slice", ".scope",
];

/// Words after which an absolute path is the file an operation failed on (`open /etc/x:`,
/// `mismatch for file "/etc/x"`, `file "/etc/x": ...`).
const FILE_WORDS: [&str; 16] = [
    "file",
    "files",
    "path",
    "directory",
    "open",
    "opening",
    "write",
    "writing",
    "create",
    "creating",
    "remove",
    "removing",
    "rename",
    "renaming",
    "chmod",
    "chown",
];

/// The file or unit a daemon's degraded reason names, if any: an absolute path right after a
/// word naming a file operation (not any path: a command line's arguments are not the
/// culprit), else the first word ending like a systemd unit.
pub fn culprit(reason: &str) -> Option<Culprit> {
    let clean = |w: &str| {
        w.trim_matches(|c: char| {
            matches!(
                c,
                '"' | '\'' | '`' | ':' | ';' | ',' | '(' | ')' | '[' | ']'
            )
        })
        .trim_end_matches('.')
        .to_string()
    };
    let mut unit = None;
    let mut previous = String::new();
    for w in reason.split_whitespace().map(clean) {
        if w.starts_with('/')
            && w.len() > 1
            && FILE_WORDS.contains(&previous.to_lowercase().as_str())
        {
            return Some(Culprit::File(w));
        }
        if unit.is_none()
            && UNIT_SUFFIXES
                .iter()
                .any(|s| w.ends_with(s) && w.len() > s.len())
        {
            unit = Some(Culprit::Unit(w.clone()));
        }
        previous = w;
    }
    unit
}

/// The MachineConfigs among the pool's sources that write `culprit`.
fn written_by(f: &PoolFacts<'_>, culprit: &Culprit) -> Vec<String> {
    let sources: Vec<&str> = f
        .pool
        .spec
        .configuration
        .source
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    f.cluster
        .machine_configs
        .iter()
        .filter(|mc| sources.contains(&mc.name()))
        .filter(|mc| {
            let Some(cfg) = mc.ignition() else {
                return false;
            };
            let (list, key, want) = match culprit {
                Culprit::File(p) => ("/storage/files", "path", p.as_str()),
                Culprit::Unit(u) => ("/systemd/units", "name", u.as_str()),
            };
            let hit = |v: &serde_json::Value| {
                v.pointer(list)
                    .and_then(serde_json::Value::as_array)
                    .is_some_and(|a| {
                        a.iter()
                            .any(|e| e.get(key).and_then(serde_json::Value::as_str) == Some(want))
                    })
            };
            // A unit's drop-in file names its unit's folder.
            hit(cfg)
                || matches!(culprit, Culprit::File(p) if p.starts_with("/etc/systemd/system/") && {
                    let unit = p
                        .trim_start_matches("/etc/systemd/system/")
                        .split('/')
                        .next()
                        .unwrap_or("")
                        .trim_end_matches(".d");
                    cfg.pointer("/systemd/units")
                        .and_then(serde_json::Value::as_array)
                        .is_some_and(|a| {
                            a.iter().any(|e| {
                                e.get("name").and_then(serde_json::Value::as_str) == Some(unit)
                            })
                        })
                })
        })
        .map(|mc| mc.name().to_string())
        .collect()
}

fn degraded(f: &PoolFacts<'_>, n: &Node) -> Option<Finding> {
    if !n.is_degraded() {
        return None;
    }
    let reason = n.annotation(REASON).unwrap_or("");
    let mcn = f.mcn(n.name());
    let since = mcn
        .and_then(|s| s.condition(NODE_DEGRADED))
        .filter(|c| c.is_true())
        .and_then(|c| at(c.last_transition_time()))
        .or_else(|| {
            f.cluster
                .events_about("Node", n.name())
                .iter()
                .filter(|e| e.reason == "NodeDegraded")
                .filter_map(|e| e.last)
                .max()
        });
    let culprit = culprit(reason);
    let writers = culprit
        .as_ref()
        .map(|c| written_by(f, c))
        .unwrap_or_default();
    let what = match &culprit {
        Some(Culprit::File(p)) => format!("file {p}"),
        Some(Culprit::Unit(u)) => format!("unit {u}"),
        None => String::new(),
    };
    let origin = match (what.is_empty(), writers.is_empty()) {
        (true, _) => String::new(),
        (false, true) => format!(" ({what})"),
        (false, false) => format!(" ({what}, from MachineConfig {})", writers.join(", ")),
    };
    let mut x = f.finding(Severity::Stuck, Kind::NodeDegraded, Some(n.name()));
    x.since = since.map(rfc3339);
    x.summary = reason.to_string();
    x.message = format!(
        "{}: degraded on {}{}: {reason}{origin}",
        n.name(),
        n.desired_config(),
        f.for_(since)
    );
    let unreconcilable = n.annotation(STATE) == Some(STATE_UNRECONCILABLE);
    let drift = ["mismatch", "on-disk", "drift"]
        .iter()
        .any(|w| reason.to_lowercase().contains(w));
    x.action = if unreconcilable {
        "the change cannot be applied in place: revert it (or replace the node)".into()
    } else if drift {
        format!(
            "the {} was changed on the node: restore it, or have the daemon rewrite it (touch /run/machine-config-daemon-force on the node)",
            if what.is_empty() { "config" } else { what.as_str() }
        )
    } else if !writers.is_empty() {
        format!(
            "fix or revert the {what} in MachineConfig {}; the daemon retries when the pool's config changes",
            writers.join(", ")
        )
    } else if !what.is_empty() {
        format!(
            "fix the {what} (see the machine-config-daemon's log on {}); the daemon retries when the pool's config changes",
            n.name()
        )
    } else {
        format!(
            "read the machine-config-daemon's log on {} (oc logs -n openshift-machine-config-operator -c machine-config-daemon <its pod>)",
            n.name()
        )
    };
    Some(x)
}

fn pinned_images(f: &PoolFacts<'_>, n: &Node) -> Vec<Finding> {
    let Some(s) = f.mcn(n.name()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let sets =
        |pick: &dyn Fn(&crate::api::machine_config_node::PinnedImageSetGenerations) -> bool| {
            s.pinned_image_sets
                .iter()
                .filter(|g| pick(g))
                .map(|g| g.name.clone())
                .collect::<Vec<_>>()
        };
    if let Some(c) = s
        .condition(PINNED_IMAGE_SETS_DEGRADED)
        .filter(|c| c.is_true())
    {
        let since = at(c.last_transition_time());
        let failing: Vec<String> = s
            .pinned_image_sets
            .iter()
            .filter(|g| g.last_failed_generation.is_some())
            .map(|g| match &g.last_failed_generation_error {
                Some(e) => format!("{}: {e}", g.name),
                None => g.name.clone(),
            })
            .collect();
        let mut x = f.finding(Severity::Stuck, Kind::PinnedImages, Some(n.name()));
        x.since = since.map(rfc3339);
        x.summary = "pinned images not pulled".into();
        x.message = format!(
            "{}: pinned images not pulled{}: {}",
            n.name(),
            f.for_(since),
            if failing.is_empty() {
                c.message().to_string()
            } else {
                failing.join("; ")
            }
        );
        x.action = "check the images (digests, registry, pull secret) and the node's free disk; the daemon retries".into();
        out.push(x);
    } else if let Some(c) = s
        .condition(PINNED_IMAGE_SETS_PROGRESSING)
        .filter(|c| c.is_true())
    {
        let since = at(c.last_transition_time());
        let pending = sets(&|g| {
            g.desired_generation.is_some() && g.current_generation != g.desired_generation
        });
        let mut x = f.finding(Severity::Waiting, Kind::PinnedImages, Some(n.name()));
        x.since = since.map(rfc3339);
        x.summary = "pulling pinned images".into();
        x.message = if pending.is_empty() {
            format!(
                "{}: pulling pinned images{}: {}",
                n.name(),
                f.for_(since),
                c.message()
            )
        } else {
            format!(
                "{}: pulling the images of PinnedImageSet {}{}",
                n.name(),
                pending.join(", "),
                f.for_(since)
            )
        };
        x.action = "nothing: the daemon pins them once pulled".into();
        out.push(x);
    }
    out
}
