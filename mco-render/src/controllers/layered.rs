//! The node controller's view of a layered pool (upstream `pkg/controller/node`:
//! `getConfigAndBuild`, `canLayeredContinue`, `isLayeredPoolBuilding`, and the
//! `ImageBuildDegraded` handling of `calculateStatus` and the build reconciler's
//! `updateImageBuildDegradedCondition`): whether a pool is layered, the build its nodes roll
//! to, and the pool's `ImageBuildDegraded` condition.

use super::build::lifecycle::{
    builds_for_pool, config_for_pool, config_of_build, job_of, CURRENT_BUILD_ANNOTATION,
};
use super::build::progress::{progress_of, Progress};
use crate::api::job::JobView;
use crate::api::{MachineConfigPool, MachineOSBuild, MachineOSConfig};

/// Pool condition type: the pool's OS image build failed.
pub const IMAGE_BUILD_DEGRADED: &str = "ImageBuildDegraded";

/// What the node controller does with a pool.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Layering {
    /// No MachineOSConfig: nodes get the rendered config and no image.
    #[default]
    NotLayered,
    /// Layered, but the image for the pool's rendered config is not ready: no node moves.
    Waiting {
        /// Why (upstream's words).
        reason: String,
        /// The image the MachineOSConfig names now, if any.
        image: Option<String>,
        /// The build, if any.
        build: Option<String>,
        /// Whether that build is running or failed (the pool is not Updated meanwhile).
        building: bool,
    },
    /// Nodes roll to `config` and `image`.
    Ready {
        /// The rendered config the build was made from.
        config: String,
        /// The digested image.
        image: String,
        /// The build.
        build: String,
    },
}

impl Layering {
    /// Whether the pool has a MachineOSConfig.
    pub fn is_layered(&self) -> bool {
        !matches!(self, Layering::NotLayered)
    }

    /// The image nodes are done on (the MachineOSConfig's current image).
    pub fn image(&self) -> Option<&str> {
        match self {
            Layering::NotLayered => None,
            Layering::Waiting { image, .. } => image.as_deref(),
            Layering::Ready { image, .. } => Some(image),
        }
    }
}

/// The build of `mosc` for the pool's rendered config: the one its
/// [`CURRENT_BUILD_ANNOTATION`] names if it is for that config, else any of its builds for it.
pub fn build_for_pool<'a>(
    pool: &MachineConfigPool,
    mosc: &MachineOSConfig,
    mosbs: &'a [MachineOSBuild],
) -> Option<&'a MachineOSBuild> {
    let config = &pool.spec.configuration.name;
    if let Some(name) = mosc.metadata.annotations.get(CURRENT_BUILD_ANNOTATION) {
        if let Some(b) = mosbs.iter().find(|b| &b.metadata.name == name) {
            if &b.spec.machine_config.name == config {
                return Some(b);
            }
        }
    }
    mosbs.iter().find(|b| {
        b.spec.machine_os_config.name == mosc.metadata.name && &b.spec.machine_config.name == config
    })
}

/// Whether the node controller may roll the pool, and to what.
pub fn layering(
    pool: &MachineConfigPool,
    moscs: &[MachineOSConfig],
    mosbs: &[MachineOSBuild],
) -> Layering {
    let Some(mosc) = config_for_pool(pool.name(), moscs) else {
        return Layering::NotLayered;
    };
    let image = mosc
        .status
        .as_ref()
        .and_then(|s| s.current_image_pull_spec.clone())
        .filter(|i| !i.is_empty());
    let build = build_for_pool(pool, mosc, mosbs);
    let wait = |reason: &str, building: bool| Layering::Waiting {
        reason: reason.to_string(),
        image: image.clone(),
        build: build.map(|b| b.metadata.name.clone()),
        building,
    };
    let Some(build) = build else {
        return wait("No MachineOSConfig or MachineOSBuild for this pool", false);
    };
    let progress = progress_of(build.status.as_ref());
    let building = matches!(
        progress,
        Some(Progress::Prepared | Progress::Building | Progress::Failed)
    );
    let Some(img) = image.clone() else {
        return wait("Desired image not set in MachineOSConfig", building);
    };
    let current = mosc
        .status
        .as_ref()
        .and_then(|s| s.machine_os_build.as_ref())
        .is_some_and(|r| r.name == build.metadata.name);
    let built = build
        .status
        .as_ref()
        .and_then(|s| s.digested_image_push_spec.as_deref());
    match progress {
        Some(Progress::Succeeded) if current && built == Some(img.as_str()) => Layering::Ready {
            config: build.spec.machine_config.name.clone(),
            image: img,
            build: build.metadata.name.clone(),
        },
        Some(Progress::Succeeded) => wait(
            &format!(
                "Image built successfully, pullspec: {img}, but MachineOSConfig {:?} has not updated yet",
                mosc.metadata.name
            ),
            true,
        ),
        Some(Progress::Prepared) => wait("Image build pending", true),
        Some(Progress::Building) => wait("Image build in progress", true),
        Some(Progress::Failed) => wait("Image build failed", true),
        _ => wait("Image is not ready yet", false),
    }
}

/// The build that speaks for the pool's build health: the one the MachineOSConfig names,
/// else a running one, else the newest.
pub fn current_build<'a>(
    mosc: &MachineOSConfig,
    builds: &[&'a MachineOSBuild],
) -> Option<&'a MachineOSBuild> {
    let named = mosc.metadata.annotations.get(CURRENT_BUILD_ANNOTATION);
    if let Some(b) = builds.iter().find(|b| Some(&b.metadata.name) == named) {
        return Some(b);
    }
    if let Some(b) = builds
        .iter()
        .find(|b| progress_of(b.status.as_ref()).is_some_and(Progress::is_transient))
    {
        return Some(b);
    }
    builds
        .iter()
        .max_by(|a, b| {
            a.metadata
                .creation_timestamp
                .cmp(&b.metadata.creation_timestamp)
        })
        .copied()
}

/// The pool's `ImageBuildDegraded` condition as (status, reason, message), or `None` to
/// leave it as it is: True with `BuildFailed` when the current build failed (naming the
/// build, and the Job and the reason it gave, when it still exists), False with `Building`
/// while one runs and `BuildSuccess` once it succeeded; False with `BuildPending` when a
/// MachineOSConfig has no build yet, and `NoLayeredObjects` without one, if it was True.
pub fn image_build_degraded(
    pool: &MachineConfigPool,
    moscs: &[MachineOSConfig],
    mosbs: &[MachineOSBuild],
    jobs: &[JobView],
) -> Option<(bool, String, String)> {
    let was_true = pool.status_or_default().is_true(IMAGE_BUILD_DEGRADED);
    let Some(mosc) = config_for_pool(pool.name(), moscs) else {
        return was_true.then(|| {
            (
                false,
                "NoLayeredObjects".to_string(),
                "No layered pool objects found, clearing stale build degraded condition"
                    .to_string(),
            )
        });
    };
    let builds: Vec<&MachineOSBuild> = builds_for_pool(pool.name(), mosbs)
        .into_iter()
        .filter(|b| config_of_build(b) == mosc.metadata.name)
        .collect();
    let Some(build) = current_build(mosc, &builds) else {
        return was_true.then(|| {
            (
                false,
                "BuildPending".to_string(),
                "MachineOSConfig updated/created, waiting for MachineOSBuild".to_string(),
            )
        });
    };
    let name = &build.metadata.name;
    match progress_of(build.status.as_ref()) {
        Some(Progress::Failed) => {
            let failed = build.status.as_ref().and_then(|s| {
                s.conditions
                    .iter()
                    .find(|c| c.type_ == "Failed" && c.is_true())
            });
            let cause = failed.map_or("build failed for unknown reason".to_string(), |c| {
                format!("{}: {}", c.reason(), c.message())
            });
            let mut message = format!(
                "Failed to build OS image for pool {} (MachineOSBuild: {name}): {cause}",
                pool.name()
            );
            if let Some(job) = job_of(build, jobs) {
                message.push_str(&format!(" (Job {}", job.name));
                if let Some(c) = job.failed_condition() {
                    message.push_str(&format!(": {}: {}", c.reason, c.message));
                }
                message.push(')');
            }
            Some((true, "BuildFailed".to_string(), message))
        }
        Some(Progress::Succeeded) => Some((
            false,
            "BuildSuccess".to_string(),
            format!("Build succeeded for pool {}", pool.name()),
        )),
        Some(p) if p.is_transient() => Some((
            false,
            "Building".to_string(),
            format!("Build started for pool {}", pool.name()),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::machine_os::{BuildObjectReference, MachineOSBuildStatus, NameRef};
    use crate::api::node::testing::{node, with_configs};
    use crate::api::node::{Node, CURRENT_IMAGE, DESIRED_IMAGE, STATE_DONE};
    use crate::controllers::build::progress::conditions;
    use crate::controllers::pool_status::{calculate_status_with, PoolLayering};
    use crate::controllers::rollout::{plan_rollout_in, Scope};

    const IMAGE: &str = "registry.example.com/ocl/worker@sha256:0123456789abcdef0123456789abcdef";

    fn pool(config: &str) -> MachineConfigPool {
        let mut p = MachineConfigPool::default();
        p.metadata.name = "worker".into();
        p.spec.configuration.name = config.into();
        p
    }

    fn mosc(current: Option<&str>) -> MachineOSConfig {
        let mut m = MachineOSConfig::default();
        m.metadata.name = "layered".into();
        m.spec.machine_config_pool = NameRef {
            name: "worker".into(),
        };
        if let Some(b) = current {
            m.metadata
                .annotations
                .insert(CURRENT_BUILD_ANNOTATION.into(), b.into());
        }
        m
    }

    fn build(name: &str, config: &str, p: Progress) -> MachineOSBuild {
        let mut b = MachineOSBuild::default();
        b.metadata.name = name.into();
        b.metadata.labels.insert(
            "machineconfiguration.openshift.io/target-machine-config-pool".into(),
            "worker".into(),
        );
        b.metadata.labels.insert(
            "machineconfiguration.openshift.io/machine-os-config".into(),
            "layered".into(),
        );
        b.spec.machine_config.name = config.into();
        b.spec.machine_os_config.name = "layered".into();
        b.status = Some(MachineOSBuildStatus {
            conditions: conditions(p, "t"),
            digested_image_push_spec: (p == Progress::Succeeded).then(|| IMAGE.to_string()),
            ..Default::default()
        });
        b
    }

    fn succeeded_config(build: &str) -> MachineOSConfig {
        let mut m = mosc(Some(build));
        let mut st = crate::api::MachineOSConfigStatus {
            current_image_pull_spec: Some(IMAGE.into()),
            ..Default::default()
        };
        st.machine_os_build = Some(BuildObjectReference {
            name: build.into(),
            ..Default::default()
        });
        m.status = Some(st);
        m
    }

    #[test]
    fn rolls_only_once_the_build_for_the_pools_config_succeeded() {
        let p = pool("rendered-worker-1");
        assert_eq!(layering(&p, &[], &[]), Layering::NotLayered);
        let waiting = layering(&p, &[mosc(None)], &[]);
        assert!(
            matches!(waiting, Layering::Waiting { ref reason, .. } if reason == "No MachineOSConfig or MachineOSBuild for this pool")
        );
        let running = [build("b1", "rendered-worker-1", Progress::Building)];
        assert!(matches!(
            layering(&p, &[mosc(Some("b1"))], &running),
            Layering::Waiting { building: true, .. }
        ));
        let done = [build("b1", "rendered-worker-1", Progress::Succeeded)];
        assert_eq!(
            layering(&p, &[succeeded_config("b1")], &done),
            Layering::Ready {
                config: "rendered-worker-1".into(),
                image: IMAGE.into(),
                build: "b1".into()
            }
        );
        // The pool moved on: the old build's image does not roll with the new config.
        let moved = pool("rendered-worker-2");
        assert!(matches!(
            layering(&moved, &[succeeded_config("b1")], &done),
            Layering::Waiting { .. }
        ));
    }

    #[test]
    fn failed_build_degrades_naming_build_and_job() {
        let p = pool("rendered-worker-1");
        let failed = [build("b1", "rendered-worker-1", Progress::Failed)];
        let job = JobView {
            name: "build-b1".into(),
            conditions: vec![crate::api::job::JobCondition {
                type_: "Failed".into(),
                reason: "BackoffLimitExceeded".into(),
                message: "Job has reached the specified backoff limit".into(),
            }],
            ..JobView::default()
        };
        let (on, reason, message) =
            image_build_degraded(&p, &[mosc(Some("b1"))], &failed, &[job]).expect("a condition");
        assert!(on);
        assert_eq!(reason, "BuildFailed");
        assert_eq!(
            message,
            "Failed to build OS image for pool worker (MachineOSBuild: b1): Failed: Build Failed \
             (Job build-b1: BackoffLimitExceeded: Job has reached the specified backoff limit)"
        );
        let ok = [build("b1", "rendered-worker-1", Progress::Succeeded)];
        assert_eq!(
            image_build_degraded(&p, &[mosc(Some("b1"))], &ok, &[]).map(|c| c.0),
            Some(false)
        );
        // Not layered and never degraded: nothing to say.
        assert_eq!(image_build_degraded(&p, &[], &[], &[]), None);
    }

    fn layered_node(name: &str, current: &str, desired: &str, image: Option<(&str, &str)>) -> Node {
        let mut n = with_configs(node(name, &[]), current, desired, STATE_DONE);
        if let Some((d, c)) = image {
            n.metadata
                .annotations
                .insert(DESIRED_IMAGE.into(), d.into());
            n.metadata
                .annotations
                .insert(CURRENT_IMAGE.into(), c.into());
        }
        n
    }

    #[test]
    fn rollout_sets_the_image_and_done_needs_it() {
        let p = pool("rendered-worker-1");
        let nodes = [
            layered_node("a", "rendered-worker-1", "rendered-worker-1", None),
            layered_node(
                "b",
                "rendered-worker-1",
                "rendered-worker-1",
                Some((IMAGE, IMAGE)),
            ),
        ];
        let refs: Vec<&Node> = nodes.iter().collect();
        let scope = Scope {
            target: "rendered-worker-1",
            image: Some(IMAGE),
            ..Scope::default()
        };
        let plan = plan_rollout_in(&p, &refs, None, &scope).expect("plan");
        assert_eq!(plan.update, ["a"]);
        assert_eq!(plan.image.as_deref(), Some(IMAGE));
        assert_eq!(
            plan.set_desired_config_note().as_deref(),
            Some(
                format!("Targeted node a to MachineConfig: rendered-worker-1 / Image: {IMAGE}")
                    .as_str()
            )
        );
        let layering = PoolLayering {
            layered: true,
            image: Some(IMAGE.into()),
            ..PoolLayering::default()
        };
        let st = calculate_status_with(&p, &refs, "t", &layering);
        assert_eq!(st.updated_machine_count, 1);
        assert!(!st.is_true("Updated"));
        // Opted out: the node with an image rolls back, the plain one is done.
        let plan = plan_rollout_in(&p, &refs, None, &Scope::pool(&p)).expect("plan");
        assert_eq!(plan.update, ["b"]);
        assert_eq!(plan.image, None);
    }

    #[test]
    fn a_running_build_keeps_the_pool_from_updated_and_a_failed_one_degrades_it() {
        let p = pool("rendered-worker-1");
        let nodes = [layered_node(
            "a",
            "rendered-worker-1",
            "rendered-worker-1",
            Some((IMAGE, IMAGE)),
        )];
        let refs: Vec<&Node> = nodes.iter().collect();
        let mut layering = PoolLayering {
            layered: true,
            image: Some(IMAGE.into()),
            ..PoolLayering::default()
        };
        let st = calculate_status_with(&p, &refs, "t", &layering);
        assert!(st.is_true("Updated"));
        assert_eq!(
            st.condition("Updated").map(|c| c.message().to_string()),
            Some(format!(
                "All nodes are updated with MachineConfig rendered-worker-1 / Image {IMAGE}"
            ))
        );
        layering.building = true;
        layering.build_degraded = Some((true, "BuildFailed".into(), "failed".into()));
        let st = calculate_status_with(&p, &refs, "t", &layering);
        assert!(!st.is_true("Updated"));
        assert!(st.is_true(IMAGE_BUILD_DEGRADED));
        assert!(st.is_true("Degraded"));
        assert_eq!(
            st.condition("Degraded").map(|c| c.message().to_string()),
            Some("Custom OS image build failed".to_string())
        );
    }
}
