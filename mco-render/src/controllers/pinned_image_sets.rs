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
}
