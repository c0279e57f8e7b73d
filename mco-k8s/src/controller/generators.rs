//! The controllers that write MachineConfigs from other objects, run as one loop next to the
//! render and rollout controller ([`super::run`]): the template controller (when a templates
//! folder is given) and the KubeletConfig and ContainerRuntimeConfig controllers. Each pass
//! runs the templates first, so the custom resources read fresh role MachineConfigs. Passes
//! run on any watched change, debounced, and on the resync timer.

use super::resources::{config_resources, Resources};
use super::templates::Templates;
use super::writes::is_absent;
use super::{watch_all, watch_into, Options};
use crate::crd;
use kube::api::{DynamicObject, ListParams};
use kube::{Api, Client};
use tokio::sync::mpsc;

/// Runs the generating controllers until their watches end. Dropping the future (aborting
/// its task) stops its watches too.
pub async fn run(client: Client, opts: Options) {
    let (tx, mut rx) = mpsc::channel::<()>(1);
    let mut watchers = watch_all(
        &client,
        &[
            crd::KUBELET_CONFIG.api_resource(),
            crd::CONTAINER_RUNTIME_CONFIG.api_resource(),
            crd::MACHINE_CONFIG.api_resource(),
            crd::MACHINE_CONFIG_POOL.api_resource(),
            crd::CONTROLLER_CONFIG.api_resource(),
        ],
        &tx,
    );
    // The config.openshift.io APIs may not be installed: watch only those that are (the
    // resync timer notices ones installed later).
    for ar in config_resources() {
        let api = Api::<DynamicObject>::all_with(client.clone(), &ar);
        match api.list(&ListParams::default().limit(1)).await {
            Err(e) if is_absent(&e) => {}
            _ => watchers.push(watch_into(api, tx.clone())),
        }
    }
    let version = opts.render.controller_version.clone();
    let custom = Resources::new(client.clone(), &version);
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
