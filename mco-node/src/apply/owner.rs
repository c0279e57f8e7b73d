//! Owners by id or by name, names resolved in the root's `/etc/passwd` and `/etc/group`.

use mco_ignition::model::NodeOwner;

use crate::root::{Entry, HostRoot};

/// Looks up a name in a colon-separated database (`name:x:id:...`).
fn lookup(root: &HostRoot, db: &str, name: &str) -> Option<u32> {
    let Ok(Entry::File { data, .. }) = root.entry(db) else {
        return None;
    };
    String::from_utf8_lossy(&data).lines().find_map(|line| {
        let mut f = line.split(':');
        (f.next()? == name).then_some(())?;
        f.next()?;
        f.next()?.trim().parse().ok()
    })
}

/// The uid of a user in the root's `/etc/passwd`.
pub fn lookup_uid(root: &HostRoot, name: &str) -> Result<u32, String> {
    lookup(root, "/etc/passwd", name)
        .ok_or_else(|| format!("failed to retrieve UserID for username: {name}"))
}

/// The gid of a group in the root's `/etc/group`.
pub fn lookup_gid(root: &HostRoot, name: &str) -> Result<u32, String> {
    lookup(root, "/etc/group", name)
        .ok_or_else(|| format!("failed to retrieve GroupID for group: {name}"))
}

fn id(v: i64) -> Result<u32, String> {
    u32::try_from(v).map_err(|_| format!("invalid id {v}"))
}

/// Resolves a file's owner and group; root (0) when unset, id before name.
pub fn ownership(
    root: &HostRoot,
    user: &NodeOwner,
    group: &NodeOwner,
) -> Result<(u32, u32), String> {
    let uid = match (&user.id, &user.name) {
        (Some(i), _) => id(*i)?,
        (None, Some(n)) if !n.is_empty() => lookup_uid(root, n)?,
        _ => 0,
    };
    let gid = match (&group.id, &group.name) {
        (Some(i), _) => id(*i)?,
        (None, Some(n)) if !n.is_empty() => lookup_gid(root, n)?,
        _ => 0,
    };
    Ok((uid, gid))
}
