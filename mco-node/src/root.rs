//! The host root: every path the agent touches is resolved under it.
//!
//! Config paths are absolute host paths (`/etc/foo`). They are resolved under the root one
//! component at a time: `..` is refused outright, a symlink on the way is followed only when its
//! target stays inside the root (so `/home -> var/home` works, `/etc/x -> /tmp` does not), and the
//! last component is never followed. Writes go to a temporary file in the same directory opened
//! with `O_NOFOLLOW | O_EXCL`, are synced, then renamed over the target; removals unlink the entry
//! itself.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// At most this many symlinks are followed while resolving one path.
const MAX_LINKS: usize = 40;

/// Why a path could not be resolved or touched under the root.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    /// The path is not absolute.
    #[error("{0}: path is not absolute")]
    NotAbsolute(String),
    /// The path holds a `..` component.
    #[error("{0}: path contains \"..\"")]
    DotDot(String),
    /// A symlink on the way points outside the root.
    #[error("{path}: symlink {link} points outside the root (to {target})")]
    SymlinkEscape {
        /// The config path.
        path: String,
        /// The symlink met on the way.
        link: PathBuf,
        /// Its target.
        target: PathBuf,
    },
    /// Too many symlinks on the way.
    #[error("{0}: too many levels of symbolic links")]
    TooManyLinks(String),
    /// A component on the way is not a directory.
    #[error("{path}: {component} is not a directory")]
    NotADirectory {
        /// The config path.
        path: String,
        /// The offending component.
        component: PathBuf,
    },
    /// The last component is a symlink where a regular file is expected.
    #[error("{0}: refusing to write through a symlink")]
    FinalSymlink(String),
    /// The last component is a directory where a file is expected.
    #[error("{0}: is a directory")]
    IsDirectory(String),
    /// An I/O error.
    #[error("{path}: {source}")]
    Io {
        /// The path being worked on.
        path: String,
        /// The error.
        source: io::Error,
    },
}

impl RootError {
    /// An I/O error at `path`.
    pub fn io(path: &str, source: io::Error) -> Self {
        RootError::Io {
            path: path.to_string(),
            source,
        }
    }
}

/// What sits at a path (not following a final symlink).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// Nothing.
    Absent,
    /// A regular file with its bytes and metadata.
    File {
        /// Contents.
        data: Vec<u8>,
        /// Permission bits.
        mode: u32,
        /// Owner.
        uid: u32,
        /// Group.
        gid: u32,
    },
    /// A symbolic link.
    Symlink {
        /// Target as written.
        target: PathBuf,
    },
    /// A directory.
    Directory,
    /// Anything else (device, socket, fifo).
    Other,
}

/// A host root directory.
#[derive(Debug, Clone)]
pub struct HostRoot {
    base: PathBuf,
}

impl HostRoot {
    /// Opens a root; the directory must exist.
    pub fn new(base: impl AsRef<Path>) -> Result<HostRoot, RootError> {
        let b = base.as_ref();
        let base = fs::canonicalize(b).map_err(|e| RootError::io(&b.display().to_string(), e))?;
        Ok(HostRoot { base })
    }

    /// The root directory (canonical).
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// Whether this root is the real `/`.
    pub fn is_real_root(&self) -> bool {
        self.base == Path::new("/")
    }

    /// Resolves an absolute host path under the root. Intermediate symlinks are followed while
    /// they stay inside the root; the last component is returned unresolved.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, RootError> {
        let mut queue = lexical_components(path)?;
        let mut cur = self.base.clone();
        let mut links = 0;
        let mut missing = false;
        while let Some(c) = queue.first().cloned() {
            queue.remove(0);
            let next = cur.join(&c);
            if queue.is_empty() || missing {
                cur = next;
                continue;
            }
            match fs::symlink_metadata(&next) {
                Ok(m) if m.file_type().is_symlink() => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(RootError::TooManyLinks(path.into()));
                    }
                    let target = fs::read_link(&next).map_err(|e| RootError::io(path, e))?;
                    let joined = if target.is_absolute() {
                        target.clone()
                    } else {
                        cur.join(&target)
                    };
                    let norm = normalize(&joined);
                    let rel = match norm.strip_prefix(&self.base) {
                        Ok(r) => r.to_path_buf(),
                        Err(_) => {
                            return Err(RootError::SymlinkEscape {
                                path: path.into(),
                                link: next,
                                target,
                            })
                        }
                    };
                    let mut rest: Vec<OsString> =
                        rel.components().map(|c| c.as_os_str().to_owned()).collect();
                    rest.append(&mut queue);
                    queue = rest;
                    cur = self.base.clone();
                }
                Ok(m) if m.is_dir() => cur = next,
                Ok(_) => {
                    return Err(RootError::NotADirectory {
                        path: path.into(),
                        component: next,
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    missing = true;
                    cur = next;
                }
                Err(e) => return Err(RootError::io(path, e)),
            }
        }
        Ok(cur)
    }

    /// Reads what sits at a host path without following a final symlink.
    pub fn entry(&self, path: &str) -> Result<Entry, RootError> {
        let p = self.resolve(path)?;
        read_entry(&p).map_err(|e| RootError::io(path, e))
    }

    /// Whether anything (even a dangling symlink) sits at the path.
    pub fn exists(&self, path: &str) -> Result<bool, RootError> {
        Ok(!matches!(self.entry(path)?, Entry::Absent))
    }

    /// Creates the missing parent directories of a resolved path with `mode`.
    fn make_parents(&self, path: &str, resolved: &Path, mode: u32) -> Result<(), RootError> {
        if let Some(parent) = resolved.parent() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(mode)
                .create(parent)
                .map_err(|e| RootError::io(path, e))?;
        }
        Ok(())
    }

    /// Atomically replaces `path` with a regular file: temp file in the same directory, data
    /// synced, mode and owner set, renamed over the target. Parent directories are created with
    /// `dir_mode`. A symlink at the target is refused unless `replace_link` is set (then the link
    /// itself is replaced, never followed). The parent directory is added to `dirty` for the
    /// caller to sync.
    #[allow(clippy::too_many_arguments)]
    pub fn write_atomic(
        &self,
        path: &str,
        data: &[u8],
        mode: u32,
        owner: Option<(u32, u32)>,
        dir_mode: u32,
        replace_link: bool,
        dirty: &mut BTreeSet<PathBuf>,
    ) -> Result<(), RootError> {
        let target = self.resolve(path)?;
        match fs::symlink_metadata(&target) {
            Ok(m) if m.file_type().is_symlink() && !replace_link => {
                return Err(RootError::FinalSymlink(path.into()))
            }
            Ok(m) if m.is_dir() => return Err(RootError::IsDirectory(path.into())),
            _ => {}
        }
        self.make_parents(path, &target, dir_mode)?;
        let tmp = temp_name(&target);
        remove_if_present(&tmp).map_err(|e| RootError::io(path, e))?;
        let res = (|| -> io::Result<()> {
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&tmp)?;
            f.set_permissions(fs::Permissions::from_mode(mode))?;
            f.write_all(data)?;
            if let Some((uid, gid)) = owner {
                let m = f.metadata()?;
                if m.uid() != uid || m.gid() != gid {
                    std::os::unix::fs::fchown(&f, Some(uid), Some(gid))?;
                    // chown may clear setuid/setgid bits: set the mode again.
                    f.set_permissions(fs::Permissions::from_mode(mode))?;
                }
            }
            f.sync_all()?;
            fs::rename(&tmp, &target)
        })();
        if let Err(e) = res {
            let _ = fs::remove_file(&tmp);
            return Err(RootError::io(path, e));
        }
        if let Some(parent) = target.parent() {
            dirty.insert(parent.to_path_buf());
        }
        Ok(())
    }

    /// Atomically replaces `path` with a symlink to `link_target`.
    pub fn symlink_atomic(
        &self,
        path: &str,
        link_target: &Path,
        dirty: &mut BTreeSet<PathBuf>,
    ) -> Result<(), RootError> {
        let target = self.resolve(path)?;
        if fs::symlink_metadata(&target).is_ok_and(|m| m.is_dir()) {
            return Err(RootError::IsDirectory(path.into()));
        }
        self.make_parents(path, &target, 0o755)?;
        let tmp = temp_name(&target);
        remove_if_present(&tmp).map_err(|e| RootError::io(path, e))?;
        std::os::unix::fs::symlink(link_target, &tmp).map_err(|e| RootError::io(path, e))?;
        if let Err(e) = fs::rename(&tmp, &target) {
            let _ = fs::remove_file(&tmp);
            return Err(RootError::io(path, e));
        }
        if let Some(parent) = target.parent() {
            dirty.insert(parent.to_path_buf());
        }
        Ok(())
    }

    /// Removes the entry at `path` (a file or symlink, never followed); absent is fine.
    pub fn remove(&self, path: &str, dirty: &mut BTreeSet<PathBuf>) -> Result<(), RootError> {
        let target = self.resolve(path)?;
        match fs::symlink_metadata(&target) {
            Ok(m) if m.is_dir() => return Err(RootError::IsDirectory(path.into())),
            Ok(_) => fs::remove_file(&target).map_err(|e| RootError::io(path, e))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(RootError::io(path, e)),
        }
        if let Some(parent) = target.parent() {
            dirty.insert(parent.to_path_buf());
        }
        Ok(())
    }

    /// Renames the entry at `from` to `to` (both under the root, neither followed) and syncs
    /// the directories involved.
    pub fn rename(&self, from: &str, to: &str) -> Result<(), RootError> {
        let (src, dst) = (self.resolve(from)?, self.resolve(to)?);
        self.make_parents(to, &dst, 0o755)?;
        fs::rename(&src, &dst).map_err(|e| RootError::io(from, e))?;
        let dirs: BTreeSet<PathBuf> = [&src, &dst]
            .iter()
            .filter_map(|p| p.parent().map(Path::to_path_buf))
            .collect();
        sync_dirs(&dirs).map_err(|e| RootError::io(to, e))
    }

    /// Removes a leftover temporary file for `path` (from an interrupted write).
    pub fn remove_temp(&self, path: &str) -> Result<(), RootError> {
        let target = self.resolve(path)?;
        remove_if_present(&temp_name(&target)).map_err(|e| RootError::io(path, e))
    }

    /// Sets the mode of an existing directory (not following a final symlink).
    pub fn chmod_dir(&self, path: &str, mode: u32) -> Result<(), RootError> {
        let p = self.resolve(path)?;
        match fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => fs::set_permissions(&p, fs::Permissions::from_mode(mode))
                .map_err(|e| RootError::io(path, e)),
            Ok(_) => Err(RootError::NotADirectory {
                path: path.into(),
                component: p,
            }),
            Err(e) => Err(RootError::io(path, e)),
        }
    }

    /// Creates a directory and its parents with `mode` (`mode` is applied to the last one
    /// explicitly, whatever the umask).
    pub fn mkdir_all(&self, path: &str, mode: u32) -> Result<(), RootError> {
        let p = self.resolve(path)?;
        match fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(m) if m.file_type().is_symlink() => Err(RootError::FinalSymlink(path.into())),
            Ok(_) => Err(RootError::NotADirectory {
                path: path.into(),
                component: p,
            }),
            Err(_) => {
                fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o755)
                    .create(&p)
                    .map_err(|e| RootError::io(path, e))?;
                fs::set_permissions(&p, fs::Permissions::from_mode(mode))
                    .map_err(|e| RootError::io(path, e))
            }
        }
    }

    /// Makes sure a directory exists (parents 0755) with `mode` and `owner`; a symlink at the
    /// path is refused.
    pub fn ensure_dir(
        &self,
        path: &str,
        mode: u32,
        owner: Option<(u32, u32)>,
    ) -> Result<(), RootError> {
        self.mkdir_all(path, mode)?;
        let p = self.resolve(path)?;
        fs::set_permissions(&p, fs::Permissions::from_mode(mode))
            .map_err(|e| RootError::io(path, e))?;
        if let Some((uid, gid)) = owner {
            let m = fs::symlink_metadata(&p).map_err(|e| RootError::io(path, e))?;
            if (m.uid(), m.gid()) != (uid, gid) {
                std::os::unix::fs::lchown(&p, Some(uid), Some(gid))
                    .map_err(|e| RootError::io(path, e))?;
            }
        }
        Ok(())
    }

    /// The entries of a directory, sorted by name, each with whether it is a directory (a
    /// symlink is not followed, so it is not one); `None` when nothing is at the path.
    pub fn list_dir(&self, path: &str) -> Result<Option<Vec<(String, bool)>>, RootError> {
        let p = self.resolve(path)?;
        let entries = match fs::read_dir(&p) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(RootError::io(path, e)),
        };
        let mut out = Vec::new();
        for e in entries {
            let e = e.map_err(|e| RootError::io(path, e))?;
            let is_dir = e.file_type().map_err(|e| RootError::io(path, e))?.is_dir();
            out.push((e.file_name().to_string_lossy().into_owned(), is_dir));
        }
        out.sort();
        Ok(Some(out))
    }

    /// Removes a directory and everything in it (symlinks inside are removed, never
    /// followed); absent is fine. The parent is added to `dirty`.
    pub fn remove_tree(&self, path: &str, dirty: &mut BTreeSet<PathBuf>) -> Result<(), RootError> {
        let p = self.resolve(path)?;
        match fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => fs::remove_dir_all(&p).map_err(|e| RootError::io(path, e))?,
            Ok(_) => {
                return Err(RootError::NotADirectory {
                    path: path.into(),
                    component: p,
                })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(RootError::io(path, e)),
        }
        if let Some(parent) = p.parent() {
            dirty.insert(parent.to_path_buf());
        }
        Ok(())
    }

    /// Removes an empty directory; a missing or non-empty one is left alone.
    pub fn remove_empty_dir(&self, path: &str) -> Result<(), RootError> {
        let p = self.resolve(path)?;
        match fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => match fs::remove_dir(&p) {
                Ok(()) => Ok(()),
                Err(e)
                    if e.kind() == io::ErrorKind::DirectoryNotEmpty
                        || e.kind() == io::ErrorKind::NotFound =>
                {
                    Ok(())
                }
                Err(e) => Err(RootError::io(path, e)),
            },
            _ => Ok(()),
        }
    }
}

/// Syncs each directory (so renames and unlinks in it are durable).
pub fn sync_dirs(dirs: &BTreeSet<PathBuf>) -> io::Result<()> {
    for d in dirs {
        match File::open(d) {
            Ok(f) => f.sync_all()?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads what sits at an already resolved path without following it.
pub fn read_entry(p: &Path) -> io::Result<Entry> {
    let m = match fs::symlink_metadata(p) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Entry::Absent),
        Err(e) => return Err(e),
    };
    let ft = m.file_type();
    if ft.is_symlink() {
        return Ok(Entry::Symlink {
            target: fs::read_link(p)?,
        });
    }
    if ft.is_dir() {
        return Ok(Entry::Directory);
    }
    if !ft.is_file() {
        return Ok(Entry::Other);
    }
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(p)?;
    let meta = f.metadata()?;
    let mut data = Vec::with_capacity(meta.len() as usize);
    f.read_to_end(&mut data)?;
    Ok(Entry::File {
        data,
        mode: meta.mode() & 0o7777,
        uid: meta.uid(),
        gid: meta.gid(),
    })
}

fn remove_if_present(p: &Path) -> io::Result<()> {
    match fs::remove_file(p) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The temporary sibling used while replacing `target` (one writer at a time).
fn temp_name(target: &Path) -> PathBuf {
    let mut name = OsString::from(".");
    name.push(target.file_name().unwrap_or_default());
    name.push(".mcd-tmp");
    target.with_file_name(name)
}

/// Splits an absolute config path into its normal components, refusing `..`.
fn lexical_components(path: &str) -> Result<Vec<OsString>, RootError> {
    if !path.starts_with('/') {
        return Err(RootError::NotAbsolute(path.into()));
    }
    let mut out = Vec::new();
    for c in Path::new(path).components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir => return Err(RootError::DotDot(path.into())),
            Component::Normal(s) => out.push(s.to_owned()),
            Component::Prefix(_) => return Err(RootError::NotAbsolute(path.into())),
        }
    }
    Ok(out)
}

/// Lexically normalises an absolute path (`..` pops, `.` vanishes).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(s) => out.push(s),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_pops() {
        assert_eq!(
            normalize(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
        assert_eq!(normalize(Path::new("/../..")), PathBuf::from("/"));
    }

    #[test]
    fn components_refuse_dotdot() {
        assert!(matches!(
            lexical_components("/etc/../x"),
            Err(RootError::DotDot(_))
        ));
        assert!(matches!(
            lexical_components("etc/x"),
            Err(RootError::NotAbsolute(_))
        ));
        assert_eq!(lexical_components("/etc//./x").unwrap().len(), 2);
    }
}
