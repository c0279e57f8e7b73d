//! On-cluster layering's build controller, the adapter: carries out what
//! `mco_render::controllers::build::lifecycle::decide` intends for a pool (MachineOSBuilds
//! created, started through the build request's ConfigMaps, Secrets and Job, their status
//! from the Job, the MachineOSConfig pointed at the built image, builds interrupted and
//! removed) and records upstream's Events. Called from the pool's sync
//! ([`super::pool_sync`]), before the rollout, with the caches' view.

use super::pool_sync::{SyncError, View};
use crate::objects::{self, Model, Stored};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::runtime::reflector::Store;
use kube::{Api, Client};
use mco_render::api::{JobView, MachineOSBuild, MachineOSConfig};
use mco_render::controllers::build::lifecycle::{
    decide, digest_config_map, ephemeral_config_maps, ephemeral_secrets, job_name, BuildDecision,
    BuildIntent, PoolBuilds, DIGEST_KEY, JOB_UID_ANNOTATION,
};
use mco_render::controllers::build::request::NAMESPACE;
use mco_render::controllers::build::{build_request, RequestInputs};
use serde_json::{json, Value};

/// The label every object made for a build carries (the Job watch selects on it).
pub const ON_CLUSTER_LAYERING_LABEL: &str = "machineconfiguration.openshift.io/on-cluster-layering";

/// The build controller's handle on the cluster.
pub struct Builds {
    moscs: Api<Stored<MachineOSConfig>>,
    mosbs: Api<Stored<MachineOSBuild>>,
    jobs: Api<Job>,
    config_maps: Api<ConfigMap>,
    secrets: Api<Secret>,
    events: crate::events::Events,
    /// Per pool, why its build cannot start, as last told (told again only when it changes).
    told_blocked: std::sync::Mutex<std::collections::BTreeMap<String, String>>,
}

pub(crate) fn ignore_absent(r: Result<(), kube::Error>) -> Result<(), kube::Error> {
    match r {
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        other => other,
    }
}

/// A create that found the name taken is `None`.
pub(crate) fn ignore_exists<T>(r: Result<T, kube::Error>) -> Result<Option<T>, kube::Error> {
    match r {
        Ok(t) => Ok(Some(t)),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(None),
        Err(e) => Err(e),
    }
}

/// The Secrets and ConfigMaps of the MCO namespace as the build request reads them (JSON with
/// their `kind`).
fn as_objects<'a>(
    secrets: impl Iterator<Item = &'a Secret>,
    config_maps: impl Iterator<Item = &'a ConfigMap>,
) -> Vec<Value> {
    let typed = |mut v: Value, kind: &str| {
        v["kind"] = json!(kind);
        v
    };
    let secrets = secrets.map(|s| typed(serde_json::to_value(s).unwrap_or_default(), "Secret"));
    let config_maps =
        config_maps.map(|c| typed(serde_json::to_value(c).unwrap_or_default(), "ConfigMap"));
    secrets.chain(config_maps).collect()
}

/// The watch caches of the MCO namespace's Secrets and ConfigMaps (what a build reads: the
/// push and pull secrets, the images ConfigMap, the entitlement objects).
#[derive(Clone)]
pub struct BuildInputs {
    /// The Secrets.
    pub secrets: Store<Secret>,
    /// The ConfigMaps.
    pub config_maps: Store<ConfigMap>,
}

impl std::fmt::Debug for BuildInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuildInputs")
            .field("secrets", &self.secrets.state().len())
            .field("config_maps", &self.config_maps.state().len())
            .finish()
    }
}

impl BuildInputs {
    /// The cached objects as the build request reads them.
    pub fn objects(&self) -> Vec<Value> {
        let secrets = self.secrets.state();
        let config_maps = self.config_maps.state();
        as_objects(
            secrets.iter().map(|s| &**s),
            config_maps.iter().map(|c| &**c),
        )
    }
}

/// Whether an object of the MCO namespace is one a build made (its ConfigMaps and Secrets carry
/// the on-cluster layering label): those are no input a waiting build needs.
pub fn is_build_object(labels: Option<&std::collections::BTreeMap<String, String>>) -> bool {
    labels.is_some_and(|l| l.contains_key(ON_CLUSTER_LAYERING_LABEL))
}

/// The Jobs of the view: the build Jobs as the core reads them.
pub fn job_views(jobs: &[Job]) -> Vec<JobView> {
    jobs.iter()
        .filter_map(|j| serde_json::to_value(j).ok())
        .map(|v| JobView::from_json(&v))
        .collect()
}

impl Builds {
    /// A handle using `client`.
    pub fn new(client: Client) -> Self {
        Builds {
            moscs: objects::api::<MachineOSConfig>(&client),
            mosbs: objects::api::<MachineOSBuild>(&client),
            jobs: Api::namespaced(client.clone(), NAMESPACE),
            config_maps: Api::namespaced(client.clone(), NAMESPACE),
            secrets: Api::namespaced(client.clone(), NAMESPACE),
            events: crate::events::Events::new(client, "machine-config-controller"),
            told_blocked: Default::default(),
        }
    }

    /// The build Jobs of the MCO namespace, listed now.
    pub async fn list_jobs(&self) -> Result<Vec<JobView>, kube::Error> {
        let lp = ListParams::default().labels(ON_CLUSTER_LAYERING_LABEL);
        Ok(job_views(&self.jobs.list(&lp).await?.items))
    }

    /// The decision for pool `name`, with the digest ConfigMaps it asks for read.
    async fn decision(
        &self,
        view: &View,
        name: &str,
        now: &str,
    ) -> Result<BuildDecision, SyncError> {
        let Some(pool) = view.pools.iter().find(|p| p.name() == name) else {
            return Ok(BuildDecision::default());
        };
        let inputs = PoolBuilds {
            pool,
            mcs: &view.mcs,
            moscs: &view.moscs,
            mosbs: &view.mosbs,
            jobs: &view.jobs,
        };
        let d = decide(&inputs, &[], now);
        if d.digest_wanted.is_empty() {
            return Ok(d);
        }
        let mut digests = Vec::new();
        for build in &d.digest_wanted {
            // From the cache when it holds it (the Job's own watch event may come first: then
            // from the API server).
            let name = digest_config_map(build);
            let cached = view.build_inputs.as_ref().and_then(|i| {
                i.config_maps
                    .state()
                    .into_iter()
                    .find(|c| c.metadata.name.as_deref() == Some(name.as_str()))
                    .map(|c| (*c).clone())
            });
            let found = match cached {
                Some(cm) => Some(cm),
                None => self.config_maps.get_opt(&name).await?,
            };
            match found {
                Some(cm) => {
                    let digest = cm
                        .data
                        .as_ref()
                        .and_then(|d| d.get(DIGEST_KEY))
                        .cloned()
                        .unwrap_or_default();
                    digests.push((build.clone(), digest));
                }
                None => tracing::info!(
                    pool = name,
                    "build {build}: Job succeeded, digest ConfigMap {} not there yet",
                    digest_config_map(build)
                ),
            }
        }
        Ok(decide(&inputs, &digests, now))
    }

    /// Tells the administrator, once per cause, why pool `name`'s build cannot start: a
    /// warning in the log and a Warning Event `BuildBlocked` on its MachineOSConfig.
    async fn tell_blocked(&self, view: &View, name: &str, blocked: Option<&str>) {
        let changed = {
            let mut told = self.told_blocked.lock().unwrap_or_else(|e| e.into_inner());
            match blocked {
                None => {
                    told.remove(name);
                    false
                }
                Some(b) => told.insert(name.to_string(), b.to_string()).as_deref() != Some(b),
            }
        };
        let Some(why) = blocked.filter(|_| changed) else {
            return;
        };
        tracing::warn!(pool = name, "build not started: {why}");
        if let Some(mosc) = view
            .moscs
            .iter()
            .find(|m| m.spec.machine_config_pool.name == name)
        {
            self.events
                .on_mco_object(
                    "MachineOSConfig",
                    &mosc.metadata.name,
                    mosc.metadata.uid.as_deref(),
                    true,
                    "BuildBlocked",
                    why.to_string(),
                )
                .await;
        }
    }

    /// Decides and carries out the build controller's writes for pool `name`, applying them
    /// to `view` as the rollout that follows sees them.
    pub async fn sync(&self, view: &mut View, name: &str, now: &str) -> Result<(), SyncError> {
        let d = self.decision(view, name, now).await?;
        if let Some(w) = &d.waiting {
            tracing::debug!(pool = name, "build: {w}");
        }
        self.tell_blocked(view, name, d.blocked.as_deref()).await;
        for intent in d.intents {
            self.execute(view, name, intent, now).await?;
        }
        for e in d.events {
            let uid = match e.kind {
                "MachineOSConfig" => view
                    .moscs
                    .iter()
                    .find(|m| m.metadata.name == e.name)
                    .and_then(|m| m.metadata.uid.clone()),
                _ => view
                    .mosbs
                    .iter()
                    .find(|m| m.metadata.name == e.name)
                    .and_then(|m| m.metadata.uid.clone()),
            };
            self.events
                .on_mco_object(e.kind, &e.name, uid.as_deref(), e.warning, e.reason, e.note)
                .await;
        }
        Ok(())
    }

    async fn execute(
        &self,
        view: &mut View,
        pool: &str,
        intent: BuildIntent,
        now: &str,
    ) -> Result<(), SyncError> {
        let merge = PatchParams::default();
        match intent {
            BuildIntent::CreateBuild(b) => {
                let name = b.metadata.name.clone();
                let created = ignore_exists(
                    self.mosbs
                        .create(&PostParams::default(), &(*b).clone().into_object())
                        .await,
                )?;
                if let Some(o) = created {
                    tracing::info!(pool, "New MachineOSBuild created: {name}");
                    view.mosbs.retain(|m| m.metadata.name != name);
                    view.mosbs.push(MachineOSBuild::from_object(o));
                }
            }
            BuildIntent::StartBuild { build, config } => {
                self.start(view, pool, &build, &config, now).await?;
            }
            BuildIntent::SetBuildStatus { build, status } => {
                let patch = json!({ "status": &*status });
                match self
                    .mosbs
                    .patch_status(&build, &merge, &Patch::Merge(&patch))
                    .await
                {
                    Ok(_) => tracing::info!(pool, "Updated status on MachineOSBuild {build}"),
                    Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
                    Err(e) => return Err(e.into()),
                }
                if let Some(m) = view.mosbs.iter_mut().find(|m| m.metadata.name == build) {
                    m.status = Some(*status);
                }
            }
            BuildIntent::SetCurrentBuild {
                config,
                build,
                clear_rebuild,
            } => {
                use mco_render::controllers::build::lifecycle::{
                    CURRENT_BUILD_ANNOTATION, REBUILD_ANNOTATION,
                };
                let mut annotations = serde_json::Map::new();
                annotations.insert(CURRENT_BUILD_ANNOTATION.into(), json!(build));
                if clear_rebuild {
                    annotations.insert(REBUILD_ANNOTATION.into(), Value::Null);
                }
                let patch = json!({"metadata": {"annotations": annotations}});
                self.moscs
                    .patch(&config, &merge, &Patch::Merge(&patch))
                    .await?;
                tracing::info!(
                    pool,
                    "Set current build on MachineOSConfig {config} to MachineOSBuild {build}"
                );
                if let Some(m) = view.moscs.iter_mut().find(|m| m.metadata.name == config) {
                    m.metadata
                        .annotations
                        .insert(CURRENT_BUILD_ANNOTATION.into(), build);
                    if clear_rebuild {
                        m.metadata.annotations.remove(REBUILD_ANNOTATION);
                    }
                }
            }
            BuildIntent::SetConfigStatus { config, status } => {
                let patch = json!({ "status": &*status });
                self.moscs
                    .patch_status(&config, &merge, &Patch::Merge(&patch))
                    .await?;
                tracing::info!(pool, "Updated status on MachineOSConfig {config}");
                if let Some(m) = view.moscs.iter_mut().find(|m| m.metadata.name == config) {
                    m.status = Some(*status);
                }
            }
            BuildIntent::CleanBuildObjects { build } => {
                self.clean(&build).await?;
                let job = job_name(&build);
                view.jobs.retain(|j| j.name != job);
            }
            BuildIntent::DeleteBuild { build } => {
                self.clean(&build).await?;
                ignore_absent(
                    self.config_maps
                        .delete(&digest_config_map(&build), &DeleteParams::default())
                        .await
                        .map(|_| ()),
                )?;
                ignore_absent(
                    self.mosbs
                        .delete(&build, &DeleteParams::default())
                        .await
                        .map(|_| ()),
                )?;
                tracing::info!(pool, "Deleted MachineOSBuild {build}");
                let job = job_name(&build);
                view.jobs.retain(|j| j.name != job);
                view.mosbs.retain(|m| m.metadata.name != build);
            }
        }
        Ok(())
    }

    /// The Job (foreground, as upstream stops it), the ConfigMaps and Secrets of a build.
    async fn clean(&self, build: &str) -> Result<(), kube::Error> {
        let foreground = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Foreground),
            ..DeleteParams::default()
        };
        ignore_absent(
            self.jobs
                .delete(&job_name(build), &foreground)
                .await
                .map(|_| ()),
        )?;
        for cm in ephemeral_config_maps(build) {
            ignore_absent(
                self.config_maps
                    .delete(&cm, &DeleteParams::default())
                    .await
                    .map(|_| ()),
            )?;
        }
        for s in ephemeral_secrets(build) {
            ignore_absent(
                self.secrets
                    .delete(&s, &DeleteParams::default())
                    .await
                    .map(|_| ()),
            )?;
        }
        Ok(())
    }

    /// Runs the build request and creates what it makes: ConfigMaps, Secrets, the Job (owned
    /// by the build), then the ConfigMaps and Secrets owned by the Job, and the Job's uid on
    /// the build, as upstream's Job image builder does.
    async fn start(
        &self,
        view: &mut View,
        pool_name: &str,
        build: &str,
        config: &str,
        now: &str,
    ) -> Result<(), SyncError> {
        let (Some(pool), Some(mosc)) = (
            view.pools.iter().find(|p| p.name() == pool_name),
            view.moscs.iter().find(|m| m.metadata.name == config),
        ) else {
            return Ok(());
        };
        let Some(stored) = view
            .mosbs
            .iter()
            .find(|m| m.metadata.name == build)
            .cloned()
        else {
            return Ok(());
        };
        let Some(rendered) = view
            .mcs
            .iter()
            .find(|m| m.name() == pool.spec.configuration.name)
        else {
            return Ok(());
        };
        let Some(cc) = view.cc.as_ref() else {
            tracing::warn!(pool = pool_name, "build {build}: no ControllerConfig yet");
            return Ok(());
        };
        let objects = match &view.build_inputs {
            Some(inputs) => inputs.objects(),
            None => {
                let lp = ListParams::default();
                let secrets = self.secrets.list(&lp).await?.items;
                let config_maps = self.config_maps.list(&lp).await?.items;
                as_objects(secrets.iter(), config_maps.iter())
            }
        };
        let out = build_request(&RequestInputs {
            mosc,
            pool,
            rendered,
            rendered_source: None,
            controller_config: cc,
            objects: &objects,
        });
        if let Some(e) = &out.error {
            tracing::warn!(
                pool = pool_name,
                "could not start build for MachineOSBuild {build:?}: {e}"
            );
            if matches!(
                e,
                mco_render::controllers::build::BuildError::Containerfile(_)
            ) {
                // An invalid Containerfile never builds: the build fails, as upstream marks it.
                use mco_render::controllers::build::progress::{conditions, Progress};
                let mut status = stored.status.clone().unwrap_or_default();
                status.conditions = conditions(Progress::Failed, now);
                status.build_end = Some(now.to_string());
                let patch = json!({ "status": &status });
                self.mosbs
                    .patch_status(build, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
                if let Some(m) = view.mosbs.iter_mut().find(|m| m.metadata.name == build) {
                    m.status = Some(status);
                }
            }
            return Ok(());
        }
        if out
            .machine_os_build
            .as_ref()
            .map(|b| b.metadata.name.as_str())
            != Some(build)
        {
            // The pool moved on since the decision; the next pass decides again.
            return Ok(());
        }
        let pp = PostParams::default();
        let mut made_cms = Vec::new();
        for cm in out.config_maps.unwrap_or_default() {
            let cm: ConfigMap = serde_json::from_value(cm).map_err(|source| SyncError::Decode {
                kind: "ConfigMap",
                name: build.to_string(),
                source,
            })?;
            made_cms.push(cm.metadata.name.clone().unwrap_or_default());
            ignore_exists(self.config_maps.create(&pp, &cm).await)?;
        }
        let mut made_secrets = Vec::new();
        for s in out.secrets.unwrap_or_default() {
            let s: Secret = serde_json::from_value(s).map_err(|source| SyncError::Decode {
                kind: "Secret",
                name: build.to_string(),
                source,
            })?;
            made_secrets.push(s.metadata.name.clone().unwrap_or_default());
            ignore_exists(self.secrets.create(&pp, &s).await)?;
        }
        let Some(mut job) = out.job else {
            return Ok(());
        };
        if let Some(owner) = job
            .pointer_mut("/metadata/ownerReferences/0")
            .and_then(Value::as_object_mut)
        {
            owner.insert(
                "uid".into(),
                json!(stored.metadata.uid.clone().unwrap_or_default()),
            );
        }
        let job: Job = serde_json::from_value(job).map_err(|source| SyncError::Decode {
            kind: "Job",
            name: build.to_string(),
            source,
        })?;
        let created = match ignore_exists(self.jobs.create(&pp, &job).await)? {
            Some(j) => j,
            None => self.jobs.get(&job_name(build)).await?,
        };
        let job_uid = created.metadata.uid.clone().unwrap_or_default();
        self.events
            .on_mco_object(
                "MachineOSBuild",
                build,
                stored.metadata.uid.as_deref(),
                false,
                "JobCreated",
                format!("Created build job: {}", job_name(build)),
            )
            .await;
        tracing::info!(
            pool = pool_name,
            "Build job {} created for MachineOSBuild {build}",
            job_name(build)
        );
        let owner = json!({"metadata": {"ownerReferences": [{
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": job_name(build),
            "uid": job_uid,
            "controller": false,
            "blockOwnerDeletion": false,
        }]}});
        let merge = PatchParams::default();
        for cm in &made_cms {
            self.config_maps
                .patch(cm, &merge, &Patch::Merge(&owner))
                .await?;
        }
        for s in &made_secrets {
            self.secrets.patch(s, &merge, &Patch::Merge(&owner)).await?;
        }
        let patch = json!({"metadata": {"annotations": {JOB_UID_ANNOTATION: job_uid}}});
        ignore_absent(
            self.mosbs
                .patch(build, &merge, &Patch::Merge(&patch))
                .await
                .map(|_| ()),
        )?;
        view.jobs.retain(|j| j.name != job_name(build));
        view.jobs.extend(job_views(std::slice::from_ref(&created)));
        Ok(())
    }
}
