//! The change report between two trees of manifests (a base and a head checkout of a GitOps
//! repository, or two cluster dumps): per pool, whether its rendered config changes, what
//! changes, what its nodes must do ([`crate::plan`]), how many nodes and how long
//! ([`crate::controllers::rollout_policy::schedule`] under a RolloutPolicy, else
//! [`crate::admission::estimate`]). `mco-render report` prints it as text, JSON or Markdown.
//!
//! Pure: the trees come in loaded (and expanded, when their generated MachineConfigs count).

use crate::api::{MachineConfigPool, Node};
use crate::controllers::node_pool::nodes_for_pool;
use crate::controllers::rollout_policy::schedule::{schedule, PoolNodes, ScheduleInput};
use crate::manifests::Manifests;
use crate::plan::policy::{ActionType, Trigger};
use crate::plan::reconcile::RenderedInput;
use crate::plan::report::{PlanReport, ReportAction};
use crate::plan::{self, MachineConfiguration};
use crate::render::{render_pool, RenderOptions, Rendered};
use serde::ser::SerializeMap as _;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// What the report is computed with.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// How pools render (controller version, name scheme).
    pub render: RenderOptions,
    /// Only this pool.
    pub pool: Option<String>,
    /// How long one node takes to drain, update and reboot.
    pub per_node: Duration,
    /// When the rollout would begin (maintenance windows of RolloutPolicies are judged from it).
    pub now: jiff::Timestamp,
    /// Node counts by pool that take precedence over the head tree's (given by the caller, or
    /// counted in a cluster dump with [`node_counts`]).
    pub nodes: BTreeMap<String, NodeCount>,
}

/// How many nodes the schedule of a pool whose node count is unknown is shown for.
pub const SAMPLE_NODES: usize = 10;

/// The report: one entry per pool of either tree, head's pools first in their order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangeReport {
    /// The pools.
    pub pools: Vec<PoolChange>,
}

/// How a pool's rendered config moves from base to head.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum PoolStatus {
    /// Same rendered config.
    Unchanged,
    /// Another rendered config.
    Changed,
    /// The pool is new in head.
    Added,
    /// The pool is gone from head.
    Removed,
    /// The pool fails to render in head (see [`PoolChange::errors`]).
    FailsToRender,
}

impl PoolStatus {
    /// A word for tables.
    pub fn as_str(self) -> &'static str {
        match self {
            PoolStatus::Unchanged => "unchanged",
            PoolStatus::Changed => "changed",
            PoolStatus::Added => "added",
            PoolStatus::Removed => "removed",
            PoolStatus::FailsToRender => "fails to render",
        }
    }
}

/// The most a node must do, least disruptive first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Disruption {
    /// Files are written, nothing else.
    None,
    /// A service reloads (or `systemctl daemon-reload`).
    Reload,
    /// A service restarts.
    Restart,
    /// The node is drained, not rebooted.
    Drain,
    /// The node is drained and rebooted.
    Reboot,
    /// The node cannot move to the new config: the pool would degrade.
    NotReconcilable,
}

impl Disruption {
    /// A word for tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Disruption::None => "none",
            Disruption::Reload => "reload",
            Disruption::Restart => "restart",
            Disruption::Drain => "drain",
            Disruption::Reboot => "reboot",
            Disruption::NotReconcilable => "not reconcilable",
        }
    }
}

/// A value before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change<T> {
    /// In base.
    pub old: T,
    /// In head.
    pub new: T,
}

/// What differs between two rendered configs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigChanges {
    /// File paths added, removed or changed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Units only in head.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub units_added: Vec<String>,
    /// Units in both that differ.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub units_updated: Vec<String>,
    /// Units only in base.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub units_removed: Vec<String>,
    /// `spec.kernelArguments`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_arguments: Option<Change<Vec<String>>>,
    /// `spec.extensions`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Change<Vec<String>>>,
    /// `spec.kernelType`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_type: Option<Change<String>>,
    /// `spec.osImageURL`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_image: Option<Change<String>>,
    /// `spec.fips`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fips: Option<Change<bool>>,
    /// Whether SSH keys or passwords change.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ssh_keys: bool,
}

impl ConfigChanges {
    fn new(old: &RenderedInput, new: &RenderedInput, d: &plan::diff::MachineConfigDiff) -> Self {
        let change = |c: bool, o: &Vec<String>, n: &Vec<String>| {
            c.then(|| Change {
                old: o.clone(),
                new: n.clone(),
            })
        };
        ConfigChanges {
            files: d.changed_files.clone(),
            units_added: d.units_added.clone(),
            units_updated: d.units_updated.clone(),
            units_removed: d.units_removed.clone(),
            kernel_arguments: change(d.kargs, &old.kernel_arguments, &new.kernel_arguments),
            extensions: change(d.extensions, &old.extensions, &new.extensions),
            kernel_type: d.kernel_type.then(|| Change {
                old: old.kernel_type.clone(),
                new: new.kernel_type.clone(),
            }),
            os_image: d.os_update.then(|| Change {
                old: old.os_image_url.clone(),
                new: new.os_image_url.clone(),
            }),
            fips: d.fips.then_some(Change {
                old: old.fips,
                new: new.fips,
            }),
            ssh_keys: d.passwd,
        }
    }

    /// One line per kind of change (`files: /etc/a, /etc/b`).
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        let list = |v: &[String]| v.join(", ");
        let seq = |v: &[String]| {
            if v.is_empty() {
                "(none)".to_string()
            } else {
                v.join(" ")
            }
        };
        if !self.files.is_empty() {
            out.push(format!("files: {}", list(&self.files)));
        }
        for (what, v) in [
            ("units added", &self.units_added),
            ("units updated", &self.units_updated),
            ("units removed", &self.units_removed),
        ] {
            if !v.is_empty() {
                out.push(format!("{what}: {}", list(v)));
            }
        }
        if let Some(c) = &self.kernel_arguments {
            out.push(format!(
                "kernel arguments: {} -> {}",
                seq(&c.old),
                seq(&c.new)
            ));
        }
        if let Some(c) = &self.extensions {
            out.push(format!("extensions: {} -> {}", seq(&c.old), seq(&c.new)));
        }
        let value = |v: &str| {
            if v.is_empty() {
                "(none)".to_string()
            } else {
                v.to_string()
            }
        };
        if let Some(c) = &self.kernel_type {
            out.push(format!(
                "kernel type: {} -> {}",
                value(&c.old),
                value(&c.new)
            ));
        }
        if let Some(c) = &self.os_image {
            out.push(format!("OS image: {} -> {}", value(&c.old), value(&c.new)));
        }
        if let Some(c) = &self.fips {
            out.push(format!("FIPS: {} -> {}", c.old, c.new));
        }
        if self.ssh_keys {
            out.push("SSH keys or passwords change".to_string());
        }
        out
    }
}

/// Where a pool's node count comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum NodeSource {
    /// The head tree's Nodes of the pool.
    Nodes,
    /// The pool's `status.machineCount`.
    MachineCount,
    /// Given by the caller (`--nodes`).
    Given,
}

impl NodeSource {
    /// The word JSON carries.
    fn as_str(self) -> &'static str {
        match self {
            NodeSource::Nodes => "nodes",
            NodeSource::MachineCount => "machineCount",
            NodeSource::Given => "given",
        }
    }
}

/// How many nodes a pool has, as far as the trees and the caller tell. A tree of manifests
/// alone (a GitOps repository: pools and MachineConfigs, no Nodes, no pool status) does not
/// tell: the count is then [`NodeCount::Unknown`], never 0.
///
/// In JSON it is two fields of the pool's entry: `nodes` (a number, or null when unknown) and
/// `nodeSource` (absent when unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeCount {
    /// Counted.
    Known {
        /// How many.
        count: usize,
        /// Where from.
        source: NodeSource,
    },
    /// No Nodes of the pool, no pool status, no count given.
    Unknown,
}

impl NodeCount {
    /// The count, when known.
    pub fn known(self) -> Option<usize> {
        match self {
            NodeCount::Known { count, .. } => Some(count),
            NodeCount::Unknown => None,
        }
    }
}

impl Serialize for NodeCount {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        match self {
            NodeCount::Known { count, source } => {
                m.serialize_entry("nodes", count)?;
                m.serialize_entry("nodeSource", source.as_str())?;
            }
            NodeCount::Unknown => m.serialize_entry("nodes", &None::<usize>)?,
        }
        m.end()
    }
}

/// One pool's entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolChange {
    /// The pool.
    pub pool: String,
    /// How its rendered config moves.
    pub status: PoolStatus,
    /// The rendered config in base (none for an added pool, or one that fails there).
    pub from: Option<String>,
    /// The rendered config in head (none for a removed pool, or one that fails there).
    pub to: Option<String>,
    /// What changes (changed pools).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<ConfigChanges>,
    /// The most its nodes must do (changed pools).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disruption: Option<Disruption>,
    /// Why the change is not reconcilable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The node actions in order, each with the paths and fields that trigger it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<ReportAction>,
    /// The plan in one line, as `mco-render diff` prints it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// How many nodes the change reaches, and where that count comes from.
    #[serde(flatten)]
    pub nodes: NodeCount,
    /// Whether the pool is paused (nothing rolls out until it is unpaused).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// The rollout's time estimate (changed pools with nodes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate: Option<String>,
    /// Render errors in head (or, for a pool failing in base only, a note).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// The tree's MachineConfiguration `cluster` (user node disruption policies), if any.
pub fn policies(m: &Manifests) -> Option<MachineConfiguration> {
    m.others
        .iter()
        .map(|(_, v)| v)
        .find(|v| {
            v.get("kind").and_then(serde_json::Value::as_str) == Some("MachineConfiguration")
                && v.pointer("/metadata/name")
                    .and_then(serde_json::Value::as_str)
                    == Some("cluster")
        })
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}

fn controller_spec(m: &Manifests) -> crate::api::ControllerConfigSpec {
    m.controller_config
        .as_ref()
        .map(|(_, c)| c.spec.clone())
        .unwrap_or_default()
}

fn render_in(
    m: &Manifests,
    pool: &MachineConfigPool,
    opts: &RenderOptions,
) -> Result<Rendered, Vec<String>> {
    render_pool(pool, &m.configs(), &controller_spec(m), opts).map_err(|f| {
        f.errors
            .iter()
            .flat_map(|e| {
                let file = e
                    .machine_config
                    .as_deref()
                    .and_then(|mc| m.file_of(mc))
                    .map(|f| format!("{f}: "))
                    .unwrap_or_default();
                e.describe()
                    .lines()
                    .map(|l| format!("{file}{l}"))
                    .collect::<Vec<_>>()
            })
            .collect()
    })
}

fn input(r: &Rendered) -> Result<RenderedInput, String> {
    let mc = &r.machine_config;
    plan::input::rendered_input(mc.name(), &mc.spec).map_err(|e| format!("{}: {e}", mc.name()))
}

/// The most disruptive action of a plan ([`Disruption::NotReconcilable`] when it cannot be
/// applied in place).
pub fn disruption(report: &PlanReport) -> Disruption {
    if !report.reconcilable {
        return Disruption::NotReconcilable;
    }
    if report.reboot {
        return Disruption::Reboot;
    }
    if report.drain {
        return Disruption::Drain;
    }
    report
        .actions
        .iter()
        .map(|a| match a.kind {
            ActionType::Restart => Disruption::Restart,
            ActionType::Reload | ActionType::DaemonReload | ActionType::Special => {
                Disruption::Reload
            }
            ActionType::Reboot => Disruption::Reboot,
            ActionType::Drain => Disruption::Drain,
            ActionType::None => Disruption::None,
        })
        .max()
        .unwrap_or(Disruption::None)
}

/// A pool's node count in a tree: its Nodes when the tree holds some of them, else its
/// status's `machineCount`, else unknown.
fn count_in(pool: &MachineConfigPool, mine: &[&Node]) -> NodeCount {
    if !mine.is_empty() {
        return NodeCount::Known {
            count: mine.len(),
            source: NodeSource::Nodes,
        };
    }
    match &pool.status {
        Some(s) => NodeCount::Known {
            count: usize::try_from(s.machine_count).unwrap_or(0),
            source: NodeSource::MachineCount,
        },
        None => NodeCount::Unknown,
    }
}

/// The node count of every pool of a tree (a cluster dump) whose count the tree tells, for
/// [`ReportOptions::nodes`].
pub fn node_counts(m: &Manifests) -> BTreeMap<String, NodeCount> {
    let pools: Vec<MachineConfigPool> = m.pools.iter().map(|(_, p)| p.clone()).collect();
    let nodes: Vec<Node> = m.nodes.iter().map(|(_, n)| n.clone()).collect();
    pools
        .iter()
        .filter_map(|p| {
            let (mine, _) = nodes_for_pool(p, &pools, &nodes);
            let c = count_in(p, &mine);
            (c != NodeCount::Unknown).then(|| (p.name().to_string(), c))
        })
        .collect()
}

/// Computes the report from `base` to `head`. Pools named by `opts.pool` only; one that is in
/// neither tree gives an empty report.
pub fn change_report(base: &Manifests, head: &Manifests, opts: &ReportOptions) -> ChangeReport {
    let wanted = |p: &MachineConfigPool| opts.pool.as_deref().is_none_or(|w| p.name() == w);
    let head_pools: Vec<MachineConfigPool> = head.pools.iter().map(|(_, p)| p.clone()).collect();
    let head_nodes: Vec<Node> = head.nodes.iter().map(|(_, n)| n.clone()).collect();
    let head_policies = policies(head);
    let mut out = Vec::new();
    for pool in head_pools.iter().filter(|p| wanted(p)) {
        let old_pool = base
            .pools
            .iter()
            .map(|(_, p)| p)
            .find(|p| p.name() == pool.name());
        let old = old_pool.map(|p| render_in(base, p, &opts.render));
        let new = render_in(head, pool, &opts.render);
        let (mine, _) = nodes_for_pool(pool, &head_pools, &head_nodes);
        let nodes = opts
            .nodes
            .get(pool.name())
            .copied()
            .unwrap_or_else(|| count_in(pool, &mine));
        let mut entry = PoolChange {
            pool: pool.name().to_string(),
            status: PoolStatus::Unchanged,
            from: None,
            to: None,
            changes: None,
            disruption: None,
            reason: None,
            actions: Vec::new(),
            summary: None,
            nodes,
            paused: pool.spec.paused,
            estimate: None,
            errors: Vec::new(),
        };
        let new = match new {
            Ok(r) => r,
            Err(errors) => {
                entry.status = PoolStatus::FailsToRender;
                entry.from = old
                    .and_then(Result::ok)
                    .map(|r| r.machine_config.name().to_string());
                entry.errors = errors;
                out.push(entry);
                continue;
            }
        };
        entry.to = Some(new.machine_config.name().to_string());
        let old = match old {
            None => {
                entry.status = PoolStatus::Added;
                out.push(entry);
                continue;
            }
            Some(Err(errors)) => {
                entry.status = PoolStatus::Changed;
                entry.errors = errors
                    .into_iter()
                    .map(|e| format!("in base: {e}"))
                    .collect();
                out.push(entry);
                continue;
            }
            Some(Ok(r)) => r,
        };
        entry.from = Some(old.machine_config.name().to_string());
        if entry.from == entry.to {
            out.push(entry);
            continue;
        }
        entry.status = PoolStatus::Changed;
        match (input(&old), input(&new)) {
            (Ok(oi), Ok(ni)) => {
                let plan = plan::compute(&oi, &ni, head_policies.as_ref());
                let report = PlanReport::new(&plan, &oi, &ni);
                entry.changes = Some(ConfigChanges::new(&oi, &ni, &report.diff));
                entry.disruption = Some(disruption(&report));
                entry.summary = Some(report.human());
                entry.reason = report.reason.clone();
                entry.actions = report.actions;
            }
            (o, n) => entry.errors.extend(o.err().into_iter().chain(n.err())),
        }
        // The schedule names the head tree's Nodes when they are what was counted.
        let named = nodes
            == NodeCount::Known {
                count: mine.len(),
                source: NodeSource::Nodes,
            };
        let pool_nodes = match nodes {
            NodeCount::Known { .. } if named => Some(PoolNodes::Known(&mine)),
            NodeCount::Known { count, .. } => Some(PoolNodes::Count(count)),
            NodeCount::Unknown => None,
        };
        entry.estimate = estimate(head, pool, pool_nodes, entry.disruption, &new, opts);
        out.push(entry);
    }
    for (_, pool) in &base.pools {
        if wanted(pool) && !head_pools.iter().any(|p| p.name() == pool.name()) {
            let from = render_in(base, pool, &opts.render)
                .ok()
                .map(|r| r.machine_config.name().to_string());
            out.push(PoolChange {
                pool: pool.name().to_string(),
                status: PoolStatus::Removed,
                from,
                to: None,
                changes: None,
                disruption: None,
                reason: None,
                actions: Vec::new(),
                summary: None,
                nodes: NodeCount::Unknown,
                paused: pool.spec.paused,
                estimate: None,
                errors: Vec::new(),
            });
        }
    }
    ChangeReport { pools: out }
}

/// The schedule's summary under the pool's RolloutPolicy, else upstream's plain estimate.
/// With the node count unknown (`nodes` none): what each node goes through, and the schedule
/// of [`SAMPLE_NODES`] nodes.
fn estimate(
    head: &Manifests,
    pool: &MachineConfigPool,
    nodes: Option<PoolNodes<'_>>,
    disruption: Option<Disruption>,
    new: &Rendered,
    opts: &ReportOptions,
) -> Option<String> {
    match nodes {
        Some(PoolNodes::Count(0)) => None,
        Some(n) => rollout(head, pool, n, new, opts),
        None => {
            let per_node = per_node_text(disruption, opts.per_node);
            let sample = rollout(head, pool, PoolNodes::Count(SAMPLE_NODES), new, opts)
                .map(|s| format!("; per {SAMPLE_NODES} nodes: {s}"))
                .unwrap_or_default();
            Some(format!("node count unknown; per node: {per_node}{sample}"))
        }
    }
}

/// What one node goes through, and how long it takes.
fn per_node_text(disruption: Option<Disruption>, per_node: Duration) -> String {
    let what = match disruption {
        Some(Disruption::NotReconcilable) => return "cannot update in place".to_string(),
        Some(Disruption::Reboot) => "drain and reboot",
        Some(Disruption::Drain) => "drain, no reboot",
        Some(Disruption::Restart) => "a service restarts, no drain or reboot",
        Some(Disruption::Reload) => "a service reloads, no drain or reboot",
        Some(Disruption::None) | None => "files written, no drain or reboot",
    };
    let minutes = (per_node.as_secs_f64() / 60.0).round().max(1.0) as u64;
    format!("{what}, about {minutes} min")
}

/// The rollout of `nodes` under the pool's RolloutPolicy, else upstream's plain estimate.
fn rollout(
    head: &Manifests,
    pool: &MachineConfigPool,
    nodes: PoolNodes<'_>,
    new: &Rendered,
    opts: &ReportOptions,
) -> Option<String> {
    let policy = head
        .rollout_policies
        .iter()
        .map(|(_, p)| p)
        .find(|p| p.name() == pool.name());
    match policy {
        Some(policy) => Some(
            match schedule(&ScheduleInput {
                pool,
                policy: Some(policy),
                nodes,
                target: new.machine_config.name(),
                now: opts.now,
                per_node: opts.per_node,
                windows: true,
            }) {
                Ok(s) => format!("{s} (RolloutPolicy {})", policy.name()),
                Err(e) => format!("no schedule: {e}"),
            },
        ),
        None => {
            let count = match nodes {
                PoolNodes::Known(n) => n.len(),
                PoolNodes::Count(n) => n,
            };
            crate::admission::estimate(pool, u64::try_from(count).ok()?, opts.per_node)
        }
    }
}

fn trigger(t: &Trigger) -> String {
    match t {
        Trigger::File(p) => p.clone(),
        Trigger::Unit(u) => format!("unit {u}"),
        Trigger::SshKeys => "SSH keys".to_string(),
        Trigger::Spec(f) => f.clone(),
        Trigger::NoChange => "no change".to_string(),
    }
}

fn action(a: &ReportAction) -> String {
    let what = match (a.kind, &a.target) {
        (ActionType::Special, _) => "reload crio.service (registries.conf)".to_string(),
        (ActionType::DaemonReload, _) => "daemon-reload".to_string(),
        (k, Some(t)) => format!("{} {t}", k.as_str().to_lowercase()),
        (k, None) => k.as_str().to_lowercase(),
    };
    let by: Vec<String> = a.triggers.iter().map(trigger).collect();
    if by.is_empty() {
        what
    } else {
        format!("{what} (by {})", by.join(", "))
    }
}

fn short(name: Option<&str>) -> String {
    name.unwrap_or("-").to_string()
}

impl PoolChange {
    fn nodes_text(&self) -> String {
        let (n, source) = match self.nodes {
            NodeCount::Known { count, source } => (count, source),
            NodeCount::Unknown => return "unknown (no Nodes or pool status)".to_string(),
        };
        let s = if n == 1 { "" } else { "s" };
        match source {
            NodeSource::Nodes => format!("{n} node{s}"),
            NodeSource::MachineCount => format!("{n} node{s} (machineCount)"),
            NodeSource::Given => format!("{n} node{s} (given)"),
        }
    }

    /// The pool's lines of the text report.
    fn text(&self, out: &mut String) {
        let from = short(self.from.as_deref());
        let to = short(self.to.as_deref());
        let _ = match self.status {
            PoolStatus::Unchanged => writeln!(out, "pool {}: unchanged ({to})", self.pool),
            PoolStatus::Added => writeln!(out, "pool {}: added ({to})", self.pool),
            PoolStatus::Removed => writeln!(out, "pool {}: removed ({from})", self.pool),
            PoolStatus::FailsToRender => {
                writeln!(out, "pool {}: fails to render (was {from})", self.pool)
            }
            PoolStatus::Changed => writeln!(out, "pool {}: {from} -> {to}", self.pool),
        };
        if let Some(c) = &self.changes {
            for l in c.lines() {
                let _ = writeln!(out, "  {l}");
            }
        }
        if let Some(d) = self.disruption {
            let _ = writeln!(out, "  disruption: {}", d.as_str());
            if let Some(r) = &self.reason {
                let _ = writeln!(out, "    {r}");
            }
            for a in &self.actions {
                let _ = writeln!(out, "    {}", action(a));
            }
        }
        if self.status == PoolStatus::Changed {
            let _ = writeln!(out, "  nodes: {}", self.nodes_text());
            if let Some(e) = &self.estimate {
                let _ = writeln!(out, "  estimate: {e}");
            }
            if self.paused {
                let _ = writeln!(
                    out,
                    "  the pool is paused: nothing rolls out until it is unpaused"
                );
            }
        }
        for e in &self.errors {
            let _ = writeln!(out, "  error: {e}");
        }
    }
}

/// Escapes a table cell or inline text for Markdown.
fn md(s: &str) -> String {
    s.replace('|', "\\|")
}

impl ChangeReport {
    /// Whether any pool's rendered config changes (or a pool is added, removed or fails).
    pub fn has_changes(&self) -> bool {
        self.pools.iter().any(|p| p.status != PoolStatus::Unchanged)
    }

    /// Whether a pool fails to render in head, or a change is not reconcilable.
    pub fn has_errors(&self) -> bool {
        self.pools.iter().any(|p| {
            p.status == PoolStatus::FailsToRender
                || p.disruption == Some(Disruption::NotReconcilable)
        })
    }

    /// The report for a terminal: a block per pool.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.pools {
            p.text(&mut out);
        }
        if self.pools.is_empty() {
            out.push_str("no pools\n");
        }
        out
    }

    /// The report as a pull-request comment: a table of the pools, then a section per
    /// changed pool.
    pub fn markdown(&self) -> String {
        let mut out = String::from("## MachineConfig changes\n\n");
        let changed = self
            .pools
            .iter()
            .filter(|p| p.status != PoolStatus::Unchanged)
            .count();
        let _ = writeln!(out, "{changed} of {} pools change.\n", self.pools.len());
        out.push_str("| pool | status | rendered config | disruption | nodes | estimate |\n");
        out.push_str("|---|---|---|---|---|---|\n");
        for p in &self.pools {
            let config = match (p.status, &p.from, &p.to) {
                (PoolStatus::Changed, Some(f), Some(t)) => format!("`{f}` → `{t}`"),
                (_, _, Some(t)) => format!("`{t}`"),
                (_, Some(f), None) => format!("`{f}`"),
                _ => "-".to_string(),
            };
            let nodes = if p.status == PoolStatus::Removed {
                "-".to_string()
            } else {
                p.nodes_text()
            };
            let _ = writeln!(
                out,
                "| {} | {} | {config} | {} | {nodes} | {} |",
                md(&p.pool),
                p.status.as_str(),
                p.disruption.map_or("-", Disruption::as_str),
                md(p.estimate.as_deref().unwrap_or("-")),
            );
        }
        for p in self
            .pools
            .iter()
            .filter(|p| !matches!(p.status, PoolStatus::Unchanged | PoolStatus::Removed))
        {
            let _ = writeln!(out, "\n### Pool `{}`: {}\n", md(&p.pool), p.status.as_str());
            if let (Some(f), Some(t)) = (&p.from, &p.to) {
                let _ = writeln!(out, "`{f}` → `{t}`\n");
            }
            if let Some(c) = &p.changes {
                out.push_str("**Changes**\n\n");
                for l in c.lines() {
                    let _ = writeln!(out, "- {}", md(&l));
                }
                out.push('\n');
            }
            if let Some(d) = p.disruption {
                let _ = writeln!(out, "**Disruption: {}**\n", d.as_str());
                if let Some(r) = &p.reason {
                    let _ = writeln!(out, "> {}\n", md(r));
                }
                for a in &p.actions {
                    let _ = writeln!(out, "- {}", md(&action(a)));
                }
                if !p.actions.is_empty() {
                    out.push('\n');
                }
            }
            if p.status == PoolStatus::Changed {
                let _ = writeln!(out, "**Nodes:** {}", p.nodes_text());
                if let Some(e) = &p.estimate {
                    let _ = writeln!(out, "\n**Estimate:** {}", md(e));
                }
                if p.paused {
                    out.push_str("\nThe pool is paused: nothing rolls out until it is unpaused.\n");
                }
            }
            if !p.errors.is_empty() {
                out.push_str("**Errors**\n\n```text\n");
                for e in &p.errors {
                    let _ = writeln!(out, "{e}");
                }
                out.push_str("```\n");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POOL: &str = "kind: MachineConfigPool\nmetadata:\n  name: NAME\nspec:\n  machineConfigSelector:\n    matchLabels:\n      machineconfiguration.openshift.io/role: worker\nstatus:\n  machineCount: 4\n";
    const MC: &str = "kind: MachineConfig\nmetadata:\n  name: 10-worker\n  labels:\n    machineconfiguration.openshift.io/role: worker\nspec:\n  kernelArguments: [KARGS]\n";

    fn tree(pools: &[&str], kargs: &str) -> Manifests {
        let mut m = Manifests::default();
        for p in pools {
            assert!(m.add_file("pools.yaml", &POOL.replace("NAME", p)).is_ok());
        }
        assert!(m.add_file("mc.yaml", &MC.replace("KARGS", kargs)).is_ok());
        m
    }

    fn opts() -> ReportOptions {
        ReportOptions {
            render: RenderOptions::default(),
            pool: None,
            per_node: Duration::from_secs(600),
            now: jiff::Timestamp::UNIX_EPOCH,
            nodes: BTreeMap::new(),
        }
    }

    #[test]
    fn changed_added_removed_and_unchanged_pools() {
        let base = tree(&["worker", "old"], "nosmt");
        let head = tree(&["worker", "new"], "nosmt, quiet");
        let r = change_report(&base, &head, &opts());
        let status: Vec<(&str, PoolStatus)> = r
            .pools
            .iter()
            .map(|p| (p.pool.as_str(), p.status))
            .collect();
        assert_eq!(
            status,
            [
                ("worker", PoolStatus::Changed),
                ("new", PoolStatus::Added),
                ("old", PoolStatus::Removed)
            ]
        );
        let worker = &r.pools[0];
        assert_eq!(worker.disruption, Some(Disruption::Reboot));
        assert_eq!(
            worker
                .changes
                .as_ref()
                .and_then(|c| c.kernel_arguments.clone()),
            Some(Change {
                old: vec!["nosmt".to_string()],
                new: vec!["nosmt".to_string(), "quiet".to_string()],
            })
        );
        assert_eq!(
            worker.nodes,
            NodeCount::Known {
                count: 4,
                source: NodeSource::MachineCount
            }
        );
        assert_eq!(
            worker.estimate.as_deref(),
            Some("about 40 min at maxUnavailable 1")
        );
        assert!(r.has_changes() && !r.has_errors());

        let same = change_report(&base, &base, &opts());
        assert!(!same.has_changes());
        let only = change_report(
            &base,
            &head,
            &ReportOptions {
                pool: Some("old".into()),
                ..opts()
            },
        );
        assert_eq!(only.pools.len(), 1);
    }

    /// A GitOps tree: pools without status, no Nodes.
    fn manifests_only(kargs: &str) -> Manifests {
        let mut m = Manifests::default();
        let pool = POOL.replace("NAME", "worker");
        let Some((pool, _)) = pool.split_once("status:") else {
            panic!("the pool has a status");
        };
        assert!(m.add_file("pools.yaml", pool).is_ok());
        assert!(m.add_file("mc.yaml", &MC.replace("KARGS", kargs)).is_ok());
        m
    }

    #[test]
    fn unknown_node_count_estimates_per_node_and_per_sample() {
        let base = manifests_only("nosmt");
        let head = manifests_only("nosmt, quiet");
        let r = change_report(&base, &head, &opts());
        let worker = &r.pools[0];
        assert_eq!(worker.status, PoolStatus::Changed);
        assert_eq!(worker.nodes, NodeCount::Unknown);
        assert_eq!(worker.nodes.known(), None);
        assert_eq!(
            worker.estimate.as_deref(),
            Some(
                "node count unknown; per node: drain and reboot, about 10 min; \
                 per 10 nodes: about 2h at maxUnavailable 1"
            )
        );
        let text = r.text();
        assert!(text.contains("nodes: unknown"), "{text}");
        assert!(!text.contains(" 0 nodes"), "{text}");
        assert!(!text.contains("every node is on"), "{text}");
        let json = serde_json::to_value(&r).unwrap_or_default();
        assert_eq!(
            json.pointer("/pools/0/nodes"),
            Some(&serde_json::Value::Null)
        );
        assert_eq!(json.pointer("/pools/0/nodeSource"), None);

        // A count given by the caller replaces the unknown one.
        let given = NodeCount::Known {
            count: 30,
            source: NodeSource::Given,
        };
        let r = change_report(
            &base,
            &head,
            &ReportOptions {
                nodes: BTreeMap::from([("worker".to_string(), given)]),
                ..opts()
            },
        );
        let worker = &r.pools[0];
        assert_eq!(worker.nodes, given);
        assert_eq!(
            worker.estimate.as_deref(),
            Some("about 5h at maxUnavailable 1")
        );
        assert!(r.text().contains("nodes: 30 nodes (given)"));
        let json = serde_json::to_value(&r).unwrap_or_default();
        assert_eq!(
            json.pointer("/pools/0/nodes"),
            Some(&serde_json::Value::from(30))
        );
        assert_eq!(
            json.pointer("/pools/0/nodeSource"),
            Some(&serde_json::Value::from("given"))
        );
    }

    #[test]
    fn node_counts_of_a_dump_skip_pools_it_does_not_count() {
        assert_eq!(
            node_counts(&tree(&["worker"], "nosmt")).get("worker"),
            Some(&NodeCount::Known {
                count: 4,
                source: NodeSource::MachineCount
            })
        );
        assert!(node_counts(&manifests_only("nosmt")).is_empty());
    }

    #[test]
    fn disruption_orders_by_what_the_node_must_do() {
        assert!(Disruption::None < Disruption::Reload);
        assert!(Disruption::Reload < Disruption::Restart);
        assert!(Disruption::Restart < Disruption::Drain);
        assert!(Disruption::Drain < Disruption::Reboot);
    }
}
