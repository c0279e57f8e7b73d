//! End to end: the machine-config-controller against the in-process API server, with 3
//! masters and 50 workers whose daemons are simulated.
//!
//! The controller runs in-process (`mco_k8s::controller::run`). Simulated agents watch the
//! nodes; when a node's desiredConfig differs from its currentConfig they do what the daemon
//! does: mark the node Working, ask for a drain, "reboot", ask for an uncordon, then report
//! currentConfig = desiredConfig and Done. Evicted pods terminate for their grace period (on
//! a kubelet clock sped up 1000 times) before a drain is done. The API server's store checks, on every node
//! write, how many workers count as unavailable.

use crate::support;

use crate::support::apiserver::{resource, ApiServer, Kubelet};
use crate::support::cluster::{decode, examples, expected_rendered};
use crate::support::yaml_docs;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Node as KubeNode;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client};
use mco_k8s::controller::{self, Options};
use mco_k8s::crd;
use mco_render::api::node::{
    CURRENT_CONFIG, DESIRED_CONFIG, DESIRED_DRAIN, LAST_APPLIED_DRAIN, STATE, ZONE_LABEL,
};
use mco_render::api::Node;
use mco_render::controllers::drain::DrainRetry;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;

const WORKERS: usize = 50;
const CONTROLLER: &str = "machine-config-controller";
const MASTERS: usize = 3;
const MAX_UNAVAILABLE: usize = 3;
const WORKER_ROLE: &str = "node-role.kubernetes.io/worker";
const MASTER_ROLE: &str = "node-role.kubernetes.io/master";

fn dynamic(client: &Client, kind: crd::Kind) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &kind.api_resource())
}

fn to_dynamic(v: Value) -> DynamicObject {
    serde_json::from_value(v).unwrap()
}

/// A worker MachineConfig writing one file.
fn file_mc(name: &str, path: &str, text: &str) -> Value {
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD.encode(text);
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": name, "labels": {"machineconfiguration.openshift.io/role": "worker"}},
        "spec": {"config": {"ignition": {"version": "3.4.0"}, "storage": {"files": [
            {"path": path, "mode": 420, "overwrite": true,
             "contents": {"source": format!("data:;base64,{data}")}}
        ]}}}
    })
}

fn controller_options() -> Options {
    Options {
        debounce: Duration::from_millis(20),
        resync: Duration::from_secs(1),
        gc_keep: Some(0),
        drain_timeout: Duration::from_secs(60),
        drain_retry: DrainRetry {
            first: Duration::from_millis(20),
            max: Duration::from_millis(500),
        },
        ..Options::default()
    }
}

fn start_controller(client: Client) -> JoinHandle<()> {
    tokio::spawn(async move {
        if let Err(e) = controller::run(client, controller_options()).await {
            panic!("controller stopped: {e}");
        }
    })
}

/// What the simulated daemons saw.
#[derive(Default)]
struct AgentStats {
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    updates: AtomicUsize,
    busy: Mutex<BTreeSet<String>>,
}

async fn wait_annotation(api: &Api<KubeNode>, name: &str, key: &str, want: &str) {
    loop {
        if let Ok(n) = api.get(name).await {
            let got = n
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(key))
                .cloned();
            if got.as_deref() == Some(want) {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn annotate(api: &Api<KubeNode>, name: &str, pairs: &[(&str, &str)]) {
    let ann: serde_json::Map<String, Value> =
        pairs.iter().map(|(k, v)| ((*k).into(), json!(v))).collect();
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": ann}})),
    )
    .await
    .unwrap();
}

/// The config `node` wants and is not on yet.
fn wanted(node: KubeNode) -> Option<String> {
    let ann = node.metadata.annotations.unwrap_or_default();
    ann.get(DESIRED_CONFIG)
        .filter(|d| ann.get(CURRENT_CONFIG) != Some(*d))
        .cloned()
}

/// One daemon's updates of its node, while it is in `stats.busy`: each to the config the node
/// wants when the update starts (a watch event may be stale, and the node retargeted while
/// its event was skipped as busy), until it wants none.
async fn update_node(api: Api<KubeNode>, name: String, stats: Arc<AgentStats>) {
    loop {
        let Some(desired) = wanted(api.get(&name).await.unwrap()) else {
            stats.busy.lock().unwrap().remove(&name);
            // A retarget between that read and the removal had its event skipped: look once
            // more, now that events start updates again (unless one already has).
            if wanted(api.get(&name).await.unwrap()).is_some()
                && stats.busy.lock().unwrap().insert(name.clone())
            {
                continue;
            }
            return;
        };
        let now = stats.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        stats.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let drain = format!("drain-{desired}");
        annotate(&api, &name, &[(STATE, "Working"), (DESIRED_DRAIN, &drain)]).await;
        wait_annotation(&api, &name, LAST_APPLIED_DRAIN, &drain).await;
        // "Reboot".
        tokio::time::sleep(Duration::from_millis(15)).await;
        let uncordon = format!("uncordon-{desired}");
        annotate(&api, &name, &[(DESIRED_DRAIN, &uncordon)]).await;
        wait_annotation(&api, &name, LAST_APPLIED_DRAIN, &uncordon).await;
        stats.in_flight.fetch_sub(1, Ordering::SeqCst);
        stats.updates.fetch_add(1, Ordering::SeqCst);
        annotate(&api, &name, &[(CURRENT_CONFIG, &desired), (STATE, "Done")]).await;
    }
}

/// The simulated daemons: one watch over all nodes, one task per node being updated.
fn start_agents(client: Client, stats: Arc<AgentStats>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let api: Api<KubeNode> = Api::all(client);
        let mut events = watcher(api.clone(), watcher::Config::default()).boxed();
        while let Some(ev) = events.next().await {
            let node = match ev {
                Ok(watcher::Event::Apply(n) | watcher::Event::InitApply(n)) => n,
                _ => continue,
            };
            let name = node.metadata.name.clone().unwrap_or_default();
            if wanted(node).is_none() {
                continue;
            }
            if !stats.busy.lock().unwrap().insert(name.clone()) {
                continue;
            }
            tokio::spawn(update_node(api.clone(), name, stats.clone()));
        }
    })
}

/// Polls `check` until it returns `Some`, for at most `limit`; the panic on a timeout shows
/// the pools and nodes as stored.
async fn eventually<T, F, Fut>(server: &ApiServer, what: &str, limit: Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    support::poll_until(what, limit, check, || cluster_state(server)).await
}

/// The pools' targets and counts and the nodes' annotations, one line each.
fn cluster_state(server: &ApiServer) -> String {
    let mut out = Vec::new();
    for p in server.store.list("machineconfigpools") {
        let s = &p["status"];
        out.push(format!(
            "pool {}: target {} status {} machines {} updated {} Updated {}",
            p["metadata"]["name"],
            p["spec"]["configuration"]["name"],
            s["configuration"]["name"],
            s["machineCount"],
            s["updatedMachineCount"],
            condition(&p, "Updated"),
        ));
    }
    for n in server.store.list("nodes") {
        out.push(format!(
            "node {}: {} unschedulable {}",
            n["metadata"]["name"], n["metadata"]["annotations"], n["spec"]["unschedulable"]
        ));
    }
    out.join("\n")
}

fn pool_obj(server: &ApiServer, name: &str) -> Value {
    server.store.get("machineconfigpools", "", name).unwrap()
}

fn condition(pool: &Value, type_: &str) -> String {
    pool["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .and_then(|c| c["status"].as_str())
        .unwrap_or("")
        .to_string()
}

/// The pool's status once every node is done on its config.
fn pool_settled(server: &ApiServer, name: &str, count: usize) -> Option<Value> {
    let p = pool_obj(server, name);
    let target = p["spec"]["configuration"]["name"].as_str()?;
    let s = &p["status"];
    let settled = s["configuration"]["name"] == target
        && s["machineCount"] == count
        && s["updatedMachineCount"] == count
        && condition(&p, "Updated") == "True";
    settled.then_some(p)
}

fn workers_on(server: &ApiServer, config: &str) -> usize {
    server
        .store
        .list("nodes")
        .iter()
        .map(decode::<Node>)
        .filter(|n| n.metadata.labels.contains_key(WORKER_ROLE) && n.is_done_on(config))
        .count()
}

fn rendered_names(server: &ApiServer) -> BTreeSet<String> {
    server
        .store
        .list("machineconfigs")
        .iter()
        .filter_map(|m| m["metadata"]["name"].as_str())
        .filter(|n| n.starts_with("rendered-"))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollouts_respect_max_unavailable_and_survive_a_restart() {
    let limit = support::PATIENCE;
    let server = ApiServer::start().await.unwrap();
    // Evicted pods terminate for their grace period, 1000 times faster (30 s: 30 ms).
    server.store.set_kubelet(Kubelet::Speedup(1000));
    let client = server.client();

    // Every node write: how many workers count as unavailable now, and the most ever.
    let unavailable_max = Arc::new(AtomicUsize::new(0));
    {
        let max = unavailable_max.clone();
        let mut workers: BTreeMap<String, Node> = BTreeMap::new();
        server.store.observe(move |ev| {
            if ev.plural != "nodes" {
                return;
            }
            let n: Node = decode(&ev.object);
            if !n.metadata.labels.contains_key(WORKER_ROLE) {
                return;
            }
            if ev.type_ == "DELETED" {
                workers.remove(n.name());
            } else {
                workers.insert(n.name().to_string(), n);
            }
            let now = workers.values().filter(|n| n.is_unavailable()).count();
            max.fetch_max(now, Ordering::SeqCst);
        });
    }

    // Pools (worker with maxUnavailable), the ControllerConfig, template-like MachineConfigs.
    let pools = dynamic(&client, crd::MACHINE_CONFIG_POOL);
    let mcs = dynamic(&client, crd::MACHINE_CONFIG);
    let ccs = dynamic(&client, crd::CONTROLLER_CONFIG);
    let pp = PostParams::default();
    for mut p in yaml_docs(&examples().join("00-pools.yaml")) {
        match p["metadata"]["name"].as_str() {
            Some("worker") => p["spec"]["maxUnavailable"] = json!(MAX_UNAVAILABLE),
            Some("master") => {}
            _ => continue,
        }
        pools.create(&pp, &to_dynamic(p)).await.unwrap();
    }
    for cc in yaml_docs(&examples().join("01-controllerconfig.yaml")) {
        ccs.create(&pp, &to_dynamic(cc)).await.unwrap();
    }
    let mut files: Vec<_> = std::fs::read_dir(examples())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        if !(name.contains("-worker-") || name.contains("-master-")) {
            continue;
        }
        for mc in yaml_docs(&f) {
            mcs.create(&pp, &to_dynamic(mc)).await.unwrap();
        }
    }

    // Nodes as an installed cluster has them: on the rendered configs of the day.
    let render = controller_options().render;
    let first_worker = expected_rendered(&server, "worker", &render)
        .name()
        .to_string();
    let first_master = expected_rendered(&server, "master", &render)
        .name()
        .to_string();
    let nodes: Api<KubeNode> = Api::all(client.clone());
    let zones = ["zone-a", "zone-b", "zone-c"];
    for i in 0..MASTERS + WORKERS {
        let (name, role, config) = if i < MASTERS {
            (format!("master-{i}"), MASTER_ROLE, &first_master)
        } else {
            (
                format!("worker-{:02}", i - MASTERS),
                WORKER_ROLE,
                &first_worker,
            )
        };
        let n: KubeNode = serde_json::from_value(json!({
            "metadata": {
                "name": name,
                "labels": {role: "", ZONE_LABEL: zones[i % 3], "kubernetes.io/os": "linux"},
                "annotations": {CURRENT_CONFIG: config, DESIRED_CONFIG: config, STATE: "Done"}
            },
            "status": {"conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "DiskPressure", "status": "False"}
            ]}
        }))
        .unwrap();
        nodes.create(&pp, &n).await.unwrap();
    }

    // Workloads on the first workers: evicted by drains, except DaemonSet and mirror pods.
    let pods = resource("pods").unwrap();
    for w in 0..6 {
        let node = format!("worker-{w:02}");
        let mk = |name: String, owner: Option<&str>, mirror: bool| {
            let mut p = json!({"metadata": {"name": name, "namespace": "apps"},
                "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]},
                "status": {"phase": "Running"}});
            if let Some(kind) = owner {
                p["metadata"]["ownerReferences"] =
                    json!([{"apiVersion": "apps/v1", "kind": kind, "name": "x", "uid": "u"}]);
            }
            if mirror {
                p["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "m"});
            }
            p
        };
        for p in [
            mk(format!("web-{w}"), Some("ReplicaSet"), false),
            mk(format!("ds-{w}"), Some("DaemonSet"), false),
            mk(format!("static-{w}"), None, true),
        ] {
            server.store.create(pods, "apps", p).unwrap();
        }
    }
    // A disruption budget refuses one eviction 14 times: kube-rs's own retries of those
    // would take minutes, which the drain must not wait out.
    server.store.block_eviction("apps", "web-1", 14);

    let stats = Arc::new(AgentStats::default());
    let agents = start_agents(server.client(), stats.clone());
    let mut ctrl = start_controller(server.client());

    // The controller adopts the cluster: the pools target the rendered configs the nodes are
    // on, nothing rolls out.
    let w = eventually(&server, "worker pool settled", limit, || async {
        pool_settled(&server, "worker", WORKERS)
    })
    .await;
    assert_eq!(w["spec"]["configuration"]["name"], first_worker.as_str());
    let m = eventually(&server, "master pool settled", limit, || async {
        pool_settled(&server, "master", MASTERS)
    })
    .await;
    assert_eq!(m["spec"]["configuration"]["name"], first_master.as_str());
    assert_eq!(stats.updates.load(Ordering::SeqCst), 0);
    assert_eq!(unavailable_max.load(Ordering::SeqCst), 0);

    // Rollout 1: a new worker MachineConfig.
    mcs.create(
        &pp,
        &to_dynamic(file_mc("99-worker-motd", "/etc/motd", "hello\n")),
    )
    .await
    .unwrap();
    let second_worker = eventually(&server, "a new rendered worker config", limit, || async {
        let p = pool_obj(&server, "worker");
        let t = p["spec"]["configuration"]["name"].as_str()?.to_string();
        (t != first_worker).then_some(t)
    })
    .await;
    assert!(second_worker.starts_with("rendered-worker-"));
    assert!(rendered_names(&server).contains(&second_worker));
    let p = pool_obj(&server, "worker");
    let sources: Vec<&str> = p["spec"]["configuration"]["source"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert!(sources.contains(&"99-worker-motd"), "{sources:?}");
    let w = eventually(&server, "rollout 1 complete", limit, || async {
        pool_settled(&server, "worker", WORKERS)
    })
    .await;
    assert_eq!(workers_on(&server, &second_worker), WORKERS);
    let s = &w["status"];
    assert_eq!(s["configuration"]["name"], second_worker.as_str());
    assert_eq!(s["readyMachineCount"], WORKERS);
    assert_eq!(s["unavailableMachineCount"], 0);
    assert_eq!(s["degradedMachineCount"], 0);
    assert_eq!(condition(&w, "Updating"), "False");
    assert_eq!(condition(&w, "Degraded"), "False");
    assert_eq!(s["observedGeneration"], w["metadata"]["generation"]);
    // Every worker updated once, at most maxUnavailable at a time (and the rollout did use
    // the room it had).
    assert_eq!(stats.updates.load(Ordering::SeqCst), WORKERS);
    assert_eq!(unavailable_max.load(Ordering::SeqCst), MAX_UNAVAILABLE);
    assert!(stats.max_in_flight.load(Ordering::SeqCst) <= MAX_UNAVAILABLE);
    // The pool's Events tell the rollout's steps in upstream's words: three nodes targeted
    // at first (maxUnavailable 3), then one at a time as each finished; every worker at
    // least once. None is on a Node.
    let events = server.store.list("events");
    let targeted: Vec<&Value> = events
        .iter()
        .filter(|e| e["reason"] == "SetDesiredConfig")
        .collect();
    assert!(
        targeted
            .iter()
            .all(|e| e["regarding"]["kind"] == "MachineConfigPool"
                && e["regarding"]["name"] == "worker"),
        "{targeted:#?}"
    );
    let config = format!(" to config {second_worker}");
    let mut nodes_targeted = 0;
    for e in &targeted {
        let note = e["note"].as_str().unwrap_or_default();
        let times = e["series"]["count"].as_u64().unwrap_or(1);
        let nodes = if let Some(n) = note
            .strip_prefix("Targeted node worker-")
            .and_then(|r| r.strip_suffix(config.as_str()))
        {
            assert!(n.parse::<usize>().is_ok_and(|n| n < WORKERS), "{note}");
            1
        } else {
            note.strip_prefix("Set target for ")
                .and_then(|r| r.strip_suffix(&format!(" nodes{config}")))
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("unexpected note {note:?}"))
        };
        nodes_targeted += nodes * times;
    }
    assert!(
        targeted.iter().any(
            |e| e["note"] == format!("Set target for {MAX_UNAVAILABLE} nodes{config}").as_str()
        ),
        "{targeted:#?}"
    );
    assert!(nodes_targeted >= WORKERS as u64, "{targeted:#?}");
    // The masters were left alone.
    let m = pool_settled(&server, "master", MASTERS).unwrap();
    assert_eq!(m["spec"]["configuration"]["name"], first_master.as_str());
    // Drains evicted the ReplicaSet pods, not the DaemonSet or mirror pods, and every node
    // was uncordoned.
    let left: BTreeSet<String> = server
        .store
        .list("pods")
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    assert!(left.iter().all(|p| !p.starts_with("web-")), "{left:?}");
    assert_eq!(left.len(), 12);
    assert_eq!(server.store.evictions().len(), 6);
    for n in server.store.list("nodes") {
        assert_ne!(
            n["spec"]["unschedulable"], true,
            "{}",
            n["metadata"]["name"]
        );
    }
    // The unused rendered config is collected.
    eventually(&server, "old rendered config collected", limit, || async {
        (!rendered_names(&server).contains(&first_worker)).then_some(())
    })
    .await;

    // Rollout 2, with a controller restart in the middle.
    mcs.create(
        &pp,
        &to_dynamic(file_mc("99-worker-issue", "/etc/issue", "welcome\n")),
    )
    .await
    .unwrap();
    let third_worker = eventually(&server, "another rendered worker config", limit, || async {
        let p = pool_obj(&server, "worker");
        let t = p["spec"]["configuration"]["name"].as_str()?.to_string();
        (t != second_worker).then_some(t)
    })
    .await;
    eventually(&server, "rollout 2 under way", limit, || async {
        (workers_on(&server, &third_worker) >= 2 * MAX_UNAVAILABLE).then_some(())
    })
    .await;
    let watches = server.store.open_watches();
    ctrl.abort();
    let _ = ctrl.await;
    // A stopped controller leaves no watch behind (the agents keep theirs): pools,
    // MachineConfigs, ControllerConfigs, Nodes, RolloutPolicies, MachineConfigNodes,
    // MachineOSConfigs, MachineOSBuilds, build Jobs, PinnedImageSets, the MCO namespace's
    // Secrets and ConfigMaps, the MachineConfiguration `cluster` (its API not served here:
    // the watch of its CRD) and the FeatureGates.
    eventually(
        &server,
        "the stopped controller's watches closed",
        limit,
        || async { (server.store.open_watches() == watches - 14).then_some(()) },
    )
    .await;
    let done_at_restart = workers_on(&server, &third_worker);
    assert!(
        done_at_restart < WORKERS,
        "rollout finished before the restart"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    ctrl = start_controller(server.client());
    let w = eventually(&server, "rollout 2 complete", limit, || async {
        pool_settled(&server, "worker", WORKERS)
    })
    .await;
    assert_eq!(w["status"]["configuration"]["name"], third_worker.as_str());
    assert_eq!(w["status"]["readyMachineCount"], WORKERS);
    assert_eq!(w["status"]["unavailableMachineCount"], 0);
    assert_eq!(workers_on(&server, &third_worker), WORKERS);
    assert_eq!(stats.updates.load(Ordering::SeqCst), 2 * WORKERS);
    assert_eq!(unavailable_max.load(Ordering::SeqCst), MAX_UNAVAILABLE);
    assert!(stats.max_in_flight.load(Ordering::SeqCst) <= MAX_UNAVAILABLE);
    eventually(&server, "only the configs in use remain", limit, || async {
        let want: BTreeSet<String> = [first_master.clone(), third_worker.clone()].into();
        (rendered_names(&server) == want).then_some(())
    })
    .await;

    ctrl.abort();
    agents.abort();
}

/// The controller's requests so far, by `METHOD resource`.
fn controller_requests(server: &ApiServer) -> BTreeMap<String, u64> {
    server
        .store
        .request_counts_by_agent()
        .into_iter()
        .filter(|((agent, _), _)| agent == "machine-config-controller")
        .map(|((_, what), n)| (what, n))
        .collect()
}

// The test server's error type is what its store closures return.
#[allow(clippy::result_large_err)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_with_the_generators_running_lists_only_the_drained_pods() {
    const NODES: usize = 4;
    let limit = support::PATIENCE;
    let server = ApiServer::start().await.unwrap();
    support::cluster::seed_examples(&server);
    // The built-in pools, labelled as the operator installs them.
    for pool in ["master", "worker"] {
        let def = resource("machineconfigpools").unwrap();
        server
            .store
            .write(def, "", pool, false, |p| {
                let mut p = p.clone();
                p["metadata"]["labels"] = json!({
                    "machineconfiguration.openshift.io/mco-built-in": "",
                    format!("pools.operator.machineconfiguration.openshift.io/{pool}"): "",
                });
                Ok(p)
            })
            .unwrap();
    }
    // Something for each generator to do: a KubeletConfig for the workers, a mirror set,
    // the Image and FeatureGate `cluster`; the templates come with the options.
    let store = |plural: &str, v: Value| {
        server
            .store
            .create(resource(plural).unwrap(), "", v)
            .unwrap();
    };
    store(
        "kubeletconfigs",
        json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "KubeletConfig",
            "metadata": {"name": "max-pods"},
            "spec": {"machineConfigPoolSelector": {"matchLabels":
                        {"pools.operator.machineconfiguration.openshift.io/worker": ""}},
                     "kubeletConfig": {"maxPods": 300}}}),
    );
    store(
        "imagedigestmirrorsets",
        json!({"apiVersion": "config.openshift.io/v1", "kind": "ImageDigestMirrorSet",
            "metadata": {"name": "release-mirror"},
            "spec": {"imageDigestMirrors": [{"source": "registry.example.net/release",
                                             "mirrors": ["mirror.example.net/release"]}]}}),
    );
    store(
        "images",
        json!({"apiVersion": "config.openshift.io/v1", "kind": "Image",
            "metadata": {"name": "cluster"}, "spec": {}}),
    );
    let nodes = resource("nodes").unwrap();
    for i in 0..NODES + 1 {
        let (name, role) = if i == 0 {
            ("master-0".to_string(), MASTER_ROLE)
        } else {
            (format!("worker-{i}"), WORKER_ROLE)
        };
        server
            .store
            .create(
                nodes,
                "",
                json!({"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {role: "", "kubernetes.io/os": "linux"},
                    "annotations": {CURRENT_CONFIG: "rendered-before", DESIRED_CONFIG: "rendered-before",
                                    STATE: "Done"}},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
            )
            .unwrap();
    }
    let stats = Arc::new(AgentStats::default());
    let agents = start_agents(server.client_as("agents"), stats.clone());
    let ctrl = support::cluster::start_all_controllers(server.client_as(CONTROLLER));

    // Settled: every node on its pool's config, the generated configs written, and the
    // worker pool's target unchanged across a few generator passes (resync 1 s).
    let settled = |server: &ApiServer| {
        pool_settled(server, "worker", NODES).is_some()
            && pool_settled(server, "master", 1).is_some()
    };
    let mut target = String::new();
    let mut quiet = 0;
    eventually(&server, "the cluster to settle", limit, || {
        let now = pool_obj(&server, "worker")["spec"]["configuration"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let steady = settled(&server)
            && now == target
            && server
                .store
                .get("machineconfigs", "", "99-worker-generated-kubelet")
                .is_some();
        quiet = if steady { quiet + 1 } else { 0 };
        target = now;
        async move { (quiet >= 60).then_some(()) }
    })
    .await;

    // A rollout, with the generators woken by the new MachineConfig and by their resync.
    let before = controller_requests(&server);
    let updates = stats.updates.load(Ordering::SeqCst);
    server
        .store
        .create(
            resource("machineconfigs").unwrap(),
            "",
            file_mc("99-worker-motd", "/etc/motd", "hello\n"),
        )
        .unwrap();
    let first = target.clone();
    eventually(&server, "the rollout", limit, || {
        let p = pool_obj(&server, "worker");
        let moved = p["spec"]["configuration"]["name"] != first.as_str();
        let done = moved && settled(&server);
        async move { done.then_some(()) }
    })
    .await;
    // A few more generator passes over the new state.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let after = controller_requests(&server);
    let delta: BTreeMap<&str, u64> = after
        .iter()
        .map(|(k, n)| (k.as_str(), n - before.get(k).copied().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect();
    // The only LIST is the drains' (one per drain and uncordon at most); nothing the
    // generators read is fetched, only watched.
    let lists: Vec<&&str> = delta.keys().filter(|k| k.starts_with("LIST ")).collect();
    assert_eq!(lists, [&"LIST pods"], "{delta:#?}");
    assert!(delta["LIST pods"] <= 2 * NODES as u64, "{delta:#?}");
    let reads: Vec<&&str> = delta
        .keys()
        .filter(|k| k.starts_with("GET ") || k.starts_with("WATCH "))
        .collect();
    assert!(reads.is_empty(), "{delta:#?}");
    // The rollout did happen, and the generators kept their MachineConfigs.
    assert_eq!(stats.updates.load(Ordering::SeqCst) - updates, NODES);
    assert!(delta.contains_key("PATCH nodes"), "{delta:#?}");
    // The generators were running all along, reading their caches: a KubeletConfig change
    // reaches its MachineConfig.
    let generated = |server: &ApiServer| {
        server
            .store
            .get("machineconfigs", "", "99-worker-generated-kubelet")
            .map(|m| m["spec"]["config"].to_string())
    };
    let was = generated(&server).unwrap();
    let def = resource("kubeletconfigs").unwrap();
    server
        .store
        .write(def, "", "max-pods", false, |k| {
            let mut k = k.clone();
            k["spec"]["kubeletConfig"]["maxPods"] = json!(250);
            Ok(k)
        })
        .unwrap();
    eventually(
        &server,
        "the generated kubelet config to follow",
        limit,
        || {
            let changed = generated(&server).is_some_and(|c| c != was);
            async move { changed.then_some(()) }
        },
    )
    .await;
    ctrl.abort();
    agents.abort();
}
