//! The webhook's view of the cluster: one watch per kind ([`crate::reflect`]) keeps the
//! MachineConfigs, pools, the ControllerConfig, KubeletConfigs and ContainerRuntimeConfigs;
//! started from the process's [`Registry`], they are the same watches the controller reads
//! while it leads.
//! A change marks the view stale; a background task rebuilds it once the changes settle
//! (decoding the stores into a [`ClusterView`] and rendering each pool once), and reviews read
//! the last one built. No review makes an API call but a MachineConfig's DELETE.
//!
//! The MachineConfiguration `cluster` (`operator.openshift.io/v1`, the node disruption
//! policies the plans use) is watched too; on clusters without that API the watch retries with
//! a growing delay and plans use the default policies. So are the RolloutPolicies
//! (`rollout.mco.dev`, the pools' rollout estimates and the review of a policy's pool): without
//! their CRD the store stays empty and estimates are upstream's.
//!
//! Not watched: the FeatureGate, APIServer and Node `cluster` objects (a reviewed
//! KubeletConfig is generated without them), and the Nodes: the DELETE of a MachineConfig,
//! refused while a pool or node names it, lists their metadata (the one review that makes a
//! request).

use super::UsersFuture;
use super::ViewSource;
use crate::controller::pool_sync::CONTROLLER_CONFIG_NAME;
use crate::objects::{self, Model, Stored};
use crate::reflect::{Registry, Subscription, Watched};
use k8s_openapi::api::core::v1::Node as KubeNode;
use kube::api::ListParams;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Api, Client};
use mco_render::admission::in_use::users_of;
use mco_render::admission::ClusterView;
use mco_render::api::rollout_policy::RolloutPolicy;
use mco_render::api::Node;
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

/// The watch caches and the last view built from them.
pub struct WebhookCache {
    // Held for their watches (each stopped when no loop of the process holds it any more).
    _subscriptions: Vec<Subscription>,
    stores: Stores,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    stale: Arc<AtomicBool>,
    ready: Arc<AtomicBool>,
    current: Arc<Mutex<Option<Arc<ClusterView>>>>,
    render: RenderOptions,
    client: Client,
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
    registry: &Registry,
    what: &'static str,
    stale: &Arc<AtomicBool>,
    subscriptions: &mut Vec<Subscription>,
) -> Watched<Stored<M>> {
    let stale = stale.clone();
    let watched = registry.watch(
        objects::api::<M>(registry.client()),
        watcher::Config::default(),
        M::KIND.api_resource(),
        what,
    );
    subscriptions.push(watched.subscribe(move |_, _| stale.store(true, Ordering::Release)));
    watched
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
    /// Starts the watches (inside a Tokio runtime), with a registry of their own. Until the
    /// stores have listed, requests are allowed unreviewed.
    pub fn start(client: &Client, render: RenderOptions) -> Self {
        Self::start_with(&Registry::new(client.clone()), render)
    }

    /// Takes the watches from `registry` (starting those not running). Until the stores have
    /// listed, requests are allowed unreviewed.
    pub fn start_with(registry: &Registry, render: RenderOptions) -> Self {
        let stale = Arc::new(AtomicBool::new(true));
        let ready = Arc::new(AtomicBool::new(false));
        let mut subs = Vec::new();
        let machine_configs = watch::<MachineConfig>(registry, "MachineConfigs", &stale, &mut subs);
        let pools = watch::<MachineConfigPool>(registry, "MachineConfigPools", &stale, &mut subs);
        let controller_configs =
            watch::<ControllerConfig>(registry, "ControllerConfigs", &stale, &mut subs);
        let kubelet_configs = watch::<KubeletConfig>(registry, "KubeletConfigs", &stale, &mut subs);
        let runtime_configs =
            watch::<ContainerRuntimeConfig>(registry, "ContainerRuntimeConfigs", &stale, &mut subs);
        let rollout_policies = watch_rollout_policies(registry, stale.clone(), &mut subs);
        let stores = Stores {
            machine_configs: machine_configs.store().clone(),
            pools: pools.store().clone(),
            controller_configs: controller_configs.store().clone(),
            kubelet_configs: kubelet_configs.store().clone(),
            runtime_configs: runtime_configs.store().clone(),
            policies: Arc::new(Mutex::new(None)),
            rollout_policies: rollout_policies.store().clone(),
        };
        let current = Arc::new(Mutex::new(None));
        subs.push(watch_policies(
            registry,
            stores.policies.clone(),
            stale.clone(),
        ));
        let mut tasks = Vec::new();
        // Once the MachineConfig, pool and ControllerConfig stores listed, keep a view built
        // (and its pool renders computed) after each settled burst of changes, so reviews find
        // it ready.
        let listed = (
            machine_configs.clone(),
            pools.clone(),
            controller_configs.clone(),
        );
        let (st, flag, stale2, cur, opts) = (
            stores.clone(),
            ready.clone(),
            stale.clone(),
            current.clone(),
            render.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let (mcs, pools, ccs) = listed;
            let listed = mcs.wait_until_ready().await.is_ok()
                && pools.wait_until_ready().await.is_ok()
                && ccs.wait_until_ready().await.is_ok();
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
            _subscriptions: subs,
            stores,
            tasks,
            stale,
            ready,
            current,
            render,
            client: registry.client().clone(),
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
            newest_time: None,
            notices: Vec::new(),
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
pub(crate) fn machine_configuration_resource() -> ApiResource {
    ApiResource {
        group: "operator.openshift.io".into(),
        version: "v1".into(),
        api_version: "operator.openshift.io/v1".into(),
        kind: "MachineConfiguration".into(),
        plural: "machineconfigurations".into(),
    }
}

/// Keeps the MachineConfiguration `cluster` in `slot`, marking the view stale on each change
/// (an absent API is looked at again when its CRD appears, see [`crate::reflect`]).
fn watch_policies(
    registry: &Registry,
    slot: Arc<Mutex<Option<serde_json::Value>>>,
    stale: Arc<AtomicBool>,
) -> Subscription {
    let ar = machine_configuration_resource();
    let api = Api::<DynamicObject>::all_with(registry.client().clone(), &ar);
    let cfg = watcher::Config::default().fields("metadata.name=cluster");
    let watched = registry.watch(api, cfg, ar, "MachineConfiguration");
    watched.subscribe(move |_, store| {
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

/// Watches the RolloutPolicies (loosely typed, as the controller does: one that does not
/// decode is skipped), marking the view stale on each change (an absent API is an empty
/// store, looked at again when its CRD appears, see [`crate::reflect`]).
fn watch_rollout_policies(
    registry: &Registry,
    stale: Arc<AtomicBool>,
    subscriptions: &mut Vec<Subscription>,
) -> Watched<DynamicObject> {
    let ar = crate::crd::ROLLOUT_POLICY.api_resource();
    let api = Api::<DynamicObject>::all_with(registry.client().clone(), &ar);
    let watched = registry.watch(api, watcher::Config::default(), ar, "RolloutPolicies");
    subscriptions.push(watched.subscribe(move |_, _| stale.store(true, Ordering::Release)));
    watched
}

impl ViewSource for WebhookCache {
    /// The pools from their store as it is now (not the view's), the Nodes listed for their
    /// metadata (a MachineConfig's DELETE is rare; a watch of every Node would keep each
    /// replica busy with their heartbeats). A failed LIST counts no node.
    fn users<'a>(&'a self, name: &'a str, _view: &'a ClusterView) -> UsersFuture<'a> {
        Box::pin(async move {
            let pools = objects_of(&self.stores.pools);
            let api: Api<KubeNode> = Api::all(self.client.clone());
            let nodes: Vec<Node> = match api.list_metadata(&ListParams::default()).await {
                Ok(list) => list
                    .items
                    .into_iter()
                    .map(|m| {
                        let mut n = Node::default();
                        n.metadata.name = m.metadata.name.unwrap_or_default();
                        n.metadata.annotations = m
                            .metadata
                            .annotations
                            .unwrap_or_default()
                            .into_iter()
                            .collect();
                        n
                    })
                    .collect(),
                Err(e) => {
                    tracing::warn!(error = %e, "webhook: Nodes not listed; a MachineConfig's users are its pools");
                    Vec::new()
                }
            };
            let pools: Vec<&MachineConfigPool> = pools.iter().collect();
            let nodes: Vec<&Node> = nodes.iter().collect();
            users_of(name, &pools, &nodes)
        })
    }

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
