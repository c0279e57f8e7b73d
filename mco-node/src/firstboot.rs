//! A machine's first boot, as upstream's daemon finishes it.
//!
//! The machine-config-server hands a booting machine its pool's rendered config plus two files
//! for the daemon: the node annotations (`node-annotations.json`: currentConfig, desiredConfig,
//! state Done) and the encapsulated MachineConfig (the rendered one with an empty Ignition
//! config: the OS image, kernel arguments, kernel type, extensions and FIPS that Ignition cannot
//! apply). Two steps finish the join:
//!
//! 1. [`complete_machine_config`] (`machine-config-daemon firstboot-complete-machineconfig`, a
//!    oneshot unit before the kubelet) applies the encapsulated config's OS changes from the
//!    boot image's state, keeps the file as `.bak`, and reboots; with nothing to change it only
//!    removes the file.
//! 2. In cluster mode, while `node-annotations.json` is there, the agent stores the full
//!    rendered MachineConfig as the config on disk and renames the file to `.bak` (see
//!    [`finish_bootstrap`]), then sets the annotations it held on a Node that has no
//!    currentConfig yet: the Node says Done only once the disk is finished.

use std::collections::{BTreeMap, BTreeSet};

use mco_render::serve::served::{ENCAPSULATED_PATH, NODE_ANNOTATIONS_PATH};

use crate::apply::{run_update, ApplyOptions, RebootMode};
use crate::desired_config::{DesiredConfig, LoadError};
use crate::host::Host;
use crate::root::{sync_dirs, Entry, HostRoot, RootError};
use crate::state::{NodeState, CURRENT_CONFIG};

/// Where the node annotations file goes once the node is bootstrapped (upstream's name, with
/// its singular "annotation").
pub const NODE_ANNOTATIONS_BAK_PATH: &str = "/etc/machine-config-daemon/node-annotation.json.bak";
/// Where the encapsulated MachineConfig goes once its OS changes are applied.
pub const ENCAPSULATED_BAK_PATH: &str = "/etc/ignition-machine-config-encapsulated.json.bak";
/// The running kernel's command line, under the root.
pub const PROC_CMDLINE: &str = "/proc/cmdline";
/// Whether the running kernel is in FIPS mode, under the root.
pub const FIPS_ENABLED: &str = "/proc/sys/crypto/fips_enabled";

/// Reads the node annotations the server wrote, while the file is there (the node is
/// bootstrapping).
pub fn read_initial_annotations(
    root: &HostRoot,
) -> Result<Option<BTreeMap<String, String>>, LoadError> {
    read_annotations(root, NODE_ANNOTATIONS_PATH)
}

/// Reads the node annotations kept as [`NODE_ANNOTATIONS_BAK_PATH`] once the bootstrap
/// finished on disk: what a Node still without them is given.
pub fn read_kept_annotations(
    root: &HostRoot,
) -> Result<Option<BTreeMap<String, String>>, LoadError> {
    read_annotations(root, NODE_ANNOTATIONS_BAK_PATH)
}

fn read_annotations(
    root: &HostRoot,
    path: &str,
) -> Result<Option<BTreeMap<String, String>>, LoadError> {
    let invalid = |message: String| LoadError::Invalid {
        source_name: path.into(),
        message,
    };
    match root.entry(path)? {
        Entry::Absent => Ok(None),
        Entry::File { data, .. } => serde_json::from_slice(&data)
            .map(Some)
            .map_err(|e| invalid(format!("not a JSON object of strings: {e}"))),
        _ => Err(invalid("not a regular file".into())),
    }
}

/// Ends the bootstrap: `full` (the rendered MachineConfig the node's currentConfig names)
/// becomes the config on disk, then the node annotations file is renamed to
/// [`NODE_ANNOTATIONS_BAK_PATH`], so a restart after either step still finishes.
pub fn finish_bootstrap(root: &HostRoot, full: &DesiredConfig) -> Result<(), RootError> {
    let mut dirty = BTreeSet::new();
    root.write_atomic(
        CURRENT_CONFIG,
        &full.to_bytes(),
        0o644,
        None,
        0o755,
        false,
        &mut dirty,
    )?;
    sync_dirs(&dirty).map_err(|e| RootError::io(CURRENT_CONFIG, e))?;
    root.rename(NODE_ANNOTATIONS_PATH, NODE_ANNOTATIONS_BAK_PATH)
}

/// What [`complete_machine_config`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Firstboot {
    /// There is no encapsulated config: the first boot was completed before.
    AlreadyComplete,
    /// The boot image already matches the config: the file is removed, no reboot.
    NoChanges {
        /// The encapsulated config's name.
        config: String,
    },
    /// The host is not an rpm-ostree host: the config's OS part (all the first boot applies)
    /// does not apply there; the file is removed, no reboot.
    NotRpmOstree {
        /// The encapsulated config's name.
        config: String,
    },
    /// The OS changes are applied and the host was asked to reboot.
    Rebooting {
        /// The encapsulated config's name.
        config: String,
        /// What ran.
        log: Vec<String>,
    },
}

/// The first boot could not be completed.
#[derive(Debug, thiserror::Error)]
pub enum FirstbootError {
    /// The encapsulated config could not be read.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A file could not be moved.
    #[error(transparent)]
    Root(#[from] RootError),
    /// The update failed (it was rolled back).
    #[error("applying {config}: {reason}")]
    Update {
        /// The encapsulated config's name.
        config: String,
        /// Why.
        reason: String,
    },
    /// The reboot command failed.
    #[error("reboot: {0}")]
    Reboot(#[from] crate::host::HostError),
}

/// The machine as it booted: the boot image's OS image (when the host can tell), the kernel
/// arguments of `desired` the running kernel already has, and the running FIPS mode; the
/// empty Ignition config. Upstream compares the encapsulated config with this.
pub fn booted_state(
    root: &HostRoot,
    desired: &DesiredConfig,
    booted_image: Option<&str>,
) -> DesiredConfig {
    let read = |p: &str| match root.entry(p) {
        Ok(Entry::File { data, .. }) => String::from_utf8_lossy(&data).into_owned(),
        _ => String::new(),
    };
    let cmdline = read(PROC_CMDLINE);
    let running: BTreeSet<&str> = cmdline.split_whitespace().collect();
    let mut old = DesiredConfig::empty();
    old.input.os_image_url = booted_image.unwrap_or_default().to_string();
    old.input.kernel_arguments = desired
        .input
        .kernel_arguments
        .iter()
        .filter(|k| {
            let mut words = k.split_whitespace().peekable();
            words.peek().is_some() && words.all(|w| running.contains(w))
        })
        .cloned()
        .collect();
    old.input.fips = read(FIPS_ENABLED).trim() == "1";
    old.input.config = desired.input.config.clone();
    old
}

/// The OS image the machine booted, from `rpm-ostree status --json`; `None` off rpm-ostree
/// hosts (no `/run/ostree-booted` under the root), on a host that only prints commands, or for
/// a deployment booted from no image.
pub fn read_booted_image(
    root: &HostRoot,
    host: &mut dyn Host,
) -> Result<Option<String>, FirstbootError> {
    use crate::rpm_ostree::{query, status_readable};
    if !status_readable(root, host)? {
        return Ok(None);
    }
    let failed = |reason: String| FirstbootError::Update {
        config: "the booted deployment".into(),
        reason,
    };
    let status = query(host).map_err(|e| failed(e.to_string()))?;
    status.booted().map_err(failed)?.image().map_err(failed)
}

/// Applies the encapsulated config's OS changes from the booted state, keeps the file as
/// [`ENCAPSULATED_BAK_PATH`] and reboots; with nothing to change only removes the file.
/// `booted_image` is the OS image the machine booted, when the host can tell (without it an
/// osImageURL is always rebased to).
pub fn complete_machine_config(
    root: &HostRoot,
    host: &mut dyn Host,
    booted_image: Option<&str>,
) -> Result<Firstboot, FirstbootError> {
    let data = match root.entry(ENCAPSULATED_PATH)? {
        Entry::Absent => return Ok(Firstboot::AlreadyComplete),
        Entry::File { data, .. } => data,
        _ => {
            return Err(FirstbootError::Load(LoadError::Invalid {
                source_name: ENCAPSULATED_PATH.into(),
                message: "not a regular file".into(),
            }))
        }
    };
    let desired = DesiredConfig::from_bytes(&data, ENCAPSULATED_PATH)?;
    let config = desired.name().to_string();
    if !crate::rpm_ostree::is_rpm_ostree_host(root)? {
        let mut dirty = BTreeSet::new();
        root.remove(ENCAPSULATED_PATH, &mut dirty)?;
        sync_dirs(&dirty).map_err(|e| RootError::io(ENCAPSULATED_PATH, e))?;
        return Ok(Firstboot::NotRpmOstree { config });
    }
    let old = booted_state(root, &desired, booted_image);
    let plan = mco_render::plan::compute(&old.input, &desired.input, None);
    if let Err(e) = &plan.reconcilable {
        return Err(FirstbootError::Update {
            config,
            reason: e.to_string(),
        });
    }
    if plan.diff.is_empty {
        let mut dirty = BTreeSet::new();
        root.remove(ENCAPSULATED_PATH, &mut dirty)?;
        sync_dirs(&dirty).map_err(|e| RootError::io(ENCAPSULATED_PATH, e))?;
        return Ok(Firstboot::NoChanges { config });
    }
    let opts = ApplyOptions {
        check_drift: false,
        reboot: RebootMode::Skip,
        drained: true,
        policies: None,
    };
    let out = run_update(root, host, &old, &desired, opts, None);
    if out.status.state != NodeState::Done {
        return Err(FirstbootError::Update {
            config,
            reason: out.status.reason,
        });
    }
    root.rename(ENCAPSULATED_PATH, ENCAPSULATED_BAK_PATH)?;
    host.reboot()?;
    Ok(Firstboot::Rebooting {
        config,
        log: out.log,
    })
}

#[cfg(test)]
mod tests;
