//! Spec 2.2 configs, through the spec 2 engine.

use crate::source_config::{ConfigError, ParsedConfig};
use serde_json::Value;

/// Parses, validates and converts a spec 2.2 config to 3.5.
pub fn parse_v2(_raw: &Value) -> Result<ParsedConfig, ConfigError> {
    Err(ConfigError {
        message: "spec 2.2 configs are not supported yet".into(),
        path: None,
        report: None,
    })
}
