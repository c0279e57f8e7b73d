//! Errors from parsing a config.

use crate::report::Report;

/// Why a config could not be parsed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    /// No bytes at all.
    #[error("not a config (empty)")]
    Empty,
    /// Not JSON; the report locates the problem.
    #[error("config is not valid")]
    Syntax(Report),
    /// `ignition.version` missing or not a semantic version.
    #[error("invalid config version (couldn't parse)")]
    InvalidVersion,
    /// A well-formed version that is not modelled.
    #[error("unsupported config version")]
    UnknownVersion,
    /// A value of the wrong JSON type, or validation errors; the report says which.
    #[error("config is not valid")]
    Invalid(Report),
}

impl ParseError {
    /// The report behind the error, if any.
    pub fn report(&self) -> Option<&Report> {
        match self {
            ParseError::Syntax(r) | ParseError::Invalid(r) => Some(r),
            _ => None,
        }
    }
}
