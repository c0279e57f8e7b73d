//! machine-config-controller: renders pools and rolls nodes out on a Kubernetes cluster.

use clap::Parser;
use mco_k8s::controller::templates::read_tree;
use mco_k8s::controller::{run_leading, Options};
use mco_k8s::leader::{run_elected, LeaderArgs};
use std::process::ExitCode;
use std::time::Duration;

/// The machine-config-controller: renders each MachineConfigPool's MachineConfigs into its
/// rendered config and rolls the pool's nodes onto it, a few at a time, as upstream's does.
///
/// While this replica holds the controller's Lease (--leader-elect, on by default), it runs
/// the render controller, the node controller (rollouts, under a RolloutPolicy when a pool has
/// one), drains, the KubeletConfig and ContainerRuntimeConfig controllers, the cluster-wide
/// config MachineConfigs, on-cluster image builds, garbage collection of unused rendered
/// configs and, with --templates, the template controller. Every replica serves the validating
/// admission webhook (--webhook-listen) and, with --metrics-listen, Prometheus metrics.
/// It renders as the release --release-image-version names (4.14 to 4.22; the newest by
/// default).
#[derive(Parser)]
#[command(
    name = "machine-config-controller",
    version,
    long_version = mco_render::about::long_version()
)]
struct Cli {
    /// The kubeconfig to use (default: KUBECONFIG, ~/.kube/config or the in-cluster service
    /// account).
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// Controller version stamped on rendered configs.
    #[arg(long, default_value = mco_render::CONTROLLER_VERSION)]
    controller_version: String,
    /// Release image version annotation on rendered configs; its release (4.14 to 4.22) is
    /// the one whose rendering rules apply (the newest when empty or unknown).
    #[arg(long, default_value = "")]
    release_image_version: String,
    /// Unused rendered configs kept per pool (garbage collection); negative disables it.
    #[arg(long, default_value_t = 5)]
    keep_rendered: i64,
    /// Milliseconds to wait after a change before syncing.
    #[arg(long, default_value_t = 200)]
    debounce_ms: u64,
    /// Seconds between full resyncs.
    #[arg(long, default_value_t = 60)]
    resync_seconds: u64,
    /// Seconds a drain may stay blocked before it is reported failed.
    #[arg(long, default_value_t = 600)]
    drain_timeout_seconds: u64,
    /// A folder of role templates: keep `00-<role>`, `01-<role>-kubelet` and
    /// `01-<role>-container-runtime` rendered from it and the ControllerConfig. Off without it.
    #[arg(long)]
    templates: Option<std::path::PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9001).
    #[arg(long)]
    metrics_listen: Option<String>,
    #[command(flatten)]
    leader: LeaderArgs,
    #[command(flatten)]
    webhook: mco_k8s::webhook::WebhookArgs,
}

#[tokio::main]
async fn main() -> ExitCode {
    mco_k8s::kubeclient::init_logging();
    let cli = Cli::parse();
    let templates = match cli.templates.as_deref().map(read_tree).transpose() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("machine-config-controller: --templates: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The controller renders as its own release, as the operator names it: a cluster that
    // upgrades re-renders on the new release's rules.
    let release = match cli.release_image_version.as_str() {
        "" => mco_render::release::Release::NEWEST,
        v => mco_render::release::Release::parse(v).unwrap_or_else(|e| {
            tracing::warn!("{e}; rendering as the newest release");
            mco_render::release::Release::NEWEST
        }),
    };
    let opts = Options {
        render: mco_render::RenderOptions {
            controller_version: cli.controller_version,
            release_image_version: cli.release_image_version,
            release,
            ..Default::default()
        },
        debounce: Duration::from_millis(cli.debounce_ms),
        resync: Duration::from_secs(cli.resync_seconds),
        gc_keep: usize::try_from(cli.keep_rendered).ok(),
        drain_timeout: Duration::from_secs(cli.drain_timeout_seconds),
        drain_retry: Default::default(),
        templates,
        metrics: mco_k8s::metrics::ControllerMetrics::new(),
    };
    if let Some(addr) = &cli.metrics_listen {
        match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => {
                let metrics = opts.metrics.clone();
                tokio::spawn(mco_k8s::metrics::serve(
                    l,
                    std::sync::Arc::new(move || metrics.render()),
                ));
            }
            Err(e) => {
                eprintln!("machine-config-controller: --metrics-listen {addr}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let client = match mco_k8s::kubeclient::connect(
        cli.kubeconfig.as_deref(),
        &mco_k8s::kubeclient::user_agent("machine-config-controller", None),
    )
    .await
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("machine-config-controller: {e}");
            return ExitCode::FAILURE;
        }
    };
    // One watch per kind for the whole process: the webhook's caches (on every replica) and,
    // while this replica leads, the controllers' share them.
    let registry = mco_k8s::reflect::Registry::new(client.clone());
    // The admission webhook serves on every replica, leader or not, once its certificate
    // is there (the webhook configuration's failurePolicy is Ignore meanwhile).
    let _webhook = cli.webhook.spawn_with(&registry, opts.render.clone());
    // The render/rollout loop and the generating controllers run side by side, only while
    // this replica holds the controller's Lease; the process ends when either stops.
    let settings = cli.leader.settings("machine-config-controller");
    let work = run_leading(&registry, opts);
    match run_elected(client.clone(), settings, work).await {
        Ok(None) | Ok(Some(Ok(()))) => ExitCode::SUCCESS,
        Ok(Some(Err(e))) => {
            eprintln!("machine-config-controller: {e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("machine-config-controller: {e}");
            ExitCode::FAILURE
        }
    }
}
