//! MachineOSConfig and MachineOSBuild: on-cluster image layering, in openshift/api's
//! machineconfiguration/v1 shapes.

use super::condition::Condition;
use super::meta::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The condition types of a MachineOSBuild.
pub const BUILD_CONDITIONS: [&str; 5] =
    ["Prepared", "Building", "Succeeded", "Failed", "Interrupted"];

/// The architecture of a Containerfile entry that applies to every architecture.
pub const NO_ARCH: &str = "NoArch";

/// The kind of a MachineOSConfig.
pub const MACHINE_OS_CONFIG_KIND: &str = "MachineOSConfig";
/// The kind of a MachineOSBuild.
pub const MACHINE_OS_BUILD_KIND: &str = "MachineOSBuild";

/// A pool's request for a layered OS image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct MachineOSConfig {
    /// `machineconfiguration.openshift.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `MachineOSConfig`.
    #[serde(default)]
    pub kind: String,
    /// Name and labels.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// What to build and where to push it.
    #[serde(default)]
    pub spec: MachineOSConfigSpec,
    /// The last build's image and conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<MachineOSConfigStatus>,
}

/// A name reference (`{name}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[schemars(extend("required" = ["name"]))]
pub struct NameRef {
    /// The referenced object's name (a DNS subdomain, as upstream's CRD checks it).
    #[serde(default)]
    #[schemars(length(max = 253), extend("x-kubernetes-validations" = [{
        "rule": "!format.dns1123Subdomain().validate(self).hasValue()",
        "message": "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character."
    }]))]
    pub name: String,
}

/// The builder that runs the build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("required" = ["imageBuilderType"]))]
pub struct ImageBuilder {
    /// `Job` (the only type upstream accepts).
    #[serde(default)]
    #[schemars(extend("enum" = ["Job"]))]
    pub image_builder_type: String,
}

/// A Containerfile fragment for one architecture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("required" = ["content"]))]
pub struct ContainerfileEntry {
    /// `NoArch`, `AMD64`, `ARM64`, `PPC64LE` or `S390X`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(with = "String", extend("enum" = ["ARM64", "AMD64", "PPC64LE", "S390X", "NoArch"], "x-crd-default" = "NoArch"))]
    pub containerfile_arch: String,
    /// The instructions appended to the build (at most 4096 bytes).
    #[serde(default)]
    #[schemars(length(max = 4096))]
    pub content: String,
}

/// The MachineOSConfig spec. Field order and presence follow Go's JSON encoding: it is
/// hashed into the MachineOSBuild name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("required" = ["imageBuilder", "machineConfigPool", "renderedImagePushSecret", "renderedImagePushSpec"]))]
pub struct MachineOSConfigSpec {
    /// The pool whose nodes get the image.
    #[serde(default)]
    pub machine_config_pool: NameRef,
    /// How the image is built.
    #[serde(default)]
    pub image_builder: ImageBuilder,
    /// The secret pulling the base image (the global pull secret when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_image_pull_secret: Option<NameRef>,
    /// The secret pushing the built image.
    #[serde(default)]
    pub rendered_image_push_secret: NameRef,
    /// Where the built image is pushed (`host[:port][/namespace]/name:tag`, or an in-cluster
    /// `<service>.<namespace>.svc:<port>/<namespace>/<name>:<tag>`).
    #[serde(default)]
    #[schemars(length(min = 1, max = 447), extend("x-kubernetes-validations" = [{
        "rule": "self.matches('^([a-zA-Z0-9-]+\\\\.)+[a-zA-Z0-9-]+(:[0-9]{2,5})?(/[a-zA-Z0-9-_]{1,61})*/[a-zA-Z0-9-_.]+:[a-zA-Z0-9._-]+$') || self.matches('^[^.]+\\\\.[^.]+\\\\.svc:\\\\d+\\\\/[^\\\\/]+\\\\/[^\\\\/]+:[^\\\\/]+$')",
        "message": "the OCI Image name should follow the host[:port][/namespace]/name format, resembling a valid URL without the scheme. Or it must be a valid .svc followed by a port, repository, image name, and tag."
    }]))]
    pub rendered_image_push_spec: String,
    /// Containerfile fragments (at most 4, one per architecture); absent (`null`) and empty
    /// differ in the hash.
    #[serde(default)]
    #[schemars(length(max = 4), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["containerfileArch"]))]
    pub container_file: Option<Vec<ContainerfileEntry>>,
}

/// The MachineOSConfig status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineOSConfigStatus {
    /// Conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The spec generation last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The image nodes currently use (by digest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_image_pull_spec: Option<String>,
    /// The current MachineOSBuild.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "machineOSBuild"
    )]
    pub machine_os_build: Option<BuildObjectReference>,
}

/// A reference to an object by group, resource, namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
pub struct BuildObjectReference {
    /// API group.
    #[serde(default)]
    pub group: String,
    /// Resource (plural).
    #[serde(default)]
    pub resource: String,
    /// Namespace, when namespaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    #[serde(default)]
    pub name: String,
}

/// One build of a MachineOSConfig for one rendered MachineConfig.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct MachineOSBuild {
    /// `machineconfiguration.openshift.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `MachineOSBuild`.
    #[serde(default)]
    pub kind: String,
    /// Name (`<MachineOSConfig>-<md5>`), labels, push secret annotation.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// What is built.
    #[serde(default)]
    pub spec: MachineOSBuildSpec,
    /// Progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<MachineOSBuildStatus>,
}

/// The MachineOSBuild spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineOSBuildSpec {
    /// The rendered MachineConfig built into the image.
    #[serde(default)]
    pub machine_config: NameRef,
    /// The MachineOSConfig this build is for.
    #[serde(default, rename = "machineOSConfig")]
    pub machine_os_config: NameRef,
    /// The push spec tagged with this build's name.
    #[serde(default)]
    pub rendered_image_push_spec: String,
}

/// The builder running a MachineOSBuild.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BuilderReference {
    /// `Job`.
    #[serde(default)]
    pub image_builder_type: String,
    /// The Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<BuildObjectReference>,
}

/// The MachineOSBuild status: conditions `Prepared`, `Building`, `Succeeded`, `Failed`,
/// `Interrupted` ([`BUILD_CONDITIONS`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineOSBuildStatus {
    /// Conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The builder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builder: Option<BuilderReference>,
    /// Objects made for the build.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related_objects: Vec<BuildObjectReference>,
    /// RFC 3339 start time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_start: Option<String>,
    /// RFC 3339 end time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_end: Option<String>,
    /// The pushed image by digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digested_image_push_spec: Option<String>,
}
