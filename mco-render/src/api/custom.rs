//! The resources users write to tune nodes: KubeletConfig and ContainerRuntimeConfig. The
//! controllers in [`crate::controllers::generate`] turn each into a generated MachineConfig
//! per pool it selects.

use super::condition::Condition;
use super::meta::ObjectMeta;
use super::schema::{int_or_string, preserve_object};
use super::selector::LabelSelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A KubeletConfig object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct KubeletConfig {
    /// `machineconfiguration.openshift.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `KubeletConfig`.
    #[serde(default)]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The settings.
    #[serde(default)]
    pub spec: KubeletConfigSpec,
    /// What the controller reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<CustomResourceStatus>,
}

/// A KubeletConfig: kubelet settings merged into the kubelet configuration of the pools it
/// selects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeletConfigSpec {
    /// Automatic sizing of the node's reserved resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_sizing_reserved: Option<bool>,
    /// The kubelet's log verbosity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<i32>,
    /// Which pools the settings apply to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_config_pool_selector: Option<LabelSelector>,
    /// Fields of a `KubeletConfiguration` (kubelet.config.k8s.io/v1beta1), kept as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserve_object")]
    pub kubelet_config: Option<serde_json::Value>,
    /// The TLS profile of the kubelet's server; the APIServer's when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_security_profile: Option<TlsSecurityProfile>,
}

/// A TLS security profile, as in `config.openshift.io/v1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, JsonSchema)]
pub struct TlsSecurityProfile {
    /// Old, Intermediate, Modern or Custom.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// The Old profile (no settings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserve_object")]
    pub old: Option<serde_json::Value>,
    /// The Intermediate profile (no settings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserve_object")]
    pub intermediate: Option<serde_json::Value>,
    /// The Modern profile (no settings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserve_object")]
    pub modern: Option<serde_json::Value>,
    /// A custom profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<CustomTlsProfile>,
}

/// The settings of a custom TLS profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomTlsProfile {
    /// Cipher names (OpenSSL or IANA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ciphers: Option<Vec<String>>,
    /// The minimum TLS version (`VersionTLS12`, ...).
    #[serde(
        rename = "minTLSVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub min_tls_version: Option<String>,
}

/// A ContainerRuntimeConfig object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRuntimeConfig {
    /// `machineconfiguration.openshift.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `ContainerRuntimeConfig`.
    #[serde(default)]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The settings.
    #[serde(default)]
    pub spec: ContainerRuntimeConfigSpec,
    /// What the controller reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<CustomResourceStatus>,
}

/// A ContainerRuntimeConfig: CRI-O and storage settings for the pools it selects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRuntimeConfigSpec {
    /// Which pools the settings apply to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_config_pool_selector: Option<LabelSelector>,
    /// The settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_runtime_config: Option<ContainerRuntimeConfiguration>,
}

/// CRI-O and container storage settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRuntimeConfiguration {
    /// The most processes a container may run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids_limit: Option<i64>,
    /// CRI-O's log level (fatal, panic, error, warn, info, debug).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<String>,
    /// The largest a container log may grow (a quantity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string")]
    pub log_size_max: Option<serde_json::Value>,
    /// The size of a container's overlay root (a quantity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string")]
    pub overlay_size: Option<serde_json::Value>,
    /// The default OCI runtime: crun or runc.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_runtime: Option<String>,
    /// Extra read-only layer stores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_layer_stores: Option<Vec<StorePath>>,
    /// Extra read-only image stores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_image_stores: Option<Vec<StorePath>>,
    /// Extra read-only artifact stores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_artifact_stores: Option<Vec<StorePath>>,
}

/// One additional store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, JsonSchema)]
pub struct StorePath {
    /// Its absolute path.
    pub path: String,
}

/// The status of a KubeletConfig or ContainerRuntimeConfig.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomResourceStatus {
    /// The generation the controller last synced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// What the syncs reported, oldest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

/// A KubeletConfig or a ContainerRuntimeConfig: a resource the generating controllers turn
/// into MachineConfigs.
#[derive(Debug, Clone, PartialEq)]
pub enum CustomResource {
    /// A KubeletConfig.
    Kubelet(KubeletConfig),
    /// A ContainerRuntimeConfig.
    ContainerRuntime(ContainerRuntimeConfig),
}

impl Default for CustomResource {
    fn default() -> Self {
        CustomResource::Kubelet(KubeletConfig::default())
    }
}

impl CustomResource {
    /// Decodes a KubeletConfig or ContainerRuntimeConfig by its `kind`; `None` for other
    /// kinds.
    pub fn from_json(v: serde_json::Value) -> Option<Result<Self, serde_json::Error>> {
        match v.get("kind").and_then(serde_json::Value::as_str) {
            Some("KubeletConfig") => Some(serde_json::from_value(v).map(CustomResource::Kubelet)),
            Some("ContainerRuntimeConfig") => {
                Some(serde_json::from_value(v).map(CustomResource::ContainerRuntime))
            }
            _ => None,
        }
    }

    /// The resource as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        let v = match self {
            CustomResource::Kubelet(k) => serde_json::to_value(k),
            CustomResource::ContainerRuntime(c) => serde_json::to_value(c),
        };
        v.unwrap_or(serde_json::Value::Null)
    }

    /// `KubeletConfig` or `ContainerRuntimeConfig`.
    pub fn kind(&self) -> &'static str {
        match self {
            CustomResource::Kubelet(_) => "KubeletConfig",
            CustomResource::ContainerRuntime(_) => "ContainerRuntimeConfig",
        }
    }

    /// The metadata.
    pub fn metadata(&self) -> &ObjectMeta {
        match self {
            CustomResource::Kubelet(k) => &k.metadata,
            CustomResource::ContainerRuntime(c) => &c.metadata,
        }
    }

    /// The metadata, to change.
    pub fn metadata_mut(&mut self) -> &mut ObjectMeta {
        match self {
            CustomResource::Kubelet(k) => &mut k.metadata,
            CustomResource::ContainerRuntime(c) => &mut c.metadata,
        }
    }

    /// The status, if any.
    pub fn status(&self) -> Option<&CustomResourceStatus> {
        match self {
            CustomResource::Kubelet(k) => k.status.as_ref(),
            CustomResource::ContainerRuntime(c) => c.status.as_ref(),
        }
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.metadata().name
    }
}
