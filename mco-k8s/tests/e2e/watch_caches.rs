//! The watch caches against the in-process API server: an API the server does not serve is
//! an empty, ready store, not re-requested in a tight loop, and a loop woken on spec changes sleeps through status
//! updates.

use crate::support;

use crate::support::apiserver::ApiServer;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use mco_k8s::crd;
use mco_k8s::reflect::{wake_on, Wake};
use serde_json::json;
use std::time::Duration;
use tokio::sync::mpsc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_absent_api_is_not_polled() {
    let server = ApiServer::start().await.unwrap();
    let ar = ApiResource {
        group: "operator.openshift.io".into(),
        version: "v1".into(),
        api_version: "operator.openshift.io/v1".into(),
        kind: "MachineConfiguration".into(),
        plural: "machineconfigurations".into(),
    };
    let api = Api::<DynamicObject>::all_with(server.client_as("absent-test"), &ar);
    let (tx, mut rx) = mpsc::channel(1);
    let watch = wake_on(
        api,
        watcher::Config::default(),
        ar,
        "absent",
        Wake::Every,
        tx,
    );
    // Readers of the kind go on at once, finding nothing, as a LIST would have told them;
    // and the loop it wakes looks once.
    tokio::time::timeout(support::PATIENCE, watch.store().wait_until_ready())
        .await
        .expect("an absent kind's store is ready")
        .unwrap();
    assert!(watch.store().state().is_empty());
    assert!(wait(&mut rx).await, "the absence wakes the loop once");
    // kube-runtime's stock backoff re-listed about once a second; the absent-API delay
    // starts at 10 s.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let lists: u64 = server
        .store
        .request_counts_by_agent()
        .iter()
        .filter(|((agent, what), _)| {
            agent == "absent-test"
                && what.contains("/apis/operator.openshift.io/v1/machineconfigurations")
        })
        .map(|(_, n)| n)
        .sum();
    assert_eq!(lists, 1, "{:?}", server.store.request_counts_by_agent());
    drop(watch);
}

/// Whether a wake-up comes, waiting as long as a loaded machine may need.
async fn wait(rx: &mut mpsc::Receiver<()>) -> bool {
    within(rx, support::PATIENCE).await
}

/// Whether a wake-up comes within half a second: for what must not wake the loop, which a
/// wake-up would have done by then on any machine the tests run on.
async fn quiet(rx: &mut mpsc::Receiver<()>) -> bool {
    !within(rx, Duration::from_millis(500)).await
}

async fn within(rx: &mut mpsc::Receiver<()>, limit: Duration) -> bool {
    tokio::time::timeout(limit, rx.recv())
        .await
        .ok()
        .flatten()
        .is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_changes_wake_and_status_updates_do_not() {
    let server = ApiServer::start().await.unwrap();
    let ar = crd::MACHINE_CONFIG_POOL.api_resource();
    let api = Api::<DynamicObject>::all_with(server.client(), &ar);
    let (tx, mut rx) = mpsc::channel(8);
    let _watch = wake_on(
        api.clone(),
        watcher::Config::default(),
        ar.clone(),
        "pools",
        Wake::SpecChanges,
        tx,
    );
    assert!(wait(&mut rx).await, "the initial list wakes");
    let pool: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": "worker"},
        "spec": {"paused": false}
    }))
    .unwrap();
    api.create(&PostParams::default(), &pool).await.unwrap();
    assert!(wait(&mut rx).await, "a new pool wakes");
    let status = json!({"status": {"machineCount": 3}});
    api.patch_status("worker", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    assert!(quiet(&mut rx).await, "a status update does not wake");
    let spec = json!({"spec": {"paused": true}});
    api.patch("worker", &PatchParams::default(), &Patch::Merge(&spec))
        .await
        .unwrap();
    assert!(wait(&mut rx).await, "a spec change wakes");
}
