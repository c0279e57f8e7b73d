//! Storage files: decode, resolve owners, save originals, write; release removed ones.

use std::collections::BTreeSet;

use mco_ignition::dataurl::decode_contents;
use mco_ignition::model::{Config, File, Systemd};

use super::orig::{release, save_original};
use super::owner::ownership;
use super::ApplyError;
use crate::journal::FsOp;
use crate::root::{Entry, HostRoot};

/// Default mode of files without one.
pub const DEFAULT_FILE_MODE: u32 = 0o644;
/// Mode of parent directories created for files.
pub const DEFAULT_DIR_MODE: u32 = 0o755;

/// Files upstream never deletes on removal (certificate bundles).
const KEEP_ON_REMOVAL: &[&str] = &[
    "/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem",
    "/etc/kubernetes/kubelet-ca.crt",
    "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt",
];
const IMAGE_CA_DIR: &str = "/etc/docker/certs.d";

/// A file's desired bytes, mode and owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredFile {
    /// Contents.
    pub data: Vec<u8>,
    /// Permission bits.
    pub mode: u32,
    /// Owner and group.
    pub owner: (u32, u32),
}

/// Decodes a config file into bytes, mode and owner (upstream's messages).
pub fn desired_file(root: &HostRoot, f: &File) -> Result<DesiredFile, ApplyError> {
    let fail = |cause: String| ApplyError::File {
        path: f.path.clone(),
        cause,
    };
    if !f.append.is_empty() {
        return Err(fail(
            "found an append section when writing files. Append is not supported".into(),
        ));
    }
    let data = match &f.contents.source {
        None => Vec::new(),
        Some(src) => decode_contents(src, f.contents.compression.as_deref())
            .map_err(|e| fail(format!("could not decode file: {e}")))?,
    };
    let mode = match f.mode {
        None => DEFAULT_FILE_MODE,
        Some(m) if (0..=0o7777).contains(&m) => m as u32,
        Some(m) => return Err(fail(format!("invalid mode {m:#o}"))),
    };
    let owner = ownership(root, &f.user, &f.group)
        .map_err(|e| fail(format!("failed to retrieve file ownership: {e}")))?;
    Ok(DesiredFile { data, mode, owner })
}

/// Whether a path is already in the desired state.
fn in_place(root: &HostRoot, path: &str, want: &DesiredFile) -> bool {
    matches!(root.entry(path), Ok(Entry::File { data, mode, uid, gid })
        if data == want.data && mode == want.mode && (uid, gid) == want.owner)
}

/// Changes writing every file of `new` that is not already in place (originals saved first).
pub fn plan_writes(
    root: &HostRoot,
    old: &Config,
    new: &Config,
    ops: &mut Vec<FsOp>,
) -> Result<(), ApplyError> {
    let managed: BTreeSet<&str> = old.storage.files.iter().map(|f| f.path.as_str()).collect();
    for f in &new.storage.files {
        let want = desired_file(root, f)?;
        // The original is recorded even when the file already holds the desired bytes, so a
        // later removal restores (or deletes) the right thing.
        save_original(
            root,
            &f.path,
            &f.path,
            managed.contains(f.path.as_str()),
            ops,
        )?;
        if in_place(root, &f.path, &want) {
            continue;
        }
        ops.push(FsOp::Write {
            path: f.path.clone(),
            data: want.data,
            mode: want.mode,
            owner: Some(want.owner),
            dir_mode: DEFAULT_DIR_MODE,
            replace_link: false,
        });
    }
    Ok(())
}

/// Whether `path` is a drop-in (`/etc/systemd/system/<unit>.d/<name>.conf`) the new config
/// declares.
fn is_declared_dropin(path: &str, systemd: &Systemd) -> bool {
    let Some(rest) = path.strip_prefix("/etc/systemd/system/") else {
        return false;
    };
    let Some((dir, name)) = rest.rsplit_once('/') else {
        return false;
    };
    let Some(unit) = dir.strip_suffix(".d") else {
        return false;
    };
    name.ends_with(".conf")
        && systemd
            .units
            .iter()
            .any(|u| u.name == unit && u.dropins.iter().any(|d| d.name == name))
}

/// Changes releasing files of `old` that `new` no longer has.
pub fn plan_removals(
    root: &HostRoot,
    old: &Config,
    new: &Config,
    ops: &mut Vec<FsOp>,
) -> Result<(), ApplyError> {
    let kept: BTreeSet<&str> = new.storage.files.iter().map(|f| f.path.as_str()).collect();
    for f in &old.storage.files {
        let p = f.path.as_str();
        if kept.contains(p) || KEEP_ON_REMOVAL.contains(&p) || p.contains(IMAGE_CA_DIR) {
            continue;
        }
        release(root, p, is_declared_dropin(p, &new.systemd), ops)?;
    }
    Ok(())
}
