//! `mco-render report BASE HEAD`: what a change to a tree of manifests does to each pool.

use super::{load_cluster, to_json, write_stdout, Failure};
use mco_render::report::{change_report, node_counts, NodeCount, NodeSource, ReportOptions};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// How the report is printed.
#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub(crate) enum ReportFormat {
    /// A block per pool, for a terminal.
    Text,
    /// The report as a value, for programs.
    Json,
    /// A pull-request comment: a table of pools, a section per changed pool.
    Markdown,
    /// The report as a value, in YAML.
    Yaml,
}

/// Report what changes between two trees of manifests (base and head checkouts of a GitOps
/// repository, or two cluster dumps): per pool the rendered config, the files, units, kernel
/// and OS changes, the disruption and the rollout's nodes and time.
#[derive(clap::Args)]
pub(crate) struct ReportArgs {
    /// The tree before the change (a folder or file of manifests).
    base: PathBuf,
    /// The tree after the change.
    head: PathBuf,
    /// Only this pool.
    #[arg(long)]
    pool: Option<String>,
    /// Minutes one node takes to drain, update and reboot.
    #[arg(long, default_value_t = 5)]
    node_minutes: u64,
    /// When the rollout begins (RFC 3339), for RolloutPolicy windows; default now.
    #[arg(long)]
    now: Option<jiff::Timestamp>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    output: ReportFormat,
    /// Controller version the trees' generated configs carry (left at its default on a
    /// cluster dump as BASE, the one its rendered configs carry).
    #[arg(long, default_value = mco_render::CONTROLLER_VERSION)]
    controller_version: String,
    /// The MCO release to render both trees as (4.14 to 4.22); default: the release BASE's
    /// ControllerConfig or rendered configs name (a cluster dump), else the newest.
    #[arg(long)]
    release: Option<mco_render::release::Release>,
    /// A pool's node count, POOL=N (repeatable), for trees that hold no Nodes or pool status
    /// (a GitOps repository). Without one the count is unknown and the estimate is given per
    /// node and per 10 nodes.
    #[arg(long = "nodes", value_name = "POOL=N", value_parser = parse_nodes)]
    nodes: Vec<(String, usize)>,
    /// A cluster dump (`oc get -o yaml` output) whose Nodes and pool status give the pools'
    /// node counts; `--nodes` takes precedence.
    #[arg(long, value_name = "DUMP")]
    cluster_dir: Option<PathBuf>,
}

/// `POOL=N`.
fn parse_nodes(s: &str) -> Result<(String, usize), String> {
    let (pool, n) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected POOL=N"))?;
    if pool.is_empty() {
        return Err(format!("{s:?}: expected POOL=N, the pool is empty"));
    }
    let n = n
        .parse::<usize>()
        .map_err(|e| format!("{s:?}: the node count {n:?}: {e}"))?;
    Ok((pool.to_string(), n))
}

/// Exit 0 whatever the report says, 1 when a pool fails to render in HEAD or a change is not
/// reconcilable (after printing the report), 2 when a tree cannot be read.
pub(crate) fn cmd_report(a: &ReportArgs) -> Result<(), Failure> {
    // The base is the cluster (a dump says its release and controller); the head renders as
    // the cluster would render it.
    let (base, render) = load_cluster(
        std::slice::from_ref(&a.base),
        (&a.controller_version, a.release),
        None,
    )?;
    let (head, _) = load_cluster(
        std::slice::from_ref(&a.head),
        (&render.controller_version, Some(render.release)),
        None,
    )?;
    let in_either = |p: &str| {
        let known =
            |m: &mco_render::manifests::Manifests| m.pools.iter().any(|(_, x)| x.name() == p);
        if known(&base) || known(&head) {
            Ok(())
        } else {
            Err(Failure::input(format!(
                "no MachineConfigPool named {p:?} in either tree"
            )))
        }
    };
    if let Some(p) = &a.pool {
        in_either(p)?;
    }
    let mut nodes: BTreeMap<String, NodeCount> = match &a.cluster_dir {
        Some(dir) => {
            let dump = mco_render::load::read_manifests(std::slice::from_ref(dir))
                .map_err(|e| Failure::input(e.to_string()))?;
            super::reading::check(&dump)?;
            node_counts(&dump)
        }
        None => BTreeMap::new(),
    };
    for (pool, count) in &a.nodes {
        in_either(pool)?;
        nodes.insert(
            pool.clone(),
            NodeCount::Known {
                count: *count,
                source: NodeSource::Given,
            },
        );
    }
    let opts = ReportOptions {
        render,
        pool: a.pool.clone(),
        per_node: std::time::Duration::from_secs(a.node_minutes.saturating_mul(60)),
        // The binary may read the clock; the library never does.
        now: a.now.unwrap_or_else(jiff::Timestamp::now),
        nodes,
    };
    let report = change_report(&base, &head, &opts);
    match a.output {
        ReportFormat::Text => out!("{}", report.text()),
        ReportFormat::Json => outln!("{}", to_json(&report)?),
        ReportFormat::Markdown => out!("{}", report.markdown()),
        ReportFormat::Yaml => out!("{}", super::to_yaml(&report)?),
    }
    if report.has_errors() {
        return Err(Failure {
            code: 1,
            lines: vec![
                "error: a pool fails to render in HEAD or cannot reconcile the change".into(),
            ],
        });
    }
    Ok(())
}
