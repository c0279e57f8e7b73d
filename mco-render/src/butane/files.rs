//! The files a config may embed (`local:` contents, `contents_local`, SSH key files, trees),
//! held in memory: relative `/`-separated paths to bytes and modes.

use std::collections::{BTreeMap, BTreeSet};

/// One regular file of a [`FileSet`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalFile {
    /// The contents.
    pub bytes: Vec<u8>,
    /// The permission bits (`0o644`, `0o755`); trees keep 0755 when any execute bit is set.
    pub mode: u32,
}

/// The files directory (`--files-dir`), read into memory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileSet {
    /// How messages name the directory (`{files}`, or the path given on the command line).
    pub root: String,
    files: BTreeMap<String, LocalFile>,
    dirs: BTreeSet<String>,
}

/// Why a local path cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalError {
    /// `..` leads outside the files directory.
    Escapes,
    /// Nothing there (the message Go's `os.Open` gives).
    Missing(String),
    /// A directory where a file was expected.
    IsDirectory(String),
}

impl LocalError {
    /// Butane's wording.
    pub fn message(&self) -> String {
        match self {
            LocalError::Escapes => "local file path traverses outside the files directory".into(),
            LocalError::Missing(p) => format!("open {p}: no such file or directory"),
            LocalError::IsDirectory(p) => format!("read {p}: is a directory"),
        }
    }
}

/// `path` made relative and clean (`a/./b/../c` is `a/c`), or `None` when it leaves the root.
pub fn clean_relative(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

impl FileSet {
    /// An empty set whose directory messages call `root`.
    pub fn new(root: impl Into<String>) -> FileSet {
        FileSet {
            root: root.into(),
            ..FileSet::default()
        }
    }

    /// Adds a regular file at `path` (relative, `/`-separated), and its parent directories.
    pub fn insert(&mut self, path: &str, bytes: Vec<u8>, mode: u32) {
        let Some(clean) = clean_relative(path) else {
            return;
        };
        let mut dir = clean.as_str();
        while let Some((parent, _)) = dir.rsplit_once('/') {
            self.dirs.insert(parent.to_string());
            dir = parent;
        }
        self.files.insert(clean, LocalFile { bytes, mode });
    }

    /// Adds an (empty) directory.
    pub fn insert_dir(&mut self, path: &str) {
        if let Some(clean) = clean_relative(path) {
            let mut dir = clean.as_str();
            while let Some((parent, _)) = dir.rsplit_once('/') {
                self.dirs.insert(parent.to_string());
                dir = parent;
            }
            self.dirs.insert(clean);
        }
    }

    fn shown(&self, rel: &str) -> String {
        if rel.is_empty() {
            self.root.clone()
        } else {
            format!("{}/{rel}", self.root.trim_end_matches('/'))
        }
    }

    /// The file at the config's relative `path`, as Butane's `ReadLocalFile` finds it.
    pub fn read(&self, path: &str) -> Result<&LocalFile, LocalError> {
        let rel = clean_relative(path).ok_or(LocalError::Escapes)?;
        if let Some(f) = self.files.get(&rel) {
            return Ok(f);
        }
        if rel.is_empty() || self.dirs.contains(&rel) {
            return Err(LocalError::IsDirectory(self.shown(&rel)));
        }
        Err(LocalError::Missing(self.shown(&rel)))
    }

    /// Whether `path` names a directory (the root is one).
    pub fn is_dir(&self, path: &str) -> Option<bool> {
        let rel = clean_relative(path)?;
        Some(rel.is_empty() || self.dirs.contains(&rel))
    }

    /// Whether anything is at `path`.
    pub fn exists(&self, path: &str) -> bool {
        clean_relative(path).is_some_and(|rel| {
            rel.is_empty() || self.dirs.contains(&rel) || self.files.contains_key(&rel)
        })
    }

    /// The files under directory `dir`, paths relative to it, in the order Go's
    /// `filepath.Walk` visits them (names sorted within each directory).
    pub fn walk(&self, dir: &str) -> Vec<(String, &LocalFile)> {
        let Some(base) = clean_relative(dir) else {
            return Vec::new();
        };
        let prefix = if base.is_empty() {
            String::new()
        } else {
            format!("{base}/")
        };
        let mut out: Vec<(String, &LocalFile)> = self
            .files
            .iter()
            .filter_map(|(p, f)| p.strip_prefix(&prefix).map(|rel| (rel.to_string(), f)))
            .collect();
        out.sort_by(|a, b| a.0.split('/').cmp(b.0.split('/')));
        out
    }
}
