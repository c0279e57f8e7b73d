//! What the machine-config-server serves: a rendered config converted to the spec version a
//! machine asks for.

pub mod accept;
pub mod kubeconfig;
pub mod served;

pub use kubeconfig::bootstrap_kubeconfig;
pub use served::{served_bytes, served_config, EncapsulatedVersion, ServeError, ServeInput};

use mco_ignition::SpecVersion;
use serde_json::Value;

/// Converts a rendered spec 3.5 config to `target`, as the server does before answering.
/// The error is upstream's message.
pub fn convert(config: &Value, target: SpecVersion) -> Result<Value, String> {
    let parsed = crate::render::source_config::parse_any_in(
        config,
        crate::render::source_config::Layout::Struct,
    )
    .map_err(|e| e.message)?;
    let config = parsed.into_config().into_value();
    mco_ignition::translate::down(&config, target).map_err(|e| e.to_string())
}
