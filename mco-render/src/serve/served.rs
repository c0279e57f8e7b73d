//! What the server hands a machine for a pool: the rendered config plus the files upstream's
//! server adds, converted to the spec version the machine asked for, and encoded as upstream
//! encodes it.
//!
//! The steps follow upstream's cluster server: parse the rendered config into spec 3.5; for
//! versions below 3.3 move Ignition kernel arguments into the MachineConfig; set the kubelet and
//! cloud provider CA bundles from the ControllerConfig; append the node annotations, the
//! bootstrap kubeconfig, the full MachineConfig and the encapsulated MachineConfig (always last);
//! then convert.

use crate::api::{ControllerConfigSpec, MachineConfig};
use crate::gocompat::json::{sorted, to_go_compact, to_go_indented};
use crate::release::{EncapsulatedEmpty, Profile};
use base64::Engine as _;
use mco_ignition::{dataurl, SpecVersion};
use serde_json::{json, Map, Value};

/// Where the node annotations file goes.
pub const NODE_ANNOTATIONS_PATH: &str = "/etc/machine-config-daemon/node-annotations.json";
/// Where the bootstrap kubeconfig goes.
pub const KUBECONFIG_PATH: &str = "/etc/kubernetes/kubeconfig";
/// Where the full served MachineConfig goes.
pub const MACHINE_CONFIG_CONTENT_PATH: &str = "/etc/mcs-machine-config-content.json";
/// Where the MachineConfig with an empty Ignition config goes.
pub const ENCAPSULATED_PATH: &str = "/etc/ignition-machine-config-encapsulated.json";
/// Where the kube-apiserver serving CA bundle goes.
pub const KUBELET_CA_PATH: &str = "/etc/kubernetes/kubelet-ca.crt";
/// Where the cloud provider CA bundle goes.
pub const CLOUD_PROVIDER_CA_PATH: &str =
    "/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem";
/// The MachineConfig annotation naming a pre-built OS image to report on the node.
pub const PRE_BUILT_IMAGE_ANNOTATION: &str = "machineconfiguration.openshift.io/pre-built-image";

/// Mode of every appended file (0644).
const FILE_MODE: u64 = 420;

/// Why a config cannot be served (HTTP 500 upstream).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServeError {
    /// The rendered config does not parse.
    #[error("parsing Ignition config failed with error: {0}")]
    Parse(String),
    /// Kernel arguments that cannot be expressed in the requested version.
    #[error("failed to migrate kernel args can't serve version {0} with ignition KernelArguments.ShouldNotExist populated")]
    KernelArguments(SpecVersion),
    /// A ControllerConfig CA field is not valid base64.
    #[error("controllerconfig field {0} is not valid base64")]
    ControllerConfig(&'static str),
    /// The conversion to the requested version failed.
    #[error("couldn't convert config: {0}")]
    Convert(String),
}

/// Which spec version the encapsulated MachineConfig's empty config carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EncapsulatedVersion {
    /// The requested version (upstream's cluster server).
    #[default]
    Requested,
    /// Always 3.5 (upstream's bootstrap server).
    Latest,
}

/// Everything the served config depends on besides the version.
#[derive(Debug, Clone, Copy)]
pub struct ServeInput<'a> {
    /// The rendered MachineConfig served to the pool.
    pub machine_config: &'a MachineConfig,
    /// The ControllerConfig spec, for the CA bundles.
    pub controller_config: Option<&'a ControllerConfigSpec>,
    /// The bootstrap kubeconfig to hand out; none leaves the file out.
    pub kubeconfig: Option<&'a str>,
    /// The encapsulated config's version rule.
    pub encapsulated: EncapsulatedVersion,
    /// The release served as: its conversions and its encapsulated config's version.
    pub profile: Profile,
}

/// The served Ignition config for `version`, as a JSON value in upstream's field order.
pub fn served_config(input: &ServeInput<'_>, version: SpecVersion) -> Result<Value, ServeError> {
    let mut mc = input.machine_config.clone();
    let raw = mc.ignition().cloned().unwrap_or_else(|| json!({}));
    let parsed =
        crate::render::source_config::parse_any(&raw).map_err(|e| ServeError::Parse(e.message))?;
    let mut config = parsed.into_config().into_value();
    let root = config
        .as_object_mut()
        .ok_or_else(|| ServeError::Parse("config is not an object".into()))?;

    migrate_kernel_arguments(root, &mut mc, version)?;

    if let Some(cc) = input.controller_config {
        for (field, path) in [
            ("kubeAPIServerServingCAData", KUBELET_CA_PATH),
            ("cloudProviderCAData", CLOUD_PROVIDER_CA_PATH),
        ] {
            let data = ca_data(cc, field)?;
            set_or_append_file(root, path, &data);
        }
    }

    let served_name = mc.name().to_string();
    append_file(
        root,
        NODE_ANNOTATIONS_PATH,
        &node_annotations(&served_name, &mc),
    );
    if let Some(kc) = input.kubeconfig {
        append_file(root, KUBECONFIG_PATH, kc);
    }
    let content = to_go_indented(
        &machine_config_value(&mc, mc.ignition().map(sorted)),
        "    ",
    );
    append_file(root, MACHINE_CONFIG_CONTENT_PATH, &content);
    let profile = &input.profile;
    let empty_version = match (input.encapsulated, profile.encapsulated_empty) {
        (EncapsulatedVersion::Latest, _) => SpecVersion::V3_5,
        (EncapsulatedVersion::Requested, EncapsulatedEmpty::Requested) => version,
        (EncapsulatedVersion::Requested, EncapsulatedEmpty::ReleaseNewest) if version.is_v3() => {
            profile.rendered_ignition
        }
        (EncapsulatedVersion::Requested, EncapsulatedEmpty::ReleaseNewest) => SpecVersion::V2_2,
    };
    let empty = super::convert_for(
        &json!({"ignition": {"version": "3.5.0"}}),
        empty_version,
        profile,
    )
    .map_err(ServeError::Convert)?;
    let empty = if empty_version.is_v3() {
        crate::gocompat::json::schema_ordered(&empty, &mco_ignition::schema::CONFIG)
    } else {
        empty
    };
    let encapsulated = to_go_compact(&machine_config_value(&mc, Some(empty)));
    append_file(root, ENCAPSULATED_PATH, &encapsulated);

    super::convert_for(&config, version, profile).map_err(ServeError::Convert)
}

/// The served config for `version` as the bytes of the HTTP body.
pub fn served_bytes(input: &ServeInput<'_>, version: SpecVersion) -> Result<Vec<u8>, ServeError> {
    let value = served_config(input, version)?;
    let value = if version.is_v3() {
        crate::gocompat::json::schema_ordered(&value, &mco_ignition::schema::CONFIG)
    } else {
        value
    };
    Ok(to_go_compact(&value).into_bytes())
}

/// For versions below 3.3, moves `kernelArguments.shouldExist` into the MachineConfig's kernel
/// arguments and drops the Ignition section; `shouldNotExist` cannot be moved.
fn migrate_kernel_arguments(
    root: &mut Map<String, Value>,
    mc: &mut MachineConfig,
    version: SpecVersion,
) -> Result<(), ServeError> {
    if version.major() > 3 || (version.major() == 3 && version.minor() >= 3) {
        return Ok(());
    }
    let Some(kargs) = root.get("kernelArguments") else {
        return Ok(());
    };
    let list = |key: &str| -> Vec<String> {
        kargs
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    if !list("shouldNotExist").is_empty() {
        return Err(ServeError::KernelArguments(version));
    }
    mc.spec.kernel_arguments.extend(list("shouldExist"));
    root.remove("kernelArguments");
    Ok(())
}

/// A ControllerConfig CA field, decoded (Go `[]byte` fields are base64 in JSON).
fn ca_data(cc: &ControllerConfigSpec, field: &'static str) -> Result<Vec<u8>, ServeError> {
    match cc.extra.get(field) {
        Some(Value::String(s)) => base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(|_| ServeError::ControllerConfig(field)),
        _ => Ok(Vec::new()),
    }
}

/// The JSON of node annotations the daemon applies on first boot (a Go map: keys sorted).
pub fn node_annotations(served_name: &str, mc: &MachineConfig) -> String {
    let mut entries: Vec<(&str, &str)> = vec![
        (
            "machineconfiguration.openshift.io/currentConfig",
            served_name,
        ),
        (
            "machineconfiguration.openshift.io/desiredConfig",
            served_name,
        ),
        (
            "machineconfiguration.openshift.io/firstPivotConfig",
            served_name,
        ),
        ("machineconfiguration.openshift.io/state", "Done"),
    ];
    if let Some(image) = mc
        .metadata
        .annotations
        .get(PRE_BUILT_IMAGE_ANNOTATION)
        .filter(|i| !i.is_empty())
    {
        entries.push(("machineconfiguration.openshift.io/currentImage", image));
        entries.push(("machineconfiguration.openshift.io/desiredImage", image));
    }
    entries.sort_unstable();
    let mut map = Map::new();
    for (k, v) in entries {
        map.insert(k.to_string(), Value::String(v.to_string()));
    }
    to_go_compact(&Value::Object(map))
}

/// The file entry upstream appends: overwrite, mode 420, percent-encoded data URL.
fn file_entry(path: &str, contents: &str) -> Value {
    json!({
        "overwrite": true,
        "path": path,
        "contents": {"source": dataurl::encode_percent(contents.as_bytes())},
        "mode": FILE_MODE,
    })
}

/// The config's `storage.files` list, created when missing (None only if that failed).
fn files_mut(root: &mut Map<String, Value>) -> Option<&mut Vec<Value>> {
    if !matches!(root.get("storage"), Some(Value::Object(_))) {
        root.insert("storage".into(), Value::Object(Map::new()));
    }
    let Some(Value::Object(storage)) = root.get_mut("storage") else {
        return None;
    };
    if !matches!(storage.get("files"), Some(Value::Array(_))) {
        storage.insert("files".into(), Value::Array(Vec::new()));
    }
    match storage.get_mut("files") {
        Some(Value::Array(files)) => Some(files),
        _ => None,
    }
}

fn append_file(root: &mut Map<String, Value>, path: &str, contents: &str) {
    if let Some(files) = files_mut(root) {
        files.push(file_entry(path, contents));
    }
}

/// Replaces the source of the file at `path` when `data` is not empty, or appends the file when
/// it is absent and `data` is not empty.
fn set_or_append_file(root: &mut Map<String, Value>, path: &str, data: &[u8]) {
    let Some(files) = files_mut(root) else {
        return;
    };
    if let Some(file) = files
        .iter_mut()
        .find(|f| f.get("path").and_then(Value::as_str) == Some(path))
    {
        if !data.is_empty() {
            let source = Value::String(dataurl::encode_percent(data));
            if let Some(obj) = file.as_object_mut() {
                match obj.get_mut("contents").and_then(Value::as_object_mut) {
                    Some(contents) => {
                        contents.insert("source".into(), source);
                    }
                    None => {
                        obj.insert("contents".into(), json!({ "source": source }));
                    }
                }
            }
        }
        return;
    }
    if !data.is_empty() {
        files.push(file_entry(path, &String::from_utf8_lossy(data)));
    }
}

/// Upstream's ObjectMeta fields in declaration order.
const META_ORDER: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// A string field's value (`null` when absent).
fn opt_string(s: &Option<String>) -> Value {
    s.clone().map_or(Value::Null, Value::String)
}

/// Whether a value counts as empty for an `omitempty` field.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// A MachineConfig as upstream's server serialises it: Go field order, empty optional fields
/// left out (the creation timestamp always is), `config` as given.
pub fn machine_config_value(mc: &MachineConfig, config: Option<Value>) -> Value {
    let mut out = Map::new();
    if !mc.kind.is_empty() {
        out.insert("kind".into(), Value::String(mc.kind.clone()));
    }
    if !mc.api_version.is_empty() {
        out.insert("apiVersion".into(), Value::String(mc.api_version.clone()));
    }
    let meta = &mc.metadata;
    let mut m = Map::new();
    for key in META_ORDER {
        let v = match key {
            "name" => Value::String(meta.name.clone()),
            "creationTimestamp" => continue,
            "labels" => string_map(&meta.labels),
            "annotations" => string_map(&meta.annotations),
            "ownerReferences" => Value::Array(
                meta.owner_references
                    .iter()
                    .map(|r| {
                        let mut o = Map::new();
                        o.insert("apiVersion".into(), Value::String(r.api_version.clone()));
                        o.insert("kind".into(), Value::String(r.kind.clone()));
                        o.insert("name".into(), Value::String(r.name.clone()));
                        o.insert("uid".into(), Value::String(r.uid.clone()));
                        if let Some(c) = r.controller {
                            o.insert("controller".into(), Value::Bool(c));
                        }
                        if let Some(b) = r.block_owner_deletion {
                            o.insert("blockOwnerDeletion".into(), Value::Bool(b));
                        }
                        Value::Object(o)
                    })
                    .collect(),
            ),
            "namespace" => opt_string(&meta.namespace),
            "uid" => opt_string(&meta.uid),
            "resourceVersion" => opt_string(&meta.resource_version),
            "generation" => meta.generation.map_or(Value::Null, Value::from),
            "deletionTimestamp" => opt_string(&meta.deletion_timestamp),
            "finalizers" => Value::from(meta.finalizers.clone()),
            other => meta.extra.get(other).map(sorted).unwrap_or(Value::Null),
        };
        if !is_empty(&v) {
            m.insert(key.into(), v);
        }
    }
    if !m.is_empty() {
        out.insert("metadata".into(), Value::Object(m));
    }
    let s = &mc.spec;
    let mut spec = Map::new();
    spec.insert("osImageURL".into(), Value::String(s.os_image_url.clone()));
    spec.insert(
        "baseOSExtensionsContainerImage".into(),
        Value::String(s.base_os_extensions_container_image.clone()),
    );
    if let Some(c) = config {
        spec.insert("config".into(), c);
    }
    spec.insert("kernelArguments".into(), string_list(&s.kernel_arguments));
    spec.insert("extensions".into(), string_list(&s.extensions));
    spec.insert("fips".into(), Value::Bool(s.fips));
    spec.insert("kernelType".into(), Value::String(s.kernel_type.clone()));
    out.insert("spec".into(), Value::Object(spec));
    Value::Object(out)
}

fn string_map(m: &std::collections::BTreeMap<String, String>) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

fn string_list(l: &[String]) -> Value {
    Value::Array(l.iter().map(|s| Value::String(s.clone())).collect())
}

#[cfg(test)]
mod tests;
