//! machine-config-operator: keeps the controller, server and agent deployed from the
//! manifests, builds the ControllerConfig, and reports in the `machine-config`
//! ClusterOperator.
//!
//! The OS images it writes into the ControllerConfig are the release's, read from the
//! `machine-config-osimageurl` ConfigMap in its namespace; without one it leaves the images
//! that are set. It never changes an existing pool's spec.

use clap::Parser;
use mco_k8s::leader::{run_elected, LeaderArgs};
use mco_k8s::operator::{embedded, run, Options};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The machine-config-operator: deploys the machine-config-controller, -server and -daemon from
/// its manifests, builds the ControllerConfig, and reports in the `machine-config`
/// ClusterOperator.
///
/// While this replica holds the `machine-config` Lease (--leader-elect, on by default), it
/// applies the manifests (built in, or --manifests DIR) with --image for the workloads, keeps
/// the ControllerConfig, one MachineConfigNode per Node and the layering Secrets, and reports
/// --release-version as the version deployed.
#[derive(Parser)]
#[command(name = "machine-config-operator", disable_version_flag = true)]
struct Cli {
    /// Print the version: the releases reproduced, the default release, the Butane version
    /// matched. `--version VALUE`, the spelling of earlier builds, sets --release-version
    /// (deployments passing it keep running).
    #[arg(long, num_args = 0..=1, value_name = "RELEASE_VERSION", conflicts_with = "release_version")]
    version: Option<Option<String>>,
    /// Print the name and the crate version.
    #[arg(short = 'V')]
    short_version: bool,
    /// The kubeconfig to use (default: KUBECONFIG, ~/.kube/config or the in-cluster service
    /// account).
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// A folder of manifests to deploy (default: the repository's manifests/, built in).
    #[arg(long)]
    manifests: Option<PathBuf>,
    /// The image the workloads run (replaces the manifests' `mco-rs:latest`).
    #[arg(long, default_value = mco_render::controllers::operator::IMAGE_PLACEHOLDER)]
    image: String,
    /// The release version deployed: reported in the ClusterOperator, stamped on the
    /// ControllerConfig and the workloads (upstream's RELEASE_VERSION).
    #[arg(long, default_value = env!("CARGO_PKG_VERSION"))]
    release_version: String,
    /// Seconds between full resyncs.
    #[arg(long, default_value_t = 60)]
    resync_seconds: u64,
    /// Milliseconds to wait after a change before syncing.
    #[arg(long, default_value_t = 200)]
    debounce_ms: u64,
    #[command(flatten)]
    leader: LeaderArgs,
}

/// The manifest files directly in a folder (sorted by name).
fn read_manifests(dir: &Path) -> Result<Vec<(String, String)>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && mco_render::manifests::is_manifest_file(p))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            std::fs::read_to_string(p)
                .map(|t| (p.display().to_string(), t))
                .map_err(|e| format!("{}: {e}", p.display()))
        })
        .collect()
}

#[tokio::main]
async fn main() -> ExitCode {
    mco_k8s::kubeclient::init_logging();
    let cli = Cli::parse();
    let release_version = match (cli.short_version, cli.version) {
        (true, _) => {
            println!("machine-config-operator {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        (false, Some(None)) => {
            println!(
                "machine-config-operator {}",
                mco_render::about::long_version()
            );
            return ExitCode::SUCCESS;
        }
        (false, Some(Some(v))) => {
            eprintln!(
                "machine-config-operator: --version {v} is the older spelling of --release-version {v}"
            );
            v
        }
        (false, None) => cli.release_version,
    };
    let manifests = match &cli.manifests {
        Some(dir) => match read_manifests(dir) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("machine-config-operator: {e}");
                return ExitCode::from(2);
            }
        },
        None => embedded::manifests(),
    };
    let opts = Options {
        manifests,
        image: cli.image,
        version: release_version,
        resync: Duration::from_secs(cli.resync_seconds.max(1)),
        debounce: Duration::from_millis(cli.debounce_ms),
    };
    let client = match mco_k8s::kubeclient::connect(
        cli.kubeconfig.as_deref(),
        &mco_k8s::kubeclient::user_agent("machine-config-operator", None),
    )
    .await
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("machine-config-operator: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Upstream's operator holds the `machine-config` Lease while it acts.
    let settings = cli.leader.settings("machine-config");
    match run_elected(client.clone(), settings, run(client, opts)).await {
        Ok(None) | Ok(Some(Ok(()))) => ExitCode::SUCCESS,
        Ok(Some(Err(e))) => {
            eprintln!("machine-config-operator: {e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("machine-config-operator: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }
}
