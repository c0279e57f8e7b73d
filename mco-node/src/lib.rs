//! The node agent: applies a rendered MachineConfig to a host root and never leaves the node
//! half-updated.
//!
//! - [`root`]: every path resolved under a host root, escapes and symlinks refused.
//! - [`host`]: systemctl, rpm-ostree, podman and reboot behind the [`host::Host`] trait.
//! - [`rpm_ostree`]: `rpm-ostree status --json`, typed, and the image a deployment runs.
//! - [`apply`]: plans and runs an update (files, units, SSH keys, OS, post-config actions).
//! - [`journal`]: crash safety (journal, staged backups, roll-back recovery).
//! - [`state`]: `currentconfig` and the agent's state.
//! - [`drift`]: on-disk differences from the current config.
//! - [`firstboot`]: finishing a machine's first boot (the encapsulated config, the initial
//!   node annotations).
//! - [`desired_config`]: reading MachineConfigs and bare Ignition configs.
//! - [`certs`]: the CA files from the ControllerConfig, written in place (no update).
//! - [`agent`]: cluster mode: the next step decided from the node's annotations, and the
//!   kube-rs loop that carries it out.

pub mod agent;
pub mod apply;
pub mod certs;
pub mod desired_config;
pub mod drift;
pub mod firstboot;
pub mod host;
pub mod journal;
pub mod root;
pub mod rpm_ostree;
pub mod state;

pub use apply::{plan_update, run_update, ApplyError, ApplyOptions, ApplyOutcome, UpdatePlan};
pub use desired_config::DesiredConfig;
pub use host::{Host, HostCall, RecordingHost, SystemHost};
pub use root::HostRoot;
pub use state::{AgentStatus, NodeState};
