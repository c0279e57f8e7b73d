//! `kubectl-mco`, the kubectl plugin, run as a process against the in-process API server:
//! `status` on a cluster seeded with each `examples/status` dump prints exactly what the
//! offline `status` prints on a dump of the same stored objects (kinds the server does not
//! serve named on standard error); the one-step actions make exactly their write with `--yes`
//! and none when the answer is no; `--watch` draws a new frame after a change.

use crate::support;

use crate::support::apiserver::{resource, ApiServer};
use crate::support::cluster::repo;
use crate::support::plugin::{kubeconfig, plugin};
use crate::support::{edit, yaml_docs, PATIENCE};
use mco_render::api::node::{FORCE, STATE};
use mco_render::status::{check_pools, render, status, Cluster, Options, Source};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const NOW: &str = "2026-03-04T10:00:00Z";
const EXAMPLES: [&str; 6] = [
    "healthy-rollout",
    "drain-blocked",
    "canary-paused",
    "closed-window",
    "build-running",
    "degraded-node",
];

/// The resource the test server stores a kind under; `None` for kinds it does not serve or
/// status does not read.
fn plural_of(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "MachineConfigPool" => "machineconfigpools",
        "MachineConfig" => "machineconfigs",
        "ControllerConfig" => "controllerconfigs",
        "Node" => "nodes",
        "MachineConfigNode" => "machineconfignodes",
        "Pod" => "pods",
        "Event" => "events",
        "RolloutPolicy" => "rolloutpolicies",
        "MachineOSConfig" => "machineosconfigs",
        "MachineOSBuild" => "machineosbuilds",
        "Job" => "jobs",
        "PodDisruptionBudget" => "poddisruptionbudgets",
        _ => return None,
    })
}

/// A `v1` Event as `events.k8s.io/v1` serves it.
fn events_v1(v: &Value) -> Value {
    if v["apiVersion"] == "events.k8s.io/v1" {
        return v.clone();
    }
    json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": v["metadata"],
        "regarding": v["involvedObject"],
        "reason": v["reason"],
        "note": v["message"],
        "type": v["type"],
        "deprecatedFirstTimestamp": v["firstTimestamp"],
        "deprecatedLastTimestamp": v["lastTimestamp"],
        "deprecatedCount": v["count"],
        "reportingController": v["source"]["component"],
    })
}

/// Stores one object as the cluster it was dumped from held it (its status through the
/// status subresource).
fn store(server: &ApiServer, v: Value) {
    let kind = v["kind"].as_str().unwrap_or("").to_string();
    let Some(plural) = plural_of(&kind) else {
        return;
    };
    let def = resource(plural).unwrap();
    let mut v = if kind == "Event" { events_v1(&v) } else { v };
    if kind == "Job" && v["spec"]["template"].is_null() {
        v["spec"]["template"] = json!({"spec": {
            "containers": [{"name": "image-build", "image": "builder"}],
            "restartPolicy": "Never"}});
    }
    let ns = v["metadata"]["namespace"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let name = v["metadata"]["name"].as_str().unwrap_or("").to_string();
    let status = v.get("status").cloned();
    server
        .store
        .create(def, &ns, v)
        .unwrap_or_else(|e| panic!("{kind} {name}: {e:?}"));
    if let Some(s) = status.filter(|_| def.status) {
        edit(&server.store, plural, &ns, &name, true, |o| o["status"] = s);
    }
}

/// A server holding the objects of `examples/status/<name>` it serves.
async fn seeded(name: &str) -> ApiServer {
    let server = ApiServer::start().await.unwrap();
    let dir = repo(&format!("examples/status/{name}"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    for f in files {
        for doc in yaml_docs(&f) {
            let items = match doc["items"].as_array() {
                Some(items) if doc["kind"].as_str().is_some_and(|k| k.ends_with("List")) => {
                    items.clone()
                }
                _ => vec![doc],
            };
            for item in items {
                store(&server, item);
            }
        }
    }
    server
}

/// Writes what the server stores of every kind status reads as `oc get -o json` lists.
fn dump(server: &ApiServer, dir: &Path) {
    for s in Source::ALL {
        let served = s.served();
        let items: Vec<Value> = server
            .store
            .list(served.plural)
            .into_iter()
            .filter(|v| {
                served
                    .namespace
                    .is_none_or(|ns| v["metadata"]["namespace"] == ns)
            })
            .collect();
        let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
        std::fs::write(
            dir.join(format!("{}.json", served.plural)),
            serde_json::to_string_pretty(&list).unwrap(),
        )
        .unwrap();
    }
}

/// The offline status of a dump folder, as `mco-render status --cluster-dir DIR --now NOW`
/// prints it (the same library calls), with its exit status.
fn offline(dir: &Path, pool: Option<&str>) -> (i32, String) {
    let m = mco_render::load::read_manifests(&[dir.to_path_buf()]).unwrap();
    let c = Cluster::from_manifests(m);
    check_pools(&c, pool).unwrap();
    let view = status(
        &c,
        &Options {
            now: NOW.parse().unwrap(),
            per_node: Duration::from_secs(15 * 60),
            pool: pool.map(str::to_string),
        },
    );
    let text = render::output(&view, render::Format::Text).unwrap();
    (i32::from(view.stuck), text)
}

/// Asserts that every request the plugin made of `server` is one the ClusterRole `role` of
/// `manifests/optional/kubectl-mco-rbac.yaml` grants.
fn granted_by(server: &ApiServer, role: &str) {
    let agent = mco_k8s::kubeclient::user_agent("kubectl-mco", None);
    let requests = server.store.requests_named(Some(&agent));
    assert!(!requests.is_empty(), "no request by {agent}");
    let rules = support::rbac::cluster_role_rules_in("optional/kubectl-mco-rbac.yaml", role);
    assert!(!rules.is_empty(), "no ClusterRole {role}");
    let missing = support::rbac::ungranted(&requests, &rules);
    assert!(missing.is_empty(), "{role} does not grant {missing:?}");
}

/// The writes the server served: every request but GET, LIST and WATCH.
fn writes(server: &ApiServer) -> BTreeMap<String, u64> {
    server
        .store
        .request_counts()
        .into_iter()
        .filter(|(k, _)| !["GET ", "LIST ", "WATCH "].iter().any(|m| k.starts_with(m)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_prints_what_the_offline_command_prints_on_a_dump_of_the_same_objects() {
    for name in EXAMPLES {
        let server = seeded(name).await;
        let dir = tempfile::tempdir().unwrap();
        let dump_dir = dir.path().join("dump");
        std::fs::create_dir(&dump_dir).unwrap();
        dump(&server, &dump_dir);
        let kc = kubeconfig(dir.path(), &server);
        for pool in [None, Some("worker")] {
            let (want_code, want) = offline(&dump_dir, pool);
            let mut args = vec!["status", "--now", NOW];
            if let Some(p) = pool {
                args.extend(["--pool", p]);
            }
            let (code, out, err) = plugin(&kc, &args, "").await;
            assert_eq!(out, want, "{name} {pool:?}: stderr {err}");
            if name == "drain-blocked" {
                // The budget was read live, not only from the dump.
                assert!(out.contains("PodDisruptionBudget shop/db"), "{out}");
            }
            assert_eq!(code, want_code, "{name} {pool:?}: {err}");
            // The kinds the test server does not serve are named, with what they leave out;
            // nothing else is said.
            let warnings: Vec<&str> = err.lines().collect();
            assert_eq!(
                warnings,
                vec![
                    "warning: MachineConfigurations (machineconfigurations.operator.openshift.io) not served by the API server: disruptions are computed with the built-in node disruption policies",
                ],
                "{name}"
            );
        }
        // JSON too.
        let (_, out, _) = plugin(&kc, &["status", "--now", NOW, "-o", "json"], "").await;
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{name}: {e}: {out}"));
        assert_eq!(v["now"], NOW, "{name}");
        assert!(
            v["pools"].as_array().is_some_and(|p| !p.is_empty()),
            "{name}"
        );
        // Reading made no write, and the role for people who read rollouts grants it.
        assert_eq!(writes(&server), BTreeMap::new(), "{name}");
        granted_by(&server, "mco-status-reader");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_finds_the_cluster_as_kubectl_does_and_needs_pools() {
    let server = seeded("healthy-rollout").await;
    let dir = tempfile::tempdir().unwrap();
    let kc = kubeconfig(dir.path(), &server);
    // --kubeconfig and --context, instead of KUBECONFIG and its current context.
    let out = tokio::task::spawn_blocking({
        let kc = kc.clone();
        move || {
            Command::new(env!("CARGO_BIN_EXE_kubectl-mco"))
                .args(["status", "--now", NOW, "--context", "test", "--kubeconfig"])
                .arg(&kc)
                .env("KUBECONFIG", "/nonexistent")
                .env_remove("KUBERNETES_SERVICE_HOST")
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.starts_with("POOL "), "{text}");
    // A context the kubeconfig lacks is an error.
    let (code, _, err) = plugin(&kc, &["status", "--context", "elsewhere"], "").await;
    assert_eq!(code, 2);
    assert!(err.contains("elsewhere"), "{err}");
    // A pool that does not exist.
    let (code, _, err) = plugin(&kc, &["status", "--pool", "infra"], "").await;
    assert_eq!(
        (code, err.as_str()),
        (2, "error: no MachineConfigPool named \"infra\"\n")
    );
    // Without the pools' API there is no view.
    server.store.uninstall("machineconfigpools");
    let (code, out, err) = plugin(&kc, &["status"], "").await;
    assert_eq!((code, out.as_str()), (2, ""));
    assert_eq!(
        err,
        "error: MachineConfigPools (machineconfigpools.machineconfiguration.openshift.io) not served by the API server: no pool can be shown\n"
    );
}

/// Runs an action twice: answered no (nothing written), then with `--yes` (its writes).
async fn act(server: &ApiServer, kc: &Path, args: &[&str]) -> (String, String) {
    let before = writes(server);
    let (code, asked, err) = plugin(kc, args, "n\n").await;
    assert_eq!(code, 1, "{args:?}: {asked}{err}");
    assert!(
        asked.contains("[y/N]") && asked.contains("Nothing written."),
        "{asked}"
    );
    assert_eq!(writes(server), before, "{args:?} answered no");
    let mut yes = args.to_vec();
    yes.push("--yes");
    let (code, out, err) = plugin(kc, &yes, "").await;
    assert_eq!(code, 0, "{yes:?}: {out}{err}");
    assert!(!out.contains("[y/N]"), "{out}");
    (asked, out)
}

fn new_writes(server: &ApiServer, before: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    writes(server)
        .into_iter()
        .filter_map(|(k, n)| {
            let d = n - before.get(&k).copied().unwrap_or(0);
            (d > 0).then_some((k, d))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_and_rollback_make_exactly_their_write() {
    let server = seeded("canary-paused").await;
    let dir = tempfile::tempdir().unwrap();
    let kc = kubeconfig(dir.path(), &server);

    // The canary's failure paused the rollout: resume past it.
    let before = writes(&server);
    let (asked, out) = act(&server, &kc, &["resume", "worker"]).await;
    assert!(
        asked.contains("RolloutPolicy worker: the rollout of rendered-worker-")
            && asked.contains(
                "kubectl patch rolloutpolicy/worker --type merge -p '{\"spec\":{\"resumedAt\":\""
            ),
        "{asked}"
    );
    assert!(out.ends_with("rolloutpolicy/worker patched\n"), "{out}");
    assert_eq!(
        new_writes(&server, &before),
        BTreeMap::from([("PATCH rolloutpolicies".to_string(), 1)])
    );
    let p = server.store.get("rolloutpolicies", "", "worker").unwrap();
    let resumed: jiff::Timestamp = p["spec"]["resumedAt"].as_str().unwrap().parse().unwrap();
    let since: jiff::Timestamp = p["status"]["pause"]["since"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(since <= resumed, "{p}");
    // Asked again before the controller acted: refused, nothing written.
    let before = writes(&server);
    let (code, _, err) = plugin(&kc, &["resume", "worker", "--yes"], "").await;
    assert_eq!(code, 1);
    assert!(err.contains("requested already"), "{err}");
    assert_eq!(new_writes(&server, &before), BTreeMap::new());

    // Back to the last known good config.
    let before = writes(&server);
    let (asked, _) = act(&server, &kc, &["rollback", "worker"]).await;
    assert!(
        asked.contains(
            r#"kubectl patch rolloutpolicy/worker --type merge -p '{"spec":{"rollback":true}}'"#
        ),
        "{asked}"
    );
    assert_eq!(
        new_writes(&server, &before),
        BTreeMap::from([("PATCH rolloutpolicies".to_string(), 1)])
    );
    let p = server.store.get("rolloutpolicies", "", "worker").unwrap();
    assert_eq!(p["spec"]["rollback"], true);

    // A paused pool is unpaused.
    edit(
        &server.store,
        "machineconfigpools",
        "",
        "worker",
        false,
        |p| p["spec"]["paused"] = json!(true),
    );
    edit(&server.store, "rolloutpolicies", "", "worker", false, |p| {
        p["spec"]["rollback"] = json!(false)
    });
    let before = writes(&server);
    let (asked, _) = act(&server, &kc, &["resume", "worker"]).await;
    assert!(
        asked.contains(
            r#"kubectl patch machineconfigpool/worker --type merge -p '{"spec":{"paused":false}}'"#
        ),
        "{asked}"
    );
    assert_eq!(
        new_writes(&server, &before),
        BTreeMap::from([("PATCH machineconfigpools".to_string(), 1)])
    );
    let pool = server
        .store
        .get("machineconfigpools", "", "worker")
        .unwrap();
    assert_eq!(pool["spec"]["paused"], false);

    // Nothing left to resume on master: an error, no write.
    let before = writes(&server);
    let (code, out, err) = plugin(&kc, &["resume", "master", "--yes"], "").await;
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.starts_with("error: nothing to resume: "), "{err}");
    assert_eq!(new_writes(&server, &before), BTreeMap::new());
    // The role for people who steer rollouts grants all of it.
    granted_by(&server, "mco-rollout-operator");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_annotates_and_retry_writes_nothing() {
    let server = seeded("degraded-node").await;
    let dir = tempfile::tempdir().unwrap();
    let kc = kubeconfig(dir.path(), &server);
    let degraded: String = server
        .store
        .list("nodes")
        .into_iter()
        .find(|n| n["metadata"]["annotations"][STATE] == "Degraded")
        .and_then(|n| n["metadata"]["name"].as_str().map(str::to_string))
        .expect("a degraded node in the example");

    // retry: said, not written.
    let before = writes(&server);
    let (code, out, err) = plugin(&kc, &["retry", &degraded], "").await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("nothing to write") && out.contains("tries its update"),
        "{out}"
    );
    assert!(!out.contains("[y/N]"), "{out}");
    assert_eq!(new_writes(&server, &before), BTreeMap::new());

    let before = writes(&server);
    let (asked, out) = act(&server, &kc, &["force", &degraded]).await;
    assert!(
        asked.contains(&format!(
            "kubectl patch node/{degraded} --type merge -p '{{\"metadata\":{{\"annotations\":{{\"{FORCE}\":\""
        )),
        "{asked}"
    );
    assert!(
        out.ends_with(&format!("node/{degraded} patched\n")),
        "{out}"
    );
    assert_eq!(
        new_writes(&server, &before),
        BTreeMap::from([("PATCH nodes".to_string(), 1)])
    );
    let n = server.store.get("nodes", "", &degraded).unwrap();
    assert!(n["metadata"]["annotations"][FORCE].is_string(), "{n}");

    // A node that is fine: nothing to force or retry.
    let fine: String = server
        .store
        .list("nodes")
        .into_iter()
        .find(|n| n["metadata"]["annotations"][STATE] == "Done")
        .and_then(|n| n["metadata"]["name"].as_str().map(str::to_string))
        .expect("a node that is done");
    let before = writes(&server);
    for verb in ["force", "retry"] {
        let (code, _, err) = plugin(&kc, &[verb, &fine, "--yes"], "").await;
        assert_eq!(code, 1, "{verb}");
        assert!(err.contains("is not degraded"), "{verb}: {err}");
    }
    let (code, _, err) = plugin(&kc, &["force", "nowhere", "--yes"], "").await;
    assert_eq!(
        (code, err.as_str()),
        (1, "error: no Node named \"nowhere\"\n")
    );
    assert_eq!(new_writes(&server, &before), BTreeMap::new());
    granted_by(&server, "mco-rollout-operator");
}

/// Kills the watching plugin when the test ends, however it ends.
struct Watching(Child);

impl Drop for Watching {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits for the output seen so far to satisfy `done`.
fn read_until(
    lines: &mpsc::Receiver<String>,
    seen: &mut String,
    what: &str,
    done: impl Fn(&str) -> bool,
) {
    let deadline = std::time::Instant::now() + PATIENCE;
    while !done(seen) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match lines.recv_timeout(left) {
            Ok(l) => {
                seen.push_str(&l);
                seen.push('\n');
            }
            Err(e) => panic!("waiting for {what} ({e}); output so far:\n{seen}"),
        }
    }
}

const HEADER: &str = "Every change: kubectl mco status --watch";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_draws_a_new_frame_after_a_change() {
    let server = seeded("healthy-rollout").await;
    // Watches end within seconds and are made again (from where they were: no LIST), so a
    // kind uninstalled below is seen as gone soon.
    server.store.cap_watch_duration(Duration::from_secs(2));
    let dir = tempfile::tempdir().unwrap();
    let kc = kubeconfig(dir.path(), &server);
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-mco"))
        .args([
            "status",
            "--watch",
            "--now",
            NOW,
            "--min-interval-ms",
            "100",
        ])
        .env("KUBECONFIG", &kc)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _watching = Watching(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    // The first frame: progress bars, the view, the kinds not served.
    read_until(&rx, &mut seen, "the first frame", |s| {
        s.contains(HEADER)
            && s.contains("Nothing is stuck.")
            && s.contains("warning: MachineConfigurations")
    });
    assert!(seen.contains("worker   ["), "{seen}");
    assert!(!seen.contains("Paused:           yes"), "{seen}");
    let frames = seen.matches(HEADER).count();
    let listed = server.store.request_counts();

    // Pausing the pool shows in a new frame.
    edit(
        &server.store,
        "machineconfigpools",
        "",
        "worker",
        false,
        |p| p["spec"]["paused"] = json!(true),
    );
    read_until(&rx, &mut seen, "a frame with the pool paused", |s| {
        s.contains("Paused:           yes") && s.contains("no estimate: paused")
    });
    assert!(seen.matches(HEADER).count() > frames, "{seen}");
    // Drawn from the watches: no LIST after the first ones.
    let lists = |counts: &BTreeMap<String, u64>| -> u64 {
        counts
            .iter()
            .filter(|(k, _)| k.starts_with("LIST "))
            .map(|(_, n)| n)
            .sum()
    };
    assert_eq!(lists(&server.store.request_counts()), lists(&listed));
    assert!(server.store.open_watches() > 0);

    // A kind no longer served is shown as last seen, and said so.
    server.store.uninstall("machineosconfigs");
    read_until(&rx, &mut seen, "the kind no longer served named", |s| {
        s.contains("warning: MachineOSConfigs (machineosconfigs.machineconfiguration.openshift.io) not served by the API server: layered pools' builds are not seen (shown as last seen)")
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_exits_when_done_if_asked() {
    let server = seeded("healthy-rollout").await;
    let dir = tempfile::tempdir().unwrap();
    let kc = kubeconfig(dir.path(), &server);
    // The master pool is done: one frame, exit 0.
    let (code, out, err) = plugin(
        &kc,
        &[
            "status",
            "--watch",
            "--exit-when-done",
            "--pool",
            "master",
            "--now",
            NOW,
        ],
        "",
    )
    .await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.matches(HEADER).count(), 1, "{out}");
    assert!(
        out.contains(&format!(
            "master   {}",
            "[".to_string() + &"#".repeat(30) + "]"
        )),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_of_a_pool_that_is_not_there_stops() {
    let server = seeded("healthy-rollout").await;
    let dir = tempfile::tempdir().unwrap();
    let kc = kubeconfig(dir.path(), &server);
    let (code, out, err) = plugin(&kc, &["status", "--watch", "--pool", "infra"], "").await;
    assert_eq!((code, out.as_str()), (2, ""));
    assert_eq!(err, "error: no MachineConfigPool named \"infra\"\n");
}

/// A kubeconfig in `dir` naming the server at `url`.
fn kubeconfig_for(dir: &Path, url: &str) -> PathBuf {
    let path = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {url}\n\
         users:\n- name: u\n  user: {{}}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n\
         current-context: c\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// A port of 127.0.0.1 nothing listens on (it was bound, then let go).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A server that answers every request `401 Unauthorized` with the API server's Status.
async fn refusing_logins() -> (u16, tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let body = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#;
                let answer = format!(
                    "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(answer.as_bytes()).await;
            });
        }
    });
    (port, task)
}

/// `kubectl mco ARGS` against the server of `kc`, its exit status and standard error with
/// `port` written `<port>`, and how long it took.
async fn failing(kc: &Path, args: &[&str], port: u16) -> (i32, String, Duration) {
    let started = std::time::Instant::now();
    let (code, out, err) = plugin(kc, args, "").await;
    assert_eq!(out, "", "{args:?}");
    (
        code,
        err.replace(&format!(":{port}"), ":<port>"),
        started.elapsed(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_failures_name_the_server_and_the_cause_as_kubectl_does() {
    let dir = tempfile::tempdir().unwrap();
    let port = closed_port();
    let kc = kubeconfig_for(dir.path(), &format!("https://127.0.0.1:{port}"));
    let mut seen = String::new();
    // The server refuses the connection: status, the actions, the watch.
    let (code, err, _) = failing(&kc, &["status"], port).await;
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "The connection to the server 127.0.0.1:<port> was refused - did you specify the right host or port?\n"
    );
    seen += &format!("$ kubectl mco status\n{err}(exit {code})\n\n");
    let (code, err, _) = failing(&kc, &["resume", "worker", "--yes"], port).await;
    assert_eq!(code, 2);
    seen += &format!("$ kubectl mco resume worker --yes\n{err}(exit {code})\n\n");
    // Waiting for the pools to be done on a server never reached ends at --timeout, with
    // its own exit status, saying why.
    let args = ["status", "--watch", "--exit-when-done", "--timeout", "2s"];
    let (code, err, took) = failing(&kc, &args, port).await;
    assert_eq!(code, 3, "{err}");
    assert!(took < Duration::from_secs(30), "took {took:?}");
    assert!(took >= Duration::from_secs(2), "took {took:?}");
    seen += &format!("$ kubectl mco {}\n{err}(exit {code})\n\n", args.join(" "));
    // A server that refuses the login.
    let (port, server) = refusing_logins().await;
    let kc = kubeconfig_for(dir.path(), &format!("http://127.0.0.1:{port}"));
    let (code, err, _) = failing(&kc, &["status"], port).await;
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "error: You must be logged in to the server (Unauthorized)\n"
    );
    seen += &format!("$ kubectl mco status  # 401\n{err}(exit {code})\n\n");
    let (code, err, _) = failing(&kc, &["force", "worker-0", "--yes"], port).await;
    assert_eq!(code, 2);
    seen += &format!("$ kubectl mco force worker-0 --yes  # 401\n{err}(exit {code})\n");
    server.abort();
    insta::assert_snapshot!(seen);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_ends_a_watch_whose_pools_are_not_done() {
    let server = seeded("drain-blocked").await;
    let dir = tempfile::tempdir().unwrap();
    let kc = kubeconfig(dir.path(), &server);
    let args = [
        "status",
        "--watch",
        "--exit-when-done",
        "--timeout",
        "1500ms",
        "--now",
        NOW,
    ];
    let started = std::time::Instant::now();
    let (code, out, err) = plugin(&kc, &args, "").await;
    assert_eq!(code, 3, "{out}{err}");
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(out.matches(HEADER).count(), 1, "{out}");
    assert!(
        err.ends_with("error: timed out after 1.5s: not every pool is done\n"),
        "{err}"
    );
    // A timeout without waiting for the pools to be done means nothing.
    let (code, _, err) = plugin(&kc, &["status", "--watch", "--timeout", "1s"], "").await;
    assert_eq!(code, 2);
    assert!(err.contains("--exit-when-done"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dump_writes_what_the_offline_status_reads() {
    for name in ["drain-blocked", "canary-paused"] {
        let server = seeded(name).await;
        let dir = tempfile::tempdir().unwrap();
        let kc = kubeconfig(dir.path(), &server);
        let dump_dir = dir.path().join("dump");
        let (code, out, err) = plugin(&kc, &["dump", dump_dir.to_str().unwrap()], "").await;
        assert_eq!(code, 0, "{name}: {err}");
        // A file per kind served, as docs/src/cluster-dump.md's commands write them; the kind
        // the test server does not serve is named, with what a view misses without it.
        let mut files: Vec<String> = std::fs::read_dir(&dump_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let mut want: Vec<String> = Source::ALL
            .iter()
            .filter(|s| **s != Source::MachineConfigurations)
            .map(|s| format!("{}.yaml", s.served().plural))
            .collect();
        want.sort();
        assert_eq!(files, want, "{name}");
        assert_eq!(out.lines().count(), want.len(), "{out}");
        assert!(
            out.contains(&format!(
                "{} (",
                dump_dir.join("machineconfigpools.yaml").display()
            )),
            "{out}"
        );
        assert_eq!(
            err,
            "warning: MachineConfigurations (machineconfigurations.operator.openshift.io) not served by the API server: disruptions are computed with the built-in node disruption policies\n"
        );
        // Each file is the List kubectl prints, and the offline status of the dump is the
        // live one.
        let pools: Value = serde_yaml_ng::from_str(
            &std::fs::read_to_string(dump_dir.join("machineconfigpools.yaml")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            (pools["apiVersion"].as_str(), pools["kind"].as_str()),
            (Some("v1"), Some("List"))
        );
        assert_eq!(pools["items"][0]["kind"], "MachineConfigPool");
        let (want_code, want) = offline(&dump_dir, None);
        let (code, live, _) = plugin(&kc, &["status", "--now", NOW], "").await;
        assert_eq!((code, live), (want_code, want), "{name}");
        // Reading needs no more than the role for people who read rollouts.
        assert_eq!(writes(&server), BTreeMap::new(), "{name}");
        granted_by(&server, "mco-status-reader");
    }
    // On a server that cannot be reached: kubectl's words, no folder.
    let dir = tempfile::tempdir().unwrap();
    let port = closed_port();
    let kc = kubeconfig_for(dir.path(), &format!("https://127.0.0.1:{port}"));
    let dump_dir = dir.path().join("dump");
    let (code, err, _) = failing(&kc, &["dump", dump_dir.to_str().unwrap()], port).await;
    assert_eq!(
        (code, err.as_str()),
        (2, "The connection to the server 127.0.0.1:<port> was refused - did you specify the right host or port?\n")
    );
    assert!(!dump_dir.exists());
}
