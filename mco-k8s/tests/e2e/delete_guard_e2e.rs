//! The DELETE of a MachineConfig a pool or a node still names, through the in-process API
//! server calling the real webhook over HTTPS by the manifests' ValidatingWebhookConfiguration:
//! an administrator's is refused (409, naming who holds it), one nothing names is admitted, and
//! the controller's own (its garbage collection) is not reviewed at all.

// The test API server's write closures return its Status error by value.
#![allow(clippy::result_large_err)]

use crate::support;
use crate::support::admission::Outcome;
use crate::support::apiserver::{resource, ApiServer};
use k8s_openapi::api::core::v1::Node as KubeNode;
use kube::api::{DeleteParams, DynamicObject, PostParams};
use kube::Api;
use serde_json::json;

const CONTROLLER_USER: &str =
    "system:serviceaccount:openshift-machine-config-operator:machine-config-controller";

fn rendered(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": name},
        "spec": {"config": {"ignition": {"version": "3.5.0"}}}
    }))
    .expect("MachineConfig")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_in_use_is_not_deleted() {
    let limit = support::PATIENCE;
    let server = ApiServer::start().await.expect("apiserver");
    let admin = server.client();
    let pp = PostParams::default();
    let mcs: Api<DynamicObject> =
        Api::all_with(admin.clone(), &mco_k8s::crd::MACHINE_CONFIG.api_resource());
    for n in [
        "rendered-worker-a",
        "rendered-worker-b",
        "rendered-worker-c",
    ] {
        mcs.create(&pp, &rendered(n)).await.expect("create");
    }
    let pools: Api<DynamicObject> = Api::all_with(
        admin.clone(),
        &mco_k8s::crd::MACHINE_CONFIG_POOL.api_resource(),
    );
    let pool: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": "worker"},
        "spec": {"machineConfigSelector": {"matchLabels": {"machineconfiguration.openshift.io/role": "worker"}},
                 "configuration": {"name": "rendered-worker-b"}}
    }))
    .expect("pool");
    pools.create(&pp, &pool).await.expect("pool");
    let def = resource("machineconfigpools").expect("pools");
    server
        .store
        .write(def, "", "worker", true, |o| {
            let mut o = o.clone();
            o["status"] = json!({"configuration": {"name": "rendered-worker-a"}});
            Ok(o)
        })
        .expect("pool status");
    let nodes: Api<KubeNode> = Api::all(admin.clone());
    let node: KubeNode = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "worker-0", "annotations": {
            "machineconfiguration.openshift.io/currentConfig": "rendered-worker-a",
            "machineconfiguration.openshift.io/desiredConfig": "rendered-worker-b"}}
    }))
    .expect("node");
    nodes.create(&pp, &node).await.expect("node");

    // The webhook, on the caches, behind the manifests' configuration.
    let webhook = support::admission::install_webhook(&server, limit).await;
    let controller = server.client_for(CONTROLLER_USER, "machine-config-controller");

    // The pool's target and the node's desired config: refused, naming both.
    let refused = |name: &'static str| {
        let mcs = mcs.clone();
        async move {
            match mcs.delete(name, &DeleteParams::default()).await {
                Err(kube::Error::Api(e)) => Some((e.code, e.message)),
                Ok(_) => None,
                Err(e) => panic!("{name}: {e}"),
            }
        }
    };
    // The webhook's Node cache may trail the first request by a moment.
    let (code, message) = support::poll_until(
        "the DELETE of rendered-worker-a is refused",
        limit,
        || refused("rendered-worker-a"),
        String::new,
    )
    .await;
    assert_eq!(code, 409);
    assert!(
        message.contains("MachineConfig rendered-worker-a is in use: pool worker (status.configuration); node worker-0 (currentConfig)."),
        "{message}"
    );
    let (code, message) = refused("rendered-worker-b").await.expect("refused");
    assert_eq!(code, 409);
    assert!(
        message.starts_with("admission webhook \"machineconfigs.machineconfiguration.openshift.io\" denied the request: MachineConfig rendered-worker-b is in use: pool worker (spec.configuration); node worker-0 (desiredConfig)."),
        "{message}"
    );
    assert!(server
        .store
        .get("machineconfigs", "", "rendered-worker-b")
        .is_some());

    // Nothing names c: deleted.
    assert_eq!(refused("rendered-worker-c").await, None);
    assert!(server
        .store
        .get("machineconfigs", "", "rendered-worker-c")
        .is_none());

    // The controller's own deletions (its garbage collection) are not reviewed.
    let reviewed_before = server.store.admission_calls().len();
    let as_controller: Api<DynamicObject> = Api::all_with(
        controller.clone(),
        &mco_k8s::crd::MACHINE_CONFIG.api_resource(),
    );
    as_controller
        .delete("rendered-worker-b", &DeleteParams::default())
        .await
        .expect("the controller deletes");
    let calls = server.store.admission_calls();
    assert_eq!(calls.len(), reviewed_before, "{calls:?}");
    assert!(calls.iter().any(|c| c.operation == "DELETE"
        && c.name == "rendered-worker-c"
        && matches!(c.outcome, Outcome::Allowed(_))));
    webhook.hook.stop().await;
}
