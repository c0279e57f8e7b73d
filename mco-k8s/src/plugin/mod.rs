//! `kubectl mco`, the kubectl plugin (the `kubectl-mco` binary on `PATH`): `status` is
//! `mco-render status` on the live cluster (the same [`mco_render::status::Cluster`], built
//! from a LIST per kind, printed by the same code), `status --watch` redraws it from watch
//! caches with a progress bar per pool, and `resume`, `rollback`, `retry` and `force` carry out
//! the one-step actions [`mco_render::status::actions`] decides, asking first.
//!
//! - `connect`: the kubeconfig and context, as kubectl finds them.
//! - `read`: the LISTs, tolerating kinds not served (404) or forbidden (403).
//! - `watch`: the watches and the frames.
//! - `act`: an action printed, confirmed and written.
//! - `dump`: the dump the offline commands read, written from the cluster.
//! - `fail`: failures in kubectl's words (the server refused, not reached, a login refused).

pub mod act;
pub mod connect;
pub mod dump;
pub mod fail;
pub mod read;
pub mod watch;

use clap::{Parser, Subcommand};
use mco_render::status::render::{output_with, Format};
use mco_render::status::{check_pools, status, Options};
use std::path::PathBuf;
use std::time::Duration;

/// Where each pool's rollout stands, why it is stuck, and the steps that unstick it.
#[derive(Parser, Debug)]
#[command(
    name = "kubectl mco",
    bin_name = "kubectl mco",
    version,
    long_version = mco_render::about::long_version()
)]
pub struct Cli {
    /// The kubeconfig (default: KUBECONFIG, ~/.kube/config, or the in-cluster service
    /// account).
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current context).
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Show each pool's rollout and why it is stuck, with what to do (as `mco-render status`
    /// on a dump). Exit 1 while something is stuck, 0 otherwise, 2 when the cluster cannot be
    /// read.
    Status(StatusArgs),
    /// Resume a pool: end its RolloutPolicy's pause (spec.resumedAt) or requested rollback
    /// (spec.rollback: false), and unpause the pool (spec.paused: false).
    Resume(PoolArgs),
    /// Roll a pool back to its RolloutPolicy's last known good config (spec.rollback: true).
    Rollback(PoolArgs),
    /// Say when a failed drain or update on a node is tried again (both retry by themselves:
    /// nothing is written), or what else it needs.
    Retry(NodeArgs),
    /// Have a degraded node's daemon skip its on-disk check, as
    /// /run/machine-config-daemon-force does (the agent.mco.dev/force annotation).
    Force(NodeArgs),
    /// Write the dump `mco-render status --cluster-dir DIR` reads: per kind status reads, the
    /// List `kubectl get -o yaml` prints, in `DIR/<resource>.yaml`. Exit 2 when the cluster
    /// cannot be read.
    Dump(DumpArgs),
}

/// `dump`.
#[derive(clap::Args, Debug)]
pub struct DumpArgs {
    /// The folder to write (made if missing; files of the same names are replaced).
    pub dir: PathBuf,
}

/// `status`.
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// Only this pool.
    #[arg(long)]
    pub pool: Option<String>,
    /// The instant to look from (RFC 3339); default the clock.
    #[arg(long)]
    pub now: Option<jiff::Timestamp>,
    /// Minutes one node takes to drain, update and reboot, for the estimates.
    #[arg(long, default_value_t = 15)]
    pub node_minutes: u64,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: OutputFormat,
    /// What to show beyond the short view: none, nodes (every node; otherwise a pool lists
    /// ten, then only nodes in trouble) or all.
    #[arg(long, default_value = "none")]
    pub details: mco_render::status::render::Details,
    /// Redraw whenever something changes (watches, no polling), with a progress bar per pool.
    #[arg(short = 'w', long, conflicts_with = "output")]
    pub watch: bool,
    /// With --watch: the least time between two frames, in milliseconds.
    #[arg(long, default_value_t = 1000, requires = "watch")]
    pub min_interval_ms: u64,
    /// With --watch: exit 0 once every pool is Completed and nothing is stuck or waiting.
    #[arg(long, requires = "watch")]
    pub exit_when_done: bool,
    /// With --exit-when-done: give up after this long (`30s`, `10m`, `1h30m`), exit 3, and
    /// say why (the cluster not read, or not every pool done). Default: wait as long as it
    /// takes.
    #[arg(long, value_name = "DURATION", requires = "exit_when_done", value_parser = go_duration)]
    pub timeout: Option<Duration>,
}

/// A positive Go duration, as kubectl's `--timeout` takes it.
fn go_duration(s: &str) -> Result<Duration, String> {
    let ns = mco_render::gocompat::duration::parse_duration(s).map_err(|e| e.to_string())?;
    match u64::try_from(ns) {
        Ok(ns) if ns > 0 => Ok(Duration::from_nanos(ns)),
        _ => Err(format!("{s:?} is not a positive duration")),
    }
}

/// How `status` prints.
#[derive(Clone, Copy, clap::ValueEnum, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// Tables and findings.
    Text,
    /// The same view as JSON.
    Json,
}

/// An action on a pool.
#[derive(clap::Args, Debug)]
pub struct PoolArgs {
    /// The MachineConfigPool.
    pub pool: String,
    /// Write without asking.
    #[arg(short = 'y', long)]
    pub yes: bool,
}

/// An action on a node.
#[derive(clap::Args, Debug)]
pub struct NodeArgs {
    /// The Node.
    pub node: String,
    /// Write without asking.
    #[arg(short = 'y', long)]
    pub yes: bool,
}

fn options(a: &StatusArgs) -> Options {
    Options {
        now: a.now.unwrap_or_else(jiff::Timestamp::now),
        per_node: Duration::from_secs(a.node_minutes.saturating_mul(60)),
        pool: a.pool.clone(),
    }
}

/// `status` once: exit 0, 1 while stuck, 2 when the cluster cannot be read.
async fn status_once(to: &connect::Connected, a: &StatusArgs) -> i32 {
    let c = match read::list(&to.client, &to.server, &mco_render::status::Source::ALL).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    if let Err(e) = check_pools(&c, a.pool.as_deref()) {
        eprintln!("error: {e}");
        return 2;
    }
    let view = status(&c, &options(a));
    for n in &view.notes {
        eprintln!("warning: {n}");
    }
    let format = match a.output {
        OutputFormat::Text => Format::Text,
        OutputFormat::Json => Format::Json,
    };
    let text = match output_with(&view, format, &a.details.text_options()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot write JSON: {e}");
            return 2;
        }
    };
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return 2;
    }
    i32::from(view.stuck)
}

/// Runs the command; returns the exit status.
pub async fn run(cli: Cli) -> i32 {
    let to = match connect::client(cli.kubeconfig.as_deref(), cli.context.as_deref()).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let (verb, yes) = match cli.command {
        Command::Status(a) if a.watch => {
            use std::io::IsTerminal;
            let w = watch::WatchOptions {
                min_interval: Duration::from_millis(a.min_interval_ms),
                exit_when_done: a.exit_when_done,
                clear: std::io::stdout().is_terminal(),
                text: a.details.text_options(),
                timeout: a.timeout,
            };
            let fixed = a.now;
            let mut stdout = std::io::stdout();
            return watch::run(
                &to.client,
                &to.server,
                &options(&a),
                move || fixed.unwrap_or_else(jiff::Timestamp::now),
                &w,
                &mut stdout,
            )
            .await;
        }
        Command::Status(a) => return status_once(&to, &a).await,
        Command::Dump(a) => return dump::run(&to, &a.dir, &mut std::io::stdout()).await,
        Command::Resume(a) => (act::Verb::Resume(a.pool), a.yes),
        Command::Rollback(a) => (act::Verb::Rollback(a.pool), a.yes),
        Command::Retry(a) => (act::Verb::Retry(a.node), a.yes),
        Command::Force(a) => (act::Verb::Force(a.node), a.yes),
    };
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut stdout = std::io::stdout();
    act::run(
        &to,
        &verb,
        jiff::Timestamp::now(),
        yes,
        &mut input,
        &mut stdout,
    )
    .await
}
