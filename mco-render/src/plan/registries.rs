//! The registries.conf rule: a change to `/etc/containers/registries.conf` needs no drain when it
//! only adds mirrors that are used for digest pulls (or whole registries whose mirrors all are).

use std::collections::{BTreeMap, HashMap};

use base64::Engine as _;
use mco_ignition::model::Config;
use serde::Deserialize;

use super::policy::REGISTRIES_CONF;
use crate::gocompat::quote::{go_quote, go_quote_rune};

/// Why the registries.conf check could not decide.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistriesError {
    /// The old file's data URL did not decode.
    #[error("failed decoding Data URL scheme string: {0}")]
    OldDataUrl(String),
    /// The new file's data URL did not decode (upstream has no colon here).
    #[error("failed decoding Data URL scheme string {0}")]
    NewDataUrl(String),
    /// Either file is not valid TOML for the registries.conf schema.
    #[error("failed decoding TOML content from file {REGISTRIES_CONF}: {0}")]
    Toml(String),
}

pub use crate::api::registries_conf::{Endpoint, RegistriesConf, Registry};

const DIGEST_ONLY: &str = "digest-only";

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawConf {
    registry: Vec<RawRegistry>,
    #[serde(rename = "unqualified-search-registries")]
    unqualified_search_registries: Option<Vec<String>>,
    #[serde(rename = "credential-helpers")]
    credential_helpers: Option<Vec<String>>,
    #[serde(rename = "short-name-mode")]
    short_name_mode: String,
    #[serde(rename = "additional-layer-store-auth-helper")]
    als_auth_helper: String,
    aliases: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawEndpoint {
    location: String,
    insecure: bool,
    #[serde(rename = "pull-from-mirror")]
    pull_from_mirror: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawRegistry {
    prefix: String,
    location: String,
    insecure: bool,
    #[serde(rename = "pull-from-mirror")]
    pull_from_mirror: String,
    mirror: Vec<RawEndpoint>,
    blocked: bool,
    #[serde(rename = "mirror-by-digest-only")]
    mirror_by_digest_only: bool,
}

impl From<RawEndpoint> for Endpoint {
    fn from(r: RawEndpoint) -> Endpoint {
        Endpoint {
            location: r.location,
            insecure: r.insecure,
            pull_from_mirror: r.pull_from_mirror,
        }
    }
}

/// Parses registries.conf bytes. Errors read like upstream's TOML decoder where the corpus shows
/// them (`toml: line N (last key "k"): ...`); other syntax errors keep the same frame with this
/// parser's own description.
pub fn parse_registries_conf(data: &[u8]) -> Result<RegistriesConf, String> {
    let text = std::str::from_utf8(data).map_err(|e| {
        format!(
            "toml: line {}: invalid UTF-8 byte at position {}",
            line_of(data, e.valid_up_to()),
            e.valid_up_to()
        )
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.bytes().take(6).any(|b| b == 0) {
        return Err(
            "toml: line 1: files cannot contain NULL bytes; probably using UTF-16; TOML files must be UTF-8"
                .to_string(),
        );
    }
    if let Some(e) = header_error(text) {
        return Err(e);
    }
    let raw: RawConf = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |s| line_of(text.as_bytes(), s.start));
        let msg = e.message().trim().to_string();
        format!("toml: line {line}: {msg}")
    })?;
    Ok(RegistriesConf {
        registries: raw
            .registry
            .into_iter()
            .map(|r| Registry {
                prefix: r.prefix,
                endpoint: Endpoint {
                    location: r.location,
                    insecure: r.insecure,
                    pull_from_mirror: r.pull_from_mirror,
                },
                mirrors: r.mirror.into_iter().map(Endpoint::from).collect(),
                blocked: r.blocked,
                mirror_by_digest_only: r.mirror_by_digest_only,
            })
            .collect(),
        unqualified_search_registries: raw.unqualified_search_registries,
        credential_helpers: raw.credential_helpers,
        short_name_mode: raw.short_name_mode,
        additional_layer_store_auth_helper: raw.als_auth_helper,
        aliases: raw.aliases,
    })
}

fn line_of(data: &[u8], offset: usize) -> usize {
    1 + data[..offset.min(data.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// Finds the first malformed `[[name]` array-table header the way upstream's lexer reports it:
/// the line after the offending character is consumed, and the last key is the last complete
/// table header.
fn header_error(text: &str) -> Option<String> {
    let mut last_key = String::new();
    for (i, line) in text.split('\n').enumerate() {
        let t = line.trim_start_matches([' ', '\t']);
        let Some(rest) = t.strip_prefix("[[") else {
            if let Some(rest) = t.strip_prefix('[') {
                if let Some(end) = rest.find(']') {
                    last_key = header_key(&rest[..end]);
                }
            }
            continue;
        };
        let end = rest.find(']')?;
        let after = rest[end + 1..].chars().next();
        match after {
            Some(']') => last_key = header_key(&rest[..end]),
            other => {
                let (c, line_no) = match other {
                    Some(c) => (c, i + 1),
                    None => ('\n', i + 2),
                };
                let key = if last_key.is_empty() {
                    String::new()
                } else {
                    format!(" (last key {})", go_quote(&last_key))
                };
                return Some(format!(
                    "toml: line {line_no}{key}: expected end of table array name delimiter ']', but got {} instead",
                    go_quote_rune(c)
                ));
            }
        }
    }
    None
}

fn header_key(inner: &str) -> String {
    inner
        .split('.')
        .map(|p| p.trim().trim_matches('"'))
        .collect::<Vec<_>>()
        .join(".")
}

/// Decodes a `data:` URL (percent-encoded or base64).
pub fn decode_data_url(url: &str) -> Result<Vec<u8>, String> {
    let rest = url
        .strip_prefix("data:")
        .ok_or_else(|| "missing data prefix".to_string())?;
    let comma = rest.find(',').ok_or_else(|| "missing comma".to_string())?;
    let (meta, data) = (&rest[..comma], &rest[comma + 1..]);
    if meta.ends_with(";base64") {
        return base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| e.to_string());
    }
    let b = data.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = |x: Option<&u8>| x.and_then(|c| (*c as char).to_digit(16));
                match (hex(b.get(i + 1)), hex(b.get(i + 2))) {
                    (Some(h), Some(l)) => out.push((h * 16 + l) as u8),
                    _ => return Err("rfc2396: invalid unescape sequence".into()),
                }
                i += 3;
            }
            c if c >= 0x80 => return Err("rfc2396: non-ASCII char detected".into()),
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// The bytes of the first file at `path` that has a source (`None` when there is none).
fn file_data(config: &Config, path: &str) -> Result<Option<Vec<u8>>, String> {
    for f in &config.storage.files {
        if f.path == path {
            if let Some(src) = &f.contents.source {
                return decode_data_url(src).map(Some);
            }
        }
    }
    Ok(None)
}

/// Whether the registries.conf change between two configs is safe without a drain.
pub fn is_safe_registries_change(old: &Config, new: &Config) -> Result<bool, RegistriesError> {
    let old_data = file_data(old, REGISTRIES_CONF).map_err(RegistriesError::OldDataUrl)?;
    let new_data = file_data(new, REGISTRIES_CONF).map_err(RegistriesError::NewDataUrl)?;
    let old_conf = parse_registries_conf(old_data.as_deref().unwrap_or_default())
        .map_err(RegistriesError::Toml)?;
    let new_conf = parse_registries_conf(new_data.as_deref().unwrap_or_default())
        .map_err(RegistriesError::Toml)?;
    Ok(is_safe_change(&old_conf, &new_conf))
}

/// The decision on parsed files.
pub fn is_safe_change(old: &RegistriesConf, new: &RegistriesConf) -> bool {
    let search = |c: &RegistriesConf| c.unqualified_search_registries.clone().unwrap_or_default();
    let (ou, nu) = (search(old), search(new));
    if ou.len() > nu.len() || ou.iter().zip(&nu).any(|(a, b)| a != b) {
        return false;
    }
    let by_scope = |c: &RegistriesConf| -> HashMap<String, Registry> {
        c.registries
            .iter()
            .map(|r| (r.scope().to_string(), r.clone()))
            .collect()
    };
    let (om, nm) = (by_scope(old), by_scope(new));
    if om.keys().any(|k| !nm.contains_key(k)) {
        return false;
    }
    nm.iter().all(|(scope, n)| match om.get(scope) {
        Some(o) => o == n || is_safe_registry_edit(o, n),
        None => all_digest_only(n),
    })
}

fn find_mirror<'a>(loc: &str, mirrors: &'a [Endpoint]) -> Option<&'a Endpoint> {
    mirrors.iter().find(|m| m.location == loc)
}

fn is_safe_registry_edit(o: &Registry, n: &Registry) -> bool {
    if o.prefix != n.prefix
        || o.endpoint.location != n.endpoint.location
        || o.blocked != n.blocked
        || o.endpoint.insecure != n.endpoint.insecure
    {
        return false;
    }
    if o.mirrors
        .iter()
        .any(|m| find_mirror(&m.location, &n.mirrors).is_none())
    {
        return false;
    }
    n.mirrors
        .iter()
        .all(|m| match find_mirror(&m.location, &o.mirrors) {
            Some(om) => {
                m.pull_from_mirror == om.pull_from_mirror || m.pull_from_mirror == DIGEST_ONLY
            }
            None => m.pull_from_mirror == DIGEST_ONLY || n.mirror_by_digest_only,
        })
}

fn all_digest_only(r: &Registry) -> bool {
    if r.mirrors.is_empty() {
        return r.mirror_by_digest_only;
    }
    r.mirrors.iter().all(|m| m.pull_from_mirror == DIGEST_ONLY)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(s: &str) -> RegistriesConf {
        parse_registries_conf(s.as_bytes()).unwrap()
    }

    const BASE: &str = "unqualified-search-registries = [\"a.io\", \"b.io\"]\n\n[[registry]]\n  location = \"q.io/x\"\n\n  [[registry.mirror]]\n    location = \"m1/x\"\n    pull-from-mirror = \"digest-only\"\n";

    #[test]
    fn identical_and_digest_mirror_addition_are_safe() {
        assert!(is_safe_change(&conf(BASE), &conf(BASE)));
        let added = format!("{BASE}\n  [[registry.mirror]]\n    location = \"m2/x\"\n    pull-from-mirror = \"digest-only\"\n");
        assert!(is_safe_change(&conf(BASE), &conf(&added)));
        let tag = format!("{BASE}\n  [[registry.mirror]]\n    location = \"m2/x\"\n");
        assert!(!is_safe_change(&conf(BASE), &conf(&tag)));
        // Removing a mirror is not safe.
        assert!(!is_safe_change(&conf(&added), &conf(BASE)));
    }

    /// Found by the `registries_conf` fuzz target: the strict reader type-checked
    /// `short-name-mode` and `aliases` but dropped them, so it read another file than the
    /// registries controller's decoder.
    #[test]
    fn the_strict_reader_keeps_every_field() {
        let text = format!(
            "short-name-mode = \"enforcing\"\ncredential-helpers = [\"containers-auth.json\"]\n\
             additional-layer-store-auth-helper = \"helper\"\n{BASE}[aliases]\n  \"fedora\" = \"registry.example/fedora\"\n"
        );
        let strict = conf(&text);
        assert_eq!(strict.short_name_mode, "enforcing");
        assert_eq!(
            strict.credential_helpers,
            Some(vec!["containers-auth.json".to_string()])
        );
        assert_eq!(strict.additional_layer_store_auth_helper, "helper");
        assert_eq!(
            strict
                .aliases
                .as_ref()
                .and_then(|a| a.get("fedora"))
                .map(String::as_str),
            Some("registry.example/fedora")
        );
        assert_eq!(Ok(strict), RegistriesConf::decode(&text));
        // Absent lists stay absent, as the decoder has them.
        assert_eq!(conf("").unqualified_search_registries, None);
    }

    #[test]
    fn search_registries_prefix_rule() {
        let more = BASE.replace("\"b.io\"]", "\"b.io\", \"c.io\"]");
        assert!(is_safe_change(&conf(BASE), &conf(&more)));
        let reorder = BASE.replace("[\"a.io\", \"b.io\"]", "[\"b.io\", \"a.io\"]");
        assert!(!is_safe_change(&conf(BASE), &conf(&reorder)));
    }

    #[test]
    fn new_registry_rules() {
        let reg = format!(
            "{BASE}\n[[registry]]\n  location = \"n.io\"\n  mirror-by-digest-only = true\n"
        );
        assert!(is_safe_change(&conf(BASE), &conf(&reg)));
        let reg = format!("{BASE}\n[[registry]]\n  location = \"n.io\"\n");
        assert!(!is_safe_change(&conf(BASE), &conf(&reg)));
        let blocked = BASE.replace(
            "location = \"q.io/x\"",
            "location = \"q.io/x\"\n  blocked = true",
        );
        assert!(!is_safe_change(&conf(BASE), &conf(&blocked)));
    }

    #[test]
    fn unterminated_array_header_error() {
        let bad = format!("{BASE}\n[[registry]\n  location = \"x\"\n");
        let e = parse_registries_conf(bad.as_bytes()).unwrap_err();
        assert_eq!(
            e,
            "toml: line 11 (last key \"registry.mirror\"): expected end of table array name delimiter ']', but got '\\n' instead"
        );
    }

    #[test]
    fn data_urls() {
        assert_eq!(decode_data_url("data:,a%20b").unwrap(), b"a b");
        assert_eq!(decode_data_url("data:;base64,YWI=").unwrap(), b"ab");
        assert!(decode_data_url("data:,%zz").is_err());
    }
}
