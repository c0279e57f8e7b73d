//! One pool's sync: render, roll out, status, drains and garbage collection, decided by the
//! pure functions over a [`View`] of the cluster and carried out with kube-rs. The running
//! controller ([`super::run`]) takes its views from watch caches; [`Cluster::sync_all`]
//! lists the cluster once, for one-shot passes (tests, tools).

use super::drain::Drainer;
use super::rollout_policy::{Guard, PoolInputs, StatusWrite};
use super::Options;
use crate::objects::{self, Model, Stored};
use k8s_openapi::api::core::v1::Node as KubeNode;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use mco_render::api::machine_config::{GENERATED_BY_ANNOTATION, RELEASE_IMAGE_VERSION_ANNOTATION};
use mco_render::api::node::{DESIRED_CONFIG, DESIRED_IMAGE};
use mco_render::api::rollout_policy::{RolloutPolicy, RolloutPolicyStatus, TARGETED_AT};
use mco_render::api::Node;
use mco_render::api::{
    ControllerConfig, MachineConfig, MachineConfigNode, MachineConfigPool, MachineOSBuild,
    MachineOSConfig, PinnedImageSet,
};
use mco_render::controllers::gc::garbage_writes;
use mco_render::controllers::layered::{image_build_degraded, layering, Layering};
use mco_render::controllers::node_pool::{nodes_for_pool, MASTER};
use mco_render::controllers::pinned_image_sets::{condition_after_sync, pool_pinned_image_sets};
use mco_render::controllers::pool_metrics::pool_state;
use mco_render::controllers::pool_status::{calculate_status_with, PoolLayering};
use mco_render::controllers::render_sync::sync_pool_with;
use mco_render::controllers::rollout::{
    plan_rollout, plan_rollout_in, RolloutPlan, Scope, SET_DESIRED_CONFIG,
    SET_DESIRED_CONFIG_AND_OS_IMAGE,
};
use mco_render::controllers::rollout_policy::overlay_pool_status;
use mco_render::controllers::templates::certificates::{cert_expirys, certificates_update};
use mco_render::controllers::Write;
use mco_render::plan::reconcile::StorageOverride;
use serde_json::json;

/// The name of the ControllerConfig the controller renders with.
pub const CONTROLLER_CONFIG_NAME: &str = "machine-config-controller";

/// Why a sync pass stopped.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The API server refused or failed a request.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// A Node did not decode into this project's model.
    #[error("decoding {kind} {name}: {source}")]
    Decode {
        /// The object kind.
        kind: &'static str,
        /// The object name.
        name: String,
        /// The decode error.
        source: serde_json::Error,
    },
    /// The pool's PinnedImageSets could not be worked out or written (its
    /// `PinnedImageSetsDegraded` condition says so too).
    #[error("pool {pool}: pinned image sets: {message}")]
    PinnedImageSets {
        /// The pool.
        pool: String,
        /// What failed.
        message: String,
    },
}

/// A Node in the core's model (Nodes are Kubernetes' objects, reduced by the core to the
/// fields the controllers read).
pub fn decode_node(node: &KubeNode) -> Result<Node, SyncError> {
    let err = |source| SyncError::Decode {
        kind: "Node",
        name: node.metadata.name.clone().unwrap_or_default(),
        source,
    };
    serde_json::to_value(node)
        .and_then(serde_json::from_value)
        .map_err(err)
}

/// RFC 3339 UTC time with seconds, as Kubernetes writes it.
pub fn now_rfc3339() -> String {
    rfc3339(std::time::SystemTime::now())
}

/// `t` as RFC 3339 UTC with seconds (times before 1970 read as 1970).
pub fn rfc3339(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The objects a pool's sync reads: every MachineConfig, pool and Node, the
/// ControllerConfig, and for guarded rollouts the RolloutPolicies and MachineConfigNodes.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// Every MachineConfig.
    pub mcs: Vec<MachineConfig>,
    /// Every pool.
    pub pools: Vec<MachineConfigPool>,
    /// The `machine-config-controller` ControllerConfig.
    pub cc: Option<ControllerConfig>,
    /// Every Node.
    pub nodes: Vec<Node>,
    /// Every RolloutPolicy (one per pool, named after it).
    pub policies: Vec<RolloutPolicy>,
    /// Every MachineConfigNode.
    pub mcns: Vec<MachineConfigNode>,
    /// Every MachineOSConfig (on-cluster layering).
    pub moscs: Vec<MachineOSConfig>,
    /// Every MachineOSBuild.
    pub mosbs: Vec<MachineOSBuild>,
    /// The build Jobs in the MCO namespace.
    pub jobs: Vec<mco_render::api::JobView>,
    /// Every PinnedImageSet.
    pub pinned: Vec<PinnedImageSet>,
    /// The caches of the MCO namespace's Secrets and ConfigMaps a build reads (the running
    /// controller's); without them a build start lists them.
    pub build_inputs: Option<super::build::BuildInputs>,
    /// The storage sections the cluster's `irreconcilableValidationOverrides` exempt from the
    /// render's reconcilability check ([`super::validation_overrides`]).
    pub validation_overrides: Vec<StorageOverride>,
}

/// The controller's handle on the cluster.
pub struct Cluster {
    mcs: Api<Stored<MachineConfig>>,
    pools: Api<Stored<MachineConfigPool>>,
    ccs: Api<Stored<ControllerConfig>>,
    nodes: Api<KubeNode>,
    policies: Api<Stored<RolloutPolicy>>,
    mcns: Api<Stored<MachineConfigNode>>,
    moscs: Api<Stored<MachineOSConfig>>,
    mosbs: Api<Stored<MachineOSBuild>>,
    pinned: Api<Stored<PinnedImageSet>>,
    client: Client,
    builds: super::build::Builds,
    drainer: Drainer,
    guard: Guard,
    events: crate::events::Events,
    opts: Options,
    /// The ControllerConfig resourceVersion whose certificates were last found recorded.
    certificates_checked: Option<String>,
}

impl Cluster {
    /// A handle using `client`.
    pub fn new(client: Client, opts: Options) -> Self {
        Cluster {
            mcs: objects::api::<MachineConfig>(&client),
            pools: objects::api::<MachineConfigPool>(&client),
            ccs: objects::api::<ControllerConfig>(&client),
            nodes: Api::all(client.clone()),
            policies: objects::api::<RolloutPolicy>(&client),
            mcns: objects::api::<MachineConfigNode>(&client),
            moscs: objects::api::<MachineOSConfig>(&client),
            mosbs: objects::api::<MachineOSBuild>(&client),
            pinned: objects::api::<PinnedImageSet>(&client),
            client: client.clone(),
            builds: super::build::Builds::new(client.clone()),
            events: crate::events::Events::new(client.clone(), "machine-config-controller"),
            guard: Guard::new(&client),
            drainer: Drainer::new(client, opts.drain_timeout, opts.drain_retry)
                .with_metrics(opts.metrics.clone()),
            opts,
            certificates_checked: None,
        }
    }

    /// The cluster as listed now (eleven LISTs; the running controller reads caches instead).
    /// A kind the server does not serve (its CRD not installed) lists as empty.
    pub async fn list_view(&self) -> Result<View, SyncError> {
        let lp = ListParams::default();
        let mcs = self.mcs.list(&lp).await?;
        let mcs = mcs.into_iter().map(MachineConfig::from_object).collect();
        let pools = self.pools.list(&lp).await?;
        let pools = pools
            .into_iter()
            .map(MachineConfigPool::from_object)
            .collect();
        let cc = self
            .ccs
            .list(&lp)
            .await?
            .into_iter()
            .map(ControllerConfig::from_object)
            .find(|c| c.metadata.name == CONTROLLER_CONFIG_NAME);
        let mut nodes = Vec::new();
        for o in self.nodes.list(&lp).await? {
            nodes.push(decode_node(&o)?);
        }
        let policies = absent_is_empty(self.policies.list(&lp).await)?
            .into_iter()
            .map(RolloutPolicy::from_object)
            .collect();
        let mcns = absent_is_empty(self.mcns.list(&lp).await)?
            .into_iter()
            .map(MachineConfigNode::from_object)
            .collect();
        let moscs = absent_is_empty(self.moscs.list(&lp).await)?
            .into_iter()
            .map(MachineOSConfig::from_object)
            .collect();
        let mosbs = absent_is_empty(self.mosbs.list(&lp).await)?
            .into_iter()
            .map(MachineOSBuild::from_object)
            .collect();
        let jobs = self.builds.list_jobs().await?;
        let pinned = absent_is_empty(self.pinned.list(&lp).await)?
            .into_iter()
            .map(PinnedImageSet::from_object)
            .collect();
        Ok(View {
            mcs,
            pools,
            cc,
            nodes,
            policies,
            mcns,
            moscs,
            mosbs,
            jobs,
            pinned,
            build_inputs: None,
            validation_overrides: super::validation_overrides::list(&self.client).await?,
        })
    }

    /// Forgets the drains of nodes `view` no longer holds.
    pub fn forget_vanished_drains(&mut self, view: &View) {
        self.drainer
            .retain_nodes(|n| view.nodes.iter().any(|m| m.name() == n));
    }

    /// How long until the guarded rollout of pool `name` wants another pass (a gate's
    /// timeout, a soak's end, a window opening).
    pub fn next_rollout_wake(&self, name: &str) -> Option<std::time::Duration> {
        self.guard.next_wake(name)
    }

    /// How long until a drain in progress wants another pass (see [`Drainer::next_retry`]).
    pub fn next_drain_retry(&self) -> Option<std::time::Duration> {
        self.drainer.next_retry()
    }

    /// Carries out one write of the render controller or the garbage collector, and applies
    /// it to `mcs` and `pool` as the next decisions of the pass see them.
    async fn execute(
        &self,
        write: Write,
        mcs: &mut Vec<MachineConfig>,
        pool: Option<&mut MachineConfigPool>,
    ) -> Result<(), SyncError> {
        let merge = PatchParams::default();
        match write.clone() {
            Write::CreateMachineConfig(mc) | Write::UpdateMachineConfig(mc) => {
                let name = mc.name().to_string();
                let pp = PostParams::default();
                let (done, res) = match &write {
                    Write::CreateMachineConfig(_) => (
                        "created",
                        self.mcs.create(&pp, &mc.clone().into_object()).await,
                    ),
                    _ => (
                        "updated",
                        self.mcs
                            .replace(&name, &pp, &mc.clone().into_object())
                            .await,
                    ),
                };
                match res {
                    Ok(_) if done == "created" && name.starts_with("rendered-") => {
                        tracing::info!("{done} {name}");
                        if let Some(p) = pool.as_deref() {
                            let note = format!(
                                "{name} successfully generated (release version: {}, controller version: {})",
                                mc.metadata.annotations.get(RELEASE_IMAGE_VERSION_ANNOTATION).map_or("", String::as_str),
                                mc.metadata.annotations.get(GENERATED_BY_ANNOTATION).map_or("", String::as_str),
                            );
                            self.events
                                .on_pool(
                                    p.name(),
                                    p.metadata.uid.as_deref(),
                                    "RenderedConfigGenerated",
                                    note,
                                )
                                .await;
                        }
                    }
                    Ok(_) => tracing::info!("{done} {name}"),
                    Err(kube::Error::Api(s)) if s.code == 409 => {}
                    Err(e) => return Err(e.into()),
                }
                mcs.retain(|m| m.name() != name);
                mcs.push(mc);
            }
            Write::DeleteMachineConfig(name) => {
                match self.mcs.delete(&name, &DeleteParams::default()).await {
                    Ok(_) => tracing::info!("deleted unused rendered config {name}"),
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => return Err(e.into()),
                }
                mcs.retain(|m| m.name() != name);
            }
            Write::SetPoolConfiguration {
                pool: name,
                configuration,
            } => {
                let patch = json!({"spec": {"configuration": &configuration}});
                self.pools
                    .patch(&name, &merge, &Patch::Merge(&patch))
                    .await?;
                tracing::info!(pool = name.as_str(), "now targeting {}", configuration.name);
                if let Some(p) = pool {
                    p.spec.configuration = configuration;
                }
            }
            Write::PatchPoolStatus { pool: name, status } => {
                let patch = json!({ "status": &status });
                self.pools
                    .patch_status(&name, &merge, &Patch::Merge(&patch))
                    .await?;
                if let Some(p) = pool {
                    p.status = Some(status);
                }
            }
        }
        Ok(())
    }

    /// Points the plan's nodes at its target (and stamps [`TARGETED_AT`] in the same patch
    /// when `targeted_at` is given), and applies that to `view`.
    async fn target_nodes(
        &self,
        view: &mut View,
        plan: &RolloutPlan,
        targeted_at: Option<&str>,
    ) -> Result<(), SyncError> {
        for node in &plan.update {
            let mut annotations = serde_json::Map::new();
            annotations.insert(DESIRED_CONFIG.into(), json!(plan.target));
            // A layered pool's nodes get the image with the config; any other pool's lose it.
            annotations.insert(DESIRED_IMAGE.into(), json!(plan.image));
            if let Some(t) = targeted_at {
                annotations.insert(TARGETED_AT.into(), json!(t));
            }
            let patch = json!({"metadata": {"annotations": annotations}});
            self.nodes
                .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            if let Some(n) = view.nodes.iter_mut().find(|n| n.name() == node) {
                let a = &mut n.metadata.annotations;
                a.insert(DESIRED_CONFIG.into(), plan.target.clone());
                match &plan.image {
                    Some(i) => a.insert(DESIRED_IMAGE.into(), i.clone()),
                    None => a.remove(DESIRED_IMAGE),
                };
                if let Some(t) = targeted_at {
                    a.insert(TARGETED_AT.into(), t.to_string());
                }
            }
        }
        Ok(())
    }

    /// One full pass over a listed view: every pool synced, drains of vanished nodes
    /// forgotten.
    pub async fn sync_all(&mut self) -> Result<(), SyncError> {
        let mut view = self.list_view().await?;
        self.sync_controller_certificates(&mut view).await?;
        let names: Vec<String> = view.pools.iter().map(|p| p.name().to_string()).collect();
        for name in &names {
            self.sync_pool(&mut view, name).await?;
        }
        self.report_cluster_metrics(&view);
        self.drainer
            .retain_nodes(|n| view.nodes.iter().any(|m| m.name() == n));
        Ok(())
    }

    /// Records the certificates of the ControllerConfig's CA bundles in its status
    /// (`status.controllerCertificates`), as upstream's template controller does, when they
    /// changed; `view` sees the new status.
    /// The bundles are read again only when the ControllerConfig changed since they were
    /// last found recorded (its resourceVersion), not on every pass.
    pub async fn sync_controller_certificates(&mut self, view: &mut View) -> Result<(), SyncError> {
        let Some(cc) = view.cc.as_mut() else {
            return Ok(());
        };
        let version = cc.metadata.resource_version.clone();
        if version.is_some() && self.certificates_checked == version {
            return Ok(());
        }
        let Some(certs) = certificates_update(cc) else {
            self.certificates_checked = version;
            return Ok(());
        };
        let patch = json!({"status": {"controllerCertificates": &certs}});
        self.ccs
            .patch_status(
                &cc.metadata.name,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await?;
        tracing::info!(
            certificates = certs.len(),
            "recorded the ControllerConfig's certificates"
        );
        cc.status
            .get_or_insert_with(Default::default)
            .controller_certificates = certs;
        Ok(())
    }

    /// The metrics about the cluster rather than one pool: the MachineOSConfigs, and no
    /// `mco_state` left of a deleted pool.
    pub fn report_cluster_metrics(&self, view: &View) {
        let metrics = &self.opts.metrics;
        let pools: Vec<&str> = view.pools.iter().map(|p| p.name()).collect();
        metrics.retain_pool_states(&pools);
        metrics.set_mosc_count(view.moscs.len());
    }

    /// Syncs the pool `name`: its `spec.pinnedImageSets` (a failure reported as
    /// `PinnedImageSetsDegraded` and returned once the rest of the sync is done), render (create the rendered MachineConfig, point the pool at it,
    /// RenderDegraded), its on-cluster layering builds ([`super::build`]), roll out (a
    /// layered pool only once its build succeeded, to the built image), roll out (desiredConfig within maxUnavailable; with a RolloutPolicy
    /// as `mco_render::controllers::rollout_policy::decide` says, its status and Events
    /// written and added to the pool's), status, the drains its nodes ask for, and garbage
    /// collection of its unused rendered configs. The writes are applied to `view` as later
    /// decisions see them. Requests: only the writes, and the pods of nodes a health gate
    /// waits on.
    pub async fn sync_pool(&mut self, view: &mut View, name: &str) -> Result<(), SyncError> {
        let now = now_rfc3339();
        let Some(index) = view.pools.iter().position(|p| p.name() == name) else {
            return Ok(());
        };
        let mut pool = view.pools[index].clone();

        // The PinnedImageSets the pool names (upstream's pinned-image-set controller).
        let pinned_error = self.sync_pinned_image_sets(view, &mut pool).await;

        // Render.
        let rs = sync_pool_with(
            &pool,
            &view.mcs,
            view.cc.as_ref(),
            &self.opts.render,
            &view.validation_overrides,
            &now,
        );
        if let Some(e) = &rs.error {
            tracing::warn!(pool = name, "{e}");
        }
        if let Some(overridden) = rs.os_image_url_overridden {
            self.opts
                .metrics
                .set_os_image_url_override(name, overridden);
        }
        for write in rs.writes(name) {
            self.execute(write, &mut view.mcs, Some(&mut pool)).await?;
        }

        // On-cluster layering: the pool's builds, then whether and where its nodes roll.
        view.pools[index] = pool.clone();
        self.builds.sync(view, name, &now).await?;
        let layered = layering(&pool, &view.moscs, &view.mosbs);
        if let Layering::Waiting { reason, .. } = &layered {
            tracing::info!(pool = name, "layered pool waits: {reason}");
        }

        // Roll out.
        let (mine, errors) = nodes_for_pool(&pool, &view.pools, &view.nodes);
        for (n, e) in errors {
            tracing::warn!(node = n.name(), "{e}");
        }
        let members: Vec<String> = mine.iter().map(|n| n.name().to_string()).collect();
        self.opts.metrics.set_pool_alerts(&view.pools, &mine);
        let defer = if name == MASTER {
            std::env::var("NODE_NAME").ok()
        } else {
            None
        };
        let policy = view.policies.iter().find(|p| p.name() == name).cloned();
        let instant = jiff::Timestamp::now();
        let mut policy_status: Option<RolloutPolicyStatus> = None;
        let planned = match (&layered, &policy) {
            (Layering::Waiting { .. }, _) => Ok(RolloutPlan::default()),
            (Layering::Ready { config, image, .. }, _) => {
                // A layered pool rolls to its built image under upstream's rule.
                self.guard.forget(name);
                let scope = Scope {
                    target: config,
                    image: Some(image),
                    ..Scope::default()
                };
                plan_rollout_in(&pool, &mine, defer.as_deref(), &scope)
            }
            (Layering::NotLayered, None) => {
                self.guard.forget(name);
                plan_rollout(&pool, &mine, defer.as_deref())
            }
            (Layering::NotLayered, Some(policy)) if self.guard.cache_is_behind(policy) => {
                // The rest of the pass waits for the write to reach the cache (its watch
                // event, or the guard's wake, brings the pool back at once).
                tracing::debug!(pool = name, "the RolloutPolicy's cache is behind its write");
                view.pools[index] = pool;
                return pinned_outcome(name, pinned_error);
            }
            (Layering::NotLayered, Some(policy)) => {
                let inputs = PoolInputs {
                    pool: &pool,
                    policy,
                    nodes: &mine,
                    mcns: &view.mcns,
                    mcs: &view.mcs,
                    defer: defer.as_deref(),
                };
                let d = self.guard.decide(&inputs, instant).await?;
                match self.guard.write_status(policy, &d.status).await? {
                    StatusWrite::Stale => {
                        // Decided from an older policy than the server's: nothing of it holds.
                        tracing::debug!(pool = name, "RolloutPolicy changed while deciding");
                        view.pools[index] = pool;
                        return pinned_outcome(name, pinned_error);
                    }
                    StatusWrite::Written => tracing::info!(
                        pool = name,
                        "rollout {}: {}",
                        d.status.phase.as_str(),
                        d.status.message
                    ),
                    StatusWrite::Unchanged => {}
                }
                if let Some(p) = view.policies.iter_mut().find(|p| p.name() == name) {
                    p.status = Some(d.status.clone());
                }
                for e in d.events {
                    self.events
                        .on_pool_typed(
                            name,
                            pool.metadata.uid.as_deref(),
                            e.warning,
                            e.reason,
                            e.note,
                        )
                        .await;
                }
                policy_status = Some(d.status);
                Ok(d.plan)
            }
        };
        // Guarded rollouts stamp when they targeted a node, in the same write.
        let targeted_at = policy
            .as_ref()
            .map(|_| mco_render::controllers::rollout_policy::rfc3339(instant));
        match planned {
            Err(e) => tracing::warn!(pool = name, "{e}"),
            Ok(plan) => {
                self.target_nodes(view, &plan, targeted_at.as_deref())
                    .await?;
                if let Some(note) = plan.set_desired_config_note() {
                    tracing::info!(pool = name, "targeted {:?} to {}", plan.update, plan.target);
                    // On the pool, once every node is targeted, as upstream records it.
                    let reason = if plan.image.is_some() {
                        SET_DESIRED_CONFIG_AND_OS_IMAGE
                    } else {
                        SET_DESIRED_CONFIG
                    };
                    self.events
                        .on_pool(name, pool.metadata.uid.as_deref(), reason, note)
                        .await;
                }
            }
        }

        // Status.
        let mine: Vec<&Node> = view
            .nodes
            .iter()
            .filter(|n| members.iter().any(|m| m == n.name()))
            .collect();
        let pool_layering = PoolLayering {
            layered: layered.is_layered(),
            image: layered.image().map(str::to_string),
            building: matches!(layered, Layering::Waiting { building: true, .. }),
            build_degraded: image_build_degraded(&pool, &view.moscs, &view.mosbs, &view.jobs),
        };
        let mut status = calculate_status_with(&pool, &mine, &now, &pool_layering);
        if let Some(ps) = &policy_status {
            overlay_pool_status(&mut status, ps, &now);
            keep_transition_times(&mut status, pool.status.as_ref());
        }
        let pinned_result = pinned_error.as_ref().map_or(Ok(()), |e| Err(e.as_str()));
        if let Some(c) = condition_after_sync(&pool, pinned_result, &now) {
            status.set_condition(c);
        }
        let seen = now.parse::<jiff::Timestamp>().map_or(0, |t| t.as_second());
        self.opts.metrics.set_pool_state(
            name,
            &members.iter().map(String::as_str).collect::<Vec<_>>(),
            &pool_state(Some(&status)),
            seen,
        );
        self.opts.metrics.set_pool(
            name,
            crate::metrics::PoolCounts {
                machines: status.machine_count.into(),
                updated: status.updated_machine_count.into(),
                degraded: status.degraded_machine_count.into(),
                unavailable: status.unavailable_machine_count.into(),
            },
        );
        status.cert_expirys = cert_expirys(view.cc.as_ref());
        if pool.status.as_ref() != Some(&status) {
            let write = Write::PatchPoolStatus {
                pool: name.to_string(),
                status,
            };
            self.execute(write, &mut view.mcs, Some(&mut pool)).await?;
        }

        // Drains the agents of its nodes ask for.
        self.drainer.sync(&mine).await?;

        // Garbage collection of its unused rendered configs.
        if let Some(keep) = self.opts.gc_keep {
            let prefix = format!("rendered-{name}-");
            for write in garbage_writes(&view.mcs, &view.pools, &view.nodes, keep) {
                if matches!(&write, Write::DeleteMachineConfig(n) if n.starts_with(&prefix)) {
                    self.execute(write, &mut view.mcs, None).await?;
                }
            }
        }
        view.pools[index] = pool;
        pinned_outcome(name, pinned_error)
    }

    /// Points `pool`'s `spec.pinnedImageSets` at the PinnedImageSets its
    /// `machineConfigSelector` matches, with a merge patch of that field alone and only when
    /// it differs. The error, if any, is upstream's `PinnedImageSetsDegraded` cause.
    async fn sync_pinned_image_sets(
        &self,
        view: &mut View,
        pool: &mut MachineConfigPool,
    ) -> Option<String> {
        let refs = match pool_pinned_image_sets(pool, &view.pinned) {
            Ok(Some(refs)) => refs,
            Ok(None) => return None,
            Err(e) => return Some(format!("spec.machineConfigSelector: {e}")),
        };
        if refs == pool.spec.pinned_image_sets {
            return None;
        }
        let field = if refs.is_empty() {
            serde_json::Value::Null
        } else {
            json!(refs)
        };
        let patch = json!({"spec": {"pinnedImageSets": field}});
        let name = pool.name().to_string();
        match self
            .pools
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                let names: Vec<&str> = refs.iter().map(|r| r.name.as_str()).collect();
                tracing::info!(pool = name.as_str(), "pinned image sets now {names:?}");
                pool.spec.pinned_image_sets = refs;
                None
            }
            Err(e) => Some(e.to_string()),
        }
    }
}

/// A pool sync's outcome: its PinnedImageSets failure, if any, once the rest is done.
fn pinned_outcome(pool: &str, error: Option<String>) -> Result<(), SyncError> {
    match error {
        Some(message) => Err(SyncError::PinnedImageSets {
            pool: pool.to_string(),
            message,
        }),
        None => Ok(()),
    }
}

/// A LIST of a kind the server does not serve (404: its CRD is not installed) as empty.
pub(crate) fn absent_is_empty<K>(
    r: Result<kube::core::ObjectList<K>, kube::Error>,
) -> Result<Vec<K>, kube::Error>
where
    K: Clone,
{
    match r {
        Ok(l) => Ok(l.items),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Keeps the stored `lastTransitionTime` of every condition whose status, reason and
/// message did not change: the overlay sets conditions anew after `calculate_status`, which
/// would otherwise restamp them on every pass (and write the status each time).
fn keep_transition_times(
    status: &mut mco_render::api::MachineConfigPoolStatus,
    old: Option<&mco_render::api::MachineConfigPoolStatus>,
) {
    let Some(old) = old else { return };
    for c in &mut status.conditions {
        if let Some(o) = old.condition(&c.type_) {
            if o.status == c.status && o.reason() == c.reason() && o.message() == c.message() {
                c.last_transition_time = o.last_transition_time.clone();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn time_format() {
        let t = super::now_rfc3339();
        assert_eq!(t.len(), 20);
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T');
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_709_210_096);
        assert_eq!(super::rfc3339(at), "2024-02-29T12:34:56Z");
    }
}
