//! The repository's `manifests/` folder, built into the binary: the operator's default.

/// Each manifest file's name and text, in name order.
pub const MANIFESTS: &[(&str, &str)] = &[
    (
        "00-clusteroperator-crd.yaml",
        include_str!("../../../manifests/00-clusteroperator-crd.yaml"),
    ),
    (
        "00-crds.yaml",
        include_str!("../../../manifests/00-crds.yaml"),
    ),
    (
        "01-namespace.yaml",
        include_str!("../../../manifests/01-namespace.yaml"),
    ),
    (
        "02-admission-policy.yaml",
        include_str!("../../../manifests/02-admission-policy.yaml"),
    ),
    (
        "02-daemon-policy.yaml",
        include_str!("../../../manifests/02-daemon-policy.yaml"),
    ),
    (
        "02-rbac.yaml",
        include_str!("../../../manifests/02-rbac.yaml"),
    ),
    (
        "03-controller.yaml",
        include_str!("../../../manifests/03-controller.yaml"),
    ),
    (
        "04-server.yaml",
        include_str!("../../../manifests/04-server.yaml"),
    ),
    (
        "05-daemon.yaml",
        include_str!("../../../manifests/05-daemon.yaml"),
    ),
    (
        "06-pools.yaml",
        include_str!("../../../manifests/06-pools.yaml"),
    ),
    (
        "07-controllerconfig.yaml",
        include_str!("../../../manifests/07-controllerconfig.yaml"),
    ),
    (
        "08-operator.yaml",
        include_str!("../../../manifests/08-operator.yaml"),
    ),
    (
        "09-webhook.yaml",
        include_str!("../../../manifests/09-webhook.yaml"),
    ),
];

/// The embedded manifests as owned (name, text) pairs.
pub fn manifests() -> Vec<(String, String)> {
    MANIFESTS
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect()
}
