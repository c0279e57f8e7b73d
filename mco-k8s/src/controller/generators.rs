//! The controllers that write MachineConfigs from other objects, run as one loop next to the
//! render and rollout controller ([`super::run`]): the template controller (when a templates
//! folder is given), the cluster-config controllers (registries, feature gates, the Node
//! `cluster`: [`super::cluster_config`]) and the KubeletConfig and ContainerRuntimeConfig
//! controllers. Each pass runs the templates first, so the others read fresh role
//! MachineConfigs, then the cluster-config syncs, then the custom resources. Passes
//! run on a change that concerns them (not a pool's status, not a rendered config), debounced,
//! and on the resync timer.
//!
//! Every kind a pass reads comes from the watch caches of [`Caches`] (the pull secret the
//! ControllerConfig names from a watch of that one Secret): a pass makes no LIST and no GET,
//! only its writes. With a [`Registry`] the caches are the watches the rest of the process
//! reads ([`run_with`]).

use super::cluster_config::{image_resources, ClusterConfigs};
use super::resources::{config_resources, Resources};
use super::templates::Templates;
use super::Options;
use crate::objects::{self, Model, Stored};
use crate::reflect::{Registry, Subscription, Wake, Watched};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Api, Client};
use mco_render::api::{
    ContainerRuntimeConfig, ControllerConfig, KubeletConfig, MachineConfig, MachineConfigPool,
};
use mco_render::controllers::build::request::NAMESPACE as BUILD_NAMESPACE;
use serde_json::Value;
use std::collections::BTreeMap;
use tokio::sync::mpsc;

/// The watch caches the generating controllers read: the MCO kinds they take in, the
/// cluster-wide `config.openshift.io`/`operator.openshift.io` objects (an API the server does
/// not serve holds nothing), and the pull secret the ControllerConfig names. Dropping it ends
/// its subscriptions (and the watches no other loop holds).
pub struct Caches {
    registry: Registry,
    tx: mpsc::Sender<()>,
    kubelet_configs: Watched<Stored<KubeletConfig>>,
    runtime_configs: Watched<Stored<ContainerRuntimeConfig>>,
    mcs: Watched<Stored<MachineConfig>>,
    pools: Watched<Stored<MachineConfigPool>>,
    ccs: Watched<Stored<ControllerConfig>>,
    /// FeatureGate, APIServer, Node (`config_resources`), then Image, ClusterVersion,
    /// ImageDigestMirrorSet, ImageTagMirrorSet, ImageContentSourcePolicy, ClusterImagePolicy,
    /// ImagePolicy (`image_resources`).
    config: Vec<Watched<DynamicObject>>,
    /// The Secret watched by name: (namespace, name), its watch and wake-up.
    secret: std::sync::Mutex<Option<NamedSecret>>,
    _subscriptions: Vec<Subscription>,
}

/// A Secret watched by name.
struct NamedSecret {
    namespace: String,
    name: String,
    watched: Watched<Secret>,
    _wake: Subscription,
}

/// A cluster-wide kind [`Caches`] watches (its value is the index of its cache).
#[derive(Debug, Clone, Copy)]
pub enum ConfigKind {
    /// `config.openshift.io/v1` FeatureGate.
    FeatureGate = 0,
    /// `config.openshift.io/v1` APIServer.
    ApiServer,
    /// `config.openshift.io/v1` Node.
    Node,
    /// `config.openshift.io/v1` Image.
    Image,
    /// `config.openshift.io/v1` ClusterVersion.
    ClusterVersion,
    /// `config.openshift.io/v1` ImageDigestMirrorSet.
    ImageDigestMirrorSet,
    /// `config.openshift.io/v1` ImageTagMirrorSet.
    ImageTagMirrorSet,
    /// `operator.openshift.io/v1alpha1` ImageContentSourcePolicy.
    ImageContentSourcePolicy,
    /// `config.openshift.io/v1` ClusterImagePolicy.
    ClusterImagePolicy,
    /// `config.openshift.io/v1` ImagePolicy (every namespace).
    ImagePolicy,
}

/// The objects of a typed store, in the core's model.
fn all<M: Model>(store: &Store<Stored<M>>) -> Vec<M> {
    store
        .state()
        .iter()
        .map(|o| M::from_object((**o).clone()))
        .collect()
}

impl Caches {
    /// Starts the watches with a registry of their own; each change that concerns the
    /// generating controllers sends into `tx`.
    pub fn start(client: &Client, tx: &mpsc::Sender<()>) -> Self {
        Self::start_with(&Registry::new(client.clone()), tx)
    }

    /// Takes the watches from `registry` (starting those not running); each change that
    /// concerns the generating controllers sends into `tx`.
    pub fn start_with(registry: &Registry, tx: &mpsc::Sender<()>) -> Self {
        let client = registry.client();
        let mut subscriptions = Vec::new();
        fn subscribed<M: Model>(
            registry: &Registry,
            what: &'static str,
            wake: Wake,
            tx: &mpsc::Sender<()>,
            subscriptions: &mut Vec<Subscription>,
        ) -> Watched<Stored<M>> {
            let api = objects::api::<M>(registry.client());
            let w = registry.watch(
                api,
                watcher::Config::default(),
                M::KIND.api_resource(),
                what,
            );
            subscriptions.push(w.wake(wake, tx.clone()));
            w
        }
        let config = config_resources()
            .into_iter()
            .chain(image_resources())
            .map(|ar: ApiResource| {
                let api = Api::<DynamicObject>::all_with(client.clone(), &ar);
                let cfg = watcher::Config::default();
                let what = "config.openshift.io objects";
                let w = registry.watch(api, cfg, ar, what);
                subscriptions.push(w.wake(Wake::Every, tx.clone()));
                w
            })
            .collect();
        let s = &mut subscriptions;
        Caches {
            kubelet_configs: subscribed::<KubeletConfig>(
                registry,
                "KubeletConfigs",
                Wake::Every,
                tx,
                s,
            ),
            runtime_configs: subscribed::<ContainerRuntimeConfig>(
                registry,
                "ContainerRuntimeConfigs",
                Wake::Every,
                tx,
                s,
            ),
            mcs: subscribed::<MachineConfig>(registry, "MachineConfigs", Wake::NotRendered, tx, s),
            pools: subscribed::<MachineConfigPool>(
                registry,
                "MachineConfigPools",
                Wake::SpecChanges,
                tx,
                s,
            ),
            ccs: subscribed::<ControllerConfig>(registry, "ControllerConfigs", Wake::Every, tx, s),
            config,
            registry: registry.clone(),
            tx: tx.clone(),
            secret: std::sync::Mutex::new(None),
            _subscriptions: subscriptions,
        }
    }

    /// Waits until every cache holds its kind as listed (or knows its API is not served).
    /// False when a watch stopped first.
    pub async fn ready(&self) -> bool {
        let mut ok = self.kubelet_configs.wait_until_ready().await.is_ok()
            && self.runtime_configs.wait_until_ready().await.is_ok()
            && self.mcs.wait_until_ready().await.is_ok()
            && self.pools.wait_until_ready().await.is_ok()
            && self.ccs.wait_until_ready().await.is_ok();
        for r in &self.config {
            ok = ok && r.wait_until_ready().await.is_ok();
        }
        ok
    }

    /// Whether every watch has ended.
    pub fn finished(&self) -> bool {
        self.kubelet_configs.is_finished()
            && self.runtime_configs.is_finished()
            && self.mcs.is_finished()
            && self.pools.is_finished()
            && self.ccs.is_finished()
            && self.config.iter().all(Watched::is_finished)
    }

    /// The Secret `namespace/name`, from a watch of that one Secret, or in the MCO namespace
    /// of the namespace's Secrets (the watch the build controller reads) (started on first
    /// use, replaced when another is asked for; a change to it wakes the loop). `None` when it
    /// does not exist, or its watch stopped before it listed.
    pub async fn secret(&self, namespace: &str, name: &str) -> Option<Secret> {
        let watched = {
            let mut slot = self.secret.lock().unwrap_or_else(|e| e.into_inner());
            let current = slot
                .as_ref()
                .filter(|s| s.namespace == namespace && s.name == name);
            match current {
                Some(s) => s.watched.clone(),
                None => {
                    let api: Api<Secret> =
                        Api::namespaced(self.registry.client().clone(), namespace);
                    let cfg = if namespace == BUILD_NAMESPACE {
                        watcher::Config::default()
                    } else {
                        watcher::Config::default().fields(&format!("metadata.name={name}"))
                    };
                    let watched = self.registry.watch(api, cfg, (), "the pull secret");
                    let wake = watched.wake(Wake::Every, self.tx.clone());
                    *slot = Some(NamedSecret {
                        namespace: namespace.to_string(),
                        name: name.to_string(),
                        watched: watched.clone(),
                        _wake: wake,
                    });
                    watched
                }
            }
        };
        watched.wait_until_ready().await.ok()?;
        let found = watched
            .store()
            .state()
            .into_iter()
            .find(|s| s.metadata.name.as_deref() == Some(name))?;
        Some((*found).clone())
    }

    /// Every KubeletConfig.
    pub fn kubelet_configs(&self) -> Vec<KubeletConfig> {
        all(self.kubelet_configs.store())
    }

    /// Every ContainerRuntimeConfig.
    pub fn runtime_configs(&self) -> Vec<ContainerRuntimeConfig> {
        all(self.runtime_configs.store())
    }

    /// Every MachineConfig.
    pub fn machine_configs(&self) -> Vec<MachineConfig> {
        all(self.mcs.store())
    }

    /// Every MachineConfig, by name.
    pub fn machine_configs_by_name(&self) -> BTreeMap<String, MachineConfig> {
        self.machine_configs()
            .into_iter()
            .map(|m| (m.name().to_string(), m))
            .collect()
    }

    /// Every pool.
    pub fn pools(&self) -> Vec<MachineConfigPool> {
        all(self.pools.store())
    }

    /// The ControllerConfig `name`.
    pub fn controller_config(&self, name: &str) -> Option<ControllerConfig> {
        self.ccs
            .store()
            .state()
            .iter()
            .find(|o| o.metadata.name.as_deref() == Some(name))
            .map(|o| ControllerConfig::from_object((**o).clone()))
    }

    fn config_store(&self, kind: ConfigKind) -> Option<&Store<DynamicObject>> {
        self.config.get(kind as usize).map(Watched::store)
    }

    /// Every object of a cluster-wide kind, as JSON.
    pub fn config_objects(&self, kind: ConfigKind) -> Vec<Value> {
        self.config_store(kind)
            .map(|s| {
                s.state()
                    .iter()
                    .filter_map(|o| serde_json::to_value(&**o).ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The object `name` of a cluster-wide kind, as JSON.
    pub fn config_object(&self, kind: ConfigKind, name: &str) -> Option<Value> {
        let store = self.config_store(kind)?;
        let found = store
            .state()
            .into_iter()
            .find(|o| o.metadata.name.as_deref() == Some(name))?;
        serde_json::to_value(&*found).ok()
    }
}

/// Runs the generating controllers until their watches end, with watches of their own.
/// Dropping the future (aborting its task) stops its watches too.
pub async fn run(client: Client, opts: Options) {
    run_with(&Registry::new(client), opts).await
}

/// Runs the generating controllers until their watches end, on the watches of `registry`
/// (shared with the process's other loops). Dropping the future (aborting its task) ends its
/// subscriptions, and the watches no other loop holds.
pub async fn run_with(registry: &Registry, opts: Options) {
    let client = registry.client().clone();
    let (tx, mut rx) = mpsc::channel::<()>(1);
    let caches = Caches::start_with(registry, &tx);
    if !caches.ready().await {
        tracing::warn!("generator caches stopped before they were ready");
        return;
    }
    let version = opts.render.controller_version.clone();
    let custom = Resources::new(client.clone(), &version).with_release(opts.render.release);
    let cluster = ClusterConfigs::new(client.clone(), &version).with_release(opts.render.release);
    let templates = opts
        .templates
        .clone()
        .map(|t| Templates::new(client.clone(), t, &version));
    let _ = tx.try_send(());
    loop {
        let _ = tokio::time::timeout(opts.resync, rx.recv()).await;
        tokio::time::sleep(opts.debounce).await;
        while rx.try_recv().is_ok() {}
        let mut again = false;
        // The MachineConfigs as this pass sees them: each sync's writes reach the next ones.
        let mut mcs = caches.machine_configs_by_name();
        if let Some(t) = &templates {
            match t.sync(&caches, &mut mcs).await {
                Ok(settled) => again |= !settled,
                Err(e) => {
                    tracing::warn!("template sync failed: {e}");
                    again = true;
                }
            }
        }
        match cluster.sync(&caches, &mut mcs).await {
            Ok(r) => again |= r.retry,
            Err(e) => {
                tracing::warn!("cluster-config sync failed: {e}");
                again = true;
            }
        }
        match custom.sync_all(&caches, &mut mcs).await {
            Ok(r) => again |= r.retry,
            Err(e) => {
                tracing::warn!("KubeletConfig/ContainerRuntimeConfig sync failed: {e}");
                again = true;
            }
        }
        if again {
            let _ = tx.try_send(());
        }
        if caches.finished() {
            return;
        }
    }
}
