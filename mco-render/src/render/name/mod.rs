//! Rendered MachineConfig names.
//!
//! Upstream names a rendered MachineConfig `rendered-<pool>-<hex>`, where
//! `<hex>` is the MD5 of a fixed salt followed by the spec's YAML as
//! upstream's YAML library writes it. [`to_go_yaml`] reproduces those YAML
//! bytes exactly; [`rendered_name`] builds the name.

mod hash;

use serde_json::Value;

pub use crate::gocompat::yaml::{check_upstream_marshal, NameError};
pub use crate::gocompat::yaml::{to_go_yaml, write_go_yaml};
pub use hash::{content_sha256_hash, upstream_hash, UPSTREAM_SALT};

/// How the hash part of a rendered name is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NameScheme {
    /// Identical to upstream: salted MD5 of the spec's YAML.
    #[default]
    Upstream,
    /// SHA-256 of the same YAML, first 32 hex digits; for users who do not
    /// need names that match upstream's.
    ContentSha256,
}

/// Upstream's name for the rendered MachineConfig of `pool` with `spec`
/// (the spec as a JSON object: osImageURL, baseOSExtensionsContainerImage,
/// config, kernelArguments, extensions, fips, kernelType).
pub fn rendered_name(pool: &str, spec: &Value) -> String {
    name_for(NameScheme::Upstream, pool, spec)
}

/// Like [`rendered_name`], but reports the error upstream returns for a
/// spec it cannot convert to YAML (see [`check_upstream_marshal`]).
pub fn try_rendered_name(pool: &str, spec: &Value) -> Result<String, NameError> {
    try_name_for(NameScheme::Upstream, pool, spec)
}

/// [`name_for`], or the error upstream returns for a spec it cannot convert
/// to YAML (see [`check_upstream_marshal`]). The check is made while the
/// YAML is written, without a separate walk over the spec.
pub fn try_name_for(scheme: NameScheme, pool: &str, spec: &Value) -> Result<String, NameError> {
    let hash = match scheme {
        NameScheme::Upstream => hash::checked_upstream_hash(spec),
        NameScheme::ContentSha256 => hash::checked_content_sha256_hash(spec),
    };
    match hash {
        Ok(hash) => Ok(format!("rendered-{pool}-{hash}")),
        Err((_, e)) => Err(e),
    }
}

/// The rendered name of `pool` with `spec` under `scheme`. It does not
/// check whether upstream could name the spec (see [`try_rendered_name`]).
pub fn name_for(scheme: NameScheme, pool: &str, spec: &Value) -> String {
    let hash = match scheme {
        NameScheme::Upstream => upstream_hash(spec),
        NameScheme::ContentSha256 => content_sha256_hash(spec),
    };
    format!("rendered-{pool}-{hash}")
}
