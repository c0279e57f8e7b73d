//! Faults a real cluster has, played by the in-process API server ([`support::faults`]) against
//! the controller (`mco_k8s::controller::run`, in-process) and the leader election:
//!
//! - the API server restarting in the middle of a rollout: the controller reconnects, the
//!   rollout completes, no node is targeted twice or skipped, no Event storm;
//! - history compacted while watches are cut and MachineConfigs come and go: every watch gets
//!   `410 Expired`, lists again, and the rendered config is the server's MachineConfigs';
//! - writes refused with `429` and `Retry-After`: retried, and the rollout is still right;
//! - a leader cut off from the API server stops working before its Lease could be taken over,
//!   and makes no write after the new leader's first.
//!
//! Each prints its recovery figures (time, requests) for the record; none asserts speed.

use crate::support;

use crate::support::apiserver::{resource, ApiServer, Store};
use crate::support::cluster::expected_rendered;
use crate::support::faults::{Matcher, Refusal, RESTART};
use crate::support::{edit, eventually_within, PATIENCE};
use mco_k8s::controller;
use mco_k8s::leader::{Elector, LeaseSettings};
use mco_render::api::node::{
    CURRENT_CONFIG, DESIRED_CONFIG, DESIRED_DRAIN, LAST_APPLIED_DRAIN, STATE,
};
use mco_render::RenderOptions;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

const AGENT: &str = "machine-config-controller/faults-e2e";
const WORKERS: usize = 6;

fn start_controller(server: &ApiServer) -> JoinHandle<()> {
    let client = server.client_as(AGENT);
    tokio::spawn(async move {
        // A controller whose API server went away keeps trying; its end is a failure.
        if let Err(e) = controller::run(client, support::cluster::rollout_options()).await {
            panic!("controller stopped: {e}");
        }
    })
}

fn annotation(store: &Store, node: &str, key: &str) -> Option<String> {
    store.get("nodes", "", node)?["metadata"]["annotations"][key]
        .as_str()
        .map(str::to_string)
}

fn annotate(store: &Store, node: &str, pairs: &[(&str, &str)]) {
    edit(store, "nodes", "", node, false, |n| {
        for (k, v) in pairs {
            n["metadata"]["annotations"][*k] = json!(v);
        }
    });
}

/// The nodes' side, played on the store directly (the nodes are not what is faulted): a new
/// desiredConfig gets Working and a drain request, the drain, an uncordon, then Done on it.
fn start_nodes(store: Arc<Store>) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            for i in 0..WORKERS {
                let node = worker(i);
                let desired = annotation(&store, &node, DESIRED_CONFIG).unwrap_or_default();
                let current = annotation(&store, &node, CURRENT_CONFIG).unwrap_or_default();
                let drain = annotation(&store, &node, DESIRED_DRAIN).unwrap_or_default();
                let applied = annotation(&store, &node, LAST_APPLIED_DRAIN).unwrap_or_default();
                if desired.is_empty() || desired == current {
                    continue;
                }
                let (want_drain, want_uncordon) =
                    (format!("drain-{desired}"), format!("uncordon-{desired}"));
                if drain != want_drain && drain != want_uncordon {
                    annotate(
                        &store,
                        &node,
                        &[(STATE, "Working"), (DESIRED_DRAIN, &want_drain)],
                    );
                } else if drain == want_drain && applied == want_drain {
                    annotate(&store, &node, &[(DESIRED_DRAIN, &want_uncordon)]);
                } else if drain == want_uncordon && applied == want_uncordon {
                    annotate(
                        &store,
                        &node,
                        &[(CURRENT_CONFIG, &desired), (STATE, "Done")],
                    );
                }
            }
        }
    })
}

fn worker(i: usize) -> String {
    format!("worker-{i}")
}

/// The example cluster, its workers settled on the worker pool's config (maxUnavailable 2).
fn seed(server: &ApiServer) -> String {
    support::cluster::settled_workers(server, WORKERS, &RenderOptions::default())
}

/// Creates the worker MachineConfig `name` writing `path`; the pool's new rendered config.
async fn change(store: &Store, old: &str, name: &str, path: &str) -> String {
    store
        .create(
            resource("machineconfigs").unwrap(),
            "",
            support::cluster::file_mc(name, path),
        )
        .unwrap();
    eventually_within("the new rendered config", PATIENCE, || {
        let c = pool(store)["spec"]["configuration"]["name"]
            .as_str()?
            .to_string();
        (c != old).then_some(c)
    })
    .await
}

fn pool(store: &Store) -> Value {
    store
        .get("machineconfigpools", "", "worker")
        .unwrap_or(Value::Null)
}

/// Every worker on `config` and the pool says so.
fn rolled_out(store: &Store, config: &str) -> bool {
    let p = pool(store);
    p["status"]["configuration"]["name"] == config
        && p["status"]["updatedMachineCount"] == WORKERS
        && (0..WORKERS)
            .all(|i| annotation(store, &worker(i), CURRENT_CONFIG).as_deref() == Some(config))
}

/// Records every desiredConfig each node is given, in order.
fn record_targets(store: &Store) -> Arc<Mutex<BTreeMap<String, Vec<String>>>> {
    let seen: Arc<Mutex<BTreeMap<String, Vec<String>>>> = Arc::default();
    let s = seen.clone();
    store.observe(move |e| {
        if e.plural != "nodes" {
            return;
        }
        let name = e.object["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let desired = e.object["metadata"]["annotations"][DESIRED_CONFIG]
            .as_str()
            .unwrap_or("")
            .to_string();
        let mut map = s.lock().unwrap();
        let list = map.entry(name).or_default();
        if !desired.is_empty() && list.last() != Some(&desired) {
            list.push(desired);
        }
    });
    seen
}

/// The controller's requests so far whose `VERB resource` starts with `what`.
fn controller_count(store: &Store, what: &str) -> u64 {
    store
        .request_counts_by_agent()
        .into_iter()
        .filter(|((a, w), _)| a == AGENT && w.starts_with(what))
        .map(|(_, n)| n)
        .sum()
}

fn controller_requests(store: &Store) -> u64 {
    controller_count(store, "")
}

fn controller_lists(store: &Store) -> u64 {
    controller_count(store, "LIST ")
}

/// Each worker was given the old config (seeded) and then `new`, once: none twice, none
/// skipped.
fn targeted_once(seen: &Mutex<BTreeMap<String, Vec<String>>>, old: &str, new: &str) {
    let seen = seen.lock().unwrap();
    for i in 0..WORKERS {
        let node = worker(i);
        let got = seen.get(&node).cloned().unwrap_or_default();
        let after_seed: Vec<&String> = got.iter().filter(|c| c.as_str() != old).collect();
        assert_eq!(after_seed, vec![new], "{node} was given {got:?}");
    }
}

/// The server, its workers settled on the worker pool's config with the controller and the
/// nodes running, and the record of every node's targets; both stop with it.
struct Cluster {
    server: ApiServer,
    old: String,
    seen: Arc<Mutex<BTreeMap<String, Vec<String>>>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Cluster {
    async fn settled() -> Cluster {
        let server = ApiServer::start().await.unwrap();
        let old = seed(&server);
        let store = server.store.clone();
        let seen = record_targets(&store);
        let tasks = vec![start_controller(&server), start_nodes(store.clone())];
        eventually_within("the pool settled", PATIENCE, || {
            (pool(&store)["status"]["updatedMachineCount"] == WORKERS).then_some(())
        })
        .await;
        Cluster {
            server,
            old,
            seen,
            tasks,
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_survives_an_api_server_restart() {
    let c = Cluster::settled().await;
    let (old, store, seen) = (c.old.clone(), c.server.store.clone(), c.seen.clone());

    let new = change(&store, &old, "99-restart", "/etc/restart").await;
    // The API server goes away with the rollout under way: some nodes targeted, not all.
    eventually_within("the rollout under way", PATIENCE, || {
        let targeted = (0..WORKERS)
            .filter(|i| {
                annotation(&store, &worker(*i), DESIRED_CONFIG).as_deref() == Some(new.as_str())
            })
            .count();
        (targeted > 0).then_some(())
    })
    .await;
    let events_before = store.list("events").len();
    store.restart(RESTART).await;
    let (back, requests_back, lists_back) = (
        Instant::now(),
        controller_requests(&store),
        controller_lists(&store),
    );

    eventually_within("the rollout done after the restart", PATIENCE, || {
        rolled_out(&store, &new).then_some(())
    })
    .await;
    eprintln!(
        "API server restart ({RESTART:?} away): rollout done {:.1?} after it came back; the controller made {} requests meanwhile, {} of them LISTs",
        back.elapsed(),
        controller_requests(&store) - requests_back,
        controller_lists(&store) - lists_back
    );
    targeted_once(&seen, &old, &new);
    // No storm: the Events written after the restart are a handful per node.
    let events_after = store.list("events").len() - events_before;
    assert!(
        events_after <= 4 * WORKERS,
        "{events_after} Events after the restart"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compacted_history_makes_watches_list_again_and_nothing_is_lost() {
    let c = Cluster::settled().await;
    let (server, store) = (&c.server, c.server.store.clone());
    let mcs = resource("machineconfigs").unwrap();
    let lists_before = controller_lists(&store);
    let started = Instant::now();
    // MachineConfigs come and go while every watch is cut and history compacted under it:
    // each resumes from a version the server no longer has.
    for round in 0..4 {
        store.faults.end_watches();
        store
            .create(
                mcs,
                "",
                support::cluster::file_mc(
                    &format!("99-churn-{round}"),
                    &format!("/etc/churn-{round}"),
                ),
            )
            .unwrap();
        if round > 0 {
            store
                .delete(mcs, "", &format!("99-churn-{}", round - 1), None)
                .unwrap();
        }
        store.compact();
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    // What the controller renders is what the server holds: 99-churn-3 and no other.
    let want = expected_rendered(server, "worker", &RenderOptions::default())
        .metadata
        .name;
    eventually_within(
        "the rendered config of the server's MachineConfigs",
        PATIENCE,
        || rolled_out(&store, &want).then_some(()),
    )
    .await;
    let rendered = store.get("machineconfigs", "", &want).unwrap();
    let files: Vec<&str> = rendered["spec"]["config"]["storage"]["files"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["path"].as_str())
        .filter(|p| p.starts_with("/etc/churn-"))
        .collect();
    assert_eq!(files, ["/etc/churn-3"]);
    assert!(
        store.faults.expired_watches() > 0,
        "no watch resumed from a compacted version"
    );
    let relists = controller_lists(&store) - lists_before;
    assert!(relists > 0, "the controller never listed again");
    eprintln!(
        "compaction: {} watches got 410 and {relists} LISTs followed; converged {:.1?} after the churn began",
        store.faults.expired_watches(),
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_refused_with_429_are_retried_and_the_rollout_is_right() {
    let c = Cluster::settled().await;
    let (old, store, seen) = (c.old.clone(), c.server.store.clone(), c.seen.clone());
    // The next node writes and pool status writes are throttled, then the server is
    // unavailable once, then a write's connection is cut.
    let by = |verb: &'static str, plural: &'static str| Matcher {
        verb: Some(verb),
        plural: Some(plural),
        agent: Some(AGENT.to_string()),
    };
    store
        .faults
        .refuse(by("PATCH", "nodes"), Refusal::TooManyRequests(1), 3);
    store
        .faults
        .refuse(by("PATCH", "machineconfigpools"), Refusal::Unavailable, 1);
    store.faults.refuse(by("PATCH", "nodes"), Refusal::Reset, 1);
    let started = Instant::now();
    let new = change(&store, &old, "99-throttled", "/etc/throttled").await;
    eventually_within("the rollout done", PATIENCE, || {
        rolled_out(&store, &new).then_some(())
    })
    .await;
    assert!(
        store.faults.refused() >= 4,
        "only {} refusals served",
        store.faults.refused()
    );
    targeted_once(&seen, &old, &new);
    eprintln!(
        "throttling: {} requests refused (429 with Retry-After 1, 503, a cut connection); rollout done in {:.1?}",
        store.faults.refused(),
        started.elapsed()
    );
}

/// Watches the server ends on its timeout (kube-apiserver ends each after about
/// `--min-request-timeout`, or the client's `timeoutSeconds`) are taken up again from where
/// they were, not by listing everything again, and a change after many such ends still rolls
/// out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_ended_by_their_timeout_resume_without_listing() {
    let c = Cluster::settled().await;
    let (old, store) = (c.old.clone(), c.server.store.clone());
    let watches = || controller_count(&store, "WATCH ");
    let (lists, watches_before) = (controller_lists(&store), watches());
    // Every watch from now on ends after 0.5 s; the open ones end now (their end is the same
    // clean end of the stream).
    store.cap_watch_duration(Duration::from_millis(500));
    store.faults.end_watches();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let rewatched = watches() - watches_before;
    assert!(rewatched >= 10, "only {rewatched} watches taken up again");
    assert_eq!(
        controller_lists(&store),
        lists,
        "a timed-out watch listed again"
    );
    let started = Instant::now();
    let new = change(&store, &old, "99-after-timeouts", "/etc/after-timeouts").await;
    eventually_within("the rollout done", PATIENCE, || {
        rolled_out(&store, &new).then_some(())
    })
    .await;
    targeted_once(&c.seen, &old, &new);
    eprintln!(
        "watch timeouts: {rewatched} watches taken up again in 4 s, no LIST; the next rollout done in {:.1?}",
        started.elapsed()
    );
}

/// Writes the server carried out but whose answers were cut off: the controller cannot tell
/// they happened. The create of the new rendered config, retried, finds its name taken (the
/// name is the content's hash: the same config) and goes on; a node's target, patched again,
/// is the same patch; the rollout is right and nothing is created twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_done_but_unanswered_are_not_repeated_blindly() {
    let c = Cluster::settled().await;
    let (old, store, seen) = (c.old.clone(), c.server.store.clone(), c.seen.clone());
    let by = |verb: &'static str, plural: &'static str| Matcher {
        verb: Some(verb),
        plural: Some(plural),
        agent: Some(AGENT.to_string()),
    };
    for (verb, plural) in [
        ("POST", "machineconfigs"),
        ("PATCH", "nodes"),
        ("PATCH", "machineconfigpools"),
    ] {
        store
            .faults
            .refuse(by(verb, plural), Refusal::ResetAfterDoing, 1);
    }
    let posts = || controller_count(&store, "POST machineconfigs");
    let (rendered_before, posts_before) = (rendered_worker_configs(&store), posts());
    let started = Instant::now();
    let new = change(&store, &old, "99-unanswered", "/etc/unanswered").await;
    eventually_within("the rollout done", PATIENCE, || {
        rolled_out(&store, &new).then_some(())
    })
    .await;
    assert_eq!(store.faults.refused(), 3, "every fault served");
    targeted_once(&seen, &old, &new);
    // One new rendered config: the retried create found it, made no other.
    let mut want = rendered_before;
    want.push(new.clone());
    want.sort();
    assert_eq!(rendered_worker_configs(&store), want);
    // The create and its retry, and perhaps a few more from syncs before the controller's
    // watch showed the config (each answered 409, nothing created twice: see above), but no
    // storm.
    let creates = posts() - posts_before;
    assert!((2..=6).contains(&creates), "{creates} creates");
    eprintln!(
        "writes done but unanswered (a create, a node patch, a pool patch): rollout done in {:.1?}, {creates} creates",
        started.elapsed()
    );
}

/// The names of the stored rendered worker configs, sorted.
fn rendered_worker_configs(store: &Store) -> Vec<String> {
    let mut names: Vec<String> = store
        .list("machineconfigs")
        .iter()
        .filter_map(|m| m["metadata"]["name"].as_str())
        .filter(|n| n.starts_with("rendered-worker-"))
        .map(str::to_string)
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_off_stops_before_its_lease_is_taken_over() {
    let server = ApiServer::start().await.unwrap();
    let store = server.store.clone();
    store
        .create(
            resource("configmaps").unwrap(),
            "openshift-machine-config-operator",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "work", "namespace": "openshift-machine-config-operator"},
                   "data": {"writer": ""}}),
        )
        .unwrap();
    // Every write of the work, in the order the server stored them.
    let writers: Arc<Mutex<Vec<String>>> = Arc::default();
    let w = writers.clone();
    store.observe(move |e| {
        if e.plural == "configmaps" && e.object["metadata"]["name"] == "work" {
            let who = e.object["data"]["writer"]
                .as_str()
                .unwrap_or("")
                .to_string();
            w.lock().unwrap().push(who);
        }
    });
    let lease = Duration::from_millis(1500);
    let settings = |id: &str| LeaseSettings {
        lease_duration: lease,
        renew_deadline: lease.mul_f32(0.6),
        retry_period: Duration::from_millis(100),
        ..LeaseSettings::new("machine-config-controller", id.to_string())
    };
    // The work: write `writer` every 50 ms, through the candidate's own client.
    let work = |client: kube::Client, id: &'static str| async move {
        let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(client, "openshift-machine-config-operator");
        loop {
            let patch = json!({"data": {"writer": id}});
            let _ = api
                .patch(
                    "work",
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(&patch),
                )
                .await;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let a_client = server.client_as("leader-a");
    let a = Elector::new(a_client.clone(), settings("a"));
    let a_task = tokio::spawn(a.lead(work(a_client, "a"), std::future::pending()));
    eventually_within("a writing", PATIENCE, || {
        writers
            .lock()
            .unwrap()
            .iter()
            .any(|w| w == "a")
            .then_some(())
    })
    .await;

    // a is cut off from the API server: every request of its connection is cut.
    let cut_at = Instant::now();
    store.faults.refuse(
        Matcher {
            agent: Some("leader-a".into()),
            ..Matcher::default()
        },
        Refusal::Reset,
        u64::MAX,
    );
    let b_client = server.client_as("leader-b");
    let b = Elector::new(b_client.clone(), settings("b"));
    let b_task = tokio::spawn(b.lead(work(b_client, "b"), std::future::pending()));
    // a gives up leading (its renew deadline passes) before b can take the Lease over.
    let a_out = tokio::time::timeout(PATIENCE, a_task)
        .await
        .expect("a never stopped");
    let a_stopped = cut_at.elapsed();
    assert!(
        matches!(a_out, Ok(Err(_))),
        "a stopped for another reason: {a_out:?}"
    );
    eventually_within("b writing", PATIENCE, || {
        writers
            .lock()
            .unwrap()
            .iter()
            .any(|w| w == "b")
            .then_some(())
    })
    .await;
    let b_wrote = cut_at.elapsed();
    assert!(
        a_stopped < b_wrote,
        "a stopped {a_stopped:?} after the cut, b wrote at {b_wrote:?}"
    );
    // The partition heals: a, stopped, writes nothing more.
    store.faults.lift();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let order = writers.lock().unwrap().clone();
    let first_b = order.iter().position(|w| w == "b").unwrap_or(order.len());
    assert!(
        order[first_b..].iter().all(|w| w != "a"),
        "a wrote after b's first write: {order:?}"
    );
    eprintln!(
        "lost lease: a stopped {a_stopped:.1?} after being cut off, b wrote {b_wrote:.1?} after (lease {lease:?}, renew deadline {:?})",
        lease.mul_f32(0.6)
    );
    b_task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_config_server_serves_from_its_caches_while_the_api_server_is_away() {
    use support::http::http_get;

    let server = ApiServer::start().await.unwrap();
    seed(&server);
    let store = server.store.clone();
    let ctrl = start_controller(&server);
    // The server serves the config a pool's nodes are on: the nodes take the rollouts.
    let nodes = start_nodes(store.clone());
    let mcs = support::cluster::start_cluster_mcs(&server, None).await;
    let addr = mcs.insecure_addr.unwrap();
    let accept = "application/vnd.coreos.ignition+json;version=3.4.0";
    let mut before = Vec::new();
    for _ in 0..3000 {
        let (status, body) = http_get(addr, "/config/worker", accept).await;
        if status == 200 {
            before = body;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!before.is_empty(), "the worker pool was never served");

    // Away: machines booting meanwhile get the same config.
    let restart = tokio::spawn({
        let store = store.clone();
        async move { store.restart(RESTART).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(store.faults.down());
    let (status, during) = http_get(addr, "/config/worker", accept).await;
    assert_eq!(status, 200);
    assert_eq!(
        during, before,
        "served otherwise while the API server was away"
    );
    restart.await.unwrap();

    // Back: a new config, once the pool's nodes are on it, reaches the server's caches and is
    // served.
    let came_back = Instant::now();
    store
        .create(
            resource("machineconfigs").unwrap(),
            "",
            support::cluster::file_mc("99-after", "/etc/after"),
        )
        .unwrap();
    let mut after = Vec::new();
    for _ in 0..3000 {
        let (status, body) = http_get(addr, "/config/worker", accept).await;
        if status == 200 && String::from_utf8_lossy(&body).contains("/etc/after") {
            after = body;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        !after.is_empty(),
        "the new config was never served after the restart (pool {})",
        pool(&store)["status"]["configuration"]["name"]
    );
    eprintln!(
        "config server: served from its caches through the restart; the next config served {:.1?} after the API server came back",
        came_back.elapsed()
    );
    nodes.abort();
    ctrl.abort();
}
