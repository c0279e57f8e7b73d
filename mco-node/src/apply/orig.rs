//! Originals of files the agent takes over: `/etc/machine-config-daemon/orig/<path>.mcdorig`
//! holds a file that existed before, `/etc/machine-config-daemon/noorig/<path>.mcdnoorig` is an
//! empty stamp saying nothing did.

use crate::journal::FsOp;
use crate::root::{Entry, HostRoot, RootError};

/// Folder of saved originals.
pub const ORIG_DIR: &str = "/etc/machine-config-daemon/orig";
/// Folder of "no original" stamps.
pub const NOORIG_DIR: &str = "/etc/machine-config-daemon/noorig";

/// Where the original of `path` is saved.
pub fn orig_name(path: &str) -> String {
    format!("{ORIG_DIR}{path}.mcdorig")
}

/// The stamp saying `path` had no original.
pub fn noorig_name(path: &str) -> String {
    format!("{NOORIG_DIR}{path}.mcdnoorig")
}

/// Changes that record the original of `fpath` before it is first written, reading it from
/// `from` (the path itself, or its `/usr` default for units). Nothing when an original or a
/// stamp is already recorded. A file at `from` is saved unless the old config already managed
/// the path (then it is ours, not an original); otherwise a stamp is written. Upstream also asks
/// the RPM database; without one, every pre-existing unmanaged file counts as an original.
pub fn save_original(
    root: &HostRoot,
    from: &str,
    fpath: &str,
    managed_before: bool,
    ops: &mut Vec<FsOp>,
) -> Result<(), RootError> {
    if root.exists(&noorig_name(fpath))? || root.exists(&orig_name(fpath))? {
        return Ok(());
    }
    match root.entry(from)? {
        Entry::File {
            data,
            mode,
            uid,
            gid,
        } if !managed_before => ops.push(FsOp::Write {
            path: orig_name(fpath),
            data,
            mode,
            owner: Some((uid, gid)),
            dir_mode: 0o755,
            replace_link: false,
        }),
        _ => ops.push(FsOp::Write {
            path: noorig_name(fpath),
            data: Vec::new(),
            mode: 0o644,
            owner: None,
            dir_mode: 0o755,
            replace_link: false,
        }),
    }
    Ok(())
}

/// Changes that take `path` out of management: drop the stamp and delete the file, restore the
/// saved original (and drop it), or delete the file. `keep` leaves the file itself in place
/// (upstream keeps a file that became a systemd drop-in).
pub fn release(
    root: &HostRoot,
    path: &str,
    keep: bool,
    ops: &mut Vec<FsOp>,
) -> Result<(), RootError> {
    let stamp = noorig_name(path);
    let orig = orig_name(path);
    if root.exists(&stamp)? {
        ops.push(FsOp::Remove { path: stamp });
    } else if let Entry::File {
        data,
        mode,
        uid,
        gid,
    } = root.entry(&orig)?
    {
        ops.push(FsOp::Write {
            path: path.into(),
            data,
            mode,
            owner: Some((uid, gid)),
            dir_mode: 0o755,
            replace_link: true,
        });
        ops.push(FsOp::Remove { path: orig });
        return Ok(());
    }
    if !keep {
        ops.push(FsOp::Remove { path: path.into() });
    }
    Ok(())
}
