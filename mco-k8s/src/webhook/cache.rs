//! The webhook's view of the cluster: one watch per kind ([`crate::reflect`]) keeps the
//! MachineConfigs, pools, the ControllerConfig, KubeletConfigs and ContainerRuntimeConfigs.
//! A change marks the view stale; a background task rebuilds it once the changes settle
//! (decoding the stores into a [`ClusterView`] and rendering each pool once), and reviews read
//! the last one built. No request makes an API call.
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

/// How long changes settle before the view is rebuilt in the background.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(200);

/// The stores' readers (cheap to clone), and the MachineConfiguration slot.
#[derive(Clone)]
struct Stores {
    machine_configs: Store<crd::MachineConfig>,
    pools: Store<crd::MachineConfigPool>,
    controller_configs: Store<crd::ControllerConfig>,
    kubelet_configs: Store<crd::KubeletConfig>,
    runtime_configs: Store<crd::ContainerRuntimeConfig>,
    policies: Arc<Mutex<Option<serde_json::Value>>>,
}

/// The watches, one per kind.
type Reflectors = (
    Reflector<crd::MachineConfig>,
    Reflector<crd::MachineConfigPool>,
    Reflector<crd::ControllerConfig>,
    Reflector<crd::KubeletConfig>,
    Reflector<crd::ContainerRuntimeConfig>,
);

/// The watch caches and the last view built from them.
pub struct WebhookCache {
    // Held for their watch tasks (stopped on drop).
    _reflectors: Reflectors,
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
        let reflectors = (
            watch(client, "MachineConfig", &stale),
            watch(client, "MachineConfigPool", &stale),
            watch(client, "ControllerConfig", &stale),
            watch(client, "KubeletConfig", &stale),
            watch(client, "ContainerRuntimeConfig", &stale),
        );
        let stores = Stores {
            machine_configs: reflectors.0.store().clone(),
            pools: reflectors.1.store().clone(),
            controller_configs: reflectors.2.store().clone(),
            kubelet_configs: reflectors.3.store().clone(),
            runtime_configs: reflectors.4.store().clone(),
            policies: Arc::new(Mutex::new(None)),
        };
        let current = Arc::new(Mutex::new(None));
        let mut tasks = vec![tokio::spawn(watch_policies(
            client.clone(),
            stores.policies.clone(),
            stale.clone(),
        ))];
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
        let mut m = Manifests::default();
        let mut add = |v: serde_json::Value| {
            if let Ok(text) = serde_json::to_string(&v) {
                if let Err(e) = m.add_file("cluster", &text) {
                    tracing::warn!(error = %e, "webhook: object not decoded");
                }
            }
        };
        for v in values(&self.machine_configs)
            .into_iter()
            .chain(values(&self.pools))
            .chain(values(&self.kubelet_configs))
            .chain(values(&self.runtime_configs))
        {
            add(v);
        }
        let policies = self.policies.lock().map(|p| p.clone()).unwrap_or_default();
        if let Some(v) = policies {
            add(v);
        }
        for v in values(&self.controller_configs) {
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
