//! The custom resource types.

// Several printer columns share a `type_`; clippy reads the derive's arguments as repeated
// attributes.
#![allow(clippy::duplicated_attributes)]

use super::schema::{int_or_string, preserve_object};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A MachineConfig: one piece of a node's desired state.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "machineconfiguration.openshift.io",
    version = "v1",
    kind = "MachineConfig",
    plural = "machineconfigs",
    shortname = "mc",
    printcolumn(
        name = "GeneratedByController",
        type_ = "string",
        json_path = ".metadata.annotations.machineconfiguration\\.openshift\\.io/generated-by-controller-version",
        description = "Version of the controller that generated the machineconfig"
    ),
    printcolumn(
        name = "IgnitionVersion",
        type_ = "string",
        json_path = ".spec.config.ignition.version",
        description = "Version of the Ignition Config defined in the machineconfig"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
pub struct MachineConfigSpec {
    /// The OS image; empty means the ControllerConfig's.
    #[serde(
        rename = "osImageURL",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub os_image_url: Option<String>,
    /// The OS extensions image.
    #[serde(
        rename = "baseOSExtensionsContainerImage",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub base_os_extensions_container_image: Option<String>,
    /// The Ignition config, any supported version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserve_object")]
    pub config: Option<serde_json::Value>,
    /// Kernel arguments.
    #[serde(
        rename = "kernelArguments",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub kernel_arguments: Option<Vec<String>>,
    /// RHCOS extensions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<String>>,
    /// FIPS mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fips: Option<bool>,
    /// Kernel type: "", default, realtime or 64k-pages.
    #[serde(
        rename = "kernelType",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub kernel_type: Option<String>,
}

/// A Kubernetes label selector.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Exact label values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
    /// Set-based requirements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_expressions: Option<Vec<LabelSelectorRequirement>>,
}

/// One set-based requirement.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
pub struct LabelSelectorRequirement {
    /// The label key.
    pub key: String,
    /// In, NotIn, Exists or DoesNotExist.
    pub operator: String,
    /// Values for In and NotIn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<String>>,
}

/// A reference to an object.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// API version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A rendered config and the MachineConfigs it came from.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
pub struct PoolConfiguration {
    /// The rendered MachineConfig name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The source MachineConfigs in merge order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Vec<ObjectReference>>,
}

/// A MachineConfigPool: a group of nodes and the configs they get.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "machineconfiguration.openshift.io",
    version = "v1",
    kind = "MachineConfigPool",
    plural = "machineconfigpools",
    shortname = "mcp",
    status = "MachineConfigPoolStatus",
    printcolumn(
        name = "Config",
        type_ = "string",
        json_path = ".status.configuration.name"
    ),
    printcolumn(
        name = "Updated",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Updated\")].status",
        description = "When all the machines in the pool are updated to the correct machine config."
    ),
    printcolumn(
        name = "Updating",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Updating\")].status",
        description = "When at least one of machine is not either not updated or is in the process of updating to the desired machine config."
    ),
    printcolumn(
        name = "Degraded",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Degraded\")].status",
        description = "When progress is blocked on updating one or more nodes or the pool configuration is failing."
    ),
    printcolumn(
        name = "MachineCount",
        type_ = "number",
        json_path = ".status.machineCount",
        description = "Total number of machines in the machine config pool"
    ),
    printcolumn(
        name = "ReadyMachineCount",
        type_ = "number",
        json_path = ".status.readyMachineCount",
        description = "Total number of ready machines targeted by the pool"
    ),
    printcolumn(
        name = "UpdatedMachineCount",
        type_ = "number",
        json_path = ".status.updatedMachineCount",
        description = "Total number of machines targeted by the pool that have the CurrentMachineConfig as their config"
    ),
    printcolumn(
        name = "DegradedMachineCount",
        type_ = "number",
        json_path = ".status.degradedMachineCount",
        description = "Total number of machines marked degraded (or unreconcilable)"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigPoolSpec {
    /// Which MachineConfigs the pool renders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_config_selector: Option<LabelSelector>,
    /// Which nodes belong to the pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<LabelSelector>,
    /// Whether rollouts are paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// How many nodes may update at once: an integer or a percentage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string")]
    pub max_unavailable: Option<serde_json::Value>,
    /// The rendered config the pool targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<PoolConfiguration>,
}

/// A status condition, as pools, KubeletConfigs, ContainerRuntimeConfigs and the
/// ClusterOperator report them.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// Condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// True, False or Unknown.
    pub status: String,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A pool's observed state.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigPoolStatus {
    /// The generation observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The config every node has reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<PoolConfiguration>,
    /// Nodes in the pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_count: Option<i32>,
    /// Nodes done on the pool's config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_machine_count: Option<i32>,
    /// Updated nodes that are ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_machine_count: Option<i32>,
    /// Nodes counted against maxUnavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_machine_count: Option<i32>,
    /// Nodes reporting degraded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded_machine_count: Option<i32>,
    /// Conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

/// A ControllerConfig: cluster-wide defaults the controller renders with. Fields beyond the
/// images are kept as written.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "machineconfiguration.openshift.io",
    version = "v1",
    kind = "ControllerConfig",
    plural = "controllerconfigs",
    status = "ControllerConfigStatus",
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
pub struct ControllerConfigSpec {
    /// The default OS image.
    #[serde(
        rename = "baseOSContainerImage",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub base_os_container_image: Option<String>,
    /// The default OS extensions image.
    #[serde(
        rename = "baseOSExtensionsContainerImage",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub base_os_extensions_container_image: Option<String>,
}

/// A ControllerConfig's status, kept as written.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControllerConfigStatus {
    /// The generation observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
