//! On-cluster layering with every component live, in one process against the in-process API
//! server: the controller (`mco_k8s::controller::run`), on each of two workers the real agent
//! (`mco_node::agent::kube_loop::Agent`) on a temporary host root marked an rpm-ostree host,
//! its host commands recorded by a [`RecordingHost`] whose simulated rpm-ostree stages what
//! it is asked to and boots it on reboot, and the simulated builder of `support::builder`.
//!
//! A MachineOSConfig for the worker pool builds an image; both workers rebase to it, reboot
//! into it and report it; the pool is Updated on config and image. Deleting the
//! MachineOSConfig takes both back to the rendered config's own OS image.

use crate::support;

use crate::support::apiserver::{resource, ApiServer, Store};
use crate::support::builder::{
    condition, create_mosc, digest_of, seed_build_inputs, start_builder, Builder,
};
use crate::support::cluster::{expected_rendered, seed_examples};
use crate::support::node_host::root_on;
use crate::support::rbac;
use mco_k8s::controller::{self, Options};
use mco_node::agent::kube_loop::{Agent, AgentOptions};
use mco_node::apply::revert::REVERT_FILE;
use mco_node::host::{Host, HostError};
use mco_node::state::read_current;
use mco_node::{HostRoot, RecordingHost};
use mco_render::api::node::{
    CURRENT_CONFIG, CURRENT_IMAGE, DESIRED_CONFIG, DESIRED_IMAGE, LAST_APPLIED_DRAIN, STATE,
};
use mco_render::controllers::drain::DrainRetry;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const LIMIT: Duration = support::PATIENCE;
const CONTROLLER: &str = "machine-config-controller";
const WORKERS: [&str; 2] = ["worker-0", "worker-1"];
const MOSC: &str = "worker-layered";
const REPO: &str = "registry.example.com/ocl/worker";

/// A [`RecordingHost`] the test reads while the agent owns it.
#[derive(Clone, Default)]
struct SharedHost(Arc<Mutex<RecordingHost>>);

impl SharedHost {
    fn lock(&self) -> std::sync::MutexGuard<'_, RecordingHost> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The rpm-ostree commands that change the host (status queries aside).
    fn ostree_changes(&self) -> Vec<String> {
        self.lock()
            .calls
            .iter()
            .filter(|c| c.starts_with("rpm-ostree") && *c != "rpm-ostree status --json")
            .cloned()
            .collect()
    }
}

impl Host for SharedHost {
    fn systemctl(&mut self, args: &[String]) -> Result<(), HostError> {
        self.lock().systemctl(args)
    }
    fn rpm_ostree(&mut self, args: &[String]) -> Result<(), HostError> {
        self.lock().rpm_ostree(args)
    }
    fn rpm_ostree_output(&mut self, args: &[String]) -> Result<String, HostError> {
        self.lock().rpm_ostree_output(args)
    }
    fn podman(&mut self, args: &[String]) -> Result<String, HostError> {
        self.lock().podman(args)
    }
    fn chcon(&mut self, args: &[String]) -> Result<(), HostError> {
        self.lock().chcon(args)
    }
    fn reboot(&mut self) -> Result<(), HostError> {
        self.lock().reboot()
    }
    fn arch(&self) -> String {
        self.lock().arch()
    }
}

fn options() -> Options {
    let mut opts = Options {
        debounce: Duration::from_millis(10),
        resync: Duration::from_secs(1),
        gc_keep: None,
        drain_retry: DrainRetry {
            first: Duration::from_millis(20),
            max: Duration::from_millis(200),
        },
        ..Options::default()
    };
    opts.render.release_image_version = "4.18.0-test".into();
    opts
}

fn daemon(node: &str) -> String {
    format!("machine-config-daemon ({node})")
}

fn annotation(store: &Store, node: &str, key: &str) -> Option<String> {
    store.get("nodes", "", node)?["metadata"]["annotations"][key]
        .as_str()
        .map(str::to_string)
}

/// What the test is waiting on, for a timeout's message.
fn show(store: &Store) -> String {
    let nodes: Vec<Value> = WORKERS
        .iter()
        .map(|n| {
            store
                .get("nodes", "", n)
                .map(|n| n["metadata"]["annotations"].clone())
                .unwrap_or_default()
        })
        .collect();
    format!(
        "pool {}\nmosbs {}\nnodes {:#}",
        store
            .get("machineconfigpools", "", "worker")
            .map(|p| p["status"].clone())
            .unwrap_or_default(),
        Value::Array(
            store
                .list("machineosbuilds")
                .iter()
                .map(|b| json!({"name": b["metadata"]["name"], "status": b["status"]}))
                .collect()
        ),
        Value::Array(nodes)
    )
}

async fn eventually<T>(store: &Store, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        if let Some(v) = check() {
            return v;
        }
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out waiting for {what}:\n{}", show(store));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Both workers Done on `config`, with `image` as desired and current image (none: neither
/// annotation), and the pool Updated on `config`.
async fn settled_on(store: &Store, config: &str, image: Option<&str>) -> Value {
    eventually(store, &format!("workers on {config} / {image:?}"), || {
        let nodes = WORKERS.iter().all(|n| {
            let a = |k| annotation(store, n, k);
            a(CURRENT_CONFIG).as_deref() == Some(config)
                && a(DESIRED_CONFIG).as_deref() == Some(config)
                && a(DESIRED_IMAGE).as_deref() == image
                && a(CURRENT_IMAGE).as_deref() == image
                && a(STATE).as_deref() == Some("Done")
        });
        let p = store.get("machineconfigpools", "", "worker")?;
        (nodes
            && p["status"]["configuration"]["name"] == config
            && p["status"]["updatedMachineCount"] == 2
            && condition(&p, "Updated")["status"] == "True")
            .then_some(p)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_os_config_rolls_its_image_onto_live_agents_and_opting_out_rolls_back() {
    let server = ApiServer::start().await.unwrap();
    seed_examples(&server);
    let store = server.store.clone();
    seed_build_inputs(&store);
    let rendered = expected_rendered(&server, "worker", &options().render);
    let config = rendered.name().to_string();
    let base = rendered.spec.os_image_url.clone();
    assert!(!base.is_empty(), "the rendered config names an OS image");

    // Two workers booted from the rendered config's image, each with its agent.
    let mut tasks = Vec::new();
    let mut hosts = Vec::new();
    let mut roots = Vec::new();
    for name in WORKERS {
        store
            .create(
                resource("nodes").unwrap(),
                "",
                json!({
                    "apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name,
                                 "labels": {"node-role.kubernetes.io/worker": "",
                                            "kubernetes.io/os": "linux"},
                                 "annotations": {CURRENT_CONFIG: config, DESIRED_CONFIG: config,
                                                 STATE: "Done"}},
                    "status": {"conditions": [{"type": "Ready", "status": "True"}]}
                }),
            )
            .unwrap();
        let (dir, root) = root_on(&rendered);
        std::fs::create_dir_all(dir.path().join("run")).unwrap();
        std::fs::write(dir.path().join("run/ostree-booted"), "").unwrap();
        let host = SharedHost::default();
        host.lock().ostree.booted_image = Some(format!("ostree-unverified-registry:{base}"));
        let mut opts = AgentOptions::new(name);
        opts.resync = Duration::from_millis(500);
        opts.retry_after = Duration::from_secs(1);
        // The recording host does not go down on reboot: the agent carries on, as after a boot.
        opts.continue_after_reboot = true;
        let agent = Agent::new(server.client_as(&daemon(name)), root, host.clone(), opts);
        tasks.push(tokio::spawn(async move {
            let _ = agent.run().await;
        }));
        hosts.push(host);
        roots.push(dir);
    }
    let client = server.client_as(CONTROLLER);
    tasks.push(tokio::spawn(async move {
        let _ = controller::run(client, options()).await;
    }));
    let mode = Arc::new(Mutex::new(Builder::Succeed));
    tasks.push(start_builder(store.clone(), mode));
    settled_on(&store, &config, None).await;
    for h in &hosts {
        assert_eq!(
            h.ostree_changes(),
            Vec::<String>::new(),
            "nothing to do yet"
        );
    }

    // The MachineOSConfig: a build and its Job, which the builder completes with a digest.
    create_mosc(
        &store,
        MOSC,
        "worker",
        &format!("{REPO}:latest"),
        "RUN dnf install -y tmux && dnf clean all",
    );
    let build = eventually(&store, "a MachineOSBuild for the pool's config", || {
        store.list("machineosbuilds").into_iter().find_map(|b| {
            (b["spec"]["machineConfig"]["name"] == config.as_str())
                .then(|| b["metadata"]["name"].as_str().map(str::to_string))
                .flatten()
        })
    })
    .await;
    let image = format!("{REPO}@{}", digest_of(&build));
    let built = eventually(&store, "the build succeeded", || {
        let b = store.get("machineosbuilds", "", &build)?;
        (condition(&b, "Succeeded")["status"] == "True").then_some(b)
    })
    .await;
    assert_eq!(built["status"]["digestedImagePushSpec"], image.as_str());

    // Both workers drain, rebase to the image, reboot into it and report it.
    let pool = settled_on(&store, &config, Some(&image)).await;
    assert_eq!(
        condition(&pool, "Updated")["message"],
        format!("All nodes are updated with MachineConfig {config} / Image {image}").as_str()
    );
    let mosc = store.get("machineosconfigs", "", MOSC).unwrap();
    assert_eq!(mosc["status"]["currentImagePullSpec"], image.as_str());
    let rebase_to =
        |i: &str| format!("rpm-ostree rebase --experimental ostree-unverified-registry:{i}");
    for ((name, h), dir) in WORKERS.iter().zip(&hosts).zip(&roots) {
        let on_disk = read_current(&HostRoot::new(dir.path()).unwrap()).unwrap();
        assert_eq!(
            (on_disk.name(), on_disk.image()),
            (config.as_str(), image.as_str()),
            "{name}"
        );
        let calls = h.lock().calls.clone();
        let rebase = rebase_to(&image);
        let at = calls.iter().position(|c| *c == rebase);
        let reboot = calls.iter().position(|c| c == "reboot");
        assert!(
            matches!((at, reboot), (Some(a), Some(r)) if a < r),
            "{name}: rebased, then rebooted: {calls:?}"
        );
        // The image holds the pool's extensions: a rebase, nothing layered on it.
        assert_eq!(
            h.ostree_changes(),
            ["rpm-ostree cleanup -p", rebase.as_str()],
            "{name}"
        );
        assert_eq!(
            h.lock().ostree.booted_image,
            Some(format!("ostree-unverified-registry:{image}")),
            "{name}"
        );
        assert_eq!(
            annotation(&store, name, LAST_APPLIED_DRAIN).as_deref(),
            Some(format!("uncordon-{config}").as_str()),
            "{name}"
        );
    }

    // Each worker's MachineConfigNode records the finished update.
    for name in WORKERS {
        eventually(
            &store,
            &format!("{name}'s MachineConfigNode Updated"),
            || {
                let m = store.get("machineconfignodes", "", name)?;
                (m["status"]["configVersion"]["current"] == config.as_str()
                    && condition(&m, "Updated")["status"] == "True")
                    .then_some(())
            },
        )
        .await;
    }

    // Opting out: back to the rendered config's own image, currentImage cleared.
    for h in &hosts {
        h.lock().calls.clear();
    }
    store
        .delete(resource("machineosconfigs").unwrap(), "", MOSC, None)
        .unwrap();
    let pool = settled_on(&store, &config, None).await;
    assert_eq!(
        condition(&pool, "Updated")["message"],
        format!("All nodes are updated with MachineConfig {config}").as_str()
    );
    for ((name, h), dir) in WORKERS.iter().zip(&hosts).zip(&roots) {
        let root = HostRoot::new(dir.path()).unwrap();
        let on_disk = read_current(&root).unwrap();
        assert_eq!(
            (on_disk.name(), on_disk.image()),
            (config.as_str(), ""),
            "{name}"
        );
        assert_eq!(on_disk.input.os_image_url, base, "{name}");
        assert!(
            !root.exists(REVERT_FILE).unwrap(),
            "{name}: the revert file is gone"
        );
        let calls = h.lock().calls.clone();
        // Back on the base image, the pool's extensions are layered again (usbguard).
        assert_eq!(
            h.ostree_changes(),
            [
                "rpm-ostree cleanup -p".to_string(),
                rebase_to(&base),
                "rpm-ostree update --install usbguard".to_string()
            ],
            "{name}"
        );
        assert!(calls.iter().any(|c| c == "reboot"), "{name}: {calls:?}");
        assert_eq!(
            h.lock().ostree.booted_image,
            Some(format!("ostree-unverified-registry:{base}")),
            "{name}"
        );
        let n = store.get("nodes", "", name).unwrap();
        assert_ne!(n["spec"]["unschedulable"], true, "{name}: uncordoned");
    }
    // The update's steps are Events on the nodes; targeting them with the image, the pool's.
    let events = store.list("events");
    let reasons = |kind: &str, name: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["regarding"]["kind"] == kind && e["regarding"]["name"] == name)
            .filter_map(|e| e["reason"].as_str().map(str::to_string))
            .collect()
    };
    for name in WORKERS {
        let got = reasons("Node", name);
        for want in [
            "Drain",
            "OSUpdateStarted",
            "OSUpdateStaged",
            "Reboot",
            "NodeDone",
        ] {
            assert!(
                got.iter().any(|r| r == want),
                "{name}: {want} missing from {got:?}"
            );
        }
    }
    let pool_events = reasons("MachineConfigPool", "worker");
    assert!(
        pool_events
            .iter()
            .any(|r| r == "SetDesiredConfigAndOSImage"),
        "{pool_events:?}"
    );
    eventually(&store, "the builds deleted", || {
        store.list("machineosbuilds").is_empty().then_some(())
    })
    .await;

    // Every request each component made, its roles grant.
    for (agent, role) in [
        (daemon("worker-0"), "machine-config-daemon"),
        (daemon("worker-1"), "machine-config-daemon"),
        (CONTROLLER.to_string(), "machine-config-controller"),
    ] {
        let requests = store.requests_scoped(Some(&agent));
        assert!(!requests.is_empty(), "{agent} made no request");
        let missing = rbac::ungranted_to(&requests, role);
        assert!(
            missing.is_empty(),
            "{agent}: not granted by {role}: {missing:?}"
        );
    }
    // And each agent wrote its own Node and MachineConfigNode alone, as the admission
    // policies of manifests/02-daemon-policy.yaml require.
    let log = store.request_log();
    for node in ["worker-0", "worker-1"] {
        let elsewhere = crate::support::node_writes::elsewhere(&log, &daemon(node), node);
        assert!(elsewhere.is_empty(), "{node}'s agent: {elsewhere:?}");
    }
    for t in tasks {
        t.abort();
    }
    drop(roots);
}
