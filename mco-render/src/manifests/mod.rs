//! Manifests: bytes in, MCO objects out. Files hold YAML (several documents allowed) or JSON;
//! `List` objects are unpacked. This module only decodes: reading files is the job of the `load`
//! module (feature `fs`) or of the caller.

pub mod expand;
pub mod instant;
pub mod kinds;
pub mod positions;
mod replace;
pub mod strict;

pub use positions::{Position, Positions};
pub use strict::{Notice, Rule};

use crate::api::machine_config::RELEASE_IMAGE_VERSION_ANNOTATION;
use crate::api::rollout_policy::RolloutPolicy;
use crate::api::{ControllerConfig, MachineConfig, MachineConfigPool, MachineOSConfig, Node};
use crate::gocompat::kube_yaml;
use crate::release::{Release, UnknownRelease};
use serde_json::Value;

/// Whether a file name is one that manifest folders are read for (`.yaml`, `.yml`, `.json`).
pub fn is_manifest_file(path: &std::path::Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
}

/// The objects found in a set of manifests.
#[derive(Debug, Clone, Default)]
pub struct Manifests {
    /// MachineConfigs, with the file each came from.
    pub machine_configs: Vec<(String, MachineConfig)>,
    /// MachineConfigPools, with their files.
    pub pools: Vec<(String, MachineConfigPool)>,
    /// The ControllerConfig, if any.
    pub controller_config: Option<(String, ControllerConfig)>,
    /// Kubernetes Nodes (`apiVersion: v1`; the `config.openshift.io` Node `cluster` is one of
    /// the `others`), with their files.
    pub nodes: Vec<(String, Node)>,
    /// RolloutPolicies, with their files.
    pub rollout_policies: Vec<(String, RolloutPolicy)>,
    /// MachineOSConfigs (on-cluster layering), with their files.
    pub machine_os_configs: Vec<(String, MachineOSConfig)>,
    /// Other objects (kept for callers that understand them: Secrets and ConfigMaps among
    /// them), with their files.
    pub others: Vec<(String, Value)>,
    /// Where each object's document starts, in reading order (a `List`'s items share the
    /// list's line). Empty for manifests built without [`Manifests::add_file`].
    pub locations: Vec<Location>,
    /// The newest time the objects record as past ([`instant::newest_time`]): a cluster
    /// dump's instant. `None` when they hold no time (a GitOps tree) or were built without
    /// [`Manifests::add_file`].
    pub newest_time: Option<jiff::Timestamp>,
    /// What `kubectl apply` or the API server would refuse or do otherwise in the documents
    /// read ([`strict`]), in reading order.
    pub notices: Vec<Notice>,
}

/// Where an object's YAML or JSON document starts in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The object's `kind`.
    pub kind: String,
    /// Its `metadata.name`.
    pub name: String,
    /// The file.
    pub file: String,
    /// The 1-based line of the document's first content line (after a `---`, comments and
    /// blank lines).
    pub line: usize,
    /// Where each field of the object stands in the file (empty when the decoder recorded
    /// nothing: JSON, or manifests built in memory).
    pub positions: Positions,
}

/// The 1-based line each non-empty document of a manifest file's text starts on, as
/// [`documents`] returns them: the line of each JSON value (none for a JSON array), the first
/// content line of each YAML document. Empty when the text does not decode.
pub fn document_lines(text: &str) -> Vec<usize> {
    if text.trim_start().starts_with('[') {
        return Vec::new();
    }
    kube_yaml::decode_documents(text)
        .map(|docs| docs.iter().map(|d| d.line).collect())
        .unwrap_or_default()
}

/// A manifest that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ManifestError {
    /// The file.
    pub file: String,
    /// The 1-based line of what is wrong: the field's when known, else its document's (1 when
    /// nothing better is known).
    pub line: usize,
    /// What is wrong, with the document and object when known.
    pub message: String,
}

/// A YAML document that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("document {doc}, line {line}: invalid YAML: {message}")]
pub struct YamlError {
    /// The document's 1-based number in the stream.
    pub doc: usize,
    /// The 1-based line of the file the error is at.
    pub line: usize,
    /// The decoder's message.
    pub message: String,
}

/// A file's text that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The text starts as JSON does but is not JSON.
    #[error("invalid JSON at line {line} column {column}: {message}")]
    Json {
        /// The 1-based line of the error.
        line: usize,
        /// The 1-based column of the error.
        column: usize,
        /// The decoder's message.
        message: String,
    },
    /// A YAML document is not YAML.
    #[error(transparent)]
    Yaml(#[from] YamlError),
}

impl DecodeError {
    /// The 1-based line of the file the error is at.
    pub fn line(&self) -> usize {
        match self {
            DecodeError::Json { line, .. } => (*line).max(1),
            DecodeError::Yaml(y) => y.line.max(1),
        }
    }
}

/// The documents of a YAML stream (`---`-separated, as kubectl cuts it), each with its 1-based
/// number; empty documents are left out. YAML 1.1 as kubectl reads it
/// ([`crate::gocompat::kube_yaml`]).
pub fn yaml_documents(text: &str) -> impl Iterator<Item = Result<(usize, Value), YamlError>> + '_ {
    let decoded = kube_yaml::decode_documents(text);
    let (docs, error) = match decoded {
        Ok(docs) => (docs, None),
        Err(e) => (Vec::new(), Some(yaml_error(e))),
    };
    docs.into_iter()
        .map(|d| Ok((d.number, d.value)))
        .chain(error.map(Err))
}

fn yaml_error(e: kube_yaml::DecodeError) -> YamlError {
    YamlError {
        doc: e.document,
        line: e.line,
        message: e.message,
    }
}

/// A manifest file's documents with their lines and the positions of their values: a JSON
/// array's items (one document each, line 1), else the documents kubectl reads (JSON values,
/// or YAML documents read as YAML 1.1 the way kubectl reads them). The decoder every reader
/// of manifest files uses.
pub fn located_documents(text: &str) -> Result<Vec<kube_yaml::Document>, DecodeError> {
    if text.trim_start().starts_with('[') {
        let v: Value = serde_json::from_str(text).map_err(|e| DecodeError::Json {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        let items = match v {
            Value::Array(items) => items,
            other => vec![other],
        };
        return Ok(items
            .into_iter()
            .enumerate()
            .map(|(i, value)| kube_yaml::Document {
                number: i + 1,
                line: 1,
                value,
                positions: Positions::default(),
            })
            .collect());
    }
    kube_yaml::decode_documents(text).map_err(|e| {
        if e.message.starts_with("json: ") {
            DecodeError::Json {
                line: e.line,
                column: 0,
                message: e.message,
            }
        } else {
            DecodeError::Yaml(yaml_error(e))
        }
    })
}

/// Decodes a manifest file's text into its documents ([`located_documents`]'s values): JSON
/// when it starts with `{` or `[` (an array's items are one document each), YAML with any
/// number of documents otherwise. Empty documents are left out.
pub fn documents(text: &str) -> Result<Vec<Value>, DecodeError> {
    Ok(located_documents(text)?
        .into_iter()
        .map(|d| d.value)
        .collect())
}

impl Manifests {
    /// Decodes one file's contents and adds its objects, each with where its fields stand.
    pub fn add_file(&mut self, file: &str, text: &str) -> Result<(), ManifestError> {
        let docs = located_documents(text).map_err(|e| ManifestError {
            file: file.to_string(),
            line: e.line(),
            message: e.to_string(),
        })?;
        for doc in docs {
            self.add_object(file, doc.number, doc.line, doc.value, doc.positions)?;
        }
        Ok(())
    }

    /// The line of the field at `pointer` (a JSON pointer, `/spec/kernelArguments`) of the
    /// object `kind`/`name` read from `file`: the field's own line when the decoder recorded
    /// it, else its nearest recorded ancestor's, else the object's document line.
    pub fn field_line(&self, file: &str, kind: &str, name: &str, pointer: &str) -> Option<usize> {
        let l = self
            .locations
            .iter()
            .find(|l| l.file == file && l.kind == kind && l.name == name)?;
        Some(l.positions.line_of(pointer).unwrap_or(l.line))
    }

    /// The line of a notice's field (its document's line until the reader records fields).
    pub fn notice_line(&self, n: &Notice) -> usize {
        self.locations
            .iter()
            .find(|l| l.file == n.file && l.line == n.line && l.kind == n.kind && l.name == n.name)
            .and_then(|l| l.positions.line_of(&n.pointer))
            .unwrap_or(n.line)
    }

    /// The line an object's document starts on in `file`.
    pub fn line_of(&self, file: &str, kind: &str, name: &str) -> Option<usize> {
        self.locations
            .iter()
            .find(|l| l.file == file && l.kind == kind && l.name == name)
            .map(|l| l.line)
    }

    fn add_object(
        &mut self,
        file: &str,
        doc: usize,
        line: usize,
        v: Value,
        mut positions: Positions,
    ) -> Result<(), ManifestError> {
        let kind = v
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let name = v
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let problems = strict::check_document(&v, doc);
        // A type error names its field: the schema finds the path serde's message lacks.
        let typed = problems
            .iter()
            .find(|(rule, _, _)| *rule == Rule::WrongType)
            .map(|(_, pointer, message)| (pointer.clone(), message.clone()));
        for (rule, pointer, message) in problems {
            self.notices.push(Notice {
                rule,
                file: file.to_string(),
                line,
                kind: kind.clone(),
                name: name.clone(),
                pointer,
                message,
            });
        }
        if !kind.ends_with("List") {
            self.replace_earlier(file, line, &v);
            self.locations.push(Location {
                kind: kind.clone(),
                name: name.clone(),
                file: file.to_string(),
                line,
                positions: std::mem::take(&mut positions),
            });
            self.newest_time = self.newest_time.max(instant::newest_time(&v));
        }
        let err = |e: serde_json::Error| {
            let (line, what) = match &typed {
                Some((pointer, message)) => (
                    self.field_line(file, &kind, &name, pointer).unwrap_or(line),
                    message.clone(),
                ),
                None => (line, e.to_string()),
            };
            ManifestError {
                file: file.to_string(),
                line,
                message: format!("document {doc}: {kind} {name:?}: {what}"),
            }
        };
        match kind.as_str() {
            "List"
            | "MachineConfigList"
            | "MachineConfigPoolList"
            | "NodeList"
            | "RolloutPolicyList"
            | "MachineOSConfigList" => {
                let mut v = v;
                if let Some(Value::Array(items)) = v.get_mut("items").map(Value::take) {
                    // Each item's fields stand under `/items/<i>` of the list's document.
                    for (i, item) in items.into_iter().enumerate() {
                        let at = positions.under(&format!("/items/{i}"));
                        self.add_object(file, doc, line, item, at)?;
                    }
                }
            }
            "MachineConfig" => {
                // The Ignition config is kept as the tree it already is: deserialising a
                // `Value` from a `Value` would rebuild every object of it.
                let mut v = v;
                let config = v
                    .get_mut("spec")
                    .and_then(Value::as_object_mut)
                    .and_then(|spec| spec.get_mut("config"))
                    .map(Value::take)
                    .filter(|c| !c.is_null());
                let mut mc: MachineConfig = serde_json::from_value(v).map_err(err)?;
                if config.is_some() {
                    mc.spec.config = config;
                }
                if mc.metadata.name.is_empty() {
                    return Err(ManifestError {
                        file: file.into(),
                        line,
                        message: format!("document {doc}: MachineConfig without metadata.name"),
                    });
                }
                self.machine_configs.push((file.to_string(), mc));
            }
            "MachineConfigPool" => {
                let p: MachineConfigPool = serde_json::from_value(v).map_err(err)?;
                self.pools.push((file.to_string(), p));
            }
            "ControllerConfig" => {
                let c: ControllerConfig = serde_json::from_value(v).map_err(err)?;
                self.controller_config = Some((file.to_string(), c));
            }
            "Node" if v.get("apiVersion").and_then(Value::as_str) == Some("v1") => {
                let n: Node = serde_json::from_value(v).map_err(err)?;
                self.nodes.push((file.to_string(), n));
            }
            crate::api::rollout_policy::KIND => {
                let p: RolloutPolicy = serde_json::from_value(v).map_err(err)?;
                self.rollout_policies.push((file.to_string(), p));
            }
            "MachineOSConfig" => {
                let c: MachineOSConfig = serde_json::from_value(v).map_err(err)?;
                self.machine_os_configs.push((file.to_string(), c));
            }
            _ => self.others.push((file.to_string(), v)),
        }
        Ok(())
    }

    /// `opts` as the controller renders with these manifests' ControllerConfig (stamped with
    /// its release image version, [`crate::controllers::render_sync::release_of`]).
    pub fn render_options(&self, opts: &crate::RenderOptions) -> crate::RenderOptions {
        match &self.controller_config {
            Some((_, c)) => crate::controllers::render_sync::release_of(c, opts),
            None => opts.clone(),
        }
    }

    /// The pools' current rendered configs present here (a cluster dump holds them; a GitOps
    /// tree does not).
    fn current_rendered(&self) -> impl Iterator<Item = &MachineConfig> {
        self.pools.iter().filter_map(|(_, p)| {
            let name = p.spec.configuration.name.as_str();
            self.machine_configs
                .iter()
                .map(|(_, mc)| mc)
                .find(|mc| !name.is_empty() && mc.name() == name)
        })
    }

    /// The release these manifests were rendered by, as a cluster's dump says it: the
    /// ControllerConfig's `release-image-version`, else the one the pools' current rendered
    /// configs carry. `None` when nothing says (a GitOps tree); an error when what is said
    /// names a release not reproduced.
    pub fn release(&self) -> Option<Result<Release, UnknownRelease>> {
        let annotation = |a: &std::collections::BTreeMap<String, String>| {
            a.get(RELEASE_IMAGE_VERSION_ANNOTATION)
                .filter(|v| !v.is_empty())
                .cloned()
        };
        let said = self
            .controller_config
            .as_ref()
            .and_then(|(_, c)| annotation(&c.metadata.annotations))
            .or_else(|| {
                self.current_rendered()
                    .find_map(|mc| annotation(&mc.metadata.annotations))
            })?;
        Some(Release::parse(&said))
    }

    /// The controller version that rendered the pools' current configs (their
    /// `generated-by-controller-version`): rendering a dump with it lets the cluster's
    /// generated MachineConfigs in, as its own controller does.
    pub fn controller_version(&self) -> Option<String> {
        self.current_rendered()
            .find_map(|mc| mc.generated_by().map(str::to_string))
    }

    /// The MachineConfigs alone.
    pub fn configs(&self) -> Vec<MachineConfig> {
        self.machine_configs
            .iter()
            .map(|(_, m)| m.clone())
            .collect()
    }

    /// The other objects of one `kind` (Secrets, ConfigMaps), in reading order.
    pub fn others_of_kind(&self, kind: &str) -> Vec<Value> {
        self.others
            .iter()
            .filter(|(_, v)| v.get("kind").and_then(Value::as_str) == Some(kind))
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// The file a MachineConfig came from.
    pub fn file_of(&self, mc: &str) -> Option<&str> {
        self.machine_configs
            .iter()
            .find(|(_, m)| m.metadata.name == mc)
            .map(|(f, _)| f.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_multi_document_yaml() {
        let mut m = Manifests::default();
        let text = "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: a\n---\nkind: MachineConfigPool\nmetadata:\n  name: worker\n";
        assert!(m.add_file("x.yaml", text).is_ok());
        assert_eq!(m.machine_configs.len(), 1);
        assert_eq!(m.pools.len(), 1);
    }

    #[test]
    fn reads_nodes_and_rollout_policies() {
        let mut m = Manifests::default();
        let text = "apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-0\n---\napiVersion: config.openshift.io/v1\nkind: Node\nmetadata:\n  name: cluster\n---\napiVersion: rollout.mco.dev/v1alpha1\nkind: RolloutPolicy\nmetadata:\n  name: worker\nspec:\n  canary:\n    nodes: 1\n";
        assert!(m.add_file("x.yaml", text).is_ok());
        assert_eq!(m.nodes.len(), 1);
        assert_eq!(m.nodes[0].1.name(), "worker-0");
        assert_eq!(m.rollout_policies.len(), 1);
        assert_eq!(m.rollout_policies[0].1.name(), "worker");
        // The cluster-wide Node config stays where the generate code reads it.
        assert_eq!(m.others.len(), 1);
    }

    #[test]
    fn remembers_where_each_document_starts() {
        let mut m = Manifests::default();
        let text = "# pools\n---\nkind: MachineConfigPool\nmetadata:\n  name: worker\n---\n\n# the motd\nkind: MachineConfig\nmetadata:\n  name: a\n---\n---\nkind: MachineConfig\nmetadata:\n  name: b\n";
        assert!(m.add_file("x.yaml", text).is_ok());
        assert_eq!(m.line_of("x.yaml", "MachineConfigPool", "worker"), Some(3));
        assert_eq!(m.line_of("x.yaml", "MachineConfig", "a"), Some(9));
        assert_eq!(m.line_of("x.yaml", "MachineConfig", "b"), Some(14));
        assert_eq!(m.line_of("y.yaml", "MachineConfig", "b"), None);
        assert!(m
            .add_file(
                "j.json",
                "{\"kind\": \"MachineConfig\", \"metadata\": {\"name\": \"c\"}}"
            )
            .is_ok());
        assert_eq!(m.line_of("j.json", "MachineConfig", "c"), Some(1));
        assert_eq!(document_lines("a: 1\n...\n--- # two\nb: 2\n"), [1, 4]);
    }

    #[test]
    fn bad_yaml_names_the_file() {
        let mut m = Manifests::default();
        let e = m
            .add_file("bad.yaml", "kind: [")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("bad.yaml: document 1"), "{e}");
    }
}
