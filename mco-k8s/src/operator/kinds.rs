//! The kinds the operator can apply, the ones it only reads, and where the API server serves
//! them.

use kube::api::ApiResource;

/// A kind's API resource and scope.
#[derive(Debug, Clone)]
pub struct KindInfo {
    /// The resource kube-rs addresses.
    pub resource: ApiResource,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
}

const TABLE: &[(&str, &str, &str, bool)] = &[
    (
        "CustomResourceDefinition",
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        false,
    ),
    ("Namespace", "v1", "namespaces", false),
    ("ServiceAccount", "v1", "serviceaccounts", true),
    ("Service", "v1", "services", true),
    ("ConfigMap", "v1", "configmaps", true),
    ("Secret", "v1", "secrets", true),
    (
        "ClusterRole",
        "rbac.authorization.k8s.io/v1",
        "clusterroles",
        false,
    ),
    (
        "ClusterRoleBinding",
        "rbac.authorization.k8s.io/v1",
        "clusterrolebindings",
        false,
    ),
    ("Role", "rbac.authorization.k8s.io/v1", "roles", true),
    (
        "RoleBinding",
        "rbac.authorization.k8s.io/v1",
        "rolebindings",
        true,
    ),
    ("Deployment", "apps/v1", "deployments", true),
    (
        "ValidatingWebhookConfiguration",
        "admissionregistration.k8s.io/v1",
        "validatingwebhookconfigurations",
        false,
    ),
    ("DaemonSet", "apps/v1", "daemonsets", true),
    (
        "ValidatingAdmissionPolicy",
        "admissionregistration.k8s.io/v1",
        "validatingadmissionpolicies",
        false,
    ),
    (
        "ValidatingAdmissionPolicyBinding",
        "admissionregistration.k8s.io/v1",
        "validatingadmissionpolicybindings",
        false,
    ),
    (
        "ControllerConfig",
        "machineconfiguration.openshift.io/v1",
        "controllerconfigs",
        false,
    ),
    (
        "MachineConfigPool",
        "machineconfiguration.openshift.io/v1",
        "machineconfigpools",
        false,
    ),
    (
        "MachineConfig",
        "machineconfiguration.openshift.io/v1",
        "machineconfigs",
        false,
    ),
    (
        "ClusterOperator",
        "config.openshift.io/v1",
        "clusteroperators",
        false,
    ),
    (
        "Infrastructure",
        "config.openshift.io/v1",
        "infrastructures",
        false,
    ),
    ("Network", "config.openshift.io/v1", "networks", false),
    ("DNS", "config.openshift.io/v1", "dnses", false),
    ("Proxy", "config.openshift.io/v1", "proxies", false),
    ("Image", "config.openshift.io/v1", "images", false),
];

/// The kinds the operator reads but does not apply.
const READ_ONLY: &[(&str, &str, &str, bool)] = &[
    ("Node", "v1", "nodes", false),
    (
        "MachineConfigNode",
        "machineconfiguration.openshift.io/v1",
        "machineconfignodes",
        false,
    ),
    (
        "MachineOSConfig",
        "machineconfiguration.openshift.io/v1",
        "machineosconfigs",
        false,
    ),
];

/// Where a kind the operator applies is served, if the operator knows it.
pub fn kind_info(kind: &str) -> Option<KindInfo> {
    TABLE.iter().find(|e| e.0 == kind).map(info)
}

/// Where a kind the operator reads is served (those it applies, Nodes, MachineConfigNodes and
/// MachineOSConfigs).
pub fn read_kind_info(kind: &str) -> Option<KindInfo> {
    TABLE
        .iter()
        .chain(READ_ONLY)
        .find(|e| e.0 == kind)
        .map(info)
}

fn info((kind, api_version, plural, namespaced): &(&str, &str, &str, bool)) -> KindInfo {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.to_string()),
    };
    KindInfo {
        resource: ApiResource {
            group,
            version,
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            plural: plural.to_string(),
        },
        namespaced: *namespaced,
    }
}
