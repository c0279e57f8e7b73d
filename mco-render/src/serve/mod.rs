//! What the machine-config-server serves: a rendered config converted to the spec version a
//! machine asks for.

pub mod accept;
pub mod kubeconfig;
pub mod served;

pub use kubeconfig::bootstrap_kubeconfig;
pub use served::{served_bytes, served_config, EncapsulatedVersion, ServeError, ServeInput};

use crate::release::{Profile, ServedConversion, StepLabels};
use mco_ignition::SpecVersion;
use serde_json::Value;

/// Converts a rendered spec 3.5 config to `target`, as the server does before answering.
/// The error is upstream's message.
pub fn convert(config: &Value, target: SpecVersion) -> Result<Value, String> {
    convert_for(config, target, &Profile::default())
}

/// [`convert`] as `profile`'s release converts (its rendered configs are in its own version).
pub fn convert_for(
    config: &Value,
    target: SpecVersion,
    profile: &Profile,
) -> Result<Value, String> {
    let parsed = crate::render::source_config::parse_any_in(
        config,
        crate::render::source_config::Layout::Struct,
    );
    let ServedConversion::Chain { labels } = profile.served_conversion else {
        let config = parsed.map_err(|e| e.message)?.into_config().into_value();
        return mco_ignition::translate::down(&config, target).map_err(|e| e.to_string());
    };
    // Upstream's step functions: the newest version as parsed, each older 3.x one minor at a
    // time, 2.2 from 3.2; each step's error wrapped in its words.
    let newest = profile.rendered_ignition;
    let label = |v: SpecVersion| match labels {
        StepLabels::Dotted => format!("v3.{}", v.minor()),
        StepLabels::Underscored => "v3_2".to_string(),
    };
    let to_v2 = target == SpecVersion::V2_2;
    let from = match labels {
        StepLabels::Dotted => format!("v3.{}", newest.minor()),
        StepLabels::Underscored => "v3.2".to_string(),
    };
    let config = match parsed {
        Ok(p) => p.into_config().into_value(),
        Err(e) if to_v2 => {
            return Err(e.message.replacen(
                "parsing Ignition config spec v3 failed",
                &format!("parsing Ignition config spec {from} failed"),
                1,
            ))
        }
        Err(e) => return Err(e.message),
    };
    let v2_wrap = |e: String| {
        format!("failed to convert config from spec {from} to v2.2: unable to convert Ignition spec v3 config to v2: {e}")
    };
    let lowest = if to_v2 { SpecVersion::V3_2 } else { target };
    let mut out = mco_ignition::translate::down(&config, newest).map_err(|e| e.to_string())?;
    for step in SpecVersion::ALL.iter().rev().copied() {
        if !step.is_v3() || step >= newest || step < lowest {
            continue;
        }
        let above = SpecVersion::from_major_minor(3, step.minor() + 1).unwrap_or(newest);
        out = mco_ignition::translate::down(&config, step).map_err(|e| {
            let why = match labels {
                StepLabels::Dotted => format!(
                    "unable to convert Ignition spec {} config to {}: {e}",
                    label(above),
                    label(step)
                ),
                StepLabels::Underscored => {
                    format!("unable to convert Ignition spec v3_2 config to v3_1: {e}")
                }
            };
            if to_v2 {
                v2_wrap(why)
            } else {
                why
            }
        })?;
    }
    if to_v2 {
        out = mco_ignition::translate::down(&config, SpecVersion::V2_2)
            .map_err(|e| v2_wrap(e.to_string()))?;
    }
    Ok(out)
}
