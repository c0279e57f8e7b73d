//! Ignition configs for the Machine Config Operator.
//!
//! Spec 2.2 and 3.0-3.5: version detection, parsing with Go decoder semantics, validation with
//! JSON-path located reports, Ignition's merge, translation between versions, data URLs and
//! deterministic emission. Everything here is pure: bytes in, values out.
//!
//! The engine works on a schema-normalised JSON tree ([`Config`]): parsing maps every key to its
//! canonical name for the config's version, drops unknown keys (as warnings) and checks types, so a
//! `Config` always conforms to its version's schema. [`model`] offers typed read-only views.

pub mod config;
pub mod dataurl;
pub mod emit;
pub mod error;
pub mod gocompat;
pub mod merge;
pub mod merge_fold;
pub mod model;
pub mod parse;
pub mod path;
pub mod report;
pub mod schema;
pub mod small_map;
pub mod translate;
pub mod v2;
pub mod validate;
pub mod version;

pub use config::Config;
pub use error::ParseError;
pub use path::JsonPath;
pub use report::{Report, ReportEntry, Severity};

pub use version::SpecVersion;
