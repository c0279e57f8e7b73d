//! Translation between spec versions.
//!
//! Everything here works on normalised configs (`serde_json::Value` trees with canonical keys,
//! no unknown keys, no nulls, no empty objects or lists):
//!
//! - [`down()`]: a spec 3.5 config to 3.4, 3.3, 3.2, 3.1 or 2.2, as the upstream
//!   machine-config-server serves older clients, with upstream's refusals for what the target
//!   cannot express.
//! - [`up()`]: a 3.x config to a newer 3.x version.
//! - [`from_v2`]: a spec 2.2 config to 3.0 (used by [`crate::v2`]).

pub mod down;
pub mod from_v2;
mod to_v2;
pub mod up;
mod value;

pub use down::down;
pub use up::up;

/// Removes nulls, empty objects and empty lists, recursively.
pub fn prune(v: &mut serde_json::Value) {
    value::prune_empty(v);
}

use thiserror::Error;

/// A translation refused by the target version (or an input it cannot handle).
///
/// `Display` is the upstream error string.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TranslateError {
    /// The target cannot express something in the config; the text is upstream's message.
    #[error("{0}")]
    Unsupported(String),
    /// The input is not a config of the expected shape (no upstream equivalent).
    #[error("invalid input config: {0}")]
    Input(String),
    /// The (source, target) pair is not a conversion upstream offers.
    #[error("conversion for source version {from} to target version {to} is not supported the requested conversion is not supported")]
    NoPath {
        /// Source version.
        from: crate::SpecVersion,
        /// Target version.
        to: crate::SpecVersion,
    },
    /// The 2.2 output failed upstream's sanity check (spec 2 validation of the result).
    #[error("Converted spec has unexpected fatal error:\n{0}")]
    ConvertedInvalid(String),
}
