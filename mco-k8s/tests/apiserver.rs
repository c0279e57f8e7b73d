//! The in-process API server speaks the protocol kube-rs expects.

mod support;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{
    DeleteParams, DynamicObject, EvictParams, ListParams, Patch, PatchParams, PostParams,
    WatchEvent, WatchParams,
};
use kube::Api;
use mco_k8s::crd;
use serde_json::json;
use support::apiserver::ApiServer;

fn pools(client: kube::Client) -> Api<DynamicObject> {
    Api::all_with(client, &crd::MACHINE_CONFIG_POOL.api_resource())
}

fn pool(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfigPool",
        "metadata": {"name": name},
        "spec": {"paused": false},
        "status": {"machineCount": 7}
    }))
    .unwrap()
}

fn code(e: kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason.clone()),
        other => panic!("not an API error: {other}"),
    }
}

#[tokio::test]
async fn crud_conflicts_and_status() {
    let server = ApiServer::start().await.unwrap();
    let api = pools(server.client());
    let created = api
        .create(&PostParams::default(), &pool("worker"))
        .await
        .unwrap();
    let meta = &created.metadata;
    assert_eq!(meta.generation, Some(1));
    assert!(meta.uid.is_some() && meta.creation_timestamp.is_some());
    // The status subresource: create drops status.
    assert!(created.data.get("status").is_none());
    let e = api
        .create(&PostParams::default(), &pool("worker"))
        .await
        .unwrap_err();
    assert_eq!(code(e), (409, "AlreadyExists".into()));
    let e = api.get("nope").await.unwrap_err();
    assert_eq!(code(e), (404, "NotFound".into()));

    // Merge patch on spec bumps generation and resourceVersion.
    let p = api
        .patch(
            "worker",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"paused": true}})),
        )
        .await
        .unwrap();
    assert_eq!(p.metadata.generation, Some(2));
    assert_ne!(
        p.metadata.resource_version,
        created.metadata.resource_version
    );
    // A no-op patch writes nothing.
    let same = api
        .patch(
            "worker",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"paused": true}})),
        )
        .await
        .unwrap();
    assert_eq!(same.metadata.resource_version, p.metadata.resource_version);

    // Status goes through /status only, without touching generation.
    let s = api
        .patch_status(
            "worker",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"machineCount": 3}, "spec": {"paused": false}})),
        )
        .await
        .unwrap();
    assert_eq!(s.data["status"]["machineCount"], 3);
    assert_eq!(s.data["spec"]["paused"], true);
    assert_eq!(s.metadata.generation, Some(2));
    let m = api
        .patch(
            "worker",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"machineCount": 9}})),
        )
        .await
        .unwrap();
    assert_eq!(m.data["status"]["machineCount"], 3);

    // JSON patch.
    let j = api
        .patch(
            "worker",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([
                    {"op": "add", "path": "/spec/maxUnavailable", "value": 3},
                    {"op": "test", "path": "/spec/paused", "value": true}
                ]))
                .unwrap(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(j.data["spec"]["maxUnavailable"], 3);

    // Stale update conflicts; a fresh one goes through.
    let mut stale = created.clone();
    stale.data["spec"]["paused"] = json!(false);
    let e = api
        .replace("worker", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    assert_eq!(code(e), (409, "Conflict".into()));
    let mut fresh = api.get("worker").await.unwrap();
    fresh.data["spec"]["paused"] = json!(false);
    let r = api
        .replace("worker", &PostParams::default(), &fresh)
        .await
        .unwrap();
    assert_eq!(r.data["spec"]["paused"], false);
    // A merge patch carrying a stale version conflicts too.
    let e = api
        .patch(
            "worker",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"resourceVersion": "1"}, "spec": {"paused": true}})),
        )
        .await
        .unwrap_err();
    assert_eq!(code(e), (409, "Conflict".into()));

    api.delete("worker", &DeleteParams::default())
        .await
        .unwrap();
    let e = api
        .delete("worker", &DeleteParams::default())
        .await
        .unwrap_err();
    assert_eq!(code(e), (404, "NotFound".into()));
}

#[tokio::test]
async fn lists_watches_and_evictions() {
    let server = ApiServer::start().await.unwrap();
    let client = server.client();
    let nodes: Api<Node> = Api::all(client.clone());
    for i in 0..3 {
        let n: Node = serde_json::from_value(json!({
            "metadata": {"name": format!("n{i}"), "labels": {"role": if i == 0 { "a" } else { "b" }}}
        }))
        .unwrap();
        nodes.create(&PostParams::default(), &n).await.unwrap();
    }
    let listed = nodes
        .list(&ListParams::default().labels("role=b"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 2);
    let rv = listed.metadata.resource_version.clone().unwrap();

    let mut stream = nodes
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    nodes
        .patch(
            "n1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"x": "y"}}})),
        )
        .await
        .unwrap();
    match stream.next().await {
        Some(Ok(WatchEvent::Modified(n))) => {
            assert_eq!(n.metadata.name.as_deref(), Some("n1"));
            assert_eq!(n.metadata.annotations.unwrap()["x"], "y");
        }
        other => panic!("unexpected {other:?}"),
    }

    let pods: Api<Pod> = Api::namespaced(client.clone(), "apps");
    for (name, node) in [("p1", "n1"), ("p2", "n2")] {
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}
        }))
        .unwrap();
        pods.create(&PostParams::default(), &p).await.unwrap();
    }
    let all: Api<Pod> = Api::all(client.clone());
    let on_n1 = all
        .list(&ListParams::default().fields("spec.nodeName=n1"))
        .await
        .unwrap();
    assert_eq!(on_n1.items.len(), 1);
    // A disruption budget refuses twice; kube-rs retries 429s on its own.
    server.store.block_eviction("apps", "p1", 2);
    pods.evict("p1", &EvictParams::default()).await.unwrap();
    assert_eq!(server.store.request_counts()["POST pods/eviction"], 3);
    assert!(pods.get_opt("p1").await.unwrap().is_none());
    assert_eq!(
        server.store.evictions(),
        [("apps".to_string(), "p1".to_string())]
    );
}
