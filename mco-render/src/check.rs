//! Rendered output as files, and what differs between them and a folder's copy: what
//! `mco-render render --out-dir DIR` writes and what `--check` compares, for CI pipelines that
//! commit the rendered configs next to their sources.
//!
//! Pure: the folder's files come in as values (`load::read_rendered_dir` reads them, and
//! `load::compare_with_dir` reads and compares in one call).
//!
//! ```
//! use mco_render::check::{compare, render_pools, rendered_files, OutputFormat};
//! use mco_render::manifests::Manifests;
//! use mco_render::RenderOptions;
//!
//! let mut m = Manifests::default();
//! m.add_file(
//!     "pools.yaml",
//!     "kind: MachineConfigPool\nmetadata:\n  name: worker\nspec:\n  machineConfigSelector:\n    matchLabels:\n      machineconfiguration.openshift.io/role: worker\n",
//! )?;
//! m.add_file(
//!     "kargs.yaml",
//!     "kind: MachineConfig\nmetadata:\n  name: 05-worker-kargs\n  labels:\n    machineconfiguration.openshift.io/role: worker\nspec:\n  kernelArguments: [nosmt]\n",
//! )?;
//! let rendered = render_pools(&m, &RenderOptions::default()).map_err(|f| f[0].1.to_string())?;
//! let files = rendered_files(&rendered, OutputFormat::Yaml)?;
//! assert_eq!(files[0].name, "worker.yaml");
//! // A folder holding exactly these files is up to date.
//! assert!(compare(&files, &files).is_empty());
//! // One holding nothing misses every file.
//! assert_eq!(compare(&files, &[]).len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::manifests::Manifests;
use crate::render::{render_pool, RenderFailure, RenderOptions, Rendered};
use serde::Serialize;

/// Each pool's rendered config, `(pool, rendered)`, in the pools' order.
pub type RenderedPools = Vec<(String, Rendered)>;

/// Each failing pool with its failure, `(pool, failure)`.
pub type FailedPools = Vec<(String, RenderFailure)>;

/// Renders every pool of the manifests, in their order; or gives every pool that fails, with
/// its failure.
pub fn render_pools(m: &Manifests, opts: &RenderOptions) -> Result<RenderedPools, FailedPools> {
    let configs = m.configs();
    let controller = m
        .controller_config
        .as_ref()
        .map(|(_, c)| c.spec.clone())
        .unwrap_or_default();
    // Stamped with the ControllerConfig's release image version, as the controller renders.
    let opts = &m.render_options(opts);
    let (mut ok, mut failed) = (Vec::new(), Vec::new());
    for (_, pool) in &m.pools {
        match render_pool(pool, &configs, &controller, opts) {
            Ok(r) => ok.push((pool.name().to_string(), r)),
            Err(f) => failed.push((pool.name().to_string(), f)),
        }
    }
    if failed.is_empty() {
        Ok(ok)
    } else {
        Err(failed)
    }
}

/// How rendered MachineConfigs are written: `<pool>.yaml` or `<pool>.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputFormat {
    /// YAML, as `serde_yaml_ng` writes it.
    Yaml,
    /// Pretty-printed JSON with a final newline.
    Json,
}

/// A file of an output folder: its name (no folder) and its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RenderedFile {
    /// The file name, `<pool>.yaml` or `<pool>.json`.
    pub name: String,
    /// The contents.
    pub text: String,
}

/// A rendered config that cannot be written out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pool {pool:?}: cannot write {format:?}: {message}")]
pub struct EncodeError {
    /// The pool.
    pub pool: String,
    /// The format asked for.
    pub format: OutputFormat,
    /// The encoder's message.
    pub message: String,
}

/// The files `render --out-dir` writes for rendered pools (`(pool, rendered)` pairs), in the
/// pools' order.
pub fn rendered_files(
    rendered: &[(String, Rendered)],
    format: OutputFormat,
) -> Result<Vec<RenderedFile>, EncodeError> {
    rendered
        .iter()
        .map(|(pool, r)| {
            let err = |message: String| EncodeError {
                pool: pool.clone(),
                format,
                message,
            };
            Ok(match format {
                OutputFormat::Yaml => RenderedFile {
                    name: format!("{pool}.yaml"),
                    text: serde_yaml_ng::to_string(&r.machine_config)
                        .map_err(|e| err(e.to_string()))?,
                },
                OutputFormat::Json => RenderedFile {
                    name: format!("{pool}.json"),
                    text: serde_json::to_string_pretty(&r.machine_config)
                        .map_err(|e| err(e.to_string()))?
                        + "\n",
                },
            })
        })
        .collect()
}

/// One way a folder differs from what would be written into it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Difference {
    /// The file exists with other contents.
    Stale {
        /// The file name.
        file: String,
        /// What would be written.
        expected: String,
        /// What the folder holds.
        actual: String,
    },
    /// The file would be written but the folder lacks it.
    Missing {
        /// The file name.
        file: String,
        /// What would be written.
        expected: String,
    },
    /// The folder holds a rendered config for no pool rendered now (a pool removed or
    /// renamed): writing removes it.
    Extra {
        /// The file name.
        file: String,
        /// What the folder holds.
        actual: String,
    },
}

impl Difference {
    /// The file name.
    pub fn file(&self) -> &str {
        match self {
            Difference::Stale { file, .. }
            | Difference::Missing { file, .. }
            | Difference::Extra { file, .. } => file,
        }
    }

    /// A unified diff from the folder's copy (`a/`) to what would be written (`b/`), with 3
    /// lines of context.
    pub fn unified(&self) -> String {
        let (old, new, a, b) = match self {
            Difference::Stale {
                file,
                expected,
                actual,
            } => (
                actual.as_str(),
                expected.as_str(),
                format!("a/{file}"),
                format!("b/{file}"),
            ),
            Difference::Missing { file, expected } => (
                "",
                expected.as_str(),
                "/dev/null".to_string(),
                format!("b/{file}"),
            ),
            Difference::Extra { file, actual } => (
                actual.as_str(),
                "",
                format!("a/{file}"),
                "/dev/null".to_string(),
            ),
        };
        similar::TextDiff::from_lines(old, new)
            .unified_diff()
            .context_radius(3)
            .header(&a, &b)
            .missing_newline_hint(true)
            .to_string()
    }
}

/// Whether a file name is one a rendered folder is compared on (`.yaml`, `.yml`, `.json`):
/// other files (a README) are left alone.
pub fn is_rendered_name(name: &str) -> bool {
    crate::manifests::is_manifest_file(std::path::Path::new(name))
}

/// Whether a file's text is rendered output, what `render --out-dir` writes and so may remove:
/// one MachineConfig that a MachineConfigPool owns as its controller (as every rendered config
/// is owned by its pool). A file of the folder that is not one (a kustomization, a config a
/// person wrote, text that does not decode) is never removed.
pub fn is_rendered_config(text: &str) -> bool {
    let Ok(docs) = crate::manifests::documents(text) else {
        return false;
    };
    let [doc] = docs.as_slice() else {
        return false;
    };
    doc["kind"] == "MachineConfig"
        && doc["metadata"]["ownerReferences"]
            .as_array()
            .is_some_and(|refs| {
                refs.iter()
                    .any(|r| r["kind"] == "MachineConfigPool" && r["controller"] == true)
            })
}

/// Which rendered configs of an output folder a render speaks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Coverage {
    /// Every pool was rendered: a rendered config in the folder for any other pool is left
    /// over ([`Difference::Extra`]), and writing removes it.
    #[default]
    AllPools,
    /// Only some pools (`render --pool`): the folder's files for other pools are neither
    /// compared nor removed.
    SelectedPools,
}

/// How an output folder compares with the files that would be written into it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// What differs: stale and missing files in the written files' order, then extra files
    /// sorted by name. Writing fixes each (writes the stale and missing files, removes the
    /// extra ones).
    pub differences: Vec<Difference>,
    /// The folder's files with a rendered file's name ([`is_rendered_name`]) that are neither
    /// written nor rendered configs ([`is_rendered_config`]), sorted: render did not write
    /// them, so they are neither compared nor removed.
    pub foreign: Vec<String>,
}

/// What differs between the files that would be written (`expected`) and a folder's
/// (`actual`, as [`is_rendered_name`] picks them): stale and missing files in `expected`'s
/// order, then extra files (rendered configs for no pool rendered now) sorted by name. Empty
/// when the folder is up to date. [`compare_folder`] with [`Coverage::AllPools`].
pub fn compare(expected: &[RenderedFile], actual: &[RenderedFile]) -> Vec<Difference> {
    compare_folder(expected, actual, Coverage::AllPools).differences
}

/// How a folder's files (`actual`) compare with the files a render would write into it
/// (`expected`), for the pools `coverage` says were rendered.
pub fn compare_folder(
    expected: &[RenderedFile],
    actual: &[RenderedFile],
    coverage: Coverage,
) -> Comparison {
    let mut differences = Vec::new();
    for e in expected {
        match actual.iter().find(|a| a.name == e.name) {
            Some(a) if a.text == e.text => {}
            Some(a) => differences.push(Difference::Stale {
                file: e.name.clone(),
                expected: e.text.clone(),
                actual: a.text.clone(),
            }),
            None => differences.push(Difference::Missing {
                file: e.name.clone(),
                expected: e.text.clone(),
            }),
        }
    }
    let mut others: Vec<&RenderedFile> = actual
        .iter()
        .filter(|a| is_rendered_name(&a.name) && !expected.iter().any(|e| e.name == a.name))
        .collect();
    others.sort_by(|a, b| a.name.cmp(&b.name));
    let mut foreign = Vec::new();
    for a in others {
        if !is_rendered_config(&a.text) {
            foreign.push(a.name.clone());
        } else if coverage == Coverage::AllPools {
            differences.push(Difference::Extra {
                file: a.name.clone(),
                actual: a.text.clone(),
            });
        }
    }
    Comparison {
        differences,
        foreign,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str) -> RenderedFile {
        RenderedFile {
            name: name.into(),
            text: text.into(),
        }
    }

    #[test]
    fn up_to_date_is_empty() {
        let files = [file("worker.yaml", "a: 1\n")];
        assert!(compare(&files, &files).is_empty());
    }

    /// A rendered config as `render --out-dir` writes it, for `pool`.
    fn rendered(pool: &str) -> String {
        format!(
            "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: rendered-{pool}-0\n  ownerReferences:\n  - apiVersion: machineconfiguration.openshift.io/v1\n    kind: MachineConfigPool\n    name: {pool}\n    uid: ''\n    controller: true\n    blockOwnerDeletion: true\nspec: {{}}\n"
        )
    }

    #[test]
    fn stale_missing_and_extra() {
        let expected = [
            file("worker.yaml", "a: 1\nb: 2\n"),
            file("master.yaml", "m\n"),
        ];
        let actual = [
            file("worker.yaml", "a: 1\nb: 3\n"),
            file("old.yaml", &rendered("old")),
            file("README.md", "not compared\n"),
        ];
        let d = compare(&expected, &actual);
        let files: Vec<&str> = d.iter().map(Difference::file).collect();
        assert_eq!(files, ["worker.yaml", "master.yaml", "old.yaml"]);
        assert_eq!(
            d[0].unified(),
            "--- a/worker.yaml\n+++ b/worker.yaml\n@@ -1,2 +1,2 @@\n a: 1\n-b: 3\n+b: 2\n"
        );
        assert!(d[1]
            .unified()
            .starts_with("--- /dev/null\n+++ b/master.yaml\n"));
        assert!(d[2].unified().contains("+++ /dev/null\n"));
    }

    #[test]
    fn only_rendered_configs_are_extra() {
        assert!(is_rendered_config(&rendered("infra")));
        // JSON too, as `render -o json --out-dir` writes it.
        assert!(is_rendered_config(
            r#"{"kind": "MachineConfig", "metadata": {"ownerReferences": [{"kind": "MachineConfigPool", "controller": true}]}}"#
        ));
        // A MachineConfig a person wrote, a kustomization, two documents, text that does not
        // decode: not render's to remove.
        for text in [
            "kind: MachineConfig\nmetadata:\n  name: 99-worker-extra\n",
            "kind: Kustomization\nresources: [worker.yaml]\n",
            &format!("{}---\n{}", rendered("a"), rendered("b")),
            "<<<<<<< HEAD\n",
        ] {
            assert!(!is_rendered_config(text), "{text}");
        }
        let expected = [file("worker.yaml", &rendered("worker"))];
        let actual = [
            file("worker.yaml", &rendered("worker")),
            file("infra.yaml", &rendered("infra")),
            file("kustomization.yaml", "kind: Kustomization\n"),
        ];
        let all = compare_folder(&expected, &actual, Coverage::AllPools);
        let files: Vec<&str> = all.differences.iter().map(Difference::file).collect();
        assert_eq!(files, ["infra.yaml"]);
        assert_eq!(all.foreign, ["kustomization.yaml"]);
        // Only the worker pool rendered: the infra pool's file is not its business.
        let one = compare_folder(&expected, &actual, Coverage::SelectedPools);
        assert!(one.differences.is_empty());
        assert_eq!(one.foreign, ["kustomization.yaml"]);
    }
}
