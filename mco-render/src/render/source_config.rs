//! Reading a MachineConfig's Ignition config the way upstream does: any supported version in,
//! spec 3.5 out, with upstream's messages.

use crate::release::Profile;
pub use mco_ignition::emit::Layout;
use mco_ignition::parse::{self, DetectedVersion};
use mco_ignition::report::Report;
use mco_ignition::{Config, JsonPath, ParseError, SpecVersion};
use serde_json::Value;

/// Why a MachineConfig's Ignition config was refused.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    /// Upstream's message.
    pub message: String,
    /// Where in the config the first error is, when known.
    pub path: Option<JsonPath>,
    /// The full report behind the error, when there is one.
    pub report: Option<Report>,
}

impl ConfigError {
    fn plain(message: String) -> Self {
        ConfigError {
            message,
            path: None,
            report: None,
        }
    }

    fn with_report(message: String, report: Report) -> Self {
        let path = report.errors().find_map(|e| e.path.clone());
        ConfigError {
            message,
            path,
            report: Some(report),
        }
    }
}

fn v3_failure(err: &ParseError, profile: &Profile, version: SpecVersion) -> ConfigError {
    let mut report = err.report().cloned().unwrap_or_default();
    profile.special_mode_bits.reword(&mut report, version);
    ConfigError::with_report(
        format!("parsing Ignition config spec v3 failed with error: {err}\nReport: {report}"),
        report,
    )
}

/// Parses a config of any supported version into spec 3.5 (upstream's IgnParseWrapper and
/// conversion), without the extra validation of [`validate_config`].
pub fn parse_any(raw: &Value) -> Result<ParsedConfig, ConfigError> {
    parse_any_in(raw, Layout::Sorted)
}

/// [`parse_any`] with report positions in a given layout: [`Layout::Struct`] for configs upstream
/// marshalled itself (rendered configs), [`Layout::Sorted`] for stored MachineConfigs.
pub fn parse_any_in(raw: &Value, layout: Layout) -> Result<ParsedConfig, ConfigError> {
    parse_for(raw, layout, &Profile::default())
}

/// [`parse_any_in`] as `profile`'s release parses: versions newer than the one it renders
/// are unknown to it, and its messages list the versions it supports.
pub fn parse_for(
    raw: &Value,
    layout: Layout,
    profile: &Profile,
) -> Result<ParsedConfig, ConfigError> {
    let supported = profile.supported_versions;
    let detected = match parse::detect_version(raw) {
        Ok(d) => d,
        Err(ParseError::InvalidVersion) => {
            return Err(ConfigError::plain(format!(
            "parsing Ignition config failed: invalid version. Supported spec versions: {supported}"
        )))
        }
        Err(e) => return Err(v3_failure(&e, profile, SpecVersion::LATEST)),
    };
    match detected {
        DetectedVersion::Known(v) if v.is_v3() && v > profile.rendered_ignition => {
            Err(unknown_version(supported))
        }
        DetectedVersion::Known(v) if v.is_v3() => match parse::parse_value_in(raw, layout) {
            Ok(p) => Ok(ParsedConfig::V3 {
                source_minor: v.minor(),
                config: p.config.into_latest(),
            }),
            Err(e) => Err(v3_failure(&e, profile, v)),
        },
        DetectedVersion::Known(SpecVersion::V2_2) => {
            crate::render::v2_bridge::parse_v2(raw, supported)
        }
        _ => Err(unknown_version(supported)),
    }
}

fn unknown_version(supported: &str) -> ConfigError {
    ConfigError::plain(format!(
        "parsing Ignition config failed: unknown version. Supported spec versions: {supported}"
    ))
}

/// [`parse_any_in`] taking the config: the same result, without copying a spec 3.x config that
/// is already in normalised form (see [`parse::parse_owned_in`]).
pub fn parse_any_owned_in(raw: Value, layout: Layout) -> Result<ParsedConfig, ConfigError> {
    parse_owned_for(raw, layout, &Profile::default())
}

/// [`parse_for`] taking the config.
pub fn parse_owned_for(
    raw: Value,
    layout: Layout,
    profile: &Profile,
) -> Result<ParsedConfig, ConfigError> {
    match parse::detect_version(&raw) {
        Ok(DetectedVersion::Known(v)) if v.is_v3() && v <= profile.rendered_ignition => {
            match parse::parse_owned_in(raw, layout) {
                Ok(p) => Ok(ParsedConfig::V3 {
                    source_minor: v.minor(),
                    config: p.config.into_latest(),
                }),
                Err(e) => Err(v3_failure(&e, profile, v)),
            }
        }
        _ => parse_for(&raw, layout, profile),
    }
}

/// A parsed config: spec 3.x converted to 3.5, or spec 2.2 converted to 3.5.
#[derive(Debug, Clone)]
pub enum ParsedConfig {
    /// Written as 3.x.
    V3 {
        /// The config as 3.5.
        config: Config,
        /// The 3.x minor version it was written in.
        source_minor: u64,
    },
    /// Written as 2.2; already checked by the spec 2 rules.
    V2 {
        /// The converted config.
        config: Config,
        /// The normalised spec 2.2 config, for upstream's spec 2 mode check.
        v2: Value,
    },
}

impl ParsedConfig {
    /// The config as spec 3.5.
    pub fn into_config(self) -> Config {
        match self {
            ParsedConfig::V3 { config: c, .. } | ParsedConfig::V2 { config: c, .. } => c,
        }
    }
}

/// Upstream's ValidateIgnition on a parsed config: validation without positions, then file modes.
pub fn validate_config(parsed: &ParsedConfig) -> Result<(), ConfigError> {
    let config = match parsed {
        // Parsing already ran every rule at the source minor. The only rule that differs
        // between minors is the link target check (from 3.3 on), so the full re-validation
        // upstream does on the 3.5 form can only fail when a 3.0-3.2 config has a link without
        // target: run it (for upstream's exact report) only then.
        ParsedConfig::V3 {
            config,
            source_minor,
        } => {
            let targetless = config.list("storage.links").iter().any(|l| {
                l.get("target")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .is_empty()
            });
            if *source_minor >= 3 || !targetless {
                return check_modes(config);
            }
            config
        }
        ParsedConfig::V2 { v2, .. } => return crate::render::v2_bridge::check_v2_modes(v2),
    };
    let report = mco_ignition::validate::validate_without_source(config);
    if report.is_fatal() {
        return Err(ConfigError::with_report(
            format!("invalid ignition V3 config found: {report}"),
            report,
        ));
    }
    check_modes(config)
}

/// Refuses file modes above 0777 (setuid, setgid, sticky), as upstream does.
pub fn check_modes(config: &Config) -> Result<(), ConfigError> {
    for (i, f) in config.list("storage.files").iter().enumerate() {
        if let Some(mode) = f.get("mode").and_then(Value::as_i64) {
            if !(0..=0o777).contains(&mode) {
                let path = f.get("path").and_then(Value::as_str).unwrap_or("");
                return Err(ConfigError {
                    message: format!(
                        "invalid mode {} for {path}, cannot exceed 0777",
                        go_octal(mode)
                    ),
                    path: Some(JsonPath::parse_dotted(&format!("storage.files.{i}.mode"))),
                    report: None,
                });
            }
        }
    }
    Ok(())
}

/// Go's `%#o`.
pub fn go_octal(n: i64) -> String {
    if n == 0 {
        "0".into()
    } else if n < 0 {
        format!("-0{:o}", n.unsigned_abs())
    } else {
        format!("0{n:o}")
    }
}
