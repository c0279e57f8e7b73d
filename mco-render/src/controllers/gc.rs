//! Garbage collection of rendered MachineConfigs (this project's addition; upstream keeps
//! them all).
//!
//! A rendered config is in use when a pool names it (spec or status) or a node names it
//! (current or desired config). In-use configs are never deleted. Of the rest, the `keep`
//! newest per owning pool are kept.

use super::Write;
use crate::api::node::Node;
use crate::api::{MachineConfig, MachineConfigPool};
use std::collections::{BTreeMap, BTreeSet};

/// Whether a MachineConfig is one the render controller wrote.
pub fn is_rendered(mc: &MachineConfig) -> bool {
    mc.name().starts_with("rendered-")
        && mc
            .metadata
            .owner_references
            .iter()
            .any(|o| o.kind == "MachineConfigPool" && o.controller == Some(true))
}

fn owner(mc: &MachineConfig) -> &str {
    mc.metadata
        .owner_references
        .iter()
        .find(|o| o.kind == "MachineConfigPool")
        .map(|o| o.name.as_str())
        .unwrap_or("")
}

fn created(mc: &MachineConfig) -> &str {
    mc.metadata.creation_timestamp.as_deref().unwrap_or("")
}

/// Every config name a pool or node refers to.
pub fn in_use(pools: &[MachineConfigPool], nodes: &[Node]) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for p in pools {
        used.insert(p.spec.configuration.name.clone());
        used.insert(p.status_or_default().configuration.name);
    }
    for n in nodes {
        used.insert(n.current_config().to_string());
        used.insert(n.desired_config().to_string());
    }
    used.remove("");
    used
}

/// The deletions of the unused rendered configs the `keep` newest per pool leave over, by
/// name, sorted.
pub fn garbage_writes(
    configs: &[MachineConfig],
    pools: &[MachineConfigPool],
    nodes: &[Node],
    keep: usize,
) -> Vec<Write> {
    collect_garbage(configs, pools, nodes, keep)
        .into_iter()
        .map(Write::DeleteMachineConfig)
        .collect()
}

/// The names of the unused rendered configs to delete (see [`garbage_writes`]).
pub fn collect_garbage(
    configs: &[MachineConfig],
    pools: &[MachineConfigPool],
    nodes: &[Node],
    keep: usize,
) -> Vec<String> {
    let used = in_use(pools, nodes);
    let mut by_owner: BTreeMap<&str, Vec<&MachineConfig>> = BTreeMap::new();
    for mc in configs.iter().filter(|m| is_rendered(m)) {
        if !used.contains(mc.name()) {
            by_owner.entry(owner(mc)).or_default().push(mc);
        }
    }
    let mut out = Vec::new();
    for (_, mut unused) in by_owner {
        // Newest first; equal times by name, descending.
        unused.sort_by(|a, b| {
            created(b)
                .cmp(created(a))
                .then_with(|| b.name().cmp(a.name()))
        });
        out.extend(unused.into_iter().skip(keep).map(|m| m.name().to_string()));
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::node::testing::{node, with_configs};
    use crate::api::node::STATE_DONE;
    use crate::api::OwnerReference;
    use proptest::prelude::*;

    fn rendered(pool: &str, i: usize) -> MachineConfig {
        let mut mc = MachineConfig::default();
        mc.metadata.name = format!("rendered-{pool}-{i:04}");
        mc.metadata.owner_references.push(OwnerReference {
            kind: "MachineConfigPool".into(),
            name: pool.into(),
            controller: Some(true),
            ..Default::default()
        });
        mc.metadata.creation_timestamp =
            Some(format!("2024-01-01T00:{:02}:{:02}Z", i / 60, i % 60));
        mc
    }

    fn pool(name: &str, spec: &str) -> MachineConfigPool {
        let mut p = MachineConfigPool::default();
        p.metadata.name = name.into();
        p.spec.configuration.name = spec.into();
        p
    }

    #[test]
    fn keeps_newest_and_in_use() {
        let configs: Vec<MachineConfig> = (0..6).map(|i| rendered("worker", i)).collect();
        let mut user = MachineConfig::default();
        user.metadata.name = "99-worker-ssh".into();
        let mut all = configs.clone();
        all.push(user);
        let pools = [pool("worker", "rendered-worker-0005")];
        let nodes = [with_configs(
            node("w", &[]),
            "rendered-worker-0000",
            "rendered-worker-0005",
            STATE_DONE,
        )];
        let gone = collect_garbage(&all, &pools, &nodes, 2);
        // In use: 0000 (node), 0005 (pool). Unused: 1..=4, keep 4 and 3.
        assert_eq!(gone, ["rendered-worker-0001", "rendered-worker-0002"]);
        assert!(collect_garbage(&all, &pools, &nodes, 10).is_empty());
    }

    proptest! {
        #[test]
        fn never_deletes_in_use(
            n in 1usize..20,
            keep in 0usize..4,
            refs in proptest::collection::vec((0usize..2, 0usize..20), 0..10),
        ) {
            let names = ["worker", "infra"];
            let configs: Vec<MachineConfig> = names
                .iter()
                .flat_map(|p| (0..n).map(move |i| rendered(p, i)))
                .collect();
            let mut pools = Vec::new();
            let mut nodes = Vec::new();
            for (k, (p, i)) in refs.iter().enumerate() {
                let name = format!("rendered-{}-{:04}", names[*p], i);
                if k % 2 == 0 {
                    pools.push(pool(names[*p], &name));
                } else {
                    nodes.push(with_configs(node("x", &[]), &name, "", STATE_DONE));
                }
            }
            let used = in_use(&pools, &nodes);
            let gone = collect_garbage(&configs, &pools, &nodes, keep);
            for g in &gone {
                prop_assert!(!used.contains(g));
            }
            // Per pool, the unused configs left number min(keep, unused).
            for p in names {
                let unused = configs.iter().filter(|m| owner(m) == p && !used.contains(m.name())).count();
                let deleted = gone.iter().filter(|g| g.starts_with(&format!("rendered-{p}-"))).count();
                prop_assert_eq!(unused - deleted, unused.min(keep));
            }
        }
    }
}
