//! Render MachineConfigPools exactly as the Machine Config Operator does.
//!
//! Pure: no I/O, clocks, randomness or global state. The same inputs give the same bytes.

pub mod api;
pub mod cluster;
pub mod controller;
pub mod diff;
pub mod error;
pub mod generate;
pub mod goquote;
pub mod manifests;
pub mod name;
pub mod operator;
pub mod plan;
pub mod reconcile;
pub mod render;
pub mod serve;
pub mod source_config;
pub mod templates;
mod v2_bridge;
pub mod value_at;

/// The controller version this build stamps on rendered configs by default.
pub const CONTROLLER_VERSION: &str = "7ff337a4ffac8e7562692181178ede61e4b2eec5";

pub use error::{RenderError, RenderErrorKind};
pub use render::{render_pool, NameScheme, RenderFailure, RenderOptions, Rendered};
