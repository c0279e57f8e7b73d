//! Kubernetes label selectors (interim; replaced by the full implementation).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A label selector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Exact label matches.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
}

/// A compiled selector.
#[derive(Debug, Clone)]
pub struct CompiledSelector(BTreeMap<String, String>);

/// Selector error.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(String);

impl LabelSelector {
    /// True for `{}`.
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty()
    }
    /// Compiles.
    pub fn compile(&self) -> Result<CompiledSelector, SelectorError> {
        Ok(CompiledSelector(self.match_labels.clone()))
    }
}

impl CompiledSelector {
    /// Matches labels.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|(k, v)| labels.get(k) == Some(v))
    }
}

impl fmt::Display for CompiledSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
        f.write_str(&parts.join(","))
    }
}
