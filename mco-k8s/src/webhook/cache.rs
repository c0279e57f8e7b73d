//! The webhook's view of the cluster: one watch per kind ([`crate::reflect`]) keeps the
//! MachineConfigs, pools, the ControllerConfig, KubeletConfigs and ContainerRuntimeConfigs.
//! A change marks the view stale; a background task rebuilds it once the changes settle
//! (decoding the stores into a [`ClusterView`] and rendering each pool once), and reviews read
//! the last one built. No request makes an API call.
//!
//! The MachineConfiguration `cluster` (`operator.openshift.io/v1`, the node disruption
//! policies the plans use) is watched too; on clusters without that API the watch retries with
//! a growing delay and plans use the default policies. So are the RolloutPolicies
//! (`rollout.mco.dev`, the pools' rollout estimates and the review of a policy's pool): without
//! their CRD the store stays empty and estimates are upstream's.
//!
//! Not watched: the FeatureGate, APIServer and Node `cluster` objects (a reviewed
//! KubeletConfig is generated without them).

use super::ViewSource;
use crate::controller::pool_sync::CONTROLLER_CONFIG_NAME;
use crate::objects::{self, Model, Stored};
use crate::reflect::{reflect_with, Reflector};
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Api, Client};
use mco_render::admission::ClusterView;
use mco_render::api::rollout_policy::{self, RolloutPolicy};
use mco_render::api::{
    ContainerRuntimeConfig, ControllerConfig, KubeletConfig, MachineConfig, MachineConfigPool,
};
use mco_render::manifests::Manifests;
use mco_render::RenderOptions;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// How long changes settle before the view is rebuilt in the background.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(200);

/// The stores' readers (cheap to clone), and the MachineConfiguration slot.
#[derive(Clone)]
struct Stores {
    machine_configs: Store<Stored<MachineConfig>>,
    pools: Store<Stored<MachineConfigPool>>,
    controller_configs: Store<Stored<ControllerConfig>>,
    kubelet_configs: Store<Stored<KubeletConfig>>,
    runtime_configs: Store<Stored<ContainerRuntimeConfig>>,
    policies: Arc<Mutex<Option<serde_json::Value>>>,
    rollout_policies: Store<DynamicObject>,
}

/// The watches, one per kind.
type Reflectors = (
    Reflector<Stored<MachineConfig>>,
    Reflector<Stored<MachineConfigPool>>,
    Reflector<Stored<ControllerConfig>>,
    Reflector<Stored<KubeletConfig>>,
    Reflector<Stored<ContainerRuntimeConfig>>,
);

/// The watch caches and the last view built from them.
pub struct WebhookCache {
    // Held for their watch tasks (stopped on drop).
    _reflectors: Reflectors,
    _policies: Reflector<DynamicObject>,
    _rollout_policies: Reflector<DynamicObject>,
    stores: Stores,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    stale: Arc<AtomicBool>,
    ready: Arc<AtomicBool>,
    current: Arc<Mutex<Option<Arc<ClusterView>>>>,
    render: RenderOptions,
}

impl std::fmt::Debug for WebhookCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookCache")
            .field(
                "machine_configs",
                &self.stores.machine_configs.state().len(),
            )
            .field("pools", &self.stores.pools.state().len())
            .finish()
    }
}

fn watch<M: Model>(
    client: &Client,
    what: &'static str,
    stale: &Arc<AtomicBool>,
) -> Reflector<Stored<M>> {
    let stale = stale.clone();
    reflect_with(
        objects::api::<M>(client),
        watcher::Config::default(),
        M::KIND.api_resource(),
        what,
        move |_, _| stale.store(true, Ordering::Release),
    )
}

/// The core objects of a store.
fn objects_of<M: Model>(store: &Store<Stored<M>>) -> Vec<M> {
    store
        .state()
        .iter()
        .map(|o| M::from_object((**o).clone()))
        .collect()
}

impl WebhookCache {
    /// Starts the watches (inside a Tokio runtime). Until the stores have listed, requests
    /// are allowed unreviewed.
    pub fn start(client: &Client, render: RenderOptions) -> Self {
        let stale = Arc::new(AtomicBool::new(true));
        let ready = Arc::new(AtomicBool::new(false));
        let reflectors = (
            watch::<MachineConfig>(client, "MachineConfig", &stale),
            watch::<MachineConfigPool>(client, "MachineConfigPool", &stale),
            watch::<ControllerConfig>(client, "ControllerConfig", &stale),
            watch::<KubeletConfig>(client, "KubeletConfig", &stale),
            watch::<ContainerRuntimeConfig>(client, "ContainerRuntimeConfig", &stale),
        );
        let rollout_policies = watch_rollout_policies(client, stale.clone());
        let stores = Stores {
            machine_configs: reflectors.0.store().clone(),
            pools: reflectors.1.store().clone(),
            controller_configs: reflectors.2.store().clone(),
            kubelet_configs: reflectors.3.store().clone(),
            runtime_configs: reflectors.4.store().clone(),
            policies: Arc::new(Mutex::new(None)),
            rollout_policies: rollout_policies.store().clone(),
        };
        let current = Arc::new(Mutex::new(None));
        let policies = watch_policies(client, stores.policies.clone(), stale.clone());
        let mut tasks = Vec::new();
        // Once the MachineConfig, pool and ControllerConfig stores listed, keep a view built
        // (and its pool renders computed) after each settled burst of changes, so reviews find
        // it ready.
        let (st, flag, stale2, cur, opts) = (
            stores.clone(),
            ready.clone(),
            stale.clone(),
            current.clone(),
            render.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let listed = st.machine_configs.wait_until_ready().await.is_ok()
                && st.pools.wait_until_ready().await.is_ok()
                && st.controller_configs.wait_until_ready().await.is_ok();
            if !listed {
                return;
            }
            tracing::info!("webhook: cluster caches filled");
            flag.store(true, Ordering::Release);
            loop {
                if stale2.swap(false, Ordering::AcqRel) {
                    let (st, opts) = (st.clone(), opts.clone());
                    let built = tokio::task::spawn_blocking(move || {
                        let view = ClusterView::new(st.manifests(), opts);
                        view.warm();
                        view
                    })
                    .await;
                    match built {
                        Ok(view) => {
                            if let Ok(mut c) = cur.lock() {
                                *c = Some(Arc::new(view));
                            }
                        }
                        Err(e) => tracing::error!(error = %e, "webhook: view not rebuilt"),
                    }
                }
                tokio::time::sleep(SETTLE).await;
            }
        }));
        WebhookCache {
            _reflectors: reflectors,
            _policies: policies,
            _rollout_policies: rollout_policies,
            stores,
            tasks,
            stale,
            ready,
            current,
            render,
        }
    }

    /// Whether the MachineConfig, pool and ControllerConfig stores hold their first listing
    /// (the custom resources' CRDs may be absent; their stores stay empty then).
    pub fn filled(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Decodes the stores into manifests (objects that do not decode are skipped and logged).
    pub fn manifests(&self) -> Manifests {
        self.stores.manifests()
    }
}

impl Stores {
    fn manifests(&self) -> Manifests {
        let file = || "cluster".to_string();
        let mut m = Manifests {
            machine_configs: objects_of(&self.machine_configs)
                .into_iter()
                .map(|mc| (file(), mc))
                .collect(),
            pools: objects_of(&self.pools)
                .into_iter()
                .map(|p| (file(), p))
                .collect(),
            controller_config: objects_of(&self.controller_configs)
                .into_iter()
                .find(|c: &ControllerConfig| c.metadata.name == CONTROLLER_CONFIG_NAME)
                .map(|c| (file(), c)),
            nodes: Vec::new(),
            machine_os_configs: Vec::new(),
            rollout_policies: self
                .rollout_policies
                .state()
                .iter()
                .filter_map(|o| match serde_json::to_value(o.as_ref())
                    .and_then(serde_json::from_value::<RolloutPolicy>)
                {
                    Ok(p) => Some((file(), p)),
                    Err(e) => {
                        tracing::warn!(name = ?o.metadata.name, error = %e, "webhook: RolloutPolicy skipped");
                        None
                    }
                })
                .collect(),
            others: Vec::new(),
            locations: Vec::new(),
        };
        // The custom resources and the policies are read by the generate and plan code
        // from the manifests' loosely typed objects.
        let kubelet: Vec<KubeletConfig> = objects_of(&self.kubelet_configs);
        let runtime: Vec<ContainerRuntimeConfig> = objects_of(&self.runtime_configs);
        let custom = kubelet
            .iter()
            .filter_map(|k| serde_json::to_value(k).ok())
            .chain(runtime.iter().filter_map(|c| serde_json::to_value(c).ok()))
            .collect::<Vec<_>>();
        for v in custom {
            m.others.push((file(), v));
        }
        let policies = self.policies.lock().map(|p| p.clone()).unwrap_or_default();
        if let Some(v) = policies {
            m.others.push((file(), v));
        }
        m
    }
}

impl Drop for WebhookCache {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// The `operator.openshift.io/v1` MachineConfiguration resource.
fn machine_configuration_resource() -> ApiResource {
    ApiResource {
        group: "operator.openshift.io".into(),
        version: "v1".into(),
        api_version: "operator.openshift.io/v1".into(),
        kind: "MachineConfiguration".into(),
        plural: "machineconfigurations".into(),
    }
}

/// Keeps the MachineConfiguration `cluster` in `slot`, marking the view stale on each change
/// (an absent API is rechecked with a growing delay, see [`crate::reflect`]).
fn watch_policies(
    client: &Client,
    slot: Arc<Mutex<Option<serde_json::Value>>>,
    stale: Arc<AtomicBool>,
) -> Reflector<DynamicObject> {
    let ar = machine_configuration_resource();
    let api = Api::<DynamicObject>::all_with(client.clone(), &ar);
    let cfg = watcher::Config::default().fields("metadata.name=cluster");
    reflect_with(api, cfg, ar, "MachineConfiguration", move |_, store| {
        let value = store
            .state()
            .first()
            .and_then(|o| serde_json::to_value(o.as_ref()).ok());
        if let Ok(mut s) = slot.lock() {
            *s = value;
        }
        stale.store(true, Ordering::Release);
    })
}

/// The RolloutPolicy resource, from the core's constants (the CRD is this project's).
fn rollout_policy_resource() -> ApiResource {
    ApiResource {
        group: rollout_policy::GROUP.into(),
        version: rollout_policy::VERSION.into(),
        api_version: format!("{}/{}", rollout_policy::GROUP, rollout_policy::VERSION),
        kind: rollout_policy::KIND.into(),
        plural: "rolloutpolicies".into(),
    }
}

/// Watches the RolloutPolicies, marking the view stale on each change (an absent API is an
/// empty store, rechecked with a growing delay, see [`crate::reflect`]).
fn watch_rollout_policies(client: &Client, stale: Arc<AtomicBool>) -> Reflector<DynamicObject> {
    let ar = rollout_policy_resource();
    let api = Api::<DynamicObject>::all_with(client.clone(), &ar);
    reflect_with(
        api,
        watcher::Config::default(),
        ar,
        "RolloutPolicy",
        move |_, _| stale.store(true, Ordering::Release),
    )
}

impl ViewSource for WebhookCache {
    /// The view the background task built last (at most 200 ms plus a render behind the
    /// caches), or one built now when there is none yet.
    fn view(&self) -> Option<Arc<ClusterView>> {
        if !self.filled() {
            return None;
        }
        let mut cur = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if cur.is_none() {
            self.stale.store(false, Ordering::Release);
            *cur = Some(Arc::new(ClusterView::new(
                self.stores.manifests(),
                self.render.clone(),
            )));
        }
        cur.clone()
    }
}
