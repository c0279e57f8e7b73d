//! The operator against the in-process API server: it applies the manifests in order with the
//! image and version set, builds the ControllerConfig from the cluster's Infrastructure,
//! reports its rollout in the `machine-config` ClusterOperator, rolls a new version, reports
//! degraded pools, and a pass over an up-to-date cluster writes nothing. Started on an
//! installed cluster whose administrator set the OS images and changed the pools, it leaves
//! them alone and nothing re-renders; the release's OS images ConfigMap is what it writes
//! into the ControllerConfig. Every Node gets a MachineConfigNode, removed with its Node. The
//! built binary is run once against the server through a kubeconfig.

// The test server's write closures return its Status error by value.
#![allow(clippy::result_large_err)]

use crate::support;

use crate::support::apiserver::{resource, ApiServer, Store};
use crate::support::cluster::examples;
use crate::support::{rbac, yaml_docs};
use mco_k8s::controller::pool_sync::Cluster;
use mco_k8s::operator::kinds::kind_info;
use mco_k8s::operator::{embedded, Operator, Options};
use mco_render::api::node::{CURRENT_CONFIG, DESIRED_CONFIG, STATE};
use mco_render::controllers::operator::{
    parse_manifests, CLUSTER_OPERATOR_NAME, NAMESPACE, VERSION_ANNOTATION,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

const IMAGE: &str = "quay.io/test/mco-rs:1";

fn options(version: &str, image: &str) -> Options {
    Options {
        manifests: embedded::manifests(),
        image: image.to_string(),
        version: version.to_string(),
        resync: Duration::from_secs(1),
        debounce: Duration::from_millis(20),
    }
}

fn def(plural: &str) -> &'static support::apiserver::ResourceDef {
    resource(plural).unwrap_or_else(|| panic!("the test server lacks {plural}"))
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// Writes a status into an object's status subresource.
fn set_status(store: &Store, plural: &str, ns: &str, name: &str, status: Value) {
    store
        .write(def(plural), ns, name, true, |old| {
            let mut n = old.clone();
            n["status"] = status;
            Ok(n)
        })
        .unwrap_or_else(|e| panic!("status of {plural}/{name}: {e:?}"));
}

/// Marks every Deployment and DaemonSet as rolled out at its current generation.
fn roll_out(store: &Store) {
    for d in store.list("deployments") {
        let g = d["metadata"]["generation"].as_i64().unwrap_or(1);
        let r = d["spec"]["replicas"].as_i64().unwrap_or(1);
        set_status(
            store,
            "deployments",
            str_at(&d, "/metadata/namespace"),
            str_at(&d, "/metadata/name"),
            json!({"observedGeneration": g, "replicas": r, "updatedReplicas": r,
                   "readyReplicas": r, "availableReplicas": r}),
        );
    }
    for d in store.list("daemonsets") {
        let g = d["metadata"]["generation"].as_i64().unwrap_or(1);
        set_status(
            store,
            "daemonsets",
            str_at(&d, "/metadata/namespace"),
            str_at(&d, "/metadata/name"),
            json!({"observedGeneration": g, "desiredNumberScheduled": 2,
                   "currentNumberScheduled": 2, "updatedNumberScheduled": 2,
                   "numberReady": 2, "numberAvailable": 2}),
        );
    }
}

/// The stored object the desired manifest `obj` names (`None`: not applied).
fn applied(store: &Store, obj: &Value) -> Option<Value> {
    let kind = str_at(obj, "/kind");
    let info = kind_info(kind).unwrap_or_else(|| panic!("the operator does not know {kind}"));
    let ns = if info.namespaced { NAMESPACE } else { "" };
    store.get(&info.resource.plural, ns, str_at(obj, "/metadata/name"))
}

fn condition<'a>(co: &'a Value, type_: &str) -> &'a Value {
    co.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .unwrap_or_else(|| panic!("no {type_} condition in {co:#}"))
}

fn cluster_operator(store: &Store) -> Value {
    store
        .get("clusteroperators", "", CLUSTER_OPERATOR_NAME)
        .unwrap_or_else(|| panic!("no ClusterOperator"))
}

fn add_infrastructure(store: &Store) {
    let infra = json!({"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
        "metadata": {"name": "cluster"}, "spec": {"platformSpec": {"type": "AWS"}}});
    store
        .create(def("infrastructures"), "", infra)
        .unwrap_or_else(|e| panic!("{e:?}"));
    set_status(
        store,
        "infrastructures",
        "",
        "cluster",
        json!({"infrastructureName": "test-abc", "platform": "AWS",
               "platformStatus": {"type": "AWS", "aws": {"region": "eu-west-1"}}}),
    );
}

fn writes(store: &Store) -> u64 {
    store
        .request_counts()
        .iter()
        .filter(|(k, _)| {
            ["POST", "PUT", "PATCH", "DELETE"]
                .iter()
                .any(|m| k.starts_with(m))
        })
        .map(|(_, n)| n)
        .sum()
}

/// Starts a server with an Infrastructure and runs the operator to Available at `version`.
async fn deployed(version: &str) -> (ApiServer, Operator) {
    let server = ApiServer::start().await.unwrap_or_else(|e| panic!("{e}"));
    add_infrastructure(&server.store);
    let op =
        Operator::new(server.client(), options(version, IMAGE)).unwrap_or_else(|e| panic!("{e}"));
    op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    roll_out(&server.store);
    let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(r.failure.is_none(), "{:?}", r.failure);
    (server, op)
}

#[tokio::test]
async fn applies_every_manifest_and_reports_the_rollout() {
    let server = ApiServer::start().await.unwrap_or_else(|e| panic!("{e}"));
    let store = &server.store;
    add_infrastructure(store);
    let op =
        Operator::new(server.client(), options("4.99.0", IMAGE)).unwrap_or_else(|e| panic!("{e}"));
    let desired = op.desired().await.unwrap_or_else(|e| panic!("{e}"));
    let first = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(first.failure.is_none(), "{:?}", first.failure);
    assert_eq!(first.created, desired.len());

    // Every object is there; workloads carry the image and the version.
    for obj in &desired {
        let kind = str_at(obj, "/kind");
        let live = applied(store, obj)
            .unwrap_or_else(|| panic!("{kind}/{} not applied", str_at(obj, "/metadata/name")));
        if kind == "Deployment" || kind == "DaemonSet" {
            assert_eq!(
                str_at(&live, "/spec/template/spec/containers/0/image"),
                IMAGE
            );
            assert_eq!(
                live["metadata"]["annotations"][VERSION_ANNOTATION],
                "4.99.0"
            );
            assert_eq!(
                live["spec"]["template"]["metadata"]["annotations"][VERSION_ANNOTATION],
                "4.99.0"
            );
        }
    }
    for (plural, ns, name) in [
        (
            "customresourcedefinitions",
            "",
            "machineconfigpools.machineconfiguration.openshift.io",
        ),
        (
            "customresourcedefinitions",
            "",
            "clusteroperators.config.openshift.io",
        ),
        ("namespaces", "", NAMESPACE),
        ("serviceaccounts", NAMESPACE, "machine-config-operator"),
        ("clusterrolebindings", "", "machine-config-daemon"),
        ("deployments", NAMESPACE, "machine-config-controller"),
        ("daemonsets", NAMESPACE, "machine-config-server"),
        ("secrets", NAMESPACE, "node-bootstrapper-token"),
        ("daemonsets", NAMESPACE, "machine-config-daemon"),
        ("machineconfigpools", "", "worker"),
    ] {
        assert!(store.get(plural, ns, name).is_some(), "{plural}/{name}");
    }
    // The operator does not deploy itself.
    assert!(store
        .get("deployments", NAMESPACE, "machine-config-operator")
        .is_none());

    // The ControllerConfig folds in the Infrastructure.
    let cc = store
        .get("controllerconfigs", "", "machine-config-controller")
        .unwrap_or_else(|| panic!("no ControllerConfig"));
    assert_eq!(cc["spec"]["platform"], "aws");
    assert_eq!(
        cc["spec"]["infra"]["status"]["infrastructureName"],
        "test-abc"
    );
    assert_eq!(
        cc["spec"]["infra"]["status"]["platformStatus"]["aws"]["region"],
        "eu-west-1"
    );
    // No OS images: the release names none, and the manifest holds no placeholder.
    assert!(cc["spec"].get("baseOSContainerImage").is_none(), "{cc}");
    assert!(
        cc["spec"].get("baseOSExtensionsContainerImage").is_none(),
        "{cc}"
    );
    assert_eq!(cc["metadata"]["annotations"][VERSION_ANNOTATION], "4.99.0");

    // Nothing is rolled out yet.
    let co = cluster_operator(store);
    let p = condition(&co, "Progressing");
    assert_eq!(p["status"], "True");
    assert!(
        str_at(p, "/message").starts_with("Working towards 4.99.0"),
        "{p}"
    );
    assert_eq!(condition(&co, "Available")["status"], "False");
    assert_eq!(condition(&co, "Degraded")["status"], "False");
    assert!(co["status"].get("versions").is_none());
    let related = co["status"]["relatedObjects"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(related
        .iter()
        .any(|r| r["resource"] == "namespaces" && r["name"] == NAMESPACE));

    // Still rolling out: the status stays Progressing.
    let again = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!again.wrote(), "{again:?}");
    assert_eq!(
        condition(&cluster_operator(store), "Progressing")["status"],
        "True"
    );

    roll_out(store);
    let done = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(done.status_written);
    assert_eq!((done.created, done.patched), (0, 0));
    let co = cluster_operator(store);
    let a = condition(&co, "Available");
    assert_eq!(a["status"], "True");
    assert_eq!(a["message"], "Cluster has deployed [{operator 4.99.0}]");
    let p = condition(&co, "Progressing");
    assert_eq!(p["status"], "False");
    assert_eq!(p["message"], "Cluster version is 4.99.0");
    assert_eq!(condition(&co, "Upgradeable")["status"], "True");
    assert_eq!(
        co["status"]["versions"],
        json!([{"name": "operator", "version": "4.99.0"}])
    );

    // An up-to-date cluster: a pass writes nothing.
    let rv = store.resource_version();
    let before = writes(store);
    let quiet = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!quiet.wrote(), "{quiet:?}");
    assert_eq!(store.resource_version(), rv);
    assert_eq!(writes(store), before);
}

/// The operator installing through the faults a real API server has: creates the server
/// carried out but whose answers were cut off (retried, they find the name taken) and a
/// restart (connections cut and refused, watches ended) in the middle of it. It carries on
/// with backoff to every manifest applied and, once the workloads are rolled out, Available.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn installs_through_a_restart_and_creates_left_unanswered() {
    use crate::support::faults::{Matcher, Refusal, RESTART};
    let server = ApiServer::start().await.unwrap_or_else(|e| panic!("{e}"));
    let store = server.store.clone();
    add_infrastructure(&store);
    let agent = "machine-config-operator/faults";
    for plural in [
        "customresourcedefinitions",
        "deployments",
        "daemonsets",
        "machineconfigpools",
    ] {
        store.faults.refuse(
            Matcher {
                verb: Some("POST"),
                plural: Some(plural),
                agent: Some(agent.to_string()),
            },
            Refusal::ResetAfterDoing,
            1,
        );
    }
    let client = server.client_as(agent);
    let op = tokio::spawn(async move {
        if let Err(e) = mco_k8s::operator::run(client, options("4.99.0", IMAGE)).await {
            panic!("operator stopped: {e}");
        }
    });
    support::eventually_within("the operator's first writes", support::PATIENCE, || {
        (writes(&store) > 3).then_some(())
    })
    .await;
    store.restart(RESTART).await;
    let back = std::time::Instant::now();

    let desired = Operator::new(server.client(), options("4.99.0", IMAGE))
        .unwrap_or_else(|e| panic!("{e}"))
        .desired()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let missing = || -> Vec<String> {
        desired
            .iter()
            .filter(|obj| applied(&store, obj).is_none())
            .map(|obj| format!("{}/{}", str_at(obj, "/kind"), str_at(obj, "/metadata/name")))
            .collect()
    };
    support::eventually_within("every manifest applied", support::PATIENCE, || {
        missing().is_empty().then_some(())
    })
    .await;
    let applied = back.elapsed();
    roll_out(&store);
    support::eventually_within("the operator Available", support::PATIENCE, || {
        let co = store.get("clusteroperators", "", CLUSTER_OPERATOR_NAME)?;
        (condition(&co, "Available")["status"] == "True").then_some(())
    })
    .await;
    assert_eq!(store.faults.refused(), 4, "every fault served");
    // One create per object of a faulted kind: after a create whose answer was cut off, the
    // operator finds the object there (the server did create it) and does not send it again.
    let by_agent = store.request_counts_by_agent();
    for plural in ["customresourcedefinitions", "deployments", "daemonsets"] {
        let objects = desired
            .iter()
            .filter(|o| kind_info(str_at(o, "/kind")).is_some_and(|i| i.resource.plural == plural))
            .count();
        let posts = by_agent
            .get(&(agent.to_string(), format!("POST {plural}")))
            .copied()
            .unwrap_or(0);
        assert_eq!(posts, objects as u64, "POST {plural}");
    }
    eprintln!(
        "operator through a restart and 4 unanswered creates: every manifest applied {:.1?} after the server came back, {} writes in all",
        applied,
        writes(&store)
    );
    op.abort();
}

#[tokio::test]
async fn a_new_version_rolls_the_workloads() {
    let (server, _) = deployed("4.99.0").await;
    let store = &server.store;
    let old_gen = store
        .get("deployments", NAMESPACE, "machine-config-controller")
        .and_then(|d| d["metadata"]["generation"].as_i64());
    let op = Operator::new(server.client(), options("5.0.0", "quay.io/test/mco-rs:2"))
        .unwrap_or_else(|e| panic!("{e}"));
    let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(r.patched >= 3, "{r:?}");
    for (plural, name) in [
        ("deployments", "machine-config-controller"),
        ("daemonsets", "machine-config-server"),
        ("daemonsets", "machine-config-daemon"),
    ] {
        let d = store
            .get(plural, NAMESPACE, name)
            .unwrap_or_else(|| panic!("{name}"));
        assert_eq!(
            str_at(&d, "/spec/template/spec/containers/0/image"),
            "quay.io/test/mco-rs:2"
        );
        assert_eq!(
            d["spec"]["template"]["metadata"]["annotations"][VERSION_ANNOTATION],
            "5.0.0"
        );
    }
    let new_gen = store
        .get("deployments", NAMESPACE, "machine-config-controller")
        .and_then(|d| d["metadata"]["generation"].as_i64());
    assert!(new_gen > old_gen);
    let co = cluster_operator(store);
    let p = condition(&co, "Progressing");
    assert_eq!(p["status"], "True");
    assert!(
        str_at(p, "/message").starts_with("Working towards 5.0.0"),
        "{p}"
    );
    assert_eq!(co["status"]["versions"][0]["version"], "4.99.0");
    assert_eq!(condition(&co, "Available")["status"], "True");

    roll_out(store);
    op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    let co = cluster_operator(store);
    assert_eq!(co["status"]["versions"][0]["version"], "5.0.0");
    assert_eq!(
        condition(&co, "Progressing")["message"],
        "Cluster version is 5.0.0"
    );
}

#[tokio::test]
async fn a_degraded_pool_degrades_the_operator() {
    let (server, op) = deployed("4.99.0").await;
    let store = &server.store;
    let since = str_at(
        condition(&cluster_operator(store), "Available"),
        "/lastTransitionTime",
    )
    .to_string();
    set_status(
        store,
        "machineconfigpools",
        "",
        "worker",
        json!({"machineCount": 2, "readyMachineCount": 1, "updatedMachineCount": 1,
               "degradedMachineCount": 1, "unavailableMachineCount": 1,
               "conditions": [{"type": "Degraded", "status": "True", "reason": "NodeDegraded",
                               "message": "Node worker-1 is reporting: disk full"}]}),
    );
    op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    let co = cluster_operator(store);
    let d = condition(&co, "Degraded");
    assert_eq!(d["status"], "True");
    assert_eq!(d["reason"], "RequiredPoolsFailed");
    let msg = str_at(d, "/message");
    assert!(
        msg.contains("MachineConfigPool worker is degraded"),
        "{msg}"
    );
    assert!(msg.contains("disk full"), "{msg}");
    assert_eq!(condition(&co, "Upgradeable")["status"], "False");
    let a = condition(&co, "Available");
    assert_eq!(a["status"], "True");
    assert_eq!(str_at(a, "/lastTransitionTime"), since);
}

#[tokio::test]
async fn foreign_fields_are_left_alone_and_owned_ones_restored() {
    let (server, op) = deployed("4.99.0").await;
    let store = &server.store;
    store
        .write(
            def("daemonsets"),
            NAMESPACE,
            "machine-config-server",
            false,
            |old| {
                let mut n = old.clone();
                n["metadata"]["labels"]["team"] = json!("infra");
                n["spec"]["template"]["spec"]["containers"][0]["env"] =
                    json!([{"name": "X", "value": "1"}]);
                Ok(n)
            },
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
    let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.patched, 0, "{r:?}");
    store
        .write(
            def("daemonsets"),
            NAMESPACE,
            "machine-config-server",
            false,
            |old| {
                let mut n = old.clone();
                n["spec"]["template"]["spec"]["containers"][0]["image"] = json!("someone/else:1");
                Ok(n)
            },
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
    let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.patched, 1, "{r:?}");
    let d = store
        .get("daemonsets", NAMESPACE, "machine-config-server")
        .unwrap_or_else(|| panic!("gone"));
    assert_eq!(str_at(&d, "/spec/template/spec/containers/0/image"), IMAGE);
    assert_eq!(d["metadata"]["labels"]["team"], "infra");
    // Lists are replaced whole when restored, as upstream's apply does: the env added by
    // hand inside the container went with the edited image.
    assert!(
        d["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array()
            .is_none_or(|e| e.iter().all(|v| v["name"] != "X")),
        "{d}"
    );
}

#[tokio::test]
async fn a_webhook_pointed_at_a_url_is_restored() {
    let (server, op) = deployed("4.99.0").await;
    let store = &server.store;
    // An administrator (or a test harness) points the webhook at a URL: the API server
    // takes it only with the service gone.
    store
        .write(
            def("validatingwebhookconfigurations"),
            "",
            "machine-config-validation",
            false,
            |old| {
                let mut n = old.clone();
                for hook in n["webhooks"].as_array_mut().into_iter().flatten() {
                    hook["clientConfig"] =
                        json!({"url": "https://127.0.0.1:9443/validate", "caBundle": "Q0E="});
                }
                Ok(n)
            },
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
    let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(r.failure.is_none(), "not degraded: {:?}", r.failure);
    assert_eq!(r.patched, 1, "{r:?}");
    let w = store
        .get(
            "validatingwebhookconfigurations",
            "",
            "machine-config-validation",
        )
        .unwrap_or_else(|| panic!("gone"));
    let cc = &w["webhooks"][0]["clientConfig"];
    assert!(cc.get("url").is_none(), "{w}");
    assert_eq!(cc["service"]["name"], "machine-config-controller", "{w}");
    assert_eq!(cc["caBundle"], "Q0E=", "the injected CA is kept: {w}");
    let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.patched, 0, "restored once: {r:?}");
}

/// `kubectl apply -f manifests/` on an empty cluster: every document created as written.
fn install(store: &Store) {
    let objs = parse_manifests(&embedded::manifests()).unwrap_or_else(|e| panic!("{e}"));
    for obj in objs {
        let kind = str_at(&obj, "/kind").to_string();
        let info = kind_info(&kind).unwrap_or_else(|| panic!("{kind}"));
        let ns = if info.namespaced {
            str_at(&obj, "/metadata/namespace").to_string()
        } else {
            String::new()
        };
        store
            .create(def(&info.resource.plural), &ns, obj)
            .unwrap_or_else(|e| panic!("{kind}: {e:?}"));
    }
}

/// Writes an object's main resource through `f`.
fn edit(store: &Store, plural: &str, ns: &str, name: &str, f: impl FnOnce(&mut Value)) {
    store
        .write(def(plural), ns, name, false, |old| {
            let mut n = old.clone();
            f(&mut n);
            Ok(n)
        })
        .unwrap_or_else(|e| panic!("{plural}/{name}: {e:?}"));
}

fn rendered_names(store: &Store) -> Vec<String> {
    let mut names: Vec<String> = store
        .list("machineconfigs")
        .iter()
        .map(|m| str_at(m, "/metadata/name").to_string())
        .filter(|n| n.starts_with("rendered-"))
        .collect();
    names.sort();
    names
}

fn desired_configs(store: &Store) -> BTreeMap<String, String> {
    store
        .list("nodes")
        .iter()
        .map(|n| {
            (
                str_at(n, "/metadata/name").to_string(),
                n["metadata"]["annotations"][DESIRED_CONFIG]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect()
}

const ADMIN_OS: &str = "registry.example.net/os/coreos@sha256:6d1b3b0f5e1c4a2e8e4b9f0a7c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d";
const ADMIN_EXT: &str = "registry.example.net/os/extensions@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9";

/// Issue 14: the manifests' empty `baseOSContainerImage` merge-patched over the
/// administrator's, every pool re-rendered and every node rebooted. Install, set the images
/// and change the pools, render, start the operator: the administrator's fields stay and
/// nothing re-renders.
#[tokio::test]
async fn starting_on_an_installed_cluster_keeps_the_administrators_fields() {
    let server = ApiServer::start().await.unwrap_or_else(|e| panic!("{e}"));
    let store = &server.store;

    // Install, and the cluster's MachineConfigs (one of them for infra nodes only).
    install(store);
    let mut files: Vec<_> = std::fs::read_dir(examples())
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().map(|n| n.to_string_lossy().into_owned());
            n.is_some_and(|n| {
                ["-worker-", "-master-", "-infra-"]
                    .iter()
                    .any(|r| n.contains(r))
            })
        })
        .collect();
    files.sort();
    for f in files {
        for mc in yaml_docs(&f) {
            store
                .create(def("machineconfigs"), "", mc)
                .unwrap_or_else(|e| panic!("{}: {e:?}", f.display()));
        }
    }

    // The administrator sets the OS images, lets the worker pool take infra MachineConfigs
    // and two nodes at a time, and pauses the masters.
    edit(
        store,
        "controllerconfigs",
        "",
        "machine-config-controller",
        |cc| {
            cc["spec"]["baseOSContainerImage"] = json!(ADMIN_OS);
            cc["spec"]["baseOSExtensionsContainerImage"] = json!(ADMIN_EXT);
        },
    );
    let worker_selector = json!({"matchExpressions": [{"key": "machineconfiguration.openshift.io/role",
        "operator": "In", "values": ["worker", "infra"]}]});
    edit(store, "machineconfigpools", "", "worker", |p| {
        p["spec"]["machineConfigSelector"] = worker_selector.clone();
        p["spec"]["maxUnavailable"] = json!(2);
    });
    edit(store, "machineconfigpools", "", "master", |p| {
        p["spec"]["paused"] = json!(true);
    });

    // The controller renders; the nodes (3 masters, 6 workers) are on the rendered configs.
    let ctrl_opts = mco_k8s::controller::Options {
        gc_keep: None,
        ..Default::default()
    };
    let mut ctrl = Cluster::new(server.client(), ctrl_opts);
    ctrl.sync_all().await.unwrap_or_else(|e| panic!("{e}"));
    let target = |pool: &str| {
        let p = store
            .get("machineconfigpools", "", pool)
            .unwrap_or_else(|| panic!("no pool {pool}"));
        str_at(&p, "/spec/configuration/name").to_string()
    };
    let (worker_config, master_config) = (target("worker"), target("master"));
    assert!(
        worker_config.starts_with("rendered-worker-"),
        "{worker_config}"
    );
    assert!(
        master_config.starts_with("rendered-master-"),
        "{master_config}"
    );
    let rendered_worker = store
        .get("machineconfigs", "", &worker_config)
        .unwrap_or_else(|| panic!("no {worker_config}"));
    assert_eq!(rendered_worker["spec"]["osImageURL"], ADMIN_OS);
    assert_eq!(
        rendered_worker["spec"]["baseOSExtensionsContainerImage"],
        ADMIN_EXT
    );
    // The administrator's selector took the infra MachineConfig in.
    let sources: Vec<String> = store
        .get("machineconfigpools", "", "worker")
        .and_then(|p| p["spec"]["configuration"]["source"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .map(|s| str_at(s, "/name").to_string())
        .collect();
    assert!(
        sources.iter().any(|s| s == "70-infra-node-inventory"),
        "{sources:?}"
    );
    for i in 0..9 {
        let (name, role, config) = if i < 3 {
            (
                format!("master-{i}"),
                "node-role.kubernetes.io/master",
                &master_config,
            )
        } else {
            (
                format!("worker-{}", i - 3),
                "node-role.kubernetes.io/worker",
                &worker_config,
            )
        };
        let node = json!({"metadata": {"name": name, "labels": {role: ""},
            "annotations": {CURRENT_CONFIG: config, DESIRED_CONFIG: config, STATE: "Done"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        store
            .create(def("nodes"), "", node)
            .unwrap_or_else(|e| panic!("{e:?}"));
    }
    ctrl.sync_all().await.unwrap_or_else(|e| panic!("{e}"));

    let spec_of = |plural: &str, name: &str| {
        store
            .get(plural, "", name)
            .map(|o| o["spec"].clone())
            .unwrap_or_else(|| panic!("no {plural}/{name}"))
    };
    let pools_before = (
        spec_of("machineconfigpools", "worker"),
        spec_of("machineconfigpools", "master"),
    );
    let rendered_before = rendered_names(store);
    let nodes_before = desired_configs(store);
    assert_eq!(nodes_before.len(), 9);

    // The operator starts: several passes, the controller syncing after each.
    let op =
        Operator::new(server.client(), options("4.99.0", IMAGE)).unwrap_or_else(|e| panic!("{e}"));
    for pass in 0..4 {
        let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
        assert!(r.failure.is_none(), "pass {pass}: {:?}", r.failure);
        roll_out(store);
        ctrl.sync_all().await.unwrap_or_else(|e| panic!("{e}"));
    }

    // It did its own work: the workloads at its image, the ControllerConfig at its version.
    let d = store
        .get("deployments", NAMESPACE, "machine-config-controller")
        .unwrap_or_else(|| panic!("no controller Deployment"));
    assert_eq!(str_at(&d, "/spec/template/spec/containers/0/image"), IMAGE);
    let cc = store
        .get("controllerconfigs", "", "machine-config-controller")
        .unwrap_or_else(|| panic!("no ControllerConfig"));
    assert_eq!(cc["metadata"]["annotations"][VERSION_ANNOTATION], "4.99.0");
    // The administrator's fields are the administrator's.
    assert_eq!(cc["spec"]["baseOSContainerImage"], ADMIN_OS);
    assert_eq!(cc["spec"]["baseOSExtensionsContainerImage"], ADMIN_EXT);
    let worker = spec_of("machineconfigpools", "worker");
    assert_eq!(worker["machineConfigSelector"], worker_selector);
    assert_eq!(worker["maxUnavailable"], 2);
    assert_eq!(spec_of("machineconfigpools", "master")["paused"], true);
    assert_eq!(
        (
            spec_of("machineconfigpools", "worker"),
            spec_of("machineconfigpools", "master")
        ),
        pools_before
    );
    // Nothing re-rendered, no node was sent anywhere.
    assert_eq!(target("worker"), worker_config);
    assert_eq!(target("master"), master_config);
    assert_eq!(rendered_names(store), rendered_before);
    assert_eq!(desired_configs(store), nodes_before);
}

fn osimageurl(release: &str, os: &str, ext: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "machine-config-osimageurl", "namespace": NAMESPACE},
           "data": {"releaseVersion": release, "baseOSContainerImage": os,
                    "baseOSExtensionsContainerImage": ext, "osImageURL": ""}})
}

/// The OS images the operator writes are the release's (its `machine-config-osimageurl`
/// ConfigMap), and only its own release's.
#[tokio::test]
async fn the_release_configmap_names_the_os_images() {
    let (server, op) = deployed("4.99.0").await;
    let store = &server.store;
    let cc_images = || {
        let cc = store
            .get("controllerconfigs", "", "machine-config-controller")
            .unwrap_or_else(|| panic!("no ControllerConfig"));
        (
            cc["spec"]["baseOSContainerImage"].clone(),
            cc["spec"]["baseOSExtensionsContainerImage"].clone(),
        )
    };
    assert_eq!(cc_images(), (Value::Null, Value::Null));
    store
        .create(
            def("configmaps"),
            NAMESPACE,
            osimageurl("4.99.0", "release/os:1", ""),
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
    let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(r.failure.is_none(), "{:?}", r.failure);
    assert_eq!(r.patched, 1, "{r:?}");
    // An image the release does not name stays unset (or the administrator's).
    assert_eq!(cc_images(), (json!("release/os:1"), Value::Null));
    edit(
        store,
        "controllerconfigs",
        "",
        "machine-config-controller",
        |cc| {
            cc["spec"]["baseOSExtensionsContainerImage"] = json!("admin/ext:1");
        },
    );
    let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.patched, 0, "{r:?}");
    assert_eq!(cc_images(), (json!("release/os:1"), json!("admin/ext:1")));

    // Another release's images are refused: the pass fails and writes no image.
    edit(
        store,
        "configmaps",
        NAMESPACE,
        "machine-config-osimageurl",
        |cm| {
            *cm = osimageurl("4.98.0", "old/os:0", "old/ext:0");
        },
    );
    let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    let f = r
        .failure
        .unwrap_or_else(|| panic!("another release's images were taken"));
    assert_eq!(f.task, "RenderConfig");
    assert!(
        f.message.contains("machine-config-osimageurl"),
        "{}",
        f.message
    );
    assert!(f.message.contains("4.98.0"), "{}", f.message);
    assert_eq!(cc_images(), (json!("release/os:1"), json!("admin/ext:1")));
    assert_eq!(
        condition(&cluster_operator(store), "Degraded")["status"],
        "True"
    );
}

#[test]
fn embedded_manifests_are_the_folder() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../manifests");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    files.sort();
    let names: Vec<&str> = embedded::MANIFESTS.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names, files,
        "add new manifests to mco-k8s/src/operator/embedded.rs"
    );
    for (name, text) in embedded::MANIFESTS {
        let have = std::fs::read_to_string(format!("{dir}/{name}")).unwrap_or_default();
        assert_eq!(&have, text, "{name}");
    }
}

/// Kills the child when the test ends, pass or fail.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_deploys_through_a_kubeconfig() {
    let server = ApiServer::start().await.unwrap_or_else(|e| panic!("{e}"));
    let dir = std::env::temp_dir().join(format!("mco-operator-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = dir.join("kubeconfig");
    server
        .write_kubeconfig(&kubeconfig)
        .unwrap_or_else(|e| panic!("{e}"));
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_machine-config-operator"))
        .args([
            "--image",
            IMAGE,
            "--release-version",
            "7.0.0",
            "--resync-seconds",
            "1",
        ])
        .env("KUBECONFIG", &kubeconfig)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .stdout(std::process::Stdio::null())
        .stderr(
            std::fs::File::create(dir.join("stderr"))
                .map_or_else(|_| std::process::Stdio::null(), Into::into),
        )
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let _child = Child(child);
    let store = server.store.clone();
    let reached = tokio::time::timeout(support::PATIENCE, async {
        loop {
            let deployed = store
                .get("daemonsets", NAMESPACE, "machine-config-daemon")
                .is_some_and(|d| str_at(&d, "/spec/template/spec/containers/0/image") == IMAGE);
            let reported = store
                .get("clusteroperators", "", CLUSTER_OPERATOR_NAME)
                .is_some_and(|co| co.pointer("/status/conditions").is_some());
            if deployed && reported {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        reached.is_ok(),
        "the operator binary did not deploy and report within 60s"
    );
    // Rolled out, the running operator notices through its watches and reports Available.
    roll_out(&store);
    let available = tokio::time::timeout(support::PATIENCE, async {
        loop {
            if let Some(co) = store.get("clusteroperators", "", CLUSTER_OPERATOR_NAME) {
                if co["status"]["versions"][0]["version"] == "7.0.0" {
                    return co;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the operator binary did not report 7.0.0 within 60s"));
    assert_eq!(condition(&available, "Available")["status"], "True");
    // Everything the binary asked for, its ClusterRole in manifests/ grants.
    let missing = rbac::ungranted_to(&store.requests_scoped(None), "machine-config-operator");
    assert!(
        missing.is_empty(),
        "not granted by manifests/02-rbac.yaml: {missing:?}"
    );
}

/// Every Node gets a MachineConfigNode from the operator, agent or not, as upstream's
/// operator gives one; a deleted Node's goes.
#[tokio::test]
async fn every_node_has_a_machine_config_node_and_a_deleted_nodes_goes() {
    let (server, op) = deployed("4.99.0").await;
    let store = &server.store;
    for (name, role, annos) in [
        (
            "master-0",
            "master",
            json!({CURRENT_CONFIG: "rendered-master-1", DESIRED_CONFIG: "rendered-master-1", STATE: "Done"}),
        ),
        ("worker-0", "worker", json!({})),
    ] {
        let node = json!({"metadata": {"name": name,
            "labels": {format!("node-role.kubernetes.io/{role}"): ""}, "annotations": annos}});
        store
            .create(def("nodes"), "", node)
            .unwrap_or_else(|e| panic!("{e:?}"));
    }
    let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(r.failure.is_none(), "{:?}", r.failure);
    assert_eq!(r.machine_config_nodes, 2, "{r:?}");
    let mcn = |name: &str| store.get("machineconfignodes", "", name);
    let spec = |name: &str| {
        mcn(name)
            .map(|m| m["spec"].clone())
            .unwrap_or_else(|| panic!("{name}: no MachineConfigNode"))
    };
    assert_eq!(
        spec("master-0"),
        json!({"node": {"name": "master-0"}, "pool": {"name": "master"},
               "configVersion": {"desired": "rendered-master-1"}})
    );
    assert_eq!(
        spec("worker-0"),
        json!({"node": {"name": "worker-0"}, "pool": {"name": "worker"},
               "configVersion": {"desired": "not-yet-set"}})
    );
    let owner = mcn("worker-0").map(|m| m["metadata"]["ownerReferences"][0].clone());
    let node_uid = store
        .get("nodes", "", "worker-0")
        .map(|n| n["metadata"]["uid"].clone());
    assert_eq!(
        owner.as_ref().map(|o| o["kind"].clone()),
        Some(json!("Node"))
    );
    assert_eq!(owner.map(|o| o["uid"].clone()), node_uid);
    // Up to date: nothing written.
    let again = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.machine_config_nodes, 0, "{again:?}");

    // The node's first desired config is filled in.
    store
        .write(def("nodes"), "", "worker-0", false, |n| {
            let mut n = n.clone();
            n["metadata"]["annotations"] = json!({DESIRED_CONFIG: "rendered-worker-1"});
            Ok(n)
        })
        .unwrap_or_else(|e| panic!("{e:?}"));
    op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        spec("worker-0")["configVersion"]["desired"],
        "rendered-worker-1"
    );

    // The node goes: so does its MachineConfigNode. (The garbage collector would delete it
    // too, as its owner is gone: off here, so what is checked is the operator's own delete.)
    store.set_garbage_collector(false);
    store
        .delete(def("nodes"), "", "worker-0", None)
        .unwrap_or_else(|e| panic!("{e:?}"));
    let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.machine_config_nodes, 1, "{r:?}");
    assert!(mcn("worker-0").is_none());
    assert!(mcn("master-0").is_some());
    // Everything it asked for, its ClusterRole grants.
    let missing = rbac::ungranted_to(&store.requests_scoped(None), "machine-config-operator");
    assert!(missing.is_empty(), "not granted: {missing:?}");
}

fn secret_of(name: &str, namespace: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
           "metadata": {"name": name, "namespace": namespace}, "data": data})
}

/// While a pool is layered the operator keeps the copies its builds read (the cluster's pull
/// secret, its RHEL entitlement per pool, owned by the pool), follows their sources, and
/// deletes them when no pool is layered; the images ConfigMap is seeded with its image and
/// is the administrator's after.
#[tokio::test]
async fn layered_pools_get_the_secrets_their_builds_read() {
    let (server, op) = deployed("4.99.0").await;
    let store = &server.store;
    let images = store
        .get("configmaps", NAMESPACE, "machine-config-operator-images")
        .expect("the images ConfigMap");
    let named: Value = serde_json::from_str(str_at(&images, "/data/images.json")).expect("json");
    assert_eq!(named["machineConfigOperator"], IMAGE);
    let builder = r#"{"machineConfigOperator": "registry.example.com/builder:1"}"#;
    edit(
        store,
        "configmaps",
        NAMESPACE,
        "machine-config-operator-images",
        |c| c["data"]["images.json"] = json!(builder),
    );

    let pull = |data: &str| {
        secret_of(
            "pull-secret",
            "openshift-config",
            json!({".dockerconfigjson": data}),
        )
    };
    store
        .create(def("secrets"), "openshift-config", pull("djE="))
        .expect("pull secret");
    let mut entitlement = secret_of(
        "etc-pki-entitlement",
        "openshift-config-managed",
        json!({"entitlement.pem": "ZQ==", "entitlement-key.pem": "aw=="}),
    );
    entitlement["type"] = json!("Opaque");
    store
        .create(def("secrets"), "openshift-config-managed", entitlement)
        .expect("entitlement");
    let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(r.failure.is_none(), "{:?}", r.failure);
    assert_eq!(r.layering_secrets, 0, "no pool is layered yet");
    let secret = |name: &str| store.get("secrets", NAMESPACE, name);
    assert!(secret("global-pull-secret-copy").is_none());

    let mosc = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineOSConfig",
        "metadata": {"name": "worker-layered"},
        "spec": {"machineConfigPool": {"name": "worker"},
                 "imageBuilder": {"imageBuilderType": "Job"},
                 "renderedImagePushSecret": {"name": "push-secret"},
                 "renderedImagePushSpec": "registry.example.com/ocl/worker:latest"}
    });
    store
        .create(def("machineosconfigs"), "", mosc.clone())
        .expect("mosc");
    let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(r.failure.is_none(), "{:?}", r.failure);
    assert_eq!(r.layering_secrets, 2, "{r:?}");
    let copy = secret("global-pull-secret-copy").expect("the pull secret copy");
    assert_eq!(copy["type"], "kubernetes.io/dockerconfigjson");
    assert_eq!(copy["data"], json!({".dockerconfigjson": "djE="}));
    let ent = secret("etc-pki-entitlement-worker").expect("the worker's entitlement");
    assert_eq!(ent["type"], "Opaque");
    assert_eq!(
        ent["data"],
        json!({"entitlement.pem": "ZQ==", "entitlement-key.pem": "aw=="})
    );
    let worker_uid = store
        .get("machineconfigpools", "", "worker")
        .map(|p| p["metadata"]["uid"].clone());
    assert_eq!(
        ent["metadata"]["ownerReferences"][0]["kind"],
        "MachineConfigPool"
    );
    assert_eq!(
        Some(ent["metadata"]["ownerReferences"][0]["uid"].clone()),
        worker_uid
    );
    assert!(secret("etc-pki-entitlement-master").is_none());
    // In step: nothing more to write; the images ConfigMap is still the administrator's.
    let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.layering_secrets, 0, "{r:?}");
    assert_eq!(
        store
            .get("configmaps", NAMESPACE, "machine-config-operator-images")
            .map(|c| c["data"]["images.json"].clone()),
        Some(json!(builder))
    );

    // The cluster's pull secret changes: the copy follows.
    edit(store, "secrets", "openshift-config", "pull-secret", |s| {
        s["data"] = json!({".dockerconfigjson": "djI="})
    });
    let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.layering_secrets, 1, "{r:?}");
    assert_eq!(
        secret("global-pull-secret-copy").map(|s| s["data"].clone()),
        Some(json!({".dockerconfigjson": "djI="}))
    );

    // A worker that is not CoreOS: layering cannot build for it, and the pass says so.
    let ubuntu = json!({"metadata": {"name": "worker-ubuntu",
        "labels": {"node-role.kubernetes.io/worker": ""}},
        "status": {"nodeInfo": {"osImage": "Ubuntu 24.04.1 LTS"}}});
    store.create(def("nodes"), "", ubuntu).expect("node");
    let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    let failure = r.failure.expect("a failure");
    assert_eq!(failure.task, "MachineOSBuilder");
    assert_eq!(
        failure.message,
        "on-cluster layering is only supported on CoreOS-based nodes: non-CoreOS OS \"Ubuntu 24.04.1 LTS\" detected on node \"worker-ubuntu\" in MachineConfigPool(s) [\"worker\"]"
    );
    store
        .delete(def("nodes"), "", "worker-ubuntu", None)
        .expect("deleted");

    // No pool layered any more: the copies go.
    store
        .delete(def("machineosconfigs"), "", "worker-layered", None)
        .expect("deleted");
    let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.layering_secrets, 2, "{r:?}");
    assert!(secret("global-pull-secret-copy").is_none());
    assert!(secret("etc-pki-entitlement-worker").is_none());

    // Without any pull secret, a MachineOSConfig that needs one fails the pass, named.
    store
        .delete(def("secrets"), "openshift-config", "pull-secret", None)
        .expect("deleted");
    store
        .create(def("machineosconfigs"), "", mosc)
        .expect("mosc");
    let r = op.sync_once().await.unwrap_or_else(|e| panic!("{e}"));
    let failure = r.failure.expect("a failure");
    assert_eq!(failure.task, "MachineOSBuilder");
    assert!(
        failure
            .message
            .contains("MachineOSConfig \"worker-layered\" names no baseImagePullSecret"),
        "{}",
        failure.message
    );
    let missing = rbac::ungranted_to(&store.requests_scoped(None), "machine-config-operator");
    assert!(missing.is_empty(), "not granted: {missing:?}");
}
