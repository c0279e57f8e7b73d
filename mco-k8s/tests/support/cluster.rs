//! The example cluster on the test API server, and what the pure library renders from it.

use super::apiserver::{resource, ApiServer};
use super::yaml_docs;
use mco_render::api::{ControllerConfig, MachineConfig, MachineConfigPool};
use mco_render::controllers::render_sync::sync_pool;
use mco_render::RenderOptions;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `examples/cluster` of the repository.
pub fn examples() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/cluster")).into()
}

/// A path of the repository.
pub fn repo(path: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(path)
}

/// Controller options for the generating controllers' tests: quick passes, no garbage
/// collection, the repository's templates.
pub fn generating_options() -> mco_k8s::controller::Options {
    let templates = mco_k8s::controller::templates::read_tree(&repo("templates"))
        .unwrap_or_else(|e| panic!("templates: {e}"));
    mco_k8s::controller::Options {
        debounce: std::time::Duration::from_millis(20),
        resync: std::time::Duration::from_secs(1),
        gc_keep: None,
        templates: Some(templates),
        ..mco_k8s::controller::Options::default()
    }
}

/// Controller options for rollout tests: quick passes, no resync to wait for (every step must
/// follow from a watched change or the rollout's own clock), no garbage collection, drains
/// retried quickly.
pub fn rollout_options() -> mco_k8s::controller::Options {
    mco_k8s::controller::Options {
        debounce: std::time::Duration::from_millis(10),
        resync: std::time::Duration::from_secs(3600),
        gc_keep: None,
        drain_retry: mco_render::controllers::drain::DrainRetry {
            first: std::time::Duration::from_millis(20),
            max: std::time::Duration::from_millis(200),
        },
        ..mco_k8s::controller::Options::default()
    }
}

/// The example cluster with `n` workers (`worker-0`, ...) settled on the worker pool's config
/// rendered with `opts` (the pool's maxUnavailable 2); returns that config's name.
pub fn settled_workers(server: &ApiServer, n: usize, opts: &RenderOptions) -> String {
    use mco_render::api::node::{CURRENT_CONFIG, DESIRED_CONFIG, STATE};
    seed_examples(server);
    let store = &server.store;
    super::edit(store, "machineconfigpools", "", "worker", false, |p| {
        p["spec"]["maxUnavailable"] = serde_json::json!(2);
    });
    let old = expected_rendered(server, "worker", opts).metadata.name;
    for i in 0..n {
        store
            .create(
                super::apiserver::resource("nodes").unwrap(),
                "",
                serde_json::json!({
                    "apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": format!("worker-{i}"),
                                 "labels": {"node-role.kubernetes.io/worker": ""},
                                 "annotations": {CURRENT_CONFIG: old, DESIRED_CONFIG: old, STATE: "Done"}},
                    "status": {"conditions": [{"type": "Ready", "status": "True"}]}
                }),
            )
            .unwrap();
    }
    old
}

/// A worker MachineConfig `name` writing one file, `path` (spec 3.4.0).
pub fn file_mc(name: &str, path: &str) -> Value {
    serde_json::json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": name, "labels": {"machineconfiguration.openshift.io/role": "worker"}},
        "spec": {"config": {"ignition": {"version": "3.4.0"}, "storage": {"files": [
            {"path": path, "mode": 420, "overwrite": true, "contents": {"source": "data:,x"}}
        ]}}}
    })
}

/// The PodDisruptionBudget `web` in `apps` over the pods labelled `app=web`, allowing no
/// disruption, as the disruption controller leaves a budget whose one pod must stay
/// (`minAvailable: 1`, one pod healthy of one).
pub fn blocking_budget(store: &super::apiserver::Store) {
    store
        .create(
            super::apiserver::resource("poddisruptionbudgets").unwrap(),
            "apps",
            serde_json::json!({
                "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": "web", "namespace": "apps"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}
            }),
        )
        .unwrap();
    super::edit(store, "poddisruptionbudgets", "apps", "web", true, |b| {
        b["status"] = serde_json::json!({"observedGeneration": 1, "disruptionsAllowed": 0,
            "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1});
    });
}

/// A ReplicaSet's pod `apps/web-0` on worker-0 and the budget `web` over it that allows no
/// disruption, as the disruption controller leaves one whose only replica must stay.
pub fn pod_behind_a_blocking_budget(store: &super::apiserver::Store) {
    store
        .create(
            super::apiserver::resource("pods").unwrap(),
            "apps",
            serde_json::json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web-0", "namespace": "apps", "labels": {"app": "web"},
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                  "name": "web-5d9c", "uid": "u"}]},
                "spec": {"nodeName": "worker-0", "containers": [{"name": "c", "image": "i"}]},
                "status": {"phase": "Running",
                           "conditions": [{"type": "Ready", "status": "True"}]}
            }),
        )
        .unwrap();
    blocking_budget(store);
}

/// The machine-config-server in cluster mode on an ephemeral plain-HTTP port of 127.0.0.1,
/// reading `server` as `machine-config-server`, with `bootstrap` files when given.
pub async fn start_cluster_mcs(
    server: &ApiServer,
    bootstrap: Option<mco_k8s::mcs::server::BootstrapFiles>,
) -> mco_k8s::mcs::server::Running {
    use mco_k8s::mcs::server::{self, Source};
    server::start(server::Config {
        source: Source::Cluster(server.client_as("machine-config-server")),
        listen: "127.0.0.1".parse().unwrap(),
        secure_port: None,
        insecure_port: Some(0),
        tls: None,
        build: mco_k8s::mcs::served_state::BuildOptions::default(),
        access: mco_k8s::mcs::access::AccessPolicy::default(),
        poll_interval: std::time::Duration::from_millis(100),
        limits: mco_k8s::limits::ConnLimits::default(),
        bootstrap,
    })
    .await
    .unwrap()
}

/// The render controller and the generating controllers, as machine-config-controller runs
/// them, with [`generating_options`].
pub fn start_all_controllers(client: kube::Client) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let generators = mco_k8s::controller::generators::run(client.clone(), generating_options());
        tokio::select! {
            r = mco_k8s::controller::run(client, generating_options()) => {
                if let Err(e) = r {
                    panic!("controller stopped: {e}");
                }
            }
            () = generators => {}
        }
    })
}

/// Decodes a stored object into the project's model.
pub fn decode<T: serde::de::DeserializeOwned>(v: &Value) -> T {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("decoding {v}: {e}"))
}

/// Stores the example cluster's pools, ControllerConfig and MachineConfigs.
pub fn seed_examples(server: &ApiServer) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(examples())
        .unwrap_or_else(|e| panic!("examples: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    for f in files {
        for obj in yaml_docs(&f) {
            let plural = match obj["kind"].as_str() {
                Some("MachineConfigPool") => "machineconfigpools",
                Some("MachineConfig") => "machineconfigs",
                Some("ControllerConfig") => "controllerconfigs",
                _ => continue,
            };
            let def = resource(plural).unwrap_or_else(|| panic!("{plural} not served"));
            server
                .store
                .create(def, "", obj)
                .unwrap_or_else(|e| panic!("{}: {e:?}", f.display()));
        }
    }
}

/// The rendered MachineConfig the controller will make (or has made) for `pool` from what the
/// server holds.
pub fn expected_rendered(server: &ApiServer, pool: &str, opts: &RenderOptions) -> MachineConfig {
    // Without the rendered configs, so that one the controller made already is made again.
    let mcs: Vec<MachineConfig> = server
        .store
        .list("machineconfigs")
        .iter()
        .map(decode::<MachineConfig>)
        .filter(|m| !m.metadata.name.starts_with("rendered-"))
        .collect();
    let p: MachineConfigPool = decode(
        &server
            .store
            .get("machineconfigpools", "", pool)
            .unwrap_or_else(|| panic!("pool {pool} missing")),
    );
    let cc: ControllerConfig = decode(
        &server
            .store
            .get("controllerconfigs", "", "machine-config-controller")
            .unwrap_or_else(|| panic!("ControllerConfig missing")),
    );
    let rs = sync_pool(&p, &mcs, Some(&cc), opts, "now");
    assert!(rs.error.is_none(), "{:?}", rs.error);
    rs.create
        .unwrap_or_else(|| panic!("no rendered config for {pool}"))
}
