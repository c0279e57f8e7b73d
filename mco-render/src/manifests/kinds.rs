//! The kinds the API server knows in the API groups this project serves or reads, and the
//! schemas it checks the objects of its own groups against.
//!
//! A group listed here is one `kubectl apply` would send to a cluster running this project (and
//! OpenShift's config and operator groups, which the controllers read): a kind or version it
//! does not hold is refused there ("no matches for kind"). A group not listed (`apps/v1`) is
//! left alone: the cluster may serve it.
//!
//! The schemas are the ones this project's CRDs (`manifests/00-crds.yaml`) carry, derived here
//! from the same types ([`crate::api`]): the types are the single source, and a test checks the
//! installed CRDs name the same fields.

use crate::api::rollout_policy::{self, RolloutPolicySpec, RolloutPolicyStatus};
use crate::api::{
    ContainerRuntimeConfigSpec, CustomResourceStatus, KubeletConfigSpec, MachineConfigNodeSpec,
    MachineConfigNodeStatus, MachineConfigPoolStatus, MachineConfigSpec, MachineOSBuildSpec,
    MachineOSBuildStatus, MachineOSConfigSpec, MachineOSConfigStatus, PinnedImageSetSpec,
    PinnedImageSetStatus, PoolSpec,
};
use schemars::JsonSchema;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The MCO's API group.
pub const MCO_GROUP: &str = "machineconfiguration.openshift.io";

/// A group, its versions and the kinds each version serves.
struct Group {
    name: &'static str,
    versions: &'static [(&'static str, &'static [&'static str])],
}

/// Every group whose kinds are checked.
const GROUPS: &[Group] = &[
    Group {
        name: "",
        versions: &[(
            "v1",
            &[
                "Binding",
                "ComponentStatus",
                "ConfigMap",
                "Endpoints",
                "Event",
                "LimitRange",
                "List",
                "Namespace",
                "Node",
                "PersistentVolume",
                "PersistentVolumeClaim",
                "Pod",
                "PodTemplate",
                "ReplicationController",
                "ResourceQuota",
                "Secret",
                "Service",
                "ServiceAccount",
            ],
        )],
    },
    Group {
        name: MCO_GROUP,
        versions: &[
            (
                "v1",
                &[
                    "ContainerRuntimeConfig",
                    "ControllerConfig",
                    "KubeletConfig",
                    "MachineConfig",
                    "MachineConfigNode",
                    "MachineConfigPool",
                    "MachineOSBuild",
                    "MachineOSConfig",
                    "PinnedImageSet",
                ],
            ),
            // Served by the releases where these kinds were previews.
            (
                "v1alpha1",
                &[
                    "MachineConfigNode",
                    "MachineOSBuild",
                    "MachineOSConfig",
                    "PinnedImageSet",
                ],
            ),
        ],
    },
    Group {
        name: rollout_policy::GROUP,
        versions: &[(rollout_policy::VERSION, &[rollout_policy::KIND])],
    },
    Group {
        name: "config.openshift.io",
        versions: &[
            (
                "v1",
                &[
                    "APIServer",
                    "Authentication",
                    "Build",
                    "ClusterImagePolicy",
                    "ClusterOperator",
                    "ClusterVersion",
                    "Console",
                    "DNS",
                    "FeatureGate",
                    "Image",
                    "ImageContentPolicy",
                    "ImageDigestMirrorSet",
                    "ImagePolicy",
                    "ImageTagMirrorSet",
                    "Infrastructure",
                    "Ingress",
                    "InsightsDataGather",
                    "Network",
                    "Node",
                    "OAuth",
                    "OperatorHub",
                    "Project",
                    "Proxy",
                    "Scheduler",
                ],
            ),
            (
                "v1alpha1",
                &[
                    "Backup",
                    "ClusterImagePolicy",
                    "ClusterMonitoring",
                    "ImagePolicy",
                    "InsightsDataGather",
                ],
            ),
        ],
    },
    Group {
        name: "operator.openshift.io",
        versions: &[
            (
                "v1",
                &[
                    "Authentication",
                    "CSISnapshotController",
                    "CloudCredential",
                    "ClusterCSIDriver",
                    "Config",
                    "Console",
                    "DNS",
                    "Etcd",
                    "IngressController",
                    "InsightsOperator",
                    "KubeAPIServer",
                    "KubeControllerManager",
                    "KubeScheduler",
                    "KubeStorageVersionMigrator",
                    "MachineConfiguration",
                    "Network",
                    "OLM",
                    "OpenShiftAPIServer",
                    "OpenShiftControllerManager",
                    "ServiceCA",
                    "Storage",
                ],
            ),
            ("v1alpha1", &["ImageContentSourcePolicy"]),
        ],
    },
];

/// What the API server makes of an `apiVersion` and `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindCheck {
    /// Served.
    Known,
    /// A group this project does not know: not judged.
    OtherGroup,
    /// A group known, but not this kind in this version.
    NoMatch,
}

/// Splits an `apiVersion` into group and version (`v1` is the core group's).
pub fn group_version(api_version: &str) -> (&str, &str) {
    match api_version.rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// Whether `kind` is served in `api_version`. A `<Kind>List` is served where its kind is.
pub fn check_kind(api_version: &str, kind: &str) -> KindCheck {
    let (group, version) = group_version(api_version);
    let Some(g) = GROUPS.iter().find(|g| g.name == group) else {
        return KindCheck::OtherGroup;
    };
    let served = |k: &str| {
        g.versions
            .iter()
            .any(|(v, kinds)| *v == version && kinds.contains(&k))
    };
    let listed = kind
        .strip_suffix("List")
        .is_some_and(|k| !k.is_empty() && served(k));
    if served(kind) || listed {
        KindCheck::Known
    } else {
        KindCheck::NoMatch
    }
}

/// The versions of `api_version`'s group that serve `kind` (empty for an unknown group).
pub fn versions_serving(api_version: &str, kind: &str) -> Vec<&'static str> {
    let (group, _) = group_version(api_version);
    GROUPS
        .iter()
        .filter(|g| g.name == group)
        .flat_map(|g| g.versions.iter())
        .filter(|(_, kinds)| kinds.contains(&kind))
        .map(|(v, _)| *v)
        .collect()
}

/// The kinds of `api_version`'s group, in any version (for "did you mean").
pub fn kinds_of_group(api_version: &str) -> Vec<&'static str> {
    let (group, _) = group_version(api_version);
    let mut out: Vec<&'static str> = GROUPS
        .iter()
        .filter(|g| g.name == group)
        .flat_map(|g| g.versions.iter())
        .flat_map(|(_, kinds)| kinds.iter().copied())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The schema of `T` as this project's CRDs are generated from it: OpenAPI 3 with every
/// subschema inlined and `nullable` for options.
fn schema_of<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::openapi3()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .with_transform(schemars::transform::AddNullable::default())
        .into_generator();
    generator.into_root_schema_for::<T>().to_value()
}

/// Kubernetes' ObjectMeta as the API server decodes it (its fields and their types).
pub fn object_meta_schema() -> Value {
    let string = json!({"type": "string"});
    let integer = json!({"type": "integer"});
    let string_map = json!({"type": "object", "additionalProperties": {"type": "string"}});
    json!({
        "type": "object",
        "properties": {
            "name": string,
            "generateName": string,
            "namespace": string,
            "selfLink": string,
            "uid": string,
            "resourceVersion": string,
            "generation": integer,
            "creationTimestamp": string,
            "deletionTimestamp": string,
            "deletionGracePeriodSeconds": integer,
            "labels": string_map,
            "annotations": string_map,
            "ownerReferences": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "apiVersion": string,
                        "kind": string,
                        "name": string,
                        "uid": string,
                        "controller": {"type": "boolean"},
                        "blockOwnerDeletion": {"type": "boolean"},
                    },
                },
            },
            "finalizers": {"type": "array", "items": string},
            "managedFields": {"type": "array"},
        },
    })
}

/// The root schema of a kind: `apiVersion`, `kind`, `metadata`, `spec` and, when the kind has
/// one, `status`.
fn root(spec: Value, status: Option<Value>) -> Value {
    let mut properties = serde_json::Map::new();
    properties.insert("apiVersion".into(), json!({"type": "string"}));
    properties.insert("kind".into(), json!({"type": "string"}));
    properties.insert("metadata".into(), object_meta_schema());
    properties.insert("spec".into(), spec);
    if let Some(s) = status {
        properties.insert("status".into(), s);
    }
    json!({"type": "object", "properties": properties})
}

/// The schema of the `spec`/`status` the API server keeps as written.
fn preserved() -> Value {
    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

/// The schema each kind of this project's CRDs is checked against, by `group/version` and
/// kind.
fn schemas() -> &'static BTreeMap<(String, String), Value> {
    static SCHEMAS: OnceLock<BTreeMap<(String, String), Value>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let mco =
            |kind: &str, schema: Value| ((format!("{MCO_GROUP}/v1"), kind.to_string()), schema);
        BTreeMap::from([
            mco(
                "MachineConfig",
                root(schema_of::<MachineConfigSpec>(), None),
            ),
            mco(
                "MachineConfigPool",
                root(
                    schema_of::<PoolSpec>(),
                    Some(schema_of::<MachineConfigPoolStatus>()),
                ),
            ),
            // The ControllerConfig keeps whatever its spec and status say.
            mco("ControllerConfig", root(preserved(), Some(preserved()))),
            mco(
                "KubeletConfig",
                root(
                    schema_of::<KubeletConfigSpec>(),
                    Some(schema_of::<CustomResourceStatus>()),
                ),
            ),
            mco(
                "ContainerRuntimeConfig",
                root(
                    schema_of::<ContainerRuntimeConfigSpec>(),
                    Some(schema_of::<CustomResourceStatus>()),
                ),
            ),
            mco(
                "MachineConfigNode",
                root(
                    schema_of::<MachineConfigNodeSpec>(),
                    Some(schema_of::<MachineConfigNodeStatus>()),
                ),
            ),
            mco(
                "MachineOSConfig",
                root(
                    schema_of::<MachineOSConfigSpec>(),
                    Some(schema_of::<MachineOSConfigStatus>()),
                ),
            ),
            mco(
                "MachineOSBuild",
                root(
                    schema_of::<MachineOSBuildSpec>(),
                    Some(schema_of::<MachineOSBuildStatus>()),
                ),
            ),
            mco(
                "PinnedImageSet",
                root(
                    schema_of::<PinnedImageSetSpec>(),
                    Some(schema_of::<PinnedImageSetStatus>()),
                ),
            ),
            (
                (
                    format!("{}/{}", rollout_policy::GROUP, rollout_policy::VERSION),
                    rollout_policy::KIND.to_string(),
                ),
                root(
                    schema_of::<RolloutPolicySpec>(),
                    Some(schema_of::<RolloutPolicyStatus>()),
                ),
            ),
        ])
    })
}

/// The schema the API server checks an object of `kind` in `api_version` against, when it is
/// one of this project's CRDs.
pub fn schema(api_version: &str, kind: &str) -> Option<&'static Value> {
    schemas().get(&(api_version.to_string(), kind.to_string()))
}

/// Every kind with a schema, as (`group/version`, kind).
pub fn with_schema() -> impl Iterator<Item = (&'static str, &'static str)> {
    schemas().keys().map(|(v, k)| (v.as_str(), k.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_group_and_version() {
        let mc = "machineconfiguration.openshift.io/v1";
        assert_eq!(check_kind(mc, "MachineConfig"), KindCheck::Known);
        assert_eq!(check_kind(mc, "MachineConfigList"), KindCheck::Known);
        assert_eq!(check_kind(mc, "MachineConfg"), KindCheck::NoMatch);
        assert_eq!(
            check_kind("machineconfiguration.openshift.io/v2", "MachineConfig"),
            KindCheck::NoMatch
        );
        assert_eq!(check_kind("v1", "Secret"), KindCheck::Known);
        assert_eq!(check_kind("v1", "List"), KindCheck::Known);
        assert_eq!(check_kind("v1", "Nod"), KindCheck::NoMatch);
        assert_eq!(check_kind("apps/v1", "Deployment"), KindCheck::OtherGroup);
        assert_eq!(
            versions_serving("machineconfiguration.openshift.io/v2", "MachineConfig"),
            ["v1"]
        );
    }

    /// Every field path a schema names (`spec.pools[].name`, `{}` for a map's values), down
    /// to the objects kept as written.
    fn fields(schema: &Value, at: &str, out: &mut std::collections::BTreeSet<String>) {
        let mut all = vec![schema];
        for key in ["anyOf", "oneOf", "allOf"] {
            all.extend(
                schema
                    .get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten(),
            );
        }
        if all
            .iter()
            .any(|s| s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)))
        {
            out.insert(format!("{at}(any)"));
            return;
        }
        for s in all {
            for (k, sub) in s
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                let path = format!("{at}.{k}");
                out.insert(path.clone());
                fields(sub, &path, out);
            }
            if let Some(items) = s.get("items") {
                fields(items, &format!("{at}[]"), out);
            }
            if let Some(sub @ Value::Object(_)) = s.get("additionalProperties") {
                fields(sub, &format!("{at}{{}}"), out);
            }
        }
    }

    /// The schemas checked are the installed CRDs' (`manifests/00-crds.yaml`, generated by
    /// mco-k8s from the same types): the same fields under `spec` and `status`.
    #[test]
    fn the_installed_crds_name_the_same_fields() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../manifests/00-crds.yaml");
        let Ok(text) = std::fs::read_to_string(path) else {
            panic!("{path}");
        };
        let mut checked = 0;
        for doc in crate::manifests::yaml_documents(&text) {
            let Ok((_, crd)) = doc else {
                panic!("{path}: {doc:?}");
            };
            let group = crd["spec"]["group"].as_str().unwrap_or("");
            let kind = crd["spec"]["names"]["kind"].as_str().unwrap_or("");
            for v in crd["spec"]["versions"].as_array().into_iter().flatten() {
                let version = v["name"].as_str().unwrap_or("");
                let Some(ours) = schema(&format!("{group}/{version}"), kind) else {
                    panic!("no schema for {kind} in {group}/{version}");
                };
                let theirs = &v["schema"]["openAPIV3Schema"];
                for part in ["spec", "status"] {
                    let (mut a, mut b) = Default::default();
                    fields(&ours["properties"][part], part, &mut a);
                    fields(&theirs["properties"][part], part, &mut b);
                    assert_eq!(a, b, "{kind} {part}");
                }
                checked += 1;
            }
        }
        assert_eq!(checked, with_schema().count());
    }
}
