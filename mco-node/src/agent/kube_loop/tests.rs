//! The kube-rs wiring against a small fake API server behind tower-test's mock service.

use super::*;
use crate::host::RecordingHost;
use http::{Request, Response};
use kube::client::Body;
use mco_render::api::node::{
    CURRENT_CONFIG, DESIRED_CONFIG, DESIRED_DRAIN, LAST_APPLIED_DRAIN, STATE,
};
use serde_json::{json, Value};
use std::pin::pin;
use std::sync::{Arc, Mutex};

/// What the fake API server holds, and every request it got (method, path, body).
#[derive(Default)]
struct Fake {
    node: Value,
    machine_configs: BTreeMap<String, Value>,
    log: Vec<(String, String, Value)>,
    events: Vec<(String, String, Value)>,
    /// The node's MachineConfigNode.
    mcn: Option<Value>,
    /// The MachineConfigNode requests (see [`mcn_requests`]).
    mcn_log: Vec<(String, String, Value)>,
    /// A file whose presence is noted at each Node PATCH, in [`Fake::seen_at_node_patch`].
    watched_file: Option<std::path::PathBuf>,
    seen_at_node_patch: Vec<bool>,
    /// The server does not serve MachineConfigNodes (answers as kube-apiserver does).
    mcn_absent: bool,
}

const MCN_PATH: &str = "/apis/machineconfiguration.openshift.io/v1/machineconfignodes";

type Shared = Arc<Mutex<Fake>>;

fn lock(f: &Shared) -> std::sync::MutexGuard<'_, Fake> {
    f.lock().unwrap_or_else(|e| e.into_inner())
}

fn respond(status: u16, body: &Value) -> Response<Body> {
    let mut r = Response::new(Body::from(body.to_string().into_bytes()));
    *r.status_mut() = http::StatusCode::from_u16(status).unwrap_or_default();
    r
}

/// kube-apiserver's answer for a resource whose CRD is not installed (Go's `http.NotFound`).
fn page_not_found() -> Response<Body> {
    let mut r = Response::new(Body::from(b"404 page not found\n".to_vec()));
    *r.status_mut() = http::StatusCode::NOT_FOUND;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

fn not_found(name: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
           "message": format!("{name} not found"), "reason": "NotFound", "code": 404})
}

/// Starts the fake: GET machineconfigs/<name>, GET and merge-PATCH nodes/w1.
fn fake_client(fake: Shared) -> (Client, tokio::task::JoinHandle<()>) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let task = tokio::spawn(async move {
        let mut handle = pin!(handle);
        while let Some((req, send)) = handle.next_request().await {
            let method = req.method().to_string();
            let path = req.uri().path().to_string();
            let bytes = req.into_body().collect_bytes().await.unwrap_or_default();
            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let mut f = lock(&fake);
            f.log.push((method.clone(), path.clone(), body.clone()));
            let mc_prefix = "/apis/machineconfiguration.openshift.io/v1/machineconfigs/";
            let answer = match (method.as_str(), path.as_str()) {
                (_, p) if f.mcn_absent && p.starts_with(MCN_PATH) => page_not_found(),
                ("GET", p) if p == format!("{MCN_PATH}/w1") => match &f.mcn {
                    Some(m) => respond(200, m),
                    None => respond(404, &not_found("w1")),
                },
                ("POST", MCN_PATH) => {
                    let mut m = body.clone();
                    m["metadata"]["generation"] = json!(1);
                    f.mcn = Some(m.clone());
                    respond(201, &m)
                }
                ("PATCH", p) if p.starts_with(MCN_PATH) => {
                    let key = if p.ends_with("/status") {
                        "status"
                    } else {
                        "spec"
                    };
                    match f.mcn.as_mut() {
                        Some(m) => {
                            m[key] = body[key].clone();
                            let m = m.clone();
                            respond(200, &m)
                        }
                        None => respond(404, &not_found("w1")),
                    }
                }
                ("GET", p) if p.starts_with(mc_prefix) => {
                    let name = &p[mc_prefix.len()..];
                    match f.machine_configs.get(name) {
                        Some(mc) => respond(200, mc),
                        None => respond(404, &not_found(name)),
                    }
                }
                ("GET", "/api/v1/nodes/w1") => respond(200, &f.node),
                ("PATCH", "/api/v1/nodes/w1") => {
                    if let Some(w) = f.watched_file.clone() {
                        f.seen_at_node_patch.push(w.exists());
                    }
                    let annos = &body["metadata"]["annotations"];
                    if let Some(m) = annos.as_object() {
                        for (k, v) in m {
                            let target = &mut f.node["metadata"]["annotations"];
                            match v {
                                Value::Null => {
                                    if let Some(o) = target.as_object_mut() {
                                        o.remove(k);
                                    }
                                }
                                v => target[k] = v.clone(),
                            }
                        }
                    }
                    respond(200, &f.node)
                }
                _ => respond(404, &not_found(&path)),
            };
            send.send_response(answer);
        }
    });
    (Client::new(service, "default"), task)
}

fn machine_config(name: &str, files: &[(&str, &str)]) -> Value {
    let files: Vec<Value> = files
        .iter()
        .map(|(p, d)| json!({"path": p, "contents": {"source": format!("data:,{d}")}}))
        .collect();
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": name},
        "spec": {"config": {"ignition": {"version": "3.4.0"}, "storage": {"files": files}}}
    })
}

fn kube_node(annos: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": "w1", "uid": "uid-w1", "annotations": annos,
                        "labels": {"node-role.kubernetes.io/worker": ""}}})
}

fn node_of(f: &Shared) -> Node {
    match serde_json::from_value(lock(f).node.clone()) {
        Ok(n) => n,
        Err(e) => panic!("fake node: {e}"),
    }
}

/// A root already on `r1` (applied without a cluster).
/// Marks `root` an rpm-ostree host (`/run/ostree-booted`).
fn rpm_ostree_host(root: &std::path::Path) {
    std::fs::create_dir_all(root.join("run")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(root.join("run/ostree-booted"), "").unwrap_or_else(|e| panic!("{e}"));
}

/// `rpm-ostree status --json` of a host booted into `image`.
fn booted_status(image: &str) -> String {
    json!({"deployments": [{"id": "rhcos-1.0", "osname": "rhcos", "checksum": "1",
        "booted": true, "staged": false,
        "container-image-reference": format!("ostree-unverified-registry:{image}")}],
        "transaction": null})
    .to_string()
}

fn root_on(mc: &Value) -> (tempfile::TempDir, HostRoot) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let root = HostRoot::new(dir.path()).unwrap_or_else(|e| panic!("root: {e}"));
    let Ok(r1) = DesiredConfig::from_bytes(mc.to_string().as_bytes(), "r1") else {
        panic!("r1 decodes");
    };
    let opts = ApplyOptions {
        check_drift: false,
        reboot: crate::apply::RebootMode::Deferred,
        drained: true,
        policies: None,
    };
    let out = run_update(
        &root,
        &mut RecordingHost::new(),
        &DesiredConfig::empty(),
        &r1,
        opts,
        None,
    );
    let on_disk = read_current(&root).map(|c| c.name().to_string());
    assert_eq!(on_disk.ok().as_deref(), Some("r1"), "{:?}", out.log);
    (dir, root)
}

fn setup() -> (Shared, tempfile::TempDir, HostRoot) {
    let r1 = machine_config(
        "r1",
        &[("/var/lib/kubelet/config.json", "a"), ("/etc/foo", "1")],
    );
    let r2 = machine_config(
        "r2",
        &[("/var/lib/kubelet/config.json", "b"), ("/etc/foo", "1")],
    );
    let r3 = machine_config(
        "r3",
        &[("/var/lib/kubelet/config.json", "a"), ("/etc/foo", "2")],
    );
    let (dir, root) = root_on(&r1);
    let fake = Fake {
        node: Value::Null,
        machine_configs: [("r1", r1), ("r2", r2), ("r3", r3)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        ..Fake::default()
    };
    (Arc::new(Mutex::new(fake)), dir, root)
}

/// The requests since the last call, Events and MachineConfigNode requests left out (see
/// [`events`] and [`mcn_requests`]).
fn requests(f: &Shared) -> Vec<(String, String, Value)> {
    let log = std::mem::take(&mut lock(f).log);
    let (events, rest): (Vec<_>, Vec<_>) = log.into_iter().partition(|r| r.1.contains("/events"));
    let (mcns, rest): (Vec<_>, Vec<_>) = rest
        .into_iter()
        .partition(|r| r.1.contains("/machineconfignodes"));
    lock(f).events.extend(events);
    lock(f).mcn_log.extend(mcns);
    rest
}

/// The MachineConfigNode requests so far (method and path).
fn mcn_requests(f: &Shared) -> Vec<(String, String)> {
    let _ = requests(f);
    lock(f)
        .mcn_log
        .iter()
        .map(|r| (r.0.clone(), r.1.clone()))
        .collect()
}

/// The stored MachineConfigNode's condition statuses by type.
fn mcn_conditions(f: &Shared) -> BTreeMap<String, String> {
    let mcn = lock(f).mcn.clone().unwrap_or(Value::Null);
    mcn["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["type"].as_str().unwrap_or("").to_string(),
                c["status"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// The reasons of the Events recorded so far.
fn events(f: &Shared) -> Vec<String> {
    let _ = requests(f);
    lock(f)
        .events
        .iter()
        .filter_map(|e| e.2["reason"].as_str().map(str::to_string))
        .collect()
}

/// Takes the agent through an update that drains and reboots: the drain asked, granted as
/// the controller grants it, the update applied up to the reboot.
async fn updates_through_a_drain_to_a_reboot(
    agent: &mut Agent<RecordingHost>,
    fake: &Shared,
    config: &str,
) {
    let first = agent.sync(node_of(fake)).await;
    assert_eq!(first.ok(), Some(Synced::Waiting(format!("drain-{config}"))));
    lock(fake).node["metadata"]["annotations"][LAST_APPLIED_DRAIN] =
        json!(format!("drain-{config}"));
    let applied = agent.sync(node_of(fake)).await;
    assert_eq!(applied.ok(), Some(Synced::Rebooting));
}

fn annotation_patch(k: &str, v: &str) -> Value {
    json!({"metadata": {"annotations": {k: v}}})
}

#[tokio::test]
async fn rebootless_update_through_the_api() {
    let (fake, dir, root) = setup();
    lock(&fake).node = kube_node(json!({
        CURRENT_CONFIG: "r1", DESIRED_CONFIG: "r2", STATE: "Done",
        DESIRED_DRAIN: "uncordon-r1", LAST_APPLIED_DRAIN: "uncordon-r1",
    }));
    let (client, server) = fake_client(fake.clone());
    let mut agent = Agent::new(client, root, RecordingHost::new(), AgentOptions::new("w1"));

    let first = agent.sync(node_of(&fake)).await;
    assert_eq!(first.ok(), Some(Synced::Waiting("uncordon-r2".into())));
    let log = requests(&fake);
    let node_path = "/api/v1/nodes/w1".to_string();
    assert_eq!(
        log,
        vec![
            (
                "GET".into(),
                "/apis/machineconfiguration.openshift.io/v1/machineconfigs/r2".into(),
                Value::Null
            ),
            (
                "PATCH".into(),
                node_path.clone(),
                annotation_patch(STATE, "Working")
            ),
            (
                "PATCH".into(),
                node_path.clone(),
                annotation_patch(DESIRED_DRAIN, "uncordon-r2")
            ),
        ]
    );
    let kubelet = std::fs::read_to_string(dir.path().join("var/lib/kubelet/config.json"));
    assert_eq!(kubelet.ok().as_deref(), Some("b"));
    assert!(agent.host().calls.is_empty(), "{:?}", agent.host().calls);

    // The controller uncordons; the agent reports Done.
    lock(&fake).node["metadata"]["annotations"][LAST_APPLIED_DRAIN] = json!("uncordon-r2");
    let second = agent.sync(node_of(&fake)).await;
    assert_eq!(
        second.ok(),
        Some(Synced::Idle("on desired config r2".into()))
    );
    let log = requests(&fake);
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0].0, "PATCH");
    assert_eq!(
        log[0].2,
        json!({"metadata": {"annotations": {
            CURRENT_CONFIG: "r2", "machineconfiguration.openshift.io/currentImage": null,
            "machineconfiguration.openshift.io/reason": "", STATE: "Done"}}})
    );
    let n = node_of(&fake);
    assert!(n.is_node_done());
    assert_eq!(events(&fake), vec!["NodeDone"]);

    // The MachineConfigNode: created once, owned by the Node, its status patched per phase.
    let mcn_log = mcn_requests(&fake);
    let mcn_path = format!("{MCN_PATH}/w1");
    assert_eq!(mcn_log[0], ("GET".to_string(), mcn_path.clone()));
    assert_eq!(mcn_log[1], ("POST".to_string(), MCN_PATH.to_string()));
    assert!(mcn_log.contains(&("PATCH".to_string(), format!("{mcn_path}/status"))));
    assert_eq!(
        mcn_log.iter().filter(|r| r.0 == "POST").count(),
        1,
        "{mcn_log:?}"
    );
    let mcn = lock(&fake).mcn.clone().unwrap_or(Value::Null);
    assert_eq!(
        mcn["metadata"]["ownerReferences"][0],
        json!({"apiVersion": "v1", "kind": "Node", "name": "w1", "uid": "uid-w1"})
    );
    assert_eq!(
        mcn["spec"],
        json!({"node": {"name": "w1"}, "pool": {"name": "worker"},
               "configVersion": {"desired": "r2"}})
    );
    assert_eq!(
        mcn["status"]["configVersion"],
        json!({"current": "r2", "desired": "r2"})
    );
    let conds = mcn_conditions(&fake);
    assert_eq!(conds.len(), 14, "{conds:?}");
    assert_eq!(conds["Updated"], "True");
    assert!(
        conds.iter().all(|(t, s)| t == "Updated" || s == "False"),
        "{conds:?}"
    );
    let post = &mcn["status"]["conditions"]
        .as_array()
        .and_then(|cs| {
            cs.iter()
                .find(|c| c["type"] == "UpdatePostActionComplete")
                .cloned()
        })
        .unwrap_or(Value::Null);
    assert_eq!(
        post["message"],
        "Action during update to r2: Changes do not require a reboot"
    );
    drop(agent);
    let _ = server.await;
}

#[tokio::test]
async fn rebooting_update_asks_for_a_drain_then_reboots() {
    let (fake, _dir, root) = setup();
    lock(&fake).node = kube_node(json!({
        CURRENT_CONFIG: "r1", DESIRED_CONFIG: "r3", STATE: "Done",
    }));
    let (client, server) = fake_client(fake.clone());
    let mut agent = Agent::new(client, root, RecordingHost::new(), AgentOptions::new("w1"));
    let first = agent.sync(node_of(&fake)).await;
    assert_eq!(first.ok(), Some(Synced::Waiting("drain-r3".into())));
    let patches: Vec<Value> = requests(&fake)
        .into_iter()
        .filter(|r| r.0 == "PATCH")
        .map(|r| r.2)
        .collect();
    assert_eq!(
        patches,
        vec![
            annotation_patch(STATE, "Working"),
            annotation_patch(DESIRED_DRAIN, "drain-r3")
        ]
    );
    assert!(agent.host().calls.is_empty());

    // Drained: the agent applies, marks the node Rebooting and reboots.
    lock(&fake).node["metadata"]["annotations"][LAST_APPLIED_DRAIN] = json!("drain-r3");
    let second = agent.sync(node_of(&fake)).await;
    assert_eq!(second.ok(), Some(Synced::Rebooting));
    let log = requests(&fake);
    // r3 came from the cache: one write, no fetch.
    assert_eq!(
        log,
        vec![(
            "PATCH".into(),
            "/api/v1/nodes/w1".into(),
            annotation_patch(super::super::POST_CONFIG_ACTION, "Rebooting")
        )]
    );
    assert_eq!(agent.host().calls, vec!["reboot".to_string()]);
    assert_eq!(events(&fake), vec!["Cordon", "Drain", "Reboot"]);

    // After the reboot: clear the marker, ask for the uncordon.
    let third = agent.sync(node_of(&fake)).await;
    assert_eq!(third.ok(), Some(Synced::Waiting("uncordon-r3".into())));
    let patches: Vec<Value> = requests(&fake).into_iter().map(|r| r.2).collect();
    assert_eq!(
        patches,
        vec![
            annotation_patch(super::super::POST_CONFIG_ACTION, ""),
            annotation_patch(DESIRED_DRAIN, "uncordon-r3")
        ]
    );
    drop(agent);
    let _ = server.await;
}

#[tokio::test]
async fn missing_desired_config_waits_without_writing() {
    let (fake, _dir, root) = setup();
    lock(&fake).node = kube_node(json!({
        CURRENT_CONFIG: "r1", DESIRED_CONFIG: "rendered-gone", STATE: "Done",
    }));
    let (client, server) = fake_client(fake.clone());
    let mut agent = Agent::new(client, root, RecordingHost::new(), AgentOptions::new("w1"));
    let r = agent.sync(node_of(&fake)).await;
    assert_eq!(
        r.ok(),
        Some(Synced::Idle(
            "desired config rendered-gone is not available".into()
        ))
    );
    let log = requests(&fake);
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].0, "GET");
    drop(agent);
    let _ = server.await;
}

#[tokio::test]
async fn failed_apply_reports_degraded_and_backs_off() {
    let (fake, dir, root) = setup();
    // Drift: the disk no longer matches r1, so the update is refused.
    std::fs::write(dir.path().join("etc/foo"), "tampered").unwrap_or_default();
    lock(&fake).node = kube_node(json!({
        CURRENT_CONFIG: "r1", DESIRED_CONFIG: "r2", STATE: "Done",
    }));
    let (client, server) = fake_client(fake.clone());
    let mut agent = Agent::new(client, root, RecordingHost::new(), AgentOptions::new("w1"));
    let r = agent.sync(node_of(&fake)).await;
    assert_eq!(r.ok(), Some(Synced::Retrying));
    let n = node_of(&fake);
    assert_eq!(n.annotation(STATE), Some("Degraded"));
    let reason = n
        .annotation("machineconfiguration.openshift.io/reason")
        .unwrap_or("");
    assert!(reason.contains("/etc/foo"), "{reason}");
    requests(&fake);
    // Within the back-off the agent does not try again (and writes nothing).
    let again = agent.sync(node_of(&fake)).await;
    assert_eq!(again.ok(), Some(Synced::Retrying));
    assert!(requests(&fake).is_empty());
    drop(agent);
    let _ = server.await;
}

#[tokio::test]
async fn drain_timeout_reports_the_pods_the_controller_names() {
    let (fake, _dir, root) = setup();
    lock(&fake).node = kube_node(json!({
        CURRENT_CONFIG: "r1", DESIRED_CONFIG: "r3", STATE: "Done",
    }));
    let (client, server) = fake_client(fake.clone());
    let mut opts = AgentOptions::new("w1");
    opts.drain_timeout = std::time::Duration::ZERO;
    let mut agent = Agent::new(client, root, RecordingHost::new(), opts);
    let first = agent.sync(node_of(&fake)).await;
    assert_eq!(first.ok(), Some(Synced::Waiting("drain-r3".into())));
    requests(&fake);
    // The controller could not evict a pod and said which.
    lock(&fake).node["metadata"]["annotations"][DRAIN_FAILURE] = json!(
        "failed to drain node w1: 1 pod(s) could not be evicted (disruption budget or timeout): apps/web-1"
    );
    std::thread::sleep(std::time::Duration::from_millis(2));
    let second = agent.sync(node_of(&fake)).await;
    assert_eq!(second.ok(), Some(Synced::Waiting("drain-r3".into())));
    let n = node_of(&fake);
    assert_eq!(n.annotation(STATE), Some("Degraded"));
    assert_eq!(
        n.annotation("machineconfiguration.openshift.io/reason"),
        Some("failed to drain node: w1 after 1 hour: failed to drain node w1: 1 pod(s) could not be evicted (disruption budget or timeout): apps/web-1")
    );
    drop(agent);
    let _ = server.await;
}

#[tokio::test]
async fn a_node_back_on_another_os_image_is_degraded_not_uncordoned() {
    const WANT: &str = "quay.io/ocp/os@sha256:bbbb";
    const BOOTED: &str = "quay.io/ocp/os@sha256:aaaa";
    let mut r1 = machine_config("r1", &[("/etc/foo", "1")]);
    r1["spec"]["osImageURL"] = json!(WANT);
    // On r1 already (its OS image is not there yet: applying it here would need rpm-ostree).
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let root = HostRoot::new(dir.path()).unwrap_or_else(|e| panic!("root: {e}"));
    let Ok(on_disk) = DesiredConfig::from_bytes(r1.to_string().as_bytes(), "r1") else {
        panic!("r1 decodes");
    };
    let written = root.write_atomic(
        crate::state::CURRENT_CONFIG,
        &on_disk.to_bytes(),
        0o644,
        None,
        0o755,
        false,
        &mut Default::default(),
    );
    assert!(written.is_ok(), "{written:?}");
    // An rpm-ostree host.
    rpm_ostree_host(dir.path());
    let fake: Shared = Arc::new(Mutex::new(Fake::default()));
    lock(&fake).machine_configs.insert("r1".into(), r1);
    // Back from the reboot into r1: the drain done, no uncordon asked yet.
    lock(&fake).node = kube_node(json!({
        CURRENT_CONFIG: "r0", DESIRED_CONFIG: "r1", STATE: "Working",
        DESIRED_DRAIN: "drain-r1", LAST_APPLIED_DRAIN: "drain-r1",
    }));
    let (client, server) = fake_client(fake.clone());
    let mut host = RecordingHost::new();
    host.respond("rpm-ostree status --json", &booted_status(BOOTED));
    let mut agent = Agent::new(client, root, host, AgentOptions::new("w1"));

    let synced = agent.sync(node_of(&fake)).await;
    assert_eq!(
        synced.ok(),
        Some(Synced::Idle("booted OS image does not match r1".into()))
    );
    let reason = format!(
        "unexpected on-disk state validating against r1: expected target osImageURL \"{WANT}\", booted into \"{BOOTED}\""
    );
    let log = requests(&fake);
    let patches: Vec<&Value> = log
        .iter()
        .filter(|r| r.0 == "PATCH")
        .map(|r| &r.2)
        .collect();
    assert_eq!(
        patches,
        vec![
            &json!({"metadata": {"annotations": {STATE: "Degraded", "machineconfiguration.openshift.io/reason": reason}}})
        ]
    );
    let annos = lock(&fake).node["metadata"]["annotations"].clone();
    assert_eq!(annos[DESIRED_DRAIN], json!("drain-r1"), "not uncordoned");
    assert_eq!(
        agent.host().calls,
        ["rpm-ostree status --json", "rpm-ostree status --json"]
    );

    // Booted into the right image (after a fix): the update completes.
    agent.host.outputs.clear();
    agent
        .host
        .respond("rpm-ostree status --json", &booted_status(WANT));
    let synced = agent.sync(node_of(&fake)).await;
    assert_eq!(synced.ok(), Some(Synced::Waiting("uncordon-r1".into())));
    let annos = lock(&fake).node["metadata"]["annotations"].clone();
    assert_eq!(annos[DESIRED_DRAIN], json!("uncordon-r1"));
    server.abort();
}

#[tokio::test]
async fn an_os_update_records_started_and_staged_around_the_apply() {
    let (fake, _dir, root) = setup();
    rpm_ostree_host(root.base());
    let mut r4 = machine_config(
        "r4",
        &[("/var/lib/kubelet/config.json", "a"), ("/etc/foo", "1")],
    );
    r4["spec"]["osImageURL"] = json!("quay.io/ocp/os@sha256:cccc");
    r4["spec"]["kernelArguments"] = json!(["nosmt"]);
    lock(&fake).machine_configs.insert("r4".into(), r4);
    lock(&fake).node = kube_node(json!({
        CURRENT_CONFIG: "r1", DESIRED_CONFIG: "r4", STATE: "Done",
    }));
    let (client, server) = fake_client(fake.clone());
    let mut agent = Agent::new(client, root, RecordingHost::new(), AgentOptions::new("w1"));
    updates_through_a_drain_to_a_reboot(&mut agent, &fake, "r4").await;
    let _ = requests(&fake);
    assert_eq!(
        events(&fake),
        vec![
            "Cordon",
            "Drain",
            "OSUpdateStarted",
            "OSUpdateStaged",
            "Reboot"
        ]
    );
    let notes: Vec<Value> = lock(&fake)
        .events
        .iter()
        .map(|e| e.2["note"].clone())
        .collect();
    assert_eq!(notes[2], "Upgrading OS; Changing kernel arguments");
    assert_eq!(notes[3], "Changes to OS staged");
    drop(agent);
    let _ = server.await;
}

/// An rpm-ostree host Done and uncordoned on r1, whose osImageURL is `image`.
fn idle_on_image(image: &str) -> (Shared, tempfile::TempDir, HostRoot) {
    let mut r1 = machine_config("r1", &[("/etc/foo", "1")]);
    r1["spec"]["osImageURL"] = json!(image);
    let (dir, root) = root_on(&r1);
    rpm_ostree_host(root.base());
    let fake: Shared = Arc::new(Mutex::new(Fake::default()));
    lock(&fake).machine_configs.insert("r1".into(), r1);
    lock(&fake).node = kube_node(json!({
        CURRENT_CONFIG: "r1", DESIRED_CONFIG: "r1", STATE: "Done",
        DESIRED_DRAIN: "uncordon-r1", LAST_APPLIED_DRAIN: "uncordon-r1",
    }));
    (fake, dir, root)
}

#[tokio::test]
async fn an_idle_node_booted_into_another_image_is_degraded_at_start_up() {
    const WANT: &str = "quay.io/ocp/os@sha256:bbbb";
    const BOOTED: &str = "quay.io/ocp/os@sha256:aaaa";
    let (fake, _dir, root) = idle_on_image(WANT);
    let (client, server) = fake_client(fake.clone());
    let mut host = RecordingHost::new();
    host.respond("rpm-ostree status --json", &booted_status(BOOTED));
    let mut agent = Agent::new(client, root, host, AgentOptions::new("w1"));
    let synced = agent.sync(node_of(&fake)).await;
    assert!(matches!(synced, Ok(Synced::Idle(_))), "{synced:?}");
    let annos = lock(&fake).node["metadata"]["annotations"].clone();
    assert_eq!(annos[STATE], "Degraded");
    let reason = annos["machineconfiguration.openshift.io/reason"]
        .as_str()
        .unwrap_or("");
    assert!(reason.contains(WANT) && reason.contains(BOOTED), "{reason}");
    // Reported once: the next sync finds the node saying so and writes nothing.
    let _ = requests(&fake);
    let again = agent.sync(node_of(&fake)).await;
    assert!(matches!(again, Ok(Synced::Idle(_))), "{again:?}");
    assert!(requests(&fake).iter().all(|r| r.0 != "PATCH"));
    drop(agent);
    let _ = server.await;
}

#[tokio::test]
async fn an_idle_node_on_its_image_is_checked_once_and_left_alone() {
    const WANT: &str = "quay.io/ocp/os@sha256:bbbb";
    let (fake, _dir, root) = idle_on_image(WANT);
    let (client, server) = fake_client(fake.clone());
    let mut host = RecordingHost::new();
    host.respond("rpm-ostree status --json", &booted_status(WANT));
    let mut agent = Agent::new(client, root, host, AgentOptions::new("w1"));
    for _ in 0..3 {
        let synced = agent.sync(node_of(&fake)).await;
        assert!(matches!(synced, Ok(Synced::Idle(_))), "{synced:?}");
    }
    assert_eq!(agent.host().calls, ["rpm-ostree status --json"]);
    assert!(requests(&fake).iter().all(|r| r.0 != "PATCH"));
    drop(agent);
    let _ = server.await;
}

#[tokio::test]
async fn a_machine_that_joined_on_another_os_image_pivots_before_finishing_the_bootstrap() {
    use mco_render::serve::served::NODE_ANNOTATIONS_PATH;
    const WANT: &str = "quay.io/ocp/os@sha256:bbbb";
    const BOOTED: &str = "quay.io/ocp/os@sha256:aaaa";
    let mut r1 = machine_config("r1", &[("/etc/foo", "1")]);
    r1["spec"]["osImageURL"] = json!(WANT);
    // What Ignition left: the files, the node annotations; no currentconfig.
    let (_dir, root) = root_on(&r1);
    std::fs::remove_file(root.base().join("etc/machine-config-daemon/currentconfig"))
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        root.base()
            .join(NODE_ANNOTATIONS_PATH.trim_start_matches('/')),
        json!({CURRENT_CONFIG: "r1", DESIRED_CONFIG: "r1", STATE: "Done"}).to_string(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    rpm_ostree_host(root.base());
    let fake: Shared = Arc::new(Mutex::new(Fake::default()));
    lock(&fake).machine_configs.insert("r1".into(), r1);
    lock(&fake).node = kube_node(json!({}));
    let (client, server) = fake_client(fake.clone());
    let mut host = RecordingHost::new();
    host.respond("rpm-ostree status --json", &booted_status(BOOTED));
    let mut agent = Agent::new(client.clone(), root.clone(), host, AgentOptions::new("w1"));
    let synced = agent.sync(node_of(&fake)).await;
    assert_eq!(synced.ok(), Some(Synced::Rebooting));
    let calls = agent.host().calls.clone();
    let rebase = format!("rpm-ostree rebase --experimental ostree-unverified-registry:{WANT}");
    assert!(calls.contains(&rebase), "{calls:?}");
    assert_eq!(
        calls.last().map(String::as_str),
        Some("reboot"),
        "{calls:?}"
    );
    let annos = lock(&fake).node["metadata"]["annotations"].clone();
    assert_eq!(annos[CURRENT_CONFIG], "r1");
    assert_eq!(annos[super::super::POST_CONFIG_ACTION], "Rebooting");
    assert!(
        root.exists(NODE_ANNOTATIONS_PATH).unwrap_or(false),
        "the bootstrap finishes after the reboot"
    );

    // Booted into the image: the bootstrap finishes and the node completes.
    drop(agent);
    let mut host = RecordingHost::new();
    host.respond("rpm-ostree status --json", &booted_status(WANT));
    let mut agent = Agent::new(client, root.clone(), host, AgentOptions::new("w1"));
    let _ = agent.sync(node_of(&fake)).await;
    assert!(!root.exists(NODE_ANNOTATIONS_PATH).unwrap_or(true));
    assert!(!agent.host().calls.iter().any(|c| c.contains("rebase")));
    let annos = lock(&fake).node["metadata"]["annotations"].clone();
    assert_eq!(annos[super::super::POST_CONFIG_ACTION], "");
    drop(agent);
    let _ = server.await;
}

#[tokio::test]
async fn a_joining_node_reports_done_only_once_its_annotations_file_is_kept() {
    use crate::firstboot::NODE_ANNOTATIONS_BAK_PATH;
    use mco_render::serve::served::NODE_ANNOTATIONS_PATH;
    let r1 = machine_config("r1", &[("/etc/foo", "1")]);
    // What Ignition left on a plain host: the files, the node annotations; no currentconfig.
    let (_dir, root) = root_on(&r1);
    std::fs::remove_file(root.base().join("etc/machine-config-daemon/currentconfig"))
        .unwrap_or_else(|e| panic!("{e}"));
    let file = root
        .base()
        .join(NODE_ANNOTATIONS_PATH.trim_start_matches('/'));
    std::fs::write(
        &file,
        json!({CURRENT_CONFIG: "r1", DESIRED_CONFIG: "r1", STATE: "Done"}).to_string(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let bak = root
        .base()
        .join(NODE_ANNOTATIONS_BAK_PATH.trim_start_matches('/'));
    let fake: Shared = Arc::new(Mutex::new(Fake::default()));
    lock(&fake).machine_configs.insert("r1".into(), r1);
    lock(&fake).node = kube_node(json!({}));
    lock(&fake).watched_file = Some(bak.clone());
    let (client, server) = fake_client(fake.clone());
    let mut agent = Agent::new(
        client,
        root.clone(),
        RecordingHost::new(),
        AgentOptions::new("w1"),
    );
    let synced = agent.sync(node_of(&fake)).await;
    assert!(synced.is_ok(), "{synced:?}");
    let annos = lock(&fake).node["metadata"]["annotations"].clone();
    assert_eq!(annos[CURRENT_CONFIG], "r1");
    assert_eq!(annos[STATE], "Done");
    let seen = lock(&fake).seen_at_node_patch.clone();
    assert!(!seen.is_empty() && seen.iter().all(|b| *b), "{seen:?}");
    assert!(!file.exists() && bak.exists());
    assert!(root.exists(crate::state::CURRENT_CONFIG).unwrap_or(false));
    drop(agent);
    let _ = server.await;
}

#[tokio::test]
async fn a_plain_linux_host_applies_all_but_the_os_part_and_ends_done() {
    // setup()'s root has no /run/ostree-booted: not an rpm-ostree host.
    let (fake, dir, root) = setup();
    let mut r5 = machine_config(
        "r5",
        &[("/var/lib/kubelet/config.json", "a"), ("/etc/foo", "5")],
    );
    r5["spec"]["osImageURL"] = json!("quay.io/ocp/os@sha256:cccc");
    r5["spec"]["baseOSExtensionsContainerImage"] = json!("quay.io/ocp/ext@sha256:eeee");
    r5["spec"]["kernelArguments"] = json!(["nosmt"]);
    r5["spec"]["extensions"] = json!(["usbguard"]);
    r5["spec"]["config"]["systemd"] = json!({"units": [{"name": "hello.service",
        "enabled": true,
        "contents": "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"}]});
    lock(&fake).machine_configs.insert("r5".into(), r5);
    lock(&fake).node = kube_node(json!({
        CURRENT_CONFIG: "r1", DESIRED_CONFIG: "r5", STATE: "Done",
    }));
    let (client, server) = fake_client(fake.clone());
    let mut agent = Agent::new(client, root, RecordingHost::new(), AgentOptions::new("w1"));
    updates_through_a_drain_to_a_reboot(&mut agent, &fake, "r5").await;
    // Back from the reboot: the uncordon asked, then done.
    let back = agent.sync(node_of(&fake)).await;
    assert_eq!(back.ok(), Some(Synced::Waiting("uncordon-r5".into())));
    lock(&fake).node["metadata"]["annotations"][LAST_APPLIED_DRAIN] = json!("uncordon-r5");
    let done = agent.sync(node_of(&fake)).await;
    assert_eq!(done.ok(), Some(Synced::Idle("on desired config r5".into())));
    assert!(node_of(&fake).is_done_on("r5"));

    // The files and the unit are on disk, the unit enabled; nothing of the OS part ran.
    let foo = std::fs::read_to_string(dir.path().join("etc/foo"));
    assert_eq!(foo.ok().as_deref(), Some("5"));
    assert!(dir.path().join("etc/systemd/system/hello.service").exists());
    assert_eq!(
        agent.host().calls,
        ["systemctl enable hello.service", "reboot"]
    );
    let on_disk = read_current(&HostRoot::new(dir.path()).unwrap_or_else(|e| panic!("{e}")));
    assert_eq!(
        on_disk.ok().map(|c| c.name().to_string()).as_deref(),
        Some("r5")
    );

    // One Event says the OS part was skipped; none says it started or was staged.
    let reasons = events(&fake);
    assert_eq!(
        reasons,
        ["Cordon", "Drain", "OSUpdateSkipped", "Reboot", "NodeDone"],
        "{reasons:?}"
    );
    let note = lock(&fake)
        .events
        .iter()
        .find(|e| e.2["reason"] == "OSUpdateSkipped")
        .map(|e| e.2["note"].clone())
        .unwrap_or(Value::Null);
    assert_eq!(
        note,
        "not an rpm-ostree host (no /run/ostree-booted): the OS part of the update is skipped (Upgrading OS; Installing extensions; Changing kernel arguments)"
    );
    drop(agent);
    let _ = server.await;
}

#[tokio::test]
async fn an_idle_node_gets_its_machine_config_node_when_the_agent_starts() {
    let (fake, _dir, root) = setup();
    lock(&fake).node = kube_node(json!({
        CURRENT_CONFIG: "r1", DESIRED_CONFIG: "r1", STATE: "Done",
        DESIRED_DRAIN: "uncordon-r1", LAST_APPLIED_DRAIN: "uncordon-r1",
    }));
    let (client, server) = fake_client(fake.clone());
    let mut agent = Agent::new(client, root, RecordingHost::new(), AgentOptions::new("w1"));
    for _ in 0..2 {
        let synced = agent.sync(node_of(&fake)).await;
        assert_eq!(
            synced.ok(),
            Some(Synced::Idle("on desired config r1".into()))
        );
    }
    // Nothing else written: no Node patch, no Event.
    assert!(requests(&fake).iter().all(|r| r.0 != "PATCH"));
    assert!(events(&fake).is_empty());
    let mcn = lock(&fake).mcn.clone().unwrap_or(Value::Null);
    assert_eq!(
        mcn["spec"],
        json!({"node": {"name": "w1"}, "pool": {"name": "worker"},
               "configVersion": {"desired": "r1"}})
    );
    assert_eq!(
        mcn["status"]["configVersion"],
        json!({"current": "r1", "desired": "r1"})
    );
    assert_eq!(
        mcn["metadata"]["ownerReferences"][0]["uid"],
        json!("uid-w1")
    );
    let conds = mcn_conditions(&fake);
    assert_eq!(conds.len(), 14, "{conds:?}");
    assert_eq!(conds["Updated"], "True");
    assert!(
        conds.iter().all(|(t, s)| t == "Updated" || s == "False"),
        "{conds:?}"
    );
    // Written once, at the first sync: one create, one status patch; the second sync reads
    // nothing more.
    let log = mcn_requests(&fake);
    let mcn_path = format!("{MCN_PATH}/w1");
    assert_eq!(
        log,
        [
            ("GET".to_string(), mcn_path.clone()),
            ("POST".to_string(), MCN_PATH.to_string()),
            ("PATCH".to_string(), format!("{mcn_path}/status")),
        ]
    );
    drop(agent);
    let _ = server.await;
}

#[tokio::test]
async fn the_pool_the_operator_wrote_is_kept_and_a_node_without_configs_is_not_yet_set() {
    let (fake, _dir, root) = setup();
    lock(&fake).node = kube_node(json!({}));
    // The operator created it first, naming the pool from the pools' node selectors.
    lock(&fake).mcn = Some(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigNode",
        "metadata": {"name": "w1", "generation": 1},
        "spec": {"node": {"name": "w1"}, "pool": {"name": "infra"},
                 "configVersion": {"desired": "not-yet-set"}}
    }));
    // No config on disk or on the node.
    std::fs::remove_file(root.base().join("etc/machine-config-daemon/currentconfig"))
        .unwrap_or_else(|e| panic!("{e}"));
    let (client, server) = fake_client(fake.clone());
    let mut agent = Agent::new(client, root, RecordingHost::new(), AgentOptions::new("w1"));
    let synced = agent.sync(node_of(&fake)).await;
    assert!(matches!(synced, Ok(Synced::Idle(_))), "{synced:?}");
    let mcn = lock(&fake).mcn.clone().unwrap_or(Value::Null);
    assert_eq!(mcn["spec"]["pool"]["name"], "infra");
    assert_eq!(mcn["spec"]["configVersion"]["desired"], "not-yet-set");
    assert_eq!(
        mcn["status"]["configVersion"],
        json!({"current": "", "desired": "not-yet-set"})
    );
    assert!(mcn_conditions(&fake).is_empty());
    assert!(
        mcn_requests(&fake).iter().all(|r| r.0 != "POST"),
        "not created twice"
    );
    drop(agent);
    let _ = server.await;
}

/// The reasons and annotations a layered update leaves, checked step by step: the node on r1
/// (its own osImageURL `BASE`) is given `desiredImage` `BUILT`, then opts out.
#[tokio::test]
async fn a_desired_image_is_rebased_to_rebooted_into_checked_and_reported_then_opted_out() {
    use mco_render::api::node::{CURRENT_IMAGE, DESIRED_IMAGE};
    const BASE: &str = "quay.io/ocp/os@sha256:aaaa";
    const BUILT: &str = "image-registry.example.com/mco/os-worker@sha256:bbbb";
    let (fake, dir, root) = idle_on_image(BASE);
    lock(&fake).node["metadata"]["annotations"][DESIRED_IMAGE] = json!(BUILT);
    let (client, server) = fake_client(fake.clone());
    let mut host = RecordingHost::new();
    host.respond("rpm-ostree status --json", &booted_status(BASE));
    let mut agent = Agent::new(client.clone(), root.clone(), host, AgentOptions::new("w1"));

    // Working, drained, the image staged, rebooting.
    updates_through_a_drain_to_a_reboot(&mut agent, &fake, "r1").await;
    let rebase = format!("rpm-ostree rebase --experimental ostree-unverified-registry:{BUILT}");
    assert_eq!(
        agent.host().calls,
        [
            "rpm-ostree cleanup -p",
            "rpm-ostree status --json",
            rebase.as_str(),
            "reboot"
        ]
    );
    let link = std::fs::read_link(dir.path().join("run/ostree/auth.json"));
    assert_eq!(
        link.ok().as_deref(),
        Some(std::path::Path::new("/var/lib/kubelet/config.json"))
    );
    let on_disk = read_current(&root).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((on_disk.name(), on_disk.image()), ("r1", BUILT));
    assert_eq!(on_disk.input.os_image_url, BUILT);
    assert_eq!(
        events(&fake),
        [
            "Cordon",
            "Drain",
            "OSUpdateStarted",
            "OSUpdateStaged",
            "Reboot"
        ]
    );
    let annos = lock(&fake).node["metadata"]["annotations"].clone();
    assert_eq!(annos[CURRENT_IMAGE], Value::Null, "not before the reboot");

    // Back on the old image (the staged deployment lost): Degraded, not uncordoned.
    drop(agent);
    let mut host = RecordingHost::new();
    host.respond("rpm-ostree status --json", &booted_status(BASE));
    let mut agent = Agent::new(client.clone(), root.clone(), host, AgentOptions::new("w1"));
    let synced = agent.sync(node_of(&fake)).await;
    assert!(matches!(synced, Ok(Synced::Idle(_))), "{synced:?}");
    let annos = lock(&fake).node["metadata"]["annotations"].clone();
    assert_eq!(annos[STATE], "Degraded");
    assert_eq!(
        annos["machineconfiguration.openshift.io/reason"],
        format!("unexpected on-disk state validating against r1: expected target osImageURL \"{BUILT}\", booted into \"{BASE}\"")
    );
    assert_eq!(annos[DESIRED_DRAIN], "drain-r1");

    // Booted into the built image: uncordon, then Done with currentImage.
    agent.host.outputs.clear();
    agent
        .host
        .respond("rpm-ostree status --json", &booted_status(BUILT));
    let synced = agent.sync(node_of(&fake)).await;
    assert_eq!(synced.ok(), Some(Synced::Waiting("uncordon-r1".into())));
    lock(&fake).node["metadata"]["annotations"][LAST_APPLIED_DRAIN] = json!("uncordon-r1");
    let synced = agent.sync(node_of(&fake)).await;
    assert_eq!(
        synced.ok(),
        Some(Synced::Idle(format!(
            "on desired config r1 and image {BUILT}"
        )))
    );
    let annos = lock(&fake).node["metadata"]["annotations"].clone();
    assert_eq!(annos[CURRENT_IMAGE], BUILT);
    assert_eq!(annos[STATE], "Done");
    assert_eq!(annos["machineconfiguration.openshift.io/reason"], "");
    assert!(node_of(&fake).is_node_done());
    assert!(!agent.host().calls.iter().any(|c| c.contains("rebase")));

    // A restart on the built image: nothing to do, nothing written.
    drop(agent);
    let _ = requests(&fake);
    let mut host = RecordingHost::new();
    host.respond("rpm-ostree status --json", &booted_status(BUILT));
    let mut agent = Agent::new(client.clone(), root.clone(), host, AgentOptions::new("w1"));
    let synced = agent.sync(node_of(&fake)).await;
    assert!(matches!(synced, Ok(Synced::Idle(_))), "{synced:?}");
    assert!(requests(&fake).iter().all(|r| r.0 != "PATCH"));

    // Opt-out: desiredImage removed; back to r1's own osImageURL, currentImage cleared.
    if let Some(a) = lock(&fake).node["metadata"]["annotations"].as_object_mut() {
        a.remove(DESIRED_IMAGE);
    }
    updates_through_a_drain_to_a_reboot(&mut agent, &fake, "r1").await;
    let back = format!("rpm-ostree rebase --experimental ostree-unverified-registry:{BASE}");
    assert!(
        agent.host().calls.contains(&back),
        "{:?}",
        agent.host().calls
    );
    let on_disk = read_current(&root).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (on_disk.image(), on_disk.input.os_image_url.as_str()),
        ("", BASE)
    );
    let revert = crate::apply::revert::REVERT_FILE;
    assert!(root.exists(revert).unwrap_or(false));
    drop(agent);
    // The reboot into the base image lost the file the built image held in /etc.
    std::fs::remove_file(dir.path().join("etc/foo")).unwrap_or_else(|e| panic!("{e}"));
    let mut host = RecordingHost::new();
    host.respond("rpm-ostree status --json", &booted_status(BASE));
    let mut agent = Agent::new(client, root.clone(), host, AgentOptions::new("w1"));
    let synced = agent.sync(node_of(&fake)).await;
    assert_eq!(synced.ok(), Some(Synced::Waiting("uncordon-r1".into())));
    // Written again from the kept config, which is gone; no second reboot, no rpm-ostree change.
    let foo = std::fs::read_to_string(dir.path().join("etc/foo"));
    assert_eq!(foo.ok().as_deref(), Some("1"));
    assert!(!root.exists(revert).unwrap_or(true));
    let calls = &agent.host().calls;
    assert!(
        !calls.is_empty() && calls.iter().all(|c| c == "rpm-ostree status --json"),
        "{calls:?}"
    );
    lock(&fake).node["metadata"]["annotations"][LAST_APPLIED_DRAIN] = json!("uncordon-r1");
    let synced = agent.sync(node_of(&fake)).await;
    assert_eq!(
        synced.ok(),
        Some(Synced::Idle("on desired config r1".into()))
    );
    let annos = lock(&fake).node["metadata"]["annotations"].clone();
    assert!(annos.get(CURRENT_IMAGE).is_none(), "{annos}");
    assert!(node_of(&fake).is_done_on("r1"));
    drop(agent);
    let _ = server.await;
}

#[tokio::test]
async fn a_desired_image_on_a_plain_linux_host_is_skipped_with_an_event() {
    // Not an rpm-ostree host: nothing can be rebased; as for any OS change there, the OS part
    // is skipped with OSUpdateSkipped and the rest of the update goes on, as upstream's
    // unified update path does on non-CoreOS nodes (it stores the config, image embedded).
    use mco_render::api::node::{CURRENT_IMAGE, DESIRED_IMAGE};
    const BUILT: &str = "image-registry.example.com/mco/os-worker@sha256:bbbb";
    let (fake, _dir, root) = setup();
    lock(&fake).node = kube_node(json!({
        CURRENT_CONFIG: "r1", DESIRED_CONFIG: "r1", STATE: "Done", DESIRED_IMAGE: BUILT,
        DESIRED_DRAIN: "uncordon-r1", LAST_APPLIED_DRAIN: "uncordon-r1",
    }));
    let (client, server) = fake_client(fake.clone());
    let mut agent = Agent::new(client, root, RecordingHost::new(), AgentOptions::new("w1"));
    updates_through_a_drain_to_a_reboot(&mut agent, &fake, "r1").await;
    assert_eq!(agent.host().calls, ["reboot"]);
    let back = agent.sync(node_of(&fake)).await;
    assert_eq!(back.ok(), Some(Synced::Waiting("uncordon-r1".into())));
    lock(&fake).node["metadata"]["annotations"][LAST_APPLIED_DRAIN] = json!("uncordon-r1");
    let _ = agent.sync(node_of(&fake)).await;
    let annos = lock(&fake).node["metadata"]["annotations"].clone();
    assert_eq!(annos[CURRENT_IMAGE], BUILT);
    assert_eq!(
        events(&fake),
        ["Cordon", "Drain", "OSUpdateSkipped", "Reboot", "NodeDone"]
    );
    let note = lock(&fake)
        .events
        .iter()
        .find(|e| e.2["reason"] == "OSUpdateSkipped")
        .map(|e| e.2["note"].clone())
        .unwrap_or(Value::Null);
    assert_eq!(
        note,
        "not an rpm-ostree host (no /run/ostree-booted): the OS part of the update is skipped (Upgrading OS)"
    );
    drop(agent);
    let _ = server.await;
}

#[tokio::test]
async fn a_failed_update_tried_again_writes_the_same_degraded_state_once() {
    let (fake, dir, root) = setup();
    std::fs::write(dir.path().join("etc/foo"), "tampered").unwrap_or_default();
    lock(&fake).node = kube_node(json!({
        CURRENT_CONFIG: "r1", DESIRED_CONFIG: "r2", STATE: "Done",
    }));
    let (client, server) = fake_client(fake.clone());
    let mut opts = AgentOptions::new("w1");
    opts.retry_after = Duration::ZERO;
    let mut agent = Agent::new(client, root, RecordingHost::new(), opts);
    assert_eq!(
        agent.sync(node_of(&fake)).await.ok(),
        Some(Synced::Retrying)
    );
    assert_eq!(node_of(&fake).annotation(STATE), Some("Degraded"));
    let written = requests(&fake).iter().filter(|r| r.0 == "PATCH").count();
    assert!(written > 0);
    let degraded_events = events(&fake).len();
    let mcn_writes = mcn_requests(&fake).len();
    // Tried again at once (no back-off here): it fails the same way, and the node, its
    // Events and its MachineConfigNode say so already.
    for _ in 0..3 {
        assert_eq!(
            agent.sync(node_of(&fake)).await.ok(),
            Some(Synced::Retrying)
        );
    }
    assert!(requests(&fake).is_empty());
    assert_eq!(events(&fake).len(), degraded_events);
    assert_eq!(mcn_requests(&fake).len(), mcn_writes);
    drop(agent);
    let _ = server.await;
}

#[tokio::test]
async fn without_the_machine_config_node_api_an_idle_agent_waits_for_its_crd() {
    let (fake, _dir, root) = setup();
    lock(&fake).node = kube_node(json!({
        CURRENT_CONFIG: "r1", DESIRED_CONFIG: "r1", STATE: "Done",
        DESIRED_DRAIN: "uncordon-r1", LAST_APPLIED_DRAIN: "uncordon-r1",
    }));
    lock(&fake).mcn_absent = true;
    let (client, server) = fake_client(fake.clone());
    let mut opts = AgentOptions::new("w1");
    // The fake serves no CRDs: the agent falls back to a delay before looking again.
    opts.watch.absent.initial = Duration::from_millis(50);
    let mut agent = Agent::new(client, root, RecordingHost::new(), opts);
    let idle = Some(Synced::Idle("on desired config r1".into()));
    assert_eq!(agent.sync(node_of(&fake)).await.ok(), idle);
    let mcn_path = format!("{MCN_PATH}/w1");
    // The GET's 404 is the plain-text one: not a missing object but a missing API.
    assert_eq!(mcn_requests(&fake), [("GET".to_string(), mcn_path.clone())]);
    // Later syncs (the resync, node events) do not try again.
    for _ in 0..3 {
        assert_eq!(agent.sync(node_of(&fake)).await.ok(), idle);
    }
    assert_eq!(mcn_requests(&fake).len(), 1);
    assert!(requests(&fake).iter().all(|r| r.0 != "PATCH"));
    // When the API may be served again, the loop is woken and the next sync writes it.
    lock(&fake).mcn_absent = false;
    let served = agent.mcn_served.clone();
    tokio::time::timeout(Duration::from_secs(60), served.notified())
        .await
        .unwrap_or_else(|_| panic!("the agent never looked for the API again"));
    agent.mcn_absent = false;
    assert_eq!(agent.sync(node_of(&fake)).await.ok(), idle);
    let conds = mcn_conditions(&fake);
    assert_eq!(conds.get("Updated").map(String::as_str), Some("True"));
    drop(agent);
    let _ = server.await;
}

#[tokio::test]
async fn the_force_annotation_lets_an_update_past_drift_and_is_cleared_with_it() {
    let (fake, dir, root) = setup();
    // Drift: the disk no longer matches r1, so the update is refused.
    std::fs::write(dir.path().join("etc/foo"), "tampered").unwrap_or_default();
    lock(&fake).node = kube_node(json!({
        CURRENT_CONFIG: "r1", DESIRED_CONFIG: "r2", STATE: "Done",
        DESIRED_DRAIN: "uncordon-r1", LAST_APPLIED_DRAIN: "uncordon-r1",
    }));
    let (client, server) = fake_client(fake.clone());
    let mut opts = AgentOptions::new("w1");
    opts.retry_after = Duration::ZERO;
    let mut agent = Agent::new(client, root, RecordingHost::new(), opts);
    let r = agent.sync(node_of(&fake)).await;
    assert_eq!(r.ok(), Some(Synced::Retrying));
    assert_eq!(node_of(&fake).annotation(STATE), Some("Degraded"));
    requests(&fake);

    // `kubectl mco force w1`: the update goes past the drift, the annotation is cleared.
    let force = mco_render::api::node::FORCE;
    lock(&fake).node["metadata"]["annotations"][force] = json!("2026-03-07T12:00:00Z");
    let r = agent.sync(node_of(&fake)).await;
    assert_eq!(r.ok(), Some(Synced::Waiting("uncordon-r2".into())));
    let kubelet = std::fs::read_to_string(dir.path().join("var/lib/kubelet/config.json"));
    assert_eq!(kubelet.ok().as_deref(), Some("b"));
    let n = node_of(&fake);
    assert_eq!(n.annotation(force), None);
    let cleared: Vec<Value> = requests(&fake)
        .into_iter()
        .filter(|(m, _, body)| m == "PATCH" && body["metadata"]["annotations"].get(force).is_some())
        .map(|(_, _, body)| body)
        .collect();
    assert_eq!(
        cleared,
        vec![json!({"metadata": {"annotations": {force: null}}})]
    );
    drop(agent);
    let _ = server.await;
}

/// A disk change an `irreconcilableValidationOverrides` let render: the node takes the rest of
/// the config and, once Done, reports on its MachineConfigNode how its storage differs from
/// the config it was provisioned with (`/etc/mcs-machine-config-content.json`).
#[tokio::test]
async fn a_done_node_reports_its_irreconcilable_changes() {
    use mco_render::serve::served::MACHINE_CONFIG_CONTENT_PATH;
    let (fake, dir, root) = setup();
    let r1 = lock(&fake).machine_configs["r1"].clone();
    let mut r4 = r1.clone();
    r4["metadata"]["name"] = json!("r4");
    r4["spec"]["config"]["storage"]["disks"] = json!([{"device": "/dev/vdb", "wipeTable": true}]);
    lock(&fake).machine_configs.insert("r4".into(), r4);
    let served = dir
        .path()
        .join(MACHINE_CONFIG_CONTENT_PATH.trim_start_matches('/'));
    std::fs::create_dir_all(served.parent().unwrap_or(dir.path())).unwrap_or_default();
    std::fs::write(&served, r1.to_string()).unwrap_or_else(|e| panic!("{e}"));
    lock(&fake).node = kube_node(json!({
        CURRENT_CONFIG: "r1", DESIRED_CONFIG: "r4", STATE: "Done",
        DESIRED_DRAIN: "uncordon-r1", LAST_APPLIED_DRAIN: "uncordon-r1",
    }));
    let (client, server) = fake_client(fake.clone());
    let mut agent = Agent::new(client, root, RecordingHost::new(), AgentOptions::new("w1"));
    let overrides: MachineConfiguration = serde_json::from_value(json!({
        "spec": {"irreconcilableValidationOverrides": {"storage": ["Disks"]}}
    }))
    .unwrap_or_default();
    agent.set_policies(Some(overrides));

    let first = agent.sync(node_of(&fake)).await;
    assert_eq!(first.ok(), Some(Synced::Waiting("uncordon-r4".into())));
    lock(&fake).node["metadata"]["annotations"][LAST_APPLIED_DRAIN] = json!("uncordon-r4");
    let second = agent.sync(node_of(&fake)).await;
    assert_eq!(
        second.ok(),
        Some(Synced::Idle("on desired config r4".into()))
    );
    let mcn = lock(&fake).mcn.clone().unwrap_or(Value::Null);
    assert_eq!(
        mcn["status"]["irreconcilableChanges"],
        json!([{"fieldPath": "spec.config.storage.disks",
                "diff": "+ [{\"device\":\"/dev/vdb\",\"wipeTable\":true}]\n"}])
    );
    server.abort();
}
