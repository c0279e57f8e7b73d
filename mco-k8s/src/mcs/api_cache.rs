//! Cluster mode: pools, MachineConfigs and the ControllerConfig come from the API server
//! through watches into local caches (kube-rs reflectors). Requests are answered from the
//! served state only; the caches rebuild it when a watched object changes.

use super::served_state::{BuildOptions, ClusterObjects, ServedState};
use crate::controller::pool_sync::CONTROLLER_CONFIG_NAME;
use crate::objects::{self, Model, Stored};
use futures::StreamExt;
use kube::api::ApiResource;
use kube::runtime::reflector::{self, store::Writer, ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Api, Client};
use mco_render::api::{ControllerConfig, ControllerConfigSpec, MachineConfig, MachineConfigPool};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The caches stopped before they were filled.
#[derive(Debug, thiserror::Error)]
#[error("the {0} cache stopped before it was filled")]
pub struct NotReady(pub &'static str);

/// The three watched caches.
pub struct ClusterCache {
    pools: Store<Stored<MachineConfigPool>>,
    machine_configs: Store<Stored<MachineConfig>>,
    controller_configs: Store<Stored<ControllerConfig>>,
    mc_resource: ApiResource,
    cc_resource: ApiResource,
    tasks: Vec<JoinHandle<()>>,
    /// Whether each cache is listing (again): its store is stale until the list is in.
    listing: Vec<Arc<AtomicBool>>,
}

impl std::fmt::Debug for ClusterCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterCache")
            .field("pools", &self.pools.state().len())
            .field("machine_configs", &self.machine_configs.state().len())
            .finish()
    }
}

fn watch<M: Model>(
    client: &Client,
    changed: mpsc::Sender<()>,
    listing: Arc<AtomicBool>,
) -> (Store<Stored<M>>, JoinHandle<()>) {
    let ar = M::KIND.api_resource();
    let api: Api<Stored<M>> = objects::api::<M>(client);
    let writer = Writer::new(ar.clone());
    let reader = writer.as_reader();
    let kind = ar.kind.clone();
    let task = tokio::spawn(async move {
        // A 410 lists again at once; other failures wait (`reflect::relist`).
        let watches = crate::reflect::relist::relisting(Default::default(), move || {
            watcher(api.clone(), watcher::Config::default())
        });
        let mut events = reflector::reflector(writer, watches).boxed();
        while let Some(ev) = events.next().await {
            match ev {
                Ok(watcher::Event::Init) => listing.store(true, Ordering::Release),
                Ok(watcher::Event::InitApply(_)) => {}
                Ok(e) => {
                    if matches!(e, watcher::Event::InitDone) {
                        listing.store(false, Ordering::Release);
                    }
                    // A full channel already holds a pending rebuild.
                    let _ = changed.try_send(());
                }
                Err(e) => tracing::warn!(kind = %kind, "watch error: {e}"),
            }
        }
    });
    (reader, task)
}

/// What the caches hold now, decoded (only the MachineConfigs the pools serve).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Every pool.
    pub pools: Vec<MachineConfigPool>,
    /// The MachineConfigs the pools serve, by name.
    pub machine_configs: BTreeMap<String, MachineConfig>,
    /// The controller's ControllerConfig spec.
    pub controller_config: Option<ControllerConfigSpec>,
    /// The release the ControllerConfig names (`release-image-version`), as the controller
    /// renders as it.
    pub release: Option<mco_render::release::Release>,
}

impl Snapshot {
    /// The objects [`ServedState::build_cluster`] reads.
    pub fn objects(&self) -> ClusterObjects<'_> {
        ClusterObjects {
            pools: &self.pools,
            machine_configs: &self.machine_configs,
            controller_config: self.controller_config.as_ref(),
            release: self.release,
        }
    }

    /// Builds the served state, keeping `previous`'s encodings where nothing changed.
    pub fn build(
        &self,
        opts: &BuildOptions,
        previous: Option<&ServedState>,
        previous_cc: Option<&ControllerConfigSpec>,
    ) -> ServedState {
        let cc_changed = previous_cc != self.controller_config.as_ref();
        ServedState::build_cluster(self.objects(), opts, previous, cc_changed)
    }
}

impl ClusterCache {
    /// Starts watching; `changed` receives a message after every change once the caches are
    /// filled.
    pub fn start(client: &Client, changed: mpsc::Sender<()>) -> Self {
        let mc_resource = MachineConfig::KIND.api_resource();
        let cc_resource = ControllerConfig::KIND.api_resource();
        let listing: Vec<Arc<AtomicBool>> = (0..3).map(|_| Arc::default()).collect();
        let (pools, t1) = watch::<MachineConfigPool>(client, changed.clone(), listing[0].clone());
        let (machine_configs, t2) =
            watch::<MachineConfig>(client, changed.clone(), listing[1].clone());
        let (controller_configs, t3) =
            watch::<ControllerConfig>(client, changed, listing[2].clone());
        ClusterCache {
            pools,
            machine_configs,
            controller_configs,
            mc_resource,
            cc_resource,
            tasks: vec![t1, t2, t3],
            listing,
        }
    }

    /// Whether no cache is listing again (after a `410`): a snapshot taken now is not known
    /// to be stale. The end of a list sends a change, so a rebuild put off follows.
    pub fn fresh(&self) -> bool {
        self.listing.iter().all(|l| !l.load(Ordering::Acquire))
    }

    /// Waits until every cache holds its first complete listing.
    pub async fn ready(&self) -> Result<(), NotReady> {
        self.pools
            .wait_until_ready()
            .await
            .map_err(|_| NotReady("MachineConfigPool"))?;
        self.machine_configs
            .wait_until_ready()
            .await
            .map_err(|_| NotReady("MachineConfig"))?;
        self.controller_configs
            .wait_until_ready()
            .await
            .map_err(|_| NotReady("ControllerConfig"))?;
        Ok(())
    }

    /// Reads the caches.
    pub fn snapshot(&self) -> Snapshot {
        let mut snap = Snapshot::default();
        for p in self.pools.state() {
            snap.pools
                .push(MachineConfigPool::from_object(p.as_ref().clone()));
        }
        snap.pools.sort_by(|a, b| a.name().cmp(b.name()));
        for pool in &snap.pools {
            let name = super::served_state::served_config_name(pool);
            if name.is_empty() || snap.machine_configs.contains_key(&name) {
                continue;
            }
            let key = ObjectRef::new_with(&name, self.mc_resource.clone());
            if let Some(obj) = self.machine_configs.get(&key) {
                let mc = MachineConfig::from_object(obj.as_ref().clone());
                snap.machine_configs.insert(name, mc);
            }
        }
        let key = ObjectRef::new_with(CONTROLLER_CONFIG_NAME, self.cc_resource.clone());
        if let Some(obj) = self.controller_configs.get(&key) {
            snap.controller_config = Some(obj.spec.clone());
            let cc = ControllerConfig::from_object(obj.as_ref().clone());
            snap.release = mco_render::controllers::render_sync::cluster_release(&cc);
        }
        snap
    }

    /// Stops the watches.
    pub fn stop(&self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Drop for ClusterCache {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests;
