//! Reading a rendered MachineConfig the way the node agent does before diffing it.

use crate::api::MachineConfigSpec;
use crate::plan::reconcile::RenderedInput;
use crate::render::source_config;
use mco_ignition::{Config, SpecVersion};

/// Builds the diff input for one rendered MachineConfig: its spec fields and its Ignition config
/// parsed (any supported version) and converted to spec 3.5. The error is upstream's message
/// (`failed to parse Ignition config: ...`).
pub fn rendered_input(name: &str, spec: &MachineConfigSpec) -> Result<RenderedInput, String> {
    let config = match spec.config.as_ref().filter(|c| !c.is_null()) {
        Some(raw) => source_config::parse_any(raw)
            .map_err(|e| format!("failed to parse Ignition config: {}", e.message))?
            .into_config(),
        None => Config::empty(SpecVersion::LATEST),
    };
    let typed = config
        .typed()
        .map_err(|e| format!("failed to parse Ignition config: {e}"))?;
    Ok(RenderedInput {
        name: name.to_string(),
        os_image_url: spec.os_image_url.clone(),
        base_os_extensions_container_image: spec.base_os_extensions_container_image.clone(),
        fips: spec.fips,
        kernel_arguments: spec.kernel_arguments.clone(),
        extensions: spec.extensions.clone(),
        kernel_type: spec.kernel_type.clone(),
        config: typed,
    })
}

/// Upstream's `diffError` text for a side that does not parse.
pub fn diff_error(side_is_new: bool, message: &str) -> String {
    let side = if side_is_new { "new" } else { "old" };
    format!("parsing {side} Ignition config failed with error: {message}")
}
