//! The machine-config-controller: watch caches of the MCO kinds and Nodes, a work queue of
//! pools, and per-pool reconciles that call the pure decisions in `mco_render::controllers`
//! and carry out their writes with kube-rs ([`pool_sync`]).
//!
//! Built the kube-runtime way: one watch per kind keeps a store ([`crate::reflect`]); each
//! change enqueues the pools it affects (a Node its own pool, a pool itself, a MachineConfig
//! or the ControllerConfig every pool, a rendered config its pool, a RolloutPolicy the pool of
//! its name, a MachineConfigNode its node's pool, a MachineOSConfig its pool, a MachineOSBuild
//! and a build Job the pool they are labelled for, a PinnedImageSet the pools whose
//! machineConfigSelector matches it, a Secret or ConfigMap of the MCO namespace that a build
//! may read the pools MachineOSConfigs name); kube-runtime's applier runs the reconciles
//! (one at a time per pool, deduplicated, debounced) and requeues each after the resync,
//! sooner while a drain waits or when a guarded rollout wants another look
//! ([`rollout_policy`]: a gate's timeout, a soak's end, a window opening). After start-up the
//! controller LISTs only when a watch must re-list, and pods only while a health gate waits
//! on them.
//!
//! Next to it, [`generators::run_with`] runs the controllers that write MachineConfigs: the
//! template controller (with a templates folder), the cluster-config controllers and the
//! KubeletConfig and ContainerRuntimeConfig controllers. Both read the watches of one
//! [`Registry`] ([`run_leading`]), which the admission webhook shares: each kind is watched once
//! per process.

pub mod build;
pub mod cluster_config;
pub mod drain;
pub mod generators;
pub mod pool_sync;
pub mod resources;
pub mod rollout_policy;
pub mod templates;
pub mod validation_overrides;
pub mod writes;

use crate::crd;
use crate::objects::{self, Model, Stored};
use crate::reflect::{Change, ObjectRef, Registry, Subscription, Watched};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Node as KubeNode, Secret};
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::controller::{Action, Config as ApplierConfig};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Api, Client};
use mco_render::api::rollout_policy::RolloutPolicy;
use mco_render::api::{
    ControllerConfig, MachineConfig, MachineConfigNode, MachineConfigPool, MachineOSBuild,
    MachineOSConfig, Node, PinnedImageSet,
};
use mco_render::controllers::backoff::Backoff;
use mco_render::controllers::build::request::NAMESPACE as BUILD_NAMESPACE;
use mco_render::controllers::node_pool::primary_pool;
use mco_render::controllers::pinned_image_sets::pool_pinned_image_sets as pool_sets;
use pool_sync::{decode_node, Cluster, SyncError, View, CONTROLLER_CONFIG_NAME};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Controller settings.
#[derive(Debug, Clone)]
pub struct Options {
    /// Render options (controller version, release image version).
    pub render: mco_render::RenderOptions,
    /// How long to wait after a change for more changes before syncing.
    pub debounce: Duration,
    /// Sync at least this often.
    pub resync: Duration,
    /// Unused rendered configs kept per pool; `None` disables garbage collection.
    pub gc_keep: Option<usize>,
    /// How long a drain may be blocked before it is reported failed.
    pub drain_timeout: Duration,
    /// When a drain that is not done is looked at again (its own clock, next to `resync`).
    pub drain_retry: mco_render::controllers::drain::DrainRetry,
    /// Role templates for the template controller; `None` turns it off.
    pub templates: Option<mco_render::controllers::templates::TemplateTree>,
    /// The metrics the controller keeps current (pool machine counts, drain errors).
    pub metrics: std::sync::Arc<crate::metrics::ControllerMetrics>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            render: mco_render::RenderOptions::default(),
            debounce: Duration::from_millis(200),
            resync: Duration::from_secs(60),
            gc_keep: Some(5),
            drain_timeout: Duration::from_secs(600),
            drain_retry: Default::default(),
            templates: None,
            metrics: crate::metrics::ControllerMetrics::new(),
        }
    }
}

/// The label naming the pool a MachineOSBuild and its objects are for.
const TARGET_POOL_LABEL: &str = "machineconfiguration.openshift.io/target-machine-config-pool";

/// The stored pool kind and its queue key.
type PoolObject = Stored<MachineConfigPool>;

/// What the reconciles share: the caches, the writer, per-pool failure counts.
struct Context {
    mcs: Store<Stored<MachineConfig>>,
    pools: Store<PoolObject>,
    ccs: Store<Stored<ControllerConfig>>,
    nodes: Store<KubeNode>,
    policies: Store<DynamicObject>,
    mcns: Store<Stored<MachineConfigNode>>,
    moscs: Store<Stored<MachineOSConfig>>,
    mosbs: Store<Stored<MachineOSBuild>>,
    jobs: Store<Job>,
    pinned: Store<Stored<PinnedImageSet>>,
    machine_configurations: Store<DynamicObject>,
    feature_gates: Store<DynamicObject>,
    build_inputs: build::BuildInputs,
    cluster: tokio::sync::Mutex<Cluster>,
    failures: Mutex<BTreeMap<String, u32>>,
    resync: Duration,
    /// Whether each watched kind's store holds it as listed: a pass waits while one lists
    /// again (after a `410`), so that no drain, rollout step or pool status is decided from
    /// a store known to be stale.
    listed: Vec<crate::reflect::Listed>,
}

impl Context {
    /// The cluster as the caches hold it now.
    fn view(&self) -> View {
        let nodes = self
            .nodes
            .state()
            .iter()
            .filter_map(|n| match decode_node(n) {
                Ok(n) => Some(n),
                Err(e) => {
                    tracing::warn!("{e}");
                    None
                }
            })
            .collect();
        View {
            mcs: self
                .mcs
                .state()
                .iter()
                .map(|o| MachineConfig::from_object((**o).clone()))
                .collect(),
            pools: self
                .pools
                .state()
                .iter()
                .map(|o| MachineConfigPool::from_object((**o).clone()))
                .collect(),
            cc: self
                .ccs
                .state()
                .iter()
                .map(|o| ControllerConfig::from_object((**o).clone()))
                .find(|c| c.metadata.name == CONTROLLER_CONFIG_NAME),
            nodes,
            policies: self
                .policies
                .state()
                .iter()
                .filter_map(|o| decode_policy(o))
                .collect(),
            mcns: self
                .mcns
                .state()
                .iter()
                .map(|o| MachineConfigNode::from_object((**o).clone()))
                .collect(),
            moscs: self
                .moscs
                .state()
                .iter()
                .map(|o| MachineOSConfig::from_object((**o).clone()))
                .collect(),
            mosbs: self
                .mosbs
                .state()
                .iter()
                .map(|o| MachineOSBuild::from_object((**o).clone()))
                .collect(),
            jobs: build::job_views(
                &self
                    .jobs
                    .state()
                    .iter()
                    .map(|j| (**j).clone())
                    .collect::<Vec<_>>(),
            ),
            pinned: self
                .pinned
                .state()
                .iter()
                .map(|o| PinnedImageSet::from_object((**o).clone()))
                .collect(),
            build_inputs: Some(self.build_inputs.clone()),
            validation_overrides: validation_overrides::from_stores(
                &self.machine_configurations,
                &self.feature_gates,
            ),
        }
    }
}

/// Sends pool keys to the work queue.
#[derive(Clone)]
struct Enqueue {
    tx: futures::channel::mpsc::UnboundedSender<ObjectRef<PoolObject>>,
    resource: ApiResource,
}

impl Enqueue {
    fn pool(&self, name: &str) {
        let _ = self
            .tx
            .unbounded_send(ObjectRef::new_with(name, self.resource.clone()));
    }

    fn all(&self, pools: &Store<PoolObject>) {
        for p in pools.state() {
            if let Some(name) = &p.metadata.name {
                self.pool(name);
            }
        }
    }
}

/// A RolloutPolicy as the core reads it; one that does not decode is skipped and logged.
fn decode_policy(o: &DynamicObject) -> Option<RolloutPolicy> {
    match serde_json::to_value(o).and_then(serde_json::from_value::<RolloutPolicy>) {
        Ok(p) => Some(p),
        Err(e) => {
            tracing::warn!(name = ?o.metadata.name, "RolloutPolicy skipped: {e}");
            None
        }
    }
}

/// Runs the controller until the process stops, with watches of its own. Dropping the future
/// (aborting its task) stops the controller's watches too.
pub async fn run(client: Client, opts: Options) -> Result<(), SyncError> {
    run_with(&Registry::new(client), opts).await
}

/// Runs the controller until the process stops, on the watches of `registry` (shared with the
/// process's other loops: each kind is watched once). Dropping the future (aborting its task)
/// ends its subscriptions, and the watches no other loop holds.
pub async fn run_with(registry: &Registry, opts: Options) -> Result<(), SyncError> {
    let client = registry.client().clone();
    let (tx, rx) = futures::channel::mpsc::unbounded::<ObjectRef<PoolObject>>();
    let pool_ar = crd::MACHINE_CONFIG_POOL.api_resource();
    let enqueue = Enqueue {
        tx,
        resource: pool_ar.clone(),
    };
    let cfg = watcher::Config::default;
    let mut subscriptions: Vec<Subscription> = Vec::new();

    // Pools first: the other kinds' callbacks read the pool cache to know which to enqueue.
    let pools: Watched<PoolObject> = registry.watch(
        objects::api::<MachineConfigPool>(&client),
        cfg(),
        pool_ar,
        "MachineConfigPools",
    );
    let pool_store = pools.store().clone();
    let q = enqueue.clone();
    subscriptions.push(pools.subscribe(move |change, store| match change {
        Change::Applied(p) | Change::Deleted(p) => {
            if let Some(name) = &p.metadata.name {
                q.pool(name);
            }
        }
        Change::Relisted => q.all(store),
    }));

    let every_pool = |what: &'static str| {
        let q = enqueue.clone();
        let pools = pool_store.clone();
        move |_: Change<'_, _>, _: &Store<_>| {
            tracing::trace!("{what} changed");
            q.all(&pools);
        }
    };
    let mcs: Watched<Stored<MachineConfig>> = registry.watch(
        objects::api::<MachineConfig>(&client),
        cfg(),
        crd::MACHINE_CONFIG.api_resource(),
        "MachineConfigs",
    );
    let q = enqueue.clone();
    let pools_for_mcs = pool_store.clone();
    subscriptions.push(mcs.subscribe(move |change, _| {
        // A rendered config concerns its own pool; any other MachineConfig may be
        // selected by any pool.
        let rendered = match &change {
            Change::Applied(m) | Change::Deleted(m) => m
                .metadata
                .name
                .as_deref()
                .and_then(|n| n.strip_prefix("rendered-"))
                .map(str::to_string),
            Change::Relisted => None,
        };
        match rendered {
            Some(rest) => {
                for p in pools_for_mcs.state() {
                    let name = p.metadata.name.clone().unwrap_or_default();
                    if rest.starts_with(&format!("{name}-")) {
                        q.pool(&name);
                    }
                }
            }
            None => q.all(&pools_for_mcs),
        }
    }));
    let ccs: Watched<Stored<ControllerConfig>> = registry.watch(
        objects::api::<ControllerConfig>(&client),
        cfg(),
        crd::CONTROLLER_CONFIG.api_resource(),
        "ControllerConfigs",
    );
    subscriptions.push(ccs.subscribe(every_pool("ControllerConfig")));

    // A Node concerns the pool it belongs to now and the one it belonged to before.
    let nodes: Watched<KubeNode> = registry.watch(Api::all(client.clone()), cfg(), (), "Nodes");
    let q = enqueue.clone();
    let pools_for_nodes = pool_store.clone();
    let mut node_pool: BTreeMap<String, String> = BTreeMap::new();
    subscriptions.push(nodes.subscribe(move |change, _| {
        let node = match change {
            Change::Applied(n) | Change::Deleted(n) => n,
            Change::Relisted => return q.all(&pools_for_nodes),
        };
        let name = node.metadata.name.clone().unwrap_or_default();
        let core: Vec<MachineConfigPool> = pools_for_nodes
            .state()
            .iter()
            .map(|p| MachineConfigPool::from_object((**p).clone()))
            .collect();
        let now = decode_node(node).ok().and_then(|n: Node| {
            primary_pool(&n, &core)
                .ok()
                .flatten()
                .map(|p| p.name().to_string())
        });
        let before = match &now {
            Some(p) => node_pool.insert(name, p.clone()),
            None => node_pool.remove(&name),
        };
        for p in now.iter().chain(before.iter()) {
            q.pool(p);
        }
        if now.is_none() && before.is_none() {
            // Not in any pool yet (e.g. no role label): the pools still count it.
            q.all(&pools_for_nodes);
        }
    }));

    // A RolloutPolicy concerns the pool of its name (an absent API: an empty, ready store).
    // Kept as loosely typed objects (the admission webhook reads the same watch): one that
    // does not decode is skipped, not a failed watch.
    let policy_ar = crd::ROLLOUT_POLICY.api_resource();
    let policies: Watched<DynamicObject> = registry.watch(
        Api::all_with(client.clone(), &policy_ar),
        cfg(),
        policy_ar,
        "RolloutPolicies",
    );
    let q = enqueue.clone();
    let pools_for_policies = pool_store.clone();
    subscriptions.push(policies.subscribe(move |change, _| match change {
        Change::Applied(p) | Change::Deleted(p) => {
            if let Some(name) = &p.metadata.name {
                q.pool(name);
            }
        }
        Change::Relisted => q.all(&pools_for_policies),
    }));
    // A MachineConfigNode concerns its node's pool (the health gate reads it).
    let mcns: Watched<Stored<MachineConfigNode>> = registry.watch(
        objects::api::<MachineConfigNode>(&client),
        cfg(),
        crd::MACHINE_CONFIG_NODE.api_resource(),
        "MachineConfigNodes",
    );
    let q = enqueue.clone();
    let pools_for_mcns = pool_store.clone();
    subscriptions.push(mcns.subscribe(move |change, _| {
        let pool = match &change {
            Change::Applied(m) | Change::Deleted(m) => Some(m.spec.pool.name.clone()),
            Change::Relisted => None,
        };
        match pool.filter(|p| !p.is_empty()) {
            Some(p) => q.pool(&p),
            None => q.all(&pools_for_mcns),
        }
    }));

    // On-cluster layering: a MachineOSConfig concerns its pool, a MachineOSBuild and a build
    // Job the pool they are labelled for.
    let label_pool = |labels: &Option<std::collections::BTreeMap<String, String>>| {
        labels
            .as_ref()
            .and_then(|l| l.get(TARGET_POOL_LABEL))
            .cloned()
    };
    let moscs: Watched<Stored<MachineOSConfig>> = registry.watch(
        objects::api::<MachineOSConfig>(&client),
        cfg(),
        crd::MACHINE_OS_CONFIG.api_resource(),
        "MachineOSConfigs",
    );
    let q = enqueue.clone();
    let pools_for_moscs = pool_store.clone();
    subscriptions.push(moscs.subscribe(move |change, _| match change {
        Change::Applied(m) | Change::Deleted(m) => {
            q.pool(&m.spec.machine_config_pool.name);
        }
        Change::Relisted => q.all(&pools_for_moscs),
    }));
    let mosbs: Watched<Stored<MachineOSBuild>> = registry.watch(
        objects::api::<MachineOSBuild>(&client),
        cfg(),
        crd::MACHINE_OS_BUILD.api_resource(),
        "MachineOSBuilds",
    );
    let q = enqueue.clone();
    let pools_for_mosbs = pool_store.clone();
    subscriptions.push(mosbs.subscribe(move |change, _| match change {
        Change::Applied(m) | Change::Deleted(m) => match label_pool(&m.metadata.labels) {
            Some(p) => q.pool(&p),
            None => q.all(&pools_for_mosbs),
        },
        Change::Relisted => q.all(&pools_for_mosbs),
    }));
    let jobs: Watched<Job> = registry.watch(
        Api::namespaced(client.clone(), BUILD_NAMESPACE),
        cfg().labels(build::ON_CLUSTER_LAYERING_LABEL),
        (),
        "Jobs",
    );
    let q = enqueue.clone();
    let pools_for_jobs = pool_store.clone();
    subscriptions.push(jobs.subscribe(move |change, _| match change {
        Change::Applied(j) | Change::Deleted(j) => {
            if let Some(p) = label_pool(&j.metadata.labels) {
                q.pool(&p);
            }
        }
        Change::Relisted => q.all(&pools_for_jobs),
    }));

    // A Secret or ConfigMap of the MCO namespace that a build may read (not one a build made)
    // concerns the pools MachineOSConfigs name: a build waiting for its push secret, pull
    // secret or the images ConfigMap starts when it arrives.
    let build_input = |what: &'static str| {
        let q = enqueue.clone();
        let moscs = moscs.store().clone();
        let pools = pool_store.clone();
        move |labels: Option<&BTreeMap<String, String>>, relisted: bool| {
            if relisted {
                q.all(&pools);
                return;
            }
            if build::is_build_object(labels) {
                return;
            }
            for m in moscs.state() {
                tracing::debug!(pool = %m.spec.machine_config_pool.name, "{what} changed");
                q.pool(&m.spec.machine_config_pool.name);
            }
        }
    };
    let on_secret = build_input("a build's Secret");
    let secrets: Watched<Secret> = registry.watch(
        Api::namespaced(client.clone(), BUILD_NAMESPACE),
        cfg(),
        (),
        "Secrets",
    );
    subscriptions.push(secrets.subscribe(move |change, _| match change {
        Change::Applied(o) | Change::Deleted(o) => on_secret(o.metadata.labels.as_ref(), false),
        Change::Relisted => on_secret(None, true),
    }));
    let on_config_map = build_input("a build's ConfigMap");
    let config_maps: Watched<ConfigMap> = registry.watch(
        Api::namespaced(client.clone(), BUILD_NAMESPACE),
        cfg(),
        (),
        "ConfigMaps",
    );
    subscriptions.push(config_maps.subscribe(move |change, _| match change {
        Change::Applied(o) | Change::Deleted(o) => on_config_map(o.metadata.labels.as_ref(), false),
        Change::Relisted => on_config_map(None, true),
    }));

    // A PinnedImageSet concerns the pools whose machineConfigSelector matches its labels,
    // before and after a change (a relabelled set leaves its old pools).
    let pinned: Watched<Stored<PinnedImageSet>> = registry.watch(
        objects::api::<PinnedImageSet>(&client),
        cfg(),
        crd::PINNED_IMAGE_SET.api_resource(),
        "PinnedImageSets",
    );
    let q = enqueue.clone();
    let pools_for_pinned = pool_store.clone();
    let mut set_pools: BTreeMap<String, Vec<String>> = BTreeMap::new();
    subscriptions.push(pinned.subscribe(move |change, _| {
        let (set, deleted) = match change {
            Change::Applied(s) => (s, false),
            Change::Deleted(s) => (s, true),
            Change::Relisted => return q.all(&pools_for_pinned),
        };
        let name = set.metadata.name.clone().unwrap_or_default();
        let set = PinnedImageSet::from_object(set.clone());
        let now: Vec<String> = pools_for_pinned
            .state()
            .iter()
            .map(|p| MachineConfigPool::from_object((**p).clone()))
            .filter(|p| {
                pool_sets(p, std::slice::from_ref(&set))
                    .ok()
                    .flatten()
                    .is_some_and(|r| !r.is_empty())
            })
            .map(|p| p.name().to_string())
            .collect();
        let before = if deleted {
            set_pools.remove(&name)
        } else {
            set_pools.insert(name, now.clone())
        };
        for p in now.iter().chain(before.iter().flatten()) {
            q.pool(p);
        }
    }));

    // The MachineConfiguration `cluster` and the FeatureGate `cluster` decide which
    // irreconcilableValidationOverrides the render honours: every pool (an absent API: an
    // empty, ready store).
    let mc_ar = validation_overrides::machine_configuration_resource();
    let machine_configurations: Watched<DynamicObject> = registry.watch(
        Api::all_with(client.clone(), &mc_ar),
        cfg().fields("metadata.name=cluster"),
        mc_ar,
        "MachineConfiguration",
    );
    let q = enqueue.clone();
    let pools_for = pool_store.clone();
    subscriptions.push(machine_configurations.subscribe(move |_, _| {
        tracing::trace!("MachineConfiguration changed");
        q.all(&pools_for);
    }));
    let fg_ar = validation_overrides::feature_gate_resource();
    let feature_gates: Watched<DynamicObject> = registry.watch(
        Api::all_with(client.clone(), &fg_ar),
        cfg(),
        fg_ar,
        "config.openshift.io objects",
    );
    let q = enqueue.clone();
    let pools_for = pool_store.clone();
    subscriptions.push(feature_gates.subscribe(move |_, _| {
        tracing::trace!("FeatureGate changed");
        q.all(&pools_for);
    }));

    for (what, ready) in [
        ("pools", pools.wait_until_ready().await),
        ("machineconfigs", mcs.wait_until_ready().await),
        ("controllerconfigs", ccs.wait_until_ready().await),
        ("nodes", nodes.wait_until_ready().await),
        ("rolloutpolicies", policies.wait_until_ready().await),
        ("machineconfignodes", mcns.wait_until_ready().await),
        ("machineosconfigs", moscs.wait_until_ready().await),
        ("machineosbuilds", mosbs.wait_until_ready().await),
        ("jobs", jobs.wait_until_ready().await),
        ("pinnedimagesets", pinned.wait_until_ready().await),
        ("secrets", secrets.wait_until_ready().await),
        ("configmaps", config_maps.wait_until_ready().await),
        (
            "machineconfigurations",
            machine_configurations.wait_until_ready().await,
        ),
        ("featuregates", feature_gates.wait_until_ready().await),
    ] {
        if ready.is_err() {
            tracing::warn!("{what} cache stopped before it was ready");
            return Ok(());
        }
    }

    let ctx = Arc::new(Context {
        mcs: mcs.store().clone(),
        pools: pools.store().clone(),
        ccs: ccs.store().clone(),
        nodes: nodes.store().clone(),
        policies: policies.store().clone(),
        mcns: mcns.store().clone(),
        moscs: moscs.store().clone(),
        mosbs: mosbs.store().clone(),
        jobs: jobs.store().clone(),
        pinned: pinned.store().clone(),
        machine_configurations: machine_configurations.store().clone(),
        feature_gates: feature_gates.store().clone(),
        build_inputs: build::BuildInputs {
            secrets: secrets.store().clone(),
            config_maps: config_maps.store().clone(),
        },
        cluster: tokio::sync::Mutex::new(Cluster::new(client, opts.clone())),
        failures: Mutex::new(BTreeMap::new()),
        resync: opts.resync,
        listed: vec![
            pools.listed(),
            mcs.listed(),
            ccs.listed(),
            nodes.listed(),
            policies.listed(),
            mcns.listed(),
            moscs.listed(),
            mosbs.listed(),
            jobs.listed(),
            pinned.listed(),
            secrets.listed(),
            config_maps.listed(),
            machine_configurations.listed(),
            feature_gates.listed(),
        ],
    });
    let queue = rx.map(Ok::<_, std::convert::Infallible>);
    let applier = kube::runtime::applier(
        |pool: Arc<PoolObject>, ctx: Arc<Context>| Box::pin(reconcile(pool, ctx)),
        error_policy,
        ctx,
        pools.store().clone(),
        queue,
        ApplierConfig::default().debounce(opts.debounce),
    );
    let mut applier = std::pin::pin!(applier);
    while let Some(result) = applier.next().await {
        if let Err(e) = result {
            tracing::debug!("reconcile: {e}");
        }
    }
    drop(subscriptions);
    drop((mcs, ccs, nodes, pools, policies, mcns));
    drop((moscs, mosbs, jobs, pinned, secrets, config_maps));
    drop((machine_configurations, feature_gates));
    Ok(())
}

/// What machine-config-controller runs while it leads: the render and rollout loop
/// ([`run_with`]) and the generating controllers ([`generators::run_with`]) side by side on
/// the watches of `registry`, until either stops. Dropping the future ends both.
pub async fn run_leading(registry: &Registry, opts: Options) -> Result<(), String> {
    let generators = generators::run_with(registry, opts.clone());
    tokio::select! {
        r = run_with(registry, opts) => r.map_err(|e| e.to_string()),
        () = generators => Ok(()),
    }
}

/// One pool's reconcile, from the caches.
async fn reconcile(pool: Arc<PoolObject>, ctx: Arc<Context>) -> Result<Action, SyncError> {
    let name = pool.metadata.name.clone().unwrap_or_default();
    if crate::reflect::Listed::all(&ctx.listed).await.is_err() {
        // A watch stopped: the controller is stopping.
        return Ok(Action::await_change());
    }
    let mut view = ctx.view();
    let mut cluster = ctx.cluster.lock().await;
    cluster.sync_controller_certificates(&mut view).await?;
    cluster.sync_pool(&mut view, &name).await?;
    cluster.report_cluster_metrics(&view);
    cluster.forget_vanished_drains(&view);
    let wait = [cluster.next_drain_retry(), cluster.next_rollout_wake(&name)]
        .into_iter()
        .flatten()
        .fold(ctx.resync, Duration::min);
    if let Ok(mut f) = ctx.failures.lock() {
        f.remove(&name);
    }
    Ok(Action::requeue(wait.max(Duration::from_millis(10))))
}

/// A failed reconcile is retried on a growing delay of its own pool.
fn error_policy(pool: Arc<PoolObject>, error: &SyncError, ctx: Arc<Context>) -> Action {
    let name = pool.metadata.name.clone().unwrap_or_default();
    let attempt = ctx
        .failures
        .lock()
        .map(|mut f| {
            let a = f.entry(name.clone()).or_insert(0);
            *a = a.saturating_add(1);
            *a - 1
        })
        .unwrap_or(0);
    let delay = Backoff::TRANSIENT.delay(attempt);
    tracing::warn!(
        pool = name.as_str(),
        "sync failed: {error}; retrying in {delay:?}"
    );
    Action::requeue(delay)
}
