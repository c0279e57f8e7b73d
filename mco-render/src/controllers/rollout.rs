//! Rollouts: how many nodes may update at once, which nodes are next, in which order.

use crate::api::node::{Node, ZONE_LABEL};
use crate::api::MachineConfigPool;
use crate::gocompat::quote::go_quote;
use serde_json::Value;
use std::cmp::Ordering;

/// Why a pool's `maxUnavailable` is unusable. The text is upstream's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MaxUnavailableError {
    /// A string that does not end in `%`.
    #[error("\"maxUnavailable\" invalid value for IntOrString: invalid type: string is not a percentage")]
    NotPercent,
    /// A percentage whose number does not parse.
    #[error("\"maxUnavailable\" invalid value for IntOrString: invalid value {}: strconv.Atoi: parsing {}: {why}", go_quote(.value), go_quote(.number))]
    BadNumber {
        /// The whole string.
        value: String,
        /// The part before `%`.
        number: String,
        /// `invalid syntax` or `value out of range`.
        why: &'static str,
    },
    /// Neither an integer nor a string.
    #[error("\"maxUnavailable\" invalid value for IntOrString: invalid type: neither int nor percentage")]
    WrongType,
}

fn go_atoi(s: &str) -> Result<i64, &'static str> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("invalid syntax");
    }
    s.parse::<i64>().map_err(|_| "value out of range")
}

/// The pool's `maxUnavailable` scaled to `total` nodes: an integer as is, a percentage rounded
/// down; absent means 1, and 0 becomes 1. (Like upstream, a negative value is kept, which
/// stops the rollout.)
pub fn max_unavailable(pool: &MachineConfigPool, total: usize) -> Result<i64, MaxUnavailableError> {
    let value = match &pool.spec.max_unavailable {
        None | Some(Value::Null) => 1,
        Some(Value::Number(n)) => n.as_i64().ok_or(MaxUnavailableError::WrongType)?,
        Some(Value::String(s)) => {
            let number = s.strip_suffix('%').ok_or(MaxUnavailableError::NotPercent)?;
            let pct = go_atoi(number).map_err(|why| MaxUnavailableError::BadNumber {
                value: s.clone(),
                number: number.to_string(),
                why,
            })?;
            ((pct as f64) * (total as f64) / 100.0).floor() as i64
        }
        Some(_) => return Err(MaxUnavailableError::WrongType),
    };
    Ok(if value == 0 { 1 } else { value })
}

/// Rollout ordering: nodes with a zone label first, by zone then age (oldest first); nodes
/// without one last, oldest first. Ties keep name order so the result is deterministic.
pub fn rollout_order(a: &Node, b: &Node) -> Ordering {
    let za = a.metadata.labels.get(ZONE_LABEL);
    let zb = b.metadata.labels.get(ZONE_LABEL);
    let age = || {
        a.metadata
            .creation_timestamp
            .cmp(&b.metadata.creation_timestamp)
            .then_with(|| a.name().cmp(b.name()))
    };
    match (za, zb) {
        (Some(x), Some(y)) => x.cmp(y).then_with(age),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => age(),
    }
}

/// What the node controller does for one pool.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RolloutPlan {
    /// The scaled maxUnavailable.
    pub max_unavailable: i64,
    /// Nodes counted as unavailable now.
    pub unavailable: Vec<String>,
    /// Ready nodes not yet targeting the pool's config.
    pub candidates: Vec<String>,
    /// How many candidates may start now.
    pub capacity: usize,
    /// Nodes whose desiredConfig annotation is set to `target` now, in rollout order.
    pub update: Vec<String>,
    /// The config they are pointed at.
    pub target: String,
    /// The image they are pointed at (layered pools); `None` removes `desiredImage`.
    pub image: Option<String>,
}

/// The reason of the Event recorded on the pool when nodes are targeted.
pub const SET_DESIRED_CONFIG: &str = "SetDesiredConfig";
/// The reason when nodes of a layered pool are targeted at a config and an image.
pub const SET_DESIRED_CONFIG_AND_OS_IMAGE: &str = "SetDesiredConfigAndOSImage";

impl RolloutPlan {
    /// The note of the `SetDesiredConfig` Event recorded on the pool once every node of
    /// `update` is targeted, in upstream's words: `Targeted node <name> to config <target>`
    /// for one node, `Set target for <n> nodes to config <target>` for more. `None` when
    /// no node is targeted (upstream records nothing without candidates).
    pub fn set_desired_config_note(&self) -> Option<String> {
        if let Some(image) = &self.image {
            let what = format!("MachineConfig: {} / Image: {image}", self.target);
            return match self.update.as_slice() {
                [] => None,
                [node] => Some(format!("Targeted node {node} to {what}")),
                nodes => Some(format!("Set target for {} nodes to {what}", nodes.len())),
            };
        }
        match self.update.as_slice() {
            [] => None,
            [node] => Some(format!("Targeted node {node} to config {}", self.target)),
            nodes => Some(format!(
                "Set target for {} nodes to config {}",
                nodes.len(),
                self.target
            )),
        }
    }
}

/// Plans the next step of a pool's rollout. `nodes` are the pool's nodes; `defer` names a node
/// to update last (upstream defers the node running the operator in the master pool).
pub fn plan_rollout(
    pool: &MachineConfigPool,
    nodes: &[&Node],
    defer: Option<&str>,
) -> Result<RolloutPlan, MaxUnavailableError> {
    plan_rollout_in(pool, nodes, defer, &Scope::pool(pool))
}

/// What a rollout step may do beyond upstream's rule: which config, which nodes may start,
/// and nodes that count as unavailable although their daemon is done (a health gate).
#[derive(Debug, Clone, Default)]
pub struct Scope<'a> {
    /// The config nodes are pointed at.
    pub target: &'a str,
    /// Only these nodes may start (`None`: any node).
    pub allow: Option<&'a std::collections::BTreeSet<String>>,
    /// Nodes to count as unavailable on top of upstream's count (by name; counted once).
    pub also_unavailable: &'a [String],
    /// The image nodes are pointed at with the config (layered pools).
    pub image: Option<&'a str>,
}

impl<'a> Scope<'a> {
    /// Upstream's rule: the pool's config, any node.
    pub fn pool(pool: &'a MachineConfigPool) -> Self {
        Scope {
            target: &pool.spec.configuration.name,
            ..Scope::default()
        }
    }
}

/// [`plan_rollout`] within a [`Scope`].
pub fn plan_rollout_in(
    pool: &MachineConfigPool,
    nodes: &[&Node],
    defer: Option<&str>,
    scope: &Scope<'_>,
) -> Result<RolloutPlan, MaxUnavailableError> {
    let target = scope.target.to_string();
    let max = max_unavailable(pool, nodes.len())?;
    let unavailable: Vec<&Node> = nodes
        .iter()
        .copied()
        .filter(|n| n.is_unavailable() || scope.also_unavailable.iter().any(|u| u == n.name()))
        .collect();
    let mut plan = RolloutPlan {
        max_unavailable: max,
        unavailable: unavailable.iter().map(|n| n.name().to_string()).collect(),
        target: target.clone(),
        image: scope.image.map(str::to_string),
        ..Default::default()
    };
    if target.is_empty() || pool.spec.paused {
        return Ok(plan);
    }
    let used = unavailable.len() as i64;
    if used >= max {
        return Ok(plan);
    }
    let mut capacity = max - used;
    let mut failing_here = 0i64;
    let mut candidates: Vec<&Node> = Vec::new();
    for n in nodes.iter().copied() {
        let targets_pool = n.desired_config() == target;
        // A layered pool's node is targeted when it has the config and the image; any
        // other pool's when it has the config and no image (else it rolls back).
        let image_targeted = match scope.image {
            Some(image) => n.annotation(crate::api::node::DESIRED_IMAGE) == Some(image),
            None => !n
                .metadata
                .annotations
                .contains_key(crate::api::node::DESIRED_IMAGE),
        };
        if targets_pool && image_targeted {
            if n.is_mcd_failing() {
                failing_here += 1;
            }
            continue;
        }
        if !n.is_ready() {
            continue;
        }
        if scope.allow.is_some_and(|a| !a.contains(n.name())) {
            continue;
        }
        candidates.push(n);
    }
    plan.candidates = candidates.iter().map(|n| n.name().to_string()).collect();
    if failing_here >= capacity {
        return Ok(plan);
    }
    capacity -= failing_here;
    let capacity = usize::try_from(capacity).unwrap_or(0);
    plan.capacity = capacity;
    if let Some(d) = defer {
        if candidates.len() > 1 {
            candidates.retain(|n| n.name() != d);
        }
    }
    if capacity < candidates.len() {
        candidates.sort_by(|a, b| rollout_order(a, b));
        candidates.truncate(capacity);
    }
    plan.update = candidates.iter().map(|n| n.name().to_string()).collect();
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::node::testing::{node, with_configs};
    use crate::api::node::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn pool(target: &str, max: Option<Value>) -> MachineConfigPool {
        let mut p = MachineConfigPool::default();
        p.metadata.name = "worker".into();
        p.spec.configuration.name = target.into();
        p.spec.max_unavailable = max;
        p
    }

    #[test]
    fn set_desired_config_notes_are_upstreams() {
        let mut plan = RolloutPlan {
            target: "rendered-worker-1".into(),
            ..RolloutPlan::default()
        };
        assert_eq!(plan.set_desired_config_note(), None);
        plan.update = vec!["worker-3".into()];
        assert_eq!(
            plan.set_desired_config_note().as_deref(),
            Some("Targeted node worker-3 to config rendered-worker-1")
        );
        plan.update.push("worker-4".into());
        assert_eq!(
            plan.set_desired_config_note().as_deref(),
            Some("Set target for 2 nodes to config rendered-worker-1")
        );
    }

    #[test]
    fn max_unavailable_forms() {
        let m = |v: Option<Value>, t| max_unavailable(&pool("r", v), t);
        assert_eq!(m(None, 10), Ok(1));
        assert_eq!(m(Some(json!(3)), 10), Ok(3));
        assert_eq!(m(Some(json!(0)), 10), Ok(1));
        assert_eq!(m(Some(json!("25%")), 10), Ok(2));
        assert_eq!(m(Some(json!("5%")), 10), Ok(1));
        assert_eq!(m(Some(json!("100%")), 53), Ok(53));
        assert_eq!(
            m(Some(json!("3")), 10).unwrap_err().to_string(),
            "\"maxUnavailable\" invalid value for IntOrString: invalid type: string is not a percentage"
        );
        assert_eq!(
            m(Some(json!("x%")), 10).unwrap_err().to_string(),
            "\"maxUnavailable\" invalid value for IntOrString: invalid value \"x%\": strconv.Atoi: parsing \"x\": invalid syntax"
        );
    }

    fn at(mut n: Node, zone: Option<&str>, ts: &str) -> Node {
        if let Some(z) = zone {
            n.metadata.labels.insert(ZONE_LABEL.into(), z.into());
        }
        n.metadata.creation_timestamp = Some(ts.into());
        n
    }

    #[test]
    fn zone_then_age_then_unzoned() {
        let nodes = [
            at(
                with_configs(node("a", &[]), "r1", "r1", STATE_DONE),
                None,
                "2020-01-01T00:00:00Z",
            ),
            at(
                with_configs(node("b", &[]), "r1", "r1", STATE_DONE),
                Some("z2"),
                "2020-01-01T00:00:00Z",
            ),
            at(
                with_configs(node("c", &[]), "r1", "r1", STATE_DONE),
                Some("z1"),
                "2022-01-01T00:00:00Z",
            ),
            at(
                with_configs(node("d", &[]), "r1", "r1", STATE_DONE),
                Some("z1"),
                "2021-01-01T00:00:00Z",
            ),
            at(
                with_configs(node("e", &[]), "r1", "r1", STATE_DONE),
                None,
                "2019-01-01T00:00:00Z",
            ),
        ];
        let refs: Vec<&Node> = nodes.iter().collect();
        let plan = plan_rollout(&pool("r2", Some(json!(4))), &refs, None).unwrap();
        assert_eq!(plan.update, ["d", "c", "b", "e"]);
        let plan = plan_rollout(&pool("r2", Some(json!(5))), &refs, None).unwrap();
        // Enough capacity: input order, no sorting needed.
        assert_eq!(plan.update.len(), 5);
    }

    #[test]
    fn capacity_accounts_for_unavailable_and_failing() {
        let nodes = [
            with_configs(node("a", &[]), "r1", "r2", STATE_WORKING),
            with_configs(node("b", &[]), "r1", "r2", STATE_DEGRADED),
            with_configs(node("c", &[]), "r1", "r1", STATE_DONE),
            with_configs(node("d", &[]), "r1", "r1", STATE_DONE),
            with_configs(node("e", &[]), "r1", "r1", STATE_DONE),
        ];
        let refs: Vec<&Node> = nodes.iter().collect();
        let plan = plan_rollout(&pool("r2", Some(json!(3))), &refs, None).unwrap();
        assert_eq!(plan.unavailable, ["a"]);
        assert_eq!(plan.capacity, 1);
        assert_eq!(plan.update, ["c"]);
        let mut paused = pool("r2", Some(json!(3)));
        paused.spec.paused = true;
        assert!(plan_rollout(&paused, &refs, None)
            .unwrap()
            .update
            .is_empty());
        assert!(plan_rollout(&pool("", None), &refs, None)
            .unwrap()
            .update
            .is_empty());
    }

    #[test]
    fn defers_named_node() {
        let nodes = [
            with_configs(node("m0", &[]), "r1", "r1", STATE_DONE),
            with_configs(node("m1", &[]), "r1", "r1", STATE_DONE),
        ];
        let refs: Vec<&Node> = nodes.iter().collect();
        let plan = plan_rollout(&pool("r2", None), &refs, Some("m0")).unwrap();
        assert_eq!(plan.update, ["m1"]);
    }

    /// A node in one of the states a cluster can hold.
    fn arb_node(i: usize) -> impl Strategy<Value = Node> {
        (0u8..3, 0u8..3, 0u8..4, any::<bool>(), any::<bool>(), 0u8..4).prop_map(
            move |(cur, des, st, ready, cordon, zone)| {
                let cfg = |k: u8| format!("r{k}");
                let state = [
                    STATE_DONE,
                    STATE_WORKING,
                    STATE_DEGRADED,
                    STATE_UNRECONCILABLE,
                ][st as usize];
                let mut n =
                    with_configs(node(&format!("n{i:02}"), &[]), &cfg(cur), &cfg(des), state);
                if !ready {
                    n.status.conditions[0].status = "False".into();
                }
                n.spec.unschedulable = cordon;
                if zone > 0 {
                    n.metadata
                        .labels
                        .insert(ZONE_LABEL.into(), format!("z{zone}"));
                }
                n
            },
        )
    }

    fn arb_nodes() -> impl Strategy<Value = Vec<Node>> {
        (1usize..30).prop_flat_map(|len| (0..len).map(arb_node).collect::<Vec<_>>())
    }

    /// What an agent does with a targeted node: starts working on it.
    fn apply(nodes: &mut [Node], plan: &RolloutPlan) {
        for n in nodes.iter_mut() {
            if plan.update.iter().any(|u| u == n.name()) {
                n.metadata
                    .annotations
                    .insert(DESIRED_CONFIG.into(), plan.target.clone());
                n.metadata
                    .annotations
                    .insert(STATE.into(), STATE_WORKING.into());
            }
        }
    }

    proptest! {
        #[test]
        fn never_exceeds_max_unavailable(mut nodes in arb_nodes(), max in prop_oneof![
            (0i64..6).prop_map(|v| json!(v)),
            (0i64..101).prop_map(|v| json!(format!("{v}%"))),
        ]) {
            let p = pool("r2", Some(max));
            let refs: Vec<&Node> = nodes.iter().collect();
            let plan = plan_rollout(&p, &refs, None).unwrap();
            let before = plan.unavailable.len() as i64;
            prop_assert!(plan.update.len() <= plan.capacity);
            apply(&mut nodes, &plan);
            let after = nodes.iter().filter(|n| n.is_unavailable()).count() as i64;
            if !plan.update.is_empty() {
                prop_assert!(after <= plan.max_unavailable, "after={after} max={}", plan.max_unavailable);
            } else {
                prop_assert_eq!(after, before);
            }
            // Every updated node was a ready candidate not yet on the target.
            for u in &plan.update {
                prop_assert!(plan.candidates.contains(u));
            }
        }
    }
}
