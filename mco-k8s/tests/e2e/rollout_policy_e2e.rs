//! Guarded rollouts end to end: the controller (`mco_k8s::controller::run`, in-process)
//! against the in-process API server, three workers whose daemons are simulated, and a
//! RolloutPolicy for the worker pool.
//!
//! The simulated daemon of each node does what the real one does on a new desiredConfig:
//! Working and a drain request, "reboot", an uncordon request, then currentConfig and Done,
//! and its MachineConfigNode reports Updated on the config. A config whose MachineConfig
//! writes a file under `/etc/bad` breaks the node: it comes back NotReady, as a node whose
//! kubelet died does. The controller's resync is an hour: every step after a change happens
//! on the policy's own clock (gate timeouts, soaks, windows).

// The test server's handlers return its Status error object by value.
#![allow(clippy::result_large_err)]

use crate::support;

use crate::support::apiserver::{resource, ApiServer, Store};
use crate::support::cluster::{expected_rendered, seed_examples};
use crate::support::edit;
use mco_k8s::controller::{self, Options};
use mco_render::api::node::{
    CURRENT_CONFIG, DESIRED_CONFIG, DESIRED_DRAIN, DRAIN_FAILURE, LAST_APPLIED_DRAIN, STATE,
};
use mco_render::api::rollout_policy::TARGETED_AT;
use mco_render::controllers::rollout_policy::rfc3339;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

const LIMIT: Duration = support::PATIENCE;
const AGENT: &str = "machine-config-controller/rollout-policy-e2e";
const NODES: usize = 3;
const NOT_READY: &str = "Kubelet stopped posting node status.";

async fn eventually<T>(what: &str, check: impl FnMut() -> Option<T>) -> T {
    support::eventually_within(what, LIMIT, check).await
}

/// Like [`eventually`], panicking with what `show` says about the cluster then.
async fn eventually_or<T>(
    what: &str,
    mut check: impl FnMut() -> Option<T>,
    show: impl Fn() -> String,
) -> T {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        if let Some(v) = check() {
            return v;
        }
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out waiting for {what}: {}", show());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn options() -> Options {
    support::cluster::rollout_options()
}

fn annotate(store: &Store, node: &str, pairs: &[(&str, &str)]) {
    edit(store, "nodes", "", node, false, |n| {
        for (k, v) in pairs {
            n["metadata"]["annotations"][*k] = json!(v);
        }
    });
}

fn annotation(store: &Store, node: &str, key: &str) -> Option<String> {
    store.get("nodes", "", node)?["metadata"]["annotations"][key]
        .as_str()
        .map(str::to_string)
}

fn node_name(i: usize) -> String {
    format!("worker-{i}")
}

/// Whether the rendered config `name` breaks a node (a file under `/etc/bad`).
fn is_bad(store: &Store, name: &str) -> bool {
    store.get("machineconfigs", "", name).is_some_and(|mc| {
        mc["spec"]["config"]["storage"]["files"]
            .as_array()
            .is_some_and(|fs| {
                fs.iter().any(|f| {
                    f["path"]
                        .as_str()
                        .is_some_and(|p| p.starts_with("/etc/bad"))
                })
            })
    })
}

async fn wait_drain(store: &Store, node: &str, want: &str) {
    while annotation(store, node, LAST_APPLIED_DRAIN).as_deref() != Some(want) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One node's simulated daemon (it works on the store directly: only the controller's
/// requests are counted).
fn start_agent(store: Arc<Store>, node: String) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut round = 0u32;
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let desired = annotation(&store, &node, DESIRED_CONFIG).unwrap_or_default();
            let current = annotation(&store, &node, CURRENT_CONFIG).unwrap_or_default();
            if desired.is_empty() || desired == current {
                continue;
            }
            round += 1;
            let drain = format!("drain-{desired}-{round}");
            annotate(
                &store,
                &node,
                &[(STATE, "Working"), (DESIRED_DRAIN, &drain)],
            );
            wait_drain(&store, &node, &drain).await;
            tokio::time::sleep(Duration::from_millis(15)).await; // "reboot"
            let uncordon = format!("uncordon-{desired}-{round}");
            annotate(&store, &node, &[(DESIRED_DRAIN, &uncordon)]);
            wait_drain(&store, &node, &uncordon).await;
            let ready = if is_bad(&store, &desired) {
                json!({"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                       "message": NOT_READY})
            } else {
                json!({"type": "Ready", "status": "True", "reason": "KubeletReady"})
            };
            edit(&store, "nodes", "", &node, true, |n| {
                n["status"]["conditions"] = json!([ready]);
            });
            annotate(
                &store,
                &node,
                &[(CURRENT_CONFIG, &desired), (STATE, "Done")],
            );
            edit(&store, "machineconfignodes", "", &node, true, |m| {
                m["status"] = mcn_status(&desired);
            });
        }
    })
}

fn mcn_status(config: &str) -> Value {
    json!({
        "conditions": [{"type": "Updated", "status": "True", "reason": "Updated",
                        "message": format!("Node is updated to {config}"),
                        "lastTransitionTime": "2024-01-01T00:00:00Z"}],
        "configVersion": {"current": config, "desired": config}
    })
}

/// The cluster of a test: the server, the controller and agents, the workers' first config.
struct Sim {
    server: ApiServer,
    old: String,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Sim {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Sim {
    /// The example cluster, three workers settled on the worker pool's config (maxUnavailable
    /// 2), gate pods `app=probe` Ready on each (owned by a DaemonSet, so drains leave them),
    /// the worker pool's RolloutPolicy with `spec`; returns once the policy says Done.
    async fn start(spec: Value) -> Sim {
        Sim::start_with(spec, options(), |_| {}).await
    }

    /// [`Sim::start`] with the controller's `opts`, and `seed` run on the store before the
    /// controller starts.
    async fn start_with(spec: Value, opts: Options, seed: impl FnOnce(&Store)) -> Sim {
        let server = ApiServer::start().await.unwrap();
        seed_examples(&server);
        let store = server.store.clone();
        edit(&store, "machineconfigpools", "", "worker", false, |p| {
            p["spec"]["maxUnavailable"] = json!(2);
        });
        let old = expected_rendered(&server, "worker", &options().render)
            .metadata
            .name;
        for i in 0..NODES {
            let name = node_name(i);
            store
                .create(
                    resource("nodes").unwrap(),
                    "",
                    json!({
                        "apiVersion": "v1", "kind": "Node",
                        "metadata": {"name": name,
                                     "labels": {"node-role.kubernetes.io/worker": ""},
                                     "annotations": {CURRENT_CONFIG: old, DESIRED_CONFIG: old,
                                                     STATE: "Done"}},
                        "status": {"conditions": [{"type": "Ready", "status": "True"}]}
                    }),
                )
                .unwrap();
            store
                .create(
                    resource("machineconfignodes").unwrap(),
                    "",
                    json!({
                        "apiVersion": "machineconfiguration.openshift.io/v1",
                        "kind": "MachineConfigNode",
                        "metadata": {"name": name},
                        "spec": {"node": {"name": name}, "pool": {"name": "worker"},
                                 "configVersion": {"desired": old}}
                    }),
                )
                .unwrap();
            edit(&store, "machineconfignodes", "", &name, true, |m| {
                m["status"] = mcn_status(&old);
            });
            store
                .create(
                    resource("pods").unwrap(),
                    "apps",
                    json!({
                        "apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": format!("probe-{i}"), "namespace": "apps",
                                     "labels": {"app": "probe"},
                                     "ownerReferences": [{"apiVersion": "apps/v1",
                                                          "kind": "DaemonSet", "name": "probe",
                                                          "uid": "u"}]},
                        "spec": {"nodeName": name, "containers": [{"name": "c", "image": "i"}]},
                        "status": {"phase": "Running",
                                   "conditions": [{"type": "Ready", "status": "True"}]}
                    }),
                )
                .unwrap();
        }
        store
            .create(
                resource("rolloutpolicies").unwrap(),
                "",
                json!({
                    "apiVersion": "rollout.mco.dev/v1alpha1", "kind": "RolloutPolicy",
                    "metadata": {"name": "worker"},
                    "spec": spec
                }),
            )
            .unwrap();
        seed(&store);
        let client = server.client_as(AGENT);
        let mut tasks = vec![tokio::spawn(async move {
            if let Err(e) = controller::run(client, opts).await {
                panic!("controller stopped: {e}");
            }
        })];
        for i in 0..NODES {
            tasks.push(start_agent(store.clone(), node_name(i)));
        }
        let sim = Sim { server, old, tasks };
        eventually_or(
            "the policy settled",
            || {
                let st = sim.status();
                (st["phase"] == "Done" && st["lastKnownGood"] == sim.old.as_str()).then_some(())
            },
            || {
                format!(
                    "{} {:?}",
                    sim.status(),
                    sim.store().get("nodes", "", "worker-0")
                )
            },
        )
        .await;
        sim
    }

    fn store(&self) -> &Store {
        &self.server.store
    }

    /// What `kubectl mco status` prints now (its exit status first), the clock taken out.
    async fn kubectl_mco_status(&self) -> String {
        // The worker pool alone: the others re-render on their own schedule.
        let (code, out) = support::plugin::status(&self.server, &["--pool", "worker"]).await;
        format!("exit {code}\n{}", support::plugin::without_clock(&out))
    }

    fn status(&self) -> Value {
        self.store()
            .get("rolloutpolicies", "", "worker")
            .map(|p| p["status"].clone())
            .unwrap_or(Value::Null)
    }

    fn set_spec(&self, key: &str, value: Value) {
        edit(self.store(), "rolloutpolicies", "", "worker", false, |p| {
            p["spec"][key] = value;
        });
    }

    /// Creates (or rewrites) the MachineConfig `99-change` writing `path`, and returns the
    /// pool's new rendered config.
    async fn change(&self, path: &str) -> String {
        let before = self.pool_config();
        let mc = support::cluster::file_mc("99-change", path);
        if self
            .store()
            .get("machineconfigs", "", "99-change")
            .is_some()
        {
            edit(
                self.store(),
                "machineconfigs",
                "",
                "99-change",
                false,
                |m| {
                    m["spec"] = mc["spec"].clone();
                },
            );
        } else {
            self.store()
                .create(resource("machineconfigs").unwrap(), "", mc)
                .unwrap();
        }
        eventually("the new rendered config", || {
            let c = self.pool_config();
            (c != before && c != self.old).then_some(c)
        })
        .await
    }

    fn pool_config(&self) -> String {
        self.store()
            .get("machineconfigpools", "", "worker")
            .and_then(|p| {
                p["spec"]["configuration"]["name"]
                    .as_str()
                    .map(str::to_string)
            })
            .unwrap_or_default()
    }

    /// The pool's condition `type_` once its status is `status`: the controller writes the
    /// pool's status after the policy's, in the same pass.
    async fn pool_condition_is(&self, type_: &str, status: &str) -> Value {
        eventually(&format!("the pool's {type_}={status}"), || {
            let c = self.pool_condition(type_);
            (c["status"] == status).then_some(c)
        })
        .await
    }

    fn pool_condition(&self, type_: &str) -> Value {
        let pool = self.store().get("machineconfigpools", "", "worker");
        pool.and_then(|p| {
            p["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == type_)
                .cloned()
        })
        .unwrap_or(Value::Null)
    }

    /// The workers' annotations, the policy's status and the pool's Events: what a failed
    /// assertion about the rollout shows.
    fn describe(&self) -> String {
        let nodes: Vec<Value> = (0..NODES)
            .map(node_name)
            .map(|n| {
                let node = self.store().get("nodes", "", &n).unwrap_or(Value::Null);
                json!({"name": n, "annotations": node["metadata"]["annotations"],
                       "conditions": node["status"]["conditions"]})
            })
            .collect();
        let events: Vec<Value> = self
            .store()
            .list("events")
            .into_iter()
            .filter(|e| e["regarding"]["name"] == "worker")
            .map(|e| json!([e["reason"], e["note"]]))
            .collect();
        format!(
            "nodes {:#}\npolicy {:#}\nevents {:#}",
            json!(nodes),
            self.status(),
            json!(events)
        )
    }

    /// The workers whose desiredConfig is `config`.
    fn targeted(&self, config: &str) -> Vec<String> {
        (0..NODES)
            .map(node_name)
            .filter(|n| annotation(self.store(), n, DESIRED_CONFIG).as_deref() == Some(config))
            .collect()
    }

    fn done_on(&self, node: &str, config: &str) -> bool {
        annotation(self.store(), node, CURRENT_CONFIG).as_deref() == Some(config)
            && annotation(self.store(), node, STATE).as_deref() == Some("Done")
    }

    async fn phase(&self, want: &str) -> Value {
        eventually(&format!("phase {want}"), || {
            let st = self.status();
            (st["phase"] == want).then_some(st)
        })
        .await
    }

    /// The pool's Events of `reason`.
    fn events(&self, reason: &str) -> Vec<Value> {
        self.store()
            .list("events")
            .into_iter()
            .filter(|e| e["reason"] == reason && e["regarding"]["name"] == "worker")
            .collect()
    }

    fn controller_requests(&self) -> std::collections::BTreeMap<String, u64> {
        self.store()
            .request_counts_by_agent()
            .into_iter()
            .filter(|((agent, _), _)| agent == AGENT)
            .map(|((_, what), n)| (what, n))
            .collect()
    }

    fn set_pod_ready(&self, i: usize, ready: bool) {
        let status = if ready { "True" } else { "False" };
        edit(
            self.store(),
            "pods",
            "apps",
            &format!("probe-{i}"),
            true,
            |p| {
                p["status"]["conditions"] = json!([{"type": "Ready", "status": status}]);
            },
        );
    }
}

fn gate(timeout: &str) -> Value {
    json!({"canary": {"nodes": 1}, "healthGate": {"timeout": timeout}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_config_stops_after_the_canary_until_resumed() {
    let sim = Sim::start(gate("3s")).await;
    let bad = sim.change("/etc/bad-kubelet").await;

    let st = sim.phase("Paused").await;
    let targeted = sim.targeted(&bad);
    assert_eq!(targeted.len(), 1, "only the canary: {}", sim.describe());
    let canary = &targeted[0];
    assert_eq!(st["canary"]["nodes"], json!([canary]));
    assert_eq!(st["pause"]["node"], canary.as_str());
    assert_eq!(st["pause"]["reason"], "HealthGateFailed");
    for n in (0..NODES).map(node_name).filter(|n| n != canary) {
        assert!(sim.done_on(&n, &sim.old), "{n} left its config");
    }
    // The pool says so, naming the node, the config and why.
    let degraded = sim.pool_condition_is("Degraded", "True").await;
    let message = degraded["message"].as_str().unwrap_or("");
    for part in [canary.as_str(), bad.as_str(), NOT_READY] {
        assert!(message.contains(part), "{part:?} not in {message:?}");
    }
    sim.pool_condition_is("RolloutPaused", "True").await;
    let event = eventually("the RolloutPaused event", || {
        sim.events("RolloutPaused").into_iter().next()
    })
    .await;
    // What an administrator sees: the pool stuck on its paused canary, and how to go on
    // (a second on, so the view says for how long rather than "just now").
    tokio::time::sleep(Duration::from_millis(1100)).await;
    insta::assert_snapshot!(
        "a_canary_paused_by_its_health_gate",
        sim.kubectl_mco_status().await
    );
    assert_eq!(event["type"], "Warning");
    let note = event["note"].as_str().unwrap_or("");
    for part in [canary.as_str(), bad.as_str(), NOT_READY] {
        assert!(note.contains(part), "{part:?} not in {note:?}");
    }

    // Resumed: the rollout goes on past the canary.
    sim.set_spec("resumedAt", json!(rfc3339(jiff::Timestamp::now())));
    eventually_or(
        "another node targeted",
        || (sim.targeted(&bad).len() >= 2).then_some(()),
        || sim.status().to_string(),
    )
    .await;
    eventually("the RolloutResumed event", || {
        sim.events("RolloutResumed").into_iter().next()
    })
    .await;
    assert_eq!(sim.status()["excusedNodes"], json!([canary]));
}

/// A busy API server's watches trail its writes: the controller's next pass may come before
/// its own status write is back in its cache. Deciding from the older status chose the canary
/// again with no record of it and merged that over the stored status, which then said the
/// canary had passed, and a second node was targeted before the canary's gate had run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_holds_when_watches_trail_writes() {
    // The policies' watch trails the others from the start: the change comes while the
    // policy's first status is still on its way.
    let sim = Sim::start_with(gate("3s"), options(), |store| {
        let lag = Some(Duration::from_millis(300));
        store.faults.set_watch_lag("rolloutpolicies", lag);
    })
    .await;
    let bad = sim.change("/etc/bad-kubelet").await;
    let st = sim.phase("Paused").await;
    let targeted = sim.targeted(&bad);
    assert_eq!(targeted.len(), 1, "only the canary: {}", sim.describe());
    assert_eq!(st["canary"]["nodes"], json!(targeted), "{}", sim.describe());
    assert_eq!(st["canary"]["passed"], Value::Null, "{}", sim.describe());
    assert!(sim
        .events("CanaryPassed")
        .iter()
        .all(|e| !e["note"].as_str().unwrap_or("").contains(bad.as_str())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_rollback_returns_the_canary_and_a_newer_config_ends_it() {
    let mut spec = gate("3s");
    spec["autoRollback"] = json!(true);
    spec["canary"]["soak"] = json!("1s");
    let sim = Sim::start(spec).await;
    let bad = sim.change("/etc/bad-kubelet").await;

    let st = sim.phase("RolledBack").await;
    assert_eq!(st["rollback"]["from"], bad.as_str());
    assert_eq!(st["rollback"]["to"], sim.old.as_str());
    assert_eq!(st["rollback"]["automatic"], true);
    assert_eq!(st["target"], sim.old.as_str());
    let disruption = st["rollback"]["disruption"].as_str().unwrap_or("");
    assert!(disruption.contains("1 file change"), "{disruption:?}");
    for n in (0..NODES).map(node_name) {
        assert!(sim.done_on(&n, &sim.old), "{n} not back");
    }
    assert!(sim.targeted(&bad).is_empty());
    // The pool still names the newest render.
    assert_eq!(sim.pool_config(), bad);
    sim.pool_condition_is("RolledBack", "True").await;
    assert_eq!(sim.events("RollbackStarted").len(), 1);

    // A newer, good config rolls out canary first and ends the rollback.
    let good = sim.change("/etc/good").await;
    let st = eventually("the good config everywhere", || {
        let st = sim.status();
        (st["phase"] == "Done" && st["lastKnownGood"] == good.as_str()).then_some(st)
    })
    .await;
    assert!(st.get("rollback").is_none(), "{st}");
    let canary = st["canary"]["nodes"][0].as_str().unwrap_or("").to_string();
    let at = |n: &str| {
        annotation(sim.store(), n, TARGETED_AT)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .unwrap_or_else(|| panic!("{n} has no {TARGETED_AT}"))
    };
    for n in (0..NODES).map(node_name).filter(|n| *n != canary) {
        assert!(
            at(&n) >= at(&canary) + jiff::SignedDuration::from_secs(1),
            "{n} started before the canary {canary} soaked"
        );
    }
    sim.pool_condition_is("RolledBack", "False").await;
    eventually("the RollbackEnded event", || {
        sim.events("RollbackEnded").into_iter().next()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requested_rollback_returns_the_canary() {
    let sim = Sim::start(gate("3s")).await;
    let bad = sim.change("/etc/bad-kubelet").await;
    sim.phase("Paused").await;
    let canary = sim.targeted(&bad);
    assert_eq!(canary.len(), 1, "only the canary: {}", sim.describe());

    sim.set_spec("rollback", json!(true));
    let st = sim.phase("RolledBack").await;
    assert_eq!(st["rollback"]["from"], bad.as_str());
    assert_eq!(st["rollback"]["to"], sim.old.as_str());
    assert!(st["rollback"].get("automatic").is_none());
    assert!(sim.done_on(&canary[0], &sim.old));
    assert_eq!(sim.pool_config(), bad);
    assert_eq!(
        sim.pool_condition_is("RolledBack", "True").await["reason"],
        "Requested"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_waits_for_its_maintenance_window() {
    let sim = Sim::start(json!({})).await;
    // A window opening a few seconds from now, in Berlin's local time.
    let berlin = jiff::tz::TimeZone::get("Europe/Berlin").unwrap();
    let opens = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(4);
    let start = opens.to_zoned(berlin).strftime("%H:%M:%S").to_string();
    let opens: jiff::Timestamp = rfc3339(opens).parse().unwrap(); // whole seconds
    sim.set_spec(
        "maintenanceWindows",
        json!([{"start": start, "duration": "1h", "timeZone": "Europe/Berlin"}]),
    );
    // The change must not reach the controller before the window does: watches of two kinds
    // are not ordered, and a controller that has not seen the window rightly starts at once.
    let generation =
        sim.store().get("rolloutpolicies", "", "worker").unwrap()["metadata"]["generation"].clone();
    eventually("the controller has seen the window", || {
        (sim.status()["observedGeneration"] == generation).then_some(())
    })
    .await;
    let new = sim.change("/etc/good").await;

    let st = sim.phase("WaitingForWindow").await;
    assert_eq!(st["nextWindow"], rfc3339(opens).as_str());
    // Nothing starts before the window opens.
    while jiff::Timestamp::now() < opens - jiff::SignedDuration::from_millis(200) {
        assert!(sim.targeted(&new).is_empty(), "started before {opens}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let st = eventually("the rollout done", || {
        let st = sim.status();
        (st["phase"] == "Done" && st["lastKnownGood"] == new.as_str()).then_some(st)
    })
    .await;
    assert!(st.get("nextWindow").is_none(), "{st}");
    for n in (0..NODES).map(node_name) {
        let at: jiff::Timestamp = annotation(sim.store(), &n, TARGETED_AT)
            .unwrap()
            .parse()
            .unwrap();
        assert!(at >= opens, "{n} targeted at {at}, before {opens}");
    }
}

fn pod_gate(timeout: &str) -> Value {
    json!({"canary": {"nodes": 1},
           "healthGate": {"timeout": timeout, "pods": {"matchLabels": {"app": "probe"}}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gate_pods_not_ready_hold_the_others_and_fail_the_gate() {
    let sim = Sim::start(pod_gate("3s")).await;
    for i in 0..NODES {
        sim.set_pod_ready(i, false);
    }
    let new = sim.change("/etc/good").await;
    let st = sim.phase("Paused").await;
    let targeted = sim.targeted(&new);
    assert_eq!(targeted.len(), 1, "{targeted:?}");
    assert!(sim.done_on(&targeted[0], &new));
    assert_eq!(st["pause"]["reason"], "HealthGateFailed");
    let message = st["pause"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("pods") && message.contains("app=probe"),
        "{message:?}"
    );
    // The controller asked for the canary's pods, by node and by the gate's selector.
    let named = sim.store().requests_named(Some(AGENT));
    assert!(named.contains_key("LIST pods"), "{named:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gate_pods_ready_pass_the_gate() {
    let sim = Sim::start(pod_gate("30s")).await;
    for i in 0..NODES {
        sim.set_pod_ready(i, false);
    }
    let new = sim.change("/etc/good").await;
    let canary = eventually("the canary updated", || {
        let t = sim.targeted(&new);
        (t.len() == 1 && sim.done_on(&t[0], &new)).then(|| t[0].clone())
    })
    .await;
    // Its pods are not Ready: the others wait.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(sim.targeted(&new), [canary]);
    assert_eq!(sim.status()["phase"], "Canary");

    // They come back: the canary passes (its pods looked at again on the gate's poll, as
    // no pod change wakes the controller), then the others update.
    for i in 0..NODES {
        sim.set_pod_ready(i, true);
    }
    eventually("the rollout done", || {
        let st = sim.status();
        (st["phase"] == "Done" && st["lastKnownGood"] == new.as_str()).then_some(())
    })
    .await;
    for n in (0..NODES).map(node_name) {
        assert!(sim.done_on(&n, &new));
    }
}

/// A settled pool with a policy (canaries, a gate on pods) costs no requests: its nodes'
/// pods passed once and are not listed again, and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_pool_with_a_policy_makes_no_requests() {
    let sim = Sim::start(pod_gate("30s")).await;
    let new = sim.change("/etc/good").await;
    eventually("the rollout done", || {
        let st = sim.status();
        (st["phase"] == "Done" && st["lastKnownGood"] == new.as_str()).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = sim.controller_requests();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = sim.controller_requests();
    assert_eq!(before, after, "requests while idle");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_mco_status_says_when_a_closed_window_opens() {
    let sim = Sim::start(json!({})).await;
    // A window that opened twelve hours ago for an hour: closed now, next open in eleven
    // hours (a fixed zone, so no daylight-saving change falls in between).
    let opens = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(12);
    let start = opens
        .to_zoned(jiff::tz::TimeZone::UTC)
        .strftime("%H:%M")
        .to_string();
    sim.set_spec(
        "maintenanceWindows",
        json!([{"start": start, "duration": "1h", "timeZone": "UTC"}]),
    );
    let generation =
        sim.store().get("rolloutpolicies", "", "worker").unwrap()["metadata"]["generation"].clone();
    eventually("the controller has seen the window", || {
        (sim.status()["observedGeneration"] == generation).then_some(())
    })
    .await;
    let new = sim.change("/etc/good").await;
    sim.phase("WaitingForWindow").await;
    assert!(sim.targeted(&new).is_empty());
    insta::assert_snapshot!(
        "a_rollout_waiting_for_its_window",
        sim.kubectl_mco_status().await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_mco_status_names_the_budget_blocking_a_drain() {
    let opts = Options {
        // Reported at once rather than after upstream's hour.
        drain_timeout: Duration::ZERO,
        ..options()
    };
    let sim = Sim::start_with(
        json!({}),
        opts,
        support::cluster::pod_behind_a_blocking_budget,
    )
    .await;
    let new = sim.change("/etc/good").await;
    eventually_or(
        "the other workers updated and worker-0's drain reported blocked",
        || {
            let others = ["worker-1", "worker-2"]
                .iter()
                .all(|n| sim.done_on(n, &new));
            let blocked = annotation(sim.store(), "worker-0", DRAIN_FAILURE).is_some();
            (others && blocked).then_some(())
        },
        || format!("{:?}", sim.store().get("nodes", "", "worker-0")),
    )
    .await;
    assert!(sim.store().get("pods", "apps", "web-0").is_some());
    // Blocked for a second or more, so the view says for how long rather than "just now".
    tokio::time::sleep(Duration::from_millis(1100)).await;
    insta::assert_snapshot!(
        "a_drain_blocked_by_a_budget",
        sim.kubectl_mco_status().await
    );
}
