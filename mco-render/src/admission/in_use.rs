//! Beyond upstream: the DELETE of a MachineConfig that a pool or a node still names is
//! refused. A pool names its rendered config in `spec.configuration` (the config it rolls out)
//! and `status.configuration` (the config its nodes are on); a node in its
//! `machineconfiguration.openshift.io/currentConfig` and `desiredConfig` annotations. Deleting
//! such a config leaves the node's agent unable to fetch it (`machineconfig.machineconfiguration.openshift.io
//! "rendered-..." not found`) and the node degraded.
//!
//! The render controller deletes old rendered configs itself, only those no pool and no node
//! names ([`crate::controllers::gc`]), so its deletions never meet this refusal (the webhook
//! does not review the controller's own requests either).

use crate::api::{MachineConfigPool, Node};

/// Who still names a MachineConfig, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// `pool` or `node`.
    pub kind: &'static str,
    /// The pool's or node's name.
    pub name: String,
    /// The fields naming it (`spec.configuration`, `currentConfig`, ...).
    pub fields: Vec<&'static str>,
}

/// The pools and nodes that name the MachineConfig `name`, pools first, each in name order.
pub fn users_of(name: &str, pools: &[&MachineConfigPool], nodes: &[&Node]) -> Vec<User> {
    let mut out = Vec::new();
    let mut pools: Vec<&&MachineConfigPool> = pools.iter().collect();
    pools.sort_by(|a, b| a.name().cmp(b.name()));
    for p in pools {
        let mut fields = Vec::new();
        if p.spec.configuration.name == name {
            fields.push("spec.configuration");
        }
        if p.status
            .as_ref()
            .is_some_and(|s| s.configuration.name == name)
        {
            fields.push("status.configuration");
        }
        if !fields.is_empty() {
            out.push(User {
                kind: "pool",
                name: p.name().to_string(),
                fields,
            });
        }
    }
    let mut nodes: Vec<&&Node> = nodes.iter().collect();
    nodes.sort_by(|a, b| a.name().cmp(b.name()));
    for n in nodes {
        let mut fields = Vec::new();
        if n.current_config() == name {
            fields.push("currentConfig");
        }
        if n.desired_config() == name {
            fields.push("desiredConfig");
        }
        if !fields.is_empty() {
            out.push(User {
                kind: "node",
                name: n.name().to_string(),
                fields,
            });
        }
    }
    out
}

/// Nodes named one by one in the message; more are counted.
const NODES_NAMED: usize = 5;

/// Why the DELETE of the MachineConfig `name` is refused, or `None` when nothing names it.
pub fn delete_refusal(name: &str, users: &[User]) -> Option<String> {
    if users.is_empty() {
        return None;
    }
    let describe = |u: &User| format!("{} {} ({})", u.kind, u.name, u.fields.join(", "));
    let mut parts: Vec<String> = users
        .iter()
        .filter(|u| u.kind == "pool")
        .map(describe)
        .collect();
    let nodes: Vec<&User> = users.iter().filter(|u| u.kind == "node").collect();
    parts.extend(nodes.iter().take(NODES_NAMED).map(|u| describe(u)));
    if nodes.len() > NODES_NAMED {
        parts.push(format!("{} more nodes", nodes.len() - NODES_NAMED));
    }
    Some(format!(
        "MachineConfig {name} is in use: {}. Deleting it leaves those nodes unable to fetch \
         their config (\"{name}\" not found) and degraded; the controller deletes rendered \
         configs once no pool and no node names them",
        parts.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(name: &str, spec: &str, status: Option<&str>) -> MachineConfigPool {
        let mut p = MachineConfigPool::default();
        p.metadata.name = name.into();
        p.spec.configuration.name = spec.into();
        if let Some(s) = status {
            let mut st = p.status_or_default();
            st.configuration.name = s.into();
            p.status = Some(st);
        }
        p
    }

    fn node(name: &str, current: &str, desired: &str) -> Node {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "annotations": {
                "machineconfiguration.openshift.io/currentConfig": current,
                "machineconfiguration.openshift.io/desiredConfig": desired,
            }}
        }))
        .unwrap_or_default()
    }

    #[test]
    fn pools_and_nodes_naming_the_config_are_listed() {
        let (a, b) = (
            pool("worker", "rendered-worker-2", Some("rendered-worker-1")),
            pool("master", "rendered-master-1", Some("rendered-master-1")),
        );
        let (n1, n2, n3) = (
            node("w1", "rendered-worker-1", "rendered-worker-2"),
            node("w0", "rendered-worker-1", "rendered-worker-1"),
            node("m0", "rendered-master-1", "rendered-master-1"),
        );
        let users = users_of("rendered-worker-1", &[&a, &b], &[&n1, &n2, &n3]);
        assert_eq!(
            delete_refusal("rendered-worker-1", &users).unwrap_or_default(),
            "MachineConfig rendered-worker-1 is in use: pool worker (status.configuration); \
             node w0 (currentConfig, desiredConfig); node w1 (currentConfig). Deleting it \
             leaves those nodes unable to fetch their config (\"rendered-worker-1\" not found) \
             and degraded; the controller deletes rendered configs once no pool and no node \
             names them"
        );
        assert!(users_of("rendered-worker-0", &[&a, &b], &[&n1, &n2, &n3]).is_empty());
        assert_eq!(delete_refusal("rendered-worker-0", &[]), None);
    }

    #[test]
    fn many_nodes_are_counted() {
        let nodes: Vec<Node> = (0..8).map(|i| node(&format!("w{i}"), "r", "r")).collect();
        let refs: Vec<&Node> = nodes.iter().collect();
        let msg = delete_refusal("r", &users_of("r", &[], &refs)).unwrap_or_default();
        assert!(
            msg.contains("node w4 (currentConfig, desiredConfig); 3 more nodes."),
            "{msg}"
        );
        assert!(!msg.contains("w5"));
    }

    proptest::proptest! {
        /// The controller's garbage collection deletes only configs no pool and no node
        /// names: never one this refusal would stop.
        #[test]
        fn garbage_collection_never_deletes_a_config_in_use(
            spec in 0usize..8, status in 0usize..8,
            nodes in proptest::collection::vec((0usize..8, 0usize..8), 0..6),
            keep in 0usize..3,
        ) {
            use crate::api::{MachineConfig, OwnerReference};
            use crate::controllers::gc::garbage_writes;
            use crate::controllers::Write;
            let name = |i: usize| format!("rendered-worker-{i}");
            let configs: Vec<MachineConfig> = (0..8)
                .map(|i| {
                    let mut mc = MachineConfig::default();
                    mc.metadata.name = name(i);
                    mc.metadata.creation_timestamp = Some(format!("2024-01-01T00:00:0{i}Z"));
                    mc.metadata.owner_references.push(OwnerReference {
                        kind: "MachineConfigPool".into(),
                        name: "worker".into(),
                        controller: Some(true),
                        ..Default::default()
                    });
                    mc
                })
                .collect();
            let pools = [pool("worker", &name(spec), Some(&name(status)))];
            let nodes: Vec<Node> = nodes
                .iter()
                .enumerate()
                .map(|(i, (c, d))| node(&format!("w{i}"), &name(*c), &name(*d)))
                .collect();
            let pool_refs: Vec<&MachineConfigPool> = pools.iter().collect();
            let node_refs: Vec<&Node> = nodes.iter().collect();
            for w in garbage_writes(&configs, &pools, &nodes, keep) {
                if let Write::DeleteMachineConfig(n) = w {
                    let users = users_of(&n, &pool_refs, &node_refs);
                    proptest::prop_assert_eq!(delete_refusal(&n, &users), None);
                }
            }
        }
    }
}
