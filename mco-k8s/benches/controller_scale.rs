//! Scale simulation of the machine-config-controller: the real binary against the in-process
//! API server, a worker pool of N Nodes (default 100 and 1,000) with 200 MachineConfigs and
//! maxUnavailable 10%, and light simulated agents that acknowledge updates (desired config,
//! drain request, uncordon request, Done). After the controller has adopted the cluster, one
//! new MachineConfig rolls out to every worker; the figures are for that rollout:
//! the controller's API requests per node update by verb, its CPU time and peak RSS.
//!
//! Each size runs plain (upstream's rollout); guarded by a RolloutPolicy with 1% canaries and
//! a 1 s soak, a health gate on the MachineConfigNode and on one DaemonSet pod per node
//! (`app=node-health`, Ready), and a maintenance window open all day (the agents also report
//! Updated in each node's MachineConfigNode); and with every feature on (`all`): guarded, and
//! the pool layered (a MachineOSConfig, each rendered config built into an image by a
//! simulated builder, the nodes moved to it), a PinnedImageSet, a KubeletConfig, a
//! ContainerRuntimeConfig, the Image config and mirror sets for the generators, the role
//! templates, and the admission webhook served by the controller and called by the server on
//! every MachineConfig write.
//!
//! Bounded: each size stops after `MCO_SCALE_LIMIT_SECS` (default 600 s). Sizes from
//! `MCO_SCALE_NODES` (comma-separated, default `100,1000,5000`); `MCO_SCALE_MODES` picks
//! `plain`, `guarded`, `all`, or a comma-separated list of them (default all three).
//!
//! `cargo bench -p mco-k8s --bench controller_scale`

#[path = "../tests/support/mod.rs"]
#[allow(unused_imports)]
mod support;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node as KubeNode;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::watcher;
use mco_render::api::node::{
    CURRENT_CONFIG, CURRENT_IMAGE, DESIRED_CONFIG, DESIRED_DRAIN, DESIRED_IMAGE,
    LAST_APPLIED_DRAIN, STATE,
};
use mco_render::RenderOptions;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::apiserver::{resource, ApiServer, Kubelet};
use support::cluster::{expected_rendered, seed_examples};

const CONTROLLER: &str = "machine-config-controller";
const MACHINE_CONFIGS: usize = 200;

struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// User plus system CPU time of a process, from /proc (Linux).
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 (1-based), 11 and 12 after the command.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// Peak resident memory of a process in MiB, from /proc (Linux).
fn peak_rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

fn controller_requests(server: &ApiServer) -> BTreeMap<String, u64> {
    server
        .store
        .request_counts_by_agent()
        .into_iter()
        .filter(|((agent, _), _)| agent.starts_with(CONTROLLER))
        .map(|((_, what), n)| (what, n))
        .collect()
}

async fn annotate(api: &Api<KubeNode>, name: &str, pairs: &[(&str, &str)]) {
    let ann: serde_json::Map<String, Value> =
        pairs.iter().map(|(k, v)| ((*k).into(), json!(v))).collect();
    let patch = json!({"metadata": {"annotations": ann}});
    let _ = api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await;
}

async fn wait_applied(api: &Api<KubeNode>, name: &str, want: &str) {
    loop {
        if let Ok(n) = api.get(name).await {
            let ann = n.metadata.annotations.unwrap_or_default();
            if ann.get(LAST_APPLIED_DRAIN).map(String::as_str) == Some(want) {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The config (and image, on a layered pool) `node` wants and is not on yet.
fn wanted(node: &KubeNode) -> Option<(String, Option<String>)> {
    let ann = node.metadata.annotations.clone().unwrap_or_default();
    let desired = ann.get(DESIRED_CONFIG).cloned().filter(|d| !d.is_empty())?;
    let image = ann.get(DESIRED_IMAGE).cloned();
    let done =
        ann.get(CURRENT_CONFIG) == Some(&desired) && ann.get(CURRENT_IMAGE) == image.as_ref();
    (!done).then_some((desired, image))
}

/// Whether `name` wants an update now (false when it cannot be read).
async fn wants(api: &Api<KubeNode>, name: &str) -> Option<(String, Option<String>)> {
    api.get(name).await.ok().as_ref().and_then(wanted)
}

/// One agent's updates of its node, while it is in `busy`, each to what the node wants when
/// it starts (a watch event may be stale, and a retarget's event skipped as busy): Working
/// and a drain request, the drain, the uncordon, Done on the config (and the image, on a
/// layered pool), and, when `mcns` is given, Updated in the node's MachineConfigNode.
async fn update(
    api: Api<KubeNode>,
    mcns: Option<Api<DynamicObject>>,
    name: String,
    busy: Arc<Mutex<BTreeSet<String>>>,
) {
    loop {
        let Some((desired, image)) = wants(&api, &name).await else {
            if let Ok(mut b) = busy.lock() {
                b.remove(&name);
            }
            // A retarget between that read and the removal had its event skipped.
            let again = wants(&api, &name).await.is_some()
                && busy
                    .lock()
                    .map(|mut b| b.insert(name.clone()))
                    .unwrap_or(false);
            if again {
                continue;
            }
            return;
        };
        let drain = format!("drain-{desired}");
        annotate(&api, &name, &[(STATE, "Working"), (DESIRED_DRAIN, &drain)]).await;
        wait_applied(&api, &name, &drain).await;
        let uncordon = format!("uncordon-{desired}");
        annotate(&api, &name, &[(DESIRED_DRAIN, &uncordon)]).await;
        wait_applied(&api, &name, &uncordon).await;
        match &image {
            Some(image) => {
                annotate(
                    &api,
                    &name,
                    &[
                        (CURRENT_CONFIG, &desired),
                        (CURRENT_IMAGE, image),
                        (STATE, "Done"),
                    ],
                )
                .await
            }
            None => annotate(&api, &name, &[(CURRENT_CONFIG, &desired), (STATE, "Done")]).await,
        }
        if let Some(mcns) = &mcns {
            let status = json!({"status": {
                "configVersion": {"current": desired, "desired": desired},
                "conditions": [{"type": "Updated", "status": "True", "reason": "Updated",
                                "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
            let _ = mcns
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                .await;
        }
    }
}

/// The simulated agents: one watch over all Nodes, a task per node being updated.
fn start_agents(server: &ApiServer, report_mcn: bool) -> tokio::task::JoinHandle<()> {
    let client = server.client_as("sim-agents");
    let api: Api<KubeNode> = Api::all(client.clone());
    let mcns = report_mcn.then(|| {
        Api::<DynamicObject>::all_with(client, &mco_k8s::crd::MACHINE_CONFIG_NODE.api_resource())
    });
    tokio::spawn(async move {
        let busy = Arc::new(Mutex::new(BTreeSet::new()));
        let mut events = watcher(api.clone(), watcher::Config::default()).boxed();
        while let Some(ev) = events.next().await {
            let node = match ev {
                Ok(watcher::Event::Apply(n) | watcher::Event::InitApply(n)) => n,
                _ => continue,
            };
            if wanted(&node).is_none() {
                continue;
            }
            let name = node.metadata.name.clone().unwrap_or_default();
            if !busy
                .lock()
                .map(|mut b| b.insert(name.clone()))
                .unwrap_or(false)
            {
                continue;
            }
            tokio::spawn(update(api.clone(), mcns.clone(), name, busy.clone()));
        }
    })
}

fn worker_mc(i: usize) -> Value {
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": format!("50-worker-scale-{i:03}"),
                     "labels": {"machineconfiguration.openshift.io/role": "worker"}},
        "spec": {"config": {"ignition": {"version": "3.4.0"}, "storage": {"files": [
            {"path": format!("/etc/scale/file-{i}.conf"), "mode": 420,
             "contents": {"source": format!("data:,setting-{i}%3Dvalue%0A")}}]}}}
    })
}

async fn until(limit: Instant, what: &str, check: impl Fn() -> bool) -> bool {
    while !check() {
        if Instant::now() > limit {
            eprintln!("timed out waiting for {what}");
            if let Ok(p) = std::env::var("MCO_SCALE_DEBUG") {
                eprintln!("{p}");
            }
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    true
}

fn pool_on(server: &ApiServer, config: &str, count: usize) -> bool {
    server
        .store
        .get("machineconfigpools", "", "worker")
        .is_some_and(|p| {
            p["status"]["updatedMachineCount"] == count
                && p["status"]["configuration"]["name"] == config
        })
}

/// The pool's config once every node is updated on it (its spec and status naming the
/// same config, all `count` nodes counted updated): what a rollout ends on, whatever the
/// generators and templates made the config.
fn pool_settled(server: &ApiServer, pool: &str, count: usize) -> Option<String> {
    let p = server.store.get("machineconfigpools", "", pool)?;
    let spec = p["spec"]["configuration"]["name"].as_str()?;
    let updated = p["status"]["conditions"]
        .as_array()?
        .iter()
        .any(|c| c["type"] == "Updated" && c["status"] == "True");
    (updated
        && p["status"]["configuration"]["name"] == spec
        && p["status"]["updatedMachineCount"] == count)
        .then(|| spec.to_string())
}

/// The objects of a YAML file of the repository.
fn repo_docs(path: &str) -> Vec<Value> {
    support::yaml_docs(&support::cluster::repo(path))
}

/// What the `all` run adds before the controller starts: the generators' inputs (a
/// KubeletConfig and a ContainerRuntimeConfig for the worker pool, the Image config and mirror
/// sets), a PinnedImageSet, and the infra pool layered (its MachineOSConfig and what a build
/// reads). The RolloutPolicy guards the worker pool: a layered pool rolls to its built image
/// under upstream's rule, so the two are on different pools.
// The test server's error type is what its store closures return.
#[allow(clippy::result_large_err)]
fn seed_all_features(server: &ApiServer) {
    let store = &server.store;
    let pools = resource("machineconfigpools").expect("served");
    let _ = store.write(pools, "", "worker", false, |p| {
        let mut p = p.clone();
        p["metadata"]["labels"]["pools.operator.machineconfiguration.openshift.io/worker"] =
            json!("");
        Ok(p)
    });
    let selector =
        json!({"matchLabels": {"pools.operator.machineconfiguration.openshift.io/worker": ""}});
    let _ = store.create(
        resource("kubeletconfigs").expect("served"),
        "",
        json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "KubeletConfig",
               "metadata": {"name": "worker-max-pods"},
               "spec": {"machineConfigPoolSelector": selector, "kubeletConfig": {"maxPods": 300}}}),
    );
    let _ = store.create(
        resource("containerruntimeconfigs").expect("served"),
        "",
        json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "ContainerRuntimeConfig",
               "metadata": {"name": "worker-pids"},
               "spec": {"machineConfigPoolSelector": selector,
                        "containerRuntimeConfig": {"pidsLimit": 4096}}}),
    );
    for doc in repo_docs("examples/cluster-config/10-image.yaml")
        .into_iter()
        .chain(repo_docs("examples/cluster-config/20-mirrors.yaml"))
        .chain(repo_docs(
            "examples/layering/cluster/30-worker-pinned-images.yaml",
        ))
    {
        let plural = match doc["kind"].as_str().unwrap_or("") {
            "Image" => "images",
            "ImageDigestMirrorSet" => "imagedigestmirrorsets",
            "ImageTagMirrorSet" => "imagetagmirrorsets",
            "ImageContentSourcePolicy" => "imagecontentsourcepolicies",
            "PinnedImageSet" => "pinnedimagesets",
            _ => continue,
        };
        let _ = store.create(resource(plural).expect("served"), "", doc);
    }
    support::builder::seed_build_inputs(store);
    support::builder::create_mosc(
        store,
        "infra-layered",
        "infra",
        "registry.example.com/ocl/infra:latest",
        "RUN dnf install -y tmux && dnf clean all",
    );
}

/// The webhook's certificate for its Service name, in `dir`: (cert, key, CA bundle base64).
fn webhook_cert(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf, String) {
    use base64::Engine;
    let service = format!("machine-config-controller.{}.svc", support::builder::NS);
    let ck = rcgen::generate_simple_self_signed(vec![service]).expect("cert");
    let (cert, key) = (dir.join("tls.crt"), dir.join("tls.key"));
    std::fs::write(&cert, ck.cert.pem()).expect("cert");
    std::fs::write(&key, ck.key_pair.serialize_pem()).expect("key");
    let ca = base64::engine::general_purpose::STANDARD.encode(ck.cert.pem());
    (cert, key, ca)
}

/// Routes the webhook's Service to `port` and registers the manifests' configuration with
/// `ca`: every MachineConfig write from then on is reviewed by the controller's webhook.
fn register_webhook(server: &ApiServer, port: u16, ca: &str) {
    server.store.route_service(
        support::builder::NS,
        "machine-config-controller",
        443,
        std::net::SocketAddr::from(([127, 0, 0, 1], port)),
    );
    let mut configuration = repo_docs("manifests/09-webhook.yaml")
        .into_iter()
        .find(|d| d["kind"] == "ValidatingWebhookConfiguration")
        .expect("the webhook configuration");
    assert!(mco_render::admission::set_ca_bundle(&mut configuration, ca));
    let _ = server.store.create(
        resource("validatingwebhookconfigurations").expect("served"),
        "",
        configuration,
    );
}

/// A port free on 127.0.0.1 now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The RolloutPolicy of the guarded run.
fn policy() -> Value {
    json!({
        "apiVersion": "rollout.mco.dev/v1alpha1", "kind": "RolloutPolicy",
        "metadata": {"name": "worker"},
        "spec": {
            "canary": {"nodes": "1%", "soak": "1s"},
            "healthGate": {"timeout": "10m", "pods": {"matchLabels": {"app": "node-health"}}},
            "maintenanceWindows": [{"start": "00:00", "duration": "24h", "timeZone": "Europe/Berlin"}]
        }
    })
}

/// A node's MachineConfigNode on `config`, Updated.
fn machine_config_node(name: &str, config: &str) -> Value {
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigNode",
        "metadata": {"name": name},
        "spec": {"node": {"name": name}, "pool": {"name": "worker"}, "configVersion": {"desired": config}},
        "status": {"configVersion": {"current": config, "desired": config},
                   "conditions": [{"type": "Updated", "status": "True", "reason": "Updated",
                                   "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    })
}

/// A Ready DaemonSet pod of the health gate on `node` (drains leave it alone).
fn health_pod(node: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("node-health-{node}"), "namespace": "monitoring",
                     "labels": {"app": "node-health"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                          "name": "node-health", "uid": "ds-1", "controller": true}]},
        "spec": {"nodeName": node, "containers": [{"name": "probe", "image": "probe"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

/// Which runs: plain, guarded by a RolloutPolicy, every feature on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Plain,
    Guarded,
    All,
}

impl Mode {
    fn guarded(self) -> bool {
        matches!(self, Mode::Guarded | Mode::All)
    }
}

// The test server's error type is what its store closures return.
#[allow(clippy::result_large_err)]
async fn run(nodes: usize, mode: Mode, limit: Duration) {
    let deadline = Instant::now() + limit;
    let server = ApiServer::start().await.expect("API server");
    server.store.set_kubelet(Kubelet::Speedup(1000));
    seed_examples(&server);
    let mcs = resource("machineconfigs").expect("served");
    for i in 0..MACHINE_CONFIGS {
        let _ = server.store.create(mcs, "", worker_mc(i));
    }
    let pools = resource("machineconfigpools").expect("served");
    let _ = server.store.write(pools, "", "worker", false, |p| {
        let mut p = p.clone();
        p["spec"]["maxUnavailable"] = json!("10%");
        Ok(p)
    });
    let opts = RenderOptions::default();
    let worker = expected_rendered(&server, "worker", &opts)
        .name()
        .to_string();
    let master = expected_rendered(&server, "master", &opts)
        .name()
        .to_string();
    let node_def = resource("nodes").expect("served");
    for i in 0..nodes + 3 {
        let (name, role, config) = if i < 3 {
            (
                format!("master-{i}"),
                "node-role.kubernetes.io/master",
                &master,
            )
        } else {
            (
                format!("worker-{:04}", i - 3),
                "node-role.kubernetes.io/worker",
                &worker,
            )
        };
        let n = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {role: "", "kubernetes.io/os": "linux"},
                         "annotations": {CURRENT_CONFIG: config, DESIRED_CONFIG: config, STATE: "Done"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}
        });
        let _ = server.store.create(node_def, "", n);
        if mode.guarded() && i >= 3 {
            let mcn = resource("machineconfignodes").expect("served");
            let _ = server
                .store
                .create(mcn, "", machine_config_node(&name, config));
            let pods = resource("pods").expect("served");
            let _ = server.store.create(pods, "monitoring", health_pod(&name));
        }
    }
    // The `all` run's layered infra pool: one node per 20 workers more (OpenShift's custom
    // pool nodes carry both roles), first on the worker config.
    let infra = if mode == Mode::All {
        (nodes / 20).max(1)
    } else {
        0
    };
    for i in 0..infra {
        let n = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("infra-{i:04}"),
                         "labels": {"node-role.kubernetes.io/worker": "",
                                    "node-role.kubernetes.io/infra": "",
                                    "kubernetes.io/os": "linux"},
                         "annotations": {CURRENT_CONFIG: &worker, DESIRED_CONFIG: &worker, STATE: "Done"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}
        });
        let _ = server.store.create(node_def, "", n);
    }
    if mode.guarded() {
        let policies = resource("rolloutpolicies").expect("served");
        let _ = server.store.create(policies, "", policy());
    }
    let _builder = (mode == Mode::All).then(|| {
        seed_all_features(&server);
        support::builder::start_builder(
            server.store.clone(),
            Arc::new(Mutex::new(support::builder::Builder::Succeed)),
        )
    });
    let agents = start_agents(&server, mode.guarded());
    let dir = std::env::temp_dir().join(format!("mco-scale-{}-{nodes}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let kubeconfig = dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let mut command = Command::new(env!("CARGO_BIN_EXE_machine-config-controller"));
    command
        .args(["--kubeconfig"])
        .arg(&kubeconfig)
        .args([
            "--leader-elect=false",
            "--resync-seconds",
            "3600",
            "--debounce-ms",
            "50",
        ])
        .arg("--keep-rendered=-1");
    if mode == Mode::All {
        let (cert, key, ca) = webhook_cert(&dir);
        let port = free_port();
        command
            // A build names the release its rendered config carries.
            .arg("--release-image-version=4.22.0-scale")
            .arg("--templates")
            .arg(support::cluster::repo("templates"))
            .arg(format!("--webhook-listen=127.0.0.1:{port}"))
            .arg("--webhook-cert")
            .arg(cert)
            .arg("--webhook-key")
            .arg(key);
        register_webhook(&server, port, &ca);
    }
    let child = command
        .stdout(Stdio::null())
        .stderr(
            std::fs::File::create(dir.join("controller.log"))
                .map(Stdio::from)
                .unwrap_or_else(|_| Stdio::null()),
        )
        .spawn()
        .expect("start the controller");
    let ctrl = Process(child);
    let pid = ctrl.0.id();

    // The controller adopts the cluster (in the `all` run, with the generated configs and
    // the first image, onto which every node moves first).
    let adopted = match mode {
        Mode::All => {
            until(deadline, "adoption", || {
                pool_settled(&server, "worker", nodes).is_some()
                    && pool_settled(&server, "infra", infra).is_some()
            })
            .await
        }
        _ => until(deadline, "adoption", || pool_on(&server, &worker, nodes)).await,
    };
    if !adopted {
        let log = std::fs::read_to_string(dir.join("controller.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(10).collect();
        eprintln!(
            "controller log (last lines, newest first):\n{}",
            tail.join("\n")
        );
        eprintln!(
            "pool: {}",
            server
                .store
                .get("machineconfigpools", "", "worker")
                .map(|p| p["status"].to_string())
                .unwrap_or_default()
        );
        agents.abort();
        return;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = controller_requests(&server);
    let cpu_before = cpu_time(pid);
    let started = Instant::now();

    // One new MachineConfig rolls out to every worker (through the webhook in the `all` run,
    // as a client's create would).
    let adopted_on = (
        pool_settled(&server, "worker", nodes).unwrap_or_default(),
        pool_settled(&server, "infra", infra).unwrap_or_default(),
    );
    let done = if mode == Mode::All {
        let admin = server.client();
        let api: Api<DynamicObject> =
            Api::all_with(admin, &mco_k8s::crd::MACHINE_CONFIG.api_resource());
        let mc: DynamicObject =
            serde_json::from_value(worker_mc(MACHINE_CONFIGS)).expect("a MachineConfig");
        if let Err(e) = api.create(&Default::default(), &mc).await {
            eprintln!("the new MachineConfig was refused: {e}");
            agents.abort();
            return;
        }
        until(deadline, "the rollout", || {
            pool_settled(&server, "worker", nodes).is_some_and(|c| c != adopted_on.0)
                && pool_settled(&server, "infra", infra).is_some_and(|c| c != adopted_on.1)
        })
        .await
    } else {
        let _ = server.store.create(mcs, "", worker_mc(MACHINE_CONFIGS));
        let target = expected_rendered(&server, "worker", &opts)
            .name()
            .to_string();
        until(deadline, "the rollout", || pool_on(&server, &target, nodes)).await
    };
    if !done {
        agents.abort();
        return;
    }
    let wall = started.elapsed();
    let after = controller_requests(&server);
    let cpu = cpu_time(pid).saturating_sub(cpu_before);
    let rss = peak_rss_mib(pid);
    let mut by_verb: BTreeMap<String, u64> = BTreeMap::new();
    let mut total = 0;
    for (what, n) in &after {
        let d = n - before.get(what).copied().unwrap_or(0);
        if d > 0 {
            by_verb.insert(what.clone(), d);
            total += d;
        }
    }
    let updates = nodes + infra;
    let layered = if infra > 0 {
        format!(" and {infra} layered infra nodes")
    } else {
        String::new()
    };
    println!(
        "{nodes} workers{layered}, {MACHINE_CONFIGS} MachineConfigs, {mode:?}: rollout {:.1} s, controller CPU {:.2} s ({:.2} ms/node update), peak RSS {rss:.1} MiB",
        wall.as_secs_f64(),
        cpu.as_secs_f64(),
        cpu.as_secs_f64() * 1000.0 / updates as f64
    );
    println!(
        "  controller requests: {total} ({:.2} per node update)",
        total as f64 / updates as f64
    );
    for (what, d) in &by_verb {
        println!(
            "    {what:<40} {d:>7} ({:.2}/node)",
            *d as f64 / updates as f64
        );
    }
    if mode == Mode::All {
        // Every write of the controller's went through its own webhook, and so did the change.
        let calls = server.store.admission_calls();
        let change = format!("50-worker-scale-{MACHINE_CONFIGS}");
        let reviewed = calls
            .iter()
            .find(|c| c.name == change)
            .map(|c| format!("{:?}", c.outcome))
            .unwrap_or_else(|| "not reviewed".into());
        println!(
            "  webhook reviews: {} in all; the change: {reviewed}",
            calls.len()
        );
    }
    agents.abort();
    drop(ctrl);
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run only a tiny
    // size there.
    let benching = std::env::args().any(|a| a == "--bench");
    let sizes: Vec<usize> = std::env::var("MCO_SCALE_NODES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| {
            if benching {
                vec![100, 1000, 5000]
            } else {
                vec![10]
            }
        });
    let modes: Vec<Mode> = std::env::var("MCO_SCALE_MODES")
        .ok()
        .map(|s| {
            s.split(',')
                .filter_map(|m| match m.trim() {
                    "plain" => Some(Mode::Plain),
                    "guarded" => Some(Mode::Guarded),
                    "all" => Some(Mode::All),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_else(|| vec![Mode::Plain, Mode::Guarded, Mode::All]);
    let limit = Duration::from_secs(
        std::env::var("MCO_SCALE_LIMIT_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(600),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    for n in sizes {
        for &mode in &modes {
            rt.block_on(run(n, mode, limit));
        }
    }
}
