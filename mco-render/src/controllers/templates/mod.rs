//! The template controller: a role's base MachineConfigs (`00-<role>`,
//! `01-<role>-container-runtime`, `01-<role>-kubelet`, ...) rendered from a ControllerConfig
//! and a folder of templates.
//!
//! The folder is laid out as `<role>/<mc-name>/<overlay>/{files,units,extensions}/<template>`,
//! plus `common/<overlay>/...` which goes into each role's first MachineConfig. The overlays
//! used, later ones winning, are `_base`; `on-prem` on BareMetal, oVirt, OpenStack, VSphere and
//! Nutanix; `cloud-platform-alt-dns` when an AWS, GCP or Azure cluster hosts its own DNS with
//! load balancer IPs; the platform (lower case, `none` for platforms not known); `sno` on a
//! single-replica control plane; `two-node-with-fencing` on a dual-replica one. Templates are
//! keyed by file name: an overlay's template replaces the one of the same name, an empty
//! template removes it, and a template rendering to whitespace only is skipped. Each
//! MachineConfig gathers its files and units sorted by template name, and its extensions
//! from the names under `extensions/`. The `arbiter` role only renders on a
//! `HighlyAvailableArbiter` control plane.
//!
//! Templates use the [`engine`] subset of Go's text/template, with [`render_data`] as data:
//! the ControllerConfig spec plus `PullSecret`, `TLSMinVersion`, `TLSCipherSuites` and
//! `Constants`, read as Go templates read upstream's render config ([`RENDER_OPTIONS`]).
//! Upstream's own templates folder renders as upstream renders it.
//!
//! Pure: the caller reads the folder into a [`TemplateTree`].

pub mod certificates;
pub mod transpile;

use crate::gocompat::template as engine;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::api::machine_config::{API_VERSION, GENERATED_BY_ANNOTATION, ROLE_LABEL};
use crate::api::{ControllerConfig, MachineConfig, MachineConfigSpec, ObjectMeta, OwnerReference};
use transpile::EntryKind;

/// A folder of templates held in memory: file contents by path components.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TemplateTree {
    files: BTreeMap<Vec<String>, Vec<u8>>,
}

impl TemplateTree {
    /// An empty tree.
    pub fn new() -> Self {
        TemplateTree::default()
    }

    /// Adds a file at a `/`-separated path relative to the folder.
    pub fn insert(&mut self, path: &str, contents: impl Into<Vec<u8>>) {
        let parts: Vec<String> = path
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .map(str::to_string)
            .collect();
        if !parts.is_empty() {
            self.files.insert(parts, contents.into());
        }
    }

    /// The number of files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether the tree holds no file.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The sorted names of the folders directly under `dir`.
    fn subdirs(&self, dir: &[&str]) -> Vec<String> {
        let mut out: Vec<String> = self
            .under(dir)
            .filter(|(k, _)| k.len() > dir.len() + 1)
            .map(|(k, _)| k[dir.len()].clone())
            .collect();
        out.dedup();
        out
    }

    /// Whether `dir` is a folder holding at least one file.
    fn has_dir(&self, dir: &[&str]) -> bool {
        self.under(dir).any(|(k, _)| k.len() > dir.len())
    }

    /// Every file under `dir`, in the order a recursive walk sorted by name visits them.
    fn under<'a>(
        &'a self,
        dir: &'a [&'a str],
    ) -> impl Iterator<Item = (&'a Vec<String>, &'a Vec<u8>)> + 'a {
        let start: Vec<String> = dir.iter().map(|s| s.to_string()).collect();
        self.files.range(start..).take_while(move |(k, _)| {
            k.len() >= dir.len() && k.iter().zip(dir).all(|(a, b)| a == b)
        })
    }
}

/// What the template controller renders with, besides the ControllerConfig.
#[derive(Debug, Clone)]
pub struct TemplateOptions {
    /// The controller version stamped on the MachineConfigs.
    pub controller_version: String,
    /// The cluster pull secret, compact JSON.
    pub pull_secret: String,
    /// The minimum TLS version (`VersionTLS12`).
    pub tls_min_version: String,
    /// The TLS cipher suites (IANA names).
    pub tls_cipher_suites: Vec<String>,
}

impl Default for TemplateOptions {
    /// No pull secret and the Intermediate TLS profile (a cluster without an APIServer profile).
    fn default() -> Self {
        let (tls_min_version, tls_cipher_suites) =
            crate::controllers::generate::tls_profile::security_profile_ciphers(None);
        TemplateOptions {
            controller_version: crate::CONTROLLER_VERSION.to_string(),
            pull_secret: String::new(),
            tls_min_version,
            tls_cipher_suites,
        }
    }
}

/// Why the templates do not render.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplatesError {
    /// The ControllerConfig names no usable platform.
    #[error("{0}")]
    Platform(String),
    /// A template does not parse or execute.
    #[error("failed to render template {path}: {source}")]
    Template {
        /// The template's path in the folder.
        path: String,
        /// What is wrong.
        source: engine::TemplateError,
    },
    /// A rendered template is not a valid file or unit.
    #[error("{path}: {message}")]
    Entry {
        /// The template's path in the folder.
        path: String,
        /// What is wrong.
        message: String,
    },
}

fn ptr<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

/// The platform folder name of a ControllerConfig spec.
pub fn platform_name(spec: &Value) -> Result<String, TemplatesError> {
    let t = ptr(spec, "/infra/status/platformStatus/type");
    match t {
        "" => Err(TemplatesError::Platform(
            "cannot generate MachineConfigs when no platformStatus.type is set".into(),
        )),
        "_base" => Err(TemplatesError::Platform(
            "platform _base unsupported".into(),
        )),
        "AWS" | "Azure" | "BareMetal" | "GCP" | "OpenStack" | "Libvirt" | "oVirt" | "VSphere"
        | "KubeVirt" | "PowerVS" | "None" | "External" | "Nutanix" => Ok(t.to_lowercase()),
        _ => Ok("none".into()),
    }
}

/// Whether an AWS, GCP or Azure cluster hosts its DNS with load balancer IPs given.
fn alt_dns(spec: &Value) -> bool {
    let ps = spec.pointer("/infra/status/platformStatus");
    let key = match ps.map(|p| ptr(p, "/type")) {
        Some("AWS") => "aws",
        Some("GCP") => "gcp",
        Some("Azure") => "azure",
        _ => return false,
    };
    let lb = ps
        .and_then(|p| p.get(key))
        .and_then(|p| p.get("cloudLoadBalancerConfig"));
    lb.is_some_and(|lb| {
        ptr(lb, "/dnsType") == "ClusterHosted"
            && lb.get("clusterHosted").is_some_and(|c| !c.is_null())
    })
}

/// The overlay folders used for a ControllerConfig spec, in precedence order (later wins).
pub fn overlays(spec: &Value) -> Result<Vec<String>, TemplatesError> {
    let platform = platform_name(spec)?;
    let mut out = vec!["_base".to_string()];
    if matches!(
        ptr(spec, "/infra/status/platformStatus/type"),
        "BareMetal" | "oVirt" | "OpenStack" | "VSphere" | "Nutanix"
    ) {
        out.push("on-prem".into());
    }
    if alt_dns(spec) {
        out.push("cloud-platform-alt-dns".into());
    }
    out.push(platform);
    match ptr(spec, "/infra/status/controlPlaneTopology") {
        "SingleReplica" => out.push("sno".into()),
        "DualReplica" => out.push("two-node-with-fencing".into()),
        _ => {}
    }
    Ok(out)
}

/// The `ControllerConfigSpec` fields holding bytes (base64 in JSON, raw bytes to templates).
const BYTES_FIELDS: &[&str] = &[
    "additionalTrustBundle",
    "etcdCAData",
    "etcdMetricCAData",
    "internalRegistryPullSecret",
    "kubeAPIServerServingCAData",
    "rootCAData",
];

/// The constants templates read as `.Constants.<name>`.
const CONSTANTS: &[(&str, &str)] = &[("APIServerURLFile", "/etc/kubernetes/apiserver-url.env")];

/// How templates read [`render_data`]: objects are structs, except the maps `images` and
/// `Constants`.
pub const RENDER_OPTIONS: engine::ExecOptions<'static> = engine::ExecOptions {
    objects: engine::Objects::Structs,
    root_maps: &["images", "Constants"],
};

/// The data templates see, shaped as upstream's render config looks to Go templates: the
/// spec's fields plus `PullSecret`, `TLSMinVersion`, `TLSCipherSuites` and `Constants`.
///
/// Where JSON and the Go types differ: byte fields are decoded to text (templates print them
/// with `toString`); the infrastructure status's `apiServerInternalURI` is also under its Go
/// name `APIServerInternalURL`; an empty `images` map is nothing (as a nil map is false). Run
/// templates on it with [`RENDER_OPTIONS`].
pub fn render_data(cc: &ControllerConfig, opts: &TemplateOptions) -> Value {
    let mut data = serde_json::to_value(&cc.spec).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut data {
        for key in BYTES_FIELDS {
            if let Some(slot) = m.get_mut(*key) {
                if let Some(text) = decode_bytes(slot) {
                    *slot = Value::String(text);
                }
            }
        }
        if m.get("images")
            .and_then(Value::as_object)
            .is_some_and(|o| o.is_empty())
        {
            m.insert("images".into(), Value::Null);
        }
        if let Some(Value::Object(status)) = m.get_mut("infra").and_then(|i| i.get_mut("status")) {
            if let Some(uri) = status.get("apiServerInternalURI").cloned() {
                status.insert("APIServerInternalURL".into(), uri);
            }
        }
        m.insert("PullSecret".into(), Value::String(opts.pull_secret.clone()));
        m.insert(
            "TLSMinVersion".into(),
            Value::String(opts.tls_min_version.clone()),
        );
        m.insert(
            "TLSCipherSuites".into(),
            Value::from(opts.tls_cipher_suites.clone()),
        );
        let constants: serde_json::Map<String, Value> = CONSTANTS
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect();
        m.insert("Constants".into(), Value::Object(constants));
    }
    data
}

/// The text of a base64 byte field, when it decodes to UTF-8.
fn decode_bytes(v: &Value) -> Option<String> {
    use base64::Engine as _;
    let b64 = v.as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    String::from_utf8(bytes).ok()
}

/// Renders the templates under `dir/{files,units,extensions}` into the three maps, keyed by
/// template file name.
fn gather(
    tree: &TemplateTree,
    dir: &[&str],
    data: &Value,
    maps: &mut [BTreeMap<String, (String, String)>; 3],
) -> Result<(), TemplatesError> {
    for (i, sub) in ["files", "units", "extensions"].iter().enumerate() {
        let mut d: Vec<&str> = dir.to_vec();
        d.push(sub);
        for (path, bytes) in tree.under(&d) {
            if path.len() <= d.len() {
                continue;
            }
            let name = path.last().cloned().unwrap_or_default();
            let shown = path.join("/");
            if bytes.is_empty() {
                maps[i].remove(&name);
                continue;
            }
            let text = String::from_utf8_lossy(bytes);
            let rendered = engine::render_with(&text, data, RENDER_OPTIONS).map_err(|source| {
                TemplatesError::Template {
                    path: shown.clone(),
                    source,
                }
            })?;
            if !rendered.trim().is_empty() {
                maps[i].insert(name, (shown, rendered));
            }
        }
    }
    Ok(())
}

/// One MachineConfig from `<role folder>/<name>` (and `common` when `with_common`).
fn machine_config_for_name(
    tree: &TemplateTree,
    cc: &ControllerConfig,
    role: &str,
    role_dir: &str,
    name: &str,
    with_common: bool,
    opts: &TemplateOptions,
) -> Result<MachineConfig, TemplatesError> {
    let spec_json = serde_json::to_value(&cc.spec).unwrap_or(Value::Null);
    let overlays = overlays(&spec_json)?;
    let data = render_data(cc, opts);
    let mut maps: [BTreeMap<String, (String, String)>; 3] = Default::default();
    let mut dirs: Vec<Vec<&str>> = Vec::new();
    if with_common {
        dirs.extend(overlays.iter().map(|o| vec!["common", o.as_str()]));
    }
    dirs.extend(overlays.iter().map(|o| vec![role_dir, name, o.as_str()]));
    for d in dirs.iter().filter(|d| tree.has_dir(d)) {
        gather(tree, d, &data, &mut maps)?;
    }
    let [files, units, extensions] = maps;
    let mut entries = Vec::new();
    for (kind, map) in [(EntryKind::File, &files), (EntryKind::Unit, &units)] {
        for (path, text) in map.values() {
            entries.push((kind, path.as_str(), text.as_str()));
        }
    }
    let config = transpile::to_config(&entries)
        .map_err(|(path, message)| TemplatesError::Entry { path, message })?;
    let mut labels = BTreeMap::new();
    labels.insert(ROLE_LABEL.to_string(), role.to_string());
    let mut annotations = BTreeMap::new();
    annotations.insert(
        GENERATED_BY_ANNOTATION.to_string(),
        opts.controller_version.clone(),
    );
    Ok(MachineConfig {
        api_version: API_VERSION.to_string(),
        kind: "MachineConfig".to_string(),
        metadata: ObjectMeta {
            name: name.to_string(),
            labels,
            annotations,
            owner_references: vec![OwnerReference {
                api_version: API_VERSION.to_string(),
                kind: "ControllerConfig".to_string(),
                name: cc.metadata.name.clone(),
                uid: cc.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }],
            ..ObjectMeta::default()
        },
        spec: MachineConfigSpec {
            config: Some(config.into_value()),
            extensions: extensions.into_keys().collect(),
            ..MachineConfigSpec::default()
        },
    })
}

/// The MachineConfigs of one role: one per folder under the role's folder (`worker`'s for
/// roles other than `master` and `arbiter`), the first also holding the `common` templates.
pub fn machine_configs_for_role(
    tree: &TemplateTree,
    cc: &ControllerConfig,
    role: &str,
    opts: &TemplateOptions,
) -> Result<Vec<MachineConfig>, TemplatesError> {
    let role_dir = match role {
        "master" | "worker" | "arbiter" => role,
        _ => "worker",
    };
    tree.subdirs(&[role_dir])
        .iter()
        .enumerate()
        .map(|(i, name)| machine_config_for_name(tree, cc, role, role_dir, name, i == 0, opts))
        .collect()
}

/// Every role's MachineConfigs, sorted by name: each folder at the top of the tree is a role,
/// except `common`, and `arbiter` unless the control plane is `HighlyAvailableArbiter`.
pub fn generate_template_machine_configs(
    tree: &TemplateTree,
    cc: &ControllerConfig,
    opts: &TemplateOptions,
) -> Result<Vec<MachineConfig>, TemplatesError> {
    let topology = cc
        .spec
        .extra
        .get("infra")
        .and_then(|i| i.pointer("/status/controlPlaneTopology"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut out = Vec::new();
    for role in tree.subdirs(&[]) {
        if role == "common" || (role == "arbiter" && topology != "HighlyAvailableArbiter") {
            continue;
        }
        out.extend(machine_configs_for_role(tree, cc, &role, opts)?);
    }
    out.sort_by(|a, b| a.name().cmp(b.name()));
    Ok(out)
}

/// Valid JSON text without the whitespace between tokens, keys left in their order: the
/// pull secret as the templates see it (upstream compacts the Secret's `.dockerconfigjson`).
pub fn compact_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_ascii_whitespace() {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests;
