//! The controllers that write MachineConfigs from other objects, run as one loop next to the
//! render and rollout controller ([`super::run`]): the template controller (when a templates
//! folder is given), the cluster-config controllers (registries, feature gates, the Node
//! `cluster`: [`super::cluster_config`]) and the KubeletConfig and ContainerRuntimeConfig
//! controllers. Each pass runs the templates first, so the others read fresh role
//! MachineConfigs, then the cluster-config syncs, then the custom resources. Passes
//! run on a change that concerns them (not a pool's status, not a rendered config), debounced,
//! and on the resync timer.

use super::cluster_config::{image_resources, ClusterConfigs};
use super::resources::{config_resources, Resources};
use super::templates::Templates;
use super::Options;
use crate::crd;
use crate::reflect::{wake_on, Wake};
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::watcher;
use kube::{Api, Client};
use tokio::sync::mpsc;

/// Runs the generating controllers until their watches end. Dropping the future (aborting
/// its task) stops its watches too.
pub async fn run(client: Client, opts: Options) {
    let (tx, mut rx) = mpsc::channel::<()>(1);
    let dynamic = |ar: &ApiResource| Api::<DynamicObject>::all_with(client.clone(), ar);
    let mut watchers = Vec::new();
    for (kind, what, wake) in [
        (crd::KUBELET_CONFIG, "KubeletConfigs", Wake::Every),
        (
            crd::CONTAINER_RUNTIME_CONFIG,
            "ContainerRuntimeConfigs",
            Wake::Every,
        ),
        (crd::MACHINE_CONFIG, "MachineConfigs", Wake::NotRendered),
        (
            crd::MACHINE_CONFIG_POOL,
            "MachineConfigPools",
            Wake::SpecChanges,
        ),
        (crd::CONTROLLER_CONFIG, "ControllerConfigs", Wake::Every),
    ] {
        let ar = kind.api_resource();
        let cfg = watcher::Config::default();
        watchers.push(wake_on(dynamic(&ar), cfg, ar, what, wake, tx.clone()));
    }
    // The config.openshift.io and operator.openshift.io APIs may not be installed: their
    // watches recheck over minutes.
    for ar in config_resources().into_iter().chain(image_resources()) {
        let cfg = watcher::Config::default();
        let what = "config.openshift.io objects";
        watchers.push(wake_on(
            dynamic(&ar),
            cfg,
            ar,
            what,
            Wake::Every,
            tx.clone(),
        ));
    }
    let version = opts.render.controller_version.clone();
    let custom = Resources::new(client.clone(), &version);
    let cluster = ClusterConfigs::new(client.clone(), &version);
    let templates = opts
        .templates
        .clone()
        .map(|t| Templates::new(client.clone(), t, &version));
    loop {
        let _ = tokio::time::timeout(opts.resync, rx.recv()).await;
        tokio::time::sleep(opts.debounce).await;
        while rx.try_recv().is_ok() {}
        let mut again = false;
        if let Some(t) = &templates {
            match t.sync().await {
                Ok(settled) => again |= !settled,
                Err(e) => {
                    tracing::warn!("template sync failed: {e}");
                    again = true;
                }
            }
        }
        match cluster.sync().await {
            Ok(r) => again |= r.retry,
            Err(e) => {
                tracing::warn!("cluster-config sync failed: {e}");
                again = true;
            }
        }
        match custom.sync_all().await {
            Ok(r) => again |= r.retry,
            Err(e) => {
                tracing::warn!("KubeletConfig/ContainerRuntimeConfig sync failed: {e}");
                again = true;
            }
        }
        if again {
            let _ = tx.try_send(());
        }
        if watchers.iter().all(|w| w.is_finished()) {
            return;
        }
    }
}
