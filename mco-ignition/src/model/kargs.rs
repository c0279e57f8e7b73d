//! Ignition `kernelArguments`.

use serde::{Deserialize, Serialize};

/// Kernel arguments Ignition ensures are present or absent.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KernelArguments {
    /// Arguments that must be on the kernel command line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub should_exist: Vec<String>,
    /// Arguments that must not be on the kernel command line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub should_not_exist: Vec<String>,
}
