//! Render errors: upstream's message, plus which MachineConfig and where inside it.

use mco_ignition::JsonPath;
use std::fmt;

/// What kind of problem stopped a render.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RenderErrorKind {
    /// The pool selects every MachineConfig (`{}`).
    EmptySelector,
    /// The pool's selector is invalid.
    InvalidSelector,
    /// The selector matches no MachineConfig.
    NoMatch,
    /// A controller-generated input carries another controller version.
    StaleGenerated,
    /// A MachineConfig's kernelType is not supported.
    InvalidKernelType,
    /// A MachineConfig's Ignition config is invalid.
    InvalidIgnition,
    /// A MachineConfig names an unsupported extension.
    InvalidExtensions,
    /// The merged inputs contradict each other (kernel-devel with a non-default kernel).
    Conflict,
    /// A selected MachineConfig has no labels.
    MissingLabels,
    /// The rendered MachineConfig is too large to store.
    TooLarge,
}

/// A problem that stops a pool from rendering.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RenderError {
    /// The kind of problem.
    pub kind: RenderErrorKind,
    /// The MachineConfig at fault, when one is.
    pub machine_config: Option<String>,
    /// Where inside that MachineConfig (`spec.config.storage.files.2.path`), when known.
    pub path: Option<JsonPath>,
    /// Upstream's message, byte for byte.
    pub message: String,
    /// Each problem of an Ignition report, located inside the MachineConfig.
    pub details: Vec<(JsonPath, String)>,
}

impl RenderError {
    /// An error not tied to one MachineConfig.
    pub fn pool(kind: RenderErrorKind, message: impl Into<String>) -> Self {
        RenderError {
            kind,
            machine_config: None,
            path: None,
            message: message.into(),
            details: Vec::new(),
        }
    }

    /// An error in one MachineConfig.
    pub fn in_config(kind: RenderErrorKind, mc: &str, message: impl Into<String>) -> Self {
        RenderError {
            kind,
            machine_config: Some(mc.to_string()),
            path: None,
            message: message.into(),
            details: Vec::new(),
        }
    }

    /// The same error located at a path inside the MachineConfig.
    pub fn at(mut self, path: JsonPath) -> Self {
        self.path = Some(path);
        self
    }

    /// A one-line description for people: `99-worker-x: spec.config.storage.files[2].path: ...`.
    pub fn describe(&self) -> String {
        if !self.details.is_empty() {
            let mc = self.machine_config.as_deref().unwrap_or("");
            let lines: Vec<String> = self
                .details
                .iter()
                .map(|(p, m)| format!("{mc}: {}: {m}", p.to_bracketed()))
                .collect();
            return lines.join("\n");
        }
        let mut out = String::new();
        if let Some(mc) = &self.machine_config {
            out.push_str(mc);
            out.push_str(": ");
        }
        if let Some(p) = &self.path {
            out.push_str(&p.to_bracketed());
            out.push_str(": ");
        }
        out.push_str(self.message.trim_end());
        out
    }
}

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RenderError {}
