//! Typed, read-only views of a spec 3.x config (placeholder until the full module lands).

/// The typed view of a config.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Config {}
