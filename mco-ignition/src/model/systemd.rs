//! The `systemd` section: units and their drop-ins.

use serde::{Deserialize, Serialize};

/// The `systemd` section.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Systemd {
    /// Units, in config order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub units: Vec<Unit>,
}

/// One systemd unit.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Unit {
    /// Unit file contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contents: Option<String>,
    /// Drop-ins under `<name>.d/`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropins: Vec<Dropin>,
    /// `true` enable, `false` disable, absent: preset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Mask the unit (symlink to /dev/null).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mask: Option<bool>,
    /// Unit name, for example `crio.service`.
    #[serde(default)]
    pub name: String,
}

/// One unit drop-in.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Dropin {
    /// Drop-in contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contents: Option<String>,
    /// Drop-in file name, for example `10-foo.conf`.
    #[serde(default)]
    pub name: String,
}
