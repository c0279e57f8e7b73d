//! Manifests: bytes in, MCO objects out. Files hold YAML (several documents allowed) or JSON;
//! `List` objects are unpacked. This module only decodes: reading files is the job of the `load`
//! module (feature `fs`) or of the caller.

pub mod expand;

use crate::api::rollout_policy::RolloutPolicy;
use crate::api::{ControllerConfig, MachineConfig, MachineConfigPool, Node};
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
    /// Other objects (kept for callers that understand them), with their files.
    pub others: Vec<(String, Value)>,
}

/// A manifest that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ManifestError {
    /// The file.
    pub file: String,
    /// What is wrong, with the document and object when known.
    pub message: String,
}

/// A YAML document that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("document {doc}: invalid YAML: {message}")]
pub struct YamlError {
    /// The document's 1-based number in the stream.
    pub doc: usize,
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

/// The documents of a YAML stream (`---`-separated), each with its 1-based number; empty
/// documents are left out. The one multi-document YAML reader of the crate.
pub fn yaml_documents(text: &str) -> impl Iterator<Item = Result<(usize, Value), YamlError>> + '_ {
    serde_yaml_ng::Deserializer::from_str(text)
        .enumerate()
        .filter_map(
            |(i, doc)| match <Value as serde::Deserialize>::deserialize(doc) {
                Ok(Value::Null) => None,
                Ok(v) => Some(Ok((i + 1, v))),
                Err(e) => Some(Err(YamlError {
                    doc: i + 1,
                    message: e.to_string(),
                })),
            },
        )
}

/// Decodes a manifest file's text into its documents: JSON when it starts with `{` or `[` (an
/// array's items are one document each), YAML with any number of documents otherwise. Empty
/// documents are left out.
pub fn documents(text: &str) -> Result<Vec<Value>, DecodeError> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let v: Value = serde_json::from_str(text).map_err(|e| DecodeError::Json {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        Ok(match v {
            Value::Array(items) => items,
            other => vec![other],
        })
    } else {
        yaml_documents(text)
            .map(|d| d.map(|(_, v)| v).map_err(DecodeError::from))
            .collect()
    }
}

impl Manifests {
    /// Decodes one file's contents and adds its objects.
    pub fn add_file(&mut self, file: &str, text: &str) -> Result<(), ManifestError> {
        let docs = documents(text).map_err(|e| ManifestError {
            file: file.to_string(),
            message: e.to_string(),
        })?;
        for (i, doc) in docs.into_iter().enumerate() {
            self.add_object(file, i + 1, doc)?;
        }
        Ok(())
    }

    fn add_object(&mut self, file: &str, doc: usize, v: Value) -> Result<(), ManifestError> {
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
        let err = |e: serde_json::Error| ManifestError {
            file: file.to_string(),
            message: format!("document {doc}: {kind} {name:?}: {e}"),
        };
        match kind.as_str() {
            "List"
            | "MachineConfigList"
            | "MachineConfigPoolList"
            | "NodeList"
            | "RolloutPolicyList" => {
                let mut v = v;
                if let Some(Value::Array(items)) = v.get_mut("items").map(Value::take) {
                    for item in items {
                        self.add_object(file, doc, item)?;
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
            _ => self.others.push((file.to_string(), v)),
        }
        Ok(())
    }

    /// The MachineConfigs alone.
    pub fn configs(&self) -> Vec<MachineConfig> {
        self.machine_configs
            .iter()
            .map(|(_, m)| m.clone())
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
