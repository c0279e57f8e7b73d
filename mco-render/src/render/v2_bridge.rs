//! Spec 2.2 configs, through the spec 2 engine.

use crate::render::source_config::{ConfigError, ParsedConfig};
use mco_ignition::v2::{self, V2Error};
use mco_ignition::SpecVersion;
use serde_json::Value;

fn message(e: &V2Error, supported: &str) -> String {
    match e {
        V2Error::UnknownVersion => format!(
            "parsing Ignition config failed: unknown version. Supported spec versions: {supported}"
        ),
        other => other.to_string(),
    }
}

/// Parses and validates a spec 2.2 config with upstream's spec 2 rules, then converts it to 3.5
/// the way upstream does (duplicate-removal pre-pass, 2.2 to 3.0, up to 3.5).
pub fn parse_v2(raw: &Value, supported: &str) -> Result<ParsedConfig, ConfigError> {
    let err = |e: V2Error| ConfigError {
        message: message(&e, supported),
        path: None,
        report: None,
    };
    let parsed = v2::parse(raw).map_err(err)?;
    let converted = v2::to_v3_5(raw).map_err(err)?;
    let config =
        mco_ignition::parse::decode(&converted, SpecVersion::V3_5).map_err(|e| ConfigError {
            message: format!("failed to convert Ignition config spec v2 to v3: {e}"),
            path: None,
            report: None,
        })?;
    Ok(ParsedConfig::V2 {
        config,
        v2: parsed.config,
    })
}

/// Upstream's extra check on spec 2 configs: no file mode above 0777.
pub fn check_v2_modes(v2_config: &Value) -> Result<(), ConfigError> {
    v2::check_file_modes(v2_config).map_err(|e| ConfigError {
        message: message(&e, crate::release::Profile::default().supported_versions),
        path: None,
        report: None,
    })
}
