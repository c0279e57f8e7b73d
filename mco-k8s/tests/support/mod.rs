//! Test support: an in-process Kubernetes API server.

#![allow(dead_code)]

pub mod apiserver;
pub mod cluster;
pub mod patch;
pub mod rbac;

/// The YAML documents of a file, as JSON values (empty documents skipped).
pub fn yaml_docs(path: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| {
            <serde_json::Value as serde::Deserialize>::deserialize(d)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .filter(|v| !v.is_null())
        .collect()
}
