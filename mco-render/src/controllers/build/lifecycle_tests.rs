//! The build controller's decisions over plain values.

use super::*;
use crate::api::job::JobCondition;
use crate::api::machine_config::{GENERATED_BY_ANNOTATION, RELEASE_IMAGE_VERSION_ANNOTATION};
use crate::api::machine_os::NameRef;

const NOW: &str = "2026-12-04T12:00:00Z";
const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn rendered(name: &str, os: &str) -> MachineConfig {
    let mut mc = MachineConfig::default();
    mc.metadata.name = name.into();
    mc.spec.os_image_url = os.into();
    mc.metadata
        .annotations
        .insert(RELEASE_IMAGE_VERSION_ANNOTATION.into(), "4.18.0".into());
    mc.metadata
        .annotations
        .insert(GENERATED_BY_ANNOTATION.into(), "v1".into());
    mc
}

fn pool(config: &str) -> MachineConfigPool {
    let mut p = MachineConfigPool::default();
    p.metadata.name = "worker".into();
    p.spec.configuration.name = config.into();
    p
}

fn mosc() -> MachineOSConfig {
    let mut m = MachineOSConfig::default();
    m.metadata.name = "layered".into();
    m.metadata.uid = Some("mosc-uid".into());
    m.metadata.generation = Some(1);
    m.spec.machine_config_pool = NameRef {
        name: "worker".into(),
    };
    m.spec.rendered_image_push_spec = "registry.example.com/ocl/worker:latest".into();
    m.spec.rendered_image_push_secret = NameRef {
        name: "push".into(),
    };
    m.spec.image_builder.image_builder_type = "Job".into();
    m
}

struct World {
    pool: MachineConfigPool,
    mcs: Vec<MachineConfig>,
    moscs: Vec<MachineOSConfig>,
    mosbs: Vec<MachineOSBuild>,
    jobs: Vec<JobView>,
}

impl World {
    fn new() -> Self {
        World {
            pool: pool("rendered-worker-1"),
            mcs: vec![
                rendered("rendered-worker-1", "quay.io/os:1"),
                rendered("rendered-worker-2", "quay.io/os:2"),
            ],
            moscs: vec![mosc()],
            mosbs: Vec::new(),
            jobs: Vec::new(),
        }
    }

    fn decide(&self, digests: &[(String, String)]) -> BuildDecision {
        decide(
            &PoolBuilds {
                pool: &self.pool,
                mcs: &self.mcs,
                moscs: &self.moscs,
                mosbs: &self.mosbs,
                jobs: &self.jobs,
            },
            digests,
            NOW,
        )
    }

    /// Carries out the intents the way the adapter would (the Job created, not run).
    fn apply(&mut self, d: &BuildDecision) {
        for i in &d.intents {
            match i {
                BuildIntent::CreateBuild(b) => self.mosbs.push((**b).clone()),
                BuildIntent::StartBuild { build, .. } => self.jobs.push(JobView {
                    name: job_name(build),
                    creation_timestamp: Some("2026-12-04T11:59:00Z".into()),
                    ..JobView::default()
                }),
                BuildIntent::SetBuildStatus { build, status } => {
                    let b = self.mosbs.iter_mut().find(|b| &b.metadata.name == build);
                    b.expect("build exists").status = Some((**status).clone());
                }
                BuildIntent::SetCurrentBuild {
                    build,
                    clear_rebuild,
                    ..
                } => {
                    let a = &mut self.moscs[0].metadata.annotations;
                    a.insert(CURRENT_BUILD_ANNOTATION.into(), build.clone());
                    if *clear_rebuild {
                        a.remove(REBUILD_ANNOTATION);
                    }
                }
                BuildIntent::SetConfigStatus { status, .. } => {
                    self.moscs[0].status = Some((**status).clone())
                }
                BuildIntent::CleanBuildObjects { build } => {
                    let j = job_name(build);
                    self.jobs.retain(|x| x.name != j)
                }
                BuildIntent::DeleteBuild { build } => {
                    let j = job_name(build);
                    self.jobs.retain(|x| x.name != j);
                    self.mosbs.retain(|b| &b.metadata.name != build);
                }
            }
        }
    }

    fn job_mut(&mut self) -> &mut JobView {
        self.jobs.last_mut().expect("a job")
    }

    fn build(&self, name: &str) -> &MachineOSBuild {
        self.mosbs
            .iter()
            .find(|b| b.metadata.name == name)
            .expect("build")
    }
}

fn created_name(d: &BuildDecision) -> String {
    d.intents
        .iter()
        .find_map(|i| match i {
            BuildIntent::CreateBuild(b) => Some(b.metadata.name.clone()),
            _ => None,
        })
        .expect("a build is created")
}

fn progress_of_build(w: &World, name: &str) -> Option<Progress> {
    progress_of(w.build(name).status.as_ref())
}

#[test]
fn a_machine_os_config_creates_its_build_owned_by_it() {
    let w = World::new();
    let d = w.decide(&[]);
    assert_eq!(d.intents.len(), 1, "{:?}", d.intents);
    let BuildIntent::CreateBuild(b) = &d.intents[0] else {
        panic!("not a create: {:?}", d.intents[0]);
    };
    assert!(b.metadata.name.starts_with("layered-"));
    assert_eq!(b.spec.machine_config.name, "rendered-worker-1");
    assert_eq!(b.metadata.owner_references[0].uid, "mosc-uid");
    assert_eq!(b.metadata.owner_references[0].kind, "MachineOSConfig");
}

#[test]
fn a_new_build_starts_and_becomes_current() {
    let mut w = World::new();
    let d = w.decide(&[]);
    let name = created_name(&d);
    w.apply(&d);
    let d = w.decide(&[]);
    assert!(d.intents.contains(&BuildIntent::StartBuild {
        build: name.clone(),
        config: "layered".into()
    }));
    assert!(d.intents.contains(&BuildIntent::SetCurrentBuild {
        config: "layered".into(),
        build: name.clone(),
        clear_rebuild: false
    }));
    let reasons: Vec<&str> = d.events.iter().map(|e| e.reason).collect();
    assert_eq!(reasons, ["BuildStarted", "BuildPreparing"]);
    w.apply(&d);
    // The Job exists: Prepared, and nothing is started twice.
    let d = w.decide(&[]);
    assert!(!d
        .intents
        .iter()
        .any(|i| matches!(i, BuildIntent::StartBuild { .. })));
    w.apply(&d);
    assert_eq!(progress_of_build(&w, &name), Some(Progress::Prepared));
    let status = w.build(&name).status.clone().unwrap_or_default();
    assert_eq!(status.build_start.as_deref(), Some(NOW));
    assert_eq!(
        status.builder.and_then(|b| b.job).map(|j| j.name),
        Some(job_name(&name))
    );
}

fn started() -> (World, String) {
    let mut w = World::new();
    let d = w.decide(&[]);
    let name = created_name(&d);
    w.apply(&d);
    let d = w.decide(&[]);
    w.apply(&d);
    let d = w.decide(&[]);
    w.apply(&d);
    (w, name)
}

#[test]
fn success_records_the_digest_cleans_up_and_names_the_image() {
    let (mut w, name) = started();
    w.job_mut().active = 1;
    let d = w.decide(&[]);
    w.apply(&d);
    assert_eq!(progress_of_build(&w, &name), Some(Progress::Building));
    w.job_mut().active = 0;
    w.job_mut().succeeded = 1;
    w.job_mut().conditions = vec![JobCondition {
        type_: "Complete".into(),
        ..JobCondition::default()
    }];
    // The digest ConfigMap is read first.
    let d = w.decide(&[]);
    assert_eq!(d.digest_wanted, vec![name.clone()]);
    assert!(d.intents.is_empty());
    let d = w.decide(&[(name.clone(), DIGEST.into())]);
    let image = format!("registry.example.com/ocl/worker@{DIGEST}");
    assert!(d.intents.contains(&BuildIntent::CleanBuildObjects {
        build: name.clone()
    }));
    w.apply(&d);
    let st = w.build(&name).status.clone().unwrap_or_default();
    assert_eq!(progress_of_build(&w, &name), Some(Progress::Succeeded));
    assert_eq!(st.digested_image_push_spec.as_deref(), Some(image.as_str()));
    assert_eq!(st.build_end.as_deref(), Some(NOW));
    let cs = w.moscs[0].status.clone().unwrap_or_default();
    assert_eq!(cs.current_image_pull_spec.as_deref(), Some(image.as_str()));
    assert_eq!(cs.machine_os_build.map(|r| r.name), Some(name.clone()));
    assert_eq!(cs.observed_generation, Some(1));
    assert!(d.events.iter().any(|e| e.reason == "BuildCompleted"
        && e.note == format!("Build completed successfully, image: {image}")));
    // Settled: nothing more to do.
    assert_eq!(w.decide(&[]).intents, vec![]);
}

#[test]
fn failure_keeps_the_objects_and_records_warnings() {
    let (mut w, name) = started();
    w.job_mut().failed = 4;
    w.job_mut().conditions = vec![JobCondition {
        type_: "Failed".into(),
        reason: "BackoffLimitExceeded".into(),
        message: "Job has reached the specified backoff limit".into(),
    }];
    let d = w.decide(&[]);
    assert!(!d
        .intents
        .iter()
        .any(|i| matches!(i, BuildIntent::CleanBuildObjects { .. })));
    w.apply(&d);
    assert_eq!(progress_of_build(&w, &name), Some(Progress::Failed));
    let warnings: Vec<&str> = d
        .events
        .iter()
        .filter(|e| e.warning)
        .map(|e| e.reason)
        .collect();
    assert_eq!(warnings, ["JobFailed", "BuildFailed", "BuildDegraded"]);
    // A failed build is not retried by itself.
    assert_eq!(w.decide(&[]).intents, vec![]);
}

#[test]
fn a_new_rendered_config_interrupts_the_running_build() {
    let (mut w, old) = started();
    w.job_mut().active = 1;
    let d = w.decide(&[]);
    w.apply(&d);
    w.pool.spec.configuration.name = "rendered-worker-2".into();
    let d = w.decide(&[]);
    let new = created_name(&d);
    assert_ne!(new, old);
    w.apply(&d);
    let d = w.decide(&[]);
    assert!(d
        .intents
        .contains(&BuildIntent::CleanBuildObjects { build: old.clone() }));
    let start = d
        .intents
        .iter()
        .position(|i| matches!(i, BuildIntent::StartBuild { .. }))
        .expect("new build starts");
    let clean = d
        .intents
        .iter()
        .position(|i| i == &BuildIntent::CleanBuildObjects { build: old.clone() })
        .unwrap_or(usize::MAX);
    assert!(clean < start, "the old build stops first");
    w.apply(&d);
    assert_eq!(progress_of_build(&w, &old), Some(Progress::Interrupted));
    assert!(w
        .build(&old)
        .status
        .as_ref()
        .and_then(|s| s.build_end.clone())
        .is_some());
    assert!(d
        .events
        .iter()
        .any(|e| e.reason == "BuildInterrupted" && e.name == old));
    assert_eq!(
        w.moscs[0]
            .metadata
            .annotations
            .get(CURRENT_BUILD_ANNOTATION),
        Some(&new)
    );
}

#[test]
fn a_deleted_job_interrupts_its_build() {
    let (mut w, name) = started();
    w.job_mut().deleting = true;
    let d = w.decide(&[]);
    w.apply(&d);
    assert_eq!(progress_of_build(&w, &name), Some(Progress::Interrupted));
    let (mut w, name) = started();
    w.jobs.clear();
    let d = w.decide(&[]);
    w.apply(&d);
    assert_eq!(progress_of_build(&w, &name), Some(Progress::Interrupted));
}

#[test]
fn opting_out_deletes_the_builds() {
    let (mut w, name) = started();
    w.moscs.clear();
    let d = w.decide(&[]);
    assert_eq!(
        d.intents,
        vec![BuildIntent::DeleteBuild {
            build: name.clone()
        }]
    );
    // A new MachineOSConfig of the same name (another uid) does not own the old builds.
    let (mut w, name) = started();
    w.moscs[0].metadata.uid = Some("other".into());
    let d = w.decide(&[]);
    assert_eq!(d.intents[0], BuildIntent::DeleteBuild { build: name });
}

#[test]
fn going_back_to_a_built_config_reuses_its_build() {
    let (mut w, first) = started();
    w.job_mut().succeeded = 1;
    let d = w.decide(&[(first.clone(), DIGEST.into())]);
    w.apply(&d);
    w.pool.spec.configuration.name = "rendered-worker-2".into();
    let d = w.decide(&[]);
    w.apply(&d);
    let d = w.decide(&[]);
    w.apply(&d);
    w.pool.spec.configuration.name = "rendered-worker-1".into();
    let d = w.decide(&[]);
    assert!(!d.intents.iter().any(|i| matches!(
        i,
        BuildIntent::CreateBuild(_) | BuildIntent::StartBuild { .. }
    )));
    w.apply(&d);
    assert_eq!(
        w.moscs[0]
            .metadata
            .annotations
            .get(CURRENT_BUILD_ANNOTATION),
        Some(&first)
    );
    assert_eq!(
        w.moscs[0]
            .status
            .as_ref()
            .and_then(|s| s.current_image_pull_spec.as_deref()),
        Some(format!("registry.example.com/ocl/worker@{DIGEST}").as_str())
    );
}

#[test]
fn the_rebuild_annotation_redoes_the_current_build() {
    let (mut w, name) = started();
    w.job_mut().failed = 4;
    let d = w.decide(&[]);
    w.apply(&d);
    w.moscs[0]
        .metadata
        .annotations
        .insert(REBUILD_ANNOTATION.into(), String::new());
    let d = w.decide(&[]);
    assert_eq!(
        d.intents,
        vec![BuildIntent::DeleteBuild {
            build: name.clone()
        }]
    );
    assert!(d.events.iter().any(|e| e.reason == "RebuildRequested"));
    w.apply(&d);
    let d = w.decide(&[]);
    assert_eq!(created_name(&d), name);
    w.apply(&d);
    let d = w.decide(&[]);
    w.apply(&d);
    w.job_mut().succeeded = 1;
    let d = w.decide(&[(name.clone(), DIGEST.into())]);
    assert!(d.intents.contains(&BuildIntent::SetCurrentBuild {
        config: "layered".into(),
        build: name,
        clear_rebuild: true
    }));
}

#[test]
fn no_build_while_the_pool_is_degraded_for_other_reasons() {
    let mut w = World::new();
    let mut st = w.pool.status_or_default();
    st.conditions
        .push(crate::api::Condition::of("NodeDegraded", true));
    w.pool.status = Some(st);
    let d = w.decide(&[]);
    assert!(d.intents.is_empty());
    assert!(d
        .waiting
        .is_some_and(|r| r.contains("degraded due to non-build issues")));
}

#[test]
fn digests_are_checked() {
    let spec = "registry.example.com/ocl/worker:latest";
    assert_eq!(
        digested_pullspec(spec, &format!("{DIGEST}\n")).as_deref(),
        Some(format!("registry.example.com/ocl/worker@{DIGEST}").as_str())
    );
    assert_eq!(digested_pullspec(spec, "latest"), None);
    assert_eq!(digested_pullspec(spec, "sha256:xyz"), None);
    assert_eq!(digested_pullspec("not a ref", DIGEST), None);
}

#[test]
fn a_rendered_config_without_a_release_version_blocks_the_build_and_says_why() {
    let mut w = World::new();
    for mc in &mut w.mcs {
        mc.metadata
            .annotations
            .remove(RELEASE_IMAGE_VERSION_ANNOTATION);
    }
    let d = w.decide(&[]);
    assert!(d.intents.is_empty(), "{:?}", d.intents);
    let blocked = d.blocked.unwrap_or_default();
    assert!(
        blocked.contains(RELEASE_IMAGE_VERSION_ANNOTATION)
            && blocked.contains("is machine-config-operator running?"),
        "{blocked}"
    );
    // A pool merely waiting for its render is not blocked.
    let mut w = World::new();
    w.pool.spec.configuration.name.clear();
    let d = w.decide(&[]);
    assert!(d.waiting.is_some() && d.blocked.is_none(), "{d:?}");
}
