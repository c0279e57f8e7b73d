//! File mode: the pools come from a folder of manifests, re-read when its files change.

use mco_render::controllers::templates::TemplateTree;
use mco_render::manifests::Manifests;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Reading the manifests failed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A file or folder could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// A manifest does not decode.
    #[error(transparent)]
    Manifest(#[from] mco_render::manifests::ManifestError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SourceError + '_ {
    move |source| SourceError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The manifest files under a folder (YAML and JSON), sorted, recursively.
pub fn manifest_files(dir: &Path) -> Result<Vec<PathBuf>, SourceError> {
    let mut out = Vec::new();
    collect(dir, &mut out)?;
    Ok(out)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), SourceError> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(&p, out)?;
        } else if mco_render::manifests::is_manifest_file(&p) {
            out.push(p);
        }
    }
    Ok(())
}

/// What identifies a folder's state: each manifest file with its size and modification time.
pub type Fingerprint = Vec<(PathBuf, u64, Option<SystemTime>)>;

/// The folder's current fingerprint.
pub fn fingerprint(dir: &Path) -> Result<Fingerprint, SourceError> {
    manifest_files(dir)?
        .into_iter()
        .map(|p| {
            let meta = std::fs::metadata(&p).map_err(io(&p))?;
            Ok((p, meta.len(), meta.modified().ok()))
        })
        .collect()
}

/// Every file under a folder (any name), sorted, recursively.
fn all_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), SourceError> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            all_files(&p, out)?;
        } else {
            out.push(p);
        }
    }
    Ok(())
}

/// The fingerprint of a manifests folder and, when given, a templates folder (every file).
pub fn fingerprint_with(dir: &Path, templates: Option<&Path>) -> Result<Fingerprint, SourceError> {
    let mut fp = fingerprint(dir)?;
    if let Some(t) = templates {
        let mut files = Vec::new();
        all_files(t, &mut files)?;
        for p in files {
            let meta = std::fs::metadata(&p).map_err(io(&p))?;
            fp.push((p, meta.len(), meta.modified().ok()));
        }
    }
    Ok(fp)
}

/// Reads every file under a templates folder (`<role>/<name>/<overlay>/...`), as
/// `mco-render render --templates` does.
pub fn read_templates(dir: &Path) -> Result<TemplateTree, SourceError> {
    let mut files = Vec::new();
    all_files(dir, &mut files)?;
    let mut tree = TemplateTree::new();
    for p in files {
        let bytes = std::fs::read(&p).map_err(io(&p))?;
        let rel = p.strip_prefix(dir).unwrap_or(&p);
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        tree.insert(&parts.join("/"), bytes);
    }
    Ok(tree)
}

/// Reads and decodes every manifest under a folder.
pub fn load(dir: &Path) -> Result<Manifests, SourceError> {
    let mut m = Manifests::default();
    for f in manifest_files(dir)? {
        let text = std::fs::read_to_string(&f).map_err(io(&f))?;
        m.add_file(&f.display().to_string(), &text)?;
    }
    Ok(m)
}

/// Reads a folder as [`load`] does and adds the MachineConfigs the cluster's controllers would
/// generate from its KubeletConfigs and ContainerRuntimeConfigs
/// ([`mco_render::manifests::expand::expand_manifests`]). Resources whose generation fails are returned
/// beside the manifests: like a cluster, the server keeps serving without them.
pub fn load_cluster(
    dir: &Path,
    opts: &mco_render::manifests::expand::ClusterOptions,
) -> Result<(Manifests, Vec<mco_render::manifests::expand::ClusterError>), SourceError> {
    let mut m = load(dir)?;
    let errors = mco_render::manifests::expand::expand_manifests(&mut m, opts);
    Ok((m, errors))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_cluster_adds_generated_machine_configs() {
        let dir = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../mco-render/tests/generate_fixtures/cluster"
        ));
        let plain = load(dir).map(|m| m.machine_configs.len()).unwrap_or(0);
        let opts = mco_render::manifests::expand::ClusterOptions::default();
        let Ok((m, errors)) = load_cluster(dir, &opts) else {
            panic!("fixtures load");
        };
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(m.machine_configs.len(), plain + 2);
        assert!(m.file_of("99-worker-generated-kubelet").is_some());
        assert!(m.file_of("99-worker-generated-containerruntime").is_some());
    }

    #[test]
    fn reads_the_repository_templates() {
        let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../templates"));
        let Ok(tree) = read_templates(dir) else {
            panic!("templates read");
        };
        assert!(tree.len() > 10, "{}", tree.len());
        let Ok(plain) = fingerprint(dir) else {
            panic!("fingerprint");
        };
        let Ok(with) = fingerprint_with(dir, Some(dir)) else {
            panic!("fingerprint");
        };
        assert!(with.len() > plain.len());
    }
}
