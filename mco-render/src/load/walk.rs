//! Listing the files under the paths a command is given: each folder's entries sorted by path,
//! recursively, following links, and each file listed once.
//!
//! A link to a folder is entered like a folder, unless that folder is one the walk is inside
//! (a cycle: `loop -> .`) or has already walked (a second way to the same folder): it is then
//! skipped and said so. A file reached by two paths (a link beside its target, or a path given
//! twice) is listed once, under the first path in walk order. A link that cannot be followed
//! (its target is gone, or it points at itself) is a read error when its name is one of the
//! files asked for, and skipped with a warning otherwise (it may have named a folder).
//!
//! Files and folders are told apart by their device and inode numbers (Unix), elsewhere by
//! their canonical path.

use super::{io_error, LoadError};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// What identifies a file or folder whatever path reaches it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum FileId {
    /// Device and inode.
    #[cfg(unix)]
    Inode(u64, u64),
    /// The canonical path (no links, absolute).
    #[cfg(not(unix))]
    Canonical(PathBuf),
}

impl FileId {
    /// The id of what `path` names (following links), with its metadata.
    fn of(path: &Path) -> std::io::Result<(FileId, std::fs::Metadata)> {
        let meta = std::fs::metadata(path)?;
        #[cfg(unix)]
        let id = {
            use std::os::unix::fs::MetadataExt;
            FileId::Inode(meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let id = FileId::Canonical(std::fs::canonicalize(path)?);
        Ok((id, meta))
    }
}

/// A path the walk did not take, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The path as the walk reached it (a link, or a path given twice).
    pub path: PathBuf,
    /// Why.
    pub reason: SkipReason,
}

/// Why a path was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// A link to a folder the walk is inside (`loop -> .`, `up -> ..`): a cycle.
    Cycle {
        /// That folder, as the walk reached it.
        folder: PathBuf,
    },
    /// The same folder as one walked before (two links to one folder, or a folder and a
    /// link to it): its files are read once, there.
    SameFolder {
        /// The path it was walked under.
        first: PathBuf,
    },
    /// The same file as one listed before (a link and its target, or a path given twice).
    SameFile {
        /// The path it is read under.
        first: PathBuf,
    },
    /// A link that cannot be followed, whose name is not one of the files asked for (had it
    /// named a folder, the files under it would have been read).
    BrokenLink {
        /// Where it points.
        target: PathBuf,
        /// Why it cannot be followed.
        message: String,
    },
}

impl Skipped {
    /// Whether the user should hear of it as a warning: a cycle or a broken link (the same
    /// file or folder reached twice is what links are for).
    pub fn is_warning(&self) -> bool {
        matches!(
            self.reason,
            SkipReason::Cycle { .. } | SkipReason::BrokenLink { .. }
        )
    }
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.reason {
            SkipReason::Cycle { folder } => write!(
                f,
                "{path}: a link to {}, a folder already being read (a cycle); not followed",
                folder.display()
            ),
            SkipReason::SameFolder { first } => write!(
                f,
                "{path}: the same folder as {}; its files are read once, there",
                first.display()
            ),
            SkipReason::SameFile { first } => {
                write!(f, "{path}: the same file as {}; read once", first.display())
            }
            SkipReason::BrokenLink { target, message } => write!(
                f,
                "{path}: a link to {} that cannot be followed, skipped: {message}",
                target.display()
            ),
        }
    }
}

/// The files found under some paths, in walk order, and what was skipped.
#[derive(Debug, Default)]
pub struct Listing {
    /// The files, each once.
    pub files: Vec<PathBuf>,
    /// The paths not taken, in walk order.
    pub skipped: Vec<Skipped>,
}

/// A walk over one or more paths, remembering every file and folder it has met so that each
/// is read once.
pub(super) struct Walk<'a> {
    keep: &'a dyn Fn(&Path) -> bool,
    files: HashMap<FileId, PathBuf>,
    folders: HashMap<FileId, PathBuf>,
    /// The folders the walk is inside, outermost first.
    inside: Vec<(FileId, PathBuf)>,
    out: Listing,
}

impl<'a> Walk<'a> {
    /// A walk keeping the files `keep` picks (folders are always entered).
    pub(super) fn new(keep: &'a dyn Fn(&Path) -> bool) -> Walk<'a> {
        Walk {
            keep,
            files: HashMap::new(),
            folders: HashMap::new(),
            inside: Vec::new(),
            out: Listing::default(),
        }
    }

    /// What was listed so far.
    pub(super) fn finish(self) -> Listing {
        self.out
    }

    /// Lists standard input (`-`) in its place among the paths: it is no file of the tree.
    pub(super) fn add_stdin(&mut self, path: &Path) {
        self.out.files.push(path.to_path_buf());
    }

    /// Adds a path given by the user: a folder is walked, a file is listed whatever its
    /// name; anything else is [`LoadError::Missing`].
    pub(super) fn add_root(&mut self, path: &Path) -> Result<(), LoadError> {
        let (id, meta) = match FileId::of(path) {
            Ok(found) => found,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(LoadError::Missing {
                    path: path.display().to_string(),
                })
            }
            Err(e) => return Err(io_error(path)(e)),
        };
        if meta.is_dir() {
            self.folder(path, id)
        } else {
            self.file(path, id);
            Ok(())
        }
    }

    /// Lists a file unless it was listed before.
    fn file(&mut self, path: &Path, id: FileId) {
        match self.files.get(&id) {
            Some(first) => self.out.skipped.push(Skipped {
                path: path.to_path_buf(),
                reason: SkipReason::SameFile {
                    first: first.clone(),
                },
            }),
            None => {
                self.files.insert(id, path.to_path_buf());
                self.out.files.push(path.to_path_buf());
            }
        }
    }

    /// Walks a folder unless the walk is inside it or walked it before.
    fn folder(&mut self, path: &Path, id: FileId) -> Result<(), LoadError> {
        if let Some((_, folder)) = self.inside.iter().find(|(i, _)| *i == id) {
            self.out.skipped.push(Skipped {
                path: path.to_path_buf(),
                reason: SkipReason::Cycle {
                    folder: folder.clone(),
                },
            });
            return Ok(());
        }
        if let Some(first) = self.folders.get(&id) {
            self.out.skipped.push(Skipped {
                path: path.to_path_buf(),
                reason: SkipReason::SameFolder {
                    first: first.clone(),
                },
            });
            return Ok(());
        }
        self.folders.insert(id.clone(), path.to_path_buf());
        self.inside.push((id, path.to_path_buf()));
        let walked = self.entries(path);
        self.inside.pop();
        walked
    }

    /// Walks a folder's entries, sorted by path.
    fn entries(&mut self, dir: &Path) -> Result<(), LoadError> {
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io_error(dir))? {
            let entry = entry.map_err(io_error(dir))?;
            let is_link = entry.file_type().map_err(io_error(dir))?.is_symlink();
            entries.push((entry.path(), is_link));
        }
        entries.sort();
        for (p, is_link) in entries {
            let (id, meta) = match FileId::of(&p) {
                Ok(found) => found,
                Err(e) if is_link => {
                    self.broken_link(&p, e)?;
                    continue;
                }
                Err(e) => return Err(io_error(&p)(e)),
            };
            if meta.is_dir() {
                self.folder(&p, id)?;
            } else if (self.keep)(&p) {
                self.file(&p, id);
            }
        }
        Ok(())
    }

    /// A link that cannot be followed: an error when it names a file asked for, else skipped.
    fn broken_link(&mut self, link: &Path, e: std::io::Error) -> Result<(), LoadError> {
        let target = std::fs::read_link(link).unwrap_or_default();
        if (self.keep)(link) {
            return Err(LoadError::Io {
                path: link.display().to_string(),
                source: std::io::Error::new(
                    e.kind(),
                    format!(
                        "a link to {} that cannot be followed: {e}",
                        target.display()
                    ),
                ),
            });
        }
        self.out.skipped.push(Skipped {
            path: link.to_path_buf(),
            reason: SkipReason::BrokenLink {
                target,
                message: e.to_string(),
            },
        });
        Ok(())
    }
}
