//! The machine-config-controller: watches the cluster, calls the pure decisions in
//! `mco_render::controllers`, and carries out their writes with kube-rs.
//!
//! One pass syncs every pool: render (create the rendered MachineConfig, point the pool at
//! it, RenderDegraded), roll out (desiredConfig annotations within maxUnavailable), pool
//! status, drain requests, and garbage collection of unused rendered configs. Passes run on
//! any watched change, debounced, on a resync timer, and when a drain in progress is due for
//! its next attempt.
//!
//! Next to it, [`generators::run`] runs the controllers that write MachineConfigs: the
//! template controller (with a templates folder) and the KubeletConfig and
//! ContainerRuntimeConfig controllers.

pub mod cluster;
pub mod drain;
pub mod generators;
pub mod resources;
pub mod templates;
pub mod writes;

use crate::crd;
use cluster::{Cluster, SyncError};
use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::watcher;
use kube::{Api, Client};
use std::time::Duration;
use tokio::sync::mpsc;

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
        }
    }
}

/// A spawned watch that stops when dropped, so a cancelled [`run`] leaves no watch behind.
pub(crate) struct WatchTask(tokio::task::JoinHandle<()>);

impl Drop for WatchTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl WatchTask {
    /// Whether the watch has ended.
    pub(crate) fn is_finished(&self) -> bool {
        self.0.is_finished()
    }
}

pub(crate) fn watch_into<K>(api: Api<K>, tx: mpsc::Sender<()>) -> WatchTask
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    WatchTask(tokio::spawn(async move {
        let mut stream = watcher(api, watcher::Config::default()).boxed();
        while let Some(ev) = stream.next().await {
            if let Err(e) = &ev {
                tracing::warn!("watch error: {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            // A full channel already holds a pending trigger.
            let _ = tx.try_send(());
        }
    }))
}

/// Watches of every resource in `resources` (cluster-wide, as dynamic objects), each
/// sending triggers into `tx`.
fn watch_all(client: &Client, resources: &[ApiResource], tx: &mpsc::Sender<()>) -> Vec<WatchTask> {
    resources
        .iter()
        .map(|ar| {
            let api = Api::<DynamicObject>::all_with(client.clone(), ar);
            watch_into(api, tx.clone())
        })
        .collect()
}

/// Runs the controller until the process stops. Dropping the future (aborting its task)
/// stops the controller's watches too.
pub async fn run(client: Client, opts: Options) -> Result<(), SyncError> {
    let (tx, mut rx) = mpsc::channel::<()>(1);
    let mut watchers = watch_all(
        &client,
        &[
            crd::MACHINE_CONFIG.api_resource(),
            crd::MACHINE_CONFIG_POOL.api_resource(),
            crd::CONTROLLER_CONFIG.api_resource(),
        ],
        &tx,
    );
    watchers.push(watch_into(
        Api::<k8s_openapi::api::core::v1::Node>::all(client.clone()),
        tx.clone(),
    ));
    let mut cluster = Cluster::new(client, opts.clone());
    loop {
        // A change, the resync, or a drain's own retry, whichever comes first.
        let wait = cluster
            .next_drain_retry()
            .map_or(opts.resync, |d| d.min(opts.resync));
        let _ = tokio::time::timeout(wait, rx.recv()).await;
        // Debounce: let a burst of changes settle into one pass.
        tokio::time::sleep(opts.debounce).await;
        while rx.try_recv().is_ok() {}
        if let Err(e) = cluster.sync_all().await {
            tracing::warn!("sync failed: {e}");
            let _ = tx.try_send(());
        }
        if watchers.iter().all(|w| w.0.is_finished()) {
            return Ok(());
        }
    }
}
