//! `machine-config-daemon`: applies a rendered MachineConfig or Ignition config to a host root,
//! from a file or, in cluster mode, as its Node's annotations ask.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand, ValueEnum};
use mco_node::apply::{plan_update, run_update, ApplyOptions, ApplyOutcome, RebootMode};
use mco_node::host::{Host, PrintHost, SystemHost};
use mco_node::state::read_current;
use mco_node::{drift, journal, DesiredConfig, HostRoot, NodeState};
use mco_render::plan::MachineConfiguration;

/// The machine-config-daemon: applies a rendered MachineConfig (or a bare Ignition config) to
/// a host root, as upstream's does on each node.
///
/// `cluster` is the node agent: it follows its Node's desiredConfig annotation, drains through
/// the controller, writes files and units, updates the OS and reboots, and keeps the node's
/// CA files and pinned images. The other commands work on a host root without a cluster:
/// `once-from` (a config file, once), `try` (with a health check that reverts it),
/// `recover`, `drift`, `certs-from` and `firstboot-complete-machineconfig`.
#[derive(Parser)]
#[command(
    name = "machine-config-daemon",
    version,
    long_version = mco_render::about::long_version()
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

/// Which host commands run.
#[derive(Clone, Copy, ValueEnum)]
enum HostMode {
    /// Run systemctl, rpm-ostree and reboot for real.
    Run,
    /// Run them in the host's namespaces through nsenter (a privileged container with
    /// hostPID and the host's files under --root).
    Nsenter,
    /// Print them instead.
    Print,
}

/// The kubelet health monitor (upstream's flags), which keeps `mcd_kubelet_state`.
#[derive(clap::Args)]
struct KubeletHealthArgs {
    /// Check the kubelet's healthz endpoint every 30 s (`--kubelet-healthz-enabled=false`
    /// turns the check off).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
          default_missing_value = "true")]
    kubelet_healthz_enabled: bool,
    /// The kubelet's healthz endpoint (plain http).
    #[arg(long, default_value = mco_node::agent::kubelet_health::DEFAULT_ENDPOINT)]
    kubelet_healthz_endpoint: String,
}

#[derive(clap::Args)]
struct Common {
    /// Host root directory.
    #[arg(long, default_value = "/")]
    root: PathBuf,
    /// Whether host commands run (default: run for /, print otherwise).
    #[arg(long, value_enum)]
    host: Option<HostMode>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Apply a rendered MachineConfig (YAML/JSON) or a bare Ignition config once.
    OnceFrom {
        /// The config file.
        file: PathBuf,
        #[command(flatten)]
        common: Common,
        /// Print the plan and every file it would touch; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Apply even when the disk drifted from the current config.
        #[arg(long)]
        force: bool,
        /// Never reboot; report a pending reboot instead.
        #[arg(long)]
        no_reboot: bool,
        /// A MachineConfiguration manifest whose node disruption policies plan the update.
        #[arg(long)]
        policies: Option<PathBuf>,
    },
    /// Apply, run a health command, and revert automatically when it fails.
    Try {
        /// The config file.
        file: PathBuf,
        #[command(flatten)]
        common: Common,
        /// Shell command that must exit 0 (run with MCD_ROOT set to the root).
        #[arg(long)]
        health_cmd: String,
        /// Seconds the health command may take.
        #[arg(long, default_value_t = 60)]
        timeout: u64,
        /// Apply even when the disk drifted from the current config.
        #[arg(long)]
        force: bool,
        /// A MachineConfiguration manifest whose node disruption policies plan the update.
        #[arg(long)]
        policies: Option<PathBuf>,
    },
    /// Roll back an interrupted update, if any.
    Recover {
        #[command(flatten)]
        common: Common,
    },
    /// Finish a machine's first boot: apply the OS changes of the encapsulated MachineConfig
    /// the machine-config-server handed it (OS image, kernel arguments, kernel type,
    /// extensions), then reboot (a oneshot unit before the kubelet runs this).
    FirstbootCompleteMachineconfig {
        #[command(flatten)]
        common: Common,
    },
    /// Write the CA files of a ControllerConfig (YAML/JSON) once, as cluster mode's certificate
    /// writer does on each change: each file atomically, only when its bytes differ.
    CertsFrom {
        /// The ControllerConfig file.
        file: PathBuf,
        /// The `kubeconfig-data` ConfigMap's `ca-bundle.crt`, trusted by the kubeconfig.
        #[arg(long)]
        kubeconfig_ca: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Report how the disk differs from the current config.
    Drift {
        #[command(flatten)]
        common: Common,
    },
    /// Cluster mode: follow the Node's desiredConfig annotation (kubeconfig from KUBECONFIG,
    /// ~/.kube/config or the in-cluster service account).
    Cluster {
        #[command(flatten)]
        common: Common,
        /// The Node this agent manages (default: the NODE_NAME environment variable).
        #[arg(long)]
        node_name: Option<String>,
        /// Seconds before a failed update is tried again.
        #[arg(long, default_value_t = 30)]
        retry_seconds: u64,
        /// Seconds the controller may take to drain the node before it is reported Degraded.
        #[arg(
            long = "drain-timeout-seconds",
            alias = "drain-timeout",
            default_value_t = 3600
        )]
        drain_timeout: u64,
        /// The kubeconfig to use (default: KUBECONFIG, ~/.kube/config or the in-cluster
        /// service account).
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// Serve Prometheus metrics at http://ADDR/metrics (upstream: 127.0.0.1:8797).
        #[arg(long)]
        metrics_listen: Option<String>,
        #[command(flatten)]
        kubelet_health: KubeletHealthArgs,
    },
}

fn host_for(root: &HostRoot, mode: Option<HostMode>) -> Box<dyn Host> {
    match mode {
        Some(HostMode::Run) => Box::new(SystemHost::direct()),
        Some(HostMode::Nsenter) => Box::new(SystemHost::in_host_namespaces()),
        Some(HostMode::Print) => Box::new(PrintHost),
        None if root.is_real_root() => Box::new(SystemHost::direct()),
        None => Box::new(PrintHost),
    }
}

/// The host the pinned image manager asks (`crictl`, `podman`, `systemctl`), when commands
/// really run; a host that only prints them has no images to pin.
fn pinned_host(root: &HostRoot, mode: Option<HostMode>) -> Option<SystemHost> {
    match mode {
        Some(HostMode::Run) => Some(SystemHost::direct()),
        Some(HostMode::Nsenter) => Some(SystemHost::in_host_namespaces()),
        None if root.is_real_root() => Some(SystemHost::direct()),
        _ => None,
    }
}

fn open(common: &Common) -> Result<(HostRoot, Box<dyn Host>), String> {
    let root = HostRoot::new(&common.root).map_err(|e| e.to_string())?;
    let host = host_for(&root, common.host);
    Ok((root, host))
}

fn report(out: &ApplyOutcome) -> ExitCode {
    for l in &out.log {
        println!("{l}");
    }
    for d in &out.drift {
        println!("drift: {d}");
    }
    if out.reboot_pending {
        println!("reboot pending");
    }
    println!("state: {:?}", out.status.state);
    if !out.status.reason.is_empty() {
        println!("reason: {}", out.status.reason);
    }
    println!("currentConfig: {}", out.status.current_config);
    match out.status.state {
        NodeState::Done => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    }
}

/// Reads a MachineConfiguration manifest (YAML or JSON), when one is named.
fn load_policies(path: Option<&Path>) -> Result<Option<MachineConfiguration>, String> {
    path.map(mco_render::load::read_policies)
        .transpose()
        .map_err(|e| e.to_string())
}

fn dry_run(
    root: &HostRoot,
    old: &DesiredConfig,
    new: &DesiredConfig,
    policies: Option<&MachineConfiguration>,
) -> Result<(), String> {
    let up = plan_update(root, old, new, policies).map_err(|e| e.to_string())?;
    println!("plan: {:?} -> {:?}", old.name(), new.name());
    if let Err(e) = &up.plan.reconcilable {
        println!("unreconcilable: {e}");
        return Ok(());
    }
    for s in &up.steps {
        println!(
            "step: {}",
            serde_json::to_string(s).map_err(|e| e.to_string())?
        );
    }
    if up.drain {
        println!("drain: required");
    }
    for a in &up.actions {
        println!("would {}", a.describe());
    }
    for c in &up.post {
        println!("then {}", c.command_line());
    }
    Ok(())
}

/// Sends SIGKILL to every process of a process group.
// std has no safe call for signalling a process group, so this is the workspace's one unsafe
// block outside the benchmarks' counting allocators.
#[allow(unsafe_code)]
fn kill_group(pgid: i32) {
    // SAFETY: kill(2) takes plain integers and touches no memory; a negative pid signals only
    // that process group.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

fn run_health(root: &HostRoot, cmd: &str, timeout: Duration) -> Result<(), String> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .env("MCD_ROOT", root.base())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("starting {cmd:?}: {e}"))?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(st)) if st.success() => return Ok(()),
            Ok(Some(st)) => return Err(format!("{cmd:?} exited with {st}")),
            Ok(None) if start.elapsed() >= timeout => {
                // The command runs in its own process group: end all of it, not just the shell.
                if let Ok(pgid) = i32::try_from(child.id()) {
                    kill_group(pgid);
                }
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{cmd:?} timed out after {}s", timeout.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("waiting for {cmd:?}: {e}")),
        }
    }
}

fn cluster(
    common: &Common,
    node_name: Option<String>,
    retry_seconds: u64,
    drain_timeout: u64,
    kubeconfig: Option<PathBuf>,
    metrics_listen: Option<String>,
    kubelet_health: KubeletHealthArgs,
) -> Result<ExitCode, String> {
    use mco_node::agent::kube_loop::AgentOptions;
    use mco_node::agent::kubelet_health;
    let node_name = node_name
        .or_else(|| std::env::var("NODE_NAME").ok())
        .filter(|n| !n.is_empty())
        .ok_or("--node-name or NODE_NAME is required")?;
    let healthz = kubelet_health
        .kubelet_healthz_enabled
        .then(|| kubelet_health::Endpoint::parse(&kubelet_health.kubelet_healthz_endpoint))
        .transpose()?;
    let (root, mut host) = open(common)?;
    journal::recover(&root, host.as_mut()).map_err(|e| e.to_string())?;
    let mut opts = AgentOptions::new(&node_name);
    opts.retry_after = Duration::from_secs(retry_seconds.max(1));
    opts.drain_timeout = Duration::from_secs(drain_timeout);
    // A host that only prints commands does not go down on reboot: keep following the node.
    opts.continue_after_reboot =
        !root.is_real_root() && !matches!(common.host, Some(HostMode::Run | HostMode::Nsenter));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    rt.block_on(async move {
        if let Some(addr) = &metrics_listen {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| format!("--metrics-listen {addr}: {e}"))?;
            tokio::spawn(opts.metrics.clone().serve(listener));
        }
        if let Some(endpoint) = healthz {
            tokio::spawn(kubelet_health::run(
                endpoint,
                kubelet_health::INTERVAL,
                kubelet_health::TIMEOUT,
                opts.metrics.clone(),
            ));
        }
        let client = mco_node::agent::kube_loop::connect(kubeconfig.as_deref(), &node_name)
            .await
            .map_err(|e| format!("cannot reach the API server: {e}"))?;
        let pinned =
            pinned_host(&root, common.host).map(|h| std::sync::Arc::new(std::sync::Mutex::new(h)));
        mco_node::agent::cluster::run(client, root, host, pinned, opts)
            .await
            .map_err(|e| e.to_string())
    })?;
    Ok(ExitCode::SUCCESS)
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Cmd::Cluster {
            common,
            node_name,
            retry_seconds,
            drain_timeout,
            kubeconfig,
            metrics_listen,
            kubelet_health,
        } => cluster(
            &common,
            node_name,
            retry_seconds,
            drain_timeout,
            kubeconfig,
            metrics_listen,
            kubelet_health,
        ),
        Cmd::OnceFrom {
            file,
            common,
            dry_run: dry,
            force,
            no_reboot,
            policies,
        } => {
            let new = DesiredConfig::from_file(&file).map_err(|e| e.to_string())?;
            let policies = load_policies(policies.as_deref())?;
            let (root, mut host) = open(&common)?;
            if dry {
                if let Some(j) = journal::read_journal(&root).map_err(|e| e.to_string())? {
                    println!(
                        "interrupted update {:?} -> {:?} would be rolled back first",
                        j.old, j.new
                    );
                }
                let old = read_current(&root).map_err(|e| e.to_string())?;
                dry_run(&root, &old, &new, policies.as_ref())?;
                return Ok(ExitCode::SUCCESS);
            }
            // Recover before reading currentconfig, so it is the committed one.
            journal::recover(&root, host.as_mut()).map_err(|e| e.to_string())?;
            let old = read_current(&root).map_err(|e| e.to_string())?;
            let opts = ApplyOptions {
                check_drift: !force,
                reboot: if no_reboot {
                    RebootMode::Skip
                } else {
                    RebootMode::Now
                },
                drained: false,
                policies: policies.as_ref(),
            };
            let out = run_update(&root, host.as_mut(), &old, &new, opts, None);
            Ok(report(&out))
        }
        Cmd::Try {
            file,
            common,
            health_cmd,
            timeout,
            force,
            policies,
        } => {
            let new = DesiredConfig::from_file(&file).map_err(|e| e.to_string())?;
            let policies = load_policies(policies.as_deref())?;
            let (root, mut host) = open(&common)?;
            journal::recover(&root, host.as_mut()).map_err(|e| e.to_string())?;
            let old = read_current(&root).map_err(|e| e.to_string())?;
            let opts = ApplyOptions {
                check_drift: !force,
                reboot: RebootMode::Skip,
                drained: false,
                policies: policies.as_ref(),
            };
            let timeout = Duration::from_secs(timeout);
            let mut check = || run_health(&root, &health_cmd, timeout);
            let out = run_update(&root, host.as_mut(), &old, &new, opts, Some(&mut check));
            Ok(report(&out))
        }
        Cmd::Recover { common } => {
            let (root, mut host) = open(&common)?;
            match journal::recover(&root, host.as_mut()).map_err(|e| e.to_string())? {
                Some(r) => println!(
                    "rolled back {:?} -> {:?}: {} paths restored",
                    r.old, r.new, r.restored
                ),
                None => println!("nothing to recover"),
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::FirstbootCompleteMachineconfig { common } => {
            use mco_node::firstboot::{complete_machine_config, Firstboot};
            let (root, mut host) = open(&common)?;
            journal::recover(&root, host.as_mut()).map_err(|e| e.to_string())?;
            let booted = mco_node::firstboot::read_booted_image(&root, host.as_mut())
                .map_err(|e| e.to_string())?;
            match complete_machine_config(&root, host.as_mut(), booted.as_deref())
                .map_err(|e| e.to_string())?
            {
                Firstboot::AlreadyComplete => println!("first boot already complete"),
                Firstboot::NoChanges { config } => {
                    println!("no OS changes from the boot image to {config}; not rebooting")
                }
                Firstboot::NotRpmOstree { config } => println!(
                    "not an rpm-ostree host: the OS part of {config} does not apply; not rebooting"
                ),
                Firstboot::Rebooting { config, log } => {
                    for l in &log {
                        println!("{l}");
                    }
                    println!("completing firstboot provisioning to {config}: rebooting");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::CertsFrom {
            file,
            kubeconfig_ca,
            common,
        } => {
            let (root, _) = open(&common)?;
            let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
            // Read as kubectl reads manifests (YAML 1.1 through sigs.k8s.io/yaml).
            let text =
                String::from_utf8(read(&file)?).map_err(|e| format!("{}: {e}", file.display()))?;
            let doc = mco_render::manifests::documents(&text)
                .map_err(|e| format!("{}: {e}", file.display()))?
                .into_iter()
                .next()
                .ok_or_else(|| format!("{}: no ControllerConfig", file.display()))?;
            let cc: mco_render::api::ControllerConfig = serde_json::from_value(doc)
                .map_err(|e| format!("{}: ControllerConfig: {e}", file.display()))?;
            let ca = kubeconfig_ca.as_deref().map(read).transpose()?;
            let report = mco_node::certs::sync(&root, &cc.spec, ca.as_deref())
                .map_err(|e| format!("{}: {e}", file.display()))?;
            for w in &report.warnings {
                println!("warning: {w}");
            }
            for p in &report.written {
                println!("wrote {p}");
            }
            for p in &report.removed {
                println!("removed {p}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Drift { common } => {
            let (root, _) = open(&common)?;
            let cur = read_current(&root).map_err(|e| e.to_string())?;
            let found = drift::check(&root, &cur.input.config);
            for d in &found {
                println!("{d}");
            }
            Ok(if found.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match run(Cli::parse()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
