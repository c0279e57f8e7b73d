//! The webhook's view of the cluster: one watch per kind ([`crate::reflect`]) keeps the
//! MachineConfigs, pools, the ControllerConfig, KubeletConfigs and ContainerRuntimeConfigs.
//! A change marks the view stale; the next review decodes the stores into a new
//! [`ClusterView`] (whose pool renders are then computed once and shared by the reviews that
//! follow). No request makes an API call.
//!
//! The MachineConfiguration `cluster` (`operator.openshift.io/v1`, the node disruption
//! policies the plans use) is watched too; on clusters without that API the watch retries with
//! a growing delay and plans use the default policies.
//!
//! Not watched: the FeatureGate, APIServer and Node `cluster` objects (a reviewed
//! KubeletConfig is generated without them).

use super::ViewSource;
use crate::controller::cluster::CONTROLLER_CONFIG_NAME;
use crate::crd;
use crate::reflect::{reflect, Reflector};
use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Api, Client};
use mco_render::admission::ClusterView;
use mco_render::controllers::backoff::Backoff;
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
    policies: Arc<Mutex<Option<serde_json::Value>>>,
    policies_task: tokio::task::JoinHandle<()>,
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
        let policies = Arc::new(Mutex::new(None));
        let policies_task = tokio::spawn(watch_policies(
            client.clone(),
            policies.clone(),
            stale.clone(),
        ));
        WebhookCache {
            policies,
            policies_task,
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
        let policies = self.policies.lock().map(|p| p.clone()).unwrap_or_default();
        if let Some(v) = policies {
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

impl Drop for WebhookCache {
    fn drop(&mut self) {
        self.policies_task.abort();
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

/// Keeps the MachineConfiguration `cluster` in `slot`, marking the view stale on each change.
async fn watch_policies(
    client: Client,
    slot: Arc<Mutex<Option<serde_json::Value>>>,
    stale: Arc<AtomicBool>,
) {
    let api = Api::<DynamicObject>::all_with(client, &machine_configuration_resource());
    let cfg = watcher::Config::default().fields("metadata.name=cluster");
    let mut stream = watcher(api, cfg).boxed();
    let mut attempt = 0u32;
    while let Some(ev) = stream.next().await {
        let value = match ev {
            Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                serde_json::to_value(&o).ok()
            }
            Ok(watcher::Event::Delete(_)) => None,
            Ok(watcher::Event::Init | watcher::Event::InitDone) => continue,
            Err(e) => {
                let absent = matches!(
                    &e,
                    watcher::Error::InitialListFailed(kube::Error::Api(s)) if s.code == 404
                );
                let policy = if absent {
                    Backoff::ABSENT_API
                } else {
                    Backoff::TRANSIENT
                };
                let delay = policy.delay(attempt);
                attempt = attempt.saturating_add(1);
                tracing::debug!("webhook: MachineConfiguration watch: {e}; retrying in {delay:?}");
                tokio::time::sleep(delay).await;
                continue;
            }
        };
        attempt = 0;
        if let Ok(mut s) = slot.lock() {
            *s = value;
        }
        stale.store(true, Ordering::Release);
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
