//! Typed, read-only views of a spec 3.x config.
//!
//! The structs model the spec 3.5 superset (every earlier 3.x config decodes into them). Go pointer
//! fields are `Option`, lists are `Vec` (absent and empty read the same), and serialisation omits
//! `None`, empty lists and empty structs, the shape upstream's omit-empty encoder writes.

pub mod kargs;
pub mod passwd;
pub mod resource;
pub mod storage;
pub mod systemd;

use serde::{Deserialize, Serialize};

pub use kargs::KernelArguments;
pub use passwd::{Passwd, PasswdGroup, PasswdUser};
pub use resource::{HttpHeader, Resource, Verification};
pub use storage::{
    Cex, Clevis, ClevisCustom, Directory, Disk, File, Filesystem, Link, Luks, NodeOwner, Partition,
    Raid, Storage, Tang,
};
pub use systemd::{Dropin, Systemd, Unit};

/// `true` when a value equals its type's default (used to omit empty structs).
pub(crate) fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// Error decoding a JSON value into the typed model.
#[derive(Debug, thiserror::Error)]
#[error("decoding Ignition config into the typed model: {0}")]
pub struct ModelError(#[from] serde_json::Error);

/// A whole spec 3.x config.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Config {
    /// The `ignition` section (version, merge/replace, timeouts, TLS, proxy).
    #[serde(default)]
    pub ignition: Ignition,
    /// Ignition-managed kernel arguments.
    #[serde(default, skip_serializing_if = "is_default")]
    pub kernel_arguments: KernelArguments,
    /// Users and groups.
    #[serde(default, skip_serializing_if = "is_default")]
    pub passwd: Passwd,
    /// Files, directories, links and block devices.
    #[serde(default, skip_serializing_if = "is_default")]
    pub storage: Storage,
    /// systemd units.
    #[serde(default, skip_serializing_if = "is_default")]
    pub systemd: Systemd,
}

impl Config {
    /// Decodes a JSON value (already validated or not) into the typed model. Unknown keys are
    /// ignored; a value of the wrong JSON type is an error.
    pub fn from_value(value: &serde_json::Value) -> Result<Config, ModelError> {
        Ok(Config::deserialize(value)?)
    }

    /// Serialises the config in omit-empty form.
    pub fn to_value(&self) -> serde_json::Value {
        // Serialising these plain structs cannot fail (string keys only).
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// The `ignition` section.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Ignition {
    /// Configs to merge in or replace this one with.
    #[serde(default, skip_serializing_if = "is_default")]
    pub config: IgnitionConfig,
    /// HTTP proxy settings.
    #[serde(default, skip_serializing_if = "is_default")]
    pub proxy: Proxy,
    /// TLS settings.
    #[serde(default, skip_serializing_if = "is_default")]
    pub security: Security,
    /// Fetch timeouts.
    #[serde(default, skip_serializing_if = "is_default")]
    pub timeouts: Timeouts,
    /// Spec version, for example `3.5.0`.
    #[serde(default)]
    pub version: String,
}

/// `ignition.config`: merge and replace references.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct IgnitionConfig {
    /// Configs merged into this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merge: Vec<Resource>,
    /// Config replacing this one.
    #[serde(default, skip_serializing_if = "is_default")]
    pub replace: Resource,
}

/// `ignition.proxy`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proxy {
    /// Proxy for http URLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_proxy: Option<String>,
    /// Proxy for https URLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https_proxy: Option<String>,
    /// Hosts not proxied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub no_proxy: Vec<String>,
}

/// `ignition.security`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Security {
    /// TLS settings.
    #[serde(default, skip_serializing_if = "is_default")]
    pub tls: Tls,
}

/// `ignition.security.tls`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tls {
    /// Extra certificate authorities.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub certificate_authorities: Vec<Resource>,
}

/// `ignition.timeouts` (seconds).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timeouts {
    /// Time to wait for response headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_response_headers: Option<i64>,
    /// Total time for a fetch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_total: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_omits_empty() {
        let v = json!({
            "ignition": {"version": "3.5.0", "config": {}},
            "storage": {"files": [{"path": "/a", "contents": {"source": "data:,x"}, "mode": 420,
                        "user": {}, "append": []}]},
            "systemd": {"units": [{"name": "a.service", "enabled": true, "dropins": []}]},
            "passwd": {}
        });
        let c = Config::from_value(&v).unwrap();
        assert_eq!(c.storage.files[0].mode, Some(420));
        assert_eq!(
            c.to_value(),
            json!({
                "ignition": {"version": "3.5.0"},
                "storage": {"files": [{"path": "/a", "contents": {"source": "data:,x"}, "mode": 420}]},
                "systemd": {"units": [{"name": "a.service", "enabled": true}]}
            })
        );
    }

    #[test]
    fn wrong_type_is_error() {
        assert!(Config::from_value(&json!({"storage": {"files": "x"}})).is_err());
    }

    #[test]
    fn spec_fields_decode() {
        let v = json!({
            "ignition": {"version": "3.5.0",
                "config": {"merge": [{"source": "http://x", "httpHeaders": [{"name": "a", "value": "b"}]}]},
                "timeouts": {"httpTotal": 5},
                "security": {"tls": {"certificateAuthorities": [{"source": "data:,c",
                    "verification": {"hash": "sha512-00"}}]}},
                "proxy": {"httpsProxy": "p", "noProxy": ["a"]}},
            "kernelArguments": {"shouldExist": ["a"], "shouldNotExist": ["b"]},
            "storage": {"disks": [{"device": "/dev/sda", "partitions": [{"number": 1, "sizeMiB": 10}]}],
                "links": [{"path": "/l", "target": "/t", "hard": false}],
                "luks": [{"name": "x", "clevis": {"tpm2": true}}],
                "raid": [{"name": "md", "level": "raid1", "devices": ["/dev/a"]}],
                "filesystems": [{"device": "/dev/b", "format": "xfs", "mountOptions": ["ro"]}],
                "directories": [{"path": "/d", "mode": 493, "group": {"name": "g"}}]}
        });
        let c = Config::from_value(&v).unwrap();
        assert_eq!(c.to_value(), v);
    }
}
