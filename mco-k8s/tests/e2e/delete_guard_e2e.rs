//! The DELETE of a MachineConfig a pool or a node still names, through the in-process API
//! server calling the real webhook over HTTPS by the manifests' ValidatingWebhookConfiguration:
//! an administrator's is refused (409, naming who holds it), one nothing names is admitted, and
//! the controller's own (its garbage collection) is not reviewed at all.

// The test API server's write closures return its Status error by value.
#![allow(clippy::result_large_err)]

use crate::support;
use crate::support::admission::Outcome;
use crate::support::apiserver::{resource, ApiServer};
use crate::support::cluster::repo;
use crate::support::yaml_docs;
use base64::Engine as _;
use k8s_openapi::api::core::v1::Node as KubeNode;
use kube::api::{DeleteParams, DynamicObject, PostParams};
use kube::Api;
use mco_k8s::webhook::{self, cache::WebhookCache};
use mco_render::admission::{set_ca_bundle, ReviewOptions};
use mco_render::RenderOptions;
use serde_json::json;
use std::time::Duration;

const NAMESPACE: &str = "openshift-machine-config-operator";
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
    let certs = tempfile::tempdir().expect("tempdir");
    let service = format!("machine-config-controller.{NAMESPACE}.svc");
    let ck = rcgen::generate_simple_self_signed(vec![service]).expect("cert");
    let (cert, key) = (certs.path().join("tls.crt"), certs.path().join("tls.key"));
    std::fs::write(&cert, ck.cert.pem()).expect("cert");
    std::fs::write(&key, ck.key_pair.serialize_pem()).expect("key");
    let controller = server.client_for(CONTROLLER_USER, "machine-config-controller");
    let caches = WebhookCache::start(&controller, RenderOptions::default());
    support::eventually_within("the webhook's caches", limit, || {
        caches.filled().then_some(())
    })
    .await;
    let hook = webhook::start(
        webhook::Config {
            listen: "127.0.0.1:0".parse().expect("addr"),
            cert,
            key,
            review: ReviewOptions::default(),
            poll_interval: Duration::from_millis(200),
            limits: webhook::WebhookLimits::default(),
        },
        caches,
    )
    .await
    .expect("webhook");
    server
        .store
        .route_service(NAMESPACE, "machine-config-controller", 443, hook.addr);
    let mut configuration = yaml_docs(&repo("manifests/09-webhook.yaml"))
        .into_iter()
        .find(|d| d["kind"] == "ValidatingWebhookConfiguration")
        .expect("the webhook configuration");
    let ca = base64::engine::general_purpose::STANDARD.encode(ck.cert.pem());
    assert!(set_ca_bundle(&mut configuration, &ca));
    server
        .store
        .create(
            resource("validatingwebhookconfigurations").expect("served"),
            "",
            configuration,
        )
        .expect("configuration stored");

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
    hook.stop().await;
}
