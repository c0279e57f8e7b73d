//! Inputs read from the file system (feature `fs`, on with the default `cli`): manifest files
//! and folders, template trees and MachineConfiguration policies. The `mco-render` binary, the
//! machine-config-server's file mode and the daemon all read their inputs through here; the rest
//! of the crate does no I/O. Folders may hold Butane configs (`.bu`, [`butane`]), each read as
//! the MachineConfig it translates into.

pub mod butane;

use crate::check::{self, RenderedFile};
use crate::controllers::templates::TemplateTree;
use crate::manifests::{self, ManifestError, Manifests};
use crate::plan::MachineConfiguration;
use std::path::{Path, PathBuf};

/// A file or folder that cannot be read, or holds something other than what was asked for.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Reading a file or listing a folder failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The path names nothing.
    #[error("{path}: no such file or folder")]
    Missing {
        /// The path.
        path: String,
    },
    /// A folder was expected.
    #[error("{path}: not a folder")]
    NotAFolder {
        /// The path.
        path: String,
    },
    /// A manifest does not decode.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A Butane config does not translate.
    #[error("{path}: {message}")]
    Butane {
        /// The file.
        path: String,
        /// Everything Butane prints.
        message: String,
        /// Each of its errors: the 1-based line (1 when unknown) and the message, after the
        /// Butane path when there is one.
        errors: Vec<(usize, String)>,
    },
    /// The file decodes but is not the object asked for.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// The `map_err` for an I/O error on `path`.
pub fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> LoadError + '_ {
    move |source| LoadError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Every file under a folder, each folder's entries sorted by path, recursively. `keep` picks
/// the files (folders are always entered).
fn walk(dir: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) -> Result<(), LoadError> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io_error(dir))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, keep, out)?;
        } else if keep(&p) {
            out.push(p);
        }
    }
    Ok(())
}

/// The manifest files a path names: a file is itself (whatever its name); a folder gives the
/// `.yaml`, `.yml` and `.json` files under it ([`manifests::is_manifest_file`]) and the Butane
/// configs (`.bu`), sorted, recursively.
pub fn manifest_files(path: &Path) -> Result<Vec<PathBuf>, LoadError> {
    if path.is_dir() {
        let mut out = Vec::new();
        let keep = |p: &Path| manifests::is_manifest_file(p) || butane::is_butane_file(p);
        walk(path, &keep, &mut out)?;
        Ok(out)
    } else if path.exists() {
        Ok(vec![path.to_path_buf()])
    } else {
        Err(LoadError::Missing {
            path: path.display().to_string(),
        })
    }
}

/// Every file under a folder, any name, sorted, recursively.
pub fn all_files(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let mut out = Vec::new();
    walk(dir, &|_| true, &mut out)?;
    Ok(out)
}

/// Reads and decodes the manifests under the given files and folders, in order (every path is
/// listed before any file is read). Each object is recorded with its file's path.
pub fn read_manifests<P: AsRef<Path>>(paths: &[P]) -> Result<Manifests, LoadError> {
    let mut files = Vec::new();
    for p in paths {
        files.extend(manifest_files(p.as_ref())?);
    }
    let mut m = Manifests::default();
    let mut butane_configs = butane::ButaneReader::default();
    for f in files {
        if butane::is_butane_file(&f) {
            m.add_file(&f.display().to_string(), &butane_configs.translate(&f)?)?;
            continue;
        }
        let text = std::fs::read_to_string(&f).map_err(io_error(&f))?;
        m.add_file(&f.display().to_string(), &text)?;
    }
    Ok(m)
}

/// Reads every file under a templates folder (`<role>/<name>/<overlay>/...`) into a
/// [`TemplateTree`], keyed by its `/`-separated path relative to the folder.
pub fn read_templates(dir: &Path) -> Result<TemplateTree, LoadError> {
    if !dir.is_dir() {
        return Err(LoadError::NotAFolder {
            path: dir.display().to_string(),
        });
    }
    let mut tree = TemplateTree::new();
    for p in all_files(dir)? {
        let bytes = std::fs::read(&p).map_err(io_error(&p))?;
        let rel = p.strip_prefix(dir).unwrap_or(&p);
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        tree.insert(&parts.join("/"), bytes);
    }
    Ok(tree)
}

/// The rendered files of an output folder (`render --out-dir`), as [`check::compare`] takes
/// them: the folder's own `.yaml`, `.yml` and `.json` files (not its subfolders), by name. A
/// folder that does not exist holds none.
///
/// [`check::compare`]: crate::check::compare
pub fn read_rendered_dir(dir: &Path) -> Result<Vec<RenderedFile>, LoadError> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    if !dir.is_dir() {
        return Err(LoadError::NotAFolder {
            path: dir.display().to_string(),
        });
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_error(dir))? {
        let p = entry.map_err(io_error(dir))?.path();
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if p.is_file() && check::is_rendered_name(name) {
            let text = std::fs::read_to_string(&p).map_err(io_error(&p))?;
            out.push(RenderedFile {
                name: name.to_string(),
                text,
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// What differs between `expected` (see [`check::rendered_files`]) and the output folder
/// `dir`: [`read_rendered_dir`] then [`check::compare`]. Empty when `dir` is up to date.
pub fn compare_with_dir(
    dir: &Path,
    expected: &[RenderedFile],
) -> Result<Vec<check::Difference>, LoadError> {
    Ok(check::compare(expected, &read_rendered_dir(dir)?))
}

/// Reads a MachineConfiguration manifest (YAML or JSON, one document): the user's node
/// disruption policies. Any other kind is refused.
pub fn read_policies(path: &Path) -> Result<MachineConfiguration, LoadError> {
    let invalid = |message: String| LoadError::Invalid {
        path: path.display().to_string(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(io_error(path))?;
    let mut docs = manifests::documents(&text).map_err(|e| invalid(e.to_string()))?;
    let v = match docs.len() {
        1 => docs.remove(0),
        n => {
            return Err(invalid(format!(
                "expected one MachineConfiguration, found {n} documents"
            )))
        }
    };
    if v["kind"] != "MachineConfiguration" {
        return Err(invalid(format!(
            "not a MachineConfiguration (kind {})",
            v["kind"]
        )));
    }
    serde_json::from_value(v).map_err(|e| invalid(format!("MachineConfiguration: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
    }

    #[test]
    fn a_folder_gives_its_manifests_sorted_and_recursively() {
        let Ok(files) = manifest_files(&repo("examples/cluster")) else {
            panic!("examples/cluster lists");
        };
        assert!(!files.is_empty());
        assert!(files.iter().all(|f| manifests::is_manifest_file(f)));
        let Ok(m) = read_manifests(&[repo("examples/cluster")]) else {
            panic!("examples/cluster reads");
        };
        assert!(!m.pools.is_empty());
    }

    #[test]
    fn a_missing_path_is_named() {
        let e = manifest_files(Path::new("/nonexistent/x"))
            .err()
            .map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("/nonexistent/x: no such file or folder"));
        let e = read_templates(Path::new("/nonexistent/x"))
            .err()
            .map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("/nonexistent/x: not a folder"));
    }

    #[test]
    fn reads_the_repository_templates() {
        let Ok(tree) = read_templates(&repo("templates")) else {
            panic!("templates read");
        };
        assert!(tree.len() > 10, "{}", tree.len());
    }

    #[test]
    fn policies_must_be_a_machine_configuration() {
        let dir = std::env::temp_dir().join(format!("mco-files-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let good = dir.join("mc.yaml");
        let bad = dir.join("pool.yaml");
        let _ = std::fs::write(
            &good,
            "apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nmetadata:\n  name: cluster\n",
        );
        let _ = std::fs::write(&bad, "kind: MachineConfigPool\nmetadata:\n  name: worker\n");
        assert!(read_policies(&good).is_ok());
        let e = read_policies(&bad)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.ends_with("not a MachineConfiguration (kind \"MachineConfigPool\")"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
