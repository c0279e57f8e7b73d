//! The in-process API server speaks the protocol kube-rs expects.
// The test API server's write closures return its Status error by value.
#![allow(clippy::result_large_err)]

use crate::support;

use crate::support::apiserver::{ApiServer, Kubelet};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{
    DeleteParams, DynamicObject, EvictParams, ListParams, Patch, PatchParams, PostParams,
    WatchEvent, WatchParams,
};
use kube::Api;
use mco_k8s::crd;
use serde_json::json;

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
    server.store.set_kubelet(Kubelet::Held);
    server.store.block_eviction("apps", "p1", 2);
    pods.evict("p1", &EvictParams::default()).await.unwrap();
    assert_eq!(server.store.request_counts()["POST pods/eviction"], 3);
    assert_eq!(
        server.store.evictions(),
        [("apps".to_string(), "p1".to_string())]
    );
    // The evicted pod terminates for its grace period (the default 30 s) before it is gone.
    let p1 = pods.get("p1").await.unwrap();
    assert!(p1.metadata.deletion_timestamp.is_some());
    assert_eq!(p1.metadata.deletion_grace_period_seconds, Some(30));
    assert_eq!(
        server.store.terminating(),
        [("apps".to_string(), "p1".to_string())]
    );
    // Evicting it again is accepted, budget or not, and changes nothing.
    server.store.block_eviction("apps", "p1", 5);
    pods.evict("p1", &EvictParams::default()).await.unwrap();
    assert_eq!(server.store.request_counts()["POST pods/eviction"], 4);
    let again = pods.get("p1").await.unwrap();
    assert_eq!(
        again.metadata.resource_version,
        p1.metadata.resource_version
    );
    assert_eq!(server.store.evictions().len(), 1);
    assert_eq!(
        server.store.finish_terminating(),
        [("apps".to_string(), "p1".to_string())]
    );
    assert!(pods.get_opt("p1").await.unwrap().is_none());
    let e = pods.evict("p1", &EvictParams::default()).await.unwrap_err();
    assert_eq!(code(e), (404, "NotFound".into()));
}

/// A pod bound to `node` with the given grace period and phase.
fn pod(name: &str, node: &str, grace: Option<i64>, phase: &str) -> Pod {
    let mut p = json!({
        "metadata": {"name": name},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]},
        "status": {"phase": phase}
    });
    if let Some(g) = grace {
        p["spec"]["terminationGracePeriodSeconds"] = json!(g);
    }
    serde_json::from_value(p).unwrap()
}

#[tokio::test]
async fn pods_terminate_for_their_grace_period() {
    let server = ApiServer::start().await.unwrap();
    server.store.set_kubelet(Kubelet::Held);
    let client = server.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "apps");
    let pp = PostParams::default();
    for p in [
        pod("spec-grace", "n1", Some(120), "Running"),
        pod("asked-grace", "n1", Some(120), "Running"),
        pod("unbound", "", None, "Running"),
        pod("finished", "n1", None, "Succeeded"),
        pod("zero", "n1", None, "Running"),
    ] {
        pods.create(&pp, &p).await.unwrap();
    }
    let created = pods.get("spec-grace").await.unwrap();
    let mut stream = pods
        .watch(
            &WatchParams::default(),
            created.metadata.resource_version.as_deref().unwrap(),
        )
        .await
        .unwrap()
        .boxed();

    // The pod's own grace period, when the request names none.
    pods.delete("spec-grace", &DeleteParams::default())
        .await
        .unwrap();
    let t = pods.get("spec-grace").await.unwrap();
    assert_eq!(t.metadata.deletion_grace_period_seconds, Some(120));
    assert_eq!(t.metadata.generation, Some(2));
    assert_ne!(
        t.metadata.resource_version,
        created.metadata.resource_version
    );
    let ts = t.metadata.deletion_timestamp.clone().unwrap();
    let now = k8s_openapi::jiff::Timestamp::now();
    let left = ts.0.as_second() - now.as_second();
    assert!((115..=121).contains(&left), "{left}");
    // The request's, when it names one; a longer one later changes nothing, a shorter one
    // brings the end forward.
    let dp = |g: u32| DeleteParams {
        grace_period_seconds: Some(g),
        ..DeleteParams::default()
    };
    pods.delete("asked-grace", &dp(10)).await.unwrap();
    let a = pods.get("asked-grace").await.unwrap();
    assert_eq!(a.metadata.deletion_grace_period_seconds, Some(10));
    pods.delete("asked-grace", &dp(60)).await.unwrap();
    let b = pods.get("asked-grace").await.unwrap();
    assert_eq!(b.metadata.resource_version, a.metadata.resource_version);
    pods.delete("asked-grace", &dp(5)).await.unwrap();
    let c = pods.get("asked-grace").await.unwrap();
    assert_eq!(c.metadata.deletion_grace_period_seconds, Some(5));
    assert_eq!(c.metadata.generation, Some(2));
    // No grace for a pod on no node, or one that has finished; 0 deletes at once.
    pods.delete("unbound", &DeleteParams::default())
        .await
        .unwrap();
    pods.delete("finished", &DeleteParams::default())
        .await
        .unwrap();
    pods.delete("zero", &dp(0)).await.unwrap();
    for name in ["unbound", "finished", "zero"] {
        assert!(pods.get_opt(name).await.unwrap().is_none(), "{name}");
    }
    // A terminating pod keeps its deletionTimestamp through writes.
    let patched = pods
        .patch(
            "spec-grace",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.deletion_timestamp, Some(ts));

    // Watchers see the pods marked (MODIFIED), and removed (DELETED) only when they end.
    let mut seen = Vec::new();
    while seen.len() < 7 {
        match stream.next().await {
            Some(Ok(WatchEvent::Modified(p))) => {
                seen.push(("MODIFIED", p.metadata.name.unwrap_or_default()))
            }
            Some(Ok(WatchEvent::Deleted(p))) => {
                seen.push(("DELETED", p.metadata.name.unwrap_or_default()))
            }
            Some(Ok(WatchEvent::Added(_))) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    let named = |t: &'static str, n: &str| (t, n.to_string());
    assert_eq!(
        seen,
        [
            named("MODIFIED", "spec-grace"),
            named("MODIFIED", "asked-grace"),
            named("MODIFIED", "asked-grace"),
            named("DELETED", "unbound"),
            named("DELETED", "finished"),
            named("DELETED", "zero"),
            named("MODIFIED", "spec-grace"),
        ]
    );
    assert_eq!(server.store.terminating().len(), 2);

    // A faster kubelet: the 5 s grace period ends (5 ms), the 120 s one not yet (120 ms)...
    // both do in the end, each with a DELETED event.
    server.store.set_kubelet(Kubelet::Speedup(1000));
    let mut deleted = Vec::new();
    while deleted.len() < 2 {
        match tokio::time::timeout(std::time::Duration::from_secs(10), stream.next()).await {
            Ok(Some(Ok(WatchEvent::Deleted(p)))) => deleted.push(p.metadata.name.unwrap()),
            Ok(Some(Ok(_))) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(deleted.contains(&"asked-grace".to_string()));
    assert!(deleted.contains(&"spec-grace".to_string()));
    assert!(server.store.terminating().is_empty());
    assert!(server.store.list("pods").is_empty());
}

#[tokio::test]
async fn evictions_carry_delete_options_and_clients_are_counted() {
    let server = ApiServer::start().await.unwrap();
    server.store.set_kubelet(Kubelet::Held);
    let client = server.client_as("drain-test/1");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "apps");
    pods.create(&PostParams::default(), &pod("p", "n1", None, "Running"))
        .await
        .unwrap();
    // The Eviction's deleteOptions (kube-rs's evict cannot send them: its field name is
    // wrong), sent as is.
    let body = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": "p", "namespace": "apps"},
        "deleteOptions": {"gracePeriodSeconds": 7}});
    let req = http::Request::post("/api/v1/namespaces/apps/pods/p/eviction")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .unwrap();
    let status: serde_json::Value = client.request(req).await.unwrap();
    assert_eq!(status["status"], "Success");
    let p = pods.get("p").await.unwrap();
    assert_eq!(p.metadata.deletion_grace_period_seconds, Some(7));
    // A budget does not cover a pod that is not running yet.
    pods.create(&PostParams::default(), &pod("q", "n1", None, "Pending"))
        .await
        .unwrap();
    server.store.block_eviction("apps", "q", u32::MAX);
    pods.evict("q", &EvictParams::default()).await.unwrap();

    let counts = server.store.request_counts_by_agent();
    let by = |what: &str| {
        counts
            .get(&("drain-test/1".to_string(), what.to_string()))
            .copied()
    };
    assert_eq!(by("POST pods/eviction"), Some(2));
    assert_eq!(by("POST pods"), Some(2));
    assert_eq!(by("GET pods"), Some(1));
    assert!(
        counts.keys().all(|(agent, _)| agent == "drain-test/1"),
        "{counts:?}"
    );
}

#[tokio::test]
async fn rules_restricted_to_names_grant_only_requests_naming_them() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use support::rbac::ungranted;
    let server = ApiServer::start().await.unwrap();
    let client = server.client_as("reader");
    let cms: Api<ConfigMap> = Api::namespaced(client, "ns");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "kubeconfig-data", "namespace": "ns"}}))
            .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    cms.list(&ListParams::default().fields("metadata.name=kubeconfig-data"))
        .await
        .unwrap();
    let requests = server.store.requests_named(Some("reader"));
    let named = |n: &str| Some(n.to_string());
    assert_eq!(
        requests.get("LIST configmaps").cloned().unwrap_or_default(),
        [named("kubeconfig-data")].into_iter().collect()
    );
    assert_eq!(
        requests.get("POST configmaps").cloned().unwrap_or_default(),
        [None].into_iter().collect()
    );
    let by_name = json!({"apiGroups": [""], "resources": ["configmaps"],
        "verbs": ["create", "list"], "resourceNames": ["kubeconfig-data"]});
    // A create names no object: a rule restricted to names never grants it.
    assert_eq!(
        ungranted(&requests, std::slice::from_ref(&by_name)),
        ["create configmaps None (group \"\")"]
    );
    // A list of everything is not a list of the named object.
    cms.list(&ListParams::default()).await.unwrap();
    let requests = server.store.requests_named(Some("reader"));
    let creator = json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]});
    assert_eq!(
        ungranted(&requests, &[by_name.clone(), creator.clone()]),
        ["list configmaps None (group \"\")"]
    );
    let lister = json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]});
    assert!(ungranted(&requests, &[by_name, creator, lister]).is_empty());
}

/// A RoleBinding grants in its namespace alone: a Role's rule covers requests in that
/// namespace, not the same request in another nor a list across every namespace; a
/// ClusterRoleBinding's rule covers them all.
#[tokio::test]
async fn role_bindings_grant_in_their_namespace_alone() {
    use k8s_openapi::api::core::v1::Secret;
    use support::rbac::{grants_in, ungranted_by};
    let server = ApiServer::start().await.unwrap();
    let client = server.client_as("reader");
    for ns in ["mine", "theirs"] {
        let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
        secrets.list(&ListParams::default()).await.unwrap();
    }
    let requests = server.store.requests_scoped(Some("reader"));
    let scoped = |ns: &str| (Some(ns.to_string()), None);
    assert_eq!(
        requests.get("LIST secrets").cloned().unwrap_or_default(),
        [scoped("mine"), scoped("theirs")].into_iter().collect()
    );
    let sa = json!([{"kind": "ServiceAccount", "name": "reader",
                     "namespace": support::rbac::NAMESPACE}]);
    let rule = json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]});
    let objects = [
        json!({"kind": "Role", "metadata": {"name": "r", "namespace": "mine"}, "rules": [rule]}),
        json!({"kind": "RoleBinding", "metadata": {"name": "r", "namespace": "mine"},
               "roleRef": {"kind": "Role", "name": "r"}, "subjects": sa}),
        // A Role of the same name elsewhere, bound to no one, grants nothing.
        json!({"kind": "Role", "metadata": {"name": "r", "namespace": "theirs"}, "rules": [rule]}),
    ];
    assert_eq!(
        ungranted_by(&requests, &grants_in(&objects, "reader")),
        ["list secrets None in \"theirs\" (group \"\")"]
    );
    // Across every namespace: no namespace, which a Role never covers.
    let secrets: Api<Secret> = Api::all(client);
    secrets.list(&ListParams::default()).await.unwrap();
    let requests = server.store.requests_scoped(Some("reader"));
    assert_eq!(
        ungranted_by(&requests, &grants_in(&objects, "reader")),
        [
            "list secrets None (group \"\")",
            "list secrets None in \"theirs\" (group \"\")"
        ]
    );
    let cluster_wide = [
        json!({"kind": "ClusterRole", "metadata": {"name": "c"}, "rules": [rule]}),
        json!({"kind": "ClusterRoleBinding", "metadata": {"name": "c"},
               "roleRef": {"kind": "ClusterRole", "name": "c"}, "subjects": sa}),
    ];
    assert!(ungranted_by(&requests, &grants_in(&cluster_wide, "reader")).is_empty());
}

/// Validating admission as kube-apiserver runs it: a webhook that cannot be reached fails a
/// matching request under `failurePolicy: Fail` (500, "failed calling webhook") and is
/// skipped under `Ignore`; a status write matches only a rule naming the subresource; a
/// matchCondition excluding a user lets that user through unreviewed; one the server cannot
/// evaluate fails loudly; a dry run is reviewed and never stored.
#[tokio::test]
async fn validating_webhooks_as_the_real_server_calls_them() {
    let server = ApiServer::start().await.unwrap();
    let configuration = |policy: &str, condition: &str| {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "test"},
            "webhooks": [{
                "name": "pools.test", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                "failurePolicy": policy,
                "clientConfig": {"service": {"namespace": "ns", "name": "absent", "path": "/v"}},
                "rules": [{"apiGroups": ["machineconfiguration.openshift.io"], "apiVersions": ["v1"],
                           "operations": ["CREATE", "UPDATE"], "resources": ["machineconfigpools"]}],
                "matchConditions": [{"name": "c", "expression": condition}],
            }]
        })
    };
    let def = support::apiserver::resource("validatingwebhookconfigurations").unwrap();
    server
        .store
        .create(
            def,
            "",
            configuration("Fail", "request.userInfo.username != 'system:controller'"),
        )
        .unwrap();
    let admin = pools(server.client());
    let e = admin
        .create(&PostParams::default(), &pool("worker"))
        .await
        .unwrap_err();
    let kube::Error::Api(s) = e else {
        panic!("not an API error")
    };
    assert_eq!((s.code, s.reason.as_str()), (500, "InternalError"));
    assert!(
        s.message.starts_with(
            "Internal error occurred: failed calling webhook \"pools.test\": failed to call webhook: Post \"https://absent.ns.svc:443/v\""
        ),
        "{}",
        s.message
    );
    assert!(server
        .store
        .get("machineconfigpools", "", "worker")
        .is_none());
    // The excluded user is not reviewed; its status writes never are.
    let controller = pools(server.client_for("system:controller", "controller"));
    controller
        .create(&PostParams::default(), &pool("worker"))
        .await
        .unwrap();
    let status = Patch::Merge(json!({"status": {"machineCount": 3}}));
    admin
        .patch_status("worker", &PatchParams::default(), &status)
        .await
        .unwrap();
    let spec = Patch::Merge(json!({"spec": {"paused": true}}));
    assert_eq!(
        code(
            admin
                .patch("worker", &PatchParams::default(), &spec)
                .await
                .unwrap_err()
        ),
        (500, "InternalError".into())
    );
    // Ignore: the unreachable webhook is skipped (and logged).
    server
        .store
        .write(def, "", "test", false, |_| {
            Ok(configuration("Ignore", "request.userInfo.username != 'x'"))
        })
        .unwrap();
    admin
        .patch("worker", &PatchParams::default(), &spec)
        .await
        .unwrap();
    let calls = server.store.admission_calls();
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(calls
        .iter()
        .all(|c| matches!(c.outcome, support::admission::Outcome::Failed(_))));
    // A dry run is reviewed, not stored.
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    admin.create(&dry, &pool("infra")).await.unwrap();
    assert!(server
        .store
        .get("machineconfigpools", "", "infra")
        .is_none());
    assert_eq!(server.store.admission_calls().len(), 4);
    // An expression the server cannot evaluate fails the request rather than pass it.
    server
        .store
        .write(def, "", "test", false, |_| {
            Ok(configuration("Ignore", "has(object.metadata.labels)"))
        })
        .unwrap();
    let e = admin
        .create(&PostParams::default(), &pool("infra"))
        .await
        .unwrap_err();
    assert_eq!(code(e).0, 500);
}

#[tokio::test]
async fn serves_machine_os_configs_and_builds() {
    let server = ApiServer::start().await.unwrap();
    let moscs: Api<DynamicObject> =
        Api::all_with(server.client(), &crd::MACHINE_OS_CONFIG.api_resource());
    let mosc: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineOSConfig",
        "metadata": {"name": "layered"},
        "spec": {
            "machineConfigPool": {"name": "layered"},
            "imageBuilder": {"imageBuilderType": "Job"},
            "renderedImagePushSecret": {"name": "push-secret"},
            "renderedImagePushSpec": "quay.io/example/os-images:latest"
        }
    }))
    .unwrap();
    moscs.create(&PostParams::default(), &mosc).await.unwrap();
    assert_eq!(
        moscs
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    let builds: Api<DynamicObject> =
        Api::all_with(server.client(), &crd::MACHINE_OS_BUILD.api_resource());
    let build: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineOSBuild",
        "metadata": {"name": "layered-0123"},
        "spec": {
            "machineConfig": {"name": "rendered-layered-1"},
            "machineOSConfig": {"name": "layered"},
            "renderedImagePushSpec": "quay.io/example/os-images:layered-0123"
        }
    }))
    .unwrap();
    let created = builds.create(&PostParams::default(), &build).await.unwrap();
    assert_eq!(created.data["spec"]["machineOSConfig"]["name"], "layered");
}

#[tokio::test]
async fn creates_jobs_as_the_job_strategy_does() {
    use k8s_openapi::api::batch::v1::Job;
    let server = ApiServer::start().await.unwrap();
    let jobs: Api<Job> = Api::namespaced(server.client(), "ns");
    let job = |restart: Option<&str>| -> Job {
        let mut spec = json!({"containers": [{"name": "c", "image": "i"}]});
        if let Some(r) = restart {
            spec["restartPolicy"] = json!(r);
        }
        serde_json::from_value(json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "build-x", "namespace": "ns"},
            "spec": {"template": {"spec": spec}},
            "status": {"succeeded": 1}
        }))
        .unwrap()
    };
    let pp = PostParams::default();
    // The pod template's restartPolicy must be Never or OnFailure.
    match jobs.create(&pp, &job(None)).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
            assert!(
                s.message
                    .contains("spec.template.spec.restartPolicy: Required value"),
                "{}",
                s.message
            );
        }
        other => panic!("created without a restartPolicy: {other:?}"),
    }
    let (status, _) = code(jobs.create(&pp, &job(Some("Always"))).await.unwrap_err());
    assert_eq!(status, 422);
    // Created: status cleared, defaults and the generated selector filled in.
    let created = jobs.create(&pp, &job(Some("Never"))).await.unwrap();
    let v = serde_json::to_value(&created).unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    assert_eq!(v["status"], json!({}));
    assert_eq!(v["spec"]["backoffLimit"], 6);
    assert_eq!(v["spec"]["parallelism"], 1);
    assert_eq!(v["spec"]["completionMode"], "NonIndexed");
    assert_eq!(
        v["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
        uid.as_str()
    );
    assert_eq!(
        v["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"],
        "build-x"
    );
    // The status subresource is how the Job controller (here: a test) reports.
    let patch = json!({"status": {"active": 1}});
    let after = jobs
        .patch_status("build-x", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(after.status.and_then(|s| s.active), Some(1));
}

/// Custom resources are checked against their CRDs as the API server does: a MachineOSConfig
/// pushing to a reference without a tag, with an unknown builder and without its pool is
/// refused with every cause and upstream's messages; a PinnedImageSet naming an image by tag
/// too. The CEL rule shapes the CRDs use evaluate as CEL would.
#[tokio::test]
async fn custom_resources_are_checked_against_their_crds() {
    let server = ApiServer::start().await.unwrap();
    let moscs: Api<DynamicObject> =
        Api::all_with(server.client(), &crd::MACHINE_OS_CONFIG.api_resource());
    let bad: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineOSConfig",
        "metadata": {"name": "layered"},
        "spec": {
            "imageBuilder": {"imageBuilderType": "Podman"},
            "renderedImagePushSecret": {"name": "push-secret"},
            "renderedImagePushSpec": "quay.io/example/os-images"
        }
    }))
    .unwrap();
    let Err(kube::Error::Api(e)) = moscs.create(&PostParams::default(), &bad).await else {
        panic!("admitted");
    };
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        e.message,
        "MachineOSConfig.machineconfiguration.openshift.io \"layered\" is invalid: [spec.machineConfigPool: Required value, spec.imageBuilder.imageBuilderType: Unsupported value: \"Podman\": supported values: \"Job\", spec.renderedImagePushSpec: Invalid value: \"string\": the OCI Image name should follow the host[:port][/namespace]/name format, resembling a valid URL without the scheme. Or it must be a valid .svc followed by a port, repository, image name, and tag.]"
    );
    assert!(server
        .store
        .get("machineosconfigs", "", "layered")
        .is_none());

    let sets: Api<DynamicObject> =
        Api::all_with(server.client(), &crd::PINNED_IMAGE_SET.api_resource());
    let tagged: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "PinnedImageSet",
        "metadata": {"name": "worker-pinned"},
        "spec": {"pinnedImages": [{"name": "quay.io/example/app:latest"}]}
    }))
    .unwrap();
    let Err(kube::Error::Api(e)) = sets.create(&PostParams::default(), &tagged).await else {
        panic!("admitted");
    };
    // Both rules fail (the tag is no digest, and `:latest` is not in a name), as CEL has it.
    assert_eq!(
        e.message,
        "PinnedImageSet.machineconfiguration.openshift.io \"worker-pinned\" is invalid: [spec.pinnedImages[0].name: Invalid value: \"string\": the OCI Image reference must end with a valid '@sha256:<digest>' suffix, where '<digest>' is 64 characters long, spec.pinnedImages[0].name: Invalid value: \"string\": the OCI Image name should follow the host[:port][/namespace]/name format, resembling a valid URL without the scheme]"
    );

    // A valid one is stored with the CRD's defaults filled in.
    let good: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineOSConfig",
        "metadata": {"name": "layered"},
        "spec": {
            "machineConfigPool": {"name": "worker"},
            "imageBuilder": {"imageBuilderType": "Job"},
            "renderedImagePushSecret": {"name": "push-secret"},
            "renderedImagePushSpec": "quay.io/example/os-images:latest",
            "containerFile": [{"content": "RUN dnf install -y tmux"}]
        }
    }))
    .unwrap();
    moscs.create(&PostParams::default(), &good).await.unwrap();
    let stored = server.store.get("machineosconfigs", "", "layered").unwrap();
    assert_eq!(
        stored["spec"]["containerFile"],
        json!([{"containerfileArch": "NoArch", "content": "RUN dnf install -y tmux"}])
    );

    use support::schema::eval;
    let push = "self.matches('^([a-zA-Z0-9-]+\\\\.)+[a-zA-Z0-9-]+(:[0-9]{2,5})?(/[a-zA-Z0-9-_]{1,61})*/[a-zA-Z0-9-_.]+:[a-zA-Z0-9._-]+$') || self.matches('^[^.]+\\\\.[^.]+\\\\.svc:\\\\d+\\\\/[^\\\\/]+\\\\/[^\\\\/]+:[^\\\\/]+$')";
    assert_eq!(
        eval(push, "registry.example.net/ocl/worker:latest"),
        Some(true)
    );
    assert_eq!(
        eval(
            push,
            "image-registry.openshift-image-registry.svc:5000/ns/os:latest"
        ),
        Some(true)
    );
    assert_eq!(eval(push, "worker:latest"), Some(false));
    let digest =
        "(self.split('@').size() == 2 && self.split('@')[1].matches('^sha256:[a-f0-9]{64}$'))";
    assert_eq!(
        eval(digest, &format!("quay.io/a/b@sha256:{}", "0".repeat(64))),
        Some(true)
    );
    assert_eq!(eval(digest, "quay.io/a/b@sha256:00"), Some(false));
    let subdomain = "!format.dns1123Subdomain().validate(self).hasValue()";
    assert_eq!(eval(subdomain, "worker"), Some(true));
    assert_eq!(eval(subdomain, "Worker_1"), Some(false));
    assert_eq!(eval("self.size() > 2", "x"), None);
}

/// The status, headers (lower-cased names) and body of a plain GET.
async fn raw_get(
    addr: std::net::SocketAddr,
    path: &str,
) -> (u16, std::collections::BTreeMap<String, String>, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_string()))
        .collect();
    (status, headers, body.to_string())
}

#[tokio::test]
async fn apis_not_installed_are_answered_as_kube_apiserver_answers() {
    let server = ApiServer::start().await.unwrap();
    server.store.uninstall("pinnedimagesets");
    // kube-apiserver 1.36, for a resource whose CRD is not installed (its group unknown, or
    // known without it), for a LIST, a WATCH or an object, and for an unknown group's
    // discovery: Go's http.NotFound at the end of its delegation chain.
    for path in [
        "/apis/operator.openshift.io/v1/machineconfigurations",
        "/apis/operator.openshift.io/v1/machineconfigurations?watch=true&timeoutSeconds=5",
        "/apis/operator.openshift.io/v1/machineconfigurations/cluster",
        "/apis/operator.openshift.io/v1",
        "/apis/machineconfiguration.openshift.io/v1/pinnedimagesets?fieldSelector=metadata.name%3Dx",
        "/apis/machineconfiguration.openshift.io/v1/foos",
        "/apis/machineconfiguration.openshift.io/v2/machineconfigs",
        "/apis/example.com/v1/widgets",
    ] {
        let (status, headers, body) = raw_get(server.addr, path).await;
        assert_eq!(status, 404, "{path}");
        assert_eq!(
            headers.get("content-type").map(String::as_str),
            Some("text/plain; charset=utf-8"),
            "{path}"
        );
        assert_eq!(
            headers.get("x-content-type-options").map(String::as_str),
            Some("nosniff"),
            "{path}"
        );
        assert_eq!(body, "404 page not found\n", "{path}");
    }
    // A built-in group version's unknown resource: its go-restful service's Status.
    let (status, headers, body) = raw_get(server.addr, "/api/v1/foos").await;
    assert_eq!(status, 404);
    assert_eq!(
        headers.get("content-type").map(String::as_str),
        Some("application/json")
    );
    let status_obj: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status_obj["reason"], "NotFound");
    assert_eq!(
        status_obj["message"],
        "the server could not find the requested resource"
    );
    // What kube-rs makes of it: an API error with code 404, no Status reason.
    let ar = kube::api::ApiResource {
        group: "operator.openshift.io".into(),
        version: "v1".into(),
        api_version: "operator.openshift.io/v1".into(),
        kind: "MachineConfiguration".into(),
        plural: "machineconfigurations".into(),
    };
    let mcfg: Api<DynamicObject> = Api::all_with(server.client_as("probe"), &ar);
    match mcfg.list(&ListParams::default()).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 404);
            assert_eq!(s.reason, "Failed to parse error data");
            assert_eq!(s.message, "404 page not found");
        }
        other => panic!("{other:?}"),
    }
    // Discovery leaves out what is not served.
    let (_, _, mco) = raw_get(server.addr, "/apis/machineconfiguration.openshift.io/v1").await;
    assert!(!mco.contains("\"pinnedimagesets\""), "{mco}");
    assert!(mco.contains("\"machineconfigs\""), "{mco}");
    // Requests for what is not served are counted, by path, a watch as a WATCH.
    let counted = server.store.request_counts();
    assert_eq!(
        counted.get("WATCH /apis/operator.openshift.io/v1/machineconfigurations"),
        Some(&1),
        "{counted:#?}"
    );

    // Installed: served, its CRD stored Established (a watch of CRDs sees it).
    server.store.install("machineconfigurations");
    let crd = server
        .store
        .get(
            "customresourcedefinitions",
            "",
            "machineconfigurations.operator.openshift.io",
        )
        .unwrap();
    assert_eq!(crd["status"]["conditions"][1]["type"], "Established");
    assert!(mcfg
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .is_empty());
    let (status, _, found) = raw_get(server.addr, "/apis/operator.openshift.io/v1").await;
    assert_eq!(status, 200);
    assert!(found.contains("\"machineconfigurations\""), "{found}");
    let e = mcfg.get("cluster").await.unwrap_err();
    assert_eq!(code(e), (404, "NotFound".into()));
    // Uninstalled again: its CRD is gone, the kind not served.
    server.store.uninstall("machineconfigurations");
    assert!(server
        .store
        .get(
            "customresourcedefinitions",
            "",
            "machineconfigurations.operator.openshift.io"
        )
        .is_none());
    let (status, _, _) = raw_get(
        server.addr,
        "/apis/operator.openshift.io/v1/machineconfigurations",
    )
    .await;
    assert_eq!(status, 404);
}

/// A MachineConfig with `finalizers` and owner references (owner uid, blockOwnerDeletion).
fn owned_config(name: &str, finalizers: &[&str], owners: &[(&str, bool)]) -> DynamicObject {
    let refs: Vec<_> = owners
        .iter()
        .map(|(uid, blocks)| {
            json!({"apiVersion": "machineconfiguration.openshift.io/v1",
                   "kind": "MachineConfigPool", "name": "owner", "uid": uid,
                   "blockOwnerDeletion": blocks})
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": name, "finalizers": finalizers, "ownerReferences": refs},
        "spec": {}
    }))
    .unwrap()
}

#[tokio::test]
async fn deletion_waits_for_finalizers_and_the_garbage_collector() {
    let server = ApiServer::start().await.unwrap();
    let client = server.client();
    let mcs: Api<DynamicObject> =
        Api::all_with(client.clone(), &crd::MACHINE_CONFIG.api_resource());
    let pools = pools(client.clone());
    let gone = |api: &Api<DynamicObject>, name: &'static str| {
        let api = api.clone();
        async move {
            support::poll_until(
                &format!("{name} gone"),
                support::PATIENCE,
                || {
                    let api = api.clone();
                    async move { api.get_opt(name).await.unwrap().is_none().then_some(()) }
                },
                String::new,
            )
            .await
        }
    };

    // A finalizer holds the object: DELETE only marks it (200, the object), and no write
    // may add a finalizer to it or start a deletion; the write taking the last one off
    // deletes it.
    mcs.create(
        &PostParams::default(),
        &owned_config("held", &["example.com/hold"], &[]),
    )
    .await
    .unwrap();
    let marked = mcs
        .delete("held", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("held, not deleted");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(marked.metadata.generation, Some(2));
    let add = Patch::Merge(json!({"metadata": {"finalizers": ["example.com/hold", "more"]}}));
    let e = mcs
        .patch("held", &PatchParams::default(), &add)
        .await
        .unwrap_err();
    let (status, reason) = code(e);
    assert_eq!((status, reason.as_str()), (422, "Invalid"));
    // Deleting it again changes nothing.
    let again = mcs.delete("held", &DeleteParams::default()).await.unwrap();
    assert_eq!(
        again.left().map(|o| o.metadata.resource_version),
        Some(marked.metadata.resource_version.clone())
    );
    let off = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    mcs.patch("held", &PatchParams::default(), &off)
        .await
        .unwrap();
    assert!(mcs.get_opt("held").await.unwrap().is_none());
    mcs.create(&PostParams::default(), &owned_config("plain", &[], &[]))
        .await
        .unwrap();
    let start = Patch::Merge(json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}}));
    let e = mcs
        .patch("plain", &PatchParams::default(), &start)
        .await
        .unwrap_err();
    assert_eq!(code(e).0, 422);
    // Without finalizers, DELETE removes it at once.
    let removed = mcs.delete("plain", &DeleteParams::default()).await.unwrap();
    assert!(removed.is_left() && mcs.get_opt("plain").await.unwrap().is_none());

    // Foreground: the owner stays (`foregroundDeletion`) until its blocking dependent is
    // gone; the collector deletes the dependents.
    let owner = pools
        .create(&PostParams::default(), &pool("fg"))
        .await
        .unwrap();
    let uid = owner.metadata.uid.clone().unwrap();
    mcs.create(
        &PostParams::default(),
        &owned_config("fg-dep", &["example.com/hold"], &[(&uid, true)]),
    )
    .await
    .unwrap();
    let marked = pools
        .delete("fg", &DeleteParams::foreground())
        .await
        .unwrap()
        .left()
        .expect("marked");
    assert_eq!(
        marked.metadata.finalizers,
        Some(vec!["foregroundDeletion".to_string()])
    );
    support::poll_until(
        "the dependent marked",
        support::PATIENCE,
        || async {
            mcs.get("fg-dep")
                .await
                .unwrap()
                .metadata
                .deletion_timestamp
                .is_some()
                .then_some(())
        },
        String::new,
    )
    .await;
    // Held by its own finalizer, it blocks its owner's deletion.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(pools.get_opt("fg").await.unwrap().is_some());
    mcs.patch("fg-dep", &PatchParams::default(), &off)
        .await
        .unwrap();
    gone(&pools, "fg").await;
    // A dependent with another owner that stays only loses the reference.
    let first = pools
        .create(&PostParams::default(), &pool("fg2"))
        .await
        .unwrap();
    let other = pools
        .create(&PostParams::default(), &pool("stays"))
        .await
        .unwrap();
    let (a, b) = (first.metadata.uid.unwrap(), other.metadata.uid.unwrap());
    mcs.create(
        &PostParams::default(),
        &owned_config("shared", &[], &[(&a, true), (&b, true)]),
    )
    .await
    .unwrap();
    pools
        .delete("fg2", &DeleteParams::foreground())
        .await
        .unwrap();
    gone(&pools, "fg2").await;
    let kept = mcs.get("shared").await.unwrap();
    let owners: Vec<String> = kept
        .metadata
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.uid)
        .collect();
    assert_eq!(owners, vec![b]);
    assert!(kept.metadata.deletion_timestamp.is_none());

    // Background: the owner goes at once, the collector then deletes its dependent.
    let owner = pools
        .create(&PostParams::default(), &pool("bg"))
        .await
        .unwrap();
    let uid = owner.metadata.uid.clone().unwrap();
    mcs.create(
        &PostParams::default(),
        &owned_config("bg-dep", &[], &[(&uid, false)]),
    )
    .await
    .unwrap();
    assert!(pools
        .delete("bg", &DeleteParams::background())
        .await
        .unwrap()
        .is_left());
    assert!(pools.get_opt("bg").await.unwrap().is_none());
    gone(&mcs, "bg-dep").await;

    // Orphan: the dependent stays, without its reference to the owner.
    let owner = pools
        .create(&PostParams::default(), &pool("or"))
        .await
        .unwrap();
    let uid = owner.metadata.uid.clone().unwrap();
    mcs.create(
        &PostParams::default(),
        &owned_config("or-dep", &[], &[(&uid, true)]),
    )
    .await
    .unwrap();
    pools.delete("or", &DeleteParams::orphan()).await.unwrap();
    gone(&pools, "or").await;
    let kept = mcs.get("or-dep").await.unwrap();
    assert_eq!(kept.metadata.owner_references, None);

    // A Job deleted with no options orphans its dependents (batch/v1's default).
    let jobs: Api<k8s_openapi::api::batch::v1::Job> =
        Api::namespaced(client.clone(), "openshift-machine-config-operator");
    let job: k8s_openapi::api::batch::v1::Job = serde_json::from_value(json!({
        "metadata": {"name": "build"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "example.invalid/i"}]}}}
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let marked = jobs
        .delete("build", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("marked");
    assert_eq!(marked.metadata.finalizers, Some(vec!["orphan".to_string()]));
    gone(&jobs_dynamic(&client), "build").await;

    // Without the collector (a bare API server), a foreground deletion never finishes.
    server.store.set_garbage_collector(false);
    pools
        .create(&PostParams::default(), &pool("stuck"))
        .await
        .unwrap();
    pools
        .delete("stuck", &DeleteParams::foreground())
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let stuck = pools.get("stuck").await.unwrap();
    assert_eq!(
        stuck.metadata.finalizers,
        Some(vec!["foregroundDeletion".to_string()])
    );
    server.store.set_garbage_collector(true);
    gone(&pools, "stuck").await;
}

fn jobs_dynamic(client: &kube::Client) -> Api<DynamicObject> {
    let ar = kube::api::ApiResource {
        group: "batch".into(),
        version: "v1".into(),
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        plural: "jobs".into(),
    };
    Api::namespaced_with(client.clone(), "openshift-machine-config-operator", &ar)
}

#[tokio::test]
async fn lists_come_in_pages_each_a_snapshot() {
    let server = ApiServer::start().await.unwrap();
    let api = pools(server.client());
    for i in 0..5 {
        api.create(&PostParams::default(), &pool(&format!("p{i}")))
            .await
            .unwrap();
    }
    let names = |l: &kube::api::ObjectList<DynamicObject>| -> Vec<String> {
        l.items
            .iter()
            .filter_map(|o| o.metadata.name.clone())
            .collect()
    };
    let first = api.list(&ListParams::default().limit(2)).await.unwrap();
    assert_eq!(names(&first), ["p0", "p1"]);
    assert_eq!(first.metadata.remaining_item_count, Some(3));
    let token = first.metadata.continue_.clone().expect("a continue token");
    // A change between pages does not show: the list is the snapshot of its first page.
    api.create(&PostParams::default(), &pool("p5"))
        .await
        .unwrap();
    api.delete("p4", &DeleteParams::default()).await.unwrap();
    let second = api
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(names(&second), ["p2", "p3"]);
    assert_eq!(
        second.metadata.resource_version,
        first.metadata.resource_version
    );
    let token = second.metadata.continue_.clone().expect("another token");
    let last = api
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(names(&last), ["p4"]);
    assert!(last.metadata.continue_.as_deref().is_none_or(str::is_empty));
    // A filtered list says nothing of how many remain.
    let filtered = api
        .list(&ListParams::default().limit(1).fields("metadata.name!=p0"))
        .await
        .unwrap();
    assert_eq!(names(&filtered), ["p1"]);
    assert_eq!(filtered.metadata.remaining_item_count, None);
    // A token from before a compaction is too old: 410, the list starts again.
    let page = api.list(&ListParams::default().limit(1)).await.unwrap();
    let token = page.metadata.continue_.clone().expect("a token");
    api.create(&PostParams::default(), &pool("p6"))
        .await
        .unwrap();
    server.store.compact();
    let e = api
        .list(&ListParams::default().limit(1).continue_token(&token))
        .await
        .unwrap_err();
    assert_eq!(code(e), (410, "Expired".into()));
    // A watcher pages its lists and sees every object.
    let before = server.store.request_counts()["LIST machineconfigpools"];
    let config = kube::runtime::watcher::Config::default().page_size(2);
    let writer =
        kube::runtime::reflector::store::Writer::new(crd::MACHINE_CONFIG_POOL.api_resource());
    let reader = writer.as_reader();
    let stream = kube::runtime::reflector(writer, kube::runtime::watcher(api.clone(), config));
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while stream.next().await.is_some() {}
    });
    reader.wait_until_ready().await.unwrap();
    let mut seen: Vec<String> = reader
        .state()
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    seen.sort();
    assert_eq!(seen, ["p0", "p1", "p2", "p3", "p5", "p6"]);
    task.abort();
    let lists = server.store.request_counts()["LIST machineconfigpools"] - before;
    assert_eq!(lists, 3, "six pools in pages of two");
}
