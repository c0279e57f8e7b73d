//! Which pool a node belongs to: master over a custom pool, a custom pool over worker.

use crate::api::node::Node;
use crate::api::selector::SelectorError;
use crate::api::MachineConfigPool;

/// The master pool's name.
pub const MASTER: &str = "master";
/// The worker pool's name.
pub const WORKER: &str = "worker";

/// Why a node's pool cannot be decided.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodePoolError {
    /// A pool's node selector does not compile.
    #[error("invalid label selector: {0}")]
    InvalidSelector(#[from] SelectorError),
    /// The node matches more than one custom pool.
    #[error("node {node} belongs to {count} custom roles, cannot proceed with this Node")]
    TooManyCustomPools {
        /// The node.
        node: String,
        /// How many custom pools match.
        count: usize,
    },
}

/// The pools a node belongs to, primary first (master or custom, then worker when it also
/// matches). Empty when the node is unmanaged (Windows, or no pool selects it). A pool whose
/// node selector is absent or empty selects no node.
pub fn pools_for_node<'a>(
    node: &Node,
    pools: &'a [MachineConfigPool],
) -> Result<Vec<&'a MachineConfigPool>, NodePoolError> {
    if node.is_windows() {
        return Ok(Vec::new());
    }
    let (master, worker, custom) = matching(node, pools)?;
    let mut out = Vec::new();
    match custom.len() {
        0 => match (master, worker) {
            (Some(m), _) => out.push(m),
            (None, Some(w)) => out.push(w),
            (None, None) => {}
        },
        1 => {
            out.push(master.unwrap_or(custom[0]));
            out.extend(worker);
        }
        count => {
            return Err(NodePoolError::TooManyCustomPools {
                node: node.name().to_string(),
                count,
            })
        }
    }
    Ok(out)
}

/// Upstream's pool alert (`mcc_pool_alert`) for a node: `Some(true)` when it matches the
/// master pool and one custom pool, so it follows master and the custom pool's config never
/// reaches it; `Some(false)` for any other node a pool takes; `None` when no pool takes it
/// (Windows, no selector matches) or its pools cannot be decided.
pub fn master_overrides_custom(node: &Node, pools: &[MachineConfigPool]) -> Option<bool> {
    if node.is_windows() {
        return None;
    }
    match matching(node, pools).ok()? {
        (None, None, c) if c.is_empty() => None,
        (_, _, c) if c.len() > 1 => None,
        (master, _, c) => Some(master.is_some() && c.len() == 1),
    }
}

/// The master pool, the worker pool and the custom pools that match a node.
type Matching<'a> = (
    Option<&'a MachineConfigPool>,
    Option<&'a MachineConfigPool>,
    Vec<&'a MachineConfigPool>,
);

/// The pools whose selectors match the node, by kind.
fn matching<'a>(
    node: &Node,
    pools: &'a [MachineConfigPool],
) -> Result<Matching<'a>, NodePoolError> {
    let (mut master, mut worker, mut custom) = (None, None, Vec::new());
    for p in pools {
        let sel = match &p.spec.node_selector {
            None => continue,
            Some(s) if s.is_empty() => continue,
            Some(s) => s.compile()?,
        };
        if !sel.matches(&node.metadata.labels) {
            continue;
        }
        match p.name() {
            MASTER => master = Some(p),
            WORKER => worker = Some(p),
            _ => custom.push(p),
        }
    }
    Ok((master, worker, custom))
}

/// The pool whose config the node follows, if any.
pub fn primary_pool<'a>(
    node: &Node,
    pools: &'a [MachineConfigPool],
) -> Result<Option<&'a MachineConfigPool>, NodePoolError> {
    Ok(pools_for_node(node, pools)?.into_iter().next())
}

/// The nodes whose primary pool is `pool`. Nodes whose pool cannot be decided are skipped
/// (upstream logs them); they are returned second with their errors.
pub fn nodes_for_pool<'a>(
    pool: &MachineConfigPool,
    pools: &[MachineConfigPool],
    nodes: &'a [Node],
) -> (Vec<&'a Node>, Vec<(&'a Node, NodePoolError)>) {
    let mut mine = Vec::new();
    let mut errors = Vec::new();
    for n in nodes {
        match primary_pool(n, pools) {
            Ok(Some(p)) if p.name() == pool.name() => mine.push(n),
            Ok(_) => {}
            Err(e) => errors.push((n, e)),
        }
    }
    (mine, errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::node::testing::node;
    use crate::api::LabelSelector;

    fn pool(name: &str, label: &str) -> MachineConfigPool {
        let mut p = MachineConfigPool::default();
        p.metadata.name = name.into();
        let mut s = LabelSelector::default();
        s.match_labels.insert(label.into(), String::new());
        p.spec.node_selector = Some(s);
        p
    }

    fn pools() -> Vec<MachineConfigPool> {
        vec![
            pool("master", "node-role.kubernetes.io/master"),
            pool("worker", "node-role.kubernetes.io/worker"),
            pool("infra", "node-role.kubernetes.io/infra"),
            pool("gpu", "node-role.kubernetes.io/gpu"),
        ]
    }

    fn names(v: &[&MachineConfigPool]) -> Vec<String> {
        v.iter().map(|p| p.name().to_string()).collect()
    }

    #[test]
    fn priorities() {
        let ps = pools();
        let m = "node-role.kubernetes.io/master";
        let w = "node-role.kubernetes.io/worker";
        let i = "node-role.kubernetes.io/infra";
        let g = "node-role.kubernetes.io/gpu";
        let r = |l: &[(&str, &str)]| names(&pools_for_node(&node("n", l), &ps).unwrap());
        assert_eq!(r(&[(w, "")]), ["worker"]);
        assert_eq!(r(&[(w, ""), (i, "")]), ["infra", "worker"]);
        assert_eq!(r(&[(m, ""), (i, "")]), ["master"]);
        assert_eq!(r(&[(m, ""), (w, "")]), ["master"]);
        assert_eq!(r(&[(m, ""), (w, ""), (i, "")]), ["master", "worker"]);
        assert!(r(&[]).is_empty());
        let err = pools_for_node(&node("n", &[(i, ""), (g, "")]), &ps).unwrap_err();
        assert_eq!(
            err.to_string(),
            "node n belongs to 2 custom roles, cannot proceed with this Node"
        );
        let win = node("n", &[(w, ""), ("kubernetes.io/os", "windows")]);
        assert!(pools_for_node(&win, &ps).unwrap().is_empty());
    }

    #[test]
    fn the_pool_alert_is_master_over_a_custom_pool() {
        let ps = pools();
        let m = "node-role.kubernetes.io/master";
        let w = "node-role.kubernetes.io/worker";
        let i = "node-role.kubernetes.io/infra";
        let g = "node-role.kubernetes.io/gpu";
        let a = |l: &[(&str, &str)]| master_overrides_custom(&node("n", l), &ps);
        assert_eq!(a(&[(m, ""), (i, "")]), Some(true));
        assert_eq!(a(&[(m, ""), (w, ""), (i, "")]), Some(true));
        assert_eq!(a(&[(m, ""), (w, "")]), Some(false));
        assert_eq!(a(&[(w, ""), (i, "")]), Some(false));
        assert_eq!(a(&[(m, "")]), Some(false));
        assert_eq!(a(&[(w, "")]), Some(false));
        assert_eq!(a(&[]), None);
        assert_eq!(a(&[(m, ""), (i, ""), (g, "")]), None);
        assert_eq!(
            a(&[(m, ""), (i, ""), ("kubernetes.io/os", "windows")]),
            None
        );
    }

    #[test]
    fn empty_selector_matches_nothing() {
        let mut p = pool("x", "a");
        p.spec.node_selector = Some(LabelSelector::default());
        assert!(pools_for_node(&node("n", &[("a", "")]), &[p])
            .unwrap()
            .is_empty());
    }

    #[test]
    fn nodes_for_pool_splits() {
        let ps = pools();
        let nodes = vec![
            node("w", &[("node-role.kubernetes.io/worker", "")]),
            node(
                "i",
                &[
                    ("node-role.kubernetes.io/worker", ""),
                    ("node-role.kubernetes.io/infra", ""),
                ],
            ),
            node(
                "bad",
                &[
                    ("node-role.kubernetes.io/infra", ""),
                    ("node-role.kubernetes.io/gpu", ""),
                ],
            ),
        ];
        let (mine, errs) = nodes_for_pool(&ps[1], &ps, &nodes);
        assert_eq!(mine.len(), 1);
        assert_eq!(mine[0].name(), "w");
        assert_eq!(errs.len(), 1);
    }
}
