//! The `machine-config-controller` binary itself, started as a process with a kubeconfig
//! pointing at the in-process API server: it renders the example pools, and a drain that a
//! disruption budget blocks past the timeout is reported on the node, naming the pod, until
//! the budget lets the pod go. Every request it made is one its ClusterRole in manifests/ grants.

use crate::support;

use crate::support::apiserver::{resource, ApiServer, Kubelet};
use crate::support::cluster::{expected_rendered, seed_examples};
use crate::support::rbac;
use mco_render::api::node::{DESIRED_DRAIN, DRAIN_FAILURE, LAST_APPLIED_DRAIN, STATE, ZONE_LABEL};
use mco_render::RenderOptions;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const LIMIT: Duration = support::PATIENCE;

/// Kills the controller process when the test ends, however it ends.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn eventually<T>(what: &str, check: impl FnMut() -> Option<T>) -> T {
    support::eventually_within(what, LIMIT, check).await
}

fn kubeconfig(dir: &Path, server: &ApiServer) -> PathBuf {
    let path = dir.join("kubeconfig");
    server.write_kubeconfig(&path).unwrap();
    path
}

fn annotation(server: &ApiServer, node: &str, key: &str) -> Option<String> {
    server.store.get("nodes", "", node)?["metadata"]["annotations"][key]
        .as_str()
        .map(str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_renders_pools_and_names_the_pods_blocking_a_drain() {
    let server = ApiServer::start().await.unwrap();
    // The evicted pod's 30 s grace period lasts 30 ms.
    server.store.set_kubelet(Kubelet::Speedup(1000));
    seed_examples(&server);
    let opts = RenderOptions::default();
    let worker = expected_rendered(&server, "worker", &opts)
        .name()
        .to_string();
    let master = expected_rendered(&server, "master", &opts)
        .name()
        .to_string();

    // A worker whose daemon asks for a drain, with a pod a disruption budget protects.
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
                    "annotations": {STATE: "Working", DESIRED_DRAIN: "drain-x"}
                },
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}
            }),
        )
        .unwrap();
    server
        .store
        .create(
            resource("pods").unwrap(),
            "apps",
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web-0", "namespace": "apps",
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                  "name": "web", "uid": "u"}]},
                "spec": {"nodeName": "worker-0", "containers": [{"name": "c", "image": "i"}]},
                "status": {"phase": "Running"}
            }),
        )
        .unwrap();
    server.store.block_eviction("apps", "web-0", u32::MAX);

    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_machine-config-controller"))
        .args([
            "--debounce-ms",
            "20",
            "--resync-seconds",
            "1",
            "--drain-timeout-seconds",
            "0",
        ])
        .env("KUBECONFIG", kubeconfig(dir.path(), &server))
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _process = Process(child);

    // The pools point at the configs the library renders, which the binary created.
    for (pool, name) in [("worker", &worker), ("master", &master)] {
        eventually(&format!("{pool} pool rendered"), || {
            let p = server.store.get("machineconfigpools", "", pool)?;
            (p["spec"]["configuration"]["name"] == name.as_str()).then_some(())
        })
        .await;
        let rendered = server.store.get("machineconfigs", "", name).unwrap();
        assert_eq!(
            rendered["metadata"]["ownerReferences"][0]["name"], pool,
            "{rendered}"
        );
    }

    // The drain is blocked past its (zero) timeout: the node says which pod blocks it.
    let report = eventually("the drain failure report", || {
        annotation(&server, "worker-0", DRAIN_FAILURE)
    })
    .await;
    assert_eq!(
        report,
        "failed to drain node worker-0: 1 pod(s) could not be evicted (disruption budget or timeout): apps/web-0"
    );
    assert_eq!(
        server.store.get("nodes", "", "worker-0").unwrap()["spec"]["unschedulable"],
        true
    );
    assert_eq!(annotation(&server, "worker-0", LAST_APPLIED_DRAIN), None);

    // The budget lets the pod go: the drain completes and the report is cleared.
    server.store.block_eviction("apps", "web-0", 0);
    eventually("the drain to complete", || {
        (annotation(&server, "worker-0", LAST_APPLIED_DRAIN).as_deref() == Some("drain-x"))
            .then_some(())
    })
    .await;
    assert_eq!(annotation(&server, "worker-0", DRAIN_FAILURE), None);
    assert!(server.store.get("pods", "apps", "web-0").is_none());

    // Everything the binary asked for, the ClusterRole in manifests/ grants.
    let requests = server.store.request_counts();
    assert!(requests.contains_key("POST pods/eviction"), "{requests:?}");
    let missing = rbac::ungranted_to(
        &server.store.requests_scoped(None),
        "machine-config-controller",
    );
    assert!(
        missing.is_empty(),
        "not granted by manifests/02-rbac.yaml: {missing:?}"
    );
}
