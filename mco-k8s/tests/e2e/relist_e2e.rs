//! The API server restarted in the middle of a drain, with pods on the nodes, as
//! kube-apiserver restarts: every watch cut, reads refused `403` for an instant, then each
//! watch resumed from a version older than the new watch cache answered 200 and ended by an
//! ERROR event carrying `410 Expired`. Every process (the controller, the agents as
//! `machine-config-daemon` runs them, the machine-config-server) lists each such kind again
//! at once, and nothing is decided from a store known to be stale: each node is cordoned
//! once and drained once for the config, and its pods evicted once.

use crate::support;

use crate::support::apiserver::{ApiServer, Kubelet};
use crate::support::cluster::{decode, expected_rendered, seed_examples};
use crate::support::faults::RESTART;
use crate::system_e2e::{booted_node, new_worker_config, start_controller, WORKER};
use mco_node::agent::kube_loop::AgentOptions;
use mco_node::RecordingHost;
use mco_render::api::node::{DESIRED_DRAIN, LAST_APPLIED_DRAIN};
use mco_render::api::Node;
use mco_render::RenderOptions;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

const WORKERS: [&str; 2] = ["worker-0", "worker-1"];

/// How long after its `410` a process may take to list again, at most: generous (tens to a
/// few hundred milliseconds on two loaded cores), yet shorter than the delay that had grown
/// during the 3 s outage when a `410` waited it (4 s and more).
const RELIST_BOUND: Duration = Duration::from_secs(3);

/// The agent of `name` as `machine-config-daemon` runs it in a cluster: the update loop, the
/// certificate writer and the pinned image manager together.
fn start_agent(server: &ApiServer, name: &str, root: mco_node::HostRoot) -> JoinHandle<()> {
    let mut opts = AgentOptions::new(name);
    opts.resync = Duration::from_millis(500);
    opts.retry_after = Duration::from_secs(1);
    opts.continue_after_reboot = true;
    let client = server.client_as(&agent_of(name));
    tokio::spawn(async move {
        let pinned = Some(Arc::new(Mutex::new(RecordingHost::new())));
        let _ =
            mco_node::agent::cluster::run(client, root, RecordingHost::new(), pinned, opts).await;
    })
}

fn agent_of(node: &str) -> String {
    format!("machine-config-daemon ({node})")
}

/// A ReplicaSet's pod on `node`, running.
fn pod_on(server: &ApiServer, node: &str) {
    server
        .store
        .create(
            support::apiserver::resource("pods").unwrap(),
            "apps",
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("app-{node}"), "namespace": "apps",
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                  "name": "app-5d9c", "uid": "u"}]},
                "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]},
                "status": {"phase": "Running",
                           "conditions": [{"type": "Ready", "status": "True"}]}
            }),
        )
        .unwrap();
}

/// What each node went through, from the watch events the server sent: how many times it
/// was cordoned (unschedulable turned on) and each value its lastAppliedDrain took, in order.
#[derive(Debug, Default, Clone)]
struct Record {
    cordons: u32,
    applied: Vec<String>,
    unschedulable: bool,
}

fn record_nodes(server: &ApiServer) -> Arc<Mutex<BTreeMap<String, Record>>> {
    let seen: Arc<Mutex<BTreeMap<String, Record>>> = Arc::default();
    let s = seen.clone();
    server.store.observe(move |e| {
        if e.plural != "nodes" {
            return;
        }
        let name = e.object["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let mut map = s.lock().unwrap();
        let r = map.entry(name).or_default();
        let on = e.object["spec"]["unschedulable"] == true;
        if on && !r.unschedulable {
            r.cordons += 1;
        }
        r.unschedulable = on;
        if let Some(a) = e.object["metadata"]["annotations"][LAST_APPLIED_DRAIN].as_str() {
            if r.applied.last().map(String::as_str) != Some(a) {
                r.applied.push(a.to_string());
            }
        }
    });
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_mid_drain_lists_again_at_once_and_drains_each_node_once() {
    let server = ApiServer::start().await.unwrap();
    seed_examples(&server);
    let worker = expected_rendered(&server, "worker", &RenderOptions::default());
    let mut tasks = Vec::new();
    let mut dirs = Vec::new();
    for w in WORKERS {
        let (dir, root) = booted_node(&server, w, WORKER, &worker).await;
        tasks.push(start_agent(&server, w, root));
        dirs.push(dir);
        pod_on(&server, w);
    }
    let (ctrl, _) = start_controller(&server);
    tasks.push(ctrl);
    let mcs = support::cluster::start_cluster_mcs(&server, None).await;
    support::eventually_within("the worker pool to settle", support::PATIENCE, || {
        let p = server.store.get("machineconfigpools", "", "worker")?;
        (p["status"]["updatedMachineCount"] == 2).then_some(())
    })
    .await;
    // One watch per collection per process: each agent lists its Node once (its update loop
    // hands it on to the pinned image manager).
    let by_agent = server.store.request_counts_by_agent();
    for w in WORKERS {
        let lists = by_agent
            .get(&(agent_of(w), "LIST nodes".to_string()))
            .copied()
            .unwrap_or(0);
        assert_eq!(lists, 1, "{w}: {by_agent:#?}");
    }
    let seen = record_nodes(&server);

    // Evicted pods stay terminating: the drain is under way when the server goes.
    server.store.set_kubelet(Kubelet::Held);
    let changed = Instant::now();
    let mc = support::cluster::file_mc("99-worker-relist", "/etc/relist");
    let target = new_worker_config(&server, worker.name(), mc).await;
    let drain = format!("drain-{target}");
    support::eventually_within("a drain under way", support::PATIENCE, || {
        let under_way = WORKERS.iter().any(|w| {
            server.store.get("nodes", "", w).is_some_and(|n| {
                let n: Node = decode(&n);
                n.annotation(DESIRED_DRAIN) == Some(drain.as_str())
                    && n.annotation(LAST_APPLIED_DRAIN) != Some(drain.as_str())
            })
        });
        (under_way && !server.store.terminating().is_empty()).then_some(())
    })
    .await;

    // The API server restarts; while it is away the evicted pods end (and later ones end
    // quickly), so that the drain is done as soon as it is back.
    let store = server.store.clone();
    let kubelet = tokio::spawn(async move {
        tokio::time::sleep(RESTART / 2).await;
        store.set_kubelet(Kubelet::Speedup(1000));
    });
    server.store.restart(RESTART).await;
    let back = Instant::now();
    kubelet.await.unwrap();

    support::eventually_within(
        "both workers done on the new config",
        support::PATIENCE,
        || {
            let done = WORKERS.iter().all(|w| {
                server.store.get("nodes", "", w).is_some_and(|n| {
                    let n: Node = decode(&n);
                    n.is_done_on(&target)
                })
            });
            let p = server.store.get("machineconfigpools", "", "worker")?;
            (done
                && p["status"]["updatedMachineCount"] == 2
                && p["status"]["configuration"]["name"] == target.as_str())
            .then_some(())
        },
    )
    .await;
    // Nothing more is drained once done: let a late pass show itself.
    tokio::time::sleep(Duration::from_secs(2)).await;

    // Every watch the restart expired was followed by a LIST of its kind by the same process,
    // soon.
    let expired: Vec<_> = server
        .store
        .faults
        .expired_log()
        .into_iter()
        .filter(|e| e.at >= back)
        .collect();
    let log = server.store.request_log();
    let mut worst: BTreeMap<String, Duration> = BTreeMap::new();
    let mut kinds: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in &expired {
        let list = format!("LIST {}", e.plural);
        let relisted = log
            .iter()
            .find(|r| r.at >= e.at && r.agent == e.agent && r.what == list)
            .unwrap_or_else(|| panic!("{} never listed {} again after its 410", e.agent, e.plural));
        let took = relisted.at - e.at;
        assert!(
            took <= RELIST_BOUND,
            "{} listed {} {took:?} after its 410",
            e.agent,
            e.plural
        );
        let w = worst.entry(e.agent.clone()).or_default();
        *w = (*w).max(took);
        kinds
            .entry(e.agent.clone())
            .or_default()
            .push(e.plural.clone());
    }
    for process in [
        "machine-config-controller",
        "machine-config-server",
        &agent_of("worker-0"),
        &agent_of("worker-1"),
    ] {
        assert!(
            kinds.get(process).is_some_and(|k| !k.is_empty()),
            "{process}: no watch of it was answered 410 after the restart: {kinds:#?}"
        );
    }
    for (process, took) in &worst {
        eprintln!(
            "{process}: {} kinds answered 410 after the restart, listed again at most {took:.1?} after their 410 ({:?})",
            kinds[process].len(),
            kinds[process]
        );
    }
    let first_410 = expired
        .iter()
        .map(|e| e.at - back)
        .min()
        .unwrap_or_default();
    eprintln!(
        "first 410 {first_410:.1?} after the API server came back; {} reads refused 403 in its first {:?}",
        server.store.faults.forbidden_reads(),
        support::faults::FORBIDDEN_AFTER_RESTART
    );

    // Each node cordoned once, drained once (its lastAppliedDrain: the drain, then the
    // uncordon), its pod evicted once.
    let seen = seen.lock().unwrap().clone();
    let uncordon = format!("uncordon-{target}");
    for w in WORKERS {
        let r = seen.get(w).cloned().unwrap_or_default();
        assert_eq!(r.cordons, 1, "{w}: {r:?}");
        let for_target: Vec<&String> = r.applied.iter().filter(|a| a.ends_with(&target)).collect();
        assert_eq!(for_target, [&drain, &uncordon], "{w}: {r:?}");
        assert!(!r.unschedulable, "{w}: {r:?}");
    }
    let evictions = server.store.evictions();
    for w in WORKERS {
        let pod = format!("app-{w}");
        let n = evictions.iter().filter(|(_, p)| *p == pod).count();
        assert_eq!(n, 1, "{pod}: {evictions:?}");
    }
    // The controller wrote each step once per node (a pass on a Node read before its own
    // writes repeats them, changing nothing the watch would show): one cordon, the drain
    // recorded once, the uncordon recorded once.
    let writes = |node: &str, step: &dyn Fn(&serde_json::Value) -> bool| {
        log.iter()
            .filter(|r| r.at >= changed && r.agent == "machine-config-controller")
            .filter(|r| r.what == "PATCH nodes" && r.name.as_deref() == Some(node))
            .filter_map(|r| serde_json::from_str::<serde_json::Value>(&r.body).ok())
            .filter(|b| step(b))
            .count()
    };
    for w in WORKERS {
        let cordons = writes(w, &|b| b["spec"]["unschedulable"] == true);
        let drained = writes(w, &|b| {
            b["metadata"]["annotations"][LAST_APPLIED_DRAIN] == drain.as_str()
        });
        let uncordoned = writes(w, &|b| {
            b["metadata"]["annotations"][LAST_APPLIED_DRAIN] == uncordon.as_str()
        });
        eprintln!("{w}: the controller cordoned {cordons}, recorded the drain {drained}, the uncordon {uncordoned} times");
        assert_eq!((cordons, drained, uncordoned), (1, 1, 1), "{w}");
    }
    drop(mcs);
    for t in tasks {
        t.abort();
    }
}
