//! Drains end to end: the controller (`mco_k8s::controller::run`, in-process) against the
//! in-process API server, whose pods terminate for their grace period as a kubelet's do.
//!
//! A drain is declared done (lastAppliedDrain = desiredDrain) only once the pods it evicted
//! are gone, also across a controller restart; a drain that a disruption budget blocks is
//! retried on the drain's own clock (the resync here is an hour, and nothing the controller
//! watches changes when the budget lets go) and shows in the pool as NodeDegraded/Degraded,
//! naming the node and the pod, until it completes. A PodDisruptionBudget that allows no
//! disruption holds the drain until it allows one, which the eviction takes.

use crate::support;

use crate::support::apiserver::{resource, ApiServer, Kubelet};
use crate::support::cluster::seed_examples;
use mco_k8s::controller::{self, Options};
use mco_render::api::node::{DESIRED_DRAIN, DRAIN_FAILURE, LAST_APPLIED_DRAIN, STATE, ZONE_LABEL};
use mco_render::controllers::drain::DrainRetry;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::task::JoinHandle;

const LIMIT: Duration = support::PATIENCE;
const AGENT: &str = "machine-config-controller/drain-e2e";

async fn eventually<T>(what: &str, check: impl FnMut() -> Option<T>) -> T {
    support::eventually_within(what, LIMIT, check).await
}

fn options(drain_timeout: Duration) -> Options {
    Options {
        debounce: Duration::from_millis(10),
        // Nothing here may wait for a resync.
        resync: Duration::from_secs(3600),
        gc_keep: None,
        drain_timeout,
        drain_retry: DrainRetry {
            first: Duration::from_millis(20),
            max: Duration::from_millis(200),
        },
        ..Options::default()
    }
}

fn start_controller(server: &ApiServer, opts: Options) -> JoinHandle<()> {
    let client = server.client_as(AGENT);
    tokio::spawn(async move {
        if let Err(e) = controller::run(client, opts).await {
            panic!("controller stopped: {e}");
        }
    })
}

/// The example pools, and worker-0 asking for `drain` with a ReplicaSet's pod and a
/// DaemonSet's pod on it.
fn seed(server: &ApiServer, drain: &str) {
    seed_examples(server);
    server
        .store
        .create(
            resource("nodes").unwrap(),
            "",
            json!({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {
                    "name": "worker-0",
                    "labels": {"node-role.kubernetes.io/worker": "", ZONE_LABEL: "a",
                               "kubernetes.io/os": "linux"},
                    "annotations": {STATE: "Working", DESIRED_DRAIN: drain}
                },
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}
            }),
        )
        .unwrap();
    for (name, owner) in [("web-0", "ReplicaSet"), ("ds-0", "DaemonSet")] {
        server
            .store
            .create(
                resource("pods").unwrap(),
                "apps",
                json!({
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": "apps",
                                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": owner,
                                                      "name": "x", "uid": "u"}]},
                    "spec": {"nodeName": "worker-0",
                             "containers": [{"name": "c", "image": "i"}]},
                    "status": {"phase": "Running"}
                }),
            )
            .unwrap();
    }
}

fn annotation(server: &ApiServer, key: &str) -> Option<String> {
    server.store.get("nodes", "", "worker-0")?["metadata"]["annotations"][key]
        .as_str()
        .map(str::to_string)
}

fn cordoned(server: &ApiServer) -> bool {
    server
        .store
        .get("nodes", "", "worker-0")
        .is_some_and(|n| n["spec"]["unschedulable"] == true)
}

/// How often the controller has listed pods: once per look at a drain.
fn pod_lists(server: &ApiServer) -> u64 {
    let key = (AGENT.to_string(), "LIST pods".to_string());
    server
        .store
        .request_counts_by_agent()
        .get(&key)
        .copied()
        .unwrap_or(0)
}

fn worker_condition(server: &ApiServer, type_: &str) -> Option<Value> {
    let pool = server.store.get("machineconfigpools", "", "worker")?;
    pool["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_is_done_only_when_its_evicted_pods_are_gone() {
    let server = ApiServer::start().await.unwrap();
    server.store.set_kubelet(Kubelet::Held);
    seed(&server, "drain-a");
    let mut ctrl = start_controller(&server, options(Duration::from_secs(600)));

    // The pod is evicted, and terminates: its grace period (30 s) runs.
    eventually("the eviction", || {
        (!server.store.terminating().is_empty()).then_some(())
    })
    .await;
    assert_eq!(
        server.store.terminating(),
        [("apps".to_string(), "web-0".to_string())]
    );
    assert!(cordoned(&server));
    // The controller looks again and again on its own clock, and does not call it done.
    let seen = pod_lists(&server);
    eventually("the drain polled", || {
        assert_eq!(
            annotation(&server, LAST_APPLIED_DRAIN),
            None,
            "done too early"
        );
        (pod_lists(&server) >= seen + 3).then_some(())
    })
    .await;

    // Nor does a restarted controller, which no longer knows what it evicted.
    ctrl.abort();
    let _ = ctrl.await;
    ctrl = start_controller(&server, options(Duration::from_secs(600)));
    let seen = pod_lists(&server);
    eventually("the restarted controller polling", || {
        assert_eq!(
            annotation(&server, LAST_APPLIED_DRAIN),
            None,
            "done too early"
        );
        (pod_lists(&server) >= seen + 3).then_some(())
    })
    .await;
    // It waits for the terminating pod rather than evicting it again.
    let evictions = (AGENT.to_string(), "POST pods/eviction".to_string());
    assert_eq!(server.store.request_counts_by_agent()[&evictions], 1);

    // The pod's containers exit: the drain is done, the DaemonSet's pod left in place.
    server.store.finish_terminating();
    eventually("the drain to complete", || {
        (annotation(&server, LAST_APPLIED_DRAIN).as_deref() == Some("drain-a")).then_some(())
    })
    .await;
    assert!(server.store.get("pods", "apps", "web-0").is_none());
    assert!(server.store.get("pods", "apps", "ds-0").is_some());
    assert_eq!(annotation(&server, DRAIN_FAILURE), None);
    assert!(cordoned(&server));
    ctrl.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_drain_shows_in_the_pool_and_is_retried_on_its_own() {
    let server = ApiServer::start().await.unwrap();
    server.store.set_kubelet(Kubelet::Speedup(1000));
    seed(&server, "drain-b");
    server.store.block_eviction("apps", "web-0", u32::MAX);
    // Blocked past its (zero) timeout from the first attempt.
    let opts = options(Duration::ZERO);
    let metrics = opts.metrics.clone();
    let ctrl = start_controller(&server, opts);

    let report = eventually("the drain failure report", || {
        annotation(&server, DRAIN_FAILURE)
    })
    .await;
    assert_eq!(
        report,
        "failed to drain node worker-0: 1 pod(s) could not be evicted (disruption budget or timeout): apps/web-0"
    );
    // A Warning Event on the node says so too.
    let event = eventually("a FailedToDrain event", || {
        server
            .store
            .list("events")
            .into_iter()
            .find(|e| e["reason"] == "FailedToDrain" && e["regarding"]["name"] == "worker-0")
    })
    .await;
    assert_eq!(event["type"], "Warning");
    assert!(metrics
        .render()
        .contains("mcc_drain_err{node=\"worker-0\"} 1"));
    assert_eq!(event["note"], report.as_str());
    // The pool says so: Degraded, naming the node and the pod, while still Updating.
    let degraded = eventually("the pool degraded", || {
        worker_condition(&server, "Degraded").filter(|c| c["status"] == "True")
    })
    .await;
    let message = degraded["message"].as_str().unwrap_or("");
    assert_eq!(
        message,
        format!("Node worker-0 cannot be drained: {report:?}")
    );
    let nd = worker_condition(&server, "NodeDegraded").unwrap();
    assert_eq!(nd["status"], "True");
    assert_eq!(nd["reason"], "1 nodes cannot be drained");
    assert_eq!(nd["message"], message);
    assert_eq!(
        worker_condition(&server, "Updating").unwrap()["status"],
        "True"
    );
    assert_eq!(annotation(&server, LAST_APPLIED_DRAIN), None);
    assert!(server.store.evictions().is_empty());

    // The budget lets the pod go. Nothing the controller watches changes, and the resync is
    // an hour away: only the drain's own retry can finish it.
    server.store.block_eviction("apps", "web-0", 0);
    eventually("the drain to complete", || {
        (annotation(&server, LAST_APPLIED_DRAIN).as_deref() == Some("drain-b")).then_some(())
    })
    .await;
    assert!(server.store.get("pods", "apps", "web-0").is_none());
    assert_eq!(annotation(&server, DRAIN_FAILURE), None);
    assert!(metrics
        .render()
        .contains("mcc_drain_err{node=\"worker-0\"} 0"));
    assert_eq!(
        server.store.evictions(),
        [("apps".to_string(), "web-0".to_string())]
    );
    // And the pool no longer reports it.
    eventually("the pool no longer degraded", || {
        worker_condition(&server, "Degraded").filter(|c| c["status"] == "False")
    })
    .await;
    assert_eq!(
        worker_condition(&server, "NodeDegraded").unwrap()["status"],
        "False"
    );
    ctrl.abort();
}

/// The budget `web` allowing no disruption, over web-0 alone (labelled and Ready, as a
/// budget's pod is).
fn budget(server: &ApiServer) {
    support::cluster::blocking_budget(&server.store);
    support::edit(&server.store, "pods", "apps", "web-0", false, |p| {
        p["metadata"]["labels"] = json!({"app": "web"});
    });
    support::edit(&server.store, "pods", "apps", "web-0", true, |p| {
        p["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_waits_for_its_disruption_budget_and_takes_one_disruption() {
    let server = ApiServer::start().await.unwrap();
    server.store.set_kubelet(Kubelet::Speedup(1000));
    seed(&server, "drain-b");
    budget(&server);
    let ctrl = start_controller(&server, options(Duration::ZERO));

    // The eviction API refuses while the budget allows no disruption: the drain fails and
    // is retried, the pod stays.
    let report = eventually("the drain failure report", || {
        annotation(&server, DRAIN_FAILURE)
    })
    .await;
    assert!(report.contains("apps/web-0"), "{report}");
    assert!(server.store.evictions().is_empty());
    assert!(server.store.get("pods", "apps", "web-0").is_some());

    // The disruption controller sees a second replica ready: the budget allows one, and the
    // drain's own retry takes it.
    support::edit(
        &server.store,
        "poddisruptionbudgets",
        "apps",
        "web",
        true,
        |b| {
            b["status"]["disruptionsAllowed"] = json!(1);
            b["status"]["currentHealthy"] = json!(2);
        },
    );
    eventually("the drain to complete", || {
        (annotation(&server, LAST_APPLIED_DRAIN).as_deref() == Some("drain-b")).then_some(())
    })
    .await;
    let pdb = server
        .store
        .get("poddisruptionbudgets", "apps", "web")
        .unwrap();
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    assert!(pdb["status"]["disruptedPods"]["web-0"].is_string(), "{pdb}");
    assert_eq!(
        server.store.evictions(),
        [("apps".to_string(), "web-0".to_string())]
    );
    ctrl.abort();
}
