//! What the operator and the controller ask of the API server on a cluster where nothing
//! changes: after start-up, nothing at all (their passes read watch caches), and at start-up
//! one LIST and one WATCH per watched collection, each kind watched once per process however
//! many loops read it (the controller's render loop, its generating controllers and the
//! admission webhook share one registry of watches). A kind whose CRD is not installed is
//! looked at again when the CRD appears, not polled.

// The test server's write closures return its Status error by value.
#![allow(clippy::result_large_err)]

use crate::support;

use crate::support::apiserver::{resource, ApiServer, Store};
use crate::support::cluster::{expected_rendered, generating_options, repo, seed_examples};
use crate::support::{eventually_within, yaml_docs};
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::watcher;
use mco_k8s::operator::kinds::kind_info;
use mco_k8s::operator::{embedded, Options};
use mco_k8s::reflect::Registry;
use mco_render::controllers::operator::{parse_manifests, CLUSTER_OPERATOR_NAME};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// How long a wait for an outcome may last before the test fails.
const LIMIT: Duration = support::PATIENCE;

/// How long the cluster stays untouched while no request may be made: several resyncs of the
/// loops under test (1 s) and a growing absent-API backoff's first steps (10 s, 20 s).
const QUIET: Duration = Duration::from_secs(12);

/// The requests `agent` made so far, by `METHOD resource` (as the server counts them).
fn requests(server: &ApiServer, agent: &str) -> BTreeMap<String, u64> {
    server
        .store
        .request_counts_by_agent()
        .into_iter()
        .filter(|((a, _), _)| a == agent)
        .map(|((_, what), n)| (what, n))
        .collect()
}

/// The requests in `after` that `before` did not count yet.
fn since(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after
        .iter()
        .map(|(k, n)| (k.clone(), n - before.get(k).copied().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// Waits until `agent` has made no request for two seconds (its start-up is over); returns
/// its requests so far.
async fn settled(server: &ApiServer, agent: &str) -> BTreeMap<String, u64> {
    let mut last = requests(server, agent);
    let mut still = 0;
    let run = async {
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let now = requests(server, agent);
            if now == last {
                still += 1;
                if still >= 4 {
                    return now;
                }
            } else {
                still = 0;
                last = now;
            }
        }
    };
    tokio::time::timeout(LIMIT, run).await.unwrap_or_else(|_| {
        panic!(
            "{agent} kept making requests: {:?}",
            requests(server, agent)
        )
    })
}

/// The plural a watch's collection URL ends with.
fn plural_of(url: &str) -> String {
    url.rsplit('/').next().unwrap_or("").to_string()
}

/// Asserts that each of the registry's watches listed once and watched once, and that no
/// other watch ran: per served resource, as many LISTs and WATCHes as the registry has watches
/// of it; for a resource the server does not serve (its requests keyed by path), one LIST per
/// watch, or two when its CRD is there nonetheless (a CRD's appearance makes a watch look
/// again, as it must while the CRD is being established). Returns how many of the watches
/// are of served resources (each an open WATCH).
fn assert_each_watch_listed_once(
    registry: &Registry,
    store: &Store,
    start: &BTreeMap<String, u64>,
) -> usize {
    let watches = registry.watches();
    let absent: BTreeMap<String, u64> = start
        .iter()
        .filter_map(|(k, n)| Some((k.strip_prefix("GET ")?.to_string(), *n)))
        .filter(|(path, _)| path.starts_with("/apis/"))
        .collect();
    let mut per_plural: BTreeMap<String, u64> = BTreeMap::new();
    for (url, _, _) in watches.iter().filter(|(u, _, _)| !absent.contains_key(u)) {
        *per_plural.entry(plural_of(url)).or_default() += 1;
    }
    for (what, n) in start {
        if let Some(plural) = what.strip_prefix("LIST ") {
            let want = per_plural.get(plural).copied().unwrap_or(0);
            assert_eq!(
                *n, want,
                "LISTs of {plural} (watches: {watches:?}): {start:#?}"
            );
            let watched = start.get(&format!("WATCH {plural}")).copied().unwrap_or(0);
            assert_eq!(watched, want, "WATCHes of {plural}: {start:#?}");
        }
    }
    for (path, n) in &absent {
        let count = watches.iter().filter(|(u, _, _)| u == path).count() as u64;
        assert!(count > 0, "GET {path} is no watch's LIST: {watches:?}");
        // /apis/<group>/<version>/<plural>
        let parts: Vec<&str> = path.trim_start_matches("/apis/").split('/').collect();
        let crd = format!(
            "{}.{}",
            parts.last().unwrap_or(&""),
            parts.first().unwrap_or(&"")
        );
        let most = if store.get("customresourcedefinitions", "", &crd).is_some() {
            2 * count
        } else {
            count
        };
        assert!(
            *n >= count && *n <= most,
            "GET {path}: {n} (watches: {count})"
        );
    }
    for plural in per_plural.keys() {
        assert!(
            start.contains_key(&format!("LIST {plural}")),
            "the watch of {plural} never listed: {start:#?}"
        );
    }
    per_plural.values().sum::<u64>() as usize
}

/// The LISTs of `plural` at start-up, served (`LIST plural`) or not (keyed by its path); the
/// core Nodes apart from config.openshift.io's.
fn lists_of(start: &BTreeMap<String, u64>, plural: &str) -> u64 {
    let served = start.get(&format!("LIST {plural}")).copied().unwrap_or(0);
    if plural == "nodes" {
        return served;
    }
    let absent: u64 = start
        .iter()
        .filter(|(k, _)| k.starts_with("GET /apis/") && k.ends_with(&format!("/{plural}")))
        .map(|(_, n)| n)
        .sum();
    served + absent
}

/// Asserts that `plural` was listed once, and watched once when it is served.
fn assert_listed_once(start: &BTreeMap<String, u64>, plural: &str) {
    assert_eq!(lists_of(start, plural), 1, "LISTs of {plural}: {start:#?}");
    if start.contains_key(&format!("LIST {plural}")) {
        let watches = start.get(&format!("WATCH {plural}"));
        assert_eq!(watches, Some(&1), "WATCHes of {plural}: {start:#?}");
    }
}

fn set_status(store: &Store, plural: &str, ns: &str, name: &str, status: Value) {
    let def = resource(plural).unwrap_or_else(|| panic!("{plural} not served"));
    store
        .write(def, ns, name, true, |old| {
            let mut n = old.clone();
            n["status"] = status;
            Ok(n)
        })
        .unwrap_or_else(|e| panic!("status of {plural}/{name}: {e:?}"));
}

/// Marks every Deployment and DaemonSet rolled out at its generation.
fn roll_out(store: &Store) {
    for (plural, status) in [
        (
            "deployments",
            json!({"replicas": 1, "updatedReplicas": 1, "readyReplicas": 1,
                               "availableReplicas": 1}),
        ),
        (
            "daemonsets",
            json!({"desiredNumberScheduled": 2, "currentNumberScheduled": 2,
                              "updatedNumberScheduled": 2, "numberReady": 2,
                              "numberAvailable": 2}),
        ),
    ] {
        for d in store.list(plural) {
            let mut status = status.clone();
            status["observedGeneration"] = d["metadata"]["generation"].clone();
            let ns = d["metadata"]["namespace"].as_str().unwrap_or("");
            let name = d["metadata"]["name"].as_str().unwrap_or("");
            set_status(store, plural, ns, name, status);
        }
    }
}

/// The cluster as `kubectl apply -f manifests/` leaves it, with an Infrastructure, two worker
/// Nodes and the cluster's pull secret.
fn installed_cluster(store: &Store) {
    let objects = parse_manifests(&embedded::manifests()).unwrap_or_else(|e| panic!("{e}"));
    for o in objects {
        let kind = o["kind"].as_str().unwrap_or("").to_string();
        let info = kind_info(&kind).unwrap_or_else(|| panic!("{kind} unknown"));
        let def = resource(&info.resource.plural).unwrap_or_else(|| panic!("{kind} not served"));
        let ns = o["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_string();
        store
            .create(def, &ns, o)
            .unwrap_or_else(|e| panic!("{kind}: {e:?}"));
    }
    let infra = json!({"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
        "metadata": {"name": "cluster"}, "spec": {"platformSpec": {"type": "AWS"}}});
    store
        .create(resource("infrastructures").unwrap(), "", infra)
        .unwrap_or_else(|e| panic!("{e:?}"));
    for i in 0..2 {
        let node = json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("worker-{i}"),
                         "labels": {"node-role.kubernetes.io/worker": ""}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        store
            .create(resource("nodes").unwrap(), "", node)
            .unwrap_or_else(|e| panic!("{e:?}"));
    }
    pull_secret(store);
}

/// `openshift-config/pull-secret`.
fn pull_secret(store: &Store) {
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": "pull-secret", "namespace": "openshift-config"},
        "data": {".dockerconfigjson": "eyJhdXRocyI6e319"}});
    store
        .create(resource("secrets").unwrap(), "openshift-config", secret)
        .unwrap_or_else(|e| panic!("{e:?}"));
}

fn operator_options() -> Options {
    Options {
        manifests: embedded::manifests(),
        image: "quay.io/test/mco-rs:1".into(),
        version: "1.0.0".into(),
        // A pass every second: the quiet period sees a dozen.
        resync: Duration::from_secs(1),
        debounce: Duration::from_millis(20),
    }
}

fn available(store: &Store) -> bool {
    store
        .get("clusteroperators", "", CLUSTER_OPERATOR_NAME)
        .and_then(|co| co.pointer("/status/conditions").cloned())
        .and_then(|cs| cs.as_array().cloned())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Available" && c["status"] == "True")
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_lists_each_kind_once_then_makes_no_request() {
    const AGENT: &str = "machine-config-operator";
    let server = ApiServer::start().await.unwrap();
    installed_cluster(&server.store);
    let registry = Registry::new(server.client_as(AGENT));
    let reg = registry.clone();
    let operator = tokio::spawn(async move {
        let _ = mco_k8s::operator::run_with(&reg, operator_options()).await;
    });
    // Deployed: the workloads roll out, and the operator reports it.
    eventually_within("the workloads applied", LIMIT, || {
        server
            .store
            .get(
                "deployments",
                "openshift-machine-config-operator",
                "machine-config-controller",
            )
            .map(|_| ())
    })
    .await;
    roll_out(&server.store);
    eventually_within("the operator Available", LIMIT, || {
        available(&server.store).then_some(())
    })
    .await;
    let start = settled(&server, AGENT).await;
    eprintln!("{AGENT}: start-up requests {start:#?}");
    let served = assert_each_watch_listed_once(&registry, &server.store, &start);
    assert_eq!(
        server.store.open_watches(),
        served,
        "{:?}",
        registry.watches()
    );
    for kind in [
        "machineconfigpools",
        "nodes",
        "machineconfignodes",
        "machineosconfigs",
        "deployments",
        "daemonsets",
        "customresourcedefinitions",
    ] {
        assert_listed_once(&start, kind);
    }

    tokio::time::sleep(QUIET).await;
    let idle = since(&start, &requests(&server, AGENT));
    assert!(idle.is_empty(), "requests on an idle cluster: {idle:#?}");

    // A change that concerns it is still acted on, from the caches: a deleted Node's
    // MachineConfigNode goes, with no LIST or GET.
    let mcn = |name: &str| server.store.get("machineconfignodes", "", name);
    eventually_within("worker-1's MachineConfigNode", LIMIT, || {
        mcn("worker-1").map(|_| ())
    })
    .await;
    let before = requests(&server, AGENT);
    // (The garbage collector would delete it too, its owner being gone: off here, so what
    // is counted is the operator's own delete.)
    server.store.set_garbage_collector(false);
    server
        .store
        .delete(resource("nodes").unwrap(), "", "worker-1", None)
        .unwrap_or_else(|e| panic!("{e:?}"));
    eventually_within("worker-1's MachineConfigNode deleted", LIMIT, || {
        mcn("worker-1").is_none().then_some(())
    })
    .await;
    let after = settled(&server, AGENT).await;
    let acted = since(&before, &after);
    assert_eq!(
        acted,
        BTreeMap::from([("DELETE machineconfignodes".to_string(), 1)]),
        "the deletion alone"
    );
    operator.abort();
}

/// The optional config CRDs (`manifests/optional/`) installed, with a FeatureGate, an Image
/// and a ClusterVersion for the generating controllers to read.
fn install_optional_apis(store: &Store) {
    let crds = resource("customresourcedefinitions").unwrap();
    for crd in yaml_docs(&repo("manifests/optional/config-crds.yaml")) {
        store
            .create(crds, "", crd)
            .unwrap_or_else(|e| panic!("{e:?}"));
    }
    for (plural, kind, name) in [
        ("featuregates", "FeatureGate", "cluster"),
        ("images", "Image", "cluster"),
        ("clusterversions", "ClusterVersion", "version"),
    ] {
        let o = json!({"apiVersion": "config.openshift.io/v1", "kind": kind,
            "metadata": {"name": name}, "spec": {}});
        store
            .create(resource(plural).unwrap(), "", o)
            .unwrap_or_else(|e| panic!("{plural}: {e:?}"));
    }
}

/// Starts what machine-config-controller runs on one registry: the webhook's caches, then
/// (as when it becomes the leader) the render loop and the generating controllers.
fn start_controller(
    server: &ApiServer,
    agent: &str,
) -> (
    Registry,
    mco_k8s::webhook::cache::WebhookCache,
    tokio::task::JoinHandle<()>,
) {
    let registry = Registry::new(server.client_as(agent));
    let webhook = mco_k8s::webhook::cache::WebhookCache::start_with(&registry, Default::default());
    let reg = registry.clone();
    let leading = tokio::spawn(async move {
        if let Err(e) = mco_k8s::controller::run_leading(&reg, generating_options()).await {
            panic!("controller stopped: {e}");
        }
    });
    (registry, webhook, leading)
}

/// The example cluster, its ControllerConfig naming the cluster's pull secret.
fn example_cluster(server: &ApiServer) {
    seed_examples(server);
    pull_secret(&server.store);
    support::edit(
        &server.store,
        "controllerconfigs",
        "",
        "machine-config-controller",
        false,
        |cc| {
            cc["spec"]["pullSecret"] =
                json!({"namespace": "openshift-config", "name": "pull-secret"})
        },
    );
}

async fn controller_idles(optional_apis: bool) {
    const AGENT: &str = "machine-config-controller";
    let server = ApiServer::start().await.unwrap();
    example_cluster(&server);
    if optional_apis {
        install_optional_apis(&server.store);
    }
    let opts = mco_render::RenderOptions::default();
    let worker = expected_rendered(&server, "worker", &opts).metadata.name;
    let (registry, webhook, leading) = start_controller(&server, AGENT);
    eventually_within("the worker pool rendered", LIMIT, || {
        let p = server.store.get("machineconfigpools", "", "worker")?;
        (p["spec"]["configuration"]["name"] == worker.as_str()).then_some(())
    })
    .await;
    eventually_within("the webhook's caches filled", LIMIT, || {
        webhook.filled().then_some(())
    })
    .await;
    let start = settled(&server, AGENT).await;
    eprintln!("{AGENT}: start-up requests {start:#?}");
    let served = assert_each_watch_listed_once(&registry, &server.store, &start);
    assert_eq!(
        server.store.open_watches(),
        served,
        "{:?}",
        registry.watches()
    );
    for kind in [
        "machineconfigs",
        "machineconfigpools",
        "controllerconfigs",
        "kubeletconfigs",
        "containerruntimeconfigs",
        "rolloutpolicies",
        "images",
        "clusterversions",
        "featuregates",
        "imagedigestmirrorsets",
        "imagetagmirrorsets",
        "imagecontentsourcepolicies",
        "clusterimagepolicies",
        "imagepolicies",
        "apiservers",
        "nodes",
        "machineconfignodes",
        "machineosconfigs",
        "machineosbuilds",
        "pinnedimagesets",
        "jobs",
    ] {
        assert_listed_once(&start, kind);
    }
    // The CRDs are watched (once) only when a kind turned out not to be served.
    let absent = start.keys().any(|k| k.starts_with("GET /apis/"));
    assert_eq!(
        lists_of(&start, "customresourcedefinitions"),
        u64::from(absent),
        "{start:#?}"
    );
    // The pull secret came from its watch, not a GET.
    assert!(!start.contains_key("GET secrets"), "{start:#?}");

    tokio::time::sleep(QUIET).await;
    let idle = since(&start, &requests(&server, AGENT));
    assert!(idle.is_empty(), "requests on an idle cluster: {idle:#?}");
    leading.abort();
    drop(webhook);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_lists_each_kind_once_then_makes_no_request() {
    controller_idles(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_with_the_optional_apis_lists_each_kind_once_then_makes_no_request() {
    controller_idles(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_lead_stops_the_leaders_watches_and_keeps_the_webhooks() {
    const AGENT: &str = "machine-config-controller";
    let server = ApiServer::start().await.unwrap();
    example_cluster(&server);
    let (registry, webhook, leading) = start_controller(&server, AGENT);
    eventually_within("the webhook's caches filled", LIMIT, || {
        webhook.filled().then_some(())
    })
    .await;
    let start = settled(&server, AGENT).await;
    let urls =
        |r: &Registry| -> BTreeSet<String> { r.watches().into_iter().map(|(u, _, _)| u).collect() };
    assert!(urls(&registry).iter().any(|u| u.ends_with("/nodes")));
    leading.abort();
    let _ = leading.await;
    // The last user of a watch gone, the watch stops (its task ends on its own schedule).
    let left = eventually_within("the leader's watches stopped", LIMIT, || {
        let left = urls(&registry);
        (!left.iter().any(|u| u == "/api/v1/nodes")).then_some(left)
    })
    .await;
    for kept in ["machineconfigs", "machineconfigpools", "controllerconfigs"] {
        assert!(left.iter().any(|u| u.ends_with(kept)), "{kept}: {left:?}");
    }
    // Leading again shares the webhook's watches: only the others list again.
    let reg = registry.clone();
    let again = tokio::spawn(async move {
        let _ = mco_k8s::controller::run_leading(&reg, generating_options()).await;
    });
    let after = settled(&server, AGENT).await;
    let relisted = since(&start, &after);
    for shared in ["machineconfigs", "machineconfigpools", "controllerconfigs"] {
        assert!(
            !relisted.contains_key(&format!("LIST {shared}")),
            "{shared} listed again: {relisted:#?}"
        );
    }
    assert_eq!(relisted.get("LIST nodes"), Some(&1), "{relisted:#?}");
    again.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_absent_api_is_looked_at_again_when_its_crd_appears_not_polled() {
    const AGENT: &str = "absent-api";
    let server = ApiServer::start().await.unwrap();
    let registry = Registry::new(server.client_as(AGENT));
    // A kind the server does not serve.
    let ar = ApiResource {
        group: "operator.openshift.io".into(),
        version: "v1".into(),
        api_version: "operator.openshift.io/v1".into(),
        kind: "MachineConfiguration".into(),
        plural: "machineconfigurations".into(),
    };
    let api = Api::<DynamicObject>::all_with(server.client_as(AGENT), &ar);
    let watch = registry.watch(api, watcher::Config::default(), ar, "absent");
    tokio::time::timeout(LIMIT, watch.store().wait_until_ready())
        .await
        .expect("an absent kind's store is ready")
        .unwrap();
    assert!(watch.store().state().is_empty());
    let lists = || -> u64 {
        requests(&server, AGENT)
            .iter()
            .filter(|(k, _)| k.contains("/apis/operator.openshift.io/v1/machineconfigurations"))
            .map(|(_, n)| n)
            .sum()
    };
    // Past the first steps of the absent-API backoff: not looked at again.
    tokio::time::sleep(QUIET).await;
    assert_eq!(lists(), 1, "{:?}", requests(&server, AGENT));
    // Its CRD appears: looked at again at once.
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "machineconfigurations.operator.openshift.io"},
        "spec": {"group": "operator.openshift.io", "scope": "Cluster",
                 "names": {"kind": "MachineConfiguration", "plural": "machineconfigurations",
                           "singular": "machineconfiguration"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                   "x-kubernetes-preserve-unknown-fields": true}}}]}});
    server
        .store
        .create(resource("customresourcedefinitions").unwrap(), "", crd)
        .unwrap_or_else(|e| panic!("{e:?}"));
    eventually_within("a second look", LIMIT, || (lists() >= 2).then_some(())).await;
}
