//! What on-cluster layering builds read that the operator keeps, as upstream's operator does
//! while a pool is layered: the copy of the cluster's pull secret (`global-pull-secret-copy`,
//! the base image pull secret of a MachineOSConfig naming none), one copy of the RHEL
//! entitlement per layered pool (`etc-pki-entitlement-<pool>`, owned by the pool), and the
//! `machine-config-operator-images` ConfigMap naming the image the build Job runs.
//!
//! Where this differs from upstream, on purpose:
//! - a MachineOSConfig naming a pool that does not exist yet is skipped (upstream fails the
//!   pass until the pool arrives), so a folder applied in any order settles;
//! - the pull secret copy is managed only while `openshift-config/pull-secret` exists: without
//!   it (a cluster that is not OpenShift) a copy made by hand is kept, and the pass fails only
//!   when neither exists and a layered pool's MachineOSConfig names no `baseImagePullSecret`
//!   (upstream fails whenever the source is missing);
//! - an entitlement copy of a pool that is no longer layered is deleted only when the pool owns
//!   it (one made by hand is left);
//! - a node whose OS image the kubelet has not reported yet is not taken for a non-CoreOS one.

use crate::api::{MachineConfigPool, MachineOSConfig, Node};
use crate::controllers::build::request::{GLOBAL_PULL_SECRET_COPY, NAMESPACE};
use crate::controllers::node_pool::pools_for_node;
use crate::gocompat::quote::go_quote;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// A pool label that marks a pool layered (upstream's older opt-in; when any pool has it,
/// only such pools count as layered).
pub const LAYERING_ENABLED_POOL_LABEL: &str = "machineconfiguration.openshift.io/layering-enabled";
/// The namespace of the cluster's pull secret.
pub const PULL_SECRET_NAMESPACE: &str = "openshift-config";
/// The cluster's pull secret.
pub const PULL_SECRET: &str = "pull-secret";
/// The namespace of the cluster's RHEL entitlement (Simple Content Access).
pub const ENTITLEMENT_NAMESPACE: &str = "openshift-config-managed";
/// The cluster's RHEL entitlement Secret, and the prefix of its per-pool copies.
pub const ENTITLEMENT_SECRET: &str = "etc-pki-entitlement";
/// The ConfigMap whose `images.json` names the images a build Job runs.
pub const IMAGES_CONFIGMAP: &str = "machine-config-operator-images";
/// The sync task these belong to, as upstream names it in the ClusterOperator.
pub const TASK: &str = "MachineOSBuilder";

/// The pools opted into layering: the pools labelled [`LAYERING_ENABLED_POOL_LABEL`] when any
/// is, otherwise the pools a MachineOSConfig names (one naming a missing pool is skipped).
/// Sorted by name, each once.
pub fn layered_pools<'a>(
    pools: &'a [MachineConfigPool],
    moscs: &[MachineOSConfig],
) -> Vec<&'a MachineConfigPool> {
    let labelled: Vec<&MachineConfigPool> = pools
        .iter()
        .filter(|p| p.metadata.labels.contains_key(LAYERING_ENABLED_POOL_LABEL))
        .collect();
    let mut out = if labelled.is_empty() {
        let named: BTreeSet<&str> = moscs
            .iter()
            .map(|m| m.spec.machine_config_pool.name.as_str())
            .collect();
        pools.iter().filter(|p| named.contains(p.name())).collect()
    } else {
        labelled
    };
    out.sort_by(|a, b| a.name().cmp(b.name()));
    out.dedup_by(|a, b| a.name() == b.name());
    out
}

/// What the operator reads to keep the layering Secrets.
#[derive(Debug, Clone, Copy)]
pub struct LayeringInputs<'a> {
    /// Every pool.
    pub pools: &'a [MachineConfigPool],
    /// Every MachineOSConfig.
    pub moscs: &'a [MachineOSConfig],
    /// Every Node (layering needs CoreOS on a layered pool's nodes).
    pub nodes: &'a [Node],
    /// `openshift-config/pull-secret`, when it exists.
    pub pull_secret: Option<&'a Value>,
    /// `openshift-config-managed/etc-pki-entitlement`, when it exists.
    pub entitlement: Option<&'a Value>,
    /// The Secrets of the MCO namespace (those not kept here are ignored).
    pub namespace_secrets: &'a [Value],
}

/// A write to a Secret of the MCO namespace.
#[derive(Debug, Clone, PartialEq)]
pub enum SecretIntent {
    /// Create this Secret.
    Create(Value),
    /// Merge-patch the `data` of the Secret `name` to this (removed keys are `null`).
    PatchData {
        /// The Secret.
        name: String,
        /// The merge patch.
        patch: Value,
    },
    /// Delete the Secret.
    Delete(String),
}

impl SecretIntent {
    /// The Secret written.
    pub fn name(&self) -> &str {
        match self {
            SecretIntent::Create(s) => s["metadata"]["name"].as_str().unwrap_or(""),
            SecretIntent::PatchData { name, .. } | SecretIntent::Delete(name) => name,
        }
    }
}

/// Why the layering Secrets cannot be kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayeringError {
    /// A layered pool's build needs the pull secret copy and nothing to make it from exists.
    #[error(
        "could not reconcile global pull secret copy: secret {PULL_SECRET_NAMESPACE}/{PULL_SECRET} not found and no {NAMESPACE}/{GLOBAL_PULL_SECRET_COPY} exists, but {} no baseImagePullSecret",
        naming(.0)
    )]
    NoPullSecret(Vec<String>),
    /// Nodes of layered pools run an OS that is not CoreOS (one message per node and pool).
    #[error("on-cluster layering is only supported on CoreOS-based nodes: {}", aggregate(.0))]
    NotCoreOs(Vec<String>),
    /// A node selector does not compile.
    #[error("{0}")]
    Selector(String),
}

/// The OS images layering supports: RHCOS, Fedora CoreOS, CentOS Stream CoreOS.
pub const COREOS_IMAGES: [&str; 3] = [
    "Red Hat Enterprise Linux CoreOS",
    "Fedora Linux",
    "CentOS Stream CoreOS",
];

/// Several errors as Kubernetes aggregates them: one alone, several as `[a, b]`.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        _ => format!("[{}]", errors.join(", ")),
    }
}

/// Each node of a layered pool (by the pool's node selector) whose reported OS image is not
/// CoreOS, as upstream words it: `non-CoreOS OS "<image>" detected on node "<node>" in
/// MachineConfigPool(s) ["<pool>" ...]`.
fn non_coreos_nodes(
    layered: &[&MachineConfigPool],
    pools: &[MachineConfigPool],
    nodes: &[Node],
) -> Result<Vec<String>, LayeringError> {
    let mut out = Vec::new();
    for pool in layered {
        let Some(selector) = pool.spec.node_selector.as_ref().filter(|s| !s.is_empty()) else {
            continue;
        };
        let selector = selector.compile().map_err(|e| {
            LayeringError::Selector(format!(
                "label selector for pool {} failed {e}",
                pool.name()
            ))
        })?;
        for node in nodes
            .iter()
            .filter(|n| selector.matches(&n.metadata.labels))
        {
            let image = node
                .status
                .node_info
                .as_ref()
                .map_or("", |i| i.os_image.as_str());
            if image.is_empty() || COREOS_IMAGES.iter().any(|c| image.contains(c)) {
                continue;
            }
            let names: Vec<String> = pools_for_node(node, pools)
                .map_err(|e| LayeringError::Selector(e.to_string()))?
                .iter()
                .map(|p| go_quote(p.name()))
                .collect();
            out.push(format!(
                "non-CoreOS OS {} detected on node {} in MachineConfigPool(s) [{}]",
                go_quote(image),
                go_quote(node.name()),
                names.join(" ")
            ));
        }
    }
    Ok(out)
}

fn naming(configs: &[String]) -> String {
    let list: Vec<String> = configs.iter().map(|c| go_quote(c)).collect();
    match list.as_slice() {
        [one] => format!("MachineOSConfig {one} names"),
        _ => format!("MachineOSConfigs {} name", list.join(", ")),
    }
}

fn secret<'a>(secrets: &'a [Value], name: &str) -> Option<&'a Value> {
    secrets
        .iter()
        .find(|s| s["metadata"]["name"].as_str() == Some(name))
}

/// The data of a Secret (an empty map when it has none).
fn data(s: &Value) -> Map<String, Value> {
    s.get("data")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The merge patch that turns `live`'s data into `want`, or `None` when they are equal.
fn data_patch(live: &Value, want: &Map<String, Value>) -> Option<Value> {
    let have = data(live);
    if &have == want {
        return None;
    }
    let mut patch = want.clone();
    for k in have.keys().filter(|k| !want.contains_key(*k)) {
        patch.insert(k.clone(), Value::Null);
    }
    Some(json!({ "data": patch }))
}

/// Whether `s` is owned by the pool `pool`.
fn owned_by_pool(s: &Value, pool: &str) -> bool {
    s["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|refs| {
            refs.iter()
                .any(|r| r["kind"] == "MachineConfigPool" && r["name"].as_str() == Some(pool))
        })
}

/// The writes that bring the pull secret copy and the entitlement copies to what the layered
/// pools need, in a stable order (the copy first, then the pools by name); first, as upstream,
/// every node of a layered pool must run CoreOS.
pub fn layering_secrets(input: &LayeringInputs<'_>) -> Result<Vec<SecretIntent>, LayeringError> {
    let layered = layered_pools(input.pools, input.moscs);
    let foreign = non_coreos_nodes(&layered, input.pools, input.nodes)?;
    if !foreign.is_empty() {
        return Err(LayeringError::NotCoreOs(foreign));
    }
    let mut out = Vec::new();
    let copy = secret(input.namespace_secrets, GLOBAL_PULL_SECRET_COPY);
    match (input.pull_secret, copy) {
        (Some(_), Some(_)) if layered.is_empty() => {
            out.push(SecretIntent::Delete(GLOBAL_PULL_SECRET_COPY.to_string()));
        }
        (Some(source), live) if !layered.is_empty() => {
            let want = data(source);
            match live {
                None => out.push(SecretIntent::Create(json!({
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "type": "kubernetes.io/dockerconfigjson",
                    "metadata": {"name": GLOBAL_PULL_SECRET_COPY, "namespace": NAMESPACE},
                    "data": want,
                }))),
                Some(live) => {
                    if let Some(patch) = data_patch(live, &want) {
                        out.push(SecretIntent::PatchData {
                            name: GLOBAL_PULL_SECRET_COPY.to_string(),
                            patch,
                        });
                    }
                }
            }
        }
        (None, None) => {
            let names: BTreeSet<&str> = layered.iter().map(|p| p.name()).collect();
            let needing: Vec<String> = input
                .moscs
                .iter()
                .filter(|m| {
                    names.contains(m.spec.machine_config_pool.name.as_str())
                        && m.spec.base_image_pull_secret.is_none()
                })
                .map(|m| m.metadata.name.clone())
                .collect();
            if !needing.is_empty() {
                return Err(LayeringError::NoPullSecret(needing));
            }
        }
        _ => {}
    }
    for pool in input.pools {
        let name = format!("{ENTITLEMENT_SECRET}-{}", pool.name());
        let live = secret(input.namespace_secrets, &name);
        let is_layered = layered.iter().any(|p| p.name() == pool.name());
        match (is_layered, input.entitlement, live) {
            (false, _, Some(live)) if owned_by_pool(live, pool.name()) => {
                out.push(SecretIntent::Delete(name));
            }
            (true, Some(source), None) => out.push(SecretIntent::Create(json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "Opaque",
                "metadata": {
                    "name": name,
                    "namespace": NAMESPACE,
                    "ownerReferences": [{
                        "apiVersion": "machineconfiguration.openshift.io/v1",
                        "kind": "MachineConfigPool",
                        "name": pool.name(),
                        "uid": pool.metadata.uid.clone().unwrap_or_default(),
                    }],
                },
                "data": data(source),
            }))),
            (true, Some(source), Some(live)) => {
                if let Some(patch) = data_patch(live, &data(source)) {
                    out.push(SecretIntent::PatchData { name, patch });
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// The `machine-config-operator-images` ConfigMap the operator creates when it is missing:
/// `images.json` naming `image` as `machineConfigOperator` (the image a build Job's
/// containers run) and `version` as `releaseVersion`. Once it exists it is the
/// administrator's (the image must hold buildah and bash for builds to run).
pub fn images_configmap(image: &str, version: &str) -> Value {
    let images = json!({"releaseVersion": version, "machineConfigOperator": image});
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": IMAGES_CONFIGMAP, "namespace": NAMESPACE},
        "data": {"images.json": serde_json::to_string_pretty(&images).unwrap_or_default()},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(name: &str, labels: &[&str]) -> MachineConfigPool {
        let labels: Map<String, Value> =
            labels.iter().map(|l| (l.to_string(), json!(""))).collect();
        serde_json::from_value(json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfigPool",
            "metadata": {"name": name, "uid": format!("uid-{name}"), "labels": labels},
            "spec": {}
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn mosc(name: &str, pool: &str, base: Option<&str>) -> MachineOSConfig {
        let mut spec = json!({
            "machineConfigPool": {"name": pool},
            "imageBuilder": {"imageBuilderType": "Job"},
            "renderedImagePushSecret": {"name": "push"},
            "renderedImagePushSpec": "registry.example.com/x:latest",
        });
        if let Some(b) = base {
            spec["baseImagePullSecret"] = json!({"name": b});
        }
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec}))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn secret_with(name: &str, data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": data})
    }

    fn run(
        pools: &[MachineConfigPool],
        moscs: &[MachineOSConfig],
        pull: Option<&Value>,
        ent: Option<&Value>,
        ns: &[Value],
    ) -> Result<Vec<SecretIntent>, LayeringError> {
        layering_secrets(&LayeringInputs {
            pools,
            moscs,
            nodes: &[],
            pull_secret: pull,
            entitlement: ent,
            namespace_secrets: ns,
        })
    }

    #[test]
    fn labelled_pools_win_over_machine_os_configs() {
        let pools = [
            pool("worker", &[]),
            pool("infra", &[LAYERING_ENABLED_POOL_LABEL]),
        ];
        let moscs = [mosc("w", "worker", None)];
        let names: Vec<&str> = layered_pools(&pools, &moscs)
            .iter()
            .map(|p| p.name())
            .collect();
        assert_eq!(names, ["infra"]);
        let names: Vec<&str> = layered_pools(
            &pools[..1],
            &[
                mosc("a", "worker", None),
                mosc("b", "worker", None),
                mosc("c", "gone", None),
            ],
        )
        .iter()
        .map(|p| p.name())
        .collect();
        assert_eq!(names, ["worker"]);
    }

    #[test]
    fn a_layered_pool_gets_the_pull_secret_copy_and_its_entitlement_owned_by_it() {
        let pools = [pool("master", &[]), pool("worker", &[])];
        let pull = secret_with(PULL_SECRET, json!({".dockerconfigjson": "cHVsbA=="}));
        let ent = secret_with(
            ENTITLEMENT_SECRET,
            json!({"entitlement.pem": "ZQ==", "entitlement-key.pem": "aw=="}),
        );
        let out = run(
            &pools,
            &[mosc("w", "worker", None)],
            Some(&pull),
            Some(&ent),
            &[],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out.len(), 2, "{out:#?}");
        let SecretIntent::Create(copy) = &out[0] else {
            panic!("{out:#?}")
        };
        assert_eq!(copy["metadata"]["name"], GLOBAL_PULL_SECRET_COPY);
        assert_eq!(copy["metadata"]["namespace"], NAMESPACE);
        assert_eq!(copy["type"], "kubernetes.io/dockerconfigjson");
        assert_eq!(copy["data"], pull["data"]);
        let SecretIntent::Create(e) = &out[1] else {
            panic!("{out:#?}")
        };
        assert_eq!(e["metadata"]["name"], "etc-pki-entitlement-worker");
        assert_eq!(e["type"], "Opaque");
        assert_eq!(e["data"], ent["data"]);
        assert_eq!(
            e["metadata"]["ownerReferences"][0],
            json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool", "name": "worker", "uid": "uid-worker"})
        );
    }

    #[test]
    fn copies_follow_their_sources_and_go_when_no_pool_is_layered() {
        let pools = [pool("worker", &[])];
        let pull = secret_with(PULL_SECRET, json!({".dockerconfigjson": "bmV3"}));
        let ent = secret_with(ENTITLEMENT_SECRET, json!({"entitlement.pem": "bmV3"}));
        let mut ent_copy = secret_with(
            "etc-pki-entitlement-worker",
            json!({"entitlement.pem": "b2xk", "stale": "eA=="}),
        );
        ent_copy["metadata"]["ownerReferences"] =
            json!([{"kind": "MachineConfigPool", "name": "worker"}]);
        let ns = [
            secret_with(
                GLOBAL_PULL_SECRET_COPY,
                json!({".dockerconfigjson": "b2xk"}),
            ),
            ent_copy,
        ];
        let moscs = [mosc("w", "worker", None)];
        let out =
            run(&pools, &moscs, Some(&pull), Some(&ent), &ns).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            out,
            [
                SecretIntent::PatchData {
                    name: GLOBAL_PULL_SECRET_COPY.into(),
                    patch: json!({"data": {".dockerconfigjson": "bmV3"}})
                },
                SecretIntent::PatchData {
                    name: "etc-pki-entitlement-worker".into(),
                    patch: json!({"data": {"entitlement.pem": "bmV3", "stale": null}})
                },
            ]
        );
        // In step: nothing to write.
        let synced = [
            secret_with(GLOBAL_PULL_SECRET_COPY, pull["data"].clone()),
            {
                let mut s = secret_with("etc-pki-entitlement-worker", ent["data"].clone());
                s["metadata"]["ownerReferences"] =
                    json!([{"kind": "MachineConfigPool", "name": "worker"}]);
                s
            },
        ];
        assert_eq!(
            run(&pools, &moscs, Some(&pull), Some(&ent), &synced),
            Ok(vec![])
        );
        // The MachineOSConfig deleted: both copies go.
        let out =
            run(&pools, &[], Some(&pull), Some(&ent), &synced).unwrap_or_else(|e| panic!("{e}"));
        let deleted: Vec<&str> = out.iter().map(SecretIntent::name).collect();
        assert_eq!(
            deleted,
            [GLOBAL_PULL_SECRET_COPY, "etc-pki-entitlement-worker"]
        );
        assert!(out.iter().all(|i| matches!(i, SecretIntent::Delete(_))));
    }

    #[test]
    fn hand_made_copies_are_left_alone() {
        let pools = [pool("worker", &[])];
        let ns = [
            secret_with(
                GLOBAL_PULL_SECRET_COPY,
                json!({".dockerconfigjson": "aGFuZA=="}),
            ),
            secret_with(
                "etc-pki-entitlement-worker",
                json!({"entitlement.pem": "aGFuZA=="}),
            ),
        ];
        // No cluster pull secret: the copy is the administrator's, layered or not.
        assert_eq!(run(&pools, &[], None, None, &ns), Ok(vec![]));
        assert_eq!(
            run(&pools, &[mosc("w", "worker", None)], None, None, &ns),
            Ok(vec![])
        );
    }

    #[test]
    fn no_pull_secret_at_all_fails_only_for_configs_that_need_it() {
        let pools = [pool("worker", &[]), pool("infra", &[])];
        let with_own = [mosc("w", "worker", Some("mine"))];
        assert_eq!(run(&pools, &with_own, None, None, &[]), Ok(vec![]));
        let needing = [
            mosc("b", "infra", None),
            mosc("a", "worker", None),
            mosc("c", "gone", None),
        ];
        let err = run(&pools, &needing, None, None, &[]).expect_err("fails");
        assert_eq!(
            err.to_string(),
            "could not reconcile global pull secret copy: secret openshift-config/pull-secret not found and no openshift-machine-config-operator/global-pull-secret-copy exists, but MachineOSConfigs \"b\", \"a\" name no baseImagePullSecret"
        );
        let err = run(&pools, &needing[1..2], None, None, &[]).expect_err("fails");
        assert!(
            err.to_string()
                .ends_with("but MachineOSConfig \"a\" names no baseImagePullSecret"),
            "{err}"
        );
    }

    #[test]
    fn no_entitlement_no_entitlement_copies() {
        let pools = [pool("worker", &[])];
        let pull = secret_with(PULL_SECRET, json!({".dockerconfigjson": "cA=="}));
        let out = run(&pools, &[mosc("w", "worker", None)], Some(&pull), None, &[])
            .unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = out.iter().map(SecretIntent::name).collect();
        assert_eq!(names, [GLOBAL_PULL_SECRET_COPY]);
    }

    #[test]
    fn a_layered_pool_needs_coreos_nodes() {
        let mut pools = [pool("master", &[]), pool("worker", &[])];
        for p in &mut pools {
            let role = format!("node-role.kubernetes.io/{}", p.name());
            p.spec.node_selector = serde_json::from_value(json!({"matchLabels": {role: ""}})).ok();
        }
        let node = |name: &str, role: &str, os: &str| -> Node {
            serde_json::from_value(json!({"metadata": {"name": name,
                "labels": {format!("node-role.kubernetes.io/{role}"): ""}},
                "status": {"nodeInfo": {"osImage": os}}}))
            .unwrap_or_else(|e| panic!("{e}"))
        };
        let nodes = [
            node(
                "w-0",
                "worker",
                "Red Hat Enterprise Linux CoreOS 9.6.20250101-0 (Plow)",
            ),
            node("w-1", "worker", "Ubuntu 24.04.1 LTS"),
            node("w-2", "worker", "Debian GNU/Linux 12 (bookworm)"),
            node("w-3", "worker", ""),
            node("m-0", "master", "Ubuntu 24.04.1 LTS"),
        ];
        let pull = secret_with(PULL_SECRET, json!({".dockerconfigjson": "cA=="}));
        let input = |moscs: &'static [(&str, &str)]| {
            let moscs: Vec<MachineOSConfig> = moscs.iter().map(|(n, p)| mosc(n, p, None)).collect();
            layering_secrets(&LayeringInputs {
                pools: &pools,
                moscs: &moscs,
                nodes: &nodes,
                pull_secret: Some(&pull),
                entitlement: None,
                namespace_secrets: &[],
            })
        };
        let err = input(&[("w", "worker")]).expect_err("refused");
        assert_eq!(
            err.to_string(),
            "on-cluster layering is only supported on CoreOS-based nodes: [non-CoreOS OS \"Ubuntu 24.04.1 LTS\" detected on node \"w-1\" in MachineConfigPool(s) [\"worker\"], non-CoreOS OS \"Debian GNU/Linux 12 (bookworm)\" detected on node \"w-2\" in MachineConfigPool(s) [\"worker\"]]"
        );
        // The master pool is not layered: its Ubuntu node is no concern.
        assert!(input(&[]).is_ok());
    }

    #[test]
    fn the_images_configmap_names_the_operator_image() {
        let cm = images_configmap("quay.io/mco/rs:1", "4.99.0");
        assert_eq!(cm["metadata"]["name"], IMAGES_CONFIGMAP);
        let images: Value = serde_json::from_str(cm["data"]["images.json"].as_str().unwrap_or(""))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            images,
            json!({"releaseVersion": "4.99.0", "machineConfigOperator": "quay.io/mco/rs:1"})
        );
    }
}
