//! Spec 2.2 configs, handled the way upstream MCO handles a 2.2 MachineConfig:
//! parse with Ignition spec 2 semantics and validation ([`parse`]), MCO's extra mode check
//! ([`validate()`]), and conversion to a normalised spec 3.5 config ([`to_v3_5`]: MCO's duplicate
//! removal pre-pass, 2.2 -> 3.0 with the `root` -> `/` filesystem map, then up to 3.5).
//!
//! Every entry point takes the MachineConfig's config object and serialises it itself the way
//! upstream sees it ([`gojson::go_compact_sorted_with_positions`]), so report positions match
//! upstream's.

pub mod decode;
pub mod dedupe;
pub mod gojson;
pub mod report;
pub mod schema;
pub mod unit;
pub mod validate;

use serde_json::Value;
use thiserror::Error;

pub use report::Report;

use crate::translate::from_v2::{v22_to_v30, FromV2Error};
use crate::translate::up;
use crate::SpecVersion;

/// Why a 2.2 config is refused; `Display` is upstream's error text.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum V2Error {
    /// `ignition.version` is not 2.2.0 (upstream: the 2.x parser's "unsupported config
    /// version"; MCO reports its own "unknown version" message for it).
    #[error("unsupported config version")]
    UnknownVersion,
    /// A JSON value of the wrong kind (upstream's exact report for this is not reproduced).
    #[error("parsing Ignition spec v2 failed with error: config is not valid\nReport: error: {0}")]
    Decode(String),
    /// Validation failed.
    #[error("parsing Ignition spec v2 failed with error: config is not valid\nReport: {0}")]
    Invalid(Report),
    /// MCO refuses file modes with special bits.
    #[error("invalid mode {} for {path}, cannot exceed 0777", go_octal(*.mode))]
    FileMode {
        /// The mode.
        mode: i64,
        /// The file path.
        path: String,
    },
    /// MCO's pre-pass accepts only the `core` user.
    #[error("unexpected user with name: {0}. Only core user is supported")]
    User(String),
    /// The 2.2 -> 3 conversion failed.
    #[error("failed to convert Ignition config spec v2 to v3: unable to convert Ignition spec v2 config to v3: {0}")]
    Convert(FromV2Error),
}

/// Go's `%#o`.
fn go_octal(m: i64) -> String {
    if m == 0 {
        "0".into()
    } else if m < 0 {
        format!("-0{:o}", -m)
    } else {
        format!("0{m:o}")
    }
}

/// A parsed 2.2 config.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The normalised 2.2 tree (canonical keys, Go zero values of non-pointer fields left out).
    pub config: Value,
    /// Non-fatal findings (warnings, infos).
    pub report: Report,
}

/// Parses and validates a 2.2 config object as upstream's spec 2.2 parser does.
pub fn parse(config: &Value) -> Result<Parsed, V2Error> {
    let (text, root) = gojson::go_compact_sorted_with_positions(config);
    let decoded = decode::decode_struct(&schema::CONFIG, config);
    let version = config
        .get("ignition")
        .and_then(|i| {
            i.as_object().and_then(|m| {
                m.iter()
                    .rev()
                    .find(|(k, _)| decode::fold_eq(k, "version"))
                    .map(|(_, v)| v)
            })
        })
        .and_then(Value::as_str)
        .unwrap_or("");
    let exact = semver::Version::parse(version)
        .ok()
        .is_some_and(|v| v.major == 2 && v.minor == 2 && v.patch == 0 && v.pre.is_empty());
    let cfg = match decoded {
        Err(e) if exact => return Err(V2Error::Decode(e.to_string())),
        Err(_) => return Err(V2Error::UnknownVersion),
        Ok(_) if !exact => return Err(V2Error::UnknownVersion),
        Ok(c) => c,
    };
    let src = validate::Source {
        bytes: text.as_bytes(),
        root: &root,
    };
    let report = validate::validate_config(&cfg, Some(&src));
    if report.is_fatal() {
        return Err(V2Error::Invalid(report));
    }
    Ok(Parsed {
        config: cfg,
        report,
    })
}

/// MCO's validation of a 2.2 MachineConfig config: [`parse`], then no file mode above 0777.
pub fn validate(config: &Value) -> Result<Parsed, V2Error> {
    let parsed = parse(config)?;
    check_file_modes(&parsed.config)?;
    Ok(parsed)
}

/// MCO's special-bits check on a normalised 2.2 tree.
pub fn check_file_modes(cfg: &Value) -> Result<(), V2Error> {
    let files = cfg
        .get("storage")
        .and_then(|s| s.get("files"))
        .and_then(Value::as_array);
    for f in files.into_iter().flatten() {
        if let Some(m) = f.get("mode").and_then(Value::as_i64) {
            if !(0..=0o777).contains(&m) {
                return Err(V2Error::FileMode {
                    mode: m,
                    path: f
                        .get("path")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                });
            }
        }
    }
    Ok(())
}

/// Converts a 2.2 MachineConfig config to a normalised spec 3.5 config, as upstream's
/// `ParseAndConvertConfig` does (parse, duplicate-removal pre-pass, 2.2 -> 3.0 -> ... -> 3.5).
/// The MCO mode check is not part of it (see [`validate()`]).
pub fn to_v3_5(config: &Value) -> Result<Value, V2Error> {
    let parsed = parse(config)?;
    let deduped = dedupe::dedupe(&parsed.config).map_err(V2Error::User)?;
    let v30 = v22_to_v30(&deduped).map_err(V2Error::Convert)?;
    let mut out = up(&v30, SpecVersion::V3_0, SpecVersion::V3_5);
    crate::translate::prune(&mut out);
    Ok(out)
}

/// Upstream's sanity check on a converted 2.2 config: validation without source; `Err` holds the
/// printed report when it is fatal.
pub(crate) fn sanity_check(cfg22: &Value) -> Result<(), String> {
    let mut pruned = cfg22.clone();
    crate::translate::prune(&mut pruned);
    let decoded = decode::decode_struct(&schema::CONFIG, &pruned).map_err(|e| e.to_string())?;
    let r = validate::validate_config(&decoded, None);
    if r.is_fatal() {
        return Err(r.to_string());
    }
    Ok(())
}
