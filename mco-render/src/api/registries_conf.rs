//! containers-registries.conf(5) v2, the file CRI-O and the container tools read: the fields of
//! Go's `sysregistriesv2.V2RegistriesConf`, one model for the registries controller (which
//! decodes and writes it) and the daemon's no-drain rule for mirror-only changes (which
//! parses it strictly, with the TOML decoder's messages).

use std::collections::BTreeMap;

/// A registry endpoint (`location`, `insecure`, `pull-from-mirror`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Endpoint {
    /// `location`.
    pub location: String,
    /// `insecure`.
    pub insecure: bool,
    /// `pull-from-mirror`.
    pub pull_from_mirror: String,
}

/// One `[[registry]]` table of registries.conf.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registry {
    /// `prefix`.
    pub prefix: String,
    /// The primary endpoint.
    pub endpoint: Endpoint,
    /// `[[registry.mirror]]`.
    pub mirrors: Vec<Endpoint>,
    /// `blocked`.
    pub blocked: bool,
    /// `mirror-by-digest-only`.
    pub mirror_by_digest_only: bool,
}

impl Registry {
    /// The scope the entry applies to: `prefix`, else `location`.
    pub fn scope(&self) -> &str {
        if self.prefix.is_empty() {
            &self.endpoint.location
        } else {
            &self.prefix
        }
    }
}

/// registries.conf (v2), the fields Go's `sysregistriesv2.V2RegistriesConf` has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistriesConf {
    /// `[[registry]]`.
    pub registries: Vec<Registry>,
    /// `unqualified-search-registries` (`None`: absent).
    pub unqualified_search_registries: Option<Vec<String>>,
    /// `credential-helpers` (`None`: absent).
    pub credential_helpers: Option<Vec<String>>,
    /// `short-name-mode`.
    pub short_name_mode: String,
    /// `additional-layer-store-auth-helper`.
    pub additional_layer_store_auth_helper: String,
    /// `[aliases]` (`None`: absent).
    pub aliases: Option<BTreeMap<String, String>>,
}
