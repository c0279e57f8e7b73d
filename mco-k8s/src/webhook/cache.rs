//! The webhook's view of the cluster: one watch per kind ([`crate::reflect`]) keeps the
//! MachineConfigs, pools, the ControllerConfig, KubeletConfigs and ContainerRuntimeConfigs.
//! A change marks the view stale; the next review decodes the stores into a new
//! [`ClusterView`] (whose pool renders are then computed once and shared by the reviews that
//! follow). No request makes an API call.
//!
//! Not watched: the FeatureGate, APIServer and Node `cluster` objects (a reviewed
//! KubeletConfig is generated without them) and the MachineConfiguration `cluster` (plans use
//! the default node disruption policies).

use super::ViewSource;
use crate::controller::cluster::CONTROLLER_CONFIG_NAME;
use crate::crd;
use crate::reflect::{reflect, Reflector};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Api, Client};
use mco_render::admission::ClusterView;
use mco_render::manifests::Manifests;
use mco_render::RenderOptions;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The watch caches and the last view built from them.
pub struct WebhookCache {
    machine_configs: Reflector<crd::MachineConfig>,
    pools: Reflector<crd::MachineConfigPool>,
    controller_configs: Reflector<crd::ControllerConfig>,
    kubelet_configs: Reflector<crd::KubeletConfig>,
    runtime_configs: Reflector<crd::ContainerRuntimeConfig>,
    stale: Arc<AtomicBool>,
    ready: Arc<AtomicBool>,
    current: Mutex<Option<Arc<ClusterView>>>,
    render: RenderOptions,
}

impl std::fmt::Debug for WebhookCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookCache")
            .field(
                "machine_configs",
                &self.machine_configs.store().state().len(),
            )
            .field("pools", &self.pools.store().state().len())
            .finish()
    }
}

fn watch<K>(client: &Client, what: &'static str, stale: &Arc<AtomicBool>) -> Reflector<K>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let stale = stale.clone();
    reflect(
        Api::<K>::all(client.clone()),
        watcher::Config::default(),
        what,
        move |_| stale.store(true, Ordering::Release),
    )
}

fn values<K>(store: &Store<K>) -> Vec<serde_json::Value>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::Serialize,
{
    store
        .state()
        .iter()
        .filter_map(|o| serde_json::to_value(o.as_ref()).ok())
        .collect()
}

impl WebhookCache {
    /// Starts the watches (inside a Tokio runtime). Until the stores have listed, requests
    /// are allowed unreviewed.
    pub fn start(client: &Client, render: RenderOptions) -> Self {
        let stale = Arc::new(AtomicBool::new(true));
        let ready = Arc::new(AtomicBool::new(false));
        let machine_configs = watch(client, "MachineConfig", &stale);
        let pools = watch(client, "MachineConfigPool", &stale);
        let controller_configs = watch(client, "ControllerConfig", &stale);
        let stores = (
            machine_configs.store().clone(),
            pools.store().clone(),
            controller_configs.store().clone(),
        );
        let flag = ready.clone();
        // Ends with the watches (the stores' writers), or once all three listed.
        tokio::spawn(async move {
            let listed = stores.0.wait_until_ready().await.is_ok()
                && stores.1.wait_until_ready().await.is_ok()
                && stores.2.wait_until_ready().await.is_ok();
            if listed {
                tracing::info!("webhook: cluster caches filled");
                flag.store(true, Ordering::Release);
            }
        });
        WebhookCache {
            machine_configs,
            pools,
            controller_configs,
            kubelet_configs: watch(client, "KubeletConfig", &stale),
            runtime_configs: watch(client, "ContainerRuntimeConfig", &stale),
            stale,
            ready,
            current: Mutex::new(None),
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
        let mut m = Manifests::default();
        let mut add = |v: serde_json::Value| {
            if let Ok(text) = serde_json::to_string(&v) {
                if let Err(e) = m.add_file("cluster", &text) {
                    tracing::warn!(error = %e, "webhook: object not decoded");
                }
            }
        };
        for v in values(self.machine_configs.store())
            .into_iter()
            .chain(values(self.pools.store()))
            .chain(values(self.kubelet_configs.store()))
            .chain(values(self.runtime_configs.store()))
        {
            add(v);
        }
        for v in values(self.controller_configs.store()) {
            if v.pointer("/metadata/name")
                .and_then(serde_json::Value::as_str)
                == Some(CONTROLLER_CONFIG_NAME)
            {
                add(v);
            }
        }
        m
    }
}

impl ViewSource for WebhookCache {
    fn view(&self) -> Option<Arc<ClusterView>> {
        if !self.filled() {
            return None;
        }
        let mut cur = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if self.stale.swap(false, Ordering::AcqRel) || cur.is_none() {
            *cur = Some(Arc::new(ClusterView::new(
                self.manifests(),
                self.render.clone(),
            )));
        }
        cur.clone()
    }
}
