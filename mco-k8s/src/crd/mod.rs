//! The CustomResourceDefinitions of the MCO kinds, generated from `mco_render::api`'s types
//! (the only Rust types of those objects), and the kube-rs handles on them.
//!
//! Each CRD's schema is what kube-rs's `CustomResource` derive would generate for a root
//! object `{spec, status}` of the core's spec and status types: schemars' OpenAPI 3 settings
//! with every subschema inlined, then kube's structural-schema transforms. The group, kind,
//! plural, short names, printer columns and the status subresource are declared here.

pub mod clusteroperator;
pub mod config;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition, CustomResourceDefinitionNames,
    CustomResourceDefinitionSpec, CustomResourceDefinitionVersion, CustomResourceSubresourceStatus,
    CustomResourceSubresources, CustomResourceValidation, JSONSchemaProps,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta as KubeMeta;
use kube::api::ApiResource;
use mco_render::api::rollout_policy::{self, RolloutPolicySpec, RolloutPolicyStatus};
use mco_render::api::{
    ContainerRuntimeConfigSpec, ControllerConfigSpec, ControllerConfigStatus, CustomResourceStatus,
    KubeletConfigSpec, MachineConfigNodeSpec, MachineConfigNodeStatus, MachineConfigPoolStatus,
    MachineConfigSpec, MachineOSBuildSpec, MachineOSBuildStatus, MachineOSConfigSpec,
    MachineOSConfigStatus, PinnedImageSetSpec, PinnedImageSetStatus, PoolSpec,
};
use schemars::{JsonSchema, Schema};
use serde_json::Value;

pub use clusteroperator::{clusteroperator_crd, clusteroperator_crd_yaml, ClusterOperator};
pub use config::{config_crds, config_crds_yaml};

/// The API group of the MCO kinds.
pub const GROUP: &str = "machineconfiguration.openshift.io";
/// The API version of the MCO kinds.
pub const VERSION: &str = "v1";

/// A printer column: name, type, JSON path and description.
type Column = (
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
);

/// The Age column every kind shows.
const AGE: Column = ("Age", "date", ".metadata.creationTimestamp", None);

/// A custom resource kind as the API server knows it.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    /// The API group ([`GROUP`] for the MCO kinds).
    pub group: &'static str,
    /// The API version.
    pub version: &'static str,
    /// The kind (`MachineConfig`).
    pub kind: &'static str,
    /// The plural resource name (`machineconfigs`).
    pub plural: &'static str,
    /// Short names for kubectl.
    pub short_names: &'static [&'static str],
    /// Whether the kind has a status subresource.
    pub status: bool,
    /// Printer columns.
    columns: &'static [Column],
    /// Printer columns shown only by `kubectl get -o wide` (priority 1).
    wide_columns: &'static [Column],
    /// The name of the spec type the CRD was first derived from (the root's description).
    spec_ident: &'static str,
    /// The spec's description.
    spec_description: &'static str,
}

impl Kind {
    /// The kube-rs handle on the kind, for `Api::all_with`.
    pub fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.into(),
            version: self.version.into(),
            api_version: self.api_version(),
            kind: self.kind.into(),
            plural: self.plural.into(),
        }
    }

    /// `group/version`.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }

    /// The CRD, with `schema` as its OpenAPI schema.
    fn crd(&self, schema: JSONSchemaProps) -> CustomResourceDefinition {
        let columns: Vec<CustomResourceColumnDefinition> = self
            .columns
            .iter()
            .map(|c| (c, None))
            .chain(self.wide_columns.iter().map(|c| (c, Some(1))))
            .map(
                |((name, type_, path, description), priority)| CustomResourceColumnDefinition {
                    description: description.map(str::to_string),
                    format: None,
                    json_path: (*path).into(),
                    name: (*name).into(),
                    priority,
                    type_: (*type_).into(),
                },
            )
            .collect();
        CustomResourceDefinition {
            metadata: KubeMeta {
                name: Some(format!("{}.{}", self.plural, self.group)),
                ..Default::default()
            },
            spec: CustomResourceDefinitionSpec {
                group: self.group.into(),
                names: CustomResourceDefinitionNames {
                    kind: self.kind.into(),
                    plural: self.plural.into(),
                    short_names: (!self.short_names.is_empty())
                        .then(|| self.short_names.iter().map(|s| s.to_string()).collect()),
                    singular: Some(self.kind.to_ascii_lowercase()),
                    ..Default::default()
                },
                scope: "Cluster".into(),
                versions: vec![CustomResourceDefinitionVersion {
                    additional_printer_columns: (!columns.is_empty()).then_some(columns),
                    name: self.version.into(),
                    schema: Some(CustomResourceValidation {
                        open_api_v3_schema: Some(schema),
                    }),
                    served: true,
                    storage: true,
                    subresources: self.status.then(|| CustomResourceSubresources {
                        scale: None,
                        status: Some(CustomResourceSubresourceStatus(serde_json::json!({}))),
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            },
            ..Default::default()
        }
    }
}

/// MachineConfig: one piece of a node's desired state.
pub const MACHINE_CONFIG: Kind = Kind {
    group: GROUP,
    version: VERSION,
    kind: "MachineConfig",
    plural: "machineconfigs",
    short_names: &["mc"],
    status: false,
    columns: &[
        (
            "GeneratedByController",
            "string",
            ".metadata.annotations.machineconfiguration\\.openshift\\.io/generated-by-controller-version",
            Some("Version of the controller that generated the machineconfig"),
        ),
        (
            "IgnitionVersion",
            "string",
            ".spec.config.ignition.version",
            Some("Version of the Ignition Config defined in the machineconfig"),
        ),
        AGE,
    ],
    wide_columns: &[],
    spec_ident: "MachineConfigSpec",
    spec_description: "A MachineConfig: one piece of a node's desired state.",
};

/// MachineConfigPool: a group of nodes and the configs they get.
pub const MACHINE_CONFIG_POOL: Kind = Kind {
    group: GROUP,
    version: VERSION,
    kind: "MachineConfigPool",
    plural: "machineconfigpools",
    short_names: &["mcp"],
    status: true,
    columns: &[
        ("Config", "string", ".status.configuration.name", None),
        (
            "Updated",
            "string",
            ".status.conditions[?(@.type==\"Updated\")].status",
            Some("When all the machines in the pool are updated to the correct machine config."),
        ),
        (
            "Updating",
            "string",
            ".status.conditions[?(@.type==\"Updating\")].status",
            Some("When at least one of machine is not either not updated or is in the process of updating to the desired machine config."),
        ),
        (
            "Degraded",
            "string",
            ".status.conditions[?(@.type==\"Degraded\")].status",
            Some("When progress is blocked on updating one or more nodes or the pool configuration is failing."),
        ),
        (
            "MachineCount",
            "number",
            ".status.machineCount",
            Some("Total number of machines in the machine config pool"),
        ),
        (
            "ReadyMachineCount",
            "number",
            ".status.readyMachineCount",
            Some("Total number of ready machines targeted by the pool"),
        ),
        (
            "UpdatedMachineCount",
            "number",
            ".status.updatedMachineCount",
            Some("Total number of machines targeted by the pool that have the CurrentMachineConfig as their config"),
        ),
        (
            "DegradedMachineCount",
            "number",
            ".status.degradedMachineCount",
            Some("Total number of machines marked degraded (or unreconcilable)"),
        ),
        AGE,
    ],
    wide_columns: &[],
    spec_ident: "MachineConfigPoolSpec",
    spec_description: "A MachineConfigPool: a group of nodes and the configs they get.",
};

/// ControllerConfig: cluster-wide defaults the controller renders with.
pub const CONTROLLER_CONFIG: Kind = Kind {
    group: GROUP,
    version: VERSION,
    kind: "ControllerConfig",
    plural: "controllerconfigs",
    short_names: &[],
    status: true,
    columns: &[AGE],
    wide_columns: &[],
    spec_ident: "ControllerConfigSpec",
    spec_description: "A ControllerConfig: cluster-wide defaults the controller renders with. Fields beyond the\nimages are kept as written.",
};

/// KubeletConfig: kubelet settings for the pools it selects.
pub const KUBELET_CONFIG: Kind = Kind {
    group: GROUP,
    version: VERSION,
    kind: "KubeletConfig",
    plural: "kubeletconfigs",
    short_names: &[],
    status: true,
    columns: &[AGE],
    wide_columns: &[],
    spec_ident: "KubeletConfigSpec",
    spec_description: "A KubeletConfig: kubelet settings merged into the kubelet configuration of the pools it\nselects.",
};

/// ContainerRuntimeConfig: CRI-O and storage settings for the pools it selects.
pub const CONTAINER_RUNTIME_CONFIG: Kind = Kind {
    group: GROUP,
    version: VERSION,
    kind: "ContainerRuntimeConfig",
    plural: "containerruntimeconfigs",
    short_names: &["ctrcfg"],
    status: true,
    columns: &[AGE],
    wide_columns: &[],
    spec_ident: "ContainerRuntimeConfigSpec",
    spec_description:
        "A ContainerRuntimeConfig: CRI-O and storage settings for the pools it selects.",
};

/// A column showing the status of the condition of one type.
macro_rules! condition_column {
    ($name:literal, $type_:literal) => {
        (
            $name,
            "string",
            concat!(".status.conditions[?(@.type==\"", $type_, "\")].status"),
            None,
        )
    };
}

/// MachineConfigNode: one per Node, where the node's update stands. Its columns are
/// upstream's, so `kubectl get mcn` (and `-o wide`) shows what OpenShift shows.
pub const MACHINE_CONFIG_NODE: Kind = Kind {
    group: GROUP,
    version: VERSION,
    kind: "MachineConfigNode",
    plural: "machineconfignodes",
    short_names: &["mcn"],
    status: true,
    columns: &[
        ("PoolName", "string", ".spec.pool.name", None),
        (
            "DesiredConfig",
            "string",
            ".spec.configVersion.desired",
            None,
        ),
        (
            "CurrentConfig",
            "string",
            ".status.configVersion.current",
            None,
        ),
        condition_column!("Updated", "Updated"),
        AGE,
    ],
    wide_columns: &[
        condition_column!("UpdatePrepared", "UpdatePrepared"),
        condition_column!("UpdateExecuted", "UpdateExecuted"),
        condition_column!("UpdatePostActionComplete", "UpdatePostActionComplete"),
        condition_column!("UpdateComplete", "UpdateComplete"),
        condition_column!("Resumed", "Resumed"),
        condition_column!("UpdatedFilesAndOS", "AppliedFilesAndOS"),
        condition_column!("CordonedNode", "Cordoned"),
        condition_column!("DrainedNode", "Drained"),
        condition_column!("RebootedNode", "RebootedNode"),
        condition_column!("UncordonedNode", "Uncordoned"),
    ],
    spec_ident: "MachineConfigNodeSpec",
    spec_description: "A MachineConfigNode's spec: the node, its pool and the config it is to run.",
};

/// RolloutPolicy: how the pool of the same name rolls out (canaries, health gate,
/// maintenance windows, rollback). This project's own kind, in its own group.
pub const ROLLOUT_POLICY: Kind = Kind {
    group: rollout_policy::GROUP,
    version: rollout_policy::VERSION,
    kind: rollout_policy::KIND,
    plural: "rolloutpolicies",
    short_names: &["rp"],
    status: true,
    columns: &[
        ("Target", "string", ".status.target", None),
        ("Phase", "string", ".status.phase", None),
        ("Last Known Good", "string", ".status.lastKnownGood", None),
        ("Next Window", "string", ".status.nextWindow", None),
        ("Message", "string", ".status.message", None),
        AGE,
    ],
    wide_columns: &[],
    spec_ident: "RolloutPolicySpec",
    spec_description: "How the MachineConfigPool of the same name rolls out: canaries, a health gate, maintenance\nwindows, rollback and resume.",
};

/// MachineOSConfig: a pool's request for a layered OS image (no printer columns, as upstream).
pub const MACHINE_OS_CONFIG: Kind = Kind {
    group: GROUP,
    version: VERSION,
    kind: "MachineOSConfig",
    plural: "machineosconfigs",
    short_names: &[],
    status: true,
    columns: &[],
    wide_columns: &[],
    spec_ident: "MachineOSConfigSpec",
    spec_description: "What to build for a pool's layered OS image and where to push it.",
};

/// MachineOSBuild: one build of a MachineOSConfig for one rendered MachineConfig.
pub const MACHINE_OS_BUILD: Kind = Kind {
    group: GROUP,
    version: VERSION,
    kind: "MachineOSBuild",
    plural: "machineosbuilds",
    short_names: &[],
    status: true,
    columns: &[
        condition_column!("Prepared", "Prepared"),
        condition_column!("Building", "Building"),
        condition_column!("Succeeded", "Succeeded"),
        condition_column!("Interrupted", "Interrupted"),
        condition_column!("Failed", "Failed"),
        AGE,
    ],
    wide_columns: &[],
    spec_ident: "MachineOSBuildSpec",
    spec_description:
        "The rendered MachineConfig built, its MachineOSConfig and the tagged push spec.",
};

/// PinnedImageSet: images a pool's nodes pull ahead and CRI-O pins (no printer columns, as
/// upstream).
pub const PINNED_IMAGE_SET: Kind = Kind {
    group: GROUP,
    version: VERSION,
    kind: "PinnedImageSet",
    plural: "pinnedimagesets",
    short_names: &[],
    status: true,
    columns: &[],
    wide_columns: &[],
    spec_ident: "PinnedImageSetSpec",
    spec_description:
        "The images, by digest, that the nodes of the pools naming this set pull and CRI-O pins.",
};

/// The root object of a kind with a status, as kube-rs's derive lays it out for the schema.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct Root<S, U> {
    spec: S,
    status: Option<U>,
}

/// The root object of a kind without a status.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct RootNoStatus<S> {
    spec: S,
}

/// Removes `default` keywords, recursively: schemars writes the serde defaults of the core's
/// non-optional fields, which the CRDs leave to the API's readers. A default the API server
/// must apply (as upstream's CRD has it) is written `x-crd-default` on the type and kept.
fn strip_defaults(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("default");
            if let Some(d) = m.remove("x-crd-default") {
                m.insert("default".into(), d);
            }
            m.values_mut().for_each(strip_defaults);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_defaults),
        _ => {}
    }
}

/// The OpenAPI schema of `T` as kube-rs's derive generates it: OpenAPI 3 settings, subschemas
/// inlined, then nullable, structural, optional-enum and optional-int-or-string transforms.
pub(crate) fn structural_schema<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::openapi3()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .with_transform(schemars::transform::AddNullable::default())
        .with_transform(kube::core::schema::StructuralSchemaRewriter)
        .with_transform(kube::core::schema::OptionalEnum)
        .with_transform(kube::core::schema::OptionalIntOrString)
        .into_generator();
    let schema: Schema = generator.into_root_schema_for::<T>();
    let mut v = schema.to_value();
    strip_defaults(&mut v);
    v
}

/// The CRD of `kind` from the root schema `root` (of [`Root`] or [`RootNoStatus`]).
fn build(kind: &Kind, mut root: Value) -> Result<CustomResourceDefinition, serde_json::Error> {
    if let Some(m) = root.as_object_mut() {
        m.insert(
            "description".into(),
            format!(
                "Auto-generated derived type for {} via `CustomResource`",
                kind.spec_ident
            )
            .into(),
        );
        m.insert("title".into(), kind.kind.into());
    }
    if let Some(spec) = root
        .pointer_mut("/properties/spec")
        .and_then(Value::as_object_mut)
    {
        spec.insert("description".into(), kind.spec_description.into());
    }
    Ok(kind.crd(serde_json::from_value(root)?))
}

/// Every CRD this project installs, in install order.
pub fn crds() -> Result<Vec<CustomResourceDefinition>, serde_json::Error> {
    let mut cc = build(
        &CONTROLLER_CONFIG,
        structural_schema::<Root<ControllerConfigSpec, ControllerConfigStatus>>(),
    )?;
    // The ControllerConfig carries many cluster fields the controller passes through
    // untouched: keep whatever is written in spec and status.
    for v in &mut cc.spec.versions {
        let props = v
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
            .and_then(|s| s.properties.as_mut());
        if let Some(props) = props {
            for key in ["spec", "status"] {
                if let Some(p) = props.get_mut(key) {
                    p.x_kubernetes_preserve_unknown_fields = Some(true);
                }
            }
        }
    }
    Ok(vec![
        build(
            &MACHINE_CONFIG,
            structural_schema::<RootNoStatus<MachineConfigSpec>>(),
        )?,
        build(
            &MACHINE_CONFIG_POOL,
            structural_schema::<Root<PoolSpec, MachineConfigPoolStatus>>(),
        )?,
        cc,
        build(
            &KUBELET_CONFIG,
            structural_schema::<Root<KubeletConfigSpec, CustomResourceStatus>>(),
        )?,
        build(
            &CONTAINER_RUNTIME_CONFIG,
            structural_schema::<Root<ContainerRuntimeConfigSpec, CustomResourceStatus>>(),
        )?,
        build(
            &MACHINE_CONFIG_NODE,
            structural_schema::<Root<MachineConfigNodeSpec, MachineConfigNodeStatus>>(),
        )?,
        build(
            &ROLLOUT_POLICY,
            structural_schema::<Root<RolloutPolicySpec, RolloutPolicyStatus>>(),
        )?,
        build(
            &MACHINE_OS_CONFIG,
            structural_schema::<Root<MachineOSConfigSpec, MachineOSConfigStatus>>(),
        )?,
        build(
            &MACHINE_OS_BUILD,
            structural_schema::<Root<MachineOSBuildSpec, MachineOSBuildStatus>>(),
        )?,
        build(
            &PINNED_IMAGE_SET,
            structural_schema::<Root<PinnedImageSetSpec, PinnedImageSetStatus>>(),
        )?,
    ])
}

/// Why the CRDs could not be written out.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    /// A generated schema is not a valid `JSONSchemaProps`.
    #[error("schema: {0}")]
    Schema(#[from] serde_json::Error),
    /// The YAML encoder failed.
    #[error("yaml: {0}")]
    Yaml(#[from] serde_yaml_ng::Error),
}

/// The CRDs as one multi-document YAML stream.
pub fn crds_yaml() -> Result<String, CrdError> {
    let mut out = String::new();
    for crd in crds()? {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(&crd)?);
    }
    Ok(out)
}
