//! The build controller's decisions for one pool, pure: which MachineOSBuild to create and
//! start, what its Job's status means for it, what the MachineOSConfig records once it
//! succeeds, which builds are interrupted or removed (upstream
//! `pkg/controller/build/reconciler.go`: `syncMachineOSConfig`, `syncMachineOSBuild`,
//! `startBuild`, `deleteOtherBuildsForMachineOSConfig`, `updateMachineOSBuild`,
//! `updateMachineOSConfigStatus`, `deleteMachineOSConfig`, `rebuildMachineOSConfig`).
//!
//! The adapter carries out the [`BuildIntent`]s in order and records the [`BuildEvent`]s.

use super::machine_os_build::{machine_os_build, BuildInputs};
use super::progress::{conditions, job_progress, progress_of, transition_allowed, Progress};
use super::{BuildError, HashError};
use crate::api::job::JobView;
use crate::api::machine_config::RELEASE_IMAGE_VERSION_ANNOTATION;
use crate::api::machine_os::{BuildObjectReference, BuilderReference, MachineOSBuildStatus};
use crate::api::{
    MachineConfig, MachineConfigPool, MachineOSBuild, MachineOSConfig, MachineOSConfigStatus,
    OwnerReference,
};
use crate::gocompat::reference::parse_named;

/// Annotation on a MachineOSConfig naming its current MachineOSBuild.
pub const CURRENT_BUILD_ANNOTATION: &str =
    "machineconfiguration.openshift.io/current-machine-os-build";
/// Annotation on a MachineOSConfig asking for its current build to be redone.
pub const REBUILD_ANNOTATION: &str = "machineconfiguration.openshift.io/rebuild";
/// Annotation on a MachineOSBuild holding the uid of the Job building it.
pub const JOB_UID_ANNOTATION: &str = "machineconfiguration.openshift.io/job-uid";
/// The key of the digest ConfigMap the build's Job writes.
pub const DIGEST_KEY: &str = "digest";

const PREFIX: &str = "machineconfiguration.openshift.io/";
const GROUP: &str = "machineconfiguration.openshift.io";

/// The name of the builder Job of a build.
pub fn job_name(build: &str) -> String {
    format!("build-{build}")
}

/// The name of the ConfigMap the Job writes the pushed digest into.
pub fn digest_config_map(build: &str) -> String {
    format!("digest-{build}")
}

/// The ConfigMaps the build request makes for a build (some are optional), without the
/// digest ConfigMap.
pub fn ephemeral_config_maps(build: &str) -> Vec<String> {
    [
        "containerfile",
        "mc",
        "additionaltrustbundle",
        "etc-policy",
        "etc-registries",
    ]
    .iter()
    .map(|p| format!("{p}-{build}"))
    .collect()
}

/// The Secrets the build request makes for a build.
pub fn ephemeral_secrets(build: &str) -> Vec<String> {
    vec![format!("base-{build}"), format!("final-{build}")]
}

/// What the build controller reads for one pool.
#[derive(Debug, Clone, Copy)]
pub struct PoolBuilds<'a> {
    /// The pool.
    pub pool: &'a MachineConfigPool,
    /// Every MachineConfig (the pool's rendered config among them).
    pub mcs: &'a [MachineConfig],
    /// Every MachineOSConfig.
    pub moscs: &'a [MachineOSConfig],
    /// Every MachineOSBuild.
    pub mosbs: &'a [MachineOSBuild],
    /// The build Jobs in the MCO namespace.
    pub jobs: &'a [JobView],
}

/// One write the build controller intends, in the order to carry them out.
#[derive(Debug, Clone, PartialEq)]
pub enum BuildIntent {
    /// Create this MachineOSBuild (owned by its MachineOSConfig).
    CreateBuild(Box<MachineOSBuild>),
    /// Run the build request for `build` and create its ConfigMaps, Secrets and Job, then
    /// record the Job's uid on the build ([`JOB_UID_ANNOTATION`]) and the `JobCreated` Event
    /// (`Created build job: build-<build>`).
    StartBuild {
        /// The MachineOSBuild.
        build: String,
        /// Its MachineOSConfig.
        config: String,
    },
    /// Write the build's status.
    SetBuildStatus {
        /// The MachineOSBuild.
        build: String,
        /// The whole new status.
        status: Box<MachineOSBuildStatus>,
    },
    /// Point the MachineOSConfig at `build` ([`CURRENT_BUILD_ANNOTATION`]), remove
    /// [`REBUILD_ANNOTATION`] when `clear_rebuild`.
    SetCurrentBuild {
        /// The MachineOSConfig.
        config: String,
        /// The MachineOSBuild.
        build: String,
        /// Whether to drop the rebuild annotation too.
        clear_rebuild: bool,
    },
    /// Write the MachineOSConfig's status.
    SetConfigStatus {
        /// The MachineOSConfig.
        config: String,
        /// The whole new status.
        status: Box<MachineOSConfigStatus>,
    },
    /// Delete the Job, ConfigMaps and Secrets made for a build (not the digest ConfigMap).
    CleanBuildObjects {
        /// The MachineOSBuild.
        build: String,
    },
    /// Delete a build: its Job, ConfigMaps, Secrets, digest ConfigMap, then itself.
    DeleteBuild {
        /// The MachineOSBuild.
        build: String,
    },
}

/// An Event the build controller records, under upstream's reasons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildEvent {
    /// `MachineOSBuild` or `MachineOSConfig`.
    pub kind: &'static str,
    /// The object's name.
    pub name: String,
    /// A Warning rather than Normal.
    pub warning: bool,
    /// The reason.
    pub reason: &'static str,
    /// The note.
    pub note: String,
}

/// What the build controller does for one pool.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BuildDecision {
    /// The writes, in order.
    pub intents: Vec<BuildIntent>,
    /// The Events, recorded after the writes.
    pub events: Vec<BuildEvent>,
    /// Builds whose Job succeeded but whose digest ConfigMap was not read: the adapter reads
    /// `digest-<build>` and decides again.
    pub digest_wanted: Vec<String>,
    /// Why nothing more was done (waiting on something), for the log.
    pub waiting: Option<String>,
    /// Why no build can start until something outside the build controller changes, worded
    /// for the administrator (the adapter logs it and records it on the MachineOSConfig).
    pub blocked: Option<String>,
}

impl BuildDecision {
    fn event(
        &mut self,
        kind: &'static str,
        name: &str,
        warning: bool,
        reason: &'static str,
        note: String,
    ) {
        self.events.push(BuildEvent {
            kind,
            name: name.to_string(),
            warning,
            reason,
            note,
        });
    }
}

/// The MachineOSConfig of a pool.
pub fn config_for_pool<'a>(
    pool: &str,
    moscs: &'a [MachineOSConfig],
) -> Option<&'a MachineOSConfig> {
    moscs
        .iter()
        .find(|m| m.spec.machine_config_pool.name == pool)
}

/// The builds labelled for pool `pool`.
pub fn builds_for_pool<'a>(pool: &str, mosbs: &'a [MachineOSBuild]) -> Vec<&'a MachineOSBuild> {
    let key = format!("{PREFIX}target-machine-config-pool");
    mosbs
        .iter()
        .filter(|b| b.metadata.labels.get(&key).map(String::as_str) == Some(pool))
        .collect()
}

/// The MachineOSConfig a build is labelled for.
pub fn config_of_build(build: &MachineOSBuild) -> &str {
    build
        .metadata
        .labels
        .get(&format!("{PREFIX}machine-os-config"))
        .map_or("", String::as_str)
}

/// The build's Job: named `build-<build>`, labelled for it.
pub fn job_of<'a>(build: &MachineOSBuild, jobs: &'a [JobView]) -> Option<&'a JobView> {
    let name = job_name(&build.metadata.name);
    jobs.iter().find(|j| j.name == name)
}

/// Whether a build's owner is `mosc` (by uid when both carry one).
fn owned_by(build: &MachineOSBuild, mosc: &MachineOSConfig) -> bool {
    if config_of_build(build) != mosc.metadata.name {
        return false;
    }
    match (&mosc.metadata.uid, build.metadata.owner_references.first()) {
        (Some(uid), Some(owner)) if !owner.uid.is_empty() => &owner.uid == uid,
        _ => true,
    }
}

/// `repository@digest` from the push spec and the digest the Job reported.
pub fn digested_pullspec(push_spec: &str, digest: &str) -> Option<String> {
    let digest = digest.trim();
    let (algo, hex) = digest.split_once(':')?;
    if algo.is_empty()
        || hex.len() < 32
        || !hex
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    {
        return None;
    }
    let mut named = parse_named(push_spec)?;
    named.tag = None;
    named.digest = Some(digest.to_string());
    Some(named.to_string_full())
}

/// The status a build gets from its Job (or from its Job's absence), if that is a move
/// upstream writes: conditions for the Job's progress, `buildStart` (kept once set; the
/// Job's creation when the first status is already terminal), `buildEnd` on a terminal
/// state, the builder reference, and `digestedImagePushSpec` from `digest` on success.
fn status_from_job(
    build: &MachineOSBuild,
    job: Option<&JobView>,
    progress: Progress,
    digested: Option<String>,
    now: &str,
) -> Option<MachineOSBuildStatus> {
    let old = build.status.clone().unwrap_or_default();
    if !transition_allowed(progress_of(build.status.as_ref()), progress) {
        return None;
    }
    let mut status = old.clone();
    status.conditions = conditions(progress, now);
    if status.build_start.is_none() {
        let created = job.and_then(|j| j.creation_timestamp.clone());
        status.build_start = if progress.is_terminal() {
            created.or_else(|| Some(now.to_string()))
        } else {
            Some(now.to_string())
        };
    }
    if progress.is_terminal() && status.build_end.is_none() {
        status.build_end = Some(now.to_string());
    }
    if let Some(d) = digested {
        status.digested_image_push_spec = Some(d);
    }
    let job_ref = job_name(&build.metadata.name);
    status.builder = Some(BuilderReference {
        image_builder_type: "Job".into(),
        job: Some(BuildObjectReference {
            group: "batch".into(),
            resource: "jobs".into(),
            namespace: Some(super::request::NAMESPACE.into()),
            name: job_ref,
        }),
    });
    (status != old).then_some(status)
}

/// Decides the build controller's writes for `pool`. `digests` holds the digest ConfigMaps
/// read so far (build name, digest). `now` stamps conditions and times.
pub fn decide(view: &PoolBuilds<'_>, digests: &[(String, String)], now: &str) -> BuildDecision {
    let mut d = BuildDecision::default();
    let pool = view.pool;
    let pool_name = pool.name();
    let mosc = config_for_pool(pool_name, view.moscs);
    let builds = builds_for_pool(pool_name, view.mosbs);

    // Opted out, or a new MachineOSConfig of the same name: builds of another owner go.
    for b in &builds {
        let orphan = match mosc {
            None => true,
            Some(m) => config_of_build(b) != m.metadata.name || !owned_by(b, m),
        };
        if orphan && !b.metadata.is_deleting() {
            d.intents.push(BuildIntent::DeleteBuild {
                build: b.metadata.name.clone(),
            });
            d.event(
                "MachineOSBuild",
                &b.metadata.name,
                false,
                "BuildDeleted",
                "Build deleted: build resources removed".into(),
            );
        }
    }
    let Some(mosc) = mosc else {
        return d;
    };
    let mine: Vec<&MachineOSBuild> = builds
        .iter()
        .copied()
        .filter(|b| owned_by(b, mosc) && !b.metadata.is_deleting())
        .collect();
    let current_annotation = mosc.metadata.annotations.get(CURRENT_BUILD_ANNOTATION);
    let rebuild = mosc.metadata.annotations.contains_key(REBUILD_ANNOTATION);

    // The Jobs' status into the builds.
    let mut progress_now: Vec<(String, Option<Progress>)> = Vec::new();
    for b in &mine {
        let name = &b.metadata.name;
        let stored = progress_of(b.status.as_ref());
        let job = job_of(b, view.jobs);
        let from_job = match job {
            Some(j) => Some(job_progress(j)),
            // A started build whose Job is gone was interrupted.
            None if stored.is_some_and(Progress::is_transient) => Some(Progress::Interrupted),
            None => None,
        };
        let Some(p) = from_job else {
            progress_now.push((name.clone(), stored));
            continue;
        };
        let mut digested = None;
        if p == Progress::Succeeded && stored != Some(Progress::Succeeded) {
            match digests.iter().find(|(n, _)| n == name) {
                None => {
                    d.digest_wanted.push(name.clone());
                    progress_now.push((name.clone(), stored));
                    continue;
                }
                Some((_, digest)) => {
                    digested = digested_pullspec(&mosc.spec.rendered_image_push_spec, digest);
                    if digested.is_none() {
                        d.waiting = Some(format!(
                            "could not create digested image pullspec from the pullspec {:?} and the digest {digest:?}",
                            mosc.spec.rendered_image_push_spec
                        ));
                        progress_now.push((name.clone(), stored));
                        continue;
                    }
                }
            }
        }
        let Some(status) = status_from_job(b, job, p, digested.clone(), now) else {
            progress_now.push((name.clone(), stored));
            continue;
        };
        let job_label = job.map_or_else(|| job_name(name), |j| j.name.clone());
        match p {
            Progress::Building if stored != Some(Progress::Building) => {
                d.event(
                    "MachineOSBuild",
                    name,
                    false,
                    "JobStarted",
                    format!("Build job started: {job_label}"),
                );
                d.event(
                    "MachineOSBuild",
                    name,
                    false,
                    "BuildBuilding",
                    "Build is now in progress".into(),
                );
            }
            Progress::Succeeded => {
                let image = digested.clone().unwrap_or_default();
                d.event(
                    "MachineOSBuild",
                    name,
                    false,
                    "JobCompleted",
                    format!("Build job completed: {job_label}"),
                );
                d.event(
                    "MachineOSBuild",
                    name,
                    false,
                    "BuildCompleted",
                    format!("Build completed successfully, image: {image}"),
                );
            }
            Progress::Failed => {
                d.event("MachineOSBuild", name, true, "JobFailed", format!("Build job {job_label:?} failed; see MachineOSBuild {name:?} status conditions for details"));
                d.event(
                    "MachineOSBuild",
                    name,
                    true,
                    "BuildFailed",
                    format!(
                        "Build failed; see MachineOSBuild {name:?} status conditions for details"
                    ),
                );
                d.event("MachineOSConfig", &mosc.metadata.name, true, "BuildDegraded", format!("Build for pool {pool_name:?} degraded; see MachineOSBuild status conditions for details"));
            }
            Progress::Interrupted => {
                let why = if job.is_some() {
                    "build job was deleted"
                } else {
                    "build job is gone"
                };
                d.event(
                    "MachineOSBuild",
                    name,
                    true,
                    "BuildInterrupted",
                    format!("Build interrupted: {why}"),
                );
            }
            _ => {}
        }
        d.intents.push(BuildIntent::SetBuildStatus {
            build: name.clone(),
            status: Box::new(status.clone()),
        });
        if p == Progress::Succeeded {
            // Success: the ephemeral objects go, the MachineOSConfig names the image.
            d.intents.push(BuildIntent::CleanBuildObjects {
                build: name.clone(),
            });
            if current_annotation != Some(name) || rebuild {
                d.intents.push(BuildIntent::SetCurrentBuild {
                    config: mosc.metadata.name.clone(),
                    build: name.clone(),
                    clear_rebuild: rebuild,
                });
            }
            let mut cs = mosc.status.clone().unwrap_or_default();
            cs.current_image_pull_spec = status.digested_image_push_spec.clone();
            cs.observed_generation = mosc.metadata.generation.or(cs.observed_generation);
            cs.machine_os_build = Some(BuildObjectReference {
                group: GROUP.into(),
                resource: "machineosbuilds".into(),
                namespace: None,
                name: name.clone(),
            });
            if mosc.status.as_ref() != Some(&cs) {
                d.intents.push(BuildIntent::SetConfigStatus {
                    config: mosc.metadata.name.clone(),
                    status: Box::new(cs),
                });
            }
        }
        progress_now.push((name.clone(), Some(p)));
    }
    let progress = |name: &str| {
        progress_now
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, p)| *p)
    };

    // The build the pool's rendered config wants.
    let rendered_name = &pool.spec.configuration.name;
    if rendered_name.is_empty() {
        d.waiting = Some(format!("pool {pool_name} has no rendered config yet"));
        return d;
    }
    let Some(rendered) = view.mcs.iter().find(|m| m.name() == rendered_name) else {
        d.waiting = Some(format!("rendered config {rendered_name} not found"));
        return d;
    };
    let status = pool.status_or_default();
    for cond in ["NodeDegraded", "RenderDegraded"] {
        if status.is_true(cond) {
            d.waiting = Some(format!(
                "MachineConfigPool {pool_name} is degraded due to non-build issues"
            ));
            return d;
        }
    }
    let inputs = BuildInputs {
        mosc,
        pool,
        rendered,
    };
    let mut target = match machine_os_build(&inputs) {
        Ok(b) => b,
        Err(e) => {
            let why = format!("could not instantiate new MachineOSBuild: {e}");
            let release = matches!(
                &e,
                BuildError::Hash(
                    HashError::MissingAnnotation(k, _) | HashError::EmptyAnnotation(k, _)
                ) if *k == RELEASE_IMAGE_VERSION_ANNOTATION
            );
            d.blocked = Some(if release {
                format!(
                    "{why}; rendered configs carry the release version the operator writes on \
                     ControllerConfig machine-config-controller: is machine-config-operator running?"
                )
            } else {
                why.clone()
            });
            d.waiting = Some(why);
            return d;
        }
    };
    let target_name = target.metadata.name.clone();
    let existing = mine.iter().find(|b| b.metadata.name == target_name);
    match existing {
        None => {
            if let Some(uid) = &mosc.metadata.uid {
                target.metadata.owner_references = vec![OwnerReference {
                    api_version: format!("{GROUP}/v1"),
                    kind: "MachineOSConfig".into(),
                    name: mosc.metadata.name.clone(),
                    uid: uid.clone(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }];
            }
            d.intents.push(BuildIntent::CreateBuild(Box::new(target)));
        }
        Some(b) => {
            let p = progress(&target_name);
            let has_job = job_of(b, view.jobs).is_some();
            match p {
                _ if rebuild
                    && p.is_some_and(Progress::is_terminal)
                    && current_annotation == Some(&target_name) =>
                {
                    // Rebuild: the finished build goes; the next pass builds it anew.
                    d.event(
                        "MachineOSConfig",
                        &mosc.metadata.name,
                        false,
                        "RebuildRequested",
                        "Rebuild requested: rebuild annotation applied".into(),
                    );
                    d.intents.push(BuildIntent::DeleteBuild {
                        build: target_name.clone(),
                    });
                    d.event(
                        "MachineOSBuild",
                        &target_name,
                        false,
                        "BuildDeleted",
                        "Build deleted: build resources removed".into(),
                    );
                }
                None | Some(Progress::Initial) if !has_job => {
                    supersede_others(&mut d, &mine, &target_name, &progress, view.jobs, now);
                    d.event(
                        "MachineOSBuild",
                        &target_name,
                        false,
                        "BuildStarted",
                        format!(
                            "Started build for pool {pool_name:?} with config {rendered_name:?}"
                        ),
                    );
                    d.event(
                        "MachineOSBuild",
                        &target_name,
                        false,
                        "BuildPreparing",
                        format!("Preparing build: creating build job for pool {pool_name:?}"),
                    );
                    d.intents.push(BuildIntent::StartBuild {
                        build: target_name.clone(),
                        config: mosc.metadata.name.clone(),
                    });
                    if current_annotation != Some(&target_name) {
                        d.intents.push(BuildIntent::SetCurrentBuild {
                            config: mosc.metadata.name.clone(),
                            build: target_name.clone(),
                            clear_rebuild: false,
                        });
                    }
                }
                Some(Progress::Succeeded) | Some(Progress::Prepared) | Some(Progress::Building)
                    if current_annotation != Some(&target_name) =>
                {
                    // Back to a config built before (or being built): reuse it.
                    supersede_others(&mut d, &mine, &target_name, &progress, view.jobs, now);
                    d.intents.push(BuildIntent::SetCurrentBuild {
                        config: mosc.metadata.name.clone(),
                        build: target_name.clone(),
                        clear_rebuild: false,
                    });
                    if p == Some(Progress::Succeeded) {
                        let mut cs = mosc.status.clone().unwrap_or_default();
                        cs.current_image_pull_spec = b
                            .status
                            .as_ref()
                            .and_then(|s| s.digested_image_push_spec.clone());
                        cs.observed_generation =
                            mosc.metadata.generation.or(cs.observed_generation);
                        cs.machine_os_build = Some(BuildObjectReference {
                            group: GROUP.into(),
                            resource: "machineosbuilds".into(),
                            namespace: None,
                            name: target_name.clone(),
                        });
                        if mosc.status.as_ref() != Some(&cs) {
                            d.intents.push(BuildIntent::SetConfigStatus {
                                config: mosc.metadata.name.clone(),
                                status: Box::new(cs),
                            });
                        }
                    }
                }
                _ => {}
            }
        }
    }
    d
}

/// Every other build of the MachineOSConfig that did not succeed: a running one is
/// interrupted (its Job and objects deleted, its status Interrupted, kept to be seen), any
/// other removed, as upstream's `deleteOtherBuildsForMachineOSConfig` stops them.
fn supersede_others(
    d: &mut BuildDecision,
    mine: &[&MachineOSBuild],
    keep: &str,
    progress: &dyn Fn(&str) -> Option<Progress>,
    jobs: &[JobView],
    now: &str,
) {
    for other in mine {
        let name = &other.metadata.name;
        if name == keep {
            continue;
        }
        match progress(name) {
            Some(Progress::Succeeded) => {}
            Some(p) if p.is_transient() => {
                let job = job_of(other, jobs).map_or_else(|| job_name(name), |j| j.name.clone());
                let mut status = other.status.clone().unwrap_or_default();
                status.conditions = conditions(Progress::Interrupted, now);
                if status.build_end.is_none() {
                    status.build_end = Some(now.to_string());
                }
                d.intents.push(BuildIntent::CleanBuildObjects {
                    build: name.clone(),
                });
                d.intents.push(BuildIntent::SetBuildStatus {
                    build: name.clone(),
                    status: Box::new(status),
                });
                d.event(
                    "MachineOSBuild",
                    name,
                    false,
                    "JobDeleted",
                    format!("Build job deleted: {job}"),
                );
                d.event(
                    "MachineOSBuild",
                    name,
                    true,
                    "BuildInterrupted",
                    "Build interrupted: build job was deleted".into(),
                );
            }
            _ => {
                d.intents.push(BuildIntent::DeleteBuild {
                    build: name.clone(),
                });
                d.event(
                    "MachineOSBuild",
                    name,
                    false,
                    "BuildDeleted",
                    "Build deleted: build resources removed".into(),
                );
            }
        }
    }
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
