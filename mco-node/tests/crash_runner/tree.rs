//! Whole-tree snapshots (type, contents, mode, owner, link target of every entry), their
//! differences, and copies that keep modes and owners.

use std::collections::BTreeMap;
use std::os::unix::fs::{lchown, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// One entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A directory.
    Dir { mode: u32, uid: u32, gid: u32 },
    /// A regular file.
    File {
        mode: u32,
        uid: u32,
        gid: u32,
        data: Vec<u8>,
    },
    /// A symlink.
    Link(PathBuf),
}

impl Node {
    fn describe(&self) -> String {
        match self {
            Node::Dir { mode, uid, gid } => format!("directory {mode:04o} {uid}:{gid}"),
            Node::File {
                mode,
                uid,
                gid,
                data,
            } => {
                let text = String::from_utf8_lossy(data);
                let head: String = text.chars().take(40).collect();
                format!("file {mode:04o} {uid}:{gid} {:?}", head)
            }
            Node::Link(t) => format!("symlink -> {}", t.display()),
        }
    }
}

/// Every entry under a base, by relative path.
pub type Snapshot = BTreeMap<String, Node>;

/// Reads every entry under `base` whose relative path `keep` accepts.
pub fn snapshot(base: &Path, keep: &dyn Fn(&str) -> bool) -> std::io::Result<Snapshot> {
    let mut out = Snapshot::new();
    walk(base, base, keep, &mut out)?;
    Ok(out)
}

fn walk(
    base: &Path,
    dir: &Path,
    keep: &dyn Fn(&str) -> bool,
    out: &mut Snapshot,
) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let path = e.path();
        let rel = path
            .strip_prefix(base)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        if !keep(&rel) {
            continue;
        }
        let md = std::fs::symlink_metadata(&path)?;
        let (mode, uid, gid) = (md.mode() & 0o7777, md.uid(), md.gid());
        let node = if md.file_type().is_symlink() {
            Node::Link(std::fs::read_link(&path)?)
        } else if md.is_dir() {
            walk(base, &path, keep, out)?;
            Node::Dir { mode, uid, gid }
        } else {
            Node::File {
                mode,
                uid,
                gid,
                data: std::fs::read(&path)?,
            }
        };
        out.insert(rel, node);
    }
    Ok(())
}

/// How `got` differs from `want`, one line per path.
pub fn diff(want: &Snapshot, got: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    for (p, w) in want {
        match got.get(p) {
            None => out.push(format!("{p}: missing (want {})", w.describe())),
            Some(g) if g != w => out.push(format!("{p}: {} (want {})", g.describe(), w.describe())),
            Some(_) => {}
        }
    }
    for (p, g) in got {
        if !want.contains_key(p) {
            out.push(format!("{p}: unexpected {}", g.describe()));
        }
    }
    out
}

/// Copies the tree `src` to `dst` (which must not exist), keeping modes, owners and links.
pub fn copy_tree(src: &Path, dst: &Path) -> std::io::Result<()> {
    let md = std::fs::symlink_metadata(src)?;
    if md.file_type().is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(src)?, dst)?;
    } else if md.is_dir() {
        std::fs::create_dir(dst)?;
        for e in std::fs::read_dir(src)? {
            let e = e?;
            copy_tree(&e.path(), &dst.join(e.file_name()))?;
        }
        std::fs::set_permissions(dst, std::fs::Permissions::from_mode(md.mode() & 0o7777))?;
    } else {
        std::fs::copy(src, dst)?;
    }
    lchown(dst, Some(md.uid()), Some(md.gid()))?;
    if md.is_file() {
        // chown clears set-id bits; put the mode back as it was.
        std::fs::set_permissions(dst, std::fs::Permissions::from_mode(md.mode() & 0o7777))?;
    }
    Ok(())
}
