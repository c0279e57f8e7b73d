//! Validation reports: errors and warnings, each located by JSON path and position.

use crate::path::JsonPath;
use std::fmt;

/// How serious a report entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The config is invalid.
    Error,
    /// The config is accepted but probably not what was meant.
    Warning,
}

/// A line and column (1-based, column in bytes) in the serialised config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Position {
    /// 1-based line.
    pub line: usize,
    /// 1-based byte column.
    pub column: usize,
}

/// One problem found in a config.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReportEntry {
    /// Error or warning.
    pub severity: Severity,
    /// Where in the config, when known.
    pub path: Option<JsonPath>,
    /// Where in the serialised config, when known.
    pub position: Option<Position>,
    /// What is wrong.
    pub message: String,
}

impl ReportEntry {
    /// An error at a path.
    pub fn error(path: JsonPath, message: impl Into<String>) -> Self {
        ReportEntry {
            severity: Severity::Error,
            path: Some(path),
            position: None,
            message: message.into(),
        }
    }

    /// A warning at a path.
    pub fn warning(path: JsonPath, message: impl Into<String>) -> Self {
        ReportEntry {
            severity: Severity::Warning,
            path: Some(path),
            position: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for ReportEntry {
    /// Upstream's form: `error at $.storage.files.0.path, line 1 col 5: path not absolute`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let has_path = self.path.as_ref().is_some_and(|p| !p.0.is_empty());
        match (&self.position, has_path) {
            (Some(pos), true) => write!(
                f,
                "{kind} at {}, line {} col {}",
                self.path
                    .as_ref()
                    .map(|p| p.to_string())
                    .unwrap_or_default(),
                pos.line,
                pos.column
            )?,
            (Some(pos), false) => write!(f, "{kind} at line {} col {}", pos.line, pos.column)?,
            (None, true) => write!(
                f,
                "{kind} at {}",
                self.path
                    .as_ref()
                    .map(|p| p.to_string())
                    .unwrap_or_default()
            )?,
            (None, false) => f.write_str(kind)?,
        }
        write!(f, ": {}", self.message)
    }
}

/// All problems found in a config, in upstream's order.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    /// The entries.
    pub entries: Vec<ReportEntry>,
}

impl Report {
    /// True when any entry is an error.
    pub fn is_fatal(&self) -> bool {
        self.entries.iter().any(|e| e.severity == Severity::Error)
    }

    /// Appends another report's entries.
    pub fn merge(&mut self, other: Report) {
        self.entries.extend(other.entries);
    }

    /// Adds an error.
    pub fn error(&mut self, path: JsonPath, message: impl Into<String>) {
        self.entries.push(ReportEntry::error(path, message));
    }

    /// Adds a warning.
    pub fn warn(&mut self, path: JsonPath, message: impl Into<String>) {
        self.entries.push(ReportEntry::warning(path, message));
    }

    /// The errors only.
    pub fn errors(&self) -> impl Iterator<Item = &ReportEntry> {
        self.entries
            .iter()
            .filter(|e| e.severity == Severity::Error)
    }

    /// The warnings only.
    pub fn warnings(&self) -> impl Iterator<Item = &ReportEntry> {
        self.entries
            .iter()
            .filter(|e| e.severity == Severity::Warning)
    }
}

impl fmt::Display for Report {
    /// Every entry on its own line, each ending in a newline, as upstream prints reports.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for e in &self.entries {
            writeln!(f, "{e}")?;
        }
        Ok(())
    }
}
