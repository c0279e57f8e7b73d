//! On-cluster layering end to end: the controller (`mco_k8s::controller::run`, in-process)
//! against the in-process API server, three workers whose daemons are simulated, and a
//! simulated builder in place of the Job controller and the build's pod.
//!
//! The builder watches the MCO namespace's Jobs. For a new Job it checks that what the pod
//! mounts exists (the Containerfile, the MachineConfig, the pull and push secrets, as the
//! kubelet would wait for them), marks the Job active, and then, as the test says: succeeds
//! (writes the digest ConfigMap the Job's last container writes, named and labelled from the
//! Job's environment, then reports the Job complete), fails (every retry used up:
//! `BackoffLimitExceeded`), or keeps building. The simulated daemons apply a new
//! desiredConfig and desiredImage as the agent does (Working, drain, "reboot", uncordon, then
//! currentConfig, currentImage and Done; without a desiredImage they drop currentImage).

// The test server's handlers return its Status error object by value.
#![allow(clippy::result_large_err)]

use crate::support;

use crate::support::apiserver::{resource, ApiServer, Store};
use crate::support::builder::{
    condition, create_mosc, digest_of, edit, seed_build_inputs, start_builder, Builder, NS,
};
use crate::support::cluster::seed_examples;
use crate::support::rbac;
use mco_k8s::controller::{self, Options};
use mco_render::api::node::{
    CURRENT_CONFIG, CURRENT_IMAGE, DESIRED_CONFIG, DESIRED_DRAIN, DESIRED_IMAGE,
    LAST_APPLIED_DRAIN, STATE,
};
use mco_render::controllers::drain::DrainRetry;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;

const LIMIT: Duration = support::PATIENCE;
const AGENT: &str = "machine-config-controller/layering-e2e";
const NODES: usize = 3;
const MOSC: &str = "worker-layered";
const PUSH_SPEC: &str = "registry.example.com/ocl/worker:latest";
const CURRENT_BUILD: &str = "machineconfiguration.openshift.io/current-machine-os-build";

fn options() -> Options {
    let mut opts = Options {
        debounce: Duration::from_millis(10),
        // Every step must follow from a watched change.
        resync: Duration::from_secs(3600),
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

fn annotation(store: &Store, node: &str, key: &str) -> Option<String> {
    store.get("nodes", "", node)?["metadata"]["annotations"][key]
        .as_str()
        .map(str::to_string)
}

fn node_name(i: usize) -> String {
    format!("worker-{i}")
}

async fn wait_drain(store: &Store, node: &str, want: &str) {
    while annotation(store, node, LAST_APPLIED_DRAIN).as_deref() != Some(want) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One node's simulated daemon.
fn start_agent(store: Arc<Store>, node: String) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut round = 0u32;
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let desired = annotation(&store, &node, DESIRED_CONFIG).unwrap_or_default();
            let current = annotation(&store, &node, CURRENT_CONFIG).unwrap_or_default();
            let desired_image = annotation(&store, &node, DESIRED_IMAGE);
            let current_image = annotation(&store, &node, CURRENT_IMAGE);
            if desired.is_empty() || (desired == current && desired_image == current_image) {
                continue;
            }
            round += 1;
            let drain = format!("drain-{desired}-{round}");
            edit(&store, "nodes", "", &node, false, |n| {
                n["metadata"]["annotations"][STATE] = json!("Working");
                n["metadata"]["annotations"][DESIRED_DRAIN] = json!(drain);
            });
            wait_drain(&store, &node, &drain).await;
            tokio::time::sleep(Duration::from_millis(15)).await; // "reboot"
            let uncordon = format!("uncordon-{desired}-{round}");
            edit(&store, "nodes", "", &node, false, |n| {
                n["metadata"]["annotations"][DESIRED_DRAIN] = json!(uncordon);
            });
            wait_drain(&store, &node, &uncordon).await;
            edit(&store, "nodes", "", &node, false, |n| {
                let a = &mut n["metadata"]["annotations"];
                a[CURRENT_CONFIG] = json!(desired);
                a[CURRENT_IMAGE] = json!(desired_image);
                if desired_image.is_none() {
                    if let Some(m) = a.as_object_mut() {
                        m.remove(CURRENT_IMAGE);
                    }
                }
                a[STATE] = json!("Done");
            });
        }
    })
}

struct Sim {
    server: ApiServer,
    mode: Arc<Mutex<Builder>>,
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
    /// The example cluster with three workers settled on the worker pool's config
    /// (maxUnavailable 2), the secrets and images ConfigMap a build reads, the controller,
    /// the daemons and the builder.
    async fn start(mode: Builder) -> Sim {
        let server = ApiServer::start().await.unwrap();
        let old = support::cluster::settled_workers(&server, NODES, &options().render);
        let store = server.store.clone();
        seed_build_inputs(&store);
        let client = server.client_as(AGENT);
        let mode = Arc::new(Mutex::new(mode));
        let mut tasks = vec![tokio::spawn(async move {
            if let Err(e) = controller::run(client, options()).await {
                panic!("controller stopped: {e}");
            }
        })];
        for i in 0..NODES {
            tasks.push(start_agent(store.clone(), node_name(i)));
        }
        tasks.push(start_builder(store.clone(), mode.clone()));
        let sim = Sim {
            server,
            mode,
            old,
            tasks,
        };
        sim.eventually("the pool settled on its config", || {
            let p = sim.store().get("machineconfigpools", "", "worker")?;
            (p["status"]["configuration"]["name"] == sim.old.as_str()
                && condition(&p, "Updated")["status"] == "True")
                .then_some(())
        })
        .await;
        sim
    }

    fn store(&self) -> &Store {
        &self.server.store
    }

    fn set_mode(&self, m: Builder) {
        *self.mode.lock().unwrap() = m;
    }

    async fn eventually<T>(&self, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + LIMIT;
        loop {
            if let Some(v) = check() {
                return v;
            }
            if tokio::time::Instant::now() >= deadline {
                panic!("timed out waiting for {what}: {}", self.show());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn show(&self) -> String {
        let names = |plural: &str| -> Vec<String> {
            self.store()
                .list(plural)
                .iter()
                .map(|o| o["metadata"]["name"].as_str().unwrap_or("").to_string())
                .collect()
        };
        format!(
            "pool {}\nmosc {}\nmosbs {}\njobs {:?}\nnodes {:?}",
            self.store()
                .get("machineconfigpools", "", "worker")
                .map(|p| p["status"].clone())
                .unwrap_or_default(),
            self.store()
                .get("machineosconfigs", "", MOSC)
                .unwrap_or_default(),
            Value::Array(self.store().list("machineosbuilds")),
            names("jobs"),
            (0..NODES)
                .map(|i| self
                    .store()
                    .get("nodes", "", &node_name(i))
                    .map(|n| n["metadata"]["annotations"].clone()))
                .collect::<Vec<_>>()
        )
    }

    fn create_mosc(&self) {
        self.create_mosc_with("RUN dnf install -y tmux && dnf clean all");
    }

    fn create_mosc_with(&self, containerfile: &str) {
        create_mosc(self.store(), MOSC, "worker", PUSH_SPEC, containerfile);
    }

    /// The pool's rendered config now.
    fn target(&self) -> String {
        self.store()
            .get("machineconfigpools", "", "worker")
            .and_then(|p| {
                p["spec"]["configuration"]["name"]
                    .as_str()
                    .map(str::to_string)
            })
            .unwrap_or_default()
    }

    /// The build for the pool's current rendered config, if it exists.
    fn build_for_target_now(&self) -> Option<Value> {
        let target = self.target();
        self.store().list("machineosbuilds").into_iter().find(|b| {
            b["spec"]["machineConfig"]["name"] == target.as_str()
                && b["metadata"]["deletionTimestamp"].is_null()
        })
    }

    /// The build for the pool's current rendered config, once it exists.
    async fn build_for_target(&self) -> Value {
        self.eventually("a MachineOSBuild for the pool's config", || {
            self.build_for_target_now()
        })
        .await
    }

    fn build(&self, name: &str) -> Option<Value> {
        self.store().get("machineosbuilds", "", name)
    }

    async fn wait_progress(&self, build: &str, cond: &str) -> Value {
        self.eventually(&format!("{build} {cond}"), || {
            let b = self.build(build)?;
            (condition(&b, cond)["status"] == "True").then_some(b)
        })
        .await
    }

    /// Every node on `config` with image `image` (none: no image annotations), Done.
    async fn nodes_on(&self, config: &str, image: Option<&str>) {
        self.eventually(&format!("nodes on {config} / {image:?}"), || {
            (0..NODES)
                .all(|i| {
                    let n = node_name(i);
                    let a = |k| annotation(self.store(), &n, k);
                    a(CURRENT_CONFIG).as_deref() == Some(config)
                        && a(DESIRED_CONFIG).as_deref() == Some(config)
                        && a(DESIRED_IMAGE).as_deref() == image
                        && a(CURRENT_IMAGE).as_deref() == image
                        && a(STATE).as_deref() == Some("Done")
                })
                .then_some(())
        })
        .await;
    }

    async fn pool_updated(&self) -> Value {
        self.eventually("the pool Updated", || {
            let p = self.store().get("machineconfigpools", "", "worker")?;
            (condition(&p, "Updated")["status"] == "True"
                && p["status"]["configuration"]["name"] == self.target().as_str())
            .then_some(p)
        })
        .await
    }

    fn event_reasons(&self, kind: &str, name: &str) -> Vec<String> {
        self.store()
            .list("events")
            .iter()
            .filter(|e| e["regarding"]["kind"] == kind && e["regarding"]["name"] == name)
            .filter_map(|e| e["reason"].as_str().map(str::to_string))
            .collect()
    }
}

fn label(obj: &Value, key: &str) -> String {
    obj["metadata"]["labels"][key]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_os_config_builds_and_rolls_out_rebuilds_and_opts_out() {
    let sim = Sim::start(Builder::Hold).await;
    sim.create_mosc();

    // The build, its objects and its Job.
    let build = sim.build_for_target().await;
    let name = build["metadata"]["name"].as_str().unwrap().to_string();
    assert!(name.starts_with(&format!("{MOSC}-")), "{name}");
    assert_eq!(
        label(
            &build,
            "machineconfiguration.openshift.io/target-machine-config-pool"
        ),
        "worker"
    );
    assert_eq!(
        build["metadata"]["ownerReferences"][0]["name"], MOSC,
        "owned by its MachineOSConfig"
    );
    assert_eq!(
        build["spec"]["renderedImagePushSpec"],
        format!("registry.example.com/ocl/worker:{name}").as_str()
    );
    let job = sim
        .eventually("the build Job", || {
            sim.store().get("jobs", NS, &format!("build-{name}"))
        })
        .await;
    let built = sim.wait_progress(&name, "Building").await;
    assert_eq!(
        job["metadata"]["ownerReferences"][0]["uid"], built["metadata"]["uid"],
        "the Job is owned by its MachineOSBuild"
    );
    assert_eq!(
        built["metadata"]["annotations"]["machineconfiguration.openshift.io/job-uid"],
        job["metadata"]["uid"]
    );
    assert_eq!(
        built["status"]["builder"]["job"]["name"],
        format!("build-{name}").as_str()
    );
    for cm in ["containerfile", "mc", "additionaltrustbundle"] {
        let obj = sim
            .store()
            .get("configmaps", NS, &format!("{cm}-{name}"))
            .unwrap_or_else(|| panic!("{cm}-{name} missing"));
        assert_eq!(obj["metadata"]["ownerReferences"][0]["kind"], "Job");
    }
    let containerfile = sim
        .store()
        .get("configmaps", NS, &format!("containerfile-{name}"))
        .unwrap();
    assert!(containerfile["data"]["Containerfile"]
        .as_str()
        .unwrap()
        .contains("RUN dnf install -y tmux"));
    let mosc = sim.store().get("machineosconfigs", "", MOSC).unwrap();
    assert_eq!(
        mosc["metadata"]["annotations"][CURRENT_BUILD],
        name.as_str()
    );
    // No node moves before the image is built.
    assert_eq!(annotation(sim.store(), "worker-0", DESIRED_IMAGE), None);
    // And `kubectl mco status` says the pool waits for its build, naming the Job (a second
    // on, so it says for how long rather than "just now").
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (code, out) = support::plugin::status(&sim.server, &["--pool", "worker"]).await;
    insta::assert_snapshot!(
        "a_layered_pool_waiting_for_its_build",
        format!("exit {code}\n{}", support::plugin::without_clock(&out))
    );

    // The build succeeds: the digest becomes the MachineOSConfig's image, the nodes roll.
    sim.set_mode(Builder::Succeed);
    let done = sim.wait_progress(&name, "Succeeded").await;
    let image = format!("registry.example.com/ocl/worker@{}", digest_of(&name));
    assert_eq!(done["status"]["digestedImagePushSpec"], image.as_str());
    assert!(done["status"]["buildEnd"].is_string());
    let mosc = sim
        .eventually("the MachineOSConfig names the image", || {
            let m = sim.store().get("machineosconfigs", "", MOSC)?;
            (m["status"]["currentImagePullSpec"] == image.as_str()).then_some(m)
        })
        .await;
    assert_eq!(mosc["status"]["machineOSBuild"]["name"], name.as_str());
    assert_eq!(mosc["status"]["observedGeneration"], 1);
    sim.nodes_on(&sim.old, Some(&image)).await;
    let pool = sim.pool_updated().await;
    assert_eq!(
        condition(&pool, "Updated")["message"],
        format!(
            "All nodes are updated with MachineConfig {} / Image {image}",
            sim.old
        )
        .as_str()
    );
    assert_eq!(condition(&pool, "ImageBuildDegraded")["status"], "False");
    // Success cleans up the build's objects, not the digest.
    sim.eventually("the ephemeral objects deleted", || {
        (sim.store()
            .get("jobs", NS, &format!("build-{name}"))
            .is_none()
            && sim
                .store()
                .get("configmaps", NS, &format!("containerfile-{name}"))
                .is_none()
            && sim
                .store()
                .get("secrets", NS, &format!("final-{name}"))
                .is_none())
        .then_some(())
    })
    .await;
    assert!(sim
        .store()
        .get("configmaps", NS, &format!("digest-{name}"))
        .is_some());
    for r in [
        "BuildStarted",
        "JobCreated",
        "BuildBuilding",
        "BuildCompleted",
    ] {
        sim.eventually(&format!("the {r} Event"), || {
            sim.event_reasons("MachineOSBuild", &name)
                .iter()
                .any(|x| x == r)
                .then_some(())
        })
        .await;
    }
    let pool_events = sim.event_reasons("MachineConfigPool", "worker");
    assert!(
        pool_events
            .iter()
            .any(|r| r == "SetDesiredConfigAndOSImage"),
        "{pool_events:?}"
    );

    // A new MachineConfig builds again; another one while that runs interrupts it.
    sim.set_mode(Builder::Hold);
    let mcs = resource("machineconfigs").unwrap();
    sim.store()
        .create(
            mcs,
            "",
            support::cluster::file_mc("99-worker-one", "/etc/one"),
        )
        .unwrap();
    let second = sim
        .eventually("a second build", || {
            let b = sim.build_for_target_now()?;
            let n = b["metadata"]["name"].as_str()?.to_string();
            (n != name).then_some(n)
        })
        .await;
    sim.wait_progress(&second, "Building").await;
    sim.store()
        .create(
            mcs,
            "",
            support::cluster::file_mc("99-worker-two", "/etc/two"),
        )
        .unwrap();
    let third = sim
        .eventually("a third build", || {
            let b = sim.build_for_target_now()?;
            let n = b["metadata"]["name"].as_str()?.to_string();
            (n != name && n != second).then_some(n)
        })
        .await;
    let interrupted = sim.wait_progress(&second, "Interrupted").await;
    assert!(interrupted["status"]["buildEnd"].is_string());
    // Its Job is deleted in the foreground: gone once the garbage collector has its pods.
    let job = format!("build-{second}");
    assert!(sim
        .store()
        .get("jobs", NS, &job)
        .is_none_or(|j| j["metadata"]["deletionTimestamp"].is_string()));
    sim.eventually("the interrupted build's Job gone", || {
        sim.store().get("jobs", NS, &job).is_none().then_some(())
    })
    .await;
    sim.eventually("the BuildInterrupted Event", || {
        sim.event_reasons("MachineOSBuild", &second)
            .iter()
            .any(|r| r == "BuildInterrupted")
            .then_some(())
    })
    .await;
    // The nodes stay on the first image while the third builds.
    sim.wait_progress(&third, "Building").await;
    assert_eq!(
        annotation(sim.store(), "worker-0", DESIRED_IMAGE).as_deref(),
        Some(image.as_str())
    );
    sim.set_mode(Builder::Succeed);
    sim.wait_progress(&third, "Succeeded").await;
    let third_image = format!("registry.example.com/ocl/worker@{}", digest_of(&third));
    let target = sim.target();
    sim.nodes_on(&target, Some(&third_image)).await;
    sim.pool_updated().await;
    // The first build succeeded and stays (the pool may go back to its config).
    assert!(sim.build(&name).is_some());

    // Opting out: the builds go, the nodes return to the rendered config.
    sim.store()
        .delete(resource("machineosconfigs").unwrap(), "", MOSC, None)
        .unwrap();
    sim.nodes_on(&target, None).await;
    sim.eventually("the builds deleted", || {
        sim.store().list("machineosbuilds").is_empty().then_some(())
    })
    .await;
    assert!(sim
        .store()
        .get("configmaps", NS, &format!("digest-{third}"))
        .is_none());
    let pool = sim.pool_updated().await;
    assert_eq!(
        condition(&pool, "Updated")["message"],
        format!("All nodes are updated with MachineConfig {target}").as_str()
    );

    // Everything the controller asked for, the ClusterRole in manifests/ grants.
    let missing = rbac::ungranted_to(
        &sim.store().requests_scoped(Some(AGENT)),
        "machine-config-controller",
    );
    assert!(
        missing.is_empty(),
        "not granted by manifests/02-rbac.yaml: {missing:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_build_degrades_the_pool_naming_the_job() {
    let sim = Sim::start(Builder::Fail).await;
    sim.create_mosc();
    let build = sim.build_for_target().await;
    let name = build["metadata"]["name"].as_str().unwrap().to_string();
    sim.wait_progress(&name, "Failed").await;
    let pool = sim
        .eventually("the pool ImageBuildDegraded", || {
            let p = sim.store().get("machineconfigpools", "", "worker")?;
            (condition(&p, "ImageBuildDegraded")["status"] == "True").then_some(p)
        })
        .await;
    let c = condition(&pool, "ImageBuildDegraded");
    assert_eq!(c["reason"], "BuildFailed");
    assert_eq!(
        c["message"],
        format!(
            "Failed to build OS image for pool worker (MachineOSBuild: {name}): Failed: Build Failed \
             (Job build-{name}: BackoffLimitExceeded: Job has reached the specified backoff limit)"
        )
        .as_str()
    );
    assert_eq!(condition(&pool, "Degraded")["status"], "True");
    assert_eq!(
        condition(&pool, "Degraded")["message"],
        "Custom OS image build failed"
    );
    assert_eq!(condition(&pool, "Updated")["status"], "False");
    // The failed build's objects stay for inspection; no node was pointed at an image.
    assert!(sim
        .store()
        .get("jobs", NS, &format!("build-{name}"))
        .is_some());
    assert!(sim
        .store()
        .get("configmaps", NS, &format!("containerfile-{name}"))
        .is_some());
    for i in 0..NODES {
        assert_eq!(annotation(sim.store(), &node_name(i), DESIRED_IMAGE), None);
    }
    sim.eventually("the BuildFailed and BuildDegraded Events", || {
        (sim.event_reasons("MachineOSBuild", &name)
            .iter()
            .any(|r| r == "BuildFailed")
            && sim
                .event_reasons("MachineOSConfig", MOSC)
                .iter()
                .any(|r| r == "BuildDegraded"))
        .then_some(())
    })
    .await;

    // A new MachineConfig builds again; this one succeeds and the pool recovers.
    sim.set_mode(Builder::Succeed);
    sim.store()
        .create(
            resource("machineconfigs").unwrap(),
            "",
            support::cluster::file_mc("99-worker-fix", "/etc/fix"),
        )
        .unwrap();
    let fixed = sim
        .eventually("a new build", || {
            let b = sim.build_for_target_now()?;
            let n = b["metadata"]["name"].as_str()?.to_string();
            (n != name).then_some(n)
        })
        .await;
    sim.wait_progress(&fixed, "Succeeded").await;
    // The failed build is removed when the new one starts, as upstream stops other builds.
    assert!(sim.build(&name).is_none());
    let image = format!("registry.example.com/ocl/worker@{}", digest_of(&fixed));
    let target = sim.target();
    sim.nodes_on(&target, Some(&image)).await;
    let pool = sim.pool_updated().await;
    assert_eq!(condition(&pool, "ImageBuildDegraded")["status"], "False");
    assert_eq!(condition(&pool, "Degraded")["status"], "False");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_containerfile_fails_the_build_without_a_job() {
    let sim = Sim::start(Builder::Succeed).await;
    sim.create_mosc_with("FOOBAR baz");
    let build = sim.build_for_target().await;
    let name = build["metadata"]["name"].as_str().unwrap().to_string();
    sim.wait_progress(&name, "Failed").await;
    assert!(sim
        .store()
        .get("jobs", NS, &format!("build-{name}"))
        .is_none());
    let pool = sim
        .eventually("the pool ImageBuildDegraded", || {
            let p = sim.store().get("machineconfigpools", "", "worker")?;
            (condition(&p, "ImageBuildDegraded")["status"] == "True").then_some(p)
        })
        .await;
    assert_eq!(
        condition(&pool, "ImageBuildDegraded")["message"],
        format!(
            "Failed to build OS image for pool worker (MachineOSBuild: {name}): Failed: Build Failed"
        )
        .as_str()
    );
    for i in 0..NODES {
        assert_eq!(annotation(sim.store(), &node_name(i), DESIRED_IMAGE), None);
    }
}

/// A MachineOSConfig applied before its push secret (as `kubectl apply -f` applies a file
/// holding both, in order): the build waits, and starts when the secret arrives, from the
/// watch (the resync is an hour). The build's Secrets and ConfigMaps are read from the
/// controller's caches: after start-up it lists neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_waiting_for_its_push_secret_starts_when_it_arrives() {
    let sim = Sim::start(Builder::Succeed).await;
    let secrets = resource("secrets").unwrap();
    let push = sim
        .store()
        .get("secrets", NS, "push-secret")
        .expect("seeded");
    sim.store()
        .delete(secrets, NS, "push-secret", None)
        .expect("deleted");
    sim.create_mosc();
    let build = sim.build_for_target().await;
    let name = build["metadata"]["name"].as_str().unwrap().to_string();
    let job = format!("build-{name}");
    // The controller's pass after the build's creation tries to start it, and cannot.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        sim.store().get("jobs", NS, &job).is_none(),
        "started without its push secret"
    );
    let mut push = push;
    if let Some(m) = push["metadata"].as_object_mut() {
        m.retain(|k, _| k == "name" || k == "namespace");
    }
    sim.store().create(secrets, NS, push).expect("created");
    sim.wait_progress(&name, "Succeeded").await;
    let counts = sim.store().request_counts_by_agent();
    for list in ["LIST secrets", "LIST configmaps"] {
        let n = counts
            .get(&(AGENT.to_string(), list.to_string()))
            .copied()
            .unwrap_or(0);
        assert_eq!(n, 1, "{list}: only the watch's first list");
    }
}

/// A cluster whose pools rendered before the operator stamped the ControllerConfig with the
/// release version (the controller has no version of its own): the build cannot be named, the
/// MachineOSConfig says why, and once the operator stamps the ControllerConfig the rendered
/// config is stamped too and the build starts; nothing stays stuck.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_blocked_by_an_unstamped_release_says_why_and_starts_once_stamped() {
    const RELEASE: &str = "machineconfiguration.openshift.io/release-image-version";
    let server = ApiServer::start().await.unwrap();
    seed_examples(&server);
    let store = server.store.clone();
    edit(
        &store,
        "controllerconfigs",
        "",
        "machine-config-controller",
        false,
        |c| {
            if let Some(a) = c["metadata"]["annotations"].as_object_mut() {
                a.remove(RELEASE);
            }
        },
    );
    seed_build_inputs(&store);
    let mut opts = options();
    opts.render.release_image_version = String::new();
    let client = server.client_as(AGENT);
    let controller = tokio::spawn(async move {
        if let Err(e) = controller::run(client, opts).await {
            panic!("controller stopped: {e}");
        }
    });
    let rendered = |store: &Store| -> Option<Value> {
        let p = store.get("machineconfigpools", "", "worker")?;
        let name = p["spec"]["configuration"]["name"].as_str()?.to_string();
        store.get("machineconfigs", "", &name)
    };
    let first =
        support::eventually_within("the worker pool rendered", LIMIT, || rendered(&store)).await;
    assert!(
        first["metadata"]["annotations"][RELEASE]
            .as_str()
            .is_none_or(str::is_empty),
        "{first}"
    );
    create_mosc(&store, MOSC, "worker", PUSH_SPEC, "RUN true");
    let event = support::eventually_within("the MachineOSConfig told why", LIMIT, || {
        store.list("events").into_iter().find(|e| {
            e["reason"] == "BuildBlocked"
                && e["regarding"]["name"] == MOSC
                && e["type"] == "Warning"
        })
    })
    .await;
    let note = event["note"].as_str().unwrap_or_default();
    assert!(
        note.contains(RELEASE) && note.contains("machine-config-operator"),
        "{note}"
    );
    assert!(store.list("machineosbuilds").is_empty());

    // The operator stamps the ControllerConfig.
    edit(
        &store,
        "controllerconfigs",
        "",
        "machine-config-controller",
        false,
        |c| {
            c["metadata"]["annotations"][RELEASE] = json!("4.99.0");
        },
    );
    let stamped = support::eventually_within("the rendered config stamped", LIMIT, || {
        rendered(&store).filter(|mc| mc["metadata"]["annotations"][RELEASE] == "4.99.0")
    })
    .await;
    assert_eq!(
        stamped["metadata"]["name"], first["metadata"]["name"],
        "same config"
    );
    let build = support::eventually_within("a MachineOSBuild", LIMIT, || {
        store.list("machineosbuilds").into_iter().next()
    })
    .await;
    assert_eq!(
        build["spec"]["machineConfig"]["name"],
        first["metadata"]["name"]
    );
    controller.abort();
}
