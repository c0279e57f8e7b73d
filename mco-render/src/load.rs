//! Inputs read from the file system (feature `fs`, on with the default `cli`): manifest files
//! and folders, template trees and MachineConfiguration policies. The `mco-render` binary, the
//! machine-config-server's file mode and the daemon all read their inputs through here; the rest
//! of the crate does no I/O. Folders may hold Butane configs (`.bu`, [`butane`]), each read as
//! the MachineConfig it translates into.

pub mod butane;
pub mod stdin;
pub mod walk;

use crate::check::{self, RenderedFile};
use crate::controllers::templates::TemplateTree;
use crate::manifests::{self, ManifestError, Manifests};
use crate::plan::MachineConfiguration;
use std::path::{Path, PathBuf};
use walk::Walk;
pub use walk::{Listing, SkipReason, Skipped};

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

/// Whether a folder walk lists a file for the manifest readers: the `.yaml`, `.yml` and `.json`
/// files ([`manifests::is_manifest_file`]) and the Butane configs (`.bu`).
fn is_manifest_or_butane(p: &Path) -> bool {
    manifests::is_manifest_file(p) || butane::is_butane_file(p)
}

/// The manifest files some paths name, each once, and the paths skipped on the way (see
/// [`walk`]): a file is itself (whatever its name); a folder gives the `.yaml`, `.yml` and
/// `.json` files under it ([`manifests::is_manifest_file`]) and the Butane configs (`.bu`),
/// each folder's entries sorted, recursively, following links.
pub fn list_manifest_files<P: AsRef<Path>>(paths: &[P]) -> Result<Listing, LoadError> {
    let mut w = Walk::new(&is_manifest_or_butane);
    for p in paths {
        if stdin::is_stdin(p.as_ref()) {
            w.add_stdin(p.as_ref());
        } else {
            w.add_root(p.as_ref())?;
        }
    }
    Ok(w.finish())
}

/// The manifest files a path names ([`list_manifest_files`], without what was skipped).
pub fn manifest_files(path: &Path) -> Result<Vec<PathBuf>, LoadError> {
    Ok(list_manifest_files(&[path])?.files)
}

/// Every file under a folder, any name, sorted, recursively, each once ([`walk`]).
pub fn all_files(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let mut w = Walk::new(&|_| true);
    w.add_root(dir)?;
    Ok(w.finish().files)
}

/// Reads and decodes the manifests under the given files and folders, in order (every path is
/// listed before any file is read, each file once). Each object is recorded with its file's
/// path. A path `-` is standard input, named `<stdin>` ([`stdin`]).
pub fn read_manifests<P: AsRef<Path>>(paths: &[P]) -> Result<Manifests, LoadError> {
    Ok(read_manifests_listed(paths)?.0)
}

/// [`read_manifests`], with the paths skipped on the way (links followed once: a cycle, a
/// second path to a file or folder already read, a link that cannot be followed), for the
/// caller to say.
pub fn read_manifests_listed<P: AsRef<Path>>(
    paths: &[P],
) -> Result<(Manifests, Vec<Skipped>), LoadError> {
    stdin::at_most_once(paths)?;
    let listing = list_manifest_files(paths)?;
    let mut m = Manifests::default();
    let mut butane_configs = butane::ButaneReader::default();
    for f in listing.files {
        if butane::is_butane_file(&f) {
            m.add_file(&f.display().to_string(), &butane_configs.translate(&f)?)?;
            continue;
        }
        let text = stdin::read_text(&f)?;
        m.add_file(&stdin::display_name(&f), &text)?;
    }
    Ok((m, listing.skipped))
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
/// disruption policies, `-` reading standard input. Any other kind is refused.
pub fn read_policies(path: &Path) -> Result<MachineConfiguration, LoadError> {
    let invalid = |message: String| LoadError::Invalid {
        path: stdin::display_name(path),
        message,
    };
    let text = stdin::read_text(path)?;
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

    /// A temporary folder holding `a.yaml` (a worker pool) and `sub/b.yaml` (a MachineConfig).
    #[cfg(unix)]
    fn linked_tree() -> Option<tempfile::TempDir> {
        let tmp = tempfile::tempdir().ok()?;
        let root = tmp.path();
        std::fs::create_dir(root.join("sub")).ok()?;
        std::fs::write(
            root.join("a.yaml"),
            "kind: MachineConfigPool\nmetadata:\n  name: worker\n",
        )
        .ok()?;
        std::fs::write(
            root.join("sub/b.yaml"),
            "kind: MachineConfig\nmetadata:\n  name: 05-b\n",
        )
        .ok()?;
        Some(tmp)
    }

    /// The listed and skipped paths relative to `root`, skipped ones as their messages.
    #[cfg(unix)]
    fn relative(root: &Path, l: &Listing) -> (Vec<String>, Vec<String>) {
        let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
        let prefix = format!("{}/", root.display());
        (
            l.files.iter().map(|p| rel(p)).collect(),
            l.skipped
                .iter()
                .map(|s| s.to_string().replace(&prefix, ""))
                .collect(),
        )
    }

    #[cfg(unix)]
    #[test]
    fn a_link_cycle_is_skipped_and_named() {
        use std::os::unix::fs::symlink;
        let Some(tmp) = linked_tree() else {
            panic!("temp tree");
        };
        let root = tmp.path();
        // Two cycles: without the check, each level doubles the paths walked.
        assert!(symlink(".", root.join("loop")).is_ok());
        assert!(symlink("..", root.join("sub/up")).is_ok());
        let Ok(l) = list_manifest_files(&[root]) else {
            panic!("lists");
        };
        let (files, skipped) = relative(root, &l);
        assert_eq!(files, ["a.yaml", "sub/b.yaml"]);
        let root_name = root.display().to_string();
        assert_eq!(
            skipped,
            [
                format!("loop: a link to {root_name}, a folder already being read (a cycle); not followed"),
                format!("sub/up: a link to {root_name}, a folder already being read (a cycle); not followed"),
            ]
        );
        assert!(l.skipped.iter().all(Skipped::is_warning));
        let Ok((m, _)) = read_manifests_listed(&[root]) else {
            panic!("reads");
        };
        assert_eq!((m.pools.len(), m.machine_configs.len()), (1, 1));
        let Ok(all) = all_files(root) else {
            panic!("all files");
        };
        assert_eq!(all.len(), 2);
    }

    #[cfg(unix)]
    #[test]
    fn a_file_reached_twice_is_read_once_under_its_first_path() {
        use std::os::unix::fs::symlink;
        let Some(tmp) = linked_tree() else {
            panic!("temp tree");
        };
        let root = tmp.path();
        // A linked duplicate after its target, one before it, and a second way to `sub`.
        assert!(symlink("a.yaml", root.join("c.yaml")).is_ok());
        assert!(symlink("sub/b.yaml", root.join("0-b.yaml")).is_ok());
        assert!(symlink("sub", root.join("z-sub")).is_ok());
        // A link whose name is not a manifest's is not read, as in a folder walk by kubectl.
        assert!(symlink("a.yaml", root.join("a-link")).is_ok());
        let Ok(l) = list_manifest_files(&[root.to_path_buf(), root.join("a.yaml")]) else {
            panic!("lists");
        };
        let (files, skipped) = relative(root, &l);
        assert_eq!(files, ["0-b.yaml", "a.yaml"]);
        assert_eq!(
            skipped,
            [
                "c.yaml: the same file as a.yaml; read once",
                "sub/b.yaml: the same file as 0-b.yaml; read once",
                "z-sub: the same folder as sub; its files are read once, there",
                "a.yaml: the same file as a.yaml; read once",
            ]
        );
        assert!(!l.skipped.iter().any(Skipped::is_warning));
        let Ok(m) = read_manifests(&[root]) else {
            panic!("reads");
        };
        assert_eq!((m.pools.len(), m.machine_configs.len()), (1, 1));
    }

    #[cfg(unix)]
    #[test]
    fn a_link_that_cannot_be_followed_is_a_read_error_when_it_names_a_manifest() {
        use std::os::unix::fs::symlink;
        let Some(tmp) = linked_tree() else {
            panic!("temp tree");
        };
        let root = tmp.path();
        // Not a manifest's name (it may have named a folder): skipped, with a warning.
        assert!(symlink("gone", root.join("shared")).is_ok());
        let Ok(l) = list_manifest_files(&[root]) else {
            panic!("lists");
        };
        let (files, skipped) = relative(root, &l);
        assert_eq!(files, ["a.yaml", "sub/b.yaml"]);
        assert_eq!(skipped.len(), 1);
        assert!(
            skipped[0].starts_with("shared: a link to gone that cannot be followed, skipped: "),
            "{skipped:?}"
        );
        assert!(l.skipped[0].is_warning());
        // A manifest's name: an error naming the link and its target.
        assert!(symlink("missing.yaml", root.join("d.yaml")).is_ok());
        let e = read_manifests(&[root]).err().map(|e| e.to_string());
        let want = format!(
            "{}: a link to missing.yaml that cannot be followed: ",
            root.join("d.yaml").display()
        );
        assert!(e.as_deref().is_some_and(|e| e.starts_with(&want)), "{e:?}");
        // A link to itself cannot be followed either.
        assert!(std::fs::remove_file(root.join("d.yaml")).is_ok());
        assert!(symlink("self.yaml", root.join("self.yaml")).is_ok());
        let e = read_manifests(&[root]).err().map(|e| e.to_string());
        let want = format!(
            "{}: a link to self.yaml that cannot be followed: ",
            root.join("self.yaml").display()
        );
        assert!(e.as_deref().is_some_and(|e| e.starts_with(&want)), "{e:?}");
        // Every file of a templates folder is asked for.
        assert!(std::fs::remove_file(root.join("self.yaml")).is_ok());
        assert!(read_templates(root).is_err());
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
