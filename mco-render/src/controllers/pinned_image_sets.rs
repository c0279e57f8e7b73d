//! Which PinnedImageSets a pool names: upstream's pinned-image-set controller
//! (`pkg/controller/pinnedimageset`) fills a pool's `spec.pinnedImageSets` with the sets whose
//! labels its `machineConfigSelector` matches (the pool's MachineConfigs' role label), sorted
//! by name, and reports a failure as the pool's `PinnedImageSetsDegraded` condition.

use crate::api::condition::Condition;
use crate::api::selector::SelectorError;
use crate::api::{MachineConfigPool, PinnedImageSet, PinnedImageSetRef};

/// The pool condition reporting that the pool's sets could not be worked out.
pub const POOL_PINNED_IMAGE_SETS_DEGRADED: &str = "PinnedImageSetsDegraded";

/// The `spec.pinnedImageSets` the controller wants for `pool`: `None` leaves the spec as it is
/// (a pool whose `machineConfigSelector` is the empty selector `{}`, which upstream skips); an
/// absent selector selects nothing (no sets).
pub fn pool_pinned_image_sets(
    pool: &MachineConfigPool,
    sets: &[PinnedImageSet],
) -> Result<Option<Vec<PinnedImageSetRef>>, SelectorError> {
    let selector = match &pool.spec.machine_config_selector {
        Some(s) if s.is_empty() => return Ok(None),
        Some(s) => s.compile()?,
        None => return Ok(Some(Vec::new())),
    };
    let mut refs: Vec<PinnedImageSetRef> = sets
        .iter()
        .filter(|s| selector.matches(&s.metadata.labels))
        .map(|s| PinnedImageSetRef {
            name: s.name().to_string(),
        })
        .collect();
    refs.sort();
    Ok(Some(refs))
}

/// The pool's `PinnedImageSetsDegraded` condition after a sync (`Err`: upstream's message).
pub fn degraded_condition(pool: &str, result: Result<(), &str>) -> Condition {
    match result {
        Ok(()) => Condition::of(POOL_PINNED_IMAGE_SETS_DEGRADED, false),
        Err(e) => Condition {
            message: Some(format!(
                "Failed to populate pinned image sets for pool {pool}: {e}"
            )),
            ..Condition::of(POOL_PINNED_IMAGE_SETS_DEGRADED, true)
        },
    }
}

/// The `PinnedImageSetsDegraded` condition to merge into a pool's status after a sync, with
/// `now` as its transition time: a failure sets it True; success sets it False unless the
/// pool's `NodeDegraded` is True (then it is left as it is: `None`), as upstream's
/// `syncMachineConfigPool` does.
pub fn condition_after_sync(
    pool: &MachineConfigPool,
    result: Result<(), &str>,
    now: &str,
) -> Option<Condition> {
    let node_degraded = pool
        .status
        .as_ref()
        .and_then(|s| s.condition(crate::controllers::pool_status::NODE_DEGRADED))
        .is_some_and(Condition::is_true);
    if result.is_ok() && node_degraded {
        return None;
    }
    Some(Condition {
        last_transition_time: Some(now.to_string()),
        ..degraded_condition(pool.name(), result)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::LabelSelector;

    fn set(name: &str, role: &str) -> PinnedImageSet {
        let mut s = PinnedImageSet::default();
        s.metadata.name = name.into();
        s.metadata
            .labels
            .insert("machineconfiguration.openshift.io/role".into(), role.into());
        s
    }

    fn pool(selector: Option<LabelSelector>) -> MachineConfigPool {
        let mut p = MachineConfigPool::default();
        p.metadata.name = "worker".into();
        p.spec.machine_config_selector = selector;
        p
    }

    #[test]
    fn the_role_label_picks_the_sets_sorted_by_name() {
        let sets = [set("z", "worker"), set("m", "master"), set("a", "worker")];
        let mut sel = LabelSelector::default();
        sel.match_labels.insert(
            "machineconfiguration.openshift.io/role".into(),
            "worker".into(),
        );
        let refs = pool_pinned_image_sets(&pool(Some(sel)), &sets).unwrap();
        let names: Option<Vec<&str>> = refs
            .as_ref()
            .map(|r| r.iter().map(|r| r.name.as_str()).collect());
        assert_eq!(names, Some(vec!["a", "z"]));
        assert_eq!(
            pool_pinned_image_sets(&pool(Some(LabelSelector::default())), &sets),
            Ok(None)
        );
        assert_eq!(pool_pinned_image_sets(&pool(None), &sets), Ok(Some(vec![])));
    }

    #[test]
    fn failures_degrade_the_pool_with_upstreams_message() {
        let c = degraded_condition("worker", Err("boom"));
        assert!(c.is_true());
        assert_eq!(
            c.message(),
            "Failed to populate pinned image sets for pool worker: boom"
        );
        assert_eq!(degraded_condition("worker", Ok(())).status, "False");
    }

    #[test]
    fn success_leaves_the_condition_of_a_node_degraded_pool() {
        let mut p = pool(None);
        let now = "2026-01-01T00:00:00Z";
        let ok = condition_after_sync(&p, Ok(()), now).unwrap();
        assert_eq!(
            (ok.status.as_str(), ok.last_transition_time()),
            ("False", now)
        );
        let mut status = crate::api::MachineConfigPoolStatus::default();
        status.set_condition(Condition::of("NodeDegraded", true));
        p.status = Some(status);
        assert_eq!(condition_after_sync(&p, Ok(()), now), None);
        assert!(condition_after_sync(&p, Err("boom"), now)
            .unwrap()
            .is_true());
    }
}
