//! `machine-config-server`: serves each pool's Ignition config to machines that boot.

use clap::Parser;
use mco_k8s::limits::ConnLimits;
use mco_k8s::mcs::access::{AccessPolicy, Cidr};
use mco_k8s::mcs::served_state::BuildOptions;
use mco_k8s::mcs::server::{self, Config, Source};
use mco_render::render::RenderOptions;
use mco_render::serve::bootstrap_kubeconfig;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// The machine-config-server: serves each pool's rendered Ignition config to the machines that
/// boot into it (GET /config/POOL), as upstream's does.
///
/// Two modes: --dir DIR serves the pools of a folder of manifests, rendered here and rendered
/// again when the folder changes (with --templates, as `mco-render render --templates`);
/// --cluster serves the cluster's pools, watching them and their rendered MachineConfigs.
/// It listens on a TLS port (--secure-port, with --cert and --key, reloaded when they change)
/// and a plain HTTP one (--insecure-port); with --bootstrap-token the configs carry the
/// kubelet's bootstrap kubeconfig.
#[derive(Parser)]
#[command(
    name = "machine-config-server",
    version,
    long_version = mco_render::about::long_version()
)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["dir", "cluster"])))]
struct Cli {
    /// With --cluster: the kubeconfig to use (default: KUBECONFIG, ~/.kube/config or the
    /// in-cluster service account).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Folder of YAML/JSON manifests (the same inputs as `mco-render render`).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// With --dir: a folder of role templates; the pools are rendered with the template
    /// controller's MachineConfigs generated from it (as `mco-render render --templates`).
    #[arg(long, requires = "dir")]
    templates: Option<PathBuf>,
    /// Serve the cluster's pools (kubeconfig from KUBECONFIG, ~/.kube/config or the in-cluster
    /// service account).
    #[arg(long)]
    cluster: bool,
    /// TLS port (needs --cert and --key; 0 picks a free port).
    #[arg(long, default_value_t = 22623)]
    secure_port: u16,
    /// Plain HTTP port (0 picks a free port).
    #[arg(long, default_value_t = 22624)]
    insecure_port: u16,
    /// Serve no TLS port.
    #[arg(long)]
    no_secure: bool,
    /// Serve no plain HTTP port.
    #[arg(long)]
    no_insecure: bool,
    /// Serving certificate (PEM), reloaded when it changes.
    #[arg(long)]
    cert: Option<PathBuf>,
    /// Serving key (PEM), reloaded when it changes.
    #[arg(long)]
    key: Option<PathBuf>,
    /// File holding the kubelet bootstrap token; with it, machines get /etc/kubernetes/kubeconfig.
    /// With --kubeconfig-ca both files are re-read while serving (a mounted Secret that rotates).
    #[arg(long)]
    bootstrap_token: Option<PathBuf>,
    /// API server URL written in the bootstrap kubeconfig.
    #[arg(long, default_value = "https://api-int.cluster.local:6443")]
    apiserver_url: String,
    /// CA bundle (PEM) for the bootstrap kubeconfig; default (with --dir): the ControllerConfig's
    /// kubeAPIServerServingCAData. Required with --cluster and --bootstrap-token.
    #[arg(long)]
    kubeconfig_ca: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    listen: IpAddr,
    /// Controller version stamped on rendered configs; generated inputs must carry it.
    #[arg(long, default_value = mco_render::CONTROLLER_VERSION)]
    controller_version: String,
    /// File holding a bearer token required on /config and /metrics requests.
    #[arg(long)]
    require_token: Option<PathBuf>,
    /// Client address block allowed on /config and /metrics (repeatable; default: all).
    #[arg(long = "allow-cidr")]
    allow_cidr: Vec<Cidr>,
    /// Seconds between scans of the folder and the certificate files.
    #[arg(long, default_value_t = 1)]
    poll_seconds: u64,
    /// Connections served at once, per port; more wait to be accepted.
    #[arg(long, default_value_t = ConnLimits::default().max_connections)]
    max_connections: usize,
    /// Seconds a client has for the TLS handshake, and again for a complete request head.
    #[arg(long, default_value_t = ConnLimits::default().header_timeout.as_secs())]
    header_timeout_seconds: u64,
    /// Seconds a connection may stay open with no request in flight.
    #[arg(long, default_value_t = ConnLimits::default().idle_timeout.as_secs())]
    idle_timeout_seconds: u64,
    /// Largest request head in bytes; larger ones get 431.
    #[arg(long, default_value_t = ConnLimits::default().max_header_bytes)]
    max_header_bytes: usize,
    /// Most header fields in a request; more get 431.
    #[arg(long, default_value_t = ConnLimits::default().max_headers)]
    max_headers: usize,
}

fn read_trimmed(p: &PathBuf) -> Result<String, String> {
    std::fs::read_to_string(p)
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("{}: {e}", p.display()))
}

fn config(cli: Cli, source: Source) -> Result<Config, String> {
    let bootstrap = match (&cli.bootstrap_token, &cli.kubeconfig_ca) {
        (Some(token), Some(ca)) => Some(server::BootstrapFiles {
            apiserver_url: cli.apiserver_url.clone(),
            token: token.clone(),
            ca: ca.clone(),
        }),
        _ => None,
    };
    let kubeconfig = match &cli.bootstrap_token {
        None => None,
        // Built (and rebuilt when the files change) by the server.
        Some(_) if bootstrap.is_some() => None,
        Some(tok) => {
            let token = read_trimmed(tok)?;
            let ca = match &cli.kubeconfig_ca {
                Some(p) => std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?,
                None => match &source {
                    Source::Dir(dir) | Source::DirTemplates { dir, .. } => controller_ca(dir)?,
                    Source::Cluster(_) => {
                        return Err("--bootstrap-token with --cluster needs --kubeconfig-ca".into())
                    }
                },
            };
            Some(bootstrap_kubeconfig(&cli.apiserver_url, &ca, &token))
        }
    };
    let token = cli.require_token.as_ref().map(read_trimmed).transpose()?;
    let tls = match (cli.cert, cli.key) {
        (Some(c), Some(k)) => Some((c, k)),
        (None, None) => None,
        _ => return Err("--cert and --key go together".into()),
    };
    Ok(Config {
        source,
        listen: cli.listen,
        secure_port: (!cli.no_secure).then_some(cli.secure_port),
        insecure_port: (!cli.no_insecure).then_some(cli.insecure_port),
        tls,
        build: BuildOptions {
            render: RenderOptions {
                controller_version: cli.controller_version,
                ..RenderOptions::default()
            },
            kubeconfig,
        },
        access: AccessPolicy {
            token,
            allow: cli.allow_cidr,
        },
        poll_interval: Duration::from_secs(cli.poll_seconds.max(1)),
        limits: ConnLimits {
            max_connections: cli.max_connections.max(1),
            header_timeout: Duration::from_secs(cli.header_timeout_seconds.max(1)),
            idle_timeout: Duration::from_secs(cli.idle_timeout_seconds.max(1)),
            max_header_bytes: cli.max_header_bytes,
            max_headers: cli.max_headers,
        },
        bootstrap,
    })
}

/// The ControllerConfig's kube-apiserver serving CA, decoded, or nothing.
fn controller_ca(dir: &std::path::Path) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    let m = mco_k8s::mcs::source::load(dir).map_err(|e| e.to_string())?;
    let data = m
        .controller_config
        .as_ref()
        .and_then(|(_, c)| c.spec.extra.get("kubeAPIServerServingCAData"))
        .and_then(|v| v.as_str())
        .unwrap_or("");
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| format!("ControllerConfig kubeAPIServerServingCAData: {e}"))
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_target(true)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .init();
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    rt.block_on(async move {
        let source = match (&cli.dir, cli.cluster) {
            (Some(dir), false) => match &cli.templates {
                Some(templates) => Source::DirTemplates {
                    dir: dir.clone(),
                    templates: templates.clone(),
                },
                None => Source::Dir(dir.clone()),
            },
            _ => match mco_k8s::kubeclient::connect(
                cli.kubeconfig.as_deref(),
                &mco_k8s::kubeclient::user_agent("machine-config-server", None),
            )
            .await
            {
                Ok(c) => Source::Cluster(c),
                Err(e) => {
                    eprintln!("error: cannot reach the API server: {e}");
                    return ExitCode::from(2);
                }
            },
        };
        let cfg = match config(cli, source) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        let running = match server::start(cfg).await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {
                tracing::info!("interrupted; stopping");
                running.stop().await;
            }
        }
        ExitCode::SUCCESS
    })
}
