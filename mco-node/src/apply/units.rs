//! systemd units and drop-ins under `/etc/systemd/system`, and their enablement.

use std::collections::BTreeSet;

use mco_ignition::model::{Config, Unit};

use super::orig::{release, save_original};
use super::ApplyError;
use crate::host::HostCall;
use crate::journal::FsOp;
use crate::root::{Entry, HostRoot};

/// Where units are written.
pub const SYSTEMD_DIR: &str = "/etc/systemd/system";
/// Mask target.
pub const DEV_NULL: &str = "/dev/null";

/// Directories where a unit file may already exist (vendor or admin units).
const UNIT_DIRS: &[&str] = &[
    "/etc/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
];

/// Path of a unit.
pub fn unit_path(name: &str) -> String {
    format!("{SYSTEMD_DIR}/{name}")
}

/// Path of a drop-in.
pub fn dropin_path(unit: &str, dropin: &str) -> String {
    format!("{SYSTEMD_DIR}/{unit}.d/{dropin}")
}

fn non_empty(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|c| !c.is_empty())
}

fn unit_file_exists(root: &HostRoot, name: &str) -> bool {
    UNIT_DIRS
        .iter()
        .any(|d| root.exists(&format!("{d}/{name}")).unwrap_or(false))
}

fn write(path: String, data: &str) -> FsOp {
    FsOp::Write {
        path,
        data: data.as_bytes().to_vec(),
        mode: 0o644,
        owner: None,
        dir_mode: 0o755,
        replace_link: true,
    }
}

/// Saves the `/usr` default of a unit path as its original, as upstream does on CoreOS.
fn save_usr_original(root: &HostRoot, path: &str, ops: &mut Vec<FsOp>) -> Result<(), ApplyError> {
    let usr = format!("/usr{path}");
    if matches!(root.entry(&usr)?, Entry::File { .. }) {
        save_original(root, &usr, path, false, ops)?;
    }
    Ok(())
}

/// Changes for one unit being written, and its enablement call.
fn plan_unit(
    root: &HostRoot,
    u: &Unit,
    ops: &mut Vec<FsOp>,
    enable: &mut Vec<String>,
    disable: &mut Vec<String>,
    calls: &mut Vec<HostCall>,
) -> Result<(), ApplyError> {
    for d in &u.dropins {
        let p = dropin_path(&u.name, &d.name);
        match non_empty(&d.contents) {
            None => {
                if root.exists(&p)? {
                    ops.push(FsOp::Remove { path: p });
                }
            }
            Some(c) => {
                save_usr_original(root, &p, ops)?;
                ops.push(write(p, c));
            }
        }
    }
    let p = unit_path(&u.name);
    if u.mask == Some(true) {
        ops.push(FsOp::Symlink {
            path: p,
            target: DEV_NULL.into(),
        });
    } else if let Some(c) = non_empty(&u.contents) {
        save_usr_original(root, &p, ops)?;
        ops.push(write(p, c));
    } else if u.mask == Some(false) && root.exists(&p)? {
        ops.push(FsOp::Remove { path: p });
    }
    match u.enabled {
        Some(e) if non_empty(&u.contents).is_some() || unit_file_exists(root, &u.name) => {
            if e {
                enable.push(u.name.clone())
            } else {
                disable.push(u.name.clone())
            }
        }
        Some(_) => {}
        None => calls.push(HostCall::Preset {
            unit: u.name.clone(),
        }),
    }
    Ok(())
}

/// Changes writing the added and updated units of `new`, and the enable/disable/preset calls
/// that follow them.
pub fn plan_writes(
    root: &HostRoot,
    new: &Config,
    changed: &BTreeSet<&str>,
    ops: &mut Vec<FsOp>,
) -> Result<Vec<HostCall>, ApplyError> {
    let (mut enable, mut disable, mut calls) = (Vec::new(), Vec::new(), Vec::new());
    for u in new
        .systemd
        .units
        .iter()
        .filter(|u| changed.contains(u.name.as_str()))
    {
        plan_unit(root, u, ops, &mut enable, &mut disable, &mut calls)?;
    }
    if !enable.is_empty() {
        calls.push(HostCall::Enable { units: enable });
    }
    if !disable.is_empty() {
        calls.push(HostCall::Disable { units: disable });
    }
    Ok(calls)
}

/// Changes releasing drop-ins and units that `new` no longer has; removed units are preset
/// first (returned calls run before the changes).
pub fn plan_removals(
    root: &HostRoot,
    old: &Config,
    new: &Config,
    ops: &mut Vec<FsOp>,
) -> Result<Vec<HostCall>, ApplyError> {
    let mut new_paths = BTreeSet::new();
    for u in &new.systemd.units {
        new_paths.insert(unit_path(&u.name));
        for d in &u.dropins {
            new_paths.insert(dropin_path(&u.name, &d.name));
        }
    }
    let mut calls = Vec::new();
    for u in &old.systemd.units {
        for d in &u.dropins {
            let p = dropin_path(&u.name, &d.name);
            if !new_paths.contains(&p) {
                release(root, &p, false, ops)?;
            }
        }
        let p = unit_path(&u.name);
        if !new_paths.contains(&p) {
            calls.push(HostCall::Preset {
                unit: u.name.clone(),
            });
            release(root, &p, false, ops)?;
        }
    }
    Ok(calls)
}

/// Host calls that put the enablement of `units` back as `old` has it.
pub fn undo_calls(old: &Config, units: &[String]) -> Vec<HostCall> {
    let mut out = Vec::new();
    for name in units {
        let call = match old.systemd.units.iter().find(|u| &u.name == name) {
            Some(u) => match u.enabled {
                Some(true) => HostCall::Enable {
                    units: vec![name.clone()],
                },
                Some(false) => HostCall::Disable {
                    units: vec![name.clone()],
                },
                None => HostCall::Preset { unit: name.clone() },
            },
            None => HostCall::Disable {
                units: vec![name.clone()],
            },
        };
        out.push(call);
    }
    out
}
