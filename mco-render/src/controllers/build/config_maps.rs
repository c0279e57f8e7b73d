//! The ConfigMaps a build mounts: the Containerfile, the gzipped MachineConfig, the
//! additional trust bundle, and `/etc/containers` policy and registries files.

use super::error::BuildError;
use super::request::RequestOpts;
use serde_json::Value;

/// The ConfigMaps, in upstream's order.
pub fn config_maps(_opts: &RequestOpts<'_>) -> Result<Vec<Value>, BuildError> {
    Ok(Vec::new())
}
