//! `mco-render status --cluster-dir DUMP`: where each pool's rollout stands and why a pool is
//! stuck, from a folder of `oc get ... -o yaml` (or `-o json`) outputs.

use super::{write_stdout, Failure};
use mco_render::manifests::instant::instant;
use mco_render::status::{check_dump, check_pools, render, status, Cluster, NotADump, Options};
use std::path::PathBuf;

/// How the view is printed.
#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub(crate) enum StatusFormat {
    /// Tables and findings, for a terminal.
    Text,
    /// The same view as a value, for programs.
    Json,
    /// The JSON view in YAML.
    Yaml,
}

/// Show where each pool's rollout stands and why a pool is stuck, with what to do.
///
/// Per pool its assessment, completion, the config moving from and to and that move's
/// disruption; per node its assessment, phase, version, estimate and message; then what
/// stops the rollout. The dump is looked at from the instant it was taken: the newest time it
/// holds (conditions, heartbeats, Events...), unless --now says another. Exit 1 while something
/// is stuck, 0 when all is well or merely progressing or waiting, 2 when the dump cannot be
/// read, 3 when the folder is not a cluster dump (no pool status, no Node: a tree of
/// manifests).
#[derive(clap::Args)]
pub(crate) struct Args {
    /// A folder (or file) of the cluster's objects as `oc get -o yaml|json` prints them:
    /// pools, MachineConfigs, Nodes, and as available MachineConfigNodes, Pods,
    /// PodDisruptionBudgets, Events, RolloutPolicies, MachineOSConfigs and MachineOSBuilds,
    /// Jobs, PinnedImageSets, the ControllerConfig.
    #[arg(long)]
    cluster_dir: PathBuf,
    /// Only this pool.
    #[arg(long)]
    pool: Option<String>,
    /// The instant to look at the dump from (RFC 3339); default: the instant the dump was
    /// taken, the newest time it holds (the clock when it holds none).
    #[arg(long)]
    now: Option<jiff::Timestamp>,
    /// Minutes one node takes to drain, update and reboot, for the estimates.
    #[arg(long, default_value_t = 15)]
    node_minutes: u64,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    output: StatusFormat,
    /// What to show beyond the short view: none, nodes (every node; otherwise a pool lists
    /// ten, then only nodes in trouble) or all.
    #[arg(long, default_value = "none")]
    details: render::Details,
}

/// The exit code when the folder is not a cluster dump.
const NOT_A_DUMP: u8 = 3;

pub(crate) fn run(a: &Args) -> Result<(), Failure> {
    let m = mco_render::load::read_manifests(std::slice::from_ref(&a.cluster_dir))
        .map_err(|e| Failure::input(e.to_string()))?;
    super::reading::check(&m)?;
    // The binary may read the clock; the library never does.
    let now = instant(a.now, m.newest_time, jiff::Timestamp::now);
    let cluster = Cluster::from_manifests(m);
    check_dump(&cluster).map_err(|e| Failure {
        code: NOT_A_DUMP,
        lines: vec![
            format!("{}: {e}", a.cluster_dir.display()),
            format!("  {}", NotADump::HINT),
        ],
    })?;
    check_pools(&cluster, a.pool.as_deref())
        .map_err(|e| Failure::input(format!("{}: {e}", a.cluster_dir.display())))?;
    let mut view = status(
        &cluster,
        &Options {
            now: now.at,
            per_node: std::time::Duration::from_secs(a.node_minutes.saturating_mul(60)),
            pool: a.pool.clone(),
        },
    );
    view.now_from = Some(now.from);
    for n in &view.notes {
        eprintln!("warning: {n}");
    }
    let format = match a.output {
        StatusFormat::Text => render::Format::Text,
        StatusFormat::Json | StatusFormat::Yaml => render::Format::Json,
    };
    let text = if a.output == StatusFormat::Yaml {
        super::to_yaml(&view)?
    } else {
        render::output_with(&view, format, &a.details.text_options())
            .map_err(|e| Failure::input(format!("cannot write JSON: {e}")))?
    };
    write_stdout(&text);
    if view.stuck {
        return Err(Failure {
            code: 1,
            lines: Vec::new(),
        });
    }
    Ok(())
}
