//! Where a cluster's rollouts stand and why a pool is stuck: `mco-render status`.
//!
//! [`status`] is a pure function of the cluster's objects ([`Cluster`]) and an instant: per
//! pool its assessment, completion, counts, the config moving from and to and that move's
//! disruption ([`crate::plan`]), paused or not; per node its assessment, phase, version,
//! estimate and message ([`assess`], worded as `oc adm upgrade status`'s worker section words
//! them); and the reasons the rollout does not move, each with what to do ([`stuck`]).
//! [`render`] prints it; the JSON output is the same value through serde.
//!
//! The offline view reads a dump ([`Cluster::from_manifests`]), refused when it is none
//! ([`check_dump`]), and looks at it from the instant it was taken
//! ([`crate::manifests::instant`]); the live one (`kubectl mco status`) lists or watches the
//! kinds [`sources`] names and builds the same [`Cluster`] ([`Cluster::insert`]), then calls the
//! same function at the clock. [`frame`] is the live view's `--watch` screen; [`actions`]
//! decides what its one-step actions write.

pub mod actions;
pub mod assess;
pub mod estimate;
pub mod frame;
pub mod input;
pub mod render;
pub mod sources;
pub mod stuck;

#[cfg(test)]
mod tests;

pub use crate::manifests::instant::NowFrom;
pub use assess::{NodeAssessment, NodePhase, NodeStatus, Overview, PoolAssessment};
pub use input::Cluster;
pub use sources::{Source, Unread};
pub use stuck::{Finding, Kind, Severity};

use crate::api::machine_config::RELEASE_IMAGE_VERSION_ANNOTATION;
use crate::api::MachineConfigPool;
use crate::controllers::layered::{layering, Layering};
use crate::controllers::node_pool::nodes_for_pool;
use crate::controllers::pool_status::{calculate_status_with, PoolLayering};
use crate::controllers::rollout_policy::{effective_target, rfc3339};
use crate::gocompat::duration::format_duration;
use crate::plan;
use crate::report::Disruption;
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;
use std::time::Duration;

/// What `status` is asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// The instant looked at (the caller's clock; nothing here reads one).
    pub now: Timestamp,
    /// How long one node takes to drain, update and reboot, for the estimates.
    pub per_node: Duration,
    /// Only this pool.
    pub pool: Option<String>,
}

/// A pool's counts as its status counts them (recomputed from its nodes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// `machineCount`.
    pub total: i32,
    /// `updatedMachineCount`.
    pub updated: i32,
    /// `degradedMachineCount`.
    pub degraded: i32,
    /// `unavailableMachineCount`.
    pub unavailable: i32,
}

/// What moving from one rendered config to the other does to a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Move {
    /// The most disruptive action.
    pub kind: Disruption,
    /// The plan in one line (`2 files change; drain, reboot`).
    pub summary: String,
}

/// One pool.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolStatus {
    /// The pool.
    pub name: String,
    /// Its assessment.
    pub assessment: PoolAssessment,
    /// `37% (22/59)`.
    pub completion: String,
    /// `oc`'s STATUS column: `44 Available, 5 Progressing, 12 Draining`.
    pub status: String,
    /// The nodes by how they stand.
    pub overview: Overview,
    /// The counts its status gives.
    pub counts: Counts,
    /// The config every node had reached (`status.configuration`), when it is not `to`.
    pub from: Option<String>,
    /// The config the nodes move to.
    pub to: String,
    /// The release version of `from`.
    pub from_version: Option<String>,
    /// The release version of `to`.
    pub to_version: Option<String>,
    /// What the move does to a node, when both configs are in the dump.
    pub disruption: Option<Move>,
    /// `spec.paused`.
    pub paused: bool,
    /// `spec.maxUnavailable` as written (1 when unset).
    pub max_unavailable: String,
    /// The RolloutPolicy's phase and message, when the pool has one.
    pub rollout: Option<String>,
    /// The layered image's state, for a pool with a MachineOSConfig.
    pub layering: Option<String>,
    /// When the last node should be done (RFC 3339), while nodes are left and nothing stops
    /// them.
    pub finish: Option<String>,
    /// Its nodes, most urgent first.
    pub nodes: Vec<NodeStatus>,
}

/// The whole view.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// The instant looked at (RFC 3339).
    pub now: String,
    /// Where `now` comes from, for a dump's view (`--now`, the dump's newest time, the clock);
    /// unset for the live view, which looks at the clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub now_from: Option<NowFrom>,
    /// The pools, in the dump's order.
    pub pools: Vec<PoolStatus>,
    /// Why pools do not move: stuck ones first.
    pub findings: Vec<Finding>,
    /// Whether anything is stuck (the command exits 1).
    pub stuck: bool,
    /// What could not be read or placed (objects left out, nodes without a pool).
    pub notes: Vec<String>,
}

/// `oc`'s short durations: `22m44s`, `1h4m41s`, `3h31m`, `now` (seconds, truncated); from a
/// day on, the days first (`3d11h`, where `oc` would say `83h`).
pub fn short_duration(d: SignedDuration) -> String {
    let secs = d.as_secs().max(0);
    if secs >= 86_400 {
        let rest = short_duration(SignedDuration::from_secs(secs % 86_400));
        let rest = if rest == "now" { String::new() } else { rest };
        return format!("{}d{rest}", secs / 86_400);
    }
    let orig = format_duration(secs.saturating_mul(1_000_000_000));
    if orig == "0s" {
        return "now".into();
    }
    for suffix in ["h0m0s", "m0s"] {
        if let Some(head) = orig.strip_suffix(suffix) {
            return format!("{head}{}", &suffix[..1]);
        }
    }
    orig
}

/// The release version a rendered config carries.
fn version_of<'a>(c: &'a Cluster, config: &str) -> Option<&'a str> {
    c.machine_config(config)
        .and_then(|mc| {
            mc.metadata
                .annotations
                .get(RELEASE_IMAGE_VERSION_ANNOTATION)
        })
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// The disruption of moving from `from` to `to`, when both are in the dump with their
/// Ignition config; the reason when the move cannot be applied in place.
fn movement(c: &Cluster, from: &str, to: &str) -> Option<(Move, Option<String>)> {
    let (a, b) = (c.machine_config(from)?, c.machine_config(to)?);
    a.ignition()?;
    b.ignition()?;
    let old = plan::input::rendered_input(a.name(), &a.spec).ok()?;
    let new = plan::input::rendered_input(b.name(), &b.spec).ok()?;
    let p = plan::compute(&old, &new, c.machine_configuration.as_ref());
    let report = plan::report::PlanReport::new(&p, &old, &new);
    let why = report.reason.clone();
    Some((
        Move {
            kind: crate::report::disruption(&report),
            summary: report.human(),
        },
        why,
    ))
}

/// What the node controller's status computation needs of a layered pool.
fn pool_layering(l: &Layering) -> PoolLayering {
    PoolLayering {
        layered: l.is_layered(),
        image: l.image().map(str::to_string),
        building: matches!(l, Layering::Waiting { building: true, .. }),
        build_degraded: None,
    }
}

fn layering_line(l: &Layering) -> Option<String> {
    match l {
        Layering::NotLayered => None,
        Layering::Ready { image, build, .. } => {
            Some(format!("image {image} (MachineOSBuild {build})"))
        }
        Layering::Waiting { reason, build, .. } => Some(match build {
            Some(b) => format!("{reason} (MachineOSBuild {b})"),
            None => reason.clone(),
        }),
    }
}

/// Kinds of findings that stop a whole pool's rollout (the pool is Degraded until they are
/// dealt with).
fn stops_pool(f: &Finding) -> bool {
    f.severity == Severity::Stuck
        && f.node.is_none()
        && matches!(
            f.kind,
            Kind::RolloutPaused | Kind::PolicyInvalid | Kind::BuildFailed | Kind::RenderDegraded
        )
}

/// Findings after which nodes waiting for their turn have no estimate: anything stuck (a
/// stuck node holds its `maxUnavailable` slot), and a layered pool's image not built yet.
fn blocks_estimates(f: &Finding) -> bool {
    f.severity == Severity::Stuck || (f.node.is_none() && f.kind == Kind::BuildRunning)
}

fn assess_pool_status(
    c: &Cluster,
    pool: &MachineConfigPool,
    all_pools: &[MachineConfigPool],
    opts: &Options,
    notes: &mut Vec<String>,
) -> (PoolStatus, Vec<Finding>) {
    let now = rfc3339(opts.now);
    let policy = c.rollout_policy(pool.name());
    let target = match policy {
        Some(p) => effective_target(pool, p),
        None => pool.spec.configuration.name.clone(),
    };
    let mut towards = pool.clone();
    towards.spec.configuration.name = target.clone();
    let (nodes, errors) = nodes_for_pool(pool, all_pools, &c.nodes);
    for (n, e) in errors {
        if !notes
            .iter()
            .any(|x| x.contains(&format!("node {}:", n.name())))
        {
            notes.push(format!("node {}: {e}; left out", n.name()));
        }
    }
    let l = layering(pool, &c.machine_os_configs, &c.machine_os_builds);
    let pl = pool_layering(&l);
    let t = assess::Target {
        pool: &towards,
        layering: &pl,
        release: c.release_target.as_deref(),
    };
    let mut rows: Vec<NodeStatus> = nodes
        .iter()
        .map(|n| {
            let mcn = c
                .machine_config_node(n.name())
                .and_then(|m| m.status.as_ref());
            let versions = assess::NodeVersions {
                current: version_of(c, n.current_config()),
                desired: version_of(c, n.desired_config()),
            };
            assess::assess_node(&t, n, mcn, versions, &now)
        })
        .collect();
    let counted = calculate_status_with(&towards, &nodes, &now, &pl);
    let overview = assess::overview(&rows);
    let from = pool
        .status
        .as_ref()
        .map(|s| s.configuration.name.clone())
        .filter(|f| !f.is_empty() && *f != target);
    let moved = from.as_deref().and_then(|f| movement(c, f, &target));
    let not_reconcilable = moved.as_ref().and_then(|(_, why)| why.clone());
    let facts = stuck::PoolFacts {
        cluster: c,
        pool,
        target: &target,
        nodes: &nodes,
        rows: &rows,
        overview: &overview,
        layering: &l,
        policy,
        not_reconcilable: not_reconcilable.as_deref(),
        now: opts.now,
    };
    let findings = stuck::findings(&facts);
    let stopped = findings.iter().any(stops_pool);
    let assessment = assess::assess_pool(&overview, &rows, stopped);
    // The nodes' messages: their own, else their first finding's few words.
    for r in &mut rows {
        if r.message.is_empty() {
            if let Some(f) = findings.iter().find(|f| f.node.as_deref() == Some(&r.name)) {
                r.message = assess::ellipsize(&f.summary, &r.name);
            }
        }
    }
    // Estimates for the nodes waiting for their turn, unless something stops them.
    let mut finish = None;
    let frozen = pool.spec.paused || findings.iter().any(blocks_estimates);
    if !frozen && overview.outdated > 0 && !target.is_empty() {
        if let Ok(e) = estimate::estimate(&towards, policy, &nodes, opts.now, opts.per_node) {
            for r in &mut rows {
                if r.phase == NodePhase::Pending && !r.degraded && !r.unavailable {
                    if let Some(t) = e.nodes.get(&r.name) {
                        r.estimate = estimate::plus(opts.now, *t);
                    }
                }
            }
            finish = e.finish.map(rfc3339);
        }
    }
    assess::sort_nodes(&mut rows);
    let status = PoolStatus {
        name: pool.name().to_string(),
        assessment,
        completion: assess::completion(&overview),
        status: assess::status_line(&overview),
        overview,
        counts: Counts {
            total: counted.machine_count,
            updated: counted.updated_machine_count,
            degraded: counted.degraded_machine_count,
            unavailable: counted.unavailable_machine_count,
        },
        from_version: from
            .as_deref()
            .and_then(|f| version_of(c, f))
            .map(str::to_string),
        to_version: version_of(c, &target).map(str::to_string),
        from,
        to: target,
        disruption: moved.map(|(m, _)| m),
        paused: pool.spec.paused,
        max_unavailable: match &pool.spec.max_unavailable {
            None | Some(serde_json::Value::Null) => "1".into(),
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
        },
        rollout: policy.map(|p| {
            let st = p.status_or_default();
            if st.message.is_empty() {
                format!("RolloutPolicy {}: {}", p.name(), st.phase.as_str())
            } else {
                format!(
                    "RolloutPolicy {}: {}: {}",
                    p.name(),
                    st.phase.as_str(),
                    st.message
                )
            }
        }),
        layering: layering_line(&l),
        finish,
        nodes: rows,
    };
    (status, findings)
}

/// Manifests that are no cluster dump: they hold no pool's status, no Node and no
/// MachineConfigNode. A tree of manifests (a GitOps repository) is one: it has no rollout to
/// show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a cluster dump: {what}")]
pub struct NotADump {
    /// What the manifests hold instead (`its 3 MachineConfigPools have no status and it holds
    /// no Node`).
    pub what: String,
}

impl NotADump {
    /// What a dump is, and what reads a tree of manifests.
    pub const HINT: &'static str = "`status` reads a cluster's objects as `oc get -o yaml` prints them (the pools with their status, the Nodes); a tree of manifests has no rollout to show: `mco-render report BASE HEAD` tells what a change to it does";
}

/// Whether `c` is a cluster dump: it holds a pool's status, a Node or a MachineConfigNode.
pub fn check_dump(c: &Cluster) -> Result<(), NotADump> {
    if c.pools.iter().any(|p| p.status.is_some())
        || !c.nodes.is_empty()
        || !c.machine_config_nodes.is_empty()
    {
        return Ok(());
    }
    let what = match c.pools.len() {
        0 => "it holds no MachineConfigPool and no Node".to_string(),
        1 => "its MachineConfigPool has no status and it holds no Node".to_string(),
        n => format!("its {n} MachineConfigPools have no status and it holds no Node"),
    };
    Err(NotADump { what })
}

/// Why `c` cannot be shown (for `pool`, when given): no pool at all, or none of that name.
pub fn check_pools(c: &Cluster, pool: Option<&str>) -> Result<(), String> {
    if c.pools.is_empty() {
        return Err("no MachineConfigPool found".into());
    }
    match pool {
        Some(p) if !c.pools.iter().any(|x| x.name() == p) => {
            Err(format!("no MachineConfigPool named {p:?}"))
        }
        _ => Ok(()),
    }
}

/// The status of every pool (or `opts.pool`) of `c` at `opts.now`.
pub fn status(c: &Cluster, opts: &Options) -> ClusterStatus {
    let mut notes: Vec<String> = c.unread.iter().chain(&c.skipped).cloned().collect();
    let mut pools = Vec::new();
    let mut findings = Vec::new();
    for pool in &c.pools {
        if opts.pool.as_deref().is_some_and(|p| p != pool.name()) {
            continue;
        }
        let (p, f) = assess_pool_status(c, pool, &c.pools, opts, &mut notes);
        pools.push(p);
        findings.extend(f);
    }
    // Stuck first, then waiting; within each, in pool order as found.
    findings.sort_by_key(|f| f.severity);
    let stuck = findings.iter().any(|f| f.severity == Severity::Stuck);
    ClusterStatus {
        now: rfc3339(opts.now),
        now_from: None,
        pools,
        findings,
        stuck,
        notes,
    }
}
