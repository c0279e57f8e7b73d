//! The controllers that write MachineConfigs from other objects, run as one loop next to the
//! render and rollout controller ([`super::run`]): the template controller (when a templates
//! folder is given), the cluster-config controllers (registries, feature gates, the Node
//! `cluster`: [`super::cluster_config`]) and the KubeletConfig and ContainerRuntimeConfig
//! controllers. Each pass runs the templates first, so the others read fresh role
//! MachineConfigs, then the cluster-config syncs, then the custom resources. Passes
//! run on a change that concerns them (not a pool's status, not a rendered config), debounced,
//! and on the resync timer.
//!
//! Every kind a pass reads comes from the watch caches of [`Caches`]: a pass makes no LIST
//! and no GET of them, only its writes (the template controller still GETs the pull secret).

use super::cluster_config::{image_resources, ClusterConfigs};
use super::resources::{config_resources, Resources};
use super::templates::Templates;
use super::Options;
use crate::objects::{self, Model, Stored};
use crate::reflect::{wake_on, Reflector, Wake};
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Api, Client};
use mco_render::api::{
    ContainerRuntimeConfig, ControllerConfig, KubeletConfig, MachineConfig, MachineConfigPool,
};
use serde_json::Value;
use std::collections::BTreeMap;
use tokio::sync::mpsc;

/// The watch caches the generating controllers read: the MCO kinds they take in, and the
/// cluster-wide `config.openshift.io`/`operator.openshift.io` objects (an API the server does
/// not serve holds nothing). Dropping it stops the watches.
pub struct Caches {
    kubelet_configs: Reflector<Stored<KubeletConfig>>,
    runtime_configs: Reflector<Stored<ContainerRuntimeConfig>>,
    mcs: Reflector<Stored<MachineConfig>>,
    pools: Reflector<Stored<MachineConfigPool>>,
    ccs: Reflector<Stored<ControllerConfig>>,
    /// FeatureGate, APIServer, Node (`config_resources`), then Image, ClusterVersion,
    /// ImageDigestMirrorSet, ImageTagMirrorSet, ImageContentSourcePolicy
    /// (`image_resources`).
    config: Vec<Reflector<DynamicObject>>,
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
    /// Starts the watches; each change `wake` names for its kind sends into `tx`.
    pub fn start(client: &Client, tx: &mpsc::Sender<()>) -> Self {
        fn typed<M: Model>(
            client: &Client,
            what: &'static str,
            wake: Wake,
            tx: &mpsc::Sender<()>,
        ) -> Reflector<Stored<M>> {
            let ar = M::KIND.api_resource();
            let cfg = watcher::Config::default();
            wake_on(objects::api::<M>(client), cfg, ar, what, wake, tx.clone())
        }
        let config = config_resources()
            .into_iter()
            .chain(image_resources())
            .map(|ar: ApiResource| {
                let api = Api::<DynamicObject>::all_with(client.clone(), &ar);
                let cfg = watcher::Config::default();
                let what = "config.openshift.io objects";
                wake_on(api, cfg, ar, what, Wake::Every, tx.clone())
            })
            .collect();
        Caches {
            kubelet_configs: typed::<KubeletConfig>(client, "KubeletConfigs", Wake::Every, tx),
            runtime_configs: typed::<ContainerRuntimeConfig>(
                client,
                "ContainerRuntimeConfigs",
                Wake::Every,
                tx,
            ),
            mcs: typed::<MachineConfig>(client, "MachineConfigs", Wake::NotRendered, tx),
            pools: typed::<MachineConfigPool>(client, "MachineConfigPools", Wake::SpecChanges, tx),
            ccs: typed::<ControllerConfig>(client, "ControllerConfigs", Wake::Every, tx),
            config,
        }
    }

    /// Waits until every cache holds its kind as listed (or knows its API is not served).
    /// False when a watch stopped first.
    pub async fn ready(&self) -> bool {
        let mut ok = self
            .kubelet_configs
            .store()
            .wait_until_ready()
            .await
            .is_ok()
            && self
                .runtime_configs
                .store()
                .wait_until_ready()
                .await
                .is_ok()
            && self.mcs.store().wait_until_ready().await.is_ok()
            && self.pools.store().wait_until_ready().await.is_ok()
            && self.ccs.store().wait_until_ready().await.is_ok();
        for r in &self.config {
            ok = ok && r.store().wait_until_ready().await.is_ok();
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
            && self.config.iter().all(Reflector::is_finished)
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
        self.config.get(kind as usize).map(Reflector::store)
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

/// Runs the generating controllers until their watches end. Dropping the future (aborting
/// its task) stops its watches too.
pub async fn run(client: Client, opts: Options) {
    let (tx, mut rx) = mpsc::channel::<()>(1);
    let caches = Caches::start(&client, &tx);
    if !caches.ready().await {
        tracing::warn!("generator caches stopped before they were ready");
        return;
    }
    let version = opts.render.controller_version.clone();
    let custom = Resources::new(client.clone(), &version);
    let cluster = ClusterConfigs::new(client.clone(), &version);
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
