//! Leaving on-cluster layering: the config's files written again once the node has booted
//! back into the plain config's image.
//!
//! The files a layered image carries in `/etc` are the image's: an update that rebases back to
//! the rendered config's own `osImageURL` loses them at the reboot, even when they were written
//! before it (upstream's `finalizeRevertToNonLayering` in `pkg/daemon/update.go`). Upstream
//! writes the config to [`REVERT_FILE`] and a `machine-config-daemon-revert.service` that
//! re-bootstraps the node from it after the reboot, which reboots once more. Here the revert
//! update writes the same file inside its transaction (the OS part already staged the kernel
//! type and extensions with the rebase), and after the reboot [`finish`] writes the config's
//! files, units, SSH keys and password again, as a journaled update from an empty config
//! without OS changes, drift check or reboot, then removes the file.

use crate::desired_config::DesiredConfig;
use crate::host::Host;
use crate::root::{Entry, HostRoot};
use crate::state::NodeState;

use super::{run_update, ApplyOptions, RebootMode};

/// Where the config a node leaves layering for is kept until its files are written again
/// (upstream's revert service reads the same file).
pub const REVERT_FILE: &str = "/etc/mco/machineconfig-revert.json";

/// What [`finish`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finished {
    /// No revert was pending.
    Nothing,
    /// The config's files were written again; the log of the update.
    Rewritten(Vec<String>),
    /// Writing them failed (the file stays, for the next try): the reason.
    Failed(String),
}

/// Writes the files of the config in [`REVERT_FILE`] again, if there is one, and removes it.
pub fn finish(root: &HostRoot, host: &mut dyn Host) -> Finished {
    let bytes = match root.entry(REVERT_FILE) {
        Ok(Entry::File { data, .. }) => data,
        Ok(_) => return Finished::Nothing,
        Err(e) => return Finished::Failed(format!("{REVERT_FILE}: {e}")),
    };
    let config = match DesiredConfig::from_bytes(&bytes, REVERT_FILE) {
        Ok(c) => c,
        Err(e) => return Finished::Failed(e.to_string()),
    };
    // The same spec on both sides (no OS part), the kernel type left out so that a realtime
    // node's kernel is not refreshed; the saved config is written unchanged.
    let mut new = config.clone();
    new.input.kernel_type = String::new();
    // What is written: the files, the units, the SSH keys and password hashes (the rest of
    // the Ignition config stays the same on both sides, so the update is reconcilable).
    let mut old = new.clone();
    let c = &mut old.input.config;
    c.storage.files.clear();
    c.systemd.units.clear();
    for u in &mut c.passwd.users {
        u.ssh_authorized_keys.clear();
        u.password_hash = None;
    }
    let opts = ApplyOptions {
        check_drift: false,
        reboot: RebootMode::Skip,
        drained: true,
        policies: None,
    };
    let out = run_update(root, host, &old, &new, opts, None);
    if out.status.state != NodeState::Done {
        return Finished::Failed(format!(
            "writing the files of {} after leaving on-cluster layering: {}",
            config.name(),
            out.status.reason
        ));
    }
    let mut dirty = std::collections::BTreeSet::new();
    if let Err(e) = root.remove(REVERT_FILE, &mut dirty) {
        return Finished::Failed(format!("{REVERT_FILE}: {e}"));
    }
    let mut log = out.log;
    log.push(format!("removed {REVERT_FILE}"));
    Finished::Rewritten(log)
}
