//! File mode: the pools come from a folder of manifests, re-read when its files change.

use mco_render::load::io_error;
use mco_render::manifests::Manifests;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Reading the manifests failed.
pub use mco_render::load::LoadError as SourceError;

/// What identifies a folder's state: each manifest file with its size and modification time.
pub type Fingerprint = Vec<(PathBuf, u64, Option<SystemTime>)>;

/// The folder's current fingerprint.
pub fn fingerprint(dir: &Path) -> Result<Fingerprint, SourceError> {
    mco_render::load::manifest_files(dir)?
        .into_iter()
        .map(|p| {
            let meta = std::fs::metadata(&p).map_err(io_error(&p))?;
            Ok((p, meta.len(), meta.modified().ok()))
        })
        .collect()
}

/// The fingerprint of a manifests folder and, when given, a templates folder (every file).
pub fn fingerprint_with(dir: &Path, templates: Option<&Path>) -> Result<Fingerprint, SourceError> {
    let mut fp = fingerprint(dir)?;
    if let Some(t) = templates {
        for p in mco_render::load::all_files(t)? {
            let meta = std::fs::metadata(&p).map_err(io_error(&p))?;
            fp.push((p, meta.len(), meta.modified().ok()));
        }
    }
    Ok(fp)
}

/// Reads and decodes every manifest under a folder ([`mco_render::load::read_manifests`]).
pub fn load(dir: &Path) -> Result<Manifests, SourceError> {
    mco_render::load::read_manifests(&[dir])
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
        // The KubeletConfig's and ContainerRuntimeConfig's, and the FeatureGate's 98.
        assert_eq!(m.machine_configs.len(), plain + 3);
        assert!(m.file_of("98-worker-generated-kubelet").is_some());
        assert!(m.file_of("99-worker-generated-kubelet").is_some());
        assert!(m.file_of("99-worker-generated-containerruntime").is_some());
    }

    #[test]
    fn reads_the_repository_templates() {
        let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../templates"));
        let Ok(tree) = mco_render::load::read_templates(dir) else {
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
