//! One MachineConfigNode per Node, kept by the operator as upstream's does
//! (`syncMachineConfigNodes` in `pkg/operator/sync.go`): every node that is not still being
//! provisioned gets one, owned by the Node and naming it, its primary pool (`not-yet-set` when
//! no pool selects it) and its desired config (`not-yet-set` until the node has one); an
//! existing one gets its owner, node and pool back when they differ and its desired config
//! once it is known (the agent keeps it current from then on); the MachineConfigNode of a Node
//! that no longer exists is deleted. Status is the agent's alone.

use crate::api::machine_config_node::{McoObjectReference, SpecConfigVersion, NOT_YET_SET};
use crate::api::{
    MachineConfigNode, MachineConfigNodeSpec, MachineConfigPool, Node, ObjectMeta, OwnerReference,
};
use crate::controllers::node_pool::{primary_pool, NodePoolError};

/// The node phases whose nodes get no MachineConfigNode yet (upstream's).
pub const UNPROVISIONED_PHASES: [&str; 2] = ["Pending", "Provisioning"];

/// What the operator writes to keep one MachineConfigNode per node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MachineConfigNodeWrites {
    /// MachineConfigNodes to create, for nodes that have none.
    pub create: Vec<MachineConfigNode>,
    /// Existing MachineConfigNodes whose owner references or spec change: each as it should
    /// be stored (metadata name and owner references, spec).
    pub update: Vec<MachineConfigNode>,
    /// The names of MachineConfigNodes whose Node is gone.
    pub delete: Vec<String>,
}

impl MachineConfigNodeWrites {
    /// Whether nothing is to be written.
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.update.is_empty() && self.delete.is_empty()
    }
}

/// The owner reference naming `node`.
pub fn node_owner(node: &Node) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "Node".into(),
        name: node.name().to_string(),
        uid: node.metadata.uid.clone().unwrap_or_default(),
        controller: None,
        block_owner_deletion: None,
    }
}

/// The name of `node`'s primary pool for its MachineConfigNode: `not-yet-set` when no pool
/// selects it.
pub fn pool_name(node: &Node, pools: &[MachineConfigPool]) -> Result<String, NodePoolError> {
    Ok(primary_pool(node, pools)?.map_or_else(|| NOT_YET_SET.to_string(), |p| p.name().into()))
}

fn desired_of(node: &Node) -> String {
    match node.desired_config() {
        "" => NOT_YET_SET.to_string(),
        d => d.to_string(),
    }
}

/// The writes that give every node in `nodes` its MachineConfigNode and remove those of
/// nodes that are gone, given the stored `existing` ones. Fails, as upstream's sync does, when
/// a node's pool cannot be decided.
pub fn sync_machine_config_nodes(
    nodes: &[Node],
    pools: &[MachineConfigPool],
    existing: &[MachineConfigNode],
) -> Result<MachineConfigNodeWrites, NodePoolError> {
    let mut out = MachineConfigNodeWrites::default();
    for node in nodes {
        let phase = node.status.phase.as_deref().unwrap_or("");
        if UNPROVISIONED_PHASES.contains(&phase) {
            continue;
        }
        let name = node.name();
        let pool = pool_name(node, pools)?;
        let owner = node_owner(node);
        let Some(stored) = existing.iter().find(|m| m.metadata.name == name) else {
            out.create.push(MachineConfigNode {
                api_version: "machineconfiguration.openshift.io/v1".into(),
                kind: "MachineConfigNode".into(),
                metadata: ObjectMeta {
                    name: name.to_string(),
                    owner_references: vec![owner],
                    ..ObjectMeta::default()
                },
                spec: MachineConfigNodeSpec {
                    node: McoObjectReference { name: name.into() },
                    pool: McoObjectReference { name: pool },
                    config_version: SpecConfigVersion {
                        desired: desired_of(node),
                    },
                },
                status: None,
            });
            continue;
        };
        let mut want = stored.clone();
        // Upstream merges its owner reference in: one naming the same Node is replaced.
        let owners = &mut want.metadata.owner_references;
        if !owners.contains(&owner) {
            owners.retain(|o| !(o.kind == owner.kind && o.name == owner.name));
            owners.push(owner);
        }
        want.spec.node.name = name.to_string();
        want.spec.pool.name = pool;
        let desired = &mut want.spec.config_version.desired;
        if desired.is_empty() || desired == NOT_YET_SET {
            *desired = desired_of(node);
        }
        if want.metadata.owner_references != stored.metadata.owner_references
            || want.spec != stored.spec
        {
            out.update.push(MachineConfigNode {
                status: None,
                ..want
            });
        }
    }
    let mut gone: Vec<String> = existing
        .iter()
        .map(|m| m.metadata.name.clone())
        .filter(|n| !nodes.iter().any(|node| node.name() == n))
        .collect();
    gone.sort();
    out.delete = gone;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::node::{CURRENT_CONFIG, DESIRED_CONFIG};
    use serde_json::json;

    fn node(name: &str, role: &str, annos: serde_json::Value) -> Node {
        serde_json::from_value(
            json!({"metadata": {"name": name, "uid": format!("uid-{name}"),
            "labels": {format!("node-role.kubernetes.io/{role}"): ""}, "annotations": annos}}),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn pools() -> Vec<MachineConfigPool> {
        ["master", "worker"]
            .iter()
            .map(|p| {
                serde_json::from_value(json!({"metadata": {"name": p}, "spec": {
                    "nodeSelector": {"matchLabels": {format!("node-role.kubernetes.io/{p}"): ""}}}}))
                .unwrap_or_else(|e| panic!("{e}"))
            })
            .collect()
    }

    fn sync(nodes: &[Node], existing: &[MachineConfigNode]) -> MachineConfigNodeWrites {
        sync_machine_config_nodes(nodes, &pools(), existing).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn every_node_gets_one_owned_by_it_naming_its_pool_and_desired_config() {
        let nodes = [
            node(
                "m0",
                "master",
                json!({CURRENT_CONFIG: "rm", DESIRED_CONFIG: "rm"}),
            ),
            node("w0", "worker", json!({})),
            node("x0", "infra", json!({})),
        ];
        let w = sync(&nodes, &[]);
        assert!(w.update.is_empty() && w.delete.is_empty());
        let got: Vec<(&str, &str, &str, &str)> = w
            .create
            .iter()
            .map(|m| {
                (
                    m.metadata.name.as_str(),
                    m.spec.pool.name.as_str(),
                    m.spec.config_version.desired.as_str(),
                    m.metadata.owner_references[0].uid.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("m0", "master", "rm", "uid-m0"),
                ("w0", "worker", NOT_YET_SET, "uid-w0"),
                ("x0", NOT_YET_SET, NOT_YET_SET, "uid-x0"),
            ]
        );
        assert_eq!(w.create[0].spec.node.name, "m0");
        assert_eq!(w.create[0].metadata.owner_references[0].kind, "Node");
        // Stored as created: nothing more to write.
        assert!(sync(&nodes, &w.create).is_empty());
    }

    #[test]
    fn the_desired_config_is_filled_in_once_and_then_left_to_the_agent() {
        let mut n = node("w0", "worker", json!({}));
        let created = sync(std::slice::from_ref(&n), &[]).create;
        n.metadata
            .annotations
            .insert(DESIRED_CONFIG.into(), "r1".into());
        let w = sync(std::slice::from_ref(&n), &created);
        assert_eq!(w.update.len(), 1);
        assert_eq!(w.update[0].spec.config_version.desired, "r1");
        // Once set, a newer desired config is the agent's to write.
        n.metadata
            .annotations
            .insert(DESIRED_CONFIG.into(), "r2".into());
        assert!(sync(std::slice::from_ref(&n), &w.update).is_empty());
    }

    #[test]
    fn a_wrong_pool_or_owner_is_restored_and_the_status_left_alone() {
        let n = node("w0", "worker", json!({DESIRED_CONFIG: "r1"}));
        let mut stored = sync(std::slice::from_ref(&n), &[]).create;
        stored[0].spec.pool.name = "infra".into();
        stored[0].metadata.owner_references[0].uid = "old".into();
        stored[0].status = Some(Default::default());
        let w = sync(std::slice::from_ref(&n), &stored);
        assert_eq!(w.update.len(), 1);
        assert_eq!(w.update[0].spec.pool.name, "worker");
        assert_eq!(w.update[0].metadata.owner_references.len(), 1);
        assert_eq!(w.update[0].metadata.owner_references[0].uid, "uid-w0");
        assert_eq!(w.update[0].status, None);
    }

    #[test]
    fn deleted_nodes_lose_theirs_and_unprovisioned_nodes_get_none_yet() {
        let w0 = node("w0", "worker", json!({}));
        let stored = sync(&[w0.clone(), node("w1", "worker", json!({}))], &[]).create;
        let mut pending = node("w2", "worker", json!({}));
        pending.status.phase = Some("Pending".into());
        let w = sync(&[w0, pending], &stored);
        assert_eq!(w.delete, ["w1"]);
        assert!(w.create.is_empty() && w.update.is_empty());
    }

    #[test]
    fn a_node_in_two_custom_pools_fails_the_sync() {
        let mut n = node("w0", "infra", json!({}));
        n.metadata
            .labels
            .insert("node-role.kubernetes.io/gpu".into(), String::new());
        let mut ps = pools();
        for p in ["infra", "gpu"] {
            ps.push(
                serde_json::from_value(json!({"metadata": {"name": p}, "spec": {
                    "nodeSelector": {"matchLabels": {format!("node-role.kubernetes.io/{p}"): ""}}}}))
                .unwrap_or_else(|e| panic!("{e}")),
            );
        }
        assert!(matches!(
            sync_machine_config_nodes(&[n], &ps, &[]),
            Err(NodePoolError::TooManyCustomPools { count: 2, .. })
        ));
    }
}
