//! The `passwd` section: users and groups.

use serde::{Deserialize, Serialize};

/// The `passwd` section.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Passwd {
    /// Groups, in config order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<PasswdGroup>,
    /// Users, in config order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<PasswdUser>,
}

/// One group.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PasswdGroup {
    /// Group id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gid: Option<i64>,
    /// Group name.
    #[serde(default)]
    pub name: String,
    /// Password hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_hash: Option<String>,
    /// Whether the group should exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub should_exist: Option<bool>,
    /// System group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<bool>,
}

/// One user.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PasswdUser {
    /// GECOS field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gecos: Option<String>,
    /// Supplementary groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Home directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home_dir: Option<String>,
    /// User name.
    #[serde(default)]
    pub name: String,
    /// Do not create the home directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_create_home: Option<bool>,
    /// Do not add to lastlog/faillog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_log_init: Option<bool>,
    /// Do not create a same-named group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_user_group: Option<bool>,
    /// Password hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_hash: Option<String>,
    /// Primary group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_group: Option<String>,
    /// SSH public keys.
    #[serde(
        default,
        rename = "sshAuthorizedKeys",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub ssh_authorized_keys: Vec<String>,
    /// Login shell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
    /// Whether the user should exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub should_exist: Option<bool>,
    /// System user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<bool>,
    /// User id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<i64>,
}
